// SPDX-License-Identifier: GPL-2.0
/* The processes of a session and their names; see process_table.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "base/procfs.h"
#include "sampling/process_table.h"
#include "sampling/python_reader.h"
#include "sampling/symbol_share.h"
#include "sampling/symbolizer.h"
#include "sampling/unwinder.h"
#include "status.h"

#define MAX_ENVIRON (1 << 20)
#define MAX_CMDLINE 4096

void process_table__init(struct process_table *t, const struct process_table_options *options)
{
	memset(t, 0, sizeof(*t));
	t->options = *options;
	if (symbol_share__new(&t->share))
		t->share = NULL; /* each process resolves its own */
	else if (options->symbol_cache)
		symbol_share__use_cache(t->share);
}

void process_table__free(struct process_table *t)
{
	for (size_t i = 0; i < t->nr; i++) {
		unwinder__free(t->processes[i].unwinder);
		python_reader__free(t->processes[i].python);
		symbolizer__free(t->processes[i].symbolizer);
	}
	free(t->processes);
	symbol_share__free(t->share);
	memset(t, 0, sizeof(*t));
}

int64_t process_table__find(const struct process_table *t, pid_t pid)
{
	if (t->last < t->nr && t->processes[t->last].pid == pid)
		return t->last;
	for (size_t i = 0; i < t->nr; i++)
		if (t->processes[i].pid == pid)
			return i;
	return -1;
}

/* The whole of a /proc file (NUL-separated for environ and cmdline), up to
 * max bytes; *len 0 when it cannot be read. */
static char *read_proc_file(pid_t pid, const char *name, size_t max, size_t *len)
{
	char *buf;
	ssize_t n = procfs__read_file(pid, name, max, &buf);

	*len = n > 0 ? n : 0;
	return n < 0 ? NULL : buf;
}

/* The rank an ML launcher gives a process: torchrun, DeepSpeed and
 * accelerate set RANK (and LOCAL_RANK), Slurm SLURM_PROCID. */
static int read_rank(pid_t pid)
{
	static const char *const names[] = {"RANK=", "SLURM_PROCID=", "LOCAL_RANK="};
	int found[3] = {-1, -1, -1};
	size_t len;
	char *env = read_proc_file(pid, "environ", MAX_ENVIRON, &len);

	if (!env)
		return -1;
	for (size_t at = 0; at < len; at += strlen(env + at) + 1) {
		for (int k = 0; k < 3; k++) {
			size_t n = strlen(names[k]);
			char *end;
			long value;

			if (strncmp(env + at, names[k], n))
				continue;
			value = strtol(env + at + n, &end, 10);
			if (end != env + at + n && !*end && value >= 0 && value < 1000000)
				found[k] = value;
		}
	}
	free(env);
	for (int k = 0; k < 3; k++)
		if (found[k] >= 0)
			return found[k];
	return -1;
}

static void read_comm(pid_t pid, char *comm)
{
	size_t len;
	char *text = read_proc_file(pid, "comm", TASK_COMM_LEN, &len);

	if (text && len) {
		text[strcspn(text, "\n")] = '\0';
		snprintf(comm, TASK_COMM_LEN + 1, "%s", text);
	}
	free(text);
}

static bool same_cmdline(pid_t a, pid_t b)
{
	size_t len_a, len_b;
	char *x = read_proc_file(a, "cmdline", MAX_CMDLINE, &len_a);
	char *y = read_proc_file(b, "cmdline", MAX_CMDLINE, &len_b);
	bool same = x && y && len_a && len_a == len_b && !memcmp(x, y, len_a);

	free(x);
	free(y);
	return same;
}

static bool cmdline_has(pid_t pid, const char *needle)
{
	size_t len;
	char *text = read_proc_file(pid, "cmdline", MAX_CMDLINE, &len);
	bool found = false;

	for (size_t i = 0; text && i < len; i++)
		if (!text[i])
			text[i] = ' ';
	found = text && strstr(text, needle);
	free(text);
	return found;
}

static bool is_python(const struct tracked_process *p)
{
	const char *base = strrchr(p->exe, '/');

	return !strncmp(base ? base + 1 : p->exe, "python", 6) || !strncmp(p->comm, "python", 6);
}

/*
 * A PyTorch DataLoader worker is a child of a Python process that is that
 * process forked (the same executable and command line: the default "fork"
 * start method), or one started by multiprocessing's spawn or forkserver;
 * recent PyTorch also names it pt_data_worker.
 */
static bool looks_like_worker(const struct process_table *t, const struct tracked_process *p)
{
	struct tracked_process parent = {.pid = p->parent};
	char path[64];
	ssize_t n;

	(void)t;
	if (!strcmp(p->comm, "pt_data_worker"))
		return true;
	/* The parent as it is now: record's command was llmprof when it was
	 * first seen, before its exec. */
	snprintf(path, sizeof(path), "/proc/%d/exe", p->parent);
	n = readlink(path, parent.exe, sizeof(parent.exe) - 1);
	parent.exe[n > 0 ? n : 0] = '\0';
	read_comm(p->parent, parent.comm);
	if (!is_python(&parent))
		return false;
	if (!strcmp(p->exe, parent.exe) && same_cmdline(p->pid, p->parent))
		return true;
	return cmdline_has(p->pid, "multiprocessing.spawn") ||
	       cmdline_has(p->pid, "multiprocessing.forkserver");
}

static void name_process(struct process_table *t, struct tracked_process *p)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", p->pid);
	n = readlink(path, p->exe, sizeof(p->exe) - 1);
	p->exe[n > 0 ? n : 0] = '\0';
	read_comm(p->pid, p->comm);
	p->env_rank = read_rank(p->pid);
	p->python_child = p->parent && looks_like_worker(t, p);
	p->rank = p->python_child ? -1 : p->env_rank;
	p->worker = -1;
}

/* Python functions of a process group's user (not "<module>": a module
 * body runs at import, in every process that imports torch). */
static bool collective_python_frame(const struct frame *f)
{
	static const char *const files[] = {
	    "torch/distributed/distributed_c10d.py",
	    "torch/nn/parallel/distributed.py",
	    NULL,
	};

	if (f->kind != FRAME_PYTHON || !f->file || !strncmp(f->name, "<module>", 8))
		return false;
	for (size_t i = 0; files[i]; i++)
		if (strstr(f->file, files[i]))
			return true;
	return false;
}

void process_table__mark_stack(struct tracked_process *p, const struct profile *profile,
			       const uint32_t *frames, size_t n)
{
	bool importing = false;

	for (size_t i = 0; i < n; i++) {
		const struct frame *f = &profile->frames[frames[i]];

		/* Under an import, torch's modules define their classes
		 * (DDP's _BufferCommHookLocation, a class body sampled in a
		 * spawn launcher): a process that imports torch.distributed
		 * runs no collective by it. */
		if (f->kind == FRAME_PYTHON && f->file && strstr(f->file, "importlib._bootstrap"))
			importing = true;
		/* A Python frame's name is the function alone. */
		if (f->kind == FRAME_PYTHON && !strncmp(f->name, "_worker_loop", 12) && f->file &&
		    strstr(f->file, "torch/utils/data/_utils/worker.py"))
			p->ran_loader_worker = true;
		else if (!importing && (collective_python_frame(f) ||
					!strncmp(f->name, "c10d::ProcessGroup", 18) ||
					!strncmp(f->name, "c10d::Reducer::", 15)))
			p->ran_collectives = true;
	}
}

static bool is_rank(const struct tracked_process *p)
{
	return p->ran_collectives || (p->env_rank >= 0 && !p->ran_loader_worker);
}

static bool is_worker(const struct tracked_process *p)
{
	return p->ran_loader_worker || (p->python_child && !is_rank(p));
}

void process_table__assign_roles(struct process_table *t)
{
	int next_rank = 0;

	for (size_t i = 0; i < t->nr; i++) {
		struct tracked_process *p = &t->processes[i];

		p->rank = is_rank(p) ? p->env_rank : -1;
		if (p->rank >= next_rank)
			next_rank = p->rank + 1;
	}
	/* Spawned ranks, in the order they were started. */
	for (;;) {
		struct tracked_process *first = NULL;

		for (size_t i = 0; i < t->nr; i++) {
			struct tracked_process *p = &t->processes[i];

			if (is_rank(p) && p->rank < 0 && (!first || p->pid < first->pid))
				first = p;
		}
		if (!first)
			break;
		first->rank = next_rank++;
	}
	for (size_t i = 0; i < t->nr; i++) {
		struct tracked_process *p = &t->processes[i];
		int64_t parent;

		p->worker = -1;
		if (!is_worker(p))
			continue;
		p->worker = 0;
		for (size_t k = 0; k < t->nr; k++)
			p->worker += k != i && t->processes[k].parent == p->parent &&
				     t->processes[k].pid < p->pid && is_worker(&t->processes[k]);
		/* A worker serves its parent's rank (and inherits its RANK). */
		parent = process_table__find(t, p->parent);
		p->rank = parent >= 0 ? t->processes[parent].rank : p->env_rank;
	}
}

void process_table__refresh(struct tracked_process *p)
{
	/* A child first seen before its exec had the shell's environment: a
	 * rank set for the command (RANK=0 cmd) appears only after it. */
	if (p->env_rank < 0)
		p->env_rank = read_rank(p->pid);
}

int64_t process_table__get(struct process_table *t, pid_t pid, pid_t parent, bool selected)
{
	struct tracked_process *p;
	int64_t found = process_table__find(t, pid);
	int err;

	if (found >= 0) {
		t->last = found;
		return found;
	}
	if (array__grow((void **)&t->processes, &t->cap, t->nr + 1, sizeof(*t->processes)))
		return -ENOMEM;
	p = &t->processes[t->nr];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->parent = parent;
	p->selected = selected;
	err = symbolizer__new(pid, &p->symbolizer);
	if (err == -ENOMEM)
		return err;
	if (p->symbolizer)
		symbolizer__share(p->symbolizer, t->share);
	p->readable = !err;
	if (err)
		status__debug("process %d is gone before it could be read: its frames stay "
			      "unresolved",
			      pid);
	name_process(t, p);
	if (p->symbolizer && t->options.unwind) {
		err = unwinder__new(p->symbolizer, pid, t->options.complete_with_fp, &p->unwinder);
		if (err) {
			symbolizer__free(p->symbolizer);
			return err;
		}
	}
	if (t->options.python) {
		err = python_reader__new(pid, t->options.python_config_fd, &p->python);
		if (err) {
			unwinder__free(p->unwinder);
			symbolizer__free(p->symbolizer);
			return err;
		}
	}
	t->last = t->nr;
	return t->nr++;
}

static int read_ppid(pid_t pid, pid_t *ppid)
{
	struct procfs_stat st;
	int err = procfs__stat(pid, 0, &st);

	if (err)
		return err == -EINVAL ? -EIO : err;
	*ppid = st.ppid;
	return 0;
}

int64_t process_table__descendants(pid_t pid, pid_t **pids_out, pid_t **parents_out)
{
	pid_t *all = NULL, *ppids = NULL, *pids = NULL, *parents = NULL;
	size_t nr_all = 0, cap_all = 0, cap_ppids = 0, nr = 0, cap = 0, cap_parents = 0;
	struct dirent *entry;
	DIR *dir = opendir("/proc");
	int64_t err = 0;

	if (!dir)
		return -errno;
	while ((entry = readdir(dir))) {
		char *end;
		long value = strtol(entry->d_name, &end, 10);
		pid_t ppid;

		if (*end || value <= 0 || read_ppid(value, &ppid))
			continue;
		if (array__grow((void **)&all, &cap_all, nr_all + 1, sizeof(*all)) ||
		    array__grow((void **)&ppids, &cap_ppids, nr_all + 1, sizeof(*ppids))) {
			err = -ENOMEM;
			goto out;
		}
		all[nr_all] = value;
		ppids[nr_all++] = ppid;
	}
	/* Breadth first from pid: parents come before their children. */
	for (size_t level = 0;; level++) {
		size_t before = nr;

		for (size_t i = 0; i < nr_all; i++) {
			bool is_child = false;

			if (level == 0)
				is_child = ppids[i] == pid;
			else
				for (size_t k = 0; k < before && !is_child; k++)
					is_child = ppids[i] == pids[k] && all[i] != pid;
			for (size_t k = 0; k < nr && is_child; k++)
				if (pids[k] == all[i])
					is_child = false;
			if (!is_child)
				continue;
			if (array__grow((void **)&pids, &cap, nr + 1, sizeof(*pids)) ||
			    array__grow((void **)&parents, &cap_parents, nr + 1,
					sizeof(*parents))) {
				err = -ENOMEM;
				goto out;
			}
			pids[nr] = all[i];
			parents[nr++] = ppids[i];
		}
		if (nr == before)
			break;
	}
	*pids_out = pids;
	*parents_out = parents;
	pids = parents = NULL;
	err = nr;
out:
	closedir(dir);
	free(all);
	free(ppids);
	free(pids);
	free(parents);
	return err;
}

void process_table__label(const struct process_table *t, size_t index, bool several,
			  bool per_process, char *buf, size_t size)
{
	const struct tracked_process *p = &t->processes[index];
	const char *comm = p->comm[0] ? p->comm : "[process]";
	int n = snprintf(buf, size, "%s", comm);

	if (!several && !per_process)
		return;
	if (p->rank >= 0 && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, " [rank %d]", p->rank);
	if (p->worker >= 0 && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, " [worker %d]", p->worker);
	if (per_process && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - n, " [%d]", p->pid);
}
