#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# cvia-affinity over corevia's network provider (CVIA_NET=tcp), live and
# bounded: `stream --transport corevia` as a cvia-run job between two
# network namespaces moves data through tcp and reports what it measured;
# in one namespace it refuses (shm would carry it); the daemon classifies a
# corevia receiver, whose recv/sendmsg calls /proc/PID/io does not count,
# by its socket bytes; `analyze --transport corevia` writes a profile that
# records its transport, topo accepts it, and nothing is left behind.
# Only presence and consistency of the figures are checked, never their
# size. Needs root and network namespaces, else every test is skipped
# (exit 77 when nothing could run). TAP.
#   test_affinity_corevia.sh TOOL CVIA_RUN SOURCE_DIR
set -u
TOOL=${1:?usage: $0 TOOL CVIA_RUN SOURCE_DIR}
RUN=${2:?usage: $0 TOOL CVIA_RUN SOURCE_DIR}
SRC=${3:?usage: $0 TOOL CVIA_RUN SOURCE_DIR}
NETLAB=$SRC/scripts/netlab.sh
MULT=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
LIMIT=$((60 * MULT))                    # per command, seconds
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_affinity_corevia.XXXXXX") || exit 1
TAG=ac$$
TAG=${TAG:0:12}
PIDS=()
for v in $(compgen -e | grep '^CVIA_' | grep -v '^CVIA_TEST_'); do unset "$v"; done
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    CVIA_NETLAB_STATE=$WORK/netlab bash "$NETLAB" down --tag "$TAG" >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

. "$(dirname "$0")/../tap.sh"
show() { echo "rc=$rc" "stdout: $(head -c 600 "$WORK/out")" "stderr: $(head -c 600 "$WORK/err")"; }
# a job of two ranks; they get no CVIA_NETLAB_STATE (corevia would warn
# about an unknown CVIA_ variable)
JOB=(env -u CVIA_NETLAB_STATE CVIA_NET=tcp "$RUN" -n 2 --bind none --timeout $((40 * MULT)))

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
    echo "1..0 # SKIP needs root and network namespaces"
    exit 77
fi
export CVIA_NETLAB_STATE=$WORK/netlab
if ! bash "$NETLAB" up --tag "$TAG" >"$WORK/lab" 2>&1; then
    echo "1..0 # SKIP cannot make network namespaces here: $(head -1 "$WORK/lab")"
    exit 77
fi
H1=cvia-$TAG-h1 H2=cvia-$TAG-h2

# ------------------------------------------------ one stream over corevia tcp

bounded "${JOB[@]}" --hosts "$H1,$H2" -- "$TOOL" stream --transport corevia --time 1 --rate 500m \
    --cpu 0 --json
check "stream --transport corevia between two namespaces: exit 0, one JSON result from rank 1" \
    "$([ "$rc" = 0 ] && python3 -c 'import json,sys; json.loads(open(sys.argv[1]).read())' "$WORK/out";
       echo $?)" "$(show)"
check "... carried by the tcp provider (its peer path), with bytes, messages, CPU and softirq" \
    "$(python3 - "$WORK/out" 2>/dev/null <<'EOF'
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["role"] == "recv" and d["transport"] == "corevia" and d["provider"] == "tcp"
assert d["path"].startswith("tcp")
assert d["bytes"] > 0 and d["calls"] >= 2 and d["seconds"] > 0 and d["cpu_seconds"] >= 0
assert d["interval_us"] > 0 and d["min_interval_us"] <= d["interval_us"]
assert d["softirq_cores"] >= 0
# every byte the sender sent arrived (counted from the start: no --omit)
assert d["sender_bytes"] == d["bytes"], (d["sender_bytes"], d["bytes"])
EOF
    echo $?)" "$(show)"

bounded "${JOB[@]}" -- "$TOOL" stream --transport corevia --time 1
check "stream --transport corevia in one namespace: refused (shared memory would carry it)" \
    "$([ "$rc" != 0 ] && [ "$rc" -lt 124 ] && grep -q 'share a host' "$WORK/err" &&
       [ ! -s "$WORK/out" ]; echo $?)" "$(show)"

# ------------------------------------------------ the daemon sees a corevia receiver

cat >"$WORK/wide.json" <<'EOF'
{"format": "corevia-affinity-profile/1", "devices": [
 {"device": "veth", "driver": "veth", "transport": "corevia", "provider": "tcp",
  "classes": [{"class": "same", "bandwidth_Bps": 1e6, "cpu_process": 0.1}], "rank": ["same"],
  "demand_cores": 0.1, "best_bandwidth_Bps": 1e6, "min_interval_us": 1,
  "thresholds": {"high_interval_us": 1e6, "low_interval_us": 2e6, "derivation": "test"}}]}
EOF
# rank 1 says its pid, then becomes the receiver
cat >"$WORK/place" <<EOF
#!/bin/sh
[ "\$CVIA_RANK" = 1 ] && echo \$\$ >"$WORK/recv.pid"
exec "$TOOL" stream --transport corevia --time $((6 * MULT)) --rate 200m --json
EOF
chmod +x "$WORK/place"
"${JOB[@]}" --hosts "$H1,$H2" -- "$WORK/place" >"$WORK/s2.json" 2>"$WORK/s2.err" &
PIDS+=($!)
for _ in $(seq $((50 * MULT))); do [ -s "$WORK/recv.pid" ] && break; sleep 0.1; done
RECV=$(cat "$WORK/recv.pid" 2>/dev/null)
if [ -n "$RECV" ]; then
    "$TOOL" daemon --pid "$RECV" --dry-run --period 300ms --duration $((2 * MULT)) \
        --profile "$WORK/wide.json" --json >"$WORK/d.json" 2>"$WORK/d.err"
    rc=$?
fi
# the stream only had to outlast the daemon (6 s against 2, times MULT):
# end the job now rather than wait out the rest of its --time; cvia-run
# takes SIGTERM as a teardown of its ranks (checked below: nothing left)
kill -TERM "${PIDS[-1]}" 2>/dev/null
wait "${PIDS[-1]}" 2>/dev/null
check "daemon on a corevia receiver: high intensity from its socket bytes (no read/write calls seen)" \
    "$([ -n "$RECV" ] && [ "${rc:-1}" = 0 ] &&
       grep -qE '"pid":'"$RECV"'.*"level":"high".*from its socket bytes' "$WORK/d.json"; echo $?)" \
    "recv pid ${RECV:-none}, rc=${rc:-}" "$(head -c 600 "$WORK/d.json")" "$(head -c 300 "$WORK/d.err")" \
    "$(head -c 300 "$WORK/s2.err")"
check "... and names the profile's transport" \
    "$(grep -q 'profile of veth (corevia tcp)' "$WORK/d.err"; echo $?)" "$(head -c 600 "$WORK/d.err")"

# ------------------------------------------------ analyze --transport corevia

bounded "$TOOL" analyze --transport corevia --launcher "$RUN" --duration 0.3 --runs 1 --rates 0.5 -q \
    -o "$WORK/profile.json"
check "analyze --transport corevia (short): exit 0, a table of the classes over corevia tcp" \
    "$([ "$rc" = 0 ] && grep -q 'over corevia tcp' "$WORK/out" && grep -q '^  same ' "$WORK/out" &&
       grep -q 'msg interval' "$WORK/out"; echo $?)" "$(show)"
check "... its profile records the transport and the provider" \
    "$(python3 - "$WORK/profile.json" 2>/dev/null <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
d, = p["devices"]
assert d["device"] == "veth" and d["transport"] == "corevia" and d["provider"] == "tcp"
assert "corevia" in p["notes"] and d["demand_cores"] > 0 and d["best_bandwidth_Bps"] > 0
EOF
    echo $?)" "$(head -c 600 "$WORK/profile.json")"
"$TOOL" topo --profile "$WORK/profile.json" >/dev/null 2>"$WORK/tp.err"
check "... topo --profile accepts it" "$(echo $?)" "$(cat "$WORK/tp.err")"
check "... and nothing is left behind (no cvia-run, rank or namespace keeper of ours)" \
    "$(! pgrep -f "$TOOL analyze --transport corevia" >/dev/null &&
       ! pgrep -f "$TOOL stream --transport corevia" >/dev/null &&
       ! ip -o link show | grep -qE ': cvia[01][@:]'; echo $?)" \
    "$(pgrep -af "$TOOL" | head -5)"

bounded "$TOOL" analyze --transport corevia --launcher "$WORK/nonexistent" --duration 0.1 --runs 1
check "analyze --launcher that is not there: one line, exit 1, nothing measured" \
    "$([ "$rc" = 1 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q 'launcher' "$WORK/err" &&
       [ ! -s "$WORK/out" ]; echo $?)" "$(show)"

echo "1..$n"
[ "$failed" = 0 ]
