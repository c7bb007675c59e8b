#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# cvia-affinity's command line: --help of the tool and of each command
# (stdout, exit 0, every long option shown), usage errors (exit 2, one
# line), bad input (unknown pid, malformed XML, profile, interrupt and
# observation files, no permission): one line on stderr, non-zero exit,
# nothing on stdout, nothing changed. JSON output is valid. TAP.
#   test_affinity_cli.sh TOOL SOURCE_DIR
set -u
TOOL=${1:?usage: $0 TOOL SOURCE_DIR}
SRC=${2:?usage: $0 TOOL SOURCE_DIR}
TOPO=$SRC/tests/topo
SHARED=$SRC/tests/data/topologies
MULT=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
LIMIT=$((20 * MULT))
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_affinity_cli.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
for v in $(compgen -e | grep '^CVIA_' | grep -v '^CVIA_TEST_'); do unset "$v"; done

. "$(dirname "$0")/../tap.sh"
nlines() { wc -l <"$1" | tr -d ' '; }
show() { echo "rc=$rc" "stdout: $(head -c 300 "$WORK/out")" "stderr: $(head -c 400 "$WORK/err")"; }
# exit CODE, exactly one line on stderr, nothing on stdout
one_line_error() {   # DESC EXPECTED_RC [GREP]
    local d=$1 want=$2 pat=${3:-}
    check "$d" "$( ( [ "$rc" = "$want" ] || { [ "$want" = nz ] && [ "$rc" != 0 ] && [ "$rc" -lt 124 ]; } ) &&
        [ "$(nlines "$WORK/err")" = 1 ] && [ ! -s "$WORK/out" ] &&
        { [ -z "$pat" ] || grep -qiE -- "$pat" "$WORK/err"; }; echo $?)" "$(show)"
}
json_ok() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }
jsonl_ok() { python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$1" 2>/dev/null; }

XML=$SHARED/24em64t-2n6c2t-pci.xml
have_xml=1; [ -r "$XML" ] || have_xml=0

# ---------------------------------------------------------------- help

bounded "$TOOL" --help
check "cvia-affinity --help: exit 0, usage on stdout, nothing on stderr" \
    "$([ "$rc" = 0 ] && grep -q '^Usage: cvia-affinity' "$WORK/out" && [ ! -s "$WORK/err" ]; echo $?)" "$(show)"
for cmd in topo analyze daemon stream; do
    grep -q "^  $cmd " "$WORK/out" || missing_cmd="${missing_cmd:-} $cmd"
done
check "cvia-affinity --help names the four commands" "$([ -z "${missing_cmd:-}" ]; echo $?)" "missing:${missing_cmd:-}"

for cmd in topo analyze daemon stream; do
    file=$SRC/tools/cvia-affinity/aff_$cmd.c
    bounded "$TOOL" "$cmd" --help
    check "$cmd --help: exit 0, usage on stdout, nothing on stderr" \
        "$([ "$rc" = 0 ] && grep -q "^Usage: cvia-affinity $cmd" "$WORK/out" && [ ! -s "$WORK/err" ]; echo $?)" "$(show)"
    opts=$(grep -oE '\{ *"[a-z][a-z0-9-]*", *(no|required|optional)_argument' "$file" |
           grep -oE '"[a-z][a-z0-9-]*"' | tr -d '"' | sort -u)
    missing=
    for o in $opts; do grep -qE -- "--$o([^a-z0-9-]|\$)" "$WORK/out" || missing="$missing --$o"; done
    check "$cmd --help shows each of its $(echo "$opts" | wc -w) long options" \
        "$([ -n "$opts" ] && [ -z "$missing" ]; echo $?)" "not in --help:${missing:- (none found in $file)}"
    check "$cmd --help states the defaults" \
        "$(grep -qi 'default' "$WORK/out"; echo $?)" "$(show)"
    bounded "$TOOL" "$cmd" --no-such-option
    one_line_error "$cmd --no-such-option: exit 2, one line naming it" 2 'no-such-option'
    bounded "$TOOL" "$cmd" stray-argument
    one_line_error "$cmd stray-argument: exit 2, one line" 2 'stray-argument'
done
bounded "$TOOL"
one_line_error "no command: exit 2, one line" 2
bounded "$TOOL" frobnicate
one_line_error "unknown command: exit 2, one line naming it" 2 frobnicate
bounded "$TOOL" -Z
one_line_error "unknown option -Z: exit 2, one line naming it" 2 -- '-Z'
bounded "$TOOL" --version
check "--version prints corevia's version" "$([ "$rc" = 0 ] && grep -qx 'cvia-affinity (corevia) [0-9.]*' "$WORK/out"; echo $?)" "$(show)"

# ---------------------------------------------------------------- usage errors

bounded "$TOOL" daemon
one_line_error "daemon with nothing to watch: exit 2" 2 'nothing to watch'
bounded "$TOOL" daemon --pid 1 --topology "$XML"
one_line_error "daemon --topology without --replay: exit 2" 2 'replay'
bounded "$TOOL" daemon --pid 12x
one_line_error "daemon --pid 12x: exit 2" 2 '12x'
bounded "$TOOL" daemon --pid 1 --period 0
one_line_error "daemon --period 0: exit 2" 2 'period'
bounded "$TOOL" daemon --pid 1 --irq-core eth0
one_line_error "daemon --irq-core without =PU: exit 2" 2 'irq-core'
bounded "$TOOL" topo --apply --topology "$XML"
one_line_error "topo --apply on a recorded machine without --proc-root: exit 2" 2 'proc-root'
bounded "$TOOL" topo --apply --restore
one_line_error "topo --apply --restore: exit 2" 2 'exclude'
bounded "$TOOL" analyze --device eth0
one_line_error "analyze --device eth0: exit 2 (lo and veth only)" 2 'eth0'
bounded "$TOOL" analyze --rates 0.2,0.5
one_line_error "analyze --rates not largest first: exit 2" 2 'rates'
bounded "$TOOL" stream --time 1
one_line_error "stream without --listen or --connect: exit 2" 2 'listen'
bounded "$TOOL" stream --connect 127.0.0.1
one_line_error "stream --connect without a port: exit 2" 2 '127.0.0.1'
bounded "$TOOL" stream --listen 127.0.0.1:1 --rate fast
one_line_error "stream --rate fast: exit 2" 2 'rate'
bounded "$TOOL" analyze --transport infiniband
one_line_error "analyze --transport infiniband: exit 2 (kernel-tcp or corevia)" 2 'transport'
bounded "$TOOL" analyze --transport corevia --provider nosuch
one_line_error "analyze --provider nosuch: exit 2, naming the providers built" 2 'nosuch.*has: .*tcp'
bounded "$TOOL" analyze --transport corevia --device lo
one_line_error "analyze --transport corevia --device lo: exit 2 (one namespace: shm)" 2 'shared memory'
bounded "$TOOL" analyze --provider tcp
one_line_error "analyze --provider without --transport corevia: exit 2" 2 'provider'
bounded "$TOOL" analyze --transport corevia --window 0
one_line_error "analyze --window 0: exit 2" 2 'window'
bounded "$TOOL" stream --transport corevia --time 1
one_line_error "stream --transport corevia outside cvia-run: exit 2, says how to start it" 2 'cvia-run -n 2'
bounded "$TOOL" stream --transport corevia --connect 127.0.0.1:1
one_line_error "stream --transport corevia --connect: exit 2" 2 'connect'
bounded "$TOOL" stream --transport corevia --chunk 16
one_line_error "stream --transport corevia --chunk 16: exit 2" 2 'chunk'
bounded "$TOOL" stream --listen 127.0.0.1:1 --send-cpu 0
one_line_error "stream --send-cpu over kernel TCP: exit 2" 2 'send-cpu'
bounded "$TOOL" stream --listen 127.0.0.1:1 --cpu 0-x
one_line_error "stream --cpu 0-x: exit 2" 2 'cpu'

# ---------------------------------------------------------------- bad input

bounded "$TOOL" topo --topology /nonexistent/machine.xml
one_line_error "topo --topology /nonexistent: one line, non-zero" nz 'nonexistent'
printf '<?xml version="1.0"?>\n<topology><object type="Machine"' >"$WORK/bad.xml"
bounded "$TOOL" topo --topology "$WORK/bad.xml"
one_line_error "topo --topology malformed.xml: one line, non-zero" nz 'bad.xml'
mkdir -p "$WORK/notsysfs"
bounded "$TOOL" topo --topology "$WORK/notsysfs"
one_line_error "topo --topology of a directory that is no sysfs dump: one line, non-zero" nz 'sysfs'
bounded env CVIA_TOPOLOGY=/nonexistent.xml "$TOOL" topo
one_line_error "CVIA_TOPOLOGY=/nonexistent topo: one line, non-zero" nz 'nonexistent'
if [ $have_xml = 1 ]; then
    printf '{"ib0": [72, 73' >"$WORK/trunc.json"
    bounded "$TOOL" topo --topology "$XML" --irqs "$WORK/trunc.json"
    one_line_error "topo --irqs truncated JSON: one line with where it broke" nz 'line 1 column'
    printf '{"ib0": ["x"]}' >"$WORK/str.json"
    bounded "$TOOL" topo --topology "$XML" --irqs "$WORK/str.json"
    one_line_error "topo --irqs with a non-number: one line" nz 'integers'
    printf '{"wlan9": [5]}' >"$WORK/unknown_if.json"
    bounded "$TOOL" topo --topology "$XML" --irqs "$WORK/unknown_if.json"
    one_line_error "topo --irqs naming an unknown interface without its locality: one line naming it" nz 'wlan9'
    printf '{"wlan9": {"irqs": [5], "local_cpus": "200-300"}}' >"$WORK/far.json"
    bounded "$TOOL" topo --topology "$XML" --irqs "$WORK/far.json"
    one_line_error "topo --irqs with local_cpus outside the machine: one line" nz 'local_cpus'
    bounded "$TOOL" topo --topology "$XML" --irqs /nonexistent.json
    one_line_error "topo --irqs /nonexistent: one line" nz 'nonexistent'
    printf '{"format": "something-else"}' >"$WORK/notprof.json"
    bounded "$TOOL" topo --topology "$XML" --profile "$WORK/notprof.json"
    one_line_error "topo --profile that is no profile: one line" nz 'profile'
    sed 's/"demand_cores": 0.75/"demand_cores": -1/' "$TOPO/paper-ib.profile.json" >"$WORK/negprof.json"
    bounded "$TOOL" daemon --replay "$TOPO/paper-ib.obs.json" --topology "$XML" --profile "$WORK/negprof.json"
    one_line_error "daemon --profile with a negative demand: one line" nz 'demand'
    sed 's/"same", "package"/"same", "attic"/' "$TOPO/paper-ib.profile.json" >"$WORK/badrank.json"
    bounded "$TOOL" daemon --replay "$TOPO/paper-ib.obs.json" --topology "$XML" --profile "$WORK/badrank.json"
    one_line_error "daemon --profile with an unknown class: one line naming it" nz 'attic'
    printf '{"periods": [{"busy": {"0-3": 2}, "procs": []}]}' >"$WORK/badobs.json"
    bounded "$TOOL" daemon --replay "$WORK/badobs.json" --topology "$XML"
    one_line_error "daemon --replay with a busy fraction of 2: one line" nz 'fraction'
    printf '{"periods": [{"procs": [{"comm": "x"}]}]}' >"$WORK/nopid.json"
    bounded "$TOOL" daemon --replay "$WORK/nopid.json" --topology "$XML"
    one_line_error "daemon --replay with a process without pid: one line" nz 'pid'
else
    skip "malformed input files ($XML not found)"
fi
# a pid that does not exist (the highest possible ones are free)
max=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)
free_pid=$((max - 1))
while [ -d /proc/$free_pid ]; do free_pid=$((free_pid - 1)); done
bounded "$TOOL" daemon --pid "$free_pid" --duration 1
one_line_error "daemon --pid of no process: one line naming it, non-zero" nz "$free_pid"
bounded "$TOOL" daemon --cgroup cvia-no-such-cgroup-$$ --duration 1
one_line_error "daemon --cgroup that does not exist: one line, non-zero" nz 'cgroup'

# no permission: as an unprivileged user, on another user's process
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    sleep 30 &
    victim=$!
    before=$(taskset -p "$victim" 2>/dev/null)
    bounded setpriv --reuid=65534 --regid=65534 --clear-groups "$TOOL" daemon --pid "$victim" --duration 1
    one_line_error "daemon on another user's process, unprivileged: one line, non-zero" nz 'permission'
    check "... and its affinity is unchanged" "$([ "$(taskset -p "$victim" 2>/dev/null)" = "$before" ]; echo $?)"
    kill "$victim" 2>/dev/null; wait "$victim" 2>/dev/null
else
    skip "no-permission case (needs root to drop to nobody, and setpriv)"
fi

# ---------------------------------------------------------------- JSON

if command -v python3 >/dev/null; then
    if [ $have_xml = 1 ]; then
        bounded "$TOOL" topo --topology "$XML" --irqs "$TOPO/24em64t.irqs.json" --json
        check "topo --json on a recorded machine is valid JSON" "$([ "$rc" = 0 ] && json_ok "$WORK/out"; echo $?)" "$(show)"
        check "... the Mellanox's proposed interrupt core is on package 0" \
            "$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
ib = [i for i in d["interfaces"] if i["name"] == "ib0"][0]
core = [c for c in d["core_list"] if c["core"] == ib["proposed_core"]][0]
assert core["package"] == 0 and ib["package"] == 0' "$WORK/out" 2>/dev/null; echo $?)" "$(show)"
        bounded "$TOOL" daemon --replay "$TOPO/paper-ib.obs.json" --topology "$XML" --json
        check "daemon --replay --json: one valid JSON object per line" \
            "$([ "$rc" = 0 ] && [ -s "$WORK/out" ] && jsonl_ok "$WORK/out"; echo $?)" "$(show)"
    fi
    bounded "$TOOL" topo --json
    check "topo --json on this machine is valid JSON" "$([ "$rc" = 0 ] && json_ok "$WORK/out"; echo $?)" "$(show)"
else
    skip "JSON checks (no python3)"
fi
bounded "$TOOL" topo
check "topo on this machine: exit 0, text" "$([ "$rc" = 0 ] && grep -q '^topology  this machine' "$WORK/out"; echo $?)" "$(show)"

echo "1..$n"
[ "$failed" = 0 ]
