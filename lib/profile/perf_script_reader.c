// SPDX-License-Identifier: GPL-2.0
/* `perf script` output read into stacks; see perf_script_reader.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "profile/perf_script_reader.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* "1193.651204:" */
static bool is_time(const char *s, size_t len)
{
	size_t i = 0, digits;

	while (i < len && is_digit(s[i]))
		i++;
	if (!i || i >= len || s[i++] != '.')
		return false;
	digits = i;
	while (i < len && is_digit(s[i]))
		i++;
	return i > digits && i + 1 == len && s[i] == ':';
}

/* The header's fields: where comm ends, the time, and what follows the
 * event name (the sample's own frame when there is no call chain). */
struct header {
	size_t comm_len;
	unsigned long long time_ns;
	const char *rest;
};

/*
 * "comm pid[/tid] [cpu] time: [period] event: [rest]"; comm may hold
 * spaces, so the fields are found from the time, the first token of the
 * form digits.digits:.  Returns false when the line is not a header.
 */
static bool parse_header(const char *line, struct header *h)
{
	const char *tokens[64];
	size_t lens[64], n = 0, t;
	const char *s = line;
	bool found = false;

	if (!*line || is_space(*line))
		return false;
	while (*s && n < 64) {
		while (is_space(*s))
			s++;
		if (!*s)
			break;
		tokens[n] = s;
		while (*s && !is_space(*s))
			s++;
		lens[n] = s - tokens[n];
		if ((found = is_time(tokens[n], lens[n])))
			break;
		n++;
	}
	if (!found)
		return false;
	t = n;
	/* The pid is right before the time, or before a "[cpu]". */
	if (t >= 1 && tokens[t - 1][0] == '[')
		t--;
	if (t < 2 || !is_digit(tokens[t - 1][0]))
		return false;
	h->comm_len = tokens[t - 1] - line;
	while (h->comm_len && is_space(line[h->comm_len - 1]))
		h->comm_len--;
	{
		char *end;
		unsigned long long seconds = strtoull(tokens[n], &end, 10);
		unsigned long long fraction = strtoull(end + 1, NULL, 10);
		size_t places = strchr(end, ':') - end - 1;

		while (places < 9)
			fraction *= 10, places++;
		h->time_ns = seconds * 1000000000ULL + fraction;
	}
	/* Past the period, if any, and the event name, which ends in ':'. */
	s = tokens[n] + lens[n];
	for (int field = 0; field < 2; field++) {
		const char *start;

		while (is_space(*s))
			s++;
		start = s;
		while (*s && !is_space(*s))
			s++;
		if (s > start && s[-1] == ':')
			break;
	}
	while (is_space(*s))
		s++;
	h->rest = s;
	return true;
}

/* A frame line, "addr symbol+0xoff (dso)", made into its folded name and
 * kind; name is written in place.  Returns false when it is not one. */
static bool parse_frame(char *line, char **name, enum frame_kind *kind)
{
	char *s = line, *addr, *sym, *dso, *end, *plus;
	size_t len;

	while (is_space(*s))
		s++;
	addr = s;
	while (is_hex(*s))
		s++;
	if (s == addr || !is_space(*s))
		return false;
	*s++ = '\0';
	while (is_space(*s))
		s++;
	sym = s;
	len = strlen(sym);
	while (len && is_space(sym[len - 1]))
		sym[--len] = '\0';
	/* The dso is the last parenthesised word; a symbol may hold
	 * parentheses of its own (C++ signatures). */
	if (!len || sym[len - 1] != ')' || !(dso = strrchr(sym, '(')))
		return false;
	sym[len - 1] = '\0';
	*dso++ = '\0';
	end = dso - 1;
	while (end > sym && is_space(end[-1]))
		*--end = '\0';
	*kind = FRAME_NATIVE;
	if (!strncmp(dso, "[kernel", 7) || !strncmp(dso, "[guest.kernel", 13) ||
	    (strlen(addr) == 16 && !strncmp(addr, "ffff", 4)))
		*kind = FRAME_KERNEL;
	else if (strstr(dso, "/perf-") && strstr(dso, ".map"))
		*kind = FRAME_JIT;
	if (!*sym || !strcmp(sym, "[unknown]")) {
		const char *base = strrchr(dso, '/');

		/* llmprof's own name for an address with no symbol. */
		base = base ? base + 1 : dso;
		len = strlen(base) + strlen(addr) + 6;
		*name = malloc(len);
		if (*name)
			snprintf(*name, len, "[%s+0x%s]", base, addr);
		if (*kind == FRAME_NATIVE)
			*kind = FRAME_UNKNOWN;
		return true;
	}
	/* perf's "+0x1b" offset; the function is the same at any offset. */
	plus = strrchr(sym, '+');
	if (plus && plus[1] == '0' && plus[2] == 'x')
		*plus = '\0';
	*name = strdup(sym);
	return true;
}

bool perf_script_reader__detect(const char *data, size_t len)
{
	const char *end = data + len, *line = data, *next;
	char buf[1024];
	struct header h;

	/* The first line that is not a comment or blank. */
	for (;;) {
		next = memchr(line, '\n', end - line);
		if (!next)
			return false;
		if (line < next && *line != '#' && *line != '\n' && *line != '\r')
			break;
		line = next + 1;
	}
	if ((size_t)(next - line) >= sizeof(buf))
		return false;
	memcpy(buf, line, next - line);
	buf[next - line] = '\0';
	if (!parse_header(buf, &h))
		return false;
	/* The call chain under it, indented, or the sample's frame on the
	 * line; the reader says what is wrong with either. */
	line = next + 1;
	return (line < end && is_space(*line)) || h.rest[0] != '\0';
}

struct record {
	struct profile *profile;
	uint32_t *frames; /* leaf first, as perf writes them; [0] is comm */
	size_t depth, cap;
	bool open;
};

static int frame_id(struct profile *p, const char *name, enum frame_kind kind)
{
	return profile__intern_frame(p, name && *name ? name : "[unknown]", NULL, 0, kind);
}

/* Adds the open record as one sample: comm, then its frames outermost
 * first. */
static int record_close(struct record *r)
{
	int64_t id;

	if (!r->open)
		return 0;
	r->open = false;
	/* frames[1..] are leaf first: reverse them behind the root. */
	for (size_t i = 1, j = r->depth - 1; i < j; i++, j--) {
		uint32_t t = r->frames[i];

		r->frames[i] = r->frames[j];
		r->frames[j] = t;
	}
	id = profile__intern_stack(r->profile, r->frames, r->depth);
	if (id < 0)
		return id;
	r->profile->samples_taken++;
	profile__add_weight(r->profile, id, 1);
	return 0;
}

static int record_push(struct record *r, int64_t id)
{
	if (id < 0)
		return id;
	if (array__grow((void **)&r->frames, &r->cap, r->depth + 1, sizeof(*r->frames)))
		return -ENOMEM;
	r->frames[r->depth++] = id;
	return 0;
}

/* Pushes the frame on line; -EINVAL when it is not one. */
static int push_frame(struct record *r, char *line)
{
	enum frame_kind kind;
	char *name = NULL;
	int err;

	if (!parse_frame(line, &name, &kind))
		return -EINVAL;
	if (!name)
		return -ENOMEM;
	err = record_push(r, frame_id(r->profile, name, kind));
	free(name);
	return err;
}

int perf_script_reader__read(perf_script_next_line next_line, void *ctx, struct profile *p,
			     char *message, size_t size, unsigned long *line_number)
{
	struct record r = { .profile = p };
	unsigned long long first = 0, last = 0;
	char *line;
	size_t len;
	int err;

	*line_number = 0;
	for (;;) {
		struct header h;

		err = next_line(ctx, &line, &len);
		if (err <= 0)
			break;
		++*line_number;
		while (len && (line[len - 1] == '\r' || is_space(line[len - 1])))
			line[--len] = '\0';
		if (!len) {
			err = record_close(&r);
		} else if (line[0] == '#' && !r.open) {
			continue;
		} else if (is_space(line[0])) {
			err = r.open ? push_frame(&r, line) : -EINVAL;
			if (err == -EINVAL)
				snprintf(message, size, "%s",
					 r.open ? "not a frame (address, symbol, (dso))"
						: "a frame with no record header above it");
		} else if (parse_header(line, &h)) {
			err = record_close(&r);
			if (err)
				break;
			if (!first || h.time_ns < first)
				first = h.time_ns;
			if (h.time_ns > last)
				last = h.time_ns;
			line[h.comm_len] = '\0';
			r.depth = 0;
			r.open = true;
			err = record_push(&r, frame_id(p, line, FRAME_PROCESS));
			/* No call chain: the sample's frame is on the line. */
			if (!err && *h.rest) {
				char *rest = line + (h.rest - line);

				err = push_frame(&r, rest);
				if (err == -EINVAL)
					err = 0;
			}
		} else {
			snprintf(message, size, "%s",
				 "not a perf script record header (comm pid time: event:)");
			err = -EINVAL;
		}
		if (err)
			break;
	}
	if (!err)
		err = record_close(&r);
	if (err == -EINVAL && !message[0])
		snprintf(message, size, "%s", "line too long");
	free(r.frames);
	if (err)
		return err;
	*line_number = 0;
	p->unit = UNIT_SAMPLES;
	p->duration_ns = last - first;
	return 0;
}
