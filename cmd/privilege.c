// SPDX-License-Identifier: GPL-2.0
/*
 * The capabilities llmprof's features need.  Root has them all; a copy of
 * llmprof given them as file capabilities runs for an unprivileged user:
 *   CAP_BPF + CAP_PERFMON  CPU sampling, off-CPU waits, uprobes (GPU memory,
 *                          NCCL, the dynamic loader's probe)
 *   CAP_SYS_PTRACE         GPU capture injected into a running process, and
 *                          the files of a process that is not dumpable
 *   CAP_SYSLOG             kernel frames' names (/proc/kallsyms addresses,
 *                          unless kernel.kptr_restrict is 0)
 * CAP_SYS_ADMIN stands for CAP_BPF and CAP_PERFMON on every kernel.
 */
#include <linux/capability.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "privilege.h"
#include "status.h"

static bool have(int capability)
{
	struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {0};

	if (syscall(SYS_capget, &header, data))
		return geteuid() == 0;
	return data[capability / 32].effective & (1u << (capability % 32));
}

static bool kernel_names_hidden(void)
{
	FILE *f = fopen("/proc/sys/kernel/kptr_restrict", "re");
	int restrict_level = 1;

	if (f) {
		if (fscanf(f, "%d", &restrict_level) != 1)
			restrict_level = 1;
		fclose(f);
	}
	return restrict_level > 0 && !have(CAP_SYSLOG);
}

/* CAP_BPF and CAP_PERFMON, or the one that stood for them before 5.8. */
static const char *missing_for_sampling(void)
{
	if (have(CAP_SYS_ADMIN))
		return NULL;
	if (!have(CAP_BPF))
		return "CAP_BPF";
	if (!have(CAP_PERFMON))
		return "CAP_PERFMON";
	return NULL;
}

int privilege__check_profile(bool off_cpu, bool gpu_injection)
{
	const char *missing = missing_for_sampling();

	if (missing) {
		report__error("missing %s: %s needs CAP_BPF and CAP_PERFMON (run as root, or "
			      "give a copy of llmprof the file capabilities: see llmprof(1), "
			      "PRIVILEGES)",
			      missing, off_cpu ? "off-CPU profiling" : "CPU sampling");
		return -1;
	}
	if (gpu_injection && !have(CAP_SYS_PTRACE))
		report__warn("missing CAP_SYS_PTRACE: GPU capture in a running process needs it");
	if (kernel_names_hidden())
		report__warn("missing CAP_SYSLOG: kernel frames are not named "
			     "(kernel.kptr_restrict hides their addresses)");
	return 0;
}

void privilege__warn_missing(void)
{
	const char *missing = missing_for_sampling();

	if (missing)
		report__warn("missing %s: the profile tool's CPU sampling needs CAP_BPF and "
			     "CAP_PERFMON",
			     missing);
	if (!have(CAP_SYS_PTRACE))
		report__warn("missing CAP_SYS_PTRACE: the profile tool's GPU capture in a "
			     "running process needs it");
}
