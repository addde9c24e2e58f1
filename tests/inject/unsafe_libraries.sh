#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The libraries a thread is never borrowed inside: libc, the loader, the
# unwinder, the C++ runtime, CUDA, and the allocators that replace malloc.
. "$INJECT_TESTS/common.sh"

for name in libc.so.6 ld-linux-x86-64.so.2 libgcc_s.so.1 libstdc++.so.6 libcuda.so.1 \
	libjemalloc.so.2 libtcmalloc.so.4 libtcmalloc_minimal.so.4 libmimalloc.so.2.0; do
	[ "$("$INJECT_TOOL" --unsafe-library "$name")" = 1 ] || fail "$name is not avoided"
done
for name in libm.so.6 libtorch_cpu.so libpython3.11.so.1.0 libjpeg.so.62; do
	[ "$("$INJECT_TOOL" --unsafe-library "$name")" = 0 ] || fail "$name is avoided"
done
echo PASS
