#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Tries to break llmprof the way an adversarial user would, before a
# release: SIGKILL at random moments of attach (1,000 tries), odd targets,
# extreme options, closed descriptors, full disks, endless and cut input,
# large profiles, and each libFuzzer target for a while.  Needs root and a
# build (with the mock CUDA stack and, for the fuzzers, clang).
#
#   scripts/stress.sh [BUILD_DIR]
#
# KILL_TRIES (1000), FUZZ_SECONDS (300 per fuzzer) and SCALE_STACKS
# (4000000 distinct stacks for the size checks, 0 to skip) override the
# amounts.  Prints one line per check and exits 1 if any failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd) || exit 2
llmprof=$build/cmd/llmprof
work=$(mktemp -d "${TMPDIR:-/tmp}/llmprof-stress.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
[ "$(id -u)" = 0 ] || { echo "stress.sh: needs root" >&2; exit 2; }
[ -x "$llmprof" ] || { echo "stress.sh: no $llmprof; build first" >&2; exit 2; }

pass() { echo "ok    $*"; }
failure() { echo "FAIL  $*"; failed=1; }

# check NAME CMD...: CMD must succeed.
check() {
	local name=$1
	shift
	if "$@" >"$work/log" 2>&1; then pass "$name"; else
		failure "$name"
		tail -5 "$work/log" | sed 's/^/      /'
	fi
}

# The regression tests of each fault, at their full size.
ctest_run() { (cd "$build" && ctest -R "$1" --output-on-failure); }
check "SIGKILL of attach at random moments (${KILL_TRIES:-1000} tries)" \
	env KILL_TRIES=${KILL_TRIES:-1000} bash -c "cd '$build' && ctest -R '^root.killed_anytime$' --output-on-failure"
check "SIGKILL of the injector before and inside its calls" ctest_run '^root.inject_tracer_killed$'
check "injection into sleeping, reading, computing, signalled, stopped, Python targets" \
	ctest_run '^root.inject_'
check "-o through links, modes, closed and inherited descriptors, ENOSPC, endless input" \
	ctest_run '^root.output_safety$'
check "bad options, zombie, kernel thread, stopped target, truncated input" ctest_run '^root.bad_input$'
check "symbols after the main thread's pthread_exit()" ctest_run '^root.main_thread_exits$'

# Extreme -F: refused above the cap; at the cap, an unrelated process keeps
# most of its speed.
spin() { # SECONDS: loops counted in that time
	python3 -c 'import time,sys
end=time.time()+float(sys.argv[1]); n=0
while time.time()<end: n+=1
print(n)' "$1"
}
check "-F 100000 is refused" bash -c "! '$llmprof' record -F 100000 -o '$work/f.folded' -- true"
alone=$(spin 2)
"$llmprof" record -F 10000 -o "$work/f.folded" -- python3 -c 'import time
end=time.time()+3
while time.time()<end: pass' 2>"$work/f.err" &
profiler=$!
sleep 0.5
busy=$(spin 2)
wait $profiler
# Two cores shared with the profiled loop: half speed is the floor.
if [ $((busy * 100 / alone)) -ge 35 ]; then
	pass "-F 10000: an unrelated process ran at $((busy * 100 / alone))% of its speed"
else
	failure "-F 10000: an unrelated process ran at $((busy * 100 / alone))% of its speed"
fi

# Input that never ends, or cut short.
check "report /dev/zero ends, refused" bash -c "timeout 10 '$llmprof' report /dev/zero; s=\$?; [ \$s = 1 ] || [ \$s = 2 ]"
printf 'a;b 1\n' >"$work/s.folded"
if "$llmprof" convert -f speedscope -o /dev/full "$work/s.folded" 2>"$work/log"; then
	failure "convert to /dev/full succeeded"
elif grep -q 'No space left' "$work/log"; then
	pass "convert to /dev/full names ENOSPC"
else
	failure "convert to /dev/full: $(cat "$work/log")"
fi

# Scale: time and peak memory of report, diff and convert on many stacks.
stacks=${SCALE_STACKS:-4000000}
if [ "$stacks" -gt 0 ]; then
	python3 - "$stacks" >"$work/big.folded" <<'PY'
import sys
n = int(sys.argv[1])
for i in range(n):
    print(f"main;layer_{i % 997};block_{i % 7919};leaf_{i} {i % 13 + 1}")
PY
	for cmd in "report $work/big.folded" "diff $work/big.folded $work/big.folded" \
		"convert -f speedscope -o $work/big.json $work/big.folded"; do
		if /usr/bin/time -f '%e s %M KiB' -o "$work/time" $llmprof $cmd >/dev/null 2>"$work/log"; then
			pass "$stacks stacks: ${cmd%% *}: $(cat "$work/time")"
		else
			failure "$stacks stacks: ${cmd%% *}: $(tail -1 "$work/log")"
		fi
	done
	rm -f "$work/big.folded" "$work/big.json"
fi

# Each libFuzzer target, with the seeds of the diff tests.
found=0
for fuzzer in $(find "$build" -name 'fuzz_*' -type f -perm -u+x ! -name '*.c' ! -name fuzz_probe); do
	found=1
	check "$(basename "$fuzzer") for ${FUZZ_SECONDS:-300} s" sh "$root/tests/diff/fuzz.sh" \
		"$fuzzer" "$root/tests/diff/speedscope.dict" "$work/$(basename "$fuzzer")" \
		"${FUZZ_SECONDS:-300}" "$root/tests/diff/inputs" "$root/tests/diff/fuzz-regressions"
done
[ $found = 1 ] || failure "no libFuzzer target built (clang with -fsanitize=fuzzer?)"
exit $failed
