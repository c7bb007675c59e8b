#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A recorded HELLO replayed on the link (issue 14): launcher-free peers
# across two namespace hosts of scripts/netlab.sh over udp.
#   replay.sh FAB_DYN PROVIDER_DIR
# a (host 1, udp port P) connects to b (host 2) while hello_replay.py
# records every HELLO a sends on host 1's link (AF_PACKET). a sends one
# message and closes; b sees it gone. c, a new process at a's address
# (host 1, port P), connects to b and sends one message. Then the script
# sends a's recorded HELLOs again, byte for byte, from host 1's link. b
# must count each of them (CVIA_DGRAM_STATS: replays = the number
# replayed), take no new peer (2 "(it connected)" lines: a and c), and
# deliver nothing (a wildcard receive posted for 500 ms stays empty).
set -u
[ $# -eq 2 ] || { echo "usage: replay.sh FAB_DYN PROVIDER_DIR" >&2; exit 2; }
prog=$1 provdir=$2
mult=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
limit=$((30 * mult))
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=$(mktemp -d) || exit 1
chmod 755 "$work"
tag=rp$$
pcap=
cleanup() {
    [ -n "$pcap" ] && kill "$pcap" 2>/dev/null
    "$top/scripts/netlab.sh" down --tag "$tag" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
command -v python3 >/dev/null || { echo "replay.sh: python3 is needed (scripts/install-deps.sh)"; exit 1; }
"$top/scripts/netlab.sh" up --tag "$tag" --hosts 2 >/dev/null 2>"$work/lab" ||
    { echo "SKIP: no network lab here: $(head -1 "$work/lab")"; exit 77; }
on_a=("$top/scripts/netlab.sh" exec --tag "$tag" h1)
on_b=("$top/scripts/netlab.sh" exec --tag "$tag" h2)
unset CVIA_BOOT_ADDR CVIA_RANK CVIA_SIZE CVIA_JOBID PMIX_RANK PMIX_NAMESPACE PMIX_SERVER_URI2 \
      PMIX_SERVER_URI3 PMIX_SERVER_URI4 PMIX_SERVER_URI41 OMPI_COMM_WORLD_RANK SLURM_STEP_NUM_TASKS
export FI_PROVIDER_PATH=$provdir CVIA_NET=udp CVIA_DGRAM_PEER_TIMEOUT=2s \
       CVIA_BOOT_TIMEOUT=$((3 * mult))s CVIA_LOG=info CVIA_LOG_SUBSYS=net CVIA_DGRAM_STATS=yes
asan=$(ldd "$provdir"/*.so 2>/dev/null | awk '$1 ~ /^lib[at]san/ && $3 ~ /^\// { print $3; exit }')
[ -n "$asan" ] && ! ldd "$prog" | grep -q "${asan##*/}" && export LD_PRELOAD=$asan
iface=$("${on_a[@]}" ip -o link show | awk -F': ' '$2 != "lo" { sub(/@.*/, "", $2); print $2; exit }')
[ -n "$iface" ] || { echo "no link in host 1"; exit 1; }
port=$((20000 + $$ % 20000))
fail=0

LD_PRELOAD= timeout "$limit" "${on_a[@]}" python3 "$here/hello_replay.py" capture "$iface" "$port" \
    "$work/hello.hex" "$limit" >"$work/cap.out" 2>&1 &
pcap=$!
for i in $(seq 200); do grep -q capturing "$work/cap.out" && break; sleep 0.05; done
timeout "$limit" "${on_b[@]}" "$prog" b "$work" replay >"$work/b.out" 2>&1 &
pb=$!
CVIA_UDP_PORT=$port timeout "$limit" "${on_a[@]}" "$prog" a "$work" replay >"$work/a.out" 2>&1
ra=$?
sleep 0.2   # the last HELLO resends of a, if any, are on the wire
kill "$pcap" 2>/dev/null; wait "$pcap" 2>/dev/null; pcap=
n=$(wc -l <"$work/hello.hex" 2>/dev/null || echo 0)
# c at a's address once b has seen a gone
CVIA_UDP_PORT=$port timeout "$limit" "${on_a[@]}" "$prog" c "$work" replay >"$work/c.out" 2>&1 &
pc=$!
for i in $(seq $((limit * 20))); do [ -f "$work/ready2" ] && break; sleep 0.05; done
if [ -f "$work/ready2" ]; then
    LD_PRELOAD= "${on_a[@]}" python3 "$here/hello_replay.py" replay "$iface" "$work/hello.hex" \
        >"$work/rep.out" 2>&1
fi
touch "$work/replayed"
wait $pc; rc=$?
wait $pb; rb=$?
for r in a b c rep; do [ -f "$work/$r.out" ] && { echo "--- $r"; cat "$work/$r.out"; }; done
echo "--- HELLOs recorded: $n"

[ "$n" -ge 1 ] || { echo "no HELLO of a recorded"; fail=1; }
grep -qx "replayed $n" "$work/rep.out" 2>/dev/null || { echo "the replay did not send $n frames"; fail=1; }
[ $ra -eq 0 ] && grep -qx "ok replay a" "$work/a.out" || fail=1
[ $rc -eq 0 ] && grep -qx "ok replay c" "$work/c.out" || fail=1
[ $rb -eq 0 ] && grep -qx "ok replay" "$work/b.out" || fail=1
got=$(sed -n 's/.* udp stats: .* replays \([0-9]*\).*/\1/p' "$work/b.out" | tail -1)
[ "$got" = "$n" ] || { echo "b counted '${got:-none}' replays, not $n"; fail=1; }
conn=$(grep -c '(it connected)' "$work/b.out")
[ "$conn" -eq 2 ] || { echo "b took $conn connections, not 2 (a and c)"; fail=1; }
left=
for r in a b c; do
    p=$(cat "$work/$r.pid" 2>/dev/null) || continue
    # ours only: func.squat, beside us, plants another user's files
    # under the names of the next pids
    left+=$(find /dev/shm -maxdepth 1 -user "$(id -u)" -name "cvia-$(id -u)-$p-*" -printf '%f ' 2>/dev/null)
done
[ -z "$left" ] || { echo "segments left: $left"; fail=1; }
[ $fail -eq 0 ] && echo "PASS replayed HELLO ($n frames) counted and dropped" || echo "FAIL replay"
exit $fail
