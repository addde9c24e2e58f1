// SPDX-License-Identifier: GPL-2.0
/*
 * The data-loading finding's suggestion, in the job's own numbers: how many
 * workers each rank has, how busy they are, how long the loop waits for
 * them, and whether the machine had a core to spare for more.
 */
#include <math.h>
#include <stdio.h>

#include "findings/analysis.h"

/* Workers this busy (on the CPU or runnable) are the bottleneck. */
#define LOADER_BUSY 0.80
/* Workers runnable this share of their loop wait for a CPU: no core idles. */
#define LOADER_NO_SPARE_CORE 0.10

int loader_advice__suggest(struct finding *f, const struct loader_advice *in)
{
	double busy = in->on_cpu + in->runnable;
	double workers = in->ranks ? (double)in->workers / in->ranks : in->workers;
	int per_rank = (int)lround(workers), needed;

	if (!in->workers)
		return finding__suggest(f, "use DataLoader(num_workers=N) so batches are prepared "
					   "in worker processes while the step runs");
	/* What the loop asks for, in workers busy as these are: the batches
	 * they make now, and the time it waits for them. */
	needed = in->data_wait < 1 ? (int)ceil(workers * busy / (1 - in->data_wait) - 1e-9)
				   : per_rank + 1;
	if (needed <= per_rank)
		needed = per_rank + 1;
	if (busy < LOADER_BUSY)
		return finding__suggest(
		    f,
		    "%d worker%s per rank, busy only %.0f%% of their loop: they keep up on "
		    "average but not on time; raise prefetch_factor (more batches queued ahead) "
		    "and set persistent_workers=True if they start again every epoch",
		    per_rank, per_rank == 1 ? "" : "s", 100 * busy);
	if (in->runnable >= LOADER_NO_SPARE_CORE)
		return finding__suggest(
		    f,
		    "%d worker%s per rank, each on the CPU %.0f%% and waiting for a CPU %.0f%% "
		    "of its loop: no core is idle (the job keeps %.1f CPUs busy), so more "
		    "workers would only share them; make the workers' hottest code faster "
		    "(%s), or give the job %d more cores for num_workers=%d",
		    per_rank, per_rank == 1 ? "" : "s", 100 * in->on_cpu, 100 * in->runnable,
		    in->cpus_busy, in->hottest ? in->hottest : "their Python code",
		    (int)(in->ranks ? in->ranks : 1) * (needed - per_rank), needed);
	return finding__suggest(
	    f,
	    "%d worker%s per rank, each busy %.0f%% of its loop, and the loop waits %.0f%% "
	    "of its time for batches: raise num_workers to %d (%d more busy cores; the job "
	    "keeps %.1f CPUs busy now), and make the workers' hottest code faster (%s)",
	    per_rank, per_rank == 1 ? "" : "s", 100 * busy, 100 * in->data_wait, needed,
	    (int)(in->ranks ? in->ranks : 1) * (needed - per_rank), in->cpus_busy,
	    in->hottest ? in->hottest : "their Python code");
}
