#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# decisions.sh on the machine in CVIA_TOPOLOGY (an XML) as a recording that
# lacks some of what it holds, made here from it in a temporary directory:
#   subtypes   its NUMA nodes' subtypes ("MCDRAM", "HBM") removed: hwloc
#              before its MCDRAM/HBM detection, Linux without HBM tagging
#   distances  its distance matrices removed: firmware without a SLIT
#   both       both
# The copy keeps the source's name with .no-WHAT before .xml, which is what
# the tiers' header shows.
#   stripped.sh subtypes|distances|both CVIA_AFFINITY
set -u
what=${1:?usage: stripped.sh subtypes|distances|both CVIA_AFFINITY}
aff=${2:?usage: stripped.sh subtypes|distances|both CVIA_AFFINITY}
src=${CVIA_TOPOLOGY:?CVIA_TOPOLOGY: the XML to strip}
case $what in
    subtypes) sub=1 dist=0 ;;
    distances) sub=0 dist=1 ;;
    both) sub=1 dist=1 ;;
    *) echo "stripped.sh: WHAT must be subtypes, distances or both, not '$what'" >&2; exit 2 ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/cvia-stripped.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
out=$work/$(basename "$src" .xml).no-$what.xml
sed -E -e "$([ $sub = 1 ] && echo '/type="NUMANode"/ s/ subtype="[^"]*"//')" \
       -e "$([ $dist = 1 ] && echo '/<distances2/,/<\/distances2>/d')" "$src" >"$out" || exit 1
if [ $sub = 1 ] && grep -q 'type="NUMANode".* subtype=' "$out"; then
    echo "stripped.sh: subtypes left in $out" >&2; exit 1
fi
if [ $dist = 1 ] && grep -q '<distances2' "$out"; then
    echo "stripped.sh: distances left in $out" >&2; exit 1
fi
CVIA_TOPOLOGY=$out bash "$(dirname "$0")/decisions.sh" "$aff" | sed "s|$work/||g"
