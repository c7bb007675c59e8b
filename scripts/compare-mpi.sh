#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# compare-mpi.sh: Open MPI over corevia, the libfabric provider (issue:
# corevia as a libfabric provider; build/fabric/libcorevia-fi.so, loaded by
# FI_PROVIDER_PATH), against Open MPI's own paths, with one MPI program
# (bench/peers/osu_mpi.c: osu_latency, osu_bw, osu_bibw, osu_mbw_mr with one
# pair) and the OSU definitions (DESIGN.md, "Benchmarks mean what the field
# means"). Interleaved rounds in rotating order, per-size medians.
#
#   intra-node (rank 0 on CPU 0, rank 1 on CPU 1):
#     ompi-ob1, ompi-ucx, ompi-ofi-corevia, ompi-ofi-corevia-safe
#     (and on request ompi-ofi-corevia-dom, ompi-ofi-corevia-base)
#   --hosts: two emulated hosts (scripts/netlab.sh, one veth pair) per MTU;
#     mpirun runs in host 1, its daemon in host 2 is started by an rsh agent
#     that does `ip netns exec`:
#     ompi-ob1-tcp, ompi-ofi-tcp, ompi-ofi-udp, ompi-ofi-corevia-{udp,eth}
#
# A configuration that cannot run (the corevia provider not built, a
# component missing, a timeout) is reported as failed, never a crash.

set -u -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

RUNS=5
QUICK=0
SIZES=""
SWEEP_SIZES="1,4,8,16,64,256,1024,4096,16384,65536,262144,1048576,4194304"
QUICK_SIZES="8,4096,65536,1048576"
HOSTS=0
INTRA=1
MTUS="1500,9000"
OUT=out/mpi
TMO=""
QUIET_WAIT=""
CONFIGS=""
BENCHES_ALL="latency bw bibw mbw_mr"
BENCHES=$BENCHES_ALL
BUILD=${CVIA_BUILD:-build}
FABRIC=${CVIA_FABRIC_DIR:-}
UCX_SM_TLS=${UCX_SM_TLS:-sm,self}
TAG=cmpmpi
INTRA_ALL="ompi-ob1 ompi-ucx ompi-ofi-corevia ompi-ofi-corevia-safe ompi-ofi-corevia-dom ompi-ofi-corevia-base"
INTRA_DEFAULT="ompi-ob1 ompi-ucx ompi-ofi-corevia ompi-ofi-corevia-safe"
FABRIC_BASE=
HOSTS_ALL="ompi-ob1-tcp ompi-ofi-tcp ompi-ofi-udp ompi-ofi-corevia-udp ompi-ofi-corevia-eth ompi-ofi-corevia-udp-base ompi-ofi-corevia-eth-base"

usage() {
    cat <<EOF
Usage: scripts/compare-mpi.sh [options]

Open MPI over corevia's libfabric provider against Open MPI's own paths, in
one session: interleaved rounds in rotating order, per-size medians. One MPI
program, bench/peers/osu_mpi (built here with mpicc), with the OSU
definitions: latency = mean half round trip of a blocking ping-pong
(osu_latency); bw = window of 64 MPI_Isend + 4-byte ack (osu_bw); bibw = 64
each way (osu_bibw); mbw_mr = osu_mbw_mr with one pair (message rate).
MB = 10^6 bytes.

Configurations (rank 0 on CPU 0, rank 1 on CPU 1 in every scenario):
  intra-node, 2 ranks on this machine (reference: ompi-ob1):
    ompi-ob1              pml ob1, btl self,vader
    ompi-ucx              pml ucx, UCX_TLS=$UCX_SM_TLS
    ompi-ofi-corevia      pml cm, mtl ofi, provider corevia (FI_PROVIDER_PATH=
                          the fabric directory, FI_PROVIDER=corevia), btl self
                          (CVIA_FI_THREAD=auto: corevia at CVIA_THREAD_SERIALIZED
                          below MPI_THREAD_MULTIPLE, no locks on its message path)
    ompi-ofi-corevia-safe the same with CVIA_FI_THREAD=safe (corevia at
                          CVIA_THREAD_MULTIPLE, the provider's locks on)
    ompi-ofi-corevia-dom  the same with CVIA_FI_THREAD=domain (only with --configs)
    ompi-ofi-corevia-base the provider of --fabric-base DIR (another build, such
                          as the commit before a change; only with --fabric-base)
  --hosts: two network namespaces joined by a veth pair (scripts/netlab.sh up
  --tag $TAG --hosts 2 --mtu M), one scenario per MTU (reference: the best of
  the TCP configurations, ompi-ob1-tcp and ompi-ofi-tcp, per size):
    ompi-ob1-tcp          pml ob1, btl self,tcp
    ompi-ofi-tcp          pml cm, mtl ofi, provider "tcp;ofi_rxm"
    ompi-ofi-udp          pml cm, mtl ofi, provider "udp;ofi_rxd"
    ompi-ofi-corevia-udp  pml cm, mtl ofi, provider corevia, CVIA_NET=udp
    ompi-ofi-corevia-eth  pml cm, mtl ofi, provider corevia, CVIA_NET=eth
    ompi-ofi-corevia-udp-base, ompi-ofi-corevia-eth-base
                          the same with the provider of --fabric-base DIR (added
                          beside each of the two when --fabric-base is given)

Options (default in brackets):
  --runs N          interleaved rounds; per-size medians across them [$RUNS]
  --quick           smoke run: sizes $QUICK_SIZES, 1 round
  --sizes LIST      comma-separated byte counts
                    [$SWEEP_SIZES]
  --benchmarks LIST subset of: ${BENCHES_ALL// /,} [all]
  --hosts           add the two-host scenarios (needs root and iproute2)
  --mtu LIST        MTUs of the two-host scenarios [$MTUS]
  --no-intra        leave out the intra-node scenario (with --hosts)
  --configs LIST    comma-separated subset of the configurations above [all]
  --fabric DIR      the directory holding libcorevia-fi.so, FI_PROVIDER_PATH
  --fabric-base DIR another build's provider directory: adds the configuration
                    ompi-ofi-corevia-base (before/after in one session), and
                    with --hosts ompi-ofi-corevia-udp-base / -eth-base
                    [\$CVIA_FABRIC_DIR, else BUILD/fabric]
  --build DIR       corevia build directory; osu_mpi goes to DIR/peers
                    [\$CVIA_BUILD or build]
  --out DIR         output directory [$OUT]
  --timeout S       limit for each mpirun, seconds [600; --quick 120]
  --quiet-wait S    while others keep > 25% of the CPUs busy, wait before a
                    measurement; S seconds in all (0: never) [60; --quick 0]
  -h, --help        this text

Environment: CVIA_BUILD, CVIA_FABRIC_DIR, UCX_SM_TLS [$UCX_SM_TLS], PYTHON.

Output in DIR: all.csv (every row of every run), runs.csv (every mpirun:
exit, rows, seconds, CPU steal, bytes that crossed the veth, why it failed),
summary.csv (medians, min/max over runs, ratio to the reference), table.md
and table.txt (medians per size; "value (ratio)", ratio > 1: better than
the reference), mpi-SCENARIO.png (gnuplot, from plot-SCENARIO.gp),
commands.txt (each configuration's exact mpirun command), mechanisms.txt
(bindings, the provider and address the mtl chose, what fi_info says of
corevia), machine.txt, notes.txt, launch/ (the rsh agent and rankfile) and
raw/ (each run's CSV, stderr and command).
Progress goes to stderr; the Markdown table to stdout at the end. The lab is
removed at the end, also on failure or interrupt.
EOF
}

die_usage() { echo "compare-mpi: $* (try --help)" >&2; exit 2; }
fatal() { echo "compare-mpi: $*" >&2; exit 1; }
log() { echo "compare-mpi: $*" >&2; }
need_val() { [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a value"; }
is_list() { [[ $1 =~ ^[0-9]+(,[0-9]+)*$ ]]; }
is_pos() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ]; }

while [ $# -gt 0 ]; do
    case "$1" in
    -h|--help) usage; exit 0 ;;
    --runs) need_val "$@"; is_pos "$2" || die_usage "--runs: a positive integer expected"; RUNS=$2; shift ;;
    --quick) QUICK=1 ;;
    --sizes) need_val "$@"; is_list "$2" || die_usage "--sizes: comma-separated byte counts expected"; SIZES=$2; shift ;;
    --benchmarks) need_val "$@"
                  for b in ${2//,/ }; do
                      case " $BENCHES_ALL " in *" $b "*) ;; *) die_usage "--benchmarks: unknown '$b' (of ${BENCHES_ALL// /,})" ;; esac
                  done
                  BENCHES=${2//,/ }; shift ;;
    --hosts) HOSTS=1 ;;
    --mtu|--mtus) need_val "$@"; is_list "$2" || die_usage "--mtu: comma-separated MTUs expected"; MTUS=$2; shift ;;
    --no-intra) INTRA=0 ;;
    --configs) need_val "$@"
               for c in ${2//,/ }; do
                   case " $INTRA_ALL $HOSTS_ALL " in *" $c "*) ;; *) die_usage "--configs: unknown '$c'" ;; esac
               done
               CONFIGS=${2//,/ }; shift ;;
    --fabric) need_val "$@"; FABRIC=$2; shift ;;
    --fabric-base) need_val "$@"; [ -f "$2/libcorevia-fi.so" ] ||
                       die_usage "--fabric-base: no libcorevia-fi.so in '$2'"
                   FABRIC_BASE=$(cd "$2" && pwd); shift ;;
    --build) need_val "$@"; BUILD=$2; shift ;;
    --out) need_val "$@"; OUT=$2; shift ;;
    --timeout) need_val "$@"; is_pos "$2" || die_usage "--timeout: seconds expected"; TMO=$2; shift ;;
    --quiet-wait) need_val "$@"; [[ $2 =~ ^[0-9]+$ ]] || die_usage "--quiet-wait: seconds expected"; QUIET_WAIT=$2; shift ;;
    *) die_usage "unknown argument '$1'" ;;
    esac
    shift
done
if [ "$QUICK" = 1 ]; then
    RUNS=1
    SIZES=${SIZES:-$QUICK_SIZES}
    TMO=${TMO:-120} QUIET_WAIT=${QUIET_WAIT:-0}
fi
SIZES=${SIZES:-$SWEEP_SIZES}
TMO=${TMO:-600} QUIET_WAIT=${QUIET_WAIT:-60}
SIZES=$(printf '%s\n' ${SIZES//,/ } | sort -n -u | paste -sd, -)
for s in ${SIZES//,/ }; do
    [ "$s" -ge 1 ] && [ "$s" -le 2147483647 ] || die_usage "--sizes: $s is out of 1..2^31-1"
done
for m in ${MTUS//,/ }; do
    [ "$m" -ge 576 ] && [ "$m" -le 65535 ] || die_usage "--mtu: $m is out of 576..65535"
done
[ "$INTRA" = 1 ] || [ "$HOSTS" = 1 ] || die_usage "--no-intra leaves nothing to run without --hosts"
FABRIC=${FABRIC:-$BUILD/fabric}

# ---- the scenarios and their configurations -----------------------------------
pick() {  # the members of list $1 that --configs keeps
    local c out=""
    for c in $1; do
        if [ -z "$CONFIGS" ] || [[ " $CONFIGS " == *" $c "* ]]; then out="$out $c"; fi
    done
    echo "$out"
}
SCENARIOS=()
declare -A SCFG          # scenario -> its configurations
if [ "$INTRA" = 1 ]; then
    if [ -n "$CONFIGS" ]; then c=$(pick "$INTRA_ALL"); else c=$INTRA_DEFAULT; fi
    if [ -n "$FABRIC_BASE" ] && [[ " $c " != *" ompi-ofi-corevia-base "* ]] &&
       { [ -z "$CONFIGS" ] || [[ " $CONFIGS " == *" ompi-ofi-corevia "* ]]; }; then
        c="$c ompi-ofi-corevia-base"
    fi
    [[ " $c " != *" ompi-ofi-corevia-base "* ]] || [ -n "$FABRIC_BASE" ] ||
        die_usage "--configs: ompi-ofi-corevia-base needs --fabric-base DIR"
    if [ -n "${c// /}" ]; then SCENARIOS+=(intra); SCFG[intra]=$c; fi
fi
if [ "$HOSTS" = 1 ]; then
    c=$(pick "$HOSTS_ALL")
    [ -n "$CONFIGS" ] || c=${c// ompi-ofi-corevia-udp-base/}
    [ -n "$CONFIGS" ] || c=${c// ompi-ofi-corevia-eth-base/}
    # the other build's provider beside each corevia network configuration
    # chosen (with --fabric-base; asked for by name, it needs one)
    for b in udp eth; do
        c=" ${c# } "
        if [ -n "$FABRIC_BASE" ] && [[ "$c" == *" ompi-ofi-corevia-$b "* ]] &&
           [[ "$c" != *" ompi-ofi-corevia-$b-base "* ]]; then
            c="$c ompi-ofi-corevia-$b-base"
        fi
        [[ "$c" != *" ompi-ofi-corevia-$b-base "* ]] || [ -n "$FABRIC_BASE" ] ||
            die_usage "--configs: ompi-ofi-corevia-$b-base needs --fabric-base DIR"
    done
    c=$(echo $c)
    if [ -n "${c// /}" ]; then
        for m in $(printf '%s\n' ${MTUS//,/ } | sort -n -u); do SCENARIOS+=("hosts-m$m"); SCFG[hosts-m$m]=$c; done
    fi
fi
[ ${#SCENARIOS[@]} -gt 0 ] || die_usage "--configs leaves nothing to run in the chosen scenarios"

# ---- what is needed -----------------------------------------------------------
have() { command -v "$1" >/dev/null 2>&1; }
PY=${PYTHON:-}
[ -n "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || fatal "python3 is needed for the medians (Debian: python3)"
have mpicc && have mpirun && have ompi_info ||
    fatal "mpicc/mpirun/ompi_info not found (Debian: openmpi-bin libopenmpi-dev; scripts/install-deps.sh peers)"
if [ "$HOSTS" = 1 ]; then
    [ "$(id -u)" = 0 ] || fatal "--hosts needs root (network namespaces)"
    have ip || fatal "--hosts needs iproute2 (ip): scripts/install-deps.sh"
fi

mkdir -p "$OUT/raw" "$OUT/launch" || fatal "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/raw/* "$OUT"/launch/* "$OUT"/{notes.txt,runs.csv,all.csv,summary.csv,table.md,table.txt,commands.txt,mechanisms.txt,machine.txt} \
      "$OUT"/mpi-*.png "$OUT"/plot-*.dat "$OUT"/plot*.gp
: >"$OUT/notes.txt"
note() { log "$*"; echo "$*" >>"$OUT/notes.txt"; }

# FI_PROVIDER_PATH must be absolute: the ranks do not start in this directory
if [ -d "$FABRIC" ]; then FABRIC_ABS=$(cd "$FABRIC" && pwd)
else case $FABRIC in /*) FABRIC_ABS=$FABRIC ;; *) FABRIC_ABS=$top/${FABRIC#./} ;; esac; fi
CVIA_SO=$FABRIC_ABS/libcorevia-fi.so

# Ranks must see no stray libfabric selection from the caller's shell.
unset FI_PROVIDER FI_PROVIDER_PATH
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# osu_mpi, built as scripts/compare-peers.sh builds it (same place, same flags)
OSU=$BUILD/peers/osu_mpi
mkdir -p "$BUILD/peers" || fatal "cannot create $BUILD/peers"
if [ ! -x "$OSU" ] || [ bench/peers/osu_mpi.c -nt "$OSU" ] ||
   ! "$OSU" --help 2>/dev/null | grep -q mbw_mr; then
    log "building $OSU (mpicc)"
    timeout 120 mpicc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -o "$OSU" bench/peers/osu_mpi.c \
        2>"$OUT/raw/osu_mpi-build.err" || fatal "building osu_mpi failed, see $OUT/raw/osu_mpi-build.err"
fi
OSU=$(cd "$(dirname "$OSU")" && pwd)/osu_mpi

# ---- the lab (--hosts) ----------------------------------------------------------
NETLAB=$top/scripts/netlab.sh
NS1=cvia-$TAG-h1 NS2=cvia-$TAG-h2
IF1=v2-1 IF2=v1-1          # netlab pairs: in h1 the link to h2, in h2 the link to h1
A1="" A2="" CUR_MTU="" LAB_UP=0
AGENT=$OUT/launch/netns-rsh
RANKFILE=$OUT/launch/rankfile
TOKEN="cmpmpi.$$.$(date +%s)"

# Kill what a run left behind: processes carrying this session's token in
# their environment (mpirun, orted, ranks), and only those.
kill_stragglers() {
    local d pids=()
    for d in /proc/[0-9]*; do
        [ "${d#/proc/}" != $$ ] || continue
        if { tr '\0' '\n' <"$d/environ"; } 2>/dev/null | grep -qx "CMPMPI_TOKEN=$TOKEN"; then
            pids+=("${d#/proc/}")
        fi
    done
    [ ${#pids[@]} -gt 0 ] || return 1
    kill -9 "${pids[@]}" 2>/dev/null
    return 0
}
cleanup() {
    kill_stragglers
    if [ "$LAB_UP" = 1 ]; then bash "$NETLAB" down --tag "$TAG" >/dev/null 2>&1; fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

lab_mtu() {   # MTU: the lab up at that MTU, the agent and rankfile written
    [ "$CUR_MTU" = "$1" ] && return 0
    LAB_UP=1
    bash "$NETLAB" up --tag "$TAG" --hosts 2 --mtu "$1" >"$OUT/raw/netlab.log" 2>&1 ||
        { cat "$OUT/raw/netlab.log" >&2; fatal "netlab up --tag $TAG --mtu $1 failed"; }
    A1=$(bash "$NETLAB" addr --tag "$TAG" h1 h2) && A2=$(bash "$NETLAB" addr --tag "$TAG" h2 h1) ||
        fatal "lab $TAG: no addresses"
    # A fresh veth is not operationally up for about a second. Until it is,
    # getifaddrs() leaves it out and libfabric's tcp and udp providers are left
    # with the loopback address they always append: the rank advertises
    # 127.0.0.1 and the job hangs. Wait for both ends.
    local i
    for i in $(seq 1000); do
        [ "$(ip netns exec "$NS1" cat "/sys/class/net/$IF1/operstate" 2>/dev/null)" = up ] &&
            [ "$(ip netns exec "$NS2" cat "/sys/class/net/$IF2/operstate" 2>/dev/null)" = up ] && break
        sleep 0.01
    done
    [ "$i" -lt 1000 ] || fatal "lab $TAG: the veth pair is not up after 10 s (ip -n $NS2 link show $IF2)"
    # As ssh would: the host, then a command line for a shell, run in that host.
    cat >"$AGENT" <<EOF
#!/bin/sh
# rsh agent for mpirun (--mca plm_rsh_agent): "netns-rsh HOST CMD..." runs
# CMD, as a shell command line, in the network namespace of HOST.
host=\$1; shift
case \$host in
$A1) ns=$NS1 ;;
$A2) ns=$NS2 ;;
*) echo "netns-rsh: unknown host '\$host'" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
EOF
    chmod +x "$AGENT"
    printf 'rank 0=%s slot=0\nrank 1=%s slot=1\n' "$A1" "$A2" >"$RANKFILE"
    CUR_MTU=$1
}
link_bytes() {   # bytes through h1's end of the veth, both ways
    ip netns exec "$NS1" cat "/sys/class/net/$IF1/statistics/tx_bytes" \
        "/sys/class/net/$IF1/statistics/rx_bytes" 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# ---- the command of a configuration -----------------------------------------------
# Sets CMD (the whole command, osu_mpi excluded) for scenario $1, config $2.
config_cmd() {
    local scn=$1 cfg=$2
    if [ "$scn" = intra ]; then
        CMD=(mpirun -np 2 --bind-to core --map-by core)
    else
        CMD=(ip netns exec "$NS1" mpirun -np 2 -H "$A1,$A2" --mca plm_rsh_agent "$AGENT"
             --rankfile "$RANKFILE")
    fi
    local cvia=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include corevia --mca btl self
                -x "FI_PROVIDER_PATH=$FABRIC_ABS" -x FI_PROVIDER=corevia)
    case $cfg in
    ompi-ob1)             CMD+=(--mca pml ob1 --mca btl self,vader) ;;
    # pml ucx refuses shared memory only unless told that any transport will do
    ompi-ucx)             CMD+=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x "UCX_TLS=$UCX_SM_TLS") ;;
    ompi-ofi-corevia)     CMD+=("${cvia[@]}") ;;
    ompi-ofi-corevia-safe) CMD+=("${cvia[@]}" -x CVIA_FI_THREAD=safe) ;;
    ompi-ofi-corevia-dom) CMD+=("${cvia[@]}" -x CVIA_FI_THREAD=domain) ;;
    ompi-ofi-corevia-base) CMD+=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include corevia
                                 --mca btl self -x "FI_PROVIDER_PATH=$FABRIC_BASE" -x FI_PROVIDER=corevia) ;;
    ompi-ob1-tcp)         CMD+=(--mca pml ob1 --mca btl self,tcp) ;;
    ompi-ofi-tcp)         CMD+=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "tcp;ofi_rxm" --mca btl self
                                -x "FI_PROVIDER=tcp;ofi_rxm") ;;
    ompi-ofi-udp)         CMD+=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "udp;ofi_rxd" --mca btl self
                                -x "FI_PROVIDER=udp;ofi_rxd") ;;
    ompi-ofi-corevia-udp) CMD+=("${cvia[@]}" -x CVIA_NET=udp) ;;
    ompi-ofi-corevia-eth) CMD+=("${cvia[@]}" -x CVIA_NET=eth) ;;
    ompi-ofi-corevia-udp-base|ompi-ofi-corevia-eth-base)
                          local b=${cfg#ompi-ofi-corevia-}; b=${b%-base}
                          CMD+=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include corevia
                                --mca btl self -x "FI_PROVIDER_PATH=$FABRIC_BASE" -x FI_PROVIDER=corevia
                                -x CVIA_NET="$b") ;;
    *) fatal "internal: unknown configuration $cfg" ;;
    esac
}
is_corevia() { case $1 in ompi-ofi-corevia*) return 0 ;; esac; return 1; }
shline() {  # ARGS...: one line a shell reads back as ARGS (quotes only where needed)
    local a out=""
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then out+="$a "; else out+="'${a//\'/\'\\\'\'}' "; fi
    done
    echo "${out% }"
}
# LIMIT CMD...: CMD under timeout, with this session's token in its
# environment, in the background so that INT or TERM to this script acts at
# once (bash runs traps only when a foreground child ends). Its exit status.
bounded() {
    local limit=$1 pid
    shift
    CMPMPI_TOKEN=$TOKEN timeout -k 10 "$limit" "$@" </dev/null &
    pid=$!
    wait "$pid"
}
is_ofi() { case $1 in ompi-ofi-*) return 0 ;; esac; return 1; }

# Why a configuration cannot run at all (empty: it can try).
declare -A CANNOT
precheck() {
    local cfg=$1
    if is_corevia "$cfg" && [ ! -f "$CVIA_SO" ]; then
        echo "corevia provider not built: $CVIA_SO not found (cmake --build $BUILD --target corevia-fi)"
    elif [ "$cfg" = ompi-ucx ] && ! ompi_info 2>/dev/null | grep -q 'MCA pml: ucx'; then
        echo "this Open MPI has no pml ucx component"
    elif is_ofi "$cfg" && ! ompi_info 2>/dev/null | grep -q 'MCA mtl: ofi'; then
        echo "this Open MPI has no mtl ofi component"
    fi
}
for scn in "${SCENARIOS[@]}"; do
    for cfg in ${SCFG[$scn]}; do
        r=$(precheck "$cfg")
        [ -z "$r" ] || CANNOT[$scn/$cfg]=$r
    done
done

# One line that says why a run failed: the first telling line of its stderr.
fail_reason() {  # rc errfile
    local rc=$1 f=$2 line
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "timed out after $TMO s"; return; fi
    local pat
    for pat in 'cannot be selected' 'no components were able' 'fi_getinfo|fi_[a-z_]*\(\)' \
               'segmentation|signal|core dumped|killed|abort' 'not found|no such|unable|refused|timed out|failed|error'; do
        line=$(grep -v -E 'ORTE_ERROR_LOG|help-mca|orte_base_help_aggregate|^\[.*\] [0-9]+ more process' "$f" 2>/dev/null |
               grep -i -m1 -E "$pat") && break
    done
    [ -n "$line" ] || line=$(grep -v -E '^[[:space:]-]*$' "$f" 2>/dev/null | tail -1)
    line=$(printf '%s' "$line" | tr -s ' \t' ' ' | cut -c1-200)
    echo "exit $rc${line:+: $line}"
}

# ---- the machine, the commands, the mechanisms ---------------------------------------
{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host=$(hostname)"
    echo "cpu_model=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
    echo "cpus=$(nproc --all)"
    echo "hypervisor=$(lscpu | sed -n 's/^Hypervisor vendor:[[:space:]]*//p')"
    echo "kernel=$(uname -r)"
    echo "os=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
    echo "cc=$(mpicc --version 2>/dev/null | head -1)"
    echo "ompi=$(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v/Open MPI /p' | head -1)"
    echo "ucx=$(ucx_info -v 2>/dev/null | sed -n 's/^# Version /UCX /p' | head -1)"
    echo "libfabric=$(fi_info --version 2>/dev/null | sed -n 's/^libfabric: *//p' | head -1)"
    echo "corevia=git $(git describe --always --dirty 2>/dev/null || echo none)"
    echo "corevia_fi=$([ -f "$CVIA_SO" ] && echo "$CVIA_SO" || echo "missing: $CVIA_SO")"
    echo "runs=$RUNS"
    echo "quick=$QUICK"
    echo "sizes=$SIZES"
    echo "benchmarks=$BENCHES"
    echo "scenarios=${SCENARIOS[*]}"
    echo "ucx_tls=$UCX_SM_TLS"
    echo "timeout=$TMO"
    echo "quiet_wait=$QUIET_WAIT"
} >"$OUT/machine.txt"

probe() {  # scenario config: bindings and the path the job really took
    local scn=$1 cfg=$2 extra=()
    config_cmd "$scn" "$cfg"
    echo "== $scn $cfg"
    if [ -n "${CANNOT[$scn/$cfg]:-}" ]; then echo "not run: ${CANNOT[$scn/$cfg]}"; return; fi
    is_ofi "$cfg" && extra=(--mca mtl_ofi_verbose 100 -x FI_LOG_LEVEL=info)
    [ "$cfg" = ompi-ucx ] && extra=(-x UCX_LOG_LEVEL=debug)
    local tmp=$OUT/raw/probe-$scn-$cfg.log rc
    bounded 60 "${CMD[@]}" --report-bindings "${extra[@]}" "$OSU" latency --sizes 8 -i 10 -x 0 >"$tmp" 2>&1
    rc=$?
    grep -E 'bound to|mtl:ofi:prov:|Chosen addr|lane\[|cannot be selected|fi_getinfo\(\)' "$tmp" |
        sed -e 's/^.*UCX  DEBUG *//' -e 's/^libfabric:[0-9]*:[0-9]*:\([^:]*\):[^<]*<info> /libfabric \1: /' \
            -e 's/^.*mtl_ofi_component.c:[0-9]*: //' | sort -u | head -12
    echo "(exit $rc$([ $rc = 124 ] && echo ', timed out'))"
    kill_stragglers && echo "(stragglers killed)"
}
# the lab's addresses do not depend on its MTU: any MTU gives the commands
if [ "$HOSTS" = 1 ]; then lab_mtu "$(printf '%s\n' ${MTUS//,/ } | sort -n | head -1)"; fi
{
    echo "# exact commands per configuration; each run appends:"
    echo "#   $OSU latency|bw|bibw|mbw_mr --sizes $SIZES --csv"
    for scn in "${SCENARIOS[@]}"; do
        for cfg in ${SCFG[$scn]}; do
            config_cmd "$scn" "$cfg"
            printf '%s %s: %s\n' "$scn" "$cfg" "$(shline "${CMD[@]}")"
        done
    done
    if [ "$HOSTS" = 1 ]; then
        echo "# lab: scripts/netlab.sh up --tag $TAG --hosts 2 --mtu M; mpirun in $NS1 ($A1), the rsh agent"
        echo "# $AGENT starts orted in $NS2 ($A2) by ip netns exec; $RANKFILE: rank 0 on CPU 0, rank 1 on CPU 1"
    fi
} >"$OUT/commands.txt"

log "probing bindings and providers ($OUT/mechanisms.txt)"
{
    echo "== corevia provider: $CVIA_SO"
    if [ -f "$CVIA_SO" ]; then
        if have fi_info; then
            echo "fi_info with the capabilities Open MPI's mtl ofi asks (FI_EP_RDM, FI_TAGGED|FI_LOCAL_COMM|FI_REMOTE_COMM|FI_DIRECTED_RECV):"
            FI_PROVIDER_PATH=$FABRIC_ABS FI_PROVIDER=corevia timeout 30 fi_info -p corevia -t FI_EP_RDM \
                -c "FI_TAGGED|FI_LOCAL_COMM|FI_REMOTE_COMM|FI_DIRECTED_RECV" 2>&1 | head -20
            echo "(exit ${PIPESTATUS[0]})"
        fi
    else
        echo "missing"
    fi
} >"$OUT/mechanisms.txt" 2>&1
for scn in "${SCENARIOS[@]}"; do
    if [ "$scn" != intra ]; then lab_mtu "${scn#hosts-m}"; fi
    for cfg in ${SCFG[$scn]}; do probe "$scn" "$cfg" >>"$OUT/mechanisms.txt" 2>&1; done
done

# ---- CPU load and steal, as compare-peers.sh -------------------------------------------
. "$top/scripts/lib/cpu-load.sh"   # cpu_stat, busy_pct, session_summary
quiet_left=$QUIET_WAIT
BUSY=-1
wait_quiet() {   # sets BUSY (always measured: runs.csv keeps it)
    BUSY=$(busy_pct)
    while [ "$BUSY" -gt 25 ] && [ "$quiet_left" -gt 0 ]; do
        sleep 1; quiet_left=$((quiet_left - 1)); BUSY=$(busy_pct)
    done
}

# ---- measure ------------------------------------------------------------------------
declare -A FAILS            # scenario/config/bench -> failed runs
echo "run,scenario,config,benchmark,exit,ok,rows,seconds,steal_pct,busy_before_pct,link_bytes,reason" >"$OUT/runs.csv"
csvq() { printf '"%s"' "${1//\"/\'}"; }
nsc=${#SCENARIOS[@]}
nb=$(wc -w <<<"$BENCHES")
total=0
for scn in "${SCENARIOS[@]}"; do total=$((total + $(wc -w <<<"${SCFG[$scn]}") * nb)); done
total=$((total * RUNS))
done_n=0
start_all=$(date +%s)
read -r t_all x s_all < <(cpu_stat)
log "$total measurements: ${SCENARIOS[*]}; $RUNS round(s); sizes $SIZES"
for run in $(seq 1 "$RUNS"); do
    for si in $(seq 0 $((nsc - 1))); do
        scn=${SCENARIOS[$(( (si + run - 1) % nsc ))]}
        read -r -a cl <<<"${SCFG[$scn]}"
        nc=${#cl[@]}
        [ "$scn" = intra ] || lab_mtu "${scn#hosts-m}"
        log "round $run/$RUNS, $scn: order $(for ci in $(seq 0 $((nc - 1))); do printf '%s ' "${cl[$(( (ci + run - 1) % nc ))]}"; done)"
        for ci in $(seq 0 $((nc - 1))); do
            cfg=${cl[$(( (ci + run - 1) % nc ))]}
            for bench in $BENCHES; do
                done_n=$((done_n + 1))
                key=$scn/$cfg/$bench
                f="$OUT/raw/r$run-$scn-$cfg-$bench"
                if [ -n "${CANNOT[$scn/$cfg]:-}" ]; then
                    echo "$run,$scn,$cfg,$bench,,0,0,0,,,,$(csvq "not run: ${CANNOT[$scn/$cfg]}")" >>"$OUT/runs.csv"
                    continue
                fi
                if [ "${FAILS[$key]:-0}" -ge 2 ]; then
                    echo "$run,$scn,$cfg,$bench,,0,0,0,,,,$(csvq "not run: failed twice before")" >>"$OUT/runs.csv"
                    continue
                fi
                log "[$done_n/$total, $(( $(date +%s) - start_all )) s] round $run, $scn: $cfg $bench"
                config_cmd "$scn" "$cfg"
                shline "${CMD[@]}" "$OSU" "$bench" --sizes "$SIZES" --csv >"$f.cmd"
                wait_quiet
                lb0=0; [ "$scn" = intra ] || lb0=$(link_bytes)
                read -r t0 x s0 < <(cpu_stat)
                w0=$(date +%s.%N)
                bounded "$TMO" "${CMD[@]}" "$OSU" "$bench" --sizes "$SIZES" --csv >"$f.csv" 2>"$f.err"
                rc=$?
                w1=$(date +%s.%N)
                read -r t1 x s1 < <(cpu_stat)
                lb=""; [ "$scn" = intra ] || lb=$(( $(link_bytes) - lb0 ))
                kill_stragglers && note "$scn $cfg $bench (round $run): processes left behind, killed"
                rows=$(grep -cE "^$bench,[0-9]+," "$f.csv")
                want=$(wc -w <<<"${SIZES//,/ }")
                reason=""
                if [ $rc -eq 0 ] && [ "$rows" -eq "$want" ]; then
                    ok=1
                else
                    ok=0; [ "$rows" -gt 0 ] && ok=partial
                    reason=$(fail_reason "$rc" "$f.err")
                    [ $rc -eq 0 ] && reason="exit 0 but $rows of $want sizes"
                    FAILS[$key]=$(( ${FAILS[$key]:-0} + 1 ))
                    note "$scn $cfg $bench (round $run) failed ($rows of $want sizes): $reason; see raw/$(basename "$f").err"
                fi
                awk -v w0="$w0" -v w1="$w1" -v dt=$((t1 - t0)) -v ds=$((s1 - s0)) \
                    'BEGIN { printf "%.2f,%.1f", w1 - w0, dt ? 100 * ds / dt : 0 }' >"$f.time"
                echo "$run,$scn,$cfg,$bench,$rc,$ok,$rows,$(cat "$f.time"),$BUSY,$lb,$(csvq "$reason")" >>"$OUT/runs.csv"
                rm -f "$f.time"
            done
        done
    done
done
session_summary "$start_all" "$t_all" "$s_all" >>"$OUT/machine.txt"
if [ "$LAB_UP" = 1 ]; then bash "$NETLAB" down --tag "$TAG" >/dev/null 2>&1; LAB_UP=0; fi
log "measured in $(( $(date +%s) - start_all )) s; summarizing"

# ---- medians, ratios, tables, plots ---------------------------------------------------
SCEN_SPEC=$(for s in "${SCENARIOS[@]}"; do echo "$s:${SCFG[$s]}"; done)
HAVE_GP=0; have gnuplot && HAVE_GP=1
"$PY" - "$OUT" "$SCEN_SPEC" "$HAVE_GP" <<'PYEOF' || fatal "summary failed"
import csv, glob, os, re, statistics, sys

out, spec, have_gp = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
machine = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out, "machine.txt")) if "=" in l)
scenarios, cfgs = [], {}
for line in spec.splitlines():
    s, _, c = line.partition(":")
    scenarios.append(s)
    cfgs[s] = c.split()
COLS = ["latency_us", "latency_p50_us", "latency_p99_us", "latency_min_us", "bandwidth_mb_s", "msg_rate_per_s"]
TCP = ("ompi-ob1-tcp", "ompi-ofi-tcp")

rows = []
for path in sorted(glob.glob(os.path.join(out, "raw", "r*.csv"))):
    m = re.match(r"r(\d+)-(intra|hosts-m\d+)-(.+)-(latency|bw|bibw|mbw_mr)\.csv$", os.path.basename(path))
    if not m:
        continue
    run, scn, cfg, bench = int(m.group(1)), m.group(2), m.group(3), m.group(4)
    lines = [l for l in open(path, errors="replace") if l.startswith(("benchmark,", bench + ","))]
    for r in csv.DictReader(lines):
        if r.get("benchmark") != bench:
            continue
        try:
            size = int(r["size_bytes"])
        except (KeyError, ValueError, TypeError):
            continue
        rec = {"run": run, "scenario": scn, "config": cfg, "benchmark": bench, "size": size,
               "iterations": r.get("iterations", "")}
        for c in COLS:
            try:
                rec[c] = float(r.get(c) or "nan")
            except ValueError:
                rec[c] = float("nan")
        rows.append(rec)

with open(os.path.join(out, "all.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["run", "scenario", "config", "benchmark", "size_bytes", "iterations"] + COLS)
    for r in sorted(rows, key=lambda r: (r["scenario"], r["benchmark"], r["config"], r["size"], r["run"])):
        w.writerow([r["run"], r["scenario"], r["config"], r["benchmark"], r["size"], r["iterations"]] +
                   ["" if r[c] != r[c] else "%.4f" % r[c] for c in COLS])

runs = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
nruns = int(machine.get("runs", "1"))
benches = machine.get("benchmarks", "").split()

def status(scn, cfg):
    """(ok, text): how a configuration fared over the session."""
    rs = [r for r in runs if r["scenario"] == scn and r["config"] == cfg]
    if not rs:
        return False, "not measured"
    good = [r for r in rs if r["ok"] == "1"]
    bad = [r for r in rs if r["ok"] != "1"]
    if not bad:
        return True, "ok, %d of %d runs" % (len(good), len(rs))
    reasons = []
    for r in bad:
        t = "%s: %s" % (r["benchmark"], r["reason"]) if r["reason"].startswith(("exit", "timed")) else r["reason"]
        if t not in reasons:
            reasons.append(t)
    if not good and not any(r["ok"] == "partial" for r in rs):
        if len(reasons) == 1 and reasons[0].startswith("not run: "):
            return False, "FAILED, " + reasons[0]
        return False, "FAILED (%d of %d runs): %s" % (len(bad), len(rs), "; ".join(reasons[:3]))
    return True, "%d of %d runs ok, %d failed or partial: %s" % (len(good), len(rs), len(bad), "; ".join(reasons[:3]))

def med(v):
    v = [x for x in v if x == x]
    return (statistics.median(v), min(v), max(v), len(v)) if v else None

S = {}
idx = {}
for r in rows:
    idx.setdefault((r["scenario"], r["config"], r["benchmark"], r["size"]), []).append(r)
for k, rs in idx.items():
    for c in COLS:
        v = med([r[c] for r in rs])
        if v:
            S[k + (c,)] = v
def get(scn, cfg, b, s, c):
    v = S.get((scn, cfg, b, s, c))
    return v[0] if v else None

METRICS = [("latency", "latency_us", "One-way latency, mean of half round trips (us; lower is better)", False),
           ("latency", "latency_p50_us", "One-way latency, median (p50) of half round trips (us)", False),
           ("bw", "bandwidth_mb_s", "Bandwidth, osu_bw window 64 (MB/s, MB = 10^6 B)", True),
           ("bibw", "bandwidth_mb_s", "Bi-directional bandwidth, osu_bibw window 64 (MB/s, both directions)", True),
           ("mbw_mr", "msg_rate_per_s", "Message rate, osu_mbw_mr 1 pair window 64 (10^6 messages/s)", True)]
EXTRA = [("latency", "latency_p99_us", False), ("mbw_mr", "bandwidth_mb_s", True)]

def reference(scn, b, s, c, higher):
    """(value, name) of the reference: ompi-ob1 (intra) or the best TCP configuration (hosts)."""
    if scn == "intra":
        v = get(scn, "ompi-ob1", b, s, c)
        return (v, "ompi-ob1") if v is not None else (None, None)
    cand = [(get(scn, p, b, s, c), p) for p in TCP if p in cfgs[scn] and get(scn, p, b, s, c) is not None]
    return (max if higher else min)(cand) if cand else (None, None)

def ratio(v, ref, higher):
    if v is None or ref is None or v == 0 or ref == 0:
        return None
    return v / ref if higher else ref / v

sizes_all = sorted({r["size"] for r in rows}) or [int(x) for x in machine.get("sizes", "").split(",") if x]
with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["scenario", "benchmark", "metric", "size_bytes", "config", "median", "min_of_runs", "max_of_runs",
                "runs", "reference", "reference_median", "ratio_gt1_better"])
    for scn in scenarios:
        for b, c, _, higher in METRICS + [(b, c, "", h) for b, c, h in EXTRA]:
            for s in sizes_all:
                rv, rp = reference(scn, b, s, c, higher)
                for p in cfgs[scn]:
                    v = S.get((scn, p, b, s, c))
                    if v:
                        r = ratio(v[0], rv, higher)
                        w.writerow([scn, b, c, s, p, "%.6g" % v[0], "%.6g" % v[1], "%.6g" % v[2], v[3],
                                    rp or "", "" if rv is None else "%.6g" % rv, "" if r is None else "%.3f" % r])

def human(s):
    for unit, k in (("M", 1 << 20), ("K", 1 << 10)):
        if s >= k and s % k == 0:
            return "%d%s" % (s // k, unit)
    return str(s)

def fmt(v, c):
    if v is None:
        return "-"
    if c == "msg_rate_per_s":
        return "%.3f" % (v / 1e6) if v >= 1e5 else "%.3g" % (v / 1e6)
    if c == "bandwidth_mb_s":
        return "%.0f" % v if v >= 100 else "%.1f" % v
    return "%.2f" % v if v >= 10 else "%.3f" % v

def title(scn):
    if scn == "intra":
        return "intra-node: 2 ranks on this machine, rank 0 on CPU 0, rank 1 on CPU 1 (mpirun --bind-to core --map-by core)"
    return ("two emulated hosts, MTU %s: network namespaces joined by a veth pair (scripts/netlab.sh); rank 0 on CPU 0 "
            "in host 1, rank 1 on CPU 1 in host 2 (rankfile); mpirun in host 1, orted in host 2 by an "
            "`ip netns exec` rsh agent" % scn[len("hosts-m"):])

def ref_desc(scn):
    return ("`ompi-ob1` (pml ob1, btl self,vader)" if scn == "intra" else
            "the best TCP configuration per size (`ompi-ob1-tcp` or `ompi-ofi-tcp`, named in the column *best TCP*)")

md, txt = [], []
md += ["## Open MPI over corevia (libfabric provider) vs Open MPI's own paths", "",
       "- Machine: %s, %s CPUs, hypervisor %s, %s, Linux %s" % (
           machine.get("cpu_model"), machine.get("cpus"), machine.get("hypervisor") or "none",
           machine.get("os"), machine.get("kernel")),
       "- Software: %s, %s, libfabric %s; osu_mpi by %s; corevia %s; provider %s" % (
           machine.get("ompi"), machine.get("ucx"), machine.get("libfabric"), machine.get("cc"),
           machine.get("corevia"), machine.get("corevia_fi")),
       "- Definitions: OSU (bench/peers/osu_mpi.c). Latency = half the round trip of a blocking ping-pong, mean after "
       "warm-up (p50 also shown); bw = window of 64 MPI_Isend then a 4-byte ack (osu_bw); bibw = 64 each way "
       "(osu_bibw); message rate = osu_mbw_mr with one pair. MB = 10^6 bytes. Iterations as OSU "
       "(latency 10000/100 warm-up up to 8 KiB, 1000/10 above; bandwidths 100/10, 20/2).",
       "- Method: %s round(s), interleaved in rotating order of scenario and configuration in one session "
       "(`scripts/compare-mpi.sh%s`), median per size across rounds; CPU steal %s%% over the session; %s s; %s." % (
           machine.get("runs"), " --quick" if machine.get("quick") == "1" else "", machine.get("steal_pct"),
           machine.get("seconds"), machine.get("date")),
       "- Cells: median (ratio to the reference; > 1: better than the reference: reference / value for latency, "
       "value / reference for bandwidth and rate). `failed`: the configuration produced nothing; `-`: no figure at this size.",
       ""]
notes = [l for l in open(os.path.join(out, "notes.txt")).read().splitlines() if l.strip()]
measured = [r for r in runs if r["busy_before_pct"] not in ("", None)]
busy = [r for r in measured if int(r["busy_before_pct"]) > 25]
if busy:
    notes.append("%d of %d measurements started while others kept > 25%% of the CPUs busy (runs.csv, "
                 "busy_before_pct): on this machine that shows directly in the numbers; treat them as noisy%s" % (
                     len(busy), len(measured), "" if machine.get("quiet_wait", "0") != "0" else
                     " (--quiet-wait was 0)"))

pngs = []
for scn in scenarios:
    ps = cfgs[scn]
    st = {p: status(scn, p) for p in ps}
    has = {p: any(k[0] == scn and k[1] == p for k in S) for p in ps}
    md += ["### " + title(scn), "", "Reference: %s." % ref_desc(scn), ""]
    txt += ["== " + title(scn), "reference: " + ref_desc(scn).replace("`", "")]
    for p in ps:
        lb = [int(r["link_bytes"]) for r in runs if r["scenario"] == scn and r["config"] == p and r["link_bytes"] not in ("", None)]
        extra = "; %.1f MB crossed the veth per run (median)" % (statistics.median(lb) / 1e6) if lb and scn != "intra" else ""
        md.append("- `%s`: %s%s" % (p, st[p][1], extra))
        txt.append("  %-22s %s%s" % (p, st[p][1], extra))
    md.append("")
    txt.append("")
    for b, c, ttl, higher in METRICS:
        if b not in benches:
            continue
        sizes = sorted({k[3] for k in S if k[0] == scn and k[2] == b}) or sizes_all
        head = ["size"] + ps + (["best TCP"] if scn != "intra" else [])
        body = []
        for s in sizes:
            rv, rp = reference(scn, b, s, c, higher)
            row = [human(s)]
            for p in ps:
                v = get(scn, p, b, s, c)
                if v is None:
                    row.append("failed" if not has[p] else "-")
                    continue
                r = ratio(v, rv, higher)
                row.append(fmt(v, c) + ("" if r is None or (scn == "intra" and p == rp) else " (%.2f)" % r))
            if scn != "intra":
                row.append(rp or "-")
            body.append(row)
        md += ["**%s**; median of %s round(s)" % (ttl, machine.get("runs")), "",
               "| " + " | ".join(head) + " |", "|" + "|".join(["---:"] * (len(head) - (1 if scn != "intra" else 0)) +
                                                            ([":---"] if scn != "intra" else [])) + "|"]
        md += ["| " + " | ".join(r) + " |" for r in body] + [""]
        wd = [max(len(str(x)) for x in col) for col in zip(head, *body)]
        txt += [ttl, "  ".join(h.rjust(n) for h, n in zip(head, wd))]
        txt += ["  ".join(x.rjust(n) for x, n in zip(r, wd)) for r in body] + [""]

    # plots: one PNG per scenario, 2 x 2
    panels = [(b, c, ttl, higher) for b, c, ttl, higher in METRICS if c != "latency_p50_us" and b in benches]
    live = [p for p in ps if has[p]]
    if have_gp and live and panels:
        gp = ["set terminal pngcairo size 1400,1000 font ',10'", "set output '%s'" % os.path.join(out, "mpi-%s.png" % scn),
              "set termoption noenhanced",
              "set multiplot layout 2,2 title '%s, median of %s round(s)%s'" % (
                  {"intra": "intra-node, 2 ranks on CPU 0/1"}.get(scn, "two hosts (netns + veth), MTU " + scn[7:]),
                  machine.get("runs"),
                  ("; failed: " + ", ".join(p for p in ps if not has[p])) if len(live) < len(ps) else ""),
              "set logscale x 2", "set grid", "set key top left font ',9'", "set xlabel 'message size (bytes)'"]
        sizes = sorted({k[3] for k in S if k[0] == scn})
        gp.append("set xtics (%s)" % ", ".join('"%s" %d' % (human(s), s) for s in sizes))
        gp.append("set xrange [%g:%g]" % (sizes[0] / 1.5, sizes[-1] * 1.5))
        for b, c, ttl, higher in panels:
            dat = os.path.join(out, "plot-%s-%s.dat" % (scn, b))
            cols = [p for p in live if any(get(scn, p, b, s, c) is not None for s in sizes)]
            with open(dat, "w") as f:
                f.write("# size " + " ".join(cols) + "\n")
                for s in sizes:
                    vals = [get(scn, p, b, s, c) for p in cols]
                    if c == "msg_rate_per_s":
                        vals = [None if v is None else v / 1e6 for v in vals]
                    f.write("%d %s\n" % (s, " ".join("NaN" if v is None else "%.6g" % v for v in vals)))
            gp.append("set title '%s'" % ttl.replace("'", ""))
            gp.append("set ylabel '%s'" % {"latency_us": "us", "bandwidth_mb_s": "MB/s", "msg_rate_per_s": "10^6 msg/s"}[c])
            gp.append("set logscale y" if cols and (b == "latency" or c == "msg_rate_per_s") else "unset logscale y")
            if cols:
                gp.append("plot " + ", ".join("'%s' using 1:%d with linespoints title '%s'" % (dat, i + 2, p)
                                              for i, p in enumerate(cols)))
            else:
                gp.append("set label 1 'no data' at graph 0.5,0.5 center; set yrange [0:1]; "
                          "plot 1/0 notitle; unset label 1; set autoscale y")
        gp.append("unset multiplot")
        with open(os.path.join(out, "plot-%s.gp" % scn), "w") as f:
            f.write("\n".join(gp) + "\n")
        pngs.append(scn)

if notes:
    md += ["Notes:", ""] + ["- " + n for n in notes] + [""]
    txt += ["notes:"] + ["  " + n for n in notes] + [""]
open(os.path.join(out, "table.md"), "w").write("\n".join(md) + "\n")
open(os.path.join(out, "table.txt"), "w").write("\n".join(txt) + "\n")
open(os.path.join(out, "pngs.txt"), "w").write("\n".join(pngs) + "\n")
print("\n".join(md))
PYEOF

PNGS=""
if [ "$HAVE_GP" = 1 ]; then
    for scn in $(cat "$OUT/pngs.txt" 2>/dev/null); do
        if timeout 120 gnuplot "$OUT/plot-$scn.gp" 2>"$OUT/raw/gnuplot-$scn.err"; then
            PNGS="$PNGS mpi-$scn.png"
        else
            note "gnuplot failed for $scn, see $OUT/raw/gnuplot-$scn.err"
        fi
    done
else
    note "no plot: gnuplot not found (Debian: gnuplot-nox)"
fi
rm -f "$OUT/pngs.txt"
log "results in $OUT/: table.md, table.txt, summary.csv, all.csv, runs.csv,$PNGS"
