/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The target set: the processes (thread group ids) being profiled, shared by
 * every probe family.  The sampler's object owns the map; the other families'
 * objects reuse its descriptor (session__share_maps()), so one set, updated
 * in one place, filters every program with one hash lookup.
 */
#ifndef LLMPROF_TARGETS_BPF_H
#define LLMPROF_TARGETS_BPF_H

#include "targets.h"

/* Allocated by entry: most sessions track a handful of processes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MAX_TARGETS);
	__type(key, __u32);		   /* tgid */
	__type(value, struct target_info); /* why it is tracked */
} targets SEC(".maps");

static __always_inline bool targets__contains(__u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

#endif /* LLMPROF_TARGETS_BPF_H */
