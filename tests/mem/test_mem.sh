#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# Memory tiers (issue 4), from the command line:
#  - decisions on recorded machines: each tests/mem/*.test names a topology
#    of tests/data/topologies (source:), an optional environment (env:), a
#    command (cvia-info --tiers ..., cvia-bench mbw --plan ...) and the
#    expected output (target:, stdout and stderr, "# exit N" when not 0);
#    CVIA_UPDATE_EXPECTED=1 rewrites the targets;
#  - live: the shm segment's tier (CVIA_MEM_SHM_KIND) through cvia-run,
#    really placed (move_pages, numa_maps); hbw refused, hbw-preferred
#    with one warning per rank, a bad kind; cvia-info --mem --pid on a
#    running rank; cvia-bench mbw with 1 and 2 pairs, every message
#    checked, and its footprint CSV.
# Usage: test_mem.sh BUILD_DIR SOURCE_DIR FUNC_MEM. TAP output, plan at the
# end. Every command is bounded by timeout(1); no timing assertion.
set -u

BUILD=${1:?usage: $0 BUILD_DIR SOURCE_DIR FUNC_MEM}
SRC=${2:?usage: $0 BUILD_DIR SOURCE_DIR FUNC_MEM}
FUNC=${3:?usage: $0 BUILD_DIR SOURCE_DIR FUNC_MEM}
TOPOS=$SRC/tests/data/topologies
MULT=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
LIMIT=$((20 * MULT))
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_mem.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT

update=${CVIA_UPDATE_EXPECTED:-0}
for v in $(compgen -e | grep '^CVIA_'); do unset "$v"; done
# Sanitizer builds: hwloc's pci plugin leaks (see tests/tools/test_cli.sh).
if grep -qs '^CVIA_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt"; then
    export HWLOC_COMPONENTS=-pci
    echo "# sanitizer build: HWLOC_COMPONENTS=-pci (libpciaccess leak seen by LSan)"
fi

. "$(dirname "$0")/../tap.sh"
show() { echo "rc=$rc" "stdout: $(head -c 600 "$WORK/out")" "stderr: $(head -c 600 "$WORK/err")"; }

INFO=$BUILD/cvia-info BENCH=$BUILD/cvia-bench RUN=$BUILD/cvia-run
for b in "$INFO" "$BENCH" "$RUN" "$FUNC"; do
    [ -x "$b" ] || { echo "Bail out! $b not built"; exit 1; }
done

# ------------------------------------------------ decisions on recorded machines

if [ ! -d "$TOPOS" ]; then
    skip "recorded topologies ($TOPOS not found)"
else
    for t in "$SRC"/tests/mem/*.test; do
        name=$(basename "$t" .test)
        source=$(sed -n 's/^source: *//p' "$t")
        cmd=$(sed -n 's/^command: *//p' "$t")
        target=$(sed -n 's/^target: *//p' "$t")
        envs=$(sed -n 's/^env: *//p' "$t")
        desc=$(sed -n '1s/^# *//p' "$t")
        tool=${cmd%% *} args=${cmd#* }
        # shellcheck disable=SC2086
        timeout -k 2 "$LIMIT" env CVIA_TOPOLOGY="$TOPOS/$source" $envs "$BUILD/$tool" $args \
            >"$WORK/got" 2>&1 </dev/null
        rc=$?
        [ $rc = 0 ] || echo "# exit $rc" >>"$WORK/got"
        if [ "$update" = 1 ]; then
            cp "$WORK/got" "$SRC/tests/mem/$target"
            ok "$name: $target rewritten"
        elif [ ! -f "$SRC/tests/mem/$target" ]; then
            fail "$name: no $target (CVIA_UPDATE_EXPECTED=1 writes it)"
        else
            check "$name: $desc" "$(cmp -s "$WORK/got" "$SRC/tests/mem/$target"; echo $?)" \
                "$(diff "$SRC/tests/mem/$target" "$WORK/got" | head -8 | tr '\n' '|')"
        fi
    done
fi

# ------------------------------------------------------------------ live

bounded "$INFO" --tiers --kind node:0 --kind ddr
check "cvia-info --tiers on this machine: exit 0, node:0 and ddr resolve" \
    "$([ "$rc" = 0 ] && grep -q '^node:0 .*bind to node 0' "$WORK/out" &&
       grep -q '^ddr ' "$WORK/out"; echo $?)" "$(show)"
live_hbw=$(grep -c '^[0-9]* *hbw ' "$WORK/out")

job() {     # ENV... -- CASE: func_mem under cvia-run, 2 ranks
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    bounded env "${envs[@]}" "$RUN" -n 2 --timeout "$LIMIT" -- "$FUNC" "$@"
}

job CVIA_MEM_SHM_KIND=node:0 FUNC_NODE=0 FUNC_POLICY=bind:0 FUNC_KIND=node:0 -- shm
check "CVIA_MEM_SHM_KIND=node:0: each rank's segment is bound to node 0 (numa_maps) and every page is there (move_pages); node:0 buffers carry checked messages" \
    "$([ "$rc" = 0 ] && [ "$(grep -c 'policy bind:0' "$WORK/out")" = 2 ] &&
       [ "$(grep -c 'messages checked' "$WORK/out")" = 2 ]; echo $?)" "$(show)"

job FUNC_NODE=0 FUNC_POLICY=default -- shm
check "CVIA_MEM_SHM_KIND unset: the segment has no policy (first touch), messages checked" \
    "$([ "$rc" = 0 ] && [ "$(grep -c 'policy default' "$WORK/out")" = 2 ]; echo $?)" "$(show)"

if [ "$live_hbw" = 0 ]; then
    job CVIA_MEM_SHM_KIND=hbw -- shm
    check "CVIA_MEM_SHM_KIND=hbw without high-bandwidth memory: cvia_init fails with ENODEV, said why" \
        "$([ "$rc" != 0 ] && [ "$rc" -lt 124 ] && grep -q 'expected-error: init: ENODEV' "$WORK/out" &&
           grep -q 'CVIA_MEM_SHM_KIND: hbw: no high-bandwidth tier' "$WORK/err"; echo $?)" "$(show)"
    job CVIA_MEM_SHM_KIND=hbw-preferred FUNC_NODE=0 FUNC_POLICY=default -- shm
    check "CVIA_MEM_SHM_KIND=hbw-preferred without it: default memory, one warning per rank" \
        "$([ "$rc" = 0 ] && [ "$(grep -c 'warn mem: .*hbw-preferred' "$WORK/err")" = 2 ] &&
           [ "$(grep -c 'messages checked' "$WORK/out")" = 2 ]; echo $?)" "$(show)"
else
    skip "CVIA_MEM_SHM_KIND=hbw refused (this machine has high-bandwidth memory)"
    skip "CVIA_MEM_SHM_KIND=hbw-preferred falls back (this machine has high-bandwidth memory)"
fi
job CVIA_MEM_SHM_KIND=fast -- shm
check "CVIA_MEM_SHM_KIND=fast: cvia_init fails with ECONFIG, the error names the kind" \
    "$([ "$rc" != 0 ] && [ "$rc" -lt 124 ] && grep -q 'expected-error: init: CVIA_ECONFIG' "$WORK/out" &&
       grep -q "unknown memory kind 'fast'" "$WORK/err"; echo $?)" "$(show)"

# cvia-info --mem --pid on a running rank
rm -f "$WORK/pid" "$WORK/go"
FUNC_PIDFILE=$WORK/pid FUNC_GOFILE=$WORK/go CVIA_MEM_SHM_KIND=node:0 \
    timeout -k 2 "$LIMIT" "$RUN" -n 2 --timeout "$LIMIT" -- "$FUNC" hold >"$WORK/hold.out" 2>&1 &
holder=$!
for _ in $(seq 1 100); do [ -s "$WORK/pid" ] && break; sleep 0.1; done
if [ -s "$WORK/pid" ]; then
    bounded "$INFO" --mem --pid "$(cat "$WORK/pid")"
    # node 0: shm segment (bound to it) and 4 MiB of node:0 arena
    line=$(grep -E '^0 ' "$WORK/out")
    check "cvia-info --mem --pid of a running rank: its segment and its 4 MiB arena block on node 0, within its total" \
        "$([ "$rc" = 0 ] && echo "$line" | awk '{ exit !($3 != "0" && $6 == "MiB" && $5 >= 4.0) }' &&
           grep -q 'corevia region' "$WORK/out"; echo $?)" "$(show)" "line: $line"
else
    fail "func_mem hold wrote its pid" "$(cat "$WORK/hold.out")"
fi
touch "$WORK/go"
wait "$holder"
check "func_mem hold: the job ends cleanly" "$?" "$(cat "$WORK/hold.out")"
bounded "$INFO" --mem --pid 999999999
check "cvia-info --mem --pid of no process: exit 2 or 1, one line" \
    "$([ "$rc" = 1 -o "$rc" = 2 ] && [ "$(wc -l <"$WORK/err")" = 1 ]; echo $?)" "$(show)"

# --mem is about this machine, even with a recorded one in CVIA_TOPOLOGY:
# its own nodes (not KNL's 0-7) with their own sizes (MemTotal of the node,
# not its free memory, which the column printed before)
live_nodes=$(cd /sys/devices/system/node 2>/dev/null && ls -d node[0-9]* | sed 's/node//' | sort -n | tr '\n' ' ')
size0=$(awk '/MemTotal/ { printf "%.1f", $4 / 1048576 }' /sys/devices/system/node/node0/meminfo 2>/dev/null)
CVIA_TOPOLOGY=$TOPOS/knl.xml bounded "$INFO" --mem
got_nodes=$(awk '/^[0-9]+ / { print $1 }' "$WORK/out" | tr '\n' ' ')
check "cvia-info --mem with CVIA_TOPOLOGY=knl.xml: this machine's nodes ($live_nodes) and node 0's own size ($size0 GiB), said once" \
    "$([ "$rc" = 0 ] && [ "$got_nodes" = "$live_nodes" ] &&
       awk -v s="$size0" '/^0 / { exit !($(NF-1) == s && $NF == "GiB") }' "$WORK/out" &&
       [ "$(grep -c 'CVIA_TOPOLOGY (.*knl.xml) names a recorded machine' "$WORK/out")" = 1 ]; echo $?)" \
    "$(show)" "nodes: $got_nodes"

# cvia-bench mbw, live
bounded "$BENCH" mbw --pairs 1 --sizes 1-64k:x8 --iters 3 --warmup 1 --check \
    --footprint "$WORK/foot.csv" -q
check "mbw, 1 pair, every message checked: exit 0, a row per size, the footprint per node" \
    "$([ "$rc" = 0 ] && [ "$(grep -cE '^[0-9]+ ' "$WORK/out")" = 6 ] &&
       grep -q '^node,tier,shm_bytes,arena_bytes,corevia_bytes,ranks_total_bytes,ranks_unique_bytes$' "$WORK/foot.csv" &&
       grep -qE '^0,' "$WORK/foot.csv"; echo $?)" "$(show)" "$(cat "$WORK/foot.csv" 2>/dev/null)"
bounded "$BENCH" mbw --pairs 2 --sizes 1,4k,64k,1m --iters 2 --warmup 1 --check \
    --buffer-kind node:0 --csv -q
cores=$(nproc)
check "mbw, 2 pairs, node:0 buffers, checked, CSV: exit 0, 4 rows$([ "$cores" -lt 4 ] && echo ', oversubscription said')" \
    "$([ "$rc" = 0 ] && [ "$(grep -cE '^[0-9]+,2,compact,node:0,' "$WORK/out")" = 4 ] &&
       { [ "$cores" -ge 4 ] || grep -q '^# oversubscribed: 4 ranks' "$WORK/out"; }; echo $?)" "$(show)"
bounded "$BENCH" mbw --pairs 1 --buffer-kind fast
check "mbw --buffer-kind fast: exit 2, one line naming it" \
    "$([ "$rc" = 2 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q "'fast'" "$WORK/err"; echo $?)" "$(show)"
bounded "$BENCH" mbw latency
check "mbw with another benchmark: exit 2" "$([ "$rc" = 2 ]; echo $?)" "$(show)"
bounded "$BENCH" mbw --pairs 1 --pairing intra-tile --plan
if grep -q 'share an L2' "$WORK/out"; then
    check "mbw intra-tile plan on this machine" "$([ "$rc" = 0 ]; echo $?)" "$(show)"
else
    check "mbw intra-tile where no two cores share an L2: exit 3, said why" \
        "$([ "$rc" = 3 ] && grep -q 'share an L2' "$WORK/err"; echo $?)" "$(show)"
fi
bounded env CVIA_TOPOLOGY="$TOPOS/knl.xml" "$BENCH" mbw --pairs 2 --sizes 1k
check "mbw on a recorded topology without --plan: exit 2, not run here" \
    "$([ "$rc" = 2 ] && grep -q 'not run here' "$WORK/err"; echo $?)" "$(show)"

# nothing left behind in /dev/shm by the jobs above
left=
for f in /dev/shm/cvia-"$(id -u)"-*; do
    [ -O "$f" ] || continue   # not func.squat's files (another user's)
    pid=$(basename "$f" | cut -d- -f3)
    kill -0 "$pid" 2>/dev/null || left="$left $f"
done
check "no segment of a dead process left in /dev/shm" "$([ -z "$left" ]; echo $?)" "left:$left"

echo "1..$n"
[ "$failed" = 0 ]
