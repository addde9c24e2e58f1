#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# llmprof diff as a CI gate on real profiles of tests/diff/workload.c.
#
# Noise: 20 pairs of profiles of the same program (60/38/2 % of 3 s of CPU in
# parse_request/render_rows/escape_rows) at 99 Hz; at most 2 diffs may exit 1.
# The gate's noise floor is at 99 % confidence for each pair (Holm over its
# functions): a false alarm in up to 1 % of pairs is what it promises, so 0 of
# 20 would fail up to 18 % of runs where samples are independent, as random
# sampling makes them; 3 or more of 20, in about 0.1 % of runs.
# The two profiles of a pair are recorded at the same time, so whatever else
# the machine runs weighs on both alike.  The threshold alone (1 point) would
# fail most of them: the test says how many.
#
# Signal: escape_rows goes from 2 % to 5 % (parse_request from 60 to 57) in
# 5 s at 999 Hz; the diff must exit 1 with escape_rows' self share a
# regression.
#
# usage: noise_gate.sh LLMPROF WORKLOAD WORKDIR [PAIRS]
set -u
llmprof=$1 workload=$2 work=$3 pairs=${4:-20}
rm -rf "$work"
mkdir -p "$work"
failed=0

# record NAME HZ SHARES SECONDS: profiles the workload into WORKDIR/NAME.folded.
record() {
	"$llmprof" record -F "$2" -o "$work/$1.folded" -- "$workload" --shares "$3" "$4" \
		>"$work/$1.out" 2>"$work/$1.log"
}

# function_field JSON NAME FIELD: FIELD of function NAME in a diff's JSON.
function_field() {
	grep -F "{\"name\": \"$2\"," "$1" | grep -oE "\"$3\": [^,}]+" | sed 's/.*: //'
}

start=$(date +%s)
threshold_alone=0
false_alarms=0
i=1
while [ "$i" -le "$pairs" ]; do
	record "pair$i-base" 99 60,38,2 3 &
	b=$!
	record "pair$i-new" 99 60,38,2 3 &
	n=$!
	if ! wait "$b" || ! wait "$n"; then
		echo "FAIL: llmprof record failed for pair $i:" >&2
		cat "$work/pair$i-base.log" "$work/pair$i-new.log" >&2
		exit 1
	fi
	"$llmprof" diff -f json -o "$work/pair$i.json" "$work/pair$i-base.folded" \
		"$work/pair$i-new.folded" 2>/dev/null
	status=$?
	"$llmprof" diff "$work/pair$i-base.folded" "$work/pair$i-new.folded" \
		>"$work/pair$i.txt" 2>&1
	floor=$(grep '^noise floor' "$work/pair$i.txt")
	within=$(grep -oE '"within_noise": [0-9]+' "$work/pair$i.json" | sed 's/.*: //')
	burn=$(function_field "$work/pair$i.json" parse_request delta_self)
	echo "pair $i: exit $status, parse_request self $burn points, $within shares past" \
		"the threshold within the noise; $floor"
	if [ "$status" != 0 ]; then
		echo "pair $i of the same program: diff exited $status (a false alarm)" >&2
		cat "$work/pair$i.txt" >&2
		false_alarms=$((false_alarms + 1))
	fi
	[ "${within:-0}" -gt 0 ] && threshold_alone=$((threshold_alone + 1))
	i=$((i + 1))
done
echo "noise: $pairs pairs at 99 Hz for 3 s in $(($(date +%s) - start)) s; $false_alarms" \
	"false alarms; the 1-point threshold alone would have failed $threshold_alone of them"
if [ "$false_alarms" -gt $((pairs / 10)) ]; then
	echo "FAIL: $false_alarms of $pairs pairs of the same program flagged, at most" \
		"$((pairs / 10)) expected" >&2
	failed=1
fi

record shift-base 999 60,38,2 5 &
b=$!
record shift-new 999 57,38,5 5 &
n=$!
if ! wait "$b" || ! wait "$n"; then
	echo "FAIL: llmprof record failed for the shifted pair:" >&2
	cat "$work/shift-base.log" "$work/shift-new.log" >&2
	exit 1
fi
"$llmprof" diff -f json -o "$work/shift.json" "$work/shift-base.folded" \
	"$work/shift-new.folded" 2>/dev/null
status=$?
"$llmprof" diff "$work/shift-base.folded" "$work/shift-new.folded" >"$work/shift.txt" 2>&1
delta=$(function_field "$work/shift.json" escape_rows delta_self)
p=$(function_field "$work/shift.json" escape_rows self_p)
regression=$(function_field "$work/shift.json" escape_rows self_regression)
echo "shift: exit $status, escape_rows self $delta points (p $p), regression $regression;" \
	"$(grep '^noise floor' "$work/shift.txt")"
if [ "$status" != 1 ] || [ "$regression" != true ]; then
	echo "FAIL: a 3-point shift of escape_rows at 999 Hz for 5 s was not caught" \
		"(exit $status, expected 1)" >&2
	cat "$work/shift.txt" >&2
	failed=1
fi
exit $failed
