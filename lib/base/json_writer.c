// SPDX-License-Identifier: GPL-2.0
/* JSON strings with one rule for bytes that are not UTF-8 (see json_writer.h). */
#include <stdbool.h>
#include <stdint.h>

#include "base/json_writer.h"

size_t utf8__sequence_length(const unsigned char *s)
{
	uint32_t cp;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0; /* the terminating NUL stops here too */
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static void write_control(FILE *out, unsigned char c, unsigned int flags)
{
	static const char short_escapes[0x20] = {
	    ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
	};

	if (!(flags & JSON_STRING_SHORT_ESCAPES))
		fprintf(out, "\\u%04x", c);
	else if (short_escapes[c])
		fprintf(out, "\\%c", short_escapes[c]);
	else
		fprintf(out, "\\u%04X", c);
}

void json_writer__string(FILE *out, const char *text, unsigned int flags)
{
	const unsigned char *s = (const unsigned char *)text, *run = s;

	putc('"', out);
	for (;;) {
		size_t len;

		/* Runs of bytes written as they are go out in one fwrite. */
		while (*s >= 0x20 && *s != '"' && *s != '\\' && *s < 0x80)
			s++;
		if (*s >= 0x80 && (len = utf8__sequence_length(s))) {
			s += len;
			continue;
		}
		if (s > run)
			fwrite(run, 1, s - run, out);
		if (!*s)
			break;
		if (*s == '"' || *s == '\\') {
			putc('\\', out);
			putc(*s, out);
		} else if (*s < 0x20) {
			write_control(out, *s, flags);
		} else {
			fputs("\\ufffd", out);
		}
		run = ++s;
	}
	putc('"', out);
}
