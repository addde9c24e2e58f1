#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Symbols kept across runs: a second recording of the same program names
# its addresses as the first stored them (under each file's build-id, in
# the cache directory), inlined frames and their source files included; a
# changed entry is never read, and --no-unwind-cache neither reads nor
# writes one.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
export LLMPROF_CACHE_DIR=$WORK/cache

# record NAME [OPTIONS...]: cxx_inline for 1.5 s at 999 Hz, folded and
# speedscope; prints how many addresses came from the cache.
record() {
	local name=$1
	shift
	"$LLMPROF" record -v -F 999 "$@" -f speedscope -o "$WORK/$name.json" -- \
		"$FIXTURES/cxx_inline" 1.5 >/dev/null 2>"$WORK/$name.err" ||
		fail "record $name failed: $(cat "$WORK/$name.err")"
	"$LLMPROF" convert -f folded -o "$WORK/$name.folded" "$WORK/$name.json" 2>/dev/null ||
		fail "convert $name failed"
	$CHECK has "$WORK/$name.folded" 'fixture::Worker::run;fixture::mix_\[i\] ' ||
		fail "$name: no inlined mix under Worker::run"
	python3 - "$WORK/$name.json" <<'PY' || fail "$name: mix has no source file"
import json, sys
frames = json.load(open(sys.argv[1]))["shared"]["frames"]
mix = [f for f in frames if f["name"].startswith("fixture::mix")]
sys.exit(0 if mix and all(f.get("file", "").endswith(".cc") and f.get("line") for f in mix) else 1)
PY
	sed -n 's/.*resolved (\([0-9]*\) of them named as an earlier run stored them).*/\1/p' \
		"$WORK/$name.err"
}

first=$(record first)
[ "$first" = 0 ] || fail "first run: $first addresses from an empty cache"
ls "$LLMPROF_CACHE_DIR"/*.symbols >/dev/null 2>&1 || fail "no symbols entry written"
[ -z "$(find "$LLMPROF_CACHE_DIR" -name '*.symbols' -perm /077)" ] ||
	fail "an entry others may read: $(ls -l "$LLMPROF_CACHE_DIR")"
second=$(record second)
[ "$second" -gt 0 ] || fail "second run: no address named from the cache"
echo "second run: $second addresses named as the first stored them"

# A changed byte in every entry: none is read, each is written anew.
for f in "$LLMPROF_CACHE_DIR"/*.symbols; do
	printf 'X' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") - 2)) conv=notrunc 2>/dev/null
done
third=$(record third)
[ "$third" = 0 ] || fail "changed entries were read: $third addresses"
grep -q "symbols cache: .* ignored: checksum mismatch" "$WORK/third.err" ||
	fail "no word of the changed entries: $(grep -i cache "$WORK/third.err")"

# --no-unwind-cache: nothing read, nothing written.
before=$(ls -l --time-style=full-iso "$LLMPROF_CACHE_DIR")
fourth=$(record fourth --no-unwind-cache)
[ "$fourth" = 0 ] || fail "--no-unwind-cache read $fourth addresses"
[ "$before" = "$(ls -l --time-style=full-iso "$LLMPROF_CACHE_DIR")" ] ||
	fail "--no-unwind-cache changed the cache"
echo PASS
