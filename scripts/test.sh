#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install what is missing, build, and run the whole test suite twice:
# a normal build, then one with -fsanitize=address,undefined.
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
