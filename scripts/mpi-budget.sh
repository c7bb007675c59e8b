#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# Instructions per 8 B MPI message, per library, for Open MPI's ob1+vader and
# for pml cm + mtl ofi over corevia's provider (issue 14): callgrind counts,
# which, unlike times, do not move with the load of a shared machine.
#
# How: osu_mpi (bench/peers/osu_mpi.c) with one rank under callgrind and
# the other native (mpirun MPMD), so that the measured rank's counts are its
# own messages and the polls it makes while it waits. Each case runs three
# times: N1 and N2 iterations with the peer native, then N2 with the peer
# under `valgrind --tool=none` (other poll counts, the same messages). Per
# library, total = C + messages * M + polls * E, polls = opal_progress calls
# (callgrind's call counts): E (an empty poll) from the two N2 runs, M (a
# message's own work) from the N1/N2 difference less its polls' E.
# Latency: M is per round trip (a send and a receive on the rank measured);
# mbw_mr: per message of the window (the window's ack shared among its 64).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<EOF
usage: scripts/mpi-budget.sh [options]
Options (default in brackets):
  --configs LIST     comma-separated subset of: ob1 (pml ob1, btl self,vader),
                     cm (pml cm, mtl ofi, the corevia provider) [ob1,cm]
  --benchmarks LIST  subset of: latency,mbw_mr [latency,mbw_mr]
  --ranks LIST       ranks to measure, subset of 0,1 [0,1]
  --fabric DIR       directory holding libcorevia-fi.so [BUILD/fabric]
  --build DIR        corevia build directory; osu_mpi goes to DIR/peers [build]
  --out DIR          output directory (callgrind files, logs, table.txt)
                     [/tmp/cvia-mpi-budget-PID]
  --timeout S        limit for each mpirun, seconds [300]
  -h, --help         this text
Needs valgrind, mpicc and mpirun (scripts/install-deps.sh peers).
EOF
}
die_usage() { echo "mpi-budget.sh: $*" >&2; usage >&2; exit 2; }
fatal() { echo "mpi-budget.sh: $*" >&2; exit 1; }

CONFIGS=ob1,cm BENCHES=latency,mbw_mr RANKS=0,1 BUILD=build FABRIC= OUT=/tmp/cvia-mpi-budget-$$ TIMEOUT=300
while [ $# -gt 0 ]; do
    case $1 in
    -h|--help) usage; exit 0 ;;
    --configs|--benchmarks|--ranks|--fabric|--build|--out|--timeout)
        [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1: a value expected"
        case $1 in
        --configs) CONFIGS=$2 ;; --benchmarks) BENCHES=$2 ;; --ranks) RANKS=$2 ;;
        --fabric) FABRIC=$2 ;; --build) BUILD=$2 ;; --out) OUT=$2 ;;
        --timeout) [[ $2 =~ ^[1-9][0-9]*$ ]] || die_usage "--timeout: a positive integer expected, not '$2'"
                   TIMEOUT=$2 ;;
        esac
        shift 2 ;;
    *) die_usage "unknown option '$1'" ;;
    esac
done
for c in ${CONFIGS//,/ }; do [[ $c =~ ^(ob1|cm)$ ]] || die_usage "--configs: unknown configuration '$c' (ob1, cm)"; done
for b in ${BENCHES//,/ }; do [[ $b =~ ^(latency|mbw_mr)$ ]] || die_usage "--benchmarks: unknown benchmark '$b' (latency, mbw_mr)"; done
for r in ${RANKS//,/ }; do [[ $r =~ ^[01]$ ]] || die_usage "--ranks: rank 0 or 1 expected, not '$r'"; done
FABRIC=${FABRIC:-$BUILD/fabric}
if [[ ,$CONFIGS, == *,cm,* ]]; then
    [ -f "$FABRIC/libcorevia-fi.so" ] || fatal "--fabric: no libcorevia-fi.so in '$FABRIC' (build first: scripts/build.sh)"
    FABRIC=$(cd "$FABRIC" && pwd)
fi
for t in valgrind callgrind_annotate mpicc mpirun python3; do
    command -v "$t" >/dev/null || fatal "$t not found (Debian: scripts/install-deps.sh peers)"
done
mkdir -p "$OUT/cg" "$BUILD/peers" || fatal "cannot create $OUT or $BUILD/peers"
OUT=$(cd "$OUT" && pwd)
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# osu_mpi as compare-mpi.sh builds it, with -g for callgrind's symbols
OSU=$BUILD/peers/osu_mpi-g
if [ ! -x "$OSU" ] || [ bench/peers/osu_mpi.c -nt "$OSU" ]; then
    timeout 120 mpicc -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -o "$OSU" bench/peers/osu_mpi.c \
        2>"$OUT/osu_mpi-build.err" || fatal "building osu_mpi failed, see $OUT/osu_mpi-build.err"
fi
OSU=$(cd "$(dirname "$OSU")" && pwd)/$(basename "$OSU")

# run CFG BENCH RANK ITERS SLOW: one callgrind file, its name on stdout
run() {
    local cfg=$1 bench=$2 r=$3 n=$4 slow=$5 mca=() x=() peer a b
    local out=$OUT/cg/$cfg-$bench-r$r-$n${slow:+-slow}.out
    case $cfg in
    ob1) mca=(--mca pml ob1 --mca btl self,vader) ;;
    cm)  mca=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include corevia --mca btl self)
         x=(-x "FI_PROVIDER_PATH=$FABRIC" -x FI_PROVIDER=corevia) ;;   # -x per MPMD context
    esac
    local osu=("$OSU" "$bench" --sizes 8 -i "$n" -x 0)
    local vg=(valgrind --tool=callgrind "--callgrind-out-file=$out" "${osu[@]}")
    peer=("${osu[@]}")
    [ -n "$slow" ] && peer=(valgrind --tool=none -q "${osu[@]}")
    if [ "$r" = 0 ]; then a=("${vg[@]}"); b=("${peer[@]}"); else a=("${peer[@]}"); b=("${vg[@]}"); fi
    timeout "$TIMEOUT" mpirun --bind-to core --map-by core "${mca[@]}" -np 1 "${x[@]}" "${a[@]}" \
        : -np 1 "${x[@]}" "${b[@]}" >"$out.log" 2>&1 ||
        fatal "mpirun failed for $cfg $bench rank $r ($n iterations${slow:+, slowed peer}), see $out.log"
    echo "$out"
}

: >"$OUT/table.txt"
for cfg in ${CONFIGS//,/ }; do
    for bench in ${BENCHES//,/ }; do
        if [ "$bench" = latency ]; then n1=2000 n2=12000 msgs=10000; else n1=50 n2=250 msgs=12800; fi
        for r in ${RANKS//,/ }; do
            echo "mpi-budget: $cfg $bench rank $r" >&2
            A=$(run "$cfg" "$bench" "$r" $n1 "")
            B=$(run "$cfg" "$bench" "$r" $n2 "")
            C=$(run "$cfg" "$bench" "$r" $n2 1)
            echo "== $cfg $bench, rank $r, instructions per $([ "$bench" = latency ] && echo "round trip" || echo message)" \
                >>"$OUT/table.txt"
            python3 scripts/lib/mpi_budget.py "$A" "$B" "$C" "$msgs" >>"$OUT/table.txt" ||
                fatal "analysis failed for $cfg $bench rank $r"
        done
    done
done
cat "$OUT/table.txt"
echo "mpi-budget: callgrind files and table.txt in $OUT" >&2
