// SPDX-License-Identifier: GPL-2.0
/*
 * The NCCL probes' userspace half: finds libnccl in the target's maps (now,
 * and later through the dynamic loader's probe), resolves the API's
 * functions with libelf under either name NCCL exports (nccl* and its
 * profiling alias pnccl*, one address), attaches an entry and a return
 * probe to each, keeps every call, and turns them into the summary and a
 * profile weighted in bytes (the join with the GPU is in nccl_join.c).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "gpu/library_probe.h"
#include "sampling/probe_family.h"
#include "gpu/nccl_probe.h"
#include "gpu/nccl_probe_internal.h"
#include "sampling/bpf_cost.h"
#include "nccl.h"
#include "profile/text_output.h"
#include "sampler.h"
#include "status.h"

#include "nccl.skel.h"

#define NCCL_STACK_COPY 4096
#define SUMMARY_ROWS 20

const struct nccl_call nccl_calls[NCCL_NR_CALLS] = {
    {"ncclAllReduce", "AllReduce", NCCL_COLL_OP},
    {"ncclAllGather", "AllGather", NCCL_COLL},
    {"ncclReduceScatter", "ReduceScatter", NCCL_COLL_OP},
    {"ncclBroadcast", "Broadcast", NCCL_COLL_ROOT},
    /* The in-place broadcast of NCCL's first API: the same operation. */
    {"ncclBcast", "Broadcast", NCCL_P2P},
    {"ncclGather", "Gather", NCCL_COLL_ROOT},
    {"ncclScatter", "Scatter", NCCL_COLL_ROOT},
    {"ncclReduce", "Reduce", NCCL_COLL_OP_ROOT},
    {"ncclAlltoAll", "AllToAll", NCCL_COLL},
    {"ncclAllToAll", "AllToAll", NCCL_COLL},
    {"ncclSend", "Send", NCCL_P2P},
    {"ncclRecv", "Recv", NCCL_P2P},
    {"ncclGroupStart", "GroupStart", NCCL_GROUP},
    {"ncclGroupEnd", "GroupEnd", NCCL_GROUP},
    {"ncclCommInitRank", "CommInitRank", NCCL_INIT},
    {"ncclCommInitRankConfig", "CommInitRankConfig", NCCL_INIT},
    {"ncclCommInitRankScalable", "CommInitRankScalable", NCCL_INIT},
    {"ncclCommSplit", "CommSplit", NCCL_SPLIT},
    {"ncclCommShrink", "CommShrink", NCCL_SHRINK},
};

/* ncclDataType_t (nccl.h, 2.28): int8, uint8, int32, uint32, int64, uint64,
 * float16, float32, float64, bfloat16, float8e4m3, float8e5m2. */
static const unsigned int type_sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

unsigned int nccl_probe__type_size(unsigned int type)
{
	return type < sizeof(type_sizes) / sizeof(type_sizes[0]) ? type_sizes[type] : 0;
}

static int record_call(void *ctx, const struct sample_event *event, uint32_t thread,
		       uint32_t stack);
static bool is_nccl(const char *mapped, void *ctx);
static int probe_library(void *ctx, const char *path, const char *mapped);

int nccl_probe__open(struct nccl_probe **out, struct session *session, pid_t pid, bool stop_on_load)
{
	struct capture_settings settings;
	struct nccl_probe *n = calloc(1, sizeof(*n));
	uint64_t load_started;
	int err;

	if (!n)
		return -ENOMEM;
	n->session = session;
	n->probe = (struct library_probe){
	    .what = "libnccl",
	    .is_library = is_nccl,
	    .probe_library = probe_library,
	    .ctx = n,
	    .lost_counter = COUNTER_LOST_NCCL,
	};
	library_probe__init(&n->probe, session, pid, stop_on_load);
	n->skel = nccl_bpf__open();
	if (!n->skel) {
		err = -errno;
		goto fail;
	}
	session__capture_settings(session, &settings);
	SESSION_SET_CAPTURE_RODATA(n->skel->rodata, &settings, NCCL_STACK_COPY);
	n->skel->rodata->stop_on_load = stop_on_load;
	n->probe.loader_program = n->skel->progs.nccl_loader;
	err = session__share_maps(session, n->skel->obj);
	load_started = bpf_cost__now();
	if (!err)
		err = nccl_bpf__load(n->skel);
	if (!err)
		bpf_cost__loaded("nccl", n->skel->obj, load_started);
	if (!err)
		err = session__set_record_handler(session, SAMPLE_KIND_NCCL, record_call, n);
	if (err)
		goto fail;
	*out = n;
	return 0;
fail:
	nccl_probe__close(n);
	return err;
}

/* Which call a symbol is: NCCL defines each as pnccl* and nccl*. */
static int nccl_call_index(const char *name, void *ctx)
{
	(void)ctx;
	if (name[0] == 'p')
		name++;
	if (strncmp(name, "nccl", 4))
		return -1;
	for (size_t k = 0; k < NCCL_NR_CALLS; k++)
		if (!strcmp(name, nccl_calls[k].symbol))
			return k;
	return -1;
}

/* An entry and a return probe on each call, once per address. */
static int probe_library(void *ctx, const char *path, const char *mapped)
{
	size_t offsets[NCCL_NR_CALLS] = {0};
	struct nccl_probe *n = ctx;
	unsigned int probed = 0;
	int err;

	err = library_probe__function_offsets(path, true, nccl_call_index, NULL, offsets);
	if (err) {
		status__warn("no NCCL functions found in %s: %s", mapped, strerror(-err));
		return 0;
	}
	for (size_t k = 0; k < NCCL_NR_CALLS; k++) {
		__u64 cookie = NCCL_COOKIE(nccl_calls[k].shape, k);
		bool seen = false;

		for (size_t j = 0; j < k && !seen; j++)
			seen = offsets[j] == offsets[k];
		if (!offsets[k] || seen)
			continue;
		err = library_probe__attach_uprobe(&n->probe, n->skel->progs.nccl_enter, path,
						   offsets[k], cookie, false);
		if (!err)
			err = library_probe__attach_uprobe(&n->probe, n->skel->progs.nccl_return,
							   path, offsets[k], cookie, true);
		if (err) {
			status__warn("cannot probe %s in %s: %s", nccl_calls[k].symbol, mapped,
				     strerror(-err));
			return err;
		}
		probed++;
	}
	n->nr_probed += probed;
	status__debug("NCCL: %u functions probed in %s", probed, mapped);
	return 0;
}

static bool is_nccl(const char *mapped, void *ctx)
{
	const char *base = strrchr(mapped, '/');

	(void)ctx;
	return base && !strncmp(base + 1, "libnccl.so", 10);
}

static int record_call(void *ctx, const struct sample_event *e, uint32_t thread, uint32_t stack)
{
	struct nccl_probe *n = ctx;
	uint64_t cookie = e->detail[NCCL_DETAIL_CALL], type = e->detail[NCCL_DETAIL_TYPE];
	struct nccl_event *event;
	int err;

	if (NCCL_COOKIE_SHAPE(cookie) == NCCL_LOADER)
		return library_probe__on_load(&n->probe, e->pid);
	if (NCCL_COOKIE_CALL(cookie) >= NCCL_NR_CALLS)
		return 0;
	err =
	    array__grow((void **)&n->events, &n->cap_events, n->nr_events + 1, sizeof(*n->events));
	if (err)
		return err;
	event = &n->events[n->nr_events++];
	memset(event, 0, sizeof(*event));
	event->time_ns = e->time_ns;
	event->start_ns = e->detail[NCCL_DETAIL_START_NS];
	event->count = e->detail[NCCL_DETAIL_COUNT];
	event->comm = e->detail[NCCL_DETAIL_COMM];
	event->stream = e->detail[NCCL_DETAIL_STREAM];
	event->parent = e->detail[NCCL_DETAIL_PARENT];
	event->result = (int64_t)e->detail[NCCL_DETAIL_RESULT];
	event->type = type & 0xff;
	event->op = (type >> 8) & 0xff;
	event->peer = (int32_t)(type >> 32);
	event->call = NCCL_COOKIE_CALL(cookie);
	event->pid = e->pid;
	event->tid = e->tid;
	event->group_end = -1;
	event->frame = event->activity_frame = -1;
	event->thread = thread;
	event->stack = stack;
	event->frames = -1;
	status__debug("NCCL: %s count %" PRIu64 " type %u op %u peer %d comm 0x%" PRIx64
		      " stream 0x%" PRIx64 ": %" PRId64,
		      nccl_calls[event->call].name, event->count, event->type, event->op,
		      event->peer, event->comm, event->stream, event->result);
	return 0;
}

int nccl_probe__attach(struct nccl_probe *n)
{
	return library_probe__scan(&n->probe);
}

unsigned int nccl_probe__nr_probed(const struct nccl_probe *n)
{
	return n ? n->nr_probed : 0;
}

void nccl_probe__detach(struct nccl_probe *n)
{
	if (n)
		library_probe__detach(&n->probe);
}

int nccl_probe__finish(struct nccl_probe *n, struct session *session,
		       const struct profile *cpu_profile)
{
	int err;

	n->frames_profile = cpu_profile;
	for (size_t i = 0; i < n->nr_events; i++) {
		struct nccl_event *e = &n->events[i];

		err = library_probe_stacks__resolve(&n->stacks, session, e->thread, e->stack,
						    &e->frames, &e->nr_frames);
		if (err)
			return err;
	}
	err = nccl_probe__prepare_joins(n);
	if (err)
		return err;
	n->finished = true;
	return 0;
}

/* Collectives and point-to-point calls move data; group and communicator
 * calls do not. */
bool nccl_event__moves_data(const struct nccl_event *e)
{
	enum nccl_shape shape = nccl_calls[e->call].shape;

	return shape != NCCL_GROUP && shape != NCCL_INIT && shape != NCCL_SPLIT &&
	       shape != NCCL_SHRINK;
}

uint64_t nccl_event__bytes(const struct nccl_event *e)
{
	return e->count * nccl_probe__type_size(e->type);
}

/* The power of two at or above bytes: the size bucket. */
uint64_t nccl_bucket_of(uint64_t bytes)
{
	uint64_t bucket = 1;

	while (bucket < bytes && bucket < (1ULL << 62))
		bucket <<= 1;
	return bytes ? bucket : 0;
}

int nccl_probe__profile(const struct nccl_probe *n, struct profile **out)
{
	const struct profile *cpu = n->frames_profile;
	uint32_t frames[1024 + 1];
	int64_t *ids = NULL;
	struct profile *p;
	int err = -ENOMEM;

	if (!n->finished)
		return -EINVAL;
	p = profile__new();
	ids = malloc((cpu->nr_frames ? cpu->nr_frames : 1) * sizeof(*ids));
	if (!p || !ids)
		goto fail;
	for (size_t i = 0; i < cpu->nr_frames; i++)
		ids[i] = -1;
	p->unit = UNIT_BYTES;
	p->start_ns = cpu->start_ns;
	p->duration_ns = cpu->duration_ns;
	if (cpu->name && !(p->name = strdup(cpu->name)))
		goto fail;
	for (size_t i = 0; i < n->nr_events; i++) {
		const struct nccl_event *e = &n->events[i];
		size_t depth = 0, nr = e->nr_frames < 1024 ? e->nr_frames : 1024;
		char leaf[96], size[32];
		int64_t id;

		if (!nccl_event__moves_data(e) || !nccl_event__bytes(e))
			continue;
		for (size_t k = 0; k < nr; k++) {
			uint32_t from = n->stacks.frames[e->frames + k];
			const struct frame *f = &cpu->frames[from];

			if (ids[from] < 0)
				ids[from] =
				    profile__intern_frame(p, f->name, f->file, f->line, f->kind);
			if (ids[from] < 0)
				goto fail;
			frames[depth++] = ids[from];
		}
		text_output__bytes(size, sizeof(size), nccl_event__bytes(e));
		/* A failed call moved nothing: its leaf says so, weighted by
		 * what it asked for. */
		snprintf(leaf, sizeof(leaf), FRAME_NCCL_MARK "%s %s%s", nccl_calls[e->call].name,
			 size, e->result ? " (failed)" : "");
		id = profile__intern_frame(p, leaf, NULL, 0, FRAME_NCCL);
		if (id < 0)
			goto fail;
		frames[depth++] = id;
		id = profile__intern_stack(p, frames, depth);
		if (id < 0)
			goto fail;
		profile__add_weight(p, id, nccl_event__bytes(e));
	}
	free(ids);
	*out = p;
	return 0;
fail:
	free(ids);
	profile__free(p);
	return err;
}

struct row {
	uint16_t call;
	uint64_t bucket, calls, bytes;
	int64_t result;
	size_t first;
};

static const char *result_name(int64_t result)
{
	static const char *const names[] = {
	    "ncclSuccess",	   "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	    "ncclInvalidArgument", "ncclInvalidUsage",	     "ncclRemoteError", "ncclInProgress",
	};

	return result >= 0 && result < 8 ? names[result] : "unknown error";
}

void nccl_probe__print_summary(const struct nccl_probe *n)
{
	struct row *failed = NULL;
	size_t nr_failed = 0, cap_failed = 0;
	uint64_t total_calls = 0, total_bytes = 0, groups = 0;

	if (!n || !n->finished || (!n->nr_events && !n->nr_probed))
		return;
	/* The successful calls are in the table (profile->nccl); the failed
	 * ones are listed by call, size, result and stack. */
	for (size_t i = 0; i < n->nr_events; i++) {
		const struct nccl_event *e = &n->events[i];
		uint64_t bucket = nccl_bucket_of(nccl_event__bytes(e));
		size_t k;

		if (!e->result) {
			groups += !strcmp(nccl_calls[e->call].name, "GroupEnd");
			if (nccl_event__moves_data(e)) {
				total_calls++;
				total_bytes += nccl_event__bytes(e);
			}
			continue;
		}
		for (k = 0; k < nr_failed; k++)
			if (failed[k].call == e->call && failed[k].bucket == bucket &&
			    failed[k].result == e->result &&
			    n->events[failed[k].first].stack == e->stack)
				break;
		if (k == nr_failed) {
			if (array__grow((void **)&failed, &cap_failed, nr_failed + 1,
					sizeof(*failed)))
				goto out;
			failed[k] = (struct row){
			    .call = e->call, .bucket = bucket, .result = e->result, .first = i};
			nr_failed++;
		}
		failed[k].calls++;
		failed[k].bytes += nccl_event__bytes(e);
	}
	{
		char bytes[32];

		text_output__bytes(bytes, sizeof(bytes), total_bytes);
		status__info("NCCL: %" PRIu64 " calls, %s, %" PRIu64
			     " groups, %u functions probed%s",
			     total_calls, bytes, groups, n->nr_probed,
			     n->probe.lost ? " (some calls lost: ring buffer full)" : "");
	}
	{
		char *table = nccl_facts__format(&n->frames_profile->nccl, "");

		for (char *line = table, *end; line && *line; line = end + 1) {
			end = strchrnul(line, '\n');
			status__info("  %.*s", (int)(end - line), line);
			if (!*end)
				break;
		}
		free(table);
	}
	if (nr_failed)
		status__info("  failed calls:");
	for (size_t k = 0; k < nr_failed && k < SUMMARY_ROWS; k++) {
		const struct nccl_event *e = &n->events[failed[k].first];
		char stack[512];
		char bytes[32] = "";

		if (nccl_event__moves_data(e))
			text_output__bytes(bytes, sizeof(bytes), nccl_event__bytes(e));
		library_probe__describe_stack(n->frames_profile, n->stacks.frames + e->frames,
					      e->nr_frames, stack, sizeof(stack));
		status__info("    %" PRIu64 " x %s%s%s: %s (%" PRId64 ") at %s", failed[k].calls,
			     nccl_calls[e->call].name, bytes[0] ? " " : "", bytes,
			     result_name(e->result), e->result, stack);
	}
out:
	free(failed);
}

void nccl_probe__close(struct nccl_probe *n)
{
	if (!n)
		return;
	library_probe__free(&n->probe);
	nccl_bpf__destroy(n->skel);
	free(n->events);
	library_probe_stacks__free(&n->stacks);
	free(n->by_thread);
	free(n->members);
	free(n->joined_frames);
	free(n);
}

/* The probe family's row (lib/sampling/probe_family.h): without its probes
 * the profile goes on.  Attached to processes none of which maps libnccl,
 * the family stays out unless its view is asked for: its object and the
 * dynamic loader's probe (which stops the target at every library load)
 * would cost llmprof a tenth of its CPU for nothing.  A command recorded
 * has mapped nothing yet, so it is probed. */
static bool nccl_wanted(const struct probe_family_env *env)
{
	const struct session_options *sampling = env->sampling;
	const char *view = env->options->view;

	if (!env->options->nccl)
		return false;
	if (env->record || (view && !strcmp(view, "nccl")))
		return true;
	if (library_probe__mapped(sampling->pid, sampling->children, is_nccl, NULL))
		return true;
	for (size_t i = 0; i < sampling->nr_more_pids; i++)
		if (library_probe__mapped(sampling->more_pids[i], sampling->children, is_nccl,
					  NULL))
			return true;
	status__debug("no process of the target maps libnccl: no NCCL probes");
	return false;
}

static int nccl_open(void **state, const struct probe_family_env *env)
{
	int err =
	    nccl_probe__open((struct nccl_probe **)state, env->session, env->pid, env->record);

	if (err) {
		status__warn("NCCL probes unavailable: %s", status__bpf_error(err));
		*state = NULL;
	}
	return 0;
}

static int nccl_attach(void **state, const struct probe_family_env *env)
{
	if (nccl_probe__attach(*state)) {
		status__warn("cannot probe libnccl in process %d; no NCCL calls", env->pid);
		nccl_probe__close(*state);
		*state = NULL;
	}
	return 0;
}

static void nccl_detach(void *state)
{
	nccl_probe__detach(state);
}

static int nccl_finish(void *state, struct probe_family_result *result)
{
	int err = nccl_probe__finish(state, result->session, result->profile);

	if (!err) {
		result->launch_join = nccl_probe__join;
		result->launch_join_ctx = state;
	}
	return err;
}

static int nccl_facts(void *state, struct probe_family_result *result)
{
	return nccl_probe__facts(state, result->profile);
}

static int nccl_view(void *state, const char *view, const struct probe_family_result *result,
		     struct profile **out)
{
	int err = 0;

	(void)result;
	if (strcmp(view, "nccl"))
		return 0;
	if (state)
		err = nccl_probe__profile(state, out);
	else
		status__warn("no NCCL probes: the NCCL profile is empty");
	if (!err && !*out) {
		*out = profile__new();
		if (!*out)
			return -ENOMEM;
		(*out)->unit = UNIT_BYTES;
	}
	return err;
}

static void nccl_summary(const void *state, const struct profile *profile)
{
	(void)profile;
	nccl_probe__print_summary(state);
}

static void nccl_close(void *state)
{
	nccl_probe__close(state);
}

const struct probe_family nccl_family = {
    .name = "NCCL",
    .wanted = nccl_wanted,
    .open = nccl_open,
    .attach = nccl_attach,
    .detach = nccl_detach,
    .finish = nccl_finish,
    .facts = nccl_facts,
    .view = nccl_view,
    .views = (const char *const[]){"nccl", NULL},
    .summary = nccl_summary,
    .close = nccl_close,
};
