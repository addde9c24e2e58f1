// SPDX-License-Identifier: GPL-2.0
/*
 * The live progress line of attach and record (elapsed time, samples,
 * lost records, GPU kernels), and the default output file used when
 * stdout is a terminal.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "gpu/gpu_capture.h"
#include "progress.h"
#include "sampling/session.h"
#include "status.h"

/* Often enough to look alive, rarely enough to be read. */
#define PROGRESS_INTERVAL_NS 500000000ULL

bool progress__wanted(void)
{
	return status__level() >= STATUS_NORMAL && isatty(STDERR_FILENO);
}

void progress__tick(void *ctx, const struct session *session)
{
	struct progress *pr = ctx;
	struct session_progress sp;
	char off_cpu[48] = "", gpu[48] = "";
	uint64_t now = clock__monotonic_ns();
	size_t kernels;

	if (pr->last_ns && now - pr->last_ns < PROGRESS_INTERVAL_NS)
		return;
	pr->last_ns = now;
	session__progress(session, &sp);
	if (sp.off_cpu)
		snprintf(off_cpu, sizeof(off_cpu), ", %llu waits", (unsigned long long)sp.off_cpu);
	kernels = gpu_capture__kernels(pr->gpu);
	if (kernels)
		snprintf(gpu, sizeof(gpu), ", %zu GPU kernels", kernels);
	status__progress("%.1f s: %llu samples, %llu lost%s%s", sp.elapsed_ns / 1e9,
			 (unsigned long long)sp.samples, (unsigned long long)sp.lost, off_cpu, gpu);
}

int progress__default_output(pid_t pid, enum profile_format format, char *path, size_t size)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int n;

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	n = snprintf(path, size, "llmprof-%d-%s.%s", pid, stamp, format__get(format)->extension);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
