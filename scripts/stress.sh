#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The threaded stress test (tests/func/func_stress.c) many times over, on
# every path: shm, the arena, and two namespace hosts over udp, eth and
# tcp. Each run goes through the suite's own harness (run.sh, hosts.sh:
# bounded in time, no process or segment left behind). Counts the runs
# that passed, failed (a bad payload or an error) and hung (the harness's
# time limit), per configuration; CSV of every run, and a summary table.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
    cat <<USAGE
Usage: scripts/stress.sh [options]
  -r RUNS       runs of each configuration [200]
  -c LIST       configurations, comma-separated, from
                shm,arena,udp,eth,tcp [shm,arena,udp,eth]
  --iters N     steps per thread per run (FUNC_STRESS_ITERS) [150]
  --threads N   threads per rank (FUNC_STRESS_THREADS) [4]
  --build DIR   corevia build (cvia-run, tests/func_stress) [build]
  --csv FILE    one line per run [out/stress/stress.csv]
  -h, --help    this text
Namespace hosts (udp, eth, tcp) need root.
USAGE
}
runs=200 confs=shm,arena,udp,eth iters=150 threads=4 build=build csv=out/stress/stress.csv
while [ $# -gt 0 ]; do
    case $1 in
    -r) runs=${2:-}; shift 2 || break ;;
    -c) confs=${2:-}; shift 2 || break ;;
    --iters) iters=${2:-}; shift 2 || break ;;
    --threads) threads=${2:-}; shift 2 || break ;;
    --build) build=${2:-}; shift 2 || break ;;
    --csv) csv=${2:-}; shift 2 || break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "stress.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    esac
done
[[ $runs =~ ^[0-9]+$ && $runs -ge 1 ]] || { echo "stress.sh: -r: a positive number, not '$runs'" >&2; exit 2; }
[[ $iters =~ ^[0-9]+$ && $iters -ge 1 ]] || { echo "stress.sh: --iters: a positive number, not '$iters'" >&2; exit 2; }
[[ $threads =~ ^[0-9]+$ && $threads -ge 1 && $threads -le 16 ]] ||
    { echo "stress.sh: --threads: 1..16, not '$threads'" >&2; exit 2; }
[ -x "$build/cvia-run" ] && [ -x "$build/tests/func_stress" ] ||
    { echo "stress.sh: no $build/cvia-run or $build/tests/func_stress (scripts/build.sh $build)" >&2; exit 1; }
IFS=, read -r -a list <<<"$confs"
for c in "${list[@]}"; do
    case $c in shm|arena|udp|eth|tcp) ;; *) echo "stress.sh: -c: unknown configuration '$c'" >&2; exit 2 ;; esac
done
mkdir -p "$(dirname "$csv")"
echo "config,run,result,seconds" >"$csv"
run=$build/cvia-run prog=$build/tests/func_stress
log=$(mktemp) && trap 'rm -f "$log"' EXIT
declare -A pass fail hang
for c in "${list[@]}"; do pass[$c]=0 fail[$c]=0 hang[$c]=0; done
export FUNC_STRESS_ITERS=$iters FUNC_STRESS_THREADS=$threads
for ((r = 1; r <= runs; r++)); do
    for c in "${list[@]}"; do   # interleaved: a slow spell hits every path alike
        t0=$(date +%s.%N)
        case $c in
        shm)   cmd=(bash tests/func/run.sh "$run" 3 "$prog" stress) ;;
        arena) cmd=(env FUNC_ARENA=1 CVIA_SHM_CMA=n bash tests/func/run.sh "$run" 2 "$prog" stress) ;;
        *)     cmd=(env CVIA_NET="$c" bash tests/func/hosts.sh "$run" 4 "$prog" stress) ;;
        esac
        if "${cmd[@]}" >"$log" 2>&1; then
            res=pass pass[$c]=$((pass[$c] + 1))
        elif grep -q "timed out" "$log"; then
            res=hang hang[$c]=$((hang[$c] + 1))
        else
            res=fail fail[$c]=$((fail[$c] + 1))
        fi
        if [ "$res" != pass ]; then
            mkdir -p "$(dirname "$csv")/failures"
            cp "$log" "$(dirname "$csv")/failures/$c-$r.log"
        fi
        printf '%s,%d,%s,%s\n' "$c" "$r" "$res" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')" >>"$csv"
    done
    printf '\rstress.sh: run %d/%d' "$r" "$runs" >&2
done
echo >&2
printf '%-8s %6s %6s %6s %6s\n' config runs passed failed hung
for c in "${list[@]}"; do
    printf '%-8s %6d %6d %6d %6d\n' "$c" "$runs" "${pass[$c]}" "${fail[$c]}" "${hang[$c]}"
done
echo "every run: $csv (failures' output in $(dirname "$csv")/failures/)"
bad=0
for c in "${list[@]}"; do bad=$((bad + fail[$c] + hang[$c])); done
[ "$bad" -eq 0 ]
