// SPDX-License-Identifier: GPL-2.0
/*
 * The capabilities llmprof's features need.  Root has them all; a copy of
 * llmprof given them as file capabilities runs for an unprivileged user:
 *   CAP_BPF + CAP_PERFMON  CPU sampling, off-CPU waits
 *   CAP_SYS_ADMIN          uprobes (GPU memory, NCCL, GPU launch stacks, the
 *                          dynamic loader's probe): the kernel's uprobe
 *                          perf events answer EACCES to CAP_PERFMON alone
 *   CAP_SYS_PTRACE         GPU capture injected into a running process, and
 *                          the files of a process that is not dumpable
 *   CAP_SYSLOG             kernel frames' names (/proc/kallsyms addresses,
 *                          unless kernel.kptr_restrict is 0 and
 *                          kernel.perf_event_paranoid at most 1)
 * CAP_SYS_ADMIN stands for CAP_BPF and CAP_PERFMON on every kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
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

static int read_sysctl(const char *path, int otherwise)
{
	FILE *f = fopen(path, "re");
	int value;

	if (!f)
		return otherwise;
	if (fscanf(f, "%d", &value) != 1)
		value = otherwise;
	fclose(f);
	return value;
}

/* As the kernel's kallsyms_show_value() decides for our credentials. */
static bool kernel_names_hidden(void)
{
	if (have(CAP_SYSLOG))
		return false;
	return read_sysctl("/proc/sys/kernel/kptr_restrict", 1) > 0 ||
	       read_sysctl("/proc/sys/kernel/perf_event_paranoid", 2) > 1;
}

/* Whether the kernel lets us create a uprobe perf event: a disabled one
 * on our own executable, closed at once. */
static bool uprobes_allowed(void)
{
	struct perf_event_attr attr = {.size = sizeof(attr), .disabled = 1};
	const char *path = "/proc/self/exe";
	int type = read_sysctl("/sys/bus/event_source/devices/uprobe/type", -1), fd;

	if (have(CAP_SYS_ADMIN) || type < 0)
		return true;
	attr.type = type;
	attr.config1 = (unsigned long)path;
	attr.config2 = 0;
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd >= 0 || (errno != EACCES && errno != EPERM);
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

int privilege__check_profile(bool off_cpu, bool uprobes, bool gpu_injection)
{
	const char *missing = missing_for_sampling();

	if (missing) {
		status__error("missing %s: %s needs CAP_BPF and CAP_PERFMON (run as root, or "
			      "give a copy of llmprof the file capabilities: see llmprof(1), "
			      "PRIVILEGES)",
			      missing, off_cpu ? "off-CPU profiling" : "CPU sampling");
		return -1;
	}
	if (uprobes && !uprobes_allowed())
		status__warn("missing CAP_SYS_ADMIN: uprobes (GPU memory, NCCL, GPU launch "
			     "stacks, the dynamic loader's probe) need it on this kernel");
	if (gpu_injection && !have(CAP_SYS_PTRACE))
		status__warn("missing CAP_SYS_PTRACE: GPU capture in a running process needs it");
	if (kernel_names_hidden())
		status__warn("missing CAP_SYSLOG: kernel frames are not named "
			     "(/proc/kallsyms hides their addresses)");
	return 0;
}

void privilege__warn_missing(void)
{
	const char *missing = missing_for_sampling();

	if (missing)
		status__warn("missing %s: the profile tool's CPU sampling needs CAP_BPF and "
			     "CAP_PERFMON",
			     missing);
	if (!uprobes_allowed())
		status__warn("missing CAP_SYS_ADMIN: the profile tool's uprobes (GPU memory, "
			     "NCCL, GPU launch stacks, the dynamic loader's probe) need it on "
			     "this kernel");
	if (!have(CAP_SYS_PTRACE))
		status__warn("missing CAP_SYS_PTRACE: the profile tool's GPU capture in a "
			     "running process needs it");
}
