// SPDX-License-Identifier: GPL-2.0
/*
 * Calls the real libcudart (the path in argv[1]) as a program would on a
 * machine without a GPU: it loads it with dlopen, as frameworks do, and
 * asks for 1 MiB in ask_for_memory().  Without a device or driver the call
 * fails; the program prints the error and exits 0 unless it crashed.
 */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*malloc_fn)(void **ptr, size_t size);

__attribute__((noinline)) static int ask_for_memory(malloc_fn cuda_malloc)
{
	void *p = NULL;

	return cuda_malloc(&p, 1 << 20);
}

int main(int argc, char **argv)
{
	void *runtime;
	malloc_fn cuda_malloc;
	int err;

	if (argc < 2)
		return 2;
	runtime = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!runtime) {
		fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
		return 1;
	}
	cuda_malloc = (malloc_fn)dlsym(runtime, "cudaMalloc");
	if (!cuda_malloc)
		return 1;
	err = ask_for_memory(cuda_malloc);
	printf("cudaMalloc returned %d\n", err);
	return 0;
}
