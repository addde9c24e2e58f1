// SPDX-License-Identifier: GPL-2.0
/*
 * The HTML page (-f html, report --html): one self-contained file, no
 * network, no external resource, that opens from a CI artifact or an
 * e-mail.  The page holds its data as one JSON document that its script
 * draws: a flame graph per view (html_flame.c), and the tables, each from
 * what the text outputs compute (the report's, the per-process report's
 * with its straggler, the findings, the recording's counters), so that the
 * page and the text say the same.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "findings/findings.h"
#include "findings/html_page.h"
#include "findings/html_report.h"
#include "profile/process_report.h"
#include "profile/text_output.h"

/* Writes text for HTML element content. */
static void write_escaped(FILE *out, const char *text)
{
	text_output__xml_text(out, text, SIZE_MAX);
}

/* A JSON member "key": value-or-null. */
static void json_member(FILE *out, const char *key, const char *value)
{
	fprintf(out, ",\"%s\":", key);
	if (value)
		text_output__json_string(out, value);
	else
		fputs("null", out);
}

static int write_findings(const struct profile *p, FILE *out)
{
	struct findings *f = NULL;
	int err = findings__analyze(p, &f);

	if (err)
		return err;
	fputs(",\"findings\":[", out);
	for (size_t i = 0; i < f->nr_items; i++) {
		const struct finding *item = &f->items[i];

		fputs(i ? ",{\"rule\":" : "{\"rule\":", out);
		text_output__json_string(out, item->rule);
		json_member(out, "title", item->title);
		fputs(",\"cost\":", out);
		text_output__json_number(out, 100 * item->cost);
		json_member(out, "cost_of", item->cost_of);
		json_member(out, "location", item->location);
		fputs(",\"evidence\":[", out);
		for (size_t e = 0; e < item->nr_evidence; e++) {
			if (e)
				fputc(',', out);
			text_output__json_string(out, item->evidence[e]);
		}
		fputc(']', out);
		json_member(out, "suggestion", item->suggestion);
		fputc('}', out);
	}
	fputs("],\"rules\":[", out);
	for (size_t i = 0; i < f->nr_rules; i++) {
		const struct rule_outcome *r = &f->rules[i];

		fputs(i ? ",{\"rule\":" : "{\"rule\":", out);
		text_output__json_string(out, r->rule);
		json_member(out, "summary", r->summary);
		fprintf(out, ",\"ran\":%s,\"fired\":%s", r->ran ? "true" : "false",
			r->fired ? "true" : "false");
		json_member(out, "note", r->note);
		fputc('}', out);
	}
	fputc(']', out);
	findings__free(f);
	return 0;
}

/* The per-process report of every input: its JSON rows, and its text's
 * sentence on the straggler. */
static int write_processes(const struct html_page *page, FILE *out)
{
	struct profile **profiles = calloc(page->nr_inputs, sizeof(*profiles));
	const char **names = calloc(page->nr_inputs, sizeof(*names));
	char *text = NULL, *sentence;
	size_t len = 0;
	FILE *buffer = NULL;
	int err = -ENOMEM;

	if (!profiles || !names)
		goto out;
	for (size_t i = 0; i < page->nr_inputs; i++) {
		profiles[i] = (struct profile *)page->profiles[i];
		names[i] = page->reports[i].name;
	}
	fputs(",\"processes\":", out);
	err = process_report__write(profiles, names, page->nr_inputs, TEXT_FORMAT_JSON, out);
	if (err)
		goto out;
	buffer = open_memstream(&text, &len);
	err = -ENOMEM;
	if (!buffer)
		goto out;
	err = process_report__write(profiles, names, page->nr_inputs, TEXT_FORMAT_TEXT, buffer);
	if (fclose(buffer) && !err)
		err = -ENOMEM;
	sentence = text ? strstr(text, "\n\n") : NULL;
	if (sentence) {
		sentence[strcspn(sentence + 2, "\n") + 2] = '\0';
		json_member(out, "straggler_text", sentence + 2);
	}
out:
	free(text);
	free(profiles);
	free(names);
	return err;
}

/* Launches per GPU work name, for the kernels table's calls and mean. */
static int write_gpu_calls(const struct profile *p, FILE *out)
{
	uint64_t *calls = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*calls));
	bool first = true;

	if (!calls)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_gpu; i++)
		if (p->gpu[i].frame < p->nr_frames)
			calls[p->gpu[i].frame]++;
	fputs(",\"gpu_calls\":{", out);
	for (size_t f = 0; f < p->nr_frames; f++) {
		if (!calls[f])
			continue;
		if (!first)
			fputc(',', out);
		first = false;
		text_output__json_string(out, p->frames[f].name);
		fprintf(out, ":%llu", (unsigned long long)calls[f]);
	}
	fputc('}', out);
	free(calls);
	return 0;
}

/* The recording's counters, as the end-of-run summary names them. */
static void write_facts(const struct profile *p, FILE *out)
{
	char text[128];
	bool first = true;

#define FACT(label, ...)                                                                           \
	do {                                                                                       \
		snprintf(text, sizeof(text), __VA_ARGS__);                                         \
		fputs(first ? "[" : ",[", out);                                                    \
		first = false;                                                                     \
		text_output__json_string(out, label);                                              \
		fputc(',', out);                                                                   \
		text_output__json_string(out, text);                                               \
		fputc(']', out);                                                                   \
	} while (0)

	fputs(",\"facts\":[", out);
	if (p->name)
		FACT("command", "%.120s", p->name);
	if (p->duration_ns)
		FACT("duration", "%.2f s", p->duration_ns / 1e9);
	if (p->frequency)
		FACT("sampling rate", "%u Hz (%s intervals)", p->frequency,
		     p->random_intervals ? "random" : "fixed");
	if (p->samples_taken || p->samples_lost)
		FACT("samples", "%llu taken, %llu lost%s", (unsigned long long)p->samples_taken,
		     (unsigned long long)p->samples_lost,
		     p->samples_lost ? " (ring buffer full)" : "");
	if (p->stack_errors)
		FACT("stacks not read", "%llu", (unsigned long long)p->stack_errors);
	if (p->stack_limit)
		FACT("stack limit", "%u user frames", p->stack_limit);
	if (p->nr_threads)
		FACT("threads", "%zu", p->nr_threads);
	if (p->processes)
		FACT("processes", "%u sampled; %llu joined by fork, %llu not followed",
		     p->processes, (unsigned long long)p->children_followed,
		     (unsigned long long)p->children_lost);
	if (p->off_cpu_intervals || p->off_cpu_short || p->off_cpu_lost)
		FACT("off-CPU intervals",
		     "%llu recorded, %llu too short to record (%.3f s), %llu lost",
		     (unsigned long long)p->off_cpu_intervals, (unsigned long long)p->off_cpu_short,
		     p->off_cpu_short_ns / 1e9, (unsigned long long)p->off_cpu_lost);
	if (p->nr_gpu)
		FACT("GPU activities", "%zu", p->nr_gpu);
	if (p->gpu_records_dropped || p->gpu_kernels_unnamed)
		FACT("GPU records lost", "%llu dropped in the agents, %llu kernels without a name",
		     (unsigned long long)p->gpu_records_dropped,
		     (unsigned long long)p->gpu_kernels_unnamed);
	if (p->memory.known) {
		char peak[32];

		text_output__bytes(peak, sizeof(peak), p->memory.peak);
		FACT("GPU memory peak", "%s", peak);
	}
	FACT("unit", "%s",
	     p->unit == UNIT_BYTES	    ? "bytes"
	     : p->unit == UNIT_MICROSECONDS ? "microseconds"
	     : p->unit == UNIT_NANOSECONDS  ? "nanoseconds"
					    : "samples");
	if (p->exporter)
		FACT("written by", "%.120s", p->exporter);
	FACT("llmprof", "%s", LLMPROF_VERSION);
	fputc(']', out);
#undef FACT
}

/* One input's tables: the report's, the findings, the GPU calls and the
 * facts.  0 or -errno. */
static int write_input(const struct profile *p, const struct report_options *options, FILE *out)
{
	struct report_options report = *options;
	int err;

	fputs("{\"name\":", out);
	text_output__json_string(out, report.name ? report.name : "profile");
	fputs(",\"report\":", out);
	err = profile_report__write(p, &report, TEXT_FORMAT_JSON, out);
	if (!err)
		err = write_findings(p, out);
	if (!err)
		err = write_gpu_calls(p, out);
	write_facts(p, out);
	fputc('}', out);
	return err;
}

/* The page's data: a JSON document.  0 or -errno. */
static int write_data(const struct html_page *page, FILE *out)
{
	int err = 0;

	fputs("{\"title\":", out);
	text_output__json_string(out, page->title);
	fputs(",\"views\":[", out);
	for (size_t i = 0; i < page->nr_views && !err; i++) {
		if (i)
			fputc(',', out);
		err = html_flame__write(&page->views[i], out);
	}
	fputs("],\"inputs\":[", out);
	for (size_t i = 0; i < page->nr_inputs && !err; i++) {
		if (i)
			fputc(',', out);
		err = write_input(page->profiles[i], &page->reports[i], out);
	}
	fputc(']', out);
	if (!err)
		err = write_processes(page, out);
	fputs("}", out);
	return err;
}

int html_page__write(const struct html_page *page, FILE *out)
{
	char *data = NULL;
	size_t len = 0;
	FILE *buffer = open_memstream(&data, &len);
	int err;

	if (!buffer)
		return -ENOMEM;
	err = write_data(page, buffer);
	if (fclose(buffer) && !err)
		err = -ENOMEM;
	if (err) {
		free(data);
		return err;
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>",
	      out);
	write_escaped(out, page->title);
	fputs(" - llmprof</title>\n<style>\n", out);
	fputs(html_page_style, out);
	fputs("</style>\n</head>\n<body>\n<h1>", out);
	write_escaped(out, page->title);
	fputs("</h1>\n"
	      "<nav><a href=\"#flame-graph\">Flame graph</a><a href=\"#findings\">Findings</a>"
	      "<a href=\"#processes\">Processes</a><a href=\"#gpu\">GPU kernels</a>"
	      "<a href=\"#nccl\">NCCL</a><a href=\"#facts\">Run</a>"
	      "<a href=\"#report\">Report</a></nav>\n"
	      "<noscript><p>This page draws its flame graph and tables with JavaScript.</p>"
	      "</noscript>\n"
	      "<section id=\"flame-graph\"><h2>Flame graph</h2>\n"
	      "<div class=\"controls\"><span id=\"views\"></span>\n"
	      "<label>process <select id=\"process\"></select></label>\n"
	      "<label>thread <select id=\"thread\"></select></label>\n"
	      "<label>search <input id=\"search\" type=\"search\" size=\"24\" "
	      "placeholder=\"regular expression\"></label>\n"
	      "<button id=\"unzoom\" type=\"button\" disabled>Reset zoom</button></div>\n"
	      "<p class=\"status\"><span id=\"total\"></span> <span id=\"zoomed\"></span> "
	      "<span id=\"matched\"></span></p>\n"
	      "<div id=\"graph\"><canvas id=\"flame\"></canvas></div>\n"
	      "<p id=\"details\" class=\"status\">&#160;</p><p id=\"legend\"></p></section>\n"
	      "<section id=\"findings\"><h2>Findings</h2></section>\n"
	      "<section id=\"processes\"><h2>Processes</h2></section>\n"
	      "<section id=\"gpu\"><h2>GPU kernels</h2></section>\n"
	      "<section id=\"nccl\"><h2>NCCL collectives</h2></section>\n"
	      "<section id=\"facts\"><h2>Run</h2></section>\n"
	      "<section id=\"report\"><h2>Top functions</h2></section>\n"
	      "<script type=\"application/json\" id=\"llmprof-data\">",
	      out);
	/* '<' only occurs inside the JSON's strings, where \u003c says the
	 * same and cannot end the script element. */
	for (size_t i = 0, start = 0; i <= len; i++) {
		if (i < len && data[i] != '<')
			continue;
		fwrite(data + start, 1, i - start, out);
		if (i < len)
			fputs("\\u003c", out);
		start = i + 1;
	}
	free(data);
	fputs("</script>\n<script>\n", out);
	fputs(html_page_script, out);
	fputs("</script>\n</body>\n</html>\n", out);
	return fflush(out) || ferror(out) ? -EIO : 0;
}

size_t html_page__views(const struct profile *p, struct html_view *views)
{
	bool cpu = false, gpu = false, off_cpu = p->off_cpu_intervals > 0;
	size_t n = 0;

	if (p->unit == UNIT_BYTES) {
		views[0] = (struct html_view){"GPU memory", p->unit, p, VIEW_ALL};
		return 1;
	}
	for (size_t i = 0; i < p->nr_stacks && !(cpu && gpu); i++) {
		if (!p->stacks[i].weight || !p->stacks[i].depth)
			continue;
		if (profile__stack_is_gpu(p, i))
			gpu = true;
		else
			cpu = true;
	}
	for (size_t i = 0; i < p->nr_frames && !off_cpu; i++)
		off_cpu = p->frames[i].kind == FRAME_OFF_CPU;
	if (cpu)
		views[n++] = (struct html_view){off_cpu ? "Wall" : "CPU", p->unit, p, VIEW_CPU};
	if (gpu)
		views[n++] = (struct html_view){"GPU", p->unit, p, VIEW_GPU};
	if (cpu && gpu)
		views[n++] = (struct html_view){"All", p->unit, p, VIEW_ALL};
	if (!n)
		views[n++] = (struct html_view){"All", p->unit, p, VIEW_ALL};
	return n;
}

/* A view per value of p, named by its type, but the one named skip. */
static size_t value_views(const struct profile *p, const char *skip, struct html_view *views)
{
	size_t n = 0;

	for (size_t i = 0; i < profile__nr_values(p); i++) {
		struct profile_value_type t = profile__value_type(p, i);

		if (!skip || strcmp(t.name, skip))
			views[n++] = (struct html_view){t.name, t.unit, p, VIEW_ALL, i};
	}
	return n;
}

int html_page__all_views(const struct profile *p, struct html_view **views)
{
	size_t n = profile__nr_values(p);

	*views = calloc(n > HTML_MAX_VIEWS ? n : HTML_MAX_VIEWS, sizeof(**views));
	if (!*views)
		return -ENOMEM;
	return n > 1 ? value_views(p, NULL, *views) : html_page__views(p, *views);
}

/* The tables' rows for -f html, where no --top says. */
#define HTML_TOP 50

/* The page of a recording or a converted file, views given; the report's
 * options those of -f html. */
static int write_page_of(const struct profile *p, const struct html_view *views, size_t n,
			 FILE *out)
{
	const char *name = p->name && p->name[0] ? p->name : "profile";
	struct report_options report = {.name = name, .format = "llmprof", .top = HTML_TOP};
	struct html_page page = {name, views, n, &p, &report, 1};

	return html_page__write(&page, out);
}

int html_page__write_profile(const struct profile *p, const struct writer_options *options,
			     FILE *out)
{
	struct html_view *views, kept[HTML_MAX_VIEWS];
	int n = html_page__all_views(p, &views), nr_kept = 0, err;

	if (n < 0)
		return n;
	/* --view cpu or gpu: that view alone. */
	for (int i = 0; i < n && options->view != VIEW_ALL && nr_kept < HTML_MAX_VIEWS; i++)
		if (views[i].stacks == options->view)
			kept[nr_kept++] = views[i];
	err = nr_kept ? write_page_of(p, kept, nr_kept, out) : write_page_of(p, views, n, out);
	free(views);
	return err;
}

int html_page__write_recording(const struct profile *p, const struct profile *view,
			       const char *view_name, FILE *out)
{
	size_t nr_values = profile__nr_values(view);
	struct html_view *views = calloc(HTML_MAX_VIEWS + nr_values, sizeof(*views));
	size_t n = 0;
	int err;

	if (!views)
		return -ENOMEM;
	/* The view asked for first, as pprof's default; each further value
	 * but the recording's weight, whose views follow where it has any. */
	if (nr_values > 1)
		n = value_views(view, profile__value_type(p, 0).name, views);
	else
		views[n++] = (struct html_view){view_name, view->unit, view, VIEW_ALL};
	if (profile__total_weight(p))
		n += html_page__views(p, views + n);
	err = write_page_of(p, views, n, out);
	free(views);
	return err;
}

/* Input i's views after views[0, n): named by its file where there are
 * several inputs, "FILE: VIEW" where it has several views (the names
 * kept in *names).  Returns the new n, or -ENOMEM. */
static int add_input_views(const struct profile *p, const struct report_options *options, size_t i,
			   size_t nr_inputs, struct html_view **views, size_t n, char ***names,
			   size_t *nr_names)
{
	const char *file = options->name ? options->name : "profile";
	struct html_view *more, *bigger;
	int nr = html_page__all_views(p, &more);
	char **more_names;

	if (nr < 0)
		return nr;
	bigger = realloc(*views, (n + nr) * sizeof(*bigger));
	more_names = realloc(*names, (*nr_names + nr) * sizeof(*more_names));
	if (bigger)
		*views = bigger;
	if (more_names)
		*names = more_names;
	if (!bigger || !more_names) {
		free(more);
		return -ENOMEM;
	}
	for (int k = 0; k < nr; k++) {
		struct html_view *v = &(*views)[n + k];
		char *name = NULL;

		*v = more[k];
		v->input = i;
		if (nr_inputs < 2)
			continue;
		if ((nr > 1 ? asprintf(&name, "%s: %s", file, v->name)
			    : asprintf(&name, "%s", file)) < 0) {
			free(more);
			return -ENOMEM;
		}
		(*names)[(*nr_names)++] = name;
		v->name = name;
	}
	free(more);
	return n + nr;
}

int html_report__write(const struct profile *const *profiles, const struct report_options *options,
		       size_t nr, FILE *out)
{
	struct html_page page = {
	    .title = nr && options[0].name ? options[0].name : "profile",
	    .profiles = profiles,
	    .reports = options,
	    .nr_inputs = nr,
	};
	struct html_view *views = NULL;
	char **names = NULL, *title = NULL;
	size_t nr_names = 0, len = 0;
	int n = 0, err = 0;
	FILE *title_out;

	for (size_t i = 0; i < nr && n >= 0; i++)
		n = add_input_views(profiles[i], &options[i], i, nr, &views, n, &names, &nr_names);
	if (n < 0) {
		err = n;
		goto out;
	}
	/* Several inputs: the page is titled by them all. */
	if (nr > 1) {
		title_out = open_memstream(&title, &len);
		if (!title_out) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < nr; i++)
			fprintf(title_out, "%s%s", i ? ", " : "",
				options[i].name ? options[i].name : "profile");
		if (fclose(title_out)) {
			err = -ENOMEM;
			goto out;
		}
		page.title = title;
	}
	page.views = views;
	page.nr_views = n;
	err = html_page__write(&page, out);
out:
	for (size_t i = 0; i < nr_names; i++)
		free(names[i]);
	free(names);
	free(views);
	free(title);
	return err;
}
