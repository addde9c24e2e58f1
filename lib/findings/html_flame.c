// SPDX-License-Identifier: GPL-2.0
/*
 * The flame graph data of one view of the HTML page, as JSON for the page's
 * script to draw: the call tree of the view's stacks (a node per function on
 * each path, in preorder, by depth), and the weights of the stacks by the
 * node they end in and the thread that ran them, so that the page can show
 * one process or thread with its shares recomputed.  Stacks are sorted by
 * their functions' names and merged in one pass, as svg_writer.c does; a
 * node narrower than HTML_MIN_SHARE of its process (its root frame) is cut,
 * its weight kept by its parent, so that the page holds what can be drawn
 * and every total stays exact.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "findings/html_page.h"
#include "profile/flame_class.h"
#include "profile/function_rank.h"
#include "profile/output.h"
#include "profile/text_output.h"

/* A tenth of a pixel of the page's 1180 px graph. */
#define HTML_MIN_SHARE (0.1 / 1180)

struct flame {
	const struct profile *p;
	struct function_rank functions;
	uint32_t *order; /* the view's stacks, in merge order */
	size_t nr_order;
	uint32_t *kept;	  /* per stack in order[]: how many of its frames are nodes */
	uint32_t *common; /* per stack in order[]: its functions the one before shares */
	uint32_t *leaf;	  /* per stack: the node it ends in */
	uint32_t nr_nodes;
	uint64_t *root_total; /* per frame, as a root: its stacks' weight */
	size_t value;	      /* which of the stacks' values is drawn */
};

/* What a stack weighs in the view's value. */
static uint64_t stack_weight(const struct flame *g, uint32_t stack)
{
	return g->value ? profile__stack_value(g->p, stack, g->value) : g->p->stacks[stack].weight;
}

/* How many leading frames two stacks share, as functions. */
static uint32_t common_prefix(const struct flame *g, const struct stack *a, const struct stack *b,
			      uint32_t limit)
{
	uint32_t d = 0;

	while (d < limit && d < a->depth && d < b->depth &&
	       g->functions.rank[a->frames[d]] == g->functions.rank[b->frames[d]])
		d++;
	return d;
}

/*
 * Which frames of each stack are nodes: a node is kept when its weight is
 * HTML_MIN_SHARE of its root's or more, and a kept node's parent is kept,
 * so each stack keeps a prefix of its frames.  The sorted stacks through a
 * node are a run of order[]: a node closing with enough weight marks its
 * run as keeping its depth.  0 or -ENOMEM.
 */
static int keep_nodes(struct flame *g)
{
	struct open_node {
		size_t first; /* its first stack in order[] */
		uint64_t weight;
	} *path = NULL;
	const struct profile *p = g->p;
	uint32_t depth = 0, cap = 0;

	for (size_t i = 0; i <= g->nr_order; i++) {
		const struct stack *s = i < g->nr_order ? &p->stacks[g->order[i]] : NULL;
		const struct stack *prev = i ? &p->stacks[g->order[i - 1]] : NULL;
		uint32_t common = s && prev ? (g->common[i] < depth ? g->common[i] : depth) : 0;

		for (; depth > common; depth--) {
			const struct open_node *o = &path[depth - 1];
			uint64_t root = g->root_total[prev->frames[0]];

			if ((double)o->weight < HTML_MIN_SHARE * root)
				continue;
			for (size_t k = o->first; k < i; k++)
				if (g->kept[k] < depth)
					g->kept[k] = depth;
		}
		if (!s)
			break;
		if (s->depth > cap) {
			struct open_node *bigger = realloc(path, (s->depth + 16) * sizeof(*path));

			if (!bigger) {
				free(path);
				return -ENOMEM;
			}
			path = bigger;
			cap = s->depth + 16;
		}
		for (; depth < s->depth; depth++)
			path[depth] = (struct open_node){.first = i};
		for (uint32_t d = 0; d < depth; d++)
			path[d].weight += stack_weight(g, g->order[i]);
	}
	free(path);
	return 0;
}

/* A stack's (node, thread) weight: thread -1 where no sample says. */
struct flame_entry {
	uint32_t node;
	int32_t thread;
	uint64_t weight;
};

static int compare_entries(const void *a, const void *b)
{
	const struct flame_entry *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->thread < y->thread ? -1 : x->thread > y->thread;
}

/* The weights by node and thread: samples name their thread; what a
 * stack weighs beyond its samples (GPU work, folded input, a value other
 * than the weight) has none. */
static int write_entries(const struct flame *g, FILE *out)
{
	const struct profile *p = g->p;
	uint64_t *sampled = calloc(p->nr_stacks ? p->nr_stacks : 1, sizeof(*sampled));
	uint64_t *unthreaded = calloc(g->nr_nodes ? g->nr_nodes : 1, sizeof(*unthreaded));
	struct flame_entry *entries = NULL;
	size_t nr = 0, cap = 0, next = 0;
	int err = -ENOMEM;

	if (!sampled || !unthreaded)
		goto out;
	for (size_t i = 0; i < (g->value ? 0 : p->nr_samples); i++) {
		const struct sample *s = &p->samples[i];

		if (g->leaf[s->stack] == UINT32_MAX)
			continue;
		if (array__grow((void **)&entries, &cap, nr + 1, sizeof(*entries)))
			goto out;
		entries[nr++] =
		    (struct flame_entry){g->leaf[s->stack], (int32_t)s->thread, s->weight};
		sampled[s->stack] += s->weight;
	}
	for (size_t stack = 0; stack < p->nr_stacks; stack++) {
		uint64_t weight = stack_weight(g, stack);

		if (g->leaf[stack] != UINT32_MAX && sampled[stack] < weight)
			unthreaded[g->leaf[stack]] += weight - sampled[stack];
	}
	qsort(entries, nr, sizeof(*entries), compare_entries);
	fputs(",\"entries\":[", out);
	for (uint32_t node = 0, n = 0; node < g->nr_nodes; node++) {
		if (unthreaded[node])
			fprintf(out, "%s%u,-1,%llu", n++ ? "," : "", node,
				(unsigned long long)unthreaded[node]);
		while (next < nr && entries[next].node == node) {
			struct flame_entry e = entries[next];

			for (next++; next < nr && !compare_entries(&entries[next], &e); next++)
				e.weight += entries[next].weight;
			fprintf(out, "%s%u,%d,%llu", n++ ? "," : "", e.node, e.thread,
				(unsigned long long)e.weight);
		}
	}
	fputc(']', out);
	err = 0;
out:
	free(sampled);
	free(unthreaded);
	free(entries);
	return err;
}

/* The kept nodes in preorder: their depths and functions; each stack's
 * leaf node.  The functions named are listed after, in first use order. */
static int write_nodes(struct flame *g, FILE *out)
{
	const struct profile *p = g->p;
	size_t n = g->functions.nr_functions ? g->functions.nr_functions : 1;
	uint32_t *function_index = malloc(n * sizeof(uint32_t));
	uint32_t *used = malloc(n * sizeof(uint32_t));
	uint32_t *path = NULL, nr_used = 0, nodes = 0, depth = 0, cap = 0;
	char *functions = NULL;
	size_t functions_len = 0;
	FILE *fn_out = NULL;
	int err = -ENOMEM;

	if (!function_index || !used)
		goto out;
	memset(function_index, 0xff, n * sizeof(uint32_t));
	fn_out = open_memstream(&functions, &functions_len);
	if (!fn_out)
		goto out;
	fputs(",\"depth\":[", out);
	for (size_t i = 0; i < g->nr_order; i++) {
		const struct stack *s = &p->stacks[g->order[i]];
		const struct stack *prev = i ? &p->stacks[g->order[i - 1]] : NULL;
		uint32_t kept = g->kept[i];
		uint32_t limit = depth < kept ? depth : kept;
		uint32_t common = prev ? (g->common[i] < limit ? g->common[i] : limit) : 0;

		if (kept > cap) {
			uint32_t *bigger = realloc(path, (kept + 16) * sizeof(*path));

			if (!bigger)
				goto out;
			path = bigger;
			cap = kept + 16;
		}
		for (depth = common; depth < kept; depth++) {
			uint32_t f = g->functions.rank[s->frames[depth]];

			if (function_index[f] == UINT32_MAX) {
				function_index[f] = nr_used;
				used[nr_used++] = f;
			}
			fprintf(out, "%s%u", nodes ? "," : "", depth);
			fprintf(fn_out, "%s%u", nodes ? "," : "", function_index[f]);
			path[depth] = nodes++;
		}
		g->leaf[g->order[i]] = kept ? path[kept - 1] : UINT32_MAX;
	}
	g->nr_nodes = nodes;
	if (fclose(fn_out))
		goto out_closed;
	fn_out = NULL;
	fputs("],\"function\":[", out);
	fwrite(functions, 1, functions_len, out);
	fputs("],\"names\":[", out);
	for (uint32_t i = 0; i < nr_used; i++) {
		const struct frame *f = &p->frames[g->functions.first_frame[used[i]]];
		char text[512];
		const char *name = frame__text(f, text, sizeof(text));

		if (i)
			fputc(',', out);
		text_output__json_string(out, name && name[0] ? name : "[unknown]");
	}
	fputs("],\"classes\":[", out);
	for (uint32_t i = 0; i < nr_used; i++)
		fprintf(out, "%s%d", i ? "," : "",
			flame_class__of(&p->frames[g->functions.first_frame[used[i]]]));
	fputs("],\"files\":[", out);
	for (uint32_t i = 0; i < nr_used; i++) {
		const struct frame *f = &p->frames[g->functions.first_frame[used[i]]];

		if (i)
			fputc(',', out);
		if (f->file)
			text_output__json_string(out, f->file);
		else
			fputs("null", out);
	}
	fputc(']', out);
	err = 0;
	goto out;
out_closed:
	fn_out = NULL;
out:
	if (fn_out)
		fclose(fn_out);
	free(functions);
	free(function_index);
	free(used);
	free(path);
	return err;
}

int html_flame__write(const struct html_view *view, FILE *out)
{
	const struct profile *p = view->profile;
	struct flame g = {.p = p, .value = view->value};
	uint64_t total = 0;
	int err = -ENOMEM;

	g.order = malloc((p->nr_stacks ? p->nr_stacks : 1) * sizeof(*g.order));
	g.kept = calloc(p->nr_stacks ? p->nr_stacks : 1, sizeof(*g.kept));
	g.common = malloc((p->nr_stacks ? p->nr_stacks : 1) * sizeof(*g.common));
	g.leaf = malloc((p->nr_stacks ? p->nr_stacks : 1) * sizeof(*g.leaf));
	g.root_total = calloc(p->nr_frames ? p->nr_frames : 1, sizeof(*g.root_total));
	if (!g.order || !g.kept || !g.common || !g.leaf || !g.root_total)
		goto out;
	err = function_rank__init(&g.functions, p);
	if (err)
		goto out;
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct stack *s = &p->stacks[i];
		uint64_t weight = stack_weight(&g, i);

		g.leaf[i] = UINT32_MAX;
		if (!weight || !s->depth ||
		    (view->stacks != VIEW_ALL &&
		     profile__stack_is_gpu(p, i) != (view->stacks == VIEW_GPU)))
			continue;
		g.order[g.nr_order++] = i;
		g.root_total[s->frames[0]] += weight;
		total += weight;
	}
	if (g.nr_order > 1)
		function_rank__sort_stacks(&g.functions, g.order, g.nr_order);
	/* Once for both passes: the stacks lie apart in memory. */
	for (size_t i = 1; i < g.nr_order; i++)
		g.common[i] = common_prefix(&g, &p->stacks[g.order[i]], &p->stacks[g.order[i - 1]],
					    UINT32_MAX);
	err = keep_nodes(&g);
	if (err)
		goto out;
	fputs("{\"name\":", out);
	text_output__json_string(out, view->name);
	fprintf(out, ",\"input\":%zu,\"unit\":%d,\"total\":%llu,\"stacks\":%zu", view->input,
		view->unit, (unsigned long long)total, g.nr_order);
	/* A count of something other than samples (objects) is a number. */
	if (view->unit == UNIT_SAMPLES &&
	    strcmp(profile__value_type(p, view->value).name, "samples"))
		fputs(",\"noun\":\"\"", out);
	err = write_nodes(&g, out);
	if (!err)
		err = write_entries(&g, out);
	if (err)
		goto out;
	fputs(",\"threads\":[", out);
	for (size_t i = 0; i < p->nr_threads; i++) {
		fprintf(out, "%s[%u,%u,", i ? "," : "", p->threads[i].pid, p->threads[i].tid);
		text_output__json_string(out, p->threads[i].name ? p->threads[i].name : "");
		fputc(']', out);
	}
	fputs("]}", out);
	err = ferror(out) ? -EIO : 0;
out:
	function_rank__free(&g.functions);
	free(g.order);
	free(g.kept);
	free(g.common);
	free(g.leaf);
	free(g.root_total);
	return err;
}
