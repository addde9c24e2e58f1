// SPDX-License-Identifier: GPL-2.0
/*
 * Reading a profile: the format is told apart by content, then the folded
 * (folded_reader.c) or speedscope (speedscope_reader.c) reader fills the
 * profile.  Also the folded frame markers every reader and writer agree on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/perf_script_reader.h"
#include "profile/pprof_reader.h"
#include "profile/profile_reader.h"
#include "profile/reader_input.h"

const char *profile_format__name(enum profile_format format)
{
	static const char *const names[] = {"folded", "speedscope", "pprof", "perf script"};

	return format < sizeof(names) / sizeof(names[0]) ? names[format] : "folded";
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

/* perf_script_reader.c takes its lines through this. */
struct line_source {
	struct input *in;
	char *line;
	size_t cap;
};

static int perf_script_line(void *ctx, char **line, size_t *len)
{
	struct line_source *source = ctx;
	int err = input__read_line(source->in, &source->line, len, &source->cap);

	*line = source->line;
	return err == -EFBIG || err == -EILSEQ ? -EINVAL : err;
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
	/* pprof is binary and read whole, by its own reader. */
	if (input__fill(in) && pprof_reader__detect(in->data + in->pos, in->len - in->pos)) {
		result->format = PROFILE_FORMAT_PPROF;
		return pprof_reader__read(in->data + in->pos, in->len - in->pos, in->stream, out,
					  result->message, sizeof(result->message));
	}
	p = profile__new();
	if (!p) {
		reader__set_message(result, 0, "out of memory");
		return -ENOMEM;
	}
	in->line = 1;
	/* Windows editors start text with a byte-order mark; it is not part
	 * of the first frame. */
	if (input__fill(in) && in->len - in->pos >= 3 &&
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
			reader__set_message(result, 0,
					    "a JSON array (such as a Chrome trace) is not a "
					    "supported profile format");
			profile__free(p);
			return -EINVAL;
		}
		break;
	}
	result->format = json ? PROFILE_FORMAT_SPEEDSCOPE : PROFILE_FORMAT_FOLDED;
	if (!json &&
	    perf_script_reader__detect((const char *)in->data + in->pos, in->len - in->pos)) {
		struct line_source lines = {.in = in};

		result->format = PROFILE_FORMAT_PERF_SCRIPT;
		err = perf_script_reader__read(perf_script_line, &lines, p, result->message,
					       sizeof(result->message), &result->line);
		free(lines.line);
	} else if (json)
		err = speedscope_reader__parse(in, options, p, result);
	else
		err = folded_reader__parse(in, options, p, result);
	if (!err && in->error)
		err = in->error;
	if (err) {
		if (err == -ENOMEM)
			reader__set_message(result, 0, "out of memory");
		else if (!result->message[0])
			reader__set_message(result, 0, "read error: %s", strerror(-err));
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
		reader__set_message(result, 0, "out of memory");
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
	FILE *stream = fopen(path, "re");
	const char *base;
	int err;

	if (!stream) {
		err = -errno;
		memset(result, 0, sizeof(*result));
		reader__set_message(result, 0, "%s", strerror(-err));
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
			reader__set_message(result, 0, "out of memory");
			return -ENOMEM;
		}
	}
	return 0;
}
