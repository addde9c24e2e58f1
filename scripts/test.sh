#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Installs what is missing, builds, and runs every test (unit, golden, and
# as root the BPF tests against real processes).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-test}

scripts/install-deps.sh
scripts/check-format.sh
BUILD_DIR=$build_dir scripts/build.sh
# The one-file binary for GPU nodes, checked by root.static_binary; a
# Release build with gcc, the build type a new user types first.
BUILD_DIR=${build_dir}-static scripts/build.sh -DCMAKE_BUILD_TYPE=Release -DLLMPROF_STATIC=ON \
	-DBUILD_TESTING=OFF
export LLMPROF_STATIC_BINARY=$PWD/${build_dir}-static/cmd/llmprof
scripts/fetch-speedscope-schema.sh "$build_dir/speedscope-schema.json"
labels='unit|golden'
if [ "$(id -u)" = 0 ]; then
	labels='unit|golden|root'
else
	echo "test.sh: not root: running the unit and golden tests only" >&2
fi
ctest --test-dir "$build_dir" -L "$labels" --output-on-failure --timeout 600
