#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# bench-thread-levels.sh: 8 B latency of the thread levels against the
# lock-free first release (issue 16 item 2): cvia-bench built from commit
# ae1c47b (the foundation, `git archive`, Release, built once into
# --foundation DIR) and this tree's Release build (--build DIR), run as
# `cvia-bench latency -s 8 -i ITERS` (its two ranks bound to CPUs 0 and 1)
# in rounds whose order rotates: foundation, --thread single, --thread
# multiple. Prints every run and, per level, the median p50, the mean of
# the rounds' p50s (the timer's reads make p50 move in 5 ns steps on a KVM
# guest; the mean over rounds tells apart what the steps hide, but one
# round in the host's slow state pulls it up: compare it only over rounds
# in one state) and the median of the per-round ratios to the foundation.
#   bench-thread-levels.sh [--build DIR] [--foundation DIR] [--rounds N] [--iters N]
#                          [--csv FILE] [--nice N]
# --nice N runs every variant under nice -n N (root: -20 on a machine that
# other jobs load, so that the ranks' yields find no other task to run).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$top/build-rel FOUND=/tmp/cvia-foundation ROUNDS=21 ITERS=100000 CSV=$top/out/h16/lat8-levels.csv NICE=0
while [ $# -gt 0 ]; do
    case "$1" in
        --build) BUILD=$2; shift 2 ;;
        --foundation) FOUND=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --iters) ITERS=$2; shift 2 ;;
        --csv) CSV=$2; shift 2 ;;
        --nice) NICE=$2; shift 2 ;;
        -h|--help) sed -n '4,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-thread-levels.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 ]] || { echo "bench-thread-levels.sh: --rounds: a positive number" >&2; exit 2; }
[[ $ITERS =~ ^[0-9]+$ && $ITERS -ge 1000 ]] || { echo "bench-thread-levels.sh: --iters: 1000 or more" >&2; exit 2; }
# this tree's build-rel is brought up to date every time (incremental: a
# build-rel left by an earlier checkout would measure old code); a build
# given with --build is used as it is, and built from this tree if empty
if [ "$BUILD" = "$top/build-rel" ] || [ ! -x "$BUILD/cvia-bench" ]; then
    echo "building this tree (Release) into $BUILD" >&2
    cmake -S "$top" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$BUILD" -j"$(nproc)" --target cvia-run cvia-bench >/dev/null
fi
if [ ! -x "$FOUND/build/cvia-bench" ]; then
    echo "building the foundation (ae1c47b, Release) into $FOUND" >&2
    rm -rf "$FOUND" && mkdir -p "$FOUND"
    git -C "$top" archive ae1c47b | tar -x -C "$FOUND"
    cmake -S "$FOUND" -B "$FOUND/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$FOUND/build" -j"$(nproc)" --target cvia-run cvia-bench >/dev/null
fi
mkdir -p "$(dirname "$CSV")"
echo "round,variant,p50_us" >"$CSV"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
one() {   # variant -> p50 of the 8 B row
    local run=$BUILD/cvia-run bench=$BUILD/cvia-bench lvl=()
    case $1 in
        foundation) run=$FOUND/build/cvia-run bench=$FOUND/build/cvia-bench ;;
        single|multiple) lvl=(--thread "$1") ;;
    esac
    timeout 300 nice -n "$NICE" "$run" -n 2 "$bench" latency -s 8 -i "$ITERS" "${lvl[@]}" --output "$out/r.csv" \
        --quiet >/dev/null 2>&1
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next } { v = $col["latency_p50_us"] }
             END { print v }' "$out/r.csv"
}
variants=(foundation single multiple)
for r in $(seq "$ROUNDS"); do
    for k in 0 1 2; do
        v=${variants[$(( (r + k) % 3 ))]}
        p=$(one "$v")
        echo "$r,$v,$p" | tee -a "$CSV"
    done
done
python3 - "$CSV" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by.setdefault(r["round"], {})[r["variant"]] = float(r["p50_us"])
for v in ("foundation", "single", "multiple"):
    p = st.median(d[v] for d in by.values())
    mean = st.mean(d[v] for d in by.values())
    ratio = st.median(d[v] / d["foundation"] for d in by.values())
    print(f"{v}: median p50 {p:.4f} us (mean {mean:.4f}), paired ratio to the foundation "
          f"{ratio:.3f} ({len(by)} rounds)")
PY
