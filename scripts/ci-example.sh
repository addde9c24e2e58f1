#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# An example CI job: build a workload from the base and the candidate
# source, profile each with llmprof record, and fail when the candidate
# spends a larger share of its time somewhere.
#
# Here the workload is tests/diff/workload.c and the candidate is the same
# file built with -DSLOW_PATH, so this job fails (exit 1) by design.  In a
# real pipeline, build the two revisions of your program instead.
#
# Environment:
#   LLMPROF        the llmprof binary (default: build*/cmd/llmprof)
#   CC             the C compiler (default: cc)
#   THRESHOLD      percentage points a share may grow by (default: 5)
#   MIN_SHARE      shares under this percent are noise (default: 1)
#   CI_EXAMPLE_WORK  where builds, profiles and the report go (default: a
#                  new temporary directory, kept)
#
# Exit status: 0 no regression, 1 regression, 2 the job itself failed.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC:-cc}
threshold=${THRESHOLD:-5}
min_share=${MIN_SHARE:-1}
llmprof=${LLMPROF:-}
if [ -z "$llmprof" ]; then
	for candidate in "$root"/build/cmd/llmprof "$root"/build-*/cmd/llmprof; do
		if [ -x "$candidate" ]; then
			llmprof=$candidate
			break
		fi
	done
fi
if [ -z "$llmprof" ] || [ ! -x "$llmprof" ]; then
	echo "ci-example: no llmprof binary; build it or set LLMPROF" >&2
	exit 2
fi
work=${CI_EXAMPLE_WORK:-$(mktemp -d)}
mkdir -p "$work/base" "$work/candidate"

# Both builds are called "workload", so their process frames, the root of
# every stack, are the same.
flags="-O2 -g -fno-omit-frame-pointer"
$cc $flags -o "$work/base/workload" "$root/tests/diff/workload.c" || exit 2
$cc $flags -DSLOW_PATH -o "$work/candidate/workload" "$root/tests/diff/workload.c" || exit 2

# profile VARIANT: records VARIANT's build into $work/VARIANT.folded.
profile() {
	if "$llmprof" record -F 999 -o "$work/$1.folded" -- "$work/$1/workload" \
		>"$work/$1.out" 2>"$work/$1.record.log"; then
		echo "ci-example: profiled the $1 build with llmprof record"
	else
		# Without BPF (no root, an old kernel, a container), fall back to a
		# profile recorded earlier from the same source, and say so.
		echo "ci-example: 'llmprof record' failed for the $1 build:" >&2
		sed 's/^/    /' "$work/$1.record.log" >&2
		echo "ci-example: falling back to the pre-made profile tests/diff/ci/$1.folded" >&2
		cp "$root/tests/diff/ci/$1.folded" "$work/$1.folded"
	fi
}
profile base
profile candidate

# The text table goes to the job's log; the Markdown is for a pull-request
# comment.  The exit status of the first decides the job.
set +e
"$llmprof" diff --threshold "$threshold" --min-share "$min_share" \
	"$work/base.folded" "$work/candidate.folded"
status=$?
"$llmprof" diff -f markdown --threshold "$threshold" --min-share "$min_share" \
	-o "$work/diff.md" "$work/base.folded" "$work/candidate.folded" 2>/dev/null
set -e

case $status in
0)
	echo "ci-example: no regression (report: $work/diff.md)"
	exit 0
	;;
1)
	echo "ci-example: regression found (report: $work/diff.md)" >&2
	exit 1
	;;
*)
	echo "ci-example: llmprof diff failed" >&2
	exit 2
	;;
esac
