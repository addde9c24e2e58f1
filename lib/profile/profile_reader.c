// SPDX-License-Identifier: GPL-2.0
/*
 * Reading a profile: the format is told apart by content, by the
 * detectors of the table of formats (formats.c), then that format's reader
 * fills the profile.  Also the folded frame markers every reader and writer agree on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

#include "profile/pprof_reader.h"
#include "profile/profile_reader.h"
#include "profile/python_frame.h"
#include "profile/reader_input.h"

const char *profile_format__name(enum profile_format format)
{
	return format__get(format)->name;
}

enum frame_kind profile_reader__frame_kind(const char *text, size_t len, size_t *name_start,
					   size_t *name_len)
{
	static const struct {
		const char *mark;
		enum frame_kind kind;
	} marked[] = {
	    {FRAME_OFF_CPU_MARK, FRAME_OFF_CPU},
	    {FRAME_GPU_MEMORY_MARK, FRAME_GPU_MEMORY},
	    {FRAME_NCCL_MARK, FRAME_NCCL},
	};
	enum frame_kind kind;

	*name_start = 0;
	*name_len = len;
	/* The recording's leaves keep their mark in the name. */
	for (size_t i = 0; i < sizeof(marked) / sizeof(marked[0]); i++) {
		size_t mark_len = strlen(marked[i].mark);

		if (len > mark_len && !memcmp(text, marked[i].mark, mark_len))
			return marked[i].kind;
	}
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

/* The whole input: what is buffered and the rest of the stream.  0 or
 * -errno; *all is malloc'd. */
static int read_whole(struct input *in, unsigned char **all, size_t *len)
{
	size_t cap = 0;

	*all = NULL;
	*len = 0;
	while (input__fill(in)) {
		size_t n = in->len - in->pos;

		if (*len + n > MAX_LINE_LENGTH * 4ULL)
			return -EFBIG;
		if (array__grow((void **)all, &cap, *len + n + 1, 1))
			return -ENOMEM;
		memcpy(*all + *len, in->data + in->pos, n);
		*len += n;
		in->pos = in->len;
	}
	return in->error;
}

/*
 * UTF-16 text (speedscope reads it; Windows tools write it), with a
 * byte-order mark or known by its NUL bytes every other byte: the byte
 * order, 'l' or 'b', or 0 when the input is not UTF-16.
 */
static char utf16_order(const unsigned char *d, size_t n)
{
	size_t zero_even = 0, zero_odd = 0, pairs = n / 2 < 64 ? n / 2 : 64;

	if (n >= 2 && d[0] == 0xff && d[1] == 0xfe)
		return 'l';
	if (n >= 2 && d[0] == 0xfe && d[1] == 0xff)
		return 'b';
	for (size_t i = 0; i < pairs; i++) {
		zero_even += !d[2 * i];
		zero_odd += !d[2 * i + 1];
	}
	if (pairs >= 2 && zero_odd == pairs && !zero_even)
		return 'l';
	if (pairs >= 2 && zero_even == pairs && !zero_odd)
		return 'b';
	return 0;
}

/* UTF-16 in[0, n) as UTF-8 in a malloc'd *out; 0 or -ENOMEM. */
static int utf16_to_utf8(const unsigned char *in, size_t n, char order, char **out, size_t *len)
{
	size_t i = 0, o = 0;
	char *text = malloc(n / 2 * 3 + 1);

	if (!text)
		return -ENOMEM;
	if (n >= 2 && ((in[0] == 0xff && in[1] == 0xfe) || (in[0] == 0xfe && in[1] == 0xff)))
		i = 2;
	for (; i + 1 < n; i += 2) {
		uint32_t c = order == 'l' ? in[i] | in[i + 1] << 8 : in[i] << 8 | in[i + 1];

		if (c >= 0xd800 && c < 0xdc00 && i + 3 < n) {
			uint32_t low =
			    order == 'l' ? in[i + 2] | in[i + 3] << 8 : in[i + 2] << 8 | in[i + 3];

			if (low >= 0xdc00 && low < 0xe000) {
				c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
				i += 2;
			}
		}
		if (c < 0x80) {
			text[o++] = c;
		} else if (c < 0x800) {
			text[o++] = 0xc0 | c >> 6;
			text[o++] = 0x80 | (c & 0x3f);
		} else if (c < 0x10000) {
			text[o++] = 0xe0 | c >> 12;
			text[o++] = 0x80 | (c >> 6 & 0x3f);
			text[o++] = 0x80 | (c & 0x3f);
		} else {
			/* Past the 3 bytes a pair's 4 bytes of UTF-16 leave room for. */
			text[o++] = 0xf0 | c >> 18;
			text[o++] = 0x80 | (c >> 12 & 0x3f);
			text[o++] = 0x80 | (c >> 6 & 0x3f);
			text[o++] = 0x80 | (c & 0x3f);
		}
	}
	text[o] = '\0';
	*out = text;
	*len = o;
	return 0;
}

/* What binary data that no reader takes looks like, for the error. */
static const char *binary_kind(const unsigned char *d, size_t n)
{
	static const struct {
		const char *magic;
		size_t len;
		const char *what;
	} kinds[] = {
	    {"\x7f"
	     "ELF",
	     4, "an ELF file (a program or library)"},
	    {"PERFILE2", 8, "a perf.data file: run 'perf script -i FILE' and read its output"},
	    {"\x28\xb5\x2f\xfd", 4, "zstd-compressed data: decompress it first"},
	    {"BZh", 3, "bzip2-compressed data: decompress it first"},
	    {"\xfd"
	     "7zXZ",
	     5, "xz-compressed data: decompress it first"},
	    {"PK\x03\x04", 4, "a zip archive"},
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (n >= kinds[i].len && !memcmp(d, kinds[i].magic, kinds[i].len))
			return kinds[i].what;
	return NULL;
}

/* Whether the head of an input holds bytes no text profile has. */
static bool looks_binary(const unsigned char *d, size_t n)
{
	size_t control = 0;

	if (n > 4096)
		n = 4096;
	for (size_t i = 0; i < n; i++) {
		if (!d[i])
			return true;
		control += d[i] < 0x20 && d[i] != '\n' && d[i] != '\r' && d[i] != '\t';
	}
	return control * 20 > n;
}

/* The first line of text that is not a comment, quoted into buf. */
static void first_line(const unsigned char *d, size_t n, char *buf, size_t size)
{
	const unsigned char *end = d + n, *line = d;

	while (line < end) {
		const unsigned char *next = memchr(line, '\n', end - line);
		size_t len = (next ? next : end) - line;

		while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
			len--;
		if (len && line[0] != '#') {
			snprintf(buf, size, "'%.*s%s'", (int)(len > 60 ? 60 : len), line,
				 len > 60 ? "..." : "");
			return;
		}
		if (!next)
			break;
		line = next + 1;
	}
	snprintf(buf, size, "(no line)");
}

static int read_input(struct input *in, const struct profile_read_options *options,
		      struct profile **out, struct profile_read_result *result);

/* Reads UTF-16 input as the UTF-8 it stands for. */
static int read_utf16(struct input *in, char order, const struct profile_read_options *options,
		      struct profile **out, struct profile_read_result *result)
{
	unsigned char *all;
	char *text = NULL;
	size_t len, text_len;
	int err = read_whole(in, &all, &len);

	if (!err)
		err = utf16_to_utf8(all, len, order, &text, &text_len);
	free(all);
	if (err) {
		reader__set_message(result, 0, "%s",
				    err == -ENOMEM ? "out of memory" : "cannot read the input");
		return err;
	}
	{
		struct input inner = {.data = (const unsigned char *)text, .len = text_len};

		err = read_input(&inner, options, out, result);
	}
	free(text);
	return err;
}

static int read_input(struct input *in, const struct profile_read_options *options,
		      struct profile **out, struct profile_read_result *result)
{
	static const struct profile_read_options defaults;
	enum profile_format format = NR_PROFILE_FORMATS;
	const struct format *reader;
	const unsigned char *head;
	struct profile *p = NULL;
	size_t head_len;
	char order;
	int err;

	memset(result, 0, sizeof(*result));
	if (!options)
		options = &defaults;
	input__fill(in);
	head = in->data ? in->data + in->pos : NULL;
	head_len = in->len - in->pos;
	/* Binary formats are told apart first, and read whole by their own
	 * readers. */
	for (int i = 0; head_len && i < NR_PROFILE_FORMATS; i++) {
		const struct format *f = format__get(i);

		if ((f->flags & FORMAT_BINARY) && f->detect && f->read &&
		    f->detect(head, head_len)) {
			result->format = i;
			return f->read(in, options, out, result);
		}
	}
	if (head_len && pprof_reader__is_legacy(head, head_len)) {
		reader__set_message(result, 0, "%s",
				    "a legacy pprof profile (not profile.proto), which llmprof "
				    "does not read: 'pprof -proto FILE > FILE.pb.gz' converts it");
		return -EINVAL;
	}
	order = utf16_order(head, head_len);
	if (order)
		return read_utf16(in, order, options, out, result);
	if (head_len && looks_binary(head, head_len)) {
		const char *what = binary_kind(head, head_len);

		if (what)
			reader__set_message(result, 0, "not a profile: %s", what);
		else
			reader__set_message(result, 0,
					    "not a profile: binary data (starts with %02x %02x "
					    "%02x %02x), and not pprof's",
					    head[0], head_len > 1 ? head[1] : 0,
					    head_len > 2 ? head[2] : 0, head_len > 3 ? head[3] : 0);
		return -EINVAL;
	}
	in->line = 1;
	/* Windows editors start text with a byte-order mark; it is not part
	 * of the first frame. */
	if (head_len >= 3 && !memcmp(head, "\xef\xbb\xbf", 3)) {
		in->pos += 3;
		head += 3;
		head_len -= 3;
	}
	/* Text formats are told apart by content, looking within what is
	 * buffered and consuming nothing; the one without a detector (folded
	 * stacks) is read when none claims the input. */
	for (int i = 0; i < NR_PROFILE_FORMATS; i++) {
		const struct format *f = format__get(i);

		if (f->flags & FORMAT_BINARY)
			continue;
		if (!f->detect && f->read && format == NR_PROFILE_FORMATS) {
			format = i;
		} else if (f->detect && f->detect(head, head_len)) {
			format = i;
			break;
		}
	}
	reader = format__get(format);
	if (!reader->read) {
		char readable[128];

		format__list(readable, sizeof(readable), FORMAT_READABLE, 0, ", ", "", false,
			     NR_PROFILE_FORMATS);
		reader__set_message(result, 0,
				    "%s (%s): llmprof writes them but reads profiles (%s)",
				    reader->description, reader->content, readable);
		return -EINVAL;
	}
	result->format = format;
	err = reader->read(in, options, &p, result);
	if (!err && in->error) {
		err = in->error;
		profile__free(p);
		p = NULL;
	}
	/* Nothing read and every line skipped: not a profile at all. */
	if (!err && result->format == FORMAT_FOLDED && result->skipped && !p->nr_stacks) {
		char line[80];

		first_line(head, head_len, line, sizeof(line));
		reader__set_message(
		    result, 0,
		    "not a profile: no line is folded stacks ('frame;frame COUNT'), "
		    "a perf script record or JSON; the first line is %s",
		    line);
		profile__free(p);
		p = NULL;
		err = -EINVAL;
	}
	if (err) {
		if (err == -ENOMEM)
			reader__set_message(result, 0, "out of memory");
		else if (!result->message[0])
			reader__set_message(result, 0, "read error: %s", strerror(-err));
		return err;
	}
	*out = p;
	return 0;
}

/* read_input(), and what the reader's frames say of the file's writer. */
static int read_profile(struct input *in, const struct profile_read_options *options,
			struct profile **out, struct profile_read_result *result)
{
	int err = read_input(in, options, out, result);

	if (!err)
		(*out)->python_pyspy_form = python_frame__pyspy_form(*out);
	return err;
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
	err = read_profile(&in, options, out, result);
	free(in.block);
	return err;
}

int profile_reader__read_buffer(const void *data, size_t size,
				const struct profile_read_options *options, struct profile **out,
				struct profile_read_result *result)
{
	struct input in = {.data = data, .len = size};

	return read_profile(&in, options, out, result);
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
