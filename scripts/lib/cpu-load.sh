# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
# Sourced by the benchmark scripts (compare-peers.sh, compare-mpi.sh,
# repro-mvia.sh): what the machine was doing while they measured.

# /proc/stat's cpu line: total jiffies, idle + iowait, steal
cpu_stat() { awk '/^cpu /{ t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $5 + $6, $9 }' /proc/stat; }

# Percent of all CPUs busy over SECONDS (0.25) while we run nothing: other
# work on a 2-CPU machine shows up directly in our numbers.
busy_pct() {
    local t0 i0 t1 i1 x
    read -r t0 i0 x < <(cpu_stat)
    sleep "${1:-0.25}"
    read -r t1 i1 x < <(cpu_stat)
    echo $(( t1 > t0 ? 100 * ((t1 - t0) - (i1 - i0)) / (t1 - t0) : 0 ))
}

# The session's lines for machine.txt: seconds since START (date +%s) and
# the steal share since the cpu_stat reading T0 S0 (total, steal).
session_summary() {
    local start=$1 t0=$2 s0=$3 t1 x s1
    read -r t1 x s1 < <(cpu_stat)
    echo "seconds=$(( $(date +%s) - start ))"
    awk -v dt=$((t1 - t0)) -v ds=$((s1 - s0)) 'BEGIN { printf "steal_pct=%.1f\n", dt ? 100 * ds / dt : 0 }'
}
