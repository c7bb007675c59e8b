#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: install what is missing, build, and measure 2-rank
# latency and bandwidth over shared memory on this machine, 1 B to 4 MiB,
# ranks pinned to two cores. Prints a table; writes out/sweep.csv and the
# plot out/sweep.png. Extra arguments go to cvia-bench (try --help).
set -euo pipefail
case "${1:-}" in
    -h|--help)
        sed -n '3,6p' "$0" | sed 's/^# \{0,1\}//'
        echo "usage: demo.sh [cvia-bench options]   (cvia-bench's own: build/cvia-bench --help)"
        exit 0 ;;
esac
cd "$(dirname "$0")/.."
./scripts/install-deps.sh build
./scripts/build.sh build
mkdir -p out
build/cvia-bench latency bw --repeat 3 --output out/sweep.csv --plot out/sweep.png "$@"
echo "demo: table above; data in out/sweep.csv, plot in out/sweep.png"
