#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Installs what llmprof's build, tests and benchmarks need (Debian 12), and
# nothing when it is all there already.
set -euo pipefail

packages=(
	build-essential cmake pkg-config clang clang-format llvm
	libbpf-dev bpftool libelf-dev libdw-dev libjansson-dev libiberty-dev
	zlib1g-dev libzstd-dev liblzma-dev libbz2-dev
	systemtap-sdt-dev
	python3 python3-jsonschema python3-torch libc6-dbg
	linux-perf bpfcc-tools
	golang-go golang-github-google-pprof-dev
	chromium
)

missing=()
for package in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$package")
done
# npm fetches speedscope's schema for the tests; a Node.js that ships its own
# npm (as NodeSource's does) conflicts with Debian's npm package.
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages, and not root to install them: ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
