/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One module's function symbols, sorted once, for address lookups by
 * binary search.  libdwfl's dwfl_module_addrinfo() scans every symbol of a
 * module for each address (elfutils 0.188): on libtorch_cpu, with its
 * hundreds of thousands of symbols, that was a third of llmprof's own CPU
 * time.  The choice of symbol is libdwfl's: the closest sized symbol that
 * holds the address, a global one before a weak or local one at the same
 * address, else an assembly label (a sizeless symbol) that no sized symbol
 * covers.  Names point into libdwfl's copy of the module: the index lives
 * no longer than the Dwfl_Module it was built from.
 */
#ifndef LLMPROF_MODULE_SYMBOLS_H
#define LLMPROF_MODULE_SYMBOLS_H

#include <stdint.h>

#include <elfutils/libdwfl.h>

struct module_symbols;

/* 0 or -ENOMEM; a module without symbols gets an empty index. */
int module_symbols__build(Dwfl_Module *module, struct module_symbols **out);
void module_symbols__free(struct module_symbols *symbols);
/* The name of the symbol holding pc (an address in the process, as
 * libdwfl's symbol values are), and its start in *start; NULL where none. */
const char *module_symbols__lookup(const struct module_symbols *symbols, uint64_t pc,
				   uint64_t *start);

/* The start (an ELF address) of the FDE that holds elf_pc where that is an
 * FDE of .eh_frame, from .eh_frame_hdr's sorted table of FDE starts: a
 * function without a symbol is named by it.  0, or -ENOENT where the
 * module has no such table (or one llmprof does not read). */
int module_symbols__fde_start(Dwfl_Module *module, uint64_t elf_pc, uint64_t *start);

#endif /* LLMPROF_MODULE_SYMBOLS_H */
