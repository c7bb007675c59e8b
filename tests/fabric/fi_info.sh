#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# libfabric's own fi_info on the corevia provider: it is listed with the
# attributes cvia-fi(7) promises, hints it cannot meet give no entry (not a
# wrong one), and garbage in each CVIA_FI_* variable is refused with a line
# naming that variable.   fi_info.sh PROVIDER_DIR
set -u
. "$(dirname "$0")/../tap.sh"
[ $# -eq 1 ] || { echo "usage: fi_info.sh PROVIDER_DIR" >&2; exit 2; }
export FI_PROVIDER_PATH=$1
LIMIT=30
WORK=$(mktemp -d) || exit 1
trap 'rm -rf "$WORK"' EXIT
# a sanitizer build of the provider needs its runtime first in fi_info
asan=$(ldd "$1"/*.so 2>/dev/null | awk '$1 ~ /^lib[at]san/ && $3 ~ /^\// { print $3; exit }')
if [ -n "$asan" ]; then
    export LD_PRELOAD=$asan ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi
command -v fi_info >/dev/null || { echo "fi_info missing (Debian: libfabric-bin; scripts/install-deps.sh installs it)"; exit 1; }

# Every fi_info run of this script starts at once (each spends about 0.3 s
# of its start asleep in libfabric's libinfinipath, whose load-time clock
# calibration sleeps on each CPU in turn: 6-8 s one after another).
# start KEY CMD...: CMD as `bounded` runs it, in the background, into
# $WORK/KEY.{out,err,rc}; take KEY: waits for it and leaves its results
# where `bounded` does (rc, $WORK/out, $WORK/err).
start() {
    local key=$1; shift
    { timeout -k 2 "$LIMIT" "$@" >"$WORK/$key.out" 2>"$WORK/$key.err" </dev/null
      echo $? >"$WORK/$key.rc"; } &
}
take() {
    wait
    cp "$WORK/$1.out" "$WORK/out" && cp "$WORK/$1.err" "$WORK/err" && rc=$(cat "$WORK/$1.rc")
}
hints=("-t FI_EP_MSG" "-t FI_EP_DGRAM" "-c FI_MULTI_RECV" "-c FI_COLLECTIVE"
       "-c FI_NAMED_RX_CTX" "-a FI_SOCKADDR_IN" "-n 127.0.0.1")
garbage=(CVIA_FI_EAGER=12q CVIA_FI_RX_DEPTH=0 CVIA_FI_RX_DEPTH=many CVIA_FI_INJECT=-1
         CVIA_FI_LIVENESS=soon CVIA_FI_THREAD=funneled CVIA_FI_AUTO_NAP=0 CVIA_FI_AUTO_NAP=2s)
start all fi_info -p corevia -v
start tagged fi_info -p corevia -c FI_TAGGED
start msg fi_info -p corevia -t FI_EP_RDM -c FI_MSG
start rma fi_info -p corevia -c 'FI_RMA|FI_ATOMIC' -v
for i in "${!hints[@]}"; do start "hint$i" fi_info -p corevia ${hints[$i]}; done
start thread env CVIA_FI_THREAD=domain fi_info -p corevia -v
for i in "${!garbage[@]}"; do start "garbage$i" env "${garbage[$i]}" fi_info -p corevia; done

take all
check "fi_info -p corevia lists the provider" \
      "$([ $rc -eq 0 ] && grep -q 'prov_name: corevia' "$WORK/out"; echo $?)" "$(head -5 "$WORK/err")"
attr() {   # attr KEY VALUE-REGEX: the verbose listing has it
    grep -Eq "^ *$1: .*$2" "$WORK/out"
}
for kv in "type|FI_EP_RDM" "threading|FI_THREAD_SAFE" "control_progress|FI_PROGRESS_MANUAL" \
          "data_progress|FI_PROGRESS_MANUAL" "resource_mgmt|FI_RM_ENABLED" "av_type|FI_AV_MAP" \
          "cq_data_size|8" "msg_order|FI_ORDER_SAS" "inject_size|4096" \
          "caps|FI_TAGGED.*FI_DIRECTED_RECV" "caps|FI_REMOTE_CQ_DATA"; do
    k=${kv%%|*} v=${kv#*|}
    check "attribute $k: $v" "$(attr "$k" "$v"; echo $?)"
done
check "mr_mode asks for nothing" "$(grep -Eq '^ *mr_mode: \[ *\]' "$WORK/out"; echo $?)"

# hints: met ones give the entry, others nothing
take tagged
check "hint caps FI_TAGGED: listed" "$([ $rc -eq 0 ] && grep -q 'provider: corevia' "$WORK/out"; echo $?)"
take msg
check "hint FI_EP_RDM + FI_MSG: listed" "$([ $rc -eq 0 ]; echo $?)"
# RMA and atomics: the second entry, with corevia's keys and addresses
take rma
check "hint FI_RMA|FI_ATOMIC: the RMA entry, mr_mode FI_MR_VIRT_ADDR|FI_MR_PROV_KEY" \
      "$([ $rc -eq 0 ] && [ "$(grep -c 'prov_name: corevia' "$WORK/out")" -eq 1 ] &&
         grep -Eq '^ *mr_mode: \[ FI_MR_VIRT_ADDR, FI_MR_PROV_KEY \]' "$WORK/out" &&
         grep -Eq '^ *caps: .*FI_RMA.*FI_ATOMIC' "$WORK/out"; echo $?)" "$(grep mr_mode "$WORK/out")"
for i in "${!hints[@]}"; do
    h=${hints[$i]}
    take "hint$i"
    check "hint $h: no entry" "$([ $rc -ne 0 ] && ! grep -q 'provider: corevia' "$WORK/out"; echo $?)" \
          "rc $rc" "$(head -3 "$WORK/out")"
done

# CVIA_FI_THREAD=domain: FI_THREAD_DOMAIN is what it grants
take thread
check "CVIA_FI_THREAD=domain: threading FI_THREAD_DOMAIN in every entry" \
      "$([ $rc -eq 0 ] && [ "$(grep -c 'threading: FI_THREAD_DOMAIN' "$WORK/out")" -eq 2 ] &&
         ! grep -q 'threading: FI_THREAD_SAFE' "$WORK/out"; echo $?)" "$(grep threading "$WORK/out")"

# garbage in a provider variable names it and lists nothing
for i in "${!garbage[@]}"; do
    v=${garbage[$i]}
    take "garbage$i"
    check "$v is refused, naming ${v%%=*}" \
          "$([ $rc -ne 0 ] && grep -q "${v%%=*}" "$WORK/err" && ! grep -q 'provider: corevia' "$WORK/out"; echo $?)" \
          "rc $rc" "$(head -3 "$WORK/err")"
done
echo "1..$n"
[ $failed -eq 0 ]
