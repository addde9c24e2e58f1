// SPDX-License-Identifier: GPL-2.0
/* The unwind-table compiler: .eh_frame into rows for the BPF unwinder; see
 * unwind_table.h. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "array.h"
#include "sampling/unwind_table.h"

#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7
#define DWARF_REG_RA 16

/* Reads one pointer of .eh_frame_hdr's encoding (DW_EH_PE_*); field_addr
 * is the ELF address of *p, for pc-relative values, data_base that of the
 * section, for data-relative ones. */
static int read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t field_addr,
			uint64_t data_base, uint64_t *out)
{
	uint64_t value;
	size_t size;

	switch (enc & 0x0f) {
	case 0x00: /* absptr */
	case 0x04:
	case 0x0c:
		size = 8;
		break;
	case 0x02:
	case 0x0a:
		size = 2;
		break;
	case 0x03:
	case 0x0b:
		size = 4;
		break;
	default:
		return -ENOTSUP;
	}
	if ((size_t)(end - *p) < size)
		return -EINVAL;
	if (size == 8) {
		memcpy(&value, *p, 8);
	} else if (size == 4) {
		uint32_t v;

		memcpy(&v, *p, 4);
		value = (enc & 0x08) ? (uint64_t)(int64_t)(int32_t)v : v;
	} else {
		uint16_t v;

		memcpy(&v, *p, 2);
		value = (enc & 0x08) ? (uint64_t)(int64_t)(int16_t)v : v;
	}
	switch (enc & 0x70) {
	case 0x00:
		break;
	case 0x10:
		value += field_addr;
		break;
	case 0x30:
		value += data_base;
		break;
	default:
		return -ENOTSUP;
	}
	*p += size;
	*out = value;
	return 0;
}

/* The initial locations of .eh_frame's FDEs, sorted, from the binary-search
 * table the linker puts in .eh_frame_hdr. */
static int fde_starts_from_hdr(Elf_Scn *scn, const GElf_Shdr *shdr, uint64_t **starts,
			       uint64_t **fdes, size_t *nr)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const uint8_t *p, *end;
	uint64_t ignored, count, *out, *fde;

	if (!data || data->d_size < 4 || ((const uint8_t *)data->d_buf)[0] != 1)
		return -EINVAL;
	p = data->d_buf;
	end = p + data->d_size;
	uint8_t ptr_enc = p[1], count_enc = p[2], table_enc = p[3];
	p += 4;
	if (read_encoded(&p, end, ptr_enc, shdr->sh_addr + 4, shdr->sh_addr, &ignored) ||
	    read_encoded(&p, end, count_enc, shdr->sh_addr + (p - (const uint8_t *)data->d_buf),
			 shdr->sh_addr, &count))
		return -ENOTSUP;
	if (table_enc == 0xff || count > data->d_size / 8)
		return -ENOTSUP;
	out = malloc((count ? count : 1) * sizeof(*out));
	fde = malloc((count ? count : 1) * sizeof(*fde));
	if (!out || !fde) {
		free(out);
		free(fde);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < count; i++) {
		uint64_t field = shdr->sh_addr + (p - (const uint8_t *)data->d_buf);

		if (read_encoded(&p, end, table_enc, field, shdr->sh_addr, &out[i]) ||
		    read_encoded(&p, end, table_enc, field, shdr->sh_addr, &fde[i])) {
			free(out);
			free(fde);
			return -EINVAL;
		}
	}
	(void)ignored;
	*starts = out;
	*fdes = fde;
	*nr = count;
	return 0;
}

/* The initial locations of .debug_frame's FDEs (address-sized, absolute). */
static int fde_starts_from_debug_frame(Elf *elf, Elf_Scn *scn, uint64_t **starts, size_t *nr)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const char *ident = elf_getident(elf, NULL);
	Dwarf_Off offset = 0, next;
	uint64_t *out = NULL;
	size_t n = 0, cap = 0;

	if (!data || !ident)
		return -EINVAL;
	for (;;) {
		Dwarf_CFI_Entry entry;
		int ret = dwarf_next_cfi((const unsigned char *)ident, data, false, offset, &next,
					 &entry);

		if (ret > 0)
			break;
		if (ret < 0 && next == (Dwarf_Off)-1)
			break;
		offset = next;
		if (ret < 0 || dwarf_cfi_cie_p(&entry))
			continue;
		if (entry.fde.end - entry.fde.start < 8)
			continue;
		if (array__grow((void **)&out, &cap, n + 1, sizeof(*out))) {
			free(out);
			return -ENOMEM;
		}
		memcpy(&out[n++], entry.fde.start, 8);
	}
	*starts = out;
	*nr = n;
	return 0;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void set_rules(struct unwind_row *row, enum unwind_cfa_rule cfa, enum unwind_rbp_rule rbp)
{
	row->rules = cfa | rbp << 4;
}

/* ld's rule for .plt entries: CFA = rsp + 8, + 8 more once the entry's
 * push has run, which is at byte threshold of each 16-byte entry:
 * DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN;
 * DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus. */
static bool plt_expression(const Dwarf_Op *ops, size_t nops, int64_t *offset, int *threshold)
{
	if (nops != 9 || ops[0].atom != DW_OP_breg7 || ops[1].atom != DW_OP_breg16 ||
	    ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and || ops[4].atom < DW_OP_lit0 ||
	    ops[4].atom > DW_OP_lit31 || ops[5].atom != DW_OP_ge || ops[6].atom != DW_OP_lit3 ||
	    ops[7].atom != DW_OP_shl || ops[8].atom != DW_OP_plus)
		return false;
	*offset = (int64_t)ops[0].number;
	*threshold = ops[4].atom - DW_OP_lit0;
	return true;
}

/* The compact rule of one CFI row: what BPF can evaluate, or NONE. */
static struct unwind_row row_of(Dwarf_Frame *frame, bool signal, uint64_t pc)
{
	struct unwind_row row = {.pc = (uint32_t)pc};
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t offset;
	int threshold;

	if (signal) {
		set_rules(&row, UNWIND_CFA_SIGNAL, UNWIND_RBP_SAME);
		return row;
	}
	if (dwarf_frame_register(frame, DWARF_REG_RA, mem, &ops, &nops))
		return row;
	if (nops == 0 && ops == mem) {
		set_rules(&row, UNWIND_CFA_OUTERMOST, UNWIND_RBP_SAME);
		return row;
	}
	if (nops != 2 || ops[0].atom != DW_OP_call_frame_cfa || ops[1].atom != DW_OP_plus_uconst ||
	    (int64_t)ops[1].number != -8)
		return row;
	if (dwarf_frame_cfa(frame, &ops, &nops) || nops == 0)
		return row;
	if (nops == 1 && ops[0].atom == DW_OP_bregx &&
	    (ops[0].number == DWARF_REG_RSP || ops[0].number == DWARF_REG_RBP)) {
		bool words = false;

		offset = (int64_t)ops[0].number2;
		if ((offset < INT16_MIN || offset > INT16_MAX) && !(offset % 8)) {
			offset /= 8;
			words = true;
		}
		if (offset < INT16_MIN || offset > INT16_MAX)
			return row;
		row.cfa_offset = offset;
		set_rules(&row, ops[0].number == DWARF_REG_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP,
			  UNWIND_RBP_SAME);
		if (words)
			row.rules |= UNWIND_ROW_WORDS;
	} else if (plt_expression(ops, nops, &offset, &threshold)) {
		row.cfa_offset = offset;
		row.rbp_offset = threshold;
		set_rules(&row, UNWIND_CFA_PLT, UNWIND_RBP_SAME);
		return row;
	} else {
		return row;
	}
	if (dwarf_frame_register(frame, DWARF_REG_RBP, mem, &ops, &nops))
		return row;
	offset = 1;
	if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa)
		offset = 0;
	else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		 ops[1].atom == DW_OP_plus_uconst)
		offset = (int64_t)ops[1].number;
	else if (nops != 0)
		/* rbp in another register or by expression: the caller's rbp
		 * is unknown, but the step itself is right. */
		return row;
	if (nops && (offset % 8 || offset / 8 < INT8_MIN || offset / 8 > INT8_MAX)) {
		set_rules(&row, UNWIND_CFA_NONE, UNWIND_RBP_SAME);
		return row;
	}
	if (nops) {
		row.rbp_offset = offset / 8;
		row.rules |= UNWIND_RBP_AT_CFA << 4;
	}
	return row;
}

static bool same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->rules == b->rules && a->cfa_offset == b->cfa_offset &&
	       a->rbp_offset == b->rbp_offset;
}

struct row_builder {
	struct unwind_row *rows;
	size_t nr, cap;
};

static int push_row(struct row_builder *b, struct unwind_row row)
{
	if (b->nr && same_rule(&b->rows[b->nr - 1], &row))
		return 0;
	if (b->nr && b->rows[b->nr - 1].pc == row.pc) {
		b->rows[b->nr - 1] = row;
		/* The replaced row may now repeat its predecessor. */
		if (b->nr > 1 && same_rule(&b->rows[b->nr - 2], &row))
			b->nr--;
		return 0;
	}
	if (array__grow((void **)&b->rows, &b->cap, b->nr + 1, sizeof(*b->rows)))
		return -ENOMEM;
	b->rows[b->nr++] = row;
	return 0;
}

/*
 * The common case without libdw: an FDE whose CIE and instructions use
 * only the opcodes compilers emit for ordinary functions, run here in one
 * pass (libdw evaluates its program again for every row, and keeps a tree
 * of every FDE it read).  Anything else (expressions, signal frames, rules
 * for the return address other than CFA - 8 or undefined) is left to libdw.
 */
enum reg_rule { REG_UNSPEC, REG_UNDEF, REG_SAME, REG_OFFSET, REG_OTHER };

struct cfa_state {
	uint64_t cfa_reg;
	int64_t cfa_offset;
	enum reg_rule ra, rbp;
	int64_t ra_offset, rbp_offset;
};

struct cie_info {
	uint64_t offset; /* in .eh_frame; UINT64_MAX when unused */
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	bool augmented; /* 'z': FDEs carry augmentation data */
	struct cfa_state initial;
	bool ok;
};

struct eh_frame {
	const uint8_t *data;
	size_t size;
	uint64_t addr;
	struct cie_info cies[16];
};

/* A LEB128 number; signed ones are sign-extended from their last byte. */
static int read_leb(const uint8_t **p, const uint8_t *end, bool is_signed, uint64_t *out)
{
	uint64_t value = 0;
	unsigned int shift = 0;

	while (*p < end && shift < 64) {
		uint8_t byte = *(*p)++;

		value |= (uint64_t)(byte & 0x7f) << shift;
		shift += 7;
		if (!(byte & 0x80)) {
			if (is_signed && shift < 64 && (byte & 0x40))
				value |= ~0ULL << shift;
			*out = value;
			return 0;
		}
	}
	return -EINVAL;
}

static int read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	return read_leb(p, end, false, out);
}

static int read_sleb(const uint8_t **p, const uint8_t *end, int64_t *out)
{
	return read_leb(p, end, true, (uint64_t *)out);
}

static void set_reg(struct cfa_state *s, uint64_t reg, enum reg_rule rule, int64_t offset)
{
	if (reg == DWARF_REG_RA) {
		s->ra = rule;
		s->ra_offset = offset;
	} else if (reg == DWARF_REG_RBP) {
		s->rbp = rule;
		s->rbp_offset = offset;
	}
}

static void restore_reg(struct cfa_state *s, const struct cfa_state *initial, uint64_t reg)
{
	if (reg == DWARF_REG_RA)
		set_reg(s, reg, initial->ra, initial->ra_offset);
	else if (reg == DWARF_REG_RBP)
		set_reg(s, reg, initial->rbp, initial->rbp_offset);
}

/* The row of a state, as row_of() makes it from libdw's frame; false
 * where libdw's answer is left to libdw. */
static bool row_of_state(const struct cfa_state *s, uint64_t pc, struct unwind_row *row)
{
	int64_t offset = s->cfa_offset;
	bool words = false;

	*row = (struct unwind_row){.pc = (uint32_t)pc};
	if (s->ra == REG_UNDEF) {
		set_rules(row, UNWIND_CFA_OUTERMOST, UNWIND_RBP_SAME);
		return true;
	}
	if (s->ra != REG_OFFSET || s->ra_offset != -8)
		return false;
	if (s->cfa_reg != DWARF_REG_RSP && s->cfa_reg != DWARF_REG_RBP)
		return false;
	if ((offset < INT16_MIN || offset > INT16_MAX) && !(offset % 8)) {
		offset /= 8;
		words = true;
	}
	if (offset < INT16_MIN || offset > INT16_MAX)
		return true;
	row->cfa_offset = offset;
	set_rules(row, s->cfa_reg == DWARF_REG_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP,
		  UNWIND_RBP_SAME);
	if (words)
		row->rules |= UNWIND_ROW_WORDS;
	if (s->rbp == REG_OTHER)
		return false;
	if (s->rbp != REG_OFFSET)
		return true;
	if (s->rbp_offset % 8 || s->rbp_offset / 8 < INT8_MIN || s->rbp_offset / 8 > INT8_MAX) {
		set_rules(row, UNWIND_CFA_NONE, UNWIND_RBP_SAME);
		return true;
	}
	row->rbp_offset = s->rbp_offset / 8;
	row->rules |= UNWIND_RBP_AT_CFA << 4;
	return true;
}

/* What one CFA instruction did: changed the state, or advanced the
 * location (by the delta it gives). */
enum cfa_step { CFA_STATE, CFA_ADVANCE };

/* The states that DW_CFA_remember_state saved. */
struct cfa_saved_states {
	struct cfa_state items[8];
	int depth;
};

/* DW_CFA_advance_loc1, 2 and 4: the delta that follows the opcode. */
static int cfa_advance(const uint8_t **p, const uint8_t *end, uint8_t op, uint64_t *delta)
{
	size_t size = op == DW_CFA_advance_loc1 ? 1 : op == DW_CFA_advance_loc2 ? 2 : 4;
	uint16_t v16;
	uint32_t v32;

	if ((size_t)(end - *p) < size)
		return -ENOTSUP;
	if (size == 1) {
		*delta = **p;
	} else if (size == 2) {
		memcpy(&v16, *p, 2);
		*delta = v16;
	} else {
		memcpy(&v32, *p, 4);
		*delta = v32;
	}
	*p += size;
	return CFA_ADVANCE;
}

/* The instructions that give a register its rule. */
static int cfa_register_rule(const uint8_t **p, const uint8_t *end, uint8_t op,
			     const struct cie_info *cie, struct cfa_state *s)
{
	uint64_t reg, off;
	int64_t soff;

	if (read_uleb(p, end, &reg))
		return -ENOTSUP;
	switch (op) {
	case DW_CFA_offset_extended:
		if (read_uleb(p, end, &off))
			return -ENOTSUP;
		set_reg(s, reg, REG_OFFSET, (int64_t)off * cie->data_align);
		break;
	case DW_CFA_offset_extended_sf:
		if (read_sleb(p, end, &soff))
			return -ENOTSUP;
		set_reg(s, reg, REG_OFFSET, soff * cie->data_align);
		break;
	case DW_CFA_restore_extended:
		restore_reg(s, &cie->initial, reg);
		break;
	case DW_CFA_undefined:
		set_reg(s, reg, REG_UNDEF, 0);
		break;
	case DW_CFA_same_value:
		set_reg(s, reg, REG_SAME, 0);
		break;
	default: /* DW_CFA_register */
		if (read_uleb(p, end, &off))
			return -ENOTSUP;
		set_reg(s, reg, REG_OTHER, 0);
		break;
	}
	return CFA_STATE;
}

/* The instructions that define the CFA: its register, its offset, or both. */
static int cfa_define(const uint8_t **p, const uint8_t *end, uint8_t op, const struct cie_info *cie,
		      struct cfa_state *s)
{
	uint64_t reg = s->cfa_reg, off;
	int64_t soff;

	if ((op == DW_CFA_def_cfa || op == DW_CFA_def_cfa_sf || op == DW_CFA_def_cfa_register) &&
	    read_uleb(p, end, &reg))
		return -ENOTSUP;
	switch (op) {
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_offset:
		if (read_uleb(p, end, &off))
			return -ENOTSUP;
		s->cfa_offset = (int64_t)off;
		break;
	case DW_CFA_def_cfa_sf:
	case DW_CFA_def_cfa_offset_sf:
		if (read_sleb(p, end, &soff))
			return -ENOTSUP;
		s->cfa_offset = soff * cie->data_align;
		break;
	default: /* DW_CFA_def_cfa_register */
		break;
	}
	s->cfa_reg = reg;
	return CFA_STATE;
}

/* DW_CFA_remember_state and DW_CFA_restore_state. */
static int cfa_save_restore(struct cfa_saved_states *saved, uint8_t op, struct cfa_state *s)
{
	if (op == DW_CFA_remember_state) {
		if (saved->depth == 8)
			return -ENOTSUP;
		saved->items[saved->depth++] = *s;
	} else {
		if (!saved->depth)
			return -ENOTSUP;
		/* The CFA is restored too, as libdw does. */
		*s = saved->items[--saved->depth];
	}
	return CFA_STATE;
}

/* Instructions whose operands are skipped: the arguments' size, and the
 * rules of registers the unwinder does not restore. */
static int cfa_skip(const uint8_t **p, const uint8_t *end, uint8_t op)
{
	uint64_t reg, off;

	if (op == DW_CFA_GNU_args_size)
		return read_uleb(p, end, &off) ? -ENOTSUP : CFA_STATE;
	if (read_uleb(p, end, &reg) || read_uleb(p, end, &off) || reg == DWARF_REG_RA ||
	    reg == DWARF_REG_RBP)
		return -ENOTSUP;
	if (op == DW_CFA_expression || op == DW_CFA_val_expression) {
		if (off > (uint64_t)(end - *p))
			return -ENOTSUP;
		*p += off;
	}
	return CFA_STATE;
}

/* One instruction whose opcode is in its whole first byte (not
 * DW_CFA_advance_loc, DW_CFA_offset or DW_CFA_restore): CFA_STATE,
 * CFA_ADVANCE with *delta, or -ENOTSUP. */
static int cfa_extended(const uint8_t **p, const uint8_t *end, uint8_t op,
			const struct cie_info *cie, struct cfa_state *s,
			struct cfa_saved_states *saved, uint64_t *delta)
{
	switch (op) {
	case DW_CFA_nop:
		return CFA_STATE;
	case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2:
	case DW_CFA_advance_loc4:
		return cfa_advance(p, end, op, delta);
	case DW_CFA_offset_extended:
	case DW_CFA_offset_extended_sf:
	case DW_CFA_restore_extended:
	case DW_CFA_undefined:
	case DW_CFA_same_value:
	case DW_CFA_register:
		return cfa_register_rule(p, end, op, cie, s);
	case DW_CFA_remember_state:
	case DW_CFA_restore_state:
		return cfa_save_restore(saved, op, s);
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_sf:
	case DW_CFA_def_cfa_register:
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_offset_sf:
		return cfa_define(p, end, op, cie, s);
	case DW_CFA_GNU_args_size:
	case DW_CFA_expression:
	case DW_CFA_val_expression:
	case DW_CFA_val_offset:
	case DW_CFA_val_offset_sf:
		return cfa_skip(p, end, op);
	default: /* def_cfa_expression, set_loc, vendor opcodes */
		return -ENOTSUP;
	}
}

/* Runs CFA instructions from state s.  With b, pushes a row at start and at
 * every advance below limit; without, only runs them (a CIE's initial
 * instructions).  0, or -ENOTSUP for what is left to libdw. */
static int run_cfa(const uint8_t *p, const uint8_t *end, const struct cie_info *cie,
		   struct cfa_state *s, uint64_t start, uint64_t limit, struct row_builder *b)
{
	struct cfa_saved_states saved;
	uint64_t loc = start, off, delta;
	struct unwind_row row;
	int err;

	saved.depth = 0;
	while (p < end) {
		uint8_t op = *p++;

		/* The three opcodes with an operand in their low six bits. */
		switch (op >> 6) {
		case 1:
			delta = op & 0x3f;
			break;
		case 2:
			if (read_uleb(&p, end, &off))
				return -ENOTSUP;
			set_reg(s, op & 0x3f, REG_OFFSET, (int64_t)off * cie->data_align);
			continue;
		case 3:
			restore_reg(s, &cie->initial, op & 0x3f);
			continue;
		default:
			err = cfa_extended(&p, end, op, cie, s, &saved, &delta);
			if (err < 0)
				return err;
			if (err == CFA_STATE)
				continue;
			break;
		}
		if (!b)
			return -ENOTSUP; /* an advance in a CIE */
		/* The rule that held up to here. */
		if (loc < limit) {
			if (!row_of_state(s, loc, &row))
				return -ENOTSUP;
			err = push_row(b, row);
			if (err)
				return err;
		}
		loc += delta * cie->code_align;
	}
	if (b && loc < limit) {
		if (!row_of_state(s, loc, &row))
			return -ENOTSUP;
		return push_row(b, row);
	}
	return 0;
}

static int read_cie(struct eh_frame *eh, uint64_t offset, struct cie_info *cie)
{
	const uint8_t *p, *end, *aug_end = NULL;
	const char *aug;
	uint32_t length, id;
	uint64_t ra, aug_len, ignored;
	uint8_t version;

	*cie = (struct cie_info){.offset = offset};
	if (offset > eh->size || eh->size - offset < 8)
		return -ENOTSUP;
	p = eh->data + offset;
	memcpy(&length, p, 4);
	memcpy(&id, p + 4, 4);
	if (length == 0xffffffff || id != 0 || length > eh->size - offset - 4)
		return -ENOTSUP;
	end = p + 4 + length;
	p += 8;
	version = *p++;
	if (version != 1 && version != 3)
		return -ENOTSUP;
	aug = (const char *)p;
	p = memchr(p, 0, end - p);
	if (!p++)
		return -ENOTSUP;
	if (aug[0] && aug[0] != 'z')
		return -ENOTSUP;
	if (read_uleb(&p, end, &cie->code_align) || read_sleb(&p, end, &cie->data_align))
		return -ENOTSUP;
	if (version == 1) {
		if (p >= end)
			return -ENOTSUP;
		ra = *p++;
	} else if (read_uleb(&p, end, &ra)) {
		return -ENOTSUP;
	}
	if (ra != DWARF_REG_RA)
		return -ENOTSUP;
	cie->fde_enc = 0; /* absptr */
	if (aug[0] == 'z') {
		cie->augmented = true;
		if (read_uleb(&p, end, &aug_len) || aug_len > (uint64_t)(end - p))
			return -ENOTSUP;
		aug_end = p + aug_len;
		for (const char *a = aug + 1; *a; a++) {
			if (*a == 'R' && p < aug_end) {
				cie->fde_enc = *p++;
			} else if (*a == 'L' && p < aug_end) {
				p++;
			} else if (*a == 'P' && p < aug_end) {
				uint8_t enc = *p++;

				if (read_encoded(&p, aug_end, enc, 0, 0, &ignored))
					return -ENOTSUP;
			} else {
				return -ENOTSUP; /* 'S' (signal frames) and the rest */
			}
		}
		p = aug_end;
	}
	if ((cie->fde_enc & 0x70) != 0x00 && (cie->fde_enc & 0x70) != 0x10)
		return -ENOTSUP;
	/* Before the CIE's own: rbp as the ABI leaves it, no CFA yet. */
	cie->initial = (struct cfa_state){.cfa_reg = UINT64_MAX, .rbp = REG_SAME};
	if (run_cfa(p, end, cie, &cie->initial, 0, 0, NULL))
		return -ENOTSUP;
	cie->ok = true;
	return 0;
}

/* The rows of the FDE at ELF address fde_addr, which starts at start,
 * pushed up to limit (the next FDE's start). */
static int fde_rows(struct eh_frame *eh, uint64_t fde_addr, uint64_t start, uint64_t limit,
		    struct row_builder *b)
{
	uint64_t offset = fde_addr - eh->addr, pc_begin, pc_range, cie_offset, aug_len;
	uint64_t next = limit;
	const uint8_t *p, *end;
	struct cie_info *cie;
	struct cfa_state state;
	uint32_t length, cie_ptr;
	int err;

	if (fde_addr < eh->addr || offset > eh->size || eh->size - offset < 8)
		return -ENOTSUP;
	p = eh->data + offset;
	memcpy(&length, p, 4);
	memcpy(&cie_ptr, p + 4, 4);
	if (length == 0xffffffff || !cie_ptr || length > eh->size - offset - 4 ||
	    cie_ptr > offset + 4)
		return -ENOTSUP;
	end = p + 4 + length;
	cie_offset = offset + 4 - cie_ptr;
	cie = &eh->cies[(cie_offset / 8) % 16];
	if (cie->offset != cie_offset && read_cie(eh, cie_offset, cie))
		return -ENOTSUP;
	if (!cie->ok)
		return -ENOTSUP;
	p += 8;
	if (read_encoded(&p, end, cie->fde_enc, eh->addr + (p - eh->data), eh->addr, &pc_begin) ||
	    read_encoded(&p, end, cie->fde_enc & 0x0f, 0, 0, &pc_range) || pc_begin != start)
		return -ENOTSUP;
	if (cie->augmented) {
		if (read_uleb(&p, end, &aug_len) || aug_len > (uint64_t)(end - p))
			return -ENOTSUP;
		p += aug_len;
	}
	if (pc_begin + pc_range < limit)
		limit = pc_begin + pc_range;
	state = cie->initial;
	err = run_cfa(p, end, cie, &state, start, limit, b);
	if (err)
		return err;
	/* A gap before the next FDE: no rule there. */
	if (pc_begin + pc_range < next)
		err = push_row(b, (struct unwind_row){.pc = (uint32_t)limit});
	return err;
}

/* The rows of the FDEs that start at starts[], each run until the CFI has no
 * row for the next address (a gap, which gets a NONE row) or the next FDE. */
static int rows_from_cfi(Dwarf_CFI **cfip, Elf *elf, const uint64_t *starts, size_t nr_starts,
			 struct eh_frame *eh, const uint64_t *fdes, struct row_builder *b)
{
	Dwarf_CFI *cfi = *cfip;
	int err;

	for (size_t i = 0; i < nr_starts; i++) {
		uint64_t addr = starts[i], limit = i + 1 < nr_starts ? starts[i + 1] : UINT64_MAX;

		/* libdw keeps every FDE it has read: start afresh now and then
		 * (for .eh_frame, which it reads from the ELF), so that a
		 * library of 200,000 FDEs does not hold them all. */
		if (elf && i && !(i % 4096)) {
			dwarf_cfi_end(cfi);
			cfi = *cfip = dwarf_getcfi_elf(elf);
			if (!cfi)
				return -ENOEXEC;
		}

		if (i && starts[i] == starts[i - 1])
			continue;
		if (addr > UINT32_MAX)
			break;
		if (eh && fdes) {
			size_t nr = b->nr;
			struct unwind_row last = nr ? b->rows[nr - 1] : (struct unwind_row){0};

			err = fde_rows(eh, fdes[i], addr, limit, b);
			if (err && err != -ENOTSUP)
				return err;
			if (!err)
				continue;
			/* Left to libdw: the rows as they were. */
			b->nr = nr;
			if (nr)
				b->rows[nr - 1] = last;
		}
		while (addr < limit) {
			Dwarf_Frame *frame;
			Dwarf_Addr start, end;
			bool signal = false;
			struct unwind_row row;

			if (dwarf_cfi_addrframe(cfi, addr, &frame)) {
				row = (struct unwind_row){.pc = (uint32_t)addr};
				err = push_row(b, row);
				if (err)
					return err;
				break;
			}
			if (dwarf_frame_info(frame, &start, &end, &signal) < 0 || end <= addr) {
				free(frame);
				break;
			}
			row = row_of(frame, signal, addr);
			free(frame);
			err = push_row(b, row);
			if (err)
				return err;
			addr = end;
		}
	}
	return 0;
}

/* Gives the NONE rows' addresses in [lo, hi) the rule of row: the rows
 * over that range are rebuilt and spliced in, the rest stay where they are. */
static int overlay_none(struct row_builder *b, uint64_t lo, uint64_t hi, struct unwind_row rule)
{
	const struct unwind_row *first = unwind_table__find(b->rows, b->nr, lo);
	struct row_builder mid = {0};
	size_t i0 = first ? (size_t)(first - b->rows) : 0, i1 = i0, n;
	int err = 0;

	while (i1 < b->nr && b->rows[i1].pc < hi)
		i1++;
	for (size_t i = i0; i < i1 && !err; i++) {
		uint64_t start = b->rows[i].pc,
			 end = i + 1 < b->nr ? b->rows[i + 1].pc : UINT64_MAX;
		struct unwind_row none = b->rows[i];

		if (UNWIND_ROW_CFA(&b->rows[i]) != UNWIND_CFA_NONE || end <= lo || start >= hi) {
			err = push_row(&mid, b->rows[i]);
			continue;
		}
		if (start < lo)
			err = push_row(&mid, none);
		rule.pc = start < lo ? lo : start;
		if (!err)
			err = push_row(&mid, rule);
		if (!err && hi < end) {
			none.pc = hi;
			err = push_row(&mid, none);
		}
	}
	n = b->nr - (i1 - i0) + mid.nr;
	if (!err && n > b->nr && array__grow((void **)&b->rows, &b->cap, n, sizeof(*b->rows)))
		err = -ENOMEM;
	if (!err) {
		memmove(b->rows + i0 + mid.nr, b->rows + i1, (b->nr - i1) * sizeof(*b->rows));
		memcpy(b->rows + i0, mid.rows, mid.nr * sizeof(*b->rows));
		b->nr = n;
	}
	free(mid.rows);
	return err;
}

static bool is_plt(const char *name)
{
	return !strcmp(name, ".plt") || !strcmp(name, ".plt.sec") || !strcmp(name, ".plt.got") ||
	       !strcmp(name, ".iplt");
}

/* The sections the compiler reads, and the PLTs, which have no CFI. */
struct cfi_sections {
	Elf_Scn *hdr, *eh_frame, *debug_frame;
	GElf_Shdr hdr_shdr, eh_frame_shdr;
	struct {
		uint64_t lo, hi;
	} plts[4];
	int nr_plts;
};

/* The executable PT_LOAD segments, to map a pc to a file's address. */
static void read_segments(Elf *elf, size_t nr_phdrs, struct unwind_table *out)
{
	for (size_t i = 0; i < nr_phdrs; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_LOAD ||
		    !(phdr.p_flags & PF_X))
			continue;
		if (out->nr_segments == UNWIND_TABLE_MAX_SEGMENTS)
			break;
		out->segments[out->nr_segments++] = (struct unwind_segment){
		    .offset = phdr.p_offset, .vaddr = phdr.p_vaddr, .filesz = phdr.p_filesz};
	}
}

static void find_sections(Elf *elf, size_t shstrndx, struct cfi_sections *sec)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name || shdr.sh_type == SHT_NOBITS)
			continue;
		if (!strcmp(name, ".eh_frame_hdr")) {
			sec->hdr = scn;
			sec->hdr_shdr = shdr;
		} else if (!strcmp(name, ".eh_frame")) {
			sec->eh_frame = scn;
			sec->eh_frame_shdr = shdr;
		} else if (!strcmp(name, ".debug_frame")) {
			sec->debug_frame = scn;
		} else if (is_plt(name) && sec->nr_plts < 4) {
			sec->plts[sec->nr_plts].lo = shdr.sh_addr;
			sec->plts[sec->nr_plts++].hi = shdr.sh_addr + shdr.sh_size;
		}
	}
}

/* .eh_frame for the compiler's own pass; NULL leaves every FDE to libdw. */
static struct eh_frame *eh_frame__new(const struct cfi_sections *sec)
{
	Elf_Data *data = elf_getdata(sec->eh_frame, NULL);
	struct eh_frame *eh = data ? calloc(1, sizeof(*eh)) : NULL;

	if (eh) {
		eh->data = data->d_buf;
		eh->size = data->d_size;
		eh->addr = sec->eh_frame_shdr.sh_addr;
		for (int i = 0; i < 16; i++)
			eh->cies[i].offset = UINT64_MAX;
	}
	return eh;
}

/* PLT entries without CFI: the return address is at rsp. */
static int overlay_plts(struct row_builder *b, const struct cfi_sections *sec)
{
	int err = 0;

	for (int i = 0; i < sec->nr_plts && !err; i++) {
		struct unwind_row rule = {.cfa_offset = 8};

		set_rules(&rule, UNWIND_CFA_RSP, UNWIND_RBP_SAME);
		if (!b->nr)
			err = push_row(b, (struct unwind_row){0});
		if (!err)
			err = overlay_none(b, sec->plts[i].lo, sec->plts[i].hi, rule);
	}
	return err;
}

static int compile(int fd, bool by_libdw, struct unwind_table *out)
{
	struct cfi_sections sec = {0};
	struct eh_frame *eh = NULL;
	uint64_t *fdes = NULL;
	struct row_builder b = {0};
	int err = 0;
	uint64_t *starts = NULL;
	size_t nr_starts = 0, shstrndx, nr_phdrs;
	Dwarf_CFI *cfi = NULL;
	Dwarf *dwarf = NULL;
	Elf *elf;

	memset(out, 0, sizeof(*out));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) ||
	    elf_getphdrnum(elf, &nr_phdrs)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	read_segments(elf, nr_phdrs, out);
	find_sections(elf, shstrndx, &sec);
	if (sec.hdr && !fde_starts_from_hdr(sec.hdr, &sec.hdr_shdr, &starts, &fdes, &nr_starts))
		cfi = dwarf_getcfi_elf(elf);
	if (cfi && sec.eh_frame && !by_libdw)
		eh = eh_frame__new(&sec);
	if (!cfi && sec.debug_frame) {
		free(starts);
		starts = NULL;
		free(fdes);
		fdes = NULL;
		dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		cfi = dwarf ? dwarf_getcfi(dwarf) : NULL;
		if (cfi) {
			err =
			    fde_starts_from_debug_frame(elf, sec.debug_frame, &starts, &nr_starts);
			if (err)
				goto cleanup;
			qsort(starts, nr_starts, sizeof(*starts), compare_u64);
		}
	}
	if (cfi) {
		out->nr_fdes = nr_starts;
		err = push_row(&b, (struct unwind_row){0});
		if (!err)
			err = rows_from_cfi(&cfi, dwarf ? NULL : elf, starts, nr_starts, eh, fdes,
					    &b);
		if (err)
			goto cleanup;
	}
	err = overlay_plts(&b, &sec);
	if (err)
		goto cleanup;
	out->rows = b.rows;
	out->nr_rows = b.nr;
	b.rows = NULL;
cleanup:
	free(b.rows);
	free(starts);
	free(fdes);
	free(eh);
	if (dwarf)
		dwarf_end(dwarf);
	else if (cfi)
		dwarf_cfi_end(cfi);
	elf_end(elf);
	return err;
}

int unwind_table__compile(int fd, struct unwind_table *out)
{
	return compile(fd, false, out);
}

int unwind_table__compile_by_libdw(int fd, struct unwind_table *out)
{
	return compile(fd, true, out);
}

void unwind_table__release(struct unwind_table *table)
{
	if (table->mapping)
		munmap(table->mapping, table->mapping_size);
	else
		free(table->rows);
	table->mapping = NULL;
	table->rows = NULL;
	table->nr_rows = 0;
}

const struct unwind_row *unwind_table__find(const struct unwind_row *rows, size_t nr,
					    uint64_t vaddr)
{
	size_t lo = 0, hi = nr;

	if (!nr || vaddr < rows[0].pc)
		return NULL;
	/* The last row whose pc <= vaddr. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return &rows[lo];
}

int unwind_table__bias(const struct unwind_table *table, uint64_t start, uint64_t offset,
		       uint64_t *bias)
{
	for (int i = 0; i < table->nr_segments; i++) {
		const struct unwind_segment *seg = &table->segments[i];
		uint64_t page_offset = seg->offset & ~4095ULL;

		if (offset < page_offset || offset >= seg->offset + seg->filesz)
			continue;
		/* pc = start + (file offset - offset); vaddr = file offset -
		 * p_offset + p_vaddr. */
		*bias = start - offset + seg->offset - seg->vaddr;
		return 0;
	}
	return -ENOENT;
}
