#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Medium messages in pieces (issue 17): the piece size's probe writes a
# 0600 cache of this boot, a later job takes its answer, a file others may
# write is refused; messages cut in odd pieces (1000 bytes, 64 bytes: more
# pieces than the ring has slots) arrive whole; CVIA_SHM_PIECE overrides
# the probe and garbage in it is refused naming the variable.
#   piece.sh CVIA_RUN FUNC_PIPE
set -u
run=$1 prog=$2
n=0 failed=0
ok()  { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; failed=1; }
dir=$(mktemp -d) || exit 1          # 0700: a private runtime directory
trap 'rm -rf "$dir"' EXIT
export XDG_RUNTIME_DIR=$dir CVIA_LOG=info
unset CVIA_SHM_PIECE
# one measurement, cached as it is: these checks are of the cache's use
# (the validation of a probe: probe_check.sh)
export CVIA_SHM_PROBE_CHECK=n
unset CVIA_SHM_REPROBE
job() { timeout 60 "$run" -n 2 -- "$prog" "$@" 2>&1; }
cache=$dir/corevia-shm-piece

out=$(job info); rc=$?
for f in "$dir"/corevia-shm-piece*; do cache=$f; done   # sanitizer builds: -asan, -tsan
if [ $rc -eq 0 ] && grep -q "in pieces of [0-9]* bytes (0: whole; measured" <<<"$out" &&
   [ -f "$cache" ]; then
    ok "first job measures and writes $cache"
else
    bad "first job: exit $rc, cache $(ls -l "$cache" 2>&1), output: $out"
fi
mode=$(stat -c %a "$cache" 2>/dev/null)
[ "$mode" = 600 ] && ok "the cache is mode 0600" || bad "the cache is mode '$mode'"
grep -q "^piece [0-9]*$" "$cache" && grep -q "^boot " "$cache" && grep -q "^4096 " "$cache" &&
    ok "the cache names the boot, the piece and the 4 KiB figures" || bad "cache: $(cat "$cache")"

# the cached answer is used as it stands (1000: one no probe gives), and
# every size through the ring arrives whole in such pieces
sed -i 's/^piece .*/piece 1000/' "$cache"
out=$(CVIA_SHM_RNDV_THRESHOLD=1t FUNC_THRESHOLD=1t job pipeline); rc=$?
if [ $rc -eq 0 ] && grep -q "in pieces of 1000 bytes (0: whole; measured, cached)" <<<"$out"; then
    ok "a later job takes the cached piece, and 4 KiB-2 MiB arrive whole in it"
else
    bad "cached: exit $rc, output: $(tail -5 <<<"$out")"
fi

# a file others may write is not trusted
chmod 0644 "$cache"
out=$(job info); rc=$?
if [ $rc -eq 0 ] && grep -q "not a private file" <<<"$out" && ! grep -q "pieces of 1000 " <<<"$out"; then
    ok "a cache of mode 0644 is not used, with a warning"
else
    bad "mode 0644: exit $rc, output: $out"
fi
chmod 0600 "$cache"

# 64-byte pieces: a 16 KiB slot's message takes 256 slots of a 64-slot ring
out=$(CVIA_SHM_PIECE=64 CVIA_SHM_RNDV_THRESHOLD=1t FUNC_THRESHOLD=1t job pipeline); rc=$?
if [ $rc -eq 0 ] && grep -q "in pieces of 64 bytes (0: whole; CVIA_SHM_PIECE)" <<<"$out"; then
    ok "CVIA_SHM_PIECE=64 overrides the probe; every size arrives whole"
else
    bad "override 64: exit $rc, output: $(tail -5 <<<"$out")"
fi

for v in fast 12q -1 63; do
    out=$(CVIA_SHM_PIECE=$v job info); rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 124 ] && grep -q "CVIA_SHM_PIECE: invalid value '$v'" <<<"$out"; then
        ok "CVIA_SHM_PIECE='$v' is refused naming the variable"
    else
        bad "CVIA_SHM_PIECE='$v': exit $rc, output: $out"
    fi
done
echo "1..$n"
exit $failed
