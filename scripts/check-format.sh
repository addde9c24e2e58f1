#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Checks that every C file and header follows the repository's .clang-format
# (kernel style); prints the files that do not and exits 1.  The pinned
# bpf/vmlinux.h is generated and left as bpftool writes it.
set -euo pipefail
cd "$(dirname "$0")/.."
format=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$format" ]; then
	echo "check-format: clang-format is not installed (scripts/install-deps.sh installs it)" >&2
	exit 1
fi
bad=()
while IFS= read -r file; do
	"$format" --dry-run -Werror "$file" >/dev/null 2>&1 || bad+=("$file")
done < <(git ls-files '*.c' '*.h' | grep -v '^bpf/vmlinux')
if [ ${#bad[@]} -gt 0 ]; then
	echo "check-format: ${#bad[@]} files differ from .clang-format (run: $format -i FILE):" >&2
	printf '  %s\n' "${bad[@]}" >&2
	exit 1
fi
