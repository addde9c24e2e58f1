#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A profile of several values (test_profile_values.c's) written as pprof
# and speedscope: the model's tests pass, the speedscope file validates
# against speedscope's schema with a profile per value named after it,
# convert --view gives each value's folded stacks alike from both files,
# and a value neither holds is the usage error the man page documents.
. "$TESTS_SOURCE/lib/testlib.sh"

"$PROFILE_VALUES" "$WORK" || fail "test_profile_values"
ss=$WORK/values.speedscope.json
if [ -f "$SPEEDSCOPE_SCHEMA" ]; then
	$CHECK speedscope "$ss" --schema "$SPEEDSCOPE_SCHEMA" >/dev/null || fail "invalid speedscope"
else
	echo "no schema at $SPEEDSCOPE_SCHEMA (scripts/fetch-speedscope-schema.sh): not validated"
fi
python3 - "$ss" <<'PY' || fail "speedscope profiles"
import json, sys
doc = json.load(open(sys.argv[1]))
got = [(p["name"], p["unit"], p["llmprofView"]) for p in doc["profiles"]]
want = [("main (pid 42, tid 42) \u2014 cpu", "microseconds", "cpu"),
        ("values test \u2014 memory-peak", "bytes", "memory-peak"),
        ("values test \u2014 calls", "none", "calls"),
        ("values test \u2014 wait", "microseconds", "wait")]
assert got == want, got
PY
for view in cpu memory-peak calls wait; do
	"$LLMPROF" convert --view $view -f folded -o "$WORK/s.$view" "$ss" ||
		fail "convert --view $view of speedscope"
	"$LLMPROF" convert --view $view -f folded -o "$WORK/p.$view" "$WORK/values.pb.gz" ||
		fail "convert --view $view of pprof"
	cmp -s "$WORK/s.$view" "$WORK/p.$view" ||
		fail "--view $view: speedscope and pprof differ: $(diff "$WORK/s.$view" "$WORK/p.$view")"
done
grep -qx 'main;alloc 67108864' "$WORK/s.memory-peak" || fail "memory-peak: $(cat "$WORK/s.memory-peak")"
grep -qx 'main;wait 2500000' "$WORK/s.wait" || fail "wait in nanoseconds: $(cat "$WORK/s.wait")"
# The man page's words: a usage error that lists the names the input has.
for input in "$ss" "$WORK/values.pb.gz"; do
	"$LLMPROF" convert --view nope -f folded "$input" >/dev/null 2>"$WORK/err"
	status=$?
	[ $status = 2 ] || fail "convert --view nope: exit $status, expected 2"
	grep -qx "llmprof: error: convert: no value 'nope' in $input (it has cpu, memory-peak, calls, wait)" \
		"$WORK/err" || fail "convert --view nope: $(cat "$WORK/err")"
done
echo PASS
