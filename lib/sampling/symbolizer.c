// SPDX-License-Identifier: GPL-2.0
/* Address to frame resolution for one process and the kernel; see
 * symbolizer.h. */
#include <ctype.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <demangle.h>

#include "base/hash_index.h"
#include "base/procfs.h"
#include "status.h"
#include "sampling/kernel_symbols.h"
#include "sampling/module_symbols.h"
#include "sampling/proc_files.h"
#include "sampling/symbol_share.h"
#include "sampling/symbolizer.h"

#define MAX_INLINE_DEPTH 32

struct jit_symbol {
	uint64_t start, end;
	char *name;
};

struct symbolizer {
	pid_t pid;
	struct mapping *mappings; /* sorted by start, non-overlapping */
	size_t nr_mappings;
	struct module *modules;
	size_t nr_modules, cap_modules;

	Dwfl *dwfl;
	uint64_t dwfl_generation; /* how many times dwfl was begun */
	bool dwfl_reported;	  /* modules reported since the last refresh */

	struct jit_symbol *jit_symbols;
	size_t nr_jit_symbols;

	/* Lookup address to its frames: a run in the pool, first << 32 |
	 * count, for user code; the frame id for the kernel's. */
	struct u64_map user_cache, kernel_cache;
	uint32_t *pool;
	size_t nr_pool, cap_pool;

	struct symbol_share *share;
};

/* Whether a file named by a .gnu_debuglink exists where libdwfl's standard
 * search looks: beside the file, in its .debug/, or under /usr/lib/debug. */
static bool debuglink_exists(const char *file_name, const char *debuglink)
{
	char path[4096];
	const char *slash = file_name ? strrchr(file_name, '/') : NULL;
	int dir_len = slash ? (int)(slash - file_name) : 0;
	static const char *const formats[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};

	if (!debuglink || !slash)
		return false;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		snprintf(path, sizeof(path), formats[i], dir_len, file_name, debuglink);
		if (strcmp(path, file_name) && access(path, R_OK) == 0)
			return true;
	}
	return false;
}

/*
 * libdwfl's standard search, but libdebuginfod only where DEBUGINFOD_URLS
 * asks for it: the standard search loads libdebuginfod (and with it curl,
 * gnutls, krb5 and libcrypto, some 10 MB) for every file without local
 * debug information, even with no server to ask.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	int fd;

	if ((urls && *urls) || debuglink_exists(file_name, debuglink_file))
		return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
						    debuglink_file, debuglink_crc,
						    debuginfo_file_name);
	fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					  debuglink_crc, debuginfo_file_name);
	if (fd < 0)
		errno = ENOENT;
	return fd;
}

static const Dwfl_Callbacks dwfl_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

int symbolizer__new(pid_t pid, struct symbolizer **out)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->pid = pid;
	kernel_symbols__hold();
	*out = s;
	return 0;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	if (s->dwfl)
		dwfl_end(s->dwfl);
	for (size_t i = 0; i < s->nr_modules; i++) {
		module_symbols__free(s->modules[i].symbols);
		free(s->modules[i].path);
		free(s->modules[i].name);
		if (s->modules[i].fd >= 0)
			close(s->modules[i].fd);
	}
	kernel_symbols__put();
	for (size_t i = 0; i < s->nr_jit_symbols; i++)
		free(s->jit_symbols[i].name);
	free(s->jit_symbols);
	free(s->modules);
	free(s->mappings);
	u64_map__free(&s->user_cache);
	u64_map__free(&s->kernel_cache);
	free(s->pool);
	free(s);
}

/* The load bias of the mapping at [start, offset) of an ELF file: where its
 * vaddr 0 lies in the target's address space. */
static int elf_load_bias(int fd, uint64_t start, uint64_t offset, uint64_t *bias)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t nr_phdrs;
	int err = -ENOEXEC;

	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nr_phdrs))
		goto cleanup;
	for (size_t i = 0; i < nr_phdrs; i++) {
		GElf_Phdr phdr;
		uint64_t page_offset;

		if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		page_offset = phdr.p_offset & ~(uint64_t)4095;
		if (offset < page_offset || offset >= phdr.p_offset + phdr.p_filesz)
			continue;
		*bias = start - offset - (phdr.p_vaddr - phdr.p_offset);
		err = 0;
		break;
	}
cleanup:
	elf_end(elf);
	return err;
}

static int open_module_file(pid_t pid, const char *path, uint64_t start, uint64_t end)
{
	char proc_path[4096], dir[64];
	int fd;

	/* map_files reaches the very file that is mapped, even one deleted or
	 * replaced since, and works across mount namespaces. */
	snprintf(proc_path, sizeof(proc_path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid,
		 start, end);
	fd = open(proc_path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (proc_files__dir(pid, dir, sizeof(dir)) == 0) {
		snprintf(proc_path, sizeof(proc_path), "%s/root%s", dir, path);
		fd = open(proc_path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	return open(path, O_RDONLY | O_CLOEXEC);
}

static int64_t find_module(struct symbolizer *s, uint64_t dev, uint64_t inode, const char *path,
			   uint64_t map_base)
{
	for (size_t i = 0; i < s->nr_modules; i++) {
		const struct module *m = &s->modules[i];

		if (m->dev == dev && m->inode == inode && m->map_base == map_base &&
		    !strcmp(m->path, path))
			return i;
	}
	return -1;
}

static int64_t add_module(struct symbolizer *s, uint64_t dev, uint64_t inode, const char *path,
			  uint64_t start, uint64_t end, uint64_t offset)
{
	struct module *m;
	const char *slash;

	if (s->nr_modules == s->cap_modules) {
		size_t cap = s->cap_modules ? s->cap_modules * 2 : 32;
		void *p = realloc(s->modules, cap * sizeof(*s->modules));

		if (!p)
			return -ENOMEM;
		s->modules = p;
		s->cap_modules = cap;
	}
	m = &s->modules[s->nr_modules];
	memset(m, 0, sizeof(*m));
	m->path = strdup(path);
	slash = strrchr(path, '/');
	if (path[0] == '[') /* "[vdso]" */
		m->name = strndup(path + 1, strcspn(path + 1, "]"));
	else
		m->name = strdup(slash ? slash + 1 : path);
	if (!m->path || !m->name) {
		free(m->path);
		free(m->name);
		return -ENOMEM;
	}
	m->dev = dev;
	m->inode = inode;
	m->map_base = start - offset;
	m->fd = path[0] == '/' ? open_module_file(s->pid, path, start, end) : -1;
	if (m->fd >= 0 && !elf_load_bias(m->fd, start, offset, &m->bias))
		m->bias_known = true;
	if (m->fd < 0)
		status__debug("cannot open %s of process %d", path, s->pid);
	return s->nr_modules++;
}

static int compare_mappings(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int symbolizer__refresh(struct symbolizer *s)
{
	char maps_path[96], dir[64];
	struct mapping *mappings = NULL;
	struct procfs_maps maps;
	struct procfs_mapping m;
	size_t nr = 0, cap = 0;
	int err = 0;

	err = proc_files__dir(s->pid, dir, sizeof(dir));
	if (err)
		return err;
	snprintf(maps_path, sizeof(maps_path), "%s/maps", dir);
	err = procfs_maps__open(&maps, maps_path);
	if (err)
		return err;
	while (procfs_maps__next(&maps, &m) > 0) {
		unsigned long long start = m.start, end = m.end, offset = m.offset, inode = m.inode;
		unsigned int major = m.major, minor = m.minor;
		const char *path = m.path;
		int64_t module;

		if (m.perms[2] != 'x')
			continue;
		if (!inode && strcmp(path, "[vdso]"))
			continue; /* anonymous: JIT code, resolved through the perf map */
		module =
		    find_module(s, ((uint64_t)major << 32) | minor, inode, path, start - offset);
		if (module < 0)
			module = add_module(s, ((uint64_t)major << 32) | minor, inode, path, start,
					    end, offset);
		if (module < 0) {
			err = module;
			break;
		}
		if (nr == cap) {
			void *p;

			cap = cap ? cap * 2 : 64;
			p = realloc(mappings, cap * sizeof(*mappings));
			if (!p) {
				err = -ENOMEM;
				break;
			}
			mappings = p;
		}
		mappings[nr++] = (struct mapping){start, end, offset, module};
	}
	procfs_maps__close(&maps);
	if (err) {
		free(mappings);
		return err;
	}
	if (!nr) {
		/* The target has exited (a zombie has no maps): keep what we
		 * knew, which is what its last samples ran in. */
		free(mappings);
		return s->nr_mappings ? 0 : -ESRCH;
	}
	qsort(mappings, nr, sizeof(*mappings), compare_mappings);
	/* Keep old mappings that no longer exist (dlclose, exit) where they do
	 * not overlap a new one: samples taken before still point there. */
	for (size_t i = 0; i < s->nr_mappings; i++) {
		const struct mapping *old = &s->mappings[i];
		bool overlaps = false;

		for (size_t k = 0; k < nr && !overlaps; k++)
			overlaps = old->start < mappings[k].end && mappings[k].start < old->end;
		if (overlaps)
			continue;
		if (nr == cap) {
			void *p;

			cap *= 2;
			p = realloc(mappings, cap * sizeof(*mappings));
			if (!p) {
				free(mappings);
				return -ENOMEM;
			}
			mappings = p;
		}
		mappings[nr++] = *old;
	}
	qsort(mappings, nr, sizeof(*mappings), compare_mappings);
	free(s->mappings);
	s->mappings = mappings;
	s->nr_mappings = nr;
	s->dwfl_reported = false;
	return 0;
}

static const struct mapping *mapping_of(const struct symbolizer *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nr_mappings;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct mapping *m = &s->mappings[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

bool symbolizer__covers(const struct symbolizer *s, uint64_t addr)
{
	if (mapping_of(s, addr))
		return true;
	for (size_t i = 0; i < s->nr_jit_symbols; i++)
		if (addr >= s->jit_symbols[i].start && addr < s->jit_symbols[i].end)
			return true;
	return false;
}

const struct module *symbolizer__module_of(const struct symbolizer *s, uint64_t addr,
					   uint64_t *file_offset)
{
	const struct mapping *m = mapping_of(s, addr);

	if (!m)
		return NULL;
	if (file_offset)
		*file_offset = addr - m->start + m->offset;
	return &s->modules[m->module];
}

static int compare_jit(const void *a, const void *b)
{
	const struct jit_symbol *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int symbolizer__read_perf_map(struct symbolizer *s)
{
	char path[128], *line = NULL, status_path[64];
	struct jit_symbol *symbols = NULL;
	size_t nr = 0, cap = 0, line_cap = 0;
	long ns_pid = s->pid;
	FILE *file;
	int err = 0;

	/* The map is named by the pid the target sees in its own namespace. */
	snprintf(status_path, sizeof(status_path), "/proc/%d/status", s->pid);
	file = fopen(status_path, "re");
	if (file) {
		while (getline(&line, &line_cap, file) > 0) {
			char *last;

			if (strncmp(line, "NSpid:", 6))
				continue;
			last = strrchr(line, '\t');
			if (last)
				ns_pid = strtol(last + 1, NULL, 10);
		}
		fclose(file);
	}
	snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%ld.map", s->pid, ns_pid);
	file = fopen(path, "re");
	if (!file) {
		free(line);
		return errno == ENOENT ? 0 : -errno;
	}
	while (getline(&line, &line_cap, file) > 0) {
		unsigned long long start, size;
		int consumed = 0;
		char *name;

		if (sscanf(line, "%llx %llx %n", &start, &size, &consumed) < 2 || !consumed)
			continue;
		name = line + consumed;
		name[strcspn(name, "\n")] = '\0';
		if (nr == cap) {
			void *p;

			cap = cap ? cap * 2 : 256;
			p = realloc(symbols, cap * sizeof(*symbols));
			if (!p) {
				err = -ENOMEM;
				break;
			}
			symbols = p;
		}
		symbols[nr].start = start;
		symbols[nr].end = start + size;
		symbols[nr].name = strdup(name);
		if (!symbols[nr].name) {
			err = -ENOMEM;
			break;
		}
		nr++;
	}
	free(line);
	fclose(file);
	if (err) {
		while (nr)
			free(symbols[--nr].name);
		free(symbols);
		return err;
	}
	/* Later entries for the same address win: JITs reuse code memory. */
	qsort(symbols, nr, sizeof(*symbols), compare_jit);
	for (size_t i = 0; i < s->nr_jit_symbols; i++)
		free(s->jit_symbols[i].name);
	free(s->jit_symbols);
	s->jit_symbols = symbols;
	s->nr_jit_symbols = nr;
	return 0;
}

static const struct jit_symbol *jit_symbol_of(const struct symbolizer *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nr_jit_symbols;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->jit_symbols[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < s->jit_symbols[lo - 1].end)
		return &s->jit_symbols[lo - 1];
	return NULL;
}

char *symbolizer__demangle(const char *name)
{
	if (!name || (strncmp(name, "_Z", 2) && strncmp(name, "_R", 2)))
		return NULL;
	return cplus_demangle(name, DMGL_NO_OPTS);
}

/* Reports module m to libdwfl at its load bias, once; between
 * dwfl_report_begin_add() and dwfl_report_end(). */
static void report_module(struct symbolizer *s, struct module *m)
{
	int fd;

	if (m->dwfl_module || m->dwfl_tried || m->fd < 0 || !m->bias_known)
		return;
	m->dwfl_tried = true;
	fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return;
	/* libdwfl owns fd from here on. */
	m->dwfl_module = dwfl_report_elf(s->dwfl, m->name, m->path, fd, m->bias, true);
	if (!m->dwfl_module)
		status__debug("libdwfl rejected %s: %s", m->path, dwfl_errmsg(-1));
}

static int dwfl_open(struct symbolizer *s)
{
	if (!s->dwfl) {
		s->dwfl = dwfl_begin(&dwfl_callbacks);
		s->dwfl_generation++;
	}
	return s->dwfl ? 0 : -ENOMEM;
}

/* Reports every known module, as the unwinder needs: a stack crosses them. */
static int report_modules(struct symbolizer *s)
{
	int err;

	if (s->dwfl_reported)
		return 0;
	err = dwfl_open(s);
	if (err)
		return err;
	dwfl_report_begin_add(s->dwfl);
	for (size_t i = 0; i < s->nr_modules; i++)
		report_module(s, &s->modules[i]);
	dwfl_report_end(s->dwfl, NULL, NULL);
	s->dwfl_reported = true;
	return 0;
}

/* The module of an address to symbolize, reported when first needed: a
 * process maps hundreds of files (a torch process 320) that no sample
 * reaches, and each reported file costs its headers', build-id's and
 * symbol tables' pages. */
static Dwfl_Module *symbolize_module(struct symbolizer *s, struct module *m)
{
	if (!m->dwfl_module && !m->dwfl_tried && dwfl_open(s) == 0) {
		dwfl_report_begin_add(s->dwfl);
		report_module(s, m);
		dwfl_report_end(s->dwfl, NULL, NULL);
	}
	return m->dwfl_module;
}

uint64_t symbolizer__dwfl_generation(const struct symbolizer *s)
{
	return s->dwfl_generation;
}

int symbolizer__dwfl(struct symbolizer *s, struct Dwfl **dwfl)
{
	int err = report_modules(s);

	if (err)
		return err;
	*dwfl = s->dwfl;
	return 0;
}

static int pool_append(struct symbolizer *s, const uint32_t *frames, size_t n)
{
	if (s->nr_pool + n > s->cap_pool) {
		size_t cap = s->cap_pool ? s->cap_pool * 2 : 4096;
		void *p;

		while (cap < s->nr_pool + n)
			cap *= 2;
		p = realloc(s->pool, cap * sizeof(*s->pool));
		if (!p)
			return -ENOMEM;
		s->pool = p;
		s->cap_pool = cap;
	}
	memcpy(s->pool + s->nr_pool, frames, n * sizeof(*frames));
	s->nr_pool += n;
	return 0;
}

static int64_t intern_name(struct profile *profile, const char *name, const char *file,
			   uint32_t line, enum frame_kind kind)
{
	const char *at = name ? strchr(name, '@') : NULL;
	char *demangled = symbolizer__demangle(name), *plain = NULL;
	int64_t id;

	/* "__libc_start_main@@GLIBC_2.34": the symbol version is not part of
	 * the function's name, and would split it across libc builds. */
	if (!demangled && at && at != name)
		plain = strndup(name, at - name);
	id = profile__intern_frame(profile,
				   demangled ? demangled
				   : plain   ? plain
					     : name,
				   file, line, kind);
	free(demangled);
	free(plain);
	return id;
}

/* The declaration behind an inlined instance or an out-of-line definition. */
static Dwarf_Die *die_declaration(Dwarf_Die *die, Dwarf_Die *storage)
{
	Dwarf_Attribute attr;

	for (int hops = 0; hops < 4; hops++) {
		if (!dwarf_attr(die, DW_AT_abstract_origin, &attr) &&
		    !dwarf_attr(die, DW_AT_specification, &attr))
			break;
		if (!dwarf_formref_die(&attr, storage))
			break;
		die = storage;
	}
	return die;
}

/* A function's name for a frame: the demangled linkage name, or else the
 * DWARF name qualified by its enclosing namespaces and classes (gcc gives
 * no linkage name to functions with internal linkage).  malloc'd. */
static char *die_function_name(Dwarf_Die *die)
{
	Dwarf_Die storage, *decl = die_declaration(die, &storage), *scopes = NULL;
	Dwarf_Attribute attr;
	const char *name;
	char *qualified = NULL;
	size_t len;
	int n;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (name) {
		qualified = symbolizer__demangle(name);
		return qualified ? qualified : strdup(name);
	}
	name = dwarf_diename(decl);
	if (!name)
		return NULL;
	n = dwarf_getscopes_die(decl, &scopes);
	len = strlen(name) + 1;
	for (int i = 1; i < n; i++) {
		const char *scope = dwarf_diename(&scopes[i]);
		int tag = dwarf_tag(&scopes[i]);

		if (scope && (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
			      tag == DW_TAG_structure_type || tag == DW_TAG_union_type))
			len += strlen(scope) + 2;
	}
	qualified = malloc(len);
	if (qualified) {
		qualified[0] = '\0';
		for (int i = n - 1; i >= 1; i--) {
			const char *scope = dwarf_diename(&scopes[i]);
			int tag = dwarf_tag(&scopes[i]);

			if (scope && (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
				      tag == DW_TAG_structure_type || tag == DW_TAG_union_type)) {
				strcat(qualified, scope);
				strcat(qualified, "::");
			}
		}
		strcat(qualified, name);
	}
	free(scopes);
	return qualified;
}

static const char *call_site_file(Dwarf_Die *die, Dwarf_Die *cudie, uint32_t *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word file_index = 0, call_line = 0;
	Dwarf_Files *files;
	size_t nr_files;

	*line = 0;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &call_line) == 0)
		*line = call_line;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &file_index) ||
	    dwarf_getsrcfiles(cudie, &files, &nr_files) || file_index >= nr_files)
		return NULL;
	return dwarf_filesrc(files, file_index, NULL, NULL);
}

/* Resolves one address into leaf-first frames[]; returns the count. */
/*
 * The file offset of the start of the function holding pc, as the unwind
 * tables (the FDE of .eh_frame, else .debug_frame) give it, so that every
 * address of a function without a symbol names one frame; file_offset (pc's)
 * where no table covers pc.  The FDE start is an ELF address: it is moved
 * back from pc's own file offset by its distance from pc, within one segment.
 */
static uint64_t function_start(Dwfl_Module *mod, uint64_t pc, uint64_t file_offset)
{
	Dwarf_CFI *tables[2] = {NULL, NULL};
	Dwarf_Addr bias[2] = {0, 0};

	if (!mod)
		return file_offset;
	tables[0] = dwfl_module_eh_cfi(mod, &bias[0]);
	tables[1] = dwfl_module_dwarf_cfi(mod, &bias[1]);
	for (int i = 0; i < 2; i++) {
		Dwarf_Frame *frame = NULL;
		Dwarf_Addr start, end;
		uint64_t elf_pc = pc - bias[i];

		if (!tables[i] || dwarf_cfi_addrframe(tables[i], elf_pc, &frame))
			continue;
		/* The frame's range is that of its row of rules; the function
		 * starts where its FDE does, which .eh_frame_hdr says. */
		if ((i != 0 || module_symbols__fde_start(mod, elf_pc, &start)) &&
		    dwarf_frame_info(frame, &start, &end, NULL) < 0)
			start = elf_pc + 1;
		free(frame);
		if (start > elf_pc || elf_pc - start > file_offset)
			continue;
		return file_offset - (elf_pc - start);
	}
	return file_offset;
}

static int resolve_user(struct symbolizer *s, struct profile *profile, uint64_t pc,
			uint32_t *leaf_first, size_t max)
{
	const struct jit_symbol *jit = jit_symbol_of(s, pc);
	const struct mapping *mapping = mapping_of(s, pc);
	Dwfl_Module *mod = NULL;
	const char *symbol = NULL, *file = NULL;
	uint32_t line = 0;
	char unknown[512];
	int n = 0;
	int64_t id;

	if (jit && !mapping) {
		id = profile__intern_frame(profile, jit->name, NULL, 0, FRAME_JIT);
		if (id < 0)
			return id;
		leaf_first[0] = id;
		return 1;
	}
	if (mapping)
		mod = symbolize_module(s, &s->modules[mapping->module]);
	if (mod) {
		struct module *m = &s->modules[mapping->module];
		Dwfl_Line *src;
		Dwarf_Addr bias;
		Dwarf_Die *cudie;
		uint64_t start;

		if (!m->symbols) {
			int err = module_symbols__build(mod, &m->symbols);

			if (err)
				return err;
		}
		symbol = module_symbols__lookup(m->symbols, pc, &start);
		src = dwfl_module_getsrc(mod, pc);
		if (src) {
			int lineno = 0;

			file = dwfl_lineinfo(src, NULL, &lineno, NULL, NULL, NULL);
			line = lineno > 0 ? lineno : 0;
		}
		cudie = symbol ? dwfl_module_addrdie(mod, pc, &bias) : NULL;
		if (cudie) {
			Dwarf_Die *scopes = NULL;
			int nr_scopes = dwarf_getscopes(cudie, pc - bias, &scopes);

			for (int i = 0; i < nr_scopes && (size_t)n + 1 < max; i++) {
				int tag = dwarf_tag(&scopes[i]);
				char *name;

				if (tag == DW_TAG_subprogram)
					break;
				if (tag != DW_TAG_inlined_subroutine)
					continue;
				name = die_function_name(&scopes[i]);
				id = profile__intern_frame(profile, name ? name : "[inlined]", file,
							   line, FRAME_INLINE);
				free(name);
				if (id < 0) {
					free(scopes);
					return id;
				}
				leaf_first[n++] = id;
				/* The caller was at the call site. */
				file = call_site_file(&scopes[i], cudie, &line);
			}
			free(scopes);
		}
	}
	if (symbol) {
		id = intern_name(profile, symbol, file, line, FRAME_NATIVE);
	} else {
		if (mapping)
			snprintf(unknown, sizeof(unknown), "[%s+0x%" PRIx64 "]",
				 s->modules[mapping->module].name,
				 function_start(mod, pc, pc - mapping->start + mapping->offset));
		else
			snprintf(unknown, sizeof(unknown), "[unknown+0x%" PRIx64 "]", pc);
		id = profile__intern_frame(profile, unknown, NULL, 0, FRAME_UNKNOWN);
	}
	if (id < 0)
		return id;
	leaf_first[n++] = id;
	return n;
}

void symbolizer__share(struct symbolizer *s, struct symbol_share *share)
{
	s->share = share;
}

/* Where pc lies in a file, for the share: false for an address in no file
 * (anonymous memory, JIT code) or a share of another profile. */
static bool file_address_of(const struct symbolizer *s, const struct profile *profile, uint64_t pc,
			    struct file_address *a, int *fd)
{
	const struct mapping *m = s->share ? mapping_of(s, pc) : NULL;
	const struct module *module = m ? &s->modules[m->module] : NULL;

	if (!module || !module->inode || !symbol_share__serves(s->share, profile))
		return false;
	*a = (struct file_address){module->dev, module->inode, pc - m->start + m->offset};
	*fd = module->fd;
	return true;
}

int symbolizer__user_frames(struct symbolizer *s, struct profile *profile, uint64_t addr,
			    bool return_address, uint32_t *frames, size_t max)
{
	uint64_t pc = return_address && addr ? addr - 1 : addr;
	uint32_t leaf_first[MAX_INLINE_DEPTH];
	struct file_address in_file;
	const uint32_t *found;
	size_t nr_found;
	bool shared;
	uint64_t run;
	int n, err, fd = -1;

	if (!u64_map__get(&s->user_cache, pc, &run)) {
		shared = file_address_of(s, profile, pc, &in_file, &fd);
		found =
		    shared ? symbol_share__find(s->share, profile, &in_file, fd, &nr_found) : NULL;
		if (found && nr_found <= MAX_INLINE_DEPTH) {
			/* Resolved in another process, or an earlier run: root
			 * first already. */
			n = nr_found;
			memcpy(leaf_first, found, n * sizeof(*leaf_first));
		} else {
			n = resolve_user(s, profile, pc, leaf_first, MAX_INLINE_DEPTH);
			if (n < 0)
				return n;
			/* Stored root first, as the stack wants it. */
			for (int i = 0; i < n / 2; i++) {
				uint32_t t = leaf_first[i];

				leaf_first[i] = leaf_first[n - 1 - i];
				leaf_first[n - 1 - i] = t;
			}
			if (shared) {
				err = symbol_share__add(s->share, profile, &in_file, leaf_first, n);
				if (err)
					return err;
			}
		}
		run = (uint64_t)s->nr_pool << 32 | n;
		err = pool_append(s, leaf_first, n);
		if (!err)
			err = u64_map__put(&s->user_cache, pc, run);
		if (err)
			return err;
	}
	n = (uint32_t)run < max ? (uint32_t)run : max;
	memcpy(frames, s->pool + (run >> 32), n * sizeof(*frames));
	return n;
}

/* Lets go of every module's debug information (reread when next needed). */
static void release_debuginfo(struct symbolizer *s)
{
	if (!s->dwfl)
		return;
	dwfl_end(s->dwfl);
	s->dwfl = NULL;
	s->dwfl_reported = false;
	for (size_t i = 0; i < s->nr_modules; i++) {
		module_symbols__free(s->modules[i].symbols);
		s->modules[i].symbols = NULL;
		s->modules[i].dwfl_module = NULL;
		s->modules[i].dwfl_tried = false;
	}
}

static int compare_pcs(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int symbolizer__resolve_all(struct symbolizer *s, struct profile *profile, uint64_t *pcs, size_t n)
{
	uint32_t frames[MAX_INLINE_DEPTH];
	int64_t module = -1;

	/* What the unwinder reported, all at once, goes first. */
	release_debuginfo(s);
	/* In address order a module's addresses come together: its
	 * mappings lie side by side. */
	qsort(pcs, n, sizeof(*pcs), compare_pcs);
	for (size_t i = 0; i < n; i++) {
		const struct mapping *m;
		int err;

		if (i && pcs[i] == pcs[i - 1])
			continue;
		m = mapping_of(s, pcs[i]);
		if (m && m->module != module) {
			release_debuginfo(s);
			module = m->module;
		}
		/* The lookup address as it is: a leaf. */
		err = symbolizer__user_frames(s, profile, pcs[i], false, frames, MAX_INLINE_DEPTH);
		if (err < 0)
			return err;
	}
	release_debuginfo(s);
	return 0;
}

int64_t symbolizer__kernel_frame(struct symbolizer *s, struct profile *profile, uint64_t addr,
				 bool return_address)
{
	uint64_t pc = return_address && addr ? addr - 1 : addr;
	const char *name;
	uint64_t cached;
	int64_t id;

	if (u64_map__get(&s->kernel_cache, pc, &cached))
		return cached;
	name = kernel_symbols__name(pc);
	if (name) {
		id = profile__intern_frame(profile, name, NULL, 0, FRAME_KERNEL);
	} else {
		char unknown[64];

		snprintf(unknown, sizeof(unknown), "[kernel+0x%" PRIx64 "]", pc);
		id = profile__intern_frame(profile, unknown, NULL, 0, FRAME_KERNEL);
	}
	if (id < 0)
		return id;
	if (u64_map__put(&s->kernel_cache, pc, id))
		return -ENOMEM;
	return id;
}
