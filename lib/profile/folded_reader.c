// SPDX-License-Identifier: GPL-2.0
/*
 * The folded-stack reader: "frame;frame;frame COUNT" lines (llmprof's own,
 * stackcollapse-perf.pl, bcc profile -f, py-spy --format raw), streamed line
 * by line.  Sorted files repeat long prefixes, so each line is compared with
 * the previous one before any frame is hashed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "base/hash_index.h"
#include "profile/reader_input.h"

struct segment {
	size_t start, len;
	uint32_t frame;
};

/* Frame ids by folded text, ahead of profile__intern_frame(): one hash of
 * the bytes as they are, no marker stripping, no string copies. */
struct frame_cache_entry {
	uint64_t hash;
	char *text;
	size_t len;
	uint32_t frame;
};

struct frame_cache {
	struct frame_cache_entry *entries;
	size_t nr, cap;
	struct hash_index index;
};

struct folded_parser {
	struct input *in;
	struct profile *profile;
	char *line, *prev; /* the current line; the last one that parsed */
	size_t line_len, line_cap, prev_cap;
	/* Frames of the current and the previous line: sorted folded files
	 * repeat long prefixes, and comparing bytes is cheaper than hashing. */
	struct segment *segments, *prev_segments;
	size_t cap_segments, cap_prev_segments, nr_prev_segments;
	uint32_t *frames;
	size_t cap_frames;
	struct frame_cache cache;
	uint64_t total;
	char message[200];
};

static int __attribute__((format(printf, 2, 3)))
malformed(struct folded_parser *fp, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fp->message, sizeof(fp->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool looks_numeric(const char *s, size_t len)
{
	bool digit = false;

	for (size_t i = 0; i < len; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			digit = true;
		else if (!strchr("+-.eE", s[i]))
			return false;
	}
	return digit;
}

/* Eight bytes at a time; frame names are short and the table is small. */
static uint64_t text_hash(const char *text, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ len, word;

	for (; len >= 8; text += 8, len -= 8) {
		memcpy(&word, text, 8);
		h = (h ^ word) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	word = 0;
	memcpy(&word, text, len);
	h = (h ^ word) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ h >> 29;
}

static uint64_t frame_cache_rehash(const void *ctx, uint32_t id)
{
	const struct frame_cache *cache = ctx;

	return cache->entries[id].hash;
}

static void frame_cache_free(struct frame_cache *cache)
{
	for (size_t i = 0; i < cache->nr; i++)
		free(cache->entries[i].text);
	free(cache->entries);
	hash_index__free(&cache->index);
}

/* Interns the frame whose folded text is text[0, len) (text[len] writable);
 * returns a frame id or -ENOMEM. */
static int64_t folded_frame(struct folded_parser *fp, char *text, size_t len)
{
	struct frame_cache *cache = &fp->cache;
	struct hash_index *index = &cache->index;
	uint64_t hash = text_hash(text, len);
	struct frame_cache_entry *entry;
	int64_t id;
	size_t pos;

	if (hash_index__reserve(index, 4096, frame_cache_rehash, cache))
		return -ENOMEM;
	for (pos = hash_index__first(index, hash); !hash_index__empty(index, pos);
	     pos = hash_index__next(index, pos)) {
		entry = &cache->entries[hash_index__id(index, pos)];
		if (entry->hash == hash && entry->len == len && !memcmp(entry->text, text, len))
			return entry->frame;
	}
	id = reader__intern_folded_frame(fp->profile, text, len, NULL, 0);
	if (id < 0)
		return id;
	if (array__grow((void **)&cache->entries, &cache->cap, cache->nr + 1,
			sizeof(*cache->entries)))
		return -ENOMEM;
	entry = &cache->entries[cache->nr];
	entry->text = strndup(text, len);
	if (!entry->text)
		return -ENOMEM;
	entry->hash = hash;
	entry->len = len;
	entry->frame = id;
	hash_index__set(index, pos, cache->nr++);
	return id;
}

/* Returns 0 for a stack, 1 for a blank or comment line, -EINVAL for a
 * malformed line (fp->message says why) or -ENOMEM. */
static int folded_parse_line(struct folded_parser *fp)
{
	char *s = fp->line;
	size_t len = fp->line_len, digits, end, depth = 0;
	uint64_t count = 0;
	bool same = true;
	int64_t id;

	/* Windows line endings and trailing blanks are not part of the count. */
	while (len && (s[len - 1] == '\r' || is_blank(s[len - 1])))
		len--;
	if (!len || s[0] == '#')
		return 1;
	if (memchr(s, '\0', len))
		return malformed(fp, "NUL byte in the line");
	digits = len;
	while (digits && s[digits - 1] >= '0' && s[digits - 1] <= '9')
		digits--;
	if (digits == len || (digits && !is_blank(s[digits - 1]))) {
		size_t word = len;

		while (word && !is_blank(s[word - 1]))
			word--;
		if (word && looks_numeric(s + word, len - word))
			return malformed(fp, "sample count '%.*s' is not a whole number",
					 (int)(len - word > 40 ? 40 : len - word), s + word);
		return malformed(fp, "no sample count at the end of the line");
	}
	for (size_t i = digits; i < len; i++) {
		unsigned int d = s[i] - '0';

		if (count > (UINT64_MAX - d) / 10)
			return malformed(fp, "sample count is too large");
		count = count * 10 + d;
	}
	end = digits;
	while (end && is_blank(s[end - 1]))
		end--;
	/* Old py-spy versions end every frame, the last one too, with ';'. */
	if (end && s[end - 1] == ';')
		end--;
	if (!end)
		return malformed(fp, "no stack before the sample count");
	if (count > UINT64_MAX - fp->total)
		return malformed(fp, "sample counts add up to more than 2^64");
	/* Split first and intern after, so a malformed line leaves nothing
	 * behind. */
	for (size_t start = 0; start <= end; depth++) {
		const char *semicolon = memchr(s + start, ';', end - start);
		size_t stop = semicolon ? (size_t)(semicolon - s) : end;

		if (stop == start)
			return malformed(fp, "frame %zu has an empty name", depth + 1);
		if (array__grow((void **)&fp->segments, &fp->cap_segments, depth + 1,
				sizeof(*fp->segments)))
			return -ENOMEM;
		fp->segments[depth] = (struct segment){.start = start, .len = stop - start};
		start = stop + 1;
	}
	if (array__grow((void **)&fp->frames, &fp->cap_frames, depth, sizeof(*fp->frames)))
		return -ENOMEM;
	for (size_t d = 0; d < depth; d++) {
		struct segment *seg = &fp->segments[d];

		if (same && d < fp->nr_prev_segments && fp->prev_segments[d].len == seg->len &&
		    !memcmp(fp->prev + fp->prev_segments[d].start, s + seg->start, seg->len)) {
			id = fp->prev_segments[d].frame;
		} else {
			same = false;
			id = folded_frame(fp, s + seg->start, seg->len);
			if (id < 0)
				return id;
		}
		seg->frame = id;
		fp->frames[d] = id;
	}
	id = profile__intern_stack(fp->profile, fp->frames, depth);
	if (id < 0)
		return id;
	profile__add_weight(fp->profile, id, count);
	fp->total += count;
	/* This line is the next one's reference. */
	{
		char *line = fp->line;
		size_t cap = fp->line_cap;
		struct segment *segments = fp->segments;

		fp->line = fp->prev;
		fp->line_cap = fp->prev_cap;
		fp->prev = line;
		fp->prev_cap = cap;
		fp->segments = fp->prev_segments;
		cap = fp->cap_segments;
		fp->cap_segments = fp->cap_prev_segments;
		fp->prev_segments = segments;
		fp->cap_prev_segments = cap;
		fp->nr_prev_segments = depth;
	}
	return 0;
}

/* Folded text has no unit; GPU memory views (llmprof --gpu-memory) and the
 * NCCL view are known by their leaves, "[gpu-mem] CALL SIZE" and
 * "[nccl] OP SIZE", and weigh bytes. */
static bool is_gpu_memory(const struct profile *p)
{
	size_t weighed = 0;

	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		const struct frame *leaf;

		if (!s->weight || !s->depth)
			continue;
		leaf = &p->frames[s->frames[s->depth - 1]];
		if (leaf->kind != FRAME_GPU_MEMORY && leaf->kind != FRAME_NCCL &&
		    strcmp(leaf->name, "[before attach]"))
			return false;
		weighed++;
	}
	return weighed > 0;
}

int folded_reader__parse(struct input *in, const struct profile_read_options *options,
			 struct profile *p, struct profile_read_result *result)
{
	struct folded_parser fp = {.in = in, .profile = p};
	int err;

	for (;;) {
		err = input__read_line(in, &fp.line, &fp.line_len, &fp.line_cap);
		/* Not a profile at all: refused even where lines are skipped. */
		if (err == -EFBIG || err == -EILSEQ) {
			if (err == -EFBIG)
				reader__set_message(result, 0, "line %lu is longer than %d MiB",
						    result->lines + 1, MAX_LINE_LENGTH >> 20);
			else
				reader__set_message(result, 0,
						    "binary data, not a profile (a NUL byte in "
						    "line %lu)",
						    result->lines + 1);
			err = -EINVAL;
			goto cleanup;
		}
		if (err < 0) {
			if (err != -ENOMEM)
				reader__set_message(result, result->lines + 1, "read error: %s",
						    strerror(-err));
			goto cleanup;
		}
		if (!err)
			break;
		result->lines++;
		err = folded_parse_line(&fp);
		if (err == -EINVAL) {
			if (options->strict) {
				reader__set_message(result, result->lines, "%s", fp.message);
				goto cleanup;
			}
			if (!result->skipped++)
				reader__set_message(result, result->lines, "%s", fp.message);
			continue;
		}
		if (err < 0)
			goto cleanup;
	}
	p->unit = is_gpu_memory(p) ? UNIT_BYTES : UNIT_SAMPLES;
	p->samples_taken = p->unit == UNIT_BYTES ? 0 : fp.total;
	err = 0;
cleanup:
	free(fp.line);
	free(fp.prev);
	free(fp.segments);
	free(fp.prev_segments);
	free(fp.frames);
	frame_cache_free(&fp.cache);
	return err;
}
