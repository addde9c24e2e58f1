#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The cost of --gpu-memory per allocation: the mock CUDA stack's fixture
# makes N cudaMalloc/cudaFree pairs of 4 KiB (each pair is two runtime calls
# and the two driver calls inside them: four entry and four return probes,
# two records with stacks), alone and under llmprof record --gpu-memory,
# interleaved.  Prints the median time per pair of each and the difference:
# what one allocation and its free cost the target.
#
# Usage: scripts/bench-gpu-memory.sh [RUNS] [PAIRS]   (root; default 5 runs
# of 100000 pairs)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
pairs=${2:-100000}
build_dir=${BUILD_DIR:-build}
[ -x "$build_dir/cmd/llmprof" ] || BUILD_DIR=$build_dir scripts/build.sh >/dev/null
cmake --build "$build_dir" --target memory_app >/dev/null
llmprof=$build_dir/cmd/llmprof
app=$build_dir/tests/mock_cuda/memory_app
export LD_LIBRARY_PATH=$build_dir/tests/mock_cuda/lib
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

per_pair() { sed -n 's/.*, \([0-9.]*\) us per pair$/\1/p'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for run in $(seq "$runs"); do
	"$app" --bench "$pairs" | per_pair >>"$work/alone"
	"$llmprof" record --no-gpu --gpu-memory -o "$work/profile" -- "$app" --bench "$pairs" \
		2>"$work/err" | per_pair >>"$work/probed"
	grep -q "GPU memory: $pairs allocations" "$work/err" ||
		{ echo "llmprof did not see every allocation:" >&2; cat "$work/err" >&2; exit 1; }
done
alone=$(median <"$work/alone")
probed=$(median <"$work/probed")
echo "cudaMalloc/cudaFree pair of 4 KiB, median of $runs runs of $pairs pairs:"
printf "  alone            %8.2f us\n" "$alone"
printf "  --gpu-memory     %8.2f us\n" "$probed"
awk -v a="$alone" -v p="$probed" 'BEGIN {
	printf "  cost per pair    %8.2f us (%.2f us per allocation or free)\n", p - a, (p - a) / 2
	printf "  at 100k pairs/s  %8.1f%% of one CPU\n", (p - a) * 100000 / 1e4
}'
