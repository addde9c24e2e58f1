/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which capabilities each feature needs, checked once at start (capget), so
 * a missing one is named with the feature that needs it before anything
 * fails deep inside.
 */
#ifndef LLMPROF_PRIVILEGE_H
#define LLMPROF_PRIVILEGE_H

#include <stdbool.h>

/* attach and record: an error and -1 where CPU sampling cannot work (no
 * CAP_BPF or CAP_PERFMON, nor CAP_SYS_ADMIN); a warning for each other
 * feature asked for that will fail (uprobes: GPU or NCCL probes asked for;
 * injection: GPU capture by attach).  0 otherwise. */
int privilege__check_profile(bool off_cpu, bool uprobes, bool gpu_injection);
/* A warning for each feature the MCP server's profiles will lack. */
void privilege__warn_missing(void);

#endif /* LLMPROF_PRIVILEGE_H */
