// SPDX-License-Identifier: GPL-2.0
/*
 * A streaming JSON tokenizer for the profile readers: one token at a time
 * from a reader_input, strings unescaped into one reused buffer, objects and
 * arrays walked by callbacks, so a reader keeps only what it means to keep.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "profile/json_reader.h"
#include "profile/reader_input.h"

#define MAX_STRING_LENGTH (16 * 1024 * 1024)
#define MAX_SKIP_DEPTH 64

static const char *const token_names[] = {
    [JSON_END] = "the end of the input",
    [JSON_OBJECT_BEGIN] = "'{'",
    [JSON_OBJECT_END] = "'}'",
    [JSON_ARRAY_BEGIN] = "'['",
    [JSON_ARRAY_END] = "']'",
    [JSON_COLON] = "':'",
    [JSON_COMMA] = "','",
    [JSON_STRING] = "a string",
    [JSON_NUMBER] = "a number",
    [JSON_TRUE] = "true",
    [JSON_FALSE] = "false",
    [JSON_NULL] = "null",
};

int json__error(struct json_reader *j, const char *fmt, ...)
{
	/* Whatever was expected, a file that stops short is the news. */
	const char *prefix = j->token == JSON_END && !j->complete
				 ? "the input ends too soon (is it truncated?): "
				 : "";
	size_t len = strlen(prefix);
	va_list ap;

	j->result->line = j->token_line;
	memcpy(j->result->message, prefix, len + 1);
	va_start(ap, fmt);
	vsnprintf(j->result->message + len, sizeof(j->result->message) - len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int json_append(struct json_reader *j, const char *bytes, size_t n)
{
	if (j->text_len + n > MAX_STRING_LENGTH)
		return json__error(j, "string longer than %d bytes", MAX_STRING_LENGTH);
	if (array__grow((void **)&j->text, &j->text_cap, j->text_len + n + 1, 1))
		return -ENOMEM;
	memcpy(j->text + j->text_len, bytes, n);
	j->text_len += n;
	j->text[j->text_len] = '\0';
	return 0;
}

static int json_append_code_point(struct json_reader *j, uint32_t cp)
{
	char buf[4];
	size_t n;

	/* NUL cannot live in a C string and lone surrogates are not text;
	 * both become U+FFFD rather than failing the file. */
	if (!cp || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		buf[0] = cp;
		n = 1;
	} else if (cp < 0x800) {
		buf[0] = 0xc0 | cp >> 6;
		buf[1] = 0x80 | (cp & 0x3f);
		n = 2;
	} else if (cp < 0x10000) {
		buf[0] = 0xe0 | cp >> 12;
		buf[1] = 0x80 | (cp >> 6 & 0x3f);
		buf[2] = 0x80 | (cp & 0x3f);
		n = 3;
	} else {
		buf[0] = 0xf0 | cp >> 18;
		buf[1] = 0x80 | (cp >> 12 & 0x3f);
		buf[2] = 0x80 | (cp >> 6 & 0x3f);
		buf[3] = 0x80 | (cp & 0x3f);
		n = 4;
	}
	return json_append(j, buf, n);
}

static int json_hex4(struct json_reader *j, uint32_t *cp)
{
	*cp = 0;
	for (int i = 0; i < 4; i++) {
		int c = input__next(j->in);

		if (c >= '0' && c <= '9')
			*cp = *cp << 4 | (c - '0');
		else if (c >= 'a' && c <= 'f')
			*cp = *cp << 4 | (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*cp = *cp << 4 | (c - 'A' + 10);
		else
			return json__error(j, "malformed \\u escape in a string");
	}
	return 0;
}

static int simple_escape(int c)
{
	switch (c) {
	case '"':
	case '\\':
	case '/':
		return c;
	case 'b':
		return '\b';
	case 'f':
		return '\f';
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	default:
		return -1;
	}
}

/* After "\u": one code point, or a surrogate pair. */
static int json_unicode_escape(struct json_reader *j)
{
	uint32_t cp, low;
	int err, c;
	char e;

	err = json_hex4(j, &cp);
	if (err)
		return err;
	if (cp < 0xd800 || cp > 0xdbff || input__peek(j->in) != '\\')
		return json_append_code_point(j, cp);
	input__next(j->in);
	c = input__next(j->in);
	if (c != 'u') {
		/* A lone high surrogate, then an ordinary escape. */
		err = json_append_code_point(j, 0xfffd);
		if (err)
			return err;
		if (simple_escape(c) < 0)
			return json__error(j, "malformed escape in a string");
		e = simple_escape(c);
		return json_append(j, &e, 1);
	}
	err = json_hex4(j, &low);
	if (err)
		return err;
	if (low < 0xdc00 || low > 0xdfff) {
		err = json_append_code_point(j, 0xfffd);
		return err ? err : json_append_code_point(j, low);
	}
	return json_append_code_point(j, 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00));
}

static int json_read_string(struct json_reader *j)
{
	int err = 0;

	j->text_len = 0;
	err = json_append(j, "", 0);
	while (!err) {
		int c = input__next(j->in);
		char byte;

		if (c < 0)
			return j->in->error ? j->in->error : json__error(j, "unterminated string");
		if (c == '"')
			break;
		if (c < 0x20)
			return json__error(j, "control character in a string");
		if (c != '\\') {
			byte = c;
			err = json_append(j, &byte, 1);
			continue;
		}
		c = input__next(j->in);
		if (c == 'u') {
			err = json_unicode_escape(j);
			continue;
		}
		if (simple_escape(c) < 0)
			return json__error(j, "malformed escape in a string");
		byte = simple_escape(c);
		err = json_append(j, &byte, 1);
	}
	j->token = JSON_STRING;
	return err;
}

static int json_read_number(struct json_reader *j, int first)
{
	char buf[64], *end;
	size_t len = 0;
	int c;

	buf[len++] = first;
	while ((c = input__peek(j->in)) >= 0 && ((c >= '0' && c <= '9') || strchr("+-.eE", c))) {
		if (len + 1 >= sizeof(buf))
			return json__error(j, "number too long");
		buf[len++] = input__next(j->in);
	}
	buf[len] = '\0';
	if (first == '-' && !(buf[1] >= '0' && buf[1] <= '9'))
		return json__error(j, "malformed number '%s'", buf);
	errno = 0;
	j->number = strtod(buf, &end);
	if (end != buf + len)
		return json__error(j, "malformed number '%s'", buf);
	if (!isfinite(j->number))
		return json__error(j, "number '%s' out of range", buf);
	j->token = JSON_NUMBER;
	return 0;
}

static int json_read_literal(struct json_reader *j, const char *rest, enum json_token token)
{
	for (const char *c = rest; *c; c++)
		if (input__next(j->in) != *c)
			return json__error(j, "unknown literal (expected %s)", token_names[token]);
	j->token = token;
	return 0;
}

/* Reads the next token into j->token. */
int json__next(struct json_reader *j)
{
	int c;

	do
		c = input__next(j->in);
	while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
	j->token_line = j->in->line;
	switch (c) {
	case -1:
		if (j->in->error)
			return j->in->error;
		j->token = JSON_END;
		return 0;
	case '{':
		j->token = JSON_OBJECT_BEGIN;
		return 0;
	case '}':
		j->token = JSON_OBJECT_END;
		return 0;
	case '[':
		j->token = JSON_ARRAY_BEGIN;
		return 0;
	case ']':
		j->token = JSON_ARRAY_END;
		return 0;
	case ':':
		j->token = JSON_COLON;
		return 0;
	case ',':
		j->token = JSON_COMMA;
		return 0;
	case '"':
		return json_read_string(j);
	case 't':
		return json_read_literal(j, "rue", JSON_TRUE);
	case 'f':
		return json_read_literal(j, "alse", JSON_FALSE);
	case 'n':
		return json_read_literal(j, "ull", JSON_NULL);
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return json_read_number(j, c);
		if (c >= 0x21 && c < 0x7f)
			return json__error(j, "unexpected character '%c'", c);
		return json__error(j, "unexpected byte 0x%02x", c);
	}
}

int json__unexpected(struct json_reader *j, const char *expected, const char *where)
{
	return json__error(j, "expected %s in %s, found %s", expected, where,
			   token_names[j->token]);
}

/* Parses an object, calling member() with each key and the token at its
 * value; member() must consume the value. */
int json__object(struct json_reader *j, const char *where, json_member_fn member, void *ctx)
{
	int err;

	if (j->token != JSON_OBJECT_BEGIN)
		return json__unexpected(j, "an object", where);
	err = json__next(j);
	if (err)
		return err;
	if (j->token == JSON_OBJECT_END)
		return json__next(j);
	for (;;) {
		char key[64];

		if (j->token != JSON_STRING)
			return json__unexpected(j, "a member name", where);
		/* Keys we know are short; a longer one, cut, matches none. */
		snprintf(key, sizeof(key), "%s", j->text);
		err = json__next(j);
		if (err)
			return err;
		if (j->token != JSON_COLON)
			return json__unexpected(j, "':'", where);
		err = json__next(j);
		if (!err)
			err = member(j, key, ctx);
		if (err)
			return err;
		if (j->token == JSON_OBJECT_END)
			return json__next(j);
		if (j->token != JSON_COMMA)
			return json__unexpected(j, "',' or '}'", where);
		err = json__next(j);
		if (err)
			return err;
	}
}

int json__array(struct json_reader *j, const char *where, json_element_fn element, void *ctx)
{
	int err;

	if (j->token != JSON_ARRAY_BEGIN)
		return json__unexpected(j, "an array", where);
	err = json__next(j);
	if (err)
		return err;
	if (j->token == JSON_ARRAY_END)
		return json__next(j);
	for (size_t i = 0;; i++) {
		err = element(j, i, ctx);
		if (err)
			return err;
		if (j->token == JSON_ARRAY_END)
			return json__next(j);
		if (j->token != JSON_COMMA)
			return json__unexpected(j, "',' or ']'", where);
		err = json__next(j);
		if (err)
			return err;
	}
}

static int skip_value(struct json_reader *j, int depth);

static int skip_member(struct json_reader *j, const char *key, void *ctx)
{
	return skip_value(j, *(int *)ctx);
}

static int skip_element(struct json_reader *j, size_t index, void *ctx)
{
	return skip_value(j, *(int *)ctx);
}

/* Skips a value we do not use; nesting is bounded so input cannot exhaust
 * the stack. */
static int skip_value(struct json_reader *j, int depth)
{
	int inner = depth + 1;

	switch (j->token) {
	case JSON_OBJECT_BEGIN:
	case JSON_ARRAY_BEGIN:
		if (depth >= MAX_SKIP_DEPTH)
			return json__error(j, "values nested deeper than %d", MAX_SKIP_DEPTH);
		if (j->token == JSON_OBJECT_BEGIN)
			return json__object(j, "an object", skip_member, &inner);
		return json__array(j, "an array", skip_element, &inner);
	case JSON_STRING:
	case JSON_NUMBER:
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		return json__next(j);
	default:
		return json__error(j, "expected a value, found %s", token_names[j->token]);
	}
}

/* Takes a string value into *out, replacing what was there. */
int json__take_string(struct json_reader *j, const char *what, char **out)
{
	char *copy;

	if (j->token != JSON_STRING)
		return json__error(j, "%s must be a string", what);
	copy = strdup(j->text);
	if (!copy)
		return -ENOMEM;
	free(*out);
	*out = copy;
	return json__next(j);
}

int json__take_number(struct json_reader *j, const char *what, double *out)
{
	if (j->token != JSON_NUMBER)
		return json__error(j, "%s must be a number", what);
	*out = j->number;
	return json__next(j);
}

int json__take_index(struct json_reader *j, const char *what, uint32_t *out)
{
	if (j->token != JSON_NUMBER || j->number < 0 || j->number >= UINT32_MAX ||
	    j->number != floor(j->number))
		return json__error(j, "%s must be a whole number from 0 to %u", what,
				   UINT32_MAX - 1);
	*out = j->number;
	return json__next(j);
}

int json__skip(struct json_reader *j)
{
	return skip_value(j, 0);
}

const char *json_token__name(enum json_token token)
{
	return token_names[token];
}
