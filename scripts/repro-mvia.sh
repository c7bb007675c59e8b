#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# repro-mvia.sh: paper 002's figures 7 to 10 (M-VIA over Gigabit Ethernet:
# latency and bandwidth against message size for segment sizes 1472, 4096
# and 8958 at the matching MTUs, and against TCP/IP) on this machine, with
# corevia's udp and eth providers in a two-namespace network lab
# (scripts/netlab.sh), beside kernel TCP (bench/peers/net_pingpong), a bare
# UDP and a bare AF_PACKET ping-pong (the same), libfabric's tcp provider
# (fi_pingpong) and UCX over tcp (ucx_perftest), in one run, interleaved,
# with two placements (issue 7, "Targets"). See --help.

set -u -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

BUILD=${CVIA_BUILD:-build}
OUT=out/repro-mvia
REPEAT=3
QUICK=0
SIZES=""
FULL_SIZES="32,64,128,256,512,1024$(for ((s = 2048; s <= 65536; s += 1024)); do printf ',%d' $s; done)"
QUICK_SIZES="32,1024,4096,5120,8192,9216,16384,32768,49152,65536"
SEGMENTS="1472,4096,8958"
STD_MTUS="1500,4138,9000"
PEER_MTUS="1500"
PLACEMENTS="one-core,two-cores"
PEERS_ALL="udp,eth,eth-sock,xdp,tcp,bare-udp,bare-raw,fi,ucx"
PEERS=$PEERS_ALL
CUT=mvia
RATE=""
LAT_ITERS=""
BW_ITERS=""
WINDOW=64
FI_ITERS=""
SLOW_ITERS=20
TMO=""
QUIET_WAIT=""
LOSS=""
LOSS_BASE=""
SET_SIZES=0 SET_MTUS=0 SET_PLACE=0 SET_WINDOW=0
TAG="rmv$$"
TAG=${TAG:0:12}
CVIA_HDR=40          # corevia's dgram header (src/prov/dgram/dgram.h)
IPUDP_HDR=28         # IPv4 (20) + UDP (8)
PAGE=4096
XDP_ROOM=3506        # xdp's largest datagram (XDP_ROOM in src/prov/xdp/xdp.c)

usage() {
    cat <<EOF
Usage: scripts/repro-mvia.sh [options]

Regenerates paper 002's figures 7 to 10 as far as this machine allows:
one-way latency and bandwidth against message size for corevia's udp and
eth providers (the M-VIA design: reliable segmented datagrams) with segment
sizes $SEGMENTS at the matching MTUs, and at the standard MTUs
$STD_MTUS with the automatic segment, beside kernel TCP, all in one
run, interleaved, in a lab of two network namespaces joined by a veth pair.

Series (each at the MTU its name gives; --peers picks):
  udp-sS      corevia udp, CVIA_DGRAM_SEGMENT=S, MTU = S + $CVIA_HDR (corevia header)
              + $IPUDP_HDR (IPv4 + UDP)
  eth-sS      corevia eth, CVIA_DGRAM_SEGMENT=S, MTU = S + $CVIA_HDR (corevia header)
  udp-mM      corevia udp at MTU M, automatic segment (largest page multiple
  eth-mM      that fits, else all of the MTU); M in --mtus
              (eth-sS and eth-mM: CVIA_ETH_RING=yes, eth's PACKET_MMAP rings:
              frames written in place into a transmit ring and sent with one
              send() per batch, read in place from a receive ring)
  eth-sock-mM corevia eth at MTU M on its plain socket (CVIA_ETH_RING=no:
              sendmmsg/recvmmsg batches), the fallback, against the rings
  xdp-mM      corevia xdp at MTU M (AF_XDP socket, eth's frames; at most
              $XDP_ROOM bytes a frame, so the segment is min(MTU, $XDP_ROOM) - 40
              B; CVIA_XDP_FALLBACK=no: a run where AF_XDP is refused fails
              instead of measuring eth)
  tcp-mM      kernel TCP ping-pong (net_pingpong tcp), M in --mtus
  bare-udp-mM bare UDP ping-pong (net_pingpong udp, datagrams fill the MTU)
  bare-raw-mM bare AF_PACKET ping-pong (net_pingpong raw, EtherType 0x88B6)
  fi-tcp-mM   fi_pingpong -p tcp -e msg (libfabric-bin; latency only: it has
              no windowed bandwidth test, its ping-pong MB/s is kept)
  ucx-tcp-mM  ucx_perftest tag_lat / tag_bw with UCX_TLS=tcp (ucx-utils)
  The bare-*, fi and ucx series run at --peer-mtus only.

Placements (--placements): one-core: both ends on CPU 0 (taskset -c 0; the
stable measure of per-message software cost on this VM); two-cores: one end
per core (CPU 0 and CPU 1: what users get on real nodes, here at the mercy
of the host).

Time on a 2-vCPU VM: --quick about 2 minutes; 33 sizes x 3 rounds (1 KiB
steps up to 16 KiB, then 4 KiB) about 12 minutes; the full default (69 sizes,
3 rounds) about half an hour. Every command is bounded by --timeout.

Options (default in brackets):
  --quick            few sizes ($QUICK_SIZES), 1 round,
                     fewer iterations: a few minutes
  --repeat N         interleaved rounds; per-size medians across them [$REPEAT]
  --sizes LIST       comma-separated byte counts [32 B to 1 KiB by powers of
                     two, then 2 KiB to 64 KiB in 1 KiB steps]
  --segments LIST    corevia segment sizes, or none (standard MTUs only) [$SEGMENTS]
  --mtus LIST        standard MTUs, automatic segment, and TCP [$STD_MTUS]
  --peer-mtus LIST   MTUs for the bare-*, fi and ucx series [$PEER_MTUS]
  --peers LIST       subset of: $PEERS_ALL [all]
  --placements LIST  subset of: one-core,two-cores [both]
  --cut mvia|page|fill  CVIA_DGRAM_CUT of the udp-sS/eth-sS series: mvia cuts
                     messages at page boundaries first, as M-VIA; page fills
                     every segment; fill also sizes the automatic segment to
                     fill the MTU (the udp-mM/eth-mM series keep the
                     library's default, page) [$CUT]
  --rate RATE        tbf rate limit on the veth pair (netlab), e.g. 1gbit,
                     the paper's link [none]
  --lat-iters N      latency iterations per size (+10% warm-up) [300]
  --bw-iters N       bandwidth windows per size (+1 warm-up) [10; --quick 5]
  --window N         messages per bandwidth window [$WINDOW]
  --fi-iters N       fi_pingpong iterations per size [200; --quick 100]
  --slow-iters N     one-core placement: fi_pingpong and ucx_perftest
                     iterations per size, and only the sizes fi gets (powers
                     of two, multiples of 4 KiB): both busy-poll, and two
                     pollers sharing one core take turns on scheduler time
                     slices, milliseconds per message [$SLOW_ITERS]
  --timeout S        limit for any single command, seconds [120; --quick 60]
  --quiet-wait S     before a measurement, while others keep > 25% of the
                     CPUs busy, wait; S seconds in all [60; --quick 0]
  --build DIR        corevia build directory (cvia-run, cvia-bench,
                     peers/net_pingpong) [\$CVIA_BUILD or build]
  --loss LIST        instead of the figures: the lossy-link series. For each
                     loss rate in LIST (percent, up to two decimals, e.g.
                     0.1,1,10,30), nftables drops that share of the frames
                     arriving at h2 (the receiver) at random (netdev ingress,
                     numgen random: IP and raw frames alike; on veth a TCP or
                     UDP GSO burst is one frame), then bandwidth of udp and
                     eth (cvia-bench bw, automatic segment) and kernel TCP
                     (net_pingpong bw) under that loss, interleaved, each
                     round in another order, one size per run with as many
                     windows as move about 256 MiB at <= 1 % loss, 64 MiB
                     at <= 10 %, 8 MiB above (--bw-iters does not apply).
                     Defaults change with it: sizes 65536,1048576, --mtus
                     1500 (the first MTU is used), --placements two-cores,
                     --window 8.
                     Output: summary-loss.md (MB/s medians, per-round ratios
                     to TCP, the drop rate nftables counted, the targets:
                     >= 1.0x TCP at 1 %, >= 0.5x at 30 %), loss-runs.csv
                     (every run, its load average and frame counts),
                     raw/loss/
  --loss-base DIR    with --loss: also run udp and eth from the build in DIR
                     (udp-base, eth-base), interleaved: the no-regression
                     check of a change, e.g. at --loss 0
  --out DIR          output directory [$OUT]
  -h, --help         this text

Needs root (network namespaces, AF_PACKET), iproute2, python3; gnuplot for
the PNGs; libfabric-bin and ucx-utils for their series (skipped, said,
when missing: scripts/install-deps.sh peers).

Output in DIR: plan.txt (series, MTUs, segments, the path each corevia
series really used), machine.txt, offloads.txt (ethtool -k of the veth),
notes.txt, raw/ (every command's CSV and
output), all.csv (every measurement), series/PLACEMENT/SERIES.csv (per-size
medians: latency mean/p50/p99/min us, bandwidth MB/s (osu_bw, MB = 10^6 B),
ping-pong bandwidth = size / mean one-way latency, as the paper's figures 8
and 10), steal.csv, summary.txt (the targets), snippet.md, and
fig7..fig10-PLACEMENT.png. The lab (namespaces cvia-$TAG-h1/h2) is removed at
the end, also on failure or interrupt. Progress goes to stderr.
EOF
}

die_usage() { echo "repro-mvia: $*" >&2; echo "Try --help." >&2; exit 2; }
need_val() { [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a value"; }
is_list() { [[ $1 =~ ^[0-9]+(,[0-9]+)*$ ]]; }
is_pos() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ]; }

while [ $# -gt 0 ]; do
    case "$1" in
    -h|--help) usage; exit 0 ;;
    --quick) QUICK=1 ;;
    --repeat) need_val "$@"; is_pos "$2" || die_usage "--repeat: a positive integer"; REPEAT=$2; shift ;;
    --sizes) need_val "$@"; is_list "$2" || die_usage "--sizes: comma-separated byte counts"; SIZES=$2; SET_SIZES=1; shift ;;
    --segments) need_val "$@"; [ "$2" = none ] || is_list "$2" || die_usage "--segments: comma-separated byte counts, or none"
                SEGMENTS=$2; [ "$2" = none ] && SEGMENTS=""; shift ;;
    --mtus) need_val "$@"; is_list "$2" || die_usage "--mtus: comma-separated MTUs"; STD_MTUS=$2; SET_MTUS=1; shift ;;
    --peer-mtus) need_val "$@"; is_list "$2" || die_usage "--peer-mtus: comma-separated MTUs"; PEER_MTUS=$2; shift ;;
    --peers) need_val "$@"
             for p in ${2//,/ }; do
                 case ",$PEERS_ALL," in *",$p,"*) ;; *) die_usage "--peers: unknown '$p' (of $PEERS_ALL)" ;; esac
             done
             PEERS=$2; shift ;;
    --placements) need_val "$@"
                  for p in ${2//,/ }; do
                      case $p in one-core|two-cores) ;; *) die_usage "--placements: one-core or two-cores, not '$p'" ;; esac
                  done
                  PLACEMENTS=$2; SET_PLACE=1; shift ;;
    --cut) need_val "$@"; case $2 in mvia|page|fill) CUT=$2 ;; *) die_usage "--cut: mvia, page or fill" ;; esac; shift ;;
    --rate) need_val "$@"; [[ $2 =~ ^[0-9]+(\.[0-9]+)?[kmg]?bit$ ]] || die_usage "--rate: like 1gbit or 500mbit"; RATE=$2; shift ;;
    --lat-iters) need_val "$@"; is_pos "$2" || die_usage "--lat-iters: a positive integer"; LAT_ITERS=$2; shift ;;
    --bw-iters) need_val "$@"; is_pos "$2" || die_usage "--bw-iters: a positive integer"; BW_ITERS=$2; shift ;;
    --window) need_val "$@"; is_pos "$2" || die_usage "--window: a positive integer"; WINDOW=$2; SET_WINDOW=1; shift ;;
    --loss) need_val "$@"
            for p in ${2//,/ }; do
                [[ $p =~ ^[0-9]+(\.[0-9]{1,2})?$ ]] && awk -v p="$p" 'BEGIN { exit !(p <= 100) }' ||
                    die_usage "--loss: percentages 0..100 with up to two decimals, comma-separated, not '$p'"
            done
            LOSS=$2; shift ;;
    --loss-base) need_val "$@"; [ -d "$2" ] || die_usage "--loss-base: no directory '$2'"; LOSS_BASE=$2; shift ;;
    --fi-iters) need_val "$@"; is_pos "$2" || die_usage "--fi-iters: a positive integer"; FI_ITERS=$2; shift ;;
    --slow-iters) need_val "$@"; is_pos "$2" || die_usage "--slow-iters: a positive integer"; SLOW_ITERS=$2; shift ;;
    --timeout) need_val "$@"; is_pos "$2" || die_usage "--timeout: seconds"; TMO=$2; shift ;;
    --quiet-wait) need_val "$@"; [[ $2 =~ ^[0-9]+$ ]] || die_usage "--quiet-wait: seconds"; QUIET_WAIT=$2; shift ;;
    --build) need_val "$@"; BUILD=$2; shift ;;
    --out) need_val "$@"; OUT=$2; shift ;;
    *) die_usage "unknown argument '$1'" ;;
    esac
    shift
done
[ -z "$LOSS_BASE" ] || [ -n "$LOSS" ] || die_usage "--loss-base goes with --loss"
if [ -n "$LOSS" ]; then   # the lossy-link series' own defaults
    [ $SET_SIZES = 1 ] || SIZES=65536,1048576
    [ $SET_MTUS = 1 ] || STD_MTUS=1500
    [ $SET_PLACE = 1 ] || PLACEMENTS=two-cores
    [ $SET_WINDOW = 1 ] || WINDOW=8
fi
if [ "$QUICK" = 1 ]; then
    SIZES=${SIZES:-$QUICK_SIZES}
    REPEAT=1
    BW_ITERS=${BW_ITERS:-5} FI_ITERS=${FI_ITERS:-100}
    TMO=${TMO:-60} QUIET_WAIT=${QUIET_WAIT:-0}
fi
SIZES=${SIZES:-$FULL_SIZES}
LAT_ITERS=${LAT_ITERS:-300} BW_ITERS=${BW_ITERS:-10} FI_ITERS=${FI_ITERS:-200}
TMO=${TMO:-120} QUIET_WAIT=${QUIET_WAIT:-60}
LAT_WARM=$(( LAT_ITERS / 10 > 0 ? LAT_ITERS / 10 : 1 ))
BW_WARM=1
SIZES=$(printf '%s\n' ${SIZES//,/ } | sort -n -u | paste -sd, -)
for s in ${SIZES//,/ }; do [ "$s" -ge 1 ] && [ "$s" -le 67108864 ] || die_usage "--sizes: $s is out of 1..64m"; done
# fi_pingpong starts a process pair per size: give it the powers of two and
# the multiples of 4 KiB of the list only (the paper's figure 9 steps by 4 KiB)
FI_SIZES=$(for s in ${SIZES//,/ }; do
    if [ $((s & (s - 1))) -eq 0 ] || [ $((s % 4096)) -eq 0 ]; then echo "$s"; fi; done | paste -sd, -)
has_peer() { case ",$PEERS," in *",$1,"*) return 0 ;; esac; return 1; }
has_place() { case ",$PLACEMENTS," in *",$1,"*) return 0 ;; esac; return 1; }

log() { echo "repro-mvia: $*" >&2; }
note() { log "$*"; echo "$*" >>"$OUT/notes.txt"; }
fatal() { echo "repro-mvia: $*" >&2; exit 1; }

# ---- what can run ------------------------------------------------------------
[ "$(id -u)" = 0 ] || fatal "needs root (network namespaces, AF_PACKET)"
command -v ip >/dev/null || fatal "needs iproute2 (ip): scripts/install-deps.sh"
PY=${PYTHON:-$(command -v python3 || true)}
[ -n "$PY" ] || fatal "needs python3 for the medians"
NETLAB=$top/scripts/netlab.sh
RUN=$BUILD/cvia-run BENCH=$BUILD/cvia-bench NPP=$BUILD/peers/net_pingpong
for b in "$RUN" "$BENCH" "$NPP"; do
    [ -x "$b" ] || fatal "$b not found: build first (cmake -S . -B $BUILD -DCMAKE_BUILD_TYPE=Release && cmake --build $BUILD), or give --build DIR"
done
RUN=$(cd "$(dirname "$RUN")" && pwd)/cvia-run
BENCH=$(cd "$(dirname "$BENCH")" && pwd)/cvia-bench
NPP=$(cd "$(dirname "$NPP")" && pwd)/net_pingpong

mkdir -p "$OUT/raw" || exit 1
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT"/raw/* "$OUT"/series "$OUT"/{notes.txt,offloads.txt,steal.csv,all.csv,plan.txt,summary.txt,snippet.md,machine.txt} \
       "$OUT"/{summary-loss.md,loss-runs.csv,plan-loss.txt} \
       "$OUT"/fig*.png "$OUT"/plot.gp "$OUT"/plotdata
: >"$OUT/notes.txt"

if has_peer fi && ! command -v fi_pingpong >/dev/null; then
    PEERS=$(echo ",$PEERS," | sed 's/,fi,/,/; s/^,//; s/,$//'); note "skipping fi: fi_pingpong not found (Debian: libfabric-bin; scripts/install-deps.sh peers)"
fi
if has_peer ucx && ! command -v ucx_perftest >/dev/null; then
    PEERS=$(echo ",$PEERS," | sed 's/,ucx,/,/; s/^,//; s/,$//'); note "skipping ucx: ucx_perftest not found (Debian: ucx-utils; scripts/install-deps.sh peers)"
fi
HAVE_GNUPLOT=1
command -v gnuplot >/dev/null || { HAVE_GNUPLOT=0; note "no gnuplot: CSV only, no PNGs (Debian: gnuplot-nox)"; }

# ---- the series ----------------------------------------------------------------
# name|kind|transport|mtu|segment ("auto" or bytes)
auto_seg() {  # transport mtu -> the segment corevia picks (dg_size in dgram_prov.c)
    local room fit
    if [ "$1" = udp ]; then room=$(($2 - IPUDP_HDR)); else room=$2; fi   # eth, eth-sock
    if [ "$1" = xdp ] && [ "$room" -gt $XDP_ROOM ]; then room=$XDP_ROOM; fi
    fit=$((room - CVIA_HDR)); [ $fit -gt 65000 ] && fit=65000
    if [ $fit -ge $PAGE ]; then echo $((fit / PAGE * PAGE)); else echo $fit; fi
}
SERIES=()
for tr in udp eth; do
    has_peer $tr || continue
    for s in ${SEGMENTS//,/ }; do
        if [ $tr = udp ]; then m=$((s + CVIA_HDR + IPUDP_HDR)); else m=$((s + CVIA_HDR)); fi
        SERIES+=("$tr-s$s|cvia|$tr|$m|$s")
    done
    for m in ${STD_MTUS//,/ }; do SERIES+=("$tr-m$m|cvia|$tr|$m|auto"); done
done
if has_peer eth-sock; then for m in ${STD_MTUS//,/ }; do SERIES+=("eth-sock-m$m|cvia|eth-sock|$m|auto"); done; fi
if has_peer xdp; then for m in ${STD_MTUS//,/ }; do SERIES+=("xdp-m$m|cvia|xdp|$m|auto"); done; fi
if has_peer tcp; then for m in ${STD_MTUS//,/ }; do SERIES+=("tcp-m$m|npp|tcp|$m|-"); done; fi
for m in ${PEER_MTUS//,/ }; do
    has_peer bare-udp && SERIES+=("bare-udp-m$m|npp|udp|$m|-")
    has_peer bare-raw && SERIES+=("bare-raw-m$m|npp|raw|$m|-")
    has_peer fi && SERIES+=("fi-tcp-m$m|fi|tcp|$m|-")
    has_peer ucx && SERIES+=("ucx-tcp-m$m|ucx|tcp|$m|-")
done
[ ${#SERIES[@]} -gt 0 ] || fatal "no series to run"
MTUS=$(for s in "${SERIES[@]}"; do IFS='|' read -r _ _ _ m _ <<<"$s"; echo "$m"; done | sort -n -u | paste -sd' ' -)
for m in $MTUS; do [ "$m" -ge 576 ] && [ "$m" -le 65535 ] || fatal "MTU $m is out of 576..65535 (check --segments/--mtus)"; done

{
    echo "# repro-mvia plan: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# corevia dgram header $CVIA_HDR B; IPv4+UDP $IPUDP_HDR B; CVIA_DGRAM_CUT=$CUT"
    echo "# eth: MTU = segment + $CVIA_HDR; udp: MTU = segment + $CVIA_HDR + $IPUDP_HDR"
    printf '%-16s %-5s %-4s %6s  %s\n' series kind tr mtu segment
    for s in "${SERIES[@]}"; do
        IFS='|' read -r n k t m g <<<"$s"
        case $k in
        cvia) if [ "$g" = auto ]; then d="auto (expect $(auto_seg "$t" "$m") B)"
              else d="$g B = MTU $m - $CVIA_HDR$([ "$t" = udp ] && echo " - $IPUDP_HDR")"; fi ;;
        *) d="-" ;;
        esac
        printf '%-16s %-5s %-4s %6s  %s\n' "$n" "$k" "$t" "$m" "$d"
    done
} >"$OUT/plan.txt"
log "plan ($OUT/plan.txt):"
sed 's/^/  /' "$OUT/plan.txt" >&2

# ---- the lab -------------------------------------------------------------------
H1=cvia-$TAG-h1 H2=cvia-$TAG-h2
IF1=v2-1 IF2=v1-1            # netlab pairs: in h1 the link to h2, in h2 the link to h1
BGPIDS=()
cleanup() {
    local p
    for p in "${BGPIDS[@]}"; do kill "$p" 2>/dev/null; done
    bash "$NETLAB" down --tag "$TAG" >/dev/null 2>&1
    rm -f "$WRAP"
}
WRAP=$(mktemp "${TMPDIR:-/tmp}/repro-mvia-wrap.XXXXXX") || exit 1
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP
# two-cores placement under cvia-run: rank r on CPU r
printf '#!/bin/sh\nexec taskset -c "$CVIA_RANK" "$@"\n' >"$WRAP"
chmod +x "$WRAP"

CUR_MTU=""
lab_mtu() {
    [ "$CUR_MTU" = "$1" ] && return 0
    local rate=()
    [ -n "$RATE" ] && rate=(--rate "$RATE")
    bash "$NETLAB" up --tag "$TAG" --hosts 2 --mtu "$1" "${rate[@]}" >"$OUT/raw/netlab.log" 2>&1 ||
        { cat "$OUT/raw/netlab.log" >&2; fatal "netlab up --mtu $1 failed"; }
    ADDR2=$(bash "$NETLAB" addr --tag "$TAG" h2 h1)
    MAC2=$(ip -n "$H2" -o link show dev "$IF2" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
    [ -n "$ADDR2" ] && [ -n "$MAC2" ] || fatal "lab: no address or MAC for h2"
    if [ ! -s "$OUT/offloads.txt" ] && command -v ethtool >/dev/null; then
        # what the kernel may batch on this veth: TCP segments of up to 64 KiB
        # cross it whole (TSO/GSO/GRO), the datagram providers' do not
        ip netns exec "$H1" ethtool -k "$IF1" 2>/dev/null |
            grep -E 'segmentation-offload|receive-offload|tx-udp|scatter-gather:|tx-checksumming:' >"$OUT/offloads.txt"
    fi
    CUR_MTU=$1
}

# ---- running one series ----------------------------------------------------------
PORT=$((40000 + $$ % 10000))
next_port() { PORT=$((PORT + 1)); [ $PORT -lt 60000 ] || PORT=40001; }
wait_listen() {  # ns proto(t|u) port: until something listens (5 s at most)
    local i
    for i in $(seq 250); do
        ip netns exec "$1" ss -ln"$2" 2>/dev/null | grep -q ":$3 " && return 0
        sleep 0.02
    done
    return 1
}
cpus() {  # placement -> "client_cpu server_cpu"
    if [ "$1" = one-core ]; then echo "0 0"; else echo "0 1"; fi
}

# cvia: series placement bench csv log
run_cvia() {
    local tr=$2 seg=$3 pl=$4 bench=$5 csv=$6 logf=$7 it wu env=() pin=() wrap=()
    if [ "$bench" = latency ]; then it=$LAT_ITERS wu=$LAT_WARM; else it=$BW_ITERS wu=$BW_WARM; fi
    case $tr in
    eth) env=(CVIA_NET=eth CVIA_ETH_RING=yes) ;;
    eth-sock) env=(CVIA_NET=eth CVIA_ETH_RING=no) ;;
    xdp) env=(CVIA_NET=xdp CVIA_XDP_FALLBACK=no) ;;
    *) env=(CVIA_NET="$tr") ;;
    esac
    # the paper's segment series are cut as --cut says (M-VIA by default);
    # the standard-MTU series run with the library's defaults, as users do
    [ "$seg" = auto ] || env+=(CVIA_DGRAM_SEGMENT="$seg" CVIA_DGRAM_CUT="$CUT")
    if [ "$pl" = one-core ]; then pin=(taskset -c 0); else wrap=("$WRAP"); fi
    env "${env[@]}" timeout $((TMO + 5)) "${pin[@]}" "$RUN" -n 2 --hosts "$H1,$H2" --bind none \
        --timeout "${TMO}s" "${wrap[@]}" "$BENCH" "$bench" --sizes "$SIZES" --iters "$it" --warmup "$wu" \
        --window "$WINDOW" --output "$csv" --quiet >"$logf" 2>&1
}

# net_pingpong: transport placement bench csv log
run_npp() {
    local tr=$1 pl=$2 bench=$3 csv=$4 logf=$5 c s it wu addr spid rc
    read -r c s < <(cpus "$pl")
    if [ "$bench" = latency ]; then it=$LAT_ITERS wu=$LAT_WARM; else it=$BW_ITERS wu=$BW_WARM; fi
    if [ "$tr" = raw ]; then addr=$MAC2; else addr=$ADDR2; fi
    next_port
    timeout "$TMO" ip netns exec "$H2" taskset -c "$s" "$NPP" --server -t "$tr" -p "$PORT" \
        --timeout 20 >"$logf.server" 2>&1 &
    spid=$!; BGPIDS+=("$spid")
    timeout "$TMO" ip netns exec "$H1" taskset -c "$c" "$NPP" --client "$addr" -t "$tr" -p "$PORT" \
        --bench "$bench" --sizes "$SIZES" --iters "$it" --warmup "$wu" --window "$WINDOW" \
        --timeout 20 >"$csv" 2>"$logf"
    rc=$?
    [ $rc -eq 0 ] || kill "$spid" 2>/dev/null
    if ! wait "$spid" 2>/dev/null && [ $rc -eq 0 ]; then
        rc=1; echo "the server failed: $(tail -n 2 "$logf.server")" >>"$logf"
    fi
    return $rc
}

# fi_pingpong prints sizes as 32, 4k, 1m
fi_size() {
    if [ "$1" -ge 1048576 ] && [ $(($1 % 1048576)) -eq 0 ]; then echo "$(($1 / 1048576))m"
    elif [ "$1" -ge 1024 ]; then echo "$(($1 / 1024))k"; else echo "$1"; fi
}
# fi_pingpong, latency only: one server/client pair per size (FI_SIZES)
run_fi() {
    local pl=$1 csv=$2 logf=$3 c s size spid line try it=$FI_ITERS sizes=$FI_SIZES
    read -r c s < <(cpus "$pl")
    [ "$pl" = one-core ] && it=$SLOW_ITERS
    echo "benchmark,size_bytes,iterations,latency_us,latency_p50_us,latency_p99_us,latency_min_us,bandwidth_mb_s,msg_rate_per_s,pingpong_mb_s" >"$csv"
    : >"$logf"
    for size in ${sizes//,/ }; do
        for try in 1 2; do        # its connection set-up sometimes fails: once more
            next_port
            timeout "$TMO" ip netns exec "$H2" taskset -c "$s" fi_pingpong -p tcp -e msg -I "$it" \
                -S "$size" -B "$PORT" >>"$logf.server" 2>&1 &
            spid=$!; BGPIDS+=("$spid")
            wait_listen "$H2" t "$PORT"
            line=$(timeout "$TMO" ip netns exec "$H1" taskset -c "$c" fi_pingpong -p tcp -e msg \
                   -I "$it" -S "$size" -P "$PORT" "$ADDR2" 2>>"$logf" | tee -a "$logf" |
                   awk -v s="$(fi_size "$size")" '$1 == s && NF >= 7 { print }' | tail -1)
            [ -n "$line" ] || kill "$spid" 2>/dev/null
            wait "$spid" 2>/dev/null
            [ -n "$line" ] && break
        done
        [ -n "$line" ] || { echo "fi_pingpong failed at $size B (twice)" >>"$logf"; return 1; }
        # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec: usec/xfer is the
        # mean one-way time (time / (2 x iterations)); MB/sec its ping-pong rate
        echo "$line" | awk -v s="$size" -v it="$it" \
            '{ printf "latency,%s,%s,%s,,,,,,%s\n", s, it, $7, $6 }' >>"$csv"
    done
    return 0
}

# ucx_perftest: one server/client pair, every size from a batch file
run_ucx() {
    local pl=$1 bench=$2 csv=$3 logf=$4 c s size spid rc batch=$3.batch
    local sizes=$SIZES li=$LAT_ITERS lw=$LAT_WARM bi=$BW_ITERS
    read -r c s < <(cpus "$pl")
    if [ "$pl" = one-core ]; then   # it busy-polls: see SLOW_ITERS
        sizes=$FI_SIZES li=$SLOW_ITERS lw=2 bi=$(( BW_ITERS < 2 ? BW_ITERS : 2 ))
    fi
    : >"$batch"
    for size in ${sizes//,/ }; do
        if [ "$bench" = latency ]; then
            echo "lat_$size -t tag_lat -s $size -n $li -w $lw" >>"$batch"
        else
            echo "bw_$size -t tag_bw -s $size -n $((bi * WINDOW)) -w $((BW_WARM * WINDOW)) -O $WINDOW" >>"$batch"
        fi
    done
    next_port
    timeout "$TMO" ip netns exec "$H2" env UCX_TLS=tcp UCX_NET_DEVICES="$IF2" taskset -c "$s" \
        ucx_perftest -p "$PORT" -b "$batch" >"$logf.server" 2>&1 &
    spid=$!; BGPIDS+=("$spid")
    wait_listen "$H2" t "$PORT"
    timeout "$TMO" ip netns exec "$H1" env UCX_TLS=tcp UCX_NET_DEVICES="$IF1" taskset -c "$c" \
        ucx_perftest "$ADDR2" -p "$PORT" -b "$batch" -f -v >"$logf" 2>&1
    rc=$?
    [ $rc -eq 0 ] || kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    # label,iterations,p50,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr;
    # latencies are one-way (half round trip) us; "MB/s" is MiB/s
    {
        echo "benchmark,size_bytes,iterations,latency_us,latency_p50_us,latency_p99_us,latency_min_us,bandwidth_mb_s,msg_rate_per_s"
        tr -d ' ' <"$logf" | awk -F, '
            $1 ~ /^lat_[0-9]+$/ { printf "latency,%s,%s,%s,%s,,,,\n", substr($1, 5), $2, $5, $3 }
            $1 ~ /^bw_[0-9]+$/  { printf "bw,%s,%s,,,,,%.3f,%s\n", substr($1, 4), $2, $7 * 1048576 / 1e6, $9 }'
    } >"$csv"
    [ $rc -eq 0 ] && grep -q '^[a-z]*,[0-9]' "$csv"
}

# /proc/stat: total ticks, idle ticks, steal ticks
. "$top/scripts/lib/cpu-load.sh"   # cpu_stat, busy_pct, session_summary
quiet_left=$QUIET_WAIT
BUSY=0
wait_quiet() {
    [ "$QUIET_WAIT" -gt 0 ] || { BUSY=-1; return; }
    BUSY=$(busy_pct 0.2)
    while [ "$BUSY" -gt 25 ] && [ "$quiet_left" -gt 0 ]; do
        sleep 1; quiet_left=$((quiet_left - 1)); BUSY=$(busy_pct 0.2)
    done
}

# ---- the machine ----------------------------------------------------------------
{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host=$(hostname)"
    echo "cpu_model=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
    echo "cpus=$(nproc --all)"
    echo "hypervisor=$(lscpu | sed -n 's/^Hypervisor vendor:[[:space:]]*//p')"
    echo "kernel=$(uname -r)"
    echo "os=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
    echo "corevia=git $(git describe --always --dirty 2>/dev/null || echo none)"
    echo "libfabric=$(fi_info --version 2>/dev/null | sed -n 's/^libfabric: *//p' | head -1)"
    echo "ucx=$(ucx_info -v 2>/dev/null | sed -n 's/^# Version /UCX /p' | head -1)"
    echo "repeat=$REPEAT"
    echo "quick=$QUICK"
    echo "sizes=$SIZES"
    echo "fi_sizes=$FI_SIZES"
    echo "lat_iters=$LAT_ITERS"
    echo "lat_warmup=$LAT_WARM"
    echo "bw_iters=$BW_ITERS"
    echo "window=$WINDOW"
    echo "fi_iters=$FI_ITERS"
    echo "slow_iters=$SLOW_ITERS"
    echo "cut=$CUT"
    echo "rate=${RATE:-none}"
    echo "placements=$PLACEMENTS"
    echo "peers=$PEERS"
} >"$OUT/machine.txt"

# ---- the lossy-link series (--loss) instead of the figures -----------------------
if [ -n "$LOSS" ]; then
    . "$top/scripts/lib/repro-loss.sh"
    echo "loss=$LOSS" >>"$OUT/machine.txt"
    echo "loss_base=${LOSS_BASE:-none}" >>"$OUT/machine.txt"
    start_all=$(date +%s)
    read -r t_all x s_all < <(cpu_stat)
    run_loss_series
    session_summary "$start_all" "$t_all" "$s_all" >>"$OUT/machine.txt"
    bash "$NETLAB" down --tag "$TAG" >/dev/null 2>&1
    log "done in $(( $(date +%s) - start_all )) s: $OUT/summary-loss.md"
    exit 0
fi

# ---- measure ---------------------------------------------------------------------
declare -A FAILS
echo "round,placement,series,benchmark,seconds,steal_pct,busy_before_pct,ok" >"$OUT/steal.csv"
read -r -a PLIST <<<"${PLACEMENTS//,/ }"
read -r -a MLIST <<<"$MTUS"
nm=${#MLIST[@]} np=${#PLIST[@]}
total=$((REPEAT * np * ${#SERIES[@]})) done_n=0
start_all=$(date +%s)
read -r t_all x s_all < <(cpu_stat)
log "$total series runs: ${#SERIES[@]} series x $np placements x $REPEAT rounds; sizes: $(echo "$SIZES" | tr ',' '\n' | wc -l)"

for round in $(seq 1 "$REPEAT"); do
    for pi in $(seq 0 $((np - 1))); do
        pl=${PLIST[$(( (pi + round - 1) % np ))]}
        for mi in $(seq 0 $((nm - 1))); do
            mtu=${MLIST[$(( (mi + round - 1) % nm ))]}
            here=()
            for s in "${SERIES[@]}"; do IFS='|' read -r _ _ _ m _ <<<"$s"; [ "$m" = "$mtu" ] && here+=("$s"); done
            [ ${#here[@]} -gt 0 ] || continue
            lab_mtu "$mtu"
            nh=${#here[@]}
            for hi in $(seq 0 $((nh - 1))); do
                IFS='|' read -r name kind tr m seg <<<"${here[$(( (hi + round - 1) % nh ))]}"
                [ "${FAILS[$name]:-0}" -ge 2 ] && continue
                done_n=$((done_n + 1))
                log "round $round/$REPEAT, $pl, MTU $mtu: $name ($done_n/$total, $(( $(date +%s) - start_all )) s)"
                benches="latency bw"
                [ "$kind" = fi ] && benches=latency
                for bench in $benches; do
                    f="$OUT/raw/r$round-$pl-$name-$bench"
                    wait_quiet
                    read -r t0 x s0 < <(cpu_stat)
                    w0=$(date +%s.%N)
                    case $kind in
                    cvia) run_cvia "$name" "$tr" "$seg" "$pl" "$bench" "$f.csv" "$f.log" ;;
                    npp)  run_npp "$tr" "$pl" "$bench" "$f.csv" "$f.log" ;;
                    fi)   run_fi "$pl" "$f.csv" "$f.log" ;;
                    ucx)  run_ucx "$pl" "$bench" "$f.csv" "$f.log" ;;
                    esac
                    rc=$?
                    ok=1
                    if [ $rc -ne 0 ] || ! grep -qE '^(latency|bw),[0-9]+,' "$f.csv" 2>/dev/null; then
                        ok=0
                        FAILS[$name]=$(( ${FAILS[$name]:-0} + 1 ))
                        note "$name ($pl, round $round, $bench) failed: exit $rc$([ $rc = 124 ] && echo ' (timed out)'); see raw/$(basename "$f").log; last lines: $(tail -n 3 "$f.log" 2>/dev/null | tr '\n' ' ' | cut -c1-300)"
                        [ "${FAILS[$name]}" -ge 2 ] && note "$name: failed twice, not run again"
                    fi
                    read -r t1 x s1 < <(cpu_stat)
                    awk -v r="$round" -v p="$pl" -v n="$name" -v b="$bench" -v w0="$w0" -v w1="$(date +%s.%N)" \
                        -v dt=$((t1 - t0)) -v ds=$((s1 - s0)) -v busy="$BUSY" -v ok=$ok \
                        'BEGIN { printf "%s,%s,%s,%s,%.2f,%.1f,%s,%s\n", r, p, n, b, w1 - w0, dt ? 100 * ds / dt : 0, busy, ok }' \
                        >>"$OUT/steal.csv"
                    [ $ok = 1 ] || break
                done
            done
        done
    done
done
session_summary "$start_all" "$t_all" "$s_all" >>"$OUT/machine.txt"
bash "$NETLAB" down --tag "$TAG" >/dev/null 2>&1
log "measured in $(( $(date +%s) - start_all )) s; summarizing"

# ---- medians, per-series CSV, targets, plots -----------------------------------------
SERIES_SPEC=$(printf '%s\n' "${SERIES[@]}")
"$PY" - "$OUT" "$SERIES_SPEC" "$HAVE_GNUPLOT" <<'PYEOF' || fatal "summary failed"
import csv, glob, os, re, statistics, sys

out, spec, have_gp = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
machine = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out, "machine.txt")) if "=" in l)
series = []
info = {}
for line in spec.splitlines():
    n, k, t, m, g = line.split("|")
    series.append(n)
    info[n] = {"kind": k, "transport": t, "mtu": int(m), "segment": g}
COLS = ["latency_us", "latency_p50_us", "latency_p99_us", "latency_min_us", "bandwidth_mb_s", "msg_rate_per_s"]

rows = []
paths = {}
for path in sorted(glob.glob(os.path.join(out, "raw", "r*.csv"))):
    m = re.match(r"r(\d+)-(one-core|two-cores)-(.+)-(latency|bw)\.csv$", os.path.basename(path))
    if not m or m.group(3) not in info:
        continue
    rnd, pl, name, bench = int(m.group(1)), m.group(2), m.group(3), m.group(4)
    lines = [l for l in open(path) if l.strip() and not l.startswith("#")]
    for r in csv.DictReader(lines):
        if r.get("benchmark") != bench:
            continue
        try:
            size = int(r["size_bytes"])
        except (KeyError, ValueError):
            continue
        rec = {"round": rnd, "placement": pl, "series": name, "benchmark": bench, "size": size}
        for c in COLS + ["pingpong_mb_s"]:
            try:
                rec[c] = float(r.get(c) or "nan")
            except ValueError:
                rec[c] = float("nan")
        rows.append(rec)
    logf = path[:-4] + ".log"
    if info[name]["kind"] == "cvia" and os.path.exists(logf):
        for l in open(logf, errors="replace"):
            mm = re.match(r"# path \(rank 0 to 1\): (.*)", l)
            if mm:
                paths.setdefault(name, mm.group(1).strip())
if not rows:
    sys.exit("repro-mvia: no results at all (see notes.txt and raw/)")

def med(v):
    v = [x for x in v if x == x]
    return statistics.median(v) if v else None

with open(os.path.join(out, "all.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["round", "placement", "series", "kind", "transport", "mtu", "segment", "benchmark", "size_bytes"] + COLS)
    for r in sorted(rows, key=lambda r: (r["placement"], r["series"], r["benchmark"], r["size"], r["round"])):
        i = info[r["series"]]
        w.writerow([r["round"], r["placement"], r["series"], i["kind"], i["transport"], i["mtu"], i["segment"],
                    r["benchmark"], r["size"]] + ["" if r[c] != r[c] else "%.4f" % r[c] for c in COLS])

placements = [p for p in ("one-core", "two-cores") if any(r["placement"] == p for r in rows)]
S = {}    # (pl, series, size) -> dict of medians
runs = {}
for pl in placements:
    for n in series:
        sel = [r for r in rows if r["placement"] == pl and r["series"] == n]
        for size in sorted({r["size"] for r in sel}):
            lat = [r for r in sel if r["size"] == size and r["benchmark"] == "latency"]
            bw = [r for r in sel if r["size"] == size and r["benchmark"] == "bw"]
            d = {c: med([r[c] for r in lat]) for c in COLS[:4]}
            d["bandwidth_mb_s"] = med([r["bandwidth_mb_s"] for r in bw])
            d["msg_rate_per_s"] = med([r["msg_rate_per_s"] for r in bw])
            # the paper's figures 8 and 10: bytes / one-way latency
            d["pingpong_mb_s"] = (size / d["latency_us"]) if d["latency_us"] else None
            d["runs_latency"], d["runs_bw"] = len(lat), len(bw)
            S[(pl, n, size)] = d
            runs[(pl, n)] = max(runs.get((pl, n), 0), len(lat), len(bw))

OCOLS = ["latency_us", "latency_p50_us", "latency_p99_us", "latency_min_us", "bandwidth_mb_s", "msg_rate_per_s",
         "pingpong_mb_s", "runs_latency", "runs_bw"]
for (pl, n) in runs:
    d = os.path.join(out, "series", pl)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, n + ".csv"), "w", newline="") as f:
        w = csv.writer(f)
        i = info[n]
        f.write("# %s, %s: %s over %s, MTU %d, segment %s%s; medians of interleaved rounds\n" % (
            n, pl, i["kind"], i["transport"], i["mtu"], i["segment"],
            ("; path: " + paths[n]) if n in paths else ""))
        w.writerow(["size_bytes"] + OCOLS)
        for size in sorted(s for (p, nn, s) in S if p == pl and nn == n):
            v = S[(pl, n, size)]
            w.writerow([size] + ["" if v[c] is None else ("%d" % v[c] if c.startswith("runs") else "%.4f" % v[c])
                                 for c in OCOLS])

def get(pl, n, size, c):
    v = S.get((pl, n, size))
    return v.get(c) if v else None

# paired: the ratio in each round (same minutes), then their median
per_round = {(r["placement"], r["series"], r["benchmark"], r["size"], r["round"]): r for r in rows}
def paired(pl, a, b, bench, size, c):
    v = []
    for rnd in sorted({r["round"] for r in rows}):
        x, y = per_round.get((pl, a, bench, size, rnd)), per_round.get((pl, b, bench, size, rnd))
        if x and y and x[c] == x[c] and y[c] == y[c] and y[c]:
            v.append(x[c] / y[c])
    return (statistics.median(v), len(v)) if v else (None, 0)

L = []
def say(s=""):
    L.append(s)

std = sorted({info[n]["mtu"] for n in series if n.startswith("tcp-m")})
segs = sorted({int(info[n]["segment"]) for n in series if re.match(r"(udp|eth)-s\d+$", n)})
verdicts = []
say("Targets (issue 17: 32 B eth <= 0.6, xdp <= 0.5, udp <= 0.85 x TCP; 64 KiB eth and xdp >= 1.2, udp >= 1.3 x TCP), medians of %s interleaved round(s); ratios of medians, [paired: median of per-round ratios]" % machine.get("repeat"))
for pl in placements:
    say("")
    say("== placement %s (%s)" % (pl, "both ends on CPU 0" if pl == "one-core" else "one end per core: CPU 0 and CPU 1"))
    # 1. 32 B p50 one-way latency vs kernel TCP, same MTU
    for tr, lim in (("udp", 0.85), ("eth", 0.6), ("eth-sock", 0.6), ("xdp", 0.5)):
        for m in std:
            a, b = "%s-m%d" % (tr, m), "tcp-m%d" % m
            x, y = get(pl, a, 32, "latency_p50_us"), get(pl, b, 32, "latency_p50_us")
            if x is None or y is None:
                continue
            pr, k = paired(pl, a, b, "latency", 32, "latency_p50_us")
            ok = x / y <= lim
            verdicts.append((pl, "32 B p50 %s/TCP <= %.2f (MTU %d)" % (tr, lim, m), ok))
            say("32 B p50 one-way, MTU %d: %s %.2f us, TCP %.2f us: %s/TCP = %.2f [paired %s] (target <= %.2f) -> %s" % (
                m, tr, x, y, tr, x / y, "%.2f" % pr if pr else "-", lim, "met" if ok else "NOT met"))
    for peer in [n for n in series if re.match(r"(bare-udp|bare-raw|fi-tcp|ucx-tcp)-m\d+$", n)]:
        m = info[peer]["mtu"]
        x, y = get(pl, peer, 32, "latency_p50_us"), get(pl, "tcp-m%d" % m, 32, "latency_p50_us")
        xm = get(pl, peer, 32, "latency_us")
        if y is None or (x is None and xm is None):
            continue
        if x is not None:
            say("  (peer) 32 B p50 one-way, MTU %d: %s %.2f us: %s/TCP = %.2f" % (m, peer, x, peer, x / y))
        else:
            ym = get(pl, "tcp-m%d" % m, 32, "latency_us")
            say("  (peer) 32 B mean one-way, MTU %d: %s %.2f us (no p50 reported): %s/TCP mean = %.2f" % (
                m, peer, xm, peer, xm / ym if ym else float("nan")))
    # 2. 64 KiB bandwidth vs TCP, same MTU
    big = 65536
    for tr, lim in (("udp", 1.3), ("eth", 1.2), ("eth-sock", 1.2), ("xdp", 1.2)):
        for m in std:
            a, b = "%s-m%d" % (tr, m), "tcp-m%d" % m
            x, y = get(pl, a, big, "bandwidth_mb_s"), get(pl, b, big, "bandwidth_mb_s")
            if x is None or y is None:
                continue
            pr, k = paired(pl, a, b, "bw", big, "bandwidth_mb_s")
            ok = x >= lim * y
            verdicts.append((pl, "64 KiB bw %s >= %.1f x TCP (MTU %d)" % (tr, lim, m), ok))
            xp, yp = get(pl, a, big, "pingpong_mb_s"), get(pl, b, big, "pingpong_mb_s")
            say("64 KiB bandwidth, MTU %d: %s %.0f MB/s, TCP %.0f MB/s: %s/TCP = %.2f [paired %s] (target >= %.1f) -> %s; ping-pong bw %s/TCP = %s" % (
                m, tr, x, y, tr, x / y, "%.2f" % pr if pr else "-", lim, "met" if ok else "NOT met", tr,
                "%.2f" % (xp / yp) if xp and yp else "-"))
        # the segment series against TCP at the paper's 1500
        for s in segs:
            a = "%s-s%d" % (tr, s)
            x, y = get(pl, a, big, "bandwidth_mb_s"), get(pl, "tcp-m1500", big, "bandwidth_mb_s")
            if x is not None and y is not None:
                say("  64 KiB bandwidth %s (MTU %d): %.0f MB/s = %.2f x TCP at MTU 1500" % (a, info[a]["mtu"], x, x / y))
    # 3. page-sized segments beat 1472 at every size from 8 KiB up
    for tr in ("udp", "eth"):
        base = "%s-s1472" % tr
        cands = ["%s-s%d" % (tr, s) for s in segs if s != 1472 and "%s-s%d" % (tr, s) in info]
        # the automatic segment at a jumbo MTU is two pages (8192)
        cands += ["%s-m%d" % (tr, m) for m in std if "%s-m%d" % (tr, m) in info and m >= 8192 + 68]
        for c in cands:
            sizes = sorted(s for (p, n, s) in S if p == pl and n == c and s >= 8192 and (p, base, s) in S)
            if not sizes:
                continue
            for metric, lower, lab in (("latency_p50_us", True, "p50 latency"), ("bandwidth_mb_s", False, "bandwidth")):
                wins, total, worst = 0, 0, None
                for s in sizes:
                    x, y = get(pl, c, s, metric), get(pl, base, s, metric)
                    if x is None or y is None:
                        continue
                    total += 1
                    r = (y / x) if lower else (x / y)    # > 1: c better
                    if r > 1:
                        wins += 1
                    if worst is None or r < worst[0]:
                        worst = (r, s)
                if not total:
                    continue
                ok = wins == total
                if c.endswith(("-s4096", "-s8192")) or c.endswith("-m9000"):
                    verdicts.append((pl, "%s beats %s at every size >= 8 KiB (%s)" % (c, base, lab), ok))
                say("%s vs %s, %s, sizes >= 8 KiB: better at %d of %d%s -> %s" % (
                    c, base, lab, wins, total,
                    "; worst %.2f x at %d B" % worst if worst else "", "met" if ok else "NOT met"))

say("")
met = sum(1 for v in verdicts if v[2])
say("Verdict: %d of %d target checks met." % (met, len(verdicts)))
for pl, what, ok in verdicts:
    if not ok:
        say("  NOT met (%s): %s" % (pl, what))
if paths:
    say("")
    say("What each corevia series used (cvia-bench '# path', rank 0 to 1):")
    for n in series:
        if n in paths:
            say("  %-12s %s" % (n, paths[n]))
spath = os.path.join(out, "steal.csv")
st = list(csv.DictReader(open(spath))) if os.path.exists(spath) else []
if st:
    busy = [r for r in st if int(r.get("busy_before_pct") or 0) > 25]
    say("")
    say("Machine: %s; %d measurements, steal %.1f%% on average (max %.1f%%)%s" % (
        machine.get("cpu_model", "?"), len(st), statistics.mean(float(r["steal_pct"]) for r in st),
        max(float(r["steal_pct"]) for r in st),
        "; %d started while others kept > 25%% of the CPUs busy (the --quiet-wait budget ran out): noisy" % len(busy)
        if busy else ""))
notes = open(os.path.join(out, "notes.txt")).read().strip()
if notes:
    say("")
    say("Notes:")
    for l in notes.splitlines():
        say("  " + l)
open(os.path.join(out, "summary.txt"), "w").write("\n".join(L) + "\n")

# snippet.md: the headline table, for BENCHMARKS.md
md = []
heads = [32, 1024, 4096, 8192, 16384, 32768, 65536]
for pl in placements:
    have = [n for n in series if runs.get((pl, n))]
    md.append("**%s: one-way latency p50 (us) / bandwidth (MB/s, osu_bw window %s), medians of %s round(s)**" % (
        pl, machine.get("window"), machine.get("repeat")))
    md.append("")
    sz = [s for s in heads if any((pl, n, s) in S for n in have)]
    md.append("| series | MTU | segment | " + " | ".join("%s lat" % (str(s) if s < 1024 else "%dK" % (s // 1024)) for s in sz) +
              " | " + " | ".join("%s bw" % (str(s) if s < 1024 else "%dK" % (s // 1024)) for s in sz) + " |")
    md.append("|:---|---:|---:|" + "---:|" * (2 * len(sz)))
    for n in have:
        def f(v, d):
            return "-" if v is None else (("%%.%df" % d) % v)
        seg = info[n]["segment"]
        md.append("| %s | %d | %s | " % (n, info[n]["mtu"], seg) +
                  " | ".join(f(get(pl, n, s, "latency_p50_us") if get(pl, n, s, "latency_p50_us") is not None
                               else get(pl, n, s, "latency_us"), 1) for s in sz) + " | " +
                  " | ".join(f(get(pl, n, s, "bandwidth_mb_s"), 0) for s in sz) + " |")
    md.append("")
open(os.path.join(out, "snippet.md"), "w").write("\n".join(md) + "\n")

# ---- plots ----
if not have_gp:
    sys.exit(0)
gp = ['set terminal pngcairo size 1400,560 font ",10"' if os.system("gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1") == 0
      else 'set terminal png size 1400,560',
      'set termoption noenhanced', 'set datafile separator ","', 'set key top left font ",8"', 'set grid', 'set xlabel "message size (bytes)"']
def sfile(pl, n):
    return os.path.join(out, "series", pl, n + ".csv")
def plotline(pl, n, col, title, dash=False):
    return "'%s' using 1:%d with linespoints pt 7 ps 0.4 %stitle '%s'" % (
        sfile(pl, n), col, "dt 2 " if dash else "", title)
C = {c: i + 2 for i, c in enumerate(OCOLS)}
def label(n):
    i = info[n]
    if i["kind"] == "cvia":
        mm = re.search(r"(\d+)-byte segments", paths.get(n, ""))
        seg = i["segment"] if i["segment"] != "auto" else ("auto %s" % mm.group(1) if mm else "auto")
        return "corevia %s seg %s MTU %d" % (i["transport"], seg, i["mtu"])
    return {"npp": "kernel %s" % i["transport"] if i["transport"] == "tcp" else "bare %s" % i["transport"],
            "fi": "fi_pingpong tcp", "ucx": "ucx_perftest tcp"}[i["kind"]] + " MTU %d" % i["mtu"]
lat_col = lambda pl, n: C["latency_p50_us"] if any(get(pl, n, s, "latency_p50_us") is not None
                                                     for (p, nn, s) in S if p == pl and nn == n) else C["latency_us"]
rate = machine.get("rate", "none")
for pl in placements:
    where = "both ends on CPU 0" if pl == "one-core" else "one end per core"
    tail = "%s; %s" % (where, "veth" + ("" if rate == "none" else " tbf " + rate))
    have = lambda n: runs.get((pl, n))
    # figures 7 and 8: the segment sizes, udp and eth side by side
    for fig, what, col, ylab in ((7, "latency", None, "one-way latency p50 (us)"),
                                 (8, "bandwidth", C["bandwidth_mb_s"], "bandwidth, osu_bw window (MB/s)")):
        if not any(re.match(r"(udp|eth)-(s\d+|m\d+)$", n) and have(n) for n in series):
            continue
        gp.append("set output '%s'" % os.path.join(out, "fig%d-%s-segments-%s.png" % (fig, what, pl)))
        gp.append("set multiplot layout 1,2 title 'Figure %d: %s vs segment size (paper 002); %s'" % (fig, what, tail))
        for tr in ("udp", "eth"):
            ns = [n for n in series if re.match(r"%s-(s\d+|m\d+)$" % tr, n) and have(n)]
            gp.append("set title 'corevia %s'" % tr)
            gp.append("set ylabel '%s'" % ylab)
            if ns:
                gp.append("plot " + ", ".join(plotline(pl, n, col or lat_col(pl, n), label(n), n.startswith(tr + "-m"))
                                              for n in ns))
            else:
                gp.append("set label 1 'no data' at graph 0.5,0.5 center; set xrange [0:1]; set yrange [0:1]; "
                          "plot -1 notitle; unset label 1; set autoscale")
        gp.append("unset multiplot")
    # figures 9 and 10: against TCP (and the other peers)
    for fig, what, ylab in ((9, "latency", "one-way latency p50, else mean (us)"),
                            (10, "bandwidth", "bandwidth (MB/s)")):
        ns = [n for n in series if have(n) and (re.match(r"(udp|eth)-s(1472|4096)$", n) or n in ("udp-m1500", "eth-m1500")
                                                or info[n]["kind"] in ("npp", "fi", "ucx"))]
        ns = [n for n in ns if not (n.startswith("tcp-m") and n != "tcp-m1500")]   # TCP as the paper: MTU 1500
        if not ns:
            continue
        gp.append("set output '%s'" % os.path.join(out, "fig%d-%s-vs-tcp-%s.png" % (fig, what, pl)))
        gp.append("set multiplot layout 1,2 title 'Figure %d: corevia vs kernel TCP and peers (paper 002); %s'" % (fig, tail))
        for half, rng in (("up to 8 KiB", "[:8192]"), ("all sizes", "[*:*]")):
            gp.append("set title '%s%s'" % (half, "; log scale" if fig == 9 else ""))
            gp.append("set ylabel '%s'" % ylab)
            gp.append("set xrange %s" % rng)
            gp.append("set logscale y" if fig == 9 else "unset logscale y")
            parts = []
            for n in ns:
                if fig == 9:
                    parts.append(plotline(pl, n, lat_col(pl, n), label(n), info[n]["kind"] != "cvia"))
                elif any(get(pl, n, s, "bandwidth_mb_s") is not None for (p, nn, s) in S if p == pl and nn == n):
                    parts.append(plotline(pl, n, C["bandwidth_mb_s"], label(n), info[n]["kind"] != "cvia"))
                else:
                    parts.append(plotline(pl, n, C["pingpong_mb_s"], label(n) + " (ping-pong bw)", True))
            gp.append("plot " + ", ".join(parts))
        gp.append("set xrange [*:*]")
        gp.append("unset logscale y")
        gp.append("unset multiplot")
open(os.path.join(out, "plot.gp"), "w").write("\n".join(gp) + "\n")
PYEOF

if [ "$HAVE_GNUPLOT" = 1 ] && [ -f "$OUT/plot.gp" ]; then
    gnuplot "$OUT/plot.gp" 2>"$OUT/raw/gnuplot.err" || note "gnuplot failed: see raw/gnuplot.err"
fi
cat "$OUT/summary.txt"
log "output in $OUT: summary.txt, snippet.md, all.csv, series/, $(cd "$OUT" && ls fig*.png 2>/dev/null | wc -l) PNGs"
