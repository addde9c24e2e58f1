#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Google's pprof reads llmprof's pprof output as llmprof reads its input:
# every function's flat and cum in `pprof -top` are its self and total in
# `llmprof report`, and `pprof -traces` lists the stacks of the folded output.
. "$TESTS_SOURCE/lib/testlib.sh"
PPROF_CHECK="python3 $TESTS_SOURCE/formats/pprof_check.py"
inputs=$TESTS_SOURCE/diff/inputs

for f in base.folded new.folded perf.folded bcc.folded gpu.folded pyspy.raw lf.folded \
	noise_base.folded evented.folded empty.folded recorded.speedscope.json \
	evented.speedscope.json pyspy.speedscope.json gpu_streams.speedscope.json; do
	"$LLMPROF" convert -f pprof -o "$WORK/p.pb.gz" "$inputs/$f" || fail "$f to pprof"
	"$LLMPROF" report -f json --top 0 "$inputs/$f" >"$WORK/report.json" || fail "report $f"
	$PPROF_CHECK top "$PPROF" "$WORK/p.pb.gz" "$WORK/report.json" || fail "$f: pprof -top"
	"$LLMPROF" convert -f folded "$inputs/$f" >"$WORK/p.folded" || fail "$f to folded"
	$PPROF_CHECK traces "$PPROF" "$WORK/p.pb.gz" "$WORK/p.folded" || fail "$f: pprof -traces"
done

# The sample timeline's threads are labels pprof can filter by.
"$LLMPROF" convert -f pprof -o "$WORK/t.pb.gz" "$inputs/recorded.speedscope.json" || fail "timeline"
$PPROF_CHECK tags "$PPROF" "$WORK/t.pb.gz" thread=train thread=loader tid=101 pid=100 ||
	fail "thread labels"
# Same input, same bytes.
"$LLMPROF" convert -f pprof "$inputs/recorded.speedscope.json" | cmp - "$WORK/t.pb.gz" ||
	fail "pprof output is not deterministic"
echo PASS
