#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# CVIA_THREAD_CHECK catches a broken thread-level promise: at
# CVIA_THREAD_FUNNELED, worker threads that call corevia must end the job
# with the check's message (not a pass, not a hang, not a crash elsewhere).
#   thread_check.sh CVIA_RUN FUNC_COPY
set -u
run=$1 prog=$2
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
mult=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
FUNC_THREAD_LEVEL=funneled CVIA_THREAD_CHECK=yes \
    timeout $((60 * mult)) "$run" -n 2 "$prog" threads >"$out" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
    echo "FAIL: threads calling corevia at CVIA_THREAD_FUNNELED went unnoticed"; cat "$out"; exit 1
fi
if [ $rc -eq 124 ]; then
    echo "FAIL: the job hung"; cat "$out"; exit 1
fi
if ! grep -q 'CVIA_THREAD_CHECK: a thread other than the one that initialized called corevia at CVIA_THREAD_FUNNELED' "$out"; then
    echo "FAIL: the job failed (exit $rc) without the check's message:"; cat "$out"; exit 1
fi
echo "ok: misuse of CVIA_THREAD_FUNNELED reported and the job ended (exit $rc)"
