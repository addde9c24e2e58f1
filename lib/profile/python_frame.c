// SPDX-License-Identifier: GPL-2.0
/*
 * Python frames with a file field: the function name and file the speedscope
 * and pprof writers write, and the frame their readers make of them again;
 * see python_frame.h.
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

bool python_frame__split(const struct frame *f, size_t *name_len, const char **file,
			 size_t *file_len)
{
	const char *name = f->name, *open;
	size_t len, inner;

	if (f->kind != FRAME_PYTHON || !name)
		return false;
	if (!strcmp(name, PYTHON_UNKNOWN_FRAME)) {
		*name_len = strlen("[unknown]");
		*file = PYTHON_UNKNOWN_FILE;
		*file_len = strlen(PYTHON_UNKNOWN_FILE);
		return true;
	}
	len = strlen(name);
	/* "qualname (short/file.py)": the last " (" opens the file, as a
	 * qualname may hold brackets of its own ("<lambda>", "<genexpr>"). */
	if (len < 4 || name[len - 1] != ')')
		return false;
	for (open = name + len - 2; open > name && !(open[0] == '(' && open[-1] == ' '); open--)
		;
	if (open <= name + 1)
		return false;
	inner = name + len - 1 - (open + 1);
	/* A full path in the name would be shortened when read back. */
	if (!is_python_file(open + 1, inner) || open[1] == '/' || memchr(open + 1, '\n', inner))
		return false;
	*name_len = open - 1 - name;
	/* The frame's own file where it is a full path to the one its name
	 * carries, else the short file from the name: a reader shortens a
	 * full path as the name did and takes any other file as it is. */
	if (f->file && f->file[0] == '/' && is_python_file(f->file, strlen(f->file))) {
		const char *short_file = python_file__short(f->file);

		if (strlen(short_file) == inner && !memcmp(short_file, open + 1, inner)) {
			*file = f->file;
			*file_len = strlen(f->file);
			return true;
		}
	}
	*file = open + 1;
	*file_len = inner;
	return true;
}

int64_t python_frame__intern(struct profile *p, const char *name, const char *file, uint32_t line)
{
	const char *short_file = file[0] == '/' ? python_file__short(file) : file;
	size_t len;
	char *full;
	int64_t id;

	if (!strcmp(file, PYTHON_UNKNOWN_FILE) && !strcmp(name, "[unknown]"))
		return profile__intern_frame(p, PYTHON_UNKNOWN_FRAME, NULL, line, FRAME_PYTHON);
	len = strlen(name) + strlen(short_file) + 4;
	full = malloc(len);
	if (!full)
		return -ENOMEM;
	snprintf(full, len, "%s (%s)", name, short_file);
	id = profile__intern_frame(p, full, file, line, FRAME_PYTHON);
	free(full);
	return id;
}
