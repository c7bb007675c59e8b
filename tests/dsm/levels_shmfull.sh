#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
# levels_shmfull.sh CVIA_RUN DSM_STRESS: two ranks share 64 MiB of DSM
# memory under a /dev/shm of 32 MiB (a container's small /dev/shm, made
# here in a user and mount namespace). Two levels put the region in
# /dev/shm: the job must end with a message naming the cause, not die of
# a SIGBUS; one level (memfds, outside /dev/shm) must pass. Exit 77 where
# namespaces are not available (as func/hosts.sh).
set -u
run=$1 prog=$2
unshare -Urm true 2>/dev/null || { echo "SKIP: no user namespaces"; exit 77; }
fail=0
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
small() {   # LEVELS
    # shellcheck disable=SC2016
    CVIA_DSM_LEVELS=$1 DSM_TEST_BIG=64 timeout 120 unshare -Urm sh -c \
        'mount -t tmpfs -o size=32m,mode=1777 tmpfs /dev/shm && exec "$0" -n 2 -- "$1" big' \
        "$run" "$prog" >"$out" 2>&1
}
small 2
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q "/dev/shm has [0-9]* bytes free" "$out"; then
    echo "FAIL: two levels, 64 MiB in a 32 MiB /dev/shm: exit $rc, $(head -4 "$out")"
    fail=1
fi
grep -qi "signal\|SIGBUS\|bus error" "$out" && { echo "FAIL: a rank died of a signal: $(head -4 "$out")"; fail=1; }
small 1
rc=$?
if [ $rc -ne 0 ] || [ "$(grep -c '^ok big' "$out")" != 2 ]; then
    echo "FAIL: one level, 64 MiB with a 32 MiB /dev/shm: exit $rc, $(head -4 "$out")"
    fail=1
fi
[ $fail = 0 ] && echo "ok /dev/shm full"
exit $fail
