#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
# ahead.sh CVIA_RUN LU: fetch-ahead (CVIA_DSM_AHEAD) on LU's column reads
# (8 KiB blocks 32 units apart: the stride pattern), 2 ranks, one level,
# each fetch mode. Without it LU prefetches nothing (no unit is read in two
# steps); with it the answer must still check, units must be fetched ahead,
# at least half of them must be used (touched, or waited for), and fewer
# faults must fetch. At CVIA_DSM_AHEAD=32 too: a stride of 32 units must
# stay a stride (before dsm18b a run continued up to 2 x AHEAD units on,
# so LU's column became a stream of the wrong units, 15% used), and the
# requests of one pattern go to the home in one message (dsm18b: fewer
# messages than with fetch-ahead off; before, one message a unit, 1.7x as
# many), and in zcopy and pull mode the home writes consecutive units of
# a request in one RDMA write (fewer one-sided writes than units served;
# before, one a unit, plus the credits). Counts, not times.
set -u
run=$1 lu=$2
fail=0
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
field() { grep -o "\"total\":{[^}]*" "$out" | grep -o "\"$1\":[0-9]*" | cut -d: -f2; }
for mode in zcopy copy pull; do
    declare -A rf=() ms=()
    for a in 0 8 32; do
        CVIA_DSM_LEVELS=1 CVIA_DSM_FETCH=$mode CVIA_DSM_AHEAD=$a timeout 120 \
            "$run" -n 2 --timeout 100 -- "$lu" -n 512 -b 32 --check --stats=json >"$out" 2>&1
        rc=$?
        if [ $rc -ne 0 ] || ! grep -q "check=ok" "$out"; then
            echo "FAIL: $mode AHEAD=$a: exit $rc, $(head -3 "$out")"
            fail=1
            continue
        fi
        pf=$(field prefetches) hits=$(field prefetch_hits) waits=$(field prefetch_waits)
        rf[$a]=$(field read_faults) ms[$a]=$(field msgs_sent)
        echo "$mode AHEAD=$a: read faults ${rf[$a]}, fetched ahead $pf, used $hits + $waits," \
             "messages ${ms[$a]}"
        if [ "$a" = 0 ] && [ "$pf" != 0 ]; then
            echo "FAIL: $mode AHEAD=0 prefetched $pf units (LU reads no unit twice)"
            fail=1
        fi
        wr=$(field rdma_writes) served=$(field pages_served)
        if [ "$a" = 32 ] && [ "$mode" != copy ] && [ "$wr" -ge "$served" ]; then
            echo "FAIL: $mode AHEAD=32: $wr RDMA writes for $served units served: consecutive" \
                 "units not written together"
            fail=1
        fi
        if [ "$a" != 0 ] && { [ "$pf" -eq 0 ] || [ $((2 * (hits + waits))) -lt "$pf" ]; }; then
            echo "FAIL: $mode AHEAD=$a: $pf units fetched ahead, $((hits + waits)) used"
            fail=1
        fi
    done
    if [ -n "${rf[0]:-}" ] && [ -n "${rf[8]:-}" ] && [ "${rf[8]}" -ge "${rf[0]}" ]; then
        echo "FAIL: $mode: fetch-ahead did not take faults off LU (${rf[8]} against ${rf[0]})"
        fail=1
    fi
    if [ -n "${ms[0]:-}" ] && [ -n "${ms[32]:-}" ] && [ $((4 * ms[32])) -ge $((3 * ms[0])) ]; then
        echo "FAIL: $mode: fetch-ahead's requests not gathered (${ms[32]} messages at" \
             "AHEAD=32 against ${ms[0]} with it off)"
        fail=1
    fi
    unset rf ms
done
[ $fail = 0 ] && echo "ok fetch-ahead"
exit $fail
