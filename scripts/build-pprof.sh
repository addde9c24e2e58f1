#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Builds Google's pprof into $1 from the Go sources Debian packages
# (golang-go, golang-github-google-pprof-dev; scripts/install-deps.sh installs
# them), offline and in GOPATH mode, for the tests that check that pprof reads
# what llmprof writes.  Nothing is done when $1 is already there.
set -euo pipefail
dest=$1
gopath=/usr/share/gocode
[ -x "$dest" ] && exit 0
command -v go >/dev/null ||
	{ echo "build-pprof: no 'go' command (install golang-go)" >&2; exit 1; }
[ -d "$gopath/src/github.com/google/pprof" ] ||
	{ echo "build-pprof: no pprof sources in $gopath (install golang-github-google-pprof-dev)" >&2; exit 1; }
mkdir -p "$(dirname "$dest")"
# Built beside the destination and renamed, so tests that start together
# never run a half-written binary.
tmp=$(mktemp -d "$(dirname "$dest")/.pprof-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
GOPATH=$gopath GO111MODULE=off GOFLAGS= GOCACHE=${GOCACHE:-$tmp/cache} \
	go build -o "$tmp/pprof" github.com/google/pprof
mv -f "$tmp/pprof" "$dest"
