// SPDX-License-Identifier: GPL-2.0
/*
 * The workload of scripts/ci-example.sh: a request loop that parses and
 * renders a buffer.  Built with -DSLOW_PATH it also escapes every rendered
 * byte on a slow path, the kind of regression the CI job is there to catch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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

#ifdef SLOW_PATH
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
#endif

int main(int argc, char **argv)
{
	long requests = 6000;
	unsigned long sum = 0;
	char *end;

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
