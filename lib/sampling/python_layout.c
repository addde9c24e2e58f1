// SPDX-License-Identifier: GPL-2.0
/*
 * Where each CPython version keeps what the BPF walker reads: a table of
 * struct offsets per minor version up to 3.12, and from 3.13 on the
 * interpreter's own _Py_DebugOffsets, checked before BPF trusts it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "sampling/python_reader.h"

#define NO PYTHON_NO_OFFSET

/*
 * Offsets derived from each version's own headers (internal ones
 * included) by tests/python/python_offsets.c; tests/python/offsets.sh
 * checks this table against every installed interpreter's headers.  They
 * hold for every patch release of a minor version (CPython keeps these
 * structs stable within one).  3.13 and later are read from the
 * interpreter's _Py_DebugOffsets instead; its row here is what the test
 * compares those with.
 */
/* One field a line: easier to hold against the generator output. */
/* clang-format off */
static const struct python_layout layouts[] = {
	{
		.major = 3,
		.minor = 10,
		.bpf = {
			.runtime_interpreters_head = 32,
			.interpreter_next = 0,
			.interpreter_threads_head = 8,
			.thread_next = 8,
			.thread_thread_id = 176,
			.thread_frame = 24,
			.cframe_current_frame = NO,
			.frame_read_size = 104,
			.frame_previous = 24,
			.frame_code = 32,
			.frame_instr = 96,
			.frame_owner = NO,
			.frame_is_entry = NO,
			.owner_cstack = 0,
			.code_adaptive = 0,
			.code_firstlineno = 40,
			.entry_mode = PYTHON_ENTRY_EVERY_FRAME,
			.instr_mode = PYTHON_INSTR_LASTI,
		},
		.object_type = 8,
		.code_filename = 104,
		.code_name = 112,
		.code_qualname = NO,
		.code_linetable = 120,
		.bytes_size = 16,
		.bytes_data = 32,
		.unicode_length = 16,
		.unicode_state = 32,
		.unicode_ascii_size = 48,
		.unicode_compact_size = 72,
		.interpreter_modules = 856,
		.heaptype_cached_keys = 872,
	},
	{
		.major = 3,
		.minor = 11,
		.bpf = {
			.runtime_interpreters_head = 40,
			.interpreter_next = 0,
			.interpreter_threads_head = 16,
			.thread_next = 8,
			.thread_thread_id = 152,
			.thread_frame = 56,
			.cframe_current_frame = 8,
			.frame_read_size = 72,
			.frame_previous = 48,
			.frame_code = 32,
			.frame_instr = 56,
			.frame_owner = 69,
			.frame_is_entry = 68,
			.owner_cstack = 0,
			.code_adaptive = 184,
			.code_firstlineno = 72,
			.entry_mode = PYTHON_ENTRY_FLAG,
			.instr_mode = PYTHON_INSTR_POINTER,
		},
		.object_type = 8,
		.code_filename = 112,
		.code_name = 120,
		.code_qualname = 128,
		.code_linetable = 136,
		.bytes_size = 16,
		.bytes_data = 32,
		.unicode_length = 16,
		.unicode_state = 32,
		.unicode_ascii_size = 48,
		.unicode_compact_size = 72,
		.interpreter_modules = 888,
		.heaptype_cached_keys = 872,
	},
	{
		.major = 3,
		.minor = 12,
		.bpf = {
			.runtime_interpreters_head = 40,
			.interpreter_next = 0,
			.interpreter_threads_head = 72,
			.thread_next = 8,
			.thread_thread_id = 136,
			.thread_frame = 56,
			.cframe_current_frame = 0,
			.frame_read_size = 72,
			.frame_previous = 8,
			.frame_code = 0,
			.frame_instr = 56,
			.frame_owner = 70,
			.frame_is_entry = NO,
			.owner_cstack = 3,
			.code_adaptive = 192,
			.code_firstlineno = 68,
			.entry_mode = PYTHON_ENTRY_CSTACK_OWNER,
			.instr_mode = PYTHON_INSTR_POINTER,
		},
		.object_type = 8,
		.code_filename = 112,
		.code_name = 120,
		.code_qualname = 128,
		.code_linetable = 136,
		.bytes_size = 16,
		.bytes_data = 32,
		.unicode_length = 16,
		.unicode_state = 32,
		.unicode_ascii_size = 40,
		.unicode_compact_size = 56,
		.interpreter_modules = 944,
		.heaptype_cached_keys = 880,
	},
	{
		.major = 3,
		.minor = 13,
		.bpf = {
			.runtime_interpreters_head = 632,
			.interpreter_next = 7264,
			.interpreter_threads_head = 7344,
			.thread_next = 8,
			.thread_thread_id = 152,
			.thread_frame = 72,
			.cframe_current_frame = NO,
			.frame_read_size = 72,
			.frame_previous = 8,
			.frame_code = 0,
			.frame_instr = 56,
			.frame_owner = 70,
			.frame_is_entry = NO,
			.owner_cstack = 3,
			.code_adaptive = 200,
			.code_firstlineno = 68,
			.entry_mode = PYTHON_ENTRY_CSTACK_OWNER,
			.instr_mode = PYTHON_INSTR_POINTER,
		},
		.object_type = 8,
		.code_filename = 112,
		.code_name = 120,
		.code_qualname = 128,
		.code_linetable = 136,
		.bytes_size = 16,
		.bytes_data = 32,
		.unicode_length = 16,
		.unicode_state = 32,
		.unicode_ascii_size = 40,
		.unicode_compact_size = 56,
		.interpreter_modules = 7656,
		.heaptype_cached_keys = 880,
	},
};
/* clang-format on */

const struct python_layout *python_layout__find(unsigned int major, unsigned int minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

/* The prefix of 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h)
 * that llmprof reads: every field is a uint64_t. */
struct debug_offsets_313 {
	char cookie[8];
	uint64_t version;
	uint64_t free_threaded;
	struct {
		uint64_t size, finalizing, interpreters_head;
	} runtime_state;
	struct {
		uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
		    ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
		    gil_runtime_state_locked, gil_runtime_state_holder;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
		    datastack_chunk, status;
	} thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner;
	} interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
		    localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct {
		uint64_t size, ob_type;
	} pyobject;
	struct {
		uint64_t size, tp_name, tp_repr, tp_flags;
	} type_object;
	struct {
		uint64_t size, ob_item, ob_size;
	} tuple_object;
	struct {
		uint64_t size, ob_item, ob_size;
	} list_object;
	struct {
		uint64_t size, ma_keys, ma_values;
	} dict_object;
	struct {
		uint64_t size, ob_fval;
	} float_object;
	struct {
		uint64_t size, lv_tag, ob_digit;
	} long_object;
	struct {
		uint64_t size, ob_size, ob_sval;
	} bytes_object;
	struct {
		uint64_t size, state, length, asciiobject_size;
	} unicode_object;
};

_Static_assert(sizeof(struct debug_offsets_313) == PYTHON_DEBUG_OFFSETS_SIZE,
	       "PYTHON_DEBUG_OFFSETS_SIZE is the size of the prefix read");

#define DEBUG_COOKIE "xdebugpy"
/* FRAME_OWNED_BY_CSTACK in 3.13's pycore_frame.h; not in the debug offsets. */
#define OWNER_CSTACK_313 3

static bool fits_u32(uint64_t value)
{
	return value < NO;
}

int python_layout__from_debug_offsets(const void *bytes, size_t len, struct python_layout *out)
{
	struct debug_offsets_313 d;
	struct python_layout l = {0};

	if (len < sizeof(d.cookie) || memcmp(bytes, DEBUG_COOKIE, sizeof(d.cookie)))
		return -ENOENT;
	if (len < sizeof(d))
		return -ENOTSUP;
	memcpy(&d, bytes, sizeof(d));
	l.major = d.version >> 24 & 0xff;
	l.minor = d.version >> 16 & 0xff;
	/* The struct changes between minor versions; only 3.13's is known.
	 * Free-threaded builds lay objects out differently. */
	if (l.major != 3 || l.minor != 13 || d.free_threaded)
		return -ENOTSUP;
	l.bpf.runtime_interpreters_head = d.runtime_state.interpreters_head;
	l.bpf.interpreter_next = d.interpreter_state.next;
	l.bpf.interpreter_threads_head = d.interpreter_state.threads_head;
	l.bpf.thread_next = d.thread_state.next;
	l.bpf.thread_thread_id = d.thread_state.thread_id;
	l.bpf.thread_frame = d.thread_state.current_frame;
	l.bpf.cframe_current_frame = NO;
	l.bpf.frame_read_size = d.interpreter_frame.localsplus;
	l.bpf.frame_previous = d.interpreter_frame.previous;
	l.bpf.frame_code = d.interpreter_frame.executable;
	l.bpf.frame_instr = d.interpreter_frame.instr_ptr;
	l.bpf.frame_owner = d.interpreter_frame.owner;
	l.bpf.frame_is_entry = NO;
	l.bpf.owner_cstack = OWNER_CSTACK_313;
	l.bpf.code_adaptive = d.code_object.co_code_adaptive;
	l.bpf.code_firstlineno = d.code_object.firstlineno;
	l.bpf.entry_mode = PYTHON_ENTRY_CSTACK_OWNER;
	l.bpf.instr_mode = PYTHON_INSTR_POINTER;
	l.object_type = d.pyobject.ob_type;
	l.code_filename = d.code_object.filename;
	l.code_name = d.code_object.name;
	l.code_qualname = d.code_object.qualname;
	l.code_linetable = d.code_object.linetable;
	l.bytes_size = d.bytes_object.ob_size;
	l.bytes_data = d.bytes_object.ob_sval;
	l.unicode_length = d.unicode_object.length;
	l.unicode_state = d.unicode_object.state;
	l.unicode_ascii_size = d.unicode_object.asciiobject_size;
	l.interpreter_modules = d.interpreter_state.imports_modules;
	/* Not in the debug offsets: the table's, from 3.13's headers. */
	l.heaptype_cached_keys = python_layout__find(3, 13)->heaptype_cached_keys;
	/* PyCompactUnicodeObject adds utf8_length and utf8. */
	l.unicode_compact_size = d.unicode_object.asciiobject_size + 16;
	if (!fits_u32(d.runtime_state.interpreters_head) || !fits_u32(d.interpreter_state.next) ||
	    !fits_u32(d.interpreter_state.threads_head) || !fits_u32(d.thread_state.thread_id) ||
	    !fits_u32(d.thread_state.current_frame) || !fits_u32(d.code_object.co_code_adaptive) ||
	    !fits_u32(d.interpreter_state.imports_modules) ||
	    d.interpreter_frame.localsplus > PYTHON_FRAME_READ_MAX ||
	    d.interpreter_frame.previous + 8 > d.interpreter_frame.localsplus ||
	    d.interpreter_frame.executable + 8 > d.interpreter_frame.localsplus ||
	    d.interpreter_frame.instr_ptr + 8 > d.interpreter_frame.localsplus ||
	    d.interpreter_frame.owner + 1 > d.interpreter_frame.localsplus)
		return -ENOTSUP;
	*out = l;
	return 0;
}
