/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Python frames as name and file: the one place their text ("Model.forward
 * (mm.py)", folded adds "_[p]") is made from the two and read back into
 * them, so that every reader, writer and report agrees.
 */
#ifndef LLMPROF_PYTHON_FRAME_H
#define LLMPROF_PYTHON_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#include "profile/profile.h"

/* The frame of a code object that could not be read: "[unknown]" in the
 * pseudo-file "<unknown>" (Python's own name for code of no file), whose
 * text is "[unknown] (python)". */
#define PYTHON_UNKNOWN_NAME "[unknown]"
#define PYTHON_UNKNOWN_FILE "<unknown>"
#define PYTHON_UNKNOWN_TEXT "[unknown] (python)"

/* "torch/nn/modules/linear.py" for site-packages, "json/decoder.py" for the
 * standard library, the base name otherwise: what py-spy shows, and what a
 * Python frame's text carries in brackets.  Points into path. */
const char *python_file__short(const char *path);

/* A file only Python code has: "*.py", "*.pyw", "<frozen ...>", "<string>",
 * "<stdin>", "<unknown>". */
bool python_file__is_python(const char *file);

/*
 * A Python frame is its function's name (struct frame's name, "Model.forward")
 * and its file (file: a full path from a live session, the short file that
 * folded text carries, "?" where the code object had none).  The text the
 * folded form and every report show is derived from the two here alone:
 * "Model.forward (mm.py)", a full path shortened by python_file__short().
 */

/* That text, without the "_[p]" mark, into buf (snprintf's return value:
 * its length, which may be past size). */
int python_frame__text(const struct frame *frame, char *buf, size_t size);

/* The same text, malloc'd; NULL without memory. */
char *python_frame__text_dup(const struct frame *frame);

/* Where a report points at the code: "name (short/file.py:LINE)", without
 * ":LINE" unless with_line and the frame has one, "name" without a file. */
int python_frame__location(const struct frame *frame, bool with_line, char *buf, size_t size);

/*
 * Whether the formats with a file field (speedscope, pprof) can write the
 * frame as its name and file, unmarked: a file that looks like Python's, so
 * that their readers know it again.  Otherwise they write the folded text.
 */
bool python_frame__has_python_file(const struct frame *frame);

/*
 * The frame a reader makes of a function name and a Python file (speedscope's
 * and pprof's name and file fields), interned as they are.  Returns a frame
 * id or -ENOMEM.
 */
int64_t python_frame__intern(struct profile *profile, const char *name, const char *file,
			     uint32_t line);

/*
 * The frame a reader makes of Python frame text without its mark,
 * text[0, len): "name (file)" split at the last " (", which gives the text
 * back; file_field, where the format has one and the text's file is its
 * short form, is kept as the frame's file.  Text that does not split (no
 * file, a full path, which the text would shorten) is the name alone.
 * Returns a frame id or -ENOMEM.
 */
int64_t python_frame__intern_text(struct profile *profile, const char *text, size_t len,
				  const char *file_field, uint32_t line);

/*
 * py-spy's folded Python frame, unmarked: "name (file:LINE)", or "name
 * (file)" where py-spy knows no line (--nolineno), file a Python file as
 * python_file__is_python() knows one (py-spy's short path, or the full one
 * with --full-filenames).  Its native frames (--native, "memcpy
 * (libc.so.6)", "mm (mm.c:42)", "0x7f12 (?)"), its roots ("process
 * 4242:\"python train.py\"", "thread (0x7F3A2B4C5740)") and C++ names'
 * own brackets ("f(int)", "operator()") are not.  text[0, len) is interned
 * as its name, file and line: returns the frame id, -ENOENT where the text
 * is no such frame, or -ENOMEM.
 */
int64_t python_frame__intern_pyspy_text(struct profile *profile, const char *text, size_t len);

/*
 * Whether a profile read from a file writes its Python frames in folded
 * text in py-spy's form, "name (file:LINE)" unmarked, rather than llmprof's
 * "name (file)_[p]" that leaves the line out (profile->python_pyspy_form):
 * where every Python frame has a line and a file as py-spy shows it (not a
 * full path), some of them a .py file's (not "<string>" alone), as py-spy's
 * raw and speedscope output have, so that such a file comes back as it
 * was, through speedscope and pprof too.
 */
bool python_frame__pyspy_form(const struct profile *profile);

/* The frame's text in py-spy's form, "name (file:LINE)", malloc'd; NULL
 * without memory. */
char *python_frame__pyspy_text_dup(const struct frame *frame);

#endif /* LLMPROF_PYTHON_FRAME_H */
