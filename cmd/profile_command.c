// SPDX-License-Identifier: GPL-2.0
/*
 * llmprof attach and llmprof record: the options they share, starting or
 * finding the target, running the session and writing the profile.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/procfs.h"
#include "cmd.h"
#include "output_pattern.h"
#include "findings/findings.h"
#include "findings/html_page.h"
#include "gpu/gpu_memory.h"
#include "profile/output.h"
#include "privilege.h"
#include "profile_input.h"
#include "progress.h"
#include "recording/run_as.h"
#include "recording/recording.h"
#include "status.h"
#include "sampling/session.h"
#include "profile/summary.h"
#include "sampling/unwinder.h"

enum profile_mode {
	MODE_ATTACH,
	MODE_RECORD,
};

#define MAX_PIDS 256

/* How the profile is written. */
struct profile_output_options {
	enum profile_format format;
	enum output_view view; /* of the CPU profile; a family's view is written whole */
	const char *path;  /* -o; NULL: stdout, or a file named after the target on a terminal */
	bool python_lines; /* --lines */
	bool inverted;	   /* --inverted: -f svg as an icicle */
};

/* Every option of attach and record, from the command line down: what is
 * recorded (the target, the sampling, the probe families) and how it is
 * written. */
struct profile_env {
	enum profile_mode mode;
	struct recording_options recording;
	struct profile_output_options output;
	pid_t more_pids[MAX_PIDS]; /* attach -p A,B,...: all but the first */
	bool no_children;
	bool view_given; /* --view: --gpu-memory does not pick the view */
};

enum {
	OPT_NO_KERNEL = 0x100,
	OPT_PER_THREAD,
	OPT_NO_PYTHON,
	OPT_UNWIND,
	OPT_VIEW,
	OPT_NO_GPU,
	OPT_VERSION,
	OPT_OFF_CPU,
	OPT_OFF_CPU_MIN,
	OPT_MODE,
	OPT_NO_CHILDREN,
	OPT_PER_PROCESS,
	OPT_GPU_MEMORY,
	OPT_SAMPLING,
	OPT_NO_NCCL,
	OPT_LINES,
	OPT_RUN_AS,
	OPT_INVERTED,
	OPT_LAUNCH_STACK_RATE,
	OPT_MAX_OVERHEAD,
	OPT_NO_UNWIND_CACHE,
};

static const struct option long_options[] = {
    {"pid", required_argument, NULL, 'p'},
    {"duration", required_argument, NULL, 'd'},
    {"frequency", required_argument, NULL, 'F'},
    {"sampling", required_argument, NULL, OPT_SAMPLING},
    {"format", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"no-kernel", no_argument, NULL, OPT_NO_KERNEL},
    {"per-thread", no_argument, NULL, OPT_PER_THREAD},
    {"no-python", no_argument, NULL, OPT_NO_PYTHON},
    {"lines", no_argument, NULL, OPT_LINES},
    {"run-as", required_argument, NULL, OPT_RUN_AS},
    {"inverted", no_argument, NULL, OPT_INVERTED},
    {"view", required_argument, NULL, OPT_VIEW},
    {"no-gpu", no_argument, NULL, OPT_NO_GPU},
    {"gpu-memory", no_argument, NULL, OPT_GPU_MEMORY},
    {"no-nccl", no_argument, NULL, OPT_NO_NCCL},
    {"launch-stack-rate", required_argument, NULL, OPT_LAUNCH_STACK_RATE},
    {"max-overhead", required_argument, NULL, OPT_MAX_OVERHEAD},
    {"unwind", required_argument, NULL, OPT_UNWIND},
    {"no-unwind-cache", no_argument, NULL, OPT_NO_UNWIND_CACHE},
    {"mode", required_argument, NULL, OPT_MODE},
    {"children", no_argument, NULL, 'C'},
    {"no-children", no_argument, NULL, OPT_NO_CHILDREN},
    {"per-process", no_argument, NULL, OPT_PER_PROCESS},
    {"off-cpu", no_argument, NULL, OPT_OFF_CPU},
    {"off-cpu-min", required_argument, NULL, OPT_OFF_CPU_MIN},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {0},
};

static void usage(enum profile_mode mode, FILE *out)
{
	char formats[256];

	if (mode == MODE_ATTACH)
		fprintf(out,
			"Usage: llmprof attach -p PID [OPTIONS]\n\n"
			"Profile a running process and all its threads.\n\n"
			"  -p, --pid PID[,PID...] the processes to profile\n"
			"  -C, --children         their descendants too, those running and those\n"
			"                         started later\n");
	else
		fprintf(
		    out,
		    "Usage: llmprof record [OPTIONS] -- COMMAND [ARGS...]\n\n"
		    "Run COMMAND and profile it, and every process it starts, until it\n"
		    "exits.\n\n"
		    "  -C, --children         follow the processes COMMAND starts (default)\n"
		    "      --no-children      COMMAND's own process only\n"
		    "      --run-as USER      run COMMAND as USER (a name or a uid): its uid,\n"
		    "                         gid, groups, HOME and USER; llmprof keeps its own\n"
		    "                         privileges to profile\n");
	fprintf(out,
		"  -d, --duration SECONDS stop after SECONDS (default: until Ctrl-C or the\n"
		"                         target exits)\n"
		"  -F, --frequency HZ     samples per second per CPU, at most 10000 (default 99)\n"
		"      --max-overhead PCT hold llmprof's cost (its BPF programs' run time and\n"
		"                         its own CPU) under PCT %% of the target's CPU time,\n"
		"                         sampling more slowly while it is over (samples then\n"
		"                         weigh more; default: off)\n"
		"      --sampling MODE    random (intervals drawn around 1/HZ, so periodic\n"
		"                         work cannot keep in step; default) or fixed (every\n"
		"                         1/HZ exactly, as perf does)\n");
	format__list(formats, sizeof(formats), FORMAT_WRITABLE, 0, " or ", "", true,
		     NR_PROFILE_FORMATS);
	strcat(formats, "; default folded");
	help_option(out, "  -f, --format FORMAT    ", formats);
	fprintf(
	    out,
	    "      --inverted         svg: an icicle graph, roots at the top\n"
	    "  -o, --output FILE      write the profile to FILE (default stdout)\n"
	    "      --no-kernel        user-space frames only\n"
	    "      --per-thread       a frame per thread under the process\n"
	    "      --per-process      a root frame per process (COMM [PID]) even where\n"
	    "                         processes share a name\n"
	    "      --no-python        no Python frames (native frames of the interpreter)\n"
	    "      --lines            speedscope: a frame per line of a Python function\n"
	    "                         (default: one per function)\n"
	    "      --view VIEW        cpu, gpu or all (default all): which stacks are written;\n"
	    "                         memory-peak (default with --gpu-memory), memory-leaks\n"
	    "                         or memory-alloc: GPU memory by allocating stack\n"
	    "                         nccl: NCCL calls by calling stack, in bytes\n"
	    "      --no-gpu           do not load the CUPTI agent; CPU stacks only\n"
	    "      --gpu-memory       GPU memory by the CPU stack that allocated it (CUDA\n"
	    "                         allocation calls probed): peak, leaks, churn\n"
	    "      --no-nccl          do not probe libnccl (probed by default where the\n"
	    "                         target maps it: collectives by stack and size)\n"
	    "      --launch-stack-rate N\n"
	    "                         GPU launch stacks taken per second and thread\n"
	    "                         (default 100, graph launches a fifth; 0: every\n"
	    "                         launch); the others take a taken one's stack\n"
	    "      --unwind MODE[,BYTES]\n"
	    "                         user stacks by auto or ehframe (in BPF, by each\n"
	    "                         binary's .eh_frame; default), fp (frame pointers),\n"
	    "                         dwarf (CFI over a BYTES copy of the stack, default\n"
	    "                         16384, completed by frame pointers),\n"
	    "                         or compare (ehframe, each stack checked against\n"
	    "                         dwarf's on the same sample; -v says how many agree)\n"
	    "      --no-unwind-cache  compile every file's unwind rows and resolve every\n"
	    "                         symbol; read and keep none in the cache by build-id\n"
	    "                         (LLMPROF_CACHE_DIR, else ~/.cache/llmprof)\n"
	    "      --mode MODE        cpu (on-CPU samples; default), off-cpu (where\n"
	    "                         threads wait, weighted by time blocked) or wall\n"
	    "                         (both, in microseconds: each thread sums to its\n"
	    "                         wall-clock time)\n"
	    "      --off-cpu          the same as --mode off-cpu\n"
	    "      --off-cpu-min USEC waits shorter than USEC microseconds are counted\n"
	    "                         but get no stack (default 10)\n"
	    "  -v, --verbose          more detail on stderr\n"
	    "  -h, --help             show this help\n"
	    "      --version          show the version\n");
}

#define MIN_STACK_COPY 512
#define DEFAULT_OFF_CPU_MIN_US 10
#define DEFAULT_LAUNCH_STACK_RATE 100
#define MAX_LAUNCH_STACK_RATE 1000000

/* "auto", "ehframe", "fp", "dwarf" or "compare", the last two optionally
 * ",BYTES" as perf's --call-graph dwarf,SIZE.  0 or -EINVAL. */
static int parse_unwind(const char *text, struct session_options *options)
{
	static const struct {
		const char *name;
		enum unwind_mode mode;
	} modes[] = {{"fp", UNWIND_FP},
		     {"dwarf", UNWIND_DWARF},
		     {"auto", UNWIND_EHFRAME},
		     {"ehframe", UNWIND_EHFRAME},
		     {"compare", UNWIND_COMPARE}};
	size_t len = strcspn(text, ",");
	long bytes = 0;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strlen(modes[i].name) != len || strncmp(text, modes[i].name, len))
			continue;
		if (text[len]) {
			if ((modes[i].mode != UNWIND_DWARF && modes[i].mode != UNWIND_COMPARE) ||
			    parse_long(text + len + 1, MIN_STACK_COPY, MAX_STACK_COPY, &bytes))
				return -EINVAL;
		}
		options->unwind = modes[i].mode;
		options->stack_copy_bytes = bytes;
		return 0;
	}
	return -EINVAL;
}

/* "PID[,PID...]" into the session's first PID and the others.  0 or
 * -EINVAL. */
static int parse_pids(const char *text, struct profile_env *env)
{
	char *copy = strdup(text), *save = NULL, *token;
	size_t n = 0;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	env->recording.sampling.pid = 0;
	for (token = strtok_r(copy, ",", &save); token; token = strtok_r(NULL, ",", &save)) {
		long value;

		if (parse_long(token, 1, 0x3fffffff, &value) || n > MAX_PIDS) {
			err = -EINVAL;
			break;
		}
		if (!n)
			env->recording.sampling.pid = value;
		else
			env->more_pids[n - 1] = value;
		n++;
	}
	if (!n || text[0] == ',' || text[strlen(text) - 1] == ',' || strstr(text, ",,"))
		err = -EINVAL;
	env->recording.sampling.more_pids = env->more_pids;
	env->recording.sampling.nr_more_pids = n ? n - 1 : 0;
	free(copy);
	return err;
}

/* Returns -1 to go on, else the exit status. */
/*
 * -F is capped at MAX_FREQUENCY: at 30 kHz on every CPU the sampling
 * interrupts alone halve the speed of unrelated processes, and at 100 kHz
 * they stall the machine.  The kernel throttles perf events above
 * kernel.perf_event_max_sample_rate (and lowers that when interrupts run
 * long), so the cap is that when it is lower.
 */
#define MAX_FREQUENCY 10000

static long kernel_max_sample_rate(void)
{
	long rate = -1;
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");

	if (f) {
		if (fscanf(f, "%ld", &rate) != 1)
			rate = -1;
		fclose(f);
	}
	return rate;
}

static long frequency_limit(void)
{
	long rate = kernel_max_sample_rate();

	return rate > 0 && rate < MAX_FREQUENCY ? rate : MAX_FREQUENCY;
}

/* CPU time the process has used, all its threads, in clock ticks; -1 if
 * unknown.  A zombie not yet reaped still shows its total. */
static long long process_cpu_ticks(pid_t pid)
{
	struct procfs_stat st;

	if (procfs__stat(pid, 0, &st))
		return -1;
	return (long long)(st.utime + st.stime);
}

/*
 * The summary's sample count is only honest if the kernel delivered what
 * -F asked for: compare it with the target's CPU time.  A shortfall of more
 * than half means throttling (or a stalled machine), and is said.
 */
static void check_delivered_rate(const struct profile *profile, unsigned int frequency,
				 long long cpu_ticks)
{
	long hz = sysconf(_SC_CLK_TCK);
	double cpu_s, due;

	if (!frequency || cpu_ticks < 0 || hz <= 0)
		return;
	cpu_s = (double)cpu_ticks / hz;
	due = cpu_s * frequency;
	if (due < 200 || profile->samples_taken + profile->samples_lost >= due / 2)
		return;
	status__warn("only %llu samples for the target's %.2f s of CPU time, where %u Hz "
		     "would give about %.0f: the kernel throttled sampling "
		     "(kernel.perf_event_max_sample_rate is %ld); the profile's shape holds, "
		     "its counts are low",
		     (unsigned long long)(profile->samples_taken + profile->samples_lost), cpu_s,
		     frequency, due, kernel_max_sample_rate());
}

/* What the options say together, once all are read; the target named.
 * Returns -1 to go on, else the exit status. */
static int check_options(int argc, char **argv, struct profile_env *env, bool view_given)
{
	if (env->output.inverted && env->output.format != FORMAT_SVG) {
		status__error("--inverted is for -f svg");
		return EXIT_USAGE;
	}
	if (env->output.inverted)
		env->output.format = FORMAT_SVG_INVERTED;
	/* --gpu-memory writes the peak unless a view was asked for. */
	if (env->recording.families.gpu_memory && !view_given)
		env->recording.families.view = "memory-peak";
	env->recording.families.all_views = format__flags(env->output.format) & FORMAT_VALUES;
	env->recording.sampling.bursts = env->recording.families.gpu_memory;
	if ((format__flags(env->output.format) & FORMAT_NEEDS_TIMELINE) &&
	    env->recording.families.view) {
		status__error("-f %s writes timelines, which the memory and nccl views "
			      "lack: add --view cpu, gpu or all",
			      format__get(env->output.format)->name);
		return EXIT_USAGE;
	}
	if (env->recording.families.view && !strcmp(env->recording.families.view, "nccl") &&
	    !env->recording.families.nccl) {
		status__error("--view nccl needs the NCCL probes: drop --no-nccl");
		return EXIT_USAGE;
	}
	if (env->mode == MODE_ATTACH) {
		env->recording.sampling.warm_up = true;
		if (optind < argc) {
			status__error("unexpected argument '%s' (attach takes -p PID)",
				      argv[optind]);
			return EXIT_USAGE;
		}
		if (!env->recording.sampling.pid) {
			status__error("no process given: use -p PID");
			return EXIT_USAGE;
		}
	} else {
		if (optind >= argc) {
			status__error("no command to record: use 'llmprof record [OPTIONS] -- "
				      "COMMAND [ARGS...]'");
			return EXIT_USAGE;
		}
		env->recording.command = argv + optind;
		/* As perf record does: the whole tree the command starts. */
		env->recording.sampling.children = !env->no_children;
	}
	return -1;
}

/*
 * The options come in groups, a parser each, as the env struct holds them:
 * what is profiled (the target), how it is sampled, which probe families
 * record beside the samples, and how the profile is written.  A group's
 * parser returns OPTION_TAKEN to go on, OPTION_OF_OTHER_GROUP for an option
 * it does not hold, else the exit status.
 */
enum {
	OPTION_OF_OTHER_GROUP = -2,
	OPTION_TAKEN = -1,
};

static int parse_target_option(int opt, struct profile_env *env)
{
	switch (opt) {
	case 'p':
		if (env->mode != MODE_ATTACH) {
			status__error("-p is for 'llmprof attach'; record runs a command");
			return EXIT_USAGE;
		}
		if (parse_pids(optarg, env)) {
			status__error("invalid PID list '%s' for -p: expected positive "
				      "numbers separated by commas (at most %d)",
				      optarg, MAX_PIDS);
			return EXIT_USAGE;
		}
		return OPTION_TAKEN;
	case OPT_RUN_AS: {
		static struct run_as user;
		int err;

		if (env->mode != MODE_RECORD) {
			status__error("--run-as is for 'llmprof record'; attach profiles "
				      "a process as it runs");
			return EXIT_USAGE;
		}
		err = run_as__resolve(optarg, &user);
		if (err) {
			status__error("invalid user '%s' for --run-as: %s", optarg,
				      err == -ENOMEM ? strerror(ENOMEM) : "no such user");
			return EXIT_USAGE;
		}
		env->recording.run_as = &user;
		return OPTION_TAKEN;
	}
	case 'C':
		env->recording.sampling.children = true;
		env->no_children = false;
		return OPTION_TAKEN;
	case OPT_NO_CHILDREN:
		env->recording.sampling.children = false;
		env->no_children = true;
		return OPTION_TAKEN;
	}
	return OPTION_OF_OTHER_GROUP;
}

/* --mode cpu, off-cpu or wall.  0 or -EINVAL. */
static int parse_session_mode(const char *text, enum session_mode *mode)
{
	static const struct {
		const char *name;
		enum session_mode mode;
	} modes[] = {{"cpu", SESSION_MODE_CPU},
		     {"off-cpu", SESSION_MODE_OFF_CPU},
		     {"wall", SESSION_MODE_WALL}};

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (!strcmp(text, modes[i].name)) {
			*mode = modes[i].mode;
			return 0;
		}
	}
	return -EINVAL;
}

/* --max-overhead PCT: 0 to 100, "%" allowed. */
static int parse_max_overhead(const char *text, struct session_options *sampling)
{
	char *end;
	double pct = strtod(text, &end);

	if (end == text || (*end && strcmp(end, "%")) || !(pct >= 0 && pct <= 100)) {
		status__error("invalid share '%s' for --max-overhead: expected 0 to 100 (percent "
			      "of the target's CPU time; 0: off)",
			      text);
		return EXIT_USAGE;
	}
	sampling->max_overhead = pct / 100;
	return OPTION_TAKEN;
}

static int parse_sampling_option(int opt, struct profile_env *env)
{
	struct session_options *sampling = &env->recording.sampling;
	long value, limit;

	switch (opt) {
	case 'd':
		if (parse_seconds(optarg, &sampling->duration)) {
			status__error("invalid duration '%s' for -d: expected a positive "
				      "number of seconds, at most %d (a year)",
				      optarg, MAX_DURATION_S);
			return EXIT_USAGE;
		}
		return OPTION_TAKEN;
	case 'F':
		limit = frequency_limit();
		if (parse_long(optarg, 1, limit, &value)) {
			status__error("invalid frequency '%s' for -F: expected 1 to %ld Hz "
				      "(higher rates stall the machine; "
				      "kernel.perf_event_max_sample_rate is %ld)",
				      optarg, limit, kernel_max_sample_rate());
			return EXIT_USAGE;
		}
		sampling->frequency = value;
		return OPTION_TAKEN;
	case OPT_SAMPLING:
		if (!strcmp(optarg, "random")) {
			sampling->fixed_intervals = false;
		} else if (!strcmp(optarg, "fixed")) {
			sampling->fixed_intervals = true;
		} else {
			status__error("invalid sampling '%s' for --sampling: expected "
				      "random or fixed",
				      optarg);
			return EXIT_USAGE;
		}
		return OPTION_TAKEN;
	case OPT_NO_KERNEL:
		sampling->kernel_stacks = false;
		return OPTION_TAKEN;
	case OPT_PER_THREAD:
		sampling->per_thread = true;
		return OPTION_TAKEN;
	case OPT_PER_PROCESS:
		sampling->per_process = true;
		return OPTION_TAKEN;
	case OPT_NO_PYTHON:
		sampling->python = false;
		return OPTION_TAKEN;
	case OPT_NO_UNWIND_CACHE:
		sampling->no_unwind_cache = true;
		return OPTION_TAKEN;
	case OPT_UNWIND:
		if (parse_unwind(optarg, sampling)) {
			status__error("invalid unwind mode '%s' for --unwind: expected auto, "
				      "ehframe, fp, dwarf or compare, the last two optionally "
				      "with ,BYTES of stack (%d to %d)",
				      optarg, MIN_STACK_COPY, MAX_STACK_COPY);
			return EXIT_USAGE;
		}
		return OPTION_TAKEN;
	case OPT_MODE:
		if (parse_session_mode(optarg, &sampling->mode)) {
			status__error("invalid mode '%s' for --mode: expected cpu, off-cpu "
				      "or wall",
				      optarg);
			return EXIT_USAGE;
		}
		return OPTION_TAKEN;
	case OPT_OFF_CPU:
		sampling->mode = SESSION_MODE_OFF_CPU;
		return OPTION_TAKEN;
	case OPT_OFF_CPU_MIN:
		if (parse_long(optarg, 0, 10000000, &value)) {
			status__error("invalid time '%s' for --off-cpu-min: expected 0 to "
				      "10000000 microseconds",
				      optarg);
			return EXIT_USAGE;
		}
		sampling->off_cpu_min_ns = value * 1000ULL;
		return OPTION_TAKEN;
	case OPT_MAX_OVERHEAD:
		return parse_max_overhead(optarg, sampling);
	}
	return OPTION_OF_OTHER_GROUP;
}

static int parse_family_option(int opt, struct profile_env *env)
{
	long value;

	switch (opt) {
	case OPT_NO_GPU:
		env->recording.families.gpu = false;
		return OPTION_TAKEN;
	case OPT_GPU_MEMORY:
		env->recording.families.gpu_memory = true;
		return OPTION_TAKEN;
	case OPT_NO_NCCL:
		env->recording.families.nccl = false;
		return OPTION_TAKEN;
	case OPT_LAUNCH_STACK_RATE:
		if (parse_long(optarg, 0, MAX_LAUNCH_STACK_RATE, &value)) {
			status__error("invalid rate '%s' for --launch-stack-rate: expected 0 "
				      "to %d per second",
				      optarg, MAX_LAUNCH_STACK_RATE);
			return EXIT_USAGE;
		}
		env->recording.sampling.launch_stack_rate = value;
		return OPTION_TAKEN;
	}
	return OPTION_OF_OTHER_GROUP;
}

/* --view: a view of the CPU profile, or a family's view (which --gpu-memory
 * would otherwise pick). */
static int parse_view(const char *text, struct profile_env *env)
{
	enum gpu_memory_view memory_view;

	env->view_given = true;
	env->recording.families.view = NULL;
	if (!strcmp(text, "nccl")) {
		env->recording.families.view = text;
	} else if (!strcmp(text, "all")) {
		env->output.view = VIEW_ALL;
	} else if (!strcmp(text, "cpu")) {
		env->output.view = VIEW_CPU;
	} else if (!strcmp(text, "gpu")) {
		env->output.view = VIEW_GPU;
	} else if (!gpu_memory__parse_view(text, &memory_view)) {
		env->recording.families.gpu_memory = true;
		env->recording.families.view = text;
	} else {
		return -EINVAL;
	}
	return 0;
}

static int parse_output_option(int opt, struct profile_env *env)
{
	char formats[256];

	switch (opt) {
	case 'f':
		if (format__parse(optarg, FORMAT_WRITABLE, 0, &env->output.format)) {
			format__list(formats, sizeof(formats), FORMAT_WRITABLE, 0, " or ", "",
				     false, NR_PROFILE_FORMATS);
			status__error("invalid format '%s' for -f: expected %s", optarg, formats);
			return EXIT_USAGE;
		}
		return OPTION_TAKEN;
	case 'o':
		if (!optarg[0]) {
			status__error("empty file name for -o");
			return EXIT_USAGE;
		}
		env->output.path = optarg;
		if (!output_pattern__valid(optarg)) {
			status__error("invalid -o name '%s': %% is followed by p (PID), r "
				      "(rank), h (host name) or %%",
				      optarg);
			return EXIT_USAGE;
		}
		return OPTION_TAKEN;
	case OPT_LINES:
		env->output.python_lines = true;
		return OPTION_TAKEN;
	case OPT_INVERTED:
		env->output.inverted = true;
		return OPTION_TAKEN;
	case OPT_VIEW:
		if (parse_view(optarg, env)) {
			status__error("invalid view '%s' for --view: expected cpu, gpu, all, "
				      "memory-peak, memory-leaks, memory-alloc or nccl",
				      optarg);
			return EXIT_USAGE;
		}
		return OPTION_TAKEN;
	}
	return OPTION_OF_OTHER_GROUP;
}

/* -v, -h and --version, which every command has. */
static int parse_common_option(int opt, struct profile_env *env)
{
	switch (opt) {
	case 'v':
		status__set_level(STATUS_VERBOSE);
		return OPTION_TAKEN;
	case 'h':
		usage(env->mode, stdout);
		return EXIT_OK;
	case OPT_VERSION:
		printf("llmprof %s\n", LLMPROF_VERSION);
		return EXIT_OK;
	}
	return OPTION_OF_OTHER_GROUP;
}

static int (*const option_groups[])(int opt, struct profile_env *env) = {
    parse_target_option, parse_sampling_option, parse_family_option,
    parse_output_option, parse_common_option,
};

static void set_defaults(struct profile_env *env)
{
	env->recording.sampling.frequency = 99;
	env->recording.sampling.off_cpu_min_ns = DEFAULT_OFF_CPU_MIN_US * 1000ULL;
	env->recording.sampling.launch_stack_rate = DEFAULT_LAUNCH_STACK_RATE;
	env->recording.sampling.kernel_stacks = true;
	env->recording.sampling.python = true;
	env->output.format = FORMAT_FOLDED;
	env->recording.families.gpu = true;
	env->recording.families.nccl = true;
}

static int parse_options(int argc, char **argv, struct profile_env *env)
{
	int opt;

	set_defaults(env);
	/* '+': stop at the first non-option, so the command's own options are
	 * not taken for ours. */
	while ((opt = getopt_long(argc, argv,
				  env->mode == MODE_ATTACH ? "+p:Cd:F:f:o:vh" : "+Cd:F:f:o:vh",
				  long_options, NULL)) != -1) {
		int status = OPTION_OF_OTHER_GROUP;

		for (size_t i = 0; i < sizeof(option_groups) / sizeof(option_groups[0]) &&
				   status == OPTION_OF_OTHER_GROUP;
		     i++)
			status = option_groups[i](opt, env);
		if (status == OPTION_OF_OTHER_GROUP) {
			fprintf(stderr, "Try 'llmprof %s --help'.\n", argv[0]);
			return EXIT_USAGE;
		}
		if (status != OPTION_TAKEN)
			return status;
	}
	return check_options(argc, argv, env, env->view_given);
}

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
}

static void install_signal_handlers(void)
{
	struct sigaction action = {.sa_handler = on_signal};

	sigemptyset(&action.sa_mask);
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
	/* A closed pipe on stdout is reported as a write error, not a kill. */
	signal(SIGPIPE, SIG_IGN);
}

/*
 * A profile that could not be written where it was asked for is the result
 * of a whole run, often one that cannot be repeated: it is kept in $TMPDIR
 * (else /tmp) as llmprof-PID-YYYYmmdd-HHMMSS.folded (or .speedscope.json).
 */
static void keep_profile(const struct profile_env *env, pid_t pid, const struct profile *profile)
{
	const char *dir = getenv("TMPDIR");
	struct output_file kept;
	char path[PATH_MAX], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int err;

	if (!dir || !dir[0])
		dir = "/tmp";
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(path, sizeof(path), "%s/llmprof-%d-%s.%s", dir, pid, stamp,
		 format__get(env->output.format)->extension);
	err = output_file__open(&kept, path);
	if (!err)
		err = output_file__commit(
		    &kept, output__write_with(profile, env->output.format,
					      &(struct writer_options){
						  .view = env->output.view,
						  .python_lines = env->output.python_lines,
					      },
					      kept.stream));
	if (err)
		status__error("cannot keep the profile in %s either: %s", path, strerror(-err));
	else
		status__warn("the profile is kept in %s", path);
}

/*
 * Opens where the profile goes, before the recording starts, so that a
 * path that cannot be written ends the run at once.  A name with %p etc. is
 * named per process at the end: only its directory is checked now.
 */
static int open_output(struct profile_env *env, pid_t pid, struct output_file *output,
		       char *default_path, size_t size)
{
	int err;

	if (!env->output.path && isatty(STDOUT_FILENO)) {
		/* As perf and py-spy do: a profile does not scroll past on a
		 * terminal. */
		if (progress__default_output(pid, env->output.format, default_path, size)) {
			status__error("cannot name the output file");
			return -ENAMETOOLONG;
		}
		env->output.path = default_path;
	}
	if (output_pattern__is_pattern(env->output.path)) {
		char first[PATH_MAX];

		err = output_pattern__expand(env->output.path, pid, 0, first, sizeof(first));
		if (!err)
			err = output_file__open(output, first);
		output_file__abort(output);
	} else {
		err = output_file__open(output, env->output.path);
	}
	if (err)
		status__error("cannot write '%s': %s", env->output.path, strerror(-err));
	return err;
}

/* Where the summary's findings can be seen again with their evidence: the
 * written file where its format keeps the timeline they are measured on
 * and llmprof reads it back; otherwise the format that does. */
static void findings_evidence(const struct profile_env *env, char *buf, size_t size)
{
	const struct format *format = format__get(env->output.format);
	const char *path = env->output.path;

	if (env->output.format == FORMAT_HTML)
		snprintf(buf, size, "the page holds their evidence");
	else if (!(format->flags & FORMAT_TIMELINE) || !format->read)
		snprintf(buf, size,
			 "measured on the recording's timeline, which -f %s does not keep: "
			 "-f speedscope does, for llmprof report --findings",
			 format->name);
	else if (path && strcmp(path, "-") && !strchr(path, '%'))
		snprintf(buf, size, "llmprof report --findings %s for the evidence", path);
	else
		snprintf(buf, size, "llmprof report --findings for the evidence");
}

/* The profile (or the family's view asked for) to its file; kept in
 * $TMPDIR when it cannot be.  The HTML page holds the family's view beside
 * the recording's. */
static int write_profile(struct profile_env *env, pid_t pid, struct output_file *output,
			 const struct profile *written, bool whole, const struct profile *recorded)
{
	struct writer_options options = {
	    .view = whole ? VIEW_ALL : env->output.view,
	    .python_lines = env->output.python_lines,
	};
	int err;

	if (output_pattern__is_pattern(env->output.path)) {
		options.view = env->output.view;
		err =
		    output_pattern__write(env->output.path, written, env->output.format, &options);
		if (err) {
			keep_profile(env, pid, written);
			return err;
		}
		return 0;
	}
	if (env->output.format == FORMAT_HTML && whole)
		err = html_page__write_recording(recorded, written, env->recording.families.view,
						 output->stream);
	else
		err = output__write_with(written, env->output.format, &options, output->stream);
	err = output_file__commit(output, err);
	if (err) {
		status__error("cannot write the profile%s%s: %s", env->output.path ? " to " : "",
			      env->output.path ? env->output.path : "", strerror(-err));
		keep_profile(env, pid, written);
	}
	return err;
}

static int run_profile(struct profile_env *env)
{
	struct output_file output = {0};
	struct progress progress = {0};
	char default_path[PATH_MAX], evidence[PATH_MAX + 64];
	struct recording *recording = NULL;
	struct recording_result result;
	long long cpu_start, cpu_end;
	const struct profile *written;
	int status = EXIT_RUNTIME;
	pid_t pid;

	install_signal_handlers();
	if (privilege__check_profile(env->recording.sampling.mode != SESSION_MODE_CPU,
				     env->recording.families.gpu ||
					 env->recording.families.gpu_memory ||
					 env->recording.families.nccl,
				     env->recording.families.gpu && env->mode == MODE_ATTACH))
		return EXIT_RUNTIME;
	if (progress__wanted()) {
		env->recording.sampling.tick = progress__tick;
		env->recording.sampling.tick_ctx = &progress;
	}
	if (recording__open(&recording, &env->recording))
		return EXIT_RUNTIME;
	pid = recording__pid(recording);
	if (open_output(env, pid, &output, default_path, sizeof(default_path)) ||
	    recording__start(recording))
		goto cleanup;
	progress.gpu = recording__gpu_capture(recording);
	cpu_start = process_cpu_ticks(pid);
	if (recording__run(recording, &stop_requested))
		goto cleanup;
	cpu_end = process_cpu_ticks(pid);
	if (recording__finish(recording, &result))
		goto cleanup;
	written = result.view ? result.view : result.profile;
	/* pprof and speedscope hold every view: the written one first (pprof's
	 * default, speedscope's first profiles). */
	if (write_profile(env, pid, &output, result.all_values ? result.all_values : written,
			  result.view, result.profile))
		goto cleanup;
	if (!result.view) {
		summary__print(result.profile, pid, env->output.path, env->output.format);
		/* Off-CPU waits alone take no CPU samples, and the governor
		 * takes fewer on purpose (and says so). */
		if (cpu_start >= 0 && cpu_end >= cpu_start &&
		    env->recording.sampling.mode != SESSION_MODE_OFF_CPU &&
		    !(env->recording.sampling.max_overhead > 0))
			check_delivered_rate(result.profile, env->recording.sampling.frequency,
					     cpu_end - cpu_start);
	}
	recording__print_summary(recording);
	/* A failure to analyse loses no data: the profile is written. */
	findings_evidence(env, evidence, sizeof(evidence));
	if (findings__print_top(written, SUMMARY_TOP_FINDINGS, evidence))
		status__warn("not enough memory to look for findings");
	status = EXIT_OK;
cleanup:
	if (status != EXIT_OK)
		output_file__abort(&output);
	recording__close(recording);
	return status;
}

static int do_profile(enum profile_mode mode, int argc, char **argv)
{
	struct profile_env env = {.mode = mode};
	int status = parse_options(argc, argv, &env);

	if (status >= 0)
		return status;
	return run_profile(&env);
}

int do_attach(int argc, char **argv)
{
	return do_profile(MODE_ATTACH, argc, argv);
}

int do_record(int argc, char **argv)
{
	return do_profile(MODE_RECORD, argc, argv);
}
