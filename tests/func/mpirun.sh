#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run a corevia program under Open MPI's mpirun, wired up by PMIx instead
# of cvia-run, and check what run.sh checks: success (rank 0 prints
# "ok CASE (NP ranks)"), no hang, no process left, no segment left.
#   mpirun.sh [--expect-fail] HAVE_PMIX NP PROG CASE
# --expect-fail: a rank dies; mpirun must end the job with an error, in
# bounded time. HAVE_PMIX=0 (corevia built without libpmix): the job must
# fail with corevia's one-line "built without PMIx" error instead.
# Exit 77 (skipped) when there is no Open MPI mpirun.
set -u
expect_fail=0
if [ "${1:-}" = --expect-fail ]; then expect_fail=1; shift; fi
[ $# -eq 4 ] || { echo "usage: mpirun.sh [--expect-fail] HAVE_PMIX NP PROG CASE" >&2; exit 2; }
have_pmix=$1 np=$2 prog=$3 case=$4
mult=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
limit=$((60 * mult))

mpirun=$(command -v mpirun) || { echo "SKIP: no mpirun (Debian: openmpi-bin)"; exit 77; }
if ! "$mpirun" --version 2>/dev/null | grep -q 'Open MPI'; then
    echo "SKIP: $mpirun is not Open MPI's (its ranks would not find a PMIx server)"
    exit 77
fi
token="cvia-test-$$-$RANDOM"
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
. "$(dirname "$0")/leftovers.sh"

# Open MPI's own transports are never used (corevia does its own
# communication; the ranks never call MPI_Init): keep mpirun quiet and
# unbound, and let it run as root in CI.
args=(--oversubscribe --bind-to none --mca btl self -np "$np")
[ "$(id -u)" -eq 0 ] && args=(--allow-run-as-root "${args[@]}")
start=$(date +%s)
# not under cvia-run: make sure its socket variable cannot win over PMIx
env -u CVIA_BOOT_ADDR -u CVIA_RANK -u CVIA_SIZE \
    timeout -k 5 "$limit" "$mpirun" "${args[@]}" "$prog" "$case" "--token=$token" >"$out" 2>&1
rc=$?
cat "$out"
fail=0
if [ $rc -eq 124 ] || [ $rc -eq 137 -a $expect_fail -eq 0 ]; then
    echo "FAIL: mpirun timed out or was killed (exit $rc) after $(( $(date +%s) - start )) s"
    fail=1
elif [ "$have_pmix" != 1 ]; then
    if [ $rc -eq 0 ] || ! grep -q 'corevia was built without PMIx' "$out"; then
        echo "FAIL: without PMIx the job must fail with the 'built without PMIx' error"
        fail=1
    fi
elif [ $expect_fail -eq 1 ]; then
    if [ $rc -eq 0 ]; then
        echo "FAIL: the job should have failed (a rank died)"
        fail=1
    fi
elif [ $rc -ne 0 ]; then
    echo "FAIL: mpirun exited $rc"
    fail=1
elif [ "$(grep -c "^ok $case ($np ranks)\$" "$out")" -ne 1 ]; then
    echo "FAIL: expected one 'ok $case ($np ranks)' (did the ranks wire up as one job?)"
    fail=1
fi
leftovers "$token" || fail=1
exit $fail
