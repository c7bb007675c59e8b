#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A macro the DSM cannot honour stops m4 with a message naming it, in both
# m4 files; the honoured ones expand (the same input less that line).
# usage: m4_unsupported.sh M4 MACRO_FILE
set -u
m4=$1 macros=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for name in MENTER MEXIT MONINIT DELAY CONTINUE CREATE_LITE FETCH_ADD FETCH_SUB FETCH_ADD_DOUBLE; do
    printf 'MAIN_ENV\nint main() { %s(x, 1) return 0; }\n' "$name" >"$tmp/p.C"
    if "$m4" -s -Ulen -Uindex "$macros" "$tmp/p.C" >"$tmp/out" 2>"$tmp/err"; then
        echo "FAIL: $name expanded: $(tr '\n' ' ' <"$tmp/out")"
        fail=1
    elif ! grep -q "$name is not supported" "$tmp/err"; then
        echo "FAIL: $name: m4 failed without naming it: $(cat "$tmp/err")"
        fail=1
    fi
done
printf 'MAIN_ENV\nint main() { LOCK(l) CREATE(f, 2) return 0; }\n' >"$tmp/p.C"
if ! "$m4" -s -Ulen -Uindex "$macros" "$tmp/p.C" >"$tmp/out" 2>"$tmp/err" ||
   ! grep -q cvia_parmacs_create_n "$tmp/out"; then
    echo "FAIL: honoured macros did not expand: $(cat "$tmp/err")"
    fail=1
fi
[ $fail -eq 0 ] && echo "ok: every unsupported macro stops m4 by name ($(basename "$macros"))"
exit $fail
