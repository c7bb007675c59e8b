#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The probes' caches (issue 16): a probe taken on a busy machine is
# rejected (the default, said so in the file for a minute, then measured
# again); an accepted one is used for a day, then measured again;
# CVIA_SHM_REPROBE=y measures again at once; a cache file of another user,
# however well formed, is never used.   probe_check.sh CVIA_RUN FUNC_PIPE
set -u
run=$1 prog=$2
. "$(dirname "$0")/../tap.sh"
bad() { fail "$@"; }
dir=$(mktemp -d) || exit 1          # 0700: a private runtime directory
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
export XDG_RUNTIME_DIR=$dir CVIA_LOG=info
unset CVIA_SHM_RNDV_THRESHOLD CVIA_SHM_RNDV_WINDOW CVIA_SHM_PIECE CVIA_SHM_REPROBE \
      CVIA_SHM_PROBE_CHECK
job() { timeout 120 "$run" -n 2 -- "$prog" info 2>&1; }
now() { cut -d. -f1 /proc/uptime; }   # CLOCK_BOOTTIME's seconds, as the file's
cache=$dir/corevia-shm-tune

# every CPU busy with a spinner: the probe is rejected, and says so
for _ in $(seq "$(nproc)"); do (while :; do :; done) & pids+=($!); done
out=$(job); rc=$?
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
wait 2>/dev/null
pids=()
for f in "$dir"/corevia-shm-tune*; do cache=$f; done   # sanitizer builds: -asan, -tsan
if [ $rc -eq 0 ] && grep -q "rings below 32k (default: probe rejected)" <<<"$out" &&
   grep -q "^rejected " "$cache" && ! grep -q "^threshold" "$cache"; then
    ok "a probe on a busy machine is rejected: the default, the reason in the file"
else
    bad "busy: exit $rc, output: $out, cache: $(cat "$cache" 2>&1)"
fi
[ "$(stat -c %a "$cache" 2>/dev/null)" = 600 ] && ok "the cache is mode 0600" ||
    bad "the cache is mode $(stat -c %a "$cache" 2>&1)"
# within its minute a rejection stands: nobody measures
sed -i "s/^probed .*/probed $(now)/" "$cache"
out=$(job); rc=$?
if [ $rc -eq 0 ] && grep -q "(default: probe rejected)" <<<"$out" &&
   ! grep -q "rendezvous threshold \(measured\|probe rejected (\)" <<<"$out"; then
    ok "a fresh rejection is used as it is (the default, no probe)"
else
    bad "fresh rejection: exit $rc, output: $out"
fi
# past its minute the next start measures again
sed -i "s/^probed .*/probed $(($(now) - 120))/" "$cache"
out=$(job); rc=$?
if [ $rc -eq 0 ] && grep -q "rendezvous threshold \(measured\|probe rejected (\)" <<<"$out"; then
    ok "a rejection older than a minute is measured again"
else
    bad "old rejection: exit $rc, output: $out"
fi

# an accepted probe (one measurement, no check: CVIA_SHM_PROBE_CHECK=n)
out=$(CVIA_SHM_PROBE_CHECK=n job); rc=$?
if [ $rc -eq 0 ] && grep -q "^threshold [0-9]*$" "$cache" && grep -q "^probed [0-9.]*$" "$cache"; then
    ok "an accepted probe is cached with its date"
else
    bad "accepted: exit $rc, output: $out, cache: $(cat "$cache")"
fi
sed -i "s/^threshold .*/threshold 12288/; s/^probed .*/probed $(now)/" "$cache"
out=$(job); rc=$?
[ $rc -eq 0 ] && grep -q "rings below 12k (measured, cached)" <<<"$out" &&
    ok "a fresh accepted probe is used" || bad "fresh: exit $rc, output: $out"
# a day old: measured again
sed -i "s/^probed .*/probed $(($(now) - 90000))/" "$cache"
out=$(CVIA_SHM_PROBE_CHECK=n job); rc=$?
if [ $rc -eq 0 ] && ! grep -q "below 12k" <<<"$out" && ! grep -q "^threshold 12288$" "$cache"; then
    ok "a probe older than a day is measured again"
else
    bad "a day old: exit $rc, output: $out, cache: $(cat "$cache")"
fi
# CVIA_SHM_REPROBE=y: measured again at once, the file rewritten
sed -i "s/^threshold .*/threshold 12288/; s/^probed .*/probed $(now)/" "$cache"
out=$(CVIA_SHM_REPROBE=y CVIA_SHM_PROBE_CHECK=n job); rc=$?
if [ $rc -eq 0 ] && ! grep -q "below 12k" <<<"$out" && ! grep -q "^threshold 12288$" "$cache"; then
    ok "CVIA_SHM_REPROBE=y measures again and rewrites the cache"
else
    bad "reprobe: exit $rc, output: $out, cache: $(cat "$cache")"
fi

# another user's file, well formed and fresh, is never used
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    sed -i "s/^threshold .*/threshold 12288/; s/^probed .*/probed $(now)/" "$cache"
    chown nobody "$cache"
    out=$(CVIA_SHM_PROBE_CHECK=n job); rc=$?
    if [ $rc -eq 0 ] && grep -q "not a private file" <<<"$out" && ! grep -q "below 12k" <<<"$out" &&
       [ "$(stat -c %U "$cache")" = nobody ] && grep -q "^threshold 12288$" "$cache"; then
        ok "a cache owned by another user is neither used nor written"
    else
        bad "another user's: exit $rc, output: $out, cache: $(ls -l "$cache")"
    fi
else
    skip "another user's file: needs root and the user nobody"
fi
echo "1..$n"
[ "$failed" -eq 0 ]
