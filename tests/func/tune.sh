#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The rendezvous threshold's probe (issue 17): measured once and cached per
# boot in a 0600 file of the runtime directory, that file reused, refused
# when it is not private; CVIA_SHM_RNDV_THRESHOLD overrides it and garbage
# in it is refused naming the variable. CVIA_SHM_RNDV_WINDOW: from the
# cached figures, given, or the threshold.   tune.sh CVIA_RUN FUNC_PIPE
set -u
run=$1 prog=$2
n=0 failed=0
ok()  { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; failed=1; }
dir=$(mktemp -d) || exit 1          # 0700: a private runtime directory
trap 'rm -rf "$dir"' EXIT
export XDG_RUNTIME_DIR=$dir
unset CVIA_SHM_RNDV_THRESHOLD CVIA_SHM_RNDV_WINDOW
# one measurement, cached as it is: these checks are of the cache's use
# (the validation of a probe: probe_check.sh)
export CVIA_SHM_PROBE_CHECK=n
unset CVIA_SHM_REPROBE
job() { timeout 60 "$run" -n 2 -- "$prog" info 2>&1; }
cache=$dir/corevia-shm-tune

out=$(job); rc=$?
for f in "$dir"/corevia-shm-tune*; do cache=$f; done   # sanitizer builds: -asan, -tsan
if [ $rc -eq 0 ] && grep -q "rings below [0-9a-z]* (measured" <<<"$out" && [ -f "$cache" ]; then
    ok "first job measures and writes $cache"
else
    bad "first job: exit $rc, cache $(ls -l "$cache" 2>&1), output: $out"
fi
mode=$(stat -c %a "$cache" 2>/dev/null)
[ "$mode" = 600 ] && ok "the cache is mode 0600" || bad "the cache is mode '$mode'"
grep -q "^threshold [0-9]*$" "$cache" && grep -q "^boot " "$cache" &&
    ok "the cache names the boot and the threshold" || bad "cache: $(cat "$cache")"

# the file's answer is used as it stands: make it one no probe gives
sed -i 's/^threshold .*/threshold 12288/' "$cache"
out=$(job); rc=$?
if [ $rc -eq 0 ] && grep -q "rings below 12k (measured, cached)" <<<"$out"; then
    ok "a later job takes the cached threshold"
else
    bad "cached: exit $rc, output: $out"
fi

# another boot's answer is not (one rank measures again, the other may
# read what it just wrote: "(measured" either way, never the old 12k)
sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' "$cache"
out=$(job); rc=$?
if [ $rc -eq 0 ] && grep -q "(measured" <<<"$out" && ! grep -q "below 12k" <<<"$out" &&
   ! grep -q "00000000-0000" "$cache" && ! grep -q "^threshold 12288$" "$cache"; then
    ok "a cache of another boot is measured again"
else
    bad "other boot: exit $rc, output: $out, cache: $(cat "$cache")"
fi

# a file others may write is not trusted
sed -i 's/^threshold .*/threshold 12288/' "$cache"
chmod 0644 "$cache"
out=$(job); rc=$?
if [ $rc -eq 0 ] && grep -q "not a private file" <<<"$out" && ! grep -q "below 12k" <<<"$out"; then
    ok "a cache of mode 0644 is not used, with a warning"
else
    bad "mode 0644: exit $rc, output: $out"
fi
chmod 0600 "$cache"

# the variable overrides the probe and its cache
out=$(CVIA_SHM_RNDV_THRESHOLD=48k job); rc=$?
if [ $rc -eq 0 ] && grep -q "rings below 48k, single" <<<"$out"; then
    ok "CVIA_SHM_RNDV_THRESHOLD=48k overrides the probe"
else
    bad "override: exit $rc, output: $out"
fi

for v in fast 12q -1 0x10; do
    out=$(CVIA_SHM_RNDV_THRESHOLD=$v job); rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 124 ] && grep -q "CVIA_SHM_RNDV_THRESHOLD: invalid value '$v'" <<<"$out"; then
        ok "CVIA_SHM_RNDV_THRESHOLD='$v' is refused naming the variable"
    else
        bad "CVIA_SHM_RNDV_THRESHOLD='$v': exit $rc, output: $out"
    fi
done
# the window from the cached figures: single copy at most 2.5x the ring's
# time from 16k up (8k: 2.6x), so 16384; a threshold given: the threshold
sed -i '/^[0-9]/d; s/^threshold .*/threshold 524288/' "$cache"
printf '%s\n' "4096 1000 3000" "8192 1000 2600" "16384 2000 5000" "32768 3000 6000" \
    "65536 5000 6000" "131072 6000 9000" "262144 9000 17000" "524288 20000 21000" \
    "1048576 40000 40000" >>"$cache"
out=$(job); rc=$?
if [ $rc -eq 0 ] && grep -q "from 16384 B (CVIA_SHM_RNDV_WINDOW)" <<<"$out"; then
    ok "the window comes from the cached figures"
else
    bad "window from figures: exit $rc, output: $out, cache: $(cat "$cache")"
fi
# figures where single copy wins at 4k and 8k too: the window stays at the
# 16k floor (a CMA call's fixed cost; under 8k one side copies it whole)
sed -i '/^[0-9]/d' "$cache"
printf '%s\n' "4096 2000 1500" "8192 3000 2000" "16384 4000 3000" "32768 5000 4000" \
    "65536 6000 6000" "131072 8000 9000" "262144 9000 17000" "524288 20000 21000" \
    "1048576 40000 40000" >>"$cache"
out=$(job); rc=$?
if [ $rc -eq 0 ] && grep -q "from 16384 B (CVIA_SHM_RNDV_WINDOW)" <<<"$out"; then
    ok "the window from the figures is at least 16k"
else
    bad "window floor: exit $rc, output: $out, cache: $(cat "$cache")"
fi
out=$(CVIA_SHM_RNDV_WINDOW=32k job); rc=$?
[ $rc -eq 0 ] && grep -q "from 32768 B (CVIA_SHM_RNDV_WINDOW)" <<<"$out" &&
    ok "CVIA_SHM_RNDV_WINDOW=32k sets it" || bad "window 32k: exit $rc, output: $out"
out=$(CVIA_SHM_RNDV_THRESHOLD=48k job); rc=$?
[ $rc -eq 0 ] && grep -q "from 49152 B (CVIA_SHM_RNDV_WINDOW)" <<<"$out" &&
    ok "with a threshold given, the window is the threshold" || bad "window, 48k: exit $rc, output: $out"
for v in fast 8x; do
    out=$(CVIA_SHM_RNDV_WINDOW=$v job); rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 124 ] && grep -q "CVIA_SHM_RNDV_WINDOW: invalid value '$v'" <<<"$out"; then
        ok "CVIA_SHM_RNDV_WINDOW='$v' is refused naming the variable"
    else
        bad "CVIA_SHM_RNDV_WINDOW='$v': exit $rc, output: $out"
    fi
done
echo "1..$n"
exit $failed
