/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A streaming JSON tokenizer, private to the profile readers.  The reader
 * holds one token: after json__next() j->token says what it is, with the
 * unescaped text of a string in j->text and the value of a number in
 * j->number.  Errors fill result->message and return -EINVAL.
 */
#ifndef LLMPROF_JSON_READER_H
#define LLMPROF_JSON_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile_reader.h"

struct input;

enum json_token {
	JSON_END = 0,
	JSON_OBJECT_BEGIN,
	JSON_OBJECT_END,
	JSON_ARRAY_BEGIN,
	JSON_ARRAY_END,
	JSON_COLON,
	JSON_COMMA,
	JSON_STRING,
	JSON_NUMBER,
	JSON_TRUE,
	JSON_FALSE,
	JSON_NULL,
};

struct json_reader {
	struct input *in;
	struct profile_read_result *result;
	enum json_token token;
	unsigned long token_line;
	char *text; /* value of a JSON_STRING; the caller frees it */
	size_t text_len, text_cap;
	double number; /* value of a JSON_NUMBER */
	bool complete; /* the document was read whole: errors now are not the end's */
};

/* Called with the token at a member's or element's value; must consume it. */
typedef int (*json_member_fn)(struct json_reader *j, const char *key, void *ctx);
typedef int (*json_element_fn)(struct json_reader *j, size_t index, void *ctx);

/* Reads the next token into j->token.  Returns 0 or -errno. */
int json__next(struct json_reader *j);
int __attribute__((format(printf, 2, 3))) json__error(struct json_reader *j, const char *fmt, ...);
int json__unexpected(struct json_reader *j, const char *expected, const char *where);
/* Walk the object or array at j->token; "where" names it in errors. */
int json__object(struct json_reader *j, const char *where, json_member_fn member, void *ctx);
int json__array(struct json_reader *j, const char *where, json_element_fn element, void *ctx);
/* Skips the value at j->token; nesting is bounded so input cannot exhaust
 * the stack. */
int json__skip(struct json_reader *j);
/* Take the value at j->token, or fail naming it by "what". */
int json__take_string(struct json_reader *j, const char *what, char **out);
int json__take_number(struct json_reader *j, const char *what, double *out);
int json__take_index(struct json_reader *j, const char *what, uint32_t *out);
const char *json_token__name(enum json_token token);

#endif /* LLMPROF_JSON_READER_H */
