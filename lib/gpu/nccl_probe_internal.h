/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the NCCL probes' two halves share: the probes and the calls they
 * recorded (nccl_probe.c), and the join of those calls with the GPU work
 * they launched, with the table it gives (nccl_join.c).
 */
#ifndef LLMPROF_NCCL_PROBE_INTERNAL_H
#define LLMPROF_NCCL_PROBE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpu/library_probe.h"
#include "gpu/nccl_probe.h"
#include "nccl.h"

struct nccl_call {
	const char *symbol; /* without the "p" of the profiling alias */
	const char *name;   /* as the leaf shows it */
	enum nccl_shape shape;
};

#define NCCL_NR_CALLS 19
extern const struct nccl_call nccl_calls[NCCL_NR_CALLS];

struct nccl_event {
	uint64_t time_ns, start_ns;
	uint64_t count, comm, stream;
	uint64_t parent; /* CommSplit, CommShrink: the communicator split */
	int64_t result;
	uint8_t type, op;
	int32_t peer;
	uint16_t call;
	uint32_t pid, tid;
	uint32_t thread, stack;
	int64_t frames; /* into nccl_probe.stacks.frames once resolved, or -1 */
	uint32_t nr_frames;
	/* The join with the GPU: a call in a group is launched by the
	 * group's outermost GroupEnd; a GroupEnd's members follow it in
	 * nccl_probe.members. */
	int64_t group_end;		 /* that GroupEnd's event, or -1 */
	size_t first_member, nr_members; /* GroupEnd */
	uint32_t ranks;			 /* the communicator's size, 0 when unknown */
	uint64_t gpu_ns;
	uint32_t kernels;
	int64_t frame; /* "[nccl] ..." in the merged profile, or -1 */
	int64_t activity_frame;
};

struct nccl_probe {
	struct nccl_bpf *skel;
	struct session *session;
	struct library_probe probe;
	unsigned int nr_probed;

	struct nccl_event *events;
	size_t nr_events, cap_events;
	size_t *by_thread; /* event indices by pid, tid, start */
	size_t *members;
	size_t nr_members;
	int64_t *joined_frames; /* the timeline frames of joined GPU work */
	size_t nr_joined_frames, cap_joined_frames;

	const struct profile *frames_profile;
	struct library_probe_stacks stacks; /* the calls' stacks, root first */
	bool finished;
};

/* Collectives and point-to-point calls move data; group and communicator
 * calls do not. */
bool nccl_event__moves_data(const struct nccl_event *e);
/* count x the datatype's size. */
uint64_t nccl_event__bytes(const struct nccl_event *e);
/* The power of two at or above bytes: the size bucket. */
uint64_t nccl_bucket_of(uint64_t bytes);
/* At finish: the index and group membership the join uses.  0 or -errno. */
int nccl_probe__prepare_joins(struct nccl_probe *n);

#endif /* LLMPROF_NCCL_PROBE_INTERNAL_H */
