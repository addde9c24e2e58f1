#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Measures one injection: the whole call and how long the target's thread
# is held stopped, over 20 injections into a sleeping target (which must
# run on unharmed).  Prints min / median / max in ms.
. "$INJECT_TESTS/common.sh"

start_target "$TARGETS/target_sleep" libc 700 "$WORK/ready"
wait_file "$WORK/ready"
: >"$WORK/total"
: >"$WORK/stopped"
for i in $(seq 20); do
	sleep 0.05
	inject $TARGET_PID "$WORK/ran" 2>/dev/null
	expect_injected
	field total_ms >>"$WORK/total"
	field stopped_ms >>"$WORK/stopped"
done
summary() {
	sort -g "$1" | awk '{ v[NR] = $1 } END { printf "min %.3f median %.3f max %.3f", v[1], v[int((NR + 1) / 2)], v[NR] }'
}
echo "injection total ms:   $(summary "$WORK/total")"
echo "thread stopped ms:    $(summary "$WORK/stopped")"
max=$(sort -g "$WORK/stopped" | tail -1)
awk -v m="$max" 'BEGIN { exit !(m < 250) }' || fail "the thread was held $max ms"
wait_exit $TARGET_PID 0
diff -u <(seq -f 'tick %g' 700; echo done) "$WORK/target.out" || fail "output changed"
echo PASS
