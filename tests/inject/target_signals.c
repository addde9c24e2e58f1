// SPDX-License-Identifier: GPL-2.0
/*
 * Injection target with its own signal handlers: SIGUSR1 (SA_RESTART),
 * SIGINT (without), SIGRTMIN (queued, values must arrive in order), a 5 ms
 * POSIX timer on SIGALRM (every expiry counted, overruns included), SIGTRAP
 * (sent with kill: a "synchronous" signal the injector does not block but
 * holds and re-delivers) and SIGSEGV (one real fault at the end, to show
 * the handler survived).  It sleeps
 * until SIGUSR2, then prints what its handlers saw.
 *
 *   target_signals run READY_FILE
 *   target_signals send PID FIRST COUNT   (sigqueue SIGRTMIN, values FIRST...)
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1_count, int_count, rt_count, rt_last, rt_out_of_order, stop,
    segv_count, trap_count;
static volatile long long timer_expiries;
static sigjmp_buf segv_jump;

static void on_usr1(int sig)
{
	usr1_count++;
}

static void on_int(int sig)
{
	int_count++;
}

static void on_trap(int sig)
{
	trap_count++;
}

static void on_usr2(int sig)
{
	stop = 1;
}

static void on_rt(int sig, siginfo_t *info, void *context)
{
	if (info->si_value.sival_int != rt_last + 1)
		rt_out_of_order = 1;
	rt_last = info->si_value.sival_int;
	rt_count++;
}

static void on_alarm(int sig, siginfo_t *info, void *context)
{
	if (info->si_code == SI_TIMER)
		timer_expiries += 1 + info->si_overrun;
}

static void on_segv(int sig)
{
	segv_count++;
	siglongjmp(segv_jump, 1);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void handle(int sig, void (*handler)(int), int flags)
{
	struct sigaction sa = {.sa_handler = handler, .sa_flags = flags};

	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void handle_info(int sig, void (*handler)(int, siginfo_t *, void *))
{
	struct sigaction sa = {.sa_sigaction = handler, .sa_flags = SA_SIGINFO | SA_RESTART};

	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static int send_rt(pid_t pid, int first, int count)
{
	int i;

	for (i = first; i < first + count; i++) {
		union sigval value = {.sival_int = i};

		if (sigqueue(pid, SIGRTMIN, value)) {
			perror("sigqueue");
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sigevent event = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
	struct itimerspec period = {{0, 5000000}, {0, 5000000}}, off = {};
	long long start, elapsed, expected;
	struct timespec ts;
	timer_t timer;
	int fd;

	if (argc == 5 && strcmp(argv[1], "send") == 0)
		return send_rt(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	if (argc != 3 || strcmp(argv[1], "run"))
		return 2;
	handle(SIGUSR1, on_usr1, SA_RESTART);
	handle(SIGINT, on_int, 0);
	handle(SIGUSR2, on_usr2, 0);
	handle(SIGTRAP, on_trap, SA_RESTART);
	handle(SIGSEGV, on_segv, SA_NODEFER);
	handle_info(SIGRTMIN, on_rt);
	handle_info(SIGALRM, on_alarm);
	if (timer_create(CLOCK_MONOTONIC, &event, &timer))
		return 2;
	start = now_ns();
	timer_settime(timer, 0, &period, NULL);
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 2;
	close(fd);
	while (!stop) {
		ts.tv_sec = 0;
		ts.tv_nsec = 10000000;
		while (nanosleep(&ts, &ts) && errno == EINTR && !stop)
			;
	}
	elapsed = now_ns() - start;
	timer_settime(timer, 0, &off, NULL);
	expected = elapsed / 5000000;
	if (timer_expiries < expected - 3 || timer_expiries > expected + 1) {
		fprintf(stderr, "target_signals: %lld timer expiries counted, %lld expected\n",
			timer_expiries, expected);
		return 1;
	}
	if (rt_out_of_order) {
		fprintf(stderr, "target_signals: SIGRTMIN values out of order\n");
		return 1;
	}
	printf("usr1=%d int=%d rt=%d trap=%d\n", (int)usr1_count, (int)int_count, (int)rt_count,
	       (int)trap_count);
	if (sigsetjmp(segv_jump, 1) == 0)
		*(volatile int *)0 = 1;
	printf("segv=%d\n", (int)segv_count);
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
