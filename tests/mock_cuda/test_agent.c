// SPDX-License-Identifier: GPL-2.0
/*
 * End-to-end tests of the CUPTI agent on the mock CUDA stack: mock_app runs
 * with libllmprof_cupti.so injected (or attached by the app itself), and a
 * receiver built on lib/agent_server.c checks what arrives.
 *
 * test_agent SCENARIO MOCK_APP AGENT MOCK_CUPTI
 * scenarios: record, record_offset, driver_correlation, other_subscriber,
 * receiver_killed, attach, probe_rate, api_coverage, bench, cupti_13_0_ga,
 * profiler_window, clock_settle, foreign_clock, hashed_cupti, exit_order,
 * graph_reattach, stop_wait
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu/gpu_protocol.h"
#include "gpu/agent_server.h"
#include "profile/profile.h"

static const char *app, *agent_lib, *cupti_lib;
static char out_path[256], err_path[256];
static int failures;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0;

	if (!f)
		return strdup("");
	if (getdelim(&text, &len, '\0', f) < 0) {
		free(text);
		text = strdup("");
	}
	fclose(f);
	return text;
}

/* Starts mock_app with extra NAME=VALUE settings (NULL-terminated). */
static pid_t spawn(const char *const *args, const char *const *env)
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (!pid) {
		const char *argv[16] = {app};
		int n = 1, out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(out, 1);
		dup2(err, 2);
		for (; env && *env; env++)
			putenv((char *)*env);
		for (; args && *args && n < 15; args++)
			argv[n++] = *args;
		argv[n] = NULL;
		execv(app, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Reads from the session for ms milliseconds, or until pid exits (its
 * status in *status) when pid > 0. */
static bool pump(struct agent_server *gs, int ms, pid_t pid, int *status)
{
	uint64_t deadline = monotonic_ns() + ms * 1000000ull;

	for (;;) {
		struct pollfd pfd = {.fd = agent_server__fd(gs), .events = POLLIN};
		uint64_t now = monotonic_ns();

		if (pid > 0 && waitpid(pid, status, WNOHANG) == pid)
			return true;
		if (now >= deadline)
			return false;
		poll(&pfd, 1, 20);
		if (agent_server__on_readable(gs)) {
			fprintf(stderr, "FAIL: agent_server__on_readable failed\n");
			exit(1);
		}
	}
}

static char *reference_checksum(void)
{
	const char *args[] = {"--iterations", "3", NULL};
	int status;
	pid_t pid = spawn(args, NULL);

	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "FAIL: mock_app without agent exits %d\n", status);
		exit(1);
	}
	return slurp(out_path);
}

struct expected_kernel {
	const char *name;
	uint64_t us;
	int seen;
};

static struct expected_kernel expected[] = {
    {"_Z11gemm_kerneljPf", 2000},
    {"softmax_kernel", 1000},
    {"_ZN5flash13attention_fwdILi128EEEvjPf", 500},
    {"_Z16layernorm_kerneljPf", 300},
    {"_Z10mlp_kerneljPf", 400},
    {"_Z12residual_addjPf", 200},
};

/* Kernel names and durations, memcpy and memset records, the time window
 * and the graph launch mapping of one agent. */
static void check_records(struct agent_server *gs, uint32_t agent, uint64_t begin, uint64_t end,
			  uint32_t pid)
{
	size_t kernels = 0, htod = 0, dtoh = 0, memsets = 0, graph_launches = 0, bad_window = 0;
	size_t no_launch = 0, wrong_tid = 0;

	for (size_t k = 0; k < sizeof(expected) / sizeof(expected[0]); k++)
		expected[k].seen = 0;
	for (size_t i = 0; i < agent_server__nr_records(gs); i++) {
		const struct gpu_record *r = agent_server__record(gs, i);
		const struct gpu_launch_record *l;
		uint32_t correlation;

		if (r->agent != agent)
			continue;
		if (r->start_ns < begin || r->end_ns > end)
			bad_window++;
		correlation = r->runtime_correlation ? r->runtime_correlation : r->correlation;
		l = agent_server__launch(gs, agent, correlation);
		if (l && l->parent_correlation)
			l = agent_server__launch(gs, agent, l->parent_correlation);
		if (!l)
			no_launch++;
		else if (l->tid != pid)
			wrong_tid++;
		if (r->kind == GPU_MEMCPY) {
			EXPECT(r->bytes == 1 << 20, "memcpy of %" PRIu64 " bytes", r->bytes);
			htod += r->name == GPU_MEMCPY_HTOD;
			dtoh += r->name == GPU_MEMCPY_DTOH;
			continue;
		}
		if (r->kind == GPU_MEMSET) {
			EXPECT(r->bytes == 1 << 19, "memset of %" PRIu64 " bytes", r->bytes);
			memsets++;
			continue;
		}
		kernels++;
		for (size_t k = 0; k < sizeof(expected) / sizeof(expected[0]); k++) {
			const char *name = agent_server__kernel_name(gs, r);
			uint64_t ns = r->end_ns - r->start_ns;

			if (!name || strcmp(name, expected[k].name))
				continue;
			expected[k].seen++;
			EXPECT(ns >= expected[k].us * 900 && ns <= expected[k].us * 1100,
			       "%s took %" PRIu64 " ns, programmed %" PRIu64 " us", name, ns,
			       expected[k].us);
		}
	}
	for (size_t k = 0; k < sizeof(expected) / sizeof(expected[0]); k++)
		EXPECT(expected[k].seen > 0, "no record of kernel %s", expected[k].name);
	EXPECT(htod > 0 && dtoh > 0, "memcpy HtoD %zu DtoH %zu", htod, dtoh);
	EXPECT(memsets > 0, "no memset");
	EXPECT(!bad_window, "%zu records outside the receiver's window", bad_window);
	EXPECT(!no_launch, "%zu records without a launch record", no_launch);
	EXPECT(!wrong_tid, "%zu launches not on the main thread", wrong_tid);

	/* Each runtime graph launch maps to its three kernels. */
	for (size_t i = 0; i < agent_server__nr_records(gs); i++) {
		const struct gpu_record *r = agent_server__record(gs, i);
		const struct gpu_launch_record *l;
		size_t nodes = 0;

		if (r->agent != agent || r->kind != GPU_KERNEL || !r->graph_id)
			continue;
		l = agent_server__launch(gs, agent, r->correlation);
		EXPECT(l && (l->flags & GPU_LAUNCH_GRAPH) && l->domain == GPU_DOMAIN_RUNTIME &&
			   l->graph_exec_id,
		       "graph kernel %u has no graph launch", r->correlation);
		for (size_t j = 0; j < agent_server__nr_records(gs); j++) {
			const struct gpu_record *o = agent_server__record(gs, j);

			nodes += o->agent == agent && o->kind == GPU_KERNEL &&
				 o->correlation == r->correlation;
		}
		EXPECT(nodes == 3, "graph launch %u has %zu kernels", r->correlation, nodes);
		graph_launches++;
	}
	EXPECT(graph_launches > 0, "no graph kernels");
	fprintf(stderr, "agent %u: %zu kernels, %zu memcpy, %zu memset, %zu graph kernels\n", agent,
		kernels, htod + dtoh, memsets, graph_launches);
}

/* The core's part in a real run: a stack per correlation id that fired the
 * probe, in any of the session's agents (one process: its ids are unique).
 * Here the stack names the launching API. */
struct fake_core {
	struct agent_server *gs;
	struct profile *profile;
	size_t calls, nested_asked;
};

static int fake_launch_stack(void *ctx, uint32_t correlation, uint32_t tid, uint64_t time_ns,
			     uint32_t *frames, size_t max, size_t *depth)
{
	struct fake_core *core = ctx;
	const struct gpu_launch_record *l = NULL;
	char name[64];
	int64_t process, launcher;

	for (size_t i = 0; !l && i < agent_server__nr_agents(core->gs); i++)
		l = agent_server__launch(core->gs, i, correlation);
	core->calls++;
	if (!l)
		return -ENOENT;
	/* Only outermost launches fire the probe, so only they have stacks. */
	if (l->parent_correlation) {
		core->nested_asked++;
		return -ENOENT;
	}
	process = profile__intern_frame(core->profile, "mock_app", NULL, 0, FRAME_PROCESS);
	snprintf(name, sizeof(name), "launch_%u_%u", l->domain, l->callback_id);
	launcher = profile__intern_frame(core->profile, name, NULL, 0, FRAME_NATIVE);
	if (process < 0 || launcher < 0 || max < 2)
		return -ENOMEM;
	frames[0] = process;
	frames[1] = launcher;
	*depth = 2;
	return 0;
}

static void check_merge(struct agent_server *gs, uint64_t begin)
{
	struct profile *p = profile__new();
	struct fake_core core = {.gs = gs, .profile = p};
	struct gpu_merge_options options = {.launch_stack = fake_launch_stack, .ctx = &core};
	struct agent_server_stats stats;

	p->unit = UNIT_MICROSECONDS;
	p->start_ns = begin;
	EXPECT(!agent_server__merge(gs, p, &options), "merge failed");
	agent_server__stats(gs, &stats);
	EXPECT(stats.merged == agent_server__nr_records(gs), "merged %zu of %zu", stats.merged,
	       agent_server__nr_records(gs));
	EXPECT(stats.unattributed == 0, "%zu unattributed", stats.unattributed);
	EXPECT(core.nested_asked == 0, "asked for %zu nested correlation ids", core.nested_asked);
	EXPECT(!agent_server__print_summary(gs, p, 5), "summary failed");
	profile__free(p);
}

struct run {
	struct agent_server *gs;
	uint64_t begin, end;
	int status;
	char *out, *err;
	pid_t pid;
};

static void run_recorded(struct run *r, const char *const *args, const char *const *extra_env)
{
	static char socket_env[160], inject_env[512], cupti_env[512];
	const char *env[16] = {socket_env, inject_env, cupti_env, "MOCK_CUPTI_TRACE=1"};
	int n = 4;

	memset(r, 0, sizeof(*r));
	if (agent_server__open(&r->gs, NULL)) {
		fprintf(stderr, "FAIL: agent_server__open\n");
		exit(1);
	}
	snprintf(socket_env, sizeof(socket_env), "%s=%s", GPU_AGENT_SOCKET_ENV,
		 agent_server__socket_name(r->gs));
	snprintf(inject_env, sizeof(inject_env), "CUDA_INJECTION64_PATH=%s", agent_lib);
	snprintf(cupti_env, sizeof(cupti_env), "LLMPROF_CUPTI_LIBRARY=%s", cupti_lib);
	for (; extra_env && *extra_env && n < 15; extra_env++)
		env[n++] = *extra_env;
	r->begin = monotonic_ns();
	r->pid = spawn(args, env);
	if (!pump(r->gs, 30000, r->pid, &r->status)) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, &r->status, 0);
		EXPECT(0, "mock_app did not finish");
	}
	EXPECT(!agent_server__stop(r->gs, 3000), "agent did not finish");
	r->end = monotonic_ns();
	r->out = slurp(out_path);
	r->err = slurp(err_path);
}

static void run_free(struct run *r)
{
	agent_server__close(r->gs);
	free(r->out);
	free(r->err);
}

static void check_app(const struct run *r, const char *reference)
{
	EXPECT(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0, "mock_app status %d",
	       r->status);
	EXPECT(!strcmp(r->out, reference), "output \"%s\", without agent \"%s\"", r->out,
	       reference);
}

/* Outermost launches and those that fired the probe, over correlation ids
 * 1..max (the mock hands them out in order). */
static void count_probed(struct agent_server *gs, uint32_t max, size_t *outer, size_t *probed)
{
	*outer = *probed = 0;
	for (uint32_t c = 1; c <= max; c++) {
		const struct gpu_launch_record *l = agent_server__launch(gs, 0, c);

		if (!l || l->parent_correlation)
			continue;
		(*outer)++;
		*probed += !!(l->flags & GPU_LAUNCH_PROBED);
	}
}

static uint32_t max_correlation(struct agent_server *gs)
{
	uint32_t max = 0;

	for (size_t i = 0; i < agent_server__nr_records(gs); i++) {
		const struct gpu_record *r = agent_server__record(gs, i);

		if (r->correlation > max)
			max = r->correlation;
	}
	return max + 16;
}

static int scenario_record(const char *clock_env, uint32_t clock_mode)
{
	const char *args[] = {"--seconds", "1.5", NULL};
	const char *env[] = {clock_env, NULL};
	char *reference = reference_checksum();
	const struct gpu_agent_info *a;
	struct run r;

	run_recorded(&r, args, env);
	check_app(&r, reference);
	EXPECT(agent_server__nr_agents(r.gs) == 1, "%zu agents", agent_server__nr_agents(r.gs));
	a = agent_server__agent(r.gs, 0);
	EXPECT(a && a->hello && a->goodbye, "no hello or goodbye");
	EXPECT(a && a->pid == (uint32_t)r.pid, "agent pid %u, app %d", a ? a->pid : 0, r.pid);
	EXPECT(a && a->mode == GPU_AGENT_RECORD, "mode %u", a ? a->mode : 0);
	EXPECT(a && a->clock_mode == clock_mode, "clock mode %u", a ? a->clock_mode : 0);
	EXPECT(a && a->cupti_path && strstr(a->cupti_path, "libcupti.so"), "cupti path %s",
	       a && a->cupti_path ? a->cupti_path : "(none)");
	EXPECT(a && !a->dropped_activity && !a->dropped_launches && !a->dropped_messages,
	       "dropped %" PRIu64 "/%" PRIu64 "/%" PRIu64, a->dropped_activity, a->dropped_launches,
	       a->dropped_messages);
	EXPECT(a && a->sent_kernels + a->sent_memcpys + a->sent_memsets ==
			agent_server__nr_records(r.gs),
	       "goodbye counts %" PRIu64 ", received %zu",
	       a->sent_kernels + a->sent_memcpys + a->sent_memsets, agent_server__nr_records(r.gs));
	if (clock_mode == GPU_CLOCK_OFFSET)
		EXPECT(
		    a && (a->clock_offset_ns > 1000000000ll || a->clock_offset_ns < -1000000000ll),
		    "offset %" PRId64 " looks like no offset", a->clock_offset_ns);
	check_records(r.gs, 0, r.begin, r.end, r.pid);
	check_merge(r.gs, r.begin);
	{
		size_t outer, probed;

		/* About 2000 launches a second: under the default rate, all
		 * probed. */
		struct agent_server_stats stats;

		count_probed(r.gs, max_correlation(r.gs), &outer, &probed);
		EXPECT(outer > 100 && probed == outer, "%zu of %zu launches probed", probed, outer);
		/* One launch record and one probe per launch, though the
		 * runtime call and the driver call inside it share an id. */
		agent_server__stats(r.gs, &stats);
		EXPECT(stats.outer_launches == outer && stats.probed == probed,
		       "%zu launch records and %zu probes for %zu launches", stats.outer_launches,
		       stats.probed, outer);
	}
	run_free(&r);
	free(reference);
	return failures ? 1 : 0;
}

/* 20000 back-to-back launches at a limit of 1000 probes a second: at most
 * the rate plus a burst fire, the rest still carry launch records. */
static int scenario_probe_rate(void)
{
	const char *args[] = {"--bench", "20000", NULL};
	const char *env[] = {"LLMPROF_AGENT_PROBE_RATE=1000", NULL};
	size_t outer, probed;
	double seconds;
	struct run r;

	run_recorded(&r, args, env);
	EXPECT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "mock_app status %d", r.status);
	count_probed(r.gs, 100000, &outer, &probed);
	seconds = (r.end - r.begin) / 1e9;
	EXPECT(outer >= 20000, "%zu launch records", outer);
	EXPECT(probed >= 64 && probed <= 64 + 1000 * seconds + 10,
	       "%zu of %zu launches probed in %.2f s", probed, outer, seconds);
	fprintf(stderr, "probe rate 1000/s: %zu of %zu launches probed in %.2f s\n", probed, outer,
		seconds);
	run_free(&r);
	return failures ? 1 : 0;
}

static int scenario_driver_correlation(void)
{
	const char *args[] = {"--seconds", "1", NULL};
	const char *env[] = {"MOCK_CUPTI_KERNEL_CORRELATION=driver",
			     "MOCK_CUPTI_NESTED_CORRELATION=distinct", NULL};
	size_t nested = 0;
	struct run r;

	run_recorded(&r, args, env);
	check_app(&r, r.out);
	for (size_t i = 0; i < agent_server__nr_records(r.gs); i++) {
		const struct gpu_record *rec = agent_server__record(r.gs, i);
		const struct gpu_launch_record *l = agent_server__launch(r.gs, 0, rec->correlation);

		nested += rec->kind == GPU_KERNEL && l && l->parent_correlation &&
			  l->domain == GPU_DOMAIN_DRIVER;
	}
	EXPECT(nested > 0, "no kernel carries a nested driver correlation id");
	check_records(r.gs, 0, r.begin, r.end, r.pid);
	check_merge(r.gs, r.begin);
	run_free(&r);
	return failures ? 1 : 0;
}

static int scenario_other_subscriber(void)
{
	const char *args[] = {"--seconds", "1", "--subscribe-first", NULL};
	char *reference = reference_checksum();
	const struct gpu_agent_info *a;
	struct run r;

	run_recorded(&r, args, NULL);
	check_app(&r, reference);
	a = agent_server__agent(r.gs, 0);
	EXPECT(a && a->hello && a->other_subscriber, "no other-subscriber message");
	EXPECT(a && a->other_tool && strstr(a->other_tool, "CUPTI"), "other tool %s",
	       a && a->other_tool ? a->other_tool : "(none)");
	EXPECT(agent_server__nr_records(r.gs) == 0, "%zu records", agent_server__nr_records(r.gs));
	EXPECT(strstr(r.err, "own callbacks "), "the app's own subscription saw nothing");
	EXPECT(!strstr(r.err, "mock_cupti: finalize"), "the agent finalized another tool's CUPTI");
	run_free(&r);
	free(reference);
	return failures ? 1 : 0;
}

/* The receiver is a separate process, killed mid-run. */
static int scenario_receiver_killed(void)
{
	const char *args[] = {"--seconds", "2.5", NULL};
	static char socket_env[160], inject_env[512], cupti_env[512];
	const char *env[] = {socket_env, inject_env, cupti_env, "MOCK_CUPTI_TRACE=1", NULL};
	char *reference = reference_checksum(), name[128] = "", *out, *err;
	int pipefd[2], status;
	pid_t receiver, pid;

	if (pipe(pipefd))
		return 1;
	receiver = fork();
	if (!receiver) {
		struct agent_server *gs;

		close(pipefd[0]);
		if (agent_server__open(&gs, NULL))
			_exit(1);
		if (write(pipefd[1], agent_server__socket_name(gs),
			  strlen(agent_server__socket_name(gs)) + 1) < 0)
			_exit(1);
		close(pipefd[1]);
		pump(gs, 60000, 0, NULL);
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], name, sizeof(name) - 1) <= 0)
		return 1;
	close(pipefd[0]);
	snprintf(socket_env, sizeof(socket_env), "%s=%s", GPU_AGENT_SOCKET_ENV, name);
	snprintf(inject_env, sizeof(inject_env), "CUDA_INJECTION64_PATH=%s", agent_lib);
	snprintf(cupti_env, sizeof(cupti_env), "LLMPROF_CUPTI_LIBRARY=%s", cupti_lib);
	pid = spawn(args, env);
	usleep(800 * 1000);
	kill(receiver, SIGKILL);
	waitpid(receiver, NULL, 0);
	waitpid(pid, &status, 0);
	out = slurp(out_path);
	err = slurp(err_path);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "mock_app status %d", status);
	EXPECT(!strcmp(out, reference), "output \"%s\", without agent \"%s\"", out, reference);
	EXPECT(strstr(err, "mock_cupti: subscribe llmprof"), "the agent never subscribed");
	EXPECT(strstr(err, "mock_cupti: finalize in_callback=1"),
	       "CUPTI not finalized from a callback after the receiver died:\n%s", err);
	free(out);
	free(err);
	free(reference);
	return failures ? 1 : 0;
}

/* mock_app with ARGS, which attach the agent to a new session *gs, and
 * EXTRA in its environment; -1 when the session cannot open. */
static pid_t spawn_attaching(struct agent_server **gs, const char *const *args, const char *extra)
{
	static char socket_env[160], cupti_env[512];
	const char *env[] = {socket_env, cupti_env, extra, NULL};

	if (agent_server__open(gs, NULL))
		return -1;
	snprintf(socket_env, sizeof(socket_env), "MOCK_ATTACH_SOCKET=%s",
		 agent_server__socket_name(*gs));
	snprintf(cupti_env, sizeof(cupti_env), "LLMPROF_CUPTI_LIBRARY=%s", cupti_lib);
	return spawn(args, env);
}

/* The app loads and starts the agent itself, twice, as two attaches. */
static int scenario_attach(void)
{
	const char *args[] = {"--seconds", "5", "--attach-agent", agent_lib, "--attach-count",
			      "2",	   NULL};
	char *reference = reference_checksum(), *err;
	struct agent_server *gs;
	uint64_t begin[2], end[2];
	int status = 0;
	bool exited = false;
	pid_t pid;

	pid = spawn_attaching(&gs, args, "MOCK_CUPTI_TRACE=1");
	if (pid < 0)
		return 1;
	for (int session = 0; session < 2 && !exited; session++) {
		begin[session] = monotonic_ns();
		/* Wait for this session's agent, then record a second. */
		while (agent_server__nr_agents(gs) <= (size_t)session && !exited)
			exited = pump(gs, 50, pid, &status);
		if (exited)
			break;
		exited = pump(gs, 1000, pid, &status);
		EXPECT(!agent_server__stop(gs, 3000), "session %d: agent did not finish", session);
		end[session] = monotonic_ns();
	}
	if (!exited)
		waitpid(pid, &status, 0);
	err = slurp(err_path);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "mock_app status %d", status);
	{
		char *out = slurp(out_path);

		EXPECT(!strcmp(out, reference), "output \"%s\", without agent \"%s\"", out,
		       reference);
		free(out);
	}
	EXPECT(agent_server__nr_agents(gs) == 2, "%zu agent sessions", agent_server__nr_agents(gs));
	for (size_t i = 0; i < agent_server__nr_agents(gs) && i < 2; i++) {
		const struct gpu_agent_info *a = agent_server__agent(gs, i);
		size_t kernels = 0;

		EXPECT(a->hello && a->goodbye, "session %zu: hello %d goodbye %d", i, a->hello,
		       a->goodbye);
		EXPECT(a->mode == GPU_AGENT_ATTACH, "session %zu: mode %u", i, a->mode);
		EXPECT(a->clock_mode == GPU_CLOCK_OFFSET, "session %zu: clock %u", i,
		       a->clock_mode);
		/* The app keeps the device busy: at each stop kernels are in
		 * flight, and the agent waits for them. */
		EXPECT(!a->incomplete, "session %zu: %" PRIu64 " records cut off at stop", i,
		       a->incomplete);
		for (size_t k = 0; k < agent_server__nr_records(gs); k++) {
			const struct gpu_record *r = agent_server__record(gs, k);
			uint64_t ns = r->end_ns - r->start_ns;

			if (r->agent != i || r->kind != GPU_KERNEL)
				continue;
			kernels++;
			EXPECT(r->start_ns >= begin[i] && r->end_ns <= end[i],
			       "session %zu: record outside the window", i);
			if (!strcmp(agent_server__kernel_name(gs, r), "_Z11gemm_kerneljPf"))
				EXPECT(ns >= 1800000 && ns <= 2200000, "gemm took %" PRIu64 " ns",
				       ns);
		}
		EXPECT(kernels > 0, "session %zu: no kernels", i);
	}
	EXPECT(strstr(err, "agent starts 2"), "the app did not restart the agent:\n%s", err);
	{
		const char *first = strstr(err, "mock_cupti: finalize in_callback=1");

		EXPECT(first && strstr(first + 1, "mock_cupti: finalize in_callback=1"),
		       "CUPTI not finalized twice from a callback:\n%s", err);
	}
	agent_server__close(gs);
	free(err);
	free(reference);
	return failures ? 1 : 0;
}

/*
 * mock_app with ARGS (which attach the agent once) and EXTRA_ENV: waits for
 * the agent, records for ms, stops it, then waits at most 15 s for mock_app
 * to end (a hung job is killed and fails).  Fills r as run_recorded does;
 * r->exited_early says mock_app ended before the stop.
 */
struct attached_run {
	struct run run;
	bool exited_early;
	uint64_t stop_ns; /* how long agent_server__stop took */
};

static void run_attached(struct attached_run *ar, const char *const *args,
			 const char *const *extra_env, int ms)
{
	static char socket_env[160], cupti_env[512];
	const char *env[16] = {socket_env, cupti_env};
	struct run *r = &ar->run;
	bool exited = false;
	int n = 2;

	memset(ar, 0, sizeof(*ar));
	if (agent_server__open(&r->gs, NULL)) {
		fprintf(stderr, "FAIL: agent_server__open\n");
		exit(1);
	}
	snprintf(socket_env, sizeof(socket_env), "MOCK_ATTACH_SOCKET=%s",
		 agent_server__socket_name(r->gs));
	snprintf(cupti_env, sizeof(cupti_env), "LLMPROF_CUPTI_LIBRARY=%s", cupti_lib);
	for (; extra_env && *extra_env && n < 15; extra_env++)
		env[n++] = *extra_env;
	r->begin = monotonic_ns();
	r->pid = spawn(args, env);
	while (!agent_server__nr_agents(r->gs) && !exited &&
	       monotonic_ns() - r->begin < 10000000000ull)
		exited = pump(r->gs, 50, r->pid, &r->status);
	if (!exited)
		exited = pump(r->gs, ms, r->pid, &r->status);
	ar->exited_early = exited;
	ar->stop_ns = monotonic_ns();
	EXPECT(!agent_server__stop(r->gs, 3000), "agent did not finish");
	r->end = monotonic_ns();
	ar->stop_ns = r->end - ar->stop_ns;
	if (!exited && !pump(r->gs, 15000, r->pid, &r->status)) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, &r->status, 0);
		EXPECT(0, "the job hung");
	}
	r->out = slurp(out_path);
	r->err = slurp(err_path);
}

/*
 * An attach to a job on CUPTI 13.0 GA (API 130000), whose
 * cuptiActivityDisable(CONCURRENT_KERNEL) deadlocks and cuptiActivityFlushAll
 * crashes while other threads launch, as the mock's do: the agent says why it
 * takes no GPU data and touches nothing of CUPTI's; the job runs on unharmed
 * and in its own time.
 */
static int scenario_cupti_13_0_ga(void)
{
	const char *args[] = {"--seconds", "3", "--attach-agent", agent_lib, NULL};
	const char *env[] = {"MOCK_CUPTI_TRACE=1", "MOCK_CUPTI_VERSION=130000", NULL};
	char *reference = reference_checksum();
	const struct gpu_agent_info *a;
	struct attached_run ar;
	struct run *r = &ar.run;

	run_attached(&ar, args, env, 1000);
	check_app(r, reference);
	EXPECT(agent_server__nr_agents(r->gs) == 1, "%zu agents", agent_server__nr_agents(r->gs));
	a = agent_server__agent(r->gs, 0);
	EXPECT(a && a->hello && a->cupti_version == 130000, "hello with CUPTI version %u",
	       a ? a->cupti_version : 0);
	EXPECT(a && a->error && strstr(a->error, "CUPTI 13.0") && strstr(a->error, "deadlock"),
	       "reason: %s", a && a->error ? a->error : "(none)");
	EXPECT(agent_server__nr_records(r->gs) == 0, "%zu records",
	       agent_server__nr_records(r->gs));
	EXPECT(!strstr(r->err, "mock_cupti: subscribe"), "the agent subscribed to CUPTI 13.0 GA");
	EXPECT(!strstr(r->err, "mock_cupti: activity"),
	       "the agent touched CUPTI 13.0 GA's activity");
	run_free(r);
	free(reference);
	return failures ? 1 : 0;
}

/*
 * An attach while the application's own profiler (Kineto-like: its own
 * buffer callbacks and kinds, no subscription) runs a window from 0.5 s to
 * 10.5 s; llmprof stops about 8 s after the agent started, inside it.  The agent notices
 * that its records stopped, says so, and at stop leaves CUPTI's activity
 * alone: the application's profiler gets every kernel of its window.
 */
static int scenario_profiler_window(void)
{
	const char *args[] = {"--seconds", "12", "--attach-agent", agent_lib, "--profiler-window",
			      "0.5:10.5",  NULL};
	const char *env[] = {"MOCK_CUPTI_TRACE=1", NULL};
	char *reference = reference_checksum();
	const struct gpu_agent_info *a;
	unsigned long got = 0, launched = 0;
	struct attached_run ar;
	struct run *r = &ar.run;
	const char *line;

	run_attached(&ar, args, env, 8000);
	EXPECT(!ar.exited_early, "mock_app ended before the stop");
	check_app(r, reference);
	line = strstr(r->err, "profiler kernels ");
	EXPECT(line && sscanf(line, "profiler kernels %lu of %lu", &got, &launched) == 2,
	       "the application's profiler did not report");
	EXPECT(launched > 0 && got == launched,
	       "the application's profiler got %lu of the %lu kernels of its window", got,
	       launched);
	a = agent_server__agent(r->gs, 0);
	EXPECT(a && a->hello && a->goodbye, "no hello or goodbye");
	EXPECT(a && a->error && strstr(a->error, "another CUPTI client"), "reason: %s",
	       a && a->error ? a->error : "(none)");
	EXPECT(!strstr(r->err, "mock_cupti: finalize"),
	       "the agent finalized CUPTI under the application's profiler");
	fprintf(stderr, "application's profiler: %lu of %lu kernels; llmprof: %zu records\n", got,
		launched, agent_server__nr_records(r->gs));
	run_free(r);
	free(reference);
	return failures ? 1 : 0;
}

/*
 * An attach (the offset clock) to a process whose CUPTI clock runs 50 ms
 * ahead until 1.5 s after the subscribe, then settles, and whose buffers
 * come back every 64 records: no kernel may start before the launch that
 * made it.
 */
static int scenario_clock_settle(void)
{
	const char *args[] = {"--seconds", "5", "--attach-agent", agent_lib, NULL};
	const char *env[] = {"MOCK_CUPTI_CLOCK_SETTLE=1500:50", "MOCK_CUPTI_BUFFER_RECORDS=64",
			     NULL};
	size_t kernels = 0, early = 0;
	struct attached_run ar;
	struct run *r = &ar.run;
	uint64_t worst = 0;

	run_attached(&ar, args, env, 3000);
	check_app(r, r->out);
	for (size_t i = 0; i < agent_server__nr_records(r->gs); i++) {
		const struct gpu_record *rec = agent_server__record(r->gs, i);
		const struct gpu_launch_record *l =
		    agent_server__launch(r->gs, 0, rec->correlation);

		if (rec->kind != GPU_KERNEL || !l)
			continue;
		kernels++;
		if (rec->start_ns < l->time_ns) {
			early++;
			if (l->time_ns - rec->start_ns > worst)
				worst = l->time_ns - rec->start_ns;
		}
	}
	EXPECT(kernels > 100, "%zu kernels with launches", kernels);
	EXPECT(!early, "%zu of %zu kernels start before their launch, by up to %.3f ms", early,
	       kernels, worst / 1e6);
	fprintf(stderr, "clock settling: %zu of %zu kernels before their launch\n", early, kernels);
	run_free(r);
	return failures ? 1 : 0;
}

/*
 * A record run (the agent's timestamp callback) in which the application
 * registers a timestamp callback of its own that returns TSC cycles, 1 s
 * into its loop, as Kineto does: no record may leave the run's window, and
 * the agent says why its GPU data ends.
 */
static int scenario_foreign_clock(void)
{
	const char *args[] = {"--seconds", "4", "--foreign-clock", "1", NULL};
	const char *env[] = {"MOCK_CUPTI_TIMESTAMP_CALLBACK=replace", NULL};
	const struct gpu_agent_info *a;
	size_t kernels = 0, outside = 0;
	struct run r;

	run_recorded(&r, args, env);
	check_app(&r, r.out);
	for (size_t i = 0; i < agent_server__nr_records(r.gs); i++) {
		const struct gpu_record *rec = agent_server__record(r.gs, i);

		kernels += rec->kind == GPU_KERNEL;
		outside += rec->start_ns < r.begin || rec->end_ns > r.end;
	}
	a = agent_server__agent(r.gs, 0);
	EXPECT(kernels > 100, "%zu kernels", kernels);
	EXPECT(!outside, "%zu of %zu records outside the run", outside,
	       agent_server__nr_records(r.gs));
	EXPECT(a && a->error && strstr(a->error, "timestamp"), "reason: %s",
	       a && a->error ? a->error : "(none)");
	fprintf(stderr, "foreign clock: %zu of %zu records outside the run\n", outside,
		agent_server__nr_records(r.gs));
	run_free(&r);
	return failures ? 1 : 0;
}

/* The agent's last flush at exit, in a job that exits while recording, ran
 * before libcupti's teardown, and its records and goodbye arrived. */
static void check_exit_flush(const struct run *r, const char *how)
{
	const struct gpu_agent_info *a = agent_server__agent(r->gs, 0);
	const char *flush = strstr(r->err, "mock_cupti: flush forced");
	const char *teardown = strstr(r->err, "mock_cupti: teardown");

	EXPECT(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0, "%s: mock_app status %d", how,
	       r->status);
	EXPECT(!strstr(r->err, "after teardown"), "%s: a CUPTI call after libcupti's teardown",
	       how);
	EXPECT(flush && teardown && flush < teardown,
	       "%s: the agent's exit flush did not run before libcupti's teardown", how);
	EXPECT(a && a->hello && a->goodbye, "%s: no hello or goodbye", how);
	EXPECT(agent_server__nr_records(r->gs) > 0, "%s: no GPU records", how);
	fprintf(stderr, "%s: exit status %d, %zu records, goodbye %d\n", how, r->status,
		agent_server__nr_records(r->gs), a && a->goodbye);
}

/*
 * A job that did not load libcupti itself (every nvcc program) exits while
 * the agent records, in record mode and after an attach: libcupti's exit
 * handlers (its C++ statics' destructors) were registered when the agent
 * loaded it, and the agent's last flush must come before them.
 */
static int scenario_exit_order(void)
{
	const char *args[] = {"--seconds", "1", NULL};
	const char *attach_args[] = {"--seconds", "1.5", "--attach-agent", agent_lib, NULL};
	const char *env[] = {"MOCK_CUPTI_TRACE=1", NULL};
	struct attached_run ar;
	struct run r;

	run_recorded(&r, args, NULL);
	check_exit_flush(&r, "record");
	run_free(&r);
	run_attached(&ar, attach_args, env, 10000);
	EXPECT(ar.exited_early, "mock_app did not exit while attached");
	check_exit_flush(&ar.run, "attach");
	run_free(&ar.run);
	return failures ? 1 : 0;
}

/*
 * Two attaches to one job on CUPTI 13.0 Update 1, which (before 13.1
 * Update 1) gives a graph launch's kernels wrong correlation ids in every
 * session after the process's first: in the second session no graph
 * kernel may land under a launch other than a graph launch (unattributed,
 * with the reason, is right), and in the first they are all under theirs.
 */
static int scenario_graph_reattach(void)
{
	const char *args[] = {"--seconds", "5", "--attach-agent", agent_lib, "--attach-count",
			      "2",	   NULL};
	char graph_launcher[64];
	size_t graph[2] = {0}, under_graph[2] = {0}, wrong[2] = {0}, unattributed[2] = {0};
	struct gpu_merge_options options = {.launch_stack = fake_launch_stack};
	struct fake_core core;
	struct agent_server *gs;
	struct profile *p;
	bool exited = false;
	int status = 0;
	pid_t pid;

	pid = spawn_attaching(&gs, args, "MOCK_CUPTI_VERSION=130001");
	if (pid < 0)
		return 1;
	for (int session = 0; session < 2 && !exited; session++) {
		while (agent_server__nr_agents(gs) <= (size_t)session && !exited)
			exited = pump(gs, 50, pid, &status);
		if (!exited)
			exited = pump(gs, 1000, pid, &status);
		EXPECT(!agent_server__stop(gs, 3000), "session %d: agent did not finish", session);
	}
	if (!exited)
		waitpid(pid, &status, 0);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "mock_app status %d", status);
	EXPECT(agent_server__nr_agents(gs) == 2, "%zu sessions", agent_server__nr_agents(gs));

	p = profile__new();
	core = (struct fake_core){.gs = gs, .profile = p};
	options.ctx = &core;
	EXPECT(!agent_server__merge(gs, p, &options), "merge failed");
	snprintf(graph_launcher, sizeof(graph_launcher), "launch_%u_%u", GPU_DOMAIN_RUNTIME,
		 311 /* CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 */);
	for (size_t i = 0; i < p->nr_gpu; i++) {
		const struct gpu_activity *a = &p->gpu[i];
		const char *leaf = p->frames[a->frame].name;
		uint32_t session = a->process;

		if (session > 1 || (!strstr(leaf, "layernorm") && !strstr(leaf, "mlp_kernel") &&
				    !strstr(leaf, "residual_add")))
			continue;
		graph[session]++;
		if (a->stack == UINT32_MAX) {
			unattributed[session]++;
		} else {
			const struct stack *st = &p->stacks[a->stack];
			const char *launcher =
			    st->depth >= 2 ? p->frames[st->frames[st->depth - 2]].name : "";

			if (!strcmp(launcher, graph_launcher))
				under_graph[session]++;
			else
				wrong[session]++;
		}
	}
	for (int session = 0; session < 2; session++)
		fprintf(stderr,
			"session %d: %zu graph kernels, %zu under the graph launch, %zu under "
			"another launch, %zu unattributed\n",
			session + 1, graph[session], under_graph[session], wrong[session],
			unattributed[session]);
	EXPECT(graph[0] > 0 && under_graph[0] == graph[0],
	       "first session: %zu of %zu graph kernels under the graph launch", under_graph[0],
	       graph[0]);
	EXPECT(graph[1] > 0 && !wrong[1],
	       "second session: %zu of %zu graph kernels under another "
	       "launch's stack",
	       wrong[1], graph[1]);
	{
		const struct gpu_agent_info *a = agent_server__agent(gs, 1);

		EXPECT(!unattributed[1] || (a && a->notice && strstr(a->notice, "13.1 Update 1")),
		       "second session: %zu graph kernels unattributed without a reason (%s)",
		       unattributed[1], a && a->notice ? a->notice : "none");
		a = agent_server__agent(gs, 0);
		EXPECT(a && !a->notice, "first session: notice %s", a->notice);
	}
	profile__free(p);
	agent_server__close(gs);
	return failures ? 1 : 0;
}

/*
 * An attach to a job one of whose launches per step fails (no GPU work, so
 * no record): the stop waits for the work in flight, not for records that
 * cannot come; the others' records all arrive.  The work in flight at stop
 * is at most a step's, 5 ms; the agent's wait, when a record never comes,
 * is a second.
 */
static int scenario_stop_wait(void)
{
	const char *args[] = {"--seconds",	"4",	   "--failed-launch",
			      "--attach-agent", agent_lib, NULL};
	const struct gpu_agent_info *a;
	struct attached_run ar;
	struct run *r = &ar.run;

	run_attached(&ar, args, NULL, 1000);
	check_app(r, r->out);
	a = agent_server__agent(r->gs, 0);
	EXPECT(a && a->hello && a->goodbye, "no hello or goodbye");
	EXPECT(a && !a->incomplete, "%" PRIu64 " records cut off at stop", a ? a->incomplete : 0);
	EXPECT(agent_server__nr_records(r->gs) > 100, "%zu records",
	       agent_server__nr_records(r->gs));
	EXPECT(ar.stop_ns < 500000000ull, "the stop took %.0f ms", ar.stop_ns / 1e6);
	fprintf(stderr, "stop with failed launches: %.0f ms, %zu records\n", ar.stop_ns / 1e6,
		agent_server__nr_records(r->gs));
	run_free(r);
	return failures ? 1 : 0;
}

/* Copies the file at from to to; 0 or -1. */
static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, err = -1;
	char buf[65536];
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0)
		goto cleanup;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			goto cleanup;
	err = n < 0 ? -1 : 0;
cleanup:
	close(in);
	if (out >= 0 && close(out))
		err = -1;
	return err;
}

/*
 * An attach to a job that maps libcupti under the name libtorch's bundles
 * give it (libcupti-HASH.so.13, as auditwheel renames it): the agent uses
 * that copy, so the job maps exactly one libcupti, and CUPTI's single
 * subscriber is the agent's, with GPU records.
 */
static int scenario_hashed_cupti(void)
{
	char dir[128], hashed[256];
	const char *args[] = {"--seconds", "3", "--load-library", hashed, "--attach-agent",
			      agent_lib,   NULL};
	const char *env[] = {"MOCK_CUPTI_TRACE=1", NULL};
	const struct gpu_agent_info *a;
	struct attached_run ar;
	struct run *r = &ar.run;
	int mapped = -1;
	const char *line;

	snprintf(dir, sizeof(dir), "/tmp/llmprof-test-agent-%d.d", getpid());
	snprintf(hashed, sizeof(hashed), "%s/libcupti-8f3a2c1d.so.13", dir);
	if (mkdir(dir, 0700) || copy_file(cupti_lib, hashed)) {
		fprintf(stderr, "FAIL: cannot make %s\n", hashed);
		return 1;
	}
	run_attached(&ar, args, env, 1000);
	check_app(r, r->out);
	line = strstr(r->err, "cupti libraries mapped ");
	EXPECT(line && sscanf(line, "cupti libraries mapped %d", &mapped) == 1 && mapped == 1,
	       "the job maps %d libcupti files", mapped);
	a = agent_server__agent(r->gs, 0);
	EXPECT(a && a->cupti_path && !strcmp(a->cupti_path, hashed), "the agent used %s",
	       a && a->cupti_path ? a->cupti_path : "(none)");
	EXPECT(agent_server__nr_records(r->gs) > 0, "no GPU records");
	fprintf(stderr, "hashed libcupti: %d libcupti files mapped, the agent used %s\n", mapped,
		a && a->cupti_path ? a->cupti_path : "(none)");
	run_free(r);
	unlink(hashed);
	rmdir(dir);
	return failures ? 1 : 0;
}

/* Each copy and launch entry point of mock_app --api-coverage: the GPU
 * work it made leads to a probed launch record of that call. */
static int scenario_api_coverage(void)
{
	static const struct {
		uint32_t domain, cbid;
		const char *name;
		size_t records; /* at least */
	} apis[] = {
	    {GPU_DOMAIN_RUNTIME, 214, "cudaLaunchKernel_ptsz", 1},
	    {GPU_DOMAIN_RUNTIME, 32, "cudaMemcpy2D", 1},
	    {GPU_DOMAIN_RUNTIME, 44, "cudaMemcpy2DAsync", 1},
	    {GPU_DOMAIN_RUNTIME, 160, "cudaMemcpyPeer", 1},
	    {GPU_DOMAIN_RUNTIME, 161, "cudaMemcpyPeerAsync", 1},
	    {GPU_DOMAIN_RUNTIME, 39, "cudaMemcpyToSymbol", 1},
	    {GPU_DOMAIN_RUNTIME, 47, "cudaMemcpyToSymbolAsync", 1},
	    {GPU_DOMAIN_RUNTIME, 509, "cudaMemcpyBatchAsync", 3},
	    {GPU_DOMAIN_DRIVER, 276, "cuMemcpyHtoD_v2", 1},
	    {GPU_DOMAIN_DRIVER, 278, "cuMemcpyDtoH_v2", 1},
	    {GPU_DOMAIN_DRIVER, 307, "cuLaunchKernel", 1},
	    {GPU_DOMAIN_DRIVER, 652, "cuLaunchKernelEx", 1},
	    {GPU_DOMAIN_DRIVER, 514, "cuGraphLaunch", 3},
	};
	const char *args[] = {"--iterations", "2", "--api-coverage", NULL};
	size_t seen[sizeof(apis) / sizeof(apis[0])] = {0};
	struct run r;

	run_recorded(&r, args, NULL);
	check_app(&r, r.out);
	for (size_t i = 0; i < agent_server__nr_records(r.gs); i++) {
		const struct gpu_record *rec = agent_server__record(r.gs, i);
		uint32_t correlation =
		    rec->runtime_correlation ? rec->runtime_correlation : rec->correlation;
		const struct gpu_launch_record *l = agent_server__launch(r.gs, 0, correlation);

		if (l && l->parent_correlation)
			l = agent_server__launch(r.gs, 0, l->parent_correlation);
		for (size_t a = 0; l && a < sizeof(apis) / sizeof(apis[0]); a++)
			if (l->domain == apis[a].domain && l->callback_id == apis[a].cbid &&
			    (l->flags & GPU_LAUNCH_PROBED))
				seen[a]++;
	}
	for (size_t a = 0; a < sizeof(apis) / sizeof(apis[0]); a++)
		EXPECT(seen[a] >= apis[a].records, "%s: %zu GPU records from a probed launch",
		       apis[a].name, seen[a]);
	check_merge(r.gs, r.begin);
	run_free(&r);
	return failures ? 1 : 0;
}

/* The launching thread's CPU time per launch from mock_app --bench. */
static double bench_result(const char *err)
{
	const char *at = strstr(err, "ns/launch ");

	return at ? strtod(at + 10, NULL) : -1;
}

/* Cost of the launch path: no CUPTI, a trivial other subscriber, and the
 * agent with its callbacks and activity on. */
static int scenario_bench(void)
{
	const char *args[] = {"--bench", "100000", NULL};
	const char *other_args[] = {"--bench", "100000", "--subscribe-first", NULL};
	static char cupti_env[512];
	const char *env[] = {cupti_env, NULL};
	double plain, subscribed, agent;
	char *err;
	struct run r;
	int status;
	pid_t pid;

	snprintf(cupti_env, sizeof(cupti_env), "LLMPROF_CUPTI_LIBRARY=%s", cupti_lib);
	pid = spawn(args, NULL);
	waitpid(pid, &status, 0);
	err = slurp(err_path);
	plain = bench_result(err);
	free(err);
	pid = spawn(other_args, env);
	waitpid(pid, &status, 0);
	err = slurp(err_path);
	subscribed = bench_result(err);
	free(err);
	run_recorded(&r, args, NULL);
	agent = bench_result(r.err);
	EXPECT(plain > 0 && subscribed > 0 && agent > 0, "bench output missing");
	fprintf(stderr,
		"launch cost: %.0f ns without CUPTI, %.0f ns with a trivial subscriber, "
		"%.0f ns with the agent: agent %.0f ns per launch over the trivial subscriber\n",
		plain, subscribed, agent, agent - subscribed);
	{
		const struct gpu_agent_info *a = agent_server__agent(r.gs, 0);

		fprintf(stderr,
			"agent: %" PRIu64 " launches sent, %" PRIu64
			" dropped; %zu GPU records, %" PRIu64
			" activity records dropped by CUPTI, %" PRIu64 " messages dropped\n",
			a ? a->sent_launches : 0, a ? a->dropped_launches : 0,
			agent_server__nr_records(r.gs), a ? a->dropped_activity : 0,
			a ? a->dropped_messages : 0);
		fprintf(stderr, "agent goodbye: %" PRIu64 " kernels sent, %" PRIu64 " incomplete\n",
			a ? a->sent_kernels : 0, a ? a->incomplete : 0);
	}
	/* Generous: the machine is shared; this catches a syscall per launch. */
	EXPECT(agent - subscribed < 20000, "the agent costs %.0f ns per launch",
	       agent - subscribed);
	run_free(&r);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *scenario;

	if (argc != 5) {
		fprintf(stderr, "usage: test_agent SCENARIO MOCK_APP AGENT MOCK_CUPTI\n");
		return 2;
	}
	scenario = argv[1];
	app = argv[2];
	agent_lib = argv[3];
	cupti_lib = argv[4];
	signal(SIGPIPE, SIG_IGN);
	snprintf(out_path, sizeof(out_path), "/tmp/llmprof-test-agent-%d.out", getpid());
	snprintf(err_path, sizeof(err_path), "/tmp/llmprof-test-agent-%d.err", getpid());
	if (!strcmp(scenario, "record"))
		failures += scenario_record(NULL, GPU_CLOCK_CALLBACK);
	else if (!strcmp(scenario, "record_offset"))
		failures +=
		    scenario_record("MOCK_CUPTI_TIMESTAMP_CALLBACK=reject", GPU_CLOCK_OFFSET);
	else if (!strcmp(scenario, "driver_correlation"))
		failures += scenario_driver_correlation();
	else if (!strcmp(scenario, "other_subscriber"))
		failures += scenario_other_subscriber();
	else if (!strcmp(scenario, "receiver_killed"))
		failures += scenario_receiver_killed();
	else if (!strcmp(scenario, "attach"))
		failures += scenario_attach();
	else if (!strcmp(scenario, "probe_rate"))
		failures += scenario_probe_rate();
	else if (!strcmp(scenario, "api_coverage"))
		failures += scenario_api_coverage();
	else if (!strcmp(scenario, "bench"))
		failures += scenario_bench();
	else if (!strcmp(scenario, "cupti_13_0_ga"))
		failures += scenario_cupti_13_0_ga();
	else if (!strcmp(scenario, "profiler_window"))
		failures += scenario_profiler_window();
	else if (!strcmp(scenario, "clock_settle"))
		failures += scenario_clock_settle();
	else if (!strcmp(scenario, "foreign_clock"))
		failures += scenario_foreign_clock();
	else if (!strcmp(scenario, "hashed_cupti"))
		failures += scenario_hashed_cupti();
	else if (!strcmp(scenario, "exit_order"))
		failures += scenario_exit_order();
	else if (!strcmp(scenario, "graph_reattach"))
		failures += scenario_graph_reattach();
	else if (!strcmp(scenario, "stop_wait"))
		failures += scenario_stop_wait();
	else
		return 2;
	if (failures)
		fprintf(stderr, "--- mock_app stderr ---\n");
	if (failures) {
		char *err = slurp(err_path);

		fprintf(stderr, "%.4000s\n", err);
		free(err);
	}
	unlink(out_path);
	unlink(err_path);
	return failures ? 1 : 0;
}
