#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
# hosts_shmfull.sh HOSTS_SH CVIA_RUN DSM_STRESS: groups across hosts (2
# hosts x 2 ranks, CVIA_DSM_LEVELS=2) put each host's region and twins in
# /dev/shm; here a /dev/shm of 96 MiB (a mount namespace around the whole
# job, which the hosts' network namespaces inherit) against 64 MiB of DSM
# memory (128 MiB with the twins). The job must end with the message that
# names /dev/shm, not with a signal or a transfer error; one level (memfds,
# outside /dev/shm) must pass in the same /dev/shm.
set -u
hosts=$1 run=$2 prog=$3
fail=0
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
small() {   # LEVELS
    # shellcheck disable=SC2016
    CVIA_DSM_LEVELS=$1 CVIA_DSM_SIZE=256m DSM_TEST_BIG=64 timeout 120 unshare -m sh -c \
        'mount -t tmpfs -o size=96m,mode=1777 tmpfs /dev/shm && exec bash "$0" "$1" 4 "$2" big' \
        "$hosts" "$run" "$prog" >"$out" 2>&1
}
small 2
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q "/dev/shm has [0-9]* bytes free" "$out"; then
    echo "FAIL: groups across hosts, 64 MiB in a 96 MiB /dev/shm: exit $rc, $(head -4 "$out")"
    fail=1
fi
grep -qi "signal\|SIGBUS\|bus error\|Bad address" "$out" &&
    { echo "FAIL: a rank died of a signal or a fault: $(head -4 "$out")"; fail=1; }
small 1
rc=$?
if [ $rc -ne 0 ] || [ "$(grep -c '^ok big' "$out")" != 4 ]; then
    echo "FAIL: one level across hosts, 64 MiB with a 96 MiB /dev/shm: exit $rc, $(head -4 "$out")"
    fail=1
fi
[ $fail = 0 ] && echo "ok /dev/shm full, groups across hosts"
exit $fail
