/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Turns a process's addresses into frames: ELF symbols and DWARF inline
 * chains through libdwfl, kernel symbols from /proc/kallsyms, JIT symbols
 * from the target's perf map.  Every distinct address is resolved once.
 */
#ifndef LLMPROF_SYMBOLIZER_H
#define LLMPROF_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"

struct symbolizer;

/* One executable mapping of the target, as read from /proc/PID/maps. */
struct mapping {
	uint64_t start, end, offset;
	uint32_t module; /* index into the module table */
};

/* A file the target maps executable: kept open from the moment it is seen,
 * so that it can be symbolized after the target unmaps it, deletes it or
 * exits. */
struct module {
	char *path; /* as /proc/PID/maps names it */
	char *name; /* basename, for "[name+0xOFFSET]" */
	int fd;	    /* -1 when it could not be opened */
	uint64_t dev, inode;
	uint64_t bias;	   /* load bias of the first mapping seen */
	uint64_t map_base; /* its start - offset: one file loaded twice (exec, dlopen
			    * after dlclose) is two modules */
	bool bias_known;
	bool dwfl_tried;		/* reported to libdwfl, or refused */
	void *dwfl_module;		/* Dwfl_Module *, once reported */
	struct module_symbols *symbols; /* its sorted symbols, as long as dwfl_module */
};

int symbolizer__new(pid_t pid, struct symbolizer **out);
void symbolizer__free(struct symbolizer *symbolizer);

/* Re-reads /proc/PID/maps and opens files not seen before.  Cheap to call
 * when symbolizer__covers() says an address is unknown. */
int symbolizer__refresh(struct symbolizer *symbolizer);
/* True when addr lies in a mapping already known. */
bool symbolizer__covers(const struct symbolizer *symbolizer, uint64_t addr);
/* Reads the target's JIT perf map (/tmp/perf-PID.map in its root), if any. */
int symbolizer__read_perf_map(struct symbolizer *symbolizer);

/*
 * Appends the frames for one user address to frames[] (root first: the
 * function, then what was inlined into it).  return_address is true for
 * every frame but the leaf: the call instruction is then the byte before.
 * Returns the number of frame ids written (>= 1), or -errno.
 */
int symbolizer__user_frames(struct symbolizer *symbolizer, struct profile *profile, uint64_t addr,
			    bool return_address, uint32_t *frames, size_t max);
/*
 * Resolves many user addresses at once into the cache that
 * symbolizer__user_frames() reads, module by module, and lets each module's
 * debug information go once its addresses are done: a profile's peak
 * memory is then that of its largest module, not of all of them.  pcs are
 * lookup addresses (a return address less one, as symbolizer__user_frames()
 * takes it); they are sorted in place, repeats allowed.  0 or -errno.
 */
int symbolizer__resolve_all(struct symbolizer *symbolizer, struct profile *profile, uint64_t *pcs,
			    size_t n);
/* Kernel address to one frame id, or -errno. */
int64_t symbolizer__kernel_frame(struct symbolizer *symbolizer, struct profile *profile,
				 uint64_t addr, bool return_address);

/* The libdwfl session that knows every module at its load bias, modules
 * seen since the last refresh included: the unwinder reads the CFI of the
 * very files that symbolization reads.  0 or -errno. */
struct Dwfl;
int symbolizer__dwfl(struct symbolizer *symbolizer, struct Dwfl **dwfl);
/* Changes whenever symbolizer__dwfl() would give a new session. */
uint64_t symbolizer__dwfl_generation(const struct symbolizer *symbolizer);

/* The module and offset an address falls in, or NULL. */
const struct module *symbolizer__module_of(const struct symbolizer *symbolizer, uint64_t addr,
					   uint64_t *file_offset);

/* symbolizer reads and fills share (symbol_share.h) from now on (NULL:
 * none). */
struct symbol_share;
void symbolizer__share(struct symbolizer *symbolizer, struct symbol_share *share);

/* Demangles a C++ or Rust name the way perf shows it (no parameters);
 * returns a malloc'd string, or NULL when name is not mangled. */
char *symbolizer__demangle(const char *name);

#endif /* LLMPROF_SYMBOLIZER_H */
