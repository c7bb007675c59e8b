#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
# bench_script.sh BUILD SRC: scripts/dsm-bench.sh end to end on a tiny SOR,
# without the DSM (seq, thr1, thr2: the DSM's own runs are the dsm.* tests'):
# one round gives a CSV row per configuration, a table with the targets'
# ratio column, the note on the levels and a PNG; bad options end with exit 2
# and a message naming the option. No timing is asserted.
set -u
BUILD=$1 SRC=$2
W=$(mktemp -d "${TMPDIR:-/tmp}/bench_script.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
B=$SRC/scripts/dsm-bench.sh
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# each argument: options that must end dsm-bench with exit 2 and a message
bad_options() {
    local args rc
    for args in "$@"; do
        # shellcheck disable=SC2086
        timeout 20 bash "$B" --build "$BUILD" --out "$W/e" $args >"$W/out" 2>"$W/err"
        rc=$?
        [ "$rc" = 2 ] && grep -q 'dsm-bench: ' "$W/err" || bad "$args: rc=$rc, $(head -2 "$W/err")"
    done
}

if [ "${3:-}" = base ]; then
    # bench_script.sh BUILD SRC base (a dsm.* test: it runs the DSM): --base
    # runs each DSM configuration on a second build too (here the same
    # one), in the same rounds, with a ratio column; --app-env reaches that
    # application's DSM runs only (the unit in its --stats=json output)
    timeout 200 bash "$B" --build "$BUILD" --base "$BUILD" --rounds 1 --quiet-wait 0 \
        --apps "sor barnes" --configs "seq dsm1" --args sor="-m 64 -n 64 -i 2" \
        --args barnes="-n 256 -s 1" --app-env sor=CVIA_DSM_UNIT=8k --out "$W/o" \
        >"$W/out" 2>"$W/err" || bad "dsm-bench --base exited $?: $(tail -3 "$W/err")"
    for a in sor barnes; do
        for c in seq dsm1 dsm1@base; do
            [ "$(grep -c "^$a,$c,1," "$W/o/results.csv" 2>/dev/null)" = 1 ] ||
                bad "$a: results.csv lacks one $c row: $(cat "$W/o/results.csv" 2>&1)"
        done
    done
    grep -q '| dsm1 vs dsm1@base |' "$W/out" || bad "no 'dsm1 vs dsm1@base' column: $(head -8 "$W/out")"
    grep -q '"unit":8192' "$W/o/raw/sor-dsm1-r1.txt" "$W/o/raw/sor-dsm1@base-r1.txt" ||
        bad "--app-env sor=CVIA_DSM_UNIT=8k did not reach sor's runs"
    [ "$(grep -l '"unit":65536' "$W"/o/raw/barnes-dsm1*.txt | wc -l)" = 2 ] ||
        bad "barnes's DSM runs are not at the default 64k units"
    bad_options "--base /nonexistent" "--app-env barnes" "--app-env x"
    [ "$fail" = 0 ] && echo "ok dsm-bench.sh --base, --app-env"
    exit "$fail"
fi

timeout 120 bash "$B" --build "$BUILD" --rounds 1 --quiet-wait 0 --apps sor --configs "seq thr1 thr2" \
    --args sor="-m 64 -n 64 -i 2" --out "$W/o" --plot "$W/o/p.png" >"$W/out" 2>"$W/err" ||
    bad "dsm-bench exited $?: $(tail -3 "$W/err")"
[ "$(grep -c '^sor,\(seq\|thr1\|thr2\),1,' "$W/o/results.csv" 2>/dev/null)" = 3 ] ||
    bad "results.csv lacks a row per configuration: $(cat "$W/o/results.csv" 2>&1)"
grep -q '| thr2 vs seq |' "$W/out" ||
    bad "no 'thr2 vs seq' ratio column: $(head -8 "$W/out")"
grep -q '^| sor | [0-9]' "$W/out" || bad "no sor row: $(head -8 "$W/out")"
grep -q 'dsmN: two-level (CVIA_DSM_LEVELS=2.*oneN.*one-level' "$W/out" ||
    bad "the summary does not say which DSM configurations run which level"
[ -s "$W/o/p.png" ] && [ "$(head -c 4 "$W/o/p.png" | tail -c 3)" = PNG ] || bad "no PNG: $(tail -3 "$W/err")"

bad_options "--rounds 0" "--rounds x" "--configs thr" "--configs one" "--plot a.svg" "--args sor" \
            "--bogus" "--np" "--configs hdsm1" "--configs hcopy" "--net ib"
[ "$fail" = 0 ] && echo "ok dsm-bench.sh"
exit "$fail"
