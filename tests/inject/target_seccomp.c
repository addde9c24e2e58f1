// SPDX-License-Identifier: GPL-2.0
/*
 * Injection target behind a seccomp filter: after start-up it installs a
 * filter that answers one system call with ACTION, then ticks like
 * target_sleep (10 ms sleeps, "tick N", "done").
 *
 *   target_seccomp kill|errno memfd_create|mmap|reboot COUNT READY_FILE
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec ts = {0, 10000000L};
	unsigned int action;
	int count, i, nr, fd;

	if (argc != 5)
		return 2;
	action =
	    strcmp(argv[1], "kill") == 0 ? SECCOMP_RET_KILL_PROCESS : SECCOMP_RET_ERRNO | EPERM;
	if (strcmp(argv[2], "memfd_create") == 0)
		nr = SYS_memfd_create;
	else if (strcmp(argv[2], "mmap") == 0)
		nr = SYS_mmap;
	else
		nr = SYS_reboot;
	count = atoi(argv[3]);

	struct sock_filter insns[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, action),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = {sizeof(insns) / sizeof(insns[0]), insns};

	/* stdio's buffer is allocated before the filter can refuse mmap. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("tick 0\n");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program))
		return 3;
	fd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 2;
	close(fd);
	for (i = 1; i <= count; i++) {
		if (nanosleep(&ts, NULL))
			return 4;
		printf("tick %d\n", i);
	}
	printf("done\n");
	return 0;
}
