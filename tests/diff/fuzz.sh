#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A short libFuzzer run of the profile reader, seeded with the test inputs;
# fails on any crash, leak, sanitizer report or timeout.
# usage: fuzz.sh FUZZER DICT WORKDIR SECONDS SEED_DIR...
set -eu
fuzzer=$1 dict=$2 work=$3 seconds=$4
shift 4
mkdir -p "$work/corpus" "$work/artifacts"
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
	-print_final_stats=1 -dict="$dict" -artifact_prefix="$work/artifacts/" \
	"$work/corpus" "$@"
