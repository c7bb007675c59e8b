#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
# placement.sh CVIA_RUN OCEAN: ocean's homes follow its writers. On 2 ranks,
# one level, the small preset with --check: the answer must check, and the
# units twinned (written away from their home) must be at most one per
# rank and barrier: a band boundary may share a unit between the two
# writers, but
# the levels process 0 does alone are homed at process 0 and the banded
# levels at the rank that writes each unit first. With every level cut in
# byte blocks (before) the coarse levels were half homed at rank 1 and the
# blocks missed the bands: 346 twins in 146 barriers. Counts, not times.
set -u
run=$1 ocean=$2
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
field() { grep -o "\"total\":{[^}]*" "$out" | grep -o "\"$1\":[0-9]*" | cut -d: -f2; }
CVIA_DSM_LEVELS=1 timeout 120 "$run" -n 2 --timeout 100 -- "$ocean" small --check --stats=json \
    >"$out" 2>&1
rc=$?
if [ $rc -ne 0 ] || ! grep -q "check=ok" "$out"; then
    echo "FAIL: ocean: exit $rc, $(head -3 "$out")"
    exit 1
fi
tw=$(field twins) bar=$(field barriers)
echo "ocean small, 2 ranks: $tw units twinned in $bar barriers (both ranks' sums)"
if [ -z "$tw" ] || [ -z "$bar" ] || [ "$tw" -gt "$bar" ]; then
    echo "FAIL: ocean twinned $tw units, more than one per rank in each of $((bar / 2)) barriers:" \
         "its writes are not at their homes"
    exit 1
fi
echo "ok placement"
