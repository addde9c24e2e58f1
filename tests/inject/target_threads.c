// SPDX-License-Identifier: GPL-2.0
/*
 * Multithreaded injection target: two threads spin on a mutex-protected
 * pair and a floating-point computation, two sleep in 5 ms nanosleeps, the
 * main thread waits in pthread_join().  Every thread checks its invariants
 * (the pair stays equal, the computation gives the same bits, no sleep is
 * cut short or fails with EINTR).
 *
 *   target_threads DURATION_MS READY_FILE
 *
 * READY_FILE appears, complete, once all threads run; it lists them as
 * "spinner TID" and "sleeper TID" lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long pair_a, pair_b;
static atomic_int stop, failed;
static long long duration_ns;
static volatile double seed = 1.0;
static atomic_int tids[4];

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static __attribute__((noinline)) double compute(double x)
{
	double a = x, b = x * 0.5;
	int i;

	for (i = 0; i < 200000; i++) {
		a = a * 1.0000001 + b * 1e-7;
		b = b * 0.9999999 + a * 1e-9;
	}
	return a + b;
}

static void *spinner(void *arg)
{
	double reference = compute(seed);

	atomic_store(&tids[(long)arg], (int)syscall(SYS_gettid));
	while (!atomic_load(&stop)) {
		pthread_mutex_lock(&lock);
		pair_a++;
		pair_b++;
		if (pair_a != pair_b) {
			fprintf(stderr, "target_threads: pair broken\n");
			atomic_store(&failed, 1);
		}
		pthread_mutex_unlock(&lock);
		if (compute(seed) != reference) {
			fprintf(stderr, "target_threads: computation changed\n");
			atomic_store(&failed, 1);
		}
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	long long start, first = now_ns();
	struct timespec ts;
	bool stopper = (long)arg == 2;

	atomic_store(&tids[(long)arg], (int)syscall(SYS_gettid));
	while (!atomic_load(&stop)) {
		ts.tv_sec = 0;
		ts.tv_nsec = 5000000;
		start = now_ns();
		if (nanosleep(&ts, NULL)) {
			fprintf(stderr, "target_threads: nanosleep: %s\n", strerror(errno));
			atomic_store(&failed, 1);
		}
		if (now_ns() - start < 5000000) {
			fprintf(stderr, "target_threads: sleep cut short\n");
			atomic_store(&failed, 1);
		}
		if (stopper && now_ns() - first >= duration_ns)
			atomic_store(&stop, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t threads[4];
	char path[4096];
	FILE *ready;
	long i;

	if (argc != 3)
		return 2;
	duration_ns = atoll(argv[1]) * 1000000LL;
	for (i = 0; i < 4; i++)
		pthread_create(&threads[i], NULL, i < 2 ? spinner : sleeper, (void *)i);
	for (i = 0; i < 4; i++)
		while (!atomic_load(&tids[i]))
			usleep(1000);
	snprintf(path, sizeof(path), "%s.tmp", argv[2]);
	ready = fopen(path, "w");
	if (!ready)
		return 2;
	for (i = 0; i < 4; i++)
		fprintf(ready, "%s %d\n", i < 2 ? "spinner" : "sleeper", atomic_load(&tids[i]));
	if (fclose(ready) || rename(path, argv[2]))
		return 2;
	for (i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	if (atomic_load(&failed))
		return 1;
	printf("threads ok\n");
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
