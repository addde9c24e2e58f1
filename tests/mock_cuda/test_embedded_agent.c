// SPDX-License-Identifier: GPL-2.0
/*
 * The agent carried inside llmprof (lib/agent_image.c) loads from a memfd,
 * as llmprof hands it to a target, and exports its two entry points.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpu/agent_image.h"

int main(void)
{
	int fd = memfd_create("libllmprof_cupti.so", MFD_CLOEXEC);
	int (*initialize)(void), (*start)(const char *);
	const unsigned char *image;
	char path[64];
	void *handle;
	size_t size;

	image = agent_image__get(&size);
	if (fd < 0 || !image || size < 4096 || write(fd, image, size) != (ssize_t)size) {
		fprintf(stderr, "FAIL: memfd of the %zu byte agent image\n", size);
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		fprintf(stderr, "FAIL: dlopen: %s\n", dlerror());
		return 1;
	}
	initialize = (int (*)(void))dlsym(handle, "InitializeInjection");
	start = (int (*)(const char *))dlsym(handle, "llmprof_agent_start");
	if (!initialize || !start) {
		fprintf(stderr, "FAIL: entry points missing\n");
		return 1;
	}
	/* Without LLMPROF_AGENT_SOCKET the injection does nothing, and a bad
	 * name is refused. */
	unsetenv("LLMPROF_AGENT_SOCKET");
	if (initialize() != 1 || start("") != -22) {
		fprintf(stderr, "FAIL: entry points misbehave\n");
		return 1;
	}
	return 0;
}
