#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# llmprof merge keeps every value of profiles of several values (pprof's
# sample types, speedscope's views): Google's pprof sees each sample type
# of the merged file total the inputs' (pprof -sample_index=NAME -top), and
# every stack's values summed (pprof -raw); inputs of other value types are
# refused in one line, as pprof -proto refuses them.
. "$TESTS_SOURCE/lib/testlib.sh"

"$PROFILE_VALUES" "$WORK" >/dev/null 2>&1 || fail "test_profile_values"
values=$WORK/values.pb.gz views=$WORK/values.speedscope.json
# The same profile as Google's pprof encodes it.
"$PPROF" -proto "$values" >"$WORK/google.pb.gz" 2>"$WORK/err" || fail "pprof -proto: $(cat "$WORK/err")"

# "Showing nodes accounting for 600us, 100% of 600us total": the total.
total() {
	"$PPROF" -sample_index="$1" -unit=minimum -top "$2" 2>"$WORK/err" |
		sed -n 's/^Showing nodes accounting for .*, 100% of \(.*\) total$/\1/p'
}
"$LLMPROF" merge -f pprof -o "$WORK/merged.pb.gz" "$values" "$WORK/google.pb.gz" "$views" ||
	fail "merge of pprof, Google's pprof and speedscope views"
"$PPROF" -raw "$WORK/merged.pb.gz" | grep -qx 'cpu/nanoseconds\[dflt\] memory-peak/bytes calls/count wait/nanoseconds' ||
	fail "merged sample types: $("$PPROF" -raw "$WORK/merged.pb.gz" | sed -n 4p)"
for type in cpu memory-peak calls wait; do
	one=$(total $type "$values") three=$(total $type "$WORK/merged.pb.gz")
	[ -n "$one" ] || fail "no $type total in pprof -top of $values: $(cat "$WORK/err")"
	# pprof prints totals with their unit; three times one input's.
	python3 - "$type" "$one" "$three" <<'CHECK' || fail "$type: one input $one, merged $three"
import re
import sys

scale = {"": 1, "B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "ns": 1, "us": 1e3,
         "ms": 1e6, "s": 1e9}
def value(text):
    number, unit = re.fullmatch(r"([\d.]+)\s*([a-zA-Z]*)", text).groups()
    return float(number) * scale[unit]
one, three = value(sys.argv[2]), value(sys.argv[3])
if not one or abs(three - 3 * one) > 1e-9 * three:
    sys.exit(f"{sys.argv[1]}: {three} is not 3 x {one}")
print(f"{sys.argv[1]}: {sys.argv[3]} = 3 x {sys.argv[2]}")
CHECK
done
# Stack by stack (pprof -raw: "VALUES...: LOCATION IDS", then the labels of
# per-thread samples): every value of every stack three times the input's.
"$PPROF" -raw "$values" >"$WORK/one.raw" && "$PPROF" -raw "$WORK/merged.pb.gz" >"$WORK/merged.raw" ||
	fail "pprof -raw"
python3 - "$WORK/one.raw" "$WORK/merged.raw" <<'CHECK' || fail "pprof -raw: the merged stacks' values"
import re
import sys

def stacks(path):
    text = open(path).read()
    ids = dict(re.findall(r"^ +(\d+): 0x\w+ M=\d+ (\S+)", text, re.M))
    samples = text.split("Samples:\n", 1)[1].split("Locations", 1)[0]
    sums = {}
    for values, locations in re.findall(r"^ *([\d ]+): ([\d ]+)$", samples, re.M):
        stack = ";".join(ids[i] for i in reversed(locations.split()))
        old = sums.get(stack, [0] * len(values.split()))
        sums[stack] = [a + int(b) for a, b in zip(old, values.split())]
    return sums
one, merged = stacks(sys.argv[1]), stacks(sys.argv[2])
want = {k: [3 * x for x in v] for k, v in one.items()}
if len(one) < 3 or merged != want:
    sys.exit(f"input {one}, merged {merged}")
print(f"pprof -raw: {len(merged)} stacks, each value 3 x the input's")
CHECK

# Speedscope out: a profile per value; each value's stacks, read back,
# weigh twice the input's.
"$LLMPROF" merge -f speedscope -o "$WORK/merged.json" "$views" "$values" || fail "merge -f speedscope"
[ "$(grep -o '"llmprofView":"' "$WORK/merged.json" | wc -l)" = 4 ] || fail "merged speedscope: not 4 views"
for view in cpu memory-peak calls wait; do
	"$LLMPROF" convert --view $view -f folded "$views" |
		awk '{ w = $NF; sub(/ [0-9]+$/, ""); print $0, 2 * w }' >"$WORK/want" || fail "--view $view"
	"$LLMPROF" convert --view $view -f folded "$WORK/merged.json" >"$WORK/got" || fail "merged --view $view"
	[ -s "$WORK/want" ] && diff -u "$WORK/want" "$WORK/got" || fail "merged speedscope, view $view"
done

# Other value types: refused in one line naming both, as pprof -proto does.
"$LLMPROF" convert -f pprof -o "$WORK/one.pb.gz" "$TESTS_SOURCE/diff/inputs/base.folded" || fail "base.folded to pprof"
"$PPROF" -proto "$values" "$WORK/one.pb.gz" >/dev/null 2>&1 && fail "pprof -proto merged other sample types"
"$LLMPROF" merge -o "$WORK/mixed.folded" "$values" "$WORK/one.pb.gz" 2>"$WORK/err"
status=$?
[ $status = 2 ] || fail "merge of other value types: exit $status, expected 2"
grep -qx "llmprof: error: $WORK/one.pb.gz holds other values (samples) than $values (cpu, memory-peak, calls, wait): cannot merge them" \
	"$WORK/err" || fail "merge of other value types: $(cat "$WORK/err")"
[ -e "$WORK/mixed.folded" ] && fail "a refused merge left its output"
echo PASS
