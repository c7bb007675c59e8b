#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Another user pre-creates the shared-memory names a job's ranks would
# take if names were predictable (uid, the next pids, small counters, and
# the all-zero random part), as 0600 files of their own; the job must
# still run, and none of the squatter's files may be touched.
#   squat.sh CVIA_RUN FUNC_P2P
set -u
run=$1 prog=$2
id nobody >/dev/null 2>&1 || { echo "FAIL: no user 'nobody' to squat as"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to act as another user"; exit 77; }
uid=$(id -u)
list=$(mktemp) || exit 1
cleanup() { xargs -r rm -f <"$list"; rm -f "$list"; }
trap cleanup EXIT
next=$(cat /proc/sys/kernel/ns_last_pid)
for p in $(seq $((next + 1)) $((next + 400))); do
    for n in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17; do
        echo "/dev/shm/cvia-$uid-$p-$n"
    done
    echo "/dev/shm/cvia-$uid-$p-0000000000000000"
done >"$list"
# created by nobody, as a squatter would (bounded: 7,600 files)
setpriv --reuid=nobody --regid=nogroup --clear-groups \
    bash -c 'umask 077; xargs -r touch' <"$list" 2>/dev/null
made=$(xargs -r ls 2>/dev/null <"$list" | wc -l)
[ "$made" -gt 7000 ] || { echo "FAIL: could only squat $made names"; exit 1; }
mult=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
out=$(timeout $((60 * mult)) "$run" -n 4 "$prog" sizes 2>&1)
rc=$?
left=$(xargs -r ls 2>/dev/null <"$list" | wc -l)
if [ $rc -ne 0 ]; then
    echo "FAIL: the job failed (exit $rc) with $made names squatted:"; echo "$out" | tail -5; exit 1
fi
if [ "$left" -ne "$made" ]; then
    echo "FAIL: $((made - left)) of the squatter's files disappeared"; exit 1
fi
echo "ok: 4 ranks ran with $made predictable names squatted by another user"
