#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# Paper 001 (MCDRAM for MPI intra-node communication), figures 3 to 8, as
# far as this machine allows: CSV and gnuplot PNG under out/mcdram/, and
# out/mcdram/README.txt saying what was measured, what was only decided on
# a recorded KNL (tests/data/topologies/knl.xml: SNC-4 flat, 32 tiles), and
# what cannot be reproduced here and why.
#
#   scripts/repro-mcdram.sh [--quick] [--build DIR] [--out DIR] [--repeat N]
#                           [--fastpath ROUNDS]
#   scripts/repro-mcdram.sh --footprint     figure 8 only: what corevia
#                           places on the fast tier against what
#                           numactl --membind binds (one short round)
#
#   fig 3  aggregate bandwidth against message size, 2 / 34 / 68 processes,
#          DDR against MCDRAM (pairs inside a tile)
#   fig 4  intra-tile pairs: DDR, shared segment only in MCDRAM, both
#   fig 5  the same across tiles
#   fig 6  intra-tile against inter-tile, both in MCDRAM
#   fig 7  placement by the library against numactl --membind, and DDR
#   fig 8  fast-memory footprint of those methods (the paper used numastat)
#
#   --fastpath R  also: latency and bandwidth with cvia_mem_alloc(default)
#                 buffers against malloc'ed ones (cvia-bench --arena), R
#                 interleaved rounds (ABBA), medians and ratios in
#                 fastpath.csv (the allocator must not slow the fast path)
#
# "MCDRAM" is the hbw tier where the machine has one. Where it has none, the
# code path still runs with node:N as the fast tier (the same memory as
# DDR here: differences are noise) and the recorded KNL shows the
# decisions (tiers, each rank's hbw node, the pairs). Every run is checked
# the usual way (cvia-bench verifies its own progress); no figure is
# invented.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0 build=build out=out/mcdram repeat=3 repeat_given=0 fastpath=0 fponly=0
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1 ;;
        --build) build=$2; shift ;;
        --out) out=$2; shift ;;
        --repeat) repeat=$2 repeat_given=1; shift ;;
        --fastpath) fastpath=$2; shift ;;
        --footprint) fponly=1 ;;
        -h|--help) sed -n '5,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "repro-mcdram.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$build/cvia-bench" ] && [ -x "$build/cvia-info" ] || ./scripts/build.sh "$build"
BENCH=$build/cvia-bench INFO=$build/cvia-info
KNL=tests/data/topologies/knl.xml
mkdir -p "$out/plans"
for v in $(compgen -e | grep '^CVIA_'); do unset "$v"; done

sizes=1-4m iters=()
if [ "$fponly" = 1 ]; then
    sizes=4k iters=(--iters 5 --warmup 1)
    [ "$repeat_given" = 1 ] || repeat=1
elif [ "$quick" = 1 ]; then
    sizes=1-32k:x4 iters=(--iters 10 --warmup 2)
    [ "$repeat_given" = 1 ] || repeat=1
fi
cores=$(nproc)
notes=$out/README.txt
: >"$notes"
say() { echo "$*" | tee -a "$notes"; }

# ------------------------------------------------------------ the machines
"$INFO" --tiers --kind hbw --kind hbw-preferred --kind node:0 >"$out/tiers-live.txt" 2>&1 || true
fast=hbw
if ! grep -qE '^[0-9]+ +hbw ' "$out/tiers-live.txt"; then
    fast=node:$(awk '/^# NUMA nodes/{getline; getline; print $1; exit}' "$out/tiers-live.txt")
fi
nnodes=$(grep -oE '\(([0-9]+) NUMA node' "$out/tiers-live.txt" | grep -oE '[0-9]+' | head -1)
if [ -r "$KNL" ]; then
    CVIA_TOPOLOGY=$KNL "$INFO" --tiers --cpus 0 --kind hbw --kind ddr >"$out/tiers-knl.txt" 2>&1 || true
    for np in 2 34 68; do
        p=$((np / 2))
        for m in intra-tile inter-tile; do
            CVIA_TOPOLOGY=$KNL "$BENCH" mbw --pairs $p --pairing $m --plan \
                >"$out/plans/knl-$m-${np}procs.txt" 2>&1 || true
        done
    done
fi
intra_ok=1
"$BENCH" mbw --pairs 1 --pairing intra-tile --plan >/dev/null 2>&1 || intra_ok=0

say "# corevia: paper 001 (MCDRAM for MPI intra-node communication), figures 3-8"
say "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $cores CPU(s), $nnodes NUMA node(s)"
say "# fast tier used here: $fast$([ "$fast" = hbw ] || echo " (this machine has no high-bandwidth memory: node:N is the same memory as DDR, so 'MCDRAM' curves equal 'DDR' ones within noise)")"
say "# sizes $sizes, median of $repeat interleaved round(s) per point, osu_mbw_mr definition, MB = 10^6 B"
say ""

# The variants: NAME|PAIRING|ENV (space-separated, "numactl" = run under
# numactl --membind)|ARGS. They run in rounds, each round every variant once
# in a rotated order, so that this VM's slow drifts hit all of them alike;
# each point is the median over the rounds. CSV in $out/runs/NAME.csv.
mkdir -p "$out/runs"
variants=()
variant() { variants+=("$1|$2|$3|$4"); }
mbw_once() {    # NAME PAIRING ENVS ARGS ROUND
    local envs=() pre=() e
    for e in $3; do
        if [ "$e" = numactl ]; then pre=(numactl --membind="${fast#node:}"); else envs+=("$e"); fi
    done
    # shellcheck disable=SC2086
    env "${envs[@]}" "${pre[@]}" "$BENCH" mbw --pairs 1 --pairing "$2" --sizes "$sizes" \
        "${iters[@]}" -q --csv --footprint "$out/runs/$1.foot.csv" $4 >"$out/runs/$1.$5.csv"
}
run_variants() {
    local n=${#variants[@]} r k
    for r in $(seq 1 "$repeat"); do
        for k in $(seq 0 $((n - 1))); do
            IFS='|' read -r name pr envs args <<<"${variants[$(((k + r) % n))]}"
            mbw_once "$name" "$pr" "$envs" "$args" "$r"
        done
    done
    for v in "${variants[@]}"; do
        name=${v%%|*}
        {
            grep -E '^#|^size' "$out/runs/$name.1.csv"
            cat "$out/runs/$name".[0-9]*.csv | grep -vE '^#|^size' | sort -t, -k1,1n -k6,6g |
                awk -F, '
                    function flush() { if (n) print line[int((n + 1) / 2)]; n = 0 }
                    { rec = $0; key = $1 }
                    key != cur { flush(); cur = key }
                    { line[++n] = rec }
                    END { flush() }'
        } >"$out/runs/$name.csv"
    done
}
col() { grep -vE '^#|^size' "$out/runs/$1.csv" | cut -d, -f6; }
sizes_col() { grep -vE '^#|^size' "$out/runs/$1.csv" | cut -d, -f1; }
join_fig() {    # FIG HEADER RUN...: size and each run's MB/s, side by side
    local fig=$1 header=$2 tmp i=1
    shift 2
    tmp=$(mktemp -d)
    sizes_col "$1" >"$tmp/0"
    for r in "$@"; do col "$r" >"$tmp/$i"; i=$((i + 1)); done
    { echo "$header"; paste -d, $(for j in $(seq 0 $#); do echo "$tmp/$j"; done); } >"$out/$fig.csv"
    rm -rf "$tmp"
}
plot() {        # FIG TITLE NCOLS
    command -v gnuplot >/dev/null || return 0
    local fig=$1 title=$2 n=$3 cmd=""
    for i in $(seq 2 $((n + 1))); do
        cmd="$cmd${cmd:+, }'$out/$fig.csv' using 1:$i with linespoints title columnhead($i)"
    done
    gnuplot <<EOF || echo "repro-mcdram: gnuplot failed for $fig" >&2
set terminal pngcairo size 900,560 noenhanced
set output '$out/$fig.png'
set datafile separator ','
set title "$title"
set logscale x 2
set xlabel 'message size (bytes)'
set ylabel 'aggregate MB/s (10^6 B/s)'
set key top left
set grid
plot $cmd
EOF
}

pairing=inter-tile
[ "$intra_ok" = 1 ] && pairing=intra-tile
SHM="CVIA_MEM_SHM_KIND=$fast"

# fig 3, 4, 7 share their runs: DDR, shm segment only, both, numactl
variant ddr "$pairing" "" ""
variant shm-only "$pairing" "$SHM" ""
variant both "$pairing" "$SHM" "--buffer-kind $fast"
if command -v numactl >/dev/null; then
    variant membind "$pairing" numactl ""
else
    say "(numactl is not installed: the numactl --membind variant is left out; apt-get install numactl)"
fi
[ "$fponly" = 1 ] || variant arena "$pairing" "" "--buffer-kind default"
if [ "$pairing" = intra-tile ] && [ "$fponly" = 0 ]; then
    variant ddr-inter inter-tile "" ""
    variant shm-only-inter inter-tile "$SHM" ""
    variant both-inter inter-tile "$SHM" "--buffer-kind $fast"
fi
run_variants

if [ "$fponly" = 0 ]; then
join_fig fig3 "size,2 procs DDR,2 procs MCDRAM (both)" ddr both
plot fig3 "fig 3: aggregate bandwidth, 2 processes ($pairing here), DDR vs fast tier ($fast)" 2
say "fig 3  PARTIAL: 2 processes measured ($pairing pair). 34 and 68 processes need 34 and 68"
say "       cores ($cores here: they would oversubscribe, figures would show the scheduler);"
say "       the pairs on the recorded KNL are in plans/knl-intra-tile-{34,68}procs.txt$([ "$fast" = hbw ] || echo "; no hbw node here, so the two curves are the same memory")."
join_fig fig4 "size,DDR,shared memory only,both" ddr shm-only both
plot fig4 "fig 4: $pairing pair, where the memory is (fast tier: $fast)" 3
if [ "$pairing" = intra-tile ]; then
    say "fig 4  measured, intra-tile pairs."
else
    say "fig 4  PARTIAL: no two cores share an L2 here, so the pair is inter-tile; the variants"
    say "       (DDR / segment only / both) are measured live; KNL intra-tile pairing: plans/knl-intra-tile-*.txt."
fi
if [ "$pairing" = inter-tile ]; then
    cp "$out/fig4.csv" "$out/fig5.csv"
else
    join_fig fig5 "size,DDR,shared memory only,both" ddr-inter shm-only-inter both-inter
fi
plot fig5 "fig 5: inter-tile pair, where the memory is (fast tier: $fast)" 3
say "fig 5  measured (inter-tile pair$([ "$fast" = hbw ] || echo ", fast tier $fast = the DDR memory"))."
if [ "$intra_ok" = 1 ]; then
    join_fig fig6 "size,intra-tile,inter-tile" both both-inter
    plot fig6 "fig 6: intra-tile against inter-tile, both in the fast tier" 2
    say "fig 6  measured."
else
    say "fig 6  NOT REPRODUCIBLE HERE: no two cores share an L2 cache ($cores cores, each its own L2),"
    say "       so there is no intra-tile pair to compare; the pairings the KNL would use are"
    say "       plans/knl-intra-tile-68procs.txt and plans/knl-inter-tile-68procs.txt (same 64 cores)."
fi
if [ -f "$out/runs/membind.csv" ]; then
    join_fig fig7 "size,DDR,corevia (segment and buffers in $fast),numactl --membind,cvia_mem_alloc(default) arena" ddr both membind arena
    plot fig7 "fig 7: placement by corevia against numactl --membind ($fast)" 4
else
    join_fig fig7 "size,DDR,corevia (segment and buffers in $fast),cvia_mem_alloc(default) arena" ddr both arena
    plot fig7 "fig 7: placement by corevia ($fast); numactl missing" 3
fi
say "fig 7  measured: DDR, corevia placement (CVIA_MEM_SHM_KIND + --buffer-kind $fast), numactl"
say "       --membind, and the default arena; $([ "$nnodes" = 1 ] && echo "one NUMA node: the placements cannot differ in speed here.")"

fi

# fig 8: bytes on the fast node(s), per method
fnode=${fast#node:}
{
    echo "method,fast_node_bytes,what"
    for r in both shm-only membind ddr; do
        f=$out/runs/$r.foot.csv
        [ -f "$f" ] || continue
        case $r in
            membind) v=$(awk -F, -v n="$fnode" '$1==n {print $7}' "$f"); w="ranks' whole footprint on node $fnode (numa_maps, shared segments once; numactl binds everything)" ;;
            ddr) v=0; w="nothing placed: first touch" ;;
            *) v=$(awk -F, -v n="$fnode" '$1==n {print $5}' "$f"); w="corevia's own placements on node $fnode (move_pages)" ;;
        esac
        echo "$r,${v:-0},$w"
    done
} >"$out/fig8.csv"
if command -v gnuplot >/dev/null; then
    gnuplot <<EOF || echo "repro-mcdram: gnuplot failed for fig8" >&2
set terminal pngcairo size 800,500 noenhanced
set output '$out/fig8.png'
set datafile separator ','
set title "fig 8: fast-tier footprint per method, 1 pair, MiB (fast tier: $fast)"
set style data histogram
set style fill solid 0.6
set ylabel 'MiB on the fast node'
set yrange [0:*]
plot '$out/fig8.csv' every ::1 using (\$2/1048576):xtic(1) title 'bytes on node $fnode'
EOF
fi
say "fig 8  measured: corevia's own placements (shm segments + buffers, move_pages) against"
say "       what numactl --membind binds (the ranks' whole footprint, numa_maps as numastat -p):"
while IFS=, read -r m b w; do
    [ "$m" = method ] && continue
    say "       $(printf '%-9s %10.2f MiB  %s' "$m" "$(awk -v b="$b" 'BEGIN { print b / 1048576 }')" "$w")"
done <"$out/fig8.csv"
say ""
say "Not reproducible on this machine, and why:"
[ "$fast" = hbw ] || say "  - no high-bandwidth memory node (one DDR tier): every 'MCDRAM' line is node $fnode."
[ "${nnodes:-1}" -gt 1 ] || say "  - one NUMA node: no placement can be faster or slower than another here."
[ "$cores" -ge 68 ] || say "  - $cores cores: 34/68-process runs (17/34 pairs) would oversubscribe the cores."
[ "$intra_ok" = 1 ] || say "  - no two cores share an L2: no intra-tile pair (figures 3, 4, 6 as the paper ran them)."
say "  The decisions for the recorded KNL (tiers, hbw node per rank, pairs) are in tiers-knl.txt and plans/."

# ------------------------------------------- the fast path: arena vs malloc
if [ "$fastpath" -gt 0 ]; then
    fp=$out/runs/fastpath
    mkdir -p "$fp"
    for r in $(seq 1 "$fastpath"); do
        order="malloc arena"
        [ $((r % 2)) = 0 ] && order="arena malloc"
        for v in $order; do
            "$BENCH" latency bw --sizes 8,256,4k,64k,1m,4m -q --csv \
                $([ $v = arena ] && echo --arena) >"$fp/$v.$r.csv"
        done
    done
    # per (benchmark, size, variant): median of the rounds; latency: each
    # round's p50 (the mean drowns in this VM's scheduling noise)
    {
        echo "benchmark,size,malloc_median,arena_median,arena_over_malloc,rounds"
        for b in latency bw; do
            for sz in 8 256 4096 65536 1048576 4194304; do
                for v in malloc arena; do
                    cat "$fp/$v".*.csv | awk -F, -v b=$b -v s=$sz \
                        '$1==b && $2==s { print (b=="latency" ? $5 : $8) }' | sort -g |
                        awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }' \
                        >"$fp/med.$v"
                done
                m=$(cat "$fp/med.malloc") a=$(cat "$fp/med.arena")
                echo "$b,$sz,$m,$a,$(awk -v a="$a" -v m="$m" 'BEGIN { printf "%.3f", a / m }'),$fastpath"
            done
        done
    } >"$out/fastpath.csv"
    say ""
    say "fast path (cvia-bench latency bw, --arena against malloc, $fastpath interleaved rounds,"
    say "medians; latency: p50 in us, lower is better; bw: MB/s, higher is better):"
    while IFS=, read -r b sz m a ratio _; do
        [ "$b" = benchmark ] && continue
        say "  $(printf '%-8s %8s B   malloc %10s   arena %10s   arena/malloc %s' "$b" "$sz" "$m" "$a" "$ratio")"
    done <"$out/fastpath.csv"
fi
echo "repro-mcdram: wrote $out (README.txt, $([ "$fponly" = 1 ] && echo fig8 || echo fig3..fig8) .csv/.png)"
