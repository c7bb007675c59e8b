# SPDX-License-Identifier: BSD-3-Clause
# TAP for the shell tests (sourced): counters and the lines ctest shows.
#   ok DESC / fail DESC [DIAG...] / skip WHY / check DESC STATUS [DIAG...]
#   bounded CMD...: CMD under timeout $LIMIT, stdin /dev/null; sets rc,
#   stdout in $WORK/out, stderr in $WORK/err (LIMIT and WORK: the script's)
# A script whose check, skip or bounded means something else defines its
# own after sourcing this; it ends with: echo "1..$n"; [ $failed -eq 0 ].
n=0 failed=0
ok()   { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift
         for l in "$@"; do echo "#   $l"; done; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
check() {
    local d=$1 s=$2; shift 2
    if [ "$s" = 0 ]; then ok "$d"; else fail "$d" "$@"; fi
}
bounded() {
    timeout -k 2 "$LIMIT" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
    rc=$?
}
