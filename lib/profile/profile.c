// SPDX-License-Identifier: GPL-2.0
/* The in-memory profile model: interning of frames and stacks, samples. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "base/hash_index.h"
#include "profile/profile.h"
#include "profile/python_frame.h"

/* The frame ids of every stack, packed into large blocks that never move: a
 * malloc per stack costs its header and rounding, as much again as a short
 * stack's ids, and profiles hold millions of stacks. */
#define ARENA_BLOCK_IDS (256 * 1024)

struct id_arena {
	uint32_t **blocks;
	size_t nr_blocks, cap_blocks;
	size_t used; /* ids used in the last block */
};

static uint32_t *arena_alloc(struct id_arena *arena, size_t nr)
{
	size_t size = nr > ARENA_BLOCK_IDS ? nr : ARENA_BLOCK_IDS;
	uint32_t *block;

	if (arena->nr_blocks && arena->used + nr <= ARENA_BLOCK_IDS) {
		block = arena->blocks[arena->nr_blocks - 1] + arena->used;
		arena->used += nr;
		return block;
	}
	if (array__grow((void **)&arena->blocks, &arena->cap_blocks, arena->nr_blocks + 1,
			sizeof(*arena->blocks)))
		return NULL;
	block = malloc(size * sizeof(*block));
	if (!block)
		return NULL;
	/* A stack longer than a block gets a block of its own, put before
	 * the last one so the last one's free space is still used. */
	if (nr >= ARENA_BLOCK_IDS && arena->nr_blocks) {
		arena->blocks[arena->nr_blocks] = arena->blocks[arena->nr_blocks - 1];
		arena->blocks[arena->nr_blocks - 1] = block;
		arena->nr_blocks++;
		return block;
	}
	arena->blocks[arena->nr_blocks++] = block;
	arena->used = nr;
	return block;
}

static void arena_free(struct id_arena *arena)
{
	if (!arena)
		return;
	for (size_t i = 0; i < arena->nr_blocks; i++)
		free(arena->blocks[i]);
	free(arena->blocks);
	free(arena);
}

static uint64_t hash_string(uint64_t h, const char *s)
{
	return hash__fnv1a(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

static uint64_t frame_hash(const char *name, const char *file, uint32_t line, enum frame_kind kind)
{
	uint64_t h = HASH_FNV1A_START;

	h = hash_string(h, name);
	h = hash_string(h, file);
	h = hash__fnv1a(h, &line, sizeof(line));
	return hash__fnv1a(h, &kind, sizeof(kind));
}

/* A word at a time: stacks are the hot key when reading large inputs. */
static uint64_t stack_hash(const uint32_t *frames, size_t depth)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ depth;

	for (size_t i = 0; i < depth; i++) {
		h ^= frames[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	return h;
}

static uint64_t rehash_frame(const void *ctx, uint32_t id)
{
	const struct frame *f = &((const struct profile *)ctx)->frames[id];

	return frame_hash(f->name, f->file, f->line, f->kind);
}

static uint64_t rehash_stack(const void *ctx, uint32_t id)
{
	return ((const struct profile *)ctx)->stack_hashes[id];
}

struct profile *profile__new(void)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->frame_index = calloc(1, sizeof(*p->frame_index));
	p->stack_index = calloc(1, sizeof(*p->stack_index));
	p->stack_frames = calloc(1, sizeof(*p->stack_frames));
	if (!p->frame_index || !p->stack_index || !p->stack_frames) {
		profile__free(p);
		return NULL;
	}
	return p;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nr_frames; i++) {
		free(p->frames[i].name);
		free(p->frames[i].file);
	}
	arena_free(p->stack_frames);
	for (size_t i = 0; i < p->nr_threads; i++)
		free(p->threads[i].name);
	if (p->frame_index)
		hash_index__free(p->frame_index);
	if (p->stack_index)
		hash_index__free(p->stack_index);
	free(p->frame_index);
	free(p->stack_index);
	free(p->frames);
	free(p->stacks);
	free(p->stack_hashes);
	free(p->threads);
	free(p->samples);
	free(p->gpu);
	for (size_t i = 0; i < p->memory.nr_sites; i++) {
		free(p->memory.sites[i].call);
		free(p->memory.sites[i].stack);
		free(p->memory.sites[i].location);
		free(p->memory.sites[i].error);
	}
	free(p->memory.sites);
	free(p->nccl.rows);
	for (size_t i = 0; i < p->nr_value_types; i++) {
		free(p->value_types[i].name);
		free(p->value_types[i].unit_name);
	}
	free(p->value_types);
	free(p->extra_values);
	free(p->name);
	free(p->exporter);
	free(p);
}

static int copy_text(char **to, const char *from)
{
	*to = from ? strdup(from) : NULL;
	return !from || *to ? 0 : -ENOMEM;
}

int profile__add_memory_site(struct profile *p, const struct memory_site *site)
{
	struct memory_facts *m = &p->memory;
	struct memory_site *s;

	if (array__grow((void **)&m->sites, &m->cap_sites, m->nr_sites + 1, sizeof(*m->sites)))
		return -ENOMEM;
	s = &m->sites[m->nr_sites];
	*s = *site;
	s->call = s->stack = s->location = s->error = NULL;
	if (copy_text(&s->call, site->call ? site->call : "") ||
	    copy_text(&s->stack, site->stack ? site->stack : "") ||
	    copy_text(&s->location, site->location) || copy_text(&s->error, site->error)) {
		free(s->call);
		free(s->stack);
		free(s->location);
		free(s->error);
		return -ENOMEM;
	}
	m->nr_sites++;
	return 0;
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

int64_t profile__intern_frame(struct profile *p, const char *name, const char *file, uint32_t line,
			      enum frame_kind kind)
{
	struct hash_index *index = p->frame_index;
	uint64_t h = frame_hash(name, file, line, kind);
	struct frame *f;
	size_t pos;

	if (hash_index__reserve(index, 1024, rehash_frame, p))
		return -ENOMEM;
	for (pos = hash_index__first(index, h); !hash_index__empty(index, pos);
	     pos = hash_index__next(index, pos)) {
		f = &p->frames[hash_index__id(index, pos)];
		if (f->line == line && f->kind == kind && str_eq(f->name, name) &&
		    str_eq(f->file, file))
			return hash_index__id(index, pos);
	}
	if (array__grow((void **)&p->frames, &p->cap_frames, p->nr_frames + 1, sizeof(*p->frames)))
		return -ENOMEM;
	f = &p->frames[p->nr_frames];
	f->name = strdup(name ? name : "");
	f->file = file ? strdup(file) : NULL;
	if (!f->name || (file && !f->file)) {
		free(f->name);
		free(f->file);
		return -ENOMEM;
	}
	f->line = line;
	f->kind = kind;
	hash_index__set(index, pos, p->nr_frames);
	return p->nr_frames++;
}

int64_t profile__intern_stack(struct profile *p, const uint32_t *frames, size_t depth)
{
	struct hash_index *index = p->stack_index;
	uint64_t h = stack_hash(frames, depth);
	struct stack *s;
	size_t pos;

	if (hash_index__reserve(index, 1024, rehash_stack, p))
		return -ENOMEM;
	/* The stored hashes spare reading the stacks that only collide. */
	for (pos = hash_index__first(index, h); !hash_index__empty(index, pos);
	     pos = hash_index__next(index, pos)) {
		if (p->stack_hashes[hash_index__id(index, pos)] != h)
			continue;
		s = &p->stacks[hash_index__id(index, pos)];
		if (s->depth == depth &&
		    (!depth || !memcmp(s->frames, frames, depth * sizeof(*frames))))
			return hash_index__id(index, pos);
	}
	if (array__grow((void **)&p->stacks, &p->cap_stacks, p->nr_stacks + 1,
			sizeof(*p->stacks)) ||
	    array__grow((void **)&p->stack_hashes, &p->cap_stack_hashes, p->nr_stacks + 1,
			sizeof(*p->stack_hashes)))
		return -ENOMEM;
	p->stack_hashes[p->nr_stacks] = h;
	s = &p->stacks[p->nr_stacks];
	s->frames = arena_alloc(p->stack_frames, depth ? depth : 1);
	if (!s->frames)
		return -ENOMEM;
	if (depth)
		memcpy(s->frames, frames, depth * sizeof(*frames));
	s->depth = depth;
	s->weight = 0;
	hash_index__set(index, pos, p->nr_stacks);
	return p->nr_stacks++;
}

int64_t profile__add_thread(struct profile *p, uint32_t pid, uint32_t tid, const char *name)
{
	struct thread *t;

	for (size_t i = 0; i < p->nr_threads; i++) {
		t = &p->threads[i];
		if (t->tid != tid || t->pid != pid)
			continue;
		if (name && !str_eq(t->name, name)) {
			char *copy = strdup(name);

			if (!copy)
				return -ENOMEM;
			free(t->name);
			t->name = copy;
		}
		return i;
	}
	if (array__grow((void **)&p->threads, &p->cap_threads, p->nr_threads + 1,
			sizeof(*p->threads)))
		return -ENOMEM;
	t = &p->threads[p->nr_threads];
	t->pid = pid;
	t->tid = tid;
	t->name = strdup(name ? name : "");
	if (!t->name)
		return -ENOMEM;
	return p->nr_threads++;
}

int profile__add_sample(struct profile *p, uint32_t thread, uint32_t stack, uint64_t time_ns,
			uint64_t weight)
{
	struct sample *s;

	if (array__grow((void **)&p->samples, &p->cap_samples, p->nr_samples + 1,
			sizeof(*p->samples)))
		return -ENOMEM;
	s = &p->samples[p->nr_samples++];
	s->time_ns = time_ns;
	s->weight = weight;
	s->thread = thread;
	s->stack = stack;
	p->stacks[stack].weight += weight;
	return 0;
}

void profile__add_weight(struct profile *p, uint32_t stack, uint64_t weight)
{
	p->stacks[stack].weight += weight;
}

int profile__add_gpu(struct profile *p, const struct gpu_activity *activity)
{
	if (array__grow((void **)&p->gpu, &p->cap_gpu, p->nr_gpu + 1, sizeof(*p->gpu)))
		return -ENOMEM;
	p->gpu[p->nr_gpu++] = *activity;
	return 0;
}

uint64_t profile__total_weight(const struct profile *p)
{
	uint64_t total = 0;

	for (size_t i = 0; i < p->nr_stacks; i++)
		total += p->stacks[i].weight;
	return total;
}

bool profile__stack_is_gpu(const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];

	return s->depth && p->frames[s->frames[s->depth - 1]].kind == FRAME_GPU;
}

bool profile__stack_is_off_cpu(const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];

	return s->depth && p->frames[s->frames[s->depth - 1]].kind == FRAME_OFF_CPU;
}

const char *frame__off_cpu_reason(const struct frame *f)
{
	size_t len = strlen(FRAME_OFF_CPU_MARK);

	if (f->kind == FRAME_OFF_CPU && !strncmp(f->name, FRAME_OFF_CPU_MARK, len))
		return f->name + len;
	return f->name;
}

bool profile__stack_is_preempted(const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];

	return profile__stack_is_off_cpu(p, stack) &&
	       !strcmp(frame__off_cpu_reason(&p->frames[s->frames[s->depth - 1]]), "preempted");
}

static int compare_samples(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	/* qsort is not stable; keep arrival order through the thread/stack ids
	 * so equal timestamps still sort the same way every run. */
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return 0;
}

void profile__sort_samples(struct profile *p)
{
	if (p->nr_samples < 2)
		return;
	qsort(p->samples, p->nr_samples, sizeof(*p->samples), compare_samples);
}

static const char *const kind_suffix[FRAME_KIND_COUNT] = {
    [FRAME_INLINE] = "_[i]",
    [FRAME_KERNEL] = "_[k]",
    [FRAME_JIT] = "_[j]",
    [FRAME_PYTHON] = "_[p]",
};

char *frame__folded_name(const struct frame *f)
{
	return frame__folded_text(f, false);
}

char *frame__folded_text(const struct frame *f, bool pyspy_form)
{
	bool pyspy = pyspy_form && f->kind == FRAME_PYTHON;
	const char *prefix = f->kind == FRAME_GPU ? "[gpu] " : "";
	const char *suffix = !pyspy && kind_suffix[f->kind] ? kind_suffix[f->kind] : "";
	/* A Python frame's text is made of its name and file. */
	char *python = pyspy			 ? python_frame__pyspy_text_dup(f)
		       : f->kind == FRAME_PYTHON ? python_frame__text_dup(f)
						 : NULL;
	const char *name = python ? python : f->name && f->name[0] ? f->name : "[unknown]";
	size_t name_len = strlen(name), digits = name_len;
	const char *guard = "";
	size_t len;
	char *out;

	if (f->kind == FRAME_PYTHON && !python)
		return NULL;

	/* A name ending in blanks and digits, last in its line, would read as
	 * the count (or, to flamegraph.pl, as a differential's two). */
	while (digits && name[digits - 1] >= '0' && name[digits - 1] <= '9')
		digits--;
	if (!*suffix && digits && digits < name_len &&
	    (name[digits - 1] == ' ' || name[digits - 1] == '\t'))
		guard = "_";
	/* A name that ends as a kind mark does ("_[k]") would be coloured, and
	 * read back, as that kind. */
	if (!*suffix && !*prefix && name_len > 4 && !strncmp(name + name_len - 4, "_[", 2) &&
	    strchr("kijp", name[name_len - 2]) && name[name_len - 1] == ']')
		guard = "_";
	len = strlen(prefix) + name_len + strlen(guard) + strlen(suffix) + 1;
	out = malloc(len);
	if (out)
		snprintf(out, len, "%s%s%s%s", prefix, name, guard, suffix);
	free(python);
	if (!out)
		return NULL;
	/* ';' separates frames and a newline ends the line; a trailing space
	 * followed by digits would read as the count, so tabs become spaces. */
	for (char *c = out; *c; c++) {
		if (*c == ';')
			*c = ':';
		else if (*c == '\n' || *c == '\r' || *c == '\t')
			*c = ' ';
	}
	return out;
}

const char *frame__text(const struct frame *f, char *buf, size_t size)
{
	if (f->kind != FRAME_PYTHON)
		return f->name;
	python_frame__text(f, buf, size);
	return buf;
}

struct named_share {
	char *name;
	uint32_t frame;
	uint64_t self, total;
	uint64_t last_stack; /* stack id + 1 that last added to total */
};

static int compare_name(const void *a, const void *b)
{
	return strcmp(((const struct named_share *)a)->name, ((const struct named_share *)b)->name);
}

static int compare_share(const void *a, const void *b)
{
	const struct function_share *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return (int)x->frame - (int)y->frame;
}

int64_t profile__function_shares(const struct profile *p, struct function_share **out)
{
	struct named_share *names = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*names));
	uint32_t *group = malloc((p->nr_frames ? p->nr_frames : 1) * sizeof(*group));
	struct function_share *shares = NULL;
	size_t nr_groups = 0;
	int64_t err = -ENOMEM;

	if (!names || !group)
		goto cleanup;
	/* Functions are what the folded output names: frames that differ only
	 * by line are one function. */
	for (size_t i = 0; i < p->nr_frames; i++) {
		names[i].name = frame__folded_name(&p->frames[i]);
		names[i].frame = i;
		if (!names[i].name)
			goto cleanup;
	}
	qsort(names, p->nr_frames, sizeof(*names), compare_name);
	for (size_t i = 0; i < p->nr_frames; i++) {
		if (i && strcmp(names[i].name, names[i - 1].name))
			nr_groups++;
		group[names[i].frame] = nr_groups;
	}
	if (p->nr_frames)
		nr_groups++;
	shares = calloc(nr_groups ? nr_groups : 1, sizeof(*shares));
	if (!shares)
		goto cleanup;
	for (size_t i = 0; i < p->nr_frames; i++)
		if (!i || strcmp(names[i].name, names[i - 1].name))
			shares[group[names[i].frame]].frame = names[i].frame;
	/* reuse names[].last_stack per group to count a stack once */
	for (size_t i = 0; i < nr_groups; i++)
		names[i].last_stack = 0;
	for (size_t s = 0; s < p->nr_stacks; s++) {
		const struct stack *st = &p->stacks[s];

		if (!st->weight || !st->depth)
			continue;
		shares[group[st->frames[st->depth - 1]]].self += st->weight;
		for (uint32_t d = 0; d < st->depth; d++) {
			uint32_t g = group[st->frames[d]];

			if (names[g].last_stack == s + 1)
				continue;
			names[g].last_stack = s + 1;
			shares[g].total += st->weight;
		}
	}
	qsort(shares, nr_groups, sizeof(*shares), compare_share);
	*out = shares;
	shares = NULL;
	err = nr_groups;
cleanup:
	if (names)
		for (size_t i = 0; i < p->nr_frames; i++)
			free(names[i].name);
	free(names);
	free(group);
	free(shares);
	return err;
}

int gpu_activity__compare(const void *a, const void *b)
{
	const struct gpu_activity *x = *(const struct gpu_activity *const *)a;
	const struct gpu_activity *y = *(const struct gpu_activity *const *)b;

	if (x->process != y->process)
		return x->process < y->process ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	return x->correlation < y->correlation ? -1 : x->correlation > y->correlation;
}

bool profile__gpu_several_processes(const struct profile *p)
{
	for (size_t i = 1; i < p->nr_gpu; i++)
		if (p->gpu[i].process != p->gpu[0].process)
			return true;
	return false;
}

void profile__gpu_process_label(const struct profile *p, uint32_t process, char *buf, size_t size)
{
	const char *name = NULL;
	uint32_t pid = 0;

	for (size_t i = 0; i < p->nr_gpu && (!name || !pid); i++) {
		const struct gpu_activity *a = &p->gpu[i];
		const struct stack *s;

		if (a->process != process)
			continue;
		if (!pid)
			pid = a->launch_pid;
		if (name || a->stack >= p->nr_stacks)
			continue;
		s = &p->stacks[a->stack];
		if (s->depth && s->frames[0] < p->nr_frames &&
		    p->frames[s->frames[0]].kind == FRAME_PROCESS)
			name = p->frames[s->frames[0]].name;
	}
	if (name && pid)
		snprintf(buf, size, "%s, pid %" PRIu32, name, pid);
	else if (name)
		snprintf(buf, size, "%s", name);
	else if (pid)
		snprintf(buf, size, "pid %" PRIu32, pid);
	else
		snprintf(buf, size, "process %" PRIu32, process);
}

static int compare_threads(const void *a, const void *b, void *arg)
{
	const struct profile *p = arg;
	const struct thread *x = &p->threads[*(const uint32_t *)a];
	const struct thread *y = &p->threads[*(const uint32_t *)b];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void profile__thread_order(const struct profile *p, uint32_t *order)
{
	for (size_t t = 0; t < p->nr_threads; t++)
		order[t] = t;
	qsort_r(order, p->nr_threads, sizeof(*order), compare_threads, (void *)p);
}

int profile__samples_by_thread(const struct profile *p, uint32_t **by_thread, size_t **thread_start)
{
	size_t *start = calloc(p->nr_threads + 1, sizeof(*start));
	size_t *next = calloc(p->nr_threads + 1, sizeof(*next));
	uint32_t *by = malloc((p->nr_samples ? p->nr_samples : 1) * sizeof(*by));

	if (!start || !next || !by) {
		free(start);
		free(next);
		free(by);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nr_samples; i++)
		start[p->samples[i].thread + 1]++;
	for (size_t t = 0; t < p->nr_threads; t++)
		start[t + 1] += start[t];
	memcpy(next, start, (p->nr_threads + 1) * sizeof(*next));
	for (size_t i = 0; i < p->nr_samples; i++)
		by[next[p->samples[i].thread]++] = i;
	free(next);
	*by_thread = by;
	*thread_start = start;
	return 0;
}
