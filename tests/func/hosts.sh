#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run a functional test over two "hosts": network namespaces of our own,
# joined by a veth pair, ranks alternating between them (rank r on host
# r % 2 + 1): shm inside a host, the network provider (CVIA_NET) between.
#   hosts.sh [--expect-fail] CVIA_RUN NP PROG CASE
# Exit 77 (skipped) where namespaces cannot be made. Removes everything it
# made, also on failure; traffic stays inside these namespaces.
set -u
expect=""
if [ "${1:-}" = --expect-fail ]; then expect=--expect-fail; shift; fi
[ $# -eq 4 ] || { echo "usage: hosts.sh [--expect-fail] CVIA_RUN NP PROG CASE" >&2; exit 2; }
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

# each rank enters its host's namespace, then becomes the test program
cat > "$dir/place" <<EOS
#!/bin/sh
if [ \$((CVIA_RANK % 2)) -eq 0 ]; then ns=$ns1; else ns=$ns2; fi
exec ip netns exec \$ns "$prog" "\$@"
EOS
chmod +x "$dir/place"
bash "$here/run.sh" $expect "$run" "$np" "$dir/place" "$case"
