#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run one functional test through cvia-run and check what a job must never
# do: hang, leave processes behind, leave segments in /dev/shm.
#   run.sh [--expect-fail] CVIA_RUN NP PROG CASE
# --expect-fail: the job must fail (non-zero, not a timeout) and every
# surviving rank must have reported an expected error.
set -u
expect_fail=0
if [ "${1:-}" = --expect-fail ]; then expect_fail=1; shift; fi
[ $# -eq 4 ] || { echo "usage: run.sh [--expect-fail] CVIA_RUN NP PROG CASE" >&2; exit 2; }
run=$1 np=$2 prog=$3 case=$4
# FUNC_RUN_STDIN: a file that becomes the job's stdin (cvia-run hands it to rank 0)
if [ -n "${FUNC_RUN_STDIN:-}" ]; then
    exec <"$FUNC_RUN_STDIN" || { echo "run.sh: cannot read FUNC_RUN_STDIN $FUNC_RUN_STDIN" >&2; exit 2; }
fi
mult=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
limit=$((60 * mult))
token="cvia-test-$$-$RANDOM"
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT

. "$(dirname "$0")/leftovers.sh"

start=$(date +%s)
# FUNC_RUN_GRACE: cvia-run's --grace (a stopped rank cannot use one)
timeout -k 5 $((limit + 10)) "$run" -n "$np" --timeout "$limit" ${FUNC_RUN_GRACE:+--grace "$FUNC_RUN_GRACE"} \
    -- "$prog" "$case" "--token=$token" >"$out" 2>&1
rc=$?
cat "$out"
fail=0
if [ $rc -eq 124 ] || [ $rc -eq 137 -a $expect_fail -eq 0 ]; then
    echo "FAIL: job timed out or was killed (exit $rc) after $(( $(date +%s) - start )) s"
    fail=1
elif [ $expect_fail -eq 0 ] && [ $rc -ne 0 ]; then
    echo "FAIL: job exited $rc"
    fail=1
elif [ $expect_fail -eq 1 ]; then
    if [ $rc -eq 0 ]; then
        echo "FAIL: job should have failed"
        fail=1
    fi
    survivors=$((np - 1))
    got=$(grep -c 'expected-error' "$out")
    if [ "$got" -ne "$survivors" ]; then
        echo "FAIL: $got of $survivors surviving ranks reported the dead peer"
        fail=1
    fi
fi
leftovers "$token" || fail=1
exit $fail
