/* SPDX-License-Identifier: GPL-2.0 */
/*
 * JSON strings, as every JSON output writes them.  Names come from
 * binaries and are bytes, not always UTF-8: each byte that does not begin
 * a well-formed UTF-8 sequence (overlong forms, surrogates and code points
 * past U+10FFFF are not well-formed) is written as \ufffd, so the output is
 * always valid JSON and the valid characters around it stay.
 */
#ifndef LLMPROF_BASE_JSON_WRITER_H
#define LLMPROF_BASE_JSON_WRITER_H

#include <stddef.h>
#include <stdio.h>

/* How control characters are escaped: \u00XX (the default), or as jansson
 * writes them, \b \f \n \r \t and \u00XX in upper case for the others
 * (speedscope files keep the text they had when jansson wrote them). */
#define JSON_STRING_SHORT_ESCAPES 0x1

/* Writes text as a JSON string, quotes included. */
void json_writer__string(FILE *out, const char *text, unsigned int flags);

/* The length of the well-formed UTF-8 sequence at s (1 to 4), or 0 where s
 * does not begin one; a NUL ends every sequence. */
size_t utf8__sequence_length(const unsigned char *s);

#endif
