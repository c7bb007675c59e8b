#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# One machine, one set of decisions, however it was recorded
# (decisions.sh: relations, interrupt and process cores, tiers, ranks'
# CPUs):
#  - each recorded XML against hwloc's re-export of it, in the hwloc 2 and
#    the hwloc 1.x format (lstopo --of xml [--export-xml-flags v1]);
#  - the fake KNL SNC-4 machine: its XML against its sysfs dump;
#  - this machine read live against its own recordings: lstopo --of xml,
#    and hwloc-gather-topology --io's XML and sysfs dump (without --io the
#    dump holds no PCI device, so no NIC).
# What a recording cannot hold is left out of the comparison: the source's
# name, interrupt lines (hwloc records none; a live run reads /proc), and
# the values of memory attributes (hwloc 1.x XML has none: inputs, not
# decisions; the tiers they rank are compared).
# Usage: test_recordings.sh CVIA_AFFINITY SOURCE_DIR (CVIA_TEST_INFO,
# CVIA_TEST_BENCH: the other tools). TAP output.
set -u
AFF=${1:?usage: $0 CVIA_AFFINITY SOURCE_DIR}
SRC=${2:?usage: $0 CVIA_AFFINITY SOURCE_DIR}
TOPOS=$SRC/tests/data/topologies
DECIDE=$SRC/tests/topo/decisions.sh
LIMIT=$((60 * ${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}))
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_recordings.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
for v in $(compgen -e | grep '^CVIA_' | grep -v '^CVIA_TEST_'); do unset "$v"; done
. "$(dirname "$0")/../tap.sh"

# a string as an extended regular expression matching only itself
esc() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }

# decisions NAME SOURCE|"": the normalised decisions, in $WORK/NAME
decisions() {
    local name=$1 src=$2 base
    base=$(basename "$src")
    if [ -n "$src" ]; then
        CVIA_TOPOLOGY=$src timeout -k 2 "$LIMIT" bash "$DECIDE" "$AFF" </dev/null
    else
        timeout -k 2 "$LIMIT" bash "$DECIDE" "$AFF" </dev/null
    fi >"$WORK/$name.raw" 2>&1
    sed -E -e "s/$(esc "${src:-@@}")/SOURCE/g" -e "s/$(esc "${base:-@@}")/SOURCE/g" \
        -e "s/$(esc "${base%.*}")/SOURCE/g" \
        -e 's/this machine/SOURCE/g' -e '/^  interrupts:/d' \
        -e 's/, where its interrupts should go//' \
        -e 's/[0-9]+ MiB\/s/-/; s/[0-9]+ ns/-/; s/ +/ /g' "$WORK/$name.raw" >"$WORK/$name"
}
same() {    # DESC A B
    if cmp -s "$WORK/$2" "$WORK/$3"; then
        ok "$1"
    else
        local d
        d=$(diff "$WORK/$2" "$WORK/$3" | head -8 | tr '\n' '|')
        fail "$1" "$d"
    fi
}

for b in "$AFF" "${CVIA_TEST_INFO:-}" "${CVIA_TEST_BENCH:-}"; do
    [ -x "$b" ] || { echo "Bail out! $b not built (CVIA_TEST_INFO, CVIA_TEST_BENCH)"; exit 1; }
done
LSTOPO=$(command -v lstopo-no-graphics || command -v lstopo || true)

# ------------------------------------------------ recordings re-exported
if [ -z "$LSTOPO" ]; then
    skip "hwloc re-exports (lstopo not installed)"
else
    for x in "$TOPOS"/*.xml; do
        b=$(basename "$x" .xml)
        decisions "$b" "$x"
        mkdir -p "$WORK/v2" "$WORK/v1"
        if "$LSTOPO" --input "$x" --of xml "$WORK/v2/$b.xml" >/dev/null 2>&1 &&
           "$LSTOPO" --input "$x" --of xml --export-xml-flags v1 "$WORK/v1/$b.xml" \
               >/dev/null 2>&1; then
            decisions "$b.v2" "$WORK/v2/$b.xml"
            decisions "$b.v1" "$WORK/v1/$b.xml"
            same "$b: the same decisions from hwloc's re-export (hwloc 2 XML)" "$b" "$b.v2"
            same "$b: the same decisions from the hwloc 1.x XML export" "$b" "$b.v1"
        else
            fail "$b: lstopo cannot re-export it"
        fi
    done
fi

# ------------------------------------------------ XML against sysfs dump
dump=$TOPOS/linux-sysfs/64intel64-fakeKNL-SNC4-hybrid.tar.bz2
mkdir -p "$WORK/dump"
if tar -xjf "$dump" -C "$WORK/dump" 2>/dev/null; then
    d=$(find "$WORK/dump" -mindepth 1 -maxdepth 1 -type d | head -1)
    decisions knl-xml "$TOPOS/64intel64-fakeKNL-SNC4-hybrid.xml"
    decisions knl-sysfs "$d"
    same "fake KNL SNC-4 hybrid: the same decisions from its XML and its sysfs dump" \
         knl-xml knl-sysfs
else
    fail "cannot unpack $dump"
fi

# ------------------------------------------------ this machine: live and recorded
decisions live ""
if [ -n "$LSTOPO" ] && "$LSTOPO" --of xml "$WORK/machine-lstopo.xml" >/dev/null 2>&1; then
    decisions this-xml "$WORK/machine-lstopo.xml"
    same "this machine: the same decisions live and from lstopo --of xml" live this-xml
else
    skip "this machine's lstopo XML (lstopo not installed)"
fi
if command -v hwloc-gather-topology >/dev/null &&
   timeout -k 2 "$LIMIT" hwloc-gather-topology --io "$WORK/gather" >/dev/null 2>&1 </dev/null; then
    decisions gather-xml "$WORK/gather.xml"
    same "this machine: the same decisions live and from hwloc-gather-topology's XML" \
         live gather-xml
    mkdir -p "$WORK/gather.d"
    if tar -xjf "$WORK/gather.tar.bz2" -C "$WORK/gather.d" 2>/dev/null; then
        d=$(find "$WORK/gather.d" -mindepth 1 -maxdepth 1 -type d | head -1)
        decisions gather-sysfs "$d"
        same "this machine: the same decisions live and from hwloc-gather-topology's dump" \
             live gather-sysfs
    else
        fail "cannot unpack hwloc-gather-topology's dump"
    fi
else
    skip "hwloc-gather-topology (not installed, or it failed here)"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
