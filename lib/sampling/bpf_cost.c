// SPDX-License-Identifier: GPL-2.0
/* The load time, verified instructions and map memory of each BPF object;
 * see bpf_cost.h. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "sampling/bpf_cost.h"
#include "status.h"

#define MAX_MAPS 256
#define MAX_PROGRAMS 64

/* Ids of the maps counted so far: a shared map is counted once. */
static uint32_t counted_maps[MAX_MAPS];
static int nr_counted_maps;
static uint64_t total_map_bytes;
/* Ids of the programs loaded, for their run time. */
static uint32_t program_ids[MAX_PROGRAMS];
static int nr_program_ids;

uint64_t bpf_cost__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The map's memory as the kernel charges it (fdinfo's memlock). */
static uint64_t map_bytes(int fd)
{
	unsigned long long bytes = 0;
	char path[64], line[128];
	FILE *file;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	file = fopen(path, "re");
	if (!file)
		return 0;
	while (fgets(line, sizeof(line), file))
		if (sscanf(line, "memlock: %llu", &bytes) == 1)
			break;
	fclose(file);
	return bytes;
}

static bool counted(uint32_t id)
{
	for (int i = 0; i < nr_counted_maps; i++)
		if (counted_maps[i] == id)
			return true;
	if (nr_counted_maps < MAX_MAPS)
		counted_maps[nr_counted_maps++] = id;
	return false;
}

void bpf_cost__loaded(const char *name, struct bpf_object *object, uint64_t started_ns)
{
	uint64_t insns = 0, bytes = 0, elapsed = bpf_cost__now() - started_ns;
	struct bpf_program *program;
	struct bpf_map *map;
	int nr_programs = 0, nr_maps = 0;

	bpf_object__for_each_program(program, object)
	{
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(program);

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		insns += info.verified_insns;
		nr_programs++;
		if (nr_program_ids < MAX_PROGRAMS)
			program_ids[nr_program_ids++] = info.id;
	}
	bpf_object__for_each_map(map, object)
	{
		struct bpf_map_info info = {0};
		__u32 len = sizeof(info);
		int fd = bpf_map__fd(map);

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || counted(info.id))
			continue;
		bytes += map_bytes(fd);
		nr_maps++;
	}
	__atomic_fetch_add(&total_map_bytes, bytes, __ATOMIC_RELAXED);
	status__debug("BPF object %s: loaded and verified in %.1f ms, %d programs, %llu "
		      "instructions verified, %d maps of its own, %.1f KiB",
		      name, elapsed / 1e6, nr_programs, (unsigned long long)insns, nr_maps,
		      bytes / 1024.0);
}

void bpf_cost__ran(const char *name, struct bpf_program *program)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_program__fd(program), &info, &len) || !info.run_cnt)
		return;
	status__debug("BPF %s program: %llu runs, %.0f ns each, %.1f ms in all "
		      "(kernel.bpf_stats_enabled)",
		      name, (unsigned long long)info.run_cnt,
		      (double)info.run_time_ns / info.run_cnt, info.run_time_ns / 1e6);
}

void bpf_cost__map_created(int fd)
{
	__atomic_fetch_add(&total_map_bytes, map_bytes(fd), __ATOMIC_RELAXED);
}

uint64_t bpf_cost__map_bytes(void)
{
	return __atomic_load_n(&total_map_bytes, __ATOMIC_RELAXED);
}

uint64_t bpf_cost__run_time_ns(void)
{
	uint64_t total = 0;

	for (int i = 0; i < nr_program_ids; i++) {
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(program_ids[i]);

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			total += info.run_time_ns;
		close(fd);
	}
	return total;
}
