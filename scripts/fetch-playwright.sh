#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Installs playwright-core (from the npm registry) under $1, for the tests
# that open llmprof's flame graphs in the system's Chromium.  Playwright's
# own browser download is not used: the tests pass Chromium's path.
set -euo pipefail
dest=$1
version=1.65.2
[ -f "$dest/node_modules/playwright-core/package.json" ] && exit 0
mkdir -p "$dest"
cd "$dest"
[ -f package.json ] || echo '{"name":"llmprof-browser-test","private":true}' >package.json
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --silent --no-audit --no-fund \
	"playwright-core@$version" >/dev/null 2>&1 || {
	echo "fetch-playwright: cannot install playwright-core@$version from the npm registry" >&2
	exit 1
}
