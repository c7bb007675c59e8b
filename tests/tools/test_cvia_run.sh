#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# cvia-run with plain programs (no corevia library needed). TAP output.
# Usage: test_cvia_run.sh /path/to/cvia-run
# Every run is bounded; a hung cvia-run is stopped with SIGUSR1 (it does not
# catch it), which shows as status 138.
set -u

RUN=${1:?usage: $0 /path/to/cvia-run}
MULT=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
LIMIT=$((20 * MULT))                    # per invocation, seconds
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_cvia_run.XXXXXX") || exit 1
export TMPDIR=$WORK/tmp                 # cvia-run puts its socket dir here
mkdir "$TMPDIR"
# a number no other process on the machine has in its command line
MARK="$((RANDOM % 9000 + 1000)).$$"
trap 'pgrep -f "sleep $MARK" | xargs -r kill -KILL 2>/dev/null; rm -rf "$WORK"' EXIT

. "$(dirname "$0")/../tap.sh"

# run CMD... bounded; sets rc, leaves stdout/stderr in $WORK/out, $WORK/err
bounded() {
    timeout --preserve-status -s USR1 -k 5 "$LIMIT" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
    rc=$?
}

# bounded_in FILE CMD...: as bounded, with FILE as stdin
bounded_in() {
    local in=$1
    shift
    timeout --preserve-status -s USR1 -k 5 "$LIMIT" "$@" >"$WORK/out" 2>"$WORK/err" <"$in"
    rc=$?
}

# wait (bounded) until no process matches the marker; 0 if none is left
none_left() {
    for _ in $(seq 50); do
        pgrep -f "sleep $MARK" >/dev/null || return 0
        sleep 0.1
    done
    return 1
}

echo "1..23"

# 1
bounded "$RUN" -n 4 sh -c 'echo "$CVIA_RANK"'
got=$(sort -n "$WORK/out" | tr '\n' ' ')
[ "$rc" = 0 ] && [ "$got" = "0 1 2 3 " ] && ok "ranks see distinct CVIA_RANK 0..3" ||
    fail "ranks see distinct CVIA_RANK 0..3" "rc=$rc ranks='$got'"

# 2
bounded "$RUN" -n 3 sh -c 'echo "$CVIA_SIZE $CVIA_LOCAL_RANK $CVIA_LOCAL_SIZE $CVIA_JOBID $(test -S "$CVIA_BOOT_ADDR" && stat -c %a "$(dirname "$CVIA_BOOT_ADDR")")"'
ids=$(awk '{print $4}' "$WORK/out" | sort -u)
if [ "$rc" = 0 ] && [ "$(wc -l <"$WORK/out")" = 3 ] &&
   [ "$(awk '$1 == 3 && $3 == 3 && $5 == 700' "$WORK/out" | wc -l)" = 3 ] &&
   [ "$(echo "$ids" | wc -l)" = 1 ] && [[ $ids =~ ^[0-9a-f]{16}$ ]]; then
    ok "CVIA_SIZE, CVIA_LOCAL_*, one 16-hex-digit CVIA_JOBID, socket in a 0700 dir"
else
    fail "CVIA_SIZE, CVIA_LOCAL_*, one 16-hex-digit CVIA_JOBID, socket in a 0700 dir" \
        "rc=$rc" "$(cat "$WORK/out")"
fi

# 3
bounded "$RUN" -n 2 hostname
[ "$rc" = 0 ] && [ "$(wc -l <"$WORK/out")" = 2 ] && [ ! -s "$WORK/err" ] &&
    ok "a program that never connects runs normally" ||
    fail "a program that never connects runs normally" "rc=$rc" "$(cat "$WORK/err")"

# 4
bounded "$RUN" -n 3 sh -c "[ \$CVIA_RANK = 1 ] && exit 3; sleep $MARK; :"
if [ "$rc" = 3 ] && grep -q '^cvia-run: rank 1 (pid [0-9]*) exited with status 3$' "$WORK/err" &&
   none_left; then
    ok "a rank exiting 3 makes cvia-run exit 3 and ends the others"
else
    fail "a rank exiting 3 makes cvia-run exit 3 and ends the others" "rc=$rc" "$(cat "$WORK/err")"
fi

# 5
bounded "$RUN" -n 4 sh -c "[ \$CVIA_RANK = 2 ] && kill -KILL \$\$; sleep $MARK; :"
if [ "$rc" = 137 ] && grep -q '^cvia-run: rank 2 (pid [0-9]*) killed by signal SIGKILL$' "$WORK/err" &&
   none_left; then
    ok "a rank killed by SIGKILL: job torn down, exit 137, nothing left"
else
    fail "a rank killed by SIGKILL: job torn down, exit 137, nothing left" "rc=$rc" "$(cat "$WORK/err")"
fi

# 6
bounded "$RUN" -n 2 --timeout 0.5 sh -c "sleep $MARK; :"
if [ "$rc" = 124 ] && grep -q '^cvia-run: timeout after 0.5 s, killing the job$' "$WORK/err" &&
   none_left; then
    ok "--timeout: exit 124, no process left"
else
    fail "--timeout: exit 124, no process left" "rc=$rc" "$(cat "$WORK/err")"
fi

# 7
bounded "$RUN" -n 2 --grace 0 sh -c "trap '' TERM; [ \$CVIA_RANK = 0 ] && exit 5; sleep $MARK; :"
if [ "$rc" = 5 ] && none_left; then
    ok "ranks that ignore SIGTERM are killed with SIGKILL"
else
    fail "ranks that ignore SIGTERM are killed with SIGKILL" "rc=$rc" "$(cat "$WORK/err")"
fi

# 8
"$RUN" -n 2 sh -c "sleep $MARK; :" >/dev/null 2>"$WORK/err8" </dev/null &
pid=$!
for _ in $(seq 100); do
    [ "$(pgrep -f "sleep $MARK" | wc -l)" -ge 2 ] && break
    sleep 0.1
done
kill -TERM $pid 2>/dev/null
timeout "$LIMIT" tail --pid=$pid -f /dev/null
kill -KILL $pid 2>/dev/null             # only if it hung
wait $pid; rc=$?
if [ "$rc" = 143 ] && none_left; then
    ok "SIGTERM to cvia-run ends every rank, exit 143"
else
    fail "SIGTERM to cvia-run ends every rank, exit 143" "rc=$rc" "$(cat "$WORK/err8")"
fi

# 9
bounded "$RUN" -n 2 --prefix sh -c 'echo "hello $CVIA_RANK"; printf "x"; echo "err $CVIA_RANK" >&2'
if [ "$rc" = 0 ] && grep -qx '\[0\] hello 0' "$WORK/out" && grep -qx '\[1\] hello 1' "$WORK/out" &&
   grep -qx '\[0\] x' "$WORK/out" && grep -qx '\[1\] err 1' "$WORK/err"; then
    ok "--prefix tags every line of stdout and stderr with [rank]"
else
    fail "--prefix tags every line of stdout and stderr with [rank]" "rc=$rc" "$(cat "$WORK/out" "$WORK/err")"
fi

# 10
bounded "$RUN" -n 3 sh -c 'for i in 1 2 3 4 5 6 7 8; do printf "%s" "$CVIA_RANK$CVIA_RANK"; printf "%s\n" "$CVIA_RANK$CVIA_RANK"; done'
if [ "$rc" = 0 ] && [ "$(wc -l <"$WORK/out")" = 24 ] &&
   [ "$(grep -cxE '0000|1111|2222' "$WORK/out")" = 24 ]; then
    ok "lines of different ranks are not mixed"
else
    fail "lines of different ranks are not mixed" "rc=$rc" "$(cat "$WORK/out")"
fi

# 11
# with data on cvia-run's stdin: rank 0 reads it (default --stdin 0), the others /dev/null
printf 'xyz' >"$WORK/in3"
bounded_in "$WORK/in3" "$RUN" -n 3 sh -c 'echo "$CVIA_RANK $(wc -c)"'
got=$(sort "$WORK/out" | tr '\n' ' ')
[ "$rc" = 0 ] && [ "$got" = "0 3 1 0 2 0 " ] && ok "stdin goes to rank 0, the others read /dev/null" ||
    fail "stdin goes to rank 0, the others read /dev/null" "rc=$rc got='$got'" "$(cat "$WORK/err")"

# 12
bounded "$RUN" -n 2 "$WORK/no-such-program"
if [ "$rc" = 127 ] && grep -q "^cvia-run: cannot execute $WORK/no-such-program: No such file or directory\$" "$WORK/err"; then
    ok "exec failure: message and exit 127"
else
    fail "exec failure: message and exit 127" "rc=$rc" "$(cat "$WORK/err")"
fi

# 13
bad=""
for args in "" "-n 0 true" "-n x true" "-n 2" "-n" "--bogus -n 1 true" "-x" \
            "--bind foo -n 1 true" "--timeout -1 -n 1 true" "--grace abc -n 1 true" \
            "--stdin 2 -n 2 true" "--stdin x -n 1 true" "--stdin -1 -n 2 true"; do
    # shellcheck disable=SC2086
    bounded "$RUN" $args
    if [ "$rc" != 2 ] || [ -s "$WORK/out" ] || [ "$(wc -l <"$WORK/err")" != 1 ] ||
       ! grep -q '^cvia-run: .* (try --help)$' "$WORK/err"; then
        bad="$bad [$args: rc=$rc $(head -c 200 "$WORK/err")]"
    fi
done
[ -z "$bad" ] && ok "usage errors: exit 2, one line on stderr" ||
    fail "usage errors: exit 2, one line on stderr" "$bad"

# 14
bounded "$RUN" --help
if [ "$rc" = 0 ] && [ ! -s "$WORK/err" ] &&
   grep -q -- '--timeout' "$WORK/out" && grep -q -- '--grace' "$WORK/out" &&
   grep -q -- '--bind' "$WORK/out" && grep -q -- '--prefix' "$WORK/out" &&
   grep -q 'CVIA_BOOT_ADDR' "$WORK/out" && grep -q 'CVIA_JOBID' "$WORK/out" &&
   grep -q -- '--stdin WHO' "$WORK/out" && grep -q 'default: 0, as mpirun' "$WORK/out" &&
   grep -q 'may be given once' "$WORK/out" && grep -q 'default' "$WORK/out"; then
    ok "--help: stdout, exit 0, options with defaults and the environment"
else
    fail "--help: stdout, exit 0, options with defaults and the environment" "rc=$rc"
fi

# 15
bounded "$RUN" -V
[ "$rc" = 0 ] && grep -q '^cvia-run (corevia) [0-9]' "$WORK/out" && ok "--version" ||
    fail "--version" "rc=$rc" "$(cat "$WORK/out")"

# 16
bounded "$RUN" -n 3 -- sh -c 'exit 0' -n 5
[ "$rc" = 0 ] && ok "options after PROG belong to PROG" || fail "options after PROG belong to PROG" "rc=$rc"

# 17
bad=""
for args in "-n 2 -n 3" "--np 2 -n 2" "-n 2 --bind none --bind core" "-n 2 --prefix --prefix" \
            "-n 2 --stdin 0 --stdin 1" "-n 2 --timeout 5 --timeout 6" "-n 2 --grace=1 --grace 2" \
            "-n 2 --map-by block --map-by cyclic"; do
    # shellcheck disable=SC2086
    bounded "$RUN" $args true
    if [ "$rc" != 2 ] || [ -s "$WORK/out" ] || [ "$(wc -l <"$WORK/err")" != 1 ] ||
       ! grep -q '^cvia-run: option .* given more than once (try --help)$' "$WORK/err"; then
        bad="$bad [$args: rc=$rc $(head -c 200 "$WORK/err")]"
    fi
done
[ -z "$bad" ] && ok "a repeated option is a usage error, one line" ||
    fail "a repeated option is a usage error, one line" "$bad"

# 18
head -c 1000000 /dev/urandom >"$WORK/in1m"
want=$(cksum <"$WORK/in1m")
bounded_in "$WORK/in1m" "$RUN" -n 3 --stdin all sh -c 'echo "$CVIA_RANK $(cksum)"'
got=$(awk '{print $2, $3}' "$WORK/out" | sort -u)
[ "$rc" = 0 ] && [ "$(wc -l <"$WORK/out")" = 3 ] && [ "$got" = "$want" ] &&
    ok "--stdin all: every rank reads all of 1 MB of stdin" ||
    fail "--stdin all: every rank reads all of 1 MB of stdin" "rc=$rc want='$want'" "$(cat "$WORK/out" "$WORK/err")"

# 19
bounded_in "$WORK/in1m" "$RUN" -n 3 --stdin 2 sh -c 'echo "$CVIA_RANK $(cksum)"'
if [ "$rc" = 0 ] && grep -qxF "2 $want" "$WORK/out" &&
   [ "$(grep -c '^[01] 4294967295 0$' "$WORK/out")" = 2 ]; then
    ok "--stdin 2: rank 2 reads stdin, the others /dev/null"
else
    fail "--stdin 2: rank 2 reads stdin, the others /dev/null" "rc=$rc" "$(cat "$WORK/out" "$WORK/err")"
fi

# 20
bounded_in "$WORK/in1m" "$RUN" -n 2 --stdin none sh -c 'wc -c'
[ "$rc" = 0 ] && [ "$(tr -d ' ' <"$WORK/out" | sort -u)" = 0 ] && ok "--stdin none: every rank reads /dev/null" ||
    fail "--stdin none: every rank reads /dev/null" "rc=$rc" "$(cat "$WORK/out")"

# 21: endless stdin that nobody reads (rank 0 exits at once, or reads a little):
# the job still ends
timeout --preserve-status -s USR1 -k 5 "$LIMIT" sh -c 'yes | "$1" -n 2 true' sh "$RUN" \
    >"$WORK/out" 2>"$WORK/err"
rc1=$?
timeout --preserve-status -s USR1 -k 5 "$LIMIT" sh -c 'yes | "$1" -n 2 head -c 100000' sh "$RUN" \
    >"$WORK/out" 2>"$WORK/err"
rc2=$?
[ "$rc1" = 0 ] && [ "$rc2" = 0 ] && [ "$(wc -c <"$WORK/out")" = 100000 ] &&
    ok "endless stdin: the job ends when its ranks do" ||
    fail "endless stdin: the job ends when its ranks do" "rc=$rc1 $rc2 bytes=$(wc -c <"$WORK/out")"

# 22
bounded sh -c 'ulimit -n 64 && exec "$0" -n 30 true' "$RUN"
if [ "$rc" = 1 ] && [ "$(wc -l <"$WORK/err")" = 1 ] &&
   grep -q '^cvia-run: -n 30 needs about [0-9]* open files, the limit is 64 (ulimit -n)$' "$WORK/err"; then
    ok "too few file descriptors: one clear line, exit 1, no crash"
else
    fail "too few file descriptors: one clear line, exit 1, no crash" "rc=$rc" "$(cat "$WORK/err")"
fi

# 23
left=$(ls -A "$TMPDIR")
[ -z "$left" ] && ok "no socket directory left behind" ||
    fail "no socket directory left behind" "$left"

[ "$failed" = 0 ]
