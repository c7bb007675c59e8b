# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# The lossy-link series of scripts/repro-mvia.sh (--loss LIST; issue 17,
# item 5): sourced by it once the lab and the runners are defined. For every
# loss rate, nftables drops that share of the frames arriving at h2 (the
# receiving host: rank 1, the TCP server) at random, on a netdev ingress
# hook that sees every frame the veth delivers, IP (one frame can be a
# whole GSO burst on veth) and raw Ethernet alike; then osu_bw-style
# bandwidth of corevia's udp and eth (cvia-bench bw) and of kernel TCP
# (net_pingpong bw) runs, interleaved, each round in another order, one
# size per run, with as many windows as move about LOSS_MB(loss) MiB (a
# run at 30 % loss is TCP's tens of seconds; below 1 %, seconds). With
# --loss-base DIR, the same corevia series of another build run beside them
# (udp-base, eth-base): the no-regression check of a change.
#
# Uses from repro-mvia.sh: OUT RUN BENCH NPP H1 H2 IF2 TMO REPEAT SIZES
# BW_ITERS WINDOW PLACEMENTS PY STD_MTUS, and lab_mtu run_cvia run_npp
# wait_quiet cpu_stat log note fatal.

LOSS_TABLE=cvia_rloss

# MiB one run moves at a loss rate: enough for seconds of the fast series,
# and TCP at 30 % (hundreds of KB/s here) within the timeout
loss_mb() { awk -v p="$1" 'BEGIN { print (p <= 1 ? 256 : p <= 10 ? 64 : 8) }'; }

# percentage (up to two decimals) -> parts of 10000
loss_parts() { awk -v p="$1" 'BEGIN { printf "%d", p * 100 + 0.5 }'; }

# loss_set PCT: replace h2's ingress rule (0: none). Two counters: every
# frame, and those dropped.
loss_set() {
    local parts
    ip netns exec "$H2" nft delete table netdev "$LOSS_TABLE" 2>/dev/null
    parts=$(loss_parts "$1")
    [ "$parts" -gt 0 ] || return 0
    ip netns exec "$H2" nft -f - <<EON
table netdev $LOSS_TABLE {
    chain ingress {
        type filter hook ingress device "$IF2" priority 0; policy accept;
        counter
        numgen random mod 10000 < $parts counter drop
    }
}
EON
}

# frames seen and dropped since loss_set: "SEEN DROPPED"
loss_counts() {
    ip netns exec "$H2" nft list chain netdev "$LOSS_TABLE" ingress 2>/dev/null |
        sed -n 's/.*counter packets \([0-9]*\) bytes.*/\1/p' | paste -sd' ' -
}

run_loss_series() {
    local -a LL PL SER
    local round li pi si zi loss pl name tr f rc ok nl np ns nz mtu seen drop w0 size iters
    local -a ZL
    local all_sizes=$SIZES
    local base_run="" base_bench=""
    command -v nft >/dev/null || fatal "--loss needs nft (nftables): scripts/install-deps.sh"
    if [ -n "$LOSS_BASE" ]; then
        base_run=$(cd "$LOSS_BASE" 2>/dev/null && pwd)/cvia-run
        base_bench=$(cd "$LOSS_BASE" 2>/dev/null && pwd)/cvia-bench
        [ -x "$base_run" ] && [ -x "$base_bench" ] ||
            fatal "--loss-base $LOSS_BASE: no cvia-run and cvia-bench there"
    fi
    read -r -a LL <<<"${LOSS//,/ }"
    read -r -a PL <<<"${PLACEMENTS//,/ }"
    read -r -a ZL <<<"${SIZES//,/ }"
    mtu=${STD_MTUS%%,*}
    SER=(udp eth tcp)
    [ -n "$LOSS_BASE" ] && SER+=(udp-base eth-base)
    nl=${#LL[@]} np=${#PL[@]} ns=${#SER[@]} nz=${#ZL[@]}
    mkdir -p "$OUT/raw/loss"
    lab_mtu "$mtu"
    ip netns exec "$H2" nft list tables >/dev/null 2>&1 ||
        fatal "nftables does not work inside the lab's namespaces"
    {
        echo "# repro-mvia --loss: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "# loss on h2's ingress ($IF2, nftables numgen random), MTU $mtu, sizes $SIZES,"
        echo "# window $WINDOW; one size per run, windows to move ~256 MiB at <= 1 % loss, 64 MiB at <= 10 %,"
        echo "# 8 MiB above (at least 2, +1 warm-up); $REPEAT rounds, placements $PLACEMENTS"
        echo "# series: ${SER[*]}${LOSS_BASE:+ (base: $LOSS_BASE)}"
    } >"$OUT/plan-loss.txt"
    echo "round,placement,loss_pct,series,size,iters,seconds,loadavg1,frames_seen,frames_dropped,ok" >"$OUT/loss-runs.csv"
    log "loss series: ${SER[*]} x loss ${LOSS} x ${PLACEMENTS} x sizes $SIZES x $REPEAT rounds"
    for round in $(seq 1 "$REPEAT"); do
        for li in $(seq 0 $((nl - 1))); do
            loss=${LL[$(( (li + round - 1) % nl ))]}
            for pi in $(seq 0 $((np - 1))); do
                pl=${PL[$(( (pi + round - 1) % np ))]}
                for zi in $(seq 0 $((nz - 1))); do
                size=${ZL[$(( (zi + round - 1) % nz ))]}
                iters=$(( $(loss_mb "$loss") * 1048576 / (size * WINDOW) ))
                [ "$iters" -ge 2 ] || iters=2
                for si in $(seq 0 $((ns - 1))); do
                    name=${SER[$(( (si + round - 1) % ns ))]}
                    f="$OUT/raw/loss/r$round-$pl-L$loss-$name-s$size-bw"
                    loss_set "$loss" || fatal "cannot install the nftables loss rule in $H2"
                    wait_quiet
                    log "round $round/$REPEAT, loss $loss %, $pl, $size B x $WINDOW x $iters: $name"
                    w0=$(date +%s.%N)
                    SIZES=$size BW_ITERS=$iters
                    case $name in
                    tcp) run_npp tcp "$pl" bw "$f.csv" "$f.log" ;;
                    *-base) tr=${name%-base}
                         ( RUN=$base_run BENCH=$base_bench
                           run_cvia "$name" "$tr" auto "$pl" bw "$f.csv" "$f.log" ) ;;
                    *) run_cvia "$name" "$name" auto "$pl" bw "$f.csv" "$f.log" ;;
                    esac
                    rc=$?
                    SIZES=$all_sizes
                    ok=1
                    if [ $rc -ne 0 ] || ! grep -qE '^bw,[0-9]+,' "$f.csv" 2>/dev/null; then
                        ok=0
                        note "loss $loss %, $name, $size B ($pl, round $round) failed: exit $rc$([ $rc = 124 ] && echo ' (timed out)'); see raw/loss/$(basename "$f").log"
                    fi
                    read -r seen drop <<<"$(loss_counts)"
                    awk -v r="$round" -v p="$pl" -v l="$loss" -v n="$name" -v z="$size" -v it="$iters" \
                        -v w0="$w0" -v w1="$(date +%s.%N)" \
                        -v la="$(cut -d' ' -f1 /proc/loadavg)" -v s="${seen:-0}" -v d="${drop:-0}" -v ok=$ok \
                        'BEGIN { printf "%s,%s,%s,%s,%s,%s,%.2f,%s,%s,%s,%s\n", r, p, l, n, z, it, w1 - w0, la, s, d, ok }' \
                        >>"$OUT/loss-runs.csv"
                done
                done
            done
        done
    done
    ip netns exec "$H2" nft delete table netdev "$LOSS_TABLE" 2>/dev/null
    "$PY" - "$OUT" <<'PYEOF' || fatal "loss summary failed"
import csv, glob, os, re, statistics, sys
out = sys.argv[1]
rows = {}
for path in glob.glob(os.path.join(out, "raw", "loss", "r*-bw.csv")):
    m = re.match(r"r(\d+)-(one-core|two-cores)-L([0-9.]+)-(.+)-s\d+-bw\.csv$", os.path.basename(path))
    if not m:
        continue
    rnd, pl, loss, name = int(m.group(1)), m.group(2), m.group(3), m.group(4)
    lines = [l for l in open(path) if l.strip() and not l.startswith("#")]
    for r in csv.DictReader(lines):
        if r.get("benchmark") != "bw":
            continue
        try:
            rows[(pl, loss, name, int(r["size_bytes"]), rnd)] = float(r["bandwidth_mb_s"])
        except (KeyError, ValueError, TypeError):
            pass
runs = list(csv.DictReader(open(os.path.join(out, "loss-runs.csv"))))
if not rows:
    sys.exit("repro-mvia: no loss results (see notes.txt and raw/loss/)")
pls = sorted({k[0] for k in rows})
losses = sorted({k[1] for k in rows}, key=float)
names = [n for n in ("udp", "eth", "tcp", "udp-base", "eth-base") if any(k[2] == n for k in rows)]
sizes = sorted({k[3] for k in rows})
rounds = sorted({k[4] for k in rows})
def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None
def fig(pl, loss, n, s):
    return med([rows.get((pl, loss, n, s, r)) for r in rounds])
def ratio(pl, loss, a, b, s):   # per round, then the median: same minutes
    v = [rows[(pl, loss, a, s, r)] / rows[(pl, loss, b, s, r)] for r in rounds
         if (pl, loss, a, s, r) in rows and rows.get((pl, loss, b, s, r))]
    return med(v)
def fmt(x, f="%.1f"):
    return "-" if x is None else f % x
def hsize(s):
    return "%d MiB" % (s >> 20) if s >= 1 << 20 and s % (1 << 20) == 0 else "%d KiB" % (s >> 10)
L = []
for pl in pls:
    L.append("### %s: bandwidth under random loss (MB/s, medians of %d rounds; ratio to TCP per round, median)" % (pl, len(rounds)))
    L.append("")
    based = [n for n in ("udp", "eth") if n in names and n + "-base" in names]
    head = ["loss", "size", "eth frames dropped"] + [n for n in names] + ["%s/tcp" % n for n in names if n != "tcp"]
    head += ["%s/%s-base" % (n, n) for n in based]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    for loss in losses:
        # per frame: eth's (one segment each); a udp or TCP frame on veth can be a GSO burst
        sel = [r for r in runs if r["placement"] == pl and r["loss_pct"] == loss and
               r["series"].startswith("eth") and int(r["frames_seen"] or 0)]
        seen = sum(int(r["frames_seen"]) for r in sel)
        drop = sum(int(r["frames_dropped"] or 0) for r in sel)
        meas = "%.2f %%" % (100.0 * drop / seen) if seen else "-"
        for s in sizes:
            cells = [loss + " %", hsize(s), meas] + [fmt(fig(pl, loss, n, s)) for n in names]
            cells += [fmt(ratio(pl, loss, n, "tcp", s), "%.2fx") for n in names if n != "tcp"]
            cells += [fmt(ratio(pl, loss, n, n + "-base", s), "%.2fx") for n in based]
            L.append("| " + " | ".join(cells) + " |")
    L.append("")
la = [float(r["loadavg1"]) for r in runs]
if la:
    L.append("Load average (1 min) during the runs: %.1f-%.1f, median %.1f." % (min(la), max(la), statistics.median(la)))
L.append("")
L.append("Targets (issue 17): at 1 % loss >= 1.0x TCP, at 30 % >= 0.5x TCP, 64 KiB and 1 MiB:")
for pl in pls:
    for loss, want in (("1", 1.0), ("30", 0.5)):
        for n in ("udp", "eth"):
            for s in sizes:
                r = ratio(pl, loss, n, "tcp", s)
                if r is not None:
                    L.append("  %s, %s %% loss, %s %s: %.2fx TCP (target %.1fx): %s" % (
                        pl, loss, n, hsize(s), r, want, "met" if r >= want else "MISSED"))
bad = [r for r in runs if r["ok"] != "1"]
if bad:
    L.append("")
    L.append("Failed runs: " + ", ".join("%s/%s/%s%%/%s" % (r["round"], r["placement"], r["loss_pct"], r["series"]) for r in bad))
open(os.path.join(out, "summary-loss.md"), "w").write("\n".join(L) + "\n")
print("\n".join(L))
PYEOF
}
