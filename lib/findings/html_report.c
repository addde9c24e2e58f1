// SPDX-License-Identifier: GPL-2.0
/*
 * report --html: one self-contained HTML page (no network, no external
 * resource) that opens from a CI artifact or an e-mail: the interactive
 * flame graph (svg_writer.c, inline), the findings with their evidence and
 * suggestions, the per-process table and the report's tables, each as the
 * text writers print it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "findings/findings.h"
#include "findings/html_report.h"
#include "profile/process_report.h"
#include "profile/svg_writer.h"

/* Writes text for HTML element content, newlines kept. */
static void write_escaped(FILE *out, const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '&')
			fputs("&amp;", out);
		else if (text[i] == '<')
			fputs("&lt;", out);
		else if (text[i] == '>')
			fputs("&gt;", out);
		else
			fputc(text[i], out);
	}
}

enum html_section {
	SECTION_FLAME_GRAPH = 0,
	SECTION_FINDINGS,
	SECTION_PROCESSES,
	SECTION_REPORT,
};

/* Writes one section into a memory buffer: *text and *len, malloc'd. */
static int render_section(const struct profile *p, const struct report_options *options,
			  enum html_section section, char **text, size_t *len)
{
	FILE *buffer = open_memstream(text, len);
	struct findings_write_options write_options = {
	    .name = options->name,
	    .top = options->top,
	    .verbose = true,
	};
	struct findings *findings = NULL;
	struct profile *one = (struct profile *)p;
	int err;

	if (!buffer)
		return -ENOMEM;
	switch (section) {
	case SECTION_FLAME_GRAPH:
		err = svg__write(p, VIEW_ALL, false, buffer);
		break;
	case SECTION_FINDINGS:
		err = findings__analyze(p, &findings);
		if (!err)
			err = findings__write(findings, &write_options, TEXT_FORMAT_TEXT, buffer);
		findings__free(findings);
		break;
	case SECTION_PROCESSES:
		err = process_report__write(&one, &options->name, 1, TEXT_FORMAT_TEXT, buffer);
		break;
	default:
		err = profile_report__write(p, options, TEXT_FORMAT_TEXT, buffer);
		break;
	}
	if (fclose(buffer) && !err)
		err = -ENOMEM;
	if (err) {
		free(*text);
		*text = NULL;
	}
	return err;
}

int html_report__write(const struct profile *p, const struct report_options *options, FILE *out)
{
	static const char *const headings[] = {
	    [SECTION_FLAME_GRAPH] = "Flame graph",
	    [SECTION_FINDINGS] = "Findings",
	    [SECTION_PROCESSES] = "Processes",
	    [SECTION_REPORT] = "Report",
	};
	const char *name = options->name ? options->name : "profile";
	int err = 0;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>",
	      out);
	write_escaped(out, name, strlen(name));
	fputs(" - llmprof</title>\n<style>\n"
	      "body{font-family:Verdana,sans-serif;margin:1em 2em;background:#fff;color:#222}\n"
	      "h1{font-size:1.4em}h2{font-size:1.15em;border-bottom:1px solid #ccc}\n"
	      "pre{background:#f6f6f6;padding:0.6em;overflow-x:auto;font-size:13px}\n"
	      "nav a{margin-right:1em}\n"
	      "</style>\n</head>\n<body>\n<h1>",
	      out);
	write_escaped(out, name, strlen(name));
	fputs("</h1>\n<nav><a href=\"#flame-graph\">Flame graph</a><a href=\"#findings\">Findings"
	      "</a><a href=\"#processes\">Processes</a><a href=\"#report\">Report</a></nav>\n",
	      out);
	for (int s = SECTION_FLAME_GRAPH; s <= SECTION_REPORT && !err; s++) {
		static const char *const ids[] = {"flame-graph", "findings", "processes", "report"};
		char *text = NULL, *start;
		size_t len = 0;

		err = render_section(p, options, s, &text, &len);
		if (err)
			break;
		fprintf(out, "<section id=\"%s\">\n<h2>%s</h2>\n", ids[s], headings[s]);
		if (s == SECTION_FLAME_GRAPH) {
			/* Inline SVG in HTML takes no XML declaration. */
			start = strncmp(text, "<?xml", 5) ? text : strchr(text, '\n') + 1;
			fwrite(start, 1, len - (start - text), out);
		} else {
			fputs("<pre>", out);
			write_escaped(out, text, len);
			fputs("</pre>\n", out);
		}
		fputs("</section>\n", out);
		free(text);
	}
	fputs("</body>\n</html>\n", out);
	if (err)
		return err;
	return fflush(out) || ferror(out) ? -EIO : 0;
}
