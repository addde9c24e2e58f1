// SPDX-License-Identifier: GPL-2.0
/*
 * Python thread names from the target's memory (see python_threads.h):
 * sys.modules["threading"]._active, a dict of Thread objects, and each
 * Thread's attributes, wherever the version keeps an instance's attributes
 * (a dict at tp_dictoffset in 3.10; from 3.11 a managed dict, or values
 * split off the class's shared keys, inline in the object in 3.13).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "base/clock.h"
#include "status.h"
#include "sampling/python_threads.h"

/* The same in 3.10 to 3.13 (64-bit, default builds), by their headers. */
#define OBJECT_TYPE 8
#define MODULE_DICT 16 /* PyModuleObject.md_dict */
#define DICT_KEYS 32   /* PyDictObject.ma_keys */
#define DICT_VALUES 40 /* PyDictObject.ma_values */
#define TYPE_NAME 24
#define TYPE_FLAGS 168
#define TYPE_DICTOFFSET 288
#define LONG_SIZE 16 /* ob_size, 3.12+ lv_tag */
#define LONG_DIGITS 24
#define LONG_DIGIT_BITS 30
#define TPFLAGS_INLINE_VALUES (1UL << 2) /* 3.13 */
#define TPFLAGS_MANAGED_DICT (1UL << 4)	 /* 3.11+ */
#define OBJECT_SIZE 16			 /* sizeof(PyObject): 3.13's inline values */
#define MAX_ENTRIES 100000
#define MAX_THREADS 4096

struct walk {
	pid_t pid;
	const struct python_layout *l;
};

static int read_u64(const struct walk *w, uint64_t addr, uint64_t *value)
{
	return python_memory__read(w->pid, addr, value, sizeof(*value));
}

/* A dict's entries as (key, value) pairs: *pairs malloc'd, 2 per entry,
 * keys 0 for deleted ones.  values: the split values array's first slot
 * (keys shared with other dicts), or 0 where the entries hold the values. */
static int read_entries(const struct walk *w, uint64_t keys, uint64_t values, uint64_t **pairs,
			size_t *nr)
{
	uint8_t header[40];
	uint64_t entries, nentries, size = 0, index_bytes, entry_size = 24, key_at = 8;
	uint64_t *raw = NULL, *out = NULL;
	int err;

	err = python_memory__read(w->pid, keys, header, sizeof(header));
	if (err)
		return err;
	if (w->l->minor == 10) {
		/* dk_refcnt, dk_size, dk_lookup, dk_usable, dk_nentries,
		 * dk_indices[] (Objects/dict-common.h) */
		memcpy(&size, header + 8, sizeof(size));
		memcpy(&nentries, header + 32, sizeof(nentries));
		index_bytes = size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffff ? 4 : 8;
		entries = keys + 40 + size * index_bytes;
	} else {
		/* dk_log2_size, dk_log2_index_bytes, dk_kind at 8, 9, 10;
		 * dk_nentries at 24, dk_indices at 32 */
		if (header[9] > 40)
			return -EINVAL;
		memcpy(&nentries, header + 24, sizeof(nentries));
		entries = keys + 32 + (1ULL << header[9]);
		if (header[10] != 0) { /* unicode keys: {key, value} */
			entry_size = 16;
			key_at = 0;
		}
	}
	if (nentries > MAX_ENTRIES)
		return -E2BIG;
	raw = malloc((nentries ? nentries : 1) * entry_size);
	out = malloc((nentries ? nentries : 1) * 2 * sizeof(*out));
	if (!raw || !out) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = python_memory__read(w->pid, entries, raw, nentries * entry_size);
	if (err)
		goto cleanup;
	for (size_t i = 0; i < nentries; i++) {
		const uint8_t *e = (const uint8_t *)raw + i * entry_size;

		memcpy(&out[2 * i], e + key_at, sizeof(*out));
		if (values)
			out[2 * i + 1] = 0; /* read on demand, see entry_value() */
		else
			memcpy(&out[2 * i + 1], e + key_at + 8, sizeof(*out));
	}
	*pairs = out;
	*nr = nentries;
	out = NULL;
cleanup:
	free(raw);
	free(out);
	return err;
}

/* Whether the object at addr has a type of this tp_name. */
static bool type_is(const struct walk *w, uint64_t object, const char *name)
{
	uint64_t type, name_addr;
	char text[16];
	size_t len = strlen(name) + 1;

	if (len > sizeof(text) || read_u64(w, object + OBJECT_TYPE, &type) ||
	    read_u64(w, type + TYPE_NAME, &name_addr) ||
	    python_memory__read(w->pid, name_addr, text, len))
		return false;
	return !memcmp(text, name, len);
}

/* The value of key name (a str) in the dict whose keys are at keys; 0 if
 * there is none.  values: as for read_entries(). */
static uint64_t keys_lookup(const struct walk *w, uint64_t keys, uint64_t values, const char *name)
{
	uint64_t *pairs = NULL, found = 0;
	size_t nr = 0;

	if (read_entries(w, keys, values, &pairs, &nr))
		return 0;
	for (size_t i = 0; i < nr; i++) {
		char *text;
		bool match;

		if (!pairs[2 * i])
			continue;
		text = python_memory__unicode(w->pid, w->l, pairs[2 * i]);
		match = text && !strcmp(text, name);
		free(text);
		if (!match)
			continue;
		if (!values)
			found = pairs[2 * i + 1];
		else if (read_u64(w, values + 8 * i, &found))
			found = 0;
		break;
	}
	free(pairs);
	return found;
}

/* Where a split dict's values start, from ma_values. */
static uint64_t split_values(const struct walk *w, uint64_t values)
{
	/* 3.13's PyDictValues has capacity, size, embedded and valid bytes
	 * before the array. */
	return values && w->l->minor >= 13 ? values + 8 : values;
}

static uint64_t dict_lookup(const struct walk *w, uint64_t dict, const char *name)
{
	uint64_t keys, values;

	if (!dict || read_u64(w, dict + DICT_KEYS, &keys) ||
	    read_u64(w, dict + DICT_VALUES, &values))
		return 0;
	return keys_lookup(w, keys, split_values(w, values), name);
}

/* An instance attribute of a plain Python object; 0 if not found. */
static uint64_t attribute(const struct walk *w, uint64_t object, const char *name)
{
	uint64_t type, flags, dict, values, keys;
	int64_t dict_offset;

	if (read_u64(w, object + OBJECT_TYPE, &type) || read_u64(w, type + TYPE_FLAGS, &flags))
		return 0;
	if (w->l->minor == 10) {
		if (read_u64(w, type + TYPE_DICTOFFSET, (uint64_t *)&dict_offset) ||
		    dict_offset <= 0 || read_u64(w, object + dict_offset, &dict))
			return 0;
		return dict_lookup(w, dict, name);
	}
	if (!(flags & TPFLAGS_MANAGED_DICT) || read_u64(w, object - 24, &dict))
		return 0;
	values = 0;
	if (w->l->minor == 11) {
		if (!dict && read_u64(w, object - 32, &values))
			return 0;
	} else if (w->l->minor == 12) {
		/* PyDictOrValues: a values pointer is stored less one, so
		 * that bit 0 tags it. */
		if (dict & 1) {
			values = dict + 1;
			dict = 0;
		}
	} else if (!dict && flags & TPFLAGS_INLINE_VALUES) {
		uint8_t valid;

		values = object + OBJECT_SIZE;
		if (python_memory__read(w->pid, values + 3, &valid, 1) || !valid)
			return 0;
	}
	if (dict)
		return dict_lookup(w, dict, name);
	if (!values || read_u64(w, type + w->l->heaptype_cached_keys, &keys) || !keys)
		return 0;
	return keys_lookup(w, keys, split_values(w, values), name);
}

/* A small int's value: 0 with *value, or -EINVAL. */
static int read_long(const struct walk *w, uint64_t object, uint64_t *value)
{
	uint64_t size;
	uint32_t digits[2] = {0, 0};
	size_t ndigits;

	if (!type_is(w, object, "int") || read_u64(w, object + LONG_SIZE, &size))
		return -EINVAL;
	if (w->l->minor >= 12) {
		/* lv_tag: digits << 3 | sign (0 positive, 1 zero, 2 negative) */
		if ((size & 3) == 2)
			return -EINVAL;
		ndigits = size >> 3;
	} else {
		if ((int64_t)size < 0)
			return -EINVAL;
		ndigits = size;
	}
	if (ndigits > 2 ||
	    (ndigits && python_memory__read(w->pid, object + LONG_DIGITS, digits, ndigits * 4)))
		return -EINVAL;
	*value = (uint64_t)digits[1] << LONG_DIGIT_BITS | digits[0];
	return 0;
}

int python_threads__read(pid_t pid, const struct python_layout *l, uint64_t runtime,
			 struct python_thread_name **names, size_t *nr, size_t *cap)
{
	struct walk w = {pid, l};
	uint64_t interp, modules, threading, globals, active, keys, values, *pairs = NULL;
	size_t nr_pairs = 0;
	int err;

	if (l->minor < 10 || l->minor > 13 || !l->interpreter_modules ||
	    l->interpreter_modules == PYTHON_NO_OFFSET)
		return -ENOTSUP;
	err = read_u64(&w, runtime + l->bpf.runtime_interpreters_head, &interp);
	if (!err)
		err = read_u64(&w, interp + l->interpreter_modules, &modules);
	if (err)
		return err;
	threading = dict_lookup(&w, modules, "threading");
	if (!threading || read_u64(&w, threading + MODULE_DICT, &globals))
		return -ENOENT;
	active = dict_lookup(&w, globals, "_active");
	if (!active || !type_is(&w, active, "dict") || read_u64(&w, active + DICT_KEYS, &keys) ||
	    read_u64(&w, active + DICT_VALUES, &values) || values)
		return -ENOENT;
	err = read_entries(&w, keys, 0, &pairs, &nr_pairs);
	if (err)
		return err;
	for (size_t i = 0; i < nr_pairs && *nr < MAX_THREADS; i++) {
		uint64_t thread = pairs[2 * i + 1], name, native_id, tid;
		char *text;

		if (!pairs[2 * i] || !thread)
			continue;
		name = attribute(&w, thread, "_name");
		native_id = attribute(&w, thread, "_native_id");
		if (!name || !native_id || !type_is(&w, name, "str") ||
		    read_long(&w, native_id, &tid) || !tid || tid > UINT32_MAX)
			continue;
		text = python_memory__unicode(pid, l, name);
		if (!text)
			continue;
		if (array__grow((void **)names, cap, *nr + 1, sizeof(**names))) {
			free(text);
			err = -ENOMEM;
			break;
		}
		(*names)[(*nr)++] = (struct python_thread_name){(uint32_t)tid, text};
	}
	free(pairs);
	return err;
}

/* Read again at most this often while new threads appear, and up to
 * every THREAD_NAMES_MAX_NS while a thread has no name. */
#define THREAD_NAMES_INTERVAL_NS 100000000ULL
#define THREAD_NAMES_MAX_NS 5000000000ULL

void python_thread_table__free(struct python_thread_table *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free(t->names[i].name);
	free(t->names);
	free(t->seen);
	memset(t, 0, sizeof(*t));
}

void python_thread_table__read(struct python_thread_table *t, pid_t pid,
			       const struct python_layout *layout, uint64_t runtime)
{
	struct python_thread_name *names = NULL;
	uint64_t start;
	long took_us;
	size_t nr = 0, cap = 0;
	int err;

	size_t known = t->nr;

	t->stale = false;
	start = clock__monotonic_ns();
	err = python_threads__read(pid, layout, runtime, &names, &nr, &cap);
	took_us = (clock__monotonic_ns() - start) / 1000;
	if (err == -ESRCH) /* it has exited: the names read before stay */
		return;
	if (err && err != -ENOENT)
		status__debug("Python: cannot read the thread names of PID %d: %s", pid,
			      strerror(-err));
	else
		status__debug("Python: %zu thread names of PID %d read in %ld us", nr, pid,
			      took_us);
	for (size_t i = 0; i < nr; i++) {
		size_t k;

		for (k = 0; k < t->nr && t->names[k].tid != names[i].tid; k++)
			;
		if (k == t->nr &&
		    array__grow((void **)&t->names, &t->cap, k + 1, sizeof(*t->names))) {
			free(names[i].name);
			continue;
		}
		if (k == t->nr)
			t->nr++;
		else
			free(t->names[k].name);
		t->names[k] = names[i];
	}
	free(names);
	/* Nothing new: a thread without a name may not be threading's. */
	if (t->nr == known && t->interval_ns < THREAD_NAMES_MAX_NS)
		t->interval_ns *= 2;
}

static bool has_name(const struct python_thread_table *t, uint32_t tid)
{
	for (size_t i = 0; i < t->nr; i++)
		if (t->names[i].tid == tid)
			return true;
	return false;
}

bool python_thread_table__saw(struct python_thread_table *t, uint32_t tid, uint64_t time_ns)
{
	size_t i;

	for (i = 0; i < t->nr_seen && t->seen[i] != tid; i++)
		;
	if (i == t->nr_seen) {
		if (array__grow((void **)&t->seen, &t->cap_seen, i + 1, sizeof(*t->seen)))
			return false;
		t->seen[t->nr_seen++] = tid;
		t->stale = true;
		t->interval_ns = THREAD_NAMES_INTERVAL_NS;
	} else if (!t->stale && !has_name(t, tid)) {
		t->stale = true;
	}
	/* Threads start in bursts: one read for a burst. */
	if (!t->stale || (t->read_ns && time_ns < t->read_ns + t->interval_ns))
		return false;
	t->read_ns = time_ns ? time_ns : 1;
	return true;
}

/* Names threading makes up for a thread not given one. */
static bool default_thread_name(const char *name)
{
	const char *digits;

	if (!strcmp(name, "MainThread"))
		return true;
	if (!strncmp(name, "Thread-", 7))
		digits = name + 7;
	else if (!strncmp(name, "Dummy-", 6))
		digits = name + 6;
	else
		return false;
	if (*digits < '0' || *digits > '9')
		return false;
	while (*digits >= '0' && *digits <= '9')
		digits++;
	return !*digits || !strncmp(digits, " (", 2);
}

const char *python_thread_table__name(const struct python_thread_table *t, uint32_t tid,
				      const char *comm, const char *process_comm)
{
	for (size_t i = 0; i < t->nr; i++) {
		const char *name = t->names[i].name;

		if (t->names[i].tid != tid)
			continue;
		/* A thread that named itself in the kernel keeps that name
		 * over one Python made up. */
		if (!name[0] || (default_thread_name(name) && comm && process_comm &&
				 strcmp(comm, process_comm)))
			return comm;
		return name;
	}
	return comm;
}
