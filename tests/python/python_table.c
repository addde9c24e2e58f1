// SPDX-License-Identifier: GPL-2.0
/*
 * Prints llmprof's CPython offsets in the format of python_offsets.c, for
 * the offsets test to compare with each version's headers:
 *   python_table table MAJOR.MINOR     the table compiled into llmprof
 *   python_table debug-offsets FILE    what llmprof derives from the
 *                                      _Py_DebugOffsets in FILE's _PyRuntime
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampling/python_reader.h"

static void print_field(const char *name, uint32_t value)
{
	if (value != PYTHON_NO_OFFSET)
		printf("%s %u\n", name, value);
}

static void print_layout(const struct python_layout *l)
{
	const struct python_config *c = &l->bpf;

	printf("version %u.%u\n", l->major, l->minor);
	print_field("runtime_interpreters_head", c->runtime_interpreters_head);
	print_field("interpreter_next", c->interpreter_next);
	print_field("interpreter_threads_head", c->interpreter_threads_head);
	print_field("thread_next", c->thread_next);
	print_field("thread_thread_id", c->thread_thread_id);
	print_field("thread_frame", c->thread_frame);
	print_field("cframe_current_frame", c->cframe_current_frame);
	print_field("frame_previous", c->frame_previous);
	print_field("frame_code", c->frame_code);
	print_field("frame_instr", c->frame_instr);
	print_field("frame_read_size", c->frame_read_size);
	print_field("frame_owner", c->frame_owner);
	print_field("frame_is_entry", c->frame_is_entry);
	if (c->entry_mode == PYTHON_ENTRY_CSTACK_OWNER)
		print_field("owner_cstack", c->owner_cstack);
	print_field("object_type", l->object_type);
	print_field("code_filename", l->code_filename);
	print_field("code_name", l->code_name);
	print_field("code_qualname", l->code_qualname);
	if (c->instr_mode == PYTHON_INSTR_POINTER)
		print_field("code_adaptive", c->code_adaptive);
	print_field("code_firstlineno", c->code_firstlineno);
	print_field("code_linetable", l->code_linetable);
	print_field("bytes_size", l->bytes_size);
	print_field("bytes_data", l->bytes_data);
	print_field("unicode_length", l->unicode_length);
	print_field("unicode_state", l->unicode_state);
	print_field("unicode_ascii_size", l->unicode_ascii_size);
	print_field("unicode_compact_size", l->unicode_compact_size);
	print_field("interpreter_modules", l->interpreter_modules);
	print_field("heaptype_cached_keys", l->heaptype_cached_keys);
}

/* The initial bytes of _PyRuntime as the file holds them. */
static int read_runtime(const char *path, unsigned char *buf, size_t len)
{
	int fd = open(path, O_RDONLY), err = -ENOENT;
	Elf_Scn *scn = NULL;
	uint64_t addr = 0;
	Elf *elf;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !addr && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr) ||
		    (shdr.sh_type != SHT_DYNSYM && shdr.sh_type != SHT_SYMTAB) || !shdr.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, shdr.sh_link, sym.st_name);
			if (name && !strcmp(name, "_PyRuntime")) {
				addr = sym.st_value;
				break;
			}
		}
	}
	for (scn = NULL; elf && addr && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS ||
		    addr < shdr.sh_addr || addr + len > shdr.sh_addr + shdr.sh_size)
			continue;
		err = pread(fd, buf, len, shdr.sh_offset + addr - shdr.sh_addr) == (ssize_t)len
			  ? 0
			  : -EIO;
		break;
	}
	elf_end(elf);
	close(fd);
	return err;
}

int main(int argc, char **argv)
{
	struct python_layout layout;
	const struct python_layout *known;
	unsigned char runtime[2048];
	unsigned int major, minor;
	int err;

	if (argc == 3 && !strcmp(argv[1], "table")) {
		if (sscanf(argv[2], "%u.%u", &major, &minor) != 2)
			return 2;
		known = python_layout__find(major, minor);
		if (!known) {
			fprintf(stderr, "no table for %s\n", argv[2]);
			return 1;
		}
		print_layout(known);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "debug-offsets")) {
		err = read_runtime(argv[2], runtime, sizeof(runtime));
		if (!err)
			err = python_layout__from_debug_offsets(runtime, sizeof(runtime), &layout);
		if (err) {
			fprintf(stderr, "%s: no usable _Py_DebugOffsets: %s\n", argv[2],
				strerror(-err));
			return 1;
		}
		print_layout(&layout);
		return 0;
	}
	fprintf(stderr, "usage: python_table table MAJOR.MINOR | debug-offsets FILE\n");
	return 2;
}
