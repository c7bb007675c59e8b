#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# fab_auto (FI_PROGRESS_AUTO) as two ranks of cvia-run, on one host or, with
# --hosts, in two network namespaces of scripts/netlab.sh (made and removed
# here; CVIA_NET defaults to udp there). Exit 0 when rank 0 prints "ok auto"
# and, first, hints asking for automatic progress got no entry at
# CVIA_FI_THREAD=domain.
#
#   auto.sh [--hosts] CVIA_RUN FAB_AUTO PROVIDER_DIR
set -u
hosts=0
[ "${1:-}" = --hosts ] && { hosts=1; shift; }
[ $# -eq 3 ] || { echo "usage: auto.sh [--hosts] CVIA_RUN FAB_AUTO PROVIDER_DIR" >&2; exit 2; }
run=$1 prog=$2 provdir=$3
top=$(cd "$(dirname "$0")/../.." && pwd)
limit=$((60 * ${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}))
work=$(mktemp -d) || exit 1
tag=au$$
cleanup() {
    [ $hosts -eq 1 ] && "$top/scripts/netlab.sh" down --tag "$tag" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
runargs=(-n 2 --timeout "${limit}s")
if [ $hosts -eq 1 ]; then
    "$top/scripts/netlab.sh" up --tag "$tag" --hosts 2 >/dev/null 2>"$work/lab" ||
        { echo "SKIP: no network lab here: $(head -1 "$work/lab")"; exit 77; }
    runargs+=(--hosts "cvia-$tag-h1,cvia-$tag-h2" --bind none)
    export CVIA_NET=${CVIA_NET:-udp}
fi
# a provider at CVIA_FI_THREAD=domain cannot run a progress thread: no entry
out=$(FI_PROVIDER_PATH=$provdir CVIA_FI_THREAD=domain "$prog" --refused 2>&1)
[ "$out" = "ok refused" ] || { echo "FAIL: $out"; exit 1; }
mkdir "$work/names"
out=$(FI_PROVIDER_PATH=$provdir "$run" "${runargs[@]}" -- "$prog" "$work/names" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] && echo "$out" | grep -qx 'ok auto'
