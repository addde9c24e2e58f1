#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The HTML page of a profile of several values offers each as a view, and
# in headless Chromium each view's total and a function's share agree with
# Google's pprof -sample_index=NAME on the same file.
#   corpus: pprof's own large.pb.gz (cpu time, pprof's default, and
#           samples) from the peer corpus, through convert -f html.
#   record: a real recording of the GPU memory fixture (on the mock CUDA
#           libraries) written as pprof holds memory-peak, samples,
#           memory-leaks and memory-alloc: convert -f html and report
#           --html of it, and record -f html's page.
# Screenshots in $ARTIFACTS.
. "$TESTS_SOURCE/lib/testlib.sh"
scenario=${1:-record}
[ "$scenario" = corpus ] || need_root
[ -x "${PPROF:-}" ] || skip "no pprof built at ${PPROF:-}"
command -v node >/dev/null || skip "node is not installed"
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || skip "chromium is not installed (scripts/install-deps.sh installs it)"
"$TESTS_SOURCE/../scripts/fetch-playwright.sh" "$PLAYWRIGHT" || fail "cannot install playwright-core"
ARTIFACTS=$ARTIFACTS/$scenario
mkdir -p "$ARTIFACTS"
rm -f "$ARTIFACTS"/*.png "$ARTIFACTS"/*.html

# sample_types PPROF: the value names, as pprof -raw lists them.
sample_types() {
	"$PPROF" -raw "$1" >"$WORK/raw" 2>&1 || fail "pprof -raw: $(head -3 "$WORK/raw")"
	awk '/^Samples:/ { getline; gsub(/\/[a-z]+(\[dflt\])?/, ""); print; exit }' "$WORK/raw"
}

# value_check PPROF NAME: the JSON of the browser's check of view NAME,
# from pprof: the exact total of pprof -raw's column (sample_types ran),
# the total as -top writes it, and the cum% of the heaviest named function
# short of the whole.
value_check() {
	local index=$(( $(echo "$types" | tr ' ' '\n' | grep -nx "$2" | cut -d: -f1) ))
	local weight=$(awk -v k="$index" '/^Samples:/ { on = 1; getline; next }
		on && /^ *[0-9]/ && /:/ { sub(/:.*/, ""); split($0, v, " "); s += v[k] }
		/^Locations/ { on = 0 } END { printf "%.0f", s }' "$WORK/raw")
	"$PPROF" -sample_index="$2" -top -cum -nodecount=40 "$1" >"$WORK/top.$2" 2>&1 ||
		fail "pprof -sample_index=$2 -top: $(head -3 "$WORK/top.$2")"
	local shown=$(sed -n 's/.* of \([^ ]*\) total$/\1/p' "$WORK/top.$2")
	[ -n "$shown" ] || shown=0
	local row=$(awk '$NF ~ /^[A-Za-z_][A-Za-z0-9_.]*$/ && NF == 6 && $5 + 0 < 100 {
		print $NF, $5 + 0; exit }' "$WORK/top.$2")
	local name=${row% *} search=""
	[ -n "$row" ] && search=", \"search\": \"^${name//./\\\\.}\$\", \"name\": \"$name\", \"share\": ${row#* }"
	echo "{\"view\": \"$2\", \"weight\": $weight, \"shown\": \"$shown\"$search}"
}

# browse NAME JSON-MEMBERS: the browser checks on $ARTIFACTS/NAME.html.
browse() {
	echo "{\"html\": \"$ARTIFACTS/$1.html\", \"chromium\": \"$chromium\",
		\"screenshot\": \"$ARTIFACTS/$1.png\", $2}" >"$WORK/$1.json"
	node "$TESTS_SOURCE/formats/html_browser.mjs" "$PLAYWRIGHT" "$WORK/$1.json" ||
		fail "$1: the browser checks failed"
}

if [ "$scenario" = corpus ]; then
	large=$TESTS_SOURCE/../../shared/peer-corpus/pprof/large.pb.gz
	[ -f "$large" ] || skip "$large is absent"
	types=$(sample_types "$large")
	[ "$types" = "samples cpu" ] || fail "sample types of large.pb.gz: $types"
	checks=$(for v in $types; do value_check "$large" "$v"; done | paste -sd, -)
	grep -q '"search": "^main\\\\.main\$"' <<<"$checks" || fail "pprof does not show main.main: $checks"
	"$LLMPROF" convert -f html -o "$ARTIFACTS/large.html" "$large" || fail "convert -f html"
	browse large "\"views\": [\"cpu\", \"samples\"], \"values\": [$checks]"
	echo PASS
	exit 0
fi

export LD_LIBRARY_PATH=$(dirname "$MEMORY_APP")/lib
"$LLMPROF" record --no-gpu --gpu-memory -f pprof -o "$WORK/all.pb.gz" -- "$MEMORY_APP" \
	>/dev/null 2>"$WORK/record.err" || fail "record -f pprof: $(cat "$WORK/record.err")"
types=$(sample_types "$WORK/all.pb.gz")
[ "$types" = "memory-peak samples memory-leaks memory-alloc" ] || fail "sample types: $types"
checks=$(for v in $types; do value_check "$WORK/all.pb.gz" "$v"; done | paste -sd, -)
grep -q '"search": "^load_weights\$"' <<<"$checks" || fail "pprof does not show load_weights: $checks"

"$LLMPROF" convert -f html -o "$ARTIFACTS/convert.html" "$WORK/all.pb.gz" || fail "convert -f html"
browse convert "\"views\": [$(sed 's/[^ ]*/"&"/g; s/ /, /g' <<<"$types")], \"values\": [$checks]"
"$LLMPROF" report --html -o "$ARTIFACTS/report.html" "$WORK/all.pb.gz" || fail "report --html"
browse report "\"values\": [$checks], \"tables\": [\"facts\", \"report\"]"

# record -f html: the memory values, then the recording's own views where
# it sampled any (its samples are the recording's view, not repeated).
# Memory is exact to the byte, so this recording's totals are the pprof
# file's.
"$LLMPROF" record --no-gpu --gpu-memory -f html -o "$ARTIFACTS/record.html" -- "$MEMORY_APP" \
	>/dev/null 2>"$WORK/html.err" || fail "record -f html: $(cat "$WORK/html.err")"
memory=$(python3 -c 'import json, sys
print(json.dumps([c for c in json.loads(sys.argv[1]) if c["view"] != "samples"]))' "[$checks]")
browse record "\"values\": $memory"
python3 - "$ARTIFACTS/record.html" <<'PY' || fail "record -f html views"
import json, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
data = json.loads(re.search(r'id="llmprof-data">(.*?)</script>', text, re.S).group(1))
names = [v["name"] for v in data["views"]]
assert names[:3] == ["memory-peak", "memory-leaks", "memory-alloc"], names
assert "samples" not in names, names
PY
echo PASS
