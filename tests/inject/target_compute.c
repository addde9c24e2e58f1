// SPDX-License-Identifier: GPL-2.0
/*
 * Injection target that is computing, not in a system call, when it is
 * stopped.  It runs with a non-default rounding mode and keeps SSE and x87
 * values live in registers; every round must give the same bits, so a
 * register or FPU state not put back exactly shows, and errno must keep the
 * value it set.
 *
 *   target_compute app|libc DURATION_MS READY_FILE
 *
 * libc also spends much of its time inside malloc, free and memset, where
 * the injector must not stop it (it retries until the thread is elsewhere).
 */
#include <errno.h>
#include <fcntl.h>
#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile double seed = 1.25;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static __attribute__((noinline)) double compute(double x, int use_libc)
{
	double a = x, b = x / 3.0;
	long double c = x;
	int i;

	for (i = 0; i < 100000; i++) {
		a = a * 1.0000001 + b / 7.0;
		b = b * 0.9999999 + a * 1e-9;
		c = c * 1.00000001L + (long double)b * 1e-12L;
		if (use_libc && (i & 1023) == 0) {
			size_t size = 64 + (i & 4095);
			char *p = malloc(size);

			if (!p)
				abort();
			memset(p, i, size);
			a += p[size / 2] * 0.0;
			free(p);
		}
	}
	return a + b + (double)c;
}

int main(int argc, char **argv)
{
	long long end;
	double reference;
	int use_libc, fd;
	long rounds = 0;

	if (argc != 4)
		return 2;
	use_libc = strcmp(argv[1], "libc") == 0;
	fesetround(FE_TOWARDZERO);
	reference = compute(seed, use_libc);
	end = now_ns() + atoll(argv[2]) * 1000000LL;
	fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 2;
	close(fd);
	errno = 1234;
	while (now_ns() < end) {
		double value = compute(seed, use_libc);

		if (value != reference || fegetround() != FE_TOWARDZERO || errno != 1234) {
			fprintf(stderr,
				"target_compute: round %ld gave different bits (%a for %a, "
				"rounding %d, errno %d)\n",
				rounds, value, reference, fegetround(), errno);
			return 1;
		}
		rounds++;
	}
	printf("compute ok\n");
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
