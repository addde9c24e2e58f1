#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Configures and builds llmprof into BUILD_DIR (default build/).  Extra
# arguments go to cmake, e.g. -DLLMPROF_STATIC=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
