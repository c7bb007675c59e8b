#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# corevia under a real Slurm (issue 15): scripts/slurmlab.sh brings up a
# private one-node Slurm (slurmctld, slurmd, munged), and then
#   - corevia's functional tests run as 4-rank steps of srun --mpi=pmix
#     (PMIx wire-up, no cvia-run), each checked as tests/func/mpirun.sh
#     checks: success, one "ok CASE (4 ranks)", no process or segment left;
#     a rank dying in a step (death-kill) fails the step, every survivor
#     reporting the lost peer unless srun killed it first (srun terminates
#     a step whose task died of a signal; the race is the machine's);
#   - one rank of a running step is killed from outside with SIGKILL: the
#     step must end with an error within a bounded time, the survivors
#     accounted for as above, no /dev/shm/cvia-* segment left;
#   - sbatch of a script that runs cvia-bench twice: alone (it launches its
#     own cvia-run job inside the allocation) and as an srun --mpi=pmix
#     step of 2 tasks (it joins that step: one result, not two);
#   - the lab goes down (also on failure, by trap) leaving no daemon and no
#     file of its own behind.
# No timing is asserted; every wait is bounded (x CVIA_TEST_TIMEOUT_MULTIPLIER).
# Exit 77 (skip) when this cannot run here: not root (SlurmUser=root), no
# Slurm or munge (scripts/install-deps.sh test installs them), corevia
# built without PMIx.
#   test_slurm.sh HAVE_PMIX SOURCE_DIR FUNC_P2P FUNC_COPY FUNC_BOOT CVIA_BENCH
set -u
[ $# -eq 6 ] || { echo "usage: test_slurm.sh HAVE_PMIX SOURCE_DIR FUNC_P2P FUNC_COPY FUNC_BOOT CVIA_BENCH" >&2; exit 2; }
have_pmix=$1 SRC=$2 P2P=$3 COPY=$4 BOOT=$5 BENCH=$6
MULT=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
STEP_LIMIT=$((120 * MULT))              # one step or batch job, seconds
# The whole test stays well inside ctest's TIMEOUT (600 s x multiplier):
# killed by ctest, it could not bring the lab down (its daemons run in
# sessions of their own). Each wait gets what is left, less the time the
# teardown needs.
BUDGET=$((480 * MULT))
limit() {   # sets LIMIT: the next wait's bound
    local left=$((BUDGET - SECONDS))
    LIMIT=$((left < STEP_LIMIT ? left : STEP_LIMIT))
    [ "$LIMIT" -ge 1 ] || LIMIT=1
}
LAB=$SRC/scripts/slurmlab.sh

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: the lab's Slurm runs as SlurmUser=root; run as root"; exit 77
fi
for b in slurmctld slurmd munged srun sbatch squeue scancel sinfo; do
    command -v "$b" >/dev/null ||
        { echo "SKIP: no $b (Debian: scripts/install-deps.sh test installs Slurm and munge)"; exit 77; }
done
if [ "$have_pmix" != 1 ]; then
    echo "SKIP: corevia was built without PMIx (libpmix-dev): srun --mpi=pmix cannot wire it up"; exit 77
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_slurm.XXXXXX") || exit 1
DIR=$WORK/lab
# what the lab must not leave behind: names of Slurm, munge and PMIx files
# in the places their defaults would use (prefixes, not substrings: another
# run of this test at the same time has a test_slurm.* directory in /tmp)
trace() {
    ls -d /tmp/slurm* /tmp/spmix* /tmp/pmix* /tmp/munge* /dev/shm/*pmix* /dev/shm/slurm* \
          /run/munge /run/slurm* /var/run/munge /var/spool/slurm*/* /var/log/slurm*/* \
          /var/lib/slurm*/*/* /var/log/munge/* /var/lib/munge/* 2>/dev/null | sort
}
trace >"$WORK/trace.before"
down() {
    [ -e "$DIR" ] && bash "$LAB" --dir "$DIR" down >"$WORK/down.log" 2>&1
}
trap 'down; rm -rf "$WORK"' EXIT

. "$(dirname "$0")/../tap.sh"
. "$SRC/tests/func/leftovers.sh"
t_start=$SECONDS

# ------------------------------------------------------------------ up
if ! timeout -k 5 $((180 * MULT)) bash "$LAB" --dir "$DIR" up >"$WORK/up.log" 2>&1; then
    fail "slurmlab.sh up" "$(cat "$WORK/up.log")"
    echo "1..$n"
    exit 1
fi
ok "slurmlab.sh up: $(head -n 1 "$WORK/up.log" | sed 's/^slurmlab: //')"
bash "$LAB" --dir "$DIR" status >"$WORK/status" 2>&1
rc=$?
check "slurmlab.sh status: exit 0, the three daemons running, the node idle" \
    "$([ $rc -eq 0 ] && [ "$(grep -c ': running (pid [0-9]*)$' "$WORK/status")" = 3 ] &&
       grep -qE ' idle +[0-9]+$' "$WORK/status"; echo $?)" "rc=$rc" "$(cat "$WORK/status")"
eval "$(bash "$LAB" --dir "$DIR" env)"
check "slurmlab.sh env: SLURM_CONF names the lab's slurm.conf" \
    "$([ "${SLURM_CONF:-}" = "$DIR/slurm.conf" ] && [ -r "$SLURM_CONF" ]; echo $?)" "SLURM_CONF=${SLURM_CONF:-}"
# not under cvia-run: its variables must not win over PMIx
unset CVIA_BOOT_ADDR CVIA_RANK CVIA_SIZE CVIA_LOCAL_RANK CVIA_LOCAL_SIZE CVIA_JOBID

# step NP PROG CASE: an srun --mpi=pmix step (-O: more tasks than CPUs is
# fine); output in $WORK/out, status in rc
step() {
    local np=$1 prog=$2 case=$3
    token="cvia-test-$$-$RANDOM"
    limit
    timeout -k 5 "$LIMIT" srun --mpi=pmix -O -n "$np" -J "cvia-$case" \
        "$prog" "$case" "--token=$token" >"$WORK/out" 2>&1
    rc=$?
}

# survivors_accounted FILE VICTIM: each of the other 3 tasks either reported
# the lost peer itself (corevia's detection) or is one srun says it killed
# when it terminated the step (srun ends a step whose task died of a
# signal, and may be faster than a survivor on a loaded machine). Sets
# reported (how many reported themselves) and, failing, why.
survivors_accounted() {
    local file=$1 victim=$2 killed t
    killed=$(sed -n 's/^srun: error: [^:]*: tasks\{0,1\} \([0-9,-]*\): Killed$/\1/p' "$file" |
             tr ',' '\n' | awk -F- '{ for (i = $1; i <= ($2 == "" ? $1 : $2); i++) print i }')
    reported=0 missing=""
    for t in 0 1 2 3; do
        [ "$t" = "$victim" ] && continue
        if grep -q "^rank $t: expected-error" "$file"; then
            reported=$((reported + 1))
        elif ! echo "$killed" | grep -qx "$t"; then
            missing="$missing $t"
        fi
    done
    why="task(s)$missing neither reported the lost peer nor were killed by srun"
    [ -z "$missing" ]
}

# ---------------------------------------- functional tests, 4-rank steps
for spec in "$P2P sizes" "$P2P order" "$P2P wildcard" "$P2P many" "$P2P trunc" \
            "$P2P barrier" "$P2P unexpected" "$P2P cancel" "$COPY paths" "$COPY rma" \
            "$COPY threads" "$BOOT boot"; do
    set -- $spec
    step 4 "$1" "$2"
    problems=""
    [ $rc -eq 0 ] || problems="srun exited $rc"
    [ "$(grep -c "^ok $2 (4 ranks)\$" "$WORK/out")" -eq 1 ] ||
        problems="$problems; not one 'ok $2 (4 ranks)' (did the 4 tasks wire up as one job?)"
    leftovers "$token" >"$WORK/left" || problems="$problems; $(tr '\n' ' ' <"$WORK/left")"
    check "srun --mpi=pmix -n 4 $(basename "$1") $2" "$([ -z "$problems" ]; echo $?)" \
        "$problems" "$(tail -n 20 "$WORK/out")"
done

# a rank (the last) kills itself in the middle of a large send: the step
# fails, every survivor reports the lost peer (or srun killed it first)
CVIA_SHM_RNDV_THRESHOLD=1t step 4 "$P2P" death-kill
problems=""
{ [ $rc -ne 0 ] && [ $rc -ne 124 ]; } || problems="srun exited $rc (expected a failure, not 0 or a timeout)"
survivors_accounted "$WORK/out" 3 || problems="$problems; $why"
leftovers "$token" >"$WORK/left" || problems="$problems; $(tr '\n' ' ' <"$WORK/left")"
check "srun --mpi=pmix -n 4 func_p2p death-kill: the step fails; survivors reporting it: $reported of 3" \
    "$([ -z "$problems" ]; echo $?)" "$problems" "$(tail -n 20 "$WORK/out")"

# --------------------------------- SIGKILL of one rank of a running step
token="cvia-test-$$-$RANDOM"
FUNC_HOLD_S=$((120 * MULT)) srun --mpi=pmix -O -n 4 -J cvia-hold "$P2P" hold "--token=$token" \
    >"$WORK/hold" 2>&1 &
srun_pid=$!
limit
for _ in $(seq $((LIMIT * 10))); do     # every rank wired up and waiting
    [ "$(grep -c 'hold-ready$' "$WORK/hold")" -ge 4 ] && break
    kill -0 $srun_pid 2>/dev/null || break
    sleep 0.1
done
victim=$(sed -n 's/^rank 2 pid \([0-9]*\): hold-ready$/\1/p' "$WORK/hold")
problems=""
if [ "$(grep -c 'hold-ready$' "$WORK/hold")" -ne 4 ] || [ -z "$victim" ]; then
    problems="the 4 ranks did not all get ready"
else
    kill -KILL "$victim"
    t0=$SECONDS
    limit
    while kill -0 $srun_pid 2>/dev/null && [ $((SECONDS - t0)) -lt "$LIMIT" ]; do sleep 0.2; done
    if kill -0 $srun_pid 2>/dev/null; then
        problems="the step was still running $LIMIT s after rank 2 was killed"
    else
        wait $srun_pid
        rc=$?
        [ $rc -ne 0 ] || problems="srun exited 0 after a rank was killed"
        survivors_accounted "$WORK/hold" 2 || problems="$problems; $why"
        took=$((SECONDS - t0))
    fi
fi
kill -KILL $srun_pid 2>/dev/null
wait $srun_pid 2>/dev/null
leftovers "$token" >"$WORK/left" || problems="$problems; $(tr '\n' ' ' <"$WORK/left")"
[ -n "$(find /dev/shm -maxdepth 1 -user "$(id -u)" -name "cvia-*-$victim-*" 2>/dev/null)" ] && problems="$problems; rank 2's segment is still in /dev/shm"
check "kill -KILL of rank 2 of a 4-task step: the step fails${took:+ (after ${took} s)}, survivors reporting it: $reported of 3, no segment left" \
    "$([ -z "$problems" ]; echo $?)" "$problems" "$(tail -n 20 "$WORK/hold")"

# ------------------------------------------- sbatch of a cvia-bench script
cat >"$WORK/bench.sbatch" <<EOF
#!/bin/bash
set -e
echo "batch job \$SLURM_JOB_ID on \$(hostname)"
# alone: cvia-bench starts its own cvia-run job of two ranks
"$BENCH" -s 8,4k -i 200 --csv latency
# as a step of 2 tasks wired up by PMIx: it joins that step
srun --mpi=pmix -n 2 "$BENCH" -s 8,4k -i 20 --csv bw
echo batch-done
EOF
token=none
limit
timeout -k 5 "$LIMIT" sbatch --wait -O -n 2 -J cvia-bench -o "$WORK/batch.out" -e "$WORK/batch.err" \
    "$WORK/bench.sbatch" >"$WORK/out" 2>&1
rc=$?
problems=""
[ $rc -eq 0 ] || problems="sbatch --wait exited $rc"
for want in '^latency,8,' '^latency,4096,' '^bw,8,' '^bw,4096,' '^batch-done$'; do
    [ "$(grep -c "$want" "$WORK/batch.out" 2>/dev/null)" = 1 ] ||
        problems="$problems; not one line matching $want"
done
[ "$(grep -c '^benchmark,size_bytes' "$WORK/batch.out" 2>/dev/null)" = 2 ] ||
    problems="$problems; not two CSV headers (one per cvia-bench run: a nested launch doubles them)"
check "sbatch: cvia-bench alone and as an srun --mpi=pmix step" "$([ -z "$problems" ]; echo $?)" \
    "$problems" "$(cat "$WORK/out" "$WORK/batch.out" "$WORK/batch.err" 2>/dev/null | tail -n 30)"

# ------------------------------------------------------------------ down
squeue -h -o '%i %T %j' >"$WORK/queue" 2>&1
labpids=$(cat "$DIR"/*.pid 2>/dev/null)
bash "$LAB" --dir "$DIR" down >"$WORK/down.log" 2>&1
rc=$?
problems=""
[ $rc -eq 0 ] || problems="slurmlab.sh down exited $rc: $(cat "$WORK/down.log")"
for p in $labpids; do
    kill -0 "$p" 2>/dev/null && problems="$problems; daemon pid $p still runs"
done
[ -e "$DIR" ] && problems="$problems; $DIR still exists"
trace >"$WORK/trace.after"
new=$(comm -13 "$WORK/trace.before" "$WORK/trace.after")
[ -z "$new" ] || problems="$problems; left behind: $new"
check "slurmlab.sh down: no daemon, no state directory, no Slurm/munge/PMIx file left" \
    "$([ -z "$problems" ]; echo $?)" "$problems"
bash "$LAB" --dir "$DIR" status >"$WORK/status" 2>&1
rc=$?
check "slurmlab.sh status after down: exit 1, nothing running" \
    "$([ $rc -eq 1 ] && [ "$(grep -c ': not running$' "$WORK/status")" = 3 ]; echo $?)" "rc=$rc" "$(cat "$WORK/status")"

echo "# the Slurm test took $((SECONDS - t_start)) s"
echo "1..$n"
[ "$failed" = 0 ]
