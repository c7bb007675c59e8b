#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run a functional test over two "hosts": network namespaces of our own,
# joined by a veth pair, ranks alternating between them (rank r on host
# r % 2 + 1): shm inside a host, the network provider (CVIA_NET) between.
#   hosts.sh [--expect-fail] [--loss PCT] [--rate RATE] CVIA_RUN NP PROG CASE
# --loss PCT: every frame arriving on either end of the veth pair is
# dropped with probability PCT % (nftables, netdev ingress hook: IP and raw
# Ethernet frames alike, ARP included); the counts are printed at the end.
# --rate RATE: both ends of the veth pair send at most RATE (tc tbf, as
# scripts/netlab.sh --rate: a burst of 2 ms or 64 KiB, frames queue up to
# 50 ms), e.g. 100mbit: a link slower than the hosts, where the socket's
# send buffer fills while the queue drains.
# Exit 77 (skipped) where namespaces (or, with --loss, nftables' netdev
# family) cannot be had. Removes everything it made, also on failure;
# traffic stays inside these namespaces.
set -u
expect="" loss="" rate=""
while [ $# -gt 0 ]; do
    case "$1" in
        --expect-fail) expect=--expect-fail; shift ;;
        --loss) loss=${2:-}; shift 2 || break ;;
        --rate) rate=${2:-}; shift 2 || break ;;
        *) break ;;
    esac
done
usage="usage: hosts.sh [--expect-fail] [--loss PCT] [--rate RATE] CVIA_RUN NP PROG CASE"
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
dir=$(mktemp -d) || exit 1

cleanup() {
    ip netns del "$ns1" 2>/dev/null
    ip netns del "$ns2" 2>/dev/null
    ip link del "$v1" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

if ! ip netns add "$ns1" 2>/dev/null; then
    echo "SKIP: cannot create network namespaces here (needs root and ip netns)"
    exit 77
fi
ip netns add "$ns2" &&
ip link add "$v1" type veth peer name "$v2" &&
ip link set "$v1" netns "$ns1" && ip link set "$v2" netns "$ns2" &&
ip -n "$ns1" addr add 10.250.0.1/24 dev "$v1" && ip -n "$ns2" addr add 10.250.0.2/24 dev "$v2" &&
ip -n "$ns1" link set "$v1" up && ip -n "$ns2" link set "$v2" up &&
ip -n "$ns1" link set lo up && ip -n "$ns2" link set lo up || { echo "FAIL: lab setup"; exit 1; }

# random loss on both ends: a netdev ingress chain sees every frame the
# veth delivers, whatever its protocol
if [ -n "$loss" ] && [ "$loss" -gt 0 ]; then
    if ! command -v nft >/dev/null 2>&1; then
        echo "SKIP: --loss needs nft (nftables)"
        exit 77
    fi
    for hv in "$ns1 $v1" "$ns2 $v2"; do
        set -- $hv
        if ! ip netns exec "$1" nft -f - <<EON
table netdev cvia_loss {
    chain ingress {
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
    echo "hosts.sh: dropping $loss% of the frames arriving at $v1 and $v2"
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

loss_report() {
    [ -n "$loss" ] && [ "$loss" -gt 0 ] || return 0
    local h
    for h in "$ns1 $v1" "$ns2 $v2"; do
        set -- $h
        ip netns exec "$1" nft list chain netdev cvia_loss ingress 2>/dev/null |
            sed -n "s/.*counter packets \([0-9]*\) bytes \([0-9]*\).*/hosts.sh: loss at $2: \1 frames (\2 bytes) dropped/p"
    done
}

# each rank enters its host's namespace, then becomes the test program
cat > "$dir/place" <<EOS
#!/bin/sh
if [ \$((CVIA_RANK % 2)) -eq 0 ]; then ns=$ns1; else ns=$ns2; fi
exec ip netns exec \$ns "$prog" "\$@"
EOS
chmod +x "$dir/place"
bash "$here/run.sh" $expect "$run" "$np" "$dir/place" "$case"
rc=$?
loss_report
exit $rc
