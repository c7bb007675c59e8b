#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# cvia-affinity topo --apply / --restore against a fake /proc and /sys tree
# (--proc-root), never this machine's: interrupt lines found from
# sys/class/net/IF/device/msi_irqs and proc/interrupts, the proposal applied,
# the old values saved and put back; a write that fails half-way undoes what
# was done; --dry-run and an unprivileged user change nothing; irqbalance is
# noticed. TAP.
#   test_affinity_apply.sh TOOL SOURCE_DIR
set -u
TOOL=${1:?usage: $0 TOOL SOURCE_DIR}
SRC=${2:?usage: $0 TOOL SOURCE_DIR}
XML=$SRC/tests/data/topologies/24em64t-2n6c2t-pci.xml
MULT=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
LIMIT=$((20 * MULT))
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_affinity_apply.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
for v in $(compgen -e | grep '^CVIA_' | grep -v '^CVIA_TEST_'); do unset "$v"; done
[ -r "$XML" ] || { echo "1..0 # SKIP $XML not found"; exit 77; }

. "$(dirname "$0")/../tap.sh"
show() { echo "rc=$rc" "stdout: $(head -c 400 "$WORK/out")" "stderr: $(head -c 300 "$WORK/err")"; }

# The Mellanox ConnectX of 24em64t (eth2 / ib0, PCI 05:00.0) with four MSI-X
# lines, all allowed everywhere; eth0 with one legacy line.
R=$WORK/root
mkroot() {
    rm -rf "$R"
    mkdir -p "$R/sys/class/net/ib0/device/msi_irqs" "$R/sys/class/net/eth2" \
             "$R/sys/class/net/eth0/device" "$R/proc"
    ln -s ../ib0/device "$R/sys/class/net/eth2/device"
    : >"$R/proc/interrupts"
    printf '           CPU0       CPU1\n' >>"$R/proc/interrupts"
    for irq in 72 73 74 75; do
        : >"$R/sys/class/net/ib0/device/msi_irqs/$irq"
        mkdir -p "$R/proc/irq/$irq"
        echo 0-23 >"$R/proc/irq/$irq/smp_affinity_list"
        printf ' %3d:  0  0  PCI-MSI 5%05d-edge      mlx4-comp-%d@pci:0000:05:00.0\n' \
            "$irq" "$irq" $((irq - 72)) >>"$R/proc/interrupts"
    done
    echo 16 >"$R/sys/class/net/eth0/device/irq"
    mkdir -p "$R/proc/irq/16"
    echo 0-23 >"$R/proc/irq/16/smp_affinity_list"
    printf '  16:  0  0  IO-APIC  16-fasteoi   eth0\n' >>"$R/proc/interrupts"
}
aff() { cat "$R/proc/irq/$1/smp_affinity_list"; }
all_aff() { for i in 16 72 73 74 75; do printf '%s=%s ' "$i" "$(aff $i)"; done; }
STATE=$R/run/cvia-affinity/irq-state.json

mkroot
bounded "$TOOL" topo --topology "$XML" --proc-root "$R"
check "topo --proc-root: finds ib0's four MSI-X lines with their names and affinity" \
    "$([ "$rc" = 0 ] && grep -q 'interrupts: 72 mlx4-comp-0@pci:0000:05:00.0 -> 0-23' "$WORK/out" &&
       grep -q '75 mlx4-comp-3@pci:0000:05:00.0 -> 0-23' "$WORK/out"; echo $?)" "$(show)"
check "... and eth0's legacy line 16" \
    "$(grep -q 'interrupts: 16 eth0 -> 0-23' "$WORK/out"; echo $?)" "$(show)"

# where the kernel actually sends a line (effective_affinity_list) is shown,
# and a device whose lines all land on one core is anchored there
mkroot
for irq in 72 73 74 75; do echo 6 >"$R/proc/irq/$irq/effective_affinity_list"; done
bounded "$TOOL" topo --topology "$XML" --proc-root "$R" --json
check "effective_affinity_list is read: every ConnectX line now on PU 6" \
    "$([ "$rc" = 0 ] && python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
ib = [i for i in d["interfaces"] if i["name"] == "ib0"][0]
assert all(q["effective_affinity"] == "6" for q in ib["irqs"]), ib["irqs"]' "$WORK/out"; echo $?)" "$(show)"
bounded "$TOOL" topo --topology "$XML" --proc-root "$R"
check "... and shown beside smp_affinity in the text" \
    "$(grep -q '72 mlx4-comp-0@pci:0000:05:00.0 -> 0-23 (now 6)' "$WORK/out"; echo $?)" "$(show)"
mkroot

before=$(all_aff)
bounded "$TOOL" topo --topology "$XML" --proc-root "$R" --apply --dry-run
check "--apply --dry-run says what it would set and changes nothing" \
    "$([ "$rc" = 0 ] && grep -q 'irq 72 (eth2): 0-23 -> ' "$WORK/out" && grep -q 'dry run' "$WORK/out" &&
       [ "$(all_aff)" = "$before" ] && [ ! -e "$STATE" ]; echo $?)" "$(show)" "$(all_aff)"

bounded "$TOOL" topo --topology "$XML" --proc-root "$R" --apply
pus=$(for i in 72 73 74 75; do aff $i; done | sort -u)
check "--apply: every line of the ConnectX on one PU of package 0 (even PUs)" \
    "$([ "$rc" = 0 ] && [ "$(echo "$pus" | wc -l)" = 1 ] && [ $((pus % 2)) = 0 ]; echo $?)" "$(show)" "$(all_aff)"
check "--apply: eth0's line on another package-0 PU" \
    "$(a=$(aff 16); [ "$a" != "$pus" ] && [ $((a % 2)) = 0 ]; echo $?)" "$(all_aff)"
check "--apply saved the old values in the state file" \
    "$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
assert sorted(e["irq"] for e in d["irqs"]) == [16, 72, 73, 74, 75]
assert all(e["old"] == "0-23" for e in d["irqs"])' "$STATE" 2>/dev/null; echo $?)" "$(cat "$STATE" 2>/dev/null)"

applied=$(all_aff)
bounded "$TOOL" topo --topology "$XML" --proc-root "$R" --apply
check "--apply again: nothing moves, the saved values are still the original ones" \
    "$([ "$rc" = 0 ] && [ "$(all_aff)" = "$applied" ] && grep -q '(already)' "$WORK/out" &&
       python3 -c 'import json,sys
assert all(e["old"] == "0-23" for e in json.load(open(sys.argv[1]))["irqs"])' "$STATE"; echo $?)" "$(show)"

bounded "$TOOL" topo --proc-root "$R" --restore --json
check "--restore --json: every line back to 0-23, the state file removed" \
    "$([ "$rc" = 0 ] && [ "$(all_aff)" = "$before" ] && [ ! -e "$STATE" ] &&
       python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["restored"]) == 5' "$WORK/out"
       echo $?)" "$(show)" "$(all_aff)"
bounded "$TOOL" topo --proc-root "$R" --restore
check "--restore with nothing saved: says so, exit 0" \
    "$([ "$rc" = 0 ] && grep -q 'nothing to restore' "$WORK/out"; echo $?)" "$(show)"

# a line the kernel refuses to move: reads fine, writes fail (a read-only
# sysfs file holding a CPU list); the lines set before it are put back
mkroot
rm "$R/proc/irq/74/smp_affinity_list"
ln -s /sys/devices/system/cpu/online "$R/proc/irq/74/smp_affinity_list"
before=$(for i in 16 72 73 75; do aff $i; done | tr '\n' ' ')
bounded "$TOOL" topo --topology "$XML" --proc-root "$R" --apply
check "a line that cannot be set: one error line naming it, non-zero, nothing changed" \
    "$([ "$rc" != 0 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q 'irq 74' "$WORK/err" &&
       grep -q 'nothing changed' "$WORK/err" &&
       [ "$(for i in 16 72 73 75; do aff $i; done | tr '\n' ' ')" = "$before" ] && [ ! -e "$STATE" ]
       echo $?)" "$(show)" "$(all_aff)"

# a state file that is not one: refused, nothing touched
mkroot
mkdir -p "$(dirname "$STATE")"
echo '{"irqs": 3}' >"$STATE"
before=$(all_aff)
bounded "$TOOL" topo --topology "$XML" --proc-root "$R" --restore
check "--restore from a malformed state file: one line, non-zero, nothing changed" \
    "$([ "$rc" != 0 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && [ "$(all_aff)" = "$before" ]; echo $?)" "$(show)"
bounded "$TOOL" topo --topology "$XML" --proc-root "$R" --apply
check "--apply over a malformed state file: one line, non-zero, nothing changed" \
    "$([ "$rc" != 0 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && [ "$(all_aff)" = "$before" ]; echo $?)" "$(show)"

# an unprivileged user cannot write the tree: nothing changes
mkroot
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    chmod -R go-w "$R"
    chmod 755 "$WORK"
    before=$(all_aff)
    bounded setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$TOOL" topo --topology "$XML" --proc-root "$R" --apply
    check "--apply as an unprivileged user: one line, non-zero, nothing changed" \
        "$([ "$rc" != 0 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -qiE 'permission|denied' "$WORK/err" &&
           [ "$(all_aff)" = "$before" ] && [ ! -e "$STATE" ]; echo $?)" "$(show)"
else
    skip "unprivileged --apply (needs root to drop to nobody, and setpriv)"
fi

# irqbalance: noticed and named
mkroot
mkdir -p "$R/proc/4242"
echo irqbalance >"$R/proc/4242/comm"
bounded "$TOOL" topo --topology "$XML" --proc-root "$R"
check "a running irqbalance is detected and named" \
    "$([ "$rc" = 0 ] && grep -q 'irqbalance is running (pid 4242)' "$WORK/out"; echo $?)" "$(show)"

# this machine: read only, never applied by the test
bounded "$TOOL" topo --apply --dry-run
check "topo --apply --dry-run on this machine: exit 0 (lists lines or says there is nothing to set)" \
    "$([ "$rc" = 0 ] && grep -qE 'dry run|nothing to set' "$WORK/out"; echo $?)" "$(show)"

echo "1..$n"
[ "$failed" = 0 ]
