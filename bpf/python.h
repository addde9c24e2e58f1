/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by the BPF Python stack reader and userspace. */
#ifndef LLMPROF_BPF_PYTHON_H
#define LLMPROF_BPF_PYTHON_H

#define PYTHON_MAX_FRAMES 64
/* Bytes of a frame read at once; every frame field read lies inside. */
#define PYTHON_FRAME_READ_MAX 128
/* An offset that the interpreter's layout does not have. */
#define PYTHON_NO_OFFSET 0xffffffffu

/* How the interpreter marks the frames that start a C-level call of its
 * eval loop (_PyEval_EvalFrameDefault). */
enum python_entry_mode {
	PYTHON_ENTRY_EVERY_FRAME = 0, /* 3.10: one eval call per frame */
	PYTHON_ENTRY_FLAG,	      /* 3.11: the frame's is_entry byte */
	PYTHON_ENTRY_CSTACK_OWNER,    /* 3.12+: a marker frame owned by the C stack */
};

/* What struct python_frame.instr is measured from. */
enum python_instr_mode {
	PYTHON_INSTR_LASTI = 0, /* 3.10: int f_lasti, in code units */
	PYTHON_INSTR_POINTER,	/* 3.11+: pointer into co_code_adaptive */
};

/* Where to find things in one interpreter; written by userspace into the
 * python_config map once it has found the interpreter.  runtime == 0 means
 * no interpreter (yet): the BPF side records no Python frames. */
struct python_config {
	__u64 runtime; /* address of _PyRuntime in the target */
	__u32 runtime_interpreters_head;
	__u32 interpreter_next;
	__u32 interpreter_threads_head;
	__u32 thread_next;
	__u32 thread_thread_id;	    /* pthread_t, which is the thread's fsbase */
	__u32 thread_frame;	    /* frame, cframe or current_frame */
	__u32 cframe_current_frame; /* PYTHON_NO_OFFSET without a _PyCFrame */
	__u32 frame_read_size;	    /* <= PYTHON_FRAME_READ_MAX */
	__u32 frame_previous;
	__u32 frame_code;
	__u32 frame_instr;
	__u32 frame_owner;    /* PYTHON_NO_OFFSET before 3.11 */
	__u32 frame_is_entry; /* PYTHON_NO_OFFSET but in 3.11 */
	__u32 owner_cstack;   /* owner value of C-stack marker frames */
	__u32 code_adaptive;  /* offset of co_code_adaptive (3.11+) */
	__u32 code_firstlineno;
	__u32 entry_mode; /* enum python_entry_mode */
	__u32 instr_mode; /* enum python_instr_mode */
	__u32 searching;  /* runtime == 0: wake userspace at every sample */
};

struct python_frame {
	__u64 code;  /* PyCodeObject * in the target */
	__s32 instr; /* byte offset of the current instruction; < 0 before the first */
	__s32 stamp; /* co_firstlineno as read at sample time, to notice reuse */
};

enum python_stack_flags {
	PYTHON_STACK_TRUNCATED = 1 << 0,  /* more than PYTHON_MAX_FRAMES frames */
	PYTHON_STACK_READ_ERROR = 1 << 1, /* a frame could not be read */
};

/* The Python frames of the sampled thread; nr_frames is 0 when the thread
 * runs no Python or Python frames are off. */
struct python_stack {
	__u32 nr_frames;
	__u32 flags;	  /* enum python_stack_flags */
	__u64 entry_mask; /* bit i: frames[i] is the first its eval call ran */
	struct python_frame frames[PYTHON_MAX_FRAMES]; /* leaf first */
};

#endif /* LLMPROF_BPF_PYTHON_H */
