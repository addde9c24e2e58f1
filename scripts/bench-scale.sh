#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Large inputs: time and peak memory of report, diff and convert on a folded
# file of many distinct stacks, and of converting a speedscope file of many
# samples.  The inputs are generated deterministically (same sizes, same
# bytes), so runs before and after a change compare like with like.
# Usage: scripts/bench-scale.sh [STACKS] [SAMPLES] [FRAMES]
#   STACKS   distinct stacks in the folded files (default 4000000, ~200 MB)
#   SAMPLES  samples in the speedscope file (default 10000000)
#   FRAMES   distinct frame names in the pool (default 100000)
# A quick run: scripts/bench-scale.sh 100000 200000
# LLMPROF=PATH measures another build of llmprof on the same inputs.  CPU
# seconds (user + system) are the figure to compare on a busy machine.
set -euo pipefail
cd "$(dirname "$0")/.."
stacks=${1:-4000000}
samples=${2:-10000000}
frames=${3:-100000}
build_dir=${BUILD_DIR:-build}
[ -n "${LLMPROF:-}" ] || [ -x "$build_dir/cmd/llmprof" ] || BUILD_DIR=$build_dir scripts/build.sh >/dev/null
llmprof=$(realpath "${LLMPROF:-$build_dir/cmd/llmprof}")
work=${BENCH_WORK:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${BENCH_WORK:-}" ] || trap 'rm -rf "$work"' EXIT
[ -x /usr/bin/time ] || { echo "bench-scale: needs /usr/bin/time (GNU time)" >&2; exit 1; }

cat >"$work/generate.c" <<'C'
/* generate folded SEED STACKS FRAMES | generate speedscope SEED SAMPLES FRAMES */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ x >> 33;
}

/* A frame name from the pool: short, like most symbols, with a few long
 * C++ ones. */
static void frame_name(char *buf, size_t size, uint64_t id)
{
	if (id % 16 == 0)
		snprintf(buf, size, "ns%u::Class%u<int>::method%u(long)", (unsigned)(id % 97),
			 (unsigned)(id % 1013), (unsigned)id);
	else
		snprintf(buf, size, "fn_%u", (unsigned)id);
}

/* Stack i: a root, 1-6 pool frames chosen by hash, then two frames made from
 * i's digits in base 4096 so every stack is distinct. */
static int stack_frames(uint64_t seed, uint64_t i, uint64_t pool, uint64_t *out)
{
	uint64_t h = mix(seed ^ (i * 0x9e3779b97f4a7c15ULL));
	int depth = 0, extra = 1 + h % 5;

	out[depth++] = pool;
	for (int d = 0; d < extra; d++)
		out[depth++] = mix(h + d) % pool;
	out[depth++] = pool + 1 + (i / 4096) % 4096;
	out[depth++] = pool + 1 + 4096 + i % 4096;
	return depth;
}

int main(int argc, char **argv)
{
	uint64_t seed, count, pool, ids[16];
	char name[128];

	if (argc != 5)
		return 2;
	seed = strtoull(argv[2], NULL, 10);
	count = strtoull(argv[3], NULL, 10);
	pool = strtoull(argv[4], NULL, 10);
	if (!strcmp(argv[1], "folded")) {
		for (uint64_t i = 0; i < count; i++) {
			int depth = stack_frames(seed, i, pool, ids);

			for (int d = 0; d < depth; d++) {
				if (ids[d] == pool)
					strcpy(name, "main");
				else if (ids[d] > pool)
					snprintf(name, sizeof(name), "leaf_%u",
						 (unsigned)(ids[d] - pool));
				else
					frame_name(name, sizeof(name), ids[d]);
				fputs(name, stdout);
				putchar(d + 1 < depth ? ';' : ' ');
			}
			printf("%u\n", (unsigned)(1 + mix(seed + i) % 50));
		}
		return 0;
	}
	/* speedscope: shared frames are the pool, main and the leaves; one
	 * sampled profile whose samples walk 1/10 as many distinct stacks. */
	printf("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	       "\"shared\":{\"frames\":[");
	for (uint64_t f = 0; f < pool + 1 + 8192; f++) {
		if (f == pool)
			strcpy(name, "main");
		else if (f > pool)
			snprintf(name, sizeof(name), "leaf_%u", (unsigned)(f - pool));
		else
			frame_name(name, sizeof(name), f);
		printf("%s{\"name\":\"%s\"}", f ? "," : "", name);
	}
	printf("]},\"profiles\":[{\"type\":\"sampled\",\"name\":\"bench\",\"unit\":\"microseconds\","
	       "\"startValue\":0,\"endValue\":%llu,\"samples\":[",
	       (unsigned long long)count * 1000);
	for (uint64_t i = 0; i < count; i++) {
		int depth = stack_frames(seed, mix(i) % (count / 10 + 1), pool, ids);

		printf("%s[", i ? "," : "");
		for (int d = 0; d < depth; d++)
			printf("%s%llu", d ? "," : "", (unsigned long long)ids[d]);
		putchar(']');
	}
	printf("],\"weights\":[");
	for (uint64_t i = 0; i < count; i++)
		printf("%s1000", i ? "," : "");
	printf("]}],\"name\":\"bench\",\"activeProfileIndex\":0,\"exporter\":\"bench-scale\"}\n");
	return 0;
}
C
cc -O2 -o "$work/generate" "$work/generate.c"
"$work/generate" folded 1 "$stacks" "$frames" >"$work/a.folded"
"$work/generate" folded 2 "$stacks" "$frames" >"$work/b.folded"
"$work/generate" speedscope 3 "$samples" "$frames" >"$work/c.speedscope"

# measure NAME COMMAND...: wall seconds and peak RSS (MB) of one run.
printf '%-30s %8s %8s %8s %8s\n' case input_MB wall_s cpu_s peak_MB
measure() {
	local name=$1 input=$2
	shift 2
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" >/dev/null 2>"$work/err" ||
		{ echo "bench-scale: $name failed: $(tail -1 "$work/err")" >&2; exit 1; }
	read -r seconds user system kb <"$work/time"
	printf '%-30s %8d %8s %8.2f %8d\n' "$name" $(($(stat -c %s "$input") >> 20)) "$seconds" \
		"$(awk "BEGIN { print $user + $system }")" $((kb >> 10))
}
measure "report" "$work/a.folded" "$llmprof" report "$work/a.folded"
measure "diff" "$work/a.folded" "$llmprof" diff "$work/a.folded" "$work/b.folded"
measure "convert -f speedscope" "$work/a.folded" \
	"$llmprof" convert -f speedscope -o "$work/a.speedscope" "$work/a.folded"
measure "convert speedscope->folded" "$work/c.speedscope" \
	"$llmprof" convert -f folded -o "$work/c.folded" "$work/c.speedscope"
measure "convert speedscope->speedscope" "$work/c.speedscope" \
	"$llmprof" convert -f speedscope -o "$work/c.out.speedscope" "$work/c.speedscope"
echo "($stacks distinct stacks per folded file, $samples speedscope samples, $frames pool frames)"
