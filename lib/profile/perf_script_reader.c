// SPDX-License-Identifier: GPL-2.0
/* `perf script` output read into stacks; see perf_script_reader.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "profile/perf_script_reader.h"
#include "profile/reader_input.h"

#define MAX_HEADER_TOKENS 64

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

static bool all_of(const char *s, size_t len, bool (*test)(char))
{
	for (size_t i = 0; i < len; i++)
		if (!test(s[i]))
			return false;
	return len > 0;
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

/* "1234" or "1234/1235" */
static bool is_pid(const char *s, size_t len)
{
	const char *slash = memchr(s, '/', len);

	if (!slash)
		return all_of(s, len, is_digit);
	return all_of(s, slash - s, is_digit) && all_of(slash + 1, len - (slash - s) - 1, is_digit);
}

/* "[001]" */
static bool is_cpu(const char *s, size_t len)
{
	return len > 2 && s[0] == '[' && s[len - 1] == ']' && all_of(s + 1, len - 2, is_digit);
}

/* "cpu-clock:", "cycles:u:", "sched:sched_switch:" */
static bool is_event(const char *s, size_t len)
{
	return len > 1 && s[len - 1] == ':' && !is_time(s, len) && s[0] != '[';
}

/* A record header's fields: where comm starts and ends, the time, the
 * period and the event (0 and NULL where the file has none), and what
 * follows them (the sample's frame when there is no call chain). */
struct header {
	size_t comm_start, comm_len;
	bool has_time, has_period;
	unsigned long long time_ns, period;
	const char *event;
	size_t event_len;
	const char *rest;
	bool bare; /* "comm pid" and nothing more: also a folded line */
};

static unsigned long long parse_time(const char *s)
{
	char *end;
	unsigned long long seconds = strtoull(s, &end, 10);
	unsigned long long fraction = strtoull(end + 1, NULL, 10);
	size_t places = strchr(end, ':') - end - 1;

	while (places < 9)
		fraction *= 10, places++;
	while (places > 9)
		fraction /= 10, places--;
	return seconds * 1000000000ULL + fraction;
}

/* The fields after the pid, tokens[i..n): [cpu] [time:] [period] [event:]
 * and the rest.  False when they are not perf's. */
static bool parse_fields(const char **tokens, const size_t *lens, size_t i, size_t n,
			 const char *end, struct header *h)
{
	h->has_time = h->has_period = false;
	h->event = NULL;
	h->event_len = 0;
	if (i < n && is_cpu(tokens[i], lens[i]))
		i++;
	if (i < n && is_time(tokens[i], lens[i])) {
		h->has_time = true;
		h->time_ns = parse_time(tokens[i]);
		i++;
	}
	if (i < n && all_of(tokens[i], lens[i], is_digit) &&
	    (i + 1 == n || is_event(tokens[i + 1], lens[i + 1]))) {
		h->has_period = true;
		h->period = strtoull(tokens[i], NULL, 10);
		i++;
	}
	if (i < n && is_event(tokens[i], lens[i])) {
		h->event = tokens[i];
		h->event_len = lens[i] - 1;
		i++;
	} else if (i < n && !all_of(tokens[i], lens[i], is_hex)) {
		/* Without an event field only the sample's frame may follow. */
		return false;
	}
	h->rest = i < n ? tokens[i] : end;
	return true;
}

/*
 * "comm pid[/tid] [cpu] time: [period] event: [rest]", with only comm and
 * pid sure to be there.  comm may hold spaces and digits, so the pid is the
 * first token after which perf's fields follow.  Returns false when the line
 * is not a header.
 */
static bool parse_header(const char *line, struct header *h)
{
	const char *tokens[MAX_HEADER_TOKENS];
	size_t lens[MAX_HEADER_TOKENS], n = 0;
	const char *s = line;

	while (is_space(*s))
		s++;
	h->comm_start = s - line;
	while (*s && n < MAX_HEADER_TOKENS) {
		while (is_space(*s))
			s++;
		if (!*s)
			break;
		tokens[n] = s;
		while (*s && !is_space(*s))
			s++;
		lens[n] = s - tokens[n];
		n++;
	}
	for (size_t pid = 1; pid < n; pid++) {
		if (!is_pid(tokens[pid], lens[pid]) ||
		    !parse_fields(tokens, lens, pid + 1, n, s, h))
			continue;
		h->comm_len = tokens[pid - 1] + lens[pid - 1] - line - h->comm_start;
		h->bare = pid + 1 == n && !memchr(tokens[pid], '/', lens[pid]);
		return true;
	}
	return false;
}

/* perf's "+0x1b" offset; the function is the same at any offset. */
static void strip_offset(char *sym)
{
	char *plus = strrchr(sym, '+');

	if (plus && plus[1] == '0' && plus[2] == 'x' && plus[3] &&
	    all_of(plus + 3, strlen(plus + 3), is_hex))
		*plus = '\0';
}

/*
 * A demangled name's arguments are cut, "(anonymous namespace)" and Go's
 * "pkg.(*T).Method" aside, so that a function is one frame whatever perf
 * printed of its signature; as stackcollapse-perf.pl names them.
 */
static void strip_arguments(char *sym)
{
	char *open;

	for (open = strchr(sym, '('); open; open = strchr(open + 1, '(')) {
		if (open == sym)
			return;
		if (open[-1] == '.' && strstr(open, ")."))
			return;
		if (!strncmp(open, "(anonymous namespace)", 21))
			continue;
		*open = '\0';
		return;
	}
}

/* JIT names hold quotes (V8's "RegExp:[&<>\"\']"), which flame graph
 * tools drop. */
static void strip_quotes(char *sym)
{
	char *out = sym;

	for (char *in = sym; *in; in++)
		if (*in != '"' && *in != '\'')
			*out++ = *in;
	*out = '\0';
}

static bool is_kernel_dso(const char *dso, size_t len)
{
	return !strncmp(dso, "[kernel", 7) || !strncmp(dso, "[guest.kernel", 13) ||
	       (len >= 7 && !memcmp(dso + len - 7, "vmlinux", 7));
}

/*
 * A frame line, "addr [symbol[+0xoff]] [(dso)]", made into its name (written
 * in place or a static string) and kind.  An address with no symbol is named
 * by its dso in brackets, or "[unknown]", as perf report and
 * stackcollapse-perf.pl name it.  Returns false when it is not a frame.
 */
static bool parse_frame(char *line, bool java, const char **name, enum frame_kind *kind,
			char *scratch, size_t scratch_size)
{
	char *s = line, *addr, *sym, *dso = NULL;
	size_t len, dso_len = 0;

	while (is_space(*s))
		s++;
	addr = s;
	while (is_hex(*s))
		s++;
	if (s == addr || (*s && !is_space(*s)))
		return false;
	while (is_space(*s))
		s++;
	sym = s;
	len = strlen(sym);
	while (len && is_space(sym[len - 1]))
		sym[--len] = '\0';
	/* The dso is the last " (...)"; a symbol may hold parentheses of its
	 * own (C++ signatures, Java's "(I)V"). */
	if (len && sym[len - 1] == ')') {
		for (char *open = sym + len - 1; open >= sym; open--) {
			if (*open != '(' || (open > sym && !is_space(open[-1])))
				continue;
			dso = open + 1;
			dso_len = sym + len - 1 - dso;
			sym[len - 1] = '\0';
			*open = '\0';
			for (char *end = open; end > sym && is_space(end[-1]);)
				*--end = '\0';
			break;
		}
	}
	*kind = FRAME_NATIVE;
	if (dso && !strcmp(dso, "inlined"))
		*kind = FRAME_INLINE;
	else if (dso && is_kernel_dso(dso, dso_len))
		*kind = FRAME_KERNEL;
	else if (dso && strstr(dso, "/perf-") && strstr(dso, ".map"))
		*kind = FRAME_JIT;
	strip_offset(sym);
	if (!*sym || !strcmp(sym, "[unknown]")) {
		const char *base = dso ? strrchr(dso, '/') : NULL;

		base = base ? base + 1 : dso;
		if (!base || !*base || !strcmp(base, "[unknown]")) {
			*name = "[unknown]";
		} else {
			size_t n = strlen(base);

			if (base[0] == '[' && base[n - 1] == ']')
				base++, n -= 2;
			snprintf(scratch, scratch_size, "[%.*s]", (int)n, base);
			*name = scratch;
		}
		if (*kind == FRAME_NATIVE)
			*kind = FRAME_UNKNOWN;
		return true;
	}
	strip_arguments(sym);
	strip_quotes(sym);
	/* Java's "Lpkg/Class;::method" from perf-map-agent, as the JVM
	 * names classes, without the type letter. */
	if (java && sym[0] == 'L' && strchr(sym, '/'))
		sym++;
	*name = *sym ? sym : "[unknown]";
	return true;
}

bool perf_script_reader__detect(const char *data, size_t len)
{
	const char *end = data + len, *line = data, *next;
	char buf[1024];
	struct header h;

	/* perf script --header, and perf report's files, start so. */
	if (len >= 10 && !memcmp(data, "# ========", 10))
		return true;
	/* The first line that is not a comment or blank. */
	for (;;) {
		next = memchr(line, '\n', end - line);
		if (!next)
			next = end;
		if (line < next && *line != '#' && *line != '\r')
			break;
		if (next == end)
			return false;
		line = next + 1;
	}
	if ((size_t)(next - line) >= sizeof(buf))
		return false;
	memcpy(buf, line, next - line);
	buf[next - line] = '\0';
	if (parse_header(buf, &h) && !h.bare)
		return true;
	/* "comm pid" alone reads as a folded line too: perf's has a frame
	 * under it. */
	if (parse_header(buf, &h)) {
		char scratch[64];
		enum frame_kind kind;
		const char *name;

		line = next + 1;
		if (next == end || line >= end)
			return false;
		next = memchr(line, '\n', end - line);
		if (!next || (size_t)(next - line) >= sizeof(buf))
			return false;
		memcpy(buf, line, next - line);
		buf[next - line] = '\0';
		return is_space(buf[0]) &&
		       parse_frame(buf, false, &name, &kind, scratch, sizeof(scratch));
	}
	/* -F ip,sym: indented frames with no header; folded lines are never
	 * indented. */
	{
		char scratch[64];
		enum frame_kind kind;
		const char *name;

		return is_space(buf[0]) &&
		       parse_frame(buf, false, &name, &kind, scratch, sizeof(scratch));
	}
}

struct record {
	struct profile *profile;
	uint32_t *frames;	 /* leaf first, as perf writes them; [0] is comm */
	size_t depth, cap, base; /* base: 1 with a comm frame, else 0 */
	uint64_t weight;
	bool open, chain, skip, java;
};

/* Adds the open record as one sample: comm, then its frames outermost
 * first. */
static int record_close(struct record *r)
{
	int64_t id;

	if (!r->open)
		return 0;
	r->open = false;
	if (r->skip || r->depth == 0)
		return 0;
	/* frames[base..] are leaf first: reverse them behind the root. */
	for (size_t i = r->base, j = r->depth - 1; i < j; i++, j--) {
		uint32_t t = r->frames[i];

		r->frames[i] = r->frames[j];
		r->frames[j] = t;
	}
	id = profile__intern_stack(r->profile, r->frames, r->depth);
	if (id < 0)
		return id;
	r->profile->samples_taken++;
	profile__add_weight(r->profile, id, r->weight);
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

/* Pushes the frame on line: 0, 1 when it is not a frame, or -ENOMEM. */
static int push_frame(struct record *r, char *line)
{
	char scratch[512];
	enum frame_kind kind;
	const char *name;

	if (!parse_frame(line, r->java, &name, &kind, scratch, sizeof(scratch)))
		return 1;
	if (r->skip)
		return 0;
	return record_push(r, profile__intern_frame(r->profile, name, NULL, 0, kind));
}

/* The events met, in order, for the result. */
static void note_event(struct profile_read_result *result, const char *event, size_t len)
{
	const char *s = result->events;
	size_t used = strlen(result->events);

	while (*s) {
		const char *comma = strchr(s, ',');
		size_t n = comma ? (size_t)(comma - s) : strlen(s);

		if (n == len && !memcmp(s, event, len))
			return;
		s += n + (comma ? 2 : 0);
	}
	result->nr_events++;
	if (used + len + 3 < sizeof(result->events))
		snprintf(result->events + used, sizeof(result->events) - used, "%s%.*s",
			 used ? ", " : "", (int)len, event);
}

/* Whether event (not NUL-terminated) is the one asked for: its name, or its
 * name with perf's modifiers (cycles:u for cycles). */
static bool event_matches(const char *wanted, const char *event, size_t len)
{
	size_t n = strlen(wanted);

	return n <= len && !memcmp(wanted, event, n) && (n == len || event[n] == ':');
}

static bool is_clock_event(const char *event)
{
	return event_matches("cpu-clock", event, strlen(event)) ||
	       event_matches("task-clock", event, strlen(event));
}

int perf_script_reader__read(perf_script_next_line next_line, void *ctx,
			     const struct profile_read_options *options, struct profile *p,
			     struct profile_read_result *result)
{
	struct record r = {.profile = p};
	unsigned long long first = 0, last = 0;
	uint64_t records = 0, with_period = 0;
	bool any_time = false, ended = true;
	char *line;
	size_t len;
	int err;

	for (;;) {
		struct header h;

		err = next_line(ctx, &line, &len);
		if (err <= 0)
			break;
		ended = err == 1;
		result->lines++;
		while (len && is_space(line[len - 1]))
			line[--len] = '\0';
		if (!len) {
			err = record_close(&r);
		} else if (line[0] == '#') {
			continue;
		} else if (r.open && r.chain && is_space(line[0])) {
			/* A frame, or what perf prints under one (srcline). */
			err = push_frame(&r, line);
			if (err == 1)
				err = 0;
		} else if (parse_header(line, &h)) {
			err = record_close(&r);
			if (err)
				break;
			r.open = true;
			r.chain = !*h.rest;
			r.depth = r.base = 0;
			r.weight = h.has_period ? h.period : 1;
			r.skip = false;
			if (h.event) {
				note_event(result, h.event, h.event_len);
				if (!result->event_read[0] &&
				    (!options->event ||
				     event_matches(options->event, h.event, h.event_len)))
					snprintf(result->event_read, sizeof(result->event_read),
						 "%.*s", (int)h.event_len, h.event);
				r.skip = strlen(result->event_read) != h.event_len ||
					 memcmp(result->event_read, h.event, h.event_len);
			}
			if (r.skip)
				continue;
			records++;
			with_period += h.has_period;
			if (h.has_time) {
				if (!any_time || h.time_ns < first)
					first = h.time_ns;
				if (!any_time || h.time_ns > last)
					last = h.time_ns;
				any_time = true;
			}
			line[h.comm_start + h.comm_len] = '\0';
			r.java = !strcmp(line + h.comm_start, "java");
			err = record_push(&r, profile__intern_frame(p, line + h.comm_start, NULL, 0,
								    FRAME_PROCESS));
			r.base = 1;
			/* No call chain: the sample's frame is on the line. */
			if (!err && *h.rest) {
				err = push_frame(&r, line + (h.rest - line));
				if (err == 1)
					err = 0;
			}
		} else {
			/* Old perf wrote call chains unindented; -F ip,sym
			 * writes frames with no header above them. */
			if (!r.open) {
				r = (struct record){.profile = p,
						    .frames = r.frames,
						    .cap = r.cap,
						    .open = true,
						    .weight = 1};
				records++;
			}
			r.chain = true;
			err = push_frame(&r, line);
			if (err == 1) {
				err = 0;
				goto malformed;
			}
		}
		if (err)
			break;
		continue;
	malformed:
		if (!result->skipped++)
			reader__set_message(result, result->lines, "%s",
					    "neither a perf script record header (comm pid "
					    "time: event:) nor a frame (address symbol (dso))");
		if (options->strict) {
			err = -EINVAL;
			break;
		}
	}
	/* perf ends every call chain with a blank line: one that whole lines
	 * end without it was cut off (head -n) and may have lost its outer
	 * frames; a file whose last line has no '\n' was edited by hand. */
	if (!err && ended && r.open && r.chain && !r.skip && r.depth > r.base) {
		r.open = false;
		if (!result->skipped++)
			reader__set_message(result, result->lines, "%s",
					    "the last record is cut off (no blank line after it)");
		if (options->strict)
			err = -EINVAL;
	}
	if (!err)
		err = record_close(&r);
	free(r.frames);
	if (err == -EINVAL && !result->message[0])
		reader__set_message(result, result->lines, "line too long or binary");
	if (err)
		return err;
	if (options->event && !result->event_read[0] && result->nr_events) {
		reader__set_message(result, 0, "no event '%s' in the file (it has %s)",
				    options->event, result->events);
		return -EINVAL;
	}
	if (!result->skipped)
		result->line = 0;
	/* cpu-clock and task-clock periods are nanoseconds of CPU time. */
	p->unit = records && with_period == records && is_clock_event(result->event_read)
		      ? UNIT_NANOSECONDS
		      : UNIT_SAMPLES;
	p->duration_ns = last - first;
	return 0;
}
