#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What ranks blocked in a receive cost while they wait, and how fast they
# wake: N ranks, rank 0 sleeps S seconds then sends to each of the others
# (tests/func/func_p2p idle). Per round: the waiters' CPU (getrusage, % of
# one core), their sum as % of the machine (all CPUs), and the wake-up
# latency after the send. Medians over the rounds; CSV of every waiter.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
    cat <<USAGE
Usage: scripts/idle-cost.sh [options]
  -n N          ranks (N-1 of them wait) [16]
  -s SECONDS    how long they wait [5]
  -r ROUNDS     rounds [3]
  --build DIR   corevia build (cvia-run, tests/func_p2p) [build]
  --lib DIR     run against the libcorevia.so.0 in DIR instead (an older
                build, for a comparison in the same session)
  --csv FILE    every waiter of every round [out/idle/idle.csv]
  -h, --help    this text
USAGE
}
n=16 secs=5 rounds=3 build=build lib="" csv=out/idle/idle.csv
while [ $# -gt 0 ]; do
    case $1 in
    -n) n=$2; shift 2 ;;
    -s) secs=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "idle-cost.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
[[ $n =~ ^[0-9]+$ && $n -ge 2 && $n -le 256 ]] || { echo "idle-cost.sh: -n: 2..256" >&2; exit 2; }
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 1 ]] || { echo "idle-cost.sh: -r: a positive number" >&2; exit 2; }
[ -x "$build/cvia-run" ] && [ -x "$build/tests/func_p2p" ] ||
    { echo "idle-cost.sh: no $build/cvia-run or $build/tests/func_p2p (scripts/build.sh $build)" >&2; exit 1; }
mkdir -p "$(dirname "$csv")"
echo "round,rank,waited_s,cpu_pct_core,wake_us" >"$csv"
ncpu=$(nproc)
for r in $(seq 1 "$rounds"); do
    echo "round $r of $rounds: $((n - 1)) ranks wait ${secs}s" >&2
    out=$(env FUNC_IDLE_SECONDS="$secs" ${lib:+LD_LIBRARY_PATH="$lib"} \
          timeout $((60 + 2 * ${secs%.*})) "$build/cvia-run" -n "$n" "$build/tests/func_p2p" idle)
    echo "$out" | sed -n 's/^idle rank \([0-9]*\): waited \([0-9.]*\) s, cpu \([0-9.]*\) % of a core, woke \([0-9.]*\) us after the send$/'"$r"',\1,\2,\3,\4/p' >>"$csv"
done
python3 - "$csv" "$ncpu" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ncpu = int(sys.argv[2])
by = {}
for r in rows:
    by.setdefault(r["round"], []).append(r)
per = st.median(float(r["cpu_pct_core"]) for r in rows)
tot = st.median(sum(float(r["cpu_pct_core"]) for r in v) / ncpu for v in by.values())
wake = st.median(float(r["wake_us"]) for r in rows)
p90 = sorted(float(r["wake_us"]) for r in rows)[int(0.9 * (len(rows) - 1))]
print(f"waiters per round: {len(rows) // len(by)}, rounds: {len(by)}")
print(f"cpu of one waiter (median): {per:.2f} % of a core")
print(f"all waiters together (median round): {tot:.2f} % of the machine ({ncpu} CPUs)")
print(f"wake-up after the send: median {wake:.1f} us, p90 {p90:.1f} us")
PY
