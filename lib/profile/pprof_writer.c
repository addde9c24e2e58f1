// SPDX-License-Identifier: GPL-2.0
/*
 * pprof output: a gzip-compressed profile.proto (perftools.profiles.Profile)
 * as `pprof`, Pyroscope and Go's tooling read it, encoded here without a
 * protobuf library.  Functions are named as the folded output names them, so
 * `pprof -top` and `llmprof report` agree, but for Python functions: their
 * name without marks, their Python file says what they are (python_frame.h).
 * Inlined frames fold into their caller's location; the root process frame
 * becomes a "process" label and the sample timeline's threads "thread",
 * "pid" and "tid" labels.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "array.h"
#include "base/clock.h"
#include "base/hash_index.h"
#include "profile/output.h"
#include "profile/pprof_proto.h"
#include "profile/python_frame.h"

#define NO_THREAD UINT32_MAX
#define NOT_WRITTEN UINT32_MAX

/* ---- protobuf encoding ------------------------------------------------ */

struct pb_buffer {
	uint8_t *data;
	size_t len, cap;
	bool failed; /* out of memory: later writes are dropped */
};

static void pb_put(struct pb_buffer *b, const void *bytes, size_t n)
{
	if (!n)
		return;
	if (b->failed || array__grow((void **)&b->data, &b->cap, b->len + n, 1)) {
		b->failed = true;
		return;
	}
	memcpy(b->data + b->len, bytes, n);
	b->len += n;
}

static void pb_varint(struct pb_buffer *b, uint64_t v)
{
	uint8_t bytes[10];
	size_t n = 0;

	do {
		bytes[n] = v & 0x7f;
		v >>= 7;
		if (v)
			bytes[n] |= 0x80;
		n++;
	} while (v);
	pb_put(b, bytes, n);
}

static void pb_tag(struct pb_buffer *b, uint32_t field, enum pb_wire_type wire)
{
	pb_varint(b, (uint64_t)field << 3 | wire);
}

/* A scalar field; proto3 leaves zero values out. */
static void pb_uint(struct pb_buffer *b, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	pb_tag(b, field, PB_VARINT);
	pb_varint(b, v);
}

static void pb_bytes(struct pb_buffer *b, uint32_t field, const void *bytes, size_t n)
{
	pb_tag(b, field, PB_LENGTH);
	pb_varint(b, n);
	pb_put(b, bytes, n);
}

/* Appends sub as an embedded message and empties it for reuse. */
static void pb_message(struct pb_buffer *b, uint32_t field, struct pb_buffer *sub)
{
	if (sub->failed)
		b->failed = true;
	pb_bytes(b, field, sub->data, sub->len);
	sub->len = 0;
}

/* ---- interning -------------------------------------------------------- */

static uint64_t hash_bytes(const void *data, size_t n)
{
	return hash__fnv1a(HASH_FNV1A_START, data, n);
}

/*
 * Keys (byte strings) to dense ids 0, 1, ... in order of first use, which is
 * the order of the ids in the output.  Keys are copied into one pool.
 */
struct intern_table {
	struct hash_index index;
	size_t *offsets; /* per id: start in pool, and the next id's start */
	size_t nr, cap_offsets;
	char *pool;
	size_t pool_len, pool_cap;
};

static const void *intern_key(const struct intern_table *t, uint32_t id, size_t *len)
{
	*len = t->offsets[id + 1] - t->offsets[id];
	return t->pool + t->offsets[id];
}

static uint64_t intern_rehash(const void *ctx, uint32_t id)
{
	size_t len;
	const void *key = intern_key(ctx, id, &len);

	return hash_bytes(key, len);
}

/* Returns the key's id (new ones get the next), or -ENOMEM.  *added says
 * whether it is new. */
static int64_t intern(struct intern_table *t, const void *key, size_t len, bool *added)
{
	size_t i;

	*added = false;
	if (hash_index__reserve(&t->index, 1024, intern_rehash, t))
		return -ENOMEM;
	for (i = hash_index__first(&t->index, hash_bytes(key, len));
	     !hash_index__empty(&t->index, i); i = hash_index__next(&t->index, i)) {
		size_t other_len;
		const void *other = intern_key(t, hash_index__id(&t->index, i), &other_len);

		if (other_len == len && !memcmp(other, key, len))
			return hash_index__id(&t->index, i);
	}
	if (t->nr >= UINT32_MAX - 1 ||
	    array__grow((void **)&t->offsets, &t->cap_offsets, t->nr + 2, sizeof(*t->offsets)) ||
	    array__grow((void **)&t->pool, &t->pool_cap, t->pool_len + len + 1, 1))
		return -ENOMEM;
	if (!t->nr)
		t->offsets[0] = 0;
	memcpy(t->pool + t->pool_len, key, len);
	t->pool_len += len;
	t->offsets[t->nr + 1] = t->pool_len;
	hash_index__set(&t->index, i, t->nr++);
	*added = true;
	return t->nr - 1;
}

static void intern_free(struct intern_table *t)
{
	hash_index__free(&t->index);
	free(t->offsets);
	free(t->pool);
}

/* ---- the writer ------------------------------------------------------- */

/* One pprof sample: a stack's weight on one thread, or not on any. */
struct entry {
	uint32_t stack;
	uint32_t thread; /* NO_THREAD: weight the timeline does not hold */
	uint64_t weight;
};

struct pprof_writer {
	const struct profile *profile;
	char **names; /* folded name of each frame */
	/* What each frame's Function names besides the frame's file: the
	 * folded name, but a Python frame's function name alone. */
	char **function_names;
	uint32_t *rank; /* stack id -> output position, NOT_WRITTEN */
	struct entry *entries;
	size_t nr_entries, cap_entries;
	struct intern_table strings, functions, locations;
	struct pb_buffer out, sample, sub, line, location;
	struct pb_buffer location_messages, function_messages;
	uint64_t *location_ids;
	size_t cap_location_ids;
	int64_t key_thread, key_pid, key_tid, key_process;
	uint64_t period; /* nanoseconds per sample, 0 unknown */
	/* The profile's further values written as sample types after the
	 * weight's (profile__nr_values()): their indexes. */
	size_t *extras;
	size_t nr_extras;
};

static int64_t string_id(struct pprof_writer *w, const char *text)
{
	bool added;

	return intern(&w->strings, text ? text : "", text ? strlen(text) : 0, &added);
}

/* Orders stacks by their folded text, so the output does not depend on the
 * order in which stacks were first seen. */
static int compare_stacks(const void *a, const void *b, void *ctx)
{
	const struct pprof_writer *w = ctx;
	const struct stack *x = &w->profile->stacks[*(const uint32_t *)a];
	const struct stack *y = &w->profile->stacks[*(const uint32_t *)b];

	for (uint32_t d = 0; d < x->depth && d < y->depth; d++) {
		int c = strcmp(w->names[x->frames[d]], w->names[y->frames[d]]);

		if (c)
			return c;
	}
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int compare_entries(const void *a, const void *b, void *ctx)
{
	const struct pprof_writer *w = ctx;
	const struct entry *x = a, *y = b;
	const struct thread *tx, *ty;

	if (w->rank[x->stack] != w->rank[y->stack])
		return w->rank[x->stack] < w->rank[y->stack] ? -1 : 1;
	if (x->thread == y->thread)
		return 0;
	if (x->thread == NO_THREAD || y->thread == NO_THREAD)
		return x->thread == NO_THREAD ? -1 : 1;
	tx = &w->profile->threads[x->thread];
	ty = &w->profile->threads[y->thread];
	if (tx->pid != ty->pid)
		return tx->pid < ty->pid ? -1 : 1;
	if (tx->tid != ty->tid)
		return tx->tid < ty->tid ? -1 : 1;
	return x->thread < y->thread ? -1 : 1;
}

static int add_entry(struct pprof_writer *w, uint32_t stack, uint32_t thread, uint64_t weight)
{
	if (array__grow((void **)&w->entries, &w->cap_entries, w->nr_entries + 1,
			sizeof(*w->entries)))
		return -ENOMEM;
	w->entries[w->nr_entries++] = (struct entry){stack, thread, weight};
	return 0;
}

/* Whether any value of the stack but the weight is not 0. */
static bool has_extra_values(const struct profile *p, uint32_t stack)
{
	for (size_t v = 1; v < profile__nr_values(p); v++)
		if (profile__stack_value(p, stack, v))
			return true;
	return false;
}

static bool stack_written(const struct profile *p, uint32_t stack, enum output_view view)
{
	const struct stack *s = &p->stacks[stack];

	return (s->weight || has_extra_values(p, stack)) && s->depth &&
	       (view == VIEW_ALL || profile__stack_is_gpu(p, stack) == (view == VIEW_GPU));
}

/* The stacks to write in output order, and the samples: per stack and
 * thread from the timeline, and what the timeline does not hold (folded
 * input, GPU time) per stack alone. */
static int collect_entries(struct pprof_writer *w, enum output_view view)
{
	const struct profile *p = w->profile;
	uint64_t *on_timeline = NULL;
	uint32_t *order = NULL;
	size_t nr = 0, merged = 0;
	int err = -ENOMEM;

	order = malloc((p->nr_stacks ? p->nr_stacks : 1) * sizeof(*order));
	on_timeline = calloc(p->nr_stacks ? p->nr_stacks : 1, sizeof(*on_timeline));
	if (!order || !on_timeline)
		goto cleanup;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		w->rank[i] = NOT_WRITTEN;
		if (stack_written(p, i, view))
			order[nr++] = i;
	}
	qsort_r(order, nr, sizeof(*order), compare_stacks, w);
	for (size_t i = 0; i < nr; i++)
		w->rank[order[i]] = i;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct sample *s = &p->samples[i];

		if (s->stack >= p->nr_stacks || w->rank[s->stack] == NOT_WRITTEN ||
		    s->thread >= p->nr_threads || !s->weight)
			continue;
		if (add_entry(w, s->stack, s->thread, s->weight))
			goto cleanup;
		on_timeline[s->stack] += s->weight;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct stack *s = &p->stacks[order[i]];

		/* The other values are not on the timeline either. */
		if ((s->weight > on_timeline[order[i]] || has_extra_values(p, order[i])) &&
		    add_entry(w, order[i], NO_THREAD, s->weight - on_timeline[order[i]]))
			goto cleanup;
	}
	if (w->nr_entries)
		qsort_r(w->entries, w->nr_entries, sizeof(*w->entries), compare_entries, w);
	for (size_t i = 0; i < w->nr_entries; i++) {
		if (merged && w->entries[merged - 1].stack == w->entries[i].stack &&
		    w->entries[merged - 1].thread == w->entries[i].thread)
			w->entries[merged - 1].weight += w->entries[i].weight;
		else
			w->entries[merged++] = w->entries[i];
	}
	w->nr_entries = merged;
	err = 0;
cleanup:
	free(order);
	free(on_timeline);
	return err;
}

static int64_t function_id(struct pprof_writer *w, const struct frame *f, uint32_t frame)
{
	int64_t key[2];
	bool added;
	int64_t id;

	key[0] = string_id(w, w->function_names[frame]);
	/* A Python frame named by its marked text holds its file there. */
	key[1] = string_id(
	    w, f->kind == FRAME_PYTHON && !python_frame__has_python_file(f) ? NULL : f->file);
	if (key[0] < 0 || key[1] < 0)
		return -ENOMEM;
	id = intern(&w->functions, key, sizeof(key), &added);
	if (id < 0 || !added)
		return id < 0 ? id : id + 1;
	pb_uint(&w->sub, FUNCTION_ID, id + 1);
	/* No system name: pprof takes a name equal to it for one still to be
	 * demangled, and cuts "(...)" out of names with brackets. */
	pb_uint(&w->sub, FUNCTION_NAME, key[0]);
	pb_uint(&w->sub, FUNCTION_FILENAME, key[1]);
	pb_message(&w->function_messages, PROFILE_FUNCTION, &w->sub);
	return id + 1;
}

/*
 * The location of frames[0, n): a frame and the frames inlined into it,
 * root first.  pprof lists a location's lines innermost first, the caller
 * they were inlined into last.  Returns the location id or -ENOMEM.
 */
static int64_t location_id(struct pprof_writer *w, const uint32_t *frames, size_t n)
{
	const struct profile *p = w->profile;
	bool added;
	int64_t id = intern(&w->locations, frames, n * sizeof(*frames), &added);

	if (id < 0 || !added)
		return id < 0 ? id : id + 1;
	pb_uint(&w->location, LOCATION_ID, id + 1);
	pb_uint(&w->location, LOCATION_MAPPING_ID, 1);
	for (size_t k = n; k-- > 0;) {
		const struct frame *f = &p->frames[frames[k]];
		int64_t function = function_id(w, f, frames[k]);

		if (function < 0)
			return function;
		pb_uint(&w->line, LINE_FUNCTION_ID, function);
		pb_uint(&w->line, LINE_LINE, f->line);
		pb_message(&w->location, LOCATION_LINE, &w->line);
	}
	pb_message(&w->location_messages, PROFILE_LOCATION, &w->location);
	return id + 1;
}

/* Location ids of a stack, leaf first, into w->location_ids; the number of
 * them, or -ENOMEM.  A root process frame is left for the label. */
static int64_t stack_locations(struct pprof_writer *w, const struct stack *s)
{
	const struct profile *p = w->profile;
	uint32_t start = s->depth && p->frames[s->frames[0]].kind == FRAME_PROCESS;
	size_t nr = 0;

	if (array__grow((void **)&w->location_ids, &w->cap_location_ids, s->depth + 1,
			sizeof(*w->location_ids)))
		return -ENOMEM;
	/* From the leaf: a run of inline frames belongs to the frame above. */
	for (uint32_t end = s->depth; end > start;) {
		uint32_t begin = end - 1;
		int64_t id;

		while (begin > start && p->frames[s->frames[begin]].kind == FRAME_INLINE)
			begin--;
		id = location_id(w, s->frames + begin, end - begin);
		if (id < 0)
			return id;
		w->location_ids[nr++] = id;
		end = begin;
	}
	return nr;
}

static void add_label(struct pb_buffer *sample, struct pb_buffer *label, int64_t key, int64_t str,
		      uint64_t num)
{
	pb_uint(label, LABEL_KEY, key);
	pb_uint(label, LABEL_STR, str);
	pb_uint(label, LABEL_NUM, num);
	pb_message(sample, SAMPLE_LABEL, label);
}

static uint64_t saturating_multiply(uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_mul_overflow(a, b, &r) || r > INT64_MAX)
		return INT64_MAX;
	return r;
}

static int write_samples(struct pprof_writer *w)
{
	const struct profile *p = w->profile;
	uint32_t last_stack = NOT_WRITTEN;
	int64_t nr_locations = 0;

	for (size_t i = 0; i < w->nr_entries; i++) {
		const struct entry *e = &w->entries[i];
		const struct stack *s = &p->stacks[e->stack];
		uint64_t values[2];
		size_t nr_values = 0;

		if (e->stack != last_stack) {
			nr_locations = stack_locations(w, s);
			if (nr_locations < 0)
				return nr_locations;
			last_stack = e->stack;
		}
		pb_tag(&w->sample, SAMPLE_LOCATION_ID, PB_LENGTH);
		for (int64_t k = 0; k < nr_locations; k++)
			pb_varint(&w->sub, w->location_ids[k]);
		pb_varint(&w->sample, w->sub.len);
		pb_put(&w->sample, w->sub.data, w->sub.len);
		w->sub.len = 0;

		switch (p->unit) {
		case UNIT_MICROSECONDS:
			values[nr_values++] = saturating_multiply(e->weight, 1000);
			break;
		case UNIT_NANOSECONDS:
		case UNIT_BYTES:
			values[nr_values++] = e->weight > INT64_MAX ? INT64_MAX : e->weight;
			break;
		default:
			values[nr_values++] = e->weight > INT64_MAX ? INT64_MAX : e->weight;
			if (w->period)
				values[nr_values++] = saturating_multiply(e->weight, w->period);
		}
		for (size_t k = 0; k < nr_values; k++)
			pb_varint(&w->sub, values[k]);
		for (size_t k = 0; k < w->nr_extras; k++) {
			uint64_t v = e->thread == NO_THREAD
					 ? profile__stack_value(p, e->stack, w->extras[k])
					 : 0;

			if (profile__value_type(p, w->extras[k]).unit == UNIT_MICROSECONDS)
				pb_varint(&w->sub, saturating_multiply(v, 1000));
			else
				pb_varint(&w->sub, v > INT64_MAX ? INT64_MAX : v);
		}
		pb_message(&w->sample, SAMPLE_VALUE, &w->sub);

		if (s->depth && p->frames[s->frames[0]].kind == FRAME_PROCESS) {
			int64_t name = string_id(w, p->frames[s->frames[0]].name);

			if (name < 0)
				return -ENOMEM;
			add_label(&w->sample, &w->sub, w->key_process, name, 0);
		}
		if (e->thread != NO_THREAD) {
			const struct thread *t = &p->threads[e->thread];
			int64_t name = string_id(w, t->name);

			if (name < 0)
				return -ENOMEM;
			add_label(&w->sample, &w->sub, w->key_thread, name, 0);
			add_label(&w->sample, &w->sub, w->key_pid, 0, t->pid);
			add_label(&w->sample, &w->sub, w->key_tid, 0, t->tid);
		}
		pb_message(&w->out, PROFILE_SAMPLE, &w->sample);
	}
	return 0;
}

static int value_type(struct pprof_writer *w, uint32_t field, const char *type, const char *unit)
{
	int64_t t = string_id(w, type), u = string_id(w, unit);

	if (t < 0 || u < 0)
		return -ENOMEM;
	pb_uint(&w->sub, VALUE_TYPE_TYPE, t);
	pb_uint(&w->sub, VALUE_TYPE_UNIT, u);
	pb_message(&w->out, field, &w->sub);
	return 0;
}

/* The profile's start on the wall clock: start_ns is CLOCK_MONOTONIC. */
static uint64_t wall_start_ns(const struct profile *p)
{
	uint64_t mono_ns = clock__monotonic_ns(), real_ns = clock__realtime_ns();

	if (!p->start_ns)
		return 0;
	if (mono_ns < p->start_ns || real_ns < mono_ns - p->start_ns)
		return 0;
	return real_ns - (mono_ns - p->start_ns);
}

static const char *profile_name(const struct profile *p)
{
	if (p->name)
		return p->name;
	for (size_t i = 0; i < p->nr_frames; i++)
		if (p->frames[i].kind == FRAME_PROCESS)
			return p->frames[i].name;
	return "llmprof";
}

/* The first sample type the weight is written as. */
static const char *weight_type_name(const struct profile *p, bool gpu)
{
	return profile__weight_name(p, gpu);
}

/* The profile's further values, each a sample type after the weight's,
 * but for one named as the weight is written (a pprof file's "cpu" beside
 * its "samples", read back and written again, is the weight's). */
static int write_extra_types(struct pprof_writer *w, bool gpu)
{
	const struct profile *p = w->profile;
	size_t nr = profile__nr_values(p);

	if (nr < 2)
		return 0;
	w->extras = malloc((nr - 1) * sizeof(*w->extras));
	if (!w->extras)
		return -ENOMEM;
	for (size_t v = 1; v < nr; v++) {
		struct profile_value_type t = profile__value_type(p, v);
		bool micro = t.unit == UNIT_MICROSECONDS;
		int err;

		if (!strcmp(t.name, weight_type_name(p, gpu)) ||
		    (p->unit == UNIT_SAMPLES && w->period && !strcmp(t.name, "cpu")))
			continue;
		err =
		    value_type(w, PROFILE_SAMPLE_TYPE, t.name, micro ? "nanoseconds" : t.unit_name);
		if (err)
			return err;
		w->extras[w->nr_extras++] = v;
	}
	return 0;
}

/* Everything but the string table, which comes last as every other part
 * adds to it. */
static int encode_profile(struct pprof_writer *w)
{
	const struct profile *p = w->profile;
	bool gpu = false;
	int64_t mapping_name;
	int err;

	if (string_id(w, "") < 0)
		return -ENOMEM;
	for (size_t i = 0; i < w->nr_entries; i++)
		gpu |= profile__stack_is_gpu(p, w->entries[i].stack);
	if (p->frequency)
		w->period = (1000000000ULL + p->frequency / 2) / p->frequency;
	if (p->unit == UNIT_BYTES) {
		/* GPU memory, as pprof's heap profiles name it, or as the
		 * view that a profile of several values names it. */
		err = value_type(w, PROFILE_SAMPLE_TYPE, profile__value_type(p, 0).name, "bytes");
	} else if (p->unit == UNIT_SAMPLES) {
		err = value_type(w, PROFILE_SAMPLE_TYPE, "samples", "count");
		if (!err && w->period)
			err = value_type(w, PROFILE_SAMPLE_TYPE, "cpu", "nanoseconds");
	} else {
		/* GPU activity counts its duration, which is not CPU time. */
		err = value_type(w, PROFILE_SAMPLE_TYPE, gpu ? "wall" : "cpu", "nanoseconds");
	}
	if (!err)
		err = write_extra_types(w, gpu);
	w->key_thread = string_id(w, "thread");
	w->key_pid = string_id(w, "pid");
	w->key_tid = string_id(w, "tid");
	w->key_process = string_id(w, "process");
	if (err || w->key_thread < 0 || w->key_pid < 0 || w->key_tid < 0 || w->key_process < 0)
		return -ENOMEM;
	err = write_samples(w);
	if (err)
		return err;

	/* One mapping that says the functions are resolved, so pprof does not
	 * try to symbolize addresses it has not got.  Its file is what pprof
	 * shows as the profile's: the name, else the process. */
	mapping_name = string_id(w, profile_name(p));
	if (mapping_name < 0)
		return -ENOMEM;
	pb_uint(&w->sub, MAPPING_ID, 1);
	pb_uint(&w->sub, MAPPING_FILENAME, mapping_name);
	pb_uint(&w->sub, MAPPING_HAS_FUNCTIONS, 1);
	pb_uint(&w->sub, MAPPING_HAS_FILENAMES, 1);
	pb_uint(&w->sub, MAPPING_HAS_LINE_NUMBERS, 1);
	pb_uint(&w->sub, MAPPING_HAS_INLINE_FRAMES, 1);
	pb_message(&w->out, PROFILE_MAPPING, &w->sub);
	pb_put(&w->out, w->location_messages.data, w->location_messages.len);
	pb_put(&w->out, w->function_messages.data, w->function_messages.len);
	if (w->location_messages.failed || w->function_messages.failed)
		w->out.failed = true;

	if (w->period) {
		err = value_type(w, PROFILE_PERIOD_TYPE, "cpu", "nanoseconds");
		if (err)
			return err;
		pb_uint(&w->out, PROFILE_PERIOD, w->period);
	}
	/* pprof weighs the last sample type unless told; a profile in
	 * samples is read in samples by pprof and llmprof alike. */
	if ((p->unit == UNIT_SAMPLES && w->period) || w->nr_extras) {
		int64_t first = string_id(w, weight_type_name(p, gpu));

		if (first < 0)
			return -ENOMEM;
		pb_uint(&w->out, PROFILE_DEFAULT_SAMPLE_TYPE, first);
	}
	pb_uint(&w->out, PROFILE_TIME_NANOS, wall_start_ns(p));
	pb_uint(&w->out, PROFILE_DURATION_NANOS, p->duration_ns);
	for (uint32_t id = 0; id < w->strings.nr; id++) {
		size_t len;
		const void *text = intern_key(&w->strings, id, &len);

		pb_bytes(&w->out, PROFILE_STRING_TABLE, text, len);
	}
	return w->out.failed || w->sample.failed || w->sub.failed || w->line.failed ||
		       w->location.failed
		   ? -ENOMEM
		   : 0;
}

/* gzip with zlib's default header: no name, modification time 0. */
static int write_gzip(const uint8_t *data, size_t len, FILE *out)
{
	uint8_t chunk[64 * 1024];
	z_stream z = {0};
	int ret, err = 0;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)data;
	do {
		size_t step = len > (1u << 30) ? 1u << 30 : len;

		z.avail_in = step;
		len -= step;
		do {
			z.next_out = chunk;
			z.avail_out = sizeof(chunk);
			ret = deflate(&z, len ? Z_NO_FLUSH : Z_FINISH);
			if (ret == Z_STREAM_ERROR) {
				err = -EIO;
				goto cleanup;
			}
			if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) !=
			    sizeof(chunk) - z.avail_out) {
				err = -EIO;
				goto cleanup;
			}
		} while (z.avail_out == 0);
	} while (len);
	if (ret != Z_STREAM_END)
		err = -EIO;
cleanup:
	deflateEnd(&z);
	return err;
}

int pprof__write(const struct profile *p, enum output_view view, FILE *out)
{
	struct pprof_writer w = {.profile = p};
	int err = -ENOMEM;

	w.names = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*w.names));
	w.function_names = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*w.function_names));
	w.rank = malloc((p->nr_stacks ? p->nr_stacks : 1) * sizeof(*w.rank));
	if (!w.names || !w.function_names || !w.rank)
		goto cleanup;
	for (size_t i = 0; i < p->nr_frames; i++) {
		const struct frame *f = &p->frames[i];

		w.names[i] = frame__folded_name(f);
		if (!w.names[i])
			goto cleanup;
		if (f->kind == FRAME_INLINE) {
			/* An inline line of its caller's location says so;
			 * the function is named as it is, as pprof shows it. */
			w.function_names[i] = strdup(f->name[0] ? f->name : "[unknown]");
		} else if (!python_frame__has_python_file(f)) {
			w.function_names[i] = strdup(w.names[i]);
		} else {
			/* A Python frame is its function, with its file. */
			w.function_names[i] = strdup(f->name);
		}
		if (!w.function_names[i])
			goto cleanup;
	}
	err = collect_entries(&w, view);
	if (!err)
		err = encode_profile(&w);
	if (!err)
		err = write_gzip(w.out.data, w.out.len, out);
	if (!err)
		err = fflush(out) || ferror(out) ? -EIO : 0;
cleanup:
	if (w.names)
		for (size_t i = 0; i < p->nr_frames; i++)
			free(w.names[i]);
	for (size_t i = 0; w.function_names && i < p->nr_frames; i++)
		free(w.function_names[i]);
	free(w.names);
	free(w.function_names);
	free(w.rank);
	free(w.entries);
	free(w.location_ids);
	free(w.extras);
	intern_free(&w.strings);
	intern_free(&w.functions);
	intern_free(&w.locations);
	free(w.out.data);
	free(w.sample.data);
	free(w.sub.data);
	free(w.line.data);
	free(w.location.data);
	free(w.location_messages.data);
	free(w.function_messages.data);
	return err;
}
