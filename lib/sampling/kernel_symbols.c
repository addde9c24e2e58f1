// SPDX-License-Identifier: GPL-2.0
/* The kernel's text symbols for every symbolizer; see kernel_symbols.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "status.h"
#include "sampling/kernel_symbols.h"

struct kernel_symbol {
	uint64_t addr;
	uint32_t name; /* offset in kernel.names */
};

static struct {
	struct kernel_symbol *symbols;
	size_t nr;
	char *names;
	size_t names_len, names_cap;
	bool loaded;
	unsigned int users;
} kernel;

void kernel_symbols__hold(void)
{
	kernel.users++;
}

void kernel_symbols__put(void)
{
	if (!kernel.users || --kernel.users)
		return;
	free(kernel.symbols);
	free(kernel.names);
	memset(&kernel, 0, sizeof(kernel));
}

static int compare_kernel_symbols(const void *a, const void *b)
{
	const struct kernel_symbol *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(kernel.names + x->name, kernel.names + y->name);
}

static void load_kallsyms(void)
{
	struct kernel_symbol *symbols = NULL;
	size_t nr = 0, cap = 0;
	char line[512];
	FILE *file;

	kernel.loaded = true;
	file = fopen("/proc/kallsyms", "re");
	if (!file)
		return;
	while (fgets(line, sizeof(line), file)) {
		/* "ADDR TYPE NAME[\t[MODULE]]": by hand, not sscanf(), which
		 * took 3 % of an attach's CPU on a kernel's 200,000 lines. */
		char *name, *end;
		unsigned long long addr = strtoull(line, &end, 16);
		char type;
		size_t len;

		if (end == line || *end != ' ' || !addr)
			continue;
		type = end[1];
		if ((type != 't' && type != 'T' && type != 'w' && type != 'W') || end[2] != ' ')
			continue;
		name = end + 3;
		len = strcspn(name, " \t\n");
		if (!len || len > 255)
			continue;
		name[len++] = '\0';
		if (array__grow((void **)&symbols, &cap, nr + 1, sizeof(*symbols)) ||
		    array__grow((void **)&kernel.names, &kernel.names_cap, kernel.names_len + len,
				1) ||
		    kernel.names_len + len > UINT32_MAX)
			break;
		symbols[nr].addr = addr;
		symbols[nr].name = kernel.names_len;
		memcpy(kernel.names + kernel.names_len, name, len);
		kernel.names_len += len;
		nr++;
	}
	fclose(file);
	if (!nr)
		status__warn(
		    "no kernel symbols readable in /proc/kallsyms; kernel frames stay unnamed");
	qsort(symbols, nr, sizeof(*symbols), compare_kernel_symbols);
	kernel.symbols = symbols;
	kernel.nr = nr;
}

const char *kernel_symbols__name(uint64_t pc)
{
	size_t lo = 0, hi;

	if (!kernel.loaded)
		load_kallsyms();
	hi = kernel.nr;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (kernel.symbols[mid].addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? kernel.names + kernel.symbols[lo - 1].name : NULL;
}
