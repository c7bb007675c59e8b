#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run a functional test over two "hosts": network namespaces of our own,
# joined by a veth pair, ranks alternating between them (rank r on host
# r % 2 + 1): shm inside a host, the network provider (CVIA_NET) between.
#   hosts.sh [--expect-fail] [--loss PCT] [--switch] [--ping] [--rate RATE] CVIA_RUN NP PROG CASE
# --loss PCT: every frame arriving on either end of the veth pair is
# dropped with probability PCT % (nftables, netdev ingress hook: IP and raw
# Ethernet frames alike, ARP included); the counts are printed at the end,
# and a run in which no frame was dropped fails.
# --switch: the hosts are joined through a third namespace, a bridge with
# a veth pair to each; --loss then drops at the bridge's ports. Needed for
# CVIA_NET=xdp: an XDP program sees a frame before the netdev ingress hook
# does (and AF_XDP's transmit skips the egress hooks), so nftables on the
# hosts' own interfaces would not see corevia's frames.
# --ping: with CVIA_NET=xdp, once both hosts' interfaces carry an XDP
# program, ping across (ARP, then ICMP over IP, both ways, which the
# program must pass to the kernel), then create the file named by
# FUNC_NET_HOLD, which the test program waits for; fails if the programs
# never appeared or a ping got no answer.
# With CVIA_NET=xdp, after the run (a killed rank's too) no XDP program may
# be left on either interface.
# --rate RATE: both ends of the veth pair send at most RATE (tc tbf, as
# scripts/netlab.sh --rate: a burst of 2 ms or 64 KiB, frames queue up to
# 50 ms), e.g. 100mbit: a link slower than the hosts, where the socket's
# send buffer fills while the queue drains.
# Exit 77 (skipped) where namespaces (or, with --loss, nftables' netdev
# family) cannot be had. Removes everything it made, also on failure;
# traffic stays inside these namespaces.
set -u
expect="" loss="" rate="" switch=0 ping=0
while [ $# -gt 0 ]; do
    case "$1" in
        --expect-fail) expect=--expect-fail; shift ;;
        --loss) loss=${2:-}; shift 2 || break ;;
        --rate) rate=${2:-}; shift 2 || break ;;
        --switch) switch=1; shift ;;
        --ping) ping=1; shift ;;
        *) break ;;
    esac
done
usage="usage: hosts.sh [--expect-fail] [--loss PCT] [--switch] [--ping] [--rate RATE] CVIA_RUN NP PROG CASE"
[ $# -eq 4 ] || { echo "$usage" >&2; exit 2; }
if [ -n "$loss" ] && ! [[ "$loss" =~ ^[0-9]+$ && "$loss" -le 100 ]]; then
    echo "hosts.sh: --loss wants a whole percentage 0..100, not '$loss'" >&2; exit 2
fi
if [ -n "$rate" ] && ! [[ "$rate" =~ ^[1-9][0-9]*[kmg]bit$ ]]; then
    echo "hosts.sh: --rate wants a rate like 100mbit, not '$rate'" >&2; exit 2
fi
run=$1 np=$2 prog=$3 case=$4
here=$(cd "$(dirname "$0")" && pwd)
tag=$$
ns1=cvia-t$tag-h1 ns2=cvia-t$tag-h2 v1=cv${tag}a v2=cv${tag}b
nsw=cvia-t$tag-sw s1=cv${tag}c s2=cv${tag}d
dir=$(mktemp -d) || exit 1
watcher=""

cleanup() {
    [ -n "$watcher" ] && kill "$watcher" 2>/dev/null
    ip netns del "$ns1" 2>/dev/null
    ip netns del "$ns2" 2>/dev/null
    ip netns del "$nsw" 2>/dev/null
    ip link del "$v1" 2>/dev/null
    ip link del "$s1" 2>/dev/null
    ip link del "$s2" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

if ! ip netns add "$ns1" 2>/dev/null; then
    echo "SKIP: cannot create network namespaces here (needs root and ip netns)"
    exit 77
fi
if [ $switch = 1 ]; then
    ip netns add "$ns2" && ip netns add "$nsw" &&
    ip link add "$v1" type veth peer name "$s1" && ip link add "$v2" type veth peer name "$s2" &&
    ip link set "$v1" netns "$ns1" && ip link set "$v2" netns "$ns2" &&
    ip link set "$s1" netns "$nsw" && ip link set "$s2" netns "$nsw" &&
    ip -n "$nsw" link add br0 type bridge && ip -n "$nsw" link set "$s1" master br0 &&
    ip -n "$nsw" link set "$s2" master br0 && ip -n "$nsw" link set br0 up &&
    ip -n "$nsw" link set "$s1" up && ip -n "$nsw" link set "$s2" up || {
        echo "FAIL: lab setup (switch)"; exit 1; }
else
    ip netns add "$ns2" && ip link add "$v1" type veth peer name "$v2" &&
    ip link set "$v1" netns "$ns1" && ip link set "$v2" netns "$ns2" || {
        echo "FAIL: lab setup"; exit 1; }
fi
ip -n "$ns1" addr add 10.250.0.1/24 dev "$v1" && ip -n "$ns2" addr add 10.250.0.2/24 dev "$v2" &&
ip -n "$ns1" link set "$v1" up && ip -n "$ns2" link set "$v2" up &&
ip -n "$ns1" link set lo up && ip -n "$ns2" link set lo up || { echo "FAIL: lab setup"; exit 1; }

# random loss on both ends: a netdev ingress chain sees every frame the
# veth delivers, whatever its protocol (with --switch: at the bridge's
# ports, ahead of any XDP program on the hosts)
if [ $switch = 1 ]; then lossat="$nsw $s1,$nsw $s2"; else lossat="$ns1 $v1,$ns2 $v2"; fi
if [ -n "$loss" ] && [ "$loss" -gt 0 ]; then
    if ! command -v nft >/dev/null 2>&1; then
        echo "SKIP: --loss needs nft (nftables)"
        exit 77
    fi
    IFS=, read -r -a lossif <<<"$lossat"
    for hv in "${lossif[@]}"; do
        set -- $hv
        if ! ip netns exec "$1" nft -f - <<EON
table netdev cvia_loss {
    chain in_$2 {
        type filter hook ingress device "$2" priority 0; policy accept;
        numgen random mod 100 < $loss counter drop
    }
}
EON
        then
            echo "SKIP: cannot install nftables netdev ingress rules here"
            exit 77
        fi
    done
    echo "hosts.sh: dropping $loss% of the frames arriving at ${lossat//,/ and }"
fi

if [ -n "$rate" ]; then
    bits=${rate%bit}
    case $bits in *k) bits=$((${bits%k} * 1000)) ;; *m) bits=$((${bits%m} * 1000000)) ;;
                  *g) bits=$((${bits%g} * 1000000000)) ;; esac
    burst=$((bits / 8 / 500)); [ "$burst" -ge 65536 ] || burst=65536
    ip netns exec "$ns1" tc qdisc replace dev "$v1" root tbf rate "$rate" burst "$burst" latency 50ms &&
    ip netns exec "$ns2" tc qdisc replace dev "$v2" root tbf rate "$rate" burst "$burst" latency 50ms ||
        { echo "FAIL: tc tbf $rate"; exit 1; }
    echo "hosts.sh: both ends of the link limited to $rate"
fi

# 0 when frames were dropped (or no loss was asked for)
loss_report() {
    [ -n "$loss" ] && [ "$loss" -gt 0 ] || return 0
    local h total=0 n
    for h in "${lossif[@]}"; do
        set -- $h
        n=$(ip netns exec "$1" nft list chain netdev cvia_loss "in_$2" 2>/dev/null |
            sed -n "s/.*counter packets \([0-9]*\) bytes.*/\1/p" | head -1)
        echo "hosts.sh: loss at $2: ${n:-0} frames dropped"
        total=$((total + ${n:-0}))
    done
    [ "$total" -gt 0 ] || { echo "FAIL: --loss $loss dropped no frame (the rules saw none)"; return 1; }
}

# an XDP program on either host's interface (ip shows "xdp", "xdpgeneric")
xdp_on() {  # NS IF
    ip -n "$1" link show dev "$2" 2>/dev/null | grep -qE ' (xdp|xdpgeneric|xdpdrv)[ /]'
}
xdp_left() {
    local i
    for i in $(seq 100); do   # the last descriptor closes as the process exits
        xdp_on "$ns1" "$v1" || xdp_on "$ns2" "$v2" || return 1
        sleep 0.05
    done
    return 0
}

# --ping: wait for both programs (60 s at most), ping both ways, release the run
if [ $ping = 1 ]; then
    export FUNC_NET_HOLD=$dir/hold
    (
        for i in $(seq 3000); do
            xdp_on "$ns1" "$v1" && xdp_on "$ns2" "$v2" && break
            sleep 0.02
        done
        if xdp_on "$ns1" "$v1" && xdp_on "$ns2" "$v2"; then
            echo attached >"$dir/ping"
            ip netns exec "$ns1" ping -c 2 -i 0.2 -W 2 10.250.0.2 >"$dir/ping.log" 2>&1 &&
            ip netns exec "$ns2" ping -c 2 -i 0.2 -W 2 10.250.0.1 >>"$dir/ping.log" 2>&1 &&
                echo answered >>"$dir/ping"
        fi
        touch "$dir/hold"
    ) &
    watcher=$!
fi

# each rank enters its host's namespace, then becomes the test program
cat > "$dir/place" <<EOS
#!/bin/sh
if [ \$((CVIA_RANK % 2)) -eq 0 ]; then ns=$ns1; else ns=$ns2; fi
exec ip netns exec \$ns "$prog" "\$@"
EOS
chmod +x "$dir/place"
bash "$here/run.sh" $expect "$run" "$np" "$dir/place" "$case"
rc=$?
loss_report || rc=1
if [ $ping = 1 ]; then
    wait "$watcher" 2>/dev/null; watcher=""
    cat "$dir/ping.log" 2>/dev/null
    grep -q attached "$dir/ping" 2>/dev/null ||
        { echo "FAIL: --ping: no XDP program appeared on both interfaces"; rc=1; }
    grep -q answered "$dir/ping" 2>/dev/null ||
        { echo "FAIL: --ping: ARP/IP across the interfaces failed while the XDP programs ran"; rc=1; }
fi
if [ "${CVIA_NET:-}" = xdp ] && xdp_left; then
    echo "FAIL: an XDP program is still attached after the run:"
    ip -n "$ns1" link show dev "$v1"; ip -n "$ns2" link show dev "$v2"
    rc=1
fi
exit $rc
