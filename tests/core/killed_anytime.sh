#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# SIGKILL of llmprof at any moment never harms the target: 200 attaches to
# the mock CUDA app, each killed after a delay spread over 0-400 ms (before,
# during and after the injection of the GPU agent, while BPF is set up, and,
# with a short -d, while draining and writing), four at a time.  Every
# target must exit 0 with the output it gives without llmprof.
# KILL_TRIES and KILL_PARALLEL override the counts (scripts/stress.sh).
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
app=$MOCK_CUDA/mock_app
[ -x "$app" ] || skip "mock CUDA stack not built (no CUPTI headers)"
tries=${KILL_TRIES:-200}
parallel=${KILL_PARALLEL:-4}
export LLMPROF_CUPTI_LIBRARY=$MOCK_CUDA/lib/libcupti.so
LD_LIBRARY_PATH=$MOCK_CUDA/lib "$app" --seconds 1 >"$WORK/plain.out" || fail "mock app alone failed"
grep -q '^checksum ' "$WORK/plain.out" || fail "mock app printed no checksum"

# try I: one attach killed after a delay chosen by I (2 ms steps, jittered).
try() {
	local i=$1 dir=$WORK/try.$1 delay duration target profiler status
	mkdir -p "$dir"
	delay=$((i * 400 / tries + RANDOM % 3))
	case $((i % 3)) in
	0) duration=5 ;;   # killed while profiling
	1) duration=0.2 ;; # often killed while stopping, draining or writing
	2) duration=0.4 ;;
	esac
	LD_LIBRARY_PATH=$MOCK_CUDA/lib "$app" --seconds 1 >"$dir/app.out" 2>"$dir/app.err" &
	target=$!
	sleep 0.3
	"$LLMPROF" attach -p $target -d $duration -F 499 -o "$dir/out.folded" 2>"$dir/llmprof.err" &
	profiler=$!
	sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
	kill -9 $profiler 2>/dev/null
	wait $profiler 2>/dev/null
	wait $target
	status=$?
	if [ $status != 0 ] || ! cmp -s "$WORK/plain.out" "$dir/app.out"; then
		echo "try $i: killed after $delay ms (-d $duration): target exit $status;" \
			"stdout $(cmp -s "$WORK/plain.out" "$dir/app.out" && echo same || echo changed);" \
			"$(tail -1 "$dir/app.err")" >>"$WORK/failures"
		return
	fi
	rm -rf "$dir"
}

worker() {
	local i
	for ((i = $1; i < tries; i += parallel)); do
		try $i
	done
}

start=$(date +%s)
for ((w = 0; w < parallel; w++)); do
	worker $w &
done
wait
took=$(($(date +%s) - start))
if [ -s "$WORK/failures" ]; then
	cat "$WORK/failures" >&2
	fail "$(wc -l <"$WORK/failures") of $tries targets were harmed"
fi
echo "$tries of $tries targets ran on unharmed ($took s)"
echo PASS
