/* SPDX-License-Identifier: GPL-2.0 */
/* The end-of-run summary on stderr. */
#ifndef LLMPROF_SUMMARY_H
#define LLMPROF_SUMMARY_H

#include <sys/types.h>

#include "profile/output.h"
#include "profile/profile.h"

#define SUMMARY_TOP_FUNCTIONS 10
#define SUMMARY_TOP_WAITS 5
/* The deepest user stack a sample carries (MAX_STACK_DEPTH in bpf/sampler.h). */
#define SUMMARY_MAX_STACK_DEPTH 127

void summary__print(const struct profile *profile, pid_t pid, const char *output_path,
		    enum profile_format format);

#endif /* LLMPROF_SUMMARY_H */
