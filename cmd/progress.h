/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The live line attach and record show on a terminal while sampling, and
 * the file name they pick when the profile would otherwise scroll past on
 * one.
 */
#ifndef LLMPROF_CMD_PROGRESS_H
#define LLMPROF_CMD_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/output.h"

struct gpu_capture;
struct session;

struct progress {
	const struct gpu_capture *gpu; /* NULL: no GPU count shown */
	uint64_t last_ns;	       /* when the line was last drawn */
};

/* True when stderr is a terminal and status lines are not silenced. */
bool progress__wanted(void);
/* A session_options tick: redraws the line about twice a second. */
void progress__tick(void *progress, const struct session *session);

/* "llmprof-PID-YYYYmmdd-HHMMSS.EXT" in the current directory, EXT after
 * the format.  0 or -ENAMETOOLONG. */
int progress__default_output(pid_t pid, enum profile_format format, char *path, size_t size);

#endif /* LLMPROF_CMD_PROGRESS_H */
