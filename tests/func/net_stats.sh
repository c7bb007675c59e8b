#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run a test with the datagram providers' counters on (CVIA_DGRAM_STATS=1)
# and check them: each rank prints at finalize
#   corevia[R] udp stats: segment S window W tx N rx N retx N acks N dup N
#       ooo N corrupt N foreign N format N stale N faults N
#   net_stats.sh CHECK... -- COMMAND...
# CHECK is WHO:COUNTER OP VALUE, WHO a rank or "all" (the sum over the
# ranks that printed), OP one of > >= < <= =, e.g. 1:corrupt>0 all:retx>0.
# The command's own verdict comes first (its exit status, 77 passed on);
# then every check must hold, and a check on a rank that printed no
# counters fails.
set -u
checks=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do checks+=("$1"); shift; done
[ "${1:-}" = -- ] && [ $# -ge 2 ] || {
    echo "usage: net_stats.sh CHECK... -- COMMAND..." >&2; exit 2; }
shift
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT

CVIA_DGRAM_STATS=1 "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || exit "$rc"

# "R counter value" per line, from every stats line
stats=$(sed -n 's/.*corevia\[\([0-9]*\)\] [a-z]* stats: \(.*\)/\1 \2/p' "$out" |
        awk '{ for (i = 2; i + 1 <= NF; i += 2) print $1, $i, $(i + 1) }')
if [ -z "$stats" ]; then
    echo "FAIL: no rank printed datagram counters (is CVIA_NET a datagram provider?)"
    exit 1
fi
fail=0
# a datagram the link could not send (EFAULT: a payload that is no longer
# there, ...) is never part of a test
if grep -E 'warn net: [a-z]+: send: ' "$out"; then
    echo "FAIL: the link refused to send (above)"; fail=1
fi
for c in "${checks[@]}"; do
    if ! [[ "$c" =~ ^(all|[0-9]+):([a-z]+)(\>=|\<=|\>|\<|=)([0-9]+)$ ]]; then
        echo "net_stats.sh: bad check '$c'" >&2; exit 2
    fi
    who=${BASH_REMATCH[1]} name=${BASH_REMATCH[2]} op=${BASH_REMATCH[3]} want=${BASH_REMATCH[4]}
    got=$(awk -v who="$who" -v name="$name" \
          '($1 == who || who == "all") && $2 == name { s += $3; n++ } END { if (n) print s }' \
          <<<"$stats")
    if [ -z "$got" ]; then
        echo "FAIL: $c: no counter '$name' from rank(s) $who"; fail=1; continue
    fi
    case "$op" in
        '>')  [ "$got" -gt "$want" ] ;;
        '>=') [ "$got" -ge "$want" ] ;;
        '<')  [ "$got" -lt "$want" ] ;;
        '<=') [ "$got" -le "$want" ] ;;
        '=')  [ "$got" -eq "$want" ] ;;
    esac
    if [ $? -eq 0 ]; then
        echo "net_stats: $who:$name = $got ($op $want): ok"
    else
        echo "FAIL: $c: $who:$name is $got"; fail=1
    fi
done
exit $fail
