// SPDX-License-Identifier: GPL-2.0
/* What the library probe families share; see library_probe.h. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu/library_probe.h"

int library_probe__function_offsets(const char *path, bool dynsym_only,
				    int (*index_of)(const char *name, void *ctx), void *ctx,
				    size_t *offsets)
{
	Elf_Scn *section = NULL;
	int fd, err = -ENOENT;
	Elf *elf;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		close(fd);
		return -EINVAL;
	}
	while ((section = elf_nextscn(elf, section))) {
		GElf_Shdr header;
		Elf_Data *data;

		if (!gelf_getshdr(section, &header) ||
		    (header.sh_type != SHT_DYNSYM && (dynsym_only || header.sh_type != SHT_SYMTAB)))
			continue;
		data = elf_getdata(section, NULL);
		for (size_t i = 0;
		     data && header.sh_entsize && i < header.sh_size / header.sh_entsize; i++) {
			GElf_Sym symbol;
			GElf_Shdr home;
			const char *name;
			int k;

			if (!gelf_getsym(data, i, &symbol) ||
			    GELF_ST_TYPE(symbol.st_info) != STT_FUNC ||
			    symbol.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, header.sh_link, symbol.st_name);
			k = name ? index_of(name, ctx) : -1;
			if (k < 0 || offsets[k] ||
			    !gelf_getshdr(elf_getscn(elf, symbol.st_shndx), &home))
				continue;
			offsets[k] = symbol.st_value - home.sh_addr + home.sh_offset;
			err = 0;
		}
	}
	elf_end(elf);
	close(fd);
	return err;
}

static void *destroy_link(void *link)
{
	bpf_link__destroy(link);
	return NULL;
}

void library_probe__destroy_links(struct bpf_link **links, size_t nr)
{
	pthread_t *threads = calloc(nr ? nr : 1, sizeof(*threads));
	bool *started = calloc(nr ? nr : 1, sizeof(*started));

	for (size_t k = 0; k < nr; k++) {
		if (threads && started)
			started[k] = !pthread_create(&threads[k], NULL, destroy_link, links[k]);
		if (!started || !started[k])
			bpf_link__destroy(links[k]);
	}
	for (size_t k = 0; started && k < nr; k++)
		if (started[k])
			pthread_join(threads[k], NULL);
	free(threads);
	free(started);
}

/* union bpf_attr's link_create with its uprobe_multi member, which the
 * system's headers may predate. */
struct link_create_uprobe_multi {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t count, multi_flags, pid;
	uint32_t pad;
};
#define UPROBE_MULTI_RETURN 1

int library_probe__attach_multi(int prog_fd, const char *path, const size_t *offsets,
				const uint64_t *cookies, uint32_t count, bool retprobe, pid_t pid)
{
	struct link_create_uprobe_multi attr;
	unsigned long long *addresses = calloc(count ? count : 1, sizeof(*addresses));
	int fd, err;

	if (!addresses)
		return -ENOMEM;
	for (uint32_t k = 0; k < count; k++)
		addresses[k] = offsets[k];
	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = prog_fd;
	attr.attach_type = LIBRARY_PROBE_UPROBE_MULTI;
	attr.path = (uintptr_t)path;
	attr.offsets = (uintptr_t)addresses;
	attr.cookies = (uintptr_t)cookies;
	attr.count = count;
	attr.multi_flags = retprobe ? UPROBE_MULTI_RETURN : 0;
	attr.pid = pid;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	err = -errno;
	free(addresses);
	return fd < 0 ? err : fd;
}

bool library_probe__multi_supported(void)
{
	static int supported = -1;
	struct bpf_insn program[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, options,
		    .expected_attach_type = (enum bpf_attach_type)LIBRARY_PROBE_UPROBE_MULTI);
	size_t offset = 0;
	int prog_fd, fd;

	if (supported >= 0)
		return supported;
	prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", program, 2, &options);
	if (prog_fd < 0) {
		supported = 0;
		return false;
	}
	/* A kernel that knows the attach type fails on "/" as a file. */
	fd = library_probe__attach_multi(prog_fd, "/", &offset, NULL, 1, false, 0);
	supported = fd == -EBADF;
	if (fd >= 0)
		close(fd);
	close(prog_fd);
	return supported;
}

static void *close_link(void *fd)
{
	close((int)(intptr_t)fd);
	return NULL;
}

void library_probe__close_links(const int *fds, size_t nr)
{
	pthread_t threads[64];
	bool started[64] = {false};

	for (size_t k = 0; k < nr; k++) {
		if (k < 64)
			started[k] = !pthread_create(&threads[k], NULL, close_link,
						     (void *)(intptr_t)fds[k]);
		if (k >= 64 || !started[k])
			close(fds[k]);
	}
	for (size_t k = 0; k < nr && k < 64; k++)
		if (started[k])
			pthread_join(threads[k], NULL);
}

void library_probe__describe_stack(const struct profile *p, const uint32_t *frames,
				   size_t nr_frames, char *buf, size_t size)
{
	size_t len = 0, shown = 0;

	buf[0] = '\0';
	for (size_t k = nr_frames; k-- > 0 && shown < LIBRARY_PROBE_STACK_FRAMES;) {
		const struct frame *f = &p->frames[frames[k]];

		if (f->kind == FRAME_PROCESS || f->kind == FRAME_THREAD)
			break;
		len += snprintf(buf + len, len < size ? size - len : 0, "%s%s", shown ? " < " : "",
				f->name);
		shown++;
	}
	if (!shown)
		snprintf(buf, size, "[no stack]");
}
