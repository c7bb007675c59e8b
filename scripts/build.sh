#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Configure and build corevia.   build.sh [BUILD_DIR [CMAKE ARGS...]]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
