#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two processes without any launcher reach each other through the corevia
# provider (issue 14, item 3): fab_dyn started twice from this script, the
# names passed through files. Afterwards no segment of either is left in
# /dev/shm (a killed one's is removed by its surviving peer).
#   dyn.sh [--hosts] FAB_DYN PROVIDER_DIR [msg|death|forge|threads|reclaim]
# --hosts: a and b on two network namespace hosts of scripts/netlab.sh,
# reaching each other over udp (CVIA_NET=udp, or eth if set so): their
# addresses carry the link endpoint, frames to each are sealed with a key
# from its nonce. The
# death is found by the probes of the waiting side (CVIA_DGRAM_PEER_TIMEOUT
# short here); the forged name's HELLO must be counted forged by b.
set -u
hosts=0
[ "${1:-}" = --hosts ] && { hosts=1; shift; }
[ $# -ge 2 ] || { echo "usage: dyn.sh [--hosts] FAB_DYN PROVIDER_DIR [msg|death|forge|threads|reclaim|nonet]" >&2; exit 2; }
prog=$1 provdir=$2 mode=${3:-msg}
mult=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
limit=$((30 * mult))
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d) || exit 1
chmod 755 "$work"
tag=dy$$
on_a=() on_b=()
cleanup() {
    [ $hosts -eq 1 ] && "$top/scripts/netlab.sh" down --tag "$tag" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
if [ $hosts -eq 1 ]; then
    [ "$mode" = reclaim ] && { echo "reclaim is a one-host mode"; exit 2; }
    "$top/scripts/netlab.sh" up --tag "$tag" --hosts 2 >/dev/null 2>"$work/lab" ||
        { echo "SKIP: no network lab here: $(head -1 "$work/lab")"; exit 77; }
    on_a=("$top/scripts/netlab.sh" exec --tag "$tag" h1)
    on_b=("$top/scripts/netlab.sh" exec --tag "$tag" h2)
    export CVIA_NET=${CVIA_NET:-udp} CVIA_DGRAM_PEER_TIMEOUT=1s CVIA_BOOT_TIMEOUT=$((3 * mult))s
    # forge: b logs every peer that connects to it; the forged name must make none
    [ "$mode" = forge ] && export CVIA_LOG=info CVIA_LOG_SUBSYS=net
fi
# no launcher of any kind
unset CVIA_BOOT_ADDR CVIA_RANK CVIA_SIZE CVIA_JOBID PMIX_RANK PMIX_NAMESPACE PMIX_SERVER_URI2 \
      PMIX_SERVER_URI3 PMIX_SERVER_URI4 PMIX_SERVER_URI41 OMPI_COMM_WORLD_RANK SLURM_STEP_NUM_TASKS
export FI_PROVIDER_PATH=$provdir
# a sanitizer build of the provider needs its runtime first (libfabric
# dlopens it into a program that may not have it)
asan=$(ldd "$provdir"/*.so 2>/dev/null | awk '$1 ~ /^lib[at]san/ && $3 ~ /^\// { print $3; exit }')
[ -n "$asan" ] && ! ldd "$prog" | grep -q "${asan##*/}" && export LD_PRELOAD=$asan
# reclaim: one peer at a time, so c gets b's ring only if a's was freed
[ "$mode" = reclaim ] && export CVIA_MAX_PEERS=2
timeout "$limit" "${on_a[@]}" "$prog" a "$work" "$mode" >"$work/a.out" 2>&1 &
pa=$!
timeout "$limit" "${on_b[@]}" "$prog" b "$work" "$mode" >"$work/b.out" 2>&1 &
pb=$!
rc=0
if [ "$mode" = reclaim ]; then
    timeout "$limit" "$prog" c "$work" "$mode" >"$work/c.out" 2>&1
    rc=$?
fi
wait $pa; ra=$?
wait $pb; rb=$?
for r in a b c; do [ -f "$work/$r.out" ] && { echo "--- $r"; cat "$work/$r.out"; }; done
fail=0
case $mode in
msg)   [ $ra -eq 0 ] && grep -qx "ok a" "$work/a.out" || fail=1
       [ $rb -eq 0 ] && grep -qx "ok b" "$work/b.out" || fail=1 ;;
nonet) [ $ra -eq 0 ] && grep -qx "ok nonet" "$work/a.out" || fail=1
       [ $rb -eq 0 ] && grep -qx "ok nonet" "$work/b.out" || fail=1
       # the one line that says why, on both sides
       for r in a b; do
           grep -q "without CVIA_NET=udp (or eth)" "$work/$r.out" ||
               { echo "$r: no line saying why the name was refused"; fail=1; }
       done ;;
threads) [ $ra -eq 0 ] && grep -qx "ok threads" "$work/a.out" || fail=1
       [ $rb -eq 0 ] && grep -qx "ok threads" "$work/b.out" || fail=1 ;;
reclaim) [ $ra -eq 137 ] || { echo "a was to die by SIGKILL (status $ra)"; fail=1; }
       [ $rb -eq 0 ] && grep -qx "ok reclaim" "$work/b.out" || fail=1
       [ $rc -eq 0 ] && grep -qx "ok reclaim c" "$work/c.out" || fail=1 ;;
forge) [ $ra -eq 0 ] && grep -qx "ok forge" "$work/a.out" || fail=1
       [ $rb -eq 0 ] || fail=1
       # across hosts: the HELLO sealed for the forged nonce's key (and
       # tagged for it: b's socket filter drops it) made no peer at b
       if [ $hosts -eq 1 ]; then
           n=$(grep -c '(it connected)' "$work/b.out")
           [ "$n" -eq 1 ] || { echo "b took $n connections, not the true name's one"; fail=1; }
       fi ;;
death) [ $ra -eq 137 ] || { echo "a was to die by SIGKILL (status $ra)"; fail=1; }
       [ $rb -eq 0 ] && grep -q "^ok death" "$work/b.out" || fail=1
       # across hosts b owed a nothing: its probes found the death
       if [ $hosts -eq 1 ] && ! grep -q 'answered no probe' "$work/b.out"; then
           echo "b did not find the death by its probes"; fail=1
       fi ;;
*)     echo "unknown mode $mode"; exit 2 ;;
esac
# across hosts no survivor shares the killed one's host: its segment name
# is what `cvia-info --cleanup` on that host removes (and only that)
if [ $hosts -eq 1 ] && [ "$mode" = death ] && [ -f "$work/a.pid" ]; then
    pa_pid=$(cat "$work/a.pid")
    if [ -n "$(find /dev/shm -maxdepth 1 -user "$(id -u)" -name "cvia-$(id -u)-$pa_pid-*" 2>/dev/null)" ]; then
        "${on_a[@]}" "$(dirname "$prog")/../../cvia-info" --cleanup >"$work/clean" 2>&1
        echo "--- cvia-info --cleanup on a's host: $(cat "$work/clean")"
    fi
fi
# nothing of either left in /dev/shm (the killed one's: removed by b)
left=
for r in a b c; do
    p=$(cat "$work/$r.pid" 2>/dev/null) || continue
    # ours only: func.squat, beside us, plants another user's files
    # under the names of the next pids
    left+=$(find /dev/shm -maxdepth 1 -user "$(id -u)" -name "cvia-$(id -u)-$p-*" -printf '%f ' 2>/dev/null)
done
if [ -n "$left" ]; then
    echo "segments of dead processes left: $left"
    fail=1
fi
[ $fail -eq 0 ] && echo "PASS dyn $mode$([ $hosts -eq 1 ] && echo ' across hosts')" ||
    echo "FAIL dyn $mode"
exit $fail
