#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: install what is missing, build, and measure 2-rank
# latency and bandwidth over shared memory on this machine, 1 B to 4 MiB,
# ranks pinned to two cores. Prints a table; writes out/sweep.csv and the
# plot out/sweep.png. Extra arguments go to cvia-bench (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh build
./scripts/build.sh build
mkdir -p out
build/cvia-bench latency bw --repeat 3 --output out/sweep.csv --plot out/sweep.png "$@"
echo "demo: table above; data in out/sweep.csv, plot in out/sweep.png"
