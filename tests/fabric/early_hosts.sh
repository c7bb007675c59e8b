#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# fab_early as two ranks of cvia-run in two network namespaces of
# scripts/netlab.sh (made and removed here; CVIA_NET defaults to udp), so
# that its rendezvous messages take the path between hosts: the receiver
# posts a receive for the pushed data and answers with a CTS. The
# environment (FAB_FIN_FAULT, FI_PROVIDER_PATH) goes to the program.
# Exit 0 when rank 0 prints "ok early".
#
#   early_hosts.sh CVIA_RUN FAB_EARLY
set -u
[ $# -eq 2 ] || { echo "usage: early_hosts.sh CVIA_RUN FAB_EARLY" >&2; exit 2; }
run=$1 prog=$2
top=$(cd "$(dirname "$0")/../.." && pwd)
limit=$((60 * ${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}))
work=$(mktemp -d) || exit 1
tag=eh$$
cleanup() {
    "$top/scripts/netlab.sh" down --tag "$tag" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
"$top/scripts/netlab.sh" up --tag "$tag" --hosts 2 >/dev/null 2>"$work/lab" ||
    { echo "SKIP: no network lab here: $(head -1 "$work/lab")"; exit 77; }
export CVIA_NET=${CVIA_NET:-udp}
mkdir "$work/names"
out=$("$run" -n 2 --timeout "${limit}s" --hosts "cvia-$tag-h1,cvia-$tag-h2" --bind none \
      -- "$prog" "$work/names" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] && echo "$out" | grep -q '^ok early'
