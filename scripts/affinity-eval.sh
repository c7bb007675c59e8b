#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# Paper 003's figures 5 and 6 in one command: aggregate receive bandwidth
# and CPU use of N communication processes per device, for three placements
# of the receiving processes:
#   vanilla   Linux decides (nothing pinned)
#   miami     each receiver pinned to its device's interrupt core (the
#             "same core as the interrupt" policy of MiAMI)
#   cvia      cvia-affinity daemon running with a profile that
#             cvia-affinity analyze measured on this machine first
# Two "devices": two veth links between two network namespaces
# (scripts/netlab.sh), each with its receive processing steered to its own
# CPU by rps_cpus, standing for two NICs with their interrupt cores; as in
# the paper (FDR InfiniBand beside 10 GbE), the first is as fast as the CPUs
# allow and the second is link-bound (tbf, --slow-rate, default 2gbit). Real
# programs, senders in one namespace, receivers in the other: iperf3
# (Debian's), cvia-bench bw over corevia's network provider (one cvia-run job
# per stream, CVIA_NET=--provider, kept on its device with CVIA_<PROV>_IF;
# its iterations sized from a calibration run so that it lasts about
# --omit + --time), and cvia-affinity's own kernel TCP streams ("own").
# Runs are interleaved (every policy once per round, rotating order),
# medians reported. The cvia policy uses a profile analyze measured over the
# same transport: kernel TCP for iperf3 and own, corevia for cvia-bench.
#
#   affinity-eval.sh [--runs R] [--time T] [--omit O] [--procs "1 2"]
#                    [--mtu M] [--slow-rate RATE|none]
#                    [--tools "iperf3 cvia-bench own"] [--provider NAME]
#                    [--cost SECONDS] [--settle SECONDS] [--build DIR]
#                    [--out DIR] [--quick | --full]
#   affinity-eval.sh --replot DIR      tables and plot again from DIR/runs.csv
#   affinity-eval.sh --only-cost       only the daemon's cost and reaction
#
# Defaults (about 6 minutes on 2 CPUs): 3 rounds, 3 s measured after 2 s
# left out (time for the daemon's first decision), 1 and 2 receivers per
# device, iperf3 and cvia-bench, analyze streams of 1 s, cost phase 20 s, at
# most about 2 s waiting before each run for others' work to settle.
# --full: the recorded session's settings (5 rounds, 5 s after 2 s, 1 2 4
# receivers, all three programs, analyze streams of 2 s, 60 s cost, 30 s
# settle; about half an hour on 2 CPUs). --quick: 2 rounds of 2 s, 1
# receiver per device, 15 s cost (about 2 minutes).
#
# Writes DIR/runs.csv (every run), DIR/summary.csv (medians),
# DIR/affinity-eval.png (gnuplot, pngcairo), DIR/summary.md (tables,
# ratios), DIR/profile.json (kernel TCP) and DIR/profile-corevia.json,
# DIR/daemon/TOOL-N-rROUND.json (the daemon's decisions in each cvia run),
# DIR/cost.txt. Needs root. Traffic stays inside the namespaces it makes;
# they are removed at the end, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

runs=3 secs=3 omit=2 procs="1 2" mtu=1500 slow=2gbit tools="iperf3 cvia-bench" cost=20
settle=2 an_secs=1 provider=${CVIA_NET:-tcp} build=build replot= only_cost=
out=out/affinity-eval
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --time) secs=$2; shift 2 ;;
        --omit) omit=$2; shift 2 ;;
        --procs) procs=$2; shift 2 ;;
        --mtu) mtu=$2; shift 2 ;;
        --slow-rate) slow=$2; shift 2 ;;
        --tools) tools=$2; shift 2 ;;
        --cost) cost=$2; shift 2 ;;
        --settle) settle=$2; shift 2 ;;
        --provider) provider=$2; shift 2 ;;
        --build) build=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --quick) runs=2 secs=2 omit=2 procs="1" cost=15; shift ;;
        --full) runs=5 secs=5 omit=2 procs="1 2 4" tools="iperf3 own cvia-bench" cost=60 settle=30
                an_secs=2; shift ;;
        --replot) replot=$2; shift 2 ;;
        --only-cost) only_cost=1; shift ;;
        -h|--help) sed -n '5,48p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "affinity-eval: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done
usage_err() { echo "affinity-eval: $*" >&2; exit 2; }
for t in $tools; do
    case $t in iperf3|own|cvia-bench) ;; *) usage_err "--tools: iperf3, cvia-bench, own" ;; esac
done
for v in "$runs" "$secs" "$omit" "$cost" "$settle"; do
    [[ $v =~ ^[0-9]+$ ]] || usage_err "--runs, --time, --omit, --cost, --settle: whole numbers"
done
[ "$runs" -ge 1 ] && [ "$secs" -ge 1 ] && [ "$cost" -ge 5 ] ||
    usage_err "--runs and --time at least 1, --cost at least 5"
for n in $procs; do [[ $n =~ ^[1-9][0-9]?$ ]] || usage_err "--procs: counts from 1 to 99"; done
[[ $provider =~ ^[a-z][a-z0-9_]{0,15}$ ]] || usage_err "--provider '$provider': a provider name (tcp)"
[ "$(id -u)" -eq 0 ] || { echo "affinity-eval: needs root (network namespaces)" >&2; exit 1; }

log() { echo "affinity-eval: $*" >&2; }
./scripts/install-deps.sh test >&2
command -v iperf3 >/dev/null || { log "iperf3 missing (apt-get install iperf3)"; exit 1; }
case " $tools " in *" cvia-bench "*) targets="cvia-affinity cvia-run cvia-bench" ;; *) targets=cvia-affinity ;; esac
if [ ! -x "$build/tools/cvia-affinity/cvia-affinity" ] || [ ! -x "$build/cvia-run" ] ||
   [ ! -x "$build/cvia-bench" ]; then
    cmake -S . -B "$build" >/dev/null && cmake --build "$build" --target $targets -j"$(nproc)" >&2
fi
build=$(cd "$build" && pwd)
TOOL=$build/tools/cvia-affinity/cvia-affinity
RUN=$build/cvia-run
BENCH=$build/cvia-bench
PROV_IF=CVIA_$(echo "$provider" | tr a-z A-Z)_IF   # the provider's interface variable
NETLAB="$ROOT/scripts/netlab.sh"
mkdir -p "$out"
out=$(cd "$out" && pwd)
TAG=ev$$
TAG=${TAG:0:12}
export CVIA_NETLAB_STATE=$out/.netlab
BG=()
cleanup() {
    for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    bash "$NETLAB" down --tag "$TAG" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- medians, ratios, plot (also: --replot DIR, from DIR/runs.csv)
report() {
python3 - "$csv" "$out" <<'EOF'
import csv, statistics, sys, os
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["status"] == "ok"]
out = sys.argv[2]
key = lambda r: (r["tool"], int(r["procs_per_device"]), r["policy"])
groups = {}
for r in rows:
    groups.setdefault(key(r), []).append(r)
med = {}
with open(os.path.join(out, "summary.csv"), "w") as f:
    f.write("tool,procs_per_device,policy,runs,bw_gbps_median,bw_min,bw_max,bw_dev1_median,bw_dev2_median,cpu_pct_median,steal_pct_median,background_busy_pct_median\n")
    for k in sorted(groups):
        g = groups[k]
        bw = [float(r["bw_gbps"]) for r in g]; cpu = [float(r["cpu_pct"]) for r in g]
        st = [float(r["steal_pct"]) for r in g]
        med[k] = (statistics.median(bw), statistics.median(cpu))
        d1 = statistics.median(float(r["bw_dev1_gbps"]) for r in g)
        d2 = statistics.median(float(r["bw_dev2_gbps"]) for r in g)
        bgm = statistics.median(float(r["background_busy_pct"]) for r in g)
        f.write("%s,%d,%s,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.1f,%.1f,%.0f\n" % (k[0], k[1], k[2], len(g),
                statistics.median(bw), min(bw), max(bw), d1, d2, statistics.median(cpu),
                statistics.median(st), bgm))
        med[k] = med[k] + (d1, d2, min(bw), max(bw))
with open(os.path.join(out, "summary.md"), "w") as f:
    for tool in sorted({k[0] for k in med}):
        f.write("\n**%s: aggregate receive bandwidth (Gbit/s) and CPU use (%% of all CPUs), median of %s runs**\n\n"
                % (tool, "/".join(sorted({str(len(g)) for k, g in groups.items() if k[0] == tool}))))
        f.write("| streams per device | vanilla | miami | cvia | cvia/vanilla | cvia/miami | CPU vanilla | CPU miami | CPU cvia |\n")
        f.write("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
        nan = (float("nan"),) * 6
        for n in sorted({k[1] for k in med if k[0] == tool}):
            v = med.get((tool, n, "vanilla"), nan)
            m = med.get((tool, n, "miami"), nan)
            c = med.get((tool, n, "cvia"), nan)
            f.write("| %d | %.2f (%.1f..%.1f) | %.2f (%.1f..%.1f) | %.2f (%.1f..%.1f) | %.2f | %.2f | %.0f | %.0f | %.0f |\n"
                    % (n, v[0], v[4], v[5], m[0], m[4], m[5], c[0], c[4], c[5],
                       c[0] / v[0], c[0] / m[0], v[1], m[1], c[1]))
        f.write("\nper device (fast / link-bound), Gbit/s: " + "; ".join(
            "%d: %s" % (n, ", ".join("%s %.2f/%.2f" % (p, med[(tool, n, p)][2], med[(tool, n, p)][3])
                                     for p in ("vanilla", "miami", "cvia") if (tool, n, p) in med))
            for n in sorted({k[1] for k in med if k[0] == tool})) + "\n")
    allbg = [float(r["background_busy_pct"]) for r in rows]
    allst = [float(r["steal_pct"]) for r in rows]
    f.write("\n%d runs; before each, others' work kept the CPUs %.0f%% busy (median; %.0f..%.0f), "
            "steal %.1f%% (median; max %.1f%%)\n" % (len(rows), statistics.median(allbg), min(allbg),
            max(allbg), statistics.median(allst), max(allst)))
# gnuplot data: one block per tool x policy
with open(os.path.join(out, "plot.dat"), "w") as f:
    for tool in sorted({k[0] for k in med}):
        for pol in ("vanilla", "miami", "cvia"):
            f.write("# %s %s\n" % (tool, pol))
            for n in sorted({k[1] for k in med if k[0] == tool}):
                if (tool, n, pol) in med:
                    m = med[(tool, n, pol)]
                    f.write("%d %.4f %.2f %.4f %.4f\n" % (n, m[0], m[1], m[4], m[5]))
            f.write("\n\n")
EOF
cat "$out/summary.md" >&2

{
    echo "set terminal pngcairo size 1400,560 font 'Sans,11'"
    echo "set output '$out/affinity-eval.png'"
    echo "set termoption noenhanced"
    echo "set multiplot layout 1,2 title 'cvia-affinity vs vanilla vs same core as the interrupt: $(nproc) CPUs, 2 veth devices (rps_cpus as interrupt cores), medians of $runs runs, bars: min..max'"
    echo "set xlabel 'communication processes per device'"
    echo "set key bottom right"
    echo "set grid"
    echo "set offsets 0.25, 0.25, 0, 0"
    echo "set xtics ($(echo $procs | sed 's/ /, /g'))"
    for panel in bw cpu; do
        if [ $panel = bw ]; then echo "set ylabel 'aggregate bandwidth (Gbit/s)'"; echo "set title 'bandwidth (paper fig. 5)'"; col=2
        else echo "set ylabel 'CPU use (% of all CPUs)'"; echo "set title 'processor utilization (paper fig. 6)'"; col=3; fi
        echo "set yrange [0:*]"
        plots=() idx=0 nplot=$(($(echo $tools | wc -w) * 3))
        for tool in $(echo $tools | tr ' ' '\n' | sort); do
            for pol in vanilla miami cvia; do
                dt=$(case $tool in iperf3) echo 1 ;; own) echo 2 ;; *) echo 3 ;; esac)
                lc=$(case $pol in vanilla) echo 1 ;; miami) echo 2 ;; cvia) echo 7 ;; esac)
                off=$(awk -v i="$idx" -v n="$nplot" 'BEGIN { printf "%.3f", (i - (n - 1) / 2) * 0.03 }')
                if [ $panel = bw ]; then
                    plots+=("'$out/plot.dat' index $idx using (\$1+$off):2:4:5 with yerrorlines lw 2 lc $lc dt $dt title '$tool $pol'")
                else
                    plots+=("'$out/plot.dat' index $idx using 1:$col with linespoints lw 2 lc $lc dt $dt title '$tool $pol'")
                fi
                idx=$((idx + 1))
            done
        done
        echo "plot $(IFS=,; echo "${plots[*]}")"
    done
    echo "unset multiplot"
} >"$out/plot.gp"
gnuplot "$out/plot.gp" && log "plot: $out/affinity-eval.png"
}

if [ -n "$replot" ]; then
    out=$(cd "$replot" && pwd) csv=$out/runs.csv
    runs=$(awk -F, 'NR > 1 { print $1 }' "$csv" | sort -n | tail -1)
    tools=$(awk -F, 'NR > 1 { print $2 }' "$csv" | sort -u | tr '\n' ' ')
    procs=$(awk -F, 'NR > 1 { print $3 }' "$csv" | sort -nu | tr '\n' ' ')
    report
    exit 0
fi

ncpu=$(nproc)
cpu_a=0
cpu_b=$((ncpu / 2))          # the second device's interrupt core: the other half
[ "$cpu_b" -ne "$cpu_a" ] || cpu_b=$((ncpu - 1))

# ---- the lab
bash "$NETLAB" up --tag "$TAG" --links 2 --mtu "$mtu" >&2
if [ "$slow" != none ]; then   # the link-bound device: its sender side limited
    bash "$NETLAB" exec --tag "$TAG" h1 tc qdisc replace dev v2-2 root tbf rate "$slow" \
        burst 256k latency 50ms
fi
bash "$NETLAB" rps --tag "$TAG" h2 v1-1 "$cpu_a" >&2
bash "$NETLAB" rps --tag "$TAG" h2 v1-2 "$cpu_b" >&2
addr1=$(bash "$NETLAB" addr --tag "$TAG" h2 h1 1)
addr2=$(bash "$NETLAB" addr --tag "$TAG" h2 h1 2)

if [ -z "$only_cost" ]; then
# ---- the variable analyser on this machine (its own namespaces), over the
# transports the programs use
log "analyze: measuring the veth profile over kernel TCP (receive processing on CPU $cpu_a)"
"$TOOL" analyze --device veth --irq-core "$cpu_a" --mtu "$mtu" --duration "$an_secs" --runs 3 \
    -o "$out/profile.json" >"$out/analyze.txt"
cat "$out/analyze.txt" >&2
case " $tools " in *" cvia-bench "*)
    log "analyze: measuring the veth profile over corevia's $provider provider"
    "$TOOL" analyze --transport corevia --provider "$provider" --launcher "$RUN" \
        --irq-core "$cpu_a" --mtu "$mtu" --duration "$an_secs" --runs 3 \
        -o "$out/profile-corevia.json" >"$out/analyze-corevia.txt"
    cat "$out/analyze-corevia.txt" >&2 ;;
esac

stat_cpu() { awk '/^cpu / { b = $2 + $3 + $4 + $7 + $8 + $9; i = $5 + $6; print b, i, $9 }' /proc/stat; }
# CPU busy (% of all CPUs) over half a second with none of our traffic: the
# machine is shared, and others' work competes with every policy alike
background() {
    local a b
    a=$(stat_cpu); sleep 0.5; b=$(stat_cpu)
    echo "$a $b" | awk '{ t = ($4 - $1) + ($5 - $2); printf "%.0f", (t > 0 ? 100 * ($4 - $1) / t : 0) }'
}
# wait (about --settle seconds at most) for the machine to be quiet enough
quiet() {
    local bg i
    bg=$(background)
    for ((i = 0; i < settle && bg > 25; i++)); do
        sleep 0.5
        bg=$(background)
    done
    echo "$bg"
}

# ---- cvia-bench over corevia: one cvia-run job per stream, rank 0 (the
# sender) in h1, rank 1 (the receiver) in h2, on device K's interfaces
# (v2-K in h1, v1-K in h2) by the provider's interface variable. Rank 1
# writes its pid and waits (10 s at most) for DIR/go before it becomes
# cvia-bench, so that it can be pinned, or watched, before traffic starts.
BENCH_SIZE=128k BENCH_BYTES=131072 BENCH_WINDOW=64
bench_job() {   # K I ITERS WARMUP DIR: starts the job in the background
    local k=$1 i=$2 iters=$3 warm=$4 d=$5
    cat >"$d/place-$k-$i" <<EOS
#!/bin/sh
if [ "\$CVIA_RANK" = 1 ]; then
    export $PROV_IF=v1-$k
    echo \$\$ >"$d/pid-$k-$i"
    n=0
    while [ ! -e "$d/go" ] && [ \$n -lt 100 ]; do sleep 0.1; n=\$((n + 1)); done
else
    export $PROV_IF=v2-$k
fi
exec "$BENCH" bw --sizes $BENCH_SIZE --iters $iters --warmup $warm --window $BENCH_WINDOW --json -q
EOS
    chmod +x "$d/place-$k-$i"
    env -u CVIA_NETLAB_STATE CVIA_NET="$provider" "$RUN" -n 2 --bind none \
        --hosts "cvia-$TAG-h1,cvia-$TAG-h2" --timeout $((4 * (secs + omit) + 30)) \
        -- "$d/place-$k-$i" >"$d/bench-$k-$i.json" 2>"$d/bench-$k-$i.err" &
}
# the receivers' pids, once every rank 1 has written its own (10 s at most)
bench_pids() {   # DIR N
    local d=$1 n=$2 t k i
    for ((t = 0; t < 100; t++)); do
        [ "$(ls "$d"/pid-* 2>/dev/null | wc -l)" -ge $((2 * n)) ] && break
        sleep 0.1
    done
    for k in 1 2; do for ((i = 0; i < n; i++)); do cat "$d/pid-$k-$i" 2>/dev/null; done; done
}
# Iterations that last about --time (and --omit of warm-up), per device and
# number of streams, from one calibration run of every stream at once
declare -A ITERS WARM
calibrate_bench() {   # N
    local n=$1 d=$out/tmp k i jobs=() rates it wu gb
    rm -rf "$d"; mkdir -p "$d"; touch "$d/go"
    for k in 1 2; do for ((i = 0; i < n; i++)); do
        bench_job "$k" "$i" 10 1 "$d"; jobs+=($!); BG+=($!)
    done; done
    wait "${jobs[@]}" 2>/dev/null || true
    rates=$(python3 - "$d" "$n" "$secs" "$omit" $BENCH_BYTES $BENCH_WINDOW <<'EOF'
import json, os, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
secs, omit, size, window = map(float, sys.argv[3:7])
for k in (1, 2):
    bw = []
    for i in range(n):
        try:
            bw.append(json.load(open(os.path.join(d, "bench-%d-%d.json" % (k, i))))
                      ["results"][0]["bandwidth_mb_s"] * 1e6)
        except Exception:
            pass
    if not bw:
        print("0 0 0")
        continue
    per_iter = size * window / statistics.median(bw)       # seconds per iteration
    print("%d %d %.3f" % (max(2, round(secs / per_iter)), max(1, round(omit / per_iter)),
                          8e-9 * statistics.median(bw)))
EOF
)
    k=1
    while read -r it wu gb; do
        if [ "$it" = 0 ]; then
            log "cvia-bench calibration with $n stream(s) per device failed: $(cat "$d"/bench-*.err | head -3)"
            exit 1
        fi
        ITERS[$n.$k]=$it WARM[$n.$k]=$wu
        log "cvia-bench over corevia $provider, $n stream(s) per device, device $k: $gb Gbit/s per stream in calibration: $it iterations (+ $wu warm-up) of $BENCH_WINDOW x $BENCH_SIZE"
        k=$((k + 1))
    done <<<"$rates"
}
case " $tools " in *" cvia-bench "*) for n in $procs; do calibrate_bench "$n"; done ;; esac

# one run: TOOL PROCS POLICY -> one CSV line on stdout
run_one() {
    local tool=$1 n=$2 policy=$3 port=5300 srv=() cli=() dpid= i k a cpu
    local w=$out/tmp; rm -rf "$w"; mkdir -p "$w"
    local prof=$out/profile.json
    [ "$tool" = cvia-bench ] && prof=$out/profile-corevia.json
    for k in 1 2; do
        a=$([ $k = 1 ] && echo "$addr1" || echo "$addr2")
        for ((i = 0; i < n; i++)); do
            port=$((port + 1))
            if [ "$tool" = iperf3 ]; then
                bash "$NETLAB" exec --tag "$TAG" h2 iperf3 -s -1 -B "$a" -p "$port" >/dev/null 2>&1 &
                srv+=($!); BG+=($!)
            elif [ "$tool" = own ]; then
                bash "$NETLAB" exec --tag "$TAG" h2 "$TOOL" stream --listen "$a:$port" \
                    --omit "$omit" --timeout $((secs + omit + 30)) --json >"$w/recv-$k-$i.json" 2>&1 &
                srv+=($!); BG+=($!)
            else   # sender and receiver in one job; the receiver waits for $w/go
                bench_job "$k" "$i" "${ITERS[$n.$k]}" "${WARM[$n.$k]}" "$w"
                cli+=($!); BG+=($!)
            fi
            echo "$k $a $port" >>"$w/ports"
        done
    done
    if [ "$tool" = cvia-bench ]; then
        mapfile -t srv < <(bench_pids "$w" "$n")
    else
        sleep 0.5                              # servers listening
    fi
    case $policy in
        miami)   # each receiver on its device's interrupt (rps) core
            i=0
            while read -r k a port; do
                cpu=$([ "$k" = 1 ] && echo "$cpu_a" || echo "$cpu_b")
                [ -z "${srv[$i]:-}" ] || taskset -a -p -c "$cpu" "${srv[$i]}" >/dev/null
                i=$((i + 1))
            done <"$w/ports" ;;
        cvia)
            local pids; pids=$(IFS=,; echo "${srv[*]}")
            "$TOOL" daemon --pid "$pids" --profile "$prof" --json \
                >"$w/daemon.json" 2>"$w/daemon.err" &
            dpid=$!; BG+=($!) ;;
    esac
    local t_start; t_start=$(date +%s.%N)
    if [ "$tool" = cvia-bench ]; then
        touch "$w/go"
    else
        while read -r k a port; do
            if [ "$tool" = iperf3 ]; then
                bash "$NETLAB" exec --tag "$TAG" h1 iperf3 -c "$a" -p "$port" -t "$secs" -O "$omit" -J \
                    >"$w/cli-$port.json" 2>&1 &
            else
                bash "$NETLAB" exec --tag "$TAG" h1 "$TOOL" stream --connect "$a:$port" \
                    --time $((secs + omit)) >/dev/null 2>&1 &
            fi
            cli+=($!); BG+=($!)
        done <"$w/ports"
    fi
    sleep "$omit"
    local s0 s1; s0=$(stat_cpu)
    wait "${cli[@]}" 2>/dev/null || true
    s1=$(stat_cpu)
    [ "$tool" = cvia-bench ] || wait "${srv[@]}" 2>/dev/null || true
    if [ -n "$dpid" ]; then
        kill -TERM "$dpid"; wait "$dpid" 2>/dev/null || true
        mkdir -p "$out/daemon" && cp "$w/daemon.json" "$out/daemon/$tool-$n-r$r.json"
    fi
    python3 - "$w" "$tool" "$n" "$policy" "$s0" "$s1" "$t_start" <<'EOF'
import json, os, sys
w, tool, n, policy, s0, s1, t_start = sys.argv[1:8]
b0, i0, st0 = map(float, s0.split()); b1, i1, st1 = map(float, s1.split())
tot = (b1 - b0) + (i1 - i0)
cpu = 100.0 * (b1 - b0) / tot if tot > 0 else float("nan")
steal = 100.0 * (st1 - st0) / tot if tot > 0 else float("nan")
bw = {1: 0.0, 2: 0.0}
ok = True
for line in open(os.path.join(w, "ports")):
    k, a, port = line.split(); k = int(k)
    try:
        if tool == "iperf3":   # the receiver's count, as the paper measured
            d = json.load(open(os.path.join(w, "cli-%s.json" % port)))
            bw[k] += d["end"]["sum_received"]["bits_per_second"] / 1e9
    except Exception:
        ok = False
for f in os.listdir(w):
    try:
        if tool == "own" and f.startswith("recv-"):
            bw[int(f.split("-")[1])] += json.load(open(os.path.join(w, f)))["bits_per_second"] / 1e9
        elif tool == "cvia-bench" and f.startswith("bench-") and f.endswith(".json"):
            # osu_bw: rank 0's bytes over its time to the last reply
            bw[int(f.split("-")[1])] += (json.load(open(os.path.join(w, f)))["results"][0]
                                         ["bandwidth_mb_s"] * 8e-3)
    except Exception:
        ok = False
pins = react = ""
dj = os.path.join(w, "daemon.json")
if os.path.exists(dj):
    ds = [json.loads(l) for l in open(dj) if l.strip()]
    pins = sum(1 for d in ds if d.get("action") == "pin-core" and d.get("changed"))
    firsts = [d["t"] for d in ds if d.get("action") == "pin-core"]
    react = "%.2f" % min(firsts) if firsts else ""
print(",".join(str(x) for x in (tool, n, policy, "%.4f" % (bw[1] + bw[2]), "%.4f" % bw[1],
                                "%.4f" % bw[2], "%.2f" % cpu, "%.2f" % steal, pins, react,
                                "ok" if ok else "incomplete")))
EOF
}

csv=$out/runs.csv
echo "round,tool,procs_per_device,policy,bw_gbps,bw_dev1_gbps,bw_dev2_gbps,cpu_pct,steal_pct,pins,first_pin_s,status,background_busy_pct" >"$csv"
policies=(vanilla miami cvia)
total=$((runs * $(echo $procs | wc -w) * $(echo $tools | wc -w) * 3))
done_=0
for ((r = 1; r <= runs; r++)); do
    for n in $procs; do
        for tool in $tools; do
            for ((j = 0; j < 3; j++)); do
                policy=${policies[$(((j + r + n) % 3))]}   # rotating order
                done_=$((done_ + 1))
                bg=$(quiet)
                line=$(run_one "$tool" "$n" "$policy")
                echo "$r,$line,$bg" >>"$csv"
                log "[$done_/$total] round $r $tool procs=$n $policy: $line (others busy $bg%)"
            done
        done
    done
done

fi   # only_cost

# ---- what the daemon costs, and how fast it reacts. Thresholds wide enough
# that a paced 500 Mbit/s iperf3 stream is high intensity, leaving idle
# capacity: the reaction measured is the daemon's, not the profile's verdict.
log "cost: daemon at its default period (1 s) watching 2 paced receivers for ${cost} s"
rm -rf "$out/tmp"; mkdir -p "$out/tmp"
cat >"$out/tmp/wide.json" <<'JSON'
{"format": "corevia-affinity-profile/1", "devices": [
 {"device": "veth", "driver": "veth",
  "classes": [{"class": "same", "bandwidth_Bps": 1e6, "cpu_process": 0.1}], "rank": ["same"],
  "demand_cores": 0.1, "best_bandwidth_Bps": 1e6, "min_interval_us": 1,
  "thresholds": {"high_interval_us": 1e6, "low_interval_us": 2e6, "derivation": "eval: reaction"}}]}
JSON
srv=()
for a in "$addr1" "$addr2"; do
    bash "$NETLAB" exec --tag "$TAG" h2 iperf3 -s -1 -B "$a" -p 5400 >/dev/null 2>&1 &
    srv+=($!); BG+=($!)
done
sleep 0.5
"$TOOL" daemon --pid "$(IFS=,; echo "${srv[*]}")" --profile "$out/tmp/wide.json" --json -v \
    --duration "$cost" >"$out/cost-daemon.json" 2>"$out/cost-daemon.err" &
dpid=$!; BG+=($!)
t_d=$(date +%s.%N)
sleep 2.3                                      # traffic starts in the middle of a period
t_c=$(date +%s.%N)
for a in "$addr1" "$addr2"; do
    bash "$NETLAB" exec --tag "$TAG" h1 iperf3 -c "$a" -p 5400 -t $((cost - 4)) -b 500M >/dev/null 2>&1 &
    BG+=($!)
done
dstat0=$(awk '{print $14 + $15}' /proc/$dpid/stat)
t0=$(date +%s.%N)
wait "$dpid" || true
python3 - "$out/cost-daemon.json" "$t_d" "$t_c" >"$out/cost.txt" <<'EOF'
import json, sys
ds = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
t_d, t_c = float(sys.argv[2]), float(sys.argv[3])
s = [d["summary"] for d in ds if "summary" in d][0]
print("daemon ran %.1f s, %d periods of 1 s, watching %d processes: %.3f s of CPU = %.3f%% of one core"
      % (s["seconds"], s["periods"], s["max_watched"], s["cpu_seconds"], s["cpu_percent_of_core"]))
pins = {}
for d in ds:
    if d.get("action") == "pin-core" and d["pid"] not in pins:
        pins[d["pid"]] = d["t"]
for pid, t in sorted(pins.items()):
    lat = t - (t_c - t_d)
    print("pid %d: traffic started at %.2f s, pinned at %.2f s: %.2f s = %.2f periods after"
          % (pid, t_c - t_d, t, lat, lat / 1.0))
    # why not earlier: the decisions between the traffic's start and the pin
    for d in ds:
        if d.get("pid") == pid and t_c - t_d < d.get("t", 0) < t:
            print("    period %d (%.2f s): %s" % (d["period"], d["t"], d["reason"]))
if not pins:
    print("no pin decision (machine saturated or intensity below the profile's high threshold)")
EOF
wait 2>/dev/null || true
cat "$out/cost.txt" >&2
if [ -n "$only_cost" ]; then rm -rf "$out/tmp"; exit 0; fi

report
rm -rf "$out/tmp"
log "done: $csv, $out/summary.csv, $out/summary.md, $out/cost.txt"
