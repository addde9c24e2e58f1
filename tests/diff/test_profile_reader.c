// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the profile reader, the diff and the text helpers, through
 * their library interfaces. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/output.h"
#include "profile/perf_script_reader.h"
#include "profile/profile_diff.h"
#include "profile/profile_reader.h"
#include "profile/text_output.h"

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static struct profile *read_text(const char *text, const struct profile_read_options *options,
				 struct profile_read_result *result, int *err)
{
	struct profile *p = NULL;

	*err = profile_reader__read_buffer(text, strlen(text), options, &p, result);
	return p;
}

/* Folded output of p, in a malloc'd string. */
static char *folded_text(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	if (!out)
		return NULL;
	if (folded__write(p, VIEW_ALL, out)) {
		fclose(out);
		free(buf);
		return NULL;
	}
	fclose(out);
	return buf;
}

static uint64_t stack_weight(const struct profile *p, const char *folded)
{
	char *text = folded_text(p), *line;
	uint64_t weight = 0;
	size_t n = strlen(folded);

	for (line = text; line && *line; line = strchr(line, '\n') + 1) {
		if (!strncmp(line, folded, n) && line[n] == ' ')
			weight = strtoull(line + n + 1, NULL, 10);
		if (!strchr(line, '\n'))
			break;
	}
	free(text);
	return weight;
}

static void test_frame_kinds(void)
{
	static const struct {
		const char *text;
		enum frame_kind kind;
		const char *name;
	} cases[] = {
	    {"vfs_read_[k]", FRAME_KERNEL, "vfs_read"},
	    {"inner_[i]", FRAME_INLINE, "inner"},
	    {"LazyCompile:*f_[j]", FRAME_JIT, "LazyCompile:*f"},
	    {"step (model.py)_[p]", FRAME_PYTHON, "step (model.py)"},
	    {"[gpu] gemm", FRAME_GPU, "gemm"},
	    {"[gpu] odd_[k]", FRAME_GPU, "odd_[k]"},
	    {"_[k]", FRAME_NATIVE, "_[k]"},
	    {"[gpu] ", FRAME_NATIVE, "[gpu] "},
	    {"x_[q]", FRAME_NATIVE, "x_[q]"},
	    {"[unknown]", FRAME_NATIVE, "[unknown]"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t start, len;
		const char *text = cases[i].text;
		enum frame_kind kind = profile_reader__frame_kind(text, strlen(text), &start, &len);
		struct frame f = {.kind = kind};
		char *back;

		CHECK(kind == cases[i].kind);
		CHECK(len == strlen(cases[i].name) &&
		      !memcmp(cases[i].text + start, cases[i].name, len));
		f.name = strndup(cases[i].text + start, len);
		back = frame__folded_name(&f);
		CHECK(back && !strcmp(back, cases[i].text));
		free(back);
		free(f.name);
	}
}

static void test_folded_round_trip(void)
{
	const char *text = "a;b_[k];c 3\n"
			   "a;b_[k] 2\n"
			   "a;[gpu] k 7\n"
			   "a;f (x.py:1)_[p];g_[i] 1\n"
			   "proc 4242:\"python x.py\";thread (0x7F);h (x.c:3) 4\n";
	const char *sorted = "a;[gpu] k 7\n"
			     "a;b_[k] 2\n"
			     "a;b_[k];c 3\n"
			     "a;f (x.py:1)_[p];g_[i] 1\n"
			     "proc 4242:\"python x.py\";thread (0x7F);h (x.c:3) 4\n";
	struct profile_read_result result;
	struct profile *p;
	char *out;
	int err;

	p = read_text(text, NULL, &result, &err);
	CHECK(!err && p);
	if (!p)
		return;
	CHECK(result.format == FORMAT_FOLDED);
	CHECK(result.lines == 5);
	CHECK(profile__total_weight(p) == 17);
	CHECK(p->samples_taken == 17);
	out = folded_text(p);
	CHECK(out && !strcmp(out, sorted));
	free(out);
	for (size_t i = 0; i < p->nr_frames; i++)
		if (!strcmp(p->frames[i].name, "b"))
			CHECK(p->frames[i].kind == FRAME_KERNEL);
	profile__free(p);
}

/* The frame of p whose name is name, or NULL. */
static const struct frame *frame_named(const struct profile *p, const char *name)
{
	for (size_t i = 0; i < p->nr_frames; i++)
		if (!strcmp(p->frames[i].name, name))
			return &p->frames[i];
	return NULL;
}

/*
 * py-spy's folded frames (src/flamegraph.rs: "NAME (FILE:LINE)", "NAME
 * (FILE)" where the line is 0 or --nolineno; src/main.rs: the "process
 * PID:\"CMDLINE\"" and "thread (TID): NAME" roots; src/native_stack_trace.rs:
 * --native frames named by their source file or module, "0x7f.. (?)"
 * unresolved): its Python frames are Python functions with their file and
 * line, the rest native, and the file comes back byte for byte.
 */
static void test_pyspy_frames(void)
{
	static const struct {
		const char *text, *name, *file;
		uint32_t line;
	} python[] = {
	    {"step (model.py:88)", "step", "model.py", 88},
	    {"<module> (train.py:12)", "<module>", "train.py", 12},
	    {"forward (torch/nn/modules/linear.py:116)", "forward", "torch/nn/modules/linear.py",
	     116},
	    {"_find_and_load (<frozen importlib._bootstrap>:1007)", "_find_and_load",
	     "<frozen importlib._bootstrap>", 1007},
	    {"<lambda> (C:\\job\\x.py:5)", "<lambda>", "C:\\job\\x.py", 5},
	    {"f (x) (y.py:2)", "f (x)", "y.py", 2},
	};
	static const char *const native[] = {
	    "process 4242:\"python train.py\"",
	    "thread (0x7F3A2B4C5740)",
	    "thread (4243): Thread-1 (prefetch)",
	    "PyEval_EvalFrameDefault (libpython3.11.so.1.0)",
	    "at::native::addmm_out (Blas.cpp:260)",
	    "0x7f3a2b4c5740 (?)",
	    "std::function<void ()>::operator() (std_function.h:591)",
	    "foo(int)",
	    "operator()",
	    "(anonymous namespace)::run",
	    "g (x.py:0)",
	    "g (x.py:12a)",
	    "g (x.pyc:3)",
	};
	const char *pyspy = "process 4242:\"python train.py\";thread (0x7F3A2B4C5740);"
			    "<module> (train.py:12);train (train.py:40);step (model.py:88) 17\n"
			    "process 4242:\"python train.py\";thread (0x7F3A2B4C5740);"
			    "<module> (train.py:12);train (train.py:41);step (model.py:88) 2\n";
	struct profile_read_result result;
	char text[4096];
	struct profile *p;
	size_t len = 0;
	char *out;
	int err;

	for (size_t i = 0; i < sizeof(python) / sizeof(python[0]); i++)
		len += snprintf(text + len, sizeof(text) - len, "root;%s 1\n", python[i].text);
	for (size_t i = 0; i < sizeof(native) / sizeof(native[0]); i++)
		len += snprintf(text + len, sizeof(text) - len, "root;%s 1\n", native[i]);
	p = read_text(text, NULL, &result, &err);
	CHECK(!err && p);
	if (!p)
		return;
	for (size_t i = 0; i < sizeof(python) / sizeof(python[0]); i++) {
		const struct frame *f = frame_named(p, python[i].name);

		CHECK(f && f->kind == FRAME_PYTHON && f->file && !strcmp(f->file, python[i].file) &&
		      f->line == python[i].line);
	}
	for (size_t i = 0; i < sizeof(native) / sizeof(native[0]); i++) {
		const struct frame *f = frame_named(p, native[i]);

		CHECK(f && f->kind == FRAME_NATIVE && !f->file);
	}
	profile__free(p);

	p = read_text(pyspy, NULL, &result, &err);
	CHECK(!err && p);
	if (!p)
		return;
	CHECK(p->python_pyspy_form);
	out = folded_text(p);
	CHECK(out && !strcmp(out, pyspy));
	free(out);
	profile__free(p);

	/* Code of "<string>" alone, as a live session of "python -c" has:
	 * llmprof's form. */
	p = read_text("<module> (<string>:1);f (<string>:3) 2\n", NULL, &result, &err);
	CHECK(!err && p);
	if (!p)
		return;
	CHECK(!p->python_pyspy_form && frame_named(p, "f") && frame_named(p, "f")->line == 3);
	out = folded_text(p);
	CHECK(out && !strcmp(out, "<module> (<string>)_[p];f (<string>)_[p] 2\n"));
	free(out);
	profile__free(p);

	/* --nolineno: Python frames without a line, written in llmprof's
	 * form, which has none either. */
	p = read_text("<module> (train.py);step (model.py) 3\n", NULL, &result, &err);
	CHECK(!err && p);
	if (!p)
		return;
	CHECK(!p->python_pyspy_form);
	CHECK(frame_named(p, "step") && frame_named(p, "step")->kind == FRAME_PYTHON);
	out = folded_text(p);
	CHECK(out && !strcmp(out, "<module> (train.py)_[p];step (model.py)_[p] 3\n"));
	free(out);
	profile__free(p);
}

static void test_folded_errors(void)
{
	const char *text = "a;b 1\r\n\r\n# note\r\nno count\r\na;;b 2\r\na;b 1.5\r\n;a 1\r\n 7\r\n"
			   "a;b 99999999999999999999\r\na;b\t4\r\n";
	struct profile_read_options strict = {.strict = true};
	struct profile_read_result result;
	struct profile *p;
	int err;

	p = read_text(text, &strict, &result, &err);
	CHECK(err == -EINVAL && !p);
	CHECK(result.line == 4);
	CHECK(strstr(result.message, "no sample count"));

	/* Skipped by default, as flamegraph.pl skips them. */
	p = read_text(text, NULL, &result, &err);
	CHECK(!err && p);
	CHECK(result.skipped == 6);
	CHECK(result.line == 4);
	CHECK(result.lines == 10);
	if (p)
		CHECK(stack_weight(p, "a;b") == 5);
	profile__free(p);

	p = read_text("a 18446744073709551615\nb 1\n", &strict, &result, &err);
	CHECK(err == -EINVAL && result.line == 2);
	profile__free(p);

	p = read_text("", NULL, &result, &err);
	CHECK(!err && p && p->nr_stacks == 0);
	profile__free(p);
}

/* Memory follows distinct stacks: many lines, few stacks. */
static void test_folded_interning(void)
{
	size_t size = 200000 * 16, len = 0;
	char *text = malloc(size);
	struct profile_read_result result;
	struct profile *p;
	int err;

	if (!text)
		return;
	for (int i = 0; i < 200000; i++)
		len += snprintf(text + len, size - len, "m;f%d;g %d\n", i % 7, i % 3);
	p = read_text(text, NULL, &result, &err);
	CHECK(!err && p);
	if (p) {
		CHECK(p->nr_stacks == 7);
		CHECK(p->nr_frames == 9);
		CHECK(profile__total_weight(p) == 199999);
	}
	profile__free(p);
	free(text);
}

static void test_speedscope_evented(void)
{
	/* Opens and closes at fractional milliseconds; self time goes to the
	 * innermost open frame. */
	const char *text =
	    "{\"profiles\":[{\"type\":\"evented\",\"name\":\"t\",\"unit\":\"milliseconds\","
	    "\"startValue\":0,\"endValue\":10,\"events\":["
	    "{\"type\":\"O\",\"frame\":0,\"at\":0},{\"type\":\"O\",\"frame\":1,\"at\":1.25},"
	    "{\"type\":\"C\",\"frame\":1,\"at\":3},{\"type\":\"O\",\"frame\":2,\"at\":3},"
	    "{\"type\":\"C\",\"frame\":2,\"at\":3.5}]}],"
	    "\"shared\":{\"frames\":[{\"name\":\"root\",\"file\":\"r.c\",\"line\":9},"
	    "{\"name\":\"k_[k]\"},{\"name\":\"caf\\u00e9 \\ud83d\\ude00\"}]}}";
	struct profile_read_result result;
	struct profile *p;
	int err;

	p = read_text(text, NULL, &result, &err);
	CHECK(!err && p);
	if (!p) {
		fprintf(stderr, "  %lu: %s\n", result.line, result.message);
		return;
	}
	CHECK(result.format == FORMAT_SPEEDSCOPE);
	CHECK(p->unit == UNIT_NANOSECONDS);
	CHECK(p->duration_ns == 10000000);
	/* root: [0, 1.25) + [3.5, 10), the end of the profile */
	CHECK(stack_weight(p, "root") == 7750000);
	CHECK(stack_weight(p, "root;k_[k]") == 1750000);
	CHECK(stack_weight(p, "root;caf\xc3\xa9 \xf0\x9f\x98\x80") == 500000);
	for (size_t i = 0; i < p->nr_frames; i++) {
		if (!strcmp(p->frames[i].name, "root"))
			CHECK(p->frames[i].line == 9 && !strcmp(p->frames[i].file, "r.c"));
		if (!strcmp(p->frames[i].name, "k"))
			CHECK(p->frames[i].kind == FRAME_KERNEL);
	}
	profile__free(p);

	text = "{\"profiles\":[{\"type\":\"evented\",\"events\":[{\"type\":\"O\","
	       "\"frame\":0,\"at\":1},\n{\"type\":\"C\",\"frame\":1,\"at\":2}]}],"
	       "\"shared\":{\"frames\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}";
	p = read_text(text, NULL, &result, &err);
	CHECK(err == -EINVAL && result.line == 2 && strstr(result.message, "innermost"));
	profile__free(p);
}

static void test_speedscope_timeline(void)
{
	const char *text =
	    "{\"shared\":{\"frames\":[{\"name\":\"main\"},{\"name\":\"[gpu] gemm\"}]},"
	    "\"profiles\":[{\"type\":\"sampled\",\"name\":\"app (pid 7, tid 8)\","
	    "\"unit\":\"microseconds\",\"startValue\":0,\"endValue\":3,"
	    "\"samples\":[[0],[],[0]],\"weights\":[1,1,1]},"
	    "{\"type\":\"evented\",\"name\":\"GPU 1 stream 2\",\"unit\":\"microseconds\","
	    "\"startValue\":0,\"endValue\":5,\"events\":[{\"type\":\"O\",\"frame\":1,\"at\":1},"
	    "{\"type\":\"C\",\"frame\":1,\"at\":4}]}]}";
	struct profile_read_options timeline = {.keep_timeline = true};
	struct profile_read_result result;
	struct profile *p;
	int err;

	p = read_text(text, &timeline, &result, &err);
	CHECK(!err && p);
	if (!p)
		return;
	CHECK(p->nr_threads == 1 && p->threads[0].pid == 7 && p->threads[0].tid == 8 &&
	      !strcmp(p->threads[0].name, "app"));
	CHECK(p->nr_samples == 2 && p->samples[0].time_ns == 0 && p->samples[1].time_ns == 2000);
	CHECK(p->nr_gpu == 1 && p->gpu[0].start_ns == 1000 && p->gpu[0].end_ns == 4000 &&
	      p->gpu[0].device == 1 && p->gpu[0].stream == 2);
	CHECK(p->samples_taken == 2);
	CHECK(stack_weight(p, "[gpu] gemm") == 3000);
	profile__free(p);
}

static void test_json_errors(void)
{
	static const char *const bad[] = {
	    "{",
	    "{\"profiles\":[}",
	    "{\"profiles\":[{\"type\":\"sampled\",\"samples\":[[0]],\"weights\":[1]}]}",
	    "{\"profiles\":[{\"type\":\"sampled\",\"samples\":[[-1]]}]}",
	    "{\"profiles\":[{\"type\":\"sampled\",\"samples\":[[0.5]]}]}",
	    "{\"profiles\":[{\"type\":\"sampled\",\"unit\":\"parsecs\"}]}",
	    "{\"profiles\":[]} x",
	    "{\"name\":\"no profiles\"}",
	    ("{\"profiles\":[{\"type\":\"evented\",\"events\":[{\"type\":\"O\",\"frame\":0,"
	     "\"at\":2},{\"type\":\"C\",\"frame\":0,\"at\":1}]}]}"),
	    "{\"profiles\":[{\"type\":\"sampled\",\"name\":\"\\ud800\"}], \"x\": \"\\u12\"}",
	    "[]",
	};

	char deep[512];
	size_t len = 0;

	for (size_t i = 0; i <= sizeof(bad) / sizeof(bad[0]); i++) {
		const char *text = i < sizeof(bad) / sizeof(bad[0]) ? bad[i] : deep;
		struct profile_read_result result;
		struct profile *p = NULL;
		int err;

		/* Last: values we skip, nested past the limit. */
		if (text == deep) {
			len = snprintf(deep, sizeof(deep), "{\"a\":");
			for (int d = 0; d < 100; d++)
				deep[len++] = '[';
			for (int d = 0; d < 100; d++)
				deep[len++] = ']';
			snprintf(deep + len, sizeof(deep) - len, ",\"profiles\":[]}");
		}
		err = profile_reader__read_buffer(text, strlen(text), NULL, &p, &result);
		if (err != -EINVAL || p || !result.message[0])
			fprintf(stderr, "  case %zu: err %d message '%s'\n", i, err,
				result.message);
		CHECK(err == -EINVAL && !p && result.message[0]);
	}
}

static void test_diff_boundary(void)
{
	struct profile_read_result result;
	struct profile *base, *new;
	struct profile_diff *d = NULL;
	int err;

	/* Enough samples that +10 points is far past the noise, so only the
	 * threshold decides. */
	base = read_text("app;steady 9000\napp;grows 1000\n", NULL, &result, &err);
	new = read_text("app;steady 16000\napp;grows 4000\n", NULL, &result, &err);
	CHECK(base && new);
	if (!base || !new)
		goto cleanup;
	for (int i = 0; i < 3; i++) {
		static const double thresholds[] = {9.99, 10, 10.01};
		struct diff_options o = {.threshold = thresholds[i]};

		d = NULL;
		CHECK(!profile_diff__compute(base, new, &o, &d));
		if (!d)
			continue;
		/* grows: self, total and its stack each +10 points */
		CHECK(profile_diff__regressions(d) == (i == 0 ? 3 : 0));
		profile_diff__free(d);
	}
	{
		struct diff_options o = {.threshold = 1, .min_share = 25};

		d = NULL;
		CHECK(!profile_diff__compute(base, new, &o, &d));
		CHECK(d && profile_diff__regressions(d) == 0);
		profile_diff__free(d);
	}
cleanup:
	profile__free(base);
	profile__free(new);
}

static void test_perf_script(void)
{
	/* perf script -a (a [cpu] field), a comm with a space, pid/tid, a
	 * symbol perf could not name, and a record with no call chain. */
	static const char text[] =
	    "# ========\n# captured on: today\n"
	    "Web Content  4242/4243 [001]  100.000100:   10101010 cpu-clock:ppp: \n"
	    "\tffffffff82240c89 pvm_irq_enable+0x19 ([kernel.kallsyms])\n"
	    "\t            12b3 render_rows+0x23 (/tmp/wl)\n"
	    "\t           2724a [unknown] (/usr/lib/libc.so.6)\n"
	    "\n"
	    "Web Content  4242/4243 [000]  100.010100:   10101010 cpu-clock:ppp: \n"
	    "\t            12ab render_rows+0x1b (/tmp/wl)\n"
	    "\t           2724a [unknown] (/usr/lib/libc.so.6)\n"
	    "\n"
	    "wl 17 100.020100: 1 cycles:  12ab render_rows+0x1b (/tmp/wl)\n";
	struct profile_read_result result;
	struct profile *p;
	char *folded;
	int err;

	CHECK(perf_script_reader__detect(text, strlen(text)));
	CHECK(!perf_script_reader__detect("app;main 10\n", 12));
	CHECK(!perf_script_reader__detect("a 1.5: b;c 3\nd 4\n", 17));
	CHECK(!perf_script_reader__detect("a 12\nb 1\n", 9));
	CHECK(perf_script_reader__detect("a 12\n\tb 1\n", 10));
	p = read_text(text, NULL, &result, &err);
	CHECK(!err && p && result.format == FORMAT_PERF_SCRIPT);
	if (!p)
		return;
	/* The first event's records, weighed by their periods: cpu-clock's
	 * are nanoseconds. */
	CHECK(result.nr_events == 2 && !strcmp(result.events, "cpu-clock:ppp, cycles"));
	CHECK(!strcmp(result.event_read, "cpu-clock:ppp"));
	CHECK(p->unit == UNIT_NANOSECONDS);
	CHECK(p->samples_taken == 2 && profile__total_weight(p) == 20202020);
	CHECK(p->duration_ns == 10000000);
	folded = folded_text(p);
	CHECK(folded &&
	      !strcmp(folded, "Web Content;[libc.so.6];render_rows 10101010\n"
			      "Web Content;[libc.so.6];render_rows;pvm_irq_enable_[k] 10101010\n"));
	free(folded);
	profile__free(p);
	/* --event picks another; a file without it is refused. */
	p = read_text(text, &(struct profile_read_options){.event = "cycles"}, &result, &err);
	CHECK(!err && p && p->unit == UNIT_SAMPLES && profile__total_weight(p) == 1);
	folded = p ? folded_text(p) : NULL;
	CHECK(folded && !strcmp(folded, "wl;render_rows 1\n"));
	free(folded);
	profile__free(p);
	p = read_text(text, &(struct profile_read_options){.event = "cpu"}, &result, &err);
	CHECK(err == -EINVAL && !p && strstr(result.message, "no event 'cpu'"));
	/* A line that is neither header nor frame is skipped, or refused
	 * with --strict; ';' stays in a JIT name until a folded writer. */
	static const char junk[] = "java 17 100.020100: 1 cycles: \n"
				   "\t12ab Lcom/A;.run(I)V+0x4 (/tmp/perf-17.map)\n"
				   "\n"
				   "not a header\n";
	p = read_text(junk, NULL, &result, &err);
	CHECK(!err && p && result.skipped == 1 && result.line == 4);
	folded = p ? folded_text(p) : NULL;
	CHECK(folded && !strcmp(folded, "java;com/A:.run_[j] 1\n"));
	free(folded);
	profile__free(p);
	p = read_text(junk, &(struct profile_read_options){.strict = true}, &result, &err);
	CHECK(err == -EINVAL && !p && result.line == 4);
}

static void test_text_output(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	if (!out)
		return;
	text_output__json_string(out, "a\"\\\x01\xc3\xa9\xff\xed\xa0\x80z");
	fputc(' ', out);
	text_output__json_number(out, -0.00001);
	fputc(' ', out);
	text_output__json_number(out, 12.5);
	fputc(' ', out);
	text_output__markdown_code(out, "a|b`c");
	fclose(out);
	CHECK(buf &&
	      !strcmp(buf, "\"a\\\"\\\\\\u0001\xc3\xa9\\ufffd\\ufffd\\ufffd\\ufffdz\" 0 12.5 "
			   "``a\\|b`c``"));
	free(buf);
}

int main(void)
{
	test_frame_kinds();
	test_folded_round_trip();
	test_pyspy_frames();
	test_folded_errors();
	test_folded_interning();
	test_speedscope_evented();
	test_speedscope_timeline();
	test_json_errors();
	test_diff_boundary();
	test_perf_script();
	test_text_output();
	if (failures) {
		fprintf(stderr, "%d check%s failed\n", failures, failures == 1 ? "" : "s");
		return 1;
	}
	printf("all checks passed\n");
	return 0;
}
