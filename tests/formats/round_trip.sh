#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# pprof loses no stack: folded -> pprof -> folded gives the sorted input back,
# through gzip'ed, raw and standard input alike and through pprof's own
# encoder (`pprof -proto`), and diff and report read pprof as they read folded.
. "$TESTS_SOURCE/lib/testlib.sh"
inputs=$TESTS_SOURCE/diff/inputs

for f in base.folded new.folded perf.folded bcc.folded gpu.folded pyspy.raw lf.folded \
	noise_new.folded disjoint_base.folded; do
	"$LLMPROF" convert -f pprof -o "$WORK/p.pb.gz" "$inputs/$f" || fail "$f to pprof"
	"$LLMPROF" convert -f folded "$WORK/p.pb.gz" >"$WORK/back.folded" || fail "$f back"
	LC_ALL=C sort "$inputs/$f" >"$WORK/sorted.folded"
	diff -u "$WORK/sorted.folded" "$WORK/back.folded" || fail "$f: folded -> pprof -> folded"

	gzip -dc "$WORK/p.pb.gz" >"$WORK/p.pb" || fail "$f: not gzip"
	"$LLMPROF" convert -f folded "$WORK/p.pb" | cmp - "$WORK/back.folded" ||
		fail "$f: raw profile.proto reads differently"
	"$LLMPROF" convert -f folded - <"$WORK/p.pb.gz" | cmp - "$WORK/back.folded" ||
		fail "$f: pprof on standard input reads differently"
	"$PPROF" -proto "$WORK/p.pb.gz" >"$WORK/go.pb.gz" 2>"$WORK/err" ||
		fail "$f: pprof -proto: $(cat "$WORK/err")"
	"$LLMPROF" convert -f folded "$WORK/go.pb.gz" | cmp - "$WORK/back.folded" ||
		fail "$f: pprof's own encoding reads differently"

	"$LLMPROF" diff "$inputs/$f" "$WORK/p.pb.gz" >"$WORK/diff.txt" || fail "$f: diff against its pprof"
	grep -q "no changes" "$WORK/diff.txt" || fail "$f: diff with its pprof: $(cat "$WORK/diff.txt")"
done

# Speedscope timelines (and GPU streams) keep their stacks through pprof, and
# pprof -> pprof is stable.
for f in recorded.speedscope.json evented.speedscope.json gpu_streams.speedscope.json; do
	"$LLMPROF" convert -f pprof -o "$WORK/once.pb.gz" "$inputs/$f" || fail "$f once"
	"$LLMPROF" convert -f folded "$inputs/$f" >"$WORK/a.folded"
	"$LLMPROF" convert -f folded "$WORK/once.pb.gz" >"$WORK/b.folded"
	cmp "$WORK/a.folded" "$WORK/b.folded" || fail "$f: stacks changed through pprof"
	cp "$WORK/once.pb.gz" "$WORK/again.pb.gz"
	"$LLMPROF" convert -f pprof -o "$WORK/twice.pb.gz" "$WORK/once.pb.gz" || fail "$f twice"
	"$LLMPROF" convert -f pprof -o "$WORK/thrice.pb.gz" "$WORK/again.pb.gz" || fail "$f thrice"
	"$LLMPROF" convert -f folded "$WORK/twice.pb.gz" | cmp - "$WORK/a.folded" ||
		fail "$f: pprof -> pprof changed the stacks"
done

"$LLMPROF" report "$WORK/once.pb.gz" >"$WORK/report.txt" || fail "report of pprof"
grep -q '^profile: .*(pprof)$' "$WORK/report.txt" || fail "report names the format: $(head -1 "$WORK/report.txt")"
"$LLMPROF" report "$inputs/gpu.folded" | tail -n +2 >"$WORK/folded.report"
"$LLMPROF" convert -f pprof -o "$WORK/gpu.pb.gz" "$inputs/gpu.folded"
"$LLMPROF" report "$WORK/gpu.pb.gz" | tail -n +2 >"$WORK/pprof.report"
diff -u "$WORK/folded.report" "$WORK/pprof.report" || fail "report of gpu.folded and of its pprof differ"
echo PASS
