#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What ranks blocked in a receive cost while they wait, and how fast they
# wake: N ranks, rank 0 sleeps S seconds then sends to each of the others
# (tests/func/func_p2p idle). Per round: the waiters' CPU (getrusage, % of
# one core), their sum as % of the machine (all CPUs), and the wake-up
# latency after the send. Medians over the rounds; CSV of every waiter.
# --hosts H spreads the ranks over H network namespaces of a netlab
# (scripts/netlab.sh, rank r on host r % H, CVIA_NET=--net between them):
# the waiters then have peers on their host and on others (issue 16), and
# the wake-up is reported apart for the waiters on rank 0's host (shm) and
# on the others (the network provider).
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
  --against DIR also run every round against the libcorevia.so.0 in DIR,
                interleaved (which goes first alternates), and report both
  --csv FILE    every waiter of every round [out/idle/idle.csv]
  --hosts H     spread the ranks over H netlab namespaces (2..8) [one host]
  --net NET     CVIA_NET between them: udp, eth or tcp [udp]
  -h, --help    this text
USAGE
}
n=16 secs=5 rounds=3 build=build lib="" csv=out/idle/idle.csv hosts=1 net=udp against=""
while [ $# -gt 0 ]; do
    case $1 in
    -n) n=$2; shift 2 ;;
    -s) secs=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --against) against=$2; shift 2 ;;
    --net) net=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "idle-cost.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
[[ $n =~ ^[0-9]+$ && $n -ge 2 && $n -le 256 ]] || { echo "idle-cost.sh: -n: 2..256" >&2; exit 2; }
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 1 ]] || { echo "idle-cost.sh: -r: a positive number" >&2; exit 2; }
[ -x "$build/cvia-run" ] && [ -x "$build/tests/func_p2p" ] ||
    { echo "idle-cost.sh: no $build/cvia-run or $build/tests/func_p2p (scripts/build.sh $build)" >&2; exit 1; }
[[ $hosts =~ ^[0-9]+$ && $hosts -ge 1 && $hosts -le 8 ]] || { echo "idle-cost.sh: --hosts: 1..8" >&2; exit 2; }
case $net in udp|eth|tcp) ;; *) echo "idle-cost.sh: --net: udp, eth or tcp, not '$net'" >&2; exit 2 ;; esac
mkdir -p "$(dirname "$csv")"
hostargs=()
if [ "$hosts" -gt 1 ]; then
    tag=idle$$
    trap 'bash scripts/netlab.sh down --tag "$tag" >/dev/null 2>&1' EXIT
    mode=pairs; [ "$hosts" -eq 2 ] || mode=bridge
    bash scripts/netlab.sh up --tag "$tag" --hosts "$hosts" --mode "$mode" >/dev/null
    list=$(seq -f "cvia-$tag-h%g" 1 "$hosts" | paste -sd,)
    hostargs=(--hosts "$list")
fi
echo "lib,round,rank,waited_s,cpu_pct_core,wake_us" >"$csv"
ncpu=$(nproc)
one() {   # LIBDIR LABEL ROUND
    local out
    out=$(env FUNC_IDLE_SECONDS="$secs" ${1:+LD_LIBRARY_PATH="$1"} CVIA_NET="$net" \
          timeout $((60 + 2 * ${secs%.*})) "$build/cvia-run" -n "$n" "${hostargs[@]}" \
          "$build/tests/func_p2p" idle)
    echo "$out" | sed -n 's/^idle rank \([0-9]*\): waited \([0-9.]*\) s, cpu \([0-9.]*\) % of a core, woke \([0-9.]*\) us after the send$/'"$2,$3"',\1,\2,\3,\4/p' >>"$csv"
}
for r in $(seq 1 "$rounds"); do
    echo "round $r of $rounds: $((n - 1)) ranks wait ${secs}s" >&2
    if [ -z "$against" ]; then
        one "$lib" this "$r"
    elif [ $((r % 2)) -eq 1 ]; then
        one "$lib" this "$r"; one "$against" against "$r"
    else
        one "$against" against "$r"; one "$lib" this "$r"
    fi
done
python3 - "$csv" "$ncpu" "$hosts" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ncpu, hosts = int(sys.argv[2]), int(sys.argv[3])
def report(rows, label):
    by = {}
    for r in rows:
        by.setdefault(r["round"], []).append(r)
    per = st.median(float(r["cpu_pct_core"]) for r in rows)
    tot = st.median(sum(float(r["cpu_pct_core"]) for r in v) / ncpu for v in by.values())
    w = sorted(float(r["wake_us"]) for r in rows)
    print(f"{label}waiters per round: {len(rows) // len(by)}, rounds: {len(by)}")
    print(f"{label}cpu of one waiter (median): {per:.2f} % of a core")
    print(f"{label}all waiters together (median round): {tot:.2f} % of the machine ({ncpu} CPUs)")
    print(f"{label}wake-up after the send: median {st.median(w):.1f} us, p90 {w[max(0, -(-9 * len(w) // 10) - 1)]:.1f} us")
    if hosts > 1:
        for name, same in (("on rank 0's host (shm)", True), ("on other hosts (network)", False)):
            w = sorted(float(r["wake_us"]) for r in rows if (int(r["rank"]) % hosts == 0) == same)
            if w:
                print(f"{label}  waiters {name}: median {st.median(w):.1f} us, "
                      f"p90 {w[max(0, -(-9 * len(w) // 10) - 1)]:.1f} us")
libs = sorted({r["lib"] for r in rows}, reverse=True)
for l in libs:
    report([r for r in rows if r["lib"] == l], "" if len(libs) == 1 else f"[{l}] ")
PY
