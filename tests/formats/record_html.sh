#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# record writes -f html directly: the ground-truth fixture's page
# gives burn_a, burn_b and burn_c their known shares (50/30/20) in its data,
# and in headless Chromium its threads' shares add up to the whole, a click
# zooms on burn_a and a search finds burn_a's share (no console error;
# screenshot in $ARTIFACTS); a wall-clock recording of the waits fixture
# gives the Wall view with its off-CPU waits.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
mkdir -p "$ARTIFACTS"

# shares PAGE VIEW NAME...: each NAME's percent of the view's total in the
# page's data, each node's subtree once.
shares() {
	python3 - "$@" <<'PY'
import json, re, sys
page, view, names = sys.argv[1], sys.argv[2], sys.argv[3:]
text = open(page, encoding="utf-8").read()
data = json.loads(re.search(r'id="llmprof-data">(.*?)</script>', text, re.S).group(1))
v = next(v for v in data["views"] if v["name"] == view)
n = len(v["depth"])
weight = [0] * n
for i in range(0, len(v["entries"]), 3):
    weight[v["entries"][i]] += v["entries"][i + 2]
parent, path = [-1] * n, []
for i, d in enumerate(v["depth"]):
    del path[d:]
    parent[i] = path[-1] if path else -1
    path.append(i)
for i in range(n - 1, -1, -1):
    if parent[i] >= 0:
        weight[parent[i]] += weight[i]
total = sum(weight[i] for i in range(n) if parent[i] < 0)
for name in names:
    hit = 0
    for i in range(n):
        if v["names"][v["function"][i]] != name:
            continue
        a = parent[i]
        while a >= 0 and v["names"][v["function"][a]] != name:
            a = parent[a]
        if a < 0:
            hit += weight[i]
    print(name, 100 * hit / total if total else 0)
PY
}

"$LLMPROF" record -F 999 -f html -o "$ARTIFACTS/record.html" -- "$FIXTURES/ground_truth" 3 \
	>/dev/null 2>"$WORK/err" || fail "record failed: $(cat "$WORK/err")"
grep -q "wrote an HTML page to $ARTIFACTS/record.html" "$WORK/err" || fail "summary: $(cat "$WORK/err")"
shares "$ARTIFACTS/record.html" CPU burn_a burn_b burn_c >"$WORK/shares" || fail "no data in the page"
awk '{ s[$1] = $2; t += $2 } END { for (f in s) printf "%s %.1f\n", f, 100 * s[f] / t }' \
	"$WORK/shares" >"$WORK/burn"
for want in burn_a=50 burn_b=30 burn_c=20; do
	got=$(awk -v f="${want%=*}" '$1 == f { print $2 }' "$WORK/burn")
	[ -n "$got" ] && awk -v g="$got" -v w="${want#*=}" 'BEGIN { exit !(g - w <= 3 && w - g <= 3) }' ||
		fail "${want%=*}: ${got:-no}% of the burn functions, expected ${want#*=}: $(cat "$WORK/burn")"
done

chromium=$(command -v chromium || true)
if command -v node >/dev/null && [ -n "$chromium" ]; then
	"$TESTS_SOURCE/../scripts/fetch-playwright.sh" "$PLAYWRIGHT" || fail "cannot install playwright-core"
	echo "{\"html\": \"$ARTIFACTS/record.html\", \"chromium\": \"$chromium\",
		\"screenshot\": \"$ARTIFACTS/record.png\", \"views\": [\"CPU\"], \"threads\": true,
		\"frame\": \"burn_a\", \"search\": \"^burn_a\$\",
		\"share\": $(awk '$1 == "burn_a" { print $2 }' "$WORK/shares"),
		\"tables\": [\"facts\", \"report\"], \"sort\": \"report\"}" >"$WORK/checks.json"
	node "$TESTS_SOURCE/formats/html_browser.mjs" "$PLAYWRIGHT" "$WORK/checks.json" ||
		fail "the browser checks failed"
else
	echo "note: node or chromium is absent; the browser checks are left out"
fi

"$LLMPROF" record -F 499 --mode wall -f html -o "$ARTIFACTS/wall.html" -- "$FIXTURES/waits" 2 \
	>/dev/null 2>"$WORK/wall.err" || fail "record --mode wall -f html failed: $(cat "$WORK/wall.err")"
grep -q '"views":\[{"name":"Wall"' "$ARTIFACTS/wall.html" || fail "no Wall view"
python3 - "$ARTIFACTS/wall.html" <<'PY' || fail "no off-CPU wait in the Wall view"
import json, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
data = json.loads(re.search(r'id="llmprof-data">(.*?)</script>', text, re.S).group(1))
wall = next(v for v in data["views"] if v["name"] == "Wall")
sys.exit(not any(n.startswith("[off-cpu] ") for n in wall["names"]))
PY
echo PASS
