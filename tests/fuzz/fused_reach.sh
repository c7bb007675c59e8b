#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The dgram harness's seeds reach the receiver's copy in NH's pass
# (cvia__dg_place, cvia__nh2c) with genuine and with forged datagrams, and
# the harness's invariant holds for them (it aborts otherwise): a seed
# corpus that no longer reaches that path (a sequence outside the window,
# an offset that does not follow) fails here, not silently in fuzz.dgram.
#   fused_reach.sh HARNESS     (an empty HARNESS: not built here, skip 77)
set -u
harness=${1:-}
[ -n "$harness" ] || { echo "SKIP: the libFuzzer harness is not built"; exit 77; }
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/seeds"
out=$(cd "$work" && FUZZ_DGRAM_SEEDS=$work/seeds FUZZ_DGRAM_STATS=1 "$harness" -runs=0 \
      "$work/seeds" 2>&1) || { echo "$out" | grep -v '^corevia[[ ]' | tail -n 30; exit 1; }
line=$(echo "$out" | grep 'copied in NH' | tail -n 1)
echo "$line"
set -- $(echo "$line" | grep -o '[0-9]\+')
[ "$#" -eq 2 ] && [ "$2" -ge 1 ] && [ "$(($1 - $2))" -ge 1 ] || {
    echo "FAIL: the seeds do not reach the fused path with both genuine and forged datagrams"
    exit 1; }
