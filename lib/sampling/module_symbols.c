// SPDX-License-Identifier: GPL-2.0
/* A module's symbols sorted for lookups; see module_symbols.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <gelf.h>

#include "sampling/module_symbols.h"

struct module_symbol {
	uint64_t start, size;
	uint64_t section_end; /* of a sizeless symbol: it names nothing past it */
	uint64_t reach;	      /* the furthest end of any sized symbol up to this one */
	const char *name;
	uint32_t label; /* the last sizeless symbol up to this one, or NO_LABEL */
	uint32_t index; /* in the symbol table */
	uint8_t rank;	/* 0 global, 1 weak, 2 local and others: lower is chosen */
};

#define NO_LABEL UINT32_MAX

struct module_symbols {
	struct module_symbol *symbols;
	size_t nr;
};

static uint8_t binding_rank(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

/* The symbols libdwfl's lookup considers: named, defined, not a section,
 * file or thread-local one. */
static bool considered(const char *name, const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return name && name[0] && sym->st_shndx != SHN_UNDEF && sym->st_shndx != SHN_ABS &&
	       type != STT_SECTION && type != STT_FILE && type != STT_TLS;
}

/* Where the section of a sizeless symbol (an assembly label) ends: libdwfl
 * names no address in another section by it.  0 where unknown. */
static uint64_t section_end(Elf *elf, GElf_Word shndx, GElf_Addr bias)
{
	Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
	GElf_Shdr shdr;

	if (!scn || !gelf_getshdr(scn, &shdr))
		return 0;
	return shdr.sh_addr + shdr.sh_size + bias;
}

/* By start, then the symbol chosen at one address first: sized, global
 * before weak before local, then the first in the symbol table, as libdwfl
 * chooses among aliases. */
static int compare_symbols(const void *a, const void *b)
{
	const struct module_symbol *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

int module_symbols__build(Dwfl_Module *module, struct module_symbols **out)
{
	struct module_symbols *ms = calloc(1, sizeof(*ms));
	int count = dwfl_module_getsymtab(module);
	uint64_t reach = 0;
	size_t nr = 0;

	if (!ms)
		return -ENOMEM;
	if (count > 1) {
		ms->symbols = calloc(count, sizeof(*ms->symbols));
		if (!ms->symbols) {
			free(ms);
			return -ENOMEM;
		}
	}
	for (int i = 1; i < count; i++) {
		GElf_Sym sym;
		GElf_Addr value, bias;
		GElf_Word shndx;
		Elf *elf;
		const char *name =
		    dwfl_module_getsym_info(module, i, &sym, &value, &shndx, &elf, &bias);

		if (!considered(name, &sym))
			continue;
		ms->symbols[nr++] = (struct module_symbol){
		    .start = value,
		    .size = sym.st_size,
		    .section_end = sym.st_size ? 0 : section_end(elf, shndx, bias),
		    .name = name,
		    .rank = binding_rank(&sym),
		    .index = i};
	}
	qsort(ms->symbols, nr, sizeof(*ms->symbols), compare_symbols);
	for (size_t i = 0; i < nr; i++) {
		struct module_symbol *m = &ms->symbols[i];

		if (m->size && m->start + m->size > reach)
			reach = m->start + m->size;
		m->reach = reach;
		/* The first sizeless one at an address is the one chosen. */
		if (!m->size &&
		    (!i || ms->symbols[i - 1].start != m->start || ms->symbols[i - 1].size))
			m->label = i;
		else
			m->label = i ? ms->symbols[i - 1].label : NO_LABEL;
	}
	ms->nr = nr;
	*out = ms;
	return 0;
}

void module_symbols__free(struct module_symbols *ms)
{
	if (!ms)
		return;
	free(ms->symbols);
	free(ms);
}

/* The index of the last symbol starting at or before pc, or nr. */
static size_t last_at_or_before(const struct module_symbols *ms, uint64_t pc)
{
	size_t lo = 0, hi = ms->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ms->symbols[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : ms->nr;
}

/* The first symbol at start (the one chosen there) from any index with it. */
static size_t first_at(const struct module_symbols *ms, size_t i)
{
	while (i > 0 && ms->symbols[i - 1].start == ms->symbols[i].start)
		i--;
	return i;
}

const char *module_symbols__lookup(const struct module_symbols *ms, uint64_t pc, uint64_t *start)
{
	size_t last = last_at_or_before(ms, pc);
	const struct module_symbol *label;

	if (last == ms->nr)
		return NULL;
	/* The closest sized symbol that holds pc: back from the last one
	 * before pc, as long as some symbol up to here reaches past pc. */
	for (size_t i = last + 1; i-- > 0 && ms->symbols[i].reach > pc;) {
		const struct module_symbol *m = &ms->symbols[i], *best;

		if (!m->size || pc - m->start >= m->size)
			continue;
		/* The one chosen at that address, unless it is too short. */
		best = &ms->symbols[first_at(ms, i)];
		if (pc - best->start < best->size)
			m = best;
		*start = m->start;
		return m->name;
	}
	/* An assembly label, where no sized symbol before pc reaches past it
	 * (none holds pc, so none reaches past pc). */
	if (ms->symbols[last].label == NO_LABEL)
		return NULL;
	label = &ms->symbols[ms->symbols[last].label];
	if (label->start < ms->symbols[last].reach || pc >= label->section_end)
		return NULL;
	*start = label->start;
	return label->name;
}

/* .eh_frame_hdr as the linker writes it: version 1, the table of
 * (initial location, FDE) pairs as 4-byte offsets from the header. */
#define EH_FRAME_HDR_TABLE_ENCODING (DW_EH_PE_datarel | DW_EH_PE_sdata4)

static Elf_Data *eh_frame_hdr(Elf *elf, uint64_t *addr)
{
	Elf_Scn *scn = NULL;
	size_t names;

	if (elf_getshdrstrndx(elf, &names))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		name = elf_strptr(elf, names, shdr.sh_name);
		if (name && !strcmp(name, ".eh_frame_hdr")) {
			*addr = shdr.sh_addr;
			return elf_getdata(scn, NULL);
		}
	}
	return NULL;
}

static int32_t read_s32(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int module_symbols__fde_start(Dwfl_Module *module, uint64_t elf_pc, uint64_t *start)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(module, &bias);
	Elf_Data *data;
	const unsigned char *d;
	uint64_t hdr_addr = 0;
	size_t lo = 0, hi, count;

	data = elf ? eh_frame_hdr(elf, &hdr_addr) : NULL;
	if (!data || data->d_size < 12)
		return -ENOENT;
	d = data->d_buf;
	/* The eh_frame pointer and the count as 4-byte values, and the table
	 * as above: what every linker writes; anything else is not read. */
	if (d[0] != 1 || (d[1] & 0x0f) != DW_EH_PE_sdata4 ||
	    ((d[2] & 0x0f) != DW_EH_PE_udata4 && (d[2] & 0x0f) != DW_EH_PE_sdata4) ||
	    d[3] != EH_FRAME_HDR_TABLE_ENCODING)
		return -ENOENT;
	count = (uint32_t)read_s32(d + 8);
	if (count > (data->d_size - 12) / 8)
		return -ENOENT;
	/* The last FDE that starts at or before elf_pc. */
	hi = count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (hdr_addr + read_s32(d + 12 + mid * 8) <= elf_pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	*start = hdr_addr + read_s32(d + 12 + (lo - 1) * 8);
	return 0;
}
