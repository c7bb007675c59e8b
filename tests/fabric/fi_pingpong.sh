#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# libfabric's own fi_pingpong (libfabric-bin) on the corevia provider: its
# server and its client are started as the two ranks of one cvia-run job,
# exchange their names over fi_pingpong's own TCP control socket, and ping
# every size from 64 B to 1 MiB with data checks (-c). The provider brings
# corevia up at first use (CVIA_FI_WIREUP=first-use): the server opens its
# endpoint before the client starts.
#   fi_pingpong.sh [--hosts | --free] CVIA_RUN PROVIDER_DIR
# --free: no launcher at all (issue 14 item 3): server and client started
# from this script as plain processes; fi_av_insert connects them.
# --hosts: the two ranks in two network namespaces of scripts/netlab.sh
# (CVIA_NET chooses the transport between them, udp by default); the
# client reaches the server's control socket at its address there.
set -u
# --free --hosts: both: plain processes, one in each namespace host, that
# reach each other over udp by the names alone.
hosts=0 free=0
while [ "${1:-}" = --hosts ] || [ "${1:-}" = --free ]; do
    [ "$1" = --hosts ] && hosts=1
    [ "$1" = --free ] && free=1
    shift
done
[ $# -eq 2 ] || { echo "usage: fi_pingpong.sh [--hosts] [--free] CVIA_RUN PROVIDER_DIR" >&2; exit 2; }
run=$1 provdir=$2
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
mult=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
limit=$((60 * mult))
command -v fi_pingpong >/dev/null ||
    { echo "FAIL: fi_pingpong missing (Debian: libfabric-bin; scripts/install-deps.sh installs it)"; exit 1; }
work=$(mktemp -d) || exit 1
tag=fp$$
cleanup() {
    [ $hosts -eq 1 ] && "$top/scripts/netlab.sh" down --tag "$tag" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
port=$((40000 + $$ % 20000))
server=127.0.0.1
runargs=(-n 2 --timeout "${limit}s")
if [ $hosts -eq 1 ]; then
    "$top/scripts/netlab.sh" up --tag "$tag" --hosts 2 >/dev/null 2>"$work/lab" ||
        { echo "SKIP: no network lab here: $(head -1 "$work/lab")"; exit 77; }
    server=$("$top/scripts/netlab.sh" addr --tag "$tag" h1 h2) || { echo "FAIL: netlab addr"; exit 1; }
    runargs+=(--hosts "cvia-$tag-h1,cvia-$tag-h2" --bind none)   # each host would pin its rank to CPU 0
    export CVIA_NET=${CVIA_NET:-udp}
fi
# a sanitizer build of the provider needs its runtime first in fi_pingpong
asan=$(ldd "$provdir"/*.so 2>/dev/null | awk '$1 ~ /^lib[at]san/ && $3 ~ /^\// { print $3; exit }')
cat >"$work/rank.sh" <<EOS
#!/bin/sh
export FI_PROVIDER_PATH='$provdir' CVIA_FI_WIREUP=first-use
${asan:+export LD_PRELOAD='$asan' ASAN_OPTIONS=detect_leaks=0}
if [ "\$CVIA_RANK" = 0 ]; then
    echo \$\$ > '$work/server.pid.tmp' && mv '$work/server.pid.tmp' '$work/server.pid'
    exec fi_pingpong -p corevia -e rdm -I 50 -c -B $port > '$work/server' 2>&1
fi
# fi_pingpong's client connects once, at its start: it waits until the
# server (this pid, exec'd) listens on the control port, as its own network
# namespace's table (/proc/PID/net/tcp) says, LISTEN being state 0A
n=0
until [ -s '$work/server.pid' ] &&
      awk '\$2 ~ /:$(printf %04X "$port")\$/ && \$4 == "0A" { f = 1 } END { exit !f }' \
          "/proc/\$(cat '$work/server.pid')/net/tcp" 2>/dev/null; do
    n=\$((n + 1))
    [ \$n -le $((50 * limit)) ] || break   # the client's connect fails and says so
    sleep 0.02
done
exec fi_pingpong -p corevia -e rdm -I 50 -c -P $port $server > '$work/client' 2>&1
EOS
chmod +x "$work/rank.sh"
on0=() on1=()
if [ $hosts -eq 1 ] && [ $free -eq 1 ]; then
    on0=("$top/scripts/netlab.sh" exec --tag "$tag" h1)
    on1=("$top/scripts/netlab.sh" exec --tag "$tag" h2)
fi
if [ $free -eq 1 ]; then
    unset CVIA_BOOT_ADDR CVIA_RANK CVIA_SIZE CVIA_JOBID PMIX_RANK PMIX_NAMESPACE
    CVIA_RANK=0 timeout "$limit" "${on0[@]}" "$work/rank.sh" & ps=$!
    CVIA_RANK=1 timeout "$limit" "${on1[@]}" "$work/rank.sh"; rc=$?
    wait $ps || rc=$?
    unset CVIA_RANK
else
    "$run" "${runargs[@]}" -- "$work/rank.sh"
    rc=$?
fi
fail=0
for side in server client; do
    echo "--- $side"
    cat "$work/$side" 2>/dev/null
    # one line per size, each with all its transfers acknowledged
    n=$(grep -Ec '^(64|256|1k|4k|64k|1m) +50 +=50 ' "$work/$side" 2>/dev/null)
    if [ "${n:-0}" -ne 6 ]; then
        echo "FAIL: $side reported $n of the 6 sizes complete"
        fail=1
    fi
done
[ $rc -eq 0 ] || { echo "FAIL: $([ $free -eq 1 ] && echo fi_pingpong || echo cvia-run) exited $rc"; fail=1; }
[ $fail -eq 0 ] && echo "ok fi_pingpong${CVIA_NET:+ over $CVIA_NET}$([ $free -eq 1 ] && echo ', no launcher')"
exit $fail
