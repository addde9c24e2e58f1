// SPDX-License-Identifier: GPL-2.0
/*
 * Profile readers: folded stacks streamed line by line, and speedscope JSON
 * streamed token by token, so that memory grows with the distinct stacks and
 * frames of a profile rather than with the length of the file.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "array.h"
#include "profile/perf_script_reader.h"
#include "profile/profile_reader.h"

#define READ_BLOCK_SIZE (64 * 1024)
#define MAX_LINE_LENGTH (16 * 1024 * 1024)
#define MAX_STRING_LENGTH (16 * 1024 * 1024)
#define MAX_SKIP_DEPTH 64
/* Scaled times and weights are int64 nanoseconds (or counts). */
#define MAX_SCALED 9.0e18

/* A buffered reader over a stream or a memory buffer. */
struct input {
	FILE *stream; /* NULL when reading a buffer */
	const unsigned char *data;
	size_t pos, len;
	unsigned char *block; /* read buffer for a stream */
	unsigned long line;   /* 1-based line of data[pos] */
	int error;	      /* -errno of a failed read */
};

static bool input_fill(struct input *in)
{
	if (in->pos < in->len)
		return true;
	if (!in->stream || in->error)
		return false;
	in->len = fread(in->block, 1, READ_BLOCK_SIZE, in->stream);
	in->pos = 0;
	in->data = in->block;
	if (in->len)
		return true;
	if (ferror(in->stream))
		in->error = errno ? -errno : -EIO;
	return false;
}

static int input_peek(struct input *in)
{
	return input_fill(in) ? in->data[in->pos] : -1;
}

static int input_next(struct input *in)
{
	int c = input_peek(in);

	if (c >= 0) {
		in->pos++;
		if (c == '\n')
			in->line++;
	}
	return c;
}

/*
 * Reads one line without its '\n' into *buf (NUL-terminated).  Returns 1, 0
 * at the end of the input, or -errno.  A line past MAX_LINE_LENGTH is read to
 * its end but not kept, and *too_long says so.
 */
static int input_read_line(struct input *in, char **buf, size_t *len, size_t *cap, bool *too_long)
{
	bool any = false;

	*len = 0;
	*too_long = false;
	for (;;) {
		const unsigned char *start, *newline;
		size_t avail, n;

		if (!input_fill(in)) {
			if (in->error)
				return in->error;
			if (!any)
				return 0;
			break;
		}
		any = true;
		start = in->data + in->pos;
		avail = in->len - in->pos;
		newline = memchr(start, '\n', avail);
		n = newline ? (size_t)(newline - start) : avail;
		in->pos += n + (newline ? 1 : 0);
		if (*len + n > MAX_LINE_LENGTH)
			*too_long = true;
		if (!*too_long) {
			if (*len + n + 1 > *cap) {
				size_t new_cap = *cap ? *cap : 256;
				char *p;

				while (new_cap < *len + n + 1)
					new_cap *= 2;
				p = realloc(*buf, new_cap);
				if (!p)
					return -ENOMEM;
				*buf = p;
				*cap = new_cap;
			}
			memcpy(*buf + *len, start, n);
			*len += n;
		}
		if (newline) {
			in->line++;
			break;
		}
	}
	if (!*buf) {
		*buf = malloc(256);
		if (!*buf)
			return -ENOMEM;
		*cap = 256;
	}
	if (*too_long)
		*len = 0;
	(*buf)[*len] = '\0';
	return 1;
}

static void __attribute__((format(printf, 3, 4)))
set_message(struct profile_read_result *result, unsigned long line, const char *fmt, ...)
{
	va_list ap;

	result->line = line;
	va_start(ap, fmt);
	vsnprintf(result->message, sizeof(result->message), fmt, ap);
	va_end(ap);
}

const char *profile_format__name(enum profile_format format)
{
	if (format == PROFILE_FORMAT_PERF_SCRIPT)
		return "perf script";
	return format == PROFILE_FORMAT_SPEEDSCOPE ? "speedscope" : "folded";
}

enum frame_kind profile_reader__frame_kind(const char *text, size_t len, size_t *name_start,
					   size_t *name_len)
{
	enum frame_kind kind;

	*name_start = 0;
	*name_len = len;
	/* The marker only counts when a name is left without it, since an
	 * empty name would be written back as "[unknown]". */
	if (len > 6 && !memcmp(text, "[gpu] ", 6)) {
		*name_start = 6;
		*name_len = len - 6;
		return FRAME_GPU;
	}
	if (len <= 4 || text[len - 4] != '_' || text[len - 3] != '[' || text[len - 1] != ']')
		return FRAME_NATIVE;
	switch (text[len - 2]) {
	case 'k':
		kind = FRAME_KERNEL;
		break;
	case 'i':
		kind = FRAME_INLINE;
		break;
	case 'j':
		kind = FRAME_JIT;
		break;
	case 'p':
		kind = FRAME_PYTHON;
		break;
	default:
		return FRAME_NATIVE;
	}
	*name_len = len - 4;
	return kind;
}

/* Interns the frame whose folded text is text[0, len); text[len] must be
 * writable.  Returns a frame id or -ENOMEM. */
static int64_t intern_folded_frame(struct profile *p, char *text, size_t len, const char *file,
				   uint32_t line)
{
	size_t start, name_len;
	enum frame_kind kind = profile_reader__frame_kind(text, len, &start, &name_len);
	char saved = text[start + name_len];
	int64_t id;

	text[start + name_len] = '\0';
	id = profile__intern_frame(p, text + start, file, line, kind);
	text[start + name_len] = saved;
	return id;
}

/* ---- folded stacks ---------------------------------------------------- */

struct segment {
	size_t start, len;
	uint32_t frame;
};

/* Frame ids by folded text, ahead of profile__intern_frame(): one hash of
 * the bytes as they are, no marker stripping, no string copies. */
struct frame_cache_slot {
	uint64_t hash;
	char *text; /* NULL: empty slot */
	size_t len;
	uint32_t frame;
};

struct frame_cache {
	struct frame_cache_slot *slots;
	size_t cap, used; /* cap is a power of two */
};

struct folded_parser {
	struct input *in;
	struct profile *profile;
	char *line, *prev; /* the current line; the last one that parsed */
	size_t line_len, line_cap, prev_cap;
	bool too_long;
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

static int frame_cache_grow(struct frame_cache *cache)
{
	size_t cap = cache->cap ? cache->cap * 2 : 4096;
	struct frame_cache_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < cache->cap; i++) {
		size_t pos;

		if (!cache->slots[i].text)
			continue;
		for (pos = cache->slots[i].hash & (cap - 1); slots[pos].text;
		     pos = (pos + 1) & (cap - 1))
			;
		slots[pos] = cache->slots[i];
	}
	free(cache->slots);
	cache->slots = slots;
	cache->cap = cap;
	return 0;
}

static void frame_cache_free(struct frame_cache *cache)
{
	for (size_t i = 0; i < cache->cap; i++)
		free(cache->slots[i].text);
	free(cache->slots);
}

/* Interns the frame whose folded text is text[0, len) (text[len] writable);
 * returns a frame id or -ENOMEM. */
static int64_t folded_frame(struct folded_parser *fp, char *text, size_t len)
{
	struct frame_cache *cache = &fp->cache;
	uint64_t hash = text_hash(text, len);
	struct frame_cache_slot *slot;
	int64_t id;
	size_t pos;

	if ((cache->used + 1) * 2 > cache->cap && frame_cache_grow(cache))
		return -ENOMEM;
	for (pos = hash & (cache->cap - 1); cache->slots[pos].text;
	     pos = (pos + 1) & (cache->cap - 1)) {
		slot = &cache->slots[pos];
		if (slot->hash == hash && slot->len == len && !memcmp(slot->text, text, len))
			return slot->frame;
	}
	id = intern_folded_frame(fp->profile, text, len, NULL, 0);
	if (id < 0)
		return id;
	slot = &cache->slots[pos];
	slot->text = strndup(text, len);
	if (!slot->text)
		return -ENOMEM;
	slot->hash = hash;
	slot->len = len;
	slot->frame = id;
	cache->used++;
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

	if (fp->too_long)
		return malformed(fp, "line longer than %d bytes", MAX_LINE_LENGTH);
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

static int folded_parse(struct input *in, const struct profile_read_options *options,
			struct profile *p, struct profile_read_result *result)
{
	struct folded_parser fp = {.in = in, .profile = p};
	int err;

	for (;;) {
		err = input_read_line(in, &fp.line, &fp.line_len, &fp.line_cap, &fp.too_long);
		if (err < 0) {
			if (err != -ENOMEM)
				set_message(result, result->lines + 1, "read error: %s",
					    strerror(-err));
			goto cleanup;
		}
		if (!err)
			break;
		result->lines++;
		err = folded_parse_line(&fp);
		if (err == -EINVAL) {
			if (!options->lenient) {
				set_message(result, result->lines, "%s", fp.message);
				goto cleanup;
			}
			if (!result->skipped++)
				set_message(result, result->lines, "%s", fp.message);
			continue;
		}
		if (err < 0)
			goto cleanup;
	}
	p->unit = UNIT_SAMPLES;
	p->samples_taken = fp.total;
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

/* ---- speedscope JSON -------------------------------------------------- */

enum json_token {
	JSON_END = 0,
	JSON_OBJECT_BEGIN,
	JSON_OBJECT_END,
	JSON_ARRAY_BEGIN,
	JSON_ARRAY_END,
	JSON_COLON,
	JSON_COMMA,
	JSON_STRING,
	JSON_NUMBER,
	JSON_TRUE,
	JSON_FALSE,
	JSON_NULL,
};

static const char *const token_names[] = {
    [JSON_END] = "the end of the input",
    [JSON_OBJECT_BEGIN] = "'{'",
    [JSON_OBJECT_END] = "'}'",
    [JSON_ARRAY_BEGIN] = "'['",
    [JSON_ARRAY_END] = "']'",
    [JSON_COLON] = "':'",
    [JSON_COMMA] = "','",
    [JSON_STRING] = "a string",
    [JSON_NUMBER] = "a number",
    [JSON_TRUE] = "true",
    [JSON_FALSE] = "false",
    [JSON_NULL] = "null",
};

enum unit_class {
	UNIT_CLASS_UNSET = 0,
	UNIT_CLASS_COUNT, /* "none", "bytes": weights are counts */
	UNIT_CLASS_TIME,  /* scaled to nanoseconds */
};

enum speedscope_type {
	TYPE_UNSET = 0,
	TYPE_SAMPLED,
	TYPE_EVENTED,
};

struct raw_frame {
	char *name;
	char *file;
	uint32_t line;
};

struct raw_event {
	double at;
	uint32_t frame;
	bool open;
};

/* A span of the timeline, kept until the frames are known. */
struct timeline_entry {
	int64_t time; /* scaled, before the profile's origin is subtracted */
	uint64_t weight;
	uint32_t stack; /* raw stack id */
	uint32_t thread;
	uint32_t device, stream;
	bool gpu;
};

/* One element of "profiles", kept until its closing '}' since members come
 * in any order. */
struct raw_profile {
	enum speedscope_type type;
	char *name;
	double scale;
	enum unit_class unit_class;
	double start, end;
	bool has_start, has_end, has_weights;
	uint32_t *samples; /* raw stack ids */
	size_t nr_samples, cap_samples;
	double *weights;
	size_t nr_weights, cap_weights;
	struct raw_event *events;
	size_t nr_events, cap_events;
};

struct json_parser {
	struct input *in;
	struct profile *profile;
	/* Stacks of indices into "shared.frames", interned before the frames
	 * themselves may have been seen. */
	struct profile *raw;
	const struct profile_read_options *options;
	struct profile_read_result *result;

	enum json_token token;
	unsigned long token_line;
	char *text; /* value of a JSON_STRING */
	size_t text_len, text_cap;
	double number; /* value of a JSON_NUMBER */

	uint32_t *stack; /* scratch: the sample or open frames being read */
	size_t cap_stack;
	struct raw_frame *frames;
	size_t nr_frames, cap_frames;
	bool has_frames, has_profiles;
	struct raw_profile current;
	size_t nr_profiles;
	enum unit_class unit_class;
	struct timeline_entry *timeline;
	size_t nr_timeline, cap_timeline;
	int64_t origin; /* earliest scaled start of a profile */
	bool has_origin;
	uint64_t total;
};

static int __attribute__((format(printf, 2, 3)))
json_error(struct json_parser *j, const char *fmt, ...)
{
	va_list ap;

	j->result->line = j->token_line;
	va_start(ap, fmt);
	vsnprintf(j->result->message, sizeof(j->result->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int json_append(struct json_parser *j, const char *bytes, size_t n)
{
	if (j->text_len + n > MAX_STRING_LENGTH)
		return json_error(j, "string longer than %d bytes", MAX_STRING_LENGTH);
	if (array__grow((void **)&j->text, &j->text_cap, j->text_len + n + 1, 1))
		return -ENOMEM;
	memcpy(j->text + j->text_len, bytes, n);
	j->text_len += n;
	j->text[j->text_len] = '\0';
	return 0;
}

static int json_append_code_point(struct json_parser *j, uint32_t cp)
{
	char buf[4];
	size_t n;

	/* NUL cannot live in a C string and lone surrogates are not text;
	 * both become U+FFFD rather than failing the file. */
	if (!cp || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		buf[0] = cp;
		n = 1;
	} else if (cp < 0x800) {
		buf[0] = 0xc0 | cp >> 6;
		buf[1] = 0x80 | (cp & 0x3f);
		n = 2;
	} else if (cp < 0x10000) {
		buf[0] = 0xe0 | cp >> 12;
		buf[1] = 0x80 | (cp >> 6 & 0x3f);
		buf[2] = 0x80 | (cp & 0x3f);
		n = 3;
	} else {
		buf[0] = 0xf0 | cp >> 18;
		buf[1] = 0x80 | (cp >> 12 & 0x3f);
		buf[2] = 0x80 | (cp >> 6 & 0x3f);
		buf[3] = 0x80 | (cp & 0x3f);
		n = 4;
	}
	return json_append(j, buf, n);
}

static int json_hex4(struct json_parser *j, uint32_t *cp)
{
	*cp = 0;
	for (int i = 0; i < 4; i++) {
		int c = input_next(j->in);

		if (c >= '0' && c <= '9')
			*cp = *cp << 4 | (c - '0');
		else if (c >= 'a' && c <= 'f')
			*cp = *cp << 4 | (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*cp = *cp << 4 | (c - 'A' + 10);
		else
			return json_error(j, "malformed \\u escape in a string");
	}
	return 0;
}

static int simple_escape(int c)
{
	switch (c) {
	case '"':
	case '\\':
	case '/':
		return c;
	case 'b':
		return '\b';
	case 'f':
		return '\f';
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	default:
		return -1;
	}
}

/* After "\u": one code point, or a surrogate pair. */
static int json_unicode_escape(struct json_parser *j)
{
	uint32_t cp, low;
	int err, c;
	char e;

	err = json_hex4(j, &cp);
	if (err)
		return err;
	if (cp < 0xd800 || cp > 0xdbff || input_peek(j->in) != '\\')
		return json_append_code_point(j, cp);
	input_next(j->in);
	c = input_next(j->in);
	if (c != 'u') {
		/* A lone high surrogate, then an ordinary escape. */
		err = json_append_code_point(j, 0xfffd);
		if (err)
			return err;
		if (simple_escape(c) < 0)
			return json_error(j, "malformed escape in a string");
		e = simple_escape(c);
		return json_append(j, &e, 1);
	}
	err = json_hex4(j, &low);
	if (err)
		return err;
	if (low < 0xdc00 || low > 0xdfff) {
		err = json_append_code_point(j, 0xfffd);
		return err ? err : json_append_code_point(j, low);
	}
	return json_append_code_point(j, 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00));
}

static int json_read_string(struct json_parser *j)
{
	int err = 0;

	j->text_len = 0;
	err = json_append(j, "", 0);
	while (!err) {
		int c = input_next(j->in);
		char byte;

		if (c < 0)
			return j->in->error ? j->in->error : json_error(j, "unterminated string");
		if (c == '"')
			break;
		if (c < 0x20)
			return json_error(j, "control character in a string");
		if (c != '\\') {
			byte = c;
			err = json_append(j, &byte, 1);
			continue;
		}
		c = input_next(j->in);
		if (c == 'u') {
			err = json_unicode_escape(j);
			continue;
		}
		if (simple_escape(c) < 0)
			return json_error(j, "malformed escape in a string");
		byte = simple_escape(c);
		err = json_append(j, &byte, 1);
	}
	j->token = JSON_STRING;
	return err;
}

static int json_read_number(struct json_parser *j, int first)
{
	char buf[64], *end;
	size_t len = 0;
	int c;

	buf[len++] = first;
	while ((c = input_peek(j->in)) >= 0 && ((c >= '0' && c <= '9') || strchr("+-.eE", c))) {
		if (len + 1 >= sizeof(buf))
			return json_error(j, "number too long");
		buf[len++] = input_next(j->in);
	}
	buf[len] = '\0';
	if (first == '-' && !(buf[1] >= '0' && buf[1] <= '9'))
		return json_error(j, "malformed number '%s'", buf);
	errno = 0;
	j->number = strtod(buf, &end);
	if (end != buf + len)
		return json_error(j, "malformed number '%s'", buf);
	if (!isfinite(j->number))
		return json_error(j, "number '%s' out of range", buf);
	j->token = JSON_NUMBER;
	return 0;
}

static int json_read_literal(struct json_parser *j, const char *rest, enum json_token token)
{
	for (const char *c = rest; *c; c++)
		if (input_next(j->in) != *c)
			return json_error(j, "unknown literal (expected %s)", token_names[token]);
	j->token = token;
	return 0;
}

/* Reads the next token into j->token. */
static int json_next(struct json_parser *j)
{
	int c;

	do
		c = input_next(j->in);
	while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
	j->token_line = j->in->line;
	switch (c) {
	case -1:
		if (j->in->error)
			return j->in->error;
		j->token = JSON_END;
		return 0;
	case '{':
		j->token = JSON_OBJECT_BEGIN;
		return 0;
	case '}':
		j->token = JSON_OBJECT_END;
		return 0;
	case '[':
		j->token = JSON_ARRAY_BEGIN;
		return 0;
	case ']':
		j->token = JSON_ARRAY_END;
		return 0;
	case ':':
		j->token = JSON_COLON;
		return 0;
	case ',':
		j->token = JSON_COMMA;
		return 0;
	case '"':
		return json_read_string(j);
	case 't':
		return json_read_literal(j, "rue", JSON_TRUE);
	case 'f':
		return json_read_literal(j, "alse", JSON_FALSE);
	case 'n':
		return json_read_literal(j, "ull", JSON_NULL);
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return json_read_number(j, c);
		if (c >= 0x21 && c < 0x7f)
			return json_error(j, "unexpected character '%c'", c);
		return json_error(j, "unexpected byte 0x%02x", c);
	}
}

typedef int (*json_member_fn)(struct json_parser *j, const char *key, void *ctx);
typedef int (*json_element_fn)(struct json_parser *j, size_t index, void *ctx);

static int json_unexpected(struct json_parser *j, const char *expected, const char *where)
{
	return json_error(j, "expected %s in %s, found %s", expected, where, token_names[j->token]);
}

/* Parses an object, calling member() with each key and the token at its
 * value; member() must consume the value. */
static int json_object(struct json_parser *j, const char *where, json_member_fn member, void *ctx)
{
	int err;

	if (j->token != JSON_OBJECT_BEGIN)
		return json_unexpected(j, "an object", where);
	err = json_next(j);
	if (err)
		return err;
	if (j->token == JSON_OBJECT_END)
		return json_next(j);
	for (;;) {
		char key[64];

		if (j->token != JSON_STRING)
			return json_unexpected(j, "a member name", where);
		/* Keys we know are short; a longer one, cut, matches none. */
		snprintf(key, sizeof(key), "%s", j->text);
		err = json_next(j);
		if (err)
			return err;
		if (j->token != JSON_COLON)
			return json_unexpected(j, "':'", where);
		err = json_next(j);
		if (!err)
			err = member(j, key, ctx);
		if (err)
			return err;
		if (j->token == JSON_OBJECT_END)
			return json_next(j);
		if (j->token != JSON_COMMA)
			return json_unexpected(j, "',' or '}'", where);
		err = json_next(j);
		if (err)
			return err;
	}
}

static int json_array(struct json_parser *j, const char *where, json_element_fn element, void *ctx)
{
	int err;

	if (j->token != JSON_ARRAY_BEGIN)
		return json_unexpected(j, "an array", where);
	err = json_next(j);
	if (err)
		return err;
	if (j->token == JSON_ARRAY_END)
		return json_next(j);
	for (size_t i = 0;; i++) {
		err = element(j, i, ctx);
		if (err)
			return err;
		if (j->token == JSON_ARRAY_END)
			return json_next(j);
		if (j->token != JSON_COMMA)
			return json_unexpected(j, "',' or ']'", where);
		err = json_next(j);
		if (err)
			return err;
	}
}

static int json_skip(struct json_parser *j, int depth);

static int skip_member(struct json_parser *j, const char *key, void *ctx)
{
	return json_skip(j, *(int *)ctx);
}

static int skip_element(struct json_parser *j, size_t index, void *ctx)
{
	return json_skip(j, *(int *)ctx);
}

/* Skips a value we do not use; nesting is bounded so input cannot exhaust
 * the stack. */
static int json_skip(struct json_parser *j, int depth)
{
	int inner = depth + 1;

	switch (j->token) {
	case JSON_OBJECT_BEGIN:
	case JSON_ARRAY_BEGIN:
		if (depth >= MAX_SKIP_DEPTH)
			return json_error(j, "values nested deeper than %d", MAX_SKIP_DEPTH);
		if (j->token == JSON_OBJECT_BEGIN)
			return json_object(j, "an object", skip_member, &inner);
		return json_array(j, "an array", skip_element, &inner);
	case JSON_STRING:
	case JSON_NUMBER:
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		return json_next(j);
	default:
		return json_error(j, "expected a value, found %s", token_names[j->token]);
	}
}

/* Takes a string value into *out, replacing what was there. */
static int json_take_string(struct json_parser *j, const char *what, char **out)
{
	char *copy;

	if (j->token != JSON_STRING)
		return json_error(j, "%s must be a string", what);
	copy = strdup(j->text);
	if (!copy)
		return -ENOMEM;
	free(*out);
	*out = copy;
	return json_next(j);
}

static int json_take_number(struct json_parser *j, const char *what, double *out)
{
	if (j->token != JSON_NUMBER)
		return json_error(j, "%s must be a number", what);
	*out = j->number;
	return json_next(j);
}

static int json_take_index(struct json_parser *j, const char *what, uint32_t *out)
{
	if (j->token != JSON_NUMBER || j->number < 0 || j->number >= UINT32_MAX ||
	    j->number != floor(j->number))
		return json_error(j, "%s must be a whole number from 0 to %u", what,
				  UINT32_MAX - 1);
	*out = j->number;
	return json_next(j);
}

static int frame_member(struct json_parser *j, const char *key, void *ctx)
{
	struct raw_frame *f = ctx;
	uint32_t line;
	int err;

	if (!strcmp(key, "name"))
		return json_take_string(j, "a frame's \"name\"", &f->name);
	if (!strcmp(key, "file") && j->token != JSON_NULL)
		return json_take_string(j, "a frame's \"file\"", &f->file);
	if (!strcmp(key, "line") && j->token != JSON_NULL) {
		err = json_take_index(j, "a frame's \"line\"", &line);
		f->line = line;
		return err;
	}
	return json_skip(j, 0);
}

static int frame_element(struct json_parser *j, size_t index, void *ctx)
{
	struct raw_frame f = {0};
	int err = json_object(j, "a frame", frame_member, &f);

	if (!err && !f.name)
		err = json_error(j, "frame %zu has no \"name\"", index);
	if (!err &&
	    array__grow((void **)&j->frames, &j->cap_frames, j->nr_frames + 1, sizeof(*j->frames)))
		err = -ENOMEM;
	if (err) {
		free(f.name);
		free(f.file);
		return err;
	}
	j->frames[j->nr_frames++] = f;
	return 0;
}

static int shared_member(struct json_parser *j, const char *key, void *ctx)
{
	if (strcmp(key, "frames"))
		return json_skip(j, 0);
	if (j->has_frames)
		return json_error(j, "more than one \"frames\" list");
	j->has_frames = true;
	return json_array(j, "\"shared.frames\"", frame_element, NULL);
}

static int index_element(struct json_parser *j, size_t index, void *ctx)
{
	size_t *depth = ctx;

	if (array__grow((void **)&j->stack, &j->cap_stack, *depth + 1, sizeof(*j->stack)))
		return -ENOMEM;
	return json_take_index(j, "a frame index", &j->stack[(*depth)++]);
}

static int sample_element(struct json_parser *j, size_t index, void *ctx)
{
	struct raw_profile *rp = &j->current;
	size_t depth = 0;
	int64_t id;
	int err;

	err = json_array(j, "a sample", index_element, &depth);
	if (err)
		return err;
	id = profile__intern_stack(j->raw, j->stack, depth);
	if (id < 0)
		return id;
	if (array__grow((void **)&rp->samples, &rp->cap_samples, rp->nr_samples + 1,
			sizeof(*rp->samples)))
		return -ENOMEM;
	rp->samples[rp->nr_samples++] = id;
	return 0;
}

static int weight_element(struct json_parser *j, size_t index, void *ctx)
{
	struct raw_profile *rp = &j->current;

	if (array__grow((void **)&rp->weights, &rp->cap_weights, rp->nr_weights + 1,
			sizeof(*rp->weights)))
		return -ENOMEM;
	return json_take_number(j, "a weight", &rp->weights[rp->nr_weights++]);
}

struct event_fields {
	struct raw_event event;
	bool has_type, has_frame, has_at;
};

static int event_member(struct json_parser *j, const char *key, void *ctx)
{
	struct event_fields *e = ctx;

	if (!strcmp(key, "type")) {
		if (j->token != JSON_STRING || (strcmp(j->text, "O") && strcmp(j->text, "C")))
			return json_error(j, "an event's \"type\" must be \"O\" or \"C\"");
		e->event.open = j->text[0] == 'O';
		e->has_type = true;
		return json_next(j);
	}
	if (!strcmp(key, "frame")) {
		e->has_frame = true;
		return json_take_index(j, "an event's \"frame\"", &e->event.frame);
	}
	if (!strcmp(key, "at")) {
		e->has_at = true;
		return json_take_number(j, "an event's \"at\"", &e->event.at);
	}
	return json_skip(j, 0);
}

static int event_element(struct json_parser *j, size_t index, void *ctx)
{
	struct raw_profile *rp = &j->current;
	struct event_fields e = {0};
	int err = json_object(j, "an event", event_member, &e);

	if (err)
		return err;
	if (!e.has_type || !e.has_frame || !e.has_at)
		return json_error(j, "event %zu needs \"type\", \"frame\" and \"at\"", index);
	if (array__grow((void **)&rp->events, &rp->cap_events, rp->nr_events + 1,
			sizeof(*rp->events)))
		return -ENOMEM;
	rp->events[rp->nr_events++] = e.event;
	return 0;
}

static int unit_scale(const char *unit, double *scale, enum unit_class *unit_class)
{
	static const struct {
		const char *name;
		double scale;
		enum unit_class unit_class;
	} units[] = {
	    {"none", 1, UNIT_CLASS_COUNT},	    {"bytes", 1, UNIT_CLASS_COUNT},
	    {"nanoseconds", 1, UNIT_CLASS_TIME},    {"microseconds", 1e3, UNIT_CLASS_TIME},
	    {"milliseconds", 1e6, UNIT_CLASS_TIME}, {"seconds", 1e9, UNIT_CLASS_TIME},
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(unit, units[i].name)) {
			*scale = units[i].scale;
			*unit_class = units[i].unit_class;
			return 0;
		}
	}
	return -EINVAL;
}

static int profile_member(struct json_parser *j, const char *key, void *ctx)
{
	struct raw_profile *rp = &j->current;

	if (!strcmp(key, "type")) {
		if (j->token == JSON_STRING && !strcmp(j->text, "sampled"))
			rp->type = TYPE_SAMPLED;
		else if (j->token == JSON_STRING && !strcmp(j->text, "evented"))
			rp->type = TYPE_EVENTED;
		else
			return json_error(j, "a profile's \"type\" must be sampled or evented");
		return json_next(j);
	}
	if (!strcmp(key, "name") && j->token == JSON_STRING)
		return json_take_string(j, "a profile's \"name\"", &rp->name);
	if (!strcmp(key, "unit")) {
		if (j->token != JSON_STRING || unit_scale(j->text, &rp->scale, &rp->unit_class))
			return json_error(j, "unknown \"unit\" (expected none, bytes, nanoseconds, "
					     "microseconds, milliseconds or seconds)");
		return json_next(j);
	}
	if (!strcmp(key, "startValue")) {
		rp->has_start = true;
		return json_take_number(j, "\"startValue\"", &rp->start);
	}
	if (!strcmp(key, "endValue")) {
		rp->has_end = true;
		return json_take_number(j, "\"endValue\"", &rp->end);
	}
	if (!strcmp(key, "samples")) {
		rp->nr_samples = 0;
		return json_array(j, "\"samples\"", sample_element, NULL);
	}
	if (!strcmp(key, "weights")) {
		rp->nr_weights = 0;
		rp->has_weights = true;
		return json_array(j, "\"weights\"", weight_element, NULL);
	}
	if (!strcmp(key, "events")) {
		rp->nr_events = 0;
		return json_array(j, "\"events\"", event_element, NULL);
	}
	return json_skip(j, 0);
}

static int scale_value(struct json_parser *j, double value, double scale, int64_t *out)
{
	double scaled = value * scale;

	*out = 0; /* callers read it on every path; keeps -O2 warnings quiet */
	if (!isfinite(scaled) || fabs(scaled) > MAX_SCALED)
		return json_error(j, "time or weight %g out of range", value);
	*out = llround(scaled);
	return 0;
}

/* Where one span of a profile goes: a timeline entry, or straight onto the
 * weight of its stack. */
struct span_target {
	bool timeline;
	bool gpu;
	uint32_t thread, device, stream;
};

static int add_span(struct json_parser *j, const struct span_target *target, uint32_t stack,
		    int64_t time, uint64_t weight)
{
	struct timeline_entry *e;

	if (!weight || !j->raw->stacks[stack].depth)
		return 0;
	if (weight > UINT64_MAX - j->total)
		return json_error(j, "weights add up to more than 2^64");
	j->total += weight;
	if (!target->timeline) {
		profile__add_weight(j->raw, stack, weight);
		return 0;
	}
	if (array__grow((void **)&j->timeline, &j->cap_timeline, j->nr_timeline + 1,
			sizeof(*j->timeline)))
		return -ENOMEM;
	e = &j->timeline[j->nr_timeline++];
	*e = (struct timeline_entry){.time = time,
				     .weight = weight,
				     .stack = stack,
				     .thread = target->thread,
				     .device = target->device,
				     .stream = target->stream,
				     .gpu = target->gpu};
	return 0;
}

/* A profile llmprof wrote for a thread is named "NAME (pid P, tid T)", one
 * for a GPU stream "GPU D stream S". */
static int span_target_for(struct json_parser *j, const struct raw_profile *rp,
			   struct span_target *target)
{
	const char *name = rp->name ? rp->name : "";
	const char *paren = strrchr(name, '(');
	unsigned int pid = 0, tid = j->nr_profiles, a, b;
	char *thread_name = NULL;
	int64_t thread;
	int n = -1;

	memset(target, 0, sizeof(*target));
	if (!j->options->keep_timeline || rp->unit_class != UNIT_CLASS_TIME)
		return 0;
	target->timeline = true;
	if (rp->type == TYPE_EVENTED && sscanf(name, "GPU %u stream %u%n", &a, &b, &n) == 2 &&
	    n == (int)strlen(name)) {
		target->gpu = true;
		target->device = a;
		target->stream = b;
		return 0;
	}
	if (paren && paren > name && paren[-1] == ' ' &&
	    sscanf(paren, "(pid %u, tid %u)%n", &a, &b, &n) == 2 && n == (int)strlen(paren)) {
		pid = a;
		tid = b;
		thread_name = strndup(name, paren - 1 - name);
		if (!thread_name)
			return -ENOMEM;
	}
	thread = profile__add_thread(j->profile, pid, tid, thread_name ? thread_name : name);
	free(thread_name);
	if (thread < 0)
		return thread;
	target->thread = thread;
	return 0;
}

static int finish_sampled(struct json_parser *j, struct raw_profile *rp,
			  const struct span_target *target, double *end)
{
	double cursor = rp->has_start ? rp->start : 0;
	int err;

	if (rp->has_weights && rp->nr_weights != rp->nr_samples)
		return json_error(j, "profile %zu has %zu samples but %zu weights", j->nr_profiles,
				  rp->nr_samples, rp->nr_weights);
	for (size_t i = 0; i < rp->nr_samples; i++) {
		double weight = rp->has_weights ? rp->weights[i] : 1;
		int64_t from, to;

		if (!(weight >= 0))
			return json_error(j, "profile %zu: weight %zu is negative", j->nr_profiles,
					  i);
		/* Round positions, not weights, so rounding does not add up. */
		err = scale_value(j, cursor, rp->scale, &from);
		cursor += weight;
		if (!err)
			err = scale_value(j, cursor, rp->scale, &to);
		/* Counts are samples already; in time units each entry is one. */
		if (!err && j->raw->stacks[rp->samples[i]].depth)
			j->profile->samples_taken +=
			    rp->unit_class == UNIT_CLASS_COUNT ? (uint64_t)(to - from) : 1;
		if (!err)
			err = add_span(j, target, rp->samples[i], from, to - from);
		if (err)
			return err;
	}
	*end = cursor;
	return 0;
}

static int finish_evented(struct json_parser *j, struct raw_profile *rp,
			  const struct span_target *target, double *end)
{
	double at = rp->nr_events ? rp->events[0].at : (rp->has_start ? rp->start : 0);
	size_t depth = 0;
	int64_t from, to;
	int64_t stack;
	int err = 0;

	for (size_t i = 0; i < rp->nr_events; i++) {
		const struct raw_event *e = &rp->events[i];

		if (e->at < at)
			return json_error(j,
					  "profile %zu: event %zu is earlier than the one before",
					  j->nr_profiles, i);
		if (depth && e->at > at) {
			stack = profile__intern_stack(j->raw, j->stack, depth);
			if (stack < 0)
				return stack;
			err = scale_value(j, at, rp->scale, &from);
			if (!err)
				err = scale_value(j, e->at, rp->scale, &to);
			if (!err)
				err = add_span(j, target, stack, from, to - from);
			if (err)
				return err;
		}
		at = e->at;
		if (e->open) {
			if (array__grow((void **)&j->stack, &j->cap_stack, depth + 1,
					sizeof(*j->stack)))
				return -ENOMEM;
			j->stack[depth++] = e->frame;
		} else if (!depth || j->stack[depth - 1] != e->frame) {
			return json_error(j,
					  "profile %zu: event %zu closes frame %u, not the "
					  "innermost open frame",
					  j->nr_profiles, i, e->frame);
		} else {
			depth--;
		}
	}
	/* Frames still open at the end run to the end of the profile. */
	if (depth && rp->has_end && rp->end > at) {
		stack = profile__intern_stack(j->raw, j->stack, depth);
		if (stack < 0)
			return stack;
		err = scale_value(j, at, rp->scale, &from);
		if (!err)
			err = scale_value(j, rp->end, rp->scale, &to);
		if (!err)
			err = add_span(j, target, stack, from, to - from);
		at = rp->end;
	}
	*end = at;
	return err;
}

static int finish_profile(struct json_parser *j)
{
	struct raw_profile *rp = &j->current;
	struct span_target target;
	int64_t start, stop;
	double end = 0;
	int err;

	if (rp->type == TYPE_UNSET)
		return json_error(j, "profile %zu has no \"type\"", j->nr_profiles);
	if (rp->unit_class == UNIT_CLASS_UNSET) {
		rp->unit_class = UNIT_CLASS_COUNT;
		rp->scale = 1;
	}
	if (j->unit_class != UNIT_CLASS_UNSET && j->unit_class != rp->unit_class)
		return json_error(j, "profile %zu: profiles mix units of time with counts",
				  j->nr_profiles);
	j->unit_class = rp->unit_class;
	err = span_target_for(j, rp, &target);
	if (err)
		return err;
	if (rp->type == TYPE_SAMPLED)
		err = finish_sampled(j, rp, &target, &end);
	else
		err = finish_evented(j, rp, &target, &end);
	if (err)
		return err;
	if (rp->has_end)
		end = rp->end;
	err = scale_value(j, rp->has_start ? rp->start : 0, rp->scale, &start);
	if (!err)
		err = scale_value(j, end, rp->scale, &stop);
	if (err)
		return err;
	if (rp->unit_class == UNIT_CLASS_TIME) {
		if (stop > start && (uint64_t)(stop - start) > j->profile->duration_ns)
			j->profile->duration_ns = stop - start;
		if (!j->has_origin || start < j->origin)
			j->origin = start;
		j->has_origin = true;
	}
	return 0;
}

static int profile_element(struct json_parser *j, size_t index, void *ctx)
{
	struct raw_profile *rp = &j->current;
	int err;

	free(rp->name);
	rp->name = NULL;
	rp->type = TYPE_UNSET;
	rp->unit_class = UNIT_CLASS_UNSET;
	rp->scale = 1;
	rp->has_start = rp->has_end = rp->has_weights = false;
	rp->nr_samples = rp->nr_weights = rp->nr_events = 0;
	err = json_object(j, "a profile", profile_member, NULL);
	if (!err)
		err = finish_profile(j);
	j->nr_profiles++;
	return err;
}

static int document_member(struct json_parser *j, const char *key, void *ctx)
{
	if (!strcmp(key, "shared"))
		return json_object(j, "\"shared\"", shared_member, NULL);
	if (!strcmp(key, "profiles")) {
		if (j->has_profiles)
			return json_error(j, "more than one \"profiles\" list");
		j->has_profiles = true;
		return json_array(j, "\"profiles\"", profile_element, NULL);
	}
	if (!strcmp(key, "name") && j->token == JSON_STRING)
		return json_take_string(j, "\"name\"", &j->profile->name);
	if (!strcmp(key, "exporter") && j->token == JSON_STRING)
		return json_take_string(j, "\"exporter\"", &j->profile->exporter);
	return json_skip(j, 0);
}

static enum gpu_activity_kind gpu_kind(const char *name)
{
	if (!strncasecmp(name, "memcpy", 6))
		return GPU_MEMCPY;
	if (!strncasecmp(name, "memset", 6))
		return GPU_MEMSET;
	return GPU_KERNEL;
}

/* Turns the raw frames, stacks and timeline into the profile's own, now
 * that every frame is known. */
static int json_resolve(struct json_parser *j)
{
	struct profile *p = j->profile;
	uint32_t *frame_map = NULL, *stack_map = NULL;
	int err = -ENOMEM;

	j->token_line = 0;
	frame_map = malloc((j->nr_frames ? j->nr_frames : 1) * sizeof(*frame_map));
	stack_map = malloc((j->raw->nr_stacks ? j->raw->nr_stacks : 1) * sizeof(*stack_map));
	if (!frame_map || !stack_map)
		goto cleanup;
	for (size_t i = 0; i < j->nr_frames; i++) {
		const struct raw_frame *f = &j->frames[i];
		int64_t id = intern_folded_frame(p, f->name, strlen(f->name), f->file, f->line);

		if (id < 0)
			goto cleanup;
		frame_map[i] = id;
	}
	for (size_t s = 0; s < j->raw->nr_stacks; s++) {
		const struct stack *raw = &j->raw->stacks[s];
		int64_t id;

		if (array__grow((void **)&j->stack, &j->cap_stack, raw->depth + 1,
				sizeof(*j->stack)))
			goto cleanup;
		for (uint32_t d = 0; d < raw->depth; d++) {
			if (raw->frames[d] >= j->nr_frames) {
				err = json_error(j,
						 "a sample or event refers to frame %u, but "
						 "\"shared.frames\" has %zu",
						 raw->frames[d], j->nr_frames);
				goto cleanup;
			}
			j->stack[d] = frame_map[raw->frames[d]];
		}
		id = profile__intern_stack(p, j->stack, raw->depth);
		if (id < 0)
			goto cleanup;
		stack_map[s] = id;
		if (raw->weight)
			profile__add_weight(p, id, raw->weight);
	}
	for (size_t i = 0; i < j->nr_timeline; i++) {
		const struct timeline_entry *e = &j->timeline[i];
		uint32_t stack = stack_map[e->stack];
		const struct stack *st = &p->stacks[stack];
		uint64_t time = e->time > j->origin ? e->time - j->origin : 0;

		if (e->gpu && st->depth == 1 && p->frames[st->frames[0]].kind == FRAME_GPU) {
			struct gpu_activity activity = {
			    .start_ns = time,
			    .end_ns = time + e->weight,
			    .device = e->device,
			    .stream = e->stream,
			    .kind = gpu_kind(p->frames[st->frames[0]].name),
			    .frame = st->frames[0],
			    .stack = stack,
			};

			if (profile__add_gpu(p, &activity))
				goto cleanup;
			profile__add_weight(p, stack, e->weight);
		} else if (e->gpu) {
			profile__add_weight(p, stack, e->weight);
		} else if (profile__add_sample(p, e->thread, stack, time, e->weight)) {
			goto cleanup;
		}
	}
	/* qsort() must not see the NULL array of a profile without samples. */
	if (p->nr_samples)
		profile__sort_samples(p);
	p->unit = j->unit_class == UNIT_CLASS_TIME ? UNIT_NANOSECONDS : UNIT_SAMPLES;
	err = 0;
cleanup:
	free(frame_map);
	free(stack_map);
	return err;
}

static int speedscope_parse(struct input *in, const struct profile_read_options *options,
			    struct profile *p, struct profile_read_result *result)
{
	struct json_parser j = {.in = in, .profile = p, .options = options, .result = result};
	int err = -ENOMEM;

	j.raw = profile__new();
	/* Never NULL, even for an empty first sample: the stack is memcpy'd. */
	if (!j.raw || array__grow((void **)&j.stack, &j.cap_stack, 1, sizeof(*j.stack)))
		goto cleanup;
	err = json_next(&j);
	if (!err)
		err = json_object(&j, "the speedscope file", document_member, NULL);
	if (!err && j.token != JSON_END)
		err = json_error(&j, "unexpected %s after the JSON document", token_names[j.token]);
	if (!err && !j.has_profiles) {
		j.token_line = 0;
		err = json_error(&j, "no \"profiles\": not a speedscope file");
	}
	if (!err)
		err = json_resolve(&j);
	result->lines = in->line;
cleanup:
	if (err && err != -EINVAL && err != -ENOMEM && !result->message[0])
		set_message(result, j.token_line, "read error: %s", strerror(-err));
	for (size_t i = 0; i < j.nr_frames; i++) {
		free(j.frames[i].name);
		free(j.frames[i].file);
	}
	free(j.frames);
	free(j.text);
	free(j.stack);
	free(j.timeline);
	free(j.current.name);
	free(j.current.samples);
	free(j.current.weights);
	free(j.current.events);
	profile__free(j.raw);
	return err;
}

/* ---- detection -------------------------------------------------------- */

/* perf_script_reader.c takes its lines through this. */
static int perf_script_line(void *ctx, char **line, size_t *len)
{
	struct folded_parser *fp = ctx;
	int err = input_read_line(fp->in, &fp->line, len, &fp->line_cap, &fp->too_long);

	*line = fp->line;
	return err > 0 && fp->too_long ? -EINVAL : err;
}

static int read_input(struct input *in, const struct profile_read_options *options,
		      struct profile **out, struct profile_read_result *result)
{
	static const struct profile_read_options defaults;
	struct profile *p;
	bool json = false;
	int err;

	memset(result, 0, sizeof(*result));
	if (!options)
		options = &defaults;
	p = profile__new();
	if (!p) {
		set_message(result, 0, "out of memory");
		return -ENOMEM;
	}
	in->line = 1;
	/* Windows editors start text with a byte-order mark; it is not part
	 * of the first frame. */
	if (input_fill(in) && in->len - in->pos >= 3 &&
	    !memcmp(in->data + in->pos, "\xef\xbb\xbf", 3))
		in->pos += 3;
	/* JSON starts with '{' after optional white space; folded stacks
	 * never do.  Look within what is buffered, consuming nothing. */
	for (size_t i = in->pos; i < in->len; i++) {
		unsigned char c = in->data[i];

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			continue;
		json = c == '{';
		if (c == '[') {
			set_message(result, 0,
				    "a JSON array (such as a Chrome trace) is not a "
				    "supported profile format");
			profile__free(p);
			return -EINVAL;
		}
		break;
	}
	result->format = json ? PROFILE_FORMAT_SPEEDSCOPE : PROFILE_FORMAT_FOLDED;
	if (!json && perf_script_reader__detect((const char *)in->data + in->pos, in->len - in->pos)) {
		struct folded_parser lines = {.in = in};

		result->format = PROFILE_FORMAT_PERF_SCRIPT;
		err = perf_script_reader__read(perf_script_line, &lines, p, result->message,
					       sizeof(result->message), &result->line);
		free(lines.line);
	} else if (json)
		err = speedscope_parse(in, options, p, result);
	else
		err = folded_parse(in, options, p, result);
	if (!err && in->error)
		err = in->error;
	if (err) {
		if (err == -ENOMEM)
			set_message(result, 0, "out of memory");
		else if (!result->message[0])
			set_message(result, 0, "read error: %s", strerror(-err));
		profile__free(p);
		return err;
	}
	*out = p;
	return 0;
}

int profile_reader__read_stream(FILE *stream, const struct profile_read_options *options,
				struct profile **out, struct profile_read_result *result)
{
	struct input in = {.stream = stream};
	int err;

	in.block = malloc(READ_BLOCK_SIZE);
	if (!in.block) {
		memset(result, 0, sizeof(*result));
		set_message(result, 0, "out of memory");
		return -ENOMEM;
	}
	err = read_input(&in, options, out, result);
	free(in.block);
	return err;
}

int profile_reader__read_buffer(const void *data, size_t size,
				const struct profile_read_options *options, struct profile **out,
				struct profile_read_result *result)
{
	struct input in = {.data = data, .len = size};

	return read_input(&in, options, out, result);
}

int profile_reader__read_file(const char *path, const struct profile_read_options *options,
			      struct profile **out, struct profile_read_result *result)
{
	FILE *stream = fopen(path, "r");
	const char *base;
	int err;

	if (!stream) {
		err = -errno;
		memset(result, 0, sizeof(*result));
		set_message(result, 0, "%s", strerror(-err));
		return err;
	}
	err = profile_reader__read_stream(stream, options, out, result);
	fclose(stream);
	if (err)
		return err;
	/* Folded stacks carry no name; the file's is the best there is. */
	if (!(*out)->name) {
		base = strrchr(path, '/');
		(*out)->name = strdup(base ? base + 1 : path);
		if (!(*out)->name) {
			profile__free(*out);
			*out = NULL;
			set_message(result, 0, "out of memory");
			return -ENOMEM;
		}
	}
	return 0;
}
