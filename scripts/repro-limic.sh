#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# repro-limic.sh: paper 000's figures 3 to 10 (LiMIC for Linux 2.6: latency
# and throughput of intra-node messages, 4 B to 512 KiB) as far as this
# machine allows, in one command, with cvia-bench: two copies through
# shared buffers vs single copy by Cross Memory Attach (the kernel's map-and-
# copy, successor of the paper's module) vs the shared arena (loads and
# stores), and the pair of cores by what it shares. See --help.

set -u -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

RUNS=5
OUT=out/limic
BUFFERS=1
TMO=120
QUIET_WAIT=60
BENCH=${CVIA_BENCH:-build/cvia-bench}
SIZES=4-512k
CLASSES="l2 l3 package remote"

usage() {
    cat <<EOF
Usage: scripts/repro-limic.sh [options]

Reproduces the measurements of paper 000 (LiMIC for Linux 2.6, section 4) on
this machine with cvia-bench: one-way latency (half a ping-pong round trip,
the paper's and osu_latency's definition) and throughput (the paper streams
1000 messages; cvia-bench bw streams windows of 64 with a 4-byte reply, the
osu_bw definition: MB = 10^6 B), 4 B to 512 KiB by powers of two. Every
configuration is run --runs times, interleaved in rotating order; figures are
per-size medians across runs.

Outputs in OUT (default $OUT), CSV (medians, one column per configuration)
and PNG (gnuplot pngcairo):

  fig03.png  fig03-06_latency.csv   latency 4 B - 2 KiB    paper Fig. 3
  fig04.png                         latency 2 KiB - 512 KiB paper Fig. 4
  fig05.png  fig03-06_bw.csv        throughput 4 B - 2 KiB  paper Fig. 5
  fig06.png                         throughput 2 KiB - 512 KiB paper Fig. 6
      The paper compares kernel modules (LiMIC on Linux 2.4 with and without
      a kiobuf pool, and its module for 2.6). Here the same axes compare:
        twocopy  two copies through the shared-memory rings at every size
                 (CVIA_SHM_RNDV_THRESHOLD=1t): the approach LiMIC replaces
        cma      single copy by process_vm_readv from 0 bytes
                 (CVIA_SHM_RNDV_THRESHOLD=0 CVIA_SHM_COPY=read): the paper's
                 design, the kernel mapping the peer's pages and copying once
        arena    single copy by plain loads and stores from the sender's
                 shared arena (cvia-bench --arena, threshold 0): no system call
        default  corevia as shipped (two copies below CVIA_SHM_RNDV_THRESHOLD,
                 32k by default, single copy above)
  fig07.png  fig07-10_latency.csv   latency by core pair, 4 B - 2 KiB  Fig. 7
  fig08.png                         latency by core pair, 2 KiB - 512 KiB Fig. 8
  fig09.png  fig07-10_bw.csv        throughput by core pair, 4 B - 2 KiB Fig. 9
  fig10.png                         throughput by core pair, 2 KiB - 512 KiB Fig. 10
      The paper's "cores in the same package" (sharing the L2) against "cores
      in different packages". Here each class that this machine has, from
      cvia-bench --placement (single copy by CMA from 0 bytes, as the
      paper's module): l2 (sharing an L2), l3 (sharing the last-level cache,
      not an L2), package (same package, no shared cache), remote (different
      packages). A class the machine lacks is left out, and placement.txt and
      the figure's title say why (a 2-core VM has only one pair of cores).
  summary.txt   the paper's headline comparisons, recomputed here
  placement.txt cvia-bench --plan: every class, its pair of CPUs or why none
  all.csv       every run: config,run,benchmark,size_bytes,value
  raw/          each cvia-bench run's CSV and errors; machine.txt

Options (default in brackets):
  --runs N        interleaved runs of each configuration [$RUNS]
  --quick         1 run, sizes 4,64,2048,65536,524288 (a smoke test)
  --buffers N|auto
                  passed to cvia-bench: cycle through N buffers per side
                  (auto: 2 x the last-level cache) [1: one buffer, as the paper
                  and OSU]
  --out DIR       output directory [$OUT]
  --timeout S     limit for one cvia-bench run, seconds [$TMO]
  --quiet-wait S  while others keep > 25% of the CPUs busy, wait before a run;
                  S seconds in all (0: never) [$QUIET_WAIT]
  -h, --help      this text

Environment: CVIA_BENCH [$BENCH]; other CVIA_* variables reach every run.
Takes about 1 minute with 5 runs on a 2-core machine (more classes, more time).
EOF
}

die_usage() { echo "repro-limic: $*" >&2; echo "Try --help." >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    -h|--help) usage; exit 0 ;;
    --runs) [ $# -ge 2 ] || die_usage "--runs needs a value"
            case "$2" in ''|*[!0-9]*|0) die_usage "--runs: positive integer expected" ;; esac
            RUNS=$2; shift ;;
    --quick) RUNS=1; SIZES=4,64,2048,65536,524288 ;;
    --buffers) [ $# -ge 2 ] || die_usage "--buffers needs a value"
               case "$2" in auto) ;; ''|*[!0-9]*|0) die_usage "--buffers: a positive integer or auto" ;; esac
               BUFFERS=$2; shift ;;
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

[ -x "$BENCH" ] || { echo "repro-limic: $BENCH not found (build: cmake -S . -B build && cmake --build build)" >&2; exit 1; }
PY=${PYTHON:-}
[ -n "$PY" ] || PY=$(command -v /usr/bin/python3 || command -v python3 || true)
[ -n "$PY" ] || { echo "repro-limic: python3 is needed for the medians (Debian: python3)" >&2; exit 1; }

mkdir -p "$OUT/raw" || exit 1
rm -f "$OUT"/raw/* "$OUT"/*.csv "$OUT"/*.png "$OUT"/*.txt "$OUT"/*.dat
note() { echo "repro-limic: $*" >&2; echo "$*" >>"$OUT/notes.txt"; }

# ---- the configurations --------------------------------------------------------
# name | environment | cvia-bench arguments
declare -A CENV CARGS
configs=()
add() { configs+=("$1"); CENV[$1]=$2; CARGS[$1]=$3; }
add twocopy "CVIA_SHM_RNDV_THRESHOLD=1t" "--placement any"
add cma     "CVIA_SHM_RNDV_THRESHOLD=0 CVIA_SHM_COPY=read" "--placement any"
add arena   "CVIA_SHM_RNDV_THRESHOLD=0" "--placement any --arena"
add default "" "--placement any"

"$BENCH" --plan >"$OUT/placement.txt" 2>&1
for c in $CLASSES; do
    line=$(grep -E "^$c " "$OUT/placement.txt")
    case "$line" in
    *" none "*) note "class $c: not on this machine: $(echo "${line#* none }" | sed 's/^ *//')" ;;
    "") note "class $c: cvia-bench --plan gave nothing (see placement.txt)" ;;
    *) add "place-$c" "CVIA_SHM_RNDV_THRESHOLD=0 CVIA_SHM_COPY=read" "--placement $c" ;;
    esac
done

{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host=$(hostname)"
    echo "cpu_model=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
    echo "cpus=$(nproc --all)"
    echo "kernel=$(uname -r)"
    echo "corevia=$("$BENCH" --version | sed -n 's/.* //p') git $(git describe --always --dirty 2>/dev/null || echo none)"
    echo "runs=$RUNS"
    echo "buffers=$BUFFERS"
    for c in "${configs[@]}"; do echo "config_$c=${CENV[$c]:-defaults} | cvia-bench ${CARGS[$c]}"; done
} >"$OUT/raw/machine.txt"

# ---- measure, interleaved --------------------------------------------------------
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
    [ "$BUSY" -le 25 ] || note "run started while others used $BUSY% of the CPUs: noisy"
}

nc=${#configs[@]}
start=$(date +%s)
for run in $(seq 1 "$RUNS"); do
    for i in $(seq 0 $((nc - 1))); do
        c=${configs[$(( (i + run - 1) % nc ))]}
        f="$OUT/raw/r$run-$c"
        echo "repro-limic: run $run/$RUNS: $c" >&2
        wait_quiet
        # shellcheck disable=SC2086
        if ! env ${CENV[$c]} timeout "$TMO" "$BENCH" latency bw --sizes "$SIZES" --csv -q \
                --buffers "$BUFFERS" ${CARGS[$c]} >"$f.csv" 2>"$f.err"; then
            note "run $run of $c failed (see $f.err): $(head -c 300 "$f.err")"
            rm -f "$f.csv"
        fi
        # the path actually taken, once per configuration
        [ "$run" = 1 ] && env ${CENV[$c]} timeout "$TMO" "$BENCH" bw --sizes 65536 --iters 2 -q \
            ${CARGS[$c]} 2>/dev/null | sed -n "s/^# path (rank 1 to 0): /$c: /p; s/^# placement class /$c: class /p" >>"$OUT/raw/paths.txt"
    done
done
echo "seconds=$(( $(date +%s) - start ))" >>"$OUT/raw/machine.txt"

# ---- medians, CSV, summary --------------------------------------------------------
"$PY" - "$OUT" <<'PYEOF' || exit 1
import csv, glob, os, re, statistics, sys
out = sys.argv[1]
machine = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out, "raw", "machine.txt")) if "=" in l)
rows = []
for path in glob.glob(os.path.join(out, "raw", "r*-*.csv")):
    m = re.match(r"r(\d+)-(.+)\.csv$", os.path.basename(path))
    for r in csv.DictReader(open(path)):
        col = "latency_us" if r["benchmark"] == "latency" else "bandwidth_mb_s"
        if r.get(col):
            rows.append((m.group(2), int(m.group(1)), r["benchmark"], int(r["size_bytes"]), float(r[col])))
if not rows:
    sys.exit("repro-limic: no results")
with open(os.path.join(out, "all.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["config", "run", "benchmark", "size_bytes", "value"])
    w.writerows(sorted(rows))
med = {}
for c, run, b, s, v in rows:
    med.setdefault((c, b, s), []).append(v)
med = {k: statistics.median(v) for k, v in med.items()}
sizes = sorted({r[3] for r in rows})
configs = sorted({r[0] for r in rows})
variants = [c for c in ("twocopy", "cma", "arena", "default") if c in configs]
classes = [c for c in ("place-l2", "place-l3", "place-package", "place-remote") if c in configs]

def write(name, cols, b):
    with open(os.path.join(out, name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["size_bytes"] + [c.replace("place-", "") for c in cols])
        for s in sizes:
            w.writerow([s] + ["%.4f" % med[(c, b, s)] if (c, b, s) in med else "" for c in cols])
    with open(os.path.join(out, name.replace(".csv", ".dat")), "w") as f:
        for s in sizes:
            f.write("%d %s\n" % (s, " ".join("%.6g" % med[(c, b, s)] if (c, b, s) in med else "NaN" for c in cols)))
write("fig03-06_latency.csv", variants, "latency")
write("fig03-06_bw.csv", variants, "bw")
write("fig07-10_latency.csv", classes, "latency")
write("fig07-10_bw.csv", classes, "bw")
open(os.path.join(out, "variants.txt"), "w").write(" ".join(variants) + "\n")
open(os.path.join(out, "classes.txt"), "w").write(" ".join(c.replace("place-", "") for c in classes) + "\n")

def span(a, b_, bench, lo, hi):
    """Improvement of a over b_ at each size in [lo, hi] (latency reduction %, or
    throughput increase %: > 0 means a is better): the best and the worst."""
    v = []
    for s in sizes:
        if lo <= s <= hi and (a, bench, s) in med and (b_, bench, s) in med:
            x, y = med[(a, bench, s)], med[(b_, bench, s)]
            v.append(((1 - x / y) * 100 if bench == "latency" else (x / y - 1) * 100, s))
    return (max(v), min(v)) if v else None

def say(a, b_, bench, lo, hi, rng):
    r = span(a, b_, bench, lo, hi)
    if not r:
        return []
    (bv, bs), (wv, ws) = r
    what = "latency lower by" if bench == "latency" else "throughput higher by"
    return ["%-8s vs %-8s %-9s %s at best %+7.1f%% (%d B), at worst %+7.1f%% (%d B)" % (
        a, b_, rng, what, bv, bs, wv, ws)]

lines = ["LiMIC (paper 000) figures 3-10 on %s (%s, %s CPUs), %s; %s runs interleaved, medians; buffers %s" % (
    machine.get("host"), machine.get("cpu_model"), machine.get("cpus"), machine.get("date"),
    machine.get("runs"), machine.get("buffers"))]
for k, v in sorted(machine.items()):
    if k.startswith("config_"):
        lines.append("  %-16s %s" % (k[7:], v))
if os.path.exists(os.path.join(out, "raw", "paths.txt")):
    lines += ["paths taken (receiver's cvia_peer_info after a 64 KiB bw):"] + \
             ["  " + l.rstrip() for l in open(os.path.join(out, "raw", "paths.txt"))]
lines.append("")
lines.append("Paper: its 2.6 module cut latency up to 62% and raised throughput up to 144% against LiMIC on 2.4;")
lines.append("cores sharing the L2 cut small-message latency up to 57% against cores in different packages.")
for a, b_ in (("cma", "twocopy"), ("arena", "twocopy"), ("arena", "cma"), ("default", "twocopy")):
    for bench in ("latency", "bw"):
        for lo, hi, rng in ((1, 2048, "4B-2K"), (2048, 1 << 30, "2K-512K")):
            lines += say(a, b_, bench, lo, hi, rng)
if len(classes) >= 2:
    near, far = classes[0], classes[-1]
    for bench in ("latency", "bw"):
        for lo, hi, rng in ((1, 2048, "4B-2K"), (2048, 1 << 30, "2K-512K")):
            lines += [l.replace("place-", "") for l in say(near, far, bench, lo, hi, rng)]
else:
    lines.append("placement: only %s here; figures 7-10 cannot compare classes on this machine" % (
        ", ".join(c.replace("place-", "") for c in classes) or "no class"))
notes = os.path.join(out, "notes.txt")
if os.path.exists(notes):
    lines += ["note: " + l.rstrip() for l in open(notes)]
open(os.path.join(out, "summary.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PYEOF

# ---- figures ------------------------------------------------------------------------
if ! command -v gnuplot >/dev/null; then
    note "no PNG: gnuplot not found (Debian: gnuplot-nox; scripts/install-deps.sh build)"
    exit 0
fi
missing=$(grep '^class ' "$OUT/notes.txt" 2>/dev/null | sed 's/: not on this machine.*//; s/^class //' | paste -sd, -)
plot() {   # png title ylabel dat cols-file xlo xhi logy
    local png=$1 title=$2 ylabel=$3 dat=$4 xlo=$6 xhi=$7 logy=$8 i=2 p="" c
    [ -s "$dat" ] || return 0
    for c in $(cat "$5"); do
        p+="${p:+, }'$dat' using 1:$i with linespoints lw 2 pt $((i + 3)) title '$c'"
        i=$((i + 1))
    done
    [ -n "$p" ] || return 0
    gnuplot 2>>"$OUT/raw/gnuplot.err" <<EOF || note "gnuplot failed for $png (raw/gnuplot.err)"
set terminal pngcairo size 800,560 font ',10'
set output '$png'
set termoption noenhanced
set title "$title"
set logscale x 2
set xrange [$xlo:$xhi]
set xtics ("4" 4, "16" 16, "64" 64, "256" 256, "1K" 1024, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "512K" 524288)
set xlabel 'message size (bytes)'
set ylabel '$ylabel'
set grid
set key top left
$([ "$logy" = 1 ] && echo "set logscale y" || echo "set yrange [0:*]")
plot $p
EOF
}
host=$(sed -n 's/^host=//p' "$OUT/raw/machine.txt")
sub="$host, medians of $RUNS runs, buffers $BUFFERS"
pm=${missing:+; missing here: $missing}
plot "$OUT/fig03.png" "Fig. 3: latency, 4 B-2 KiB ($sub)" "one-way latency (us)" "$OUT/fig03-06_latency.dat" "$OUT/variants.txt" 3 2900 0
plot "$OUT/fig04.png" "Fig. 4: latency, 2-512 KiB ($sub)" "one-way latency (us)" "$OUT/fig03-06_latency.dat" "$OUT/variants.txt" 1500 700000 1
plot "$OUT/fig05.png" "Fig. 5: throughput, 4 B-2 KiB ($sub)" "MB/s (10^6 B)" "$OUT/fig03-06_bw.dat" "$OUT/variants.txt" 3 2900 0
plot "$OUT/fig06.png" "Fig. 6: throughput, 2-512 KiB ($sub)" "MB/s (10^6 B)" "$OUT/fig03-06_bw.dat" "$OUT/variants.txt" 1500 700000 0
plot "$OUT/fig07.png" "Fig. 7: latency by core pair, 4 B-2 KiB ($sub$pm)" "one-way latency (us)" "$OUT/fig07-10_latency.dat" "$OUT/classes.txt" 3 2900 0
plot "$OUT/fig08.png" "Fig. 8: latency by core pair, 2-512 KiB ($sub$pm)" "one-way latency (us)" "$OUT/fig07-10_latency.dat" "$OUT/classes.txt" 1500 700000 1
plot "$OUT/fig09.png" "Fig. 9: throughput by core pair, 4 B-2 KiB ($sub$pm)" "MB/s (10^6 B)" "$OUT/fig07-10_bw.dat" "$OUT/classes.txt" 3 2900 0
plot "$OUT/fig10.png" "Fig. 10: throughput by core pair, 2-512 KiB ($sub$pm)" "MB/s (10^6 B)" "$OUT/fig07-10_bw.dat" "$OUT/classes.txt" 1500 700000 0
echo "repro-limic: results in $OUT/ (summary.txt, fig03..fig10.png, fig*.csv, all.csv)" >&2
