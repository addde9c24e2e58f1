// SPDX-License-Identifier: GPL-2.0
/* Findings: running the rules, and writing what they found; see findings.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "findings/analysis.h"
#include "profile/ml_waits.h"
#include "profile/python_frame.h"
#include "status.h"

bool analysis__name_matches(const char *name, const char *const *patterns)
{
	for (size_t i = 0; patterns[i]; i++)
		if (frame_name__matches(name, patterns[i]))
			return true;
	return false;
}

/*
 * A rule looks for the same patterns in every stack: each frame's answer is
 * kept (0 unknown, 1 no, 2 yes) for the profile and patterns of the last
 * call, while findings__analyze() runs, which forgets them at its end.
 */
static __thread struct {
	const struct profile *profile;
	const char *const *patterns;
	uint8_t *answers;
} frame_matches;

static void forget_frame_matches(void)
{
	free(frame_matches.answers);
	memset(&frame_matches, 0, sizeof(frame_matches));
}

int analysis__stack_find(const struct profile *p, uint32_t stack, const char *const *patterns)
{
	const struct stack *s = &p->stacks[stack];

	if (frame_matches.profile != p || frame_matches.patterns != patterns) {
		forget_frame_matches();
		frame_matches.answers = calloc(p->nr_frames ? p->nr_frames : 1, 1);
		frame_matches.profile = p;
		frame_matches.patterns = patterns;
	}
	for (int i = (int)s->depth - 1; i >= 0; i--) {
		uint32_t f = s->frames[i];
		uint8_t *answer = frame_matches.answers ? &frame_matches.answers[f] : NULL;

		if (answer && !*answer)
			*answer = analysis__name_matches(p->frames[f].name, patterns) ? 2 : 1;
		if (answer ? *answer == 2 : analysis__name_matches(p->frames[f].name, patterns))
			return i;
	}
	return -1;
}

bool analysis__python_location(const struct profile *p, uint32_t stack, int below, char *buf,
			       size_t size)
{
	const struct stack *s = &p->stacks[stack];
	int start = below < 0 ? (int)s->depth - 1 : below - 1;

	for (int i = start; i >= 0; i--) {
		const struct frame *f = &p->frames[s->frames[i]];

		if (f->kind != FRAME_PYTHON)
			continue;
		python_frame__location(f, true, buf, size);
		return true;
	}
	return false;
}

const char *analysis__leaf_name(const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];
	const char *name;

	if (!s->depth)
		return "";
	name = p->frames[s->frames[s->depth - 1]].name;
	return name ? name : "";
}

const char *analysis__root_name(const struct profile *p, uint32_t stack)
{
	const struct stack *s = &p->stacks[stack];
	const char *name;

	if (!s->depth)
		return "";
	name = p->frames[s->frames[0]].name;
	return name ? name : "";
}

double analysis__cpu_share(const struct analysis *a, uint64_t weight)
{
	return a->cpu_weight ? (double)weight / a->cpu_weight : 0;
}

const char *analysis__cpu_share_of(const struct analysis *a)
{
	return a->has_off_cpu ? "wall time" : "CPU time";
}

int tally__add(struct tally *t, const char *key, uint64_t weight)
{
	for (size_t i = 0; i < t->nr; i++) {
		if (!strcmp(t->entries[i].key, key)) {
			t->entries[i].weight += weight;
			return 0;
		}
	}
	if (array__grow((void **)&t->entries, &t->cap, t->nr + 1, sizeof(*t->entries)))
		return -ENOMEM;
	t->entries[t->nr].key = strdup(key);
	if (!t->entries[t->nr].key)
		return -ENOMEM;
	t->entries[t->nr++].weight = weight;
	return 0;
}

static int compare_tally(const void *a, const void *b)
{
	const struct tally_entry *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return strcmp(x->key, y->key);
}

void tally__sort(struct tally *t)
{
	if (t->nr > 1)
		qsort(t->entries, t->nr, sizeof(*t->entries), compare_tally);
}

void tally__free(struct tally *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free(t->entries[i].key);
	free(t->entries);
	memset(t, 0, sizeof(*t));
}

static char *vformat(const char *fmt, va_list args)
{
	char *text = NULL;

	if (vasprintf(&text, fmt, args) < 0)
		return NULL;
	return text;
}

struct finding *analysis__add_finding(struct analysis *a, const char *rule, double cost,
				      const char *cost_of, const char *fmt, ...)
{
	struct findings *fs = a->findings;
	struct finding *f;
	va_list args;

	if (array__grow((void **)&fs->items, &fs->cap_items, fs->nr_items + 1, sizeof(*fs->items)))
		return NULL;
	f = &fs->items[fs->nr_items];
	memset(f, 0, sizeof(*f));
	va_start(args, fmt);
	f->title = vformat(fmt, args);
	va_end(args);
	if (!f->title)
		return NULL;
	f->rule = rule;
	f->cost = cost < 0 ? 0 : cost > 1 ? 1 : cost;
	f->cost_of = cost_of;
	fs->nr_items++;
	return f;
}

int finding__evidence(struct finding *f, const char *fmt, ...)
{
	va_list args;

	if (f->nr_evidence == FINDING_MAX_EVIDENCE)
		return 0;
	va_start(args, fmt);
	f->evidence[f->nr_evidence] = vformat(fmt, args);
	va_end(args);
	if (!f->evidence[f->nr_evidence])
		return -ENOMEM;
	f->nr_evidence++;
	return 0;
}

int finding__suggest(struct finding *f, const char *fmt, ...)
{
	va_list args;

	free(f->suggestion);
	va_start(args, fmt);
	f->suggestion = vformat(fmt, args);
	va_end(args);
	return f->suggestion ? 0 : -ENOMEM;
}

int finding__locate(struct finding *f, const char *location)
{
	free(f->location);
	f->location = location ? strdup(location) : NULL;
	return !location || f->location ? 0 : -ENOMEM;
}

int outcome__note(struct rule_outcome *o, const char *fmt, ...)
{
	va_list args;

	free(o->note);
	va_start(args, fmt);
	o->note = vformat(fmt, args);
	va_end(args);
	return o->note ? 0 : -ENOMEM;
}

int finding__evidence_from_tally(struct finding *f, const struct tally *t, uint64_t total,
				 size_t top)
{
	for (size_t i = 0; i < t->nr && i < top; i++) {
		int err = finding__evidence(f, "%5.1f%%  %s",
					    total ? 100.0 * t->entries[i].weight / total : 0,
					    t->entries[i].key);

		if (err)
			return err;
	}
	return 0;
}

/* One pass: what the profile holds. */
static int survey(struct analysis *a)
{
	const struct profile *p = a->profile;
	size_t n = p->nr_stacks ? p->nr_stacks : 1;
	uint32_t *roots = NULL;
	size_t nr_roots = 0;

	a->is_gpu_stack = calloc(n, sizeof(*a->is_gpu_stack));
	a->is_off_cpu_stack = calloc(n, sizeof(*a->is_off_cpu_stack));
	roots = calloc(n, sizeof(*roots));
	if (!a->is_gpu_stack || !a->is_off_cpu_stack || !roots) {
		free(roots);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		bool seen = false;

		if (!s->depth || !s->weight)
			continue;
		if (profile__stack_is_gpu(p, i)) {
			a->is_gpu_stack[i] = true;
			continue;
		}
		/* Bytes (GPU memory, NCCL) are no CPU time. */
		if (p->unit == UNIT_BYTES)
			continue;
		a->cpu_weight += s->weight;
		if (profile__stack_is_off_cpu(p, i)) {
			a->is_off_cpu_stack[i] = true;
			a->off_cpu_weight += s->weight;
			a->has_off_cpu = true;
		} else {
			a->on_cpu_weight += s->weight;
		}
		for (uint32_t k = 0; k < s->depth && !a->has_python; k++)
			if (p->frames[s->frames[k]].kind == FRAME_PYTHON)
				a->has_python = true;
		for (size_t r = 0; r < nr_roots; r++)
			if (roots[r] == s->frames[0])
				seen = true;
		if (!seen)
			roots[nr_roots++] = s->frames[0];
	}
	free(roots);
	a->nr_processes = nr_roots;
	a->has_timeline = p->nr_samples > 0;
	a->has_gpu = p->nr_gpu > 0 && p->duration_ns > 0;
	switch (p->unit) {
	case UNIT_SAMPLES:
		a->seconds_per_weight = p->frequency ? 1.0 / p->frequency : 0;
		break;
	case UNIT_MICROSECONDS:
		a->seconds_per_weight = 1e-6;
		break;
	case UNIT_NANOSECONDS:
		a->seconds_per_weight = 1e-9;
		break;
	default:
		a->seconds_per_weight = 0;
		break;
	}
	return 0;
}

static int compare_findings(const void *x, const void *y)
{
	const struct finding *a = x, *b = y;
	int order;

	if (a->cost != b->cost)
		return a->cost > b->cost ? -1 : 1;
	order = strcmp(a->rule, b->rule);
	return order ? order : strcmp(a->title, b->title);
}

static int run_rules(struct analysis *a, const struct rule *rules, size_t nr)
{
	struct findings *fs = a->findings;

	for (size_t i = 0; i < nr; i++) {
		struct rule_outcome *o = &fs->rules[fs->nr_rules++];
		size_t before = fs->nr_items;
		int err;

		o->rule = rules[i].id;
		o->summary = rules[i].summary;
		/* The CPU rules weigh time; a memory or NCCL view weighs bytes. */
		if (rules == cpu_rules && a->profile->unit == UNIT_BYTES)
			err = outcome__note(o, "%s",
					    "needs CPU time (this profile weighs bytes: GPU memory "
					    "or NCCL)");
		else
			err = rules[i].run(a, o);
		if (err)
			return err;
		o->fired = fs->nr_items > before;
	}
	return 0;
}

int findings__analyze(const struct profile *p, struct findings **out)
{
	struct analysis a = {.profile = p};
	struct findings *fs = calloc(1, sizeof(*fs));
	int err = -ENOMEM;

	if (!fs)
		return -ENOMEM;
	a.findings = fs;
	fs->rules = calloc(nr_cpu_rules + nr_gpu_rules + nr_memory_rules, sizeof(*fs->rules));
	if (!fs->rules)
		goto fail;
	err = survey(&a);
	if (err)
		goto fail;
	err = run_rules(&a, cpu_rules, nr_cpu_rules);
	if (!err)
		err = run_rules(&a, gpu_rules, nr_gpu_rules);
	if (!err)
		err = run_rules(&a, memory_rules, nr_memory_rules);
	if (err)
		goto fail;
	if (fs->nr_items > 1)
		qsort(fs->items, fs->nr_items, sizeof(*fs->items), compare_findings);
	forget_frame_matches();
	free(a.is_gpu_stack);
	free(a.is_off_cpu_stack);
	free(a.frame_waits);
	*out = fs;
	return 0;
fail:
	forget_frame_matches();
	free(a.is_gpu_stack);
	free(a.is_off_cpu_stack);
	free(a.frame_waits);
	findings__free(fs);
	return err;
}

void findings__free(struct findings *fs)
{
	if (!fs)
		return;
	for (size_t i = 0; i < fs->nr_items; i++) {
		struct finding *f = &fs->items[i];

		free(f->title);
		free(f->location);
		free(f->suggestion);
		for (size_t k = 0; k < f->nr_evidence; k++)
			free(f->evidence[k]);
	}
	for (size_t i = 0; i < fs->nr_rules; i++)
		free(fs->rules[i].note);
	free(fs->items);
	free(fs->rules);
	free(fs);
}

static size_t shown(const struct findings *fs, const struct findings_write_options *o)
{
	return o->top && o->top < fs->nr_items ? o->top : fs->nr_items;
}

static void write_text(const struct findings *fs, const struct findings_write_options *o, FILE *out)
{
	size_t n = shown(fs, o);

	fprintf(out, "Findings%s%s: %zu\n", o->name ? " for " : "", o->name ? o->name : "",
		fs->nr_items);
	if (!fs->nr_items)
		fprintf(out, "\nNo rule found a problem in what this profile holds.\n");
	for (size_t i = 0; i < n; i++) {
		const struct finding *f = &fs->items[i];

		fprintf(out, "\n%zu. %s\n", i + 1, f->title);
		fprintf(out, "   cost: %.1f%% of %s  [%s]\n", 100 * f->cost, f->cost_of, f->rule);
		if (f->location)
			fprintf(out, "   where: %s\n", f->location);
		for (size_t k = 0; k < f->nr_evidence; k++)
			fprintf(out, "   - %s\n", f->evidence[k]);
		if (f->suggestion)
			fprintf(out, "   suggestion: %s\n", f->suggestion);
	}
	if (o->verbose) {
		fprintf(out, "\nRules:\n");
		for (size_t i = 0; i < fs->nr_rules; i++) {
			const struct rule_outcome *r = &fs->rules[i];

			fprintf(out, "  %-22s %-9s %s\n", r->rule,
				!r->ran	   ? "not run"
				: r->fired ? "fired"
					   : "quiet",
				r->note ? r->note : r->summary);
		}
	}
}

static void write_markdown(const struct findings *fs, const struct findings_write_options *o,
			   FILE *out)
{
	size_t n = shown(fs, o);

	fprintf(out, "## Findings%s", o->name ? " for " : "");
	if (o->name)
		text_output__markdown_code(out, o->name);
	fprintf(out, "\n\n");
	if (!fs->nr_items)
		fprintf(out, "No rule found a problem in what this profile holds.\n");
	for (size_t i = 0; i < n; i++) {
		const struct finding *f = &fs->items[i];

		fprintf(out, "### %zu. %s\n\n", i + 1, f->title);
		fprintf(out, "- **Cost:** %.1f%% of %s (rule `%s`)\n", 100 * f->cost, f->cost_of,
			f->rule);
		if (f->location) {
			fprintf(out, "- **Where:** ");
			text_output__markdown_code(out, f->location);
			fprintf(out, "\n");
		}
		for (size_t k = 0; k < f->nr_evidence; k++) {
			fprintf(out, "- ");
			text_output__markdown_code(out, f->evidence[k]);
			fprintf(out, "\n");
		}
		if (f->suggestion)
			fprintf(out, "- **Suggestion:** %s\n", f->suggestion);
		fprintf(out, "\n");
	}
	if (o->verbose) {
		fprintf(out, "| rule | outcome | note |\n|---|---|---|\n");
		for (size_t i = 0; i < fs->nr_rules; i++) {
			const struct rule_outcome *r = &fs->rules[i];

			fprintf(out, "| `%s` | %s | ", r->rule,
				!r->ran	   ? "not run"
				: r->fired ? "fired"
					   : "quiet");
			text_output__markdown_code(out, r->note ? r->note : r->summary);
			fprintf(out, " |\n");
		}
	}
}

static void write_json(const struct findings *fs, const struct findings_write_options *o, FILE *out)
{
	size_t n = shown(fs, o);

	fprintf(out, "{\"findings\":[");
	for (size_t i = 0; i < n; i++) {
		const struct finding *f = &fs->items[i];

		fprintf(out, "%s{\"rule\":", i ? "," : "");
		text_output__json_string(out, f->rule);
		fprintf(out, ",\"title\":");
		text_output__json_string(out, f->title);
		fprintf(out, ",\"cost\":");
		text_output__json_number(out, f->cost);
		fprintf(out, ",\"cost_of\":");
		text_output__json_string(out, f->cost_of);
		fprintf(out, ",\"location\":");
		if (f->location)
			text_output__json_string(out, f->location);
		else
			fprintf(out, "null");
		fprintf(out, ",\"evidence\":[");
		for (size_t k = 0; k < f->nr_evidence; k++) {
			fprintf(out, "%s", k ? "," : "");
			text_output__json_string(out, f->evidence[k]);
		}
		fprintf(out, "],\"suggestion\":");
		text_output__json_string(out, f->suggestion ? f->suggestion : "");
		fprintf(out, "}");
	}
	fprintf(out, "],\"rules\":[");
	for (size_t i = 0; i < fs->nr_rules; i++) {
		const struct rule_outcome *r = &fs->rules[i];

		fprintf(out, "%s{\"rule\":", i ? "," : "");
		text_output__json_string(out, r->rule);
		fprintf(out, ",\"ran\":%s,\"fired\":%s,\"note\":", r->ran ? "true" : "false",
			r->fired ? "true" : "false");
		text_output__json_string(out, r->note ? r->note : r->summary);
		fprintf(out, "}");
	}
	fprintf(out, "]}\n");
}

int findings__write(const struct findings *fs, const struct findings_write_options *options,
		    enum text_format format, FILE *out)
{
	switch (format) {
	case TEXT_FORMAT_TEXT:
		write_text(fs, options, out);
		break;
	case TEXT_FORMAT_MARKDOWN:
		write_markdown(fs, options, out);
		break;
	case TEXT_FORMAT_JSON:
		write_json(fs, options, out);
		break;
	default:
		return -EINVAL;
	}
	return ferror(out) ? -EIO : 0;
}

void findings__print_summary(const struct findings *fs, size_t top, const char *evidence)
{
	size_t n = top && top < fs->nr_items ? top : fs->nr_items;

	if (!n)
		return;
	status__info("findings (%s):", evidence);
	for (size_t i = 0; i < n; i++) {
		const struct finding *f = &fs->items[i];

		status__text("  %5.1f%% of %-10s %s\n", 100 * f->cost, f->cost_of, f->title);
		if (f->suggestion)
			status__text("          -> %s\n", f->suggestion);
	}
}

int findings__print_top(const struct profile *profile, size_t top, const char *evidence)
{
	struct findings *fs;
	int err = findings__analyze(profile, &fs);

	if (err)
		return err;
	findings__print_summary(fs, top, evidence);
	findings__free(fs);
	return 0;
}
