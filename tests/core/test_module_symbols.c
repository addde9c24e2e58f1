// SPDX-License-Identifier: GPL-2.0
/* module_symbols against libdwfl's own dwfl_module_addrinfo(), the choice it
 * replaces, on real libraries (libc, libstdc++, libpython, libtorch_cpu:
 * whichever of the files named on the command line exist): every address at
 * and around each symbol's bounds, and random addresses over the module.
 * With --fde RANGES LIBRARY: the FDE start of addresses inside each FDE
 * that binutils' readelf lists (RANGES: "start end" in hex, a line each),
 * against its own start. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>

#include "sampling/module_symbols.h"

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_random(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dULL;
}

static int aliases;

/* 1 where ours names pc by another symbol than libdwfl's, printed; another
 * name of the same symbol (an alias at its address: C1 and C2 constructors,
 * versioned data) is counted in aliases. */
static int check(Dwfl_Module *module, const struct module_symbols *ms, uint64_t pc,
		 const char *path)
{
	GElf_Off offset;
	GElf_Sym sym;
	uint64_t start = 0;
	const char *theirs = dwfl_module_addrinfo(module, pc, &offset, &sym, NULL, NULL, NULL);
	const char *ours = module_symbols__lookup(ms, pc, &start);

	if (!theirs && !ours)
		return 0;
	if (theirs && ours && !strcmp(theirs, ours) && start == pc - offset)
		return 0;
	if (theirs && ours && start == pc - offset) {
		aliases++;
		return 0;
	}
	fprintf(stderr, "%s 0x%llx: libdwfl %s+0x%llx, module_symbols %s\n", path,
		(unsigned long long)pc, theirs ? theirs : "(none)", (unsigned long long)offset,
		ours ? ours : "(none)");
	return 1;
}

static int check_file(const char *path, int *checked)
{
	Dwfl *dwfl = dwfl_begin(&callbacks);
	struct module_symbols *ms = NULL;
	Dwfl_Module *module;
	Dwarf_Addr low, high;
	int fd, count, mismatches = 0, shown = 0;
	size_t n = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !dwfl) {
		if (fd >= 0)
			close(fd);
		dwfl_end(dwfl);
		return 0;
	}
	module = dwfl_report_elf(dwfl, "module", path, fd, 0x10000000, true);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!module || module_symbols__build(module, &ms)) {
		fprintf(stderr, "%s: cannot read its symbols\n", path);
		dwfl_end(dwfl);
		return 1;
	}
	dwfl_module_info(module, NULL, &low, &high, NULL, NULL, NULL, NULL);
	count = dwfl_module_getsymtab(module);
	/* The first, middle, last and next byte of some 600 symbols spread
	 * over the table: libdwfl's lookup, the reference, scans every
	 * symbol, some milliseconds each on libtorch_cpu. */
	for (int i = 1; i < count && shown < 20; i += count / 600 + 1) {
		GElf_Sym sym;
		GElf_Addr value;

		if (!dwfl_module_getsym_info(module, i, &sym, &value, NULL, NULL, NULL) ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
			continue;
		uint64_t pcs[4] = {value, value + sym.st_size / 2,
				   value + (sym.st_size ? sym.st_size - 1 : 0),
				   value + sym.st_size};

		for (int k = 0; k < 4; k++) {
			int bad;

			if (pcs[k] < low || pcs[k] >= high)
				continue;
			bad = check(module, ms, pcs[k], path);

			mismatches += bad;
			shown += bad;
			n++;
		}
	}
	for (int i = 0; i < 600 && high > low && shown < 20; i++) {
		int bad = check(module, ms, low + next_random() % (high - low), path);

		mismatches += bad;
		shown += bad;
		n++;
	}
	printf("%s: %zu addresses, %d named by another symbol than libdwfl's, %d by another "
	       "alias\n",
	       path, n, mismatches, aliases);
	aliases = 0;
	*checked += 1;
	module_symbols__free(ms);
	dwfl_end(dwfl);
	return mismatches != 0;
}

/* Up to 4000 FDEs spread over the list: their first byte, middle and last
 * byte each name the FDE's start. */
static int check_fde_starts(const char *ranges_path, const char *path)
{
	Dwfl *dwfl = dwfl_begin(&callbacks);
	FILE *ranges = fopen(ranges_path, "re");
	unsigned long long lo, hi;
	Dwfl_Module *module;
	size_t nr = 0, checked = 0, wrong = 0, line = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (!dwfl || !ranges || fd < 0) {
		fprintf(stderr, "cannot open %s or %s\n", ranges_path, path);
		return 1;
	}
	module = dwfl_report_elf(dwfl, "module", path, fd, 0x10000000, true);
	dwfl_report_end(dwfl, NULL, NULL);
	while (fscanf(ranges, "%llx %llx", &lo, &hi) == 2)
		nr++;
	rewind(ranges);
	while (module && fscanf(ranges, "%llx %llx", &lo, &hi) == 2) {
		uint64_t pcs[3] = {lo, lo + (hi - lo) / 2, hi - 1}, start;

		if (line++ % (nr / 4000 + 1) || hi <= lo)
			continue;
		for (int k = 0; k < 3; k++) {
			checked++;
			if (module_symbols__fde_start(module, pcs[k], &start) || start != lo) {
				if (wrong++ < 10)
					fprintf(stderr,
						"%s 0x%llx: FDE from 0x%llx, found 0x%llx\n", path,
						(unsigned long long)pcs[k], lo,
						(unsigned long long)start);
			}
		}
	}
	printf("%s: %zu addresses in %zu FDEs, %zu given another start\n", path, checked, nr,
	       wrong);
	fclose(ranges);
	dwfl_end(dwfl);
	return !module || !checked || wrong;
}

int main(int argc, char **argv)
{
	int failures = 0, checked = 0;

	if (argc == 4 && !strcmp(argv[1], "--fde"))
		return check_fde_starts(argv[2], argv[3]);
	for (int i = 1; i < argc; i++)
		if (access(argv[i], R_OK) == 0)
			failures += check_file(argv[i], &checked);
	if (!checked) {
		fprintf(stderr, "none of the libraries named exists\n");
		return 1;
	}
	if (failures)
		return 1;
	printf("PASS\n");
	return 0;
}
