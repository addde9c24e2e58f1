#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Installs the official MCP SDK (@modelcontextprotocol/sdk, from the npm
# registry) under $1, for the test that drives `llmprof mcp` with its client.
set -euo pipefail
dest=$1
version=1.32.2
[ -f "$dest/node_modules/@modelcontextprotocol/sdk/package.json" ] && exit 0
mkdir -p "$dest"
cd "$dest"
[ -f package.json ] || echo '{"name":"llmprof-mcp-test","private":true}' >package.json
npm install --silent --no-audit --no-fund "@modelcontextprotocol/sdk@$version" >/dev/null 2>&1 || {
	echo "fetch-mcp-sdk: cannot install @modelcontextprotocol/sdk@$version from the npm registry" >&2
	exit 1
}
