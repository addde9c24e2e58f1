#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# perf script output made now, by the perf on this machine, of a C++
# program (demangled names with argument lists, inlining) and a JIT (a
# /tmp/perf-PID.map symbol), with several -F field sets and with and without
# demangling, reads into the stacks and shares of perf's own collapser
# (perf script report stackcollapse) at >= 95 % of the weight; a recording
# of two events reads one of them.  Skips where perf is not installed.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
command -v perf >/dev/null || skip "no perf on this machine"
command -v c++filt >/dev/null || skip "no c++filt (binutils) on this machine"
agree="python3 $TESTS_SOURCE/formats/folded_agreement.py --tidy"
cd "$WORK" || fail "no work directory"

# The JIT removes its /tmp/perf-PID.map when it exits, as JITs do; perf
# script reads the map afterwards, so a copy is taken while it runs and put
# back for perf script.
jit_map=
record() { # PROGRAM
	perf record -q -e cpu-clock -F 999 -g -o "$1.data" -- "$FIXTURES/$1" 1 \
		>/dev/null 2>"$WORK/err" &
	local perf_pid=$! pid= i
	BACKGROUND_PIDS=$perf_pid
	for i in $(seq 100); do
		[ "$1" = jit ] || break
		pid=$(pgrep -P "$perf_pid" -x jit)
		[ -n "$pid" ] && [ -s "/tmp/perf-$pid.map" ] &&
			cp "/tmp/perf-$pid.map" "$WORK/jit.map" && break
		sleep 0.02
	done
	wait "$perf_pid" || fail "perf record $1: $(cat "$WORK/err")"
	BACKGROUND_PIDS=
	if [ "$1" = jit ]; then
		[ -s "$WORK/jit.map" ] || fail "the JIT's perf map was not seen"
		jit_map=/tmp/perf-$pid.map
		cp "$WORK/jit.map" "$jit_map"
	fi
}
trap 'cleanup; [ -n "$jit_map" ] && rm -f "$jit_map"' EXIT

for program in cxx_inline jit; do
	record "$program"
	cp "$program.data" perf.data # where perf script report reads
	perf script report stackcollapse >"$program.ref" 2>/dev/null ||
		fail "perf script report stackcollapse"
	[ -s "$program.ref" ] || fail "perf's collapser wrote nothing for $program"
	for fields in "" "-F comm,pid,tid,ip,sym,dso" "-F comm,tid,time,period,event,ip,sym,symoff,dso" \
		"-F comm,pid,time,event,ip,sym,dso,srcline" "--no-demangle"; do
		# shellcheck disable=SC2086
		perf script -i "$program.data" $fields >"$program.txt" 2>/dev/null ||
			fail "perf script $fields"
		"$LLMPROF" convert --strict -f folded "$program.txt" >"$program.folded" ||
			fail "$program, perf script $fields: not read"
		# Mangled names are kept as perf wrote them; c++filt gives
		# perf's collapser's names back.
		if [ "$fields" = --no-demangle ]; then
			c++filt <"$program.folded" >"$program.demangled" || fail "c++filt"
			mv "$program.demangled" "$program.folded"
		fi
		got=$($agree "$program.ref" "$program.folded" 95) ||
			fail "$program, perf script $fields: $got% of the weight agrees with perf"
		echo "$program, perf script ${fields:-(default fields)}: $got%"
	done
done
grep -q ';jitted_spin_\[j\] ' jit.folded || fail "no JIT frame: $(cat jit.folded)"

perf record -q -e cpu-clock,task-clock -F 999 -g -o two.data -- "$FIXTURES/jit" 0.5 \
	>/dev/null 2>&1 || fail "perf record of two events"
perf script -i two.data >two.txt 2>/dev/null
for event in cpu-clock task-clock; do
	"$LLMPROF" report -f json --event "$event" two.txt >"$event.json" 2>"$event.err" ||
		fail "--event $event: $(cat "$event.err")"
	records=$(grep -c " $event: *\$" two.txt)
	python3 - "$event.json" "$records" <<'PY' || fail "--event $event"
import json, sys
report = json.load(open(sys.argv[1]))
if report["samples"] != int(sys.argv[2]) or report["unit"] != "nanoseconds":
    sys.exit(f"{report['samples']} samples in {report['unit']}, perf wrote {sys.argv[2]} records")
PY
	# Listed in the order the file first names them, which the two
	# events' first records decide.
	grep -qE "2 events \((cpu-clock, task-clock|task-clock, cpu-clock)\); read $event" \
		"$event.err" || fail "the events are not listed: $(cat "$event.err")"
	echo "two events: $event, $records records"
done
echo PASS
