// SPDX-License-Identifier: GPL-2.0
/*
 * Prints the CPython struct offsets that llmprof reads, as computed by the
 * compiler from one installed version's own headers (internal ones
 * included).  Built once per installed version by the offsets test, which
 * compares the output with the table compiled into llmprof; the same output
 * is how that table was made.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>

#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#endif
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>

#define PRINT(name, value) printf("%s %lu\n", name, (unsigned long)(value))

int main(void)
{
	printf("version %d.%d\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
	PRINT("runtime_interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
	PRINT("interpreter_next", offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030b0000
	PRINT("interpreter_threads_head", offsetof(PyInterpreterState, threads.head));
#else
	PRINT("interpreter_threads_head", offsetof(PyInterpreterState, tstate_head));
#endif
	PRINT("thread_next", offsetof(PyThreadState, next));
	PRINT("thread_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030d0000
	PRINT("thread_frame", offsetof(PyThreadState, current_frame));
#elif PY_VERSION_HEX >= 0x030b0000
	PRINT("thread_frame", offsetof(PyThreadState, cframe));
	PRINT("cframe_current_frame", offsetof(_PyCFrame, current_frame));
#else
	PRINT("thread_frame", offsetof(PyThreadState, frame));
#endif
#if PY_VERSION_HEX >= 0x030b0000
	PRINT("frame_previous", offsetof(_PyInterpreterFrame, previous));
#if PY_VERSION_HEX >= 0x030d0000
	PRINT("frame_code", offsetof(_PyInterpreterFrame, f_executable));
	PRINT("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#else
	PRINT("frame_code", offsetof(_PyInterpreterFrame, f_code));
	PRINT("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
#endif
	PRINT("frame_owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030c0000
	PRINT("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
#else
	PRINT("owner_cstack", FRAME_OWNED_BY_CSTACK);
#endif
	/* Everything read of a frame lies before its locals. */
	PRINT("frame_read_size", offsetof(_PyInterpreterFrame, localsplus));
#else
	PRINT("frame_previous", offsetof(PyFrameObject, f_back));
	PRINT("frame_code", offsetof(PyFrameObject, f_code));
	PRINT("frame_instr", offsetof(PyFrameObject, f_lasti));
	PRINT("frame_read_size", (offsetof(PyFrameObject, f_lasti) + sizeof(int) + 7) / 8 * 8);
#endif
	PRINT("object_type", offsetof(PyObject, ob_type));
	PRINT("code_filename", offsetof(PyCodeObject, co_filename));
	PRINT("code_name", offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030b0000
	PRINT("code_qualname", offsetof(PyCodeObject, co_qualname));
	PRINT("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#endif
	PRINT("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
	PRINT("code_linetable", offsetof(PyCodeObject, co_linetable));
	PRINT("bytes_size", offsetof(PyVarObject, ob_size));
	PRINT("bytes_data", offsetof(PyBytesObject, ob_sval));
	PRINT("unicode_length", offsetof(PyASCIIObject, length));
	PRINT("unicode_state", offsetof(PyASCIIObject, state));
	PRINT("unicode_ascii_size", sizeof(PyASCIIObject));
	PRINT("unicode_compact_size", sizeof(PyCompactUnicodeObject));
	/* Thread names: sys.modules, and a class's shared instance keys. */
#if PY_VERSION_HEX >= 0x030c0000
	PRINT("interpreter_modules", offsetof(PyInterpreterState, imports.modules));
#else
	PRINT("interpreter_modules", offsetof(PyInterpreterState, modules));
#endif
	PRINT("heaptype_cached_keys", offsetof(PyHeapTypeObject, ht_cached_keys));
	return 0;
}
