#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# dsm-bench.sh: the DSM applications, sequential and on the DSM, in one
# session, interleaved round by round in rotating order; medians across
# rounds. The paper's figure 3 (execution time with page copies, "base",
# against zero-copy page transfer) is the copy and zcopy columns:
#
#   scripts/dsm-bench.sh                    # sor fft lu water, 2 ranks, 5 rounds
#   scripts/dsm-bench.sh --apps sor --rounds 9 --plot out/dsm/fig3.png
#   scripts/dsm-bench.sh --fetch            # the mechanism alone: time of a
#                                           # fault that fetches one unit,
#                                           # units of 4k, 16k, 64k
#
# Configurations (each app, each round):
#   seq     the same source built with the sequential PARMACS (APP-seq)
#   copy    CVIA_DSM_FETCH=copy  (unit through a send and a receive buffer)
#   zcopy   CVIA_DSM_FETCH=zcopy (home writes the unit into the faulting page)
#   pull    CVIA_DSM_FETCH=pull  (zcopy once, then RDMA read by the faulting rank)
# "time" is the application's parallel section (its CLOCK pair: the
# iterations, without start-up and the check). Before each run, while
# others keep more than 25% of the CPUs busy, it waits (out of one budget
# for the session) and records how busy the machine was.

set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

BUILD=${BUILD:-build}
ROUNDS=5
NP=2
APPS="sor fft lu water"
CONFIGS="seq copy zcopy pull"
OUT=out/dsm
PLOT=""
QUIET_WAIT=120
EXTRA_ENV=""
FETCH=0
UNITS="4k 16k 64k"
declare -A ARGS=([sor]="" [fft]="" [lu]="" [water]="")

usage() {
    cat <<EOF
Usage: scripts/dsm-bench.sh [OPTIONS]
  --build DIR       build directory with apps/ and cvia-run [$BUILD]
  --rounds N        interleaved rounds; medians over them [$ROUNDS]
  --np N            ranks for the DSM runs [$NP]
  --apps LIST       applications, space-separated [$APPS]
  --configs LIST    seq copy zcopy pull, any of them [$CONFIGS]
  --args APP=ARGS   extra arguments for one application (e.g. fft="-m 18")
  --env VAR=VAL     extra environment for the DSM runs (repeatable)
  --out DIR         raw results and the summary [$OUT]
  --plot FILE.png   bars of each configuration's median, normalized to copy
  --quiet-wait S    seconds in all to wait for a quiet machine [$QUIET_WAIT]
  --fetch           instead of the applications: per-fetch time (tests/dsm
                    dsm_stress fetch: the home waits, 256 units a round)
  --units LIST      unit sizes for --fetch [$UNITS]
  -h, --help        this help
EOF
}
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --np) NP=$2; shift ;;
    --apps) APPS=$2; shift ;;
    --configs) CONFIGS=$2; shift ;;
    --args) ARGS[${2%%=*}]=${2#*=}; shift ;;
    --env) EXTRA_ENV="$EXTRA_ENV $2"; shift ;;
    --out) OUT=$2; shift ;;
    --plot) PLOT=$2; shift ;;
    --quiet-wait) QUIET_WAIT=$2; shift ;;
    --fetch) FETCH=1 ;;
    --units) UNITS=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "dsm-bench: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$OUT/raw"

cpu_stat() { awk '/^cpu /{ t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $5 + $6 }' /proc/stat; }
busy_pct() {
    local t0 i0 t1 i1
    read -r t0 i0 < <(cpu_stat); sleep 0.25; read -r t1 i1 < <(cpu_stat)
    echo $(( t1 > t0 ? 100 * ((t1 - t0) - (i1 - i0)) / (t1 - t0) : 0 ))
}
quiet_left=$QUIET_WAIT
wait_quiet() {
    BUSY=$(busy_pct)
    while [ "$BUSY" -gt 25 ] && [ "$quiet_left" -gt 0 ]; do
        sleep 1; quiet_left=$((quiet_left - 1)); BUSY=$(busy_pct)
    done
}

run_one() {   # app config round -> appends "app,config,round,time,total,busy" to results
    local app=$1 cfg=$2 r=$3 f="$OUT/raw/$1-$2-r$3.txt" line
    wait_quiet
    # shellcheck disable=SC2086
    if [ "$cfg" = seq ]; then
        timeout 600 "$BUILD/apps/$app-seq" -q ${ARGS[$app]:-} >"$f" 2>&1
    else
        env CVIA_DSM_FETCH="$cfg" $EXTRA_ENV timeout 600 "$BUILD/cvia-run" -n "$NP" -- \
            "$BUILD/apps/$app" -q --stats=json ${ARGS[$app]:-} >"$f" 2>&1
    fi
    line=$(grep '^RESULT' "$f" | tail -1)
    if [ -z "$line" ]; then
        echo "dsm-bench: $app $cfg round $r failed (see $f)" >&2
        return
    fi
    t=$(sed -n 's/.* time=\([0-9.]*\).*/\1/p' <<<"$line")
    tt=$(sed -n 's/.* total=\([0-9.]*\).*/\1/p' <<<"$line")
    echo "$app,$cfg,$r,$t,$tt,$BUSY" >>"$OUT/results.csv"
}

if [ "$FETCH" = 1 ]; then
    stress=$BUILD/tests/dsm/dsm_stress
    [ -x "$stress" ] || { echo "dsm-bench: $stress missing: build first" >&2; exit 1; }
    CONFIGS=${CONFIGS/seq/}
    read -r -a cfgs <<<"$CONFIGS"
    echo "unit,config,round,us_per_fetch,busy_before_pct" >"$OUT/fetch.csv"
    for r in $(seq 1 "$ROUNDS"); do
        for u in $UNITS; do
            for i in $(seq 0 $((${#cfgs[@]} - 1))); do
                cfg=${cfgs[$(( (i + r - 1) % ${#cfgs[@]} ))]}
                wait_quiet
                # shellcheck disable=SC2086
                x=$(env CVIA_DSM_FETCH="$cfg" CVIA_DSM_UNIT="$u" CVIA_DSM_PREFETCH=0 $EXTRA_ENV \
                    timeout 300 "$BUILD/cvia-run" -n 2 -- "$stress" fetch 2>&1 |
                    sed -n 's/.*, \([0-9.]*\) us per fetch.*/\1/p')
                echo "dsm-bench: round $r/$ROUNDS unit $u $cfg: ${x:-failed} us" >&2
                [ -n "$x" ] && echo "$u,$cfg,$r,$x,$BUSY" >>"$OUT/fetch.csv"
            done
        done
    done
    {
        echo "# per-fetch time (us), home waiting, medians of $ROUNDS rounds [min-max]"
        awk -F, -v cfgs="$CONFIGS" -v units="$UNITS" '
        NR > 1 { v[$1 "," $2] = v[$1 "," $2] " " $4 }
        function med(s,   a, n, i, j, t) {
            n = split(s, a, " ")
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            lo = a[1]; hi = a[n]
            return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : -1
        }
        END {
            nc = split(cfgs, c, " "); nu = split(units, u, " ")
            printf "| unit |"; for (i = 1; i <= nc; i++) printf " %s |", c[i]; printf " copy / zcopy |\n|---|"
            for (i = 1; i <= nc + 1; i++) printf "---|"; printf "\n"
            for (k = 1; k <= nu; k++) {
                printf "| %s |", u[k]; delete m
                for (i = 1; i <= nc; i++) { x = med(v[u[k] "," c[i]]); m[c[i]] = x; printf " %.1f [%.1f-%.1f] |", x, lo, hi }
                if (("copy" in m) && ("zcopy" in m) && m["zcopy"] > 0) printf " %.2f |", m["copy"] / m["zcopy"]; else printf " - |"
                printf "\n"
            }
        }' "$OUT/fetch.csv"
    } | tee "$OUT/fetch.md"
    exit 0
fi
for a in $APPS; do
    [ -x "$BUILD/apps/$a" ] && [ -x "$BUILD/apps/$a-seq" ] ||
        { echo "dsm-bench: $BUILD/apps/$a or $a-seq missing: build first" >&2; exit 1; }
done
echo "app,config,round,time_s,total_s,busy_before_pct" >"$OUT/results.csv"
read -r -a cfgs <<<"$CONFIGS"
nc=${#cfgs[@]}
for r in $(seq 1 "$ROUNDS"); do
    for app in $APPS; do
        for i in $(seq 0 $((nc - 1))); do
            cfg=${cfgs[$(( (i + r - 1) % nc ))]}
            echo "dsm-bench: round $r/$ROUNDS $app $cfg" >&2
            run_one "$app" "$cfg" "$r"
        done
    done
done

# medians, speedups against seq, copy / zcopy
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r), $NP ranks, $ROUNDS rounds, medians of the parallel section (s) [min-max]"
    awk -F, -v cfgs="$CONFIGS" -v apps="$APPS" '
    NR > 1 { v[$1 "," $2] = v[$1 "," $2] " " $4; busy += $6; nb++ }
    function med(s,   a, n, i, j, t) {
        n = split(s, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        lo = a[1]; hi = a[n]
        return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : -1
    }
    END {
        nc = split(cfgs, c, " "); na = split(apps, ap, " ")
        printf "| app |"; for (i = 1; i <= nc; i++) printf " %s |", c[i]
        printf " seq / best DSM | copy / zcopy |\n|---|"; for (i = 1; i <= nc + 2; i++) printf "---|"; printf "\n"
        for (k = 1; k <= na; k++) {
            a = ap[k]; printf "| %s |", a; best = 0; delete m
            for (i = 1; i <= nc; i++) {
                x = med(v[a "," c[i]]); m[c[i]] = x
                if (x < 0) { printf " - |"; continue }
                printf " %.3f [%.3f-%.3f] |", x, lo, hi
                if (c[i] != "seq" && (best == 0 || x < best)) best = x
            }
            if (("seq" in m) && m["seq"] > 0 && best > 0) printf " %.2fx |", m["seq"] / best; else printf " - |"
            if (("copy" in m) && ("zcopy" in m) && m["zcopy"] > 0) printf " %.2f |", m["copy"] / m["zcopy"]; else printf " - |"
            printf "\n"
        }
        if (nb) printf "\nCPUs busy with other work before the runs: %.0f%% on average\n", busy / nb
    }' "$OUT/results.csv"
} | tee "$OUT/summary.md"

if [ -n "$PLOT" ]; then
    if ! command -v gnuplot >/dev/null; then
        echo "dsm-bench: gnuplot missing (apt-get install gnuplot-nox): no plot" >&2
        exit 0
    fi
    # normalized to copy, as the paper's figure 3 normalizes to its base
    awk -F, -v cfgs="$CONFIGS" -v apps="$APPS" '
    NR > 1 { v[$1 "," $2] = v[$1 "," $2] " " $4 }
    function med(s,   a, n, i, j, t) {
        n = split(s, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : 0
    }
    END {
        nc = split(cfgs, c, " "); na = split(apps, ap, " ")
        printf "app"; for (i = 1; i <= nc; i++) if (c[i] != "seq") printf " %s", c[i]; printf "\n"
        for (k = 1; k <= na; k++) {
            b = med(v[ap[k] ",copy"]); if (b <= 0) continue
            printf "%s", ap[k]
            for (i = 1; i <= nc; i++) if (c[i] != "seq") printf " %.4f", med(v[ap[k] "," c[i]]) / b
            printf "\n"
        }
    }' "$OUT/results.csv" >"$OUT/fig3.dat"
    ncol=$(head -1 "$OUT/fig3.dat" | wc -w)
    gnuplot <<EOF
set terminal pngcairo size 800,480 noenhanced
set output "$PLOT"
set title "corevia DSM, $NP ranks: parallel time normalized to copy (paper fig. 3)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:*]
set ylabel "time / time with copy"
set key outside right top
set grid ytics
plot for [i=2:$ncol] "$OUT/fig3.dat" using i:xtic(1) title columnheader(i)
EOF
    echo "dsm-bench: wrote $PLOT" >&2
fi
