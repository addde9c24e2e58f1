#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bad input: one line naming the problem, the right exit status, nothing
# attached and no file left behind.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

out="$WORK/out.folded"
check_error() { # STATUS PATTERN ARGS...
	local want=$1 pattern=$2 got lines
	shift 2
	"$LLMPROF" "$@" >"$WORK/stdout" 2>"$WORK/stderr"
	got=$?
	[ "$got" = "$want" ] || fail "llmprof $*: exit $got, expected $want"
	lines=$(wc -l <"$WORK/stderr")
	[ "$lines" -le 2 ] || fail "llmprof $*: $lines lines on stderr"
	grep -q -- "$pattern" "$WORK/stderr" || fail "llmprof $*: stderr '$(cat "$WORK/stderr")' lacks '$pattern'"
	[ ! -s "$WORK/stdout" ] || fail "llmprof $*: wrote to stdout"
	[ -z "$(ls "$WORK" | grep -v -e '^stdout$' -e '^stderr$')" ] ||
		fail "llmprof $*: left files: $(ls "$WORK")"
}
# A PID that is not in use: beyond pid_max.
check_error 1 "no process with PID" attach -p 4194000 -o "$out"
check_error 2 "invalid frequency '0'" attach -p 1 -F 0 -o "$out"
check_error 2 "invalid frequency 'abc'" attach -p 1 -F abc -o "$out"
# Rates that stall the machine are refused, naming the kernel's limit.
check_error 2 "expected 1 to [0-9]* Hz (higher rates stall the machine; kernel.perf_event_max_sample_rate is" \
	attach -p 1 -F 100000 -o "$out"
check_error 2 "invalid duration '-1'" attach -p 1 -d -1 -o "$out"
check_error 2 "invalid format 'png'" attach -p 1 -f png -o "$out"
check_error 2 "invalid sampling 'poisson' for --sampling" attach -p 1 --sampling poisson -o "$out"
check_error 2 "invalid sampling 'poisson'" record --sampling poisson -o "$out" -- true
check_error 2 "no process given" attach -o "$out"
check_error 2 "no command to record" record -o "$out"
check_error 2 "no command to record" record -o "$out" --
check_error 2 "unknown command" frobnicate
check_error 1 "cannot write '/nonexistent/dir/out'" attach -p $$ -o /nonexistent/dir/out
check_error 1 "cannot run 'no-such-command-xyz'" record -o "$out" -- no-such-command-xyz
# Targets with nothing to profile say why: a zombie, a kernel thread.
(sleep 0.05 & exec sleep 30) &
BACKGROUND_PIDS="$BACKGROUND_PIDS $!"
sleep 0.3
zombie=$(pgrep -P $! sleep)
[ -n "$zombie" ] && grep -q '^State:[[:space:]]*Z' /proc/$zombie/status || fail "no zombie to attach to"
check_error 1 "process $zombie is a zombie" attach -p $zombie -o "$out"
check_error 1 "process 2 is a kernel thread" attach -p 2 -o "$out"
# A stopped target is profiled, with a warning that it takes no samples.
start_bg sleep 30
kill -STOP $BG_PID
"$LLMPROF" attach -p $BG_PID -d 0.3 -o "$WORK/stopped.folded" 2>"$WORK/stderr" ||
	fail "attach to a stopped process failed: $(cat "$WORK/stderr")"
grep -q "process $BG_PID is stopped (SIGSTOP); no samples until it continues" "$WORK/stderr" ||
	fail "no warning that the target is stopped: $(cat "$WORK/stderr")"
rm -f "$WORK/stopped.folded"
# A speedscope file cut short is called truncated.
cut=$(mktemp)
printf '%s' '{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[{"name":"a"},{"name":"b"}]},"profiles":[{"type":"sampled","name":"x","unit":"none","startValue":0,"endValue":2,"samples":[[0,1],[0,' >"$cut"
check_error 2 "the input ends too soon (is it truncated?)" report "$cut"
rm -f "$cut"
# A device as -o is written in place, never replaced by a renamed file.
"$LLMPROF" record -o /dev/null -- true 2>/dev/null || fail "record -o /dev/null failed"
[ -c /dev/null ] || fail "/dev/null is no longer a device"
echo PASS
