/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The in-memory profile: interned frames, interned stacks, threads, a
 * time-ordered sample list and GPU activity.  Everything that produces a
 * profile (a live session, a parser of folded or speedscope input) fills one
 * of these; everything that writes or compares profiles reads one.
 */
#ifndef LLMPROF_PROFILE_H
#define LLMPROF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/units.h"

/* What a frame is; the folded writer turns the kind into the suffix that
 * flamegraph.pl colours by (_[k], _[i], _[j]) or a prefix ([gpu], [py]).
 * Consumers test the kind, never a name's text. */
enum frame_kind {
	FRAME_NATIVE = 0, /* symbolized user-space function */
	FRAME_INLINE,	  /* function inlined into its caller: "_[i]" */
	FRAME_KERNEL,	  /* kernel function: "_[k]" */
	FRAME_JIT,	  /* from the target's perf map: "_[j]" */
	FRAME_PYTHON,	  /* Python function: name and file; its text "name (file.py)"
			   * + "_[p]" comes from them (python_frame.h) */
	FRAME_GPU,	  /* GPU kernel, memcpy or memset: "[gpu] " prefix */
	FRAME_PROCESS,	  /* root frame naming the process */
	FRAME_THREAD,	  /* thread frame under the process (--per-thread) */
	FRAME_UNKNOWN,	  /* no symbol: name is "[module+0xOFFSET]" */
	/* The recording's own leaves.  Their names keep the mark they are
	 * written with, which readers recognise to give back the kind. */
	FRAME_OFF_CPU,	  /* an off-CPU wait: "[off-cpu] REASON" */
	FRAME_GPU_MEMORY, /* a CUDA memory call or device: "[gpu-mem] CALL SIZE" */
	FRAME_NCCL,	  /* an NCCL call: "[nccl] OP SIZE" */
	FRAME_KIND_COUNT,
};

/* The marks that begin the names of those leaves. */
#define FRAME_OFF_CPU_MARK "[off-cpu] "
#define FRAME_GPU_MEMORY_MARK "[gpu-mem] "
#define FRAME_NCCL_MARK "[nccl] "

/* The unit of a profile's weights: enum profile_unit, in base/units.h. */

struct frame {
	char *name;    /* as shown, without the kind's suffix or [gpu] prefix */
	char *file;    /* source file, or NULL */
	uint32_t line; /* 0 when unknown */
	enum frame_kind kind;
};

struct stack {
	uint32_t *frames; /* frame ids, root first */
	uint32_t depth;
	uint64_t weight; /* sum of the weights of every sample on this stack */
};

struct thread {
	uint32_t pid;
	uint32_t tid;
	char *name;
};

/* One sample on the timeline. */
struct sample {
	uint64_t time_ns; /* since profile->start_ns */
	uint64_t weight;
	uint32_t thread; /* index into profile->threads */
	uint32_t stack;	 /* stack id */
};

/* CUpti_ActivityMemoryKind's numbers for gpu_activity.src/dst_memory. */
enum gpu_memory_kind {
	GPU_MEMORY_UNKNOWN = 0,
	GPU_MEMORY_PAGEABLE = 1,
	GPU_MEMORY_PINNED = 2,
	GPU_MEMORY_DEVICE = 3,
};

enum gpu_activity_kind {
	GPU_KERNEL = 0,
	GPU_MEMCPY,
	GPU_MEMSET,
};

/* One span of GPU work, on the same clock as the samples. */
struct gpu_activity {
	uint64_t start_ns; /* since profile->start_ns */
	uint64_t end_ns;
	uint32_t device;
	uint32_t stream;
	uint32_t correlation;
	enum gpu_activity_kind kind;
	uint64_t bytes;	    /* copies and sets: bytes moved; 0 when unknown */
	uint8_t src_memory; /* copies: CUpti_ActivityMemoryKind of each side */
	uint8_t dst_memory; /* (1 pageable, 2 pinned, 3 device); 0 unknown */
	uint32_t frame;	    /* frame id of the "[gpu] name" leaf */
	uint32_t stack;	    /* launch stack id including the leaf; UINT32_MAX if unattributed */
	/* The process it ran for, as the recording numbered them (its GPU
	 * agent); 0 where unknown (a profile read from a file).  Processes
	 * that each see their GPU as device 0 are told apart by it. */
	uint32_t process;
	/* The API call that launched it (a graph's kernels: the graph launch),
	 * on the samples' clock; launch_tid 0 when there is no launch record. */
	uint64_t launch_ns;	  /* since profile->start_ns; 0 when before the start */
	uint64_t launch_error_ns; /* how far the GPU clock may be off launch_ns's */
	uint32_t launch_pid, launch_tid;
};

/* GPU memory (--gpu-memory): the accounting behind a memory view, which
 * the view's stacks alone do not say, for the findings.  Sites name the
 * calls worth a finding: failed allocations, and memory still live at the
 * end, by the stack that allocated it. */
enum memory_site_kind {
	MEMORY_SITE_FAILED = 0,
	MEMORY_SITE_LIVE_AT_END,
	MEMORY_SITE_FREQUENT, /* the stacks that allocate most often */
};

struct memory_site {
	enum memory_site_kind kind;
	char *call;	/* "cudaMalloc" */
	char *stack;	/* innermost first: "try_huge_batch < main" */
	char *location; /* the innermost Python frame, or NULL */
	char *error;	/* failed: "cudaErrorMemoryAllocation (2)", else NULL */
	uint64_t bytes; /* failed: the largest size asked; else the bytes */
	uint64_t count;
	uint64_t first_ns, last_ns; /* since profile->start_ns */
};

struct memory_facts {
	bool known;
	uint64_t peak;	   /* the highest device's peak, pinned host memory aside */
	uint64_t end_live; /* on every device */
	uint64_t allocated, nr_allocs, nr_frees, nr_failed;
	uint64_t call_ns;     /* time inside the outermost allocation and free calls */
	uint64_t duration_ns; /* of the profile the calls were recorded in */
	uint64_t span_ns;     /* from the first recorded call to the last */
	struct memory_site *sites;
	size_t nr_sites, cap_sites;
};

/* NCCL collectives joined with their kernels (the NCCL probes): per
 * operation, size bucket and communicator size, and the NCCL kernel time
 * no compute kernel hid.  Bandwidths as nccl-tests defines them:
 * algbw = size / time, busbw = algbw x the operation's bus factor. */
struct nccl_row {
	char operation[16];
	uint64_t bucket; /* the power of two at or above each call's bytes */
	uint32_t ranks;	 /* the communicator's size, 0 when unknown */
	uint64_t calls;
	uint64_t bytes;	      /* the calls' own buffers: count x type */
	uint64_t size;	      /* nccl-tests' size: all ranks' for AllGather... */
	uint64_t gpu_ns;      /* of the kernels joined to the calls */
	uint64_t timed_calls; /* calls that were joined to a kernel */
	uint64_t timed_size;  /* their size */
};

struct nccl_facts {
	bool known;
	uint64_t kernel_ns;  /* NCCL GPU work (kernels, a one-rank copy) on every device */
	uint64_t exposed_ns; /* of that, with no compute kernel on the same device */
	uint64_t wall_ns;
	uint32_t devices; /* that ran NCCL kernels */
	struct nccl_row *rows;
	size_t nr_rows;
};

/* nccl-tests' bus factor of an operation on ranks ranks: 2(n-1)/n for
 * AllReduce, (n-1)/n for AllGather, ReduceScatter, AllToAll, Gather and
 * Scatter, else 1. */
double nccl_row__bus_factor(const struct nccl_row *row);
/* The table and the exposed share as text lines, each starting with
 * indent; a malloc'd string, NULL when there is nothing or no memory. */
char *nccl_facts__format(const struct nccl_facts *facts, const char *indent);
/* ,"llmprofNccl":{...}: the facts as a member of a speedscope document. */
void nccl_facts__write_json(const struct nccl_facts *facts, FILE *out);

/*
 * A kind of value a profile holds per stack, as pprof's sample types:
 * {"samples", "count"}, {"cpu", "nanoseconds"}, {"memory-peak", "bytes"}.
 */
struct profile_value_type {
	char *name;
	char *unit_name;	/* as pprof names it: "count", "nanoseconds", "bytes" */
	enum profile_unit unit; /* of the numbers stored */
};

struct hash_index; /* private open-addressing index */
struct id_arena;   /* private storage of the stacks' frame ids */

struct profile {
	char *name;	/* e.g. the command line; may be NULL */
	char *exporter; /* who wrote the input, when parsed */
	/* Read from a file whose Python frames all have a line and a file as
	 * py-spy shows it: folded text keeps py-spy's form for them
	 * (python_frame__pyspy_form()), speedscope a frame per line. */
	bool python_pyspy_form;
	enum profile_unit unit;
	uint64_t start_ns; /* CLOCK_MONOTONIC at the start, 0 when unknown */
	uint64_t duration_ns;
	uint32_t frequency;    /* sampling rate in Hz, 0 when unknown */
	bool random_intervals; /* samples at random intervals around 1/frequency */
	uint64_t samples_taken;
	uint64_t samples_lost;
	uint64_t stack_errors; /* samples whose user or kernel stack could not be read */
	uint32_t stack_limit;  /* user frames a stack is cut at ([truncated]); 0 unknown */
	/* Off-CPU intervals (--off-cpu, --mode wall): recorded with stacks,
	 * too short to record (counted, with their total time), and lost. */
	uint64_t off_cpu_intervals;
	uint64_t off_cpu_short, off_cpu_short_ns;
	uint64_t off_cpu_lost;
	/* Process trees: processes with samples, children that joined the
	 * target set by fork, and forks not followed (the set was full). */
	uint32_t processes;
	uint64_t children_followed, children_lost;

	struct frame *frames;
	size_t nr_frames, cap_frames;
	struct stack *stacks;
	size_t nr_stacks, cap_stacks;
	struct thread *threads;
	size_t nr_threads, cap_threads;
	struct sample *samples; /* time order */
	size_t nr_samples, cap_samples;
	struct gpu_activity *gpu;
	size_t nr_gpu, cap_gpu;
	/* Where the GPU timeline was cut (since start_ns): GPU records after
	 * it are in their stacks' weights but not in gpu[]; 0 when whole.  Busy
	 * and idle shares are the timeline's up to here. */
	uint64_t gpu_timeline_end_ns;
	/* GPU records the agents dropped (no buffer space, a full queue, a
	 * slow reader), and kernels they sent without a name (their name
	 * table was full), which are "[unknown kernel]" leaves. */
	uint64_t gpu_records_dropped, gpu_kernels_unnamed;
	struct memory_facts memory;
	struct nccl_facts nccl;
	/*
	 * Several values per stack (profile_values.c).  With none, the
	 * profile holds one value: each stack's weight, in unit.  With
	 * nr_value_types > 1, value_types[0] describes the weight (and unit
	 * is its unit) and value v > 0 of stack s is
	 * extra_values[s * (nr_value_types - 1) + v - 1], 0 beyond
	 * nr_extra_rows.  The timeline, the GPU activity and the facts
	 * belong to value 0.
	 */
	struct profile_value_type *value_types;
	size_t nr_value_types;
	uint64_t *extra_values;
	size_t nr_extra_rows, cap_extra_values;

	struct hash_index *frame_index;
	struct hash_index *stack_index;
	uint64_t *stack_hashes; /* per stack, its key's in stack_index */
	size_t cap_stack_hashes;
	struct id_arena *stack_frames;
};

struct profile *profile__new(void);
void profile__free(struct profile *profile);

/* Returns a frame id (>= 0) or -ENOMEM.  Equal name, file, line and kind give
 * the same id. */
int64_t profile__intern_frame(struct profile *profile, const char *name, const char *file,
			      uint32_t line, enum frame_kind kind);
/* Returns a stack id (>= 0) or -ENOMEM.  frames are root first. */
int64_t profile__intern_stack(struct profile *profile, const uint32_t *frames, size_t depth);
/* Returns a thread index or -ENOMEM; an existing tid is reused and renamed. */
int64_t profile__add_thread(struct profile *profile, uint32_t pid, uint32_t tid, const char *name);
/* Appends a sample and adds its weight to the stack. */
int profile__add_sample(struct profile *profile, uint32_t thread, uint32_t stack, uint64_t time_ns,
			uint64_t weight);
/* Adds weight to a stack without a timeline entry (folded input). */
void profile__add_weight(struct profile *profile, uint32_t stack, uint64_t weight);
int profile__add_gpu(struct profile *profile, const struct gpu_activity *activity);
/* Appends a copy of the site (its strings duplicated); 0 or -ENOMEM. */
int profile__add_memory_site(struct profile *profile, const struct memory_site *site);

uint64_t profile__total_weight(const struct profile *profile);
/* True when the stack ends in GPU activity (a FRAME_GPU leaf). */
bool profile__stack_is_gpu(const struct profile *profile, uint32_t stack);
/* True when the stack ends in an off-CPU wait (a FRAME_OFF_CPU leaf). */
bool profile__stack_is_off_cpu(const struct profile *profile, uint32_t stack);
/* The reason of an off-CPU leaf, "futex" of "[off-cpu] futex"; the name
 * itself for any other frame. */
const char *frame__off_cpu_reason(const struct frame *frame);
/* True when the stack's wait is a preemption ("[off-cpu] preempted"):
 * the thread was runnable, so its time counts as busy. */
bool profile__stack_is_preempted(const struct profile *profile, uint32_t stack);

/* Samples must be in time order for the writers; sources that append out of
 * order call this once at the end (stable). */
void profile__sort_samples(struct profile *profile);
/* A new profile of the listed processes' threads alone (and the GPU work
 * their stacks launched).  0 or -ENOMEM. */
int profile__select_processes(const struct profile *profile, const uint32_t *pids, size_t nr_pids,
			      struct profile **out);

/*
 * Values per stack.  A profile holds at least one value, the stacks'
 * weight; sources of several (a recording that keeps every view, a pprof
 * file of several sample types) add the others.
 */

/* How many values each stack holds: 1 or more. */
size_t profile__nr_values(const struct profile *profile);
/* The type of value index (< profile__nr_values()): for a profile of one
 * value, what its unit implies ({"samples", "count"}, {"cpu",
 * "nanoseconds"}, {"space", "bytes"}). */
struct profile_value_type profile__value_type(const struct profile *profile, size_t index);
/* The index of the value named name, or -ENOENT. */
int profile__value_index(const struct profile *profile, const char *name);
/* Names the weight (value 0), as a view or sample type is named; 0 or
 * -ENOMEM. */
int profile__name_weight(struct profile *profile, const char *name, const char *unit_name);
/* The name the weight is written under where a format names it (pprof's
 * first sample type, speedscope's views): value 0's name in bytes,
 * "samples" for a count, else "wall" where the stacks written hold GPU
 * activity (gpu), which is not CPU time, and "cpu" where not. */
const char *profile__weight_name(const struct profile *profile, bool gpu);
/* Adds a value type after the others; the profile's stacks hold 0 of it.
 * Returns its index (>= 1) or -ENOMEM; -EEXIST where the name is taken. */
int profile__add_value_type(struct profile *profile, const char *name, const char *unit_name,
			    enum profile_unit unit);
/* The values' names, ", " between them ("cpu, memory-peak"), into buf;
 * snprintf's return value. */
int profile__value_names(const struct profile *profile, char *buf, size_t size);
/* Where from's values go in into: map[i] is into's index of from's value i,
 * the value of the same name and unit.  0, or -ENOENT where the two do not
 * hold the same value types (in any order). */
int profile__value_map(const struct profile *into, const struct profile *from, size_t *map);
/* Gives into, which holds one value and no stacks yet, from's value types
 * in from's order (nothing for a profile of one value).  0 or -errno. */
int profile__copy_value_types(struct profile *into, const struct profile *from);
uint64_t profile__stack_value(const struct profile *profile, uint32_t stack, size_t index);
/* Adds to value index (0: the weight) of a stack; 0 or -ENOMEM. */
int profile__add_stack_value(struct profile *profile, uint32_t stack, size_t index, uint64_t value);
/* Adds from's stack weights as a new value named name (from's frames
 * and stacks interned into profile; from's unit is the value's).  Returns
 * its index or -errno. */
int profile__add_value_profile(struct profile *profile, const struct profile *from,
			       const char *name, const char *unit_name);
/*
 * The profile of one value, for what holds a single value per stack (the
 * folded, SVG and Chrome writers, an HTML view, diff, report): a new
 * profile whose stacks weigh the value index and whose unit is that
 * value's, holding only the stacks with some of it and their frames, with
 * the timeline and GPU activity where index is 0, and the metadata and the
 * facts of the whole.  The caller frees *out.  0, -EINVAL for an index out
 * of range, or -ENOMEM.  A profile of one value gives a copy of itself.
 */
int profile__select_value(const struct profile *profile, size_t index, struct profile **out);

/* The stack of from as one of to's (frame_map: from's frame ids -> to's, -1
 * not yet; scratch: room for the stack's depth); its id or -ENOMEM. */
int64_t profile__copy_stack(const struct profile *from, struct profile *to, uint32_t stack,
			    int64_t *frame_map, uint32_t *scratch);

/* The frame as written in folded output ("name_[k]", "[gpu] name", ...), with
 * ';' and newlines replaced.  Returns a malloc'd string or NULL. */
char *frame__folded_name(const struct frame *frame);

/* The same, a Python frame in py-spy's form ("name (file:LINE)", unmarked)
 * where pyspy_form; see python_frame__pyspy_form(). */
char *frame__folded_text(const struct frame *frame, bool pyspy_form);

/* The frame as reports show it, without marks: its name, but a Python
 * frame's text made of its name and file ("step (model.py)"), written into
 * buf.  Returns the name or buf. */
const char *frame__text(const struct frame *frame, char *buf, size_t size);

/* Per-function totals for summaries, reports and diffs. */
struct function_share {
	uint32_t frame; /* frame id */
	uint64_t self;	/* weight where the frame is the leaf */
	uint64_t total; /* weight of stacks that contain it (once per stack) */
};
/* A function is what the folded output names: frames that differ only by
 * line are one function.  Returns the number of functions, or -ENOMEM; *out
 * is malloc'd and sorted by self weight, then total weight. */
int64_t profile__function_shares(const struct profile *profile, struct function_share **out);

/* qsort order of pointers to GPU activity: process, device, stream,
 * start, end, correlation id. */
int gpu_activity__compare(const void *a, const void *b);
/* True when the GPU activity ran for more than one process: device numbers
 * then name a GPU only with their process (ranks that each see their GPU as
 * device 0). */
bool profile__gpu_several_processes(const struct profile *profile);
/* "NAME, pid P" for a process of the GPU activity, as far as the profile
 * knows it: NAME the root frame of a launch stack of its GPU work ("train
 * [rank 1]"), P its launching process; "process N" where neither is known. */
void profile__gpu_process_label(const struct profile *profile, uint32_t process, char *buf,
				size_t size);

/* order[0 .. nr_threads) = thread indexes by process, then thread id. */
void profile__thread_order(const struct profile *p, uint32_t *order);

/* The samples' indexes grouped by thread, in time order within each:
 * thread t's are (*by_thread)[(*thread_start)[t] .. (*thread_start)[t + 1]).
 * The caller frees both.  0 or -ENOMEM. */
int profile__samples_by_thread(const struct profile *p, uint32_t **by_thread,
			       size_t **thread_start);

#endif /* LLMPROF_PROFILE_H */
