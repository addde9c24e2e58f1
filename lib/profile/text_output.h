/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the human- and machine-readable outputs of diff and
 * report: the output format names, JSON strings and numbers, Markdown code
 * spans.
 */
#ifndef LLMPROF_TEXT_OUTPUT_H
#define LLMPROF_TEXT_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

enum text_format {
	TEXT_FORMAT_TEXT = 0, /* aligned tables for a terminal */
	TEXT_FORMAT_JSON,
	TEXT_FORMAT_MARKDOWN,
	TEXT_FORMAT_FOLDED, /* diff only: "stack BASE NEW" */
	TEXT_FORMAT_SVG,    /* diff only: a differential flame graph */
};

/* Parses "text", "json", "markdown", "folded" or "svg"; returns 0 or -EINVAL. */
int text_format__parse(const char *text, enum text_format *format);

/* Writes text as a JSON string literal.  Bytes that are not UTF-8 become
 * U+FFFD, so the output is always valid JSON. */
void text_output__json_string(FILE *out, const char *text);
/* Writes a percentage (or any fraction) with at most 4 decimals and no
 * trailing zeros, "-0" folded to "0", as a JSON number. */
void text_output__json_number(FILE *out, double value);
/* Writes text as XML character data or an attribute value: markup
 * escaped, control characters as spaces, bytes that are not
 * UTF-8 as U+FFFD.  Text of more than max_chars characters is cut to
 * max_chars - 2 and "..". */
void text_output__xml_text(FILE *out, const char *text, size_t max_chars);
/* Writes text as a Markdown code span that is safe inside a table cell. */
void text_output__markdown_code(FILE *out, const char *text);

/* Formats a weight in the profile's unit for a table: "12.345 ms" for time,
 * the plain count otherwise.  buf gets at most size bytes. */
void text_output__weight(char *buf, size_t size, uint64_t weight, enum profile_unit unit);
/* "64.0 MiB", "512 B": a size in bytes, binary units, one decimal. */
void text_output__bytes(char *buf, size_t size, uint64_t bytes);

#endif /* LLMPROF_TEXT_OUTPUT_H */
