// SPDX-License-Identifier: GPL-2.0
/* Python frames: interpreter discovery, code objects and the merge with
 * native stacks (the per-version layouts are in python_layout.c); see
 * python_reader.h. */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "array.h"
#include "base/hash_index.h"
#include "base/procfs.h"
#include "profile/python_frame.h"
#include "sampling/proc_files.h"
#include "sampling/python_reader.h"
#include "sampling/python_threads.h"
#include "status.h"

/* A code object as resolved once: the frame's name and file, and its line
 * table as sorted byte ranges. */
struct line_range {
	uint32_t start, end; /* byte offsets into the bytecode */
	int32_t line;	     /* -1: no line */
};

struct python_code {
	uint64_t addr;
	int32_t stamp;
	int32_t first_line;
	char *name; /* the qualname */
	char *file; /* co_filename as is, or "?" */
	struct line_range *lines;
	size_t nr_lines;
};

struct examined_file {
	uint64_t dev, inode;
};

enum reader_state {
	READER_SEARCHING = 0,
	READER_FOUND,
	READER_UNSUPPORTED, /* an interpreter llmprof cannot read: native frames only */
};

/* Looking for the interpreter: /proc/PID/maps is read again after 1 ms,
 * then less and less often while nothing new is mapped. */
#define SCAN_INTERVAL_MIN_NS 1000000ULL
#define SCAN_INTERVAL_MAX_NS 1000000000ULL
/* How long samples wake llmprof while it waits for a starting command to
 * map its interpreter. */
#define SEARCH_WAKEUP_NS 2000000000ULL
#define MAX_STRING_CHARS 4096
#define MAX_LINE_TABLE (1 << 20)
#define CODE_READ_SIZE 256
#define EVAL_FUNCTION "_PyEval_EvalFrameDefault"

/* A key is (entry << 63) | (whole << 62) | (code index << 32) | line. */
#define KEY_ENTRY (1ULL << 63)
/* On the root-most key: the chain was read to the thread's first frame. */
#define KEY_WHOLE (1ULL << 62)
#define KEY_CODE(key) ((uint32_t)((key) >> 32) & 0x3fffffff)
#define KEY_LINE(key) ((uint32_t)(key))

struct python_reader {
	pid_t pid;
	int config_fd;
	enum reader_state state;
	struct python_layout layout;
	uint64_t runtime, code_type;
	char *module_path; /* the file that holds _PyRuntime, as maps names it */

	struct examined_file *examined;
	size_t nr_examined, cap_examined;
	uint64_t next_scan_ns, scan_interval_ns;
	bool searching; /* BPF wakes us at every sample (record, before exec) */
	uint64_t search_end_ns;

	struct python_code *codes;
	size_t nr_codes, cap_codes;
	struct hash_index code_index; /* by address and stamp */

	struct python_thread_table threads; /* Python's thread names */

	uint32_t *scratch; /* native frames during a merge */
	size_t cap_scratch;
	uint64_t stacks, truncated, read_errors, stale_codes;
};

int python_reader__new(pid_t pid, int config_fd, struct python_reader **out)
{
	struct python_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->pid = pid;
	r->config_fd = config_fd;
	r->scan_interval_ns = SCAN_INTERVAL_MIN_NS;
	*out = r;
	return 0;
}

/* Samples wake us at once while set; the BPF side records no Python
 * frames until the interpreter is found. */
static void set_searching(struct python_reader *r, bool searching)
{
	struct python_config config = {.searching = searching};
	__u32 key = r->pid;

	if (r->state != READER_FOUND && !bpf_map_update_elem(r->config_fd, &key, &config, BPF_ANY))
		r->searching = searching;
}

/* Record starts the command from a fork of llmprof that waits to exec:
 * an interpreter may be about to start. */
static bool target_is_our_fork(const struct python_reader *r)
{
	char path[64];
	struct stat target, self;

	snprintf(path, sizeof(path), "/proc/%d/exe", r->pid);
	return !stat(path, &target) && !stat("/proc/self/exe", &self) &&
	       target.st_dev == self.st_dev && target.st_ino == self.st_ino;
}

void python_reader__free(struct python_reader *r)
{
	if (!r)
		return;
	if (r->state == READER_FOUND)
		status__debug("Python: %" PRIu64 " stacks, %zu code objects, %" PRIu64
			      " truncated at %d frames, %" PRIu64
			      " with a frame read error, %" PRIu64
			      " code objects gone before they were read",
			      r->stacks, r->nr_codes, r->truncated, PYTHON_MAX_FRAMES,
			      r->read_errors, r->stale_codes);
	for (size_t i = 0; i < r->nr_codes; i++) {
		free(r->codes[i].name);
		free(r->codes[i].file);
		free(r->codes[i].lines);
	}
	python_thread_table__free(&r->threads);
	free(r->codes);
	hash_index__free(&r->code_index);
	free(r->examined);
	free(r->module_path);
	free(r->scratch);
	free(r);
}

int python_memory__read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t n;

	if (!addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static int read_target(const struct python_reader *r, uint64_t addr, void *buf, size_t len)
{
	return python_memory__read(r->pid, addr, buf, len);
}

/* ELF symbol lookup in .dynsym, then .symtab. */
static int elf_symbol(Elf *elf, const char *name, uint64_t *value)
{
	Elf_Scn *scn = NULL;

	for (int pass = 0; pass < 2; pass++) {
		uint32_t want = pass ? SHT_SYMTAB : SHT_DYNSYM;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr shdr;
			Elf_Data *data;

			if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != want || !shdr.sh_entsize)
				continue;
			data = elf_getdata(scn, NULL);
			if (!data)
				continue;
			for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; i++) {
				GElf_Sym sym;
				const char *sym_name;

				if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF)
					continue;
				sym_name = elf_strptr(elf, shdr.sh_link, sym.st_name);
				if (sym_name && !strcmp(sym_name, name)) {
					*value = sym.st_value;
					return 0;
				}
			}
		}
	}
	return -ENOENT;
}

/* Where vaddr 0 of the file lies, from one of its mappings. */
static int elf_bias(Elf *elf, uint64_t start, uint64_t offset, uint64_t *bias)
{
	size_t nr_phdrs;

	if (elf_getphdrnum(elf, &nr_phdrs))
		return -ENOEXEC;
	for (size_t i = 0; i < nr_phdrs; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		if (offset < (phdr.p_offset & ~(uint64_t)4095) ||
		    offset >= phdr.p_offset + (phdr.p_filesz ? phdr.p_filesz : 1))
			continue;
		*bias = start - offset - (phdr.p_vaddr - phdr.p_offset);
		return 0;
	}
	return -ENOEXEC;
}

/* "python3.10" or "libpython3.10.so.1.0" to 3 and 10; for versions that
 * predate Py_Version. */
static int version_from_name(const char *path, unsigned int *major, unsigned int *minor)
{
	const char *base = strrchr(path, '/'), *p;

	base = base ? base + 1 : path;
	p = strstr(base, "python");
	if (!p || sscanf(p, "python%u.%u", major, minor) != 2)
		return -ENOENT;
	return 0;
}

static void interpreter_unsupported(struct python_reader *r, const char *path, unsigned int major,
				    unsigned int minor, const char *why)
{
	r->state = READER_UNSUPPORTED;
	if (major)
		status__warn("process %d runs Python %u.%u (%s), which llmprof cannot read%s%s: "
			     "native frames only",
			     r->pid, major, minor, path, why ? ": " : "", why ? why : "");
	else
		status__warn("process %d runs a Python of unknown version (%s): native frames only",
			     r->pid, path);
}

static int use_interpreter(struct python_reader *r, const char *path, uint64_t runtime,
			   uint64_t code_type, unsigned int major, unsigned int minor)
{
	const struct python_layout *known;
	struct python_layout layout;
	uint8_t debug[PYTHON_DEBUG_OFFSETS_SIZE];
	__u32 key = r->pid;
	int err;

	/* 3.13 and later describe themselves at the start of _PyRuntime. */
	err = read_target(r, runtime, debug, sizeof(debug));
	if (!err)
		err = python_layout__from_debug_offsets(debug, sizeof(debug), &layout);
	if (err == -ENOTSUP) {
		interpreter_unsupported(r, path, major, minor, "unknown _Py_DebugOffsets");
		return 0;
	}
	if (err) {
		if (major == 3 && minor >= 13) {
			interpreter_unsupported(r, path, major, minor, "no _Py_DebugOffsets");
			return 0;
		}
		known = python_layout__find(major, minor);
		if (!known) {
			interpreter_unsupported(r, path, major, minor, NULL);
			return 0;
		}
		layout = *known;
	}
	r->module_path = strdup(path);
	if (!r->module_path)
		return -ENOMEM;
	r->layout = layout;
	r->runtime = runtime;
	r->code_type = code_type;
	layout.bpf.runtime = runtime;
	if (bpf_map_update_elem(r->config_fd, &key, &layout.bpf, BPF_ANY))
		return -errno;
	r->state = READER_FOUND;
	status__debug("Python %u.%u in %s: _PyRuntime at 0x%" PRIx64 "%s", layout.major,
		      layout.minor, path, runtime,
		      layout.minor >= 13 ? ", offsets from _Py_DebugOffsets" : "");
	return 0;
}

/* Looks at one mapped file: is it the interpreter (it defines _PyRuntime)? */
static int examine_file(struct python_reader *r, const char *path, uint64_t start, uint64_t end,
			uint64_t offset)
{
	char proc_path[4200], dir[64];
	uint64_t runtime = 0, code_type = 0, version_addr = 0, bias = 0;
	unsigned int major = 0, minor = 0;
	Elf *elf = NULL;
	int fd, err = 0;

	snprintf(proc_path, sizeof(proc_path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, r->pid,
		 start, end);
	fd = open(proc_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && proc_files__dir(r->pid, dir, sizeof(dir)) == 0) {
		snprintf(proc_path, sizeof(proc_path), "%s/root%s", dir, path);
		fd = open(proc_path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		goto cleanup;
	if (elf_symbol(elf, "_PyRuntime", &runtime) || elf_bias(elf, start, offset, &bias))
		goto cleanup;
	elf_symbol(elf, "PyCode_Type", &code_type);
	/* Py_Version (3.11+) is PY_VERSION_HEX; older ones say it in the name. */
	if (!elf_symbol(elf, "Py_Version", &version_addr)) {
		uint32_t hex = 0;

		if (!read_target(r, bias + version_addr, &hex, sizeof(hex))) {
			major = hex >> 24 & 0xff;
			minor = hex >> 16 & 0xff;
		}
	}
	if (!major && version_from_name(path, &major, &minor)) {
		interpreter_unsupported(r, path, 0, 0, NULL);
		goto cleanup;
	}
	err = use_interpreter(r, path, bias + runtime, code_type ? bias + code_type : 0, major,
			      minor);
cleanup:
	elf_end(elf);
	close(fd);
	return err;
}

static bool examined_before(struct python_reader *r, uint64_t dev, uint64_t inode)
{
	for (size_t i = 0; i < r->nr_examined; i++)
		if (r->examined[i].dev == dev && r->examined[i].inode == inode)
			return true;
	return false;
}

static bool may_be_interpreter(const char *path, const char *exe)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libpython", 9) || !strncmp(base, "python", 6) ||
	       (exe[0] && !strcmp(path, exe));
}

/* 0 with *found_new set when a file not seen before was examined. */
static int scan_maps(struct python_reader *r, bool *found_new)
{
	char maps_path[96], exe_path[96], dir[64], exe[4096] = "";
	struct procfs_maps maps;
	struct procfs_mapping m;
	ssize_t exe_len;
	int err = 0;

	*found_new = false;
	err = proc_files__dir(r->pid, dir, sizeof(dir));
	if (err)
		return err;
	snprintf(exe_path, sizeof(exe_path), "%s/exe", dir);
	exe_len = readlink(exe_path, exe, sizeof(exe) - 1);
	exe[exe_len > 0 ? exe_len : 0] = '\0';
	snprintf(maps_path, sizeof(maps_path), "%s/maps", dir);
	err = procfs_maps__open(&maps, maps_path);
	if (err)
		return err;
	while (r->state == READER_SEARCHING && procfs_maps__next(&maps, &m) > 0) {
		uint64_t dev = (uint64_t)m.major << 32 | m.minor;

		if (!m.inode)
			continue;
		if (m.path[0] != '/' || examined_before(r, dev, m.inode) ||
		    !may_be_interpreter(m.path, exe))
			continue;
		err = array__grow((void **)&r->examined, &r->cap_examined, r->nr_examined + 1,
				  sizeof(*r->examined));
		if (err)
			break;
		r->examined[r->nr_examined++] = (struct examined_file){dev, m.inode};
		*found_new = true;
		err = examine_file(r, m.path, m.start, m.end, m.offset);
		if (err)
			break;
	}
	procfs_maps__close(&maps);
	return err;
}

/* The interpreter is found (its config has searching clear) or known to
 * be one llmprof cannot read. */
static void stop_searching(struct python_reader *r)
{
	if (r->state == READER_FOUND)
		r->searching = false;
	else if (r->state == READER_UNSUPPORTED && r->searching)
		set_searching(r, false);
}

int python_reader__discover(struct python_reader *r)
{
	bool found_new, first = !r->nr_examined;
	int err;

	if (r->state != READER_SEARCHING)
		return 0;
	err = scan_maps(r, &found_new);
	if (first && r->state == READER_SEARCHING)
		set_searching(r, target_is_our_fork(r));
	else
		stop_searching(r);
	return err;
}

/* Searching goes on while the target maps new files (record: the exec,
 * then libpython), backing off while nothing changes. */
static void rescan(struct python_reader *r, uint64_t time_ns)
{
	bool found_new = false;
	int err;

	if (r->searching) {
		if (!r->search_end_ns)
			r->search_end_ns = time_ns + SEARCH_WAKEUP_NS;
		else if (time_ns > r->search_end_ns)
			set_searching(r, false);
	}
	if (time_ns < r->next_scan_ns)
		return;
	err = scan_maps(r, &found_new);
	stop_searching(r);
	if (!err && found_new)
		r->scan_interval_ns = SCAN_INTERVAL_MIN_NS;
	else if (r->scan_interval_ns < SCAN_INTERVAL_MAX_NS)
		r->scan_interval_ns *= 2;
	r->next_scan_ns = time_ns + r->scan_interval_ns;
}

/* A str object as UTF-8, malloc'd; NULL if it cannot be read. */
char *python_memory__unicode(pid_t pid, const struct python_layout *l, uint64_t addr)
{
	uint8_t header[128];
	uint32_t state, kind;
	int64_t length;
	uint8_t *data = NULL;
	char *out = NULL, *o;
	size_t header_size = l->unicode_compact_size;

	if (header_size > sizeof(header) || python_memory__read(pid, addr, header, header_size))
		return NULL;
	memcpy(&state, header + l->unicode_state, sizeof(state));
	memcpy(&length, header + l->unicode_length, sizeof(length));
	/* state: interned:2, kind:3, compact:1, ascii:1 in every version read. */
	kind = state >> 2 & 7;
	if (!(state >> 5 & 1) || length < 0 || length > MAX_STRING_CHARS ||
	    (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	data = malloc(length * kind + 1);
	out = malloc(length * 4 + 1);
	if (!data || !out)
		goto fail;
	if (python_memory__read(pid, addr + (state >> 6 & 1 ? l->unicode_ascii_size : header_size),
				data, length * kind))
		goto fail;
	o = out;
	for (int64_t i = 0; i < length; i++) {
		uint32_t c;

		if (kind == 1)
			c = data[i];
		else if (kind == 2)
			c = data[2 * i] | data[2 * i + 1] << 8;
		else
			c = data[4 * i] | data[4 * i + 1] << 8 | data[4 * i + 2] << 16 |
			    (uint32_t)data[4 * i + 3] << 24;
		if (c < 0x80) {
			*o++ = c;
		} else if (c < 0x800) {
			*o++ = 0xc0 | c >> 6;
			*o++ = 0x80 | (c & 0x3f);
		} else if (c < 0x10000) {
			*o++ = 0xe0 | c >> 12;
			*o++ = 0x80 | (c >> 6 & 0x3f);
			*o++ = 0x80 | (c & 0x3f);
		} else if (c < 0x110000) {
			*o++ = 0xf0 | c >> 18;
			*o++ = 0x80 | (c >> 12 & 0x3f);
			*o++ = 0x80 | (c >> 6 & 0x3f);
			*o++ = 0x80 | (c & 0x3f);
		}
	}
	*o = '\0';
	free(data);
	return out;
fail:
	free(data);
	free(out);
	return NULL;
}

static char *read_unicode(const struct python_reader *r, uint64_t addr)
{
	return python_memory__unicode(r->pid, &r->layout, addr);
}

/* A bytes object's contents, malloc'd. */
static int read_bytes(const struct python_reader *r, uint64_t addr, uint8_t **out, size_t *len)
{
	int64_t size;
	int err;

	err = read_target(r, addr + r->layout.bytes_size, &size, sizeof(size));
	if (err)
		return err;
	if (size < 0 || size > MAX_LINE_TABLE)
		return -E2BIG;
	*out = malloc(size ? size : 1);
	if (!*out)
		return -ENOMEM;
	err = read_target(r, addr + r->layout.bytes_data, *out, size);
	if (err) {
		free(*out);
		*out = NULL;
		return err;
	}
	*len = size;
	return 0;
}

static int add_range(struct python_code *code, size_t *cap, uint32_t start, uint32_t end,
		     int32_t line)
{
	struct line_range *last = code->nr_lines ? &code->lines[code->nr_lines - 1] : NULL;

	if (end <= start)
		return 0;
	if (last && last->end == start && last->line == line) {
		last->end = end;
		return 0;
	}
	if (array__grow((void **)&code->lines, cap, code->nr_lines + 1, sizeof(*code->lines)))
		return -ENOMEM;
	code->lines[code->nr_lines++] = (struct line_range){start, end, line};
	return 0;
}

/* 3.10's co_linetable (Objects/lnotab_notes.txt): (byte delta, line delta)
 * pairs; a line delta of -128 means no line. */
static int decode_linetable_310(struct python_code *code, const uint8_t *t, size_t len)
{
	uint32_t addr = 0;
	int32_t line = code->first_line;
	size_t cap = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int8_t line_delta = (int8_t)t[i + 1];
		uint32_t end = addr + t[i];
		int err;

		if (line_delta != -128)
			line += line_delta;
		err = add_range(code, &cap, addr, end, line_delta == -128 ? -1 : line);
		if (err)
			return err;
		addr = end;
	}
	return 0;
}

static uint32_t read_varint(const uint8_t *t, size_t len, size_t *i)
{
	uint32_t value = 0, shift = 0;
	uint8_t byte;

	do {
		if (*i >= len || shift > 28)
			return value;
		byte = t[(*i)++];
		value |= (uint32_t)(byte & 63) << shift;
		shift += 6;
	} while (byte & 64);
	return value;
}

static int32_t read_svarint(const uint8_t *t, size_t len, size_t *i)
{
	uint32_t value = read_varint(t, len, i);

	return value & 1 ? -(int32_t)(value >> 1) : (int32_t)(value >> 1);
}

/* 3.11+'s location table (Objects/locations.md): entries of 1 to 8 code
 * units, each a header byte (bit 7 set, code in bits 3-6, length - 1 in
 * bits 0-2) followed by a code-specific payload. */
static int decode_locations(struct python_code *code, const uint8_t *t, size_t len)
{
	uint32_t addr = 0;
	int32_t line = code->first_line;
	size_t i = 0, cap = 0;

	while (i < len) {
		uint8_t first = t[i++];
		int kind = first >> 3 & 15, units = (first & 7) + 1;
		int32_t this_line = line;
		int err;

		if (!(first & 0x80))
			break;
		switch (kind) {
		case 15: /* no location */
			this_line = -1;
			break;
		case 14: /* long form: line delta, end line delta, columns */
			line += read_svarint(t, len, &i);
			this_line = line;
			read_varint(t, len, &i);
			read_varint(t, len, &i);
			read_varint(t, len, &i);
			break;
		case 13: /* no columns */
			line += read_svarint(t, len, &i);
			this_line = line;
			break;
		case 10:
		case 11:
		case 12: /* one line, delta 0 to 2, two column bytes */
			line += kind - 10;
			this_line = line;
			i += 2;
			break;
		default: /* short form: same line, one column byte */
			i += 1;
			break;
		}
		err = add_range(code, &cap, addr * 2, (addr + units) * 2, this_line);
		if (err)
			return err;
		addr += units;
	}
	return 0;
}

static int resolve_code(const struct python_reader *r, struct python_code *code)
{
	const struct python_layout *l = &r->layout;
	uint8_t header[CODE_READ_SIZE];
	uint64_t type, name_addr, file_addr, table_addr;
	char *name = NULL, *file = NULL;
	uint8_t *table = NULL;
	size_t table_len = 0;
	int err;

	if (read_target(r, code->addr, header, sizeof(header)))
		return -ESRCH;
	memcpy(&type, header + l->object_type, sizeof(type));
	memcpy(&code->first_line, header + l->bpf.code_firstlineno, sizeof(code->first_line));
	/* A freed code object, or one at the same address since the sample. */
	if ((r->code_type && type != r->code_type) || code->first_line != code->stamp)
		return -ESTALE;
	memcpy(&name_addr,
	       header + (l->code_qualname != PYTHON_NO_OFFSET ? l->code_qualname : l->code_name),
	       sizeof(name_addr));
	memcpy(&file_addr, header + l->code_filename, sizeof(file_addr));
	memcpy(&table_addr, header + l->code_linetable, sizeof(table_addr));
	name = read_unicode(r, name_addr);
	file = read_unicode(r, file_addr);
	/* Every code object has a name ("<lambda>", "<module>"): an empty
	 * one is memory being reused under us. */
	if (!name || !name[0]) {
		err = -ESTALE;
		goto cleanup;
	}
	/* The frame is the name and file; its text is made of them
	 * (python_frame.h). */
	code->file = file ? file : strdup("?");
	if (!code->file) {
		err = -ENOMEM;
		goto cleanup;
	}
	code->name = name;
	name = NULL;
	file = NULL;
	err = 0;
	if (read_bytes(r, table_addr, &table, &table_len) == 0) {
		if (l->bpf.instr_mode == PYTHON_INSTR_LASTI)
			err = decode_linetable_310(code, table, table_len);
		else
			err = decode_locations(code, table, table_len);
	}
	if (!err && code->nr_lines) {
		/* Kept for the whole session: no room to spare. */
		void *fit = realloc(code->lines, code->nr_lines * sizeof(*code->lines));

		if (fit)
			code->lines = fit;
	}
cleanup:
	free(name);
	free(file);
	free(table);
	return err;
}

static uint64_t code_hash(uint64_t addr, int32_t stamp)
{
	return (addr ^ (uint64_t)(uint32_t)stamp << 40) * 0x9e3779b97f4a7c15ULL >> 16;
}

static uint64_t code_rehash(const void *ctx, uint32_t id)
{
	const struct python_reader *r = ctx;

	return code_hash(r->codes[id].addr, r->codes[id].stamp);
}

/* The index of the code object at addr with this stamp, resolved the first
 * time it is seen.  One that cannot be read keeps a placeholder name. */
static int64_t code_index(struct python_reader *r, uint64_t addr, int32_t stamp)
{
	struct hash_index *index = &r->code_index;
	struct python_code *code;
	size_t pos;
	int err;

	if (hash_index__reserve(index, 1024, code_rehash, r))
		return -ENOMEM;
	for (pos = hash_index__first(index, code_hash(addr, stamp)); !hash_index__empty(index, pos);
	     pos = hash_index__next(index, pos)) {
		code = &r->codes[hash_index__id(index, pos)];
		if (code->addr == addr && code->stamp == stamp)
			return hash_index__id(index, pos);
	}
	if (r->nr_codes >= 0x3fffffff ||
	    array__grow((void **)&r->codes, &r->cap_codes, r->nr_codes + 1, sizeof(*r->codes)))
		return -ENOMEM;
	code = &r->codes[r->nr_codes];
	memset(code, 0, sizeof(*code));
	code->addr = addr;
	code->stamp = stamp;
	err = resolve_code(r, code);
	if (err == -ENOMEM)
		return err;
	if (err || !code->name) {
		free(code->name);
		free(code->file);
		free(code->lines);
		memset(code, 0, sizeof(*code));
		code->addr = addr;
		code->stamp = stamp;
		code->name = strdup(PYTHON_UNKNOWN_NAME);
		code->file = strdup(PYTHON_UNKNOWN_FILE);
		if (!code->name || !code->file) {
			free(code->name);
			free(code->file);
			return -ENOMEM;
		}
		r->stale_codes++;
	}
	hash_index__set(index, pos, r->nr_codes);
	return r->nr_codes++;
}

static uint32_t code_line(const struct python_code *code, int32_t instr)
{
	size_t lo = 0, hi = code->nr_lines;

	/* Before its first instruction a frame is at its def line. */
	if (instr < 0)
		return code->first_line > 0 ? code->first_line : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct line_range *range = &code->lines[mid];

		if ((uint32_t)instr < range->start)
			hi = mid;
		else if ((uint32_t)instr >= range->end)
			lo = mid + 1;
		else
			return range->line > 0 ? range->line : 0;
	}
	return 0;
}

int python_reader__keys(struct python_reader *r, const struct python_stack *stack, uint64_t time_ns,
			uint64_t *keys, size_t max)
{
	size_t n = stack->nr_frames;

	if (r->state == READER_SEARCHING)
		rescan(r, time_ns);
	if (r->state != READER_FOUND || !n)
		return 0;
	if (n > PYTHON_MAX_FRAMES)
		n = PYTHON_MAX_FRAMES;
	if (n > max)
		n = max;
	r->stacks++;
	if (stack->flags & PYTHON_STACK_TRUNCATED)
		r->truncated++;
	if (stack->flags & PYTHON_STACK_READ_ERROR)
		r->read_errors++;
	for (size_t i = 0; i < n; i++) {
		const struct python_frame *f = &stack->frames[i];
		int64_t index = code_index(r, f->code, f->stamp);

		if (index < 0)
			return index;
		keys[i] = (uint64_t)index << 32 | code_line(&r->codes[index], f->instr);
		if (stack->entry_mask & 1ULL << i)
			keys[i] |= KEY_ENTRY;
	}
	if (!(stack->flags & (PYTHON_STACK_TRUNCATED | PYTHON_STACK_READ_ERROR)) &&
	    n == stack->nr_frames)
		keys[n - 1] |= KEY_WHOLE;
	return n;
}

/* One native address's frames during a merge. */
struct native_entry {
	uint32_t first, count; /* into r->scratch */
	bool eval;	       /* the interpreter's eval loop */
	bool interpreter;      /* in the interpreter's own file */
	bool matched;	       /* an eval frame that Python frames replace */
	bool spare;	       /* an eval frame entered or left between frames */
	bool keep;
};

static int64_t python_frame_id(struct python_reader *r, struct profile *p, uint64_t key)
{
	const struct python_code *code = &r->codes[KEY_CODE(key)];

	return python_frame__intern(p, code->name, code->file, KEY_LINE(key));
}

/* Appends the Python frames of keys[from..to) (root-first order indexes
 * into the leaf-first keys). */
static int emit_group(struct python_reader *r, struct profile *p, const uint64_t *keys,
		      size_t nr_keys, size_t from, size_t to, uint32_t *frames, size_t *n,
		      size_t max)
{
	for (size_t k = from; k < to && *n < max; k++) {
		int64_t id = python_frame_id(r, p, keys[nr_keys - 1 - k]);

		if (id < 0)
			return id;
		frames[(*n)++] = id;
	}
	return 0;
}

/* _PyEval_EvalFrameDefault, or a part the compiler split off it
 * ("_PyEval_EvalFrameDefault.cold"). */
static bool is_eval_function(const char *name)
{
	size_t len = strlen(EVAL_FUNCTION);

	return name && !strncmp(name, EVAL_FUNCTION, len) &&
	       (name[len] == '\0' || name[len] == '.');
}

#define MAX_NATIVE_ENTRIES 1024
#define MAX_INLINE 32

int python_reader__merge(struct python_reader *r, struct symbolizer *symbolizer, struct profile *p,
			 const uint64_t *user, size_t nr_user, const uint64_t *keys, size_t nr_keys,
			 uint32_t *frames, size_t max)
{
	struct native_entry *entries = NULL;
	size_t *group_start = NULL, nr_groups = 0, nr_entries = 0, nr_evals = 0, matched, n = 0;
	size_t limit = nr_user, next_group, used = 0;
	bool trailing = true, after_match = false;
	int err = 0;

	if (limit > MAX_NATIVE_ENTRIES)
		limit = MAX_NATIVE_ENTRIES;
	/* A frame-pointer walk through code built without frame pointers
	 * returns addresses outside any code: nothing root-ward of one is
	 * real. */
	for (size_t i = 1; i < limit; i++) {
		if (!symbolizer__covers(symbolizer, user[i])) {
			limit = i;
			break;
		}
	}
	entries = calloc(limit ? limit : 1, sizeof(*entries));
	group_start = calloc(nr_keys + 1, sizeof(*group_start));
	if (!entries || !group_start) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = array__grow((void **)&r->scratch, &r->cap_scratch, limit * MAX_INLINE + 1,
			  sizeof(*r->scratch));
	if (err)
		goto cleanup;

	/* Native entries, root first. */
	for (size_t k = 0; k < limit; k++) {
		size_t i = limit - 1 - k;
		struct native_entry *e = &entries[nr_entries++];
		const struct module *module = symbolizer__module_of(symbolizer, user[i], NULL);
		const char *name;
		int count;

		count = symbolizer__user_frames(symbolizer, p, user[i], i != 0, r->scratch + used,
						MAX_INLINE);
		if (count < 0) {
			err = count;
			goto cleanup;
		}
		e->first = used;
		e->count = count;
		used += count;
		name = count ? p->frames[r->scratch[e->first]].name : NULL;
		e->eval = is_eval_function(name);
		e->interpreter = module && r->module_path && !strcmp(module->path, r->module_path);
		nr_evals += e->eval;
	}
	/* Python groups, root first: a group is what one eval call ran, and
	 * starts at an entry frame (or where the captured chain starts). */
	for (size_t k = 0; k < nr_keys; k++) {
		if (k == 0 || keys[nr_keys - 1 - k] & KEY_ENTRY)
			group_start[nr_groups++] = k;
	}
	group_start[nr_groups] = nr_keys;

	matched = nr_evals < nr_groups ? nr_evals : nr_groups;
	if (nr_evals > nr_groups && nr_keys && keys[nr_keys - 1] & KEY_WHOLE) {
		/* The Python chain reaches the thread's first frame, so the
		 * eval calls without a group are leaf-ward: one just entered
		 * whose frame is not linked yet, or one returning whose frame
		 * is already unlinked.  Pair from the root; the spare ones
		 * are call machinery. */
		for (size_t k = 0, seen = 0; k < nr_entries; k++) {
			if (!entries[k].eval)
				continue;
			if (seen++ < matched)
				entries[k].matched = true;
			else
				entries[k].spare = true;
		}
	} else {
		/* Pair from the leaf: either chain may be cut short at the
		 * root (native unwinding, PYTHON_MAX_FRAMES). */
		for (size_t k = nr_entries, seen = 0; k-- > 0 && seen < matched;) {
			if (entries[k].eval) {
				entries[k].matched = true;
				seen++;
			}
		}
	}
	/* Leaf-ward of the first Python frame, the interpreter's own frames
	 * are call machinery, except those it ends in (a builtin at work). */
	for (size_t k = nr_entries; k-- > 0;) {
		struct native_entry *e = &entries[k];

		trailing = trailing && e->interpreter && !e->matched;
		e->keep = trailing;
	}

	/* Python frames without an eval frame to go to (a native chain cut
	 * short) go first, and what follows them is leaf-ward of Python. */
	next_group = nr_groups - matched;
	after_match = next_group > 0;
	err = emit_group(r, p, keys, nr_keys, 0, group_start[next_group], frames, &n, max);
	if (err)
		goto cleanup;
	for (size_t k = 0; k < nr_entries; k++) {
		struct native_entry *e = &entries[k];

		if (e->matched) {
			err = emit_group(r, p, keys, nr_keys, group_start[next_group],
					 group_start[next_group + 1], frames, &n, max);
			if (err)
				goto cleanup;
			next_group++;
			after_match = true;
			continue;
		}
		if (e->spare || (after_match && e->interpreter && !e->keep))
			continue;
		for (uint32_t j = 0; j < e->count && n < max; j++)
			frames[n++] = r->scratch[e->first + j];
	}
	err = n;
cleanup:
	free(entries);
	free(group_start);
	return err;
}

void python_reader__read_thread_names(struct python_reader *r)
{
	if (r->state == READER_FOUND)
		python_thread_table__read(&r->threads, r->pid, &r->layout, r->runtime);
}

void python_reader__saw_thread(struct python_reader *r, uint32_t tid, uint64_t time_ns)
{
	if (r->state == READER_FOUND && python_thread_table__saw(&r->threads, tid, time_ns))
		python_reader__read_thread_names(r);
}

const char *python_reader__thread_name(struct python_reader *r, uint32_t tid, const char *comm,
				       const char *process_comm)
{
	return r ? python_thread_table__name(&r->threads, tid, comm, process_comm) : comm;
}
