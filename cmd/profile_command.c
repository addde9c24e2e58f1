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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "output_pattern.h"
#include "findings/findings.h"
#include "gpu/gpu_capture.h"
#include "gpu/gpu_memory.h"
#include "gpu/nccl_probe.h"
#include "profile/output.h"
#include "privilege.h"
#include "progress.h"
#include "run_as.h"
#include "status.h"
#include "sampling/proc_files.h"
#include "sampling/session.h"
#include "profile/summary.h"
#include "sampling/unwinder.h"

enum profile_mode {
	MODE_ATTACH,
	MODE_RECORD,
};

#define MAX_PIDS 256

struct profile_env {
	enum profile_mode mode;
	struct session_options session;
	enum output_format format;
	enum output_view view;
	bool gpu;
	bool gpu_memory;      /* --gpu-memory */
	bool memory_view_set; /* --view memory-*: the memory profile is written */
	enum gpu_memory_view memory_view;
	bool nccl;	/* NCCL probes; --no-nccl turns them off */
	bool nccl_view; /* --view nccl: the bytes profile is written */
	const char *output_path;
	char **command;		   /* record: argv of the command */
	pid_t more_pids[MAX_PIDS]; /* attach -p A,B,...: all but the first */
	bool no_children;
	bool python_lines; /* --lines */
	struct run_as *run_as; /* record --run-as: the command's user */
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
    {"unwind", required_argument, NULL, OPT_UNWIND},
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
	if (mode == MODE_ATTACH)
		fprintf(out,
			"Usage: llmprof attach -p PID [OPTIONS]\n\n"
			"Profile a running process and all its threads.\n\n"
			"  -p, --pid PID[,PID...] the processes to profile\n"
			"  -C, --children         their descendants too, those running and those\n"
			"                         started later\n");
	else
		fprintf(out,
			"Usage: llmprof record [OPTIONS] -- COMMAND [ARGS...]\n\n"
			"Run COMMAND and profile it, and every process it starts, until it\n"
			"exits.\n\n"
			"  -C, --children         follow the processes COMMAND starts (default)\n"
			"      --no-children      COMMAND's own process only\n"
			"      --run-as USER      run COMMAND as USER (a name or a uid): its uid,\n"
			"                         gid, groups, HOME and USER; llmprof keeps its own\n"
			"                         privileges to profile\n");
	fprintf(
	    out,
	    "  -d, --duration SECONDS stop after SECONDS (default: until Ctrl-C or the\n"
	    "                         target exits)\n"
	    "  -F, --frequency HZ     samples per second per CPU, at most 10000 (default 99)\n"
	    "      --sampling MODE    random (intervals drawn around 1/HZ, so periodic\n"
	    "                         work cannot keep in step; default) or fixed (every\n"
	    "                         1/HZ exactly, as perf does)\n"
	    "  -f, --format FORMAT    folded, speedscope, pprof, chrome (a Chrome/Perfetto\n"
	    "                         trace) or svg (a flame graph); default folded\n"
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
	    "      --unwind MODE[,BYTES]\n"
	    "                         user stacks by auto or ehframe (in BPF, by each\n"
	    "                         binary's .eh_frame; default), fp (frame pointers),\n"
	    "                         dwarf (CFI over a BYTES copy of the stack, default\n"
	    "                         16384, completed by frame pointers),\n"
	    "                         or compare (ehframe, each stack checked against\n"
	    "                         dwarf's on the same sample; -v says how many agree)\n"
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
	env->session.pid = 0;
	for (token = strtok_r(copy, ",", &save); token; token = strtok_r(NULL, ",", &save)) {
		long value;

		if (parse_long(token, 1, 0x3fffffff, &value) || n > MAX_PIDS) {
			err = -EINVAL;
			break;
		}
		if (!n)
			env->session.pid = value;
		else
			env->more_pids[n - 1] = value;
		n++;
	}
	if (!n || text[0] == ',' || text[strlen(text) - 1] == ',' || strstr(text, ",,"))
		err = -EINVAL;
	env->session.more_pids = env->more_pids;
	env->session.nr_more_pids = n ? n - 1 : 0;
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
	char path[64], text[1024], *paren;
	unsigned long long user, system;
	long long ticks = -1;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	paren = strrchr(text, ')');
	if (paren && sscanf(paren + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			    &user, &system) == 2)
		ticks = (long long)(user + system);
	return ticks;
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
	report__warn("only %llu samples for the target's %.2f s of CPU time, where %u Hz "
		     "would give about %.0f: the kernel throttled sampling "
		     "(kernel.perf_event_max_sample_rate is %ld); the profile's shape holds, "
		     "its counts are low",
		     (unsigned long long)(profile->samples_taken + profile->samples_lost), cpu_s,
		     frequency, due, kernel_max_sample_rate());
}

static int parse_options(int argc, char **argv, struct profile_env *env)
{
	bool view_given = false, inverted = false;
	long value;
	int opt;

	env->session.frequency = 99;
	env->session.off_cpu_min_ns = DEFAULT_OFF_CPU_MIN_US * 1000ULL;
	env->session.kernel_stacks = true;
	env->session.python = true;
	env->format = FORMAT_FOLDED;
	env->gpu = true;
	env->nccl = true;
	/* '+': stop at the first non-option, so the command's own options are
	 * not taken for ours. */
	while ((opt = getopt_long(argc, argv,
				  env->mode == MODE_ATTACH ? "+p:Cd:F:f:o:vh" : "+Cd:F:f:o:vh",
				  long_options, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (env->mode != MODE_ATTACH) {
				report__error("-p is for 'llmprof attach'; record runs a command");
				return EXIT_USAGE;
			}
			if (parse_pids(optarg, env)) {
				report__error("invalid PID list '%s' for -p: expected positive "
					      "numbers separated by commas (at most %d)",
					      optarg, MAX_PIDS);
				return EXIT_USAGE;
			}
			break;
		case 'd':
			if (parse_seconds(optarg, &env->session.duration)) {
				report__error("invalid duration '%s' for -d: expected a positive "
					      "number of seconds, at most %d (a year)",
					      optarg, MAX_DURATION_S);
				return EXIT_USAGE;
			}
			break;
		case 'F': {
			long limit = frequency_limit();

			if (parse_long(optarg, 1, limit, &value)) {
				report__error("invalid frequency '%s' for -F: expected 1 to %ld Hz "
					      "(higher rates stall the machine; "
					      "kernel.perf_event_max_sample_rate is %ld)",
					      optarg, limit, kernel_max_sample_rate());
				return EXIT_USAGE;
			}
			env->session.frequency = value;
			break;
		case OPT_SAMPLING:
			if (!strcmp(optarg, "random")) {
				env->session.fixed_intervals = false;
			} else if (!strcmp(optarg, "fixed")) {
				env->session.fixed_intervals = true;
			} else {
				report__error("invalid sampling '%s' for --sampling: expected "
					      "random or fixed",
					      optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case 'f':
			if (output__parse_format(optarg, &env->format)) {
				report__error("invalid format '%s' for -f: expected folded, "
					      "speedscope, pprof, chrome or svg",
					      optarg);
				return EXIT_USAGE;
			}
			break;
		case 'o':
			if (!optarg[0]) {
				report__error("empty file name for -o");
				return EXIT_USAGE;
			}
			env->output_path = optarg;
			if (!output_pattern__valid(optarg)) {
				report__error("invalid -o name '%s': %% is followed by p (PID), r "
					      "(rank), h (host name) or %%",
					      optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_NO_KERNEL:
			env->session.kernel_stacks = false;
			break;
		case OPT_PER_THREAD:
			env->session.per_thread = true;
			break;
		case OPT_NO_PYTHON:
			env->session.python = false;
			break;
		case OPT_LINES:
			env->python_lines = true;
			break;
		case OPT_RUN_AS: {
			static struct run_as user;
			int err;

			if (env->mode != MODE_RECORD) {
				report__error("--run-as is for 'llmprof record'; attach profiles "
					      "a process as it runs");
				return EXIT_USAGE;
			}
			err = run_as__resolve(optarg, &user);
			if (err) {
				report__error("invalid user '%s' for --run-as: %s", optarg,
					      err == -ENOMEM ? strerror(ENOMEM) : "no such user");
				return EXIT_USAGE;
			}
			env->run_as = &user;
			break;
		}
		case OPT_INVERTED:
			inverted = true;
			break;
		case OPT_VIEW:
			view_given = true;
			env->memory_view_set = false;
			env->nccl_view = false;
			if (!strcmp(optarg, "nccl")) {
				env->nccl_view = true;
			} else if (!strcmp(optarg, "all")) {
				env->view = VIEW_ALL;
			} else if (!strcmp(optarg, "cpu")) {
				env->view = VIEW_CPU;
			} else if (!strcmp(optarg, "gpu")) {
				env->view = VIEW_GPU;
			} else if (!gpu_memory__parse_view(optarg, &env->memory_view)) {
				env->gpu_memory = true;
				env->memory_view_set = true;
				break;
			} else {
				report__error(
				    "invalid view '%s' for --view: expected cpu, gpu, all, "
				    "memory-peak, memory-leaks, memory-alloc or nccl",
				    optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_NO_GPU:
			env->gpu = false;
			break;
		case OPT_GPU_MEMORY:
			env->gpu_memory = true;
			break;
		case OPT_NO_NCCL:
			env->nccl = false;
			break;
		case OPT_UNWIND:
			if (parse_unwind(optarg, &env->session)) {
				report__error(
				    "invalid unwind mode '%s' for --unwind: expected auto, "
				    "ehframe, fp, dwarf or compare, the last two optionally "
				    "with ,BYTES of stack (%d to %d)",
				    optarg, MIN_STACK_COPY, MAX_STACK_COPY);
				return EXIT_USAGE;
			}
			break;
		case OPT_MODE:
			if (!strcmp(optarg, "cpu")) {
				env->session.mode = SESSION_MODE_CPU;
			} else if (!strcmp(optarg, "off-cpu")) {
				env->session.mode = SESSION_MODE_OFF_CPU;
			} else if (!strcmp(optarg, "wall")) {
				env->session.mode = SESSION_MODE_WALL;
			} else {
				report__error("invalid mode '%s' for --mode: expected cpu, off-cpu "
					      "or wall",
					      optarg);
				return EXIT_USAGE;
			}
			break;
		case 'C':
			env->session.children = true;
			env->no_children = false;
			break;
		case OPT_NO_CHILDREN:
			env->session.children = false;
			env->no_children = true;
			break;
		case OPT_PER_PROCESS:
			env->session.per_process = true;
			break;
		case OPT_OFF_CPU:
			env->session.mode = SESSION_MODE_OFF_CPU;
			break;
		case OPT_OFF_CPU_MIN:
			if (parse_long(optarg, 0, 10000000, &value)) {
				report__error("invalid time '%s' for --off-cpu-min: expected 0 to "
					      "10000000 microseconds",
					      optarg);
				return EXIT_USAGE;
			}
			env->session.off_cpu_min_ns = value * 1000ULL;
			break;
		case 'v':
			report__set_level(REPORT_VERBOSE);
			break;
		case 'h':
			usage(env->mode, stdout);
			return EXIT_OK;
		case OPT_VERSION:
			printf("llmprof %s\n", LLMPROF_VERSION);
			return EXIT_OK;
		default:
			fprintf(stderr, "Try 'llmprof %s --help'.\n", argv[0]);
			return EXIT_USAGE;
		}
	}
	if (inverted && env->format != FORMAT_SVG) {
		report__error("--inverted is for -f svg");
		return EXIT_USAGE;
	}
	if (inverted)
		env->format = FORMAT_SVG_INVERTED;
	/* --gpu-memory writes the peak unless a view was asked for. */
	if (env->gpu_memory && !view_given)
		env->memory_view_set = true;
	env->session.bursts = env->gpu_memory;
	if (env->format == FORMAT_CHROME && (env->memory_view_set || env->nccl_view)) {
		report__error("-f chrome writes timelines, which the memory and nccl views "
			      "lack: add --view cpu, gpu or all");
		return EXIT_USAGE;
	}
	if (env->nccl_view && !env->nccl) {
		report__error("--view nccl needs the NCCL probes: drop --no-nccl");
		return EXIT_USAGE;
	}
	if (env->mode == MODE_ATTACH) {
		env->session.warm_up = true;
		if (optind < argc) {
			report__error("unexpected argument '%s' (attach takes -p PID)",
				      argv[optind]);
			return EXIT_USAGE;
		}
		if (!env->session.pid) {
			report__error("no process given: use -p PID");
			return EXIT_USAGE;
		}
	} else {
		if (optind >= argc) {
			report__error("no command to record: use 'llmprof record [OPTIONS] -- "
				      "COMMAND [ARGS...]'");
			return EXIT_USAGE;
		}
		env->command = argv + optind;
		/* As perf record does: the whole tree the command starts. */
		env->session.children = !env->no_children;
	}
	return -1;
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

/* The started command waits on a pipe until the session is attached, so its
 * first instruction is profiled. */
struct child {
	pid_t pid;
	int go_fd;     /* write a byte to let it exec */
	int status_fd; /* carries errno if exec fails; EOF on success */
};

static int start_child(char **command, const struct run_as *run_as, struct child *child)
{
	/* Built before the fork: the child only drops privileges and execs. */
	char **envp = run_as ? run_as__environment(run_as) : NULL;
	int go[2], status[2], dumpable;
	pid_t pid;

	if (run_as && !envp)
		return -ENOMEM;
	/* An llmprof with file capabilities is not dumpable, nor would its
	 * fork be: the fork's /proc files would be root's, and the loader's
	 * probe and the maps scan refused until the exec.  The fork is made
	 * dumpable from its start; the capabilities it holds until the exec
	 * still keep the user from ptracing it. */
	dumpable = prctl(PR_GET_DUMPABLE);
	if (pipe2(go, O_CLOEXEC) || pipe2(status, O_CLOEXEC)) {
		pid = -1;
	} else {
		prctl(PR_SET_DUMPABLE, 1);
		pid = fork();
		if (pid)
			prctl(PR_SET_DUMPABLE, dumpable);
	}
	if (pid < 0) {
		pid = -errno;
		run_as__free_environment(envp);
		return pid;
	}
	if (pid == 0) {
		char byte;
		int err;

		close(go[1]);
		close(status[0]);
		signal(SIGPIPE, SIG_DFL);
		if (read(go[0], &byte, 1) != 1)
			_exit(127);
		err = run_as ? -run_as__enter(run_as) : 0;
		if (!err) {
			if (envp)
				execvpe(command[0], command, envp);
			else
				execvp(command[0], command);
			err = errno;
		}
		if (write(status[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	run_as__free_environment(envp);
	close(go[0]);
	close(status[1]);
	child->pid = pid;
	child->go_fd = go[1];
	child->status_fd = status[0];
	return 0;
}

/* Lets the child exec; returns 0 or the exec errno as -errno. */
static int release_child(struct child *child)
{
	ssize_t n;
	int err = 0;

	if (write(child->go_fd, "g", 1) != 1)
		return -errno;
	close(child->go_fd);
	child->go_fd = -1;
	do
		n = read(child->status_fd, &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(child->status_fd);
	child->status_fd = -1;
	return n == sizeof(err) ? -err : 0;
}

static void reap_child(struct child *child, bool stop_it)
{
	int status;

	if (child->go_fd >= 0)
		close(child->go_fd); /* unreleased: it exits at once */
	if (child->status_fd >= 0)
		close(child->status_fd);
	child->go_fd = child->status_fd = -1;
	if (child->pid <= 0)
		return;
	if (stop_it && waitpid(child->pid, &status, WNOHANG) == 0)
		kill(child->pid, SIGTERM);
	while (waitpid(child->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status))
		report__info("command exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		report__info("command was killed by signal %d (%s)", WTERMSIG(status),
			     strsignal(WTERMSIG(status)));
	child->pid = 0;
}

static const char *describe_bpf_error(int err)
{
	switch (-err) {
	case EPERM:
	case EACCES:
		return "permission denied (run as root, or with CAP_BPF and CAP_PERFMON)";
	default:
		return strerror(-err);
	}
}

/* Who may connect to the GPU socket besides root: the target's owner. */
static uid_t target_uid(const struct profile_env *env)
{
	char path[64];
	struct stat st;

	if (env->mode == MODE_RECORD)
		return env->run_as ? env->run_as->uid : getuid();
	snprintf(path, sizeof(path), "/proc/%d", env->session.pid);
	return stat(path, &st) ? (uid_t)-1 : st.st_uid;
}

/*
 * A profile that could not be written where it was asked for is the result
 * of a whole run, often one that cannot be repeated: it is kept in $TMPDIR
 * (else /tmp) as llmprof-PID-YYYYmmdd-HHMMSS.folded (or .speedscope.json).
 */
static void keep_profile(const struct profile_env *env, const struct profile *profile)
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
	snprintf(path, sizeof(path), "%s/llmprof-%d-%s.%s", dir, env->session.pid, stamp,
		 output_format__extension(env->format));
	err = output_file__open(&kept, path);
	if (!err)
		err = output_file__commit(
		    &kept, output__write(profile, env->format, env->view, kept.stream));
	if (err)
		report__error("cannot keep the profile in %s either: %s", path, strerror(-err));
	else
		report__warn("the profile is kept in %s", path);
}

/*
 * What attach can tell before it starts: a zombie (every thread gone) and a
 * kernel thread give nothing to profile (1, with the reason); a stopped
 * process is profiled, with a warning that it takes no samples until it
 * continues.
 */
static int check_attach_target(pid_t pid)
{
	char path[64], text[1024], dir[64], state, *paren;
	unsigned long flags = 0;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f) {
		report__error("no process with PID %d", pid);
		return EXIT_RUNTIME;
	}
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	paren = strrchr(text, ')');
	if (!paren || sscanf(paren + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return 0;
	if (flags & 0x00200000) { /* PF_KTHREAD */
		report__error("process %d is a kernel thread: only user processes can be profiled",
			      pid);
		return EXIT_RUNTIME;
	}
	if ((state == 'Z' || state == 'X') && proc_files__dir(pid, dir, sizeof(dir))) {
		report__error("process %d is a zombie: it has exited and waits for its parent "
			      "to reap it",
			      pid);
		return EXIT_RUNTIME;
	}
	if (state == 'T')
		report__warn("process %d is stopped (SIGSTOP); no samples until it continues", pid);
	else if (state == 't')
		report__warn("process %d is stopped by a debugger; no samples until it continues",
			     pid);
	return 0;
}

static int run_profile(struct profile_env *env)
{
	struct output_file output = {0};
	struct progress progress = {0};
	char default_path[PATH_MAX];
	struct child child = {.go_fd = -1, .status_fd = -1};
	struct session *session = NULL;
	struct profile *profile = NULL, *memory_profile = NULL;
	const struct profile *written;
	struct gpu_capture *gpu = NULL;
	struct gpu_memory *memory = NULL;
	struct nccl_probe *nccl = NULL;
	struct profile *nccl_profile = NULL;
	enum session_end end = SESSION_END_DURATION;
	long long cpu_start, cpu_end = -1;
	int status = EXIT_RUNTIME, err;

	install_signal_handlers();
	if (privilege__check_profile(env->session.mode != SESSION_MODE_CPU,
				     env->gpu || env->gpu_memory || env->nccl,
				     env->gpu && env->mode == MODE_ATTACH))
		return EXIT_RUNTIME;
	if (env->mode == MODE_ATTACH && kill(env->session.pid, 0) && errno == ESRCH) {
		report__error("no process with PID %d", env->session.pid);
		return EXIT_RUNTIME;
	}
	if (env->mode == MODE_ATTACH) {
		status = check_attach_target(env->session.pid);
		if (status)
			return status;
		status = EXIT_RUNTIME;
	}
	if (env->gpu) {
		err = gpu_capture__open(&gpu, target_uid(env));
		if (err) {
			if (err != -ENOTSUP)
				report__warn("GPU capture unavailable: %s; CPU only",
					     strerror(-err));
			gpu = NULL;
		} else if (env->mode == MODE_RECORD && gpu_capture__prepare_record(gpu)) {
			gpu_capture__close(gpu);
			gpu = NULL;
		}
	}
	if (env->mode == MODE_RECORD) {
		err = start_child(env->command, env->run_as, &child);
		if (err) {
			report__error("cannot start '%s': %s", env->command[0], strerror(-err));
			goto cleanup;
		}
		env->session.pid = child.pid;
	}
	if (!env->output_path && isatty(STDOUT_FILENO)) {
		/* As perf and py-spy do: a profile does not scroll past on a
		 * terminal. */
		if (progress__default_output(env->session.pid, env->format, default_path,
					     sizeof(default_path))) {
			report__error("cannot name the output file");
			goto cleanup;
		}
		env->output_path = default_path;
	}
	if (output_pattern__is_pattern(env->output_path)) {
		/* Named per process at the end; check the directory now. */
		char first[PATH_MAX];

		err = output_pattern__expand(env->output_path, env->session.pid, 0, first,
					     sizeof(first));
		if (!err)
			err = output_file__open(&output, first);
		output_file__abort(&output);
	} else {
		err = output_file__open(&output, env->output_path);
	}
	if (err) {
		report__error("cannot write '%s': %s", env->output_path, strerror(-err));
		goto cleanup;
	}
	if (progress__wanted()) {
		env->session.tick = progress__tick;
		env->session.tick_ctx = &progress;
	}
	err = session__open(&session, &env->session);
	if (err) {
		report__error("cannot load the BPF sampling program: %s", describe_bpf_error(err));
		goto cleanup;
	}
	if (env->gpu_memory) {
		err =
		    gpu_memory__open(&memory, session, env->session.pid, env->mode == MODE_RECORD);
		if (err) {
			report__error("cannot load the GPU memory probes: %s",
				      describe_bpf_error(err));
			goto cleanup;
		}
	}
	if (env->nccl) {
		err = nccl_probe__open(&nccl, session, env->session.pid, env->mode == MODE_RECORD);
		if (err) {
			report__warn("NCCL probes unavailable: %s", describe_bpf_error(err));
			nccl = NULL;
		}
	}
	if (gpu && session__add_poll_fd(session, gpu_capture__poll_fd(gpu),
					gpu_capture__on_readable, gpu)) {
		gpu_capture__close(gpu);
		gpu = NULL;
	}
	err = session__start(session);
	if (err) {
		if (err == -ESRCH)
			report__error("process %d exited before it could be profiled",
				      env->session.pid);
		else
			report__error("cannot attach to the CPU clock: %s",
				      describe_bpf_error(err));
		goto cleanup;
	}
	if (memory) {
		err = gpu_memory__attach(memory, env->mode == MODE_ATTACH);
		if (err) {
			report__error("cannot probe the CUDA libraries of process %d: %s",
				      env->session.pid, strerror(-err));
			goto cleanup;
		}
	}
	if (nccl && nccl_probe__attach(nccl)) {
		report__warn("cannot probe libnccl in process %d; no NCCL calls", env->session.pid);
		nccl_probe__close(nccl);
		nccl = NULL;
	}
	if (gpu && env->mode == MODE_RECORD && gpu_capture__attach_record_probe(gpu, session))
		report__warn("GPU launch stacks unavailable; kernels are kept unattributed");
	if (gpu && env->mode == MODE_ATTACH) {
		/* Every CUDA process of the selection gets the agent; each one's
		 * launches are told apart by its process. */
		pid_t pids[MAX_PIDS];
		size_t n = session__processes(session, pids, MAX_PIDS);

		for (size_t i = 0; i < n; i++)
			gpu_capture__inject(gpu, session, pids[i]);
	}
	if (env->mode == MODE_RECORD) {
		err = release_child(&child);
		if (err) {
			report__error("cannot run '%s': %s", env->command[0], strerror(-err));
			goto cleanup;
		}
		report__info("recording '%s' (PID %d)", env->command[0], child.pid);
	} else {
		report__info("profiling PID %d at %u Hz%s", env->session.pid,
			     env->session.frequency,
			     env->session.duration > 0 ? "" : "; Ctrl-C to stop");
	}
	progress.gpu = gpu;
	cpu_start = process_cpu_ticks(env->session.pid);
	err = session__run(session, &stop_requested, &end);
	if (err) {
		report__error("sampling failed: %s", strerror(-err));
		goto cleanup;
	}
	report__progress_clear();
	cpu_end = process_cpu_ticks(env->session.pid);
	if (end == SESSION_END_TARGET_EXITED && env->mode == MODE_ATTACH)
		report__info("process %d exited; the profile ends there", env->session.pid);
	if (gpu)
		gpu_capture__stop(gpu);
	gpu_memory__detach(memory);
	nccl_probe__detach(nccl);
	err = session__finish(session, &profile);
	if (!err && memory)
		err = gpu_memory__finish(memory, session, profile);
	if (!err && nccl)
		err = nccl_probe__finish(nccl, session, profile);
	if (!err && gpu && nccl)
		gpu_capture__set_join(gpu, nccl_probe__join, nccl);
	if (!err && gpu)
		err = gpu_capture__merge(gpu, session, profile);
	if (!err && nccl)
		err = nccl_probe__facts(nccl, profile);
	if (!err && memory && env->memory_view_set)
		err = gpu_memory__profile(memory, env->memory_view, &memory_profile);
	if (!err && env->nccl_view) {
		if (nccl)
			err = nccl_probe__profile(nccl, &nccl_profile);
		else
			report__warn("no NCCL probes: the NCCL profile is empty");
		if (!err && !nccl_profile) {
			nccl_profile = profile__new();
			err = nccl_profile ? 0 : -ENOMEM;
			if (nccl_profile)
				nccl_profile->unit = UNIT_BYTES;
		}
		if (!err) {
			profile__free(memory_profile);
			memory_profile = nccl_profile;
			nccl_profile = NULL;
		}
	}
	if (err) {
		report__error("cannot build the profile: %s", strerror(-err));
		goto cleanup;
	}
	if (env->mode == MODE_RECORD) {
		/* -d ended the profile, not the command: say why nothing
		 * happens until it exits. */
		if (end == SESSION_END_DURATION && kill(child.pid, 0) == 0)
			report__info("the profile is complete; waiting for '%s' (PID %d) to exit "
				     "(Ctrl-C stops it)",
				     env->command[0], child.pid);
		reap_child(&child, end == SESSION_END_STOPPED);
	}
	if (memory_profile)
		memory_profile->python_lines = env->python_lines;
	profile->python_lines = env->python_lines;
	written = memory_profile ? memory_profile : profile;
	if (output_pattern__is_pattern(env->output_path)) {
		err = output_pattern__write(env->output_path, written, env->format, env->view);
		if (err) {
			keep_profile(env, written);
			goto cleanup;
		}
	} else {
		err = output__write(written, env->format, memory_profile ? VIEW_ALL : env->view,
				    output.stream);
		err = output_file__commit(&output, err);
	}
	if (err) {
		report__error("cannot write the profile%s%s: %s", env->output_path ? " to " : "",
			      env->output_path ? env->output_path : "", strerror(-err));
		keep_profile(env, written);
		goto cleanup;
	}
	if (!memory_profile)
		summary__print(profile, env->session.pid, env->output_path, env->format);
	if (!memory_profile && cpu_start >= 0 && cpu_end >= cpu_start)
		check_delivered_rate(profile, env->session.frequency, cpu_end - cpu_start);
	if (gpu)
		gpu_capture__print_summary(gpu, profile);
	if (memory)
		gpu_memory__print_summary(memory);
	nccl_probe__print_summary(nccl);
	/* A failure to analyse loses no data: the profile is written. */
	if (findings__print_top(written, SUMMARY_TOP_FINDINGS))
		report__warn("not enough memory to look for findings");
	status = EXIT_OK;
cleanup:
	if (status != EXIT_OK)
		output_file__abort(&output);
	gpu_memory__close(memory);
	nccl_probe__close(nccl);
	session__close(session);
	if (env->mode == MODE_RECORD)
		reap_child(&child, true);
	gpu_capture__close(gpu);
	profile__free(profile);
	profile__free(memory_profile);
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
