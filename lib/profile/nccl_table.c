// SPDX-License-Identifier: GPL-2.0
/*
 * The NCCL table of a profile (profile->nccl) as text: per operation, size
 * bucket and communicator size, calls, bytes, GPU time and the bandwidths
 * nccl-tests reports, then the communication no compute hid.  The recording's
 * summary and `llmprof report` print the same lines.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/text_output.h"

#define TABLE_ROWS 20

double nccl_row__bus_factor(const struct nccl_row *row)
{
	double n = row->ranks;

	if (!row->ranks)
		return 1.0;
	if (!strcmp(row->operation, "AllReduce"))
		return 2.0 * (n - 1) / n;
	if (!strcmp(row->operation, "AllGather") || !strcmp(row->operation, "ReduceScatter") ||
	    !strcmp(row->operation, "AllToAll") || !strcmp(row->operation, "Gather") ||
	    !strcmp(row->operation, "Scatter"))
		return (n - 1) / n;
	return 1.0;
}

char *nccl_facts__format(const struct nccl_facts *f, const char *indent)
{
	char *text = NULL;
	size_t length = 0;
	FILE *out;

	if (!f->known || (!f->nr_rows && !f->kernel_ns))
		return NULL;
	out = open_memstream(&text, &length);
	if (!out)
		return NULL;
	if (f->nr_rows)
		fprintf(out, "%s%-14s %10s %5s %7s %10s %11s %11s %11s\n", indent, "operation",
			"size up to", "ranks", "calls", "bytes", "GPU ms", "algbw GB/s",
			"busbw GB/s");
	for (size_t i = 0; i < f->nr_rows && i < TABLE_ROWS; i++) {
		const struct nccl_row *r = &f->rows[i];
		char bucket[32], bytes[32], ranks[16] = "?";

		text_output__bytes(bucket, sizeof(bucket), r->bucket);
		text_output__bytes(bytes, sizeof(bytes), r->bytes);
		if (r->ranks)
			snprintf(ranks, sizeof(ranks), "%u", r->ranks);
		fprintf(out, "%s%-14s %10s %5s %7" PRIu64 " %10s", indent, r->operation, bucket,
			ranks, r->calls, bytes);
		if (r->gpu_ns) {
			double algbw = (double)r->timed_size / r->gpu_ns; /* bytes/ns = GB/s */

			fprintf(out, " %11.3f %11.3f %11.3f\n", r->gpu_ns / 1e6, algbw,
				algbw * nccl_row__bus_factor(r));
		} else {
			fprintf(out, " %11s %11s %11s\n", "-", "-", "-");
		}
	}
	if (f->nr_rows > TABLE_ROWS)
		fprintf(out, "%s... %zu more rows\n", indent, f->nr_rows - TABLE_ROWS);
	if (f->nr_rows)
		fprintf(out,
			"%sbusbw = algbw x 2(n-1)/n for AllReduce, (n-1)/n for AllGather, "
			"ReduceScatter, AllToAll, Gather and Scatter, 1 for the rest "
			"(nccl-tests)\n",
			indent);
	if (f->kernel_ns)
		fprintf(out,
			"%sexposed communication: %.3f ms of %.3f ms of NCCL GPU time (%.1f%%) ran "
			"with no compute kernel on its device: %.2f%% of %.3f s wall time on "
			"%u device%s\n",
			indent, f->exposed_ns / 1e6, f->kernel_ns / 1e6,
			100.0 * f->exposed_ns / f->kernel_ns,
			f->wall_ns && f->devices ? 100.0 * f->exposed_ns / f->wall_ns / f->devices
						 : 0.0,
			f->wall_ns / 1e9, f->devices, f->devices == 1 ? "" : "s");
	if (fclose(out)) {
		free(text);
		return NULL;
	}
	return text;
}

void nccl_facts__write_json(const struct nccl_facts *f, FILE *out)
{
	fprintf(out,
		",\"llmprofNccl\":{\"kernelNs\":%" PRIu64 ",\"exposedNs\":%" PRIu64
		",\"wallNs\":%" PRIu64 ",\"devices\":%u,\"rows\":[",
		f->kernel_ns, f->exposed_ns, f->wall_ns, f->devices);
	for (size_t i = 0; i < f->nr_rows; i++) {
		const struct nccl_row *r = &f->rows[i];

		/* Operation names are NCCL's, plain ASCII. */
		fprintf(out,
			"%s{\"operation\":\"%s\",\"bucket\":%" PRIu64
			",\"ranks\":%u,\"calls\":%" PRIu64 ",\"bytes\":%" PRIu64
			",\"size\":%" PRIu64 ",\"gpuNs\":%" PRIu64 ",\"timedCalls\":%" PRIu64
			",\"timedSize\":%" PRIu64 "}",
			i ? "," : "", r->operation, r->bucket, r->ranks, r->calls, r->bytes,
			r->size, r->gpu_ns, r->timed_calls, r->timed_size);
	}
	fputs("]}", out);
}
