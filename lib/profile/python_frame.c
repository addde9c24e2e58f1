// SPDX-License-Identifier: GPL-2.0
/*
 * Python frames as name and file: their text made from the two and read
 * back into them; see python_frame.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/python_frame.h"

const char *python_file__short(const char *path)
{
	static const char *const roots[] = {"/site-packages/", "/dist-packages/"};
	const char *best = NULL, *p;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		for (p = strstr(path, roots[i]); p; p = strstr(p + 1, roots[i]))
			best = p + strlen(roots[i]);
	}
	if (best)
		return best;
	for (p = strstr(path, "/lib/python3"); p; p = strstr(p + 1, "/lib/python3")) {
		const char *slash = strchr(p + strlen("/lib/python3"), '/');

		if (slash && slash[1])
			best = slash + 1;
	}
	if (best)
		return best;
	p = strrchr(path, '/');
	return p && p[1] ? p + 1 : path;
}

static bool ends_with(const char *text, size_t len, const char *end)
{
	size_t n = strlen(end);

	return len >= n && !memcmp(text + len - n, end, n);
}

static bool is_python_file(const char *file, size_t len)
{
	/* Not any "<...>": compilers name "<built-in>" in DWARF too. */
	return (len > 3 && (ends_with(file, len, ".py") || ends_with(file, len, ".pyw"))) ||
	       (len > 9 && !memcmp(file, "<frozen ", 8) && file[len - 1] == '>') ||
	       (len == 8 && !memcmp(file, "<string>", 8)) ||
	       (len == 7 && !memcmp(file, "<stdin>", 7)) ||
	       (len == strlen(PYTHON_UNKNOWN_FILE) && !memcmp(file, PYTHON_UNKNOWN_FILE, len));
}

bool python_file__is_python(const char *file)
{
	return file && is_python_file(file, strlen(file));
}

/* The file as the frame's text shows it: a full path shortened, any other
 * file (the short one folded text carries, "?") as it is. */
static const char *shown_file(const char *file)
{
	return file[0] == '/' ? python_file__short(file) : file;
}

static bool is_unknown(const char *name, const char *file)
{
	return !strcmp(name, PYTHON_UNKNOWN_NAME) && !strcmp(file, PYTHON_UNKNOWN_FILE);
}

int python_frame__text(const struct frame *f, char *buf, size_t size)
{
	const char *name = f->name && f->name[0] ? f->name : "[unknown]";

	if (!f->file)
		return snprintf(buf, size, "%s", name);
	if (is_unknown(name, f->file))
		return snprintf(buf, size, "%s", PYTHON_UNKNOWN_TEXT);
	return snprintf(buf, size, "%s (%s)", name, shown_file(f->file));
}

char *python_frame__text_dup(const struct frame *f)
{
	int len = python_frame__text(f, NULL, 0);
	char *text = len >= 0 ? malloc(len + 1) : NULL;

	if (text)
		python_frame__text(f, text, len + 1);
	return text;
}

int python_frame__location(const struct frame *f, bool with_line, char *buf, size_t size)
{
	if (f->file && with_line && f->line && !is_unknown(f->name, f->file))
		return snprintf(buf, size, "%s (%s:%u)", f->name, shown_file(f->file), f->line);
	return python_frame__text(f, buf, size);
}

bool python_frame__has_python_file(const struct frame *f)
{
	return f->kind == FRAME_PYTHON && f->name && f->name[0] && f->file &&
	       python_file__is_python(f->file) && !strchr(f->file, '\n');
}

int64_t python_frame__intern(struct profile *p, const char *name, const char *file, uint32_t line)
{
	return profile__intern_frame(p, name, file, line, FRAME_PYTHON);
}

/* The '(' that opens the file of "name (file)": the last " (", as a
 * qualname may hold brackets of its own ("<lambda>", "f (x) (y.py)"); NULL
 * where the text does not end in ')'. */
static const char *file_bracket(const char *text, size_t len)
{
	const char *open = NULL;

	if (len >= 4 && text[len - 1] == ')')
		for (open = text + len - 2; open > text && !(open[0] == '(' && open[-1] == ' ');
		     open--)
			;
	return open;
}

int64_t python_frame__intern_text(struct profile *p, const char *text, size_t len,
				  const char *file_field, uint32_t line)
{
	const char *open = file_bracket(text, len), *file;
	size_t file_len;
	char *name;
	int64_t id;

	/* A full path would come back shortened: such text is a name. */
	if (!open || open <= text + 1 || open + 2 == text + len || open[1] == '/') {
		name = strndup(text, len);
		id = name ? profile__intern_frame(p, name, NULL, line, FRAME_PYTHON) : -ENOMEM;
		free(name);
		return id;
	}
	file = open + 1;
	file_len = text + len - 1 - file;
	name = strndup(text, open - 1 - text);
	if (!name)
		return -ENOMEM;
	if (!strcmp(name, PYTHON_UNKNOWN_NAME) && file_len == strlen("python") &&
	    !memcmp(file, "python", file_len)) {
		id = profile__intern_frame(p, name, PYTHON_UNKNOWN_FILE, line, FRAME_PYTHON);
	} else if (file_field && strlen(shown_file(file_field)) == file_len &&
		   !memcmp(shown_file(file_field), file, file_len)) {
		id = profile__intern_frame(p, name, file_field, line, FRAME_PYTHON);
	} else {
		char *own = strndup(file, file_len);

		id = own ? profile__intern_frame(p, name, own, line, FRAME_PYTHON) : -ENOMEM;
		free(own);
	}
	free(name);
	return id;
}

int64_t python_frame__intern_pyspy_text(struct profile *p, const char *text, size_t len)
{
	const char *open = file_bracket(text, len), *file, *colon;
	size_t file_len, digits = 0;
	uint64_t line = 0;
	char *name, *own;
	int64_t id;

	if (!open || open <= text + 1)
		return -ENOENT;
	file = open + 1;
	file_len = text + len - 1 - file;
	/* "file:LINE": a file may hold ':' of its own, the line is the digits
	 * after the last one; py-spy leaves out a line it does not know (0). */
	colon = memrchr(file, ':', file_len);
	if (colon) {
		for (const char *c = colon + 1; c < text + len - 1; c++, digits++)
			if (*c < '0' || *c > '9' || (line = line * 10 + (*c - '0')) > UINT32_MAX)
				break;
		if (digits && colon + 1 + digits == text + len - 1 && line) {
			file_len = colon - file;
		} else {
			line = 0;
		}
	}
	/* Native frames keep their brackets: "f(int)", "operator()",
	 * "thread (0x7F3A2B4C5740)", "memcpy (libc.so.6)", "mm (mm.c:42)". */
	if (!is_python_file(file, file_len) || memchr(file, '\n', file_len))
		return -ENOENT;
	name = strndup(text, open - 1 - text);
	own = strndup(file, file_len);
	id = name && own ? profile__intern_frame(p, name, own, line, FRAME_PYTHON) : -ENOMEM;
	free(name);
	free(own);
	return id;
}

bool python_frame__pyspy_form(const struct profile *p)
{
	bool any = false;

	for (size_t i = 0; i < p->nr_frames; i++) {
		const struct frame *f = &p->frames[i];

		if (f->kind != FRAME_PYTHON)
			continue;
		if (!f->line || !f->name || !f->name[0] || !python_frame__has_python_file(f) ||
		    f->file[0] == '/' || is_unknown(f->name, f->file))
			return false;
		/* Not code of "<string>" alone, which a live session of
		 * "python -c" has too. */
		any |= f->file[0] != '<';
	}
	return any;
}

char *python_frame__pyspy_text_dup(const struct frame *f)
{
	int len = snprintf(NULL, 0, "%s (%s:%u)", f->name, f->file, f->line);
	char *text = len >= 0 ? malloc(len + 1) : NULL;

	if (text)
		snprintf(text, len + 1, "%s (%s:%u)", f->name, f->file, f->line);
	return text;
}
