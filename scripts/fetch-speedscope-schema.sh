#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Puts speedscope's JSON schema (shipped in the speedscope npm package) at
# $1, for the tests that validate our speedscope output.
set -euo pipefail
dest=$1
version=1.25.0
[ -s "$dest" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "speedscope@$version" >/dev/null 2>&1) || {
	echo "fetch-speedscope-schema: cannot fetch speedscope@$version from the npm registry" >&2
	exit 1
}
tar -xzf "$tmp"/speedscope-$version.tgz -C "$tmp" package/dist/release/file-format-schema.json
cp "$tmp/package/dist/release/file-format-schema.json" "$dest"
