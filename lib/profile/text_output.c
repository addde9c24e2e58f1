// SPDX-License-Identifier: GPL-2.0
/* Output helpers for diff and report; see text_output.h. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/json_writer.h"
#include "profile/text_output.h"

int text_format__parse(const char *text, enum text_format *format)
{
	static const char *const names[] = {
	    [TEXT_FORMAT_TEXT] = "text",	 [TEXT_FORMAT_JSON] = "json",
	    [TEXT_FORMAT_MARKDOWN] = "markdown", [TEXT_FORMAT_FOLDED] = "folded",
	    [TEXT_FORMAT_SVG] = "svg",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(text, names[i])) {
			*format = i;
			return 0;
		}
	}
	return -EINVAL;
}

void text_output__xml_text(FILE *out, const char *text, size_t max_chars)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t chars = 0, keep;

	for (const unsigned char *c = s; *c; chars++) {
		size_t len = utf8__sequence_length(c);

		c += len ? len : 1;
	}
	keep = chars <= max_chars ? chars : max_chars >= 2 ? max_chars - 2 : 0;
	for (size_t i = 0; i < keep; i++) {
		size_t len = utf8__sequence_length(s);

		if (!len) {
			fputs("\xef\xbf\xbd", out);
			s++;
			continue;
		}
		switch (*s) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&apos;", out);
			break;
		default:
			/* XML 1.0 has no other control characters. */
			if (*s < 0x20)
				fputc(' ', out);
			else
				fwrite(s, 1, len, out);
		}
		s += len;
	}
	if (keep < chars)
		fputs("..", out);
}

void text_output__json_string(FILE *out, const char *text)
{
	json_writer__string(out, text, 0);
}

void text_output__json_number(FILE *out, double value)
{
	char buf[64];
	size_t len;

	if (!isfinite(value))
		value = 0;
	snprintf(buf, sizeof(buf), "%.4f", value);
	len = strlen(buf);
	while (len > 1 && buf[len - 1] == '0')
		buf[--len] = '\0';
	if (buf[len - 1] == '.')
		buf[--len] = '\0';
	fputs(strcmp(buf, "-0") ? buf : "0", out);
}

void text_output__markdown_code(FILE *out, const char *text)
{
	size_t run = 0, longest = 0, len = strlen(text);
	bool pad;

	if (!len) {
		fputs("(empty)", out);
		return;
	}
	for (const char *c = text; *c; c++) {
		run = *c == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	/* A code span is fenced by a backtick run longer than any inside it;
	 * a space keeps a backtick at either end from joining the fence. */
	pad = longest && (text[0] == '`' || text[len - 1] == '`');
	for (size_t i = 0; i <= longest; i++)
		fputc('`', out);
	if (pad)
		fputc(' ', out);
	for (const char *c = text; *c; c++) {
		/* GitHub splits table cells on '|' even inside code spans. */
		if (*c == '|')
			fputc('\\', out);
		fputc(*c, out);
	}
	if (pad)
		fputc(' ', out);
	for (size_t i = 0; i <= longest; i++)
		fputc('`', out);
}

void text_output__bytes(char *buf, size_t size, uint64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	double value = bytes;
	size_t unit = 0;

	if (bytes < 1024) {
		snprintf(buf, size, "%llu B", (unsigned long long)bytes);
		return;
	}
	value /= 1024;
	while (value >= 1024 && unit + 1 < sizeof(units) / sizeof(units[0])) {
		value /= 1024;
		unit++;
	}
	snprintf(buf, size, "%.1f %s", value, units[unit]);
}

void text_output__weight(char *buf, size_t size, uint64_t weight, enum profile_unit unit)
{
	switch (unit) {
	case UNIT_BYTES:
		text_output__bytes(buf, size, weight);
		break;
	case UNIT_NANOSECONDS:
		snprintf(buf, size, "%.3f ms", weight / 1e6);
		break;
	case UNIT_MICROSECONDS:
		snprintf(buf, size, "%.3f ms", weight / 1e3);
		break;
	default:
		snprintf(buf, size, "%llu", (unsigned long long)weight);
		break;
	}
}
