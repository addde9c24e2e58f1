// SPDX-License-Identifier: GPL-2.0
/*
 * GPU capture for a profiling session: puts the embedded CUPTI agent into
 * the target (CUDA_INJECTION64_PATH for record, ptrace injection for
 * attach), attaches the launch probe, and at the end merges the agent's
 * records with the launch stacks into the profile.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "base/procfs.h"
#include "gpu/agent_image.h"
#include "gpu/gpu_capture.h"
#include "gpu/gpu_protocol.h"
#include "gpu/agent_server.h"
#include "inject/inject.h"
#include "sampling/probe_family.h"
#include "sampling/process_table.h"
#include "status.h"

#define AGENT_MEMFD_NAME "llmprof-agent"
#define AGENT_START_SYMBOL "llmprof_agent_start"
#define STOP_TIMEOUT_MS 3000
#define SUMMARY_TOP_KERNELS 10

struct gpu_capture {
	struct agent_server *gpu;
	int memfd; /* record: the agent image the child loads */
	bool active;
	gpu_join_fn join;
	void *join_ctx;
	/* For the summary: the launch probe's counters, and its rate. */
	const struct session *session;
	unsigned int launch_stack_rate;
	bool governed; /* --max-overhead: launch stacks rarer while the clock is slowed */
};

int gpu_capture__open(struct gpu_capture **out, uid_t target_uid)
{
	struct agent_server_options options = {.target_uid = target_uid};
	struct gpu_capture *gc;
	size_t size;
	int err;

	*out = NULL;
	if (!agent_image__get(&size))
		return -ENOTSUP;
	gc = calloc(1, sizeof(*gc));
	if (!gc)
		return -ENOMEM;
	gc->memfd = -1;
	err = agent_server__open(&gc->gpu, &options);
	if (err) {
		free(gc);
		return err;
	}
	*out = gc;
	return 0;
}

size_t gpu_capture__kernels(const struct gpu_capture *gc)
{
	struct agent_server_stats stats;

	if (!gc)
		return 0;
	agent_server__stats(gc->gpu, &stats);
	return stats.kernels;
}

void gpu_capture__close(struct gpu_capture *gc)
{
	if (!gc)
		return;
	agent_server__close(gc->gpu);
	if (gc->memfd >= 0)
		close(gc->memfd);
	free(gc);
}

int gpu_capture__poll_fd(const struct gpu_capture *gc)
{
	return agent_server__fd(gc->gpu);
}

int gpu_capture__on_readable(void *ctx)
{
	return agent_server__on_readable(((struct gpu_capture *)ctx)->gpu);
}

int gpu_capture__prepare_record(struct gpu_capture *gc)
{
	const unsigned char *image;
	char path[64];
	size_t size, done = 0;
	bool shared;

	if (getenv("CUDA_INJECTION64_PATH")) {
		status__warn("CUDA_INJECTION64_PATH is already set (another CUDA tool?); GPU "
			     "kernels are not profiled");
		return -EBUSY;
	}
	image = agent_image__get(&size);
	/*
	 * Nothing on disk: the agent is a memfd of ours, and the command's
	 * whole tree finds it as /proc/LLMPROF_PID/fd/N while we run, also a
	 * grandchild started with its inherited descriptors closed (Python's
	 * subprocess does that), where /proc/self/fd/N would name nothing or
	 * another file.  That takes ptrace access to us: when we are not
	 * root and not dumpable (file capabilities), the command inherits
	 * the descriptor instead and /proc/self/fd/N names it.
	 */
	shared = geteuid() == 0 || prctl(PR_GET_DUMPABLE) == 1;
	gc->memfd = memfd_create(AGENT_MEMFD_NAME, shared ? MFD_CLOEXEC : 0);
	if (gc->memfd < 0)
		return -errno;
	while (done < size) {
		ssize_t n = write(gc->memfd, image + done, size - done);

		if (n < 0)
			return -errno;
		done += n;
	}
	if (shared)
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", getpid(), gc->memfd);
	else
		snprintf(path, sizeof(path), "/proc/self/fd/%d", gc->memfd);
	if (setenv("CUDA_INJECTION64_PATH", path, 1) ||
	    setenv(GPU_AGENT_SOCKET_ENV, agent_server__socket_name(gc->gpu), 1))
		return -errno;
	gc->active = true;
	return 0;
}

int gpu_capture__attach_record_probe(struct gpu_capture *gc, struct session *session)
{
	char path[64];

	if (!gc->active)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", getpid(), gc->memfd);
	return session__attach_launch_probe(session, path);
}

/* The mapping of the agent copy with this inode in the target, as a path
 * the probe can attach to: never an older copy's. */
static int agent_mapping_path(pid_t pid, unsigned long inode, char *path, size_t size)
{
	char maps_path[64];
	struct procfs_maps maps;
	struct procfs_mapping m;
	int err;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", pid);
	err = procfs_maps__open(&maps, maps_path);
	if (err)
		return err;
	err = -ENOENT;
	while (procfs_maps__next(&maps, &m) > 0) {
		if (!strstr(m.path, "/memfd:" AGENT_MEMFD_NAME) || (inode && m.inode != inode))
			continue;
		snprintf(path, size, "/proc/%d/map_files/%llx-%llx", pid,
			 (unsigned long long)m.start, (unsigned long long)m.end);
		err = 0;
		break;
	}
	procfs_maps__close(&maps);
	return err;
}

int gpu_capture__inject(struct gpu_capture *gc, struct session *session, pid_t pid)
{
	struct inject_request request = {
	    .start_symbol = AGENT_START_SYMBOL,
	    .argument = agent_server__socket_name(gc->gpu),
	    .memfd_name = AGENT_MEMFD_NAME,
	    .reuse_loaded = true,
	};
	struct inject_result result = {0};
	char cupti[4096], path[128];
	bool has_cuda = false;
	int err;

	err = inject__process_has_cuda(pid, &has_cuda, cupti, sizeof(cupti));
	if (err)
		return err;
	if (!has_cuda) {
		status__debug("process %d has no CUDA runtime loaded: CPU only", pid);
		return 0;
	}
	request.image = agent_image__get(&request.image_size);
	err = inject__run(pid, &request, &result);
	if (err) {
		status__warn("cannot load the GPU agent into process %d: %s%s%s; CPU only", pid,
			     strerror(-err), result.message[0] ? ": " : "", result.message);
		return err;
	}
	status__debug("GPU agent %s process %d in %.1f ms (thread %d stopped %.1f ms)",
		      result.reused ? "already loaded: started again in" : "loaded into", pid,
		      result.total_ns / 1e6, result.tid, result.stopped_ns / 1e6);
	if (result.start_result)
		status__warn("the GPU agent in process %d did not start (%d); CPU only", pid,
			     result.start_result);
	gc->active = true;
	err = agent_mapping_path(pid, result.image_inode, path, sizeof(path));
	if (!err)
		err = session__attach_launch_probe(session, path);
	if (err)
		status__warn("GPU launch stacks unavailable (%s); kernels are kept unattributed",
			     strerror(-err));
	return 0;
}

int gpu_capture__stop(struct gpu_capture *gc)
{
	if (!gc->active && !agent_server__nr_agents(gc->gpu))
		return 0;
	return agent_server__stop(gc->gpu, STOP_TIMEOUT_MS);
}

/* With GPU time in the profile, CPU samples count in microseconds too, so
 * the two can share one flame graph: each sample is 1e6/F. */
static void weights_to_microseconds(struct profile *p)
{
	uint64_t per_sample;

	if (p->unit != UNIT_SAMPLES || !p->frequency)
		return;
	per_sample = (1000000 + p->frequency / 2) / p->frequency;
	for (size_t i = 0; i < p->nr_stacks; i++)
		p->stacks[i].weight *= per_sample;
	for (size_t i = 0; i < p->nr_samples; i++)
		p->samples[i].weight *= per_sample;
	p->unit = UNIT_MICROSECONDS;
}

int gpu_capture__merge(struct gpu_capture *gc, struct session *session, struct profile *profile)
{
	struct gpu_merge_options options = {
	    .launch_stack = session__launch_stack,
	    .ctx = session,
	    .join = gc->join,
	    .join_ctx = gc->join_ctx,
	};
	struct agent_server_stats stats;

	agent_server__stats(gc->gpu, &stats);
	profile->gpu_records_dropped = stats.dropped_by_agent;
	profile->gpu_kernels_unnamed = stats.unnamed_kernels;
	if (!agent_server__nr_records(gc->gpu))
		return 0;
	weights_to_microseconds(profile);
	return agent_server__merge(gc->gpu, profile, &options);
}

void gpu_capture__set_join(struct gpu_capture *gc, gpu_join_fn join, void *ctx)
{
	if (!gc)
		return;
	gc->join = join;
	gc->join_ctx = ctx;
}

void gpu_capture__print_summary(const struct gpu_capture *gc, const struct profile *profile)
{
	uint64_t taken, skipped;
	char why[128];

	if (!agent_server__nr_agents(gc->gpu) && !agent_server__nr_records(gc->gpu))
		return;
	agent_server__print_summary(gc->gpu, profile, SUMMARY_TOP_KERNELS);
	if (!gc->session)
		return;
	taken = session__counter(gc->session, COUNTER_LAUNCH_STACKS);
	skipped = session__counter(gc->session, COUNTER_LAUNCH_SKIPPED);
	if (!skipped)
		return;
	if (gc->launch_stack_rate)
		snprintf(why, sizeof(why), "past --launch-stack-rate %u per second and thread%s",
			 gc->launch_stack_rate,
			 gc->governed ? " (less while --max-overhead slowed the clock)" : "");
	else
		snprintf(why, sizeof(why), "thinned by --max-overhead");
	status__text("  launch stacks: %" PRIu64 " taken, %" PRIu64
		     " launches %s took a taken launch's stack\n",
		     taken, skipped, why);
}

/*
 * The GPU launches' probe family (lib/sampling/probe_family.h): the agent
 * is put into the target and its records merged under the launching CPU
 * stacks.  Without it the profile goes on with CPU stacks only.
 */
#define MAX_INJECTED 256

static bool launches_wanted(const struct probe_family_env *env)
{
	return env->options->gpu;
}

static bool has_cuda(pid_t pid)
{
	bool found = false;

	return !inject__process_has_cuda(pid, &found, NULL, 0) && found;
}

/* Whether a process an attach selects (those named, and with children
 * their descendants alive now) has a CUDA runtime loaded: those get the
 * agent. */
static bool selection_has_cuda(const struct session_options *o)
{
	for (size_t i = 0; i <= o->nr_more_pids; i++) {
		pid_t pid = i ? o->more_pids[i - 1] : o->pid;
		pid_t *pids = NULL, *parents = NULL;
		bool found = has_cuda(pid);
		int64_t n = 0;

		if (!found && o->children)
			n = process_table__descendants(pid, &pids, &parents);
		/* Unknown: as before, the agent decides process by process. */
		found |= n < 0;
		for (int64_t k = 0; k < n && !found; k++)
			found = has_cuda(pids[k]);
		free(pids);
		free(parents);
		if (found)
			return true;
	}
	return false;
}

/* record: CUDA must find the agent when the command starts.  attach: only
 * a target with CUDA loaded gets the agent, so without any the family
 * does not open (and the launch program is not loaded). */
static int launches_prepare(void **state, const struct probe_family_env *env)
{
	struct gpu_capture *gc;
	int err;

	*state = NULL;
	if (!env->record && !selection_has_cuda(env->sampling)) {
		status__debug("no process of the target has a CUDA runtime loaded: CPU only");
		return 0;
	}
	err = gpu_capture__open(&gc, env->target_uid);
	if (err) {
		if (err != -ENOTSUP)
			status__warn("GPU capture unavailable: %s; CPU only", strerror(-err));
		return 0;
	}
	if (env->record && gpu_capture__prepare_record(gc)) {
		gpu_capture__close(gc);
		return 0;
	}
	*state = gc;
	return 0;
}

static int launches_open(void **state, const struct probe_family_env *env)
{
	struct gpu_capture *gc = *state;

	if (session__add_poll_fd(env->session, gpu_capture__poll_fd(gc), gpu_capture__on_readable,
				 gc)) {
		gpu_capture__close(gc);
		*state = NULL;
	}
	return 0;
}

static int launches_attach(void **state, const struct probe_family_env *env)
{
	struct gpu_capture *gc = *state;
	pid_t pids[MAX_INJECTED];
	size_t n;

	gc->session = env->session;
	gc->launch_stack_rate = env->sampling->launch_stack_rate;
	gc->governed = env->sampling->max_overhead > 0;
	if (env->record) {
		if (gpu_capture__attach_record_probe(*state, env->session))
			status__warn("GPU launch stacks unavailable; kernels are kept "
				     "unattributed");
		return 0;
	}
	/* Every CUDA process of the selection gets the agent; each one's
	 * launches are told apart by its process. */
	n = session__processes(env->session, pids, MAX_INJECTED);
	for (size_t i = 0; i < n; i++)
		gpu_capture__inject(*state, env->session, pids[i]);
	return 0;
}

static void launches_detach(void *state)
{
	gpu_capture__stop(state);
}

static int launches_finish(void *state, struct probe_family_result *result)
{
	if (result->launch_join)
		gpu_capture__set_join(state, result->launch_join, result->launch_join_ctx);
	return gpu_capture__merge(state, result->session, result->profile);
}

static void launches_summary(const void *state, const struct profile *profile)
{
	gpu_capture__print_summary(state, profile);
}

static void launches_close(void *state)
{
	gpu_capture__close(state);
}

const struct probe_family gpu_launch_family = {
    .name = "GPU launches",
    .wanted = launches_wanted,
    .prepare = launches_prepare,
    .open = launches_open,
    .attach = launches_attach,
    .detach = launches_detach,
    .finish = launches_finish,
    .summary = launches_summary,
    .close = launches_close,
};
