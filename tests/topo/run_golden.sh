#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# One topology test (hwloc's tests/hwloc/xml style): a NAME.test file says
#   source:  a machine: FILE.xml, or a linux-sysfs dump FILE.tar.bz2,
#            looked up in tests/topo/, then tests/data/topologies/ and its
#            linux-sysfs/ and derived/ (a dump is unpacked into a temporary
#            directory)
#   command: what to run, with cvia-affinity meaning the built tool; it
#            runs in tests/topo/ with CVIA_TOPOLOGY set to the source
#   target:  the file its standard output must equal
# Paths of the source in the output read SOURCE. CVIA_UPDATE_EXPECTED=1
# rewrites the target instead of comparing. A source that is not there
# skips the test (exit 77). Unpacked dumps are kept in CACHE_DIR when given
# (unpacking one takes seconds on a slow disk; the tests share it).
#   run_golden.sh TOOL TEST_FILE [CACHE_DIR]
set -u
tool=${1:?usage: run_golden.sh TOOL TEST_FILE}
test=${2:?usage: run_golden.sh TOOL TEST_FILE}
tool=$(cd "$(dirname "$tool")" && pwd)/$(basename "$tool")
cache=${3:-}
dir=$(cd "$(dirname "$test")" && pwd)
data=$(cd "$dir/.." && pwd)/data/topologies
work=$(mktemp -d "${TMPDIR:-/tmp}/cvia-topo.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
for v in $(compgen -e | grep '^CVIA_' | grep -v '^CVIA_UPDATE_EXPECTED$\|^CVIA_TEST_'); do unset "$v"; done

field() { sed -n "s/^$1:[[:space:]]*//p" "$test" | head -1; }
source=$(field source) command=$(field command) target=$(field target)
[ -n "$source" ] && [ -n "$command" ] && [ -n "$target" ] ||
    { echo "$test: needs source:, command: and target: lines"; exit 1; }

src=
for d in "$dir" "$data" "$data/linux-sysfs" "$data/derived"; do
    [ -e "$d/$source" ] && { src=$d/$source; break; }
done
[ -n "$src" ] || { echo "skip: $source not found (tests/data/topologies)"; exit 77; }
unpack() {   # TARBALL DIR: unpack once, atomically
    local tb=$1 dest=$2
    [ -d "$dest" ] && return 0
    mkdir -p "$dest.tmp.$$" && tar -xjf "$tb" -C "$dest.tmp.$$" &&
        { mv -T "$dest.tmp.$$" "$dest" 2>/dev/null || rm -rf "$dest.tmp.$$"; }
}
case "$src" in
    *.tar.bz2)
        if [ -n "$cache" ]; then
            mkdir -p "$cache" && dest=$cache/$(basename "$src" .tar.bz2)
        else
            dest=$work/sysfs
        fi
        unpack "$src" "$dest" || { echo "cannot unpack $src"; exit 1; }
        src=$(find "$dest" -mindepth 1 -maxdepth 1 -type d | head -1) ;;
esac

# the tool's own name in the command is the built binary
cmd=${command//cvia-affinity/$tool}
out=$work/out
(cd "$dir" && CVIA_TOPOLOGY=$src timeout -k 2 $((30 * ${CVIA_TEST_TIMEOUT_MULTIPLIER:-1})) \
    bash -c "$cmd") >"$out" 2>"$work/err"
rc=$?
sed -i "s|$src|SOURCE|g" "$out"
if [ $rc -ne 0 ]; then
    echo "command failed (exit $rc): $command"; cat "$work/err"; exit 1
fi
if [ "${CVIA_UPDATE_EXPECTED:-0}" = 1 ]; then
    cp "$out" "$dir/$target"
    echo "updated $target"
    exit 0
fi
if ! diff -u "$dir/$target" "$out"; then
    echo "output differs from $target (CVIA_UPDATE_EXPECTED=1 rewrites it)"
    exit 1
fi
echo "ok: $target"
