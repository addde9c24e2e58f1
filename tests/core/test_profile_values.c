// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of a profile's several values per stack (profile_values.c):
 * value types, selecting one value, and the values through the pprof and
 * speedscope writers and readers, units converted on the way.  With a
 * directory argument, the profile is also left there as
 * values.speedscope.json and values.pb.gz for profile_values.sh.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/output.h"
#include "profile/profile.h"
#include "profile/profile_reader.h"
#include "../lib/expect.h"

/* The stack of p whose frames are named names (root first), or -1. */
static int64_t find_stack(const struct profile *p, const char *const *names, size_t depth)
{
	for (size_t s = 0; s < p->nr_stacks; s++) {
		const struct stack *st = &p->stacks[s];
		size_t d = 0;

		if (st->depth != depth)
			continue;
		while (d < depth && !strcmp(p->frames[st->frames[d]].name, names[d]))
			d++;
		if (d == depth)
			return s;
	}
	return -1;
}

/* Value name of the stack named names, 0 where the stack or value is not. */
static uint64_t value_of(const struct profile *p, const char *name, const char *const *names,
			 size_t depth)
{
	int index = profile__value_index(p, name);
	int64_t stack = find_stack(p, names, depth);

	return index < 0 || stack < 0 ? 0 : profile__stack_value(p, stack, index);
}

static const char *const main_work[] = {"main", "work"};
static const char *const main_alloc[] = {"main", "alloc"};
static const char *const main_wait[] = {"main", "wait"};

/*
 * A recording's shape: CPU time on a timeline as the weight, GPU memory in
 * bytes, a count of calls and a time in microseconds as further values.
 */
static struct profile *build(void)
{
	struct profile *p = profile__new();
	int64_t f_main, f_work, f_alloc, f_wait, work, alloc, wait, thread;

	if (!p)
		return NULL;
	p->unit = UNIT_NANOSECONDS;
	p->name = strdup("values test");
	p->duration_ns = 1000000;
	f_main = profile__intern_frame(p, "main", "main.c", 0, FRAME_NATIVE);
	f_work = profile__intern_frame(p, "work", "main.c", 0, FRAME_NATIVE);
	f_alloc = profile__intern_frame(p, "alloc", "main.c", 0, FRAME_NATIVE);
	f_wait = profile__intern_frame(p, "wait", "main.c", 0, FRAME_NATIVE);
	work = profile__intern_stack(p, (uint32_t[]){f_main, f_work}, 2);
	alloc = profile__intern_stack(p, (uint32_t[]){f_main, f_alloc}, 2);
	wait = profile__intern_stack(p, (uint32_t[]){f_main, f_wait}, 2);
	thread = profile__add_thread(p, 42, 42, "main");
	EXPECT(f_main >= 0 && f_wait >= 0 && work >= 0 && alloc >= 0 && wait >= 0 && thread >= 0);
	EXPECT(!profile__add_sample(p, thread, work, 0, 300000));
	EXPECT(!profile__add_sample(p, thread, alloc, 300000, 100000));
	EXPECT(!profile__add_sample(p, thread, work, 500000, 200000));
	EXPECT(!profile__name_weight(p, "cpu", "nanoseconds"));
	EXPECT(profile__add_value_type(p, "memory-peak", "bytes", UNIT_BYTES) == 1);
	EXPECT(profile__add_value_type(p, "calls", "count", UNIT_SAMPLES) == 2);
	EXPECT(profile__add_value_type(p, "wait", "microseconds", UNIT_MICROSECONDS) == 3);
	EXPECT(profile__add_value_type(p, "calls", "count", UNIT_SAMPLES) == -EEXIST);
	EXPECT(!profile__add_stack_value(p, alloc, 1, 64 << 20));
	EXPECT(!profile__add_stack_value(p, alloc, 2, 3));
	EXPECT(!profile__add_stack_value(p, work, 2, 5));
	EXPECT(!profile__add_stack_value(p, wait, 3, 2500));
	EXPECT(profile__add_stack_value(p, wait, 4, 1) == -EINVAL);
	return p;
}

static void test_types(void)
{
	struct profile *p = profile__new();

	/* One value: its type follows from the unit. */
	p->unit = UNIT_BYTES;
	EXPECT(profile__nr_values(p) == 1);
	EXPECT(!strcmp(profile__value_type(p, 0).name, "space"));
	EXPECT(!strcmp(profile__value_type(p, 0).unit_name, "bytes"));
	p->unit = UNIT_NANOSECONDS;
	EXPECT(!strcmp(profile__value_type(p, 0).name, "cpu"));
	p->unit = UNIT_SAMPLES;
	EXPECT(!strcmp(profile__value_type(p, 0).name, "samples"));
	EXPECT(!strcmp(profile__value_type(p, 0).unit_name, "count"));
	EXPECT(profile__value_index(p, "samples") == 0);
	EXPECT(profile__value_index(p, "memory-peak") == -ENOENT);
	/* A further value names the implied weight. */
	EXPECT(profile__add_value_type(p, "nccl", "bytes", UNIT_BYTES) == 1);
	EXPECT(profile__nr_values(p) == 2);
	EXPECT(profile__value_index(p, "samples") == 0);
	EXPECT(profile__value_index(p, "nccl") == 1);
	profile__free(p);
}

static struct profile *round_trip(const struct profile *p, enum profile_format format,
				  bool keep_timeline, const char *keep_as);

/* With GPU activity in the weight, both writers name it wall time. */
static void test_wall_name(void)
{
	struct profile *p = profile__new(), *q;
	int64_t f_main, f_kernel, cpu, gpu;

	p->unit = UNIT_NANOSECONDS;
	f_main = profile__intern_frame(p, "main", NULL, 0, FRAME_NATIVE);
	f_kernel = profile__intern_frame(p, "gemm", NULL, 0, FRAME_GPU);
	cpu = profile__intern_stack(p, (uint32_t[]){f_main}, 1);
	gpu = profile__intern_stack(p, (uint32_t[]){f_main, f_kernel}, 2);
	EXPECT(cpu >= 0 && gpu >= 0);
	profile__add_weight(p, cpu, 1000);
	profile__add_weight(p, gpu, 5000);
	EXPECT(!strcmp(profile__weight_name(p, true), "wall"));
	EXPECT(profile__add_value_type(p, "nccl", "bytes", UNIT_BYTES) == 1);
	EXPECT(!profile__add_stack_value(p, cpu, 1, 4096));
	for (int format = FORMAT_SPEEDSCOPE; format <= FORMAT_PPROF; format++) {
		q = round_trip(p, format, false, NULL);
		EXPECT(q && profile__value_index(q, "wall") == 0);
		EXPECT(q && profile__value_index(q, "nccl") == 1);
		EXPECT(q && value_of(q, "nccl", (const char *const[]){"main"}, 1) == 4096);
		profile__free(q);
	}
	profile__free(p);
}

static void test_select(const struct profile *p)
{
	struct profile *q = NULL;

	EXPECT(profile__nr_values(p) == 4);
	EXPECT(profile__select_value(p, 4, &q) == -EINVAL);
	/* The weight keeps the timeline. */
	EXPECT(!profile__select_value(p, 0, &q));
	EXPECT(q && profile__nr_values(q) == 1 && q->unit == UNIT_NANOSECONDS);
	EXPECT(q && q->nr_samples == 3 && q->nr_threads == 1);
	EXPECT(q && value_of(q, "cpu", main_work, 2) == 500000);
	EXPECT(q && find_stack(q, main_wait, 2) < 0);
	profile__free(q);
	/* A further value: its stacks alone, in its unit, no timeline. */
	EXPECT(!profile__select_value(p, 1, &q));
	EXPECT(q && q->unit == UNIT_BYTES && q->nr_samples == 0 && q->nr_stacks == 1);
	EXPECT(q && value_of(q, "space", main_alloc, 2) == 64 << 20);
	EXPECT(q && !strcmp(q->name, "values test"));
	profile__free(q);
	EXPECT(!profile__select_value(p, 3, &q));
	EXPECT(q && q->unit == UNIT_MICROSECONDS && value_of(q, "cpu", main_wait, 2) == 2500);
	profile__free(q);
}

/* The profile written in format and read back. */
static struct profile *round_trip(const struct profile *p, enum profile_format format,
				  bool keep_timeline, const char *keep_as)
{
	struct profile_read_options options = {.keep_timeline = keep_timeline};
	struct profile_read_result result = {0};
	struct profile *back = NULL;
	char *data = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&data, &size);
	int err;

	EXPECT(out);
	if (!out)
		return NULL;
	EXPECT(!output__write(p, format, VIEW_ALL, out));
	fclose(out);
	if (keep_as) {
		FILE *file = fopen(keep_as, "w");

		EXPECT(file && fwrite(data, 1, size, file) == size && !fclose(file));
	}
	err = profile_reader__read_buffer(data, size, &options, &back, &result);
	if (err)
		fprintf(stderr, "reading back %s: %s\n", format__get(format)->name, result.message);
	EXPECT(!err && result.format == format);
	free(data);
	return back;
}

/* What every round trip keeps: each value by name, on its stacks, times
 * in nanoseconds. */
static void expect_values(const struct profile *q, const char *what)
{
	if (!q)
		return;
	fprintf(stderr, "checking %s\n", what);
	EXPECT(profile__nr_values(q) == 4);
	EXPECT(profile__value_index(q, "cpu") == 0);
	EXPECT(profile__value_index(q, "memory-peak") == 1);
	EXPECT(profile__value_index(q, "calls") == 2);
	EXPECT(profile__value_index(q, "wait") == 3);
	EXPECT(profile__value_index(q, "nope") == -ENOENT);
	EXPECT(value_of(q, "cpu", main_work, 2) == 500000);
	EXPECT(value_of(q, "cpu", main_alloc, 2) == 100000);
	EXPECT(value_of(q, "memory-peak", main_alloc, 2) == 64 << 20);
	EXPECT(value_of(q, "memory-peak", main_work, 2) == 0);
	EXPECT(value_of(q, "calls", main_alloc, 2) == 3);
	EXPECT(value_of(q, "calls", main_work, 2) == 5);
	/* Microseconds are read back as nanoseconds. */
	EXPECT(value_of(q, "wait", main_wait, 2) == 2500000);
	EXPECT(profile__value_type(q, 1).unit == UNIT_BYTES);
	EXPECT(!strcmp(profile__value_type(q, 1).unit_name, "bytes"));
	EXPECT(profile__value_type(q, 2).unit == UNIT_SAMPLES);
	EXPECT(!strcmp(profile__value_type(q, 2).unit_name, "count"));
	EXPECT(profile__value_type(q, 3).unit == UNIT_NANOSECONDS);
	EXPECT(!strcmp(profile__value_type(q, 3).unit_name, "nanoseconds"));
}

static void test_round_trips(const struct profile *p, const char *dir)
{
	char speedscope_path[4096], pprof_path[4096];
	struct profile *q, *again, *one = NULL;

	snprintf(speedscope_path, sizeof(speedscope_path), "%s/values.speedscope.json",
		 dir ? dir : ".");
	snprintf(pprof_path, sizeof(pprof_path), "%s/values.pb.gz", dir ? dir : ".");
	q = round_trip(p, FORMAT_PPROF, false, dir ? pprof_path : NULL);
	expect_values(q, "pprof");
	/* pprof to speedscope and back, as convert does. */
	again = q ? round_trip(q, FORMAT_SPEEDSCOPE, false, NULL) : NULL;
	expect_values(again, "pprof, then speedscope");
	profile__free(again);
	profile__free(q);

	q = round_trip(p, FORMAT_SPEEDSCOPE, true, dir ? speedscope_path : NULL);
	expect_values(q, "speedscope");
	/* The weight's timeline comes back with its thread. */
	EXPECT(q && q->nr_samples == 3 && q->nr_threads == 1);
	EXPECT(q && q->nr_threads == 1 && !strcmp(q->threads[0].name, "main") &&
	       q->threads[0].tid == 42);
	/* Selecting a value of what was read back. */
	EXPECT(q && !profile__select_value(q, 1, &one));
	EXPECT(one && one->unit == UNIT_BYTES && one->nr_stacks == 1);
	profile__free(one);
	again = q ? round_trip(q, FORMAT_PPROF, false, NULL) : NULL;
	expect_values(again, "speedscope, then pprof");
	profile__free(again);
	again = q ? round_trip(q, FORMAT_SPEEDSCOPE, false, NULL) : NULL;
	expect_values(again, "speedscope twice");
	profile__free(again);
	profile__free(q);
}

/* A weight that counts samples at a rate: speedscope's timeline is in
 * microseconds, and reading it back counts the samples again. */
static void test_counted_timeline(void)
{
	struct profile *p = profile__new(), *q;
	int64_t f_main, f_work, f_alloc, work, alloc, thread;

	p->unit = UNIT_SAMPLES;
	p->frequency = 999;
	p->duration_ns = 100000000;
	f_main = profile__intern_frame(p, "main", NULL, 0, FRAME_NATIVE);
	f_work = profile__intern_frame(p, "work", NULL, 0, FRAME_NATIVE);
	f_alloc = profile__intern_frame(p, "alloc", NULL, 0, FRAME_NATIVE);
	work = profile__intern_stack(p, (uint32_t[]){f_main, f_work}, 2);
	alloc = profile__intern_stack(p, (uint32_t[]){f_main, f_alloc}, 2);
	thread = profile__add_thread(p, 7, 8, "worker");
	EXPECT(work >= 0 && alloc >= 0 && thread >= 0);
	/* Samples with gaps between them, so positions are not whole counts. */
	for (int i = 0; i < 50; i++)
		EXPECT(!profile__add_sample(p, thread, i % 3 ? work : alloc, i * 1337017ULL, 1));
	EXPECT(!profile__add_sample(p, thread, work, 90000000, 2));
	EXPECT(profile__add_value_type(p, "memory-peak", "bytes", UNIT_BYTES) == 1);
	EXPECT(!profile__add_stack_value(p, alloc, 1, 4096));
	q = round_trip(p, FORMAT_SPEEDSCOPE, true, NULL);
	EXPECT(q && q->unit == UNIT_SAMPLES && q->frequency == 999);
	EXPECT(q && profile__value_index(q, "samples") == 0);
	EXPECT(q && !strcmp(profile__value_type(q, 0).unit_name, "count"));
	EXPECT(q && value_of(q, "samples", main_work, 2) == 35);
	EXPECT(q && value_of(q, "samples", main_alloc, 2) == 17);
	EXPECT(q && value_of(q, "memory-peak", main_alloc, 2) == 4096);
	EXPECT(q && q->nr_samples == 51 && q->samples_taken == 52);
	profile__free(q);
	profile__free(p);
}

int main(int argc, char **argv)
{
	struct profile *p = build();

	EXPECT(p);
	test_types();
	test_counted_timeline();
	test_wall_name();
	if (p) {
		test_select(p);
		test_round_trips(p, argc > 1 ? argv[1] : NULL);
	}
	profile__free(p);
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("profile values ok\n");
	return 0;
}
