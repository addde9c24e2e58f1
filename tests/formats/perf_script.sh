#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# perf script output as perf 6.1 wrote it on this project's machine
# (tests/formats/perf/, made with perf record -e cpu-clock/task-clock -g
# and perf script with several -F field sets) reads into the stacks and
# shares of perf's own collapser (perf script report stackcollapse, in
# perf/expected/), weighed by the records' periods; several events are
# read one at a time; malformed lines are skipped or, with --strict,
# refused.
. "$TESTS_SOURCE/lib/testlib.sh"
perf_dir=$TESTS_SOURCE/formats/perf
agree="python3 $TESTS_SOURCE/formats/folded_agreement.py --tidy"

# perf's collapser counts records; cpu-clock periods are all 1001001 ns
# here, so its shares are the periods' shares.
for f in default no-time period no-demangle srcline; do
	ref=$perf_dir/expected/one.folded
	[ "$f" = srcline ] && ref=$perf_dir/expected/cpu2.folded
	"$LLMPROF" convert --strict -f folded "$perf_dir/$f.txt" >"$WORK/$f.folded" ||
		fail "$f.txt not read"
	got=$($agree "$ref" "$WORK/$f.folded" 95) || fail "$f.txt: $got% agreement with perf"
	echo "$f.txt: $got% of the weight agrees with perf script report stackcollapse"
done
# -F ip,sym has no comm: the same stacks under no process frame.
"$LLMPROF" convert --strict -f folded "$perf_dir/ip-sym.txt" | sed 's/^/work;/' >"$WORK/ip.folded" ||
	fail "ip-sym.txt not read"
got=$($agree "$perf_dir/expected/one.folded" "$WORK/ip.folded" 95) || fail "ip-sym.txt: $got%"
echo "ip-sym.txt: $got%"

# Weights are the periods perf wrote; cpu-clock's are nanoseconds.
period_sum() { # FILE EVENT: the sum of the periods of EVENT's records
	awk -v event="$2:" '!/^[#\t]/ && NF { for (i = 1; i < NF; i++)
		if ($(i + 1) == event && $i ~ /^[0-9]+$/) { sum += $i; n++ } }
		END { printf "%d %d\n", sum, n }' "$1"
}
total_of() { # a folded file's total weight
	awk '{ sum += $NF } END { printf "%d\n", sum }' "$1"
}
for event in cpu-clock task-clock; do
	read -r want records < <(period_sum "$perf_dir/two-events.txt" "$event")
	[ "$records" -gt 10 ] || fail "two-events.txt has $records $event records"
	args=(--event "$event")
	[ "$event" = cpu-clock ] && args=()
	"$LLMPROF" convert --strict "${args[@]}" -f folded "$perf_dir/two-events.txt" \
		>"$WORK/$event.folded" 2>"$WORK/$event.err" || fail "--event $event"
	got=$(total_of "$WORK/$event.folded")
	[ "$got" = "$want" ] || fail "$event: weight $got, the periods of its records add up to $want"
	grep -q "2 events (cpu-clock, task-clock); read $event" "$WORK/$event.err" ||
		fail "the events are not listed: $(cat "$WORK/$event.err")"
	echo "two-events.txt: $event weighs $got ns in $records records"
done
"$LLMPROF" report -f json --event task-clock "$perf_dir/two-events.txt" 2>/dev/null |
	python3 -c 'import json, sys; r = json.load(sys.stdin); ok = (r["unit"], r["events"], r["event"]) == ("nanoseconds", "cpu-clock, task-clock", "task-clock"); sys.exit(0 if ok else "unit, events: %r" % r)' ||
	fail "task-clock is not read in nanoseconds, or the report does not list the events"
"$LLMPROF" convert -f folded --event cycles "$perf_dir/two-events.txt" >/dev/null 2>"$WORK/err"
[ $? = 2 ] && grep -q "no event 'cycles' in the file (it has cpu-clock, task-clock)" "$WORK/err" ||
	fail "an event the file lacks: $(cat "$WORK/err")"
read -r want records < <(period_sum "$perf_dir/no-chain.txt" cpu-clock)
"$LLMPROF" convert --strict -f folded "$perf_dir/no-chain.txt" >"$WORK/nochain.folded" ||
	fail "no-chain.txt not read"
[ "$(total_of "$WORK/nochain.folded")" = "$want" ] || fail "no-chain.txt: weight is not $want"
grep -q '^work;Lcom/example/Loop:.spin_\[j\] ' "$WORK/nochain.folded" ||
	fail "no-chain.txt: the JIT frame of the header line is missing"

# The JIT name with ';' is one frame, written with ':'.
grep -q ';Lcom/example/Loop:.spin_\[j\] ' "$WORK/default.folded" || fail "JIT frame split"
for command in "convert -f folded" "report" "merge" "diff $perf_dir/default.txt"; do
	{ head -n 20 "$perf_dir/default.txt"; echo "garbage line"; tail -n +21 "$perf_dir/default.txt"; } \
		>"$WORK/junk.txt"
	# shellcheck disable=SC2086
	"$LLMPROF" $command "$WORK/junk.txt" >/dev/null 2>"$WORK/err"
	[ $? -le 1 ] && grep -q "skipped 1 malformed line (the first, line 21" "$WORK/err" ||
		fail "$command does not skip a malformed line: $(cat "$WORK/err")"
	# shellcheck disable=SC2086
	"$LLMPROF" $command --strict "$WORK/junk.txt" >/dev/null 2>"$WORK/err"
	[ $? = 2 ] && grep -q "junk.txt:21: neither a perf script record header" "$WORK/err" ||
		fail "$command --strict: $(cat "$WORK/err")"
done
echo PASS
