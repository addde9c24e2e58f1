#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A short libFuzzer run of llmprof mcp's message handler, seeded with
# requests of every kind; fails on any crash, leak, sanitizer report or
# timeout.
# usage: fuzz.sh FUZZER SEED_DIR WORKDIR SECONDS
set -eu
fuzzer=$1 seeds=$2 work=$3 seconds=$4
mkdir -p "$work/corpus" "$work/artifacts"
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
	-print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds"
