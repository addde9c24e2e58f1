# SPDX-License-Identifier: GPL-2.0
# Shared by the Python frame tests, sourced after tests/lib/testlib.sh.
# CTest sets PYTHON_FIXTURES (the scripts and the C extension's source).

# need_python PY: skips unless PY runs.
need_python() {
	[ -x "$1" ] && "$1" -c pass 2>/dev/null || skip "no Python at $1"
}

# python_minor PY: "3.12"
python_minor() {
	"$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'
}

# pyframe FUNCTION FILE: the folded name of a Python frame.
pyframe() {
	printf '%s (%s)_[p]' "$1" "$2"
}

# build_extension PY DIR: the fixture C extension, built for PY into DIR.
build_extension() {
	local include suffix
	include=$("$1" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
	suffix=$("$1" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
	[ -f "$include/Python.h" ] || skip "no Python.h for $1 (in $include)"
	mkdir -p "$2"
	cc -shared -fPIC -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls \
		-I"$include" "$PYTHON_FIXTURES/llmprof_native.c" -o "$2/llmprof_native$suffix" \
		-lpthread || fail "cannot build the C extension for $1"
}

# wait_ready FILE: waits (up to 20 s) for a fixture to print "ready".
wait_ready() {
	for _ in $(seq 200); do
		grep -q '^ready' "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "the fixture never got ready: $(cat "$1")"
}

# check_lines SPEEDSCOPE: the Python frames of shares.py (written with
# --lines) are named by their function, carry their file, and burn_a the
# line it calls burn() from.
check_lines() {
	local line
	line=$(grep -n 'return burn(50)' "$PYTHON_FIXTURES/shares.py" | cut -d: -f1)
	python3 - "$1" "$line" "$PYTHON_FIXTURES/shares.py" <<'CHECK' || fail "speedscope frames of $1"
import json
import sys

doc = json.load(open(sys.argv[1]))
frames = [f for f in doc["shared"]["frames"] if f.get("file", "").endswith("shares.py")]
if not frames:
    sys.exit("no Python frames")
for f in frames:
    if f.get("file") != sys.argv[3]:
        sys.exit(f"{f['name']}: file {f.get('file')!r}, expected {sys.argv[3]!r}")
lines = {f.get("line") for f in frames if f["name"] == "burn_a"}
body = int(sys.argv[2])
# A frame sampled as it is entered, before its first instruction, is at
# its "def" line (co_firstlineno), the line above the body.
if body not in lines or not lines <= {body, body - 1}:
    sys.exit(f"burn_a at lines {lines}, expected {{{body}}} (or its def line {body - 1})")
CHECK
}

# no_stack FILE REGEX WHY: fails if some stack matches.
no_stack() {
	if grep -E -q -- "$2" "$1"; then
		fail "$3: $(grep -E -- "$2" "$1" | head -1 | cut -c1-400)"
	fi
}
