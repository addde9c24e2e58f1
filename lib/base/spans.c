// SPDX-License-Identifier: GPL-2.0
/* Spans of time; see spans.h. */
#include <stdlib.h>

#include "spans.h"

static int compare_spans(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

size_t spans__union(struct span *v, size_t nr)
{
	size_t out = 0;

	if (!nr)
		return 0;
	qsort(v, nr, sizeof(*v), compare_spans);
	for (size_t i = 1; i < nr; i++) {
		if (v[i].start <= v[out].end) {
			if (v[i].end > v[out].end)
				v[out].end = v[i].end;
		} else {
			v[++out] = v[i];
		}
	}
	return out + 1;
}

uint64_t spans__length(const struct span *v, size_t nr)
{
	uint64_t total = 0;

	for (size_t i = 0; i < nr; i++)
		total += v[i].end - v[i].start;
	return total;
}

uint64_t spans__uncovered(const struct span *a, size_t nr_a, const struct span *b, size_t nr_b)
{
	uint64_t total = 0;
	size_t k = 0;

	for (size_t i = 0; i < nr_a; i++) {
		uint64_t at = a[i].start, end = a[i].end;

		while (k < nr_b && b[k].end <= at)
			k++;
		for (size_t j = k; j < nr_b && b[j].start < end && at < end; j++) {
			if (b[j].start > at)
				total += b[j].start - at;
			if (b[j].end > at)
				at = b[j].end;
		}
		if (at < end)
			total += end - at;
	}
	return total;
}

bool spans__cover(const struct span *v, size_t nr, uint64_t t)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid].end <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nr && v[lo].start <= t;
}
