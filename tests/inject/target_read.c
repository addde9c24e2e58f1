// SPDX-License-Identifier: GPL-2.0
/*
 * Injection target blocked reading a pipe on stdin until EOF; prints the
 * byte count and an FNV-1a hash of what it read, and fails on EINTR.
 *
 *   target_read read|epoll READY_FILE
 *
 * epoll waits in epoll_wait() before each read: that call returns EINTR
 * for a mere ptrace interrupt unless the injector restarts it.
 */
#include <errno.h>
#include <fcntl.h>
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
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 2;
	close(fd);
	for (;;) {
		if (epfd >= 0 && epoll_wait(epfd, &event, 1, -1) < 0) {
			fprintf(stderr, "target_read: epoll_wait: %s\n", strerror(errno));
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
	printf("bytes=%llu fnv=%08x\n", total, hash);
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
