// SPDX-License-Identifier: GPL-2.0
/* The unwind tables of a session: one per file, built on a background
 * thread, and each process's mappings loaded into BPF; see unwind_table.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "array.h"
#include "sampling/bpf_cost.h"
#include "base/clock.h"
#include "base/procfs.h"
#include "status.h"
#include "sampling/unwind_cache.h"
#include "sampling/unwind_table.h"

enum table_state {
	TABLE_UNUSED, /* not queued: new, or deferred */
	TABLE_QUEUED,
	TABLE_READY,
	TABLE_FAILED,
};

struct table_file {
	uint64_t dev, inode;
	char *path;
	int fd; /* the vDSO's copy until built; files are opened to build */
	/* The mapping's own file, in the process that mapped it when it was
	 * queued: right even when the path was replaced or deleted, or lies
	 * in another mount namespace. */
	char map_file[96];
	uint64_t size;
	size_t users; /* mappings of it in the processes' latest maps */
	enum table_state state;
	/* Built before the rest: a sample ran through it, or it is a
	 * program's own code or libc, which every stack runs through. */
	bool sampled;
	/* Not sampled, and left out while the rows map was a quarter full: built
	 * only once a sample runs through it. */
	bool deferred;
	struct unwind_table table; /* rows freed once loaded into BPF */
	uint32_t chunk, first_row;
	uint64_t build_ns;
	int err;
};

struct table_mapping {
	uint64_t start, end, offset;
	size_t file;
};

struct table_process {
	pid_t pid;
	struct table_mapping *mappings;
	size_t nr_mappings, cap_mappings;
	size_t nr_loaded; /* mappings in its BPF entry */
	bool pending;	  /* some of its files are queued */
};

/* One inner map of the rows map: files' rows back to back. */
struct row_chunk {
	int fd;
	uint32_t size, used;
};

struct unwind_tables {
	int rows_fd, processes_fd, event_fd;
	uint32_t max_rows; /* in all the chunks */
	struct row_chunk chunks[UNWIND_MAX_CHUNKS];
	uint32_t nr_chunks, allocated_rows;
	uint32_t nr_doubled; /* chunks of the doubling sizes (not one file's own) */

	pthread_mutex_t lock; /* files[].state, .table, .err, the chunks, used_rows, queued */
	pthread_cond_t wake;
	pthread_cond_t built; /* a file's table is done */
	pthread_t worker;
	bool worker_started, stopping;
	struct table_file **files; /* pointers: the worker holds one across a build */
	size_t nr_files, cap_files;
	size_t queued;
	uint32_t used_rows;

	struct table_process *processes;
	size_t nr_processes, cap_processes;

	uint64_t first_queued_ns, last_ready_ns, sampled_ready_ns, build_ns;
	size_t nr_built, nr_failed, nr_deferred;
	bool reported;

	struct unwind_cache *cache; /* NULL: every file compiled, none kept */
	size_t nr_from_cache, nr_compiled, cache_write_failed;
	/* CPU time compiling, reading entries, writing them. */
	uint64_t compile_ns, cache_read_ns, cache_write_ns;
	/* The rows loaded, file by file, summed: the same files give the same
	 * digest whether their rows were compiled or read (-v). */
	uint64_t rows_digest;
};

/* Copies rows into the BPF array through a mapping of just their pages, so
 * the rows do not stay in llmprof's memory. */
static int write_rows(int rows_fd, uint32_t first, const struct unwind_row *rows, size_t nr)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t begin = (uint64_t)first * sizeof(*rows), end = begin + nr * sizeof(*rows);
	uint64_t map_begin = begin & ~(uint64_t)(page - 1);
	size_t len = end - map_begin;
	void *mem;

	if (!nr)
		return 0;
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rows_fd, map_begin);
	if (mem == MAP_FAILED)
		return -errno;
	memcpy((char *)mem + (begin - map_begin), rows, nr * sizeof(*rows));
	munmap(mem, len);
	return 0;
}

/* Leaves a queued file to be queued again when a sample runs through it;
 * called with the lock held. */
static void defer(struct unwind_tables *t, struct table_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->state = TABLE_UNUSED;
	f->deferred = true;
	t->queued--;
	t->nr_deferred++;
}

/* A chunk of the rows map with room for nr rows: twice as large as the one
 * before (the first UNWIND_FIRST_CHUNK_ROWS), or a file's own where its rows
 * need more (libtorch's are a million), so that a session takes little more
 * memory than its files' rows need, in few chunks.  The index of the chunk
 * or -errno; called with the lock held. */
static int add_chunk(struct unwind_tables *t, uint32_t nr)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	uint32_t size = UNWIND_FIRST_CHUNK_ROWS << (t->nr_doubled < 6 ? t->nr_doubled : 6);
	uint32_t page_rows = sysconf(_SC_PAGESIZE) / sizeof(struct unwind_row);
	uint32_t index = t->nr_chunks;
	int fd;

	if (size < nr)
		size = (nr + page_rows - 1) / page_rows * page_rows;
	else
		t->nr_doubled++;
	if (size > t->max_rows - t->allocated_rows)
		size = t->max_rows - t->allocated_rows;
	if (index == UNWIND_MAX_CHUNKS || size < nr || !nr)
		return -ENOSPC;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_chunk", sizeof(__u32),
			    sizeof(struct unwind_row), size, &opts);
	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(t->rows_fd, &index, &fd, BPF_ANY)) {
		int err = -errno;

		close(fd);
		return err;
	}
	bpf_cost__map_created(fd);
	t->chunks[t->nr_chunks++] = (struct row_chunk){.fd = fd, .size = size};
	t->allocated_rows += size;
	return index;
}

/* Room for a file's nr rows: the first chunk where they fit, or a new
 * one.  0 or -ENOSPC (the chunks hold max_rows in all); called with the
 * lock held. */
static int place_rows(struct unwind_tables *t, uint32_t nr, uint32_t *chunk, uint32_t *first)
{
	int index = -1;

	for (uint32_t i = 0; i < t->nr_chunks && index < 0; i++)
		if (t->chunks[i].size - t->chunks[i].used >= nr)
			index = i;
	if (index < 0)
		index = add_chunk(t, nr);
	if (index < 0)
		return index;
	*chunk = index;
	*first = t->chunks[index].used;
	t->chunks[index].used += nr;
	t->used_rows += nr;
	return 0;
}

/* How one file's rows were had, for the counts of -v. */
struct file_build {
	struct unwind_cache_key key;
	bool keyed;	 /* it has a build-id: its rows can be kept */
	bool from_cache; /* read, not compiled */
	bool compiled;
	uint64_t read_ns, compile_ns;
};

/* The rows of the file open at fd: the cache's where it holds them, else
 * compiled.  0 or -errno. */
static int rows_of_file(struct unwind_tables *t, int fd, struct unwind_table *table,
			struct file_build *built)
{
	uint64_t start = clock__thread_cpu_ns();
	int err;

	*built = (struct file_build){0};
	if (t->cache) {
		built->keyed = !unwind_cache__key(fd, &built->key);
		built->from_cache =
		    built->keyed && !unwind_cache__read(t->cache, &built->key, table);
		built->read_ns = clock__thread_cpu_ns() - start;
		if (built->from_cache)
			return 0;
		start = clock__thread_cpu_ns();
	}
	err = unwind_table__compile(fd, table);
	built->compiled = !err;
	built->compile_ns = clock__thread_cpu_ns() - start;
	return err;
}

/* Called with the lock held. */
static void count_build(struct unwind_tables *t, const struct file_build *built)
{
	t->nr_from_cache += built->from_cache;
	t->nr_compiled += built->compiled;
	t->cache_read_ns += built->read_ns;
	t->compile_ns += built->compile_ns;
}

/* Writes compiled rows to the cache, for the next run. */
static void store_rows(struct unwind_tables *t, const struct file_build *built,
		       const struct unwind_table *table)
{
	uint64_t start = clock__thread_cpu_ns();
	int err;

	if (!t->cache || !built->keyed || !built->compiled)
		return;
	err = unwind_cache__write(t->cache, &built->key, table);
	pthread_mutex_lock(&t->lock);
	t->cache_write_ns += clock__thread_cpu_ns() - start;
	/* Once: a full disk would say it for every file. */
	if (err && !t->cache_write_failed++)
		status__debug("unwind cache: rows not kept in %s: %s", unwind_cache__dir(t->cache),
			      strerror(-err));
	pthread_mutex_unlock(&t->lock);
}

static void *worker_main(void *arg)
{
	struct unwind_tables *t = arg;

	pthread_mutex_lock(&t->lock);
	for (;;) {
		struct table_file *f = NULL;
		struct unwind_table table;
		struct file_build built = {0};
		uint64_t start;
		uint32_t chunk = 0, first = 0;
		int err;

		while (!t->stopping && !t->queued)
			pthread_cond_wait(&t->wake, &t->lock);
		if (t->stopping)
			break;
		/* Files that samples ran through first, then the rest; small
		 * files first within each: they build in milliseconds, where
		 * libtorch takes a second, so most of a process's code is
		 * ready at once, and a file that no sample has reached yet
		 * is likely to be ready before one does.  Files that no
		 * process maps any more (the image before an exec) wait. */
		for (size_t i = 0; i < t->nr_files; i++) {
			struct table_file *c = t->files[i];

			if (c->state != TABLE_QUEUED || !c->users)
				continue;
			if (!f || c->sampled > f->sampled ||
			    (c->sampled == f->sampled && c->size < f->size))
				f = c;
		}
		if (!f) {
			pthread_cond_wait(&t->wake, &t->lock);
			continue;
		}
		/* Files no sample has reached use at most a quarter of the rows map:
		 * the rest is kept for those that samples reach (a process
		 * with torch maps more code than the map holds). */
		if (!f->sampled && t->used_rows >= t->max_rows / 4) {
			defer(t, f);
			continue;
		}
		pthread_mutex_unlock(&t->lock);

		start = clock__thread_cpu_ns();
		if (f->fd < 0)
			f->fd = open(f->map_file, O_RDONLY | O_CLOEXEC);
		if (f->fd < 0)
			f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
		err = f->fd < 0 ? -errno : rows_of_file(t, f->fd, &table, &built);
		if (f->fd >= 0)
			close(f->fd);
		f->fd = -1;
		if (err)
			table = (struct unwind_table){0};

		pthread_mutex_lock(&t->lock);
		count_build(t, &built);
		if (!err && !f->sampled && t->used_rows + table.nr_rows > t->max_rows / 4) {
			t->build_ns += clock__thread_cpu_ns() - start;
			defer(t, f);
			pthread_mutex_unlock(&t->lock);
			store_rows(t, &built, &table);
			unwind_table__release(&table);
			pthread_mutex_lock(&t->lock);
			continue;
		}
		if (!err)
			err = place_rows(t, table.nr_rows, &chunk, &first);
		pthread_mutex_unlock(&t->lock);
		if (!err)
			err = write_rows(t->chunks[chunk].fd, first, table.rows, table.nr_rows);

		pthread_mutex_lock(&t->lock);
		/* BPF has the rows now; keep only what maps them. */
		f->table = table;
		f->table.rows = NULL;
		f->table.mapping = NULL;
		f->chunk = chunk;
		f->first_row = first;
		f->build_ns = clock__thread_cpu_ns() - start;
		f->err = err;
		f->state = err ? TABLE_FAILED : TABLE_READY;
		t->queued--;
		t->build_ns += f->build_ns;
		if (err) {
			t->nr_failed++;
		} else {
			t->nr_built++;
			if (status__level() >= STATUS_VERBOSE)
				t->rows_digest += unwind_rows__hash(0, table.rows, table.nr_rows);
		}
		t->last_ready_ns = clock__monotonic_ns();
		if (f->sampled)
			t->sampled_ready_ns = t->last_ready_ns;
		pthread_cond_broadcast(&t->built);
		pthread_mutex_unlock(&t->lock);
		eventfd_write(t->event_fd, 1);
		/* Kept for the next run once this one has them. */
		if (!err)
			store_rows(t, &built, &table);
		unwind_table__release(&table);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int unwind_tables__new(int rows_fd, uint32_t max_rows, int processes_fd, bool use_cache,
		       struct unwind_tables **out)
{
	struct unwind_tables *t = calloc(1, sizeof(*t));
	char dir[4096];
	int err;

	if (!t)
		return -ENOMEM;
	t->rows_fd = rows_fd;
	t->max_rows = max_rows;
	t->processes_fd = processes_fd;
	/* Without a cache (none wanted, none usable) every file is compiled,
	 * as before. */
	if (use_cache && !unwind_cache__default_dir(dir, sizeof(dir)))
		unwind_cache__open(dir, UNWIND_CACHE_MAX_BYTES, &t->cache);
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->wake, NULL);
	pthread_cond_init(&t->built, NULL);
	t->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->event_fd < 0) {
		err = -errno;
		goto fail;
	}
	err = -pthread_create(&t->worker, NULL, worker_main, t);
	if (err)
		goto fail;
	t->worker_started = true;
	*out = t;
	return 0;
fail:
	unwind_tables__free(t);
	return err;
}

void unwind_tables__free(struct unwind_tables *t)
{
	if (!t)
		return;
	if (t->worker_started) {
		pthread_mutex_lock(&t->lock);
		t->stopping = true;
		pthread_cond_signal(&t->wake);
		pthread_mutex_unlock(&t->lock);
		pthread_join(t->worker, NULL);
	}
	for (size_t i = 0; i < t->nr_files; i++) {
		if (t->files[i]->fd >= 0)
			close(t->files[i]->fd);
		free(t->files[i]->table.rows);
		free(t->files[i]->path);
		free(t->files[i]);
	}
	free(t->files);
	for (uint32_t i = 0; i < t->nr_chunks; i++)
		close(t->chunks[i].fd);
	for (size_t i = 0; i < t->nr_processes; i++)
		free(t->processes[i].mappings);
	free(t->processes);
	if (t->event_fd >= 0)
		close(t->event_fd);
	pthread_cond_destroy(&t->wake);
	pthread_cond_destroy(&t->built);
	pthread_mutex_destroy(&t->lock);
	unwind_cache__close(t->cache);
	free(t);
}

int unwind_tables__event_fd(const struct unwind_tables *t)
{
	return t->event_fd;
}

/* The cache entry of a file, queued for building when new; called with the
 * lock held. */
static int64_t file_of(struct unwind_tables *t, uint64_t dev, uint64_t inode, const char *path)
{
	struct table_file *f;

	for (size_t i = 0; i < t->nr_files; i++)
		if (t->files[i]->dev == dev && t->files[i]->inode == inode)
			return i;
	if (array__grow((void **)&t->files, &t->cap_files, t->nr_files + 1, sizeof(*t->files)))
		return -ENOMEM;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->dev = dev;
	f->inode = inode;
	f->fd = -1;
	f->path = strdup(path);
	if (!f->path) {
		free(f);
		return -ENOMEM;
	}
	t->files[t->nr_files] = f;
	return t->nr_files++;
}

/* The vDSO's image, from the process's memory into a memory file that the
 * compiler reads like any other.  An fd or -errno. */
static int copy_vdso(pid_t pid, uint64_t start, uint64_t end)
{
	char path[64], *image;
	size_t len = end - start;
	int mem, fd;

	if (len > (1 << 20))
		return -E2BIG;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (mem < 0)
		return -errno;
	image = malloc(len);
	fd = memfd_create("llmprof-vdso", MFD_CLOEXEC);
	if (!image || fd < 0 || pread(mem, image, len, start) != (ssize_t)len ||
	    write(fd, image, len) != (ssize_t)len) {
		if (fd >= 0)
			close(fd);
		fd = -EIO;
	}
	free(image);
	close(mem);
	return fd;
}

/* Queues a file that a process maps for the worker (the vDSO is copied
 * now, a file opened when it is built); called with the lock held. */
static void queue_file(struct unwind_tables *t, pid_t pid, const struct table_mapping *m)
{
	struct table_file *f = t->files[m->file];
	struct stat st;
	int err = 0;

	/* Files are opened only to be built: a process with torch maps
	 * hundreds, queued at once. */
	snprintf(f->map_file, sizeof(f->map_file), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid,
		 m->start, m->end);
	if (!f->inode) {
		f->fd = copy_vdso(pid, m->start, m->end);
		if (f->fd < 0 || fstat(f->fd, &st))
			err = -EIO;
	} else if (stat(f->map_file, &st) && stat(f->path, &st)) {
		err = -errno;
	}
	if (err) {
		if (f->fd >= 0)
			close(f->fd);
		f->fd = -1;
		f->state = TABLE_FAILED;
		f->err = err;
		t->nr_failed++;
		return;
	}
	f->size = st.st_size;
	f->state = TABLE_QUEUED;
	if (!t->first_queued_ns)
		t->first_queued_ns = clock__monotonic_ns();
	t->queued++;
	t->reported = false;
	pthread_cond_signal(&t->wake);
}

static struct table_process *process_of(struct unwind_tables *t, pid_t pid)
{
	for (size_t i = 0; i < t->nr_processes; i++)
		if (t->processes[i].pid == pid)
			return &t->processes[i];
	if (array__grow((void **)&t->processes, &t->cap_processes, t->nr_processes + 1,
			sizeof(*t->processes)))
		return NULL;
	t->processes[t->nr_processes] = (struct table_process){.pid = pid};
	return &t->processes[t->nr_processes++];
}

/* Writes the process's BPF entry from its mappings whose rows are ready;
 * called with the lock held. */
static int load_process(struct unwind_tables *t, struct table_process *p)
{
	struct unwind_process *entry = calloc(1, sizeof(*entry));
	bool *take = calloc(p->nr_mappings + 1, sizeof(*take));
	uint32_t key = p->pid;
	size_t nr_take = 0;
	int err = 0;

	if (!entry || !take) {
		free(entry);
		free(take);
		return -ENOMEM;
	}
	p->pending = false;
	/* The entry holds UNWIND_MAX_MAPPINGS: those of files that samples
	 * ran through first (torch maps more), then the rest, in address
	 * order. */
	for (int sampled = 1; sampled >= 0; sampled--) {
		for (size_t i = 0; i < p->nr_mappings && nr_take < UNWIND_MAX_MAPPINGS; i++) {
			const struct table_file *f = t->files[p->mappings[i].file];

			if (f->state == TABLE_QUEUED)
				p->pending = true;
			if (f->sampled != sampled || f->state != TABLE_READY || !f->table.nr_rows)
				continue;
			take[i] = true;
			nr_take++;
		}
	}
	for (size_t i = 0; i < p->nr_mappings; i++) {
		const struct table_mapping *m = &p->mappings[i];
		const struct table_file *f = t->files[m->file];
		struct unwind_mapping *out = &entry->mappings[entry->nr];
		uint64_t bias;

		if (!take[i])
			continue;
		if (unwind_table__bias(&f->table, m->start, m->offset, &bias))
			continue;
		out->bias = bias;
		out->start = m->start;
		out->end = m->end;
		out->chunk = f->chunk;
		out->first_row = f->first_row;
		out->nr_rows = f->table.nr_rows;
		entry->nr++;
	}
	if (entry->nr != p->nr_loaded || entry->nr) {
		if (bpf_map_update_elem(t->processes_fd, &key, entry, BPF_ANY))
			err = -errno;
		else
			p->nr_loaded = entry->nr;
	}
	free(take);
	free(entry);
	return err;
}

/* A process that is gone: its mappings no longer hold the files' tables
 * wanted, and its BPF entry goes (the PID may be reused). */
static void forget_process(struct unwind_tables *t, pid_t pid)
{
	uint32_t key = pid;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->nr_processes; i++) {
		struct table_process *p = &t->processes[i];

		if (p->pid != pid)
			continue;
		for (size_t k = 0; k < p->nr_mappings; k++)
			t->files[p->mappings[k].file]->users--;
		free(p->mappings);
		t->processes[i] = t->processes[--t->nr_processes];
		bpf_map_delete_elem(t->processes_fd, &key);
		break;
	}
	pthread_mutex_unlock(&t->lock);
}

int unwind_tables__update_process(struct unwind_tables *t, pid_t pid)
{
	struct table_process *p;
	struct procfs_maps maps;
	struct procfs_mapping m;
	char path[64];
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	err = procfs_maps__open(&maps, path);
	if (err) {
		forget_process(t, pid);
		return err;
	}
	pthread_mutex_lock(&t->lock);
	p = process_of(t, pid);
	if (!p) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p->nr_mappings; i++)
		t->files[p->mappings[i].file]->users--;
	p->nr_mappings = 0;
	while (procfs_maps__next(&maps, &m) > 0) {
		unsigned long long start = m.start, end = m.end, offset = m.offset, inode = m.inode;
		unsigned int major = m.major, minor = m.minor;
		const char *file = m.path;
		int64_t index;

		if (m.perms[2] != 'x')
			continue;
		/* The vDSO: one image for every process, read from memory. */
		if (!strcmp(file, "[vdso]")) {
			major = minor = 0;
			inode = 0;
			offset = 0;
		} else if (!inode || file[0] != '/') {
			continue;
		}
		index = file_of(t, makedev(major, minor), inode, file);
		if (index < 0) {
			err = index;
			goto out;
		}
		if (array__grow((void **)&p->mappings, &p->cap_mappings, p->nr_mappings + 1,
				sizeof(*p->mappings))) {
			err = -ENOMEM;
			goto out;
		}
		/* /proc/PID/maps lists mappings by address: sorted already. */
		p->mappings[p->nr_mappings++] = (struct table_mapping){
		    .start = start, .end = end, .offset = offset, .file = index};
		t->files[index]->users++;
	}
	/* Every file it maps is queued at once, so that its tables are
	 * ready before samples reach its code (a process with torch maps
	 * dozens of libraries, which it loads seconds before it runs them).
	 * Every stack runs through the program's own code and libc's: those
	 * go first, with the files that samples ran through. */
	for (size_t i = 0; i < p->nr_mappings; i++) {
		struct table_file *f = t->files[p->mappings[i].file];
		const char *base = strrchr(f->path, '/');

		base = base ? base + 1 : f->path;
		if (p->mappings[i].file == p->mappings[0].file || !strncmp(base, "libc.so", 7) ||
		    !strncmp(base, "libc-", 5))
			f->sampled = true;
		if (f->state == TABLE_UNUSED && !f->deferred)
			queue_file(t, pid, &p->mappings[i]);
	}
	/* Files it maps now may be ones the worker was waiting for. */
	pthread_cond_signal(&t->wake);
	err = load_process(t, p);
out:
	pthread_mutex_unlock(&t->lock);
	procfs_maps__close(&maps);
	return err;
}

/* Files queued that some process maps (only those that go first, with
 * sampled); called with the lock held. */
static size_t wanted(const struct unwind_tables *t, bool sampled)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nr_files; i++)
		n += t->files[i]->state == TABLE_QUEUED && t->files[i]->users &&
		     (!sampled || t->files[i]->sampled);
	return n;
}

void unwind_tables__note_stack(struct unwind_tables *t, pid_t pid, const uint64_t *addrs, size_t nr)
{
	struct table_process *p = NULL;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->nr_processes && !p; i++)
		if (t->processes[i].pid == pid)
			p = &t->processes[i];
	for (size_t k = 0; p && k < nr; k++) {
		size_t lo = 0, hi = p->nr_mappings;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			const struct table_mapping *m = &p->mappings[mid];

			if (addrs[k] < m->start) {
				hi = mid;
			} else if (addrs[k] >= m->end) {
				lo = mid + 1;
			} else {
				struct table_file *f = t->files[m->file];

				/* The worker takes it next, if not built. */
				f->sampled = true;
				if (f->state == TABLE_UNUSED) {
					if (f->deferred)
						t->nr_deferred--;
					f->deferred = false;
					queue_file(t, pid, m);
				}
				break;
			}
		}
	}
	pthread_mutex_unlock(&t->lock);
}

int unwind_tables__poll(struct unwind_tables *t)
{
	eventfd_t ignored;
	size_t waiting;
	int err = 0;

	eventfd_read(t->event_fd, &ignored);
	pthread_mutex_lock(&t->lock);
	/* Every process: the file now ready may be mapped by several.  One
	 * that cannot be loaded (it exited; the map is full) keeps stepping
	 * by frame pointer, and the session goes on. */
	for (size_t i = 0; i < t->nr_processes && err != -ENOMEM; i++)
		err = load_process(t, &t->processes[i]);
	if (err != -ENOMEM)
		err = 0;
	waiting = wanted(t, false);
	pthread_mutex_unlock(&t->lock);
	if (!err && !t->reported && !waiting) {
		t->reported = true;
		unwind_tables__report(t);
	}
	return err;
}

size_t unwind_tables__pending(struct unwind_tables *t, bool sampled)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = wanted(t, sampled);
	pthread_mutex_unlock(&t->lock);
	return n;
}

int unwind_tables__wait(struct unwind_tables *t, unsigned int timeout_ms)
{
	struct timespec deadline = clock__realtime_after_ms(timeout_ms);
	int err = 0;

	pthread_mutex_lock(&t->lock);
	while (wanted(t, true) && !err)
		err = pthread_cond_timedwait(&t->built, &t->lock, &deadline);
	pthread_mutex_unlock(&t->lock);
	return unwind_tables__poll(t);
}

void unwind_tables__report(struct unwind_tables *t)
{
	const struct table_file *longest = NULL;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->nr_files; i++)
		if (t->files[i]->state == TABLE_READY &&
		    (!longest || t->files[i]->build_ns > longest->build_ns))
			longest = t->files[i];
	status__debug(
	    "unwind tables %s: %zu files, %" PRIu32 " rows in %" PRIu32 " chunks of "
	    "%.1f MiB in all, built in "
	    "%.2f s of CPU; those samples ran through ready %.2f s after the first "
	    "was queued, the last %.2f s after; longest %s (%.2f s)%s%s",
	    wanted(t, false) ? "not all ready" : "ready", t->nr_built, t->used_rows, t->nr_chunks,
	    t->allocated_rows * sizeof(struct unwind_row) / 1048576.0, t->build_ns / 1e9,
	    t->sampled_ready_ns > t->first_queued_ns
		? (t->sampled_ready_ns - t->first_queued_ns) / 1e9
		: 0.0,
	    t->last_ready_ns > t->first_queued_ns ? (t->last_ready_ns - t->first_queued_ns) / 1e9
						  : 0.0,
	    longest ? longest->path : "none", longest ? longest->build_ns / 1e9 : 0.0,
	    t->nr_failed ? "; some files have none (no CFI, unreadable, or the rows map "
			   "is full)"
			 : "",
	    t->nr_deferred ? "; the files no sample reached wait for one, with the rows map "
			     "a quarter full"
			   : "");
	/* The digest sums each file's hash: the same files loaded give the
	 * same digest, in whatever order, compiled or read. */
	status__debug("unwind rows: %zu files read from the cache%s%s (%.3f s of CPU), %zu "
		      "compiled (%.3f s of CPU), kept in %.3f s; rows digest %016" PRIx64,
		      t->nr_from_cache, t->cache ? " " : " (off)",
		      t->cache ? unwind_cache__dir(t->cache) : "", t->cache_read_ns / 1e9,
		      t->nr_compiled, t->compile_ns / 1e9, t->cache_write_ns / 1e9, t->rows_digest);
	pthread_mutex_unlock(&t->lock);
}
