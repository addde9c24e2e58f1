// SPDX-License-Identifier: GPL-2.0
/*
 * llmprof mcp: a Model Context Protocol server on stdio, so a coding agent
 * can profile a process and act on the result.  JSON-RPC 2.0, one message
 * per line (the MCP stdio transport).  Each tool runs this same binary as a
 * child (attach, record, report, diff) with its standard input and output
 * away from the protocol's, so a failing or crashing profile never takes
 * the server down, and each tool's errors are the command's own one-line
 * messages.  It only profiles the pid or runs the command a request names.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "profile_input.h"
#include "status.h"

/* The protocol versions this server speaks, newest first. */
static const char *const protocol_versions[] = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL,
};

#define JSONRPC_PARSE_ERROR -32700
#define JSONRPC_INVALID_REQUEST -32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS -32602
#define JSONRPC_INTERNAL_ERROR -32603
/* Server errors: the tool ran and failed (a bad pid, a malformed profile). */
#define MCP_TOOL_FAILED -32000

#define MAX_LINE (16 << 20)
#define MAX_REPLY_LINES 60
#define DEFAULT_DURATION 10.0
#define MAX_DURATION 3600.0

struct child_result {
	int status; /* exit status, or 128 + signal */
	char *out;  /* what it wrote to stdout */
	char *err;  /* and to stderr */
};

static void child_result__free(struct child_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

static char *read_all(int fd)
{
	size_t size = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	if (!buf)
		return NULL;
	while ((n = read(fd, buf + size, cap - size - 1)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		size += n;
		if (cap - size < 2) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger)
				break;
			buf = bigger;
			cap *= 2;
		}
	}
	buf[size] = '\0';
	return buf;
}

/* Runs this binary with argv (argv[0] unused), stdin from /dev/null, stdout
 * and stderr into temporary files (a profiled command's own output goes to
 * command_output when set, else is captured too). */
static int run_self(char **argv, const char *command_output, struct child_result *r)
{
	char out_path[] = "/tmp/llmprof-mcp-out.XXXXXX";
	char err_path[] = "/tmp/llmprof-mcp-err.XXXXXX";
	int out_fd = mkostemp(out_path, O_CLOEXEC), err_fd = mkostemp(err_path, O_CLOEXEC);
	int err = 0, wstatus;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (out_fd < 0 || err_fd < 0) {
		err = -errno;
		goto cleanup;
	}
	unlink(out_path);
	unlink(err_path);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto cleanup;
	}
	if (pid == 0) {
		/* Close-on-exec: only the copies on 0, 1 and 2 go on. */
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		int command_fd =
		    command_output
			? open(command_output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
			: out_fd;

		if (null < 0 || command_fd < 0 || dup2(null, 0) < 0 || dup2(command_fd, 1) < 0 ||
		    dup2(err_fd, 2) < 0)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	while (waitpid(pid, &wstatus, 0) < 0) {
		if (errno != EINTR) {
			err = -errno;
			goto cleanup;
		}
	}
	r->status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	lseek(out_fd, 0, SEEK_SET);
	lseek(err_fd, 0, SEEK_SET);
	r->out = read_all(out_fd);
	r->err = read_all(err_fd);
	if (!r->out || !r->err)
		err = -ENOMEM;
cleanup:
	if (out_fd >= 0)
		close(out_fd);
	if (err_fd >= 0)
		close(err_fd);
	return err;
}

/* The child's one-line error ("llmprof: error: ..."), without the prefix. */
static const char *child_error(const struct child_result *r, char *buf, size_t size)
{
	const char *line = r->err ? strstr(r->err, "error: ") : NULL;

	if (!line) {
		snprintf(buf, size, "llmprof exited with status %d", r->status);
		return buf;
	}
	line += strlen("error: ");
	snprintf(buf, size, "%.*s", (int)strcspn(line, "\n"), line);
	return buf;
}

/* stderr of a profile run, as a reply: status lines without their prefix,
 * warnings kept, at most MAX_REPLY_LINES lines. */
static char *summary_text(const char *err, const char *extra)
{
	size_t cap = strlen(err) + (extra ? strlen(extra) : 0) + 64;
	char *text = malloc(cap), *at = text;
	int lines = 0;

	if (!text)
		return NULL;
	for (const char *line = err; *line && lines < MAX_REPLY_LINES;) {
		size_t len = strcspn(line, "\n");

		if (!strncmp(line, "llmprof: ", 9)) {
			line += 9;
			len -= 9;
		}
		memcpy(at, line, len);
		at += len;
		*at++ = '\n';
		lines++;
		line += len;
		if (*line == '\n')
			line++;
	}
	*at = '\0';
	if (extra)
		strcat(at, extra);
	return text;
}

struct request_error {
	int code;
	char message[512];
};

static int fail_request(struct request_error *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_request(struct request_error *e, int code, const char *fmt, ...)
{
	va_list args;

	e->code = code;
	va_start(args, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, args);
	va_end(args);
	return -1;
}

/* Argument access with type checks; a missing optional argument is fine. */
static int get_string(json_t *args, const char *key, bool required, const char **out,
		      struct request_error *e)
{
	json_t *v = json_object_get(args, key);

	*out = NULL;
	if (!v) {
		if (required)
			return fail_request(e, JSONRPC_INVALID_PARAMS, "missing argument '%s'",
					    key);
		return 0;
	}
	if (!json_is_string(v) || !json_string_length(v))
		return fail_request(e, JSONRPC_INVALID_PARAMS, "'%s' must be a non-empty string",
				    key);
	*out = json_string_value(v);
	return 0;
}

static int get_number(json_t *args, const char *key, double min, double max, double *out,
		      struct request_error *e)
{
	json_t *v = json_object_get(args, key);

	if (!v)
		return 0;
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < min ||
	    json_number_value(v) > max)
		return fail_request(e, JSONRPC_INVALID_PARAMS,
				    "'%s' must be a number from %g to %g", key, min, max);
	*out = json_number_value(v);
	return 0;
}

static int get_integer(json_t *args, const char *key, long min, long max, long *out,
		       struct request_error *e)
{
	json_t *v = json_object_get(args, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return fail_request(e, JSONRPC_INVALID_PARAMS,
				    "'%s' must be a whole number from %ld to %ld", key, min, max);
	*out = json_integer_value(v);
	return 0;
}

static int get_bool(json_t *args, const char *key, bool *out, struct request_error *e)
{
	json_t *v = json_object_get(args, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return fail_request(e, JSONRPC_INVALID_PARAMS, "'%s' must be true or false", key);
	*out = json_is_true(v);
	return 0;
}

/* Rejects arguments the tool does not know, so a typo is not ignored. */
static int check_keys(json_t *args, const char *const *known, struct request_error *e)
{
	const char *key;
	json_t *value;

	json_object_foreach(args, key, value)
	{
		size_t i;

		for (i = 0; known[i] && strcmp(known[i], key); i++)
			;
		if (!known[i])
			return fail_request(e, JSONRPC_INVALID_PARAMS, "unknown argument '%s'",
					    key);
	}
	return 0;
}

struct argv_builder {
	char *items[256];
	int n;
	char numbers[8][32];
	int nr_numbers;
};

static void push(struct argv_builder *b, const char *arg)
{
	if (b->n < 255)
		b->items[b->n++] = (char *)arg;
	b->items[b->n] = NULL;
}

static void push_number(struct argv_builder *b, const char *fmt, double value)
{
	char *slot = b->numbers[b->nr_numbers++ % 8];

	snprintf(slot, sizeof(b->numbers[0]), fmt, value);
	push(b, slot);
}

static json_t *text_result(const char *text)
{
	return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError",
			 0);
}

static json_t *tool_profile(json_t *args, struct request_error *e)
{
	static const char *const known[] = {"pid",    "command", "duration", "frequency", "format",
					    "output", "kernel",	 "gpu",	     "python",	  NULL};
	struct argv_builder b = {0};
	double duration = DEFAULT_DURATION;
	long pid = 0, frequency = 0;
	const char *format = NULL, *output = NULL;
	bool kernel = true, gpu = true, python = true;
	char dir[] = "/tmp/llmprof-mcp.XXXXXX", path[PATH_MAX], command_out[PATH_MAX];
	json_t *command = json_object_get(args, "command"), *result = NULL;
	struct child_result r;
	char message[512], extra[2 * PATH_MAX + 128];
	char *text;

	if (check_keys(args, known, e) || get_integer(args, "pid", 1, INT_MAX, &pid, e) ||
	    get_number(args, "duration", 0.01, MAX_DURATION, &duration, e) ||
	    get_integer(args, "frequency", 1, 10000, &frequency, e) ||
	    get_string(args, "format", false, &format, e) ||
	    get_string(args, "output", false, &output, e) || get_bool(args, "kernel", &kernel, e) ||
	    get_bool(args, "gpu", &gpu, e) || get_bool(args, "python", &python, e))
		return NULL;
	if (!pid == !command) {
		fail_request(e, JSONRPC_INVALID_PARAMS, "give either 'pid' or 'command'");
		return NULL;
	}
	if (command && (!json_is_array(command) || !json_array_size(command) ||
			json_array_size(command) > 200)) {
		fail_request(e, JSONRPC_INVALID_PARAMS,
			     "'command' must be an array of 1 to 200 strings");
		return NULL;
	}
	if (format && strcmp(format, "folded") && strcmp(format, "speedscope")) {
		fail_request(e, JSONRPC_INVALID_PARAMS, "'format' must be folded or speedscope");
		return NULL;
	}
	if (pid && kill(pid, 0) && errno == ESRCH) {
		fail_request(e, JSONRPC_INVALID_PARAMS, "no process with PID %ld", pid);
		return NULL;
	}
	if (!output) {
		if (!mkdtemp(dir)) {
			fail_request(e, JSONRPC_INTERNAL_ERROR, "cannot create a directory: %s",
				     strerror(errno));
			return NULL;
		}
		snprintf(path, sizeof(path), "%s/profile.%s", dir,
			 format && !strcmp(format, "speedscope") ? "speedscope.json" : "folded");
		output = path;
		snprintf(command_out, sizeof(command_out), "%s/command.out", dir);
	} else {
		snprintf(command_out, sizeof(command_out), "%s.command.out", output);
	}

	push(&b, "llmprof");
	push(&b, pid ? "attach" : "record");
	if (pid) {
		push(&b, "-p");
		push_number(&b, "%.0f", pid);
	}
	push(&b, "-d");
	push_number(&b, "%.3f", duration);
	if (frequency) {
		push(&b, "-F");
		push_number(&b, "%.0f", frequency);
	}
	if (format) {
		push(&b, "-f");
		push(&b, format);
	}
	push(&b, "-o");
	push(&b, output);
	if (!kernel)
		push(&b, "--no-kernel");
	if (!gpu)
		push(&b, "--no-gpu");
	if (!python)
		push(&b, "--no-python");
	if (command) {
		push(&b, "--");
		for (size_t i = 0; i < json_array_size(command); i++) {
			json_t *word = json_array_get(command, i);

			if (!json_is_string(word)) {
				fail_request(e, JSONRPC_INVALID_PARAMS,
					     "'command' must be an array of strings");
				return NULL;
			}
			push(&b, json_string_value(word));
		}
	}
	if (run_self(b.items, command ? command_out : NULL, &r)) {
		fail_request(e, JSONRPC_INTERNAL_ERROR, "cannot run llmprof: %s", strerror(errno));
		return NULL;
	}
	if (r.status) {
		fail_request(e, MCP_TOOL_FAILED, "%s", child_error(&r, message, sizeof(message)));
		goto cleanup;
	}
	snprintf(extra, sizeof(extra), "profile: %s\n%s%s%s", output,
		 command ? "command output: " : "", command ? command_out : "",
		 command ? "\n" : "");
	text = summary_text(r.err, extra);
	if (!text) {
		fail_request(e, JSONRPC_INTERNAL_ERROR, "out of memory");
		goto cleanup;
	}
	result = text_result(text);
	free(text);
cleanup:
	child_result__free(&r);
	return result;
}

/* report and findings: llmprof report [--findings [-v]] --top N PATH. */
static json_t *run_report(json_t *args, bool findings, struct request_error *e)
{
	static const char *const known_report[] = {"path", "top", NULL};
	static const char *const known_findings[] = {"path", "top", "verbose", NULL};
	struct argv_builder b = {0};
	const char *path;
	long top = findings ? 5 : 10;
	bool verbose = false;
	struct child_result r;
	char message[512];
	json_t *result = NULL;

	if (check_keys(args, findings ? known_findings : known_report, e) ||
	    get_string(args, "path", true, &path, e) || get_integer(args, "top", 1, 100, &top, e) ||
	    get_bool(args, "verbose", &verbose, e))
		return NULL;
	push(&b, "llmprof");
	push(&b, "report");
	if (findings)
		push(&b, "--findings");
	if (verbose)
		push(&b, "-v");
	push(&b, "--top");
	push_number(&b, "%.0f", top);
	push(&b, "--");
	push(&b, path);
	if (run_self(b.items, NULL, &r)) {
		fail_request(e, JSONRPC_INTERNAL_ERROR, "cannot run llmprof: %s", strerror(errno));
		return NULL;
	}
	if (r.status)
		fail_request(e, MCP_TOOL_FAILED, "%s", child_error(&r, message, sizeof(message)));
	else
		result = text_result(r.out);
	child_result__free(&r);
	return result;
}

static json_t *tool_report(json_t *args, struct request_error *e)
{
	return run_report(args, false, e);
}

static json_t *tool_findings(json_t *args, struct request_error *e)
{
	return run_report(args, true, e);
}

static json_t *tool_diff(json_t *args, struct request_error *e)
{
	static const char *const known[] = {"base", "new", "threshold", "min_share", "top", NULL};
	struct argv_builder b = {0};
	const char *base, *new;
	double threshold = -1, min_share = -1;
	long top = 10;
	struct child_result r;
	char message[512];
	json_t *result = NULL;
	char *text;

	if (check_keys(args, known, e) || get_string(args, "base", true, &base, e) ||
	    get_string(args, "new", true, &new, e) ||
	    get_number(args, "threshold", 0, 100, &threshold, e) ||
	    get_number(args, "min_share", 0, 100, &min_share, e) ||
	    get_integer(args, "top", 1, 100, &top, e))
		return NULL;
	push(&b, "llmprof");
	push(&b, "diff");
	if (threshold >= 0) {
		push(&b, "--threshold");
		push_number(&b, "%g", threshold);
	}
	if (min_share >= 0) {
		push(&b, "--min-share");
		push_number(&b, "%g", min_share);
	}
	push(&b, "--top");
	push_number(&b, "%.0f", top);
	push(&b, "--");
	push(&b, base);
	push(&b, new);
	if (run_self(b.items, NULL, &r)) {
		fail_request(e, JSONRPC_INTERNAL_ERROR, "cannot run llmprof: %s", strerror(errno));
		return NULL;
	}
	/* diff exits 1 when something regressed: an answer, not a failure. */
	if (r.status > 1) {
		fail_request(e, MCP_TOOL_FAILED, "%s", child_error(&r, message, sizeof(message)));
		goto cleanup;
	}
	if (asprintf(&text, "%s\n%s",
		     r.status ? "REGRESSION: a share grew past the threshold and beyond sampling noise (listed with !)"
			      : "no regression: no share grew past the threshold",
		     r.out) < 0) {
		fail_request(e, JSONRPC_INTERNAL_ERROR, "out of memory");
		goto cleanup;
	}
	result = text_result(text);
	if (result)
		json_object_set_new(result, "structuredContent",
				    json_pack("{s:b}", "regression", r.status == 1));
	free(text);
cleanup:
	child_result__free(&r);
	return result;
}

struct tool {
	const char *name;
	const char *description;
	const char *schema; /* JSON Schema of the arguments */
	json_t *(*call)(json_t *args, struct request_error *e);
};

static const struct tool tools[] = {
    {"profile",
     "Profile a running process (pid) or run a command and profile it to its end "
     "(command): CPU stacks (kernel, native, Python) and GPU kernels. Replies with the "
     "top functions by self time (percent share, one per line), the findings (what "
     "is wrong and what to change) and the path of the written profile.",
     "{\"type\":\"object\",\"properties\":{"
     "\"pid\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"process to attach "
     "to\"},"
     "\"command\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1,"
     "\"description\":\"command to run and profile, argv form\"},"
     "\"duration\":{\"type\":\"number\",\"minimum\":0.01,\"maximum\":3600,"
     "\"description\":\"seconds to profile (default 10)\"},"
     "\"frequency\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000,"
     "\"description\":\"samples per second per CPU (default 99)\"},"
     "\"format\":{\"type\":\"string\",\"enum\":[\"folded\",\"speedscope\"]},"
     "\"output\":{\"type\":\"string\",\"description\":\"where to write the profile "
     "(default: a new directory under /tmp)\"},"
     "\"kernel\":{\"type\":\"boolean\",\"description\":\"kernel frames (default "
     "true)\"},"
     "\"gpu\":{\"type\":\"boolean\",\"description\":\"GPU kernels through CUPTI "
     "(default true)\"},"
     "\"python\":{\"type\":\"boolean\",\"description\":\"Python frames (default "
     "true)\"}},"
     "\"additionalProperties\":false}",
     tool_profile},
    {"report",
     "Summarise a profile file (folded or speedscope): samples, the top functions by "
     "self and total share, GPU time by kernel and launching function.",
     "{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"the profile file\"},"
     "\"top\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"description\":\"rows "
     "per table (default 10)\"}},"
     "\"required\":[\"path\"],\"additionalProperties\":false}",
     tool_report},
    {"findings",
     "What a profile file says is wrong and what to change, ranked by the share of "
     "time each problem costs, with evidence (stacks, Python file:line, kernels).",
     "{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"the profile file\"},"
     "\"top\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"description\":"
     "\"findings to list (default 5)\"},"
     "\"verbose\":{\"type\":\"boolean\",\"description\":\"also list every rule and why "
     "it did or did not fire\"}},"
     "\"required\":[\"path\"],\"additionalProperties\":false}",
     tool_findings},
    {"diff",
     "Compare two profile files and return what grew: every function's self and total "
     "share and every stack's share, in percentage points; regressions are marked.",
     "{\"type\":\"object\",\"properties\":{"
     "\"base\":{\"type\":\"string\",\"description\":\"the baseline profile\"},"
     "\"new\":{\"type\":\"string\",\"description\":\"the profile to compare\"},"
     "\"threshold\":{\"type\":\"number\",\"minimum\":0,\"maximum\":100,\"description\":"
     "\"percentage points a share may grow by\"},"
     "\"min_share\":{\"type\":\"number\",\"minimum\":0,\"maximum\":100,\"description\":"
     "\"ignore shares under this percent in both profiles\"},"
     "\"top\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100}},"
     "\"required\":[\"base\",\"new\"],\"additionalProperties\":false}",
     tool_diff},
};

#define NR_TOOLS (sizeof(tools) / sizeof(tools[0]))

static json_t *list_tools(void)
{
	json_t *list = json_array();

	for (size_t i = 0; i < NR_TOOLS; i++) {
		json_t *schema = json_loads(tools[i].schema, 0, NULL);

		json_array_append_new(list, json_pack("{s:s,s:s,s:o}", "name", tools[i].name,
						      "description", tools[i].description,
						      "inputSchema", schema));
	}
	return json_pack("{s:o}", "tools", list);
}

static json_t *initialize(json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	const char *version = protocol_versions[0];

	for (size_t i = 0; asked && protocol_versions[i]; i++)
		if (!strcmp(asked, protocol_versions[i]))
			version = asked;
	return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s},s:s}", "protocolVersion", version,
			 "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "llmprof",
			 "version", LLMPROF_VERSION, "instructions",
			 "llmprof profiles CPU and GPU work of running processes or commands. "
			 "Call profile with a pid or a command, then findings or report on the "
			 "profile path it returns, and diff to compare two profiles.");
}

static json_t *call_tool(json_t *params, struct request_error *e)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");

	if (!name)
		return fail_request(e, JSONRPC_INVALID_PARAMS, "tools/call needs a tool 'name'"),
		       NULL;
	if (args && !json_is_object(args))
		return fail_request(e, JSONRPC_INVALID_PARAMS, "'arguments' must be an object"),
		       NULL;
	for (size_t i = 0; i < NR_TOOLS; i++) {
		if (strcmp(name, tools[i].name))
			continue;
		if (!args) {
			json_t *empty = json_object(), *result = tools[i].call(empty, e);

			json_decref(empty);
			return result;
		}
		return tools[i].call(args, e);
	}
	return fail_request(e, JSONRPC_INVALID_PARAMS, "unknown tool '%s'", name), NULL;
}

static int send_message(json_t *message)
{
	char *text = json_dumps(message, JSON_COMPACT);
	int err = 0;

	json_decref(message);
	if (!text)
		return -ENOMEM;
	if (printf("%s\n", text) < 0 || fflush(stdout))
		err = -EIO;
	free(text);
	return err;
}

static int send_error(json_t *id, int code, const char *message)
{
	return send_message(json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id",
				      id ? id : json_null(), "error", "code", code, "message",
				      message));
}

/* One message; 0 to go on, -EIO when stdout is gone. */
static int handle(const char *line)
{
	json_error_t parse_error;
	json_t *message = json_loads(line, JSON_REJECT_DUPLICATES, &parse_error), *id, *params;
	struct request_error e = {0};
	const char *method;
	json_t *result = NULL;
	int err;

	if (!message)
		return send_error(NULL, JSONRPC_PARSE_ERROR, parse_error.text);
	if (!json_is_object(message)) {
		json_decref(message);
		/* Batches were removed from the protocol in 2025-06-18. */
		return send_error(NULL, JSONRPC_INVALID_REQUEST, "a message must be a JSON object");
	}
	id = json_object_get(message, "id");
	method = json_string_value(json_object_get(message, "method"));
	params = json_object_get(message, "params");
	if (!method) {
		/* A response to us (we send no requests), or garbage. */
		err =
		    id && !json_object_get(message, "result") && !json_object_get(message, "error")
			? send_error(id, JSONRPC_INVALID_REQUEST, "no method")
			: 0;
		json_decref(message);
		return err;
	}
	if (id && !json_is_string(id) && !json_is_integer(id)) {
		err = send_error(NULL, JSONRPC_INVALID_REQUEST,
				 "the id must be a string or an integer");
		json_decref(message);
		return err;
	}
	if (params && !json_is_object(params)) {
		err = id ? send_error(id, JSONRPC_INVALID_PARAMS, "params must be an object") : 0;
		json_decref(message);
		return err;
	}
	if (!id) { /* notifications: initialized, cancelled, ... need no answer */
		json_decref(message);
		return 0;
	}
	if (!strcmp(method, "initialize"))
		result = initialize(params);
	else if (!strcmp(method, "ping"))
		result = json_object();
	else if (!strcmp(method, "tools/list"))
		result = list_tools();
	else if (!strcmp(method, "tools/call"))
		result = call_tool(params ? params : json_null(), &e);
	else
		fail_request(&e, JSONRPC_METHOD_NOT_FOUND, "unknown method '%s'", method);
	if (result)
		err = send_message(
		    json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result));
	else
		err = send_error(id, e.code ? e.code : JSONRPC_INTERNAL_ERROR,
				 e.message[0] ? e.message : "out of memory");
	json_decref(message);
	return err;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: llmprof mcp\n"
		"\n"
		"Serve the Model Context Protocol on standard input and output (JSON-RPC 2.0,\n"
		"one message per line), for coding agents.  Tools: profile (a pid or a\n"
		"command), report, findings and diff (profile files).  Status goes to\n"
		"standard error.\n"
		"\n"
		"Options:\n"
		"  -h, --help  show this help and exit\n");
}

int do_mcp(int argc, char **argv)
{
	static const struct option long_options[] = {
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return EXIT_OK;
		}
		return command_usage_error("mcp", "unknown option '%s'", argv[optind - 1]);
	}
	if (optind != argc)
		return command_usage_error("mcp", "unexpected argument '%s'", argv[optind]);
	/* A client that goes away must not kill us mid-reply. */
	signal(SIGPIPE, SIG_IGN);
	while ((len = getline(&line, &cap, stdin)) >= 0) {
		if (len > MAX_LINE) {
			if (send_error(NULL, JSONRPC_INVALID_REQUEST, "message too long"))
				break;
			continue;
		}
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0])
			continue;
		if (handle(line))
			break;
	}
	free(line);
	return EXIT_OK;
}
