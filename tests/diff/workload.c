// SPDX-License-Identifier: GPL-2.0
/*
 * The workload of scripts/ci-example.sh: a request loop that parses and
 * renders a buffer.  Built with -DSLOW_PATH it also escapes every rendered
 * byte on a slow path, the kind of regression the CI job is there to catch.
 *
 * With --shares PARSE,RENDER,ESCAPE SECONDS it spends those percentages of
 * SECONDS of CPU time in the three functions instead, so the diff tests know
 * the true shares: in short chunks picked at random with those odds, so that
 * no fixed pattern beats with the sampling period.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned char buffer[64 * 256];

__attribute__((noinline)) static unsigned long parse_request(unsigned long seed)
{
	unsigned long h = seed;

	for (size_t i = 0; i < sizeof(buffer); i++) {
		h = h * 6364136223846793005UL + 1442695040888963407UL;
		buffer[i] = h >> 56;
	}
	return h;
}

__attribute__((noinline)) static unsigned long render_rows(void)
{
	unsigned long sum = 0;

	for (int pass = 0; pass < 4; pass++)
		for (size_t i = 0; i < sizeof(buffer); i++)
			sum = sum * 31 + (buffer[i] ^ pass);
	return sum;
}

__attribute__((noinline)) static unsigned long escape_rows(void)
{
	unsigned long escaped = 0;

	for (int pass = 0; pass < 4; pass++)
		for (size_t i = 0; i < sizeof(buffer); i++)
			if (buffer[i] < 0x20 || buffer[i] == '"' || buffer[i] == '\\')
				escaped += i ^ pass;
			else
				escaped = escaped * 33 + buffer[i];
	return escaped;
}

static double clock_seconds(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One call of function f. */
static unsigned long call(int f, unsigned long seed)
{
	switch (f) {
	case 0:
		return parse_request(seed);
	case 1:
		return render_rows();
	default:
		return escape_rows();
	}
}

static int run_shares(const char *shares, const char *seconds_text, const char *self)
{
	double seconds, start;
	int share[3], n = 0;
	unsigned long sum = 0, rng = 0x9e3779b97f4a7c15UL;
	char *end;

	if (sscanf(shares, "%d,%d,%d%n", &share[0], &share[1], &share[2], &n) != 3 || shares[n] ||
	    share[0] < 0 || share[1] < 0 || share[2] < 0 || share[0] + share[1] + share[2] != 100)
		goto usage;
	errno = 0;
	seconds = strtod(seconds_text, &end);
	if (errno || end == seconds_text || *end || !(seconds > 0 && seconds <= 3600))
		goto usage;
	start = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
	while (clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - start < seconds) {
		double chunk_end = clock_seconds(CLOCK_MONOTONIC) + 200e-6;
		int r, f;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		r = rng % 100;
		f = r < share[0] ? 0 : r < share[0] + share[1] ? 1 : 2;
		/* A chunk is 200 us, timed on the cheap clock (a chunk cut
		 * short by preemption is as likely for any function); the
		 * whole run is SECONDS of CPU time, so the number of samples
		 * does not depend on what else runs on the machine. */
		do
			sum += call(f, rng);
		while (clock_seconds(CLOCK_MONOTONIC) < chunk_end);
	}
	printf("checksum %lu\n", sum & 0xffff);
	return 0;
usage:
	fprintf(stderr,
		"usage: %s --shares PARSE,RENDER,ESCAPE SECONDS (percentages adding "
		"up to 100)\n",
		self);
	return 2;
}

int main(int argc, char **argv)
{
	long requests = 6000;
	unsigned long sum = 0;
	char *end;

	if (argc > 1 && !strcmp(argv[1], "--shares")) {
		if (argc != 4) {
			fprintf(stderr, "usage: %s --shares PARSE,RENDER,ESCAPE SECONDS\n",
				argv[0]);
			return 2;
		}
		return run_shares(argv[2], argv[3], argv[0]);
	}
	if (argc > 1) {
		errno = 0;
		requests = strtol(argv[1], &end, 10);
		if (errno || end == argv[1] || *end || requests < 1 || requests > 100000000) {
			fprintf(stderr, "usage: %s [REQUESTS]\n", argv[0]);
			return 2;
		}
	}
	for (long r = 0; r < requests; r++) {
		sum += parse_request(r);
		sum += render_rows();
#ifdef SLOW_PATH
		sum += escape_rows();
#endif
	}
	printf("checksum %lu\n", sum & 0xffff);
	return 0;
}
