#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# cvia-bench's placement, memcpy, crossover, --buffers and --arena: the
# pair --plan picks on recorded machines (tests/data/topologies) for each
# class, the error for a class that does not exist, and short runs of each
# that must give valid CSV / JSON. No timing is asserted. TAP, plan at the end.
# Usage: test_bench.sh BUILD_DIR SOURCE_DIR
set -u

BUILD=${1:?usage: $0 BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: $0 BUILD_DIR SOURCE_DIR}
MULT=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
LIMIT=$((20 * MULT))                    # per command, seconds
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_bench.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
TOPO=$SRC/tests/data/topologies

for v in $(compgen -e | grep '^CVIA_'); do unset "$v"; done
# As in test_cli.sh: hwloc's pci plugin leaks libpciaccess's memory, which
# LeakSanitizer reports whenever this machine's topology is loaded.
if grep -qs '^CVIA_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt"; then
    export HWLOC_COMPONENTS=-pci
    echo "# sanitizer build: HWLOC_COMPONENTS=-pci (libpciaccess leak seen by LSan)"
fi

. "$(dirname "$0")/../tap.sh"
show() { echo "rc=$rc" "stdout: $(head -c 400 "$WORK/out")" "stderr: $(head -c 400 "$WORK/err")"; }

BENCH=$BUILD/cvia-bench
[ -x "$BENCH" ] || { echo "Bail out! $BENCH not built"; exit 1; }
PY=$(command -v python3 || true)
json_ok() {   # FILE PYTHON-EXPR-ON-d: valid JSON and the expression holds
    [ -n "$PY" ] || return 0
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}
csv_ok() {    # FILE NCOLS MINROWS: a header and rectangular rows of NCOLS cells
    awk -F, -v c="$2" -v r="$3" 'NF != c { bad = 1 } END { exit (bad || NR < r + 1) }' "$1"
}

# ---------------------------------------------------- --plan on recorded machines

# file | class | expected "CPU0,CPU1" or none (what lstopo shows: core L#i has PU P#i
# on these machines)
while IFS='|' read -r file cls want; do
    [ -n "$file" ] || continue
    if [ ! -r "$TOPO/$file" ]; then
        skip "--plan --placement $cls on $file ($TOPO/$file not found)"
        continue
    fi
    bounded env CVIA_TOPOLOGY="$TOPO/$file" "$BENCH" --plan --placement "$cls"
    if [ "$want" = none ]; then
        check "$file: --plan --placement $cls: exit 3, 'does not exist' with the reason, no pair" \
            "$([ "$rc" = 3 ] && grep -q "placement $cls does not exist" "$WORK/err" &&
               grep -qE "^$cls +none " "$WORK/out"; echo $?)" "$(show)"
    else
        check "$file: --plan --placement $cls: cpus $want" \
            "$([ "$rc" = 0 ] && grep -qE "^$cls +$want " "$WORK/out" && [ ! -s "$WORK/err" ]; echo $?)" "$(show)"
    fi
done <<'EOF'
knl.xml|l2|0,1
knl.xml|l3|none
knl.xml|package|0,2
knl.xml|remote|none
Intel-KnightsLanding-XeonPhi-7210.xml|l2|0,1
64amd64-4p2n4ca2co.xml|l2|0,1
64amd64-4p2n4ca2co.xml|l3|0,2
64amd64-4p2n4ca2co.xml|package|0,8
64amd64-4p2n4ca2co.xml|remote|0,16
64amd64-4p2n4ca2co.xml|any|0,1
AMD-K10-MagnyCours-2xOpteron-6164HE.xml|l2|none
AMD-K10-MagnyCours-2xOpteron-6164HE.xml|l3|0,1
AMD-K10-MagnyCours-2xOpteron-6164HE.xml|package|0,6
AMD-K10-MagnyCours-2xOpteron-6164HE.xml|remote|0,12
EOF

OPT=$TOPO/64amd64-4p2n4ca2co.xml
if [ -r "$OPT" ]; then
    bounded env CVIA_TOPOLOGY="$OPT" "$BENCH" --plan --placement l3 --cpus 8-63
    check "--cpus 8-63 on the Opteron: l3 pair 8,10 (the first usable module's neighbour)" \
        "$([ "$rc" = 0 ] && grep -qE '^l3 +8,10 ' "$WORK/out"; echo $?)" "$(show)"
    bounded env CVIA_TOPOLOGY="$OPT" "$BENCH" --plan --placement remote --cpus 0-15
    check "--cpus 0-15 (one package) on the Opteron: remote does not exist, exit 3" \
        "$([ "$rc" = 3 ] && grep -q 'all in one package' "$WORK/err"; echo $?)" "$(show)"
    bounded env CVIA_TOPOLOGY="$OPT" "$BENCH" --plan
    check "--plan without a class: one line per class (l2 l3 package remote any), exit 0" \
        "$([ "$rc" = 0 ] && [ "$(grep -cE '^(l2|l3|package|remote|any) ' "$WORK/out")" = 5 ]; echo $?)" "$(show)"
    # running (not planning) on a recorded machine: refused before any rank
    # starts (it used to launch them, and rank 1 failed to pin to CPU 16)
    for cmd in latency crossover; do
        bounded env CVIA_TOPOLOGY="$OPT" CVIA_LOG=debug "$BENCH" $cmd --placement remote
        check "--placement remote $cmd on the recorded Opteron: exit 2, one line naming --plan, no rank started" \
            "$([ "$rc" = 2 ] && [ "$(wc -l <"$WORK/err")" = 1 ] &&
               grep -q 'CVIA_TOPOLOGY names a recorded machine.*--plan' "$WORK/err" &&
               ! grep -q 'rank' "$WORK/err" && [ ! -s "$WORK/out" ]; echo $?)" "$(show)"
    done
else
    skip "--cpus on the Opteron ($OPT not found)"
    skip "--cpus remote on the Opteron"
    skip "--plan, every class"
    skip "--placement latency on a recorded machine"
    skip "--placement crossover on a recorded machine"
fi

# a recording hwloc cannot load: said once, by the library, exit 1
echo '<topology version="2.0"><object type="Machine"/>' >"$WORK/broken.xml"
for args in "--plan" "--plan --placement l3" "mbw --plan"; do
    # shellcheck disable=SC2086
    bounded env CVIA_TOPOLOGY="$WORK/broken.xml" "$BENCH" $args
    check "cvia-bench $args on a broken recording: exit 1, one line naming it" \
        "$([ "$rc" = 1 ] && [ "$(wc -l <"$WORK/err")" = 1 ] &&
           grep -q "broken.xml" "$WORK/err" && [ ! -s "$WORK/out" ]; echo $?)" "$(show)"
done

# ----------------------------------------------------------- usage errors
for args in "--placement l4 latency" "crossover latency" "--cpus 0 latency" \
            "--buffers 0 bw" "--buffers many bw"; do
    # shellcheck disable=SC2086
    bounded "$BENCH" $args
    check "cvia-bench $args: usage error, exit 2, one line" \
        "$([ "$rc" = 2 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && [ ! -s "$WORK/out" ]; echo $?)" "$(show)"
done

# -------------------------------------------------- this machine: short runs
NCPU=$(nproc)
if [ "$NCPU" -lt 2 ]; then
    for t in "a class this machine lacks" "--placement any" crossover memcpy "--arena" "--buffers --check"; do
        skip "$t (needs 2 CPUs, this process may use $NCPU)"
    done
    echo "1..$n"
    [ "$failed" = 0 ]
    exit
fi

# a class missing here: exit 3 and nothing measured (the 2 usable CPUs of
# one core, or one CPU, have no pair of any class)
bounded "$BENCH" --plan
missing=$(awk '$2 == "none" { print $1; exit }' "$WORK/out")
if [ -n "$missing" ]; then
    bounded "$BENCH" latency --sizes 8 --iters 2 --placement "$missing"
    check "--placement $missing (none here): exit 3, says it does not exist, measures nothing" \
        "$([ "$rc" = 3 ] && grep -q "placement $missing does not exist" "$WORK/err" &&
           ! grep -q latency "$WORK/out"; echo $?)" "$(show)"
else
    bounded "$BENCH" latency --sizes 8 --iters 2 --placement l2 --cpus 0
    check "--placement l2 --cpus 0 (one CPU): exit 3, measures nothing" \
        "$([ "$rc" = 3 ] && grep -q "does not exist" "$WORK/err"; echo $?)" "$(show)"
fi

bounded "$BENCH" latency bw --sizes 8,64k --iters 3 --warmup 1 --placement any --json -q
cp "$WORK/out" "$WORK/any.json"
check "--placement any: exit 0, valid JSON with the class, the requested 'any', cores and the path" \
    "$([ "$rc" = 0 ] && json_ok "$WORK/any.json" \
        'd["placement"]["requested"] == "any" and d["placement"]["class"] in ("l2","l3","package","remote") and d["placement"]["cpus"] == d["placement"]["planned_cpus"] and d["path"].startswith("shm:")'; echo $?)" "$(show)"

bounded "$BENCH" crossover --repeat 2 --iters 2 --warmup 0 --sizes 4k,64k --csv -q
cp "$WORK/out" "$WORK/x.csv"
check "crossover --csv: exit 0, a header and 2 rows of 9 cells" \
    "$([ "$rc" = 0 ] && head -1 "$WORK/x.csv" | grep -q '^size_bytes,latency_twocopy_us,' &&
       csv_ok "$WORK/x.csv" 9 2; echo $?)" "$(show)"
bounded "$BENCH" crossover --repeat 2 --iters 2 --warmup 0 --sizes 4k,64k --json -q
cp "$WORK/out" "$WORK/x.json"
check "crossover --json: exit 0, valid JSON: 2 sizes, 2 runs each, a verdict" \
    "$([ "$rc" = 0 ] && json_ok "$WORK/x.json" \
        'len(d["results"]) == 2 and len(d["results"][0]["runs"]["latency_single"]) == 2 and "verdict" in d["crossover"] and d["variants"]["twocopy"]["env"].endswith("=1t")'; echo $?)" "$(show)"
bounded "$BENCH" crossover --repeat 1 --iters 2 --warmup 0 --sizes 64k
check "crossover table: says what it recommends or that there is no crossover" \
    "$([ "$rc" = 0 ] && grep -qE '^# (single copy wins from|single copy does not win)' "$WORK/out"; echo $?)" "$(show)"

bounded "$BENCH" memcpy bw --sizes 1k,64k --iters 3 --warmup 1 --buffers 4 --csv -q
cp "$WORK/out" "$WORK/m.csv"
check "memcpy bw --buffers 4 --csv: memcpy rows with a bandwidth, 10 cells a row, buffers 4" \
    "$([ "$rc" = 0 ] && csv_ok "$WORK/m.csv" 10 4 &&
       [ "$(grep -cE '^memcpy,[0-9]+,3,,,,,[0-9.]+,[0-9.]+,4$' "$WORK/m.csv")" = 2 ]; echo $?)" "$(show)"

# the rendezvous threshold is measured per boot (16k-512k on this VM):
# pinned, so that 64k and 300000 go by single copy, which --arena serves
bounded env CVIA_SHM_RNDV_THRESHOLD=32k "$BENCH" latency bw --sizes 8,64k,300000 --iters 3 --warmup 1 --arena --json -q
cp "$WORK/out" "$WORK/a.json"
check "--arena: valid JSON, arena true, the receiver copied bytes by load/store" \
    "$([ "$rc" = 0 ] && json_ok "$WORK/a.json" \
        'd["buffers"]["arena"] and __import__("re").search(r"[1-9][0-9]* B by load/store", d["path_rank1"])'; echo $?)" "$(show)"

bounded "$BENCH" latency bw bibw --sizes 1,1000,100000 --iters 3 --warmup 1 --buffers 3 --check --window 5 -q
check "--buffers 3 --check (window 5): every payload intact, the header says 3 buffers" \
    "$([ "$rc" = 0 ] && grep -q '^# buffers: cycling through 3 send and 3 receive buffers' "$WORK/out"; echo $?)" "$(show)"

bounded "$BENCH" bw memcpy --sizes 4m --iters 1 --warmup 0 --window 2 --buffers auto --csv -q
check "--buffers auto at 4 MiB: more than one buffer, valid CSV" \
    "$([ "$rc" = 0 ] && csv_ok "$WORK/out" 10 2 &&
       awk -F, 'NR > 1 && $10 < 2 { bad = 1 } END { exit bad }' "$WORK/out"; echo $?)" "$(show)"

# Started by Open MPI's mpirun (PMIx), cvia-bench is a rank of that job:
# one measurement between the two processes, not a cvia-run job each (two
# CSV headers). tests/slurm does the same under srun --mpi=pmix.
MPIRUN=$(command -v mpirun || true)
if [ -z "$MPIRUN" ] || ! "$MPIRUN" --version 2>/dev/null | grep -q 'Open MPI'; then
    skip "cvia-bench under mpirun joins its job (no Open MPI mpirun; Debian: openmpi-bin)"
elif ! nm -D --undefined-only "$BUILD/libcorevia.so" 2>/dev/null | grep -qw PMIx_Init; then
    skip "cvia-bench under mpirun joins its job (corevia built without PMIx)"
else
    margs=(--oversubscribe --bind-to none --mca btl self -np 2)
    [ "$(id -u)" -eq 0 ] && margs=(--allow-run-as-root "${margs[@]}")
    bounded env -u CVIA_BOOT_ADDR "$MPIRUN" "${margs[@]}" "$BENCH" latency --sizes 8,4k --iters 20 --csv -q
    check "mpirun -np 2 cvia-bench: one job of the two processes (one CSV header, 2 rows)" \
        "$([ "$rc" = 0 ] && [ "$(grep -c '^benchmark,size_bytes' "$WORK/out")" = 1 ] &&
           [ "$(grep -cE '^latency,(8|4096),20,' "$WORK/out")" = 2 ]; echo $?)" "$(show)"
fi

echo "1..$n"
[ "$failed" = 0 ]
