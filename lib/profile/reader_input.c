// SPDX-License-Identifier: GPL-2.0
/*
 * The profile readers' shared input: whole lines from a buffered stream or
 * buffer, error messages with their line, frames interned from folded text.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "profile/python_frame.h"
#include "profile/reader_input.h"

/*
 * Reads one line without its '\n' into *buf (NUL-terminated).  Returns 1, 0
 * at the end of the input, or -errno: -EFBIG for a line past MAX_LINE_LENGTH
 * and -EILSEQ for a NUL byte, found as soon as they are read, so that
 * /dev/zero or a binary file is refused at once rather than read to its end.
 */
int input__read_line(struct input *in, char **buf, size_t *len, size_t *cap)
{
	bool any = false;

	*len = 0;
	for (;;) {
		const unsigned char *start, *newline;
		size_t avail, n;

		if (!input__fill(in)) {
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
		if (memchr(start, '\0', n))
			return -EILSEQ;
		if (*len + n > MAX_LINE_LENGTH)
			return -EFBIG;
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
		in->newline = newline;
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
	(*buf)[*len] = '\0';
	return 1;
}

void reader__set_message(struct profile_read_result *result, unsigned long line, const char *fmt,
			 ...)
{
	va_list ap;

	result->line = line;
	va_start(ap, fmt);
	vsnprintf(result->message, sizeof(result->message), fmt, ap);
	va_end(ap);
}

int64_t reader__intern_folded_frame(struct profile *p, char *text, size_t len, const char *file,
				    uint32_t line)
{
	size_t start, name_len;
	enum frame_kind kind = profile_reader__frame_kind(text, len, &start, &name_len);
	char saved = text[start + name_len];
	int64_t id;

	if (kind == FRAME_PYTHON)
		return python_frame__intern_text(p, text + start, name_len, file, line);
	/* py-spy's Python frames are known by their shape, "name (file.py:LINE)". */
	if (kind == FRAME_NATIVE && !file) {
		id = python_frame__intern_pyspy_text(p, text, len);
		if (id != -ENOENT)
			return id;
	}
	/* A name without marks in a Python file: a Python function, as
	 * llmprof's speedscope (and py-spy's) name them. */
	if (kind == FRAME_NATIVE && python_file__is_python(file)) {
		saved = text[len];
		text[len] = '\0';
		id = python_frame__intern(p, text, file, line);
		text[len] = saved;
		return id;
	}
	text[start + name_len] = '\0';
	id = profile__intern_frame(p, text + start, file, line, kind);
	text[start + name_len] = saved;
	return id;
}
