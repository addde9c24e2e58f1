// SPDX-License-Identifier: GPL-2.0
/* BPF-walked stacks against libdw's on the same samples; see unwind_compare.h. */
#include <stdio.h>

#include "status.h"
#include "sampling/symbolizer.h"
#include "sampling/unwind_compare.h"

/* Differences shown with -v: enough to see a pattern, not a flood. */
#define MAX_SHOWN 8

static void describe(const struct symbolizer *symbolizer, const uint64_t *frames, size_t nr,
		     size_t i, char *out, size_t size)
{
	const struct module *m;
	uint64_t offset;

	if (i >= nr) {
		snprintf(out, size, "(end after %zu frames)", nr);
		return;
	}
	m = symbolizer ? symbolizer__module_of(symbolizer, frames[i], &offset) : NULL;
	if (m)
		snprintf(out, size, "%s+0x%llx", m->name, (unsigned long long)offset);
	else
		snprintf(out, size, "0x%llx", (unsigned long long)frames[i]);
}

void unwind_compare__sample(struct unwind_compare *c, const struct symbolizer *symbolizer,
			    const uint64_t *bpf, size_t nr_bpf, const uint64_t *ref, size_t nr_ref,
			    bool ref_complete)
{
	size_t common = nr_bpf < nr_ref ? nr_bpf : nr_ref, i = 0;
	char ours[160], theirs[160], above[160];

	c->samples++;
	if (!nr_ref) {
		c->no_copy++;
		return;
	}
	while (i < common && bpf[i] == ref[i])
		i++;
	if (i == common && nr_bpf == nr_ref) {
		c->same++;
		return;
	}
	if (i == common && nr_bpf > nr_ref && !ref_complete) {
		c->deeper++;
		return;
	}
	if (i == common && nr_bpf < nr_ref)
		c->shorter++;
	else
		c->differ++;
	if (c->shown >= MAX_SHOWN)
		return;
	c->shown++;
	describe(symbolizer, bpf, nr_bpf, i, ours, sizeof(ours));
	describe(symbolizer, ref, nr_ref, i, theirs, sizeof(theirs));
	if (i)
		describe(symbolizer, ref, nr_ref, i - 1, above, sizeof(above));
	else
		snprintf(above, sizeof(above), "none: the leaf");
	status__debug("unwind compare: frame %zu of %zu (dwarf: %zu%s): BPF %s, dwarf %s; the "
		      "frame below: %s",
		      i, nr_bpf, nr_ref, ref_complete ? ", whole" : "", ours, theirs, above);
}

void unwind_compare__report(const struct unwind_compare *c)
{
	double n = c->samples ? c->samples : 1;

	status__debug("unwind compare: %llu samples: %.1f%% of the stacks identical to dwarf's on "
		      "the same sample, %.1f%% deeper in BPF where the stack copy ran out, %.1f%% "
		      "shorter in BPF, %.1f%% differing, %.1f%% without a copy to compare",
		      (unsigned long long)c->samples, 100.0 * c->same / n, 100.0 * c->deeper / n,
		      100.0 * c->shorter / n, 100.0 * c->differ / n, 100.0 * c->no_copy / n);
}
