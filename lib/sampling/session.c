// SPDX-License-Identifier: GPL-2.0
/* A profiling session: the BPF programs, the perf events, draining the ring
 * buffer into raw samples; session_profile.c turns them into the profile.
 * See session.h. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "base/procfs.h"
#include "offcpu.h"
#include "sampler.h"
#include "targets.h"
#include "sampling/process_table.h"
#include "sampling/python_reader.h"
#include "sampling/bpf_cost.h"
#include "sampling/sampling_clock.h"
#include "status.h"
#include "sampling/session.h"
#include "sampling/session_private.h"
#include "sampling/symbolizer.h"
#include "sampling/unwind_compare.h"
#include "sampling/unwind_table.h"
#include "sampling/unwinder.h"

#include "sampler.skel.h"

#define DRAIN_INTERVAL_MS 100

static int libbpf_print(enum libbpf_print_level level, const char *format, va_list args)
{
	if (level == LIBBPF_DEBUG || status__level() < STATUS_VERBOSE)
		return 0;
	return vfprintf(stderr, format, args);
}

/* Room for an eighth of a second of samples from every CPU: the reader
 * drains ten times a second, and is woken when a quarter of the ring is
 * pending, so it has some 90 ms to come.  The ring's pages count twice in
 * llmprof's RSS (mapped twice, for records that wrap): at 999 Hz on 2
 * CPUs a quarter of a second's 4 MiB made 29.5 MiB, an eighth's 25.5. */
static size_t ring_buffer_size(unsigned int frequency, size_t record_bytes)
{
	int nr_cpus = libbpf_num_possible_cpus();
	size_t want = (size_t)frequency * (nr_cpus > 0 ? nr_cpus : 1) * (record_bytes + 8) / 8;
	size_t size = 1 << 20;

	while (size < want && size < (64u << 20))
		size <<= 1;
	return size;
}

/* The processes named on the command line, and with --children those of
 * their descendants alive now (later ones join in the kernel). */
static int add_selected(struct session *s)
{
	const struct session_options *o = &s->options;
	int err;

	for (size_t i = 0; i <= o->nr_more_pids; i++) {
		pid_t pid = i ? o->more_pids[i - 1] : o->pid;
		pid_t *pids = NULL, *parents = NULL;
		int64_t n = 0;

		err = session__add_target(s, pid, TARGET_FLAG_SELECTED, 0);
		if (!err)
			err = process_table__get(&s->processes, pid, 0, true) < 0 ? -ENOMEM : 0;
		if (!err && o->children)
			n = process_table__descendants(pid, &pids, &parents);
		for (int64_t k = 0; !err && k < n; k++) {
			err = session__add_target(s, pids[k], TARGET_FLAG_CHILD, parents[k]);
			if (!err &&
			    process_table__get(&s->processes, pids[k], parents[k], false) < 0)
				err = -ENOMEM;
		}
		free(pids);
		free(parents);
		if (err)
			return err;
	}
	return 0;
}

/* The background thread finished some files' tables: load them. */
static int on_unwind_tables(void *ctx)
{
	struct session *s = ctx;

	return unwind_tables__poll(s->unwind_tables);
}

int session__open(struct session **out, const struct session_options *options)
{
	struct session *s = calloc(1, sizeof(*s));
	size_t ring_bytes, record_bytes = sizeof(struct sample_event);
	uint64_t load_started;
	bool in_bpf = options->unwind == UNWIND_EHFRAME || options->unwind == UNWIND_COMPARE;
	bool copy = options->unwind == UNWIND_DWARF || options->unwind == UNWIND_COMPARE;
	int err;

	if (!s)
		return -ENOMEM;
	s->options = *options;
	s->epoll_fd = -1;
	governor__init(&s->governor, 0);
	s->pidfd = -1;
	libbpf_set_print(libbpf_print);

	s->skel = sampler_bpf__open();
	if (!s->skel) {
		err = -errno;
		goto fail;
	}
	s->skel->rodata->collect_kernel = options->kernel_stacks;
	s->skel->rodata->follow_children = options->children;
	if (in_bpf) {
		s->skel->rodata->unwind_in_bpf = true;
		record_bytes += sizeof(struct unwind_frames);
	}
	if (copy) {
		s->skel->rodata->stack_copy_bytes =
		    options->stack_copy_bytes ? options->stack_copy_bytes : DEFAULT_STACK_COPY;
		record_bytes += sizeof(struct user_stack_copy) + s->skel->rodata->stack_copy_bytes;
	}
	if (options->launch_stack_rate && !options->no_launch_program) {
		unsigned int graph_rate = options->launch_stack_rate / 5;

		s->skel->rodata->launch_stack_interval_ns =
		    1000000000ull / options->launch_stack_rate;
		s->skel->rodata->graph_stack_interval_ns =
		    1000000000ull / (graph_rate ? graph_rate : 1);
	} else {
		err = bpf_map__set_max_entries(s->skel->maps.launch_buckets, 1);
		if (err)
			goto fail;
	}
	err = sampling_clock__init(&s->clock, options->frequency, !options->fixed_intervals);
	if (err)
		goto fail;
	ring_bytes = ring_buffer_size(options->frequency, record_bytes);
	/* Waits come in bursts no sampling rate bounds: room for a thousand. */
	if (options->mode != SESSION_MODE_CPU || options->bursts)
		while (ring_bytes < 1000 * (record_bytes + 4096) && ring_bytes < (64u << 20))
			ring_bytes <<= 1;
	s->skel->rodata->wakeup_bytes = ring_bytes / 4;
	err = bpf_map__set_max_entries(s->skel->maps.samples, ring_bytes);
	if (err)
		goto fail;
	if (options->no_launch_program)
		bpf_program__set_autoload(s->skel->progs.on_gpu_launch, false);
	load_started = bpf_cost__now();
	err = sampler_bpf__load(s->skel);
	if (err)
		goto fail;
	bpf_cost__loaded("sampler", s->skel->obj, load_started);
	status__debug("sample records of %zu bytes in a ring of %zu", record_bytes, ring_bytes);
	if (in_bpf) {
		err =
		    unwind_tables__new(bpf_map__fd(s->skel->maps.unwind_rows), UNWIND_DEFAULT_ROWS,
				       bpf_map__fd(s->skel->maps.unwind_processes),
				       !options->no_unwind_cache, &s->unwind_tables);
		if (!err)
			err = session__add_poll_fd(s, unwind_tables__event_fd(s->unwind_tables),
						   on_unwind_tables, s);
		if (err)
			goto fail;
	}
	process_table__init(&s->processes,
			    &(struct process_table_options){
				.unwind = copy,
				.complete_with_fp = options->unwind == UNWIND_DWARF,
				.python = options->python,
				.python_config_fd = bpf_map__fd(s->skel->maps.python_config),
				.symbol_cache = !options->no_unwind_cache,
			    });
	err = add_selected(s);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	session__close(s);
	return err;
}

static int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

void session__refresh_process(struct session *s, struct tracked_process *proc, uint64_t now)
{
	/* Its maps read once for all that follows. */
	bool held = !procfs__hold_maps(proc->pid);

	proc->last_refresh_ns = now;
	proc->unknown_since_refresh = false;
	process_table__refresh(proc);
	if (proc->symbolizer && symbolizer__refresh(proc->symbolizer) == 0)
		symbolizer__read_perf_map(proc->symbolizer);
	if (proc->python)
		python_reader__discover(proc->python);
	/* New files' tables are built in the background; until they are
	 * ready, BPF steps through their code by frame pointer. */
	if (s->unwind_tables)
		unwind_tables__update_process(s->unwind_tables, proc->pid);
	if (held)
		procfs__release_maps();
}

int session__start(struct session *s)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_SOFTWARE,
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .size = sizeof(attr),
	    /* cpu-clock counts nanoseconds: a fixed period is an exact
	     * rate, with no frequency ramp at the start. */
	    .sample_period = 1000000000ULL / s->options.frequency,
	};
	struct epoll_event event = {.events = EPOLLIN};
	int err, opened = 0;

	s->nr_cpus = libbpf_num_possible_cpus();
	if (s->nr_cpus <= 0)
		return s->nr_cpus ? s->nr_cpus : -ENODEV;
	s->perf_fds = calloc(s->nr_cpus, sizeof(*s->perf_fds));
	s->links = calloc(s->nr_cpus, sizeof(*s->links));
	if (!s->perf_fds || !s->links)
		return -ENOMEM;
	for (int cpu = 0; cpu < s->nr_cpus; cpu++)
		s->perf_fds[cpu] = -1;

	s->pidfd = syscall(SYS_pidfd_open, s->options.pid, 0);
	if (s->pidfd < 0)
		return -errno;
	/* Know the targets' code before the first sample arrives. */
	for (size_t i = 0; i < s->processes.nr; i++)
		session__refresh_process(s, &s->processes.processes[i], clock__monotonic_ns());
	/* The tables every stack needs (the program's and libc's) are built
	 * in milliseconds: the first samples wait for them, a second at most;
	 * the rest build meanwhile. */
	if (s->unwind_tables) {
		err = unwind_tables__wait(s->unwind_tables, 1000);
		if (err)
			return err;
	}
	if (s->options.children) {
		struct bpf_program *programs[] = {s->skel->progs.on_fork, s->skel->progs.on_exec,
						  s->skel->progs.on_exit};

		for (int i = 0; i < 3; i++) {
			s->process_links[i] = bpf_program__attach(programs[i]);
			if (!s->process_links[i])
				return -errno;
		}
	}

	s->ring =
	    ring_buffer__new(bpf_map__fd(s->skel->maps.samples), session__add_record, s, NULL);
	if (!s->ring)
		return -errno;
	s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epoll_fd < 0)
		return -errno;
	event.data.fd = ring_buffer__epoll_fd(s->ring);
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, event.data.fd, &event))
		return -errno;
	event.data.fd = s->pidfd;
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->pidfd, &event))
		return -errno;
	for (int i = 0; i < s->nr_sources; i++) {
		event.data.fd = s->sources[i].fd;
		if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->sources[i].fd, &event))
			return -errno;
	}

	s->start_ns = clock__monotonic_ns();
	/* Off-CPU time only: the off-CPU family's probe is the clock. */
	if (s->options.mode == SESSION_MODE_OFF_CPU) {
		s->attached = true;
		return 0;
	}
	for (int cpu = 0; cpu < s->nr_cpus; cpu++) {
		attr.sample_period = sampling_clock__period(&s->clock);
		s->perf_fds[cpu] = perf_event_open(&attr, -1, cpu);
		if (s->perf_fds[cpu] < 0) {
			if (errno == ENODEV) /* offline CPU */
				continue;
			err = -errno;
			status__debug("perf_event_open on CPU %d: %s", cpu, strerror(errno));
			return err;
		}
		s->links[cpu] =
		    bpf_program__attach_perf_event(s->skel->progs.sample_cpu, s->perf_fds[cpu]);
		if (!s->links[cpu]) {
			err = -errno;
			s->links[cpu] = NULL;
			return err;
		}
		opened++;
	}
	if (!opened)
		return -ENODEV;
	err = sampling_clock__start(&s->clock, s->perf_fds, s->nr_cpus);
	if (err)
		return err;
	err = governor__init(&s->governor, s->options.max_overhead);
	if (err)
		return err;
	s->attached = true;
	if (s->unwind_tables && s->options.warm_up && s->options.mode == SESSION_MODE_CPU) {
		s->warming_up = true;
		s->warm_up_began_ns = s->start_ns;
	}
	return 0;
}

#define WARM_UP_MIN_NS 100000000ULL /* a drain's worth of samples */
#define WARM_UP_MAX_NS 1000000000ULL

/* Ends the warm-up once the files its samples ran through have rules, or
 * after a second: the profile starts now. */
static int end_warm_up(struct session *s, unsigned long long now)
{
	if (now < s->warm_up_began_ns + WARM_UP_MIN_NS)
		return 0;
	if (now < s->warm_up_began_ns + WARM_UP_MAX_NS &&
	    unwind_tables__pending(s->unwind_tables, true))
		return 0;
	/* Its samples have named the files; a target that exits while
	 * warming up keeps them, the rest of the time they are dropped. */
	s->warming_up = false;
	s->start_ns = now;
	s->warm_up_dropped += s->nr_samples;
	s->nr_samples = 0;
	memset(&s->bpf_unwind, 0, sizeof(s->bpf_unwind));
	memset(&s->unwind_compare, 0, sizeof(s->unwind_compare));
	status__debug("warm-up: %llu samples in %.2f s named the files to build unwind rules "
		      "for first; the profile starts with those ready",
		      s->warm_up_dropped, (now - s->warm_up_began_ns) / 1e9);
	return unwind_tables__poll(s->unwind_tables);
}

int session__add_poll_fd(struct session *s, int fd, int (*handler)(void *ctx), void *ctx)
{
	if (s->nr_sources == MAX_POLL_FDS)
		return -E2BIG;
	s->sources[s->nr_sources++] = (struct poll_source){fd, handler, ctx};
	if (s->epoll_fd >= 0) {
		struct epoll_event event = {.events = EPOLLIN, .data.fd = fd};

		if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &event))
			return -errno;
	}
	return 0;
}

unsigned long long session__start_time(const struct session *s)
{
	return s->start_ns;
}

static int drain(struct session *s)
{
	int n = ring_buffer__consume(s->ring);

	if (s->drain_error)
		return s->drain_error;
	return n < 0 ? n : 0;
}

/* Whether a process is alive and not a zombie. */
static bool process_alive(pid_t pid)
{
	struct procfs_stat st;

	return !procfs__stat(pid, 0, &st) && st.state != 'Z' && st.state != 'X';
}

static bool others_alive(const struct session *s)
{
	for (size_t i = 0; i < s->options.nr_more_pids; i++)
		if (process_alive(s->options.more_pids[i]))
			return true;
	return false;
}

int session__run(struct session *s, volatile sig_atomic_t *stop, enum session_end *end)
{
	int err;

	for (;;) {
		struct epoll_event events[MAX_POLL_FDS + 2];
		unsigned long long now = clock__monotonic_ns(), deadline = 0;
		int timeout = DRAIN_INTERVAL_MS, n;

		/* From the start of the profile, after any warm-up. */
		if (s->options.duration > 0)
			deadline = s->start_ns + (unsigned long long)(s->options.duration * 1e9) +
				   (s->warming_up ? WARM_UP_MAX_NS : 0);

		if (*stop) {
			*end = SESSION_END_STOPPED;
			return 0;
		}
		if (deadline) {
			if (now >= deadline) {
				*end = SESSION_END_DURATION;
				return 0;
			}
			if ((deadline - now) / 1000000 < (unsigned long long)timeout)
				timeout = (deadline - now) / 1000000 + 1;
		}
		n = epoll_wait(s->epoll_fd, events, MAX_POLL_FDS + 2, timeout);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			int fd = events[i].data.fd;

			if (fd == s->pidfd) {
				/* With -p A,B,... the session lasts while any
				 * of them does. */
				if (others_alive(s)) {
					epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->pidfd, NULL);
					s->main_exited = true;
					continue;
				}
				err = drain(s);
				*end = SESSION_END_TARGET_EXITED;
				return err;
			}
			for (int k = 0; k < s->nr_sources; k++) {
				if (s->sources[k].fd != fd)
					continue;
				err = s->sources[k].handler(s->sources[k].ctx);
				if (err)
					return err;
			}
		}
		/* The BPF side wakes us only when its buffer fills; drain on
		 * every tick either way. */
		err = drain(s);
		if (!err && s->warming_up)
			err = end_warm_up(s, clock__monotonic_ns());
		if (err)
			return err;
		session__load_gate_expire(s, false);
		err = session__govern(s, clock__monotonic_ns());
		if (err)
			return err;
		if (s->options.tick)
			s->options.tick(s->options.tick_ctx, s);
		if (s->main_exited && !others_alive(s)) {
			*end = SESSION_END_TARGET_EXITED;
			return 0;
		}
	}
}

static void detach(struct session *s)
{
	session__load_gate_expire(s, true);
	for (int i = 0; i < 3; i++) {
		bpf_link__destroy(s->process_links[i]);
		s->process_links[i] = NULL;
	}
	for (int cpu = 0; s->links && cpu < s->nr_cpus; cpu++) {
		bpf_link__destroy(s->links[cpu]);
		s->links[cpu] = NULL;
	}
	for (int i = 0; i < s->nr_launch_links; i++)
		bpf_link__destroy(s->launch_links[i]);
	s->nr_launch_links = 0;
	/* Sampling ended with the links: the clock's thread, which a loaded
	 * machine may take a while to run, must not lengthen the profile. */
	if (s->attached)
		s->end_ns = clock__monotonic_ns();
	sampling_clock__stop(&s->clock);
	if (s->clock.first_error)
		status__debug("cannot change the sampling period: %s",
			      strerror(-s->clock.first_error));
	s->clock.first_error = 0;
	for (int cpu = 0; s->perf_fds && cpu < s->nr_cpus; cpu++) {
		if (s->perf_fds[cpu] >= 0)
			close(s->perf_fds[cpu]);
		s->perf_fds[cpu] = -1;
	}
	s->attached = false;
}

static void read_counters(const struct session *s, uint64_t totals[COUNTER_MAX])
{
	int nr_cpus = libbpf_num_possible_cpus();
	uint64_t *values = calloc(nr_cpus > 0 ? nr_cpus : 1, sizeof(*values));

	memset(totals, 0, COUNTER_MAX * sizeof(*totals));
	if (!values)
		return;
	for (uint32_t key = 0; key < COUNTER_MAX; key++) {
		if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.counters), &key, values))
			continue;
		for (int cpu = 0; cpu < nr_cpus; cpu++)
			totals[key] += values[cpu];
	}
	free(values);
}

uint64_t session__counter(const struct session *s, uint32_t counter)
{
	uint64_t totals[COUNTER_MAX];

	if (counter >= COUNTER_MAX)
		return 0;
	read_counters(s, totals);
	return totals[counter];
}

/* With kernel.bpf_stats_enabled=1, what the sample program cost: per run
 * (a tick on any CPU, of any task) and per sample. */
static void report_bpf_cost(const struct session *s, uint64_t samples)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.sample_cpu), &info, &len) ||
	    !info.run_cnt)
		return;
	status__debug("BPF sample program: %llu runs, %.0f ns each, %.0f ns per sample "
		      "(kernel.bpf_stats_enabled)",
		      (unsigned long long)info.run_cnt, (double)info.run_time_ns / info.run_cnt,
		      samples ? (double)info.run_time_ns / samples : 0.0);
}

void session__progress(const struct session *s, struct session_progress *out)
{
	uint64_t counters[COUNTER_MAX];

	read_counters(s, counters);
	out->elapsed_ns = clock__monotonic_ns() - s->start_ns;
	out->samples = counters[COUNTER_SAMPLES];
	out->lost = counters[COUNTER_LOST_RINGBUF] + counters[COUNTER_LOST_OFFCPU];
	out->off_cpu = counters[COUNTER_OFFCPU];
}
int session__stop(struct session *s)
{
	if (s->stopped)
		return 0;
	detach(s);
	s->stopped = true;
	return drain(s);
}

unsigned long long session__end_time(const struct session *s)
{
	return s->end_ns;
}

int session__finish(struct session *s, struct profile **out)
{
	uint64_t counters[COUNTER_MAX];
	int err;

	err = session__stop(s);
	if (err)
		return err;
	read_counters(s, counters);
	report_bpf_cost(s, counters[COUNTER_SAMPLES]);
	session__report_governor(s);
	session__scale_thinned_waits(s, counters);
	if (s->clock.random && s->end_ns > s->start_ns)
		status__debug("sampling clock: %llu periods drawn in %llu wake-ups, %.2f per CPU "
			      "per second; the latest draw %.1f ms after its hold's end, %llu "
			      "more than a hold late",
			      (unsigned long long)s->clock.draws,
			      (unsigned long long)s->clock.wake_ups,
			      s->clock.draws * 1e9 / (s->end_ns - s->start_ns) /
				  (s->nr_cpus > 0 ? s->nr_cpus : 1),
			      s->clock.late_max_ns / 1e6, (unsigned long long)s->clock.late_holds);
	for (size_t i = 0; i < s->processes.nr; i++)
		if (s->processes.processes[i].unwinder && s->processes.processes[i].selected)
			unwinder__report(s->processes.processes[i].unwinder);
	if (s->unwind_tables) {
		double n = s->bpf_unwind.samples ? s->bpf_unwind.samples : 1;

		unwind_tables__report(s->unwind_tables);
		if (s->unwind_compare.samples)
			unwind_compare__report(&s->unwind_compare);
		status__debug(
		    "unwind: %llu samples unwound in BPF, %.1f frames each (%.1f%% of "
		    "the steps by unwind rows, the rest by frame pointer); %.1f%% reached "
		    "the outermost frame, %.1f%% cut at %d frames; %llu walks dropped, disturbed "
		    "by "
		    "another (%llu captures found all %d of their CPU's scratch slots taken)",
		    (unsigned long long)s->bpf_unwind.samples, s->bpf_unwind.frames / n,
		    s->bpf_unwind.frames > s->bpf_unwind.samples
			? 100.0 * s->bpf_unwind.by_rules /
			      (s->bpf_unwind.frames - s->bpf_unwind.samples)
			: 0.0,
		    100.0 * s->bpf_unwind.whole / n, 100.0 * s->bpf_unwind.cut / n,
		    UNWIND_MAX_FRAMES, (unsigned long long)s->bpf_unwind.disturbed,
		    (unsigned long long)counters[COUNTER_CAPTURE_NESTED], CAPTURE_NEST);
	}
	return session_profile__build(s, counters, out);
}

void session__close(struct session *s)
{
	if (!s)
		return;
	detach(s);
	ring_buffer__free(s->ring);
	unwind_tables__free(s->unwind_tables);
	sampler_bpf__destroy(s->skel);
	governor__free(&s->governor);
	if (s->epoll_fd >= 0)
		close(s->epoll_fd);
	if (s->pidfd >= 0)
		close(s->pidfd);
	process_table__free(&s->processes);
	free(s->process_frames);
	for (size_t i = 0; i < s->nr_raw_stacks; i++)
		free(s->raw_stacks[i].addrs);
	free(s->raw_stacks);
	hash_index__free(&s->raw_index);
	free(s->samples);
	free(s->threads);
	free(s->launches);
	free(s->perf_fds);
	free(s->links);
	free(s);
}

int session__attach_launch_probe(struct session *s, const char *binary_path)
{
	struct bpf_link *link;

	if (s->nr_launch_links == MAX_LAUNCH_LINKS)
		return -E2BIG;
	/* Any process: the program keeps the target set's, children too. */
	link = bpf_program__attach_usdt(s->skel->progs.on_gpu_launch, -1, binary_path, "llmprof",
					"launch", NULL);
	if (link)
		s->launch_links[s->nr_launch_links++] = link;
	if (!link) {
		int err = -errno;

		status__debug("cannot attach to llmprof:launch in %s: %s", binary_path,
			      strerror(-err));
		return err;
	}
	return 0;
}

void session__refresh_modules(struct session *s, pid_t pid)
{
	int64_t at = process_table__find(&s->processes, pid);

	/* Only the process that mapped the library: a job's others, a rank's
	 * workers, read theirs when they map it (each read is a walk of its
	 * maps and of the files new in it). */
	if (at >= 0)
		session__refresh_process(s, &s->processes.processes[at], clock__monotonic_ns());
}

size_t session__processes(const struct session *s, pid_t *pids, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < s->processes.nr && n < max; i++)
		pids[n++] = s->processes.processes[i].pid;
	return n;
}

bool session__single_process(const struct session *s)
{
	return !s->options.children && !s->options.nr_more_pids;
}

int session__add_target(struct session *s, pid_t pid, uint32_t flags, pid_t parent)
{
	struct target_info info = {.flags = flags, .parent = parent};
	uint32_t key = pid;

	if (bpf_map__update_elem(s->skel->maps.targets, &key, sizeof(key), &info, sizeof(info),
				 BPF_ANY))
		return -errno;
	return 0;
}

int session__share_maps(const struct session *s, struct bpf_object *object)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, object)
	{
		const char *name = bpf_map__name(map);
		struct bpf_map *own;
		int err;

		/* Each object keeps its own .rodata/.bss/.data. */
		if (strchr(name, '.'))
			continue;
		own = bpf_object__find_map_by_name(s->skel->obj, name);
		if (!own)
			continue;
		err = bpf_map__reuse_fd(map, bpf_map__fd(own));
		if (err)
			return err;
	}
	return 0;
}

void session__capture_settings(const struct session *s, struct capture_settings *out)
{
	out->collect_kernel = s->skel->rodata->collect_kernel;
	out->wakeup_bytes = s->skel->rodata->wakeup_bytes;
	out->stack_copy_bytes = s->skel->rodata->stack_copy_bytes;
	out->unwind_in_bpf = s->skel->rodata->unwind_in_bpf;
}

int session__set_record_handler(struct session *s, enum sample_kind kind, session_record_fn *fn,
				void *ctx)
{
	if (kind <= SAMPLE_KIND_LAUNCH || kind >= SAMPLE_KIND_MAX)
		return -EINVAL;
	if (s->handlers[kind].fn && fn)
		return -EEXIST;
	s->handlers[kind] = (struct record_handler){fn, ctx};
	return 0;
}
