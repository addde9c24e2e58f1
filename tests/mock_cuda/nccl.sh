#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# NCCL probes on the real libnccl.so.2, without a GPU: a program calls each
# collective, point-to-point and group call from its own function with
# known counts, datatypes, ops, roots and peers on a NULL communicator,
# which NCCL rejects.  The symbols resolve (pnccl* and their nccl* aliases),
# the probes fire once per call with the decoded arguments, the calls are
# reported as failed with their stacks, and --view nccl weighs each stack by
# the bytes asked for; also when attached before the library is loaded.
# A process that maps no libnccl gets no NCCL probe; --no-nccl none at all;
# attach to processes none of which maps it loads no NCCL object.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
scenario=${1:-record}
nccl=$CUDA_ROOT/lib64/libnccl.so.2
[ -e "$nccl" ] || skip "no $nccl"
MiB=1048576
init=init
[ -e /dev/nvidiactl ] && init=""

weight() { # STACK_REGEX FILE
	python3 - "$1" "$2" <<'PY'
import re, sys
total = 0
for line in open(sys.argv[2]):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    if re.search(sys.argv[1], stack):
        total += int(count)
print(total)
PY
}
expect() { # WHAT GOT WANT
	[ "$2" = "$3" ] || fail "$1: $2, expected $3"
}
# decoded NAME COUNT TYPE OP PEER RESULT TIMES ERR: the debug line of a call.
decoded() {
	local got
	got=$(grep -c "debug: NCCL: $1 count $2 type $3 op $4 peer $5 comm 0x0 stream 0x${9:-5157}: $6\$" "$8")
	expect "$1 records" "$got" "$7"
}

check() { # ERR FOLDED ROUNDS
	local err=$1 folded=$2 r=$3
	grep -Eq "NCCL: 1[0-9] functions probed in .*libnccl.so.2" "$err" ||
		fail "libnccl not probed: $(cat "$err")"
	# type 7 float32, op 0 sum; 9 bfloat16; 4 int64 op 2 max; 1 uint8
	# root 3; 8 float64 op 3 min root 5 (7th and 8th arguments on the
	# stack); 6 float16 peer 1; 2 int32 peer 2.
	decoded AllReduce 67108864 7 0 0 4 $r "$err"
	decoded AllGather 1048576 9 255 0 4 $r "$err"
	decoded ReduceScatter 4096 4 2 0 4 $r "$err"
	decoded Broadcast 1000 1 255 3 4 $r "$err"
	decoded Reduce 3 8 3 5 4 $r "$err"
	decoded Send 256 6 255 1 4 $r "$err"
	decoded Recv 128 2 255 2 4 $r "$err"
	decoded GroupStart 0 255 255 0 0 $r "$err" 0
	decoded GroupEnd 0 255 255 0 4 $r "$err" 0
	expect "records" "$(grep -c 'debug: NCCL: [A-Za-z]* count' "$err")" $((9 * r + ${4:-0}))
	grep -q "NCCL: 0 calls, 0 B, 0 groups" "$err" || fail "failed calls counted: $(cat "$err")"
	grep -Eq "$r x AllReduce 256.0 MiB: ncclInvalidArgument \(4\) at do_allreduce < main" "$err" ||
		fail "the failed AllReduce is not reported with its stack: $(cat "$err")"
	grep -Eq "$r x Reduce 24 B: ncclInvalidArgument \(4\) at do_reduce < main" "$err" ||
		fail "Reduce: $(cat "$err")"
	grep -Eq "$r x GroupEnd: ncclInvalidArgument \(4\) at do_sendrecv < main" "$err" ||
		fail "GroupEnd: $(cat "$err")"
	expect "AllReduce bytes" "$(weight ';main;do_allreduce;\[nccl\] AllReduce 256\.0 MiB \(failed\)$' "$folded")" $((r * 256 * MiB))
	expect "AllGather bytes" "$(weight ';main;do_allgather;\[nccl\] AllGather 2\.0 MiB \(failed\)$' "$folded")" $((r * 2 * MiB))
	expect "ReduceScatter bytes" "$(weight ';main;do_reducescatter;\[nccl\] ReduceScatter 32\.0 KiB \(failed\)$' "$folded")" $((r * 32768))
	expect "Broadcast bytes" "$(weight ';main;do_broadcast;\[nccl\] Broadcast 1000 B \(failed\)$' "$folded")" $((r * 1000))
	expect "Send bytes" "$(weight ';main;do_sendrecv;\[nccl\] Send 512 B \(failed\)$' "$folded")" $((r * 512))
	expect "Recv bytes" "$(weight ';main;do_sendrecv;\[nccl\] Recv 512 B \(failed\)$' "$folded")" $((r * 512))
	expect "lines" "$(wc -l <"$folded")" 7
}

case $scenario in
record)
	"$NCCL_APP" "$nccl" 0 3 $init >"$WORK/plain.out" 2>/dev/null || fail "the program fails without llmprof"
	"$LLMPROF" record -v --no-gpu --view nccl -o "$WORK/r.folded" -- "$NCCL_APP" "$nccl" 0 3 $init \
		>"$WORK/r.out" 2>"$WORK/r.err" || fail "record failed: $(cat "$WORK/r.err")"
	cmp -s "$WORK/plain.out" "$WORK/r.out" || fail "the program's results changed: $(cat "$WORK/r.out")"
	if [ -n "$init" ]; then
		check "$WORK/r.err" "$WORK/r.folded" 3 1
		# 4 ranks, rank 2 (after the 128-byte id passed by value)
		decoded CommInitRank 4 255 255 2 1 1 "$WORK/r.err" 0
		grep -Eq "1 x CommInitRank: ncclUnhandledCudaError \(1\) at do_init < main" "$WORK/r.err" ||
			fail "the failed CommInitRank: $(cat "$WORK/r.err")"
	else
		check "$WORK/r.err" "$WORK/r.folded" 3
	fi
	# --no-nccl: nothing probed, nothing recorded; --view nccl refused.
	"$LLMPROF" record -v --no-gpu --no-nccl -o "$WORK/n.folded" -- "$NCCL_APP" "$nccl" 0 1 \
		>/dev/null 2>"$WORK/n.err" || fail "record --no-nccl failed: $(cat "$WORK/n.err")"
	if grep -q "debug: NCCL" "$WORK/n.err"; then fail "--no-nccl probed: $(cat "$WORK/n.err")"; fi
	expect_status 2 "$LLMPROF" record --no-nccl --view nccl -- true 2>/dev/null
	;;
attach)
	# Attached while the program sleeps: libnccl is dlopen()ed later and
	# found through the dynamic loader's probe.
	# attach does not stop the process at a library load: the program
	# pauses after its dlopen() for the probes to go in.
	start_bg env NCCL_APP_PAUSE_MS=500 "$NCCL_APP" "$nccl" 2 2
	app=$BG_PID
	"$LLMPROF" attach -v -p $app --no-gpu --view nccl -o "$WORK/a.folded" 2>"$WORK/a.err" ||
		fail "attach failed: $(cat "$WORK/a.err")"
	check "$WORK/a.err" "$WORK/a.folded" 2
	;;
unmapped)
	# No libnccl in the process: no NCCL function probed, no table.
	"$LLMPROF" record -v --no-gpu -o "$WORK/u.folded" -- sleep 0.3 2>"$WORK/u.err" ||
		fail "record failed: $(cat "$WORK/u.err")"
	if grep -q "functions probed in\|NCCL:" "$WORK/u.err"; then
		fail "NCCL probes on a process without libnccl: $(cat "$WORK/u.err")"
	fi
	# attach to a process that maps no libnccl: the NCCL object is not
	# even loaded; -v says what the sampler's cost to load and its maps.
	start_bg sleep 30
	"$LLMPROF" attach -v -d 1 -p $BG_PID --no-gpu -o "$WORK/s.folded" 2>"$WORK/s.err" ||
		fail "attach to sleep failed: $(cat "$WORK/s.err")"
	grep -q "no process of the target maps libnccl" "$WORK/s.err" ||
		fail "attach to sleep does not say it leaves NCCL out: $(cat "$WORK/s.err")"
	grep -q "BPF object nccl" "$WORK/s.err" && fail "the NCCL object was loaded for sleep"
	grep -Eq "BPF object sampler: loaded and verified in [0-9.]+ ms, [1-9][0-9]* programs, [1-9][0-9]* instructions verified, [1-9][0-9]* maps of its own, [1-9]" "$WORK/s.err" ||
		fail "no load cost of the sampler's object: $(grep 'BPF object' "$WORK/s.err")"
	grep -Eq "peak RSS of llmprof [1-9][0-9.]* MiB; BPF maps [1-9][0-9.]* MiB in all" "$WORK/s.err" ||
		fail "no peak RSS or map memory: $(tail -3 "$WORK/s.err")"
	# One that maps it (preloaded): the NCCL object is loaded.
	start_bg env LD_PRELOAD="$nccl" sleep 30
	for _ in $(seq 100); do grep -q libnccl /proc/$BG_PID/maps 2>/dev/null && break; sleep 0.05; done
	"$LLMPROF" attach -v -d 1 -p $BG_PID --no-gpu -o "$WORK/m.folded" 2>"$WORK/m.err" ||
		fail "attach to a process with libnccl failed: $(cat "$WORK/m.err")"
	grep -q "BPF object nccl: loaded and verified" "$WORK/m.err" ||
		fail "no NCCL object for a process that maps libnccl: $(grep 'BPF object\|nccl' "$WORK/m.err")"
	;;
esac
echo PASS
