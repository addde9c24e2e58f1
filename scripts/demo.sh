#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Installs what is missing, builds llmprof, starts the bundled demo workload
# (a program whose functions take 50, 30 and 20 percent of its CPU), profiles
# it for a few seconds and writes a folded file and a speedscope file.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
out_dir=${1:-demo-output}

scripts/install-deps.sh
BUILD_DIR=$build_dir scripts/build.sh
mkdir -p "$out_dir"

"$build_dir/fixtures/ground_truth" 12 >/dev/null &
workload=$!
trap 'kill $workload 2>/dev/null || true' EXIT
sleep 0.5
echo "demo: profiling the demo workload (PID $workload) for 4 seconds at 999 Hz" >&2
"$build_dir/cmd/llmprof" attach -p $workload -d 4 -F 999 -o "$out_dir/demo.folded"
"$build_dir/cmd/llmprof" attach -p $workload -d 4 -F 999 -f speedscope \
	-o "$out_dir/demo.speedscope.json" 2>/dev/null
cat >&2 <<MSG

demo: wrote
  $(realpath "$out_dir/demo.folded")           (flamegraph.pl $out_dir/demo.folded > demo.svg)
  $(realpath "$out_dir/demo.speedscope.json")  (open at https://www.speedscope.app or: npx speedscope FILE)
MSG
