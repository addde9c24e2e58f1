// SPDX-License-Identifier: GPL-2.0
/* The end-of-run summary: what was sampled, what was lost, where time went. */
#include <stdlib.h>

#include "status.h"
#include "profile/summary.h"

void summary__print(const struct profile *p, pid_t pid, const char *output_path,
		    enum output_format format)
{
	struct function_share *shares = NULL;
	uint64_t total = 0;
	int64_t n;

	for (size_t i = 0; i < p->nr_stacks; i++)
		if (p->stacks[i].depth && !profile__stack_is_gpu(p, i))
			total += p->stacks[i].weight;
	report__info("profiled PID %d for %.2f s at %u Hz: %llu samples, %llu lost, %zu threads",
		     pid, p->duration_ns / 1e9, p->frequency, (unsigned long long)p->samples_taken,
		     (unsigned long long)p->samples_lost, p->nr_threads);
	if (p->samples_lost)
		report__warn("%llu samples were lost (ring buffer full); try a lower -F",
			     (unsigned long long)p->samples_lost);
	if (p->stack_errors)
		report__warn("%llu stacks could not be read (kept as [no stack] or cut short)",
			     (unsigned long long)p->stack_errors);
	n = profile__function_shares(p, &shares);
	if (n > 0 && total) {
		int shown = 0;

		report__info("top functions by self time:");
		for (int64_t i = 0; i < n && shown < SUMMARY_TOP_FUNCTIONS; i++) {
			const struct frame *f = &p->frames[shares[i].frame];

			if (!shares[i].self || f->kind == FRAME_GPU)
				continue;
			report__text("  %6.2f%%  %s\n", 100.0 * shares[i].self / total, f->name);
			shown++;
		}
	} else if (!total) {
		report__info("no samples of the target were taken (was it idle?)");
	}
	free(shares);
	report__info("wrote %s to %s", output_format__description(format),
		     output_path ? output_path : "standard output");
}
