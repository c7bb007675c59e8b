#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# One machine, one set of decisions, however it was recorded
# (decisions.sh: relations, interrupt and process cores, tiers, ranks'
# CPUs):
#  - each recorded XML against hwloc's re-export of it, in the hwloc 2 and
#    the hwloc 1.x format (lstopo --of xml [--export-xml-flags v1]);
#  - each XML with NUMA subtypes against itself with them stripped, and
#    the derived Xeon Max flat-mode recording against itself with them;
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
    # each recording's three sets of decisions in the background, two
    # recordings at a time (bounded: one wait per started job), then the
    # comparisons in order
    mkdir -p "$WORK/v2" "$WORK/v1"
    reexport() {    # XML NAME: its decisions, and its re-exports' (NAME.exported)
        decisions "$2" "$1"
        if "$LSTOPO" --input "$1" --of xml "$WORK/v2/$2.xml" >/dev/null 2>&1 &&
           "$LSTOPO" --input "$1" --of xml --export-xml-flags v1 "$WORK/v1/$2.xml" \
               >/dev/null 2>&1; then
            decisions "$2.v2" "$WORK/v2/$2.xml"
            decisions "$2.v1" "$WORK/v1/$2.xml"
            : >"$WORK/$2.exported"
        fi
    }
    running=0
    for x in "$TOPOS"/*.xml "$TOPOS"/derived/*.xml; do
        if [ "$running" -ge 2 ]; then
            wait -n
            running=$((running - 1))
        fi
        reexport "$x" "$(basename "$x" .xml)" &
        running=$((running + 1))
    done
    wait
    for x in "$TOPOS"/*.xml "$TOPOS"/derived/*.xml; do
        b=$(basename "$x" .xml)
        if [ -f "$WORK/$b.exported" ]; then
            same "$b: the same decisions from hwloc's re-export (hwloc 2 XML)" "$b" "$b.v2"
            same "$b: the same decisions from the hwloc 1.x XML export" "$b" "$b.v1"
        else
            fail "$b: lstopo cannot re-export it"
        fi
    done
fi

# ------------------------------------------------ recordings without subtypes
# (hwloc before its MCDRAM/HBM detection, Linux without HBM tagging, a
# recording whose subtypes were lost): the same tiers and decisions. The
# NUMA subtype column and the rule that ranked the tiers are left out of
# the comparison; the tiers' names, nodes and every core's nodes are not.
# The derived Xeon Max flat-mode recording (no subtype) is compared the
# other way: with subtype="HBM" given to its 64 GiB nodes.
untyped() { sed -E -e 's/ranked by .*, fastest first/ranked by -/' \
                   -e 's/^([0-9]+ +[a-z0-9]+ +)[A-Za-z-]+ /\1- /' \
                   -e 's/(NUMA node [0-9]+) [A-Za-z]+:/\1:/' "$WORK/$1" >"$WORK/$1.u"; }
mkdir -p "$WORK/strip"
for x in "$TOPOS"/*.xml; do
    grep -q 'type="NUMANode".* subtype=' "$x" || continue
    b=$(basename "$x" .xml)
    sed -E '/type="NUMANode"/ s/ subtype="[^"]*"//' "$x" >"$WORK/strip/$b.xml"
    [ -f "$WORK/$b" ] || decisions "$b" "$x"
    decisions "$b.strip" "$WORK/strip/$b.xml"
    untyped "$b"; untyped "$b.strip"
    same "$b: the same decisions with its NUMA subtypes stripped" "$b.u" "$b.strip.u"
done
x=$TOPOS/derived/Intel-SapphireRapids-2xXeonMax9460.flat-hwloc22.xml
b=xeonmax-flat
sed -E '/type="NUMANode"/ s/(local_memory="68719476736")/subtype="HBM" \1/' "$x" >"$WORK/strip/$b.hbm.xml"
if grep -q 'subtype="HBM"' "$WORK/strip/$b.hbm.xml"; then
    decisions "$b" "$x"
    decisions "$b.hbm" "$WORK/strip/$b.hbm.xml"
    untyped "$b"; untyped "$b.hbm"
    same "Xeon Max flat (hwloc 2.2, no subtypes): the same decisions as with HBM subtypes" \
         "$b.u" "$b.hbm.u"
else
    fail "cannot give $x HBM subtypes"
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
