#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# cvia-affinity on this machine, with real processes, bounded: the daemon
# pins a streaming receiver within two periods and gives its affinity back
# at the end and on SIGTERM; --dry-run changes nothing; --comm and --cgroup
# select processes; a receiver in a network namespace is anchored at its
# device's rps_cpus; analyze writes a profile the daemon accepts and leaves
# no namespace behind; netlab.sh up/down is idempotent and leaves nothing.
# Traffic only on loopback and inside namespaces made here. Only decision
# counts are checked, never timings. TAP.
#   test_affinity_live.sh TOOL SOURCE_DIR
set -u
TOOL=${1:?usage: $0 TOOL SOURCE_DIR}
SRC=${2:?usage: $0 TOOL SOURCE_DIR}
NETLAB=$SRC/scripts/netlab.sh
MULT=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
T=$((10 * MULT))                       # each stream outlasts the daemon watching it
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_affinity_live.XXXXXX") || exit 1
TAG=lt$$
TAG=${TAG:0:12}
PIDS=()
CG=
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ -n "$CG" ] && [ -d "$CG" ] && rmdir "$CG" 2>/dev/null
    [ "$(id -u)" = 0 ] && CVIA_NETLAB_STATE=$WORK/netlab bash "$NETLAB" down --tag "$TAG" >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
for v in $(compgen -e | grep '^CVIA_' | grep -v '^CVIA_TEST_'); do unset "$v"; done
export CVIA_NETLAB_STATE=$WORK/netlab

. "$(dirname "$0")/../tap.sh"
mask() { taskset -p "$1" 2>/dev/null | sed 's/.*: //'; }
port=$((20000 + RANDOM % 20000))

# Thresholds wide enough that any stream is high and any idle one low, so
# the checks depend on decisions, not on how fast this machine streams.
cat >"$WORK/wide.json" <<'EOF'
{"format": "corevia-affinity-profile/1", "devices": [
 {"device": "lo", "driver": "loopback",
  "classes": [{"class": "same", "bandwidth_Bps": 1e6, "cpu_process": 0.1}], "rank": ["same"],
  "demand_cores": 0.1, "best_bandwidth_Bps": 1e6, "min_interval_us": 1,
  "thresholds": {"high_interval_us": 1e6, "low_interval_us": 2e6, "derivation": "test"}},
 {"device": "veth", "driver": "veth",
  "classes": [{"class": "same", "bandwidth_Bps": 1e6, "cpu_process": 0.1}], "rank": ["same"],
  "demand_cores": 0.1, "best_bandwidth_Bps": 1e6, "min_interval_us": 1,
  "thresholds": {"high_interval_us": 1e6, "low_interval_us": 2e6, "derivation": "test"}}]}
EOF

# start a receiver (the binary $1) and a sender to it on loopback; sets SINK
stream_pair() {
    local bin=$1 p=$((port++))
    "$bin" stream --listen "127.0.0.1:$p" --timeout $((T + 30)) --json >"$WORK/sink.json" 2>&1 &
    SINK=$!
    PIDS+=("$SINK")
    "$TOOL" stream --connect "127.0.0.1:$p" --time "$T" --rate 200m --timeout 10 >/dev/null 2>&1 &
    SENDER=$!
    PIDS+=("$SENDER")
}
# the streams only have to outlast the daemon: stop them when it is done
stop_pair() { kill "$SINK" "$SENDER" 2>/dev/null; wait "$SINK" "$SENDER" 2>/dev/null; }
# first period number at which pid $2's decision in JSON lines file $1 is $3
# ("any": anything but waiting)
first_period() {
    python3 - "$@" <<'EOF' 2>/dev/null
import json, sys
f, pid, action = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for l in open(f):
    d = json.loads(l)
    if d.get("pid") == pid and (d.get("action") == action or
                                (action == "any" and d.get("action") != "wait")):
        print(d["period"]); break
EOF
}
# The first pin of pid $2: "pin P S": pinned at period P after S periods in
# which no core had the idle capacity its demand needs (this machine is
# shared: other work may fill it, and leaving the process to the scheduler
# is then the right decision); "saturated" if never pinned for that reason
outcome() {
    python3 - "$@" <<'EOF' 2>/dev/null
import json, sys
f, pid = sys.argv[1], int(sys.argv[2])
sat = 0
for l in open(f):
    d = json.loads(l)
    if d.get("pid") != pid or d.get("action") == "wait":
        continue
    if d["action"] == "pin-core":
        print("pin", d["period"], sat); break
    if "idle capacity" in d["reason"] or d["action"] == "pin-group":
        sat += 1; continue
    print("other", d["action"], d["reason"]); break
else:
    print("saturated" if sat else "none")
EOF
}
watch_mask() {   # PID DAEMON_PID -> every distinct mask seen while the daemon runs
    local m seen=
    while kill -0 "$2" 2>/dev/null; do
        m=$(mask "$1"); case " $seen " in *" $m "*) ;; *) seen="$seen $m" ;; esac
        sleep 0.05
    done
    echo "$seen"
}

# ------------------------------------------------ pin, keep, restore at the end

stream_pair "$TOOL"
orig=$(mask "$SINK")
"$TOOL" daemon --pid "$SINK" --period 200ms --duration $((4 * MULT)) --profile "$WORK/wide.json" -v \
    --json >"$WORK/d1.json" 2>"$WORK/d1.err" &
D=$!
seen=$(watch_mask "$SINK" "$D")
wait "$D"; rc=$?
res=$(outcome "$WORK/d1.json" "$SINK")
if [ "$res" = saturated ]; then
    skip "daemon pins a streaming receiver: this machine was saturated by other work (no core had idle capacity), so it rightly left it to the scheduler"
    skip "... its affinity changed while the daemon ran (not pinned: saturated)"
else
    set -- $res
    check "daemon: a streaming receiver is pinned to one core within two periods (of capacity)" \
        "$([ "$rc" = 0 ] && [ "${1:-}" = pin ] && [ "$2" -le $((2 + $3)) ]; echo $?)" \
        "rc=$rc first decision: ${res:-none}" "$(head -c 600 "$WORK/d1.json")" "$(cat "$WORK/d1.err")"
    check "... its affinity was changed while the daemon ran" \
        "$([ "$(echo $seen | wc -w)" -ge 2 ]; echo $?)" "masks seen: $seen (orig $orig)"
fi
check "... and is back to the original after --duration" \
    "$([ "$rc" = 0 ] && [ "$(mask "$SINK")" = "$orig" ]; echo $?)" "now $(mask "$SINK"), orig $orig"
check "... the daemon logged why (device lo, high intensity, the cores' idle capacity)" \
    "$(grep -q '"device":"lo".*"level":"high".*idle' "$WORK/d1.json"; echo $?)" \
    "$(head -c 400 "$WORK/d1.json")"
check "... and reported its own CPU use" \
    "$(grep -q '"cpu_percent_of_core"' "$WORK/d1.json" && grep -q '% of one core' "$WORK/d1.err"; echo $?)" \
    "$(cat "$WORK/d1.err")"
stop_pair

# ------------------------------------------------ SIGTERM restores

stream_pair "$TOOL"
orig=$(mask "$SINK")
"$TOOL" daemon --pid "$SINK" --period 200ms --profile "$WORK/wide.json" -v --json \
    >"$WORK/d2.json" 2>"$WORK/d2.err" &
D=$!
for _ in $(seq $((50 * MULT))); do
    grep -q '"action":"pin-core"' "$WORK/d2.json" 2>/dev/null && break
    sleep 0.1
done
pinned=$(mask "$SINK")
kill -TERM "$D"
wait "$D"; rc=$?
if [ "$pinned" = "$orig" ] && [ "$(outcome "$WORK/d2.json" "$SINK")" = saturated ]; then
    skip "SIGTERM gives the original affinity back (never pinned: machine saturated by other work)"
else
    check "SIGTERM: the daemon gives the original affinity back" \
        "$([ "$pinned" != "$orig" ] && [ "$(mask "$SINK")" = "$orig" ]; echo $?)" \
        "rc=$rc pinned=$pinned now=$(mask "$SINK") orig=$orig" "$(tail -2 "$WORK/d2.err")"
fi
check "SIGTERM: exit 0 with a summary" \
    "$([ "$rc" = 0 ] && grep -q 'stopped_by":"Terminated' "$WORK/d2.json"; echo $?)" "$(tail -2 "$WORK/d2.err")"
stop_pair

# ------------------------------------------------ --dry-run, --comm

cp "$TOOL" "$WORK/cvsink"
stream_pair "$WORK/cvsink"   # the receiver's command name is cvsink
orig=$(mask "$SINK")
"$TOOL" daemon --comm cvsink --dry-run --period 200ms --duration 1.5 --profile "$WORK/wide.json" \
    --json >"$WORK/d3.json" 2>"$WORK/d3.err" &
D=$!
seen=$(watch_mask "$SINK" "$D")
wait "$D"
pin=$(first_period "$WORK/d3.json" "$SINK" any)
check "--comm cvsink finds the receiver by its command name" \
    "$([ -n "$pin" ] && grep -q '"comm":"cvsink"' "$WORK/d3.json"; echo $?)" "$(head -c 400 "$WORK/d3.json")"
check "--dry-run decides but never changes the affinity" \
    "$([ "$(echo $seen)" = "$orig" ]; echo $?)" "masks seen: $seen (orig $orig)"
check "--comm watches nothing else (every decision is about cvsink)" \
    "$(python3 -c 'import json,sys
assert all(d["comm"] == "cvsink" for d in map(json.loads, open(sys.argv[1])) if "pid" in d)' "$WORK/d3.json"
       echo $?)" "$(head -c 400 "$WORK/d3.json")"
stop_pair

# ------------------------------------------------ --cgroup (root; v2, or a v1 hierarchy)

if [ "$(id -u)" = 0 ]; then
    for base in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/pids; do
        [ -f "$base/cgroup.procs" ] && mkdir "$base/cvia-test-$$" 2>/dev/null && {
            CG=$base/cvia-test-$$; break; }
    done
fi
if [ -n "$CG" ]; then
    p=$((port++))
    sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" stream --listen "127.0.0.1:$3" --timeout 40' \
        sh "$CG" "$TOOL" "$p" >/dev/null 2>&1 &
    SINK=$!
    PIDS+=("$SINK")
    "$TOOL" stream --connect "127.0.0.1:$p" --time "$T" --rate 200m --timeout 10 >/dev/null 2>&1 &
    SENDER=$!
    PIDS+=("$SENDER")
    "$TOOL" daemon --cgroup "${CG#/sys/fs/cgroup/}" --dry-run --period 200ms --duration 1.5 \
        --profile "$WORK/wide.json" --json >"$WORK/d4.json" 2>"$WORK/d4.err"
    check "--cgroup ${CG#/sys/fs/cgroup/} watches the processes of that cgroup" \
        "$([ -n "$(first_period "$WORK/d4.json" "$SINK" any)" ]; echo $?)" \
        "$(head -c 400 "$WORK/d4.json")" "$(cat "$WORK/d4.err")"
    stop_pair
    rmdir "$CG" 2>/dev/null && CG=
else
    skip "--cgroup (needs root and a writable cgroup hierarchy)"
fi

# ------------------------------------------------ namespaces: netlab, rps, analyze

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
    skip "netlab.sh, a receiver in a namespace, analyze (need root and network namespaces)"
    echo "1..$n"
    [ "$failed" = 0 ]
    exit
fi
ours() { ip netns list | awk '{print $1}' | grep -c "^cvia-$TAG-"; }
out=$(bash "$NETLAB" up --tag "$TAG" --mtu 9000 --rate 10gbit 2>&1); rc=$?
out2=$(bash "$NETLAB" up --tag "$TAG" --mtu 9000 --rate 10gbit 2>&1); rc2=$?
check "netlab.sh up, then up again: idempotent" \
    "$([ "$rc" = 0 ] && [ "$rc2" = 0 ] && echo "$out2" | grep -q 'already up' &&
       ip netns list | grep -q "cvia-$TAG-h1"; echo $?)" "$out" "$out2"
check "netlab.sh: MTU 9000 and a tbf rate limit inside the namespaces" \
    "$(ip -n "cvia-$TAG-h2" link show v1-1 | grep -q 'mtu 9000' &&
       ip netns exec "cvia-$TAG-h1" tc qdisc show dev v2-1 | grep -q tbf; echo $?)"
cpu=$(( $(nproc) > 1 ? 1 : 0 ))
bash "$NETLAB" rps --tag "$TAG" h2 v1-1 "$cpu" >/dev/null
addr=$(bash "$NETLAB" addr --tag "$TAG" h2 h1)
p=$((port++))
bash "$NETLAB" exec --tag "$TAG" h2 "$TOOL" stream --listen "$addr:$p" --timeout 40 >/dev/null 2>&1 &
SINK=$!
PIDS+=("$SINK")
bash "$NETLAB" exec --tag "$TAG" h1 "$TOOL" stream --connect "$addr:$p" --time "$T" --rate 200m --timeout 10 \
    >/dev/null 2>&1 &
SENDER=$!
PIDS+=("$SENDER")
"$TOOL" daemon --pid "$SINK" --period 200ms --duration 1.5 --profile "$WORK/wide.json" --json \
    >"$WORK/d5.json" 2>"$WORK/d5.err"
check "a receiver in another namespace: its sockets measured, its device found with its rps_cpus" \
    "$(grep -qE "device v1-1@[0-9]+ \(driver veth\): receive processing on core $cpu \(rps_cpus\)" "$WORK/d5.err" &&
       grep -qE '"device":"v1-1@[0-9]+".*"level":"high"' "$WORK/d5.json"; echo $?)" \
    "$(cat "$WORK/d5.err")" "$(head -c 300 "$WORK/d5.json")"
stop_pair
bash "$NETLAB" down --tag "$TAG" >/dev/null
check "netlab.sh down removes every namespace it made (their veth pairs go with them)" \
    "$([ "$(ours)" = 0 ] && [ ! -e "$WORK/netlab/$TAG.conf" ]; echo $?)" "$(ip netns list)"

timeout -k 2 $((60 * MULT)) "$TOOL" analyze --device lo --duration 0.2 --runs 1 --rates 0.5 -q \
    -o "$WORK/profile.json" >"$WORK/an.out" 2>"$WORK/an.err"; rc=$?
check "analyze (lo, short): exit 0, a table naming the classes and the transport (kernel TCP)" \
    "$([ "$rc" = 0 ] && grep -q '^  same ' "$WORK/an.out" && grep -q 'over kernel TCP' "$WORK/an.out" &&
       grep -q '"transport":"kernel-tcp"' "$WORK/profile.json"; echo $?)" \
    "rc=$rc" "$(head -c 600 "$WORK/an.out")" "$(cat "$WORK/an.err")"
"$TOOL" topo --profile "$WORK/profile.json" >/dev/null 2>"$WORK/tp.err"
check "... its profile is accepted by topo --profile" "$(echo $?)" "$(cat "$WORK/tp.err")"
# its namespaces are anonymous, held by children that die with it
check "... and nothing is left behind (no process holding its namespaces, no cvia0/cvia1 here)" \
    "$(! pgrep -f 'analyze --device lo --duration 0.2 --runs 1 --rates 0.5' >/dev/null &&
       ! ip -o link show | grep -qE ': cvia[01][@:]'; echo $?)" "$(pgrep -af 'analyze --device lo')"

echo "1..$n"
[ "$failed" = 0 ]
