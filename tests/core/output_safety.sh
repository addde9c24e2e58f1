#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Where a profile goes and what happens on the way: no llmprof descriptor
# reaches the recorded command, -o writes through symbolic links and keeps
# the file's mode and owner, the real cause of a failed write is reported,
# a profile that cannot be written is kept elsewhere, temporary files are
# short, recognisable and cleaned up, and endless input is refused early.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root

GT="$FIXTURES/ground_truth"
cd "$WORK" || fail "cannot enter $WORK"

# folded FILE: non-empty, and every line is "frame;frame COUNT".
is_folded() {
	[ -s "$1" ] && ! grep -qvE '^[^ ].* [0-9]+$' "$1"
}
# An input profile for convert, report and diff: ~260 KB of distinct stacks,
# in the order convert writes them, so that outputs compare with cmp.
awk 'BEGIN { for (i = 0; i < 8000; i++) printf "main;work;function_number_%d %d\n", i, i % 7 + 1 }' \
	>raw.folded
"$LLMPROF" convert -f folded raw.folded >in.folded || fail "cannot convert the input profile"

# ---- 1. The recorded command inherits no llmprof descriptor -------------
"$LLMPROF" record --no-gpu -o closed.folded -- sh -c 'echo output-of-the-command; exec "$0" 0.3' \
	"$GT" >&- 2>closed.err || fail "record with stdout closed failed: $(cat closed.err)"
is_folded closed.folded || fail "with stdout closed the profile is not folded stacks: $(head -c 200 closed.folded)"
! grep -q output-of-the-command closed.folded || fail "the command's output went into the profile"

"$LLMPROF" record --no-gpu -o fd3.folded -- sh -c 'echo INJECTED >&3; exec "$0" 0.2' "$GT" \
	2>fd3.err || fail "record failed: $(cat fd3.err)"
is_folded fd3.folded || fail "the profile is not folded stacks after the command wrote to fd 3"
! grep -q INJECTED fd3.folded || fail "the command wrote into the profile through fd 3"

# The command's descriptors are the ones it would have without llmprof
# (whatever this test inherited), plus the agent image under GPU capture.
list_fds='find /proc/$$/fd -mindepth 1 -printf "%f %l\n" | sort -n'
sh -c "$list_fds" >fds.direct
"$LLMPROF" record --no-gpu -o fds.folded -- sh -c "$list_fds" >fds.cpu 2>fds.err ||
	fail "record failed: $(cat fds.err)"
diff <(cut -d' ' -f1 fds.direct) <(cut -d' ' -f1 fds.cpu) >/dev/null ||
	fail "the command got descriptors from llmprof: $(diff fds.direct fds.cpu)"
"$LLMPROF" record -o fds.folded -- sh -c "$list_fds" >fds.gpu 2>fds.err ||
	fail "record failed: $(cat fds.err)"
extra=$(comm -13 <(cut -d' ' -f1 fds.direct | sort) <(cut -d' ' -f1 fds.gpu | sort))
for fd in $extra; do
	grep -q "^$fd /memfd:llmprof-agent" fds.gpu ||
		fail "the command inherited fd $fd from llmprof: $(grep "^$fd " fds.gpu)"
done
[ "$(echo $extra | wc -w)" -le 1 ] || fail "more than the agent image inherited: $extra"

# ---- 2. -o through a link, and the existing file's mode and owner -------
echo "old 1" >target.folded
chmod 0444 target.folded
chown 4321:4322 target.folded
ln -s target.folded link.folded
"$LLMPROF" convert -f folded -o link.folded in.folded || fail "convert -o through a link failed"
[ -L link.folded ] || fail "-o replaced the symbolic link with a file"
cmp -s target.folded in.folded || fail "the link's target does not have the profile"
[ "$(stat -c %a target.folded)" = 444 ] || fail "mode 0444 became $(stat -c %a target.folded)"
[ "$(stat -c %u:%g target.folded)" = 4321:4322 ] ||
	fail "owner 4321:4322 became $(stat -c %u:%g target.folded)"

# As for '>', a file the user may not write is refused, and stays as it was.
chmod 0755 "$WORK"
mkdir -m 1777 shared
echo "kept 1" >shared/readonly.folded
chown 65534 shared/readonly.folded
chmod 0444 shared/readonly.folded
setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$LLMPROF" convert -f folded -o shared/readonly.folded in.folded 2>ro-user.err
[ $? = 1 ] || fail "an unprivileged user replaced a read-only file"
grep -q "Permission denied" ro-user.err || fail "read-only file for a user: '$(cat ro-user.err)'"
[ "$(cat shared/readonly.folded)" = "kept 1" ] && [ -z "$(ls -A shared | grep -v readonly)" ] ||
	fail "the read-only file changed or a temporary file stayed: $(ls -A shared)"

# A relative link from another directory, a chain of two, and a dangling
# link, which creates its target as '>' does.
mkdir -p a/b real
echo old >real/p.folded
chmod 0640 real/p.folded
ln -s ../../real/p.folded a/b/hop.folded
ln -s a/b/hop.folded chain.folded
"$LLMPROF" convert -f folded -o chain.folded in.folded || fail "convert -o through two links failed"
[ -L chain.folded ] && [ -L a/b/hop.folded ] || fail "a link in the chain was replaced"
cmp -s real/p.folded in.folded || fail "the end of the chain does not have the profile"
[ "$(stat -c %a real/p.folded)" = 640 ] || fail "mode 0640 became $(stat -c %a real/p.folded)"
ln -s real/new.folded dangling.folded
"$LLMPROF" convert -f folded -o dangling.folded in.folded || fail "convert -o through a dangling link failed"
[ -L dangling.folded ] && cmp -s real/new.folded in.folded || fail "the dangling link's target was not created"
ls -a . real | grep -q llmprof-tmp && fail "temporary files left behind: $(ls -a . real)"

# A name for an open descriptor is written into it: appended to, not replaced.
echo "first line" >append.txt
ino=$(stat -c %i append.txt)
"$LLMPROF" convert -f folded -o /dev/fd/1 in.folded >>append.txt || fail "convert -o /dev/fd/1 failed"
[ "$(stat -c %i append.txt)" = "$ino" ] || fail "-o /dev/fd/1 replaced the file it names"
[ "$(head -1 append.txt)" = "first line" ] && cmp -s <(tail -n +2 append.txt) in.folded ||
	fail "-o /dev/fd/1 did not append the profile to standard output"
"$LLMPROF" convert -f folded -o /dev/stdout in.folded | cmp -s - in.folded || fail "-o /dev/stdout into a pipe"
mkfifo fifo
cat fifo >from-fifo &
"$LLMPROF" convert -f folded -o fifo in.folded || fail "convert -o FIFO failed"
wait $!
[ -p fifo ] && cmp -s from-fifo in.folded || fail "the FIFO was replaced or did not get the profile"

# ---- 3. The real cause of a failed write --------------------------------
# (diff fails with 2: its 1 means a regression.)
for args in "1 convert -f folded -o /dev/full in.folded" "1 report -o /dev/full in.folded" \
	"2 diff -o /dev/full in.folded in.folded"; do
	set -- $args
	want=$1
	shift
	"$LLMPROF" "$@" 2>full.err
	[ $? = "$want" ] || fail "llmprof $*: exit status not $want"
	grep -q "No space left on device" full.err || fail "llmprof $*: '$(cat full.err)'"
done
"$LLMPROF" convert -f folded in.folded >/dev/full 2>full.err
grep -q "No space left on device" full.err || fail "convert to a full stdout: '$(cat full.err)'"

mkdir small readonly
mount -t tmpfs -o size=64k tmpfs small || fail "cannot mount a tmpfs"
mount -t tmpfs -o ro tmpfs readonly || { umount small; fail "cannot mount a read-only tmpfs"; }
trap 'umount "$WORK/small" "$WORK/readonly" 2>/dev/null; cleanup' EXIT
"$LLMPROF" convert -f folded -o small/out.folded in.folded 2>small.err
[ $? = 1 ] || fail "convert into a full file system did not fail"
grep -q "warning: .*free" small.err || fail "no warning about the little free space: $(cat small.err)"
grep -q "No space left on device" small.err || fail "ENOSPC not reported: $(cat small.err)"
[ -z "$(ls -A small)" ] || fail "a full file system kept files: $(ls -A small)"

"$LLMPROF" record --no-gpu -o readonly/x.folded -- touch ran 2>ro.err
[ $? = 1 ] || fail "record -o on a read-only file system did not fail"
grep -qi "read-only file system" ro.err || fail "read-only file system not named: $(cat ro.err)"
[ ! -e ran ] || fail "the command ran although the profile could not be written"

# ---- 4. A profile that cannot be written is kept ------------------------
mkdir keep
TMPDIR="$WORK/keep" "$LLMPROF" record --no-gpu -o /dev/full -- "$GT" 0.3 >/dev/null 2>keep.err
[ $? = 1 ] || fail "record -o /dev/full: exit status not 1"
grep -q "No space left on device" keep.err || fail "record -o /dev/full: '$(cat keep.err)'"
kept=$(ls keep/llmprof-*.folded 2>/dev/null)
[ -n "$kept" ] || fail "no profile kept: $(cat keep.err)"
grep -qF "$kept" keep.err || fail "stderr does not say where the profile is: $(cat keep.err)"
is_folded "$kept" && grep -q burn_a "$kept" || fail "the kept profile is not the profile"
# A file system that fills up during the run; the kept one is speedscope.
dd if=/dev/zero of=small/filler bs=4k count=16 2>/dev/null
rm -f keep/*
TMPDIR="$WORK/keep" "$LLMPROF" record --no-gpu -f speedscope -o small/y.json -- "$GT" 0.3 2>keep.err
[ $? = 1 ] || fail "record into a full file system: exit status not 1"
kept=$(ls keep/llmprof-*.speedscope.json 2>/dev/null)
[ -n "$kept" ] && grep -qF "$kept" keep.err || fail "no speedscope profile kept: $(cat keep.err)"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))["profiles"]' "$kept" ||
	fail "the kept speedscope profile is not JSON"
[ "$(ls -A small)" = filler ] || fail "the full file system kept files: $(ls -A small)"

# ---- 5. Temporary files: short enough, recognisable, cleaned up ---------
long=$(printf 'n%.0s' $(seq 248)).folded
"$LLMPROF" convert -f folded -o "$long" in.folded 2>long.err || fail "a 255-character name: $(cat long.err)"
cmp -s "$long" in.folded || fail "the long-named output is wrong"
rm -f "$long"

# The command ends by itself once llmprof is gone.
"$LLMPROF" record --no-gpu -o killed.folded -- \
	sh -c 'while kill -0 $PPID 2>/dev/null; do sleep 0.1; done' >/dev/null 2>&1 &
llmprof_pid=$!
for _ in $(seq 100); do
	ls -a | grep -q '^\.killed\.folded\.llmprof-tmp-' && break
	sleep 0.1
done
temp=$(ls -a | grep '^\.killed\.folded\.llmprof-tmp-......$')
[ -n "$temp" ] || fail "no temporary file named .killed.folded.llmprof-tmp-XXXXXX: $(ls -a)"
kill -9 $llmprof_pid
wait $llmprof_pid 2>/dev/null
[ -e "$temp" ] || fail "the killed run left no temporary file (the test needs one)"
# One held by a live process stays; the dead run's goes.
touch -d '-1 hour' "$temp"
: >.killed.folded.llmprof-tmp-LiVe00
touch -d '-1 hour' .killed.folded.llmprof-tmp-LiVe00
exec 9<.killed.folded.llmprof-tmp-LiVe00
flock -n 9 || fail "cannot lock a file"
"$LLMPROF" convert -f folded -o killed.folded in.folded || fail "convert after a killed run failed"
[ ! -e "$temp" ] || fail "the killed run's temporary file $temp was not removed"
[ -e .killed.folded.llmprof-tmp-LiVe00 ] || fail "a temporary file held by a live process was removed"

# ---- 6. Input that never ends a line is refused early -------------------
for input in /dev/zero -; do
	start=$(date +%s)
	timeout 20 "$LLMPROF" report "$input" </dev/zero >/dev/null 2>zero.err
	status=$?
	[ $status = 2 ] || fail "report $input (zeros): exit status $status: $(cat zero.err)"
	grep -q "not a profile: binary data" zero.err || fail "report $input (zeros): '$(cat zero.err)'"
	[ $(($(date +%s) - start)) -le 5 ] || fail "report $input (zeros) took more than 5 s"
done
head -c $((17 * 1024 * 1024)) /dev/zero | tr '\0' a >long-line.folded
"$LLMPROF" report --lenient long-line.folded >/dev/null 2>line.err
[ $? = 2 ] || fail "a 17 MiB line was not refused"
grep -q "line 1 is longer than 16 MiB" line.err || fail "a 17 MiB line: '$(cat line.err)'"
timeout 20 "$LLMPROF" convert -f folded - </dev/urandom >/dev/null 2>random.err
[ $? = 2 ] || fail "random bytes were not refused: $(cat random.err)"

# ---- 7. The range of -d is in its message -------------------------------
"$LLMPROF" record -d 1e9 -- true 2>d.err
[ $? = 2 ] || fail "-d 1e9 was not a usage error"
grep -q "31536000" d.err || fail "-d 1e9 does not say the maximum: $(cat d.err)"
echo PASS
