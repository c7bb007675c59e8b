#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# A network lab on one machine: N network namespaces ("hosts") joined by veth
# pairs or a bridge, with a chosen MTU and an optional tbf rate limit.
#
#   netlab.sh up     [--tag T] [--hosts N] [--mode pairs|bridge] [--links K]
#                    [--mtu 1500|4138|9000|M] [--rate RATE]
#   netlab.sh down   [--tag T]          remove everything that lab made
#   netlab.sh status [--tag T]          hosts, interfaces, addresses
#   netlab.sh addr   [--tag T] HOST [PEER [LINK]]   an address of HOST (reachable
#                    from PEER over link LINK, in pairs mode)
#   netlab.sh exec   [--tag T] HOST CMD...          run CMD inside HOST
#   netlab.sh rps    [--tag T] HOST IFACE CPULIST   steer IFACE's receive
#                    processing in HOST to CPULIST (rps_cpus; "" clears)
#   netlab.sh list                      every netlab tag that is up
#
# Names: namespaces cvia-<tag>-h1 .. cvia-<tag>-hN (and cvia-<tag>-sw for the
# bridge), so they never collide with anything else; interfaces exist only
# inside them. Addresses: 198.18.0.0/15 (RFC 2544, reserved for benchmarks),
# only inside those namespaces; nothing is routed to or from the machine's
# own interfaces. Modes: pairs (default): a veth pair between every two hosts
# (K of them with --links K), link s gets 198.18.s.0/24 and host i has
# 198.18.s.i on it; bridge: each host's eth0 on a bridge, 198.18.0.i/24.
#
# `up` is idempotent: the same lab again is a no-op, a different one under
# the same tag replaces it. A failing `up` removes what it made. Needs root,
# iproute2 (ip, tc).
#
# CVIA_NET=xdp needs nothing more on these veths: each rank attaches its own
# XDP program (native mode) to its host's interface, held by its own
# descriptor, and the kernel removes it when the rank exits or dies; the
# sending side's AF_XDP transmit is an ordinary veth transmit, so no program
# on the peer end is needed, and one queue serves the one AF_XDP socket per
# host. `status` lists the programs attached; `down` removes them with the
# namespaces. nftables loss on a host's interface does not see AF_XDP's
# frames (XDP runs before the netdev ingress hook): drop in bridge mode at
# the switch namespace's ports instead.
set -euo pipefail

STATE_DIR=${CVIA_NETLAB_STATE:-/run/cvia-netlab}
die()  { echo "netlab: $*" >&2; exit 1; }
usage_err() { echo "netlab: $* (try --help)" >&2; exit 2; }

usage() { sed -n '5,39p' "$0" | sed 's/^# \{0,1\}//'; }

tag=lab hosts=2 mode=pairs links=1 mtu=1500 rate=
cmd=${1:-}
[ -n "$cmd" ] || usage_err "missing command: up, down, status, addr, exec, rps or list"
shift
case "$cmd" in -h|--help|help) usage; exit 0 ;; esac

args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --tag)   tag=${2:?--tag needs a value}; shift 2 ;;
        --hosts) hosts=${2:?--hosts needs a value}; shift 2 ;;
        --mode)  mode=${2:?--mode needs a value}; shift 2 ;;
        --links) links=${2:?--links needs a value}; shift 2 ;;
        --mtu)   mtu=${2:?--mtu needs a value}; shift 2 ;;
        --rate)  rate=${2:?--rate needs a value}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; args+=("$@"); break ;;
        -*) if [ "$cmd" = exec ] && [ ${#args[@]} -ge 1 ]; then args+=("$@"); break; fi
            usage_err "unknown option $1" ;;
        *) args+=("$1"); shift ;;
    esac
done

[[ $tag =~ ^[a-z0-9]{1,12}$ ]] || usage_err "--tag '$tag': 1 to 12 lowercase letters or digits"
[[ $hosts =~ ^[0-9]+$ ]] && [ "$hosts" -ge 2 ] && [ "$hosts" -le 64 ] ||
    usage_err "--hosts '$hosts': 2 to 64"
[[ $links =~ ^[0-9]+$ ]] && [ "$links" -ge 1 ] && [ "$links" -le 8 ] ||
    usage_err "--links '$links': 1 to 8"
[[ $mtu =~ ^[0-9]+$ ]] && [ "$mtu" -ge 576 ] && [ "$mtu" -le 65535 ] ||
    usage_err "--mtu '$mtu': 576 to 65535"
case "$mode" in pairs|bridge) ;; *) usage_err "--mode '$mode': pairs or bridge" ;; esac
if [ -n "$rate" ] && ! [[ $rate =~ ^[0-9]+(\.[0-9]+)?[kmg]?bit$ ]]; then
    usage_err "--rate '$rate': like 1gbit, 500mbit"
fi
[ "$mode" = bridge ] && [ "$links" != 1 ] && usage_err "--links applies to pairs mode only"
# pairs: one subnet per link; they must fit 198.18.1-255
npairs=$((hosts * (hosts - 1) / 2))
[ "$mode" = bridge ] || [ $((npairs * links)) -le 255 ] ||
    usage_err "$hosts hosts x $links link(s) need $((npairs * links)) subnets (255 at most)"

prefix="cvia-$tag"
ns() { echo "$prefix-h$1"; }
state_file="$STATE_DIR/$tag.conf"
config="hosts=$hosts mode=$mode links=$links mtu=$mtu rate=${rate:-none}"

need_root() { [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"; command -v ip >/dev/null || die "needs iproute2 (ip)"; }

# link index s (1-based) of pair (i<j), link k
link_index() { local i=$1 j=$2 k=$3 n=0 a b
    for ((a = 1; a <= hosts; a++)); do for ((b = a + 1; b <= hosts; b++)); do
        n=$((n + 1)); if [ "$a" = "$i" ] && [ "$b" = "$j" ]; then echo $(((n - 1) * links + k)); return; fi
    done; done; }

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

lab_namespaces() {   # every namespace this tag may have made
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-(h[0-9]+|sw)\$" || true
}

tbf() {   # NS DEV
    [ -n "$rate" ] || return 0
    local bits burst
    bits=$(awk -v r="${rate%bit}" 'BEGIN { m = 1; u = substr(r, length(r));
        if (u == "k") m = 1e3; else if (u == "m") m = 1e6; else if (u == "g") m = 1e9;
        if (m > 1) r = substr(r, 1, length(r) - 1); printf "%.0f", r * m }')
    # 2 ms worth of bytes, at least 64 KiB, so one GSO burst fits
    burst=$(( bits / 8 / 500 )); [ "$burst" -ge 65536 ] || burst=65536
    ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$rate" burst "$burst" latency 50ms
}

do_down() {
    local n any=0
    for n in $(lab_namespaces); do
        ip netns del "$n" 2>/dev/null || true   # its veth ends go with it
        any=1
    done
    rm -f "$state_file"
    return $any
}

do_up() {
    need_root
    if [ -f "$state_file" ] && [ "$(cat "$state_file")" = "$config" ]; then
        local ok=1 i
        for ((i = 1; i <= hosts; i++)); do ns_exists "$(ns "$i")" || ok=0; done
        [ "$mode" = bridge ] && ! ns_exists "$prefix-sw" && ok=0
        if [ $ok = 1 ]; then echo "netlab: $tag is already up ($config)"; do_status; return 0; fi
    fi
    if [ -n "$(lab_namespaces)" ]; then
        echo "netlab: replacing the existing lab $tag" >&2
        do_down || true
    fi
    mkdir -p "$STATE_DIR"
    # anything failing from here removes what was made
    trap 'echo "netlab: up failed; removing what it made" >&2; do_down || true' ERR
    local i j k s
    for ((i = 1; i <= hosts; i++)); do
        ip netns add "$(ns "$i")"
        ip -n "$(ns "$i")" link set lo up
    done
    if [ "$mode" = bridge ]; then
        ip netns add "$prefix-sw"
        ip -n "$prefix-sw" link add name br0 mtu "$mtu" type bridge
        ip -n "$prefix-sw" link set br0 up
        for ((i = 1; i <= hosts; i++)); do
            ip -n "$prefix-sw" link add name "h$i" mtu "$mtu" type veth peer name eth0 \
                mtu "$mtu" netns "$(ns "$i")"
            ip -n "$prefix-sw" link set "h$i" master br0 up
            ip -n "$(ns "$i")" addr add "198.18.0.$i/24" dev eth0
            ip -n "$(ns "$i")" link set eth0 up
            tbf "$(ns "$i")" eth0
            tbf "$prefix-sw" "h$i"
        done
    else
        for ((i = 1; i <= hosts; i++)); do for ((j = i + 1; j <= hosts; j++)); do
            for ((k = 1; k <= links; k++)); do
                s=$(link_index "$i" "$j" "$k")
                ip -n "$(ns "$i")" link add name "v$j-$k" mtu "$mtu" type veth \
                    peer name "v$i-$k" mtu "$mtu" netns "$(ns "$j")"
                ip -n "$(ns "$i")" addr add "198.18.$s.$i/24" dev "v$j-$k"
                ip -n "$(ns "$j")" addr add "198.18.$s.$j/24" dev "v$i-$k"
                ip -n "$(ns "$i")" link set "v$j-$k" up
                ip -n "$(ns "$j")" link set "v$i-$k" up
                tbf "$(ns "$i")" "v$j-$k"
                tbf "$(ns "$j")" "v$i-$k"
            done
        done; done
    fi
    echo "$config" >"$state_file"
    trap - ERR
    do_status
}

do_status() {
    local n
    if [ -z "$(lab_namespaces)" ]; then echo "netlab: $tag is down"; return 0; fi
    [ -f "$state_file" ] && echo "# lab $tag: $(cat "$state_file")"
    for n in $(lab_namespaces); do
        ip -n "$n" -br -4 addr show 2>/dev/null | awk -v n="$n" '$1 != "lo" { print n, $1, $3 }'
        # XDP programs attached (CVIA_NET=xdp: one per host while a rank runs)
        ip -n "$n" -d link show 2>/dev/null | awk -v n="$n" '
            /^[0-9]+:/ { dev = $2; sub(/@.*/, "", dev); sub(/:$/, "", dev) }
            /prog\/xdp/ { for (i = 1; i < NF; i++) if ($i == "id") print n, dev, "xdp program", $(i + 1), mode }
            /^[0-9]+:/ { mode = ($0 ~ / xdpgeneric/) ? "(generic)" : ($0 ~ / xdp/) ? "(native)" : "" }'
    done
}

do_addr() {
    local h=${args[0]:-} p=${args[1]:-} k=${args[2]:-1} i j s
    [[ $h =~ ^h?[0-9]+$ ]] || usage_err "addr: HOST is h1 .. h$hosts"
    h=${h#h}
    [ -f "$state_file" ] || die "lab $tag is down"
    # shellcheck disable=SC1090
    eval "$(tr ' ' '\n' <"$state_file" | sed 's/^/st_/')"
    hosts=$st_hosts links=$st_links
    if [ "$st_mode" = bridge ]; then echo "198.18.0.$h"; return; fi
    [ -n "$p" ] || p=$([ "$h" = 1 ] && echo 2 || echo 1)
    p=${p#h}
    [ "$h" != "$p" ] && [ "$h" -le "$hosts" ] && [ "$p" -le "$hosts" ] && [ "$k" -le "$links" ] ||
        usage_err "addr: no link $k between h$h and h$p"
    if [ "$h" -lt "$p" ]; then i=$h j=$p; else i=$p j=$h; fi
    s=$(link_index "$i" "$j" "$k")
    echo "198.18.$s.$h"
}

cpulist_mask() {   # CPULIST -> hex mask for rps_cpus ("" -> 0)
    python3 - "$1" <<'EOF'
import sys
m = 0
for part in filter(None, sys.argv[1].split(',')):
    a, _, b = part.partition('-')
    for c in range(int(a), int(b or a) + 1):
        m |= 1 << c
words = []
while True:
    words.append('%08x' % (m & 0xffffffff)); m >>= 32
    if not m: break
print(','.join(reversed(words)))
EOF
}

case "$cmd" in
    up)     do_up ;;
    down)   need_root
            if do_down; then echo "netlab: $tag was not up"; else echo "netlab: $tag removed"; fi ;;
    status) do_status ;;
    addr)   do_addr ;;
    list)   ip netns list 2>/dev/null | awk '{print $1}' | sed -n 's/^cvia-\([a-z0-9]*\)-h1$/\1/p' ;;
    exec)   need_root
            [ ${#args[@]} -ge 2 ] || usage_err "exec: HOST CMD..."
            h=${args[0]#h}; ns_exists "$(ns "$h")" || die "no host h$h in lab $tag"
            exec ip netns exec "$(ns "$h")" "${args[@]:1}" ;;
    rps)    need_root
            [ ${#args[@]} -ge 2 ] || usage_err "rps: HOST IFACE CPULIST"
            h=${args[0]#h} dev=${args[1]} list=${args[2]:-}
            ns_exists "$(ns "$h")" || die "no host h$h in lab $tag"
            [[ $dev =~ ^[A-Za-z0-9._-]+$ ]] || usage_err "rps: bad interface name '$dev'"
            [[ $list =~ ^[0-9,-]*$ ]] || usage_err "rps: CPULIST like 0 or 0-3,8"
            mask=$(cpulist_mask "$list")
            ip netns exec "$(ns "$h")" sh -c 'for q in /sys/class/net/"$1"/queues/rx-*; do
                echo "$2" > "$q/rps_cpus"; done' sh "$dev" "$mask" ||
                die "cannot set rps_cpus of $dev in h$h"
            echo "netlab: $dev in h$h: receive processing on CPUs ${list:-(any, rps off)}" ;;
    *)      usage_err "unknown command '$cmd' (up, down, status, addr, exec, rps, list)" ;;
esac
