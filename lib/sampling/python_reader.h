/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Python frames from a running CPython (3.10 to 3.13), with no restart and
 * no flag in the target: finds the interpreter in the target's mappings,
 * tells the BPF side where its thread states and frames lie, resolves the
 * code objects the BPF side reports (process_vm_readv, each one once) and
 * merges the Python frames into the native stack in place of the
 * interpreter's eval-loop frames.
 */
#ifndef LLMPROF_PYTHON_READER_H
#define LLMPROF_PYTHON_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "python.h" /* bpf/python.h: struct python_config, python_stack */
#include "sampling/symbolizer.h"

/* One interpreter version's layout: what the BPF side reads, plus what
 * userspace reads of code, bytes and str objects. */
struct python_layout {
	unsigned int major, minor;
	struct python_config bpf; /* runtime is 0 here */
	uint32_t object_type;
	uint32_t code_filename, code_name, code_qualname, code_linetable;
	uint32_t bytes_size, bytes_data;
	uint32_t unicode_length, unicode_state, unicode_ascii_size, unicode_compact_size;
	/* Thread names (python_threads.c): sys.modules in the interpreter
	 * state, the shared keys of a class's instance dicts. */
	uint32_t interpreter_modules, heaptype_cached_keys;
};

/* The offsets table for a version derived from its headers, or NULL. */
const struct python_layout *python_layout__find(unsigned int major, unsigned int minor);
/* Builds a layout from the _Py_DebugOffsets that 3.13+ keeps at the start
 * of _PyRuntime (bytes, len: a copy of it).  0, -ENOENT without the
 * "xdebugpy" cookie, -ENOTSUP for a version or build not understood. */
int python_layout__from_debug_offsets(const void *bytes, size_t len, struct python_layout *out);
/* How much of _PyRuntime python_layout__from_debug_offsets() reads. */
#define PYTHON_DEBUG_OFFSETS_SIZE 568

struct python_reader;

/* config_fd: the BPF python_config map, filled once the interpreter is
 * found.  0 or -errno. */
int python_reader__new(pid_t pid, int config_fd, struct python_reader **out);
void python_reader__free(struct python_reader *reader);

/* Looks for the interpreter among files not examined before; cheap when
 * nothing new is mapped.  An unsupported version is reported once, then
 * the profile goes on with native frames.  0 or -errno. */
int python_reader__discover(struct python_reader *reader);

/*
 * Turns one sample's Python frames into keys (leaf first) that name the
 * code object and line of each frame, resolving code objects now, while
 * the target still has them.  Called for every sample while draining; it
 * looks for the interpreter again, now and then, until it is found.
 * Returns the number of keys written, or -errno.
 */
int python_reader__keys(struct python_reader *reader, const struct python_stack *stack,
			uint64_t time_ns, uint64_t *keys, size_t max);

/*
 * Symbolizes a user stack (leaf first, as captured) together with its
 * Python keys into frame ids, root first: each eval-loop frame is replaced
 * by the Python frames it ran, interpreter call machinery between Python
 * frames is dropped, and Python frames without a native eval frame to go
 * to are put below (root-ward of) the native frames.  Returns the number
 * of frames, or -errno.
 */
int python_reader__merge(struct python_reader *reader, struct symbolizer *symbolizer,
			 struct profile *profile, const uint64_t *user, size_t nr_user,
			 const uint64_t *keys, size_t nr_keys, uint32_t *frames, size_t max);

/* The name a thread has in Python (threading.Thread's name) where the
 * interpreter knows the thread, else comm (its name in the kernel), which
 * also wins over a name Python made up ("Thread-3 (work)", "MainThread")
 * where the thread set its own.  process_comm: the process's name. */
const char *python_reader__thread_name(struct python_reader *reader, uint32_t tid, const char *comm,
				       const char *process_comm);

/* Python's thread names are read when a thread not named yet runs Python
 * (at most every 100 ms: threads start in bursts) and at the end, while
 * the target still has them. */
void python_reader__saw_thread(struct python_reader *reader, uint32_t tid, uint64_t time_ns);
void python_reader__read_thread_names(struct python_reader *reader);

#endif /* LLMPROF_PYTHON_READER_H */
