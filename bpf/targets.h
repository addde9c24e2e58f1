/* SPDX-License-Identifier: GPL-2.0 */
/* Types of the target set (targets.bpf.h), shared with userspace. */
#ifndef LLMPROF_BPF_TARGETS_H
#define LLMPROF_BPF_TARGETS_H

#define MAX_TARGETS 16384

/* target_info.flags */
#define TARGET_FLAG_SELECTED 1 /* named on the command line (or record's command) */
#define TARGET_FLAG_CHILD 2    /* a descendant, added when it was forked */

struct target_info {
	__u32 flags;
	__u32 parent; /* tgid it was forked from; 0 for selected processes */
};

#endif /* LLMPROF_BPF_TARGETS_H */
