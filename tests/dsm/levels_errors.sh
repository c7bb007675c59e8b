#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
# levels_errors.sh CVIA_RUN DSM_STRESS: CVIA_DSM_LEVELS out of range or not
# a number, and ranks that disagree on it (rank 1 at 1, rank 0 at 2: rank 0
# has created the host's segment by then), each end the job with a message
# naming the variable; no segment is left in /dev/shm.
set -u
run=$1 prog=$2
fail=0
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
# our own segments only (func.squat, beside us, plants another user's)
before=$(find /dev/shm -maxdepth 1 -user "$(id -u)" -name "cvia-$(id -u)-*" 2>/dev/null | wc -l)
for v in 0 3 2x ''; do
    CVIA_DSM_LEVELS=$v timeout 60 "$run" -n 2 -- "$prog" counter >"$out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q "CVIA_DSM_LEVELS: invalid value '$v'" "$out"; then
        echo "FAIL: CVIA_DSM_LEVELS='$v': exit $rc, $(head -3 "$out")"
        fail=1
    fi
done
# shellcheck disable=SC2016
CVIA_DSM_LEVELS=2 timeout 60 "$run" -n 2 -- sh -c \
    'if [ "$CVIA_RANK" = 1 ]; then export CVIA_DSM_LEVELS=1; fi; exec "$0" counter' "$prog" \
    >"$out" 2>&1
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q "different CVIA_DSM_LEVELS" "$out" ||
   ! grep -q "CVIA_DSM_LEVELS 2, this rank with 1" "$out"; then
    echo "FAIL: ranks with CVIA_DSM_LEVELS 2 and 1: exit $rc, $(head -4 "$out")"
    fail=1
fi
after=$(find /dev/shm -maxdepth 1 -user "$(id -u)" -name "cvia-$(id -u)-*" 2>/dev/null | wc -l)
if [ "$after" -gt "$before" ]; then
    echo "FAIL: $((after - before)) segment(s) left in /dev/shm"
    fail=1
fi
[ $fail = 0 ] && echo "ok levels errors"
exit $fail
