#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# cvia-run --hosts: ranks placed in network namespaces standing for hosts.
# TAP output. Usage:
#   test_cvia_run_hosts.sh CVIA_RUN FUNC_P2P CVIA_INFO SOURCE_DIR
# Makes two namespaces of its own joined by a veth pair (with
# scripts/netlab.sh when there is one, else with ip directly), and always
# removes them. Needs root; without the right to make namespaces every test
# is skipped. Traffic stays inside those namespaces (198.18.0.0/15).
set -u

RUN=${1:?usage: $0 CVIA_RUN FUNC_P2P CVIA_INFO SOURCE_DIR}
P2P=${2:?usage: $0 CVIA_RUN FUNC_P2P CVIA_INFO SOURCE_DIR}
INFO=${3:?usage: $0 CVIA_RUN FUNC_P2P CVIA_INFO SOURCE_DIR}
SRC=${4:?usage: $0 CVIA_RUN FUNC_P2P CVIA_INFO SOURCE_DIR}
MULT=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
LIMIT=$((20 * MULT))                    # per invocation, seconds
NETLAB=$SRC/scripts/netlab.sh
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_cvia_run_hosts.XXXXXX") || exit 1
export TMPDIR=$WORK/tmp                 # cvia-run puts its socket dir here
mkdir "$TMPDIR"
MARK="$((RANDOM % 9000 + 1000)).$$"     # in the command line of our sleeps
TAG="rh$$"                              # netlab: [a-z0-9]{1,12}
TAG=${TAG:0:12}
H1= H2= HOW=

. "$(dirname "$0")/../tap.sh"
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name" "$(diag)"; fi; }
diag() { echo "rc=$rc"; head -c 2000 "$WORK/out" "$WORK/err"; }

ns_exists() { [ -n "$1" ] && ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$1"; }

lab_down() {
    if [ "$HOW" = netlab ]; then
        bash "$NETLAB" down --tag "$TAG" >/dev/null 2>&1
    fi
    local ns
    for ns in $H1 $H2; do     # plain ip, or whatever netlab left
        ns_exists "$ns" && ip netns del "$ns" 2>/dev/null
    done
    return 0
}

cleanup() {
    pgrep -f "sleep $MARK" | xargs -r kill -KILL 2>/dev/null
    lab_down
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Two hosts joined by one veth pair, v2-1 in h1 (198.18.1.1) and v1-1 in
# h2 (198.18.1.2), as netlab.sh makes them.
lab_up() {
    if [ -f "$NETLAB" ]; then
        H1=cvia-$TAG-h1 H2=cvia-$TAG-h2
        if bash "$NETLAB" up --tag "$TAG" --hosts 2 >"$WORK/lab" 2>&1; then
            HOW=netlab
            return 0
        fi
        lab_down
    fi
    H1=cvia-t$$-h1 H2=cvia-t$$-h2
    ip netns add "$H1" 2>"$WORK/lab" || { H1= H2=; return 1; }
    ip netns add "$H2" 2>>"$WORK/lab" || return 1
    HOW=ip
    ip -n "$H1" link set lo up && ip -n "$H2" link set lo up &&
    ip -n "$H1" link add name v2-1 type veth peer name v1-1 netns "$H2" &&
    ip -n "$H1" addr add 198.18.1.1/24 dev v2-1 && ip -n "$H2" addr add 198.18.1.2/24 dev v1-1 &&
    ip -n "$H1" link set v2-1 up && ip -n "$H2" link set v1-1 up
} 2>>"$WORK/lab"

# run cvia-run bounded; sets rc, leaves stdout/stderr in $WORK/out, $WORK/err
bounded() {
    timeout --preserve-status -s USR1 -k 5 "$LIMIT" "$RUN" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
    rc=$?
}

NTESTS=13
reason=
if [ "$(id -u)" != 0 ]; then
    reason="needs root to make network namespaces"
elif ! command -v ip >/dev/null; then
    reason="needs iproute2 (ip)"
elif ! lab_up; then
    reason="cannot make network namespaces here: $(head -n 1 "$WORK/lab")"
fi
if [ -n "$reason" ]; then
    lab_down
    echo "1..0 # SKIP $reason"
    exit 0
fi
echo "1..$NTESTS"
echo "# hosts $H1 $H2 (made with $HOW)"
I1=$(stat -L -c %i "/run/netns/$H1") I2=$(stat -L -c %i "/run/netns/$H2")
INO=("$I1" "$I2")
NAME=("$H1" "$H2")

# What every rank reports: rank, local rank, local size, its namespace.
SHOW='echo "$CVIA_RANK $CVIA_LOCAL_RANK $CVIA_LOCAL_SIZE $(stat -L -c %i /proc/self/ns/net)"'

# placement EXPECTED: "rank:host:local:lsize ..." against $WORK/out
placed() {
    local want=$1 got line r l s i h
    [ "$rc" = 0 ] || return 1
    got=$(sort -n "$WORK/out" | while read -r r l s i; do
        h=?; [ "$i" = "$I1" ] && h=1; [ "$i" = "$I2" ] && h=2
        printf '%s:%s:%s:%s ' "$r" "$h" "$l" "$s"
    done)
    [ "$got" = "$want " ] || { echo "want '$want' got '$got'" >>"$WORK/err"; return 1; }
}

# 1
bounded -n 4 --hosts "$H1,$H2" sh -c "$SHOW"
check "-n 4 over 2 hosts, cyclic by default: rank r in host r%2's namespace, local rank/size per host" \
    placed "0:1:0:2 1:2:0:2 2:1:1:2 3:2:1:2"

# 2
bounded -n 4 --hosts "$H1,$H2" --map-by block sh -c "$SHOW"
check "--map-by block: ranks 0,1 on the first host, 2,3 on the second" \
    placed "0:1:0:2 1:1:1:2 2:2:0:2 3:2:1:2"

# 3
bounded -n 5 --hosts "$H1,$H2" --map-by block sh -c "$SHOW"
check "--map-by block, -n 5: 3 then 2 consecutive ranks" \
    placed "0:1:0:3 1:1:1:3 2:1:2:3 3:2:0:2 4:2:1:2"

# 4
bounded -n 3 --hosts "$H1,$H2" --map-by cyclic sh -c "$SHOW"
check "--map-by cyclic, -n 3: two ranks on the first host, one on the second" \
    placed "0:1:0:2 1:2:0:1 2:1:1:2"

# 5
bounded -n 2 --hosts "/run/netns/$H2,$H1" sh -c "$SHOW"
check "a host given as the path of a namespace file" placed "0:2:0:1 1:1:0:1"

# 6
bounded -n 4 --hosts "$H1,$H2" --prefix sh -c 'echo "hi $CVIA_RANK"; echo "err $CVIA_RANK" >&2'
check "--prefix tags lines with [rank@host]" eval '[ "$rc" = 0 ] &&
    grep -qx "\[0@$H1\] hi 0" "$WORK/out" && grep -qx "\[3@$H2\] hi 3" "$WORK/out" &&
    grep -qx "\[1@$H2\] err 1" "$WORK/err"'

# 7: a rank sees its host's interfaces in /sys (a sysfs of its namespace)
# and its host's address; the launcher's mounts are untouched
sysfs_before=$(grep -c ' /sys ' /proc/self/mounts)
bounded -n 2 --hosts "$H1,$H2" sh -c 'echo "$CVIA_RANK $(ls /sys/class/net | tr "\n" " ")$(ip -br -4 addr show 2>/dev/null | awk "\$1 != \"lo\" {print \$3}")"'
check "each rank sees its host's veth and address, the launcher's /sys unchanged" eval '[ "$rc" = 0 ] &&
    grep -q "^0 .*v2-1 .*198.18.1.1/24" "$WORK/out" && grep -q "^1 .*v1-1 .*198.18.1.2/24" "$WORK/out" &&
    [ "$(grep -c " /sys " /proc/self/mounts)" = "$sysfs_before" ]'

# 8: --bind core pins per host, as if each host had the launcher's CPUs
bounded -n 4 --hosts "$H1,$H2" --bind core sh -c 'echo "$CVIA_LOCAL_RANK $(awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status)"'
first=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status | cut -d, -f1 | cut -d- -f1)
check "--bind core: ranks of the same local rank on different hosts share a CPU" eval '[ "$rc" = 0 ] &&
    [ "$(sort -u "$WORK/out" | wc -l)" = 2 ] && grep -qx "0 $first" "$WORK/out" &&
    [ "$(awk "{print \$2}" "$WORK/out" | grep -c "^[0-9]*$")" = 4 ]'

# 9
bounded -n 2 --hosts "$H1,no-such-host-$$" sh -c "touch $WORK/started.\$CVIA_RANK"
check "an unknown host: exit 2, one line naming it, nothing started" eval '[ "$rc" = 2 ] &&
    [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q "no-such-host-$$" "$WORK/err" &&
    [ ! -s "$WORK/out" ] && ! ls "$WORK"/started.* >/dev/null 2>&1'

# 10
bad=""
for args in "--hosts $H1,$H1" "--hosts $H1," "--hosts ,$H1" "--hosts /etc/hostname" \
            "--hosts .." "--hosts $H1 --map-by node"; do
    # shellcheck disable=SC2086
    bounded $args -n 2 sh -c "touch $WORK/started.\$CVIA_RANK"
    if [ "$rc" != 2 ] || [ -s "$WORK/out" ] || [ "$(wc -l <"$WORK/err")" != 1 ] ||
       ! grep -q '^cvia-run: ' "$WORK/err" || ls "$WORK"/started.* >/dev/null 2>&1; then
        bad="$bad [$args: rc=$rc $(head -c 200 "$WORK/err")]"
    fi
done
[ -z "$bad" ] && ok "duplicate, empty or non-namespace hosts and bad --map-by: exit 2, one line" ||
    fail "duplicate, empty or non-namespace hosts and bad --map-by: exit 2, one line" "$bad"

# 11
bounded -n 4 --hosts "$H1,$H2" sh -c "[ \$CVIA_RANK = 1 ] && exit 3; sleep $MARK; :"
check "a rank failing on a host: its host named, the job torn down" eval '[ "$rc" = 3 ] &&
    grep -q "^cvia-run: rank 1 (pid [0-9]*) on host $H2 exited with status 3\$" "$WORK/err" &&
    ! pgrep -f "sleep $MARK" >/dev/null'

# 12: a real corevia program over 2 hosts x 2 ranks: shm inside a host, the
# network provider between them
if ! "$INFO" -l 2>/dev/null | grep -qE '^ *tcp( |$)'; then
    skip "func_p2p sizes over 2 hosts x 2 ranks (shm + tcp)" "tcp provider not built yet"
else
    token="cvia-test-$$-$RANDOM"
    CVIA_NET=tcp bounded -n 4 --hosts "$H1,$H2" --timeout "$((15 * MULT))" -- "$P2P" sizes "--token=$token"
    check "func_p2p sizes over 2 hosts x 2 ranks (shm + tcp)" eval '[ "$rc" = 0 ] &&
        grep -q "^ok sizes" "$WORK/out" && ! pgrep -f -- "--token=$token" >/dev/null'
fi

# 13: everything this test made goes; nothing is left
lab_down
left=""
for ns in $H1 $H2; do ns_exists "$ns" && left="$left $ns"; done
[ "$HOW" = netlab ] && [ -e "${CVIA_NETLAB_STATE:-/run/cvia-netlab}/$TAG.conf" ] && left="$left netlab-state"
pgrep -f "sleep $MARK" >/dev/null && left="$left processes"
[ -n "$(ls -A "$TMPDIR")" ] && left="$left $(ls -A "$TMPDIR")"
[ -z "$left" ] && ok "no namespace, veth, process or socket directory left" ||
    fail "no namespace, veth, process or socket directory left" "left:$left"

[ "$failed" = 0 ]
