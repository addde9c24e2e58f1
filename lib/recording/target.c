// SPDX-License-Identifier: GPL-2.0
/*
 * The recording's target: the command a record starts, held before its
 * exec until the probes are in, and waited for at the end; what attach
 * checks of a running process before it starts.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/procfs.h"
#include "recording/recording.h"
#include "recording/run_as.h"
#include "sampling/proc_files.h"
#include "status.h"

int recording_command__start(char **argv, const struct run_as *run_as,
			     struct recording_command *command)
{
	/* Built before the fork: the child only drops privileges and execs. */
	char **envp = run_as ? run_as__environment(run_as) : NULL;
	int go[2], status[2], dumpable;
	pid_t pid;

	if (run_as && !envp)
		return -ENOMEM;
	/* An llmprof with file capabilities is not dumpable, nor would its
	 * fork be: the fork's /proc files would be root's, and the loader's
	 * probe and the maps scan refused until the exec.  The fork is made
	 * dumpable from its start; the capabilities it holds until the exec
	 * still keep the user from ptracing it. */
	dumpable = prctl(PR_GET_DUMPABLE);
	if (pipe2(go, O_CLOEXEC) || pipe2(status, O_CLOEXEC)) {
		pid = -1;
	} else {
		prctl(PR_SET_DUMPABLE, 1);
		pid = fork();
		if (pid)
			prctl(PR_SET_DUMPABLE, dumpable);
	}
	if (pid < 0) {
		pid = -errno;
		run_as__free_environment(envp);
		return pid;
	}
	if (pid == 0) {
		char byte;
		int err;

		close(go[1]);
		close(status[0]);
		signal(SIGPIPE, SIG_DFL);
		if (read(go[0], &byte, 1) != 1)
			_exit(127);
		err = run_as ? -run_as__enter(run_as) : 0;
		if (!err) {
			if (envp)
				execvpe(argv[0], argv, envp);
			else
				execvp(argv[0], argv);
			err = errno;
		}
		if (write(status[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	run_as__free_environment(envp);
	close(go[0]);
	close(status[1]);
	command->pid = pid;
	command->go_fd = go[1];
	command->status_fd = status[0];
	return 0;
}

int recording_command__release(struct recording_command *command)
{
	ssize_t n;
	int err = 0;

	if (write(command->go_fd, "g", 1) != 1)
		return -errno;
	close(command->go_fd);
	command->go_fd = -1;
	do
		n = read(command->status_fd, &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(command->status_fd);
	command->status_fd = -1;
	return n == sizeof(err) ? -err : 0;
}

void recording_command__reap(struct recording_command *command, bool stop_it)
{
	int status;

	if (command->go_fd >= 0)
		close(command->go_fd); /* unreleased: it exits at once */
	if (command->status_fd >= 0)
		close(command->status_fd);
	command->go_fd = command->status_fd = -1;
	if (command->pid <= 0)
		return;
	if (stop_it && waitpid(command->pid, &status, WNOHANG) == 0)
		kill(command->pid, SIGTERM);
	while (waitpid(command->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status))
		status__info("command exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		status__info("command was killed by signal %d (%s)", WTERMSIG(status),
			     strsignal(WTERMSIG(status)));
	command->pid = 0;
}

int recording__check_attach_target(pid_t pid)
{
	struct procfs_stat st;
	char dir[64], state;
	unsigned long flags;
	int err;

	if (kill(pid, 0) && errno == ESRCH) {
		status__error("no process with PID %d", pid);
		return -ESRCH;
	}
	err = procfs__stat(pid, 0, &st);
	if (err && err != -EINVAL) {
		status__error("no process with PID %d", pid);
		return -ESRCH;
	}
	if (err)
		return 0;
	state = st.state;
	flags = st.flags;
	if (flags & 0x00200000) { /* PF_KTHREAD */
		status__error("process %d is a kernel thread: only user processes can be profiled",
			      pid);
		return -EINVAL;
	}
	if ((state == 'Z' || state == 'X') && proc_files__dir(pid, dir, sizeof(dir))) {
		status__error("process %d is a zombie: it has exited and waits for its parent "
			      "to reap it",
			      pid);
		return -ESRCH;
	}
	if (state == 'T')
		status__warn("process %d is stopped (SIGSTOP); no samples until it continues", pid);
	else if (state == 't')
		status__warn("process %d is stopped by a debugger; no samples until it continues",
			     pid);
	return 0;
}
