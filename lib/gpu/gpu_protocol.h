/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The wire protocol between the CUPTI agent (libllmprof_cupti.so, inside the
 * target) and llmprof (lib/agent_server.c).  Both are built from one tree and
 * ship in one binary, so there is no negotiation: the hello carries
 * GPU_PROTOCOL_VERSION and llmprof drops an agent that speaks another one.
 *
 * Transport: an AF_UNIX SOCK_SEQPACKET socket that llmprof listens on.  Its
 * name reaches the agent in the environment variable LLMPROF_AGENT_SOCKET
 * (record mode) or as the argument of llmprof_agent_start() (attach mode).
 * A name starting with '@' is in the abstract namespace ("@llmprof-..."),
 * anything else is a filesystem path.  llmprof checks SO_PEERCRED on accept
 * (root or the target's user only) and the agent checks that the listener is
 * root or its own user.
 *
 * Framing: every message is a struct gpu_message_header followed by the
 * type's fixed struct and, for the types that say so, text bytes (not NUL
 * terminated; their count is in the fixed struct).  length counts the whole
 * message, header included, and is a multiple of 8 (zero padding at the
 * end), so consecutive messages stay 8-byte aligned.  A packet carries one
 * or more whole messages and never splits one; the receiver parses it as a
 * byte stream anyway.  Fields are host byte order: both ends share a host.
 *
 * A type's fixed struct may grow at its end within one protocol version:
 * the receiver takes a shorter one (from an agent copy an older llmprof
 * left loaded in a process) with the fields it lacks 0, and an older
 * receiver reads the part it knows of a longer one.  Anything else changes
 * GPU_PROTOCOL_VERSION.
 *
 * Clock: every time is CLOCK_MONOTONIC in nanoseconds.  The agent either
 * makes CUPTI use that clock (cuptiActivityRegisterTimestampCallback) or
 * adds a measured offset to each CUPTI timestamp before sending it.
 *
 * Correlation ids are CUPTI's, unique within one process.  A kernel, memcpy
 * or memset carries the correlation id of the API call that launched it; a
 * graph launch's kernels all carry the cudaGraphLaunch's.  A driver launch
 * made inside a runtime launch on the same thread is sent with
 * parent_correlation set to the runtime call's, so either id leads to the
 * outermost launch; one that carries the runtime call's own id (CUPTI
 * often gives both the same) is not sent at all; only outermost launches fire the llmprof:launch
 * probe, and at most LLMPROF_AGENT_PROBE_RATE (default 10000) per second and thread, graph launches
 * always (GPU_LAUNCH_PROBED says which did).
 *
 * Before CUPTI 13.1 Update 1 the records of a graph launch's work carry
 * wrong correlation ids in every session after a process's first: there
 * the agent sends them with correlation 0 (the launch unknown), and says
 * so once in a NOTICE.
 *
 * Order: HELLO first; then NAME before the first KERNEL that uses its id;
 * LAUNCH, KERNEL, MEMCPY, MEMSET and DROPPED in any order; GOODBYE last.
 * llmprof may send STOP at any time: the agent flushes what CUPTI holds,
 * sends DROPPED and GOODBYE, stops CUPTI and closes.  When the socket closes
 * without STOP, the agent stops CUPTI and discards what it held.
 */
#ifndef LLMPROF_GPU_PROTOCOL_H
#define LLMPROF_GPU_PROTOCOL_H

#include <linux/types.h>

#define GPU_PROTOCOL_VERSION 1
/* Largest message and largest packet, header included. */
#define GPU_MESSAGE_MAX 65536
/* Longest text a message carries; longer kernel names are cut. */
#define GPU_TEXT_MAX (GPU_MESSAGE_MAX - 64)
/* Environment variable with the socket name, for record mode. */
#define GPU_AGENT_SOCKET_ENV "LLMPROF_AGENT_SOCKET"

enum gpu_message_type {
	/* agent -> llmprof */
	GPU_MSG_HELLO = 1,	      /* struct gpu_hello + cupti path text */
	GPU_MSG_NAME = 2,	      /* struct gpu_name + name text */
	GPU_MSG_KERNEL = 3,	      /* struct gpu_kernel */
	GPU_MSG_MEMCPY = 4,	      /* struct gpu_memcpy */
	GPU_MSG_MEMSET = 5,	      /* struct gpu_memset */
	GPU_MSG_LAUNCH = 6,	      /* struct gpu_launch */
	GPU_MSG_DROPPED = 7,	      /* struct gpu_dropped */
	GPU_MSG_OTHER_SUBSCRIBER = 8, /* struct gpu_other_subscriber + tool name text */
	GPU_MSG_ERROR = 9,	      /* struct gpu_error + text */
	GPU_MSG_GOODBYE = 10,	      /* struct gpu_goodbye */
	GPU_MSG_NOTICE = 11,	      /* struct gpu_error + text: data kept, with a caveat */
	/* llmprof -> agent */
	GPU_MSG_STOP = 64, /* header only */
};

struct gpu_message_header {
	__u32 type;
	__u32 length;
};

/* How the agent put CUPTI's timestamps on CLOCK_MONOTONIC. */
enum gpu_clock_mode {
	GPU_CLOCK_CALLBACK = 1, /* CUPTI calls our clock_gettime(CLOCK_MONOTONIC) */
	GPU_CLOCK_OFFSET = 2,	/* agent adds clock_offset_ns to CUPTI's clock */
};

enum gpu_agent_mode {
	GPU_AGENT_RECORD = 1, /* InitializeInjection() through CUDA_INJECTION64_PATH */
	GPU_AGENT_ATTACH = 2, /* llmprof_agent_start() after injection */
};

struct gpu_hello {
	__u32 protocol_version; /* GPU_PROTOCOL_VERSION */
	__u32 pid;
	__u32 cupti_version;	/* cuptiGetVersion(), 0 when unknown */
	__u32 clock_mode;	/* enum gpu_clock_mode */
	__s64 clock_offset_ns;	/* added to CUPTI times in GPU_CLOCK_OFFSET mode */
	__u64 clock_error_ns;	/* half the best round trip of the offset measurement */
	__u64 start_ns;		/* when the agent started */
	__u32 agent_mode;	/* enum gpu_agent_mode */
	__u32 path_length;	/* bytes of the libcupti path that follow */
	char agent_version[16]; /* NUL padded */
};

/* Kernel names are sent once per connection and then referred to by id;
 * id 0 is never sent and means "unknown". */
struct gpu_name {
	__u32 id;
	__u32 length; /* bytes of the mangled name that follow */
};

struct gpu_kernel {
	__u64 start_ns;
	__u64 end_ns;
	__u64 graph_node_id; /* 0 unless launched by a graph */
	__u32 device;
	__u32 context;
	__u32 stream;
	__u32 correlation;
	__u32 name_id;
	__u32 graph_id; /* 0 unless launched by a graph */
	__s32 grid[3];
	__s32 block[3];
	__u32 shared_memory; /* static + dynamic bytes per block */
	__u32 registers;     /* per thread */
};

/* Copy kinds, as CUpti_ActivityMemcpyKind numbers them. */
enum gpu_memcpy_kind {
	GPU_MEMCPY_UNKNOWN = 0,
	GPU_MEMCPY_HTOD = 1,
	GPU_MEMCPY_DTOH = 2,
	GPU_MEMCPY_HTOA = 3,
	GPU_MEMCPY_ATOH = 4,
	GPU_MEMCPY_ATOA = 5,
	GPU_MEMCPY_ATOD = 6,
	GPU_MEMCPY_DTOA = 7,
	GPU_MEMCPY_DTOD = 8,
	GPU_MEMCPY_HTOH = 9,
	GPU_MEMCPY_PTOP = 10,
};

struct gpu_memcpy {
	__u64 start_ns;
	__u64 end_ns;
	__u64 bytes;
	__u64 graph_node_id;
	__u32 device;
	__u32 context;
	__u32 stream;
	__u32 correlation;	   /* the driver call's */
	__u32 runtime_correlation; /* the runtime call's, 0 when none */
	__u32 graph_id;
	__u8 copy_kind; /* enum gpu_memcpy_kind */
	__u8 src_kind;	/* CUpti_ActivityMemoryKind */
	__u8 dst_kind;
	__u8 flags; /* CUpti_ActivityFlag bits: async */
	__u32 pad;
};

struct gpu_memset {
	__u64 start_ns;
	__u64 end_ns;
	__u64 bytes;
	__u64 graph_node_id;
	__u32 device;
	__u32 context;
	__u32 stream;
	__u32 correlation;
	__u32 graph_id;
	__u32 value;
};

/* gpu_launch.flags */
#define GPU_LAUNCH_GRAPH (1U << 0)  /* cudaGraphLaunch, cuGraphLaunch */
#define GPU_LAUNCH_MEMORY (1U << 1) /* a memcpy or memset call */
#define GPU_LAUNCH_PROBED (1U << 2) /* the llmprof:launch probe fired for it */

/* Callback domains, as CUpti_CallbackDomain numbers them. */
#define GPU_DOMAIN_DRIVER 1
#define GPU_DOMAIN_RUNTIME 2

/* One launching API call, taken on the launching thread at API entry. */
struct gpu_launch {
	__u64 time_ns;
	__u32 correlation;
	__u32 parent_correlation; /* enclosing runtime call on this thread, or 0 */
	__u32 tid;
	__u32 callback_id;   /* CUPTI cbid within domain */
	__u32 domain;	     /* GPU_DOMAIN_* */
	__u32 flags;	     /* GPU_LAUNCH_* */
	__u32 graph_exec_id; /* cuptiGetGraphExecId() for graph launches, else 0 */
	__u32 pad;
};

/* Running totals since the agent started; a later message replaces an
 * earlier one. */
struct gpu_dropped {
	__u64 activity_records; /* CUPTI dropped: no buffer space */
	__u64 launch_records;	/* agent's launch queue was full */
	__u64 messages;		/* llmprof did not read in time */
	__u64 incomplete;	/* records without valid times: work still
				 * running at stop, cut off by the forced flush */
	/* Added within version 1: absent (0) from older agents. */
	__u64 unnamed_kernels; /* kernels sent without a name: the agent's
				* name table was full */
};

struct gpu_other_subscriber {
	__u32 result; /* CUptiResult of cuptiSubscribe */
	__u32 length; /* bytes of the other tool's name that follow, may be 0 */
};

struct gpu_error {
	__s32 error;	    /* -errno, or 0 when cupti_result says it */
	__u32 cupti_result; /* CUptiResult, 0 when not a CUPTI failure */
	__u32 length;	    /* bytes of text that follow */
	__u32 pad;
};

struct gpu_goodbye {
	__u64 kernels; /* records sent */
	__u64 memcpys;
	__u64 memsets;
	__u64 launches;
};

/* Whole message sizes of the fixed parts, for both ends. */
#define GPU_MSG_SIZE(body) (sizeof(struct gpu_message_header) + sizeof(body))
/* Rounds a message length up to the framing's 8 bytes. */
#define GPU_MSG_ALIGN(len) (((len) + 7) & ~(__u32)7)

#endif /* LLMPROF_GPU_PROTOCOL_H */
