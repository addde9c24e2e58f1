/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Python frames in the formats that have a file field (speedscope, pprof):
 * there the name is the function alone ("Model.forward") and the file says
 * it is Python, where the folded form needs "Model.forward (mm.py)_[p]".
 * Both sides of that mapping live here so the writers and readers agree.
 */
#ifndef LLMPROF_PYTHON_FRAME_H
#define LLMPROF_PYTHON_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#include "profile/profile.h"

/* The frame of a code object that could not be read; with a file field it
 * is "[unknown]" in the pseudo-file "<unknown>" (Python's own name for
 * code of no file). */
#define PYTHON_UNKNOWN_FRAME "[unknown] (python)"
#define PYTHON_UNKNOWN_FILE "<unknown>"

/* "torch/nn/modules/linear.py" for site-packages, "json/decoder.py" for the
 * standard library, the base name otherwise: what py-spy shows, and what a
 * Python frame's name carries in brackets.  Points into path. */
const char *python_file__short(const char *path);

/* A file only Python code has: "*.py", "*.pyw", "<frozen ...>", "<string>",
 * "<stdin>", "<unknown>". */
bool python_file__is_python(const char *file);

/*
 * A Python frame as the formats with a file field write it: the function's
 * name (name[0, *name_len)) and its file (the frame's own where that is a
 * full path, else the short file its name carries).  False where that form would not read back as
 * the same frame (a name without its file, a file that does not look like
 * Python's): the writer then keeps the folded form.
 */
bool python_frame__split(const struct frame *frame, size_t *name_len, const char **file,
			 size_t *file_len);

/* The frame a reader makes of a function name and a Python file: "name
 * (short file)", a full path shortened by python_file__short(), any other
 * file as it is.  Returns a frame id or -ENOMEM. */
int64_t python_frame__intern(struct profile *profile, const char *name, const char *file,
			     uint32_t line);

#endif /* LLMPROF_PYTHON_FRAME_H */
