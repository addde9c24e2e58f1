// SPDX-License-Identifier: GPL-2.0
/* What the library probe families share; see library_probe.h. */
#include <bpf/libbpf.h>
#include <errno.h>
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
