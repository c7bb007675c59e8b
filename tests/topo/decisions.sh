#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# Every decision corevia takes from a topology, for the machine named by
# CVIA_TOPOLOGY (run by run_golden.sh from a decisions-*.test file):
#   - the relation of every pair of cores, each interface's interrupt core
#     and communication-process core and its core groups (cvia-affinity);
#   - the memory tiers and each core's node in each tier (cvia-info);
#   - the CPUs of cvia-bench's ranks 0 and 1 per placement class, and of
#     every rank of cvia-bench mbw for each pairing.
# A decision that cannot be taken on the machine is part of the record:
# its message and exit status are written down too.
#   decisions.sh CVIA_AFFINITY   (CVIA_TEST_INFO, CVIA_TEST_BENCH: the others)
set -u
aff=${1:?usage: decisions.sh CVIA_AFFINITY}
info=${CVIA_TEST_INFO:?CVIA_TEST_INFO: path of cvia-info}
bench=${CVIA_TEST_BENCH:?CVIA_TEST_BENCH: path of cvia-bench}

run() {     # the command's stdout and stderr, then its status if not 0
    local rc
    "$@" 2>&1
    rc=$?
    [ $rc -eq 0 ] || echo "# exit $rc"
}

echo "## cvia-affinity topo --relations"
run "$aff" topo --relations
echo "## cvia-info --tiers"
run "$info" --tiers
echo "## cvia-bench --plan"
run "$bench" --plan
for p in intra-tile inter-tile compact scatter; do
    echo "## cvia-bench mbw --pairs 2 --pairing $p --plan"
    run "$bench" mbw --pairs 2 --pairing "$p" --plan
done
