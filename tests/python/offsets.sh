#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# llmprof's CPython offsets are the ones each installed version's headers
# give (python_offsets.c compiled against them), and for 3.13+ the ones it
# derives from the interpreter's own _Py_DebugOffsets agree.  $@: the
# interpreters.
. "$TESTS_SOURCE/lib/testlib.sh"
. "$TESTS_SOURCE/python/pylib.sh"
checked=0
for PY in "$@"; do
	"$PY" -c pass 2>/dev/null || continue
	minor=$(python_minor "$PY")
	include=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
	[ -f "$include/internal/pycore_runtime.h" ] || { echo "no internal headers for $PY"; continue; }
	cc -I"$include" -I"$include/internal" "$TESTS_SOURCE/python/python_offsets.c" \
		-o "$WORK/offsets" || fail "cannot build python_offsets.c against $include"
	"$WORK/offsets" | sort >"$WORK/headers"
	"$PYTHON_TABLE" table "$minor" | sort >"$WORK/table" || fail "no table for $minor"
	diff -u "$WORK/headers" "$WORK/table" || fail "offsets table for $minor differs from $include"
	if [ "${minor#3.}" -ge 13 ]; then
		lib=$("$PY" -c 'import sysconfig as s; print(s.get_config_var("LIBDIR") + "/" + (s.get_config_var("INSTSONAME") or ""))')
		[ -f "$lib" ] || lib=$(readlink -f "$PY")
		"$PYTHON_TABLE" debug-offsets "$lib" | sort >"$WORK/debug" ||
			fail "cannot read _Py_DebugOffsets from $lib"
		diff -u "$WORK/headers" "$WORK/debug" || fail "_Py_DebugOffsets of $lib differ"
	fi
	echo "$PY ($minor): offsets match"
	checked=$((checked + 1))
done
[ "$checked" -gt 0 ] || skip "no interpreter with internal headers"
echo PASS
