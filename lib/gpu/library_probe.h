/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the probe families on a library's functions share (GPU memory on
 * libcuda/libcudart, NCCL on libnccl): finding the libraries in the target's
 * maps, now and at each load the dynamic loader's probe reports (stopping
 * the target meanwhile through the session's load gate), finding the
 * functions to probe in the library's ELF file, keeping and removing the
 * probes (many at once), the family's loss counter, the stacks of its
 * calls resolved into the CPU profile, and the short form of a call's stack
 * the summaries print.  Their BPF halves share bpf/library_call.bpf.h.
 */
#ifndef LLMPROF_LIBRARY_PROBE_H
#define LLMPROF_LIBRARY_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"

struct bpf_link;
struct bpf_program;
struct session;

/* A file known by device and inode. */
struct library_probe_file {
	dev_t dev;
	ino_t ino;
};

/*
 * One family's probes on its libraries.  The family fills the first fields
 * and calls library_probe__init() once its BPF object is loaded;
 * probe_library() then attaches its probes to each new library file through
 * library_probe__attach_uprobe() or library_probe__add_link_fd().
 */
struct library_probe {
	const char *what; /* "the CUDA libraries", "libnccl": in messages */
	/* Whether a mapped file (its path as the maps name it) is one of the
	 * family's libraries. */
	bool (*is_library)(const char *mapped, void *ctx);
	/* Probes a library file not probed yet: path through the process's
	 * root, mapped as the maps name it.  0 or -errno (which ends the
	 * scan). */
	int (*probe_library)(void *ctx, const char *path, const char *mapped);
	void *ctx;
	const struct bpf_program *loader_program; /* on _dl_debug_state */
	uint32_t lost_counter;			  /* enum counter */

	struct session *session;
	pid_t pid;	   /* the target's first process */
	pid_t only_pid;	   /* the one process probes are filtered to, or -1: all */
	bool stop_on_load; /* record: the target stops at each load until probed */
	struct library_probe_file *libraries, *loaders;
	size_t nr_libraries, cap_libraries, nr_loaders, cap_loaders;
	struct bpf_link **links;
	size_t nr_links, cap_links;
	int *link_fds; /* multi-uprobe links */
	size_t nr_link_fds, cap_link_fds;
	int loader_error;
	uint64_t lost; /* records the ring buffer had no room for */
};

/*
 * Before the family's BPF object is loaded: where the probes go (a
 * selection of one process has them filtered to it in the kernel), and,
 * with stop_on_load, a place in the session's load gate.
 */
void library_probe__init(struct library_probe *probe, struct session *session, pid_t pid,
			 bool stop_on_load);
/*
 * After session__start(): probes the libraries every process of the
 * selection maps now and their dynamic loaders, for those mapped later (by
 * them or by processes that join the selection; record: the command is not
 * exec'd yet, and its loader is the system's).  0 or -errno.
 */
int library_probe__scan(struct library_probe *probe);
/* From the family's record handler, for a loader record of process pid:
 * probes what it mapped, then lets the process go on.  0. */
int library_probe__on_load(struct library_probe *probe, pid_t pid);
/*
 * Where a function address of process pid lies: the executable mapping of
 * a file is_library takes that holds it, as a path through the process's
 * root (path, size bytes), its file and the file offset for a uprobe.  0,
 * or -ENOENT when no such mapping holds it, -errno.
 */
int library_probe__locate(pid_t pid, uint64_t address,
			  bool (*is_library)(const char *mapped, void *ctx), void *ctx, char *path,
			  size_t size, struct library_probe_file *file, size_t *offset);
/* A uprobe kept until library_probe__detach(); pid as only_pid. */
int library_probe__attach_uprobe(struct library_probe *probe, const struct bpf_program *program,
				 const char *path, size_t offset, uint64_t cookie, bool retprobe);
/* A multi-uprobe link's descriptor, kept likewise. */
int library_probe__add_link_fd(struct library_probe *probe, int fd);
/* Before session__finish(): every probe removed (in parallel), the target
 * let go of a load no one answers now, and the loss counter read. */
void library_probe__detach(struct library_probe *probe);
void library_probe__free(struct library_probe *probe);

/*
 * Before the session: whether process pid, or with children any process
 * descended from it that is alive now, maps a file is_library takes.  A
 * process gone, or one whose maps cannot be read, maps nothing.
 */
bool library_probe__mapped(pid_t pid, bool children,
			   bool (*is_library)(const char *path, void *ctx), void *ctx);

/*
 * The stacks of a family's calls, resolved into the finished CPU profile's
 * frames: frames holds them one after the other, root first; calls on the
 * stack of a recent call share its frames.
 */
struct library_probe_stacks {
	uint32_t *frames;
	size_t nr_frames, cap_frames;
	struct {
		uint32_t thread, stack, nr_frames;
		int64_t first;
	} recent[64];
	size_t nr_recent;
};
/* A raw stack of the session (session_record_fn's thread and stack) into
 * *first (an index into frames) and *nr_frames.  0 or -errno. */
int library_probe_stacks__resolve(struct library_probe_stacks *stacks,
				  const struct session *session, uint32_t thread, uint32_t stack,
				  int64_t *first, uint32_t *nr_frames);
void library_probe_stacks__free(struct library_probe_stacks *stacks);

/*
 * The file offset of the functions a library defines, for uprobes: for each
 * defined function symbol (.dynsym, and .symtab unless dynsym_only),
 * index_of() says which of the caller's functions it is (or -1); the first
 * offset found for each index goes into offsets[index], which the caller
 * zeroed.  0 when any was found, -ENOENT when none, or -errno.
 */
int library_probe__function_offsets(const char *path, bool dynsym_only,
				    int (*index_of)(const char *name, void *ctx), void *ctx,
				    size_t *offsets);

/* Destroys the links; removing a uprobe waits for a grace period (some
 * 70 ms), so they go in parallel: ending a profile takes one, not one per
 * probe. */
void library_probe__destroy_links(struct bpf_link **links, size_t nr);

/*
 * Multi-uprobe links (BPF_TRACE_UPROBE_MULTI, Linux 6.6): every function of a
 * library on one link, for every process, removed with one grace period
 * where a uprobe through perf events takes one each, one after the other
 * (some 50 ms: seconds for a few dozen).  The program must have been loaded
 * with that attach type (library_probe__multi_supported() says whether the
 * kernel has it).  pid: the process filtered to in the kernel, or 0 for
 * every process that maps the file.  A link's descriptor, or -errno; close()
 * removes it.
 */
#define LIBRARY_PROBE_UPROBE_MULTI 48 /* enum bpf_attach_type */
bool library_probe__multi_supported(void);
int library_probe__attach_multi(int prog_fd, const char *path, const size_t *offsets,
				const uint64_t *cookies, uint32_t count, bool retprobe, pid_t pid);
/* Closes link descriptors in parallel. */
void library_probe__close_links(const int *fds, size_t nr);

/* "load_weights < main": the innermost frames (at most
 * LIBRARY_PROBE_STACK_FRAMES) of a stack of frame ids in profile, root
 * first, up to its process or thread frame; "[no stack]" when none. */
#define LIBRARY_PROBE_STACK_FRAMES 4
void library_probe__describe_stack(const struct profile *profile, const uint32_t *frames,
				   size_t nr_frames, char *buf, size_t size);

#endif /* LLMPROF_LIBRARY_PROBE_H */
