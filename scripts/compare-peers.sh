#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# compare-peers.sh: corevia against Open MPI and UCX on this machine, in one
# run, with one placement (rank 0 on CPU 0, rank 1 on CPU 1) and the OSU
# definitions (DESIGN.md, "Benchmarks mean what the field means").
#
# Peers, interleaved run by run in rotating order; per-size medians across runs:
#   corevia       build/cvia-bench latency|bw --csv
#   ompi-ob1      Open MPI, pml ob1 + btl self,vader (CMA single copy), osu_mpi
#   ompi-ucx      Open MPI, pml ucx, UCX_TLS=sm,self, osu_mpi
#   ucx_perftest  UCP tag_lat / tag_bw, UCX_TLS=sm,self, server and client pinned
# osu_mpi (bench/peers/osu_mpi.c) is built here with mpicc into build/peers/,
# so the core build never needs MPI. Installs nothing: a missing peer is
# skipped with the package that provides it.

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
OSU=build/peers/osu_mpi

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
  -h, --help      this text

Environment: CVIA_BENCH [$CVIA_BENCH], UCX_SM_TLS [$UCX_SM_TLS], PYTHON.

Output in DIR: all.csv (every run), summary.csv (medians, spread, ratios),
table.txt, peers.png (gnuplot), snippet.md (for BENCHMARKS.md), machine.txt,
mechanisms.txt, steal.csv and raw/ (each command's own output and errors).
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

PY=${PYTHON:-}
[ -n "$PY" ] || PY=$(command -v /usr/bin/python3 || command -v python3 || true)
[ -n "$PY" ] || { echo "compare-peers: python3 is needed for the medians (Debian: python3)" >&2; exit 1; }

mkdir -p "$OUT/raw" || exit 1
rm -f "$OUT"/raw/* "$OUT"/{notes.txt,steal.csv,all.csv,summary.csv,table.txt,snippet.md,peers.png} "$OUT"/plot_*
note() { echo "compare-peers: $*" >&2; echo "$*" >>"$OUT/notes.txt"; }

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
    corevia)
        [ -x "$CVIA_BENCH" ] || drop_peer corevia "$CVIA_BENCH not found (build corevia: cmake -S . -B build && cmake --build build)" ;;
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
    mkdir -p build/peers
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
    case " $PEERS " in *" corevia "*)
        echo "== corevia (cvia-info -l; cvia-bench latency --sizes 8, human output)"
        timeout "$TMO" "$(dirname "$CVIA_BENCH")/cvia-info" -l 2>&1 | head -10
        timeout "$TMO" "$CVIA_BENCH" latency --sizes 8 2>&1 | head -20 ;;
    esac
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
    case $1 in
    corevia)      timeout "$TMO" "$CVIA_BENCH" "$2" --sizes "$3" --csv ;;
    ompi-ob1)     timeout "$TMO" "${MPIRUN[@]}" "${MPI_OB1[@]}" "$OSU" "$2" --sizes "$3" --csv ;;
    ompi-ucx)     timeout "$TMO" "${MPIRUN[@]}" "${MPI_UCX[@]}" "$OSU" "$2" --sizes "$3" --csv ;;
    ucx_perftest) run_ucx_perftest "$2" "$3" ;;
    esac
}

# /proc/stat, all CPUs: total ticks, idle (idle + iowait) ticks, steal ticks.
cpu_stat() { awk '/^cpu /{ t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $5 + $6, $9 }' /proc/stat; }
# Percent of all CPUs busy over a quarter second while we run nothing: other
# people's work on a 2-CPU machine shows up directly in our numbers.
busy_pct() {
    local t0 i0 t1 i1 x
    read -r t0 i0 x < <(cpu_stat)
    sleep 0.25
    read -r t1 i1 x < <(cpu_stat)
    echo $(( t1 > t0 ? 100 * ((t1 - t0) - (i1 - i0)) / (t1 - t0) : 0 ))
}

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
read -r t_end x s_end < <(cpu_stat)
{
    echo "seconds=$(( $(date +%s) - start_all ))"
    awk -v dt=$((t_end - t_all)) -v ds=$((s_end - s_all)) 'BEGIN { printf "steal_pct=%.1f\n", dt ? 100 * ds / dt : 0 }'
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

peers = [p for p in peer_order if any(r["peer"] == p for r in rows)]
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
others = [p for p in peers if p != "corevia"]

def best_peer(b, s, c, higher):
    cand = [(get(p, b, s, c), p) for p in others if get(p, b, s, c) is not None]
    if not cand:
        return None, None
    return (max if higher else min)(cand)

def ratio(b, s, c, higher):
    cv, (bv, bp) = get("corevia", b, s, c), best_peer(b, s, c, higher)
    if cv is None or bv is None or cv == 0 or bv == 0:
        return None
    return cv / bv if higher else bv / cv

with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["benchmark", "metric", "size_bytes", "peer", "median", "min_of_runs", "max_of_runs", "runs",
                "best_peer", "ratio_gt1_corevia_better"])
    for b, c, _, higher in METRICS + [("latency", "latency_p99_us", "", False), ("bw", "msg_rate_per_s", "", True)]:
        for s in sizes:
            bv, bp = best_peer(b, s, c, higher)
            r = ratio(b, s, c, higher)
            for p in peers:
                v = S.get((p, b, s, c))
                if v:
                    w.writerow([b, c, s, p, "%.4g" % v[0], "%.4g" % v[1], "%.4g" % v[2], v[3],
                                bp or "", "" if r is None else "%.3f" % r])

def human(s):
    for unit, k in (("M", 1 << 20), ("K", 1 << 10)):
        if s >= k and s % k == 0:
            return "%d%s" % (s // k, unit)
    return str(s)

def fmt(v, higher):
    if v is None:
        return "-"
    return ("%.0f" % v) if higher and v >= 100 else ("%.1f" % v if higher else "%.3f" % v)

def table(b, c, title, higher, md):
    conv = "best peer / corevia" if not higher else "corevia / best peer"
    head = ["size"] + peers + (["best peer", "ratio"] if "corevia" in peers and others else [])
    body = []
    for s in sizes:
        if not any(get(p, b, s, c) is not None for p in peers):
            continue
        row = [human(s)] + [fmt(get(p, b, s, c), higher) for p in peers]
        if len(head) > len(peers) + 1:
            bv, bp = best_peer(b, s, c, higher)
            r = ratio(b, s, c, higher)
            row += [bp or "-", "-" if r is None else "%.2f" % r]
        body.append(row)
    if not body:
        return []
    lines = ["%s; median of %s runs; ratio = %s (> 1: corevia better)" % (title, machine.get("runs"), conv)]
    if md:
        lines = ["**" + lines[0] + "**", "", "| " + " | ".join(head) + " |",
                 "|" + "|".join("---:" if i != len(peers) + 1 else ":---" for i in range(len(head))) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in body]
    else:
        wd = [max(len(str(x)) for x in col) for col in zip(head, *body)]
        lines.append("  ".join(h.rjust(n) for h, n in zip(head, wd)))
        lines += ["  ".join(x.rjust(n) for x, n in zip(r, wd)) for r in body]
    return lines + [""]

def headline_lines():
    out_l = []
    if "corevia" not in peers or not others:
        return out_l
    for b, c, label, higher, s in (("latency", "latency_us", "8 B latency (mean)", False, 8),
                                   ("latency", "latency_p50_us", "8 B latency (p50)", False, 8),
                                   ("bw", "bandwidth_mb_s", "4 KiB bandwidth", True, 4096)):
        if s not in headline:
            continue
        cv, (bv, bp) = S.get(("corevia", b, s, c)), best_peer(b, s, c, higher)
        r = ratio(b, s, c, higher)
        if cv is None or bv is None:
            continue
        unit = "MB/s" if higher else "us"
        bs = S[(bp, b, s, c)]
        out_l.append("%s: corevia %s %s (runs %s..%s) vs best peer %s %s %s (runs %s..%s): ratio %.2f -> %s" % (
            label, fmt(cv[0], higher), unit, fmt(cv[1], higher), fmt(cv[2], higher),
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
# What each peer really used, from the probes in mechanisms.txt.
mech = {}
section = None
mpath = os.path.join(out, "mechanisms.txt")
for line in (open(mpath).read().splitlines() if os.path.exists(mpath) else []):
    if line.startswith("== "):
        section = line.split()[1]
        continue
    m = re.search(r'single_copy_mechanism" \(current value: "([^"]+)"', line)
    if m:
        mech["vader"] = m.group(1)
    if section == "corevia":
        m = re.match(r"\s+available: (.*)", line)
        if m:
            mech["corevia"] = m.group(1).strip()
        m = re.match(r"# placement: (.*)", line)
        if m:
            mech["corevia-placement"] = m.group(1).strip()
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
}

txt = ["corevia vs peers, %s, %s" % (machine.get("date"), machine.get("host")),
       "machine: %s, %s CPUs (%s core(s)/socket, %s thread(s)/core), %s, kernel %s, hypervisor %s" % (
           machine.get("cpu_model"), machine.get("cpus"), machine.get("cores_per_socket"),
           machine.get("threads_per_core"), machine.get("os"), machine.get("kernel"), machine.get("hypervisor") or "none"),
       "placement: " + placement,
       "runs: %s, interleaved in rotating order; %s s in all; CPU steal %s%% over the run, %s%% at most in one measurement" % (
           machine.get("runs"), machine.get("seconds"), machine.get("steal_pct"), machine.get("steal_max"))]
txt += ["peer %-12s %s" % (p, peer_desc[p]) for p in peers]
txt += ["note: " + n for n in notes] + [""]
hl = headline_lines()
if hl:
    txt += ["Headline (issue target: corevia at least as good as the best of UCX and Open MPI):"] + ["  " + l for l in hl] + [""]
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
for b, c, title, higher in METRICS:
    md += table(b, c, title, higher, md=True)
open(os.path.join(out, "snippet.md"), "w").write("\n".join(md) + "\n")

# Wide files for gnuplot, NaN where a peer has no figure.
for b, c in (("latency", "latency_us"), ("bw", "bandwidth_mb_s")):
    with open(os.path.join(out, "plot_%s.dat" % b), "w") as f:
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
        lat+="${lat:+, }'$OUT/plot_latency.dat' using 1:$((i + 2)) with linespoints title '${pp[$i]}'"
        bw+="${bw:+, }'$OUT/plot_bw.dat' using 1:$((i + 2)) with linespoints title '${pp[$i]}'"
    done
    if ! timeout "$TMO" gnuplot 2>"$OUT/raw/gnuplot.err" <<EOF
set terminal pngcairo size 1400,560 font ',10'
set output '$OUT/peers.png'
set multiplot layout 1,2 title "corevia vs peers, $(sed -n 's/^cpu_model=//p' "$OUT/machine.txt"), 2 ranks on CPU 0/1, median of $RUNS run(s)"
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
