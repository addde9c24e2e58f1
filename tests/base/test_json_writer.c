// SPDX-License-Identifier: GPL-2.0
/*
 * lib/base/json_writer.c: JSON strings from hostile bytes (invalid,
 * overlong, surrogate and cut UTF-8 sequences, control characters), exact
 * text checked here; with --dump, every case as one JSON document for
 * Python's json module to read back (json_writer.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_writer.h"

static int failures;

struct json_case {
	const char *input, *plain, *short_escapes;
};

static const struct json_case cases[] = {
    {"", "\"\"", "\"\""},
    {"plain name", "\"plain name\"", "\"plain name\""},
    {"q\"b\\s", "\"q\\\"b\\\\s\"", "\"q\\\"b\\\\s\""},
    {"t\tn\nr\rb\bf\f", "\"t\\u0009n\\u000ar\\u000db\\u0008f\\u000c\"", "\"t\\tn\\nr\\rb\\bf\\f\""},
    {"\x01\x1f\x7f", "\"\\u0001\\u001f\x7f\"", "\"\\u0001\\u001F\x7f\""},
    /* Valid: 2, 3 and 4 bytes, the largest code point. */
    {"\xce\xbb \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
     "\"\xce\xbb \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"",
     "\"\xce\xbb \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\""},
    /* Each byte that begins no well-formed sequence is one U+FFFD; the
     * valid characters around it stay. */
    {"bad\xff\xfe", "\"bad\\ufffd\\ufffd\"", "\"bad\\ufffd\\ufffd\""},
    {"overlong\xc0\xaf", "\"overlong\\ufffd\\ufffd\"", "\"overlong\\ufffd\\ufffd\""},
    {"overlong3\xe0\x80\xaf", "\"overlong3\\ufffd\\ufffd\\ufffd\"",
     "\"overlong3\\ufffd\\ufffd\\ufffd\""},
    {"surrogate\xed\xa0\x80", "\"surrogate\\ufffd\\ufffd\\ufffd\"",
     "\"surrogate\\ufffd\\ufffd\\ufffd\""},
    {"past\xf4\x90\x80\x80", "\"past\\ufffd\\ufffd\\ufffd\\ufffd\"",
     "\"past\\ufffd\\ufffd\\ufffd\\ufffd\""},
    {"cut\xe2\x82", "\"cut\\ufffd\\ufffd\"", "\"cut\\ufffd\\ufffd\""},
    {"\xce\xbb\xce", "\"\xce\xbb\\ufffd\"", "\"\xce\xbb\\ufffd\""},
    {"lone\x80\"", "\"lone\\ufffd\\\"\"", "\"lone\\ufffd\\\"\""},
};

static void write_case(FILE *out, const char *input, unsigned int flags)
{
	json_writer__string(out, input, flags);
}

static void check(const struct json_case *c, unsigned int flags, const char *want)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	write_case(out, c->input, flags);
	fclose(out);
	if (strcmp(text, want)) {
		fprintf(stderr, "FAIL: flags %u wrote %s, want %s\n", flags, text, want);
		failures++;
	}
	free(text);
}

int main(int argc, char **argv)
{
	size_t nr = sizeof(cases) / sizeof(cases[0]);

	if (argc > 1 && !strcmp(argv[1], "--dump")) {
		/* Both styles of every case, and every single byte value. */
		char byte[2] = "";

		printf("[");
		for (size_t i = 0; i < nr; i++) {
			write_case(stdout, cases[i].input, 0);
			printf(",");
			write_case(stdout, cases[i].input, JSON_STRING_SHORT_ESCAPES);
			printf(",");
		}
		for (int b = 1; b < 256; b++) {
			byte[0] = b;
			write_case(stdout, byte, b & 1 ? JSON_STRING_SHORT_ESCAPES : 0);
			printf(b < 255 ? "," : "]\n");
		}
		return 0;
	}
	for (size_t i = 0; i < nr; i++) {
		check(&cases[i], 0, cases[i].plain);
		check(&cases[i], JSON_STRING_SHORT_ESCAPES, cases[i].short_escapes);
	}
	if (failures)
		return 1;
	printf("json_writer: all checks passed\n");
	return 0;
}
