// SPDX-License-Identifier: GPL-2.0
/*
 * Injection target blocked reading a pipe on stdin until EOF; prints the
 * byte count and an FNV-1a hash of what it read, and fails on EINTR.
 *
 *   target_read read|epoll|ppoll READY_FILE
 *
 * epoll waits in epoll_wait() before each read: that call returns EINTR
 * for a mere ptrace interrupt unless the injector restarts it.  ppoll
 * blocks SIGUSR1 except inside ppoll(), whose temporary mask the injection
 * must not leave behind: the thread's mask is checked at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	uint32_t hash = 2166136261u;
	unsigned long long total = 0;
	struct epoll_event event = {.events = EPOLLIN};
	struct pollfd pfd = {.fd = 0, .events = POLLIN};
	sigset_t usr1, during_poll, now;
	bool use_ppoll;
	char buf[4096];
	int epfd = -1, fd, i;
	ssize_t n;

	if (argc != 3)
		return 2;
	if (strcmp(argv[1], "epoll") == 0) {
		epfd = epoll_create1(0);
		if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &event) < 0)
			return 2;
	}
	use_ppoll = strcmp(argv[1], "ppoll") == 0;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	sigprocmask(SIG_BLOCK, NULL, &during_poll);
	sigdelset(&during_poll, SIGUSR1);
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 2;
	close(fd);
	for (;;) {
		if (epfd >= 0 && epoll_wait(epfd, &event, 1, -1) < 0) {
			fprintf(stderr, "target_read: epoll_wait: %s\n", strerror(errno));
			return 1;
		}
		if (use_ppoll && ppoll(&pfd, 1, NULL, &during_poll) < 0) {
			fprintf(stderr, "target_read: ppoll: %s\n", strerror(errno));
			return 1;
		}
		n = read(0, buf, sizeof(buf));
		if (n < 0) {
			fprintf(stderr, "target_read: read: %s\n", strerror(errno));
			return 1;
		}
		if (n == 0)
			break;
		for (i = 0; i < n; i++)
			hash = (hash ^ (unsigned char)buf[i]) * 16777619u;
		total += n;
	}
	sigprocmask(SIG_BLOCK, NULL, &now);
	if (!sigismember(&now, SIGUSR1)) {
		fprintf(stderr, "target_read: the signal mask changed\n");
		return 1;
	}
	printf("bytes=%llu fnv=%08x\n", total, hash);
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
