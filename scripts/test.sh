#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install what is missing, build, and run the whole test suite three
# times: a normal build, one with -fsanitize=address,undefined, and one
# with -fsanitize=thread.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh test
jobs=$(nproc)

echo "== build (RelWithDebInfo) and test"
./scripts/build.sh build
(cd build && ctest --output-on-failure -j"$jobs")

echo "== build with AddressSanitizer + UndefinedBehaviorSanitizer and test"
./scripts/build.sh build-asan -DCVIA_SANITIZE=ON
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    CVIA_TEST_TIMEOUT_MULTIPLIER=3 ctest --output-on-failure -j"$jobs")

echo "== build with ThreadSanitizer and test"
# Left out, and why (DESIGN.md, "Testing on one machine"):
#  dsm.*        the DSM polls words its peers write one-sided; the provider
#               lands those bytes with memcpy/recv, which TSan cannot order
#               against the poller's atomic loads (the NIC's job on RDMA)
#  fabric.mpi*  Open MPI is not instrumented: its own locks and atomics are
#               invisible to TSan, so every request it completes "races"
./scripts/build.sh build-tsan -DCVIA_TSAN=ON
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    CVIA_TEST_TIMEOUT_MULTIPLIER=4 ctest --output-on-failure -j"$jobs" -E '^(dsm\.|fabric\.mpi)')
