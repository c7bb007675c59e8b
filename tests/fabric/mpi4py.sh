#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# mpi4py's own test suite (the mpi4py 3.1.4 sdist's test/, fetched by
# scripts/install-deps.sh; Debian's python3-mpi4py) under Open MPI's
# mpirun, on the corevia libfabric provider or on Open MPI's own
# transports: programs nobody here wrote, as a conformance check.
#
#   mpi4py.sh [--mode corevia|ob1] [--osc pt2pt|rdma] [--hosts TAG]
#             [--tests DIR] PROVIDER_DIR NP [runtests.py options...]
#
# The modes, --osc and --hosts are those of mpirun_ofi.sh (see there):
# corevia = pml cm + mtl ofi on the provider in PROVIDER_DIR (and btl ofi
# on it for --osc rdma); ob1 = Open MPI's own pml ob1 + btl vader (tcp
# between hosts), the reference. The options after NP go to runtests.py
# (-i/-e MODULE regexes, -k patterns, --thread-level single|...).
# mpi4py initializes MPI_THREAD_MULTIPLE unless told otherwise, and Open
# MPI 4.1.4's osc pt2pt refuses windows then: --osc pt2pt runs want
# --thread-level single|serialized.
#
# Passes when every rank ran the suite to its end with no failure and no
# error (tests/fabric/mpi4py_run.py prints one summary line per rank), in
# bounded time, the ofi MTL of every rank opened the provider (corevia
# mode), and nothing is left behind (processes, /dev/shm segments).
# Tests listed in EXCLUDES below are reported skipped with their reason,
# never run.
#
# --tests DIR: the sdist's test/ directory (default: the cache that
# install-deps.sh fills, ${XDG_CACHE_HOME:-~/.cache}/corevia/mpi4py-3.1.4/test).
# Environment: CVIA_TEST_TIMEOUT_MULTIPLIER (default 1) scales the 110 s
# bound; MPIRUN_OFI_PROVIDER (default corevia) names the provider, to try a
# stock one (tcp) on an excluded test.
# Exit 0: passed; 1: failed; 2: usage; 77: skipped (no mpirun, no mpi4py,
# no test directory, or --hosts without namespaces).
set -u
usage="usage: mpi4py.sh [--mode corevia|ob1] [--osc pt2pt|rdma] [--hosts TAG] [--tests DIR] PROVIDER_DIR NP [runtests options]"
mode=corevia osc=pt2pt hosts= tests=
while [ $# -gt 0 ]; do
    case "$1" in
        --mode)  mode=${2:-}; shift 2 || break ;;
        --osc)   osc=${2:-}; shift 2 || break ;;
        --hosts) hosts=${2:-}; shift 2 || break ;;
        --tests) tests=${2:-}; shift 2 || break ;;
        --) shift; break ;;
        -h|--help) sed -n '5,36p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "$usage" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
provdir=$1 np=$2
shift 2
case "$mode" in corevia|ob1) ;; *) echo "mpi4py.sh: --mode corevia or ob1, not '$mode'" >&2; exit 2 ;; esac
case "$osc" in pt2pt|rdma) ;; *) echo "mpi4py.sh: --osc pt2pt or rdma, not '$osc'" >&2; exit 2 ;; esac
[[ $np =~ ^[1-9][0-9]*$ ]] || { echo "mpi4py.sh: NP '$np' is not a number" >&2; exit 2; }
[ "$hosts" = auto ] && hosts=m4$$ && hosts=${hosts:0:12}
if [ -n "$hosts" ] && ! [[ $hosts =~ ^[a-z0-9]{1,12}$ ]]; then
    echo "mpi4py.sh: --hosts TAG: 1 to 12 lowercase letters or digits (netlab.sh's rule)" >&2; exit 2
fi
prov=${MPIRUN_OFI_PROVIDER:-corevia}
mult=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
limit=$((110 * mult))
here=$(cd "$(dirname "$0")" && pwd)
[ -n "$tests" ] || tests=${XDG_CACHE_HOME:-$HOME/.cache}/corevia/mpi4py-3.1.4/test

# Tests not run, each with why. Only what fails on Open MPI's own
# transports (ob1) as well, or what fails the same way on the ofi MTL over
# libfabric's own tcp provider (Open MPI's MTL, not the provider), or dies
# in Open MPI before libfabric is called. test_spawn fails both ways, and
# over corevia for a gap of its own (open, said so in its reason). Format: SCOPE REGEX REASON, SCOPE one of
#   all  every mode;  cm  corevia mode (pml cm + mtl ofi);  rdma  corevia
#   mode with --osc rdma (osc rdma + btl ofi);  hosts  --hosts
EXCLUDES=(
  "all   ^test_spawn\.         ob1 (self,vader) fails them: the child job has no BTL to its parents; with btl tcp added, np1 passes but np2 hangs in TestSpawnSelf*. corevia fails them by a gap of its own: the child's MPI_Init fails in ompi_dpm_dyn_init (dpm.c:493, add_procs of the other job), no process joins a launcher's running job (cvia-fi(7) BUGS)"
  "cm    ^test_cco_vec\..*\.testAlltoallwBottom$ Open MPI 4.1.4 mtl ofi packs a contiguous datatype from pBaseBuf, ignoring its lower bound: with MPI_BOTTOM it hands the provider NULL (segfault in libfabric's tcp too)"
  "cm    ^test_(p2p_obj\..*\.testCancel|p2p_buf\..*\.testProbeCancel|util_pkl5\..*\.testISSendCancel)$ Open MPI 4.1.4 mtl ofi: MPI_Cancel of a send request segfaults inside mca_mtl_ofi (+0x2e6d) or, by chance, returns MPI_ERR_OTHER; the same on libfabric's tcp"
  "cm    ^test_util_pkl5\..*\.test(SSendAndRecv|ISSendAndRecv|TestAll|WaitAll|Probe|MProbe|IMProbe|MessageProbeIProbe|SSendAndMProbe)$ pkl5 receives by Mprobe/Mrecv, and Open MPI 4.1.4's mtl ofi never acknowledges a synchronous send received that way (hangs on libfabric's tcp too)"
  "cm    ^test_p2p_obj\..*\.testManyISendAndRecv$ pml cm: six isends to self are not all complete at the first Testall and one completes by Testsome, which the test takes for an error (ob1 completes them at once); the same on libfabric's tcp"
  "rdma  ^test_rma\..*\.testCompareAndSwap$ Open MPI 4.1.4 osc rdma hands btl ofi a NULL registration handle for the target of an 8-byte MPI_Compare_and_swap on a Win_create window: segfault in mca_btl_ofi_acswap (push (%r11), r11 = remote_handle) before any libfabric call"
  "rdma  ^test_rma(_nb)?\..*\.test(R?Accumulate|R?GetAccumulate|FetchAndOp)$ Open MPI 4.1.4 btl ofi aborts in its own to_fi_op ('Unknown or unsupported atomic op') on an op that osc rdma picked from btl ofi's fixed atomic flags, before any libfabric call"
)

mpirun=$(command -v mpirun) || { echo "SKIP: no mpirun (Debian: openmpi-bin)"; exit 77; }
if ! "$mpirun" --version 2>/dev/null | grep -q 'Open MPI'; then
    echo "FAIL: $mpirun is not Open MPI's; these tests use Open MPI's MCA parameters"
    exit 1
fi
# Debian's python3 (python3-mpi4py is built for it), not one earlier in PATH
py=
for p in /usr/bin/python3 "$(command -v python3)"; do
    [ -x "$p" ] && "$p" -c 'import mpi4py' 2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] || { echo "SKIP: no python3 with mpi4py (Debian: python3-mpi4py; scripts/install-deps.sh)"; exit 77; }
if [ ! -f "$tests/runtests.py" ]; then
    echo "SKIP: no mpi4py test suite in $tests (scripts/install-deps.sh fetches it)"
    exit 77
fi

token="cvia-test-$$-$RANDOM"
. "$here/../func/leftovers.sh"
. "$here/mpi_hosts.sh"
mpi_work_init mpi4py
chmod 755 "$work"   # the ranks of another emulated host write their logs here

: >"$work/excludes"
for e in "${EXCLUDES[@]}"; do
    read -r scope re reason <<<"$e"
    case "$scope" in
        all) ;;
        cm) [ "$mode" = corevia ] || continue ;;
        rdma) [ "$mode" = corevia ] && [ "$osc" = rdma ] || continue ;;
        hosts) [ -n "$hosts" ] || continue ;;
        *) echo "FAIL: EXCLUDES: bad scope '$scope'"; exit 1 ;;
    esac
    printf '%s\t%s\n' "$re" "$reason" >>"$work/excludes"
done

args=(--oversubscribe --bind-to none -np "$np")
[ "$(id -u)" -eq 0 ] && args=(--allow-run-as-root "${args[@]}")

# Two hosts: as in mpirun_ofi.sh (netlab's namespaces, mpirun inside h1,
# the orted of h2 through ns-agent.sh, ranks alternating between them)
wrap=()
if [ -n "$hosts" ]; then
    mpi_hosts_up "$hosts" "$np"
fi

if [ "$mode" = corevia ]; then
    [ -d "$provdir" ] || { echo "FAIL: PROVIDER_DIR $provdir is not a directory"; exit 1; }
    provdir=$(cd "$provdir" && pwd)
    args+=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$prov"
           -x "FI_PROVIDER_PATH=$provdir" -x "FI_PROVIDER=$prov"
           --mca mtl_base_verbose 1)
    if [ "$osc" = rdma ]; then
        args+=(--mca osc rdma --mca btl self,ofi --mca btl_ofi_provider_include "$prov")
    else
        args+=(--mca osc pt2pt --mca btl self)
    fi
else
    btl_net=vader
    [ -n "$hosts" ] && btl_net=tcp
    args+=(--mca pml ob1 --mca btl "self,$btl_net" --mca osc "$osc")
fi
# a provider built with -fsanitize=address loads only after ASan's runtime
asan=
if [ "$mode" = corevia ]; then
    asan=$(ldd "$provdir"/*.so 2>/dev/null | awk '$1 ~ /^lib[at]san/ && $3 ~ /^\// { print $3; exit }')
fi
[ -n "$asan" ] && args+=(-x "LD_PRELOAD=$asan" -x "ASAN_OPTIONS=detect_leaks=0")

start=$(date +%s)
env -u CVIA_BOOT_ADDR -u CVIA_RANK -u CVIA_SIZE \
    timeout -k 5 "$limit" "${wrap[@]}" "$mpirun" "${args[@]}" \
    "$py" "$here/mpi4py_run.py" "$tests" "$work/logs" "$work/excludes" "$@" "--token=$token" \
    >"$out" 2>"$err" </dev/null
rc=$?
el=$(( $(date +%s) - start ))
echo "# mpirun ${args[*]} $py mpi4py_run.py $tests LOGDIR EXCLUDES $* --token=$token${wrap:+ (inside ${wrap[*]})}"
echo "# excluded here:"; sed 's/^/#   /' "$work/excludes"
grep -v '^mpi4py rank ' "$out"
grep -v -E '^\[[^]]*\] \[\[[0-9]+,[0-9]+\],[0-9]+\] ORTE_ERROR_LOG: (Out of resource|Data unpack)' "$err" | head -n 200
fail=0
summ=$(grep '^mpi4py rank ' "$out" | sort -t' ' -k3,3n)
echo "$summ"
nsum=$(grep -c . <<<"$summ")
bad=$(grep -cvE ' failures 0 errors 0 ' <<<"$summ")
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "FAIL: mpirun timed out or was killed (exit $rc) after $el s"
    fail=1
elif [ $rc -ne 0 ]; then
    echo "FAIL: mpirun exited $rc after $el s"
    fail=1
fi
if [ -z "$summ" ] || [ "$nsum" -ne "$np" ]; then
    echo "FAIL: $nsum of $np ranks report a finished suite"
    fail=1
elif [ "$bad" -ne 0 ]; then
    echo "FAIL: $bad rank(s) report failures or errors"
    fail=1
fi
if [ $fail -ne 0 ]; then
    echo "where each rank was (its last test):"
    for f in "$work"/logs/rank-*.log; do
        [ -f "$f" ] && echo "  $(basename "$f"): $(grep ' \.\.\. ' "$f" | tail -n 1)"
    done
    for f in "$work"/logs/rank-*.log; do
        [ -f "$f" ] || continue
        echo "--- $(basename "$f"): failures and errors"
        grep -E '^(FAIL|ERROR): ' "$f"
        awk '/^(FAIL|ERROR): /,/^-{70}$|^={70}$/' "$f" | head -n 60
    done
fi
if [ "$mode" = corevia ]; then
    nprov=$(grep -c "mtl:ofi:provider: " "$err")
    if [ "$nprov" -ne "$np" ]; then
        echo "FAIL: $nprov of $np ranks report the ofi MTL open on '$prov' (mtl:ofi:provider lines)"
        fail=1
    fi
fi
leftovers "$token" || fail=1
echo "# $mode np$np osc $osc${hosts:+ hosts} $*: $el s, exit $fail"
exit $fail
