#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Garbage in CVIA_* variables: a clear message naming the variable and a
# non-zero exit, never a crash; unknown names: a warning with a suggestion.
#   config.sh CVIA_RUN FUNC_P2P
set -u
run=$1 prog=$2
n=0 failed=0
ok()  { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; failed=1; }

check_garbage() {   # VAR VALUE
    local out rc
    out=$(env "$1=$2" timeout 30 "$run" -n 2 -- "$prog" init-only 2>&1); rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 124 ] && grep -q "$1" <<<"$out"; then
        ok "$1='$2' is refused naming the variable"
    else
        bad "$1='$2': exit $rc, output: $out"
    fi
    out=$(env "$1=$2" timeout 30 "$prog" init-only 2>&1); rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 124 ] && grep -q "$1" <<<"$out"; then
        ok "$1='$2' is refused without a launcher too"
    else
        bad "$1='$2' (singleton): exit $rc, output: $out"
    fi
}

check_garbage CVIA_SHM_SLOT_SIZE abc
check_garbage CVIA_SHM_SLOT_SIZE 100      # not a multiple of 64
check_garbage CVIA_SHM_SLOTS 3            # not a power of two
check_garbage CVIA_SHM_SLOTS 99999999999999999999
check_garbage CVIA_LOG loud
check_garbage CVIA_LOG_SUBSYS shm,nope
check_garbage CVIA_SPIN_TIME -5us
check_garbage CVIA_LIVENESS_INTERVAL soon
check_garbage CVIA_BOOT_TIMEOUT 1parsec
check_garbage CVIA_SHM_RNDV_THRESHOLD 0x10         # sizes: decimal only
check_garbage CVIA_SHM_RNDV_THRESHOLD 2000t        # beyond CVIA_PARAM_SIZE_MAX (1024t)
check_garbage CVIA_SHM_COOP_THRESHOLD 18446744073709551615
check_garbage CVIA_SHM_RNDV_THRESHOLD autox       # auto or a size
check_garbage CVIA_SHM_RNDV_SLOTS 0
check_garbage CVIA_SHM_COOP_CHUNK 100        # 0 (halves) or at least 4k

out=$(CVIA_SHM_SLOTSIZE=4k timeout 30 "$prog" init-only 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q 'CVIA_SHM_SLOTSIZE' <<<"$out" && grep -q 'CVIA_SHM_SLOT_SIZE' <<<"$out"; then
    ok "an unknown variable warns and suggests the nearest name"
else
    bad "unknown variable: exit $rc, output: $out"
fi

# variables set by hand that only the launcher should set
out=$(CVIA_BOOT_ADDR=/nonexistent/sock CVIA_RANK=0 CVIA_SIZE=2 CVIA_JOBID=0123456789abcdef \
      timeout 30 "$prog" init-only 2>&1); rc=$?
if [ $rc -ne 0 ] && [ $rc -lt 124 ]; then ok "an unreachable launcher is an error, not a hang"; else bad "unreachable launcher: exit $rc: $out"; fi
out=$(CVIA_BOOT_ADDR=/tmp/x CVIA_RANK=zz CVIA_SIZE=2 CVIA_JOBID=0123456789abcdef \
      timeout 30 "$prog" init-only 2>&1); rc=$?
if [ $rc -ne 0 ] && [ $rc -lt 124 ] && grep -q CVIA_RANK <<<"$out"; then ok "garbage CVIA_RANK names the variable"; else bad "CVIA_RANK=zz: exit $rc: $out"; fi

# good values are taken
out=$(CVIA_SHM_SLOT_SIZE=4k CVIA_SHM_SLOTS=8 timeout 60 "$run" -n 2 -- "$prog" sizes 2>&1); rc=$?
if [ $rc -eq 0 ]; then ok "small rings (8 x 4k) still carry every size"; else bad "small rings: exit $rc: $out"; fi
out=$(CVIA_SHM_SLOT_SIZE=128 CVIA_SHM_SLOTS=2 timeout 60 "$run" -n 2 -- "$prog" unexpected 2>&1); rc=$?
if [ $rc -eq 0 ]; then ok "tiny rings (2 x 128) still carry everything"; else bad "tiny rings: exit $rc: $out"; fi

echo "1..$n"
exit $failed
