#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# On a terminal (a pseudo-terminal made by script(1)) attach shows a live
# progress line that is cleared before the summary, and with stdout on the
# terminal and no -o the profile goes to llmprof-PID-DATE-TIME.folded in the
# current directory.  Off a terminal there is no progress line.  The target
# outlives the three attaches (each loads its BPF first, up to a second or
# two on a busy machine).
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
command -v script >/dev/null || skip "script(1) (util-linux) is not installed"

start_bg "$FIXTURES/ground_truth" 12
sleep 0.2
mkdir "$WORK/cwd"
(cd "$WORK/cwd" &&
	script -q -c "'$LLMPROF' attach -p $BG_PID -d 2 -F 199" /dev/null >"$WORK/tty" 2>&1) ||
	fail "attach on a terminal failed: $(cat -v "$WORK/tty")"
# Redrawn lines: "\rllmprof: 1.0 s: N samples, M lost\033[K".
n=$(tr '\r' '\n' <"$WORK/tty" | grep -c '^llmprof: [0-9.]* s: [0-9]* samples, [0-9]* lost')
[ "$n" -ge 3 ] || fail "expected at least 3 progress redraws in 2 s, got $n: $(cat -v "$WORK/tty")"
last=$(tr '\r' '\n' <"$WORK/tty" | grep -o '^llmprof: [0-9.]* s: [0-9]* samples' | tail -1 |
	awk '{print $4}')
[ "$last" -gt 0 ] || fail "the progress line never counted a sample"
# The summary starts on a cleared line.
grep -q $'\r\033\\[Kllmprof: profiled PID' "$WORK/tty" ||
	fail "the progress line is not cleared before the summary: $(cat -v "$WORK/tty")"
files=("$WORK"/cwd/llmprof-"$BG_PID"-*.folded)
[ -f "${files[0]}" ] || fail "no default output file: $(ls "$WORK/cwd")"
[[ "$(basename "${files[0]}")" =~ ^llmprof-$BG_PID-[0-9]{8}-[0-9]{6}\.folded$ ]] ||
	fail "bad default name ${files[0]}"
grep -q "wrote folded stacks to $(basename "${files[0]}")" "$WORK/tty" ||
	fail "the summary does not say where the profile went"
$CHECK shares "${files[0]}" --self burn_a=50 --tolerance 10 || fail "default file's shares"

# -f pprof picks .pb.gz.
(cd "$WORK/cwd" &&
	script -q -c "'$LLMPROF' attach -p $BG_PID -d 0.5 -f pprof" /dev/null >/dev/null 2>&1) ||
	fail "attach -f pprof on a terminal failed"
ls "$WORK"/cwd/llmprof-"$BG_PID"-*.pb.gz >/dev/null 2>&1 || fail "no .pb.gz default file"

# Not a terminal: no progress line, the profile on stdout.
"$LLMPROF" attach -p "$BG_PID" -d 1 >"$WORK/out.folded" 2>"$WORK/err" || fail "attach failed"
grep -q $'\r' "$WORK/err" && fail "progress line written to a non-terminal"
[ -s "$WORK/out.folded" ] || fail "no profile on stdout"
echo PASS
