#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The agent loads on glibc 2.28: no symbol it needs has a newer version,
# and it names libdl.so.2 and libpthread.so.0, where older glibc keeps
# dlopen and pthread_create.  AGENT is the first argument.
agent=$1
[ -f "$agent" ] || { echo "FAIL: no agent at $agent"; exit 1; }
command -v objdump >/dev/null || { echo "SKIP: no objdump"; exit 77; }
newer=$(objdump -T "$agent" | grep -o 'GLIBC_[0-9.]*' | sort -u -V |
	awk -F'[_.]' '$2 > 2 || ($2 == 2 && $3 > 28)')
if [ -n "$newer" ]; then
	echo "FAIL: symbol versions above GLIBC_2.28:"
	objdump -T "$agent" | grep -F -e "$newer"
	exit 1
fi
for lib in libdl.so.2 libpthread.so.0; do
	objdump -p "$agent" | grep -q "NEEDED *$lib" || { echo "FAIL: $lib not needed"; exit 1; }
done
echo "PASS: $(objdump -T "$agent" | grep -o 'GLIBC_[0-9.]*' | sort -u -V | tail -1) at most"
