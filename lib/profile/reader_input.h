/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the profile readers share: a buffered input over a stream or a memory
 * buffer, and the helpers every format's reader uses to report an error and
 * intern a frame written in folded form.  Private to lib/profile.
 */
#ifndef LLMPROF_READER_INPUT_H
#define LLMPROF_READER_INPUT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile_reader.h"

#define READ_BLOCK_SIZE (64 * 1024)
#define MAX_LINE_LENGTH (16 * 1024 * 1024)

/* A buffered reader over a stream or a memory buffer. */
struct input {
	FILE *stream; /* NULL when reading a buffer */
	const unsigned char *data;
	size_t pos, len;
	unsigned char *block; /* read buffer for a stream */
	unsigned long line;   /* 1-based line of data[pos] */
	int error;	      /* -errno of a failed read */
	bool newline;	      /* the last line read ended in '\n' */
};

static inline bool input__fill(struct input *in)
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

static inline int input__peek(struct input *in)
{
	return input__fill(in) ? in->data[in->pos] : -1;
}

static inline int input__next(struct input *in)
{
	int c = input__peek(in);

	if (c >= 0) {
		in->pos++;
		if (c == '\n')
			in->line++;
	}
	return c;
}

/*
 * Reads one line without its '\n' into *buf (NUL-terminated).  Returns 1, 0
 * at the end of the input, or -errno: -EFBIG for a line past MAX_LINE_LENGTH
 * and -EILSEQ for a NUL byte, found as soon as they are read, so that
 * /dev/zero or a binary file is refused at once rather than read to its end.
 */
int input__read_line(struct input *in, char **buf, size_t *len, size_t *cap);

void __attribute__((format(printf, 3, 4)))
reader__set_message(struct profile_read_result *result, unsigned long line, const char *fmt, ...);

/* Interns the frame whose folded text is text[0, len); text[len] must be
 * writable.  Returns a frame id or -ENOMEM. */
int64_t reader__intern_folded_frame(struct profile *p, char *text, size_t len, const char *file,
				    uint32_t line);

/* The formats' readers: each fills p from in, returns 0 or -errno with
 * result->message set. */
int folded_reader__parse(struct input *in, const struct profile_read_options *options,
			 struct profile *p, struct profile_read_result *result);
int speedscope_reader__parse(struct input *in, const struct profile_read_options *options,
			     struct profile *p, struct profile_read_result *result);

#endif /* LLMPROF_READER_INPUT_H */
