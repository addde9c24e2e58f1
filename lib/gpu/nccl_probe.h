/* SPDX-License-Identifier: GPL-2.0 */
/*
 * NCCL calls by the CPU stack that made them (bpf/nccl.bpf.c): uprobes on
 * the collective, point-to-point, group and communicator calls of every
 * libnccl the target maps.  At the end: a table per operation and size
 * bucket (calls, bytes) and a profile weighted in bytes whose leaves say
 * "[nccl] AllReduce 256.0 MiB".
 */
#ifndef LLMPROF_NCCL_PROBE_H
#define LLMPROF_NCCL_PROBE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpu/agent_server.h"
#include "profile/profile.h"
#include "sampling/session.h"

struct nccl_probe;

/* Loads the probes into the session's maps and takes its NCCL records;
 * attaches nothing.  stop_on_load as for gpu_memory__open().  0 or -errno. */
int nccl_probe__open(struct nccl_probe **out, struct session *session, pid_t pid,
		     bool stop_on_load);
/* After session__start(): probes the libnccl the target maps now and the
 * dynamic loader, for one it maps later.  Nothing is attached to a process
 * that never maps libnccl but the loader's probe.  0 or -errno. */
int nccl_probe__attach(struct nccl_probe *probe);
/* How many NCCL functions are probed (0: the target maps no libnccl). */
unsigned int nccl_probe__nr_probed(const struct nccl_probe *probe);
/* Before session__finish(): no more calls are recorded. */
void nccl_probe__detach(struct nccl_probe *probe);
/* After session__finish(): the stacks resolved into the CPU profile's
 * frames.  0 or -errno. */
int nccl_probe__finish(struct nccl_probe *probe, struct session *session,
		       const struct profile *cpu_profile);
/* gpu_merge_options.join: a kernel launched inside an NCCL call (or the
 * GroupEnd of its group) under that call's "[nccl] OP SIZE" frame, its GPU
 * time the call's. */
int64_t nccl_probe__join(void *probe, struct profile *profile, struct gpu_join *join);
/* After the merge: profile->nccl, the table per operation and size bucket
 * with GPU times and bandwidths, and the exposed communication.  0 or
 * -errno. */
int nccl_probe__facts(const struct nccl_probe *probe, struct profile *profile);
/* A new profile in bytes (UNIT_BYTES) of every collective and
 * point-to-point call, the leaf "[nccl] OP SIZE" ("... (failed)" where NCCL
 * returned an error: the bytes it was asked to move).  0 or -errno. */
int nccl_probe__profile(const struct nccl_probe *probe, struct profile **out);
/* The stderr summary: calls and bytes per operation and size bucket,
 * communicators, failed calls with their stacks. */
void nccl_probe__print_summary(const struct nccl_probe *probe);
void nccl_probe__close(struct nccl_probe *probe);

/* Bytes of one element of ncclDataType_t TYPE; 0 where unknown. */
unsigned int nccl_probe__type_size(unsigned int type);

#endif /* LLMPROF_NCCL_PROBE_H */
