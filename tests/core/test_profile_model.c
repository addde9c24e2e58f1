// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the profile model: interning, weights, shares, names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "../lib/expect.h"

int main(void)
{
	struct profile *p = profile__new();
	struct function_share *shares;
	int64_t a, b, a2, c, s1, s2, s1b, n;
	char *name;

	EXPECT(p);
	a = profile__intern_frame(p, "a", NULL, 0, FRAME_NATIVE);
	b = profile__intern_frame(p, "b", "b.c", 3, FRAME_NATIVE);
	a2 = profile__intern_frame(p, "a", NULL, 0, FRAME_NATIVE);
	c = profile__intern_frame(p, "a", NULL, 0, FRAME_KERNEL);
	EXPECT(a == a2 && a != b && a != c);
	/* many frames force the index to grow */
	for (int i = 0; i < 5000; i++) {
		char buf[32];

		snprintf(buf, sizeof(buf), "f%d", i);
		EXPECT(profile__intern_frame(p, buf, NULL, 0, FRAME_NATIVE) == i + 3);
	}
	EXPECT(profile__intern_frame(p, "f4999", NULL, 0, FRAME_NATIVE) == 5002);
	s1 = profile__intern_stack(p, (uint32_t[]){a, b}, 2);
	s2 = profile__intern_stack(p, (uint32_t[]){a, b, a}, 3);
	s1b = profile__intern_stack(p, (uint32_t[]){a, b}, 2);
	EXPECT(s1 == s1b && s1 != s2);
	/* Stacks' frame ids share large blocks; one deeper than a block gets
	 * its own, and every stack keeps its ids wherever it was stored. */
	{
		size_t deep_depth = 300000, nr_small = 200000;
		uint32_t *deep = malloc(deep_depth * sizeof(*deep)), small[5];
		int64_t deep_id = -1;
		bool same = true;

		EXPECT(deep);
		for (size_t i = 0; deep && i < deep_depth; i++)
			deep[i] = i % 2 ? a : b;
		for (size_t i = 0; deep && i < nr_small; i++) {
			for (size_t k = 0; k < 5; k++)
				small[k] = (i >> (4 * k)) & 0xf;
			if (i == nr_small / 2)
				EXPECT((deep_id = profile__intern_stack(p, deep, deep_depth)) >= 0);
			EXPECT(profile__intern_stack(p, small, 1 + i % 5) >= 0);
		}
		for (size_t i = 0; deep && i < nr_small; i++) {
			const struct stack *st;

			for (size_t k = 0; k < 5; k++)
				small[k] = (i >> (4 * k)) & 0xf;
			n = profile__intern_stack(p, small, 1 + i % 5);
			st = &p->stacks[n];
			same = same && st->depth == 1 + i % 5 &&
			       !memcmp(st->frames, small, st->depth * sizeof(*small));
		}
		EXPECT(same);
		EXPECT(deep_id >= 0 && p->stacks[deep_id].depth == deep_depth &&
		       !memcmp(p->stacks[deep_id].frames, deep, deep_depth * sizeof(*deep)));
		EXPECT(deep_id >= 0 && profile__intern_stack(p, deep, deep_depth) == deep_id);
		free(deep);
	}
	EXPECT(profile__add_thread(p, 1, 1, "x") == 0);
	EXPECT(profile__add_thread(p, 1, 2, "y") == 1);
	EXPECT(profile__add_thread(p, 1, 1, "renamed") == 0);
	EXPECT(!strcmp(p->threads[0].name, "renamed"));
	EXPECT(!profile__add_sample(p, 0, s1, 20, 3));
	EXPECT(!profile__add_sample(p, 1, s2, 10, 1));
	profile__sort_samples(p);
	EXPECT(p->samples[0].time_ns == 10);
	EXPECT(profile__total_weight(p) == 4);
	n = profile__function_shares(p, &shares);
	EXPECT(n == 5003);
	/* b is the leaf of 3, a of 1; a is in both stacks once each (4). */
	EXPECT(shares[0].frame == b && shares[0].self == 3 && shares[0].total == 4);
	EXPECT(shares[1].frame == a && shares[1].self == 1 && shares[1].total == 4);
	free(shares);
	name = frame__folded_name(&p->frames[c]);
	EXPECT(!strcmp(name, "a_[k]"));
	free(name);
	{
		struct frame f = {.name = "x;y\nz", .kind = FRAME_GPU};

		name = frame__folded_name(&f);
		EXPECT(!strcmp(name, "[gpu] x:y z"));
		free(name);
	}
	profile__free(p);
	if (failures)
		return 1;
	printf("profile model: all checks passed\n");
	return 0;
}
