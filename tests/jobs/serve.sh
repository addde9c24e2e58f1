#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A healthy inference server (serve_job.py: a client thread sending 100
# requests a second, a batcher, a ThreadPoolExecutor running the forward
# passes under torch.no_grad()), recorded as a user would (record --mode
# wall -F 99 -f speedscope) and compared with what it measured itself:
# no finding but one its own numbers support.  check_serve.py holds the
# comparisons and prints the figures.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
PY=/usr/bin/python3
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
"$LLMPROF" record --mode wall -F 99 -f speedscope -o "$WORK/serve.json" -- \
	"$PY" "$TESTS_SOURCE/jobs/serve_job.py" --truth "$WORK/serve.truth" \
	>/dev/null 2>"$WORK/serve.err" || fail "record failed: $(cat "$WORK/serve.err")"
python3 "$TESTS_SOURCE/jobs/check_serve.py" "$LLMPROF" "$WORK/serve.json" "$WORK/serve.truth" ||
	fail "$(cat "$WORK/serve.err")"
echo "serve: $SECONDS s"
echo PASS
