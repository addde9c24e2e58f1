/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /proc/kallsyms' text symbols, read once, when a first kernel address is
 * named, for every symbolizer alive (some 150,000 symbols, 5 MB; a job's
 * every process has a symbolizer).
 */
#ifndef LLMPROF_KERNEL_SYMBOLS_H
#define LLMPROF_KERNEL_SYMBOLS_H

#include <stdint.h>

/* A symbolizer begins or ends using the table; the last user frees it. */
void kernel_symbols__hold(void);
void kernel_symbols__put(void);
/* The name of the kernel function holding pc, or NULL. */
const char *kernel_symbols__name(uint64_t pc);

#endif /* LLMPROF_KERNEL_SYMBOLS_H */
