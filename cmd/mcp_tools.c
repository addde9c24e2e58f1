// SPDX-License-Identifier: GPL-2.0
/*
 * The tools of llmprof mcp: their schemas, their arguments checked (a wrong
 * argument is a tool error the model can correct), the access rules applied
 * (mcp_access.c), then the work handed to mcp_run.c.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp_private.h"
#include "profile/formats.h"

#define DEFAULT_DURATION 10.0
#define MAX_DURATION 3600.0
#define MAX_COMMAND_WORDS 200
/* What profile writes: text that its reply is read back from. */
#define MCP_PROFILE_FORMATS FORMAT_READABLE | FORMAT_WRITABLE, FORMAT_BINARY

/* Argument access with type checks; a missing optional argument is fine.
 * Each returns NULL, or the tool error to answer with. */
static json_t *get_string(json_t *args, const char *key, bool required, const char **out)
{
	json_t *v = json_object_get(args, key);

	*out = NULL;
	if (!v)
		return required ? mcp__tool_error("missing argument '%s'", key) : NULL;
	if (!json_is_string(v) || !json_string_length(v) ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return mcp__tool_error("'%s' must be a non-empty string", key);
	*out = json_string_value(v);
	return NULL;
}

static json_t *get_number(json_t *args, const char *key, double min, double max, double *out)
{
	json_t *v = json_object_get(args, key);

	if (!v)
		return NULL;
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < min ||
	    json_number_value(v) > max)
		return mcp__tool_error("'%s' must be a number from %g to %g", key, min, max);
	*out = json_number_value(v);
	return NULL;
}

static json_t *get_integer(json_t *args, const char *key, long min, long max, long *out)
{
	json_t *v = json_object_get(args, key);

	if (!v)
		return NULL;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return mcp__tool_error("'%s' must be a whole number from %ld to %ld", key, min,
				       max);
	*out = json_integer_value(v);
	return NULL;
}

static json_t *get_bool(json_t *args, const char *key, bool *out)
{
	json_t *v = json_object_get(args, key);

	if (!v)
		return NULL;
	if (!json_is_boolean(v))
		return mcp__tool_error("'%s' must be true or false", key);
	*out = json_is_true(v);
	return NULL;
}

/* Rejects arguments the tool does not know, so a typo is not ignored. */
static json_t *check_keys(json_t *args, const char *const *known)
{
	const char *key;
	json_t *value;

	json_object_foreach(args, key, value)
	{
		size_t i;

		for (i = 0; known[i] && strcmp(known[i], key); i++)
			;
		if (!known[i])
			return mcp__tool_error("unknown argument '%.200s'", key);
	}
	return NULL;
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

/* The first error of a chain of argument checks. */
#define CHECK(expr)                                                                                \
	do {                                                                                       \
		json_t *error_ = (expr);                                                           \
		if (error_)                                                                        \
			return error_;                                                             \
	} while (0)

static json_t *tool_profile(struct mcp_server *s, json_t *args)
{
	static const char *const known[] = {"pid",    "command", "duration", "frequency", "format",
					    "output", "kernel",	 "gpu",	     "python",	  NULL};
	struct mcp_profile_request request = {0};
	struct argv_builder options = {0};
	char *words[MAX_COMMAND_WORDS + 1];
	double duration = DEFAULT_DURATION;
	long pid = 0, frequency = 0;
	const char *format = NULL;
	enum profile_format written = FORMAT_FOLDED;
	bool kernel = true, gpu = true, python = true;
	json_t *command = json_object_get(args, "command");
	char why[MCP_WHY_SIZE];

	CHECK(check_keys(args, known));
	CHECK(get_integer(args, "pid", 1, INT_MAX, &pid));
	CHECK(get_number(args, "duration", 0.01, MAX_DURATION, &duration));
	CHECK(get_integer(args, "frequency", 1, 10000, &frequency));
	CHECK(get_string(args, "format", false, &format));
	CHECK(get_string(args, "output", false, &request.output));
	CHECK(get_bool(args, "kernel", &kernel));
	CHECK(get_bool(args, "gpu", &gpu));
	CHECK(get_bool(args, "python", &python));
	if (!pid == !command)
		return mcp__tool_error("give either 'pid' or 'command'");
	if (command) {
		size_t n = json_is_array(command) ? json_array_size(command) : 0;

		if (!n || n > MAX_COMMAND_WORDS)
			return mcp__tool_error("'command' must be an array of 1 to %d strings",
					       MAX_COMMAND_WORDS);
		for (size_t i = 0; i < n; i++) {
			json_t *word = json_array_get(command, i);

			if (!json_is_string(word) ||
			    strlen(json_string_value(word)) != json_string_length(word))
				return mcp__tool_error("'command' must be an array of strings");
			words[i] = (char *)json_string_value(word);
		}
		words[n] = NULL;
		request.command = words;
	}
	if (format && format__parse(format, MCP_PROFILE_FORMATS, &written)) {
		char names[128];

		format__list(names, sizeof(names), MCP_PROFILE_FORMATS, " or ", "", false,
			     NR_PROFILE_FORMATS);
		return mcp__tool_error("'format' must be %s", names);
	}
	if (pid && mcp_access__check_pid(s, pid, why))
		return mcp__tool_error("%s", why);
	request.pid = pid;
	request.extension = format__get(written)->extension;
	push(&options, "-d");
	push_number(&options, "%.3f", duration);
	if (frequency) {
		push(&options, "-F");
		push_number(&options, "%.0f", frequency);
	}
	if (format) {
		push(&options, "-f");
		push(&options, format);
	}
	if (!kernel)
		push(&options, "--no-kernel");
	if (!gpu)
		push(&options, "--no-gpu");
	if (!python)
		push(&options, "--no-python");
	request.options = options.items;
	return mcp_run__profile(s, &request);
}

/* Opens each input under the roots with the user's rights. */
static json_t *open_inputs(struct mcp_server *s, const char *const *paths, int *fds, int n)
{
	char why[MCP_WHY_SIZE];

	for (int i = 0; i < n; i++) {
		if (mcp_access__open_input(s, paths[i], &fds[i], why)) {
			while (i--)
				close(fds[i]);
			return mcp__tool_error("%s", why);
		}
	}
	return NULL;
}

/* report: llmprof report --top N PATH; findings: llmprof report --brief
 * --top N PATH, or --findings -v for every rule. */
static json_t *run_report(struct mcp_server *s, json_t *args, bool findings)
{
	static const char *const known_report[] = {"path", "top", NULL};
	static const char *const known_findings[] = {"path", "top", "verbose", NULL};
	struct argv_builder b = {0};
	const char *path;
	/* Findings alone: the top 5; the brief: 10 rows a section. */
	long top = -1;
	bool verbose = false;
	json_t *result;
	int fd;

	CHECK(check_keys(args, findings ? known_findings : known_report));
	CHECK(get_string(args, "path", true, &path));
	CHECK(get_integer(args, "top", 1, 100, &top));
	CHECK(get_bool(args, "verbose", &verbose));
	if (top < 0)
		top = findings && verbose ? 5 : 10;
	CHECK(open_inputs(s, &path, &fd, 1));
	push(&b, "llmprof");
	push(&b, "report");
	if (findings)
		push(&b, verbose ? "--findings" : "--brief");
	if (verbose)
		push(&b, "-v");
	push(&b, "--top");
	push_number(&b, "%.0f", top);
	push(&b, "--");
	push(&b, "/dev/fd/3");
	result = mcp_run__report(s, MCP_REPORT, b.items, &fd, &path, 1);
	close(fd);
	return result;
}

static json_t *tool_report(struct mcp_server *s, json_t *args)
{
	return run_report(s, args, false);
}

static json_t *tool_findings(struct mcp_server *s, json_t *args)
{
	return run_report(s, args, true);
}

static json_t *tool_diff(struct mcp_server *s, json_t *args)
{
	static const char *const known[] = {"base", "new", "threshold", "min_share", "top", NULL};
	struct argv_builder b = {0};
	const char *paths[2];
	double threshold = -1, min_share = -1;
	long top = 10;
	json_t *result;
	int fds[2];

	CHECK(check_keys(args, known));
	CHECK(get_string(args, "base", true, &paths[0]));
	CHECK(get_string(args, "new", true, &paths[1]));
	CHECK(get_number(args, "threshold", 0, 100, &threshold));
	CHECK(get_number(args, "min_share", 0, 100, &min_share));
	CHECK(get_integer(args, "top", 1, 100, &top));
	CHECK(open_inputs(s, paths, fds, 2));
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
	push(&b, "/dev/fd/3");
	push(&b, "/dev/fd/4");
	result = mcp_run__report(s, MCP_DIFF, b.items, fds, paths, 2);
	close(fds[0]);
	close(fds[1]);
	return result;
}

struct tool {
	const char *name;
	const char *description;
	const char *schema; /* JSON Schema of the arguments */
	mcp_tool_fn call;
};

static const struct tool tools[] = {
    {"profile",
     "Profile a running process (pid) or run a command and profile it to its end "
     "(command): CPU stacks (kernel, native, Python) and GPU kernels. Replies, in at "
     "most 7680 bytes besides the paths, with the run's status lines (at most 1536 "
     "bytes), then the top functions by self and by total share, the heaviest call "
     "paths (root > ... > leaf, with their share), the findings (what is wrong, where: "
     "file:line where known, and what to change), at most 6144 bytes of them with the "
     "least important rows left out and counted, and the path of the written profile. "
     "The command "
     "runs as the user the server serves; pid must be one of that user's processes; "
     "output must be under the server's allowed directories.",
     "{\"type\":\"object\",\"properties\":{"
     "\"pid\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"process to attach "
     "to\"},"
     "\"command\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1,"
     "\"description\":\"command to run and profile, argv form\"},"
     "\"duration\":{\"type\":\"number\",\"minimum\":0.01,\"maximum\":3600,"
     "\"description\":\"seconds to profile (default 10)\"},"
     "\"frequency\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000,"
     "\"description\":\"samples per second per CPU (default 99)\"},"
     "\"format\":{\"type\":\"string\",\"enum\":[]},"
     "\"output\":{\"type\":\"string\",\"description\":\"where to write the profile, "
     "under an allowed directory (default: a new directory under /tmp)\"},"
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
     "time each problem costs, with where (file:line where known) and evidence, beside "
     "the top functions by self and by total share and the heaviest call paths: at "
     "most 6144 bytes, the least important rows left out and counted. With verbose, "
     "every finding's evidence and every rule, and why it did or did not fire.",
     "{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"the profile file\"},"
     "\"top\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"description\":"
     "\"rows per section: findings, functions, paths (default 10; with verbose, "
     "findings to list, default 5)\"},"
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

/* The names of the formats profile writes, for its schema's enum. */
static json_t *profile_format_names(void)
{
	json_t *names = json_array();

	for (int i = 0; i < NR_PROFILE_FORMATS; i++)
		if (format__matches(i, MCP_PROFILE_FORMATS))
			json_array_append_new(names, json_string(format__get(i)->name));
	return names;
}

json_t *mcp_tools__list(void)
{
	json_t *list = json_array();

	for (size_t i = 0; i < NR_TOOLS; i++) {
		json_t *schema = json_loads(tools[i].schema, 0, NULL);
		json_t *format = json_object_get(json_object_get(schema, "properties"), "format");

		if (format)
			json_object_set_new(format, "enum", profile_format_names());

		json_array_append_new(list, json_pack("{s:s,s:s,s:o}", "name", tools[i].name,
						      "description", tools[i].description,
						      "inputSchema", schema));
	}
	return json_pack("{s:o}", "tools", list);
}

mcp_tool_fn mcp_tools__find(const char *name)
{
	for (size_t i = 0; i < NR_TOOLS; i++)
		if (!strcmp(name, tools[i].name))
			return tools[i].call;
	return NULL;
}
