#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# scripts/gpu-check.sh never passes a check it did not make: with a GPU
# that answers nvidia-smi but no nvcc and no PyTorch, it says "cannot
# check" and exits 77, not "all checks passed"; it names the versions it
# found and runs every step under a timeout.  Needs root, as the script.
. "$TESTS_SOURCE/lib/testlib.sh"
need_root
mkdir -p "$WORK/bin"
printf '#!/bin/sh\necho "GPU 0: fake (UUID: GPU-0)"\n' >"$WORK/bin/nvidia-smi"
chmod +x "$WORK/bin/nvidia-smi"
printf '#!/bin/sh\nexec python3 -c "import sys; sys.exit(1)"\n' >"$WORK/bin/python-no-torch"
chmod +x "$WORK/bin/python-no-torch"
status=0
PATH="$WORK/bin:$PATH" NVCC=/nonexistent/nvcc PYTHON="$WORK/bin/python-no-torch" \
	bash "$TESTS_SOURCE/../scripts/gpu-check.sh" "$LLMPROF" "$WORK/check" \
	>"$WORK/out" 2>&1 || status=$?
[ "$status" -eq 77 ] || fail "gpu-check exited $status: $(cat "$WORK/out")"
! grep -q "all checks passed" "$WORK/out" || fail "gpu-check passed what it did not check"
grep -q "cannot check: no nvcc" "$WORK/out" || fail "no 'cannot check: no nvcc': $(cat "$WORK/out")"
grep -q "cannot check: no torch" "$WORK/out" || fail "no 'cannot check: no torch'"
grep -q "^gpu-check: versions: driver .*, CUDA .*, CUPTI .*, torch none, NCCL none$" "$WORK/out" ||
	fail "no versions line: $(cat "$WORK/out")"
# Every command that runs llmprof, a target, nvcc or Python is bounded.
unbounded=$(grep -nE '^[[:space:]]*(if !? ?|elif )?"\$(LLMPROF|PYTHON|NVCC)"' \
	"$TESTS_SOURCE/../scripts/gpu-check.sh" || true)
[ -z "$unbounded" ] || fail "steps without a timeout: $unbounded"
echo PASS
