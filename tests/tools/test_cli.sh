#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# Command-line behaviour of cvia-info, cvia-strerror, cvia-bench and
# cvia-run: --help, usage errors, cvia-info's config / JSON / topology /
# man page output, cvia-strerror's codes. TAP output, plan at the end.
# Usage: test_cli.sh BUILD_DIR SOURCE_DIR
# Every command is bounded by timeout(1); the whole script takes ~1-2 s.
set -u

BUILD=${1:?usage: $0 BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: $0 BUILD_DIR SOURCE_DIR}
MULT=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
LIMIT=$((10 * MULT))                    # per command, seconds
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_cli.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT

# The tools see only the CVIA_* variables each test sets.
for v in $(compgen -e | grep '^CVIA_'); do unset "$v"; done

# Sanitizer builds: hwloc's pci plugin leaves libpciaccess's allocations
# behind and then dlclose()s it, so LeakSanitizer reports a leak "in
# <unknown module>" (no suppression can name it) and exits 1 without
# flushing stdout whenever cvia-info discovers this machine (-t, --json).
# Not corevia's leak: leave the pci component out there.
if grep -qs '^CVIA_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt"; then
    export HWLOC_COMPONENTS=-pci
    echo "# sanitizer build: HWLOC_COMPONENTS=-pci (libpciaccess leak seen by LSan)"
fi

. "$(dirname "$0")/../tap.sh"

nlines() { wc -l <"$1" | tr -d ' '; }
show() { echo "rc=$rc" "stdout: $(head -c 300 "$WORK/out")" "stderr: $(head -c 300 "$WORK/err")"; }

tool() {    # NAME -> path of the built tool, or empty
    local t
    for t in "$BUILD/$1" "$BUILD/tools/$1/$1" "$BUILD/tools/$1"; do
        [ -f "$t" ] && [ -x "$t" ] && { echo "$t"; return; }
    done
}

# The long options a tool implements, read from its source: the names in
# its struct option table, and "--name" strings it compares argv against.
long_options() {    # NAME
    cat "$SRC/tools/$1"/*.c 2>/dev/null |
        grep -oE '\{ *"[a-z][a-z0-9-]*", *(no|required|optional)_argument|strcmp\([^,()]+, *"--[a-z][a-z0-9-]*"\)' |
        grep -oE '"(--)?[a-z][a-z0-9-]*"' | tr -d '"' | sed 's/^--//' | sort -u
}

# ------------------------------------------------- every tool: usage

for name in cvia-info cvia-strerror cvia-bench cvia-run; do
    bin=$(tool "$name")
    if [ -z "$bin" ]; then
        fail "$name is built in $BUILD"
        continue
    fi
    bounded "$bin" --help
    check "$name --help: exit 0, a usage on stdout, nothing on stderr" \
        "$([ "$rc" = 0 ] && grep -q Usage "$WORK/out" && [ ! -s "$WORK/err" ]; echo $?)" "$(show)"
    opts=$(long_options "$name")
    missing=
    for o in $opts; do
        grep -qE -- "--$o([^a-z0-9-]|\$)" "$WORK/out" || missing="$missing --$o"
    done
    check "$name --help mentions each of its $(echo "$opts" | wc -w) long options" \
        "$([ -n "$opts" ] && [ -z "$missing" ]; echo $?)" "not in --help:${missing:- (no options found in source)}"
    for bad in --no-such-option -Z; do
        bounded "$bin" $bad
        check "$name $bad: exit 2, one line on stderr naming it, nothing on stdout" \
            "$([ "$rc" = 2 ] && [ "$(nlines "$WORK/err")" = 1 ] && grep -q -- "$bad" "$WORK/err" &&
               [ ! -s "$WORK/out" ]; echo $?)" "$(show)"
    done
done

INFO=$(tool cvia-info)
STRERROR=$(tool cvia-strerror)
[ -n "$INFO" ] && [ -n "$STRERROR" ] || { echo "Bail out! cvia-info or cvia-strerror not built"; exit 1; }

# A short option unknown inside a cluster: the message should name it.
bounded "$INFO" -Zc
check "cvia-info -Zc: exit 2, the error names -Z" \
    "$([ "$rc" = 2 ] && [ "$(nlines "$WORK/err")" = 1 ] && grep -q -- "-Z" "$WORK/err"; echo $?)" "$(show)"
bounded "$INFO" stray
check "cvia-info with a stray argument: exit 2, one line" \
    "$([ "$rc" = 2 ] && [ "$(nlines "$WORK/err")" = 1 ]; echo $?)" "$(show)"
bounded "$INFO" -F
check "cvia-info -F without its argument: exit 2, one line" \
    "$([ "$rc" = 2 ] && [ "$(nlines "$WORK/err")" = 1 ]; echo $?)" "$(show)"

# ------------------------------------------------------------- cvia-info

bounded "$INFO" -l
check "cvia-info -l lists the shm provider" \
    "$([ "$rc" = 0 ] && grep -qE '^ *shm ' "$WORK/out"; echo $?)" "$(show)"

# ------------------------------------------------- every tool: one --version

# "<tool> (corevia) X.Y.Z" on the first line, the same version everywhere,
# from --version and -V alike; cvia-info then lists the build's features
versions=""
for name in cvia-run cvia-bench cvia-info cvia-strerror cvia-affinity; do
    bin=$(tool "$name")
    [ -n "$bin" ] || { fail "$name is built in $BUILD"; continue; }
    for opt in --version -V; do
        bounded "$bin" $opt
        check "$name $opt: '$name (corevia) X.Y.Z', exit 0" \
            "$([ "$rc" = 0 ] && [ ! -s "$WORK/err" ] &&
               head -n 1 "$WORK/out" | grep -qxE "$name \(corevia\) [0-9]+\.[0-9]+\.[0-9]+" &&
               { [ "$name" = cvia-info ] || [ "$(nlines "$WORK/out")" = 1 ]; }; echo $?)" "$(show)"
        versions="$versions $(head -n 1 "$WORK/out" | awk '{print $3}')"
    done
done
check "every tool reports the same version" \
    "$([ "$(echo $versions | tr ' ' '\n' | sort -u | wc -l)" = 1 ]; echo $?)" "versions:$versions"

bounded "$INFO" --version
want_pmix=-; nm -D --undefined-only "$BUILD/libcorevia.so" 2>/dev/null | grep -qw PMIx_Init && want_pmix=+
# the provider is built when CMake found libfabric-dev and was not told not to
want_fab=-
grep -qx 'CVIA_WITH_FABRIC:BOOL=ON' "$BUILD/CMakeCache.txt" &&
    grep -qx 'LIBFABRIC_FOUND:INTERNAL=1' "$BUILD/CMakeCache.txt" && want_fab=+
check "cvia-info --version: features line matches the build (${want_pmix}pmix ${want_fab}libfabric)" \
    "$([ "$rc" = 0 ] &&
       sed -n 2p "$WORK/out" | grep -qxE "features: [+-]pmix \+hwloc [+-]numa [+-]libfabric [+-]userfaultfd" &&
       sed -n 2p "$WORK/out" | grep -qF -- "${want_pmix}pmix" &&
       sed -n 2p "$WORK/out" | grep -qF -- "${want_fab}libfabric" &&
       for f in pmix hwloc numa libfabric userfaultfd; do
           grep -qE "^  $f +(yes|no)  [^ ]" "$WORK/out" || exit 1
       done; echo $?)" "$(show)"

# launcher detection: what the tools use to join a job instead of starting one
bounded env PMIX_NAMESPACE=slurm.pmix.7.0 PMIX_RANK=1 SLURM_STEP_NUM_TASKS=4 "$INFO" -e
check "cvia-info -e under a PMIx environment: rank 1 of 4 of a PMIx launcher" \
    "$([ "$rc" = 0 ] && grep -q '^launcher: a PMIx launcher .*from PMIX_NAMESPACE; rank 1 of 4' "$WORK/out"; echo $?)" "$(show)"
bounded "$INFO" -e
check "cvia-info -e alone: no launcher" \
    "$([ "$rc" = 0 ] && grep -q '^launcher: none' "$WORK/out"; echo $?)" "$(show)"
# started by a PMIx launcher that is gone: cvia-bench must try to join that
# job (and fail to reach its server), never start a cvia-run job of its own
BENCH=$(tool cvia-bench)
bounded env PMIX_NAMESPACE=gone.0 PMIX_RANK=0 "$BENCH" -s 8 -i 10 latency
check "cvia-bench under a (dead) PMIx launcher joins it: init error, no nested cvia-run job" \
    "$([ "$rc" != 0 ] && [ "$rc" -lt 124 ] && grep -q 'cvia-bench: init' "$WORK/err" &&
       ! grep -q 'latency' "$WORK/out"; echo $?)" "$(show)"

# --json: valid JSON; its variable list is the reference for -c
bounded "$INFO" --json
cp "$WORK/out" "$WORK/json"
if command -v python3 >/dev/null; then
    python3 -m json.tool "$WORK/json" >/dev/null 2>"$WORK/jerr"
    check "cvia-info --json is valid JSON" "$([ "$rc" = 0 ] && [ ! -s "$WORK/err" ] &&
        python3 -m json.tool "$WORK/json" >/dev/null 2>&1; echo $?)" "$(show)" "$(cat "$WORK/jerr")"
    python3 -c 'import json,sys; [print(v["name"]) for v in json.load(open(sys.argv[1]))["variables"]]' \
        "$WORK/json" 2>/dev/null | sort >"$WORK/json_names"
    # a value with quotes, a backslash, a tab and a newline stays valid JSON
    bounded env CVIA_JOBID="$(printf 'a"b\\c\td\ne')" "$INFO" --json
    check "cvia-info --json escapes quotes, backslashes, control characters in values" \
        "$([ "$rc" = 0 ] && python3 -m json.tool "$WORK/out" >/dev/null 2>&1; echo $?)" "$(show)"
    bounded env CVIA_TOPOLOGY=/nonexistent "$INFO" --json
    check "cvia-info --json with an unreadable topology is still valid JSON (topology null)" \
        "$(python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["topology"] is None' \
           "$WORK/out" 2>/dev/null; echo $?)" "$(show)"
else
    skip "cvia-info --json is valid JSON (no python3)"
    skip "cvia-info --json escapes (no python3)"
    skip "cvia-info --json with an unreadable topology (no python3)"
    : >"$WORK/json_names"
fi

# -c: NAME=value for every variable, nothing else
bounded "$INFO" -c
cp "$WORK/out" "$WORK/conf"
bad_lines=$(grep -cvE '^CVIA_[A-Z0-9_]+=' "$WORK/conf")
cut -d= -f1 "$WORK/conf" | sort >"$WORK/conf_names"
check "cvia-info -c: exit 0, only NAME=value lines, nothing on stderr" \
    "$([ "$rc" = 0 ] && [ "$bad_lines" = 0 ] && [ -s "$WORK/conf" ] && [ ! -s "$WORK/err" ]; echo $?)" "$(show)"
if [ -s "$WORK/json_names" ]; then
    check "cvia-info -c has one line for each of the $(nlines "$WORK/json_names") variables of --json" \
        "$(cmp -s "$WORK/conf_names" "$WORK/json_names"; echo $?)" \
        "$(diff "$WORK/conf_names" "$WORK/json_names" | tr '\n' ' ')"
else
    skip "cvia-info -c lists the variables of --json (no python3)"
fi
for v in CVIA_LOG CVIA_SHM_SLOTS CVIA_SHM_SLOT_SIZE CVIA_TOPOLOGY CVIA_RANK CVIA_BOOT_TIMEOUT; do
    grep -q "^$v=" "$WORK/conf" || missing_v="${missing_v:-} $v"
done
check "cvia-info -c includes CVIA_LOG, CVIA_SHM_SLOT*, CVIA_TOPOLOGY, CVIA_RANK, CVIA_BOOT_TIMEOUT" \
    "$([ -z "${missing_v:-}" ]; echo $?)" "missing:${missing_v:-}"

# its output is a valid config file: fed back, it gives the same output
# shellcheck disable=SC2046
bounded env $(grep -v '^#' "$WORK/conf") "$INFO" -c
check "cvia-info -c output fed back through env gives the same output" \
    "$([ "$rc" = 0 ] && cmp -s "$WORK/out" "$WORK/conf" && [ ! -s "$WORK/err" ]; echo $?)" \
    "$(show)" "$(diff "$WORK/conf" "$WORK/out" | tr '\n' ' ')"

# the same with values away from the defaults, in other spellings
bounded env CVIA_SHM_SLOT_SIZE=65536 CVIA_SHM_SLOTS=16 CVIA_BOOT_TIMEOUT=1.5 CVIA_LOG=INFO \
    CVIA_LIVENESS_INTERVAL=250us CVIA_LOG_SUBSYS=shm,boot CVIA_SPIN_TIME=0 "$INFO" -c
cp "$WORK/out" "$WORK/conf2"
check "cvia-info -c shows set values in canonical form (64k, 16, 1.5s, info, 250us)" \
    "$([ "$rc" = 0 ] && grep -qx CVIA_SHM_SLOT_SIZE=64k "$WORK/conf2" &&
       grep -qx CVIA_SHM_SLOTS=16 "$WORK/conf2" && grep -qx CVIA_BOOT_TIMEOUT=1.5s "$WORK/conf2" &&
       grep -qx CVIA_LOG=info "$WORK/conf2" && grep -qx CVIA_LIVENESS_INTERVAL=250us "$WORK/conf2" &&
       grep -qx CVIA_LOG_SUBSYS=shm,boot "$WORK/conf2"; echo $?)" "$(show)"
# shellcheck disable=SC2046
bounded env $(grep -v '^#' "$WORK/conf2") "$INFO" -c
check "... and fed back gives the same output" \
    "$([ "$rc" = 0 ] && cmp -s "$WORK/out" "$WORK/conf2"; echo $?)" \
    "$(diff "$WORK/conf2" "$WORK/out" | tr '\n' ' ')"

bounded env CVIA_SHM_SLOTS=8 "$INFO" -c -C
check "cvia-info -c -C comments out the defaults, not the values set" \
    "$([ "$rc" = 0 ] && grep -qx CVIA_SHM_SLOTS=8 "$WORK/out" && grep -qx '# CVIA_LOG=warn' "$WORK/out" &&
       ! grep -qE '^CVIA_LOG=' "$WORK/out"; echo $?)" "$(show)"

# -c -f -F SHM_SLOT: only the matching variables, each with its description
bounded "$INFO" -c -f -F SHM_SLOT
if command -v python3 >/dev/null; then
    desc=$(python3 -c 'import json,sys
for v in json.load(open(sys.argv[1]))["variables"]:
    if v["name"] == "CVIA_SHM_SLOT_SIZE": print(v["description"])' "$WORK/json" 2>/dev/null)
else
    desc="Bytes per ring slot"
fi
check "cvia-info -c -f -F SHM_SLOT: CVIA_SHM_SLOTS and CVIA_SHM_SLOT_SIZE only, with descriptions" \
    "$([ "$rc" = 0 ] && [ -n "$desc" ] && grep -qF "# $desc" "$WORK/out" &&
       grep -q '^# syntax: ' "$WORK/out" && grep -q '^# default: 16k' "$WORK/out" &&
       [ "$(grep -cE '^CVIA_' "$WORK/out")" = 2 ] && grep -q '^CVIA_SHM_SLOTS=' "$WORK/out" &&
       grep -q '^CVIA_SHM_SLOT_SIZE=' "$WORK/out"; echo $?)" "$(show)"
bounded "$INFO" -c -F no_such_variable_xyz
check "cvia-info -c -F with no match: exit 0, empty output" \
    "$([ "$rc" = 0 ] && [ ! -s "$WORK/out" ]; echo $?)" "$(show)"

# garbage in a variable: non-zero exit, a message naming the variable
bounded env CVIA_SHM_SLOT_SIZE=abc "$INFO" -c
check "CVIA_SHM_SLOT_SIZE=abc cvia-info -c: non-zero exit, error names the variable" \
    "$([ "$rc" != 0 ] && [ "$rc" -lt 124 ] && grep -q CVIA_SHM_SLOT_SIZE "$WORK/err" &&
       grep -q abc "$WORK/err"; echo $?)" "$(show)"
bounded env CVIA_BOOT_TIMEOUT=-1 "$INFO" -c
check "CVIA_BOOT_TIMEOUT=-1 cvia-info -c: non-zero exit, error names the variable" \
    "$([ "$rc" != 0 ] && [ "$rc" -lt 124 ] && grep -q CVIA_BOOT_TIMEOUT "$WORK/err"; echo $?)" "$(show)"
bounded env CVIA_LOG=chatty "$INFO" -v
check "CVIA_LOG=chatty cvia-info: non-zero exit, error names CVIA_LOG" \
    "$([ "$rc" != 0 ] && [ "$rc" -lt 124 ] && grep -q CVIA_LOG "$WORK/err"; echo $?)" "$(show)"

# unknown variable names: a warning with the nearest known name
bounded env CVIA_SHM_SLOTSIZE=1 "$INFO" -e
check "CVIA_SHM_SLOTSIZE=1 cvia-info -e: shows it, warns suggesting CVIA_SHM_SLOT_SIZE" \
    "$([ "$rc" = 0 ] && grep -q CVIA_SHM_SLOTSIZE=1 "$WORK/out" &&
       grep -q 'CVIA_SHM_SLOTSIZE.*CVIA_SHM_SLOT_SIZE' "$WORK/err"; echo $?)" "$(show)"

# topology from a recorded machine
KNL=$SRC/tests/data/topologies/knl.xml
if [ -r "$KNL" ]; then
    # the real figures (lstopo-no-graphics --input knl.xml): 64 cores, 8 NUMA nodes
    bounded env CVIA_TOPOLOGY="$KNL" "$INFO" -t
    check "CVIA_TOPOLOGY=knl.xml cvia-info -t: 64 cores, 8 NUMA nodes" \
        "$([ "$rc" = 0 ] && grep -qE '^ *cores +64$' "$WORK/out" &&
           grep -qE '^ *NUMA nodes +8( |$)' "$WORK/out"; echo $?)" "$(show)"
else
    skip "CVIA_TOPOLOGY=knl.xml cvia-info -t ($KNL not found)"
fi
bounded env CVIA_TOPOLOGY=/nonexistent "$INFO" -t
check "CVIA_TOPOLOGY=/nonexistent cvia-info -t: non-zero exit, one error line naming CVIA_TOPOLOGY" \
    "$([ "$rc" != 0 ] && [ "$rc" -lt 124 ] && [ "$(nlines "$WORK/err")" = 1 ] &&
       grep -q CVIA_TOPOLOGY "$WORK/err"; echo $?)" "$(show)"

# the man page is generated from the tables: the committed one must match
bounded "$INFO" --man
if [ "$rc" != 0 ] || [ ! -s "$WORK/out" ]; then
    fail "cvia-info --man: exit 0, a page on stdout" "$(show)"
elif [ ! -f "$SRC/man/cvia-config.7.md" ]; then
    fail "man/cvia-config.7.md exists (generate it: cvia-info --man > man/cvia-config.7.md)"
else
    check "man/cvia-config.7.md is the output of cvia-info --man (regenerate it if not)" \
        "$(cmp -s "$WORK/out" "$SRC/man/cvia-config.7.md"; echo $?)" \
        "$(diff "$SRC/man/cvia-config.7.md" "$WORK/out" | head -5 | tr '\n' ' ')"
fi
missing_man=
for v in $(cat "$WORK/conf_names"); do
    grep -q "\`$v\`" "$WORK/out" || missing_man="$missing_man $v"
done
check "cvia-info --man documents every variable of cvia-info -c" \
    "$([ -z "$missing_man" ]; echo $?)" "missing:$missing_man"

# --------------------------------------------------------- cvia-strerror

bounded "$STRERROR" 257
check "cvia-strerror 257 prints CVIA_ENOPEER" \
    "$([ "$rc" = 0 ] && grep -q CVIA_ENOPEER "$WORK/out"; echo $?)" "$(show)"
bounded "$STRERROR" -257 -22
check "cvia-strerror -257 -22: CVIA_ENOPEER and EINVAL" \
    "$([ "$rc" = 0 ] && grep -q CVIA_ENOPEER "$WORK/out" && grep -q EINVAL "$WORK/out" &&
       [ "$(nlines "$WORK/out")" = 2 ]; echo $?)" "$(show)"
bounded "$STRERROR" -l
check "cvia-strerror -l lists 10 codes from 256 to 265" \
    "$([ "$rc" = 0 ] && [ "$(nlines "$WORK/out")" -ge 10 ] && grep -q '^256	CVIA_ETRUNC' "$WORK/out" &&
       grep -q '^265	CVIA_ENOPROV' "$WORK/out"; echo $?)" "$(show)"
bounded "$STRERROR"
check "cvia-strerror without arguments: exit 2, one line" \
    "$([ "$rc" = 2 ] && [ "$(nlines "$WORK/err")" = 1 ]; echo $?)" "$(show)"
bounded "$STRERROR" 12abc
check "cvia-strerror 12abc: exit 2, one line naming it" \
    "$([ "$rc" = 2 ] && [ "$(nlines "$WORK/err")" = 1 ] && grep -q 12abc "$WORK/err"; echo $?)" "$(show)"
bounded "$STRERROR" 99999
check "cvia-strerror 99999: 'unknown error', exit 0" \
    "$([ "$rc" = 0 ] && grep -q 'unknown error' "$WORK/out"; echo $?)" "$(show)"

echo "1..$n"
[ "$failed" = 0 ]
