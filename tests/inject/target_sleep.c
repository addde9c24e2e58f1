// SPDX-License-Identifier: GPL-2.0
/*
 * Injection target blocked in nanosleep.  Prints "tick N" after each sleep
 * and fails if a sleep returned EINTR or ended before its time (so an
 * injection must restart the interrupted sleep correctly).
 *
 *   target_sleep libc|raw|abs|long COUNT READY_FILE
 *
 * libc: nanosleep(3) of 10 ms (clock_nanosleep, restarted through
 * restart_syscall); raw: the nanosleep system call; abs: clock_nanosleep
 * with TIMER_ABSTIME (ERESTARTNOHAND); long: 1 s sleeps that must also not
 * last much longer than 1 s (the remaining time is kept, not started over).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long long start, elapsed, want;
	struct timespec ts, rem;
	const char *mode;
	int count, i, rc, fd;

	if (argc != 4)
		return 2;
	mode = argv[1];
	count = atoi(argv[2]);
	want = strcmp(mode, "long") == 0 ? 1000000000LL : 10000000LL;
	fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 2;
	close(fd);
	for (i = 1; i <= count; i++) {
		start = now_ns();
		ts.tv_sec = want / 1000000000LL;
		ts.tv_nsec = want % 1000000000LL;
		if (strcmp(mode, "raw") == 0) {
			rc = syscall(SYS_nanosleep, &ts, &rem) ? errno : 0;
		} else if (strcmp(mode, "abs") == 0) {
			struct timespec deadline;

			clock_gettime(CLOCK_MONOTONIC, &deadline);
			start = deadline.tv_sec * 1000000000LL + deadline.tv_nsec;
			deadline.tv_nsec += want;
			if (deadline.tv_nsec >= 1000000000L) {
				deadline.tv_sec++;
				deadline.tv_nsec -= 1000000000L;
			}
			rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL);
		} else {
			rc = nanosleep(&ts, &rem) ? errno : 0;
		}
		elapsed = now_ns() - start;
		if (rc) {
			fprintf(stderr, "target_sleep: sleep %d failed: %s\n", i, strerror(rc));
			return 1;
		}
		if (elapsed < want) {
			fprintf(stderr, "target_sleep: sleep %d lasted %lld ns of %lld\n", i,
				elapsed, want);
			return 1;
		}
		/* An injection holds a sleep up to its timeout, never seconds more. */
		if (elapsed > want + 3000000000LL) {
			fprintf(stderr, "target_sleep: sleep %d lasted %lld ns of %lld\n", i,
				elapsed, want);
			return 1;
		}
		if (want >= 1000000000LL && elapsed > want + 300000000LL) {
			fprintf(stderr,
				"target_sleep: sleep %d lasted %lld ns of %lld: started over?\n", i,
				elapsed, want);
			return 1;
		}
		printf("tick %d\n", i);
		fflush(stdout);
	}
	printf("done\n");
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
