#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A recorded profile written as pprof is read by Google's pprof with the
# fixture's known shares (50/30/20), its process and thread labels, real
# time and period; inlined frames are lines of their caller's location; and
# llmprof reads it back with the process frame at the root.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
PPROF_CHECK="python3 $TESTS_SOURCE/formats/pprof_check.py"

"$LLMPROF" record -F 999 -f pprof -o "$WORK/gt.pb.gz" -- "$FIXTURES/ground_truth" 3 \
	>/dev/null 2>"$WORK/err" || fail "record failed: $(cat "$WORK/err")"
grep -q "wrote a pprof profile to $WORK/gt.pb.gz" "$WORK/err" || fail "summary: $(cat "$WORK/err")"
$PPROF_CHECK shares "$PPROF" "$WORK/gt.pb.gz" burn_a=50 burn_b=30 burn_c=20 --tolerance 3 ||
	fail "pprof's shares"
$PPROF_CHECK tags "$PPROF" "$WORK/gt.pb.gz" process=ground_truth thread=ground_truth ||
	fail "labels"
"$PPROF" -raw "$WORK/gt.pb.gz" >"$WORK/raw" 2>&1 || fail "pprof -raw: $(cat "$WORK/raw")"
grep -q '^PeriodType: cpu nanoseconds' "$WORK/raw" || fail "period type: $(head -5 "$WORK/raw")"
grep -q '^Period: 1001001$' "$WORK/raw" || fail "period"
# samples is the default type, so pprof shows what llmprof reads.
grep -q '^samples/count\[dflt\] cpu/nanoseconds' "$WORK/raw" || fail "sample types: $(grep -A1 '^Samples:' "$WORK/raw")"
year=$(date +%Y)
grep -q "^Time: $year-" "$WORK/raw" || fail "time: $(grep ^Time "$WORK/raw")"
# The span runs from the session's start, before the command is started, to
# its end after the exit is drained: on a loaded machine a few tenths more.
grep -Eq '^Duration: (2\.9|3\.[0-4])' "$WORK/raw" || fail "duration: $(grep ^Duration "$WORK/raw")"
grep -q 'burn_a [^ ]*/ground_truth.c:[0-9]' "$WORK/raw" || fail "burn_a has no file and line"

"$LLMPROF" convert -f folded -o "$WORK/gt.folded" "$WORK/gt.pb.gz" || fail "read back"
$CHECK has "$WORK/gt.folded" '^ground_truth;' || fail "process frame missing when read back"
$CHECK shares "$WORK/gt.folded" --self burn_a=50 --self burn_b=30 --self burn_c=20 \
	--total share_bc=50 --total main=100 --tolerance 3 || fail "shares read back"

# Inlining: mix() is inlined into Worker::run(); pprof has them as two lines
# of one location, mix() first.
"$LLMPROF" record -F 499 -f pprof -o "$WORK/cxx.pb.gz" -- "$FIXTURES/cxx_inline" 1.5 \
	>/dev/null 2>"$WORK/err" || fail "record cxx_inline: $(cat "$WORK/err")"
"$PPROF" -raw "$WORK/cxx.pb.gz" >"$WORK/cxx.raw" 2>&1 || fail "pprof -raw cxx"
python3 - "$WORK/cxx.raw" <<'PY' || fail "inlined location"
import re, sys
text = open(sys.argv[1]).read()
locations = text.split("Locations")[1].split("Mappings")[0]
# A location's first line carries its id; further lines of it follow indented.
blocks = re.split(r"\n(?=\s+\d+: 0x)", locations)
inlined = [b for b in blocks if "mix" in b and "Worker::run" in b]
assert inlined, "no location holds both mix and Worker::run:\n" + locations[:2000]
b = inlined[0]
assert b.index("mix") < b.index("Worker::run"), b
print("inlined location:", " | ".join(l.strip() for l in b.strip().splitlines()))
PY
"$LLMPROF" convert -f folded "$WORK/cxx.pb.gz" >"$WORK/cxx.folded" || fail "read back cxx"
$CHECK has "$WORK/cxx.folded" ';fixture::Worker::run;fixture::mix_\[i\]' ||
	fail "inline frame lost: $(head -3 "$WORK/cxx.folded")"
echo PASS
