// SPDX-License-Identifier: GPL-2.0
/*
 * Unit test of the unwind-table compiler against libdw's own reading of the
 * same CFI: for every 7th byte of each file's executable segments (and each
 * row's first and last byte), the CFA, return address and rbp that the
 * compact row gives for made-up registers equal what libdw's rule gives,
 * wherever the row has a rule; where it has none, libdw's rule is indeed
 * one BPF cannot evaluate (or there is none).  Also: rows sorted, most of
 * the code covered, _start outermost, the signal trampoline found in libc,
 * and the rows the same, row for row, as when libdw evaluates every one.
 *
 * Usage: test_unwind_table ELF... (each "path" or "path:min_coverage%")
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampling/unwind_table.h"

static int failures;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond);        \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define RSP 0x7fff00001000ULL
#define RBP 0x7fff00002000ULL

/* libdw's answer for CFA = reg + off, RA at CFA + off, rbp at CFA + off:
 * false where the rule is not of that form. */
struct simple_rule {
	bool known;
	bool outermost;
	uint64_t cfa;
	int64_t ra_offset;
	bool rbp_saved;
	int64_t rbp_offset;
	bool rbp_other; /* in a register or by expression: not checked */
};

static struct simple_rule libdw_rule(Dwarf_CFI *cfi, uint64_t addr, bool *signal, bool *found)
{
	struct simple_rule r = {0};
	Dwarf_Op mem[3], *ops;
	Dwarf_Frame *frame;
	size_t nops;

	*found = !dwarf_cfi_addrframe(cfi, addr, &frame);
	if (!*found)
		return r;
	dwarf_frame_info(frame, NULL, NULL, signal);
	if (!dwarf_frame_register(frame, 16, mem, &ops, &nops) && nops == 0 && ops == mem) {
		r.outermost = true;
		free(frame);
		return r;
	}
	if (dwarf_frame_register(frame, 16, mem, &ops, &nops) || nops != 2 ||
	    ops[0].atom != DW_OP_call_frame_cfa || ops[1].atom != DW_OP_plus_uconst)
		goto out;
	r.ra_offset = (int64_t)ops[1].number;
	if (dwarf_frame_cfa(frame, &ops, &nops) || nops != 1 || ops[0].atom != DW_OP_bregx ||
	    (ops[0].number != 6 && ops[0].number != 7))
		goto out;
	r.cfa = (ops[0].number == 7 ? RSP : RBP) + (int64_t)ops[0].number2;
	if (dwarf_frame_register(frame, 6, mem, &ops, &nops))
		goto out;
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
		r.rbp_saved = true;
		r.rbp_offset = (int64_t)ops[1].number;
	} else if (nops != 0) {
		r.rbp_other = true;
	}
	r.known = true;
out:
	free(frame);
	return r;
}

static void check_address(const char *path, Dwarf_CFI *cfi, const struct unwind_table *t,
			  uint64_t addr, size_t *checked, size_t *covered)
{
	const struct unwind_row *row = unwind_table__find(t->rows, t->nr_rows, addr);
	bool signal = false, found;
	struct simple_rule want = libdw_rule(cfi, addr, &signal, &found);
	int cfa_rule = row ? UNWIND_ROW_CFA(row) : UNWIND_CFA_NONE;
	uint64_t cfa;

	(*checked)++;
	if (cfa_rule != UNWIND_CFA_NONE)
		(*covered)++;
	if (!found) {
		/* No FDE: only a PLT section's default rule may apply. */
		EXPECT(cfa_rule == UNWIND_CFA_NONE ||
			   (cfa_rule == UNWIND_CFA_RSP && row->cfa_offset == 8),
		       "%s: 0x%lx has no CFI but rule %d", path, (unsigned long)addr, cfa_rule);
		return;
	}
	if (signal) {
		EXPECT(cfa_rule == UNWIND_CFA_SIGNAL, "%s: 0x%lx is a signal frame, rule %d", path,
		       (unsigned long)addr, cfa_rule);
		return;
	}
	if (want.outermost) {
		EXPECT(cfa_rule == UNWIND_CFA_OUTERMOST, "%s: 0x%lx is outermost, rule %d", path,
		       (unsigned long)addr, cfa_rule);
		return;
	}
	if (cfa_rule == UNWIND_CFA_PLT)
		return; /* an expression, which libdw_rule() does not evaluate */
	if (!want.known || want.ra_offset != -8) {
		EXPECT(cfa_rule == UNWIND_CFA_NONE, "%s: 0x%lx: libdw's rule is not simple, row %d",
		       path, (unsigned long)addr, cfa_rule);
		return;
	}
	if (cfa_rule == UNWIND_CFA_NONE) {
		/* Only an offset too large for a row may be left out. */
		EXPECT(want.rbp_saved && (want.rbp_offset % 8 || want.rbp_offset / 8 < -128 ||
					  want.rbp_offset / 8 > 127),
		       "%s: 0x%lx: libdw has a simple rule, the table none", path,
		       (unsigned long)addr);
		return;
	}
	EXPECT(cfa_rule == UNWIND_CFA_RSP || cfa_rule == UNWIND_CFA_RBP, "%s: 0x%lx: rule %d", path,
	       (unsigned long)addr, cfa_rule);
	cfa = (cfa_rule == UNWIND_CFA_RSP ? RSP : RBP) + UNWIND_ROW_CFA_OFFSET(row);
	EXPECT(cfa == want.cfa, "%s: 0x%lx: CFA 0x%lx, libdw 0x%lx", path, (unsigned long)addr,
	       (unsigned long)cfa, (unsigned long)want.cfa);
	if (want.rbp_other)
		return;
	EXPECT((UNWIND_ROW_RBP(row) == UNWIND_RBP_AT_CFA) == want.rbp_saved,
	       "%s: 0x%lx: rbp saved %d, libdw %d", path, (unsigned long)addr,
	       UNWIND_ROW_RBP(row) == UNWIND_RBP_AT_CFA, want.rbp_saved);
	if (want.rbp_saved && UNWIND_ROW_RBP(row) == UNWIND_RBP_AT_CFA)
		EXPECT(row->rbp_offset * 8 == want.rbp_offset,
		       "%s: 0x%lx: rbp at CFA%+d, libdw %+ld", path, (unsigned long)addr,
		       row->rbp_offset * 8, (long)want.rbp_offset);
}

/* The address of a symbol, from .symtab or .dynsym; 0 when absent. */
static uint64_t symbol_address(Elf *elf, const char *want)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr) ||
		    (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM))
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, i, &sym))
				continue;
			name = elf_strptr(elf, shdr.sh_link, sym.st_name);
			if (name && !strcmp(name, want) && sym.st_value)
				return sym.st_value;
		}
	}
	return 0;
}

static void check_file(const char *arg)
{
	char path[4096], *colon;
	double min_coverage = 90;
	struct unwind_table t, ref;
	size_t checked = 0, covered = 0;
	Dwarf_CFI *cfi;
	uint64_t addr;
	Elf *elf;
	int fd, err;

	snprintf(path, sizeof(path), "%s", arg);
	colon = strrchr(path, ':');
	if (colon) {
		*colon = '\0';
		min_coverage = atof(colon + 1);
	}
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		failures++;
		return;
	}
	err = unwind_table__compile(fd, &t);
	EXPECT(err == 0, "%s: compile: %s", path, strerror(-err));
	EXPECT(t.nr_rows > 0 && t.nr_segments > 0, "%s: %zu rows, %d segments", path, t.nr_rows,
	       t.nr_segments);
	for (size_t i = 1; i < t.nr_rows; i++)
		EXPECT(t.rows[i].pc > t.rows[i - 1].pc, "%s: rows %zu and %zu out of order", path,
		       i - 1, i);
	/* The compiler's own CFA interpreter gives libdw's rows, row for row. */
	err = unwind_table__compile_by_libdw(fd, &ref);
	EXPECT(err == 0, "%s: compile by libdw: %s", path, strerror(-err));
	EXPECT(ref.nr_rows == t.nr_rows, "%s: %zu rows, %zu by libdw", path, t.nr_rows,
	       ref.nr_rows);
	for (size_t i = 0, bad = 0; !err && i < t.nr_rows && i < ref.nr_rows && bad < 5; i++) {
		if (!memcmp(&t.rows[i], &ref.rows[i], sizeof(t.rows[i])))
			continue;
		bad++;
		EXPECT(false, "%s: row %zu at 0x%x differs from libdw's at 0x%x", path, i,
		       t.rows[i].pc, ref.rows[i].pc);
	}
	unwind_table__release(&ref);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	cfi = dwarf_getcfi_elf(elf);
	EXPECT(cfi != NULL, "%s: libdw reads no CFI", path);
	if (!cfi)
		goto out;
	for (int s = 0; s < t.nr_segments; s++)
		for (addr = t.segments[s].vaddr; addr < t.segments[s].vaddr + t.segments[s].filesz;
		     addr += 7)
			check_address(path, cfi, &t, addr, &checked, &covered);
	for (size_t i = 0; i < t.nr_rows; i++) {
		check_address(path, cfi, &t, t.rows[i].pc, &checked, &covered);
		if (t.rows[i].pc)
			check_address(path, cfi, &t, t.rows[i].pc - 1, &checked, &covered);
	}
	EXPECT(100.0 * covered / checked >= min_coverage, "%s: %.1f%% of addresses have rules",
	       path, 100.0 * covered / checked);
	/* The outermost frame of the main thread ends the stack. */
	addr = symbol_address(elf, "_start");
	if (addr) {
		const struct unwind_row *row = unwind_table__find(t.rows, t.nr_rows, addr + 1);

		EXPECT(row && UNWIND_ROW_CFA(row) == UNWIND_CFA_OUTERMOST,
		       "%s: _start not outermost", path);
	}
	/* glibc's signal trampoline; its CFI starts a byte early, for
	 * unwinders that look up return address - 1. */
	addr = symbol_address(elf, "__restore_rt");
	if (addr) {
		const struct unwind_row *row = unwind_table__find(t.rows, t.nr_rows, addr - 1);

		EXPECT(row && UNWIND_ROW_CFA(row) == UNWIND_CFA_SIGNAL,
		       "%s: __restore_rt not a signal frame", path);
	}
	printf("%s: %zu FDEs, %zu rows, %zu addresses checked, %.1f%% with rules\n", path,
	       t.nr_fdes, t.nr_rows, checked, 100.0 * covered / checked);
	dwarf_cfi_end(cfi);
out:
	elf_end(elf);
	unwind_table__release(&t);
	close(fd);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		check_file(argv[i]);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
