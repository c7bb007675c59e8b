#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two processes without any launcher reach each other through the corevia
# provider (issue 14, item 3): fab_dyn started twice from this script, the
# names passed through files. Afterwards no segment of either is left in
# /dev/shm (a killed one's is removed by its surviving peer).
#   dyn.sh FAB_DYN PROVIDER_DIR [msg|death|forge|threads|reclaim]
set -u
[ $# -ge 2 ] || { echo "usage: dyn.sh FAB_DYN PROVIDER_DIR [msg|death|forge|threads|reclaim]" >&2; exit 2; }
prog=$1 provdir=$2 mode=${3:-msg}
mult=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
limit=$((30 * mult))
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
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
timeout "$limit" "$prog" a "$work" "$mode" >"$work/a.out" 2>&1 &
pa=$!
timeout "$limit" "$prog" b "$work" "$mode" >"$work/b.out" 2>&1 &
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
threads) [ $ra -eq 0 ] && grep -qx "ok threads" "$work/a.out" || fail=1
       [ $rb -eq 0 ] && grep -qx "ok threads" "$work/b.out" || fail=1 ;;
reclaim) [ $ra -eq 137 ] || { echo "a was to die by SIGKILL (status $ra)"; fail=1; }
       [ $rb -eq 0 ] && grep -qx "ok reclaim" "$work/b.out" || fail=1
       [ $rc -eq 0 ] && grep -qx "ok reclaim c" "$work/c.out" || fail=1 ;;
forge) [ $ra -eq 0 ] && grep -qx "ok forge" "$work/a.out" || fail=1
       [ $rb -eq 0 ] || fail=1 ;;
death) [ $ra -eq 137 ] || { echo "a was to die by SIGKILL (status $ra)"; fail=1; }
       [ $rb -eq 0 ] && grep -q "^ok death" "$work/b.out" || fail=1 ;;
*)     echo "unknown mode $mode"; exit 2 ;;
esac
# nothing of either left in /dev/shm (the killed one's: removed by b)
left=
for r in a b c; do
    p=$(cat "$work/$r.pid" 2>/dev/null) || continue
    left+=$(ls /dev/shm 2>/dev/null | grep "^cvia-$(id -u)-$p-")
done
if [ -n "$left" ]; then
    echo "segments of dead processes left: $left"
    fail=1
fi
[ $fail -eq 0 ] && echo "PASS dyn $mode" || echo "FAIL dyn $mode"
exit $fail
