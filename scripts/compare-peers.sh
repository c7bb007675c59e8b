#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# compare-peers.sh: corevia against Open MPI and UCX on this machine, in one
# run, with one placement (rank 0 on CPU 0, rank 1 on CPU 1) and the OSU
# definitions (DESIGN.md, "Benchmarks mean what the field means").
#
# Peers, interleaved run by run in rotating order; per-size medians across runs:
#   corevia       $CVIA_BENCH (build/cvia-bench) latency|bw --csv
#   ompi-ob1      Open MPI, pml ob1 + btl self,vader (CMA single copy), osu_mpi
#   ompi-ucx      Open MPI, pml ucx, UCX_TLS=sm,self, osu_mpi
#   ucx_perftest  UCP tag_lat / tag_bw, UCX_TLS=sm,self, server and client pinned
# osu_mpi (bench/peers/osu_mpi.c) is built here with mpicc into peers/ beside
# CVIA_BENCH (build/peers/ by default), so the core build never needs MPI.
# Installs nothing: a missing peer is skipped with the package that provides it.
#
# --corevia-variants runs corevia several ways in the same session (each a
# peer "corevia-NAME": two copies, single copy read/write/coop, arena, or
# another build), --memcpy adds cvia-bench's single-thread memcpy bandwidth,
# and --buffers cycles buffers so that large messages are not cache hits.

set -u -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

RUNS=5
QUICK=0
OUT=out/peers
TMO=120
QUIET_WAIT=120
PEERS_ALL="corevia ompi-ob1 ompi-ucx ucx_perftest"
PEERS=$PEERS_ALL
HEADLINE_SIZES="8,4096"
SWEEP_SIZES="1,4,8,16,64,256,1024,4096,16384,65536,262144,1048576,4194304"
SIZES=""
UCX_SM_TLS=${UCX_SM_TLS:-sm,self}
CVIA_BENCH=${CVIA_BENCH:-build/cvia-bench}
# osu_mpi is built beside the cvia-bench measured (CVIA_BENCH=build-x/cvia-bench:
# build-x/peers/osu_mpi), so a second build directory never writes into build/.
OSU=$(dirname "$CVIA_BENCH")/peers/osu_mpi
VARIANTS=""          # --corevia-variants, as given
MEMCPY=0
BUFFERS=1
declare -A VENV VARGS VBIN VDESC

usage() {
    cat <<EOF
Usage: scripts/compare-peers.sh [options]

Measures corevia, Open MPI and UCX on this machine in the same run, with the
same placement (rank 0 on CPU 0, rank 1 on CPU 1) and the OSU definitions:
latency = mean half round trip of a blocking ping-pong (plus p50/p99), bw =
window of 64 non-blocking sends + 4-byte ack, MB = 10^6 bytes.

Options (default in brackets):
  --runs N        interleaved runs; per-size medians across them [$RUNS]
  --quick         smoke test: 1 run, headline sizes ($HEADLINE_SIZES) only
  --sizes LIST    comma-separated sizes in bytes
                  [$SWEEP_SIZES]
  --peers LIST    comma-separated subset of: ${PEERS_ALL// /,}  [all]
  --out DIR       output directory [$OUT]
  --timeout S     limit for each single command, seconds [$TMO]
  --quiet-wait S  while others keep > 25% of the CPUs busy, wait before a
                  measurement; S seconds in all for the session (0: never) [$QUIET_WAIT]
  --corevia-variants LIST
                  run corevia once per variant instead of once, each a peer
                  "corevia-NAME" ("corevia" for default); LIST is comma-separated:
                    default  the library's defaults
                    twocopy  CVIA_SHM_RNDV_THRESHOLD=1t (the foundation's rings only)
                    read     CVIA_SHM_COPY=read  (receiver pulls by CMA)
                    write    CVIA_SHM_COPY=write (sender pushes by CMA)
                    coop     CVIA_SHM_COPY=coop  (both copy chunks at once)
                    arena    cvia-bench --arena  (buffers from cvia_mem_alloc: loads/stores)
                    NAME:VAR=VAL+VAR=VAL...  any CVIA_* settings
                    NAME@PATH                another cvia-bench (e.g. an older build)
                  Ratios are for "corevia" (else the first variant) against the
                  best non-corevia peer; summary.csv has every variant's.
  --memcpy        add cvia-bench memcpy (one thread, same buffers) to the bw table
  --buffers N|auto
                  cycle through N buffers per side (cvia-bench and osu_mpi
                  --buffers; auto: 2 x the last-level cache); ucx_perftest cannot,
                  so it is skipped unless N is 1 [1: one buffer, as OSU]
  -h, --help      this text

Environment: CVIA_BENCH [$CVIA_BENCH] (osu_mpi is built in peers/ beside it), UCX_SM_TLS [$UCX_SM_TLS], PYTHON.

Output in DIR: all.csv (every run), summary.csv (medians, spread, ratios),
paired.csv (each corevia variant against "corevia", run by run: the median of
the per-run ratios), table.txt, peers.png (gnuplot), snippet.md (for
BENCHMARKS.md), machine.txt, mechanisms.txt, steal.csv and raw/ (each
command's own output and errors).
Ratios are written so that > 1 means corevia is better: latency ratio = best
peer / corevia, bandwidth ratio = corevia / best peer.
EOF
}

die_usage() { echo "compare-peers: $*" >&2; echo "Try --help." >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
    -h|--help) usage; exit 0 ;;
    --runs) [ $# -ge 2 ] || die_usage "--runs needs a value"
            case "$2" in ''|*[!0-9]*|0) die_usage "--runs: positive integer expected" ;; esac
            RUNS=$2; shift ;;
    --quick) QUICK=1 ;;
    --sizes) [ $# -ge 2 ] || die_usage "--sizes needs a value"
             case "$2" in ''|*[!0-9,]*) die_usage "--sizes: comma-separated byte counts expected" ;; esac
             SIZES=$2; shift ;;
    --peers) [ $# -ge 2 ] || die_usage "--peers needs a value"
             PEERS=""
             for p in ${2//,/ }; do
                 case " $PEERS_ALL " in *" $p "*) PEERS="$PEERS $p" ;; *) die_usage "unknown peer '$p'" ;; esac
             done
             shift ;;
    --out) [ $# -ge 2 ] || die_usage "--out needs a value"; OUT=$2; shift ;;
    --timeout) [ $# -ge 2 ] || die_usage "--timeout needs a value"
               case "$2" in ''|*[!0-9]*|0) die_usage "--timeout: positive integer expected" ;; esac
               TMO=$2; shift ;;
    --quiet-wait) [ $# -ge 2 ] || die_usage "--quiet-wait needs a value"
                  case "$2" in ''|*[!0-9]*) die_usage "--quiet-wait: seconds expected" ;; esac
                  QUIET_WAIT=$2; shift ;;
    --corevia-variants) [ $# -ge 2 ] && [ -n "$2" ] || die_usage "--corevia-variants needs a list"
                  VARIANTS=$2; shift ;;
    --memcpy) MEMCPY=1 ;;
    --buffers) [ $# -ge 2 ] || die_usage "--buffers needs a value"
               case "$2" in auto) ;; ''|*[!0-9]*|0) die_usage "--buffers: a positive integer or auto expected" ;; esac
               BUFFERS=$2; shift ;;
    *) die_usage "unknown argument '$1'" ;;
    esac
    shift
done
if [ "$QUICK" = 1 ]; then
    RUNS=1
    SIZES=${SIZES:-$HEADLINE_SIZES}
fi
SIZES=${SIZES:-$SWEEP_SIZES}
# The headline sizes are always measured.
SIZES=$(printf '%s\n' ${SIZES//,/ } ${HEADLINE_SIZES//,/ } | sort -n -u | paste -sd, -)

# corevia variants: each becomes a peer with its environment, cvia-bench
# arguments and binary.
add_variant() {  # peer-name env args bin desc
    PEERS_ALL="$PEERS_ALL $1"
    VENV[$1]=$2 VARGS[$1]=$3 VBIN[$1]=$4 VDESC[$1]=$5
}
if [ -n "$VARIANTS" ]; then
    case " $PEERS " in *" corevia "*) ;; *) die_usage "--corevia-variants needs the corevia peer" ;; esac
    PEERS_ALL=${PEERS_ALL/corevia /}
    vpeers=""
    for v in ${VARIANTS//,/ }; do
        case $v in
        default) n=corevia; add_variant $n "" "" "$CVIA_BENCH" "defaults" ;;
        twocopy) n=corevia-twocopy; add_variant $n "CVIA_SHM_RNDV_THRESHOLD=1t" "" "$CVIA_BENCH" "CVIA_SHM_RNDV_THRESHOLD=1t: two copies through the rings at every size" ;;
        read|write|coop) n=corevia-$v; add_variant $n "CVIA_SHM_COPY=$v" "" "$CVIA_BENCH" "CVIA_SHM_COPY=$v" ;;
        arena) n=corevia-arena; add_variant $n "" "--arena" "$CVIA_BENCH" "cvia-bench --arena: buffers from cvia_mem_alloc, single copy by loads and stores" ;;
        *@*) n=corevia-${v%%@*}; add_variant $n "" "" "${v#*@}" "cvia-bench at ${v#*@}, defaults" ;;
        *:*) n=corevia-${v%%:*}; e=${v#*:}; add_variant $n "${e//+/ }" "" "$CVIA_BENCH" "${e//+/ }" ;;
        *) die_usage "--corevia-variants: unknown variant '$v'" ;;
        esac
        case "$n" in *[!A-Za-z0-9_.-]*|corevia-) die_usage "--corevia-variants: bad name in '$v'" ;; esac
        vpeers="$vpeers $n"
    done
    PEERS=$(echo " $PEERS " | sed "s/ corevia / $vpeers /")
fi
if [ "$MEMCPY" = 1 ]; then
    PEERS_ALL="$PEERS_ALL memcpy"
    PEERS="$PEERS memcpy"
fi
if [ "$BUFFERS" != 1 ]; then
    case " $PEERS " in *" ucx_perftest "*)
        PEERS=$(echo " $PEERS " | sed "s/ ucx_perftest / /")
        mkdir -p "$OUT" && echo "skipping ucx_perftest: it cannot cycle buffers (--buffers $BUFFERS); ompi-ucx carries UCX" >>"$OUT/notes.pending" ;;
    esac
fi
is_corevia() { case $1 in corevia|corevia-*) return 0 ;; esac; return 1; }
cvia_bin() { echo "${VBIN[$1]:-$CVIA_BENCH}"; }

PY=${PYTHON:-}
[ -n "$PY" ] || PY=$(command -v /usr/bin/python3 || command -v python3 || true)
[ -n "$PY" ] || { echo "compare-peers: python3 is needed for the medians (Debian: python3)" >&2; exit 1; }

mkdir -p "$OUT/raw" || exit 1
rm -f "$OUT"/raw/* "$OUT"/{notes.txt,steal.csv,all.csv,summary.csv,table.txt,snippet.md,peers.png} "$OUT"/plot_*
note() { echo "compare-peers: $*" >&2; echo "$*" >>"$OUT/notes.txt"; }
if [ -f "$OUT/notes.pending" ]; then
    while read -r l; do note "$l"; done <"$OUT/notes.pending"
    rm -f "$OUT/notes.pending"
fi

if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Two ranks on two cores; rank i on core i (checked below with --report-bindings).
MPIRUN=(mpirun -np 2 --bind-to core --map-by core)
MPI_OB1=(--mca pml ob1 --mca btl self,vader)
# pml ucx refuses shared memory only unless told that any transport will do.
MPI_UCX=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x "UCX_TLS=$UCX_SM_TLS")

# ---- which peers can run ----------------------------------------------------
have() { command -v "$1" >/dev/null 2>&1; }
drop_peer() { PEERS=$(echo " $PEERS " | sed "s/ $1 / /"); note "skipping $1: $2"; }

for p in $PEERS; do
    case $p in
    corevia|corevia-*|memcpy)
        [ -x "$(cvia_bin "$p")" ] || drop_peer "$p" "$(cvia_bin "$p") not found (build corevia: cmake -S . -B build && cmake --build build)" ;;
    ompi-ob1|ompi-ucx)
        if ! have mpicc || ! have mpirun; then
            drop_peer "$p" "mpicc/mpirun not found (Debian: openmpi-bin libopenmpi-dev; scripts/install-deps.sh)"
        elif [ "$p" = ompi-ucx ] && ! ompi_info 2>/dev/null | grep -q 'MCA pml: ucx'; then
            drop_peer "$p" "this Open MPI has no pml ucx component"
        fi ;;
    ucx_perftest)
        have ucx_perftest || drop_peer ucx_perftest "ucx_perftest not found (Debian: ucx-utils; scripts/install-deps.sh)" ;;
    esac
done

case " $PEERS " in *" ompi-"*)
    mkdir -p "$(dirname "$OSU")"
    if [ ! -x "$OSU" ] || [ bench/peers/osu_mpi.c -nt "$OSU" ]; then
        if ! timeout "$TMO" mpicc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra \
                -o "$OSU" bench/peers/osu_mpi.c 2>"$OUT/raw/osu_mpi-build.err"; then
            for p in ompi-ob1 ompi-ucx; do drop_peer "$p" "building osu_mpi failed, see $OUT/raw/osu_mpi-build.err"; done
        fi
    fi ;;
esac
[ -n "${PEERS// /}" ] || { note "no peer can run"; exit 1; }

# ---- the machine and the mechanisms, recorded once ------------------------------
{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host=$(hostname)"
    echo "cpu_model=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
    echo "cpus=$(nproc --all)"
    echo "cores_per_socket=$(lscpu | sed -n 's/^Core(s) per socket:[[:space:]]*//p')"
    echo "threads_per_core=$(lscpu | sed -n 's/^Thread(s) per core:[[:space:]]*//p')"
    echo "sockets=$(lscpu | sed -n 's/^Socket(s):[[:space:]]*//p')"
    echo "hypervisor=$(lscpu | sed -n 's/^Hypervisor vendor:[[:space:]]*//p')"
    echo "kernel=$(uname -r)"
    echo "os=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
    echo "cc=$( (mpicc --version 2>/dev/null || cc --version 2>/dev/null) | head -1)"
    echo "ompi=$(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v/Open MPI /p' | head -1)"
    echo "ucx=$(ucx_info -v 2>/dev/null | sed -n 's/^# Version /UCX /p' | head -1)"
    echo "corevia=$( ([ -x "$CVIA_BENCH" ] && "$CVIA_BENCH" --version 2>/dev/null | sed -n 's/.* //p' | head -1) || true) git $(git describe --always --dirty 2>/dev/null || echo none)"
    echo "runs=$RUNS"
    echo "peers=$PEERS"
    echo "ucx_tls=$UCX_SM_TLS"
    echo "buffers=$BUFFERS"
    echo "variants=$VARIANTS"
    for p in $PEERS; do is_corevia "$p" && echo "vdesc_$p=${VDESC[$p]:-defaults}"; done
} >"$OUT/machine.txt"

probe_mechanisms() {
    echo "== Open MPI btl vader (ompi_info)"
    ompi_info --param btl vader --level 9 2>/dev/null |
        grep -E 'single_copy_mechanism"|eager_limit"|max_send_size"' | sed 's/^ *//'
    echo "== UCX shared-memory transports (ucx_info -d)"
    ucx_info -d 2>/dev/null | sed -n 's/^#[[:space:]]*Transport: //p' | sort -u | paste -sd' ' -
    case " $PEERS " in *" ompi-ob1 "*)
        echo "== ompi-ob1 bindings and single-copy warnings (--report-bindings)"
        timeout "$TMO" "${MPIRUN[@]}" --report-bindings "${MPI_OB1[@]}" \
            "$OSU" latency --sizes 4194304 -i 2 -x 0 2>&1 | grep -i -E 'bound to|single.copy|cma|process_vm' | head -8 ;;
    esac
    case " $PEERS " in *" ompi-ucx "*)
        echo "== ompi-ucx lanes (UCX_LOG_LEVEL=debug)"
        timeout "$TMO" "${MPIRUN[@]}" --report-bindings "${MPI_UCX[@]}" -x UCX_LOG_LEVEL=debug \
            "$OSU" latency --sizes 4194304 -i 2 -x 0 2>&1 | grep -E 'bound to|lane\[' | sed 's/^.*UCX  DEBUG *//' | sort -u | head -8 ;;
    esac
    case " $PEERS " in *" ucx_perftest "*)
        echo "== ucx_perftest lanes (UCX_LOG_LEVEL=debug, 4 MiB tag_bw)"
        UCX_LOG_LEVEL=debug ucx_pair tag_bw 4194304 64 0
        printf '%s\n' "$UCX_OUT" | grep -E 'lane\[' | sed 's/^.*UCX  DEBUG *//' | sort -u | head -4 ;;
    esac
    case " $PEERS " in *" corevia "*|*" corevia-"*)
        echo "== corevia (cvia-info -l; cvia-bench latency --sizes 8, human output)"
        timeout "$TMO" "$(dirname "$CVIA_BENCH")/cvia-info" -l 2>&1 | head -10
        timeout "$TMO" "$CVIA_BENCH" latency --sizes 8 2>&1 | head -20 ;;
    esac
    # each variant's path, from the receiver of a 1 MiB bw (bytes it single-copied)
    for p in $PEERS; do
        is_corevia "$p" || continue
        echo "== variant $p"
        # shellcheck disable=SC2086
        env ${VENV[$p]:-} timeout "$TMO" "$(cvia_bin "$p")" bw --sizes 1048576 --iters 2 --warmup 0 \
            ${VARGS[$p]:-} 2>&1 | sed -n 's/^# path (rank 1 to 0): /path: /p'
    done
}

# ---- ucx_perftest: one server/client pair per (test, size) ------------------
UCX_PORT=$((20000 + $$ % 20000))
wait_listen() {  # port: until the server listens (no probing connect: it would be accepted)
    local i
    if ! have ss; then sleep 0.5; return; fi
    for i in $(seq 100); do
        ss -ltn 2>/dev/null | grep -q ":$1 " && return
        sleep 0.02
    done
}
# test size iters warmup: server on CPU 0, client on CPU 1. Sets UCX_OUT (the
# client's whole output; UCX logs to stdout) and UCX_LINE (its CSV result
# line, spaces stripped). No subshell, so the port really advances.
ucx_pair() {
    local port=$UCX_PORT spid rc
    UCX_PORT=$((UCX_PORT + 1))
    UCX_TLS=$UCX_SM_TLS timeout "$TMO" taskset -c 0 ucx_perftest -c 0 -p "$port" >/dev/null 2>&1 &
    spid=$!
    wait_listen "$port"
    UCX_OUT=$(UCX_TLS=$UCX_SM_TLS timeout "$TMO" taskset -c 1 ucx_perftest localhost -p "$port" -c 1 \
                  -t "$1" -s "$2" -n "$3" -w "$4" -O 64 -v -f 2>&1)
    rc=$?
    [ $rc -eq 0 ] || { kill "$spid" 2>/dev/null; printf '%s\n' "$UCX_OUT" >&2; }
    wait "$spid" 2>/dev/null
    UCX_LINE=$(printf '%s\n' "$UCX_OUT" | grep -E '^ *[0-9]+,' | tail -1 | tr -d ' ')
    [ $rc -eq 0 ] && [ -n "$UCX_LINE" ]
}
# bench sizes: the common CSV. ucx_perftest's "MB/s" is MiB/s; its percentile
# column is a median, "overall" latency is the mean half round trip.
run_ucx_perftest() {
    local bench=$1 s it wu
    echo "benchmark,size_bytes,iterations,latency_us,latency_p50_us,latency_p99_us,latency_min_us,bandwidth_mb_s,msg_rate_per_s"
    for s in ${2//,/ }; do
        if [ "$bench" = latency ]; then
            if [ "$s" -le 8192 ]; then it=10000 wu=100; else it=1000 wu=10; fi
            ucx_pair tag_lat "$s" $it $wu || return 1
            echo "$UCX_LINE" | awk -F, -v s="$s" '{ printf "latency,%s,%s,%s,%s,,,,\n", s, $1, $4, $2 }'
        else
            # osu_bw's 100 (20) windows of 64 messages, as a stream of 64 outstanding.
            if [ "$s" -le 8192 ]; then it=100 wu=10; else it=20 wu=2; fi
            ucx_pair tag_bw "$s" $((it * 64)) $((wu * 64)) || return 1
            echo "$UCX_LINE" | awk -F, -v s="$s" -v it=$it \
                '{ printf "bw,%s,%s,,,,,%.2f,%s\n", s, it, $6 * 1048576 / 1e6, $8 }'
        fi
    done
}

# peer bench sizes: the common CSV on stdout.
run_peer() {
    local bopt=()
    [ "$BUFFERS" = 1 ] || bopt=(--buffers "$BUFFERS")
    case $1 in
    corevia|corevia-*)
        # shellcheck disable=SC2086
        env ${VENV[$1]:-} timeout "$TMO" "$(cvia_bin "$1")" "$2" --sizes "$3" --csv "${bopt[@]}" ${VARGS[$1]:-} ;;
    memcpy)
        [ "$2" = bw ] || return 0
        timeout "$TMO" "$CVIA_BENCH" memcpy --sizes "$3" --csv "${bopt[@]}" | sed 's/^memcpy,/bw,/' ;;
    ompi-ob1)     timeout "$TMO" "${MPIRUN[@]}" "${MPI_OB1[@]}" "$OSU" "$2" --sizes "$3" --csv "${bopt[@]}" ;;
    ompi-ucx)     timeout "$TMO" "${MPIRUN[@]}" "${MPI_UCX[@]}" "$OSU" "$2" --sizes "$3" --csv "${bopt[@]}" ;;
    ucx_perftest) run_ucx_perftest "$2" "$3" ;;
    esac
}

. "$top/scripts/lib/cpu-load.sh"   # cpu_stat, busy_pct, session_summary

# ---- measure ---------------------------------------------------------------
probe_mechanisms >"$OUT/mechanisms.txt" 2>&1

read -r -a plist <<<"$PEERS"
np=${#plist[@]}
echo "run,peer,benchmark,seconds,steal_pct,busy_before_pct" >"$OUT/steal.csv"
# Before each measurement: while others keep > 25% of the CPUs busy, wait, out
# of one budget of QUIET_WAIT seconds for the whole session. Sets BUSY.
quiet_left=$QUIET_WAIT
wait_quiet() {
    BUSY=$(busy_pct)
    while [ "$BUSY" -gt 25 ] && [ "$quiet_left" -gt 0 ]; do
        sleep 1; quiet_left=$((quiet_left - 1))
        BUSY=$(busy_pct)
    done
}
wait_quiet
if [ "$BUSY" -gt 25 ]; then
    note "machine busy at the start ($BUSY% of the CPUs in use by others): numbers will be noisy"
fi
read -r t_all x s_all < <(cpu_stat)
start_all=$(date +%s)
for run in $(seq 1 "$RUNS"); do
    order=()
    for i in $(seq 0 $((np - 1))); do order+=("${plist[$(( (i + run - 1) % np ))]}"); done
    echo "compare-peers: run $run/$RUNS: ${order[*]}" >&2
    for p in "${order[@]}"; do
        case " $PEERS " in *" $p "*) ;; *) continue ;; esac   # dropped in an earlier run
        for bench in latency bw; do
            [ "$p" = memcpy ] && [ "$bench" = latency ] && continue
            f="$OUT/raw/r$run-$p-$bench"
            wait_quiet
            read -r t0 x s0 < <(cpu_stat)
            w0=$(date +%s.%N)
            if ! run_peer "$p" "$bench" "$SIZES" >"$f.csv" 2>"$f.err" ||
               ! grep -qE '^[^,#]*,[0-9]+,' "$f.csv"; then
                drop_peer "$p" "run $run $bench failed (exit or no rows), see $f.err"
                rm -f "$f.csv"
                break
            fi
            read -r t1 x s1 < <(cpu_stat)
            awk -v r="$run" -v p="$p" -v b="$bench" -v w0="$w0" -v w1="$(date +%s.%N)" \
                -v dt=$((t1 - t0)) -v ds=$((s1 - s0)) -v busy="$BUSY" \
                'BEGIN { printf "%s,%s,%s,%.2f,%.1f,%s\n", r, p, b, w1 - w0, dt ? 100 * ds / dt : 0, busy }' >>"$OUT/steal.csv"
        done
    done
done
{
    session_summary "$start_all" "$t_all" "$s_all"
    echo "peers_measured=$PEERS"
} >>"$OUT/machine.txt"

# ---- medians, ratios, table, snippet, plot --------------------------------------
"$PY" - "$OUT" "$PEERS_ALL" "$HEADLINE_SIZES" <<'PYEOF' || exit 1
import csv, glob, os, re, statistics, sys

out, peer_order, headline = sys.argv[1], sys.argv[2].split(), [int(s) for s in sys.argv[3].split(",")]
machine = {}
for line in open(os.path.join(out, "machine.txt")):
    k, _, v = line.rstrip("\n").partition("=")
    machine[k] = v
notes = open(os.path.join(out, "notes.txt")).read().splitlines() if os.path.exists(os.path.join(out, "notes.txt")) else []

spath = os.path.join(out, "steal.csv")
if os.path.exists(spath):
    st = list(csv.DictReader(open(spath)))
    busy = [r for r in st if int(r.get("busy_before_pct") or 0) > 25]
    if busy:
        notes.append("%d of %d measurements started while others used > 25%% of the CPUs (steal.csv): treat as noisy" % (
            len(busy), len(st)))
    if st:
        machine["steal_max"] = "%.1f" % max(float(r["steal_pct"]) for r in st)

COLS = ["latency_us", "latency_p50_us", "latency_p99_us", "latency_min_us", "bandwidth_mb_s", "msg_rate_per_s"]
rows = []        # every measurement
for path in sorted(glob.glob(os.path.join(out, "raw", "r*-*.csv"))):
    m = re.match(r"r(\d+)-(.+)-(latency|bw)\.csv$", os.path.basename(path))
    if not m:
        continue
    run, peer, bench = int(m.group(1)), m.group(2), m.group(3)
    with open(path) as f:
        lines = [l for l in f if l.strip() and not l.startswith("#")]
    for r in csv.DictReader(lines):
        try:
            size = int(r.get("size_bytes", ""))
        except ValueError:
            continue
        rec = {"peer": peer, "run": run, "benchmark": bench, "size_bytes": size,
               "iterations": r.get("iterations", "")}
        for c in COLS:
            try:
                rec[c] = float(r.get(c) or "nan")
            except ValueError:
                rec[c] = float("nan")
        rows.append(rec)
if not rows:
    sys.exit("compare-peers: no results to summarize")

with open(os.path.join(out, "all.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["peer", "run", "benchmark", "size_bytes", "iterations"] + COLS)
    for r in sorted(rows, key=lambda r: (r["benchmark"], r["size_bytes"], r["peer"], r["run"])):
        w.writerow([r["peer"], r["run"], r["benchmark"], r["size_bytes"], r["iterations"]] +
                   ["" if r[c] != r[c] else r[c] for c in COLS])

def med(vals):
    vals = [v for v in vals if v == v]
    return (statistics.median(vals), min(vals), max(vals), len(vals)) if vals else None

def is_cv(p):
    return p == "corevia" or p.startswith("corevia-")
# corevia and its variants first, the peers, then memcpy (a yardstick, not a peer)
peer_order = ([p for p in peer_order if is_cv(p)] + [p for p in peer_order if not is_cv(p) and p != "memcpy"] +
              [p for p in peer_order if p == "memcpy"])
peers = [p for p in peer_order if any(r["peer"] == p for r in rows)]
cvs = [p for p in peers if is_cv(p)]
REF = "corevia" if "corevia" in peers else (cvs[0] if cvs else "corevia")
sizes = sorted({r["size_bytes"] for r in rows})
S = {}           # (peer, bench, size, col) -> (median, lo, hi, n)
for p in peers:
    for b in ("latency", "bw"):
        for s in sizes:
            sel = [r for r in rows if r["peer"] == p and r["benchmark"] == b and r["size_bytes"] == s]
            for c in COLS:
                v = med([r[c] for r in sel])
                if v:
                    S[(p, b, s, c)] = v

def get(p, b, s, c):
    v = S.get((p, b, s, c))
    return v[0] if v else None

# Ratios: > 1 means corevia is better. Latency: best peer / corevia; bandwidth: corevia / best peer.
METRICS = [("latency", "latency_us", "One-way latency, mean of half round trips (us)", False),
           ("latency", "latency_p50_us", "One-way latency, median (p50) of half round trips (us)", False),
           ("bw", "bandwidth_mb_s", "Bandwidth, window 64 (MB/s, MB = 10^6 B)", True)]
others = [p for p in peers if not is_cv(p) and p != "memcpy"]

def best_peer(b, s, c, higher):
    cand = [(get(p, b, s, c), p) for p in others if get(p, b, s, c) is not None]
    if not cand:
        return None, None
    return (max if higher else min)(cand)

def ratio(b, s, c, higher, who=None):
    cv, (bv, bp) = get(who or REF, b, s, c), best_peer(b, s, c, higher)
    if cv is None or bv is None or cv == 0 or bv == 0:
        return None
    return cv / bv if higher else bv / cv

with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["benchmark", "metric", "size_bytes", "peer", "median", "min_of_runs", "max_of_runs", "runs",
                "best_peer", "ratio_gt1_corevia_better", "ratio_to_memcpy"])
    for b, c, _, higher in METRICS + [("latency", "latency_p99_us", "", False), ("bw", "msg_rate_per_s", "", True)]:
        for s in sizes:
            bv, bp = best_peer(b, s, c, higher)
            mc = get("memcpy", b, s, c)
            for p in peers:
                v = S.get((p, b, s, c))
                # each corevia variant's own ratio; the other rows carry the reference's
                r = ratio(b, s, c, higher, p if is_cv(p) else None)
                if v:
                    w.writerow([b, c, s, p, "%.4g" % v[0], "%.4g" % v[1], "%.4g" % v[2], v[3],
                                bp or "", "" if r is None else "%.3f" % r,
                                "%.3f" % (v[0] / mc) if mc and higher and v[0] else ""])

def human(s):
    for unit, k in (("M", 1 << 20), ("K", 1 << 10)):
        if s >= k and s % k == 0:
            return "%d%s" % (s // k, unit)
    return str(s)

def fmt(v, higher):
    if v is None:
        return "-"
    return ("%.0f" % v) if higher and v >= 100 else ("%.1f" % v if higher else "%.3f" % v)

# Paired: per run, a variant against the reference measured in the same run;
# the median of those ratios (> 1: the variant better). With few peers (e.g.
# --peers corevia and two variants) the two were measured moments apart, which
# a VM whose speed shifts between modes needs.
runval = {(r["peer"], r["benchmark"], r["size_bytes"], r["run"], c): r[c] for r in rows for c in COLS}
def paired(p, b, s, c, higher):
    v = []
    for run in sorted({r["run"] for r in rows}):
        x, y = runval.get((p, b, s, run, c)), runval.get((REF, b, s, run, c))
        if x and y and x == x and y == y:
            v.append(x / y if higher else y / x)
    return statistics.median(v) if v else None
with open(os.path.join(out, "paired.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["benchmark", "metric", "size_bytes", "variant", "reference", "paired_median_ratio_gt1_variant_better", "runs"])
    for b, c, _, higher in METRICS:
        for s in sizes:
            for p in cvs:
                if p != REF and paired(p, b, s, c, higher) is not None:
                    w.writerow([b, c, s, p, REF, "%.3f" % paired(p, b, s, c, higher), machine.get("runs")])

def best_cv(b, s, c, higher):
    cand = [(get(p, b, s, c), p) for p in cvs if get(p, b, s, c) is not None]
    return (max if higher else min)(cand) if cand else (None, None)

def table(b, c, title, higher, md):
    cols = [p for p in peers if not (p == "memcpy" and b == "latency")]
    conv = ("best peer / %s" if not higher else "%s / best peer") % REF
    cmp_ = REF in peers and others
    many = len(cvs) > 1 and cmp_
    mem = higher and "memcpy" in peers and REF in peers
    head = ["size"] + cols + (["best peer", "ratio"] if cmp_ else []) + \
           (["best corevia", "ratio"] if many else []) + (["%s / memcpy" % REF] if mem else [])
    align = ["---:"] * (len(cols) + 1) + ([":---", "---:"] if cmp_ else []) + \
            ([":---", "---:"] if many else []) + (["---:"] if mem else [])
    body = []
    for s in sizes:
        if not any(get(p, b, s, c) is not None for p in cols):
            continue
        row = [human(s)] + [fmt(get(p, b, s, c), higher) for p in cols]
        if cmp_:
            bv, bp = best_peer(b, s, c, higher)
            r = ratio(b, s, c, higher)
            row += [bp or "-", "-" if r is None else "%.2f" % r]
        if many:
            cv, cp = best_cv(b, s, c, higher)
            r = ratio(b, s, c, higher, cp) if cp else None
            row += [cp or "-", "-" if r is None else "%.2f" % r]
        if mem:
            rv, mv = get(REF, b, s, c), get("memcpy", b, s, c)
            row += ["%.2f" % (rv / mv) if rv and mv else "-"]
        body.append(row)
    if not body:
        return []
    lines = ["%s; median of %s runs; ratio = %s (> 1: corevia better)%s" % (
        title, machine.get("runs"), conv, "; best corevia: the best variant, its ratio to the best peer" if many else "")]
    if md:
        lines = ["**" + lines[0] + "**", "", "| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in body]
    else:
        wd = [max(len(str(x)) for x in col) for col in zip(head, *body)]
        lines.append("  ".join(h.rjust(n) for h, n in zip(head, wd)))
        lines += ["  ".join(x.rjust(n) for x, n in zip(r, wd)) for r in body]
    return lines + [""]

def issue3_lines():
    """Issue 3's target: bw at 512 KiB-4 MiB >= memcpy and >= 1.2 x the best peer;
    8 B latency no worse than the foundation's (two copies, or an older build)."""
    out_l = []
    big = [s for s in sizes if 512 * 1024 <= s <= 4 << 20]
    for s in big:
        bv, bp = best_peer("bw", s, "bandwidth_mb_s", True)
        mc = get("memcpy", "bw", s, "bandwidth_mb_s")
        for who in ([REF] + [p for p in cvs if p != REF]):
            v = get(who, "bw", s, "bandwidth_mb_s")
            if v is None:
                continue
            parts = ["%s bw %s: %s MB/s" % (human(s), who, fmt(v, True))]
            ok = True
            if not mc and not bv:
                out_l.append(parts[0] + " (no memcpy or peer in this run: no verdict)")
                continue
            if mc:
                parts.append("%.2f x memcpy (%s)" % (v / mc, fmt(mc, True)))
                ok &= v >= mc
            if bv:
                parts.append("%.2f x best peer %s (%s)" % (v / bv, bp, fmt(bv, True)))
                ok &= v >= 1.2 * bv
            out_l.append(", ".join(parts) + (" -> target met" if ok else " -> target NOT met"))
    base = [p for p in cvs if p != REF and (p == "corevia-twocopy" or VB.get(p))]
    for b in base:
        for c, lab in (("latency_us", "mean"), ("latency_p50_us", "p50")):
            v, f = get(REF, "latency", 8, c), get(b, "latency", 8, c)
            pr = paired(b, "latency", 8, c, False)     # > 1: b better, i.e. REF worse
            if v and f and pr:
                out_l.append("8 B latency (%s): %s %.3f us vs %s %.3f us (medians); paired per run: %s / %s = %.2f -> %s" % (
                    lab, REF, v, b, f, REF, b, pr, "no worse" if pr <= 1.05 else "WORSE by more than 5%"))
    return out_l

def headline_lines():
    out_l = []
    if REF not in peers or not others:
        return out_l
    for b, c, label, higher, s in (("latency", "latency_us", "8 B latency (mean)", False, 8),
                                   ("latency", "latency_p50_us", "8 B latency (p50)", False, 8),
                                   ("bw", "bandwidth_mb_s", "4 KiB bandwidth", True, 4096)):
        if s not in headline:
            continue
        cv, (bv, bp) = S.get((REF, b, s, c)), best_peer(b, s, c, higher)
        r = ratio(b, s, c, higher)
        if cv is None or bv is None:
            continue
        unit = "MB/s" if higher else "us"
        bs = S[(bp, b, s, c)]
        out_l.append("%s: %s %s %s (runs %s..%s) vs best peer %s %s %s (runs %s..%s): ratio %.2f -> %s" % (
            label, REF, fmt(cv[0], higher), unit, fmt(cv[1], higher), fmt(cv[2], higher),
            bp, fmt(bv, higher), unit, fmt(bs[1], higher), fmt(bs[2], higher), r,
            "target met" if r >= 1.0 else "target NOT met"))
    return out_l

wide = sorted({p for (p, b, sz, c), v in S.items()
                if sz in headline and c in ("latency_us", "bandwidth_mb_s") and v[3] > 1 and v[2] > 2 * v[1]})
if wide:
    notes.append("at the headline sizes, runs of %s spread over more than 2x (all.csv): on this VM the host "
                 "does not always place the two vCPUs alike, so compare only medians of interleaved runs" % ", ".join(wide))

placement = ("rank 0 on CPU 0, rank 1 on CPU 1 (Open MPI --bind-to core --map-by core; "
             "ucx_perftest server taskset -c 0, client -c 1; cvia-bench binds its 2 ranks to cores)")
bufs = machine.get("buffers", "1")
buffers = ("one send and one receive buffer reused for every message, as OSU (cache-resident where it fits)"
           if bufs == "1" else
           "cycling through %s buffers per side (cvia-bench and osu_mpi --buffers %s%s): large messages are not cache hits"
           % ("enough" if bufs == "auto" else bufs, bufs, ": 2 x the last-level cache per side" if bufs == "auto" else ""))
VB = {k[len("vdesc_"):]: v for k, v in machine.items() if k.startswith("vdesc_") and "cvia-bench at " in v}
# What each peer really used, from the probes in mechanisms.txt.
mech = {}
section = vsec = None
mpath = os.path.join(out, "mechanisms.txt")
for line in (open(mpath).read().splitlines() if os.path.exists(mpath) else []):
    if line.startswith("== "):
        section = line.split()[1]
        vsec = line.split()[2] if section == "variant" and len(line.split()) > 2 else None
        continue
    m = re.search(r'single_copy_mechanism" \(current value: "([^"]+)"', line)
    if m:
        mech["vader"] = m.group(1)
    if section == "corevia":
        m = re.match(r"\s+available: (.*)", line)
        if m and "corevia" not in mech:     # the first provider listed: shm
            mech["corevia"] = m.group(1).strip()
        m = re.match(r"# placement: (.*)", line)
        if m:
            mech["corevia-placement"] = m.group(1).strip()
    m = re.match(r"path: (.*)", line)
    if m and vsec:
        mech["path-" + vsec] = m.group(1).strip()
    m = re.search(r"lane\[\d+\]:\s+\d+:(\w+)/\S+ .*-> .*\s(am|rma_bw|rma|amo)\b", line)
    if m and m.group(1) != "self":
        mech.setdefault(section, set()).add("%s %s" % (m.group(1), m.group(2)))
lanes = lambda k: ", ".join(sorted(mech[k])) if k in mech else "lanes not verified"
peer_desc = {
    "corevia": "corevia %s, cvia-bench latency|bw (shm: %s; %s)" % (
        machine.get("corevia", ""), mech.get("corevia", "not verified"),
        mech.get("corevia-placement", "placement not verified")),
    "ompi-ob1": "%s, pml ob1 + btl self,vader (single copy: %s), osu_mpi" % (
        machine.get("ompi", "Open MPI"), mech.get("vader", "not verified")),
    "ompi-ucx": "%s, pml ucx, UCX_TLS=%s (used: %s), osu_mpi" % (
        machine.get("ompi", "Open MPI"), machine.get("ucx_tls"), lanes("ompi-ucx")),
    "ucx_perftest": "%s ucx_perftest tag_lat / tag_bw -O 64, UCX_TLS=%s (used: %s); MiB/s converted to MB/s" % (
        machine.get("ucx", "UCX"), machine.get("ucx_tls"), lanes("ucx_perftest")),
    "memcpy": "cvia-bench memcpy: one thread on CPU 0 copies as many messages as bw sends, same buffers "
              "(a yardstick, not a peer: not in 'best peer')",
}
for p in cvs:
    # every variant: its settings and the path its receiver reported (bytes single-copied by 1 MiB bw)
    d = machine.get("vdesc_" + p, "defaults")
    path = mech.get("path-" + p)
    base = peer_desc["corevia"] if p == "corevia" else "corevia %s, cvia-bench latency|bw, %s" % (machine.get("corevia", ""), d)
    peer_desc[p] = base + ("; path seen by the receiver of a 1 MiB bw: %s" % path if path else "")

txt = ["corevia vs peers, %s, %s" % (machine.get("date"), machine.get("host")),
       "machine: %s, %s CPUs (%s core(s)/socket, %s thread(s)/core), %s, kernel %s, hypervisor %s" % (
           machine.get("cpu_model"), machine.get("cpus"), machine.get("cores_per_socket"),
           machine.get("threads_per_core"), machine.get("os"), machine.get("kernel"), machine.get("hypervisor") or "none"),
       "placement: " + placement,
       "runs: %s, interleaved in rotating order; %s s in all; CPU steal %s%% over the run, %s%% at most in one measurement" % (
           machine.get("runs"), machine.get("seconds"), machine.get("steal_pct"), machine.get("steal_max"))]
txt += ["peer %-12s %s" % (p, peer_desc[p]) for p in peers]
txt += ["note: " + n for n in notes] + [""]
txt.insert(3, "buffers: " + buffers)
hl = headline_lines()
if hl:
    txt += ["Headline (issue target: corevia at least as good as the best of UCX and Open MPI):"] + ["  " + l for l in hl] + [""]
h3 = issue3_lines()
if h3:
    txt += ["Issue 3 target (512 KiB-4 MiB bw >= memcpy and >= 1.2 x best peer; 8 B latency no worse than two copies / older build):"] + \
           ["  " + l for l in h3] + [""]
for b, c, title, higher in METRICS:
    txt += table(b, c, title, higher, md=False)
report = "\n".join(txt)
open(os.path.join(out, "table.txt"), "w").write(report + "\n")
print(report)

md = ["### corevia vs Open MPI and UCX (shared memory, 2 ranks)", "",
      "- Machine: %s, %s vCPUs (%s core(s) per socket, %s thread(s) per core, hypervisor %s), %s, Linux %s" % (
          machine.get("cpu_model"), machine.get("cpus"), machine.get("cores_per_socket"),
          machine.get("threads_per_core"), machine.get("hypervisor") or "none", machine.get("os"), machine.get("kernel")),
      "- Compiler (osu_mpi, via mpicc -O2): %s" % machine.get("cc"),
      "- Placement: " + placement,
      "- Buffers: " + buffers,
      "- Definitions: OSU. Latency = half the round trip of a blocking ping-pong, mean after warm-up (p50 also shown); "
      "bandwidth = window of 64 non-blocking sends then a 4-byte ack; MB = 10^6 bytes. "
      "Iterations as OSU (latency 10000/100 warm-up up to 8 KiB, 1000/10 above; bw 100/10, 20/2).",
      "- Method: %s runs interleaved in rotating peer order in one session (`scripts/compare-peers.sh`), "
      "median per size across runs; CPU steal %s%% over the session (%s%% at most in one measurement); %s." % (
          machine.get("runs"), machine.get("steal_pct"), machine.get("steal_max"), machine.get("date")),
      "- Peers:"]
md += ["  - `%s`: %s" % (p, peer_desc[p]) for p in peers]
md += ["- `ucx_perftest` tag_bw streams with 64 sends outstanding and no per-window ack (not exactly osu_bw); "
       "its latency p50 is its \"typical\" column. `ompi-ucx` runs UCX under the exact osu_bw definition."]
md += ["- Note: " + n for n in notes] + [""]
if hl:
    md += ["Headline (target: at least as good as the best peer):", ""] + ["- " + l for l in hl] + [""]
if h3:
    md += ["Issue 3 target (512 KiB-4 MiB bandwidth at least memcpy and 1.2 x the best peer; 8 B latency no worse "
           "than two copies / the older build):", ""] + ["- " + l for l in h3] + [""]
for b, c, title, higher in METRICS:
    md += table(b, c, title, higher, md=True)
open(os.path.join(out, "snippet.md"), "w").write("\n".join(md) + "\n")

# Wide files for gnuplot, NaN where a peer has no figure.
for b, c in (("latency", "latency_us"), ("bw", "bandwidth_mb_s")):
    with open(os.path.join(out, "plot_%s.dat" % b), "w") as f:
        # memcpy has no latency: its column stays NaN there and the plot skips it
        f.write("# size " + " ".join(peers) + "\n")
        for s in sizes:
            vals = [get(p, b, s, c) for p in peers]
            if any(v is not None for v in vals):
                f.write("%d %s\n" % (s, " ".join("NaN" if v is None else "%.6g" % v for v in vals)))
open(os.path.join(out, "plot_peers.txt"), "w").write(" ".join(peers) + "\n")
open(os.path.join(out, "plot_xtics.txt"), "w").write(", ".join('"%s" %d' % (human(s), s) for s in sizes) + "\n")
PYEOF

if have gnuplot; then
    read -r -a pp <"$OUT/plot_peers.txt"
    lat="" bw=""
    for i in "${!pp[@]}"; do
        [ "${pp[$i]}" = memcpy ] ||
            lat+="${lat:+, }'$OUT/plot_latency.dat' using 1:$((i + 2)) with linespoints title '${pp[$i]}'"
        bw+="${bw:+, }'$OUT/plot_bw.dat' using 1:$((i + 2)) with linespoints title '${pp[$i]}'"
    done
    if ! timeout "$TMO" gnuplot 2>"$OUT/raw/gnuplot.err" <<EOF
set terminal pngcairo size 1400,560 font ',10'
set output '$OUT/peers.png'
set multiplot layout 1,2 title "corevia vs peers, $(sed -n 's/^cpu_model=//p' "$OUT/machine.txt"), 2 ranks on CPU 0/1, median of $RUNS run(s), buffers $BUFFERS"
set termoption noenhanced
set logscale x 2
set xtics ($(cat "$OUT/plot_xtics.txt"))
set xlabel 'message size'
set grid
set key top left
set logscale y
set ylabel 'one-way latency, mean (us)'
set title 'latency (lower is better)'
plot $lat
set ylabel 'bandwidth (MB/s, 10^6 B)'
set title 'bandwidth, window 64 (higher is better)'
plot $bw
unset multiplot
EOF
    then
        note "gnuplot failed, see $OUT/raw/gnuplot.err"
    fi
else
    note "no plot: gnuplot not found (Debian: gnuplot-nox; scripts/install-deps.sh)"
fi
echo "compare-peers: results in $OUT/ (table.txt, summary.csv, all.csv, snippet.md, peers.png)" >&2
