/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The calls in which a training or serving process waits, and what each
 * wait means to an ML engineer: one table for the end-of-run summary's
 * named waits and the findings' rules (host-sync, gil-contention).
 */
#ifndef LLMPROF_ML_WAITS_H
#define LLMPROF_ML_WAITS_H

#include <stdbool.h>
#include <stddef.h>

#include "profile/profile.h"

enum ml_wait_kind {
	ML_WAIT_GPU_SYNC = 0, /* the host blocks until the GPU is done */
	ML_WAIT_GPU_COPY,     /* a copy that may block (an asynchronous one) */
	ML_WAIT_COLLECTIVE,   /* a collective's work */
	ML_WAIT_GIL,	      /* CPython's global interpreter lock */
	ML_WAIT_DATA,	      /* a DataLoader, a queue, another process */
	ML_WAIT_THREAD,	      /* threading's conditions, locks and joins */
};

#define ML_WAIT_MASK(kind) (1u << (kind))
#define ML_WAIT_ANY (~0u)

struct ml_wait {
	/* A native name: the name itself, or followed by "(" or "@" (C++
	 * arguments, a symbol version); "x*" any name that starts with x;
	 * "*x*" any name containing x.  A Python frame matches where its
	 * name contains the text between the stars, or the whole text. */
	const char *frame;
	const char *meaning; /* "waiting for the GPU" */
	enum ml_wait_kind kind;
	bool idle;    /* only where the frame waits itself (a pthread_cond_
		       * call below it): a thread that waits for work to come */
	bool blocked; /* only where the thread blocks, not where it is
		       * preempted: a wait for another rank is not a CPU's */
};

extern const struct ml_wait ml_waits[];
extern const size_t nr_ml_waits;

/* Whether name matches one pattern, as struct ml_wait.frame says. */
bool frame_name__matches(const char *name, const char *pattern);
/* The first entry of a kind in kinds (ML_WAIT_MASK()s) that the frame
 * matches, or NULL. */
const struct ml_wait *ml_wait__find(const struct frame *frame, unsigned int kinds);

#endif /* LLMPROF_ML_WAITS_H */
