#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# net_pingpong (bench/peers), the kernel baseline of scripts/repro-mvia.sh
# (issue 7): --help and usage errors, then a ping-pong over tcp, udp and raw
# frames between two network namespaces of our own for a couple of sizes,
# checking that the CSV is sane (not how fast anything is), and that a
# client with no server fails within its --timeout instead of hanging.
# TAP output. Usage: test_repro_mvia.sh NET_PINGPONG SOURCE_DIR
# Exit 77 (skipped) where namespaces cannot be made (not root, no ip netns);
# the lab is always removed.
set -u

NPP=${1:?usage: $0 NET_PINGPONG SOURCE_DIR}
SRC=${2:?usage: $0 NET_PINGPONG SOURCE_DIR}
MULT=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
LIMIT=$((30 * MULT))                    # per command, seconds
NETLAB=$SRC/scripts/netlab.sh
TAG="np$$"
TAG=${TAG:0:12}
H1=cvia-$TAG-h1 H2=cvia-$TAG-h2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_repro_mvia.XXXXXX") || exit 1
LAB=0
SPIDS=()

. "$(dirname "$0")/../tap.sh"
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name" "$(diag)"; fi; }
diag() { echo "rc=$rc"; head -c 1500 "$WORK/out" "$WORK/err" 2>/dev/null; }

cleanup() {
    local p
    for p in "${SPIDS[@]}"; do kill "$p" 2>/dev/null; done
    [ $LAB = 1 ] && bash "$NETLAB" down --tag "$TAG" >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

run() { timeout "$LIMIT" "$@" >"$WORK/out" 2>"$WORK/err"; rc=$?; }

# ---- no lab needed --------------------------------------------------------------
run "$NPP" --help
check "--help exits 0 and shows the usage" eval '[ $rc -eq 0 ] && grep -q "^Usage: net_pingpong" "$WORK/out" && grep -q -- "--transport" "$WORK/out"'
run "$NPP" --client 198.18.1.2 --transport carrier-pigeon
check "an unknown transport is a usage error (exit 2, said)" eval '[ $rc -eq 2 ] && grep -q "transport" "$WORK/err"'
run "$NPP" --client 198.18.1.2 --sizes 0
check "size 0 is a usage error" eval '[ $rc -eq 2 ] && grep -q "sizes" "$WORK/err"'
run "$NPP"
check "neither --server nor --client is a usage error" eval '[ $rc -eq 2 ] && grep -q -- "--server" "$WORK/err"'
run "$NPP" --server --client 198.18.1.2
check "both --server and --client is a usage error" eval '[ $rc -eq 2 ]'
run bash "$SRC/scripts/repro-mvia.sh" --help
check "repro-mvia.sh --help exits 0" eval '[ $rc -eq 0 ] && grep -q "^Usage: scripts/repro-mvia.sh" "$WORK/out"'
run bash "$SRC/scripts/repro-mvia.sh" --repeat zero
check "repro-mvia.sh: a bad argument exits 2" eval '[ $rc -eq 2 ] && grep -q -- "--repeat" "$WORK/err"'
run bash "$SRC/scripts/repro-mvia.sh" --help
check "repro-mvia.sh --help documents eth's ring and socket series" \
    eval 'grep -q "eth-sock-mM" "$WORK/out" && grep -q "CVIA_ETH_RING=no" "$WORK/out" && grep -q "CVIA_ETH_RING=yes" "$WORK/out"'
check "repro-mvia.sh --help documents the xdp series" \
    eval 'grep -q "xdp-mM" "$WORK/out" && grep -q "CVIA_XDP_FALLBACK=no" "$WORK/out"'
run bash "$SRC/scripts/repro-mvia.sh" --segments 1472,x
check "repro-mvia.sh: a bad --segments exits 2" eval '[ $rc -eq 2 ] && grep -q -- "--segments" "$WORK/err"'
run bash "$SRC/scripts/repro-mvia.sh" --peers eth,eth-socket
check "repro-mvia.sh: an unknown series exits 2, naming it" eval '[ $rc -eq 2 ] && grep -q -- "eth-socket" "$WORK/err"'
run bash "$SRC/scripts/repro-mvia.sh" --loss 1,101
check "repro-mvia.sh: a loss rate over 100 % exits 2, naming --loss" eval '[ $rc -eq 2 ] && grep -q -- "--loss.*101" "$WORK/err"'
run bash "$SRC/scripts/repro-mvia.sh" --loss 0.125
check "repro-mvia.sh: a loss rate finer than 0.01 % exits 2" eval '[ $rc -eq 2 ] && grep -q -- "--loss" "$WORK/err"'
run bash "$SRC/scripts/repro-mvia.sh" --loss-base "$WORK"
check "repro-mvia.sh: --loss-base without --loss exits 2" eval '[ $rc -eq 2 ] && grep -q -- "--loss-base goes with --loss" "$WORK/err"'
run bash "$SRC/scripts/repro-mvia.sh" --help
check "repro-mvia.sh --help documents --loss" eval '[ $rc -eq 0 ] && grep -q -- "--loss LIST" "$WORK/out" && grep -q -- "--loss-base DIR" "$WORK/out"'

# ---- the lab ----------------------------------------------------------------------
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! ip netns add "cvia-$TAG-probe" 2>/dev/null; then
    echo "# SKIP: cannot create network namespaces here (needs root and ip netns)"
    echo "1..$n"
    exit 77
fi
ip netns del "cvia-$TAG-probe"
LAB=1
if ! bash "$NETLAB" up --tag "$TAG" --hosts 2 --mtu 1500 >"$WORK/lab" 2>&1; then
    echo "# SKIP: netlab.sh up failed: $(tail -n 3 "$WORK/lab" | tr '\n' ' ')"
    echo "1..$n"
    exit 77
fi
ADDR2=$(bash "$NETLAB" addr --tag "$TAG" h2 h1)
MAC2=$(ip -n "$H2" -o link show dev v1-1 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')

HEADER="benchmark,size_bytes,iterations,latency_us,latency_p50_us,latency_p99_us,latency_min_us,bandwidth_mb_s,msg_rate_per_s,buffers"
# CSV sanity: the header, one latency and one bw row per size, numbers that
# make sense (positive, min <= p50 <= p99), nothing else
sane_csv() {  # file sizes
    awk -F, -v hdr="$HEADER" -v sizes="$2" '
        BEGIN { ns = split(sizes, s, ","); for (i = 1; i <= ns; i++) want[s[i]] = 1 }
        NR == 1 { if ($0 != hdr) { print "bad header: " $0; bad = 1 }; next }
        $1 == "latency" {
            if (!($2 in want) || $3 <= 0 || $4 <= 0 || $5 <= 0 || $6 < $5 || $7 > $5 || $7 <= 0) { print "bad row: " $0; bad = 1 }
            lat[$2]++; next }
        $1 == "bw" {
            if (!($2 in want) || $3 <= 0 || $8 <= 0 || $9 <= 0) { print "bad row: " $0; bad = 1 }
            bw[$2]++; next }
        { print "unexpected line: " $0; bad = 1 }
        END { for (x in want) if (lat[x] != 1 || bw[x] != 1) { print "size " x ": " lat[x]+0 " latency, " bw[x]+0 " bw rows"; bad = 1 }
              exit bad }' "$1" >&2
}

SIZES=32,4096
for tr in tcp udp raw; do
    if [ $tr = raw ]; then addr=$MAC2; else addr=$ADDR2; fi
    timeout "$LIMIT" ip netns exec "$H2" "$NPP" --server -t $tr --timeout 10 >"$WORK/server" 2>&1 &
    spid=$!
    SPIDS+=("$spid")
    # 4096 B is three datagrams over udp and raw at MTU 1500; --check verifies every byte
    run ip netns exec "$H1" "$NPP" --client "$addr" -t $tr --sizes $SIZES --iters 50 --warmup 5 \
        --window 8 --check --timeout 10
    wait "$spid"; src=$?
    check "$tr: client and server exit 0" eval '[ $rc -eq 0 ] && [ $src -eq 0 ]'
    check "$tr: sane CSV for $SIZES B, latency and bw" sane_csv "$WORK/out" "$SIZES"
done

# a client with nobody to talk to fails within its --timeout, saying so
for tr in udp raw; do
    if [ $tr = raw ]; then addr=$MAC2; else addr=$ADDR2; fi
    t0=$(date +%s)
    run ip netns exec "$H1" "$NPP" --client "$addr" -t $tr --sizes 32 --iters 5 --timeout 1
    t1=$(date +%s)
    check "$tr: no server: exit 1 within the timeout, with a message" \
        eval '[ $rc -eq 1 ] && [ $((t1 - t0)) -le 5 ] && grep -q "no $tr server answered" "$WORK/err"'
done

echo "1..$n"
[ $failed -eq 0 ]
