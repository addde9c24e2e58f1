/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Spans of time [start, end): unions, lengths and what one set leaves
 * uncovered by another.  GPU busy time, NCCL time that no compute hid, the
 * findings' idle gaps.
 */
#ifndef LLMPROF_SPANS_H
#define LLMPROF_SPANS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct span {
	uint64_t start, end;
};

/* Sorts v and merges overlapping or touching spans in place; returns how
 * many disjoint spans are left at its start. */
size_t spans__union(struct span *v, size_t nr);
/* The total length of disjoint spans. */
uint64_t spans__length(const struct span *v, size_t nr);
/* The time in a that b does not cover; both disjoint and sorted
 * (spans__union). */
uint64_t spans__uncovered(const struct span *a, size_t nr_a, const struct span *b, size_t nr_b);
/* Whether t lies in one of the disjoint, sorted spans. */
bool spans__cover(const struct span *v, size_t nr, uint64_t t);

#endif /* LLMPROF_SPANS_H */
