/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What each BPF object costs to have: the time its load and verification
 * took, the instructions the verifier went through, and the memory of the
 * maps it created (a map shared from another object counts once, with the
 * object that made it).  Said with -v, per object and in all.
 */
#ifndef LLMPROF_BPF_COST_H
#define LLMPROF_BPF_COST_H

#include <stdint.h>

struct bpf_object;
struct bpf_program;

/* CLOCK_MONOTONIC in ns, to time a load. */
uint64_t bpf_cost__now(void);
/* Says (status__debug) what the object name (that of its bpf/NAME.bpf.c),
 * loaded in the time since started_ns, costs, and adds its maps' memory to the total. */
void bpf_cost__loaded(const char *name, struct bpf_object *object, uint64_t started_ns);
/* Says (status__debug) what the program name has cost the traced work so
 * far, where kernel.bpf_stats_enabled=1: its runs, the time of each, and
 * the time in all.  Nothing when the kernel kept no statistics. */
void bpf_cost__ran(const char *name, struct bpf_program *program);
/* Adds the memory of a map created after its object was loaded (an inner
 * map) to the total; from any thread. */
void bpf_cost__map_created(int fd);
/* The memory of every map bpf_cost__loaded() and bpf_cost__map_created()
 * have seen, in bytes. */
uint64_t bpf_cost__map_bytes(void);
/* The run time of every program bpf_cost__loaded() has seen and that is
 * still loaded, in ns: counted only while run-time statistics are on
 * (kernel.bpf_stats_enabled, or a BPF_ENABLE_STATS descriptor). */
uint64_t bpf_cost__run_time_ns(void);

#endif /* LLMPROF_BPF_COST_H */
