#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# libfabric's fi_pingpong on the corevia provider between two namespace
# hosts of scripts/netlab.sh over udp, launcher-free (two plain processes,
# names exchanged by fi_pingpong itself) against the same two processes as
# the ranks of one cvia-run job, in rounds whose order rotates; prints the
# client's usec/xfer per round and the medians with their ratio.
#
#   bench-dyn-hosts.sh [-r ROUNDS] [-b BUILD_DIR] [-s "SIZE:ITERS ..."] [-L BASE_LIB_DIR]
#
# -L: a third column, the cvia-run job again with another libcorevia.so.0
# (say the branch point's) found first through LD_LIBRARY_PATH: the
# provider is this build's, the core and transports are that one's.
#
# Needs root (network namespaces) and fi_pingpong (libfabric-bin).
set -euo pipefail

rounds=7 build=build sizes="64:2000 1048576:100" base=
while getopts r:b:s:L:h o; do
    case $o in
        L) base=$(cd "$OPTARG" && pwd) ;;
        r) rounds=$OPTARG ;;
        b) build=$OPTARG ;;
        s) sizes=$OPTARG ;;
        h) sed -n 5,17p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) exit 2 ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench-dyn-hosts: -r: a positive count, not '$rounds'" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
command -v fi_pingpong >/dev/null || { echo "bench-dyn-hosts: fi_pingpong missing (libfabric-bin)" >&2; exit 1; }
tag=bd$$
work=$(mktemp -d)
trap '"$top/scripts/netlab.sh" down --tag "$tag" >/dev/null 2>&1; rm -rf "$work"' EXIT
"$top/scripts/netlab.sh" up --tag "$tag" --hosts 2 >/dev/null
server=$("$top/scripts/netlab.sh" addr --tag "$tag" h1 h2)
unset CVIA_BOOT_ADDR CVIA_RANK CVIA_SIZE CVIA_JOBID PMIX_RANK PMIX_NAMESPACE
export FI_PROVIDER_PATH=$build/fabric CVIA_NET=udp CVIA_FI_WIREUP=first-use
port=$((40000 + $$ % 20000))

cat >"$work/rank.sh" <<'EOS'
#!/bin/sh
# rank.sh SIZE ITERS PORT SERVER OUT: server as rank 0 (or ROLE=server)
role=${ROLE:-$([ "${CVIA_RANK:-1}" = 0 ] && echo server || echo client)}
if [ "$role" = server ]; then
    exec fi_pingpong -p corevia -e rdm -S "$1" -I "$2" -B "$3" > "$5.server" 2>&1
fi
sleep 0.5
exec fi_pingpong -p corevia -e rdm -S "$1" -I "$2" -P "$3" "$4" > "$5.client" 2>&1
EOS
chmod +x "$work/rank.sh"

# one run: prints the client's usec/xfer
run() {   # MODE SIZE ITERS
    local out=$work/out port_now=$((port + RANDOM % 1000))
    rm -f "$out".*
    if [ "$1" = free ]; then
        ROLE=server timeout 120 "$top/scripts/netlab.sh" exec --tag "$tag" h1 \
            "$work/rank.sh" "$2" "$3" "$port_now" "$server" "$out" &
        local ps=$!
        ROLE=client timeout 120 "$top/scripts/netlab.sh" exec --tag "$tag" h2 \
            "$work/rank.sh" "$2" "$3" "$port_now" "$server" "$out" || true
        wait "$ps" || true
    elif [ "$1" = base ]; then
        LD_LIBRARY_PATH=$base "$build/cvia-run" -n 2 --timeout 120s --hosts "cvia-$tag-h1,cvia-$tag-h2" \
            --bind none -- "$work/rank.sh" "$2" "$3" "$port_now" "$server" "$out" || true
    else
        "$build/cvia-run" -n 2 --timeout 120s --hosts "cvia-$tag-h1,cvia-$tag-h2" --bind none \
            -- "$work/rank.sh" "$2" "$3" "$port_now" "$server" "$out" || true
    fi
    awk '$1 ~ /^[0-9]/ && $3 ~ /^=/ { print $7 }' "$out.client" 2>/dev/null | tail -1
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); fi_pingpong over udp, client usec/xfer"
for sz in $sizes; do
    size=${sz%%:*} iters=${sz##*:}
    : >"$work/free.$size"; : >"$work/run.$size"; : >"$work/base.$size"
    for ((r = 0; r < rounds; r++)); do
        if [ -n "$base" ]; then
            case $((r % 3)) in 0) order="free run base" ;; 1) order="run base free" ;; *) order="base free run" ;; esac
        elif ((r % 2)); then order="run free"; else order="free run"; fi
        line="size $size round $r:"
        for m in $order; do
            v=$(run "$m" "$size" "$iters")
            [ -n "$v" ] && echo "$v" >>"$work/$m.$size"
            line+=" $m ${v:-failed}"
        done
        echo "$line"
    done
    f=$(median <"$work/free.$size") c=$(median <"$work/run.$size")
    echo "size $size: medians launcher-free $f, cvia-run $c, free/cvia-run $(awk -v a="$f" -v b="$c" 'BEGIN { if (b > 0) printf "%.2f", a / b }')"
    if [ -n "$base" ]; then
        b=$(median <"$work/base.$size")
        echo "size $size: median cvia-run with $base's library $b, this build / that one $(awk -v a="$c" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b }')"
    fi
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
