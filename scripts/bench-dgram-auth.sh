#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# bench-dgram-auth.sh: the cost of the datagram MAC (issue 16 item 4):
# 32 B latency (p50) and 64 KiB bandwidth (osu_bw) of udp and eth with
# CVIA_DGRAM_AUTH=yes and =no, one-core placement (both ranks on CPU 0, as
# BENCHMARKS.md's network figures) or two-cores (rank r on CPU r), in a
# two-namespace netlab, MAC on and off interleaved (alternating which goes
# first), medians of --repeat.
#   bench-dgram-auth.sh [--build DIR] [--repeat N] [--mtu M] [--nets "udp eth"]
#                       [--placement one-core|two-cores] [--bw-iters N] [--lat-iters N]
# (--bw-iters: iterations of a window of 64 KiB messages per bandwidth run,
# 300 by default, 1.2 GB.)
# Each bandwidth run also reports the CPU time both ranks used per 64 KiB
# message (user + system, getrusage of each rank, wire-up included; a
# window of 64 messages per iteration): what
# the MAC costs whatever else loads the machine. (Running the ranks at
# nice -20 instead starves ksoftirqd, and the veth's packets wait.)
# Prints one line per run and a summary with the paired ratio on/off.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$top/build REPEAT=5 MTU=1500 NETS="udp eth" LAT_ITERS=5000 BW_ITERS=300 PLACE=one-core
while [ $# -gt 0 ]; do
    case "$1" in
        --build) BUILD=$2; shift 2 ;;
        --repeat) REPEAT=$2; shift 2 ;;
        --mtu) MTU=$2; shift 2 ;;
        --nets) NETS=$2; shift 2 ;;
        --placement) PLACE=$2; shift 2 ;;
        --bw-iters) BW_ITERS=$2; shift 2 ;;
        --lat-iters) LAT_ITERS=$2; shift 2 ;;
        -h|--help) sed -n '5,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-dgram-auth.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done
[[ $BW_ITERS =~ ^[0-9]+$ && $BW_ITERS -ge 1 ]] || { echo "bench-dgram-auth.sh: --bw-iters: a positive number" >&2; exit 2; }
[[ $LAT_ITERS =~ ^[0-9]+$ && $LAT_ITERS -ge 1 ]] || { echo "bench-dgram-auth.sh: --lat-iters: a positive number" >&2; exit 2; }
TAG=auth$$
H1=cvia-$TAG-h1 H2=cvia-$TAG-h2
out=$(mktemp -d)
trap 'bash "$top/scripts/netlab.sh" down --tag "$TAG" >/dev/null 2>&1; rm -rf "$out"' EXIT
bash "$top/scripts/netlab.sh" up --tag "$TAG" --hosts 2 --mtu "$MTU" >/dev/null
RUN=$BUILD/cvia-run BENCH=$BUILD/cvia-bench
printf '#!/bin/sh\nexec taskset -c "$CVIA_RANK" "$@"\n' >"$out/wrap"
chmod +x "$out/wrap"
cat >"$out/cpu" <<'PY'
import os, resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1] + "." + os.environ.get("CVIA_RANK", "x"), "w") as f:
    f.write(f"{r.ru_utime + r.ru_stime}\n")
sys.exit(rc)
PY
case "$PLACE" in
    one-core) pin=(taskset -c 0) wrap=() ;;
    two-cores) pin=() wrap=("$out/wrap") ;;
    *) echo "bench-dgram-auth.sh: --placement one-core or two-cores" >&2; exit 2 ;;
esac

one() {   # net auth bench size iters -> value (latency p50 us, or MB/s and CPU us per message)
    local csv=$out/r.csv
    rm -f "$csv" "$out"/cpu.*
    CVIA_NET=$1 CVIA_DGRAM_AUTH=$2 timeout 120 "${pin[@]}" "$RUN" -n 2 --hosts "$H1,$H2" \
        --bind none python3 "$out/cpu" "$out/cpu" "${wrap[@]}" "$BENCH" "$3" --sizes "$4" \
        --iters "$5" --window 64 --output "$csv" --quiet >/dev/null 2>&1
    # the last row's p50 (latency) or MB/s (bw): the csv header names them
    awk -F, -v b="$3" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        { v = (b == "latency") ? $col["latency_p50_us"] : $col["bandwidth_mb_s"] } END { printf "%s", v }' "$csv"
    [ "$3" = bw ] && cat "$out"/cpu.* | awk -v n="$5" '{ s += $1 } END { printf " %.2f", s / (n * 64) * 1e6 }'
    echo
}

for r in $(seq "$REPEAT"); do
    for net in $NETS; do
        if [ $((r % 2)) -eq 1 ]; then order="yes no"; else order="no yes"; fi
        for a in $order; do
            lat=$(one "$net" "$a" latency 32 "$LAT_ITERS")
            read -r bw cpu < <(one "$net" "$a" bw 64k "$BW_ITERS")
            echo "run $r $net auth=$a lat32_p50_us $lat bw64k_MBs $bw cpu_us_per_64k $cpu" | tee -a "$out/all"
        done
    done
done
echo "# medians over $REPEAT runs (MTU $MTU, $PLACE), paired ratio on/off = median of per-run ratios"
for net in $NETS; do
    awk -v net="$net" '$3 == net { k = $4; lat[k, $2] = $6; bw[k, $2] = $8; cpu[k, $2] = $10; runs[$2] = 1 }
        function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
            if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        END { n = 0; for (r in runs) { n++; ly[n] = lat["auth=yes", r]; ln[n] = lat["auth=no", r];
                  by[n] = bw["auth=yes", r]; bn[n] = bw["auth=no", r];
                  cy[n] = cpu["auth=yes", r]; cn[n] = cpu["auth=no", r];
                  lr[n] = ly[n] / ln[n]; br[n] = by[n] / bn[n]; cr[n] = cn[n] / cy[n] }
              printf "%s: 32 B p50 us: MAC %.2f, no MAC %.2f, ratio %.3f | 64 KiB MB/s: MAC %.0f, no MAC %.0f, ratio %.3f | CPU us per 64 KiB: MAC %.1f, no MAC %.1f, ratio no/MAC %.3f\n",
                  net, med(ly, n), med(ln, n), med(lr, n), med(by, n), med(bn, n), med(br, n),
                  med(cy, n), med(cn, n), med(cr, n) }' "$out/all"
done
