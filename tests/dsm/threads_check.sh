#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
# threads_check.sh PROG NP: run an application's threads build on NP
# threads with its small preset (which checks against the sequential
# reference); pass only if it exits 0 and reports NP processes, check=ok
# and build=threads.
set -u -o pipefail
prog=$1 np=$2
out=$(timeout 120 "$prog" small -p "$np")
rc=$?
[ "$rc" = 0 ] || { echo "$out"; echo "threads_check: $prog exited $rc" >&2; exit 1; }
echo "$out"
grep -q "^RESULT .* procs=$np .*check=ok build=threads" <<<"$out" ||
    { echo "threads_check: no RESULT line with procs=$np check=ok build=threads" >&2; exit 1; }
