#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# Run an MPI test program (mpi_fabric) under Open MPI's mpirun, on the
# corevia libfabric provider or on Open MPI's own transports, and check
# what tests/func/mpirun.sh checks: success (rank 0 prints exactly one
# "ok CASE (NP ranks)"), no hang (bounded by timeout), no process left, no
# /dev/shm segment left.
#
#   mpirun_ofi.sh [--expect-fail] [--mode corevia|ob1] [--osc pt2pt|rdma]
#                 [--hosts TAG] PROVIDER_DIR NP PROG CASE
#
# --mode corevia (default): pml cm + mtl ofi, libfabric restricted to the
#   provider found in PROVIDER_DIR (FI_PROVIDER_PATH), and a check that
#   every rank's ofi MTL really opened it (see "provider_check" below).
# --mode ob1: Open MPI's own transports (pml ob1, btl self,vader; self,tcp
#   between hosts): checks the test program itself. PROVIDER_DIR unused.
#   vader without its single-copy path (see below).
# --osc: how one-sided communication (the rma case) travels. pt2pt
#   (default): osc/pt2pt, emulated on the PML, so in corevia mode over the
#   provider's tagged messages. rdma: osc/rdma; in corevia mode over btl/ofi
#   on the same provider, which needs FI_RMA and FI_ATOMIC on an RDM
#   endpoint with the memory-registration modes btl/ofi wants; in ob1 mode
#   over vader's single-copy path (one host only).
# --hosts TAG: two emulated hosts, the network namespaces of
#   `scripts/netlab.sh up --tag TAG --hosts 2` (made here, removed at the
#   end; a lab TAG already up is an error, not replaced; TAG "auto": one of
#   this process's own): mpirun runs inside h1, Open MPI's rsh launcher
#   starts the orted of h2 through ns-agent.sh, ranks alternate between the
#   hosts (--map-by node). Each host has its own host name (a UTS
#   namespace named after its network namespace), as real hosts do. Needs root; exit 77 where namespaces cannot be
#   made. The ranks inherit the environment on both hosts (CVIA_NET, ...).
# --expect-fail: a rank dies (the kill case): the job must end with an
#   error, in bounded time; in corevia mode the provider must still have
#   been opened (so a provider that fails to load cannot pass for a death).
#
# Environment: CVIA_TEST_TIMEOUT_MULTIPLIER (default 1) scales the 60 s
# limit; MPIRUN_OFI_PROVIDER (default corevia) names the provider, only to
# try this runner on a stock one (tcp, sockets) while corevia is missing.
# Exit 0: passed; 1: failed; 2: usage; 77: skipped (no mpirun, or --hosts
# without namespaces).
set -u
usage="usage: mpirun_ofi.sh [--expect-fail] [--mode corevia|ob1] [--osc pt2pt|rdma] [--hosts TAG] PROVIDER_DIR NP PROG CASE"
expect_fail=0 mode=corevia osc=pt2pt hosts=
while [ $# -gt 0 ]; do
    case "$1" in
        --expect-fail) expect_fail=1; shift ;;
        --mode)  mode=${2:-}; shift 2 || break ;;
        --osc)   osc=${2:-}; shift 2 || break ;;
        --hosts) hosts=${2:-}; shift 2 || break ;;
        --) shift; break ;;
        -*) echo "$usage" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -eq 4 ] || { echo "$usage" >&2; exit 2; }
provdir=$1 np=$2 prog=$3 case=$4
case "$mode" in corevia|ob1) ;; *) echo "mpirun_ofi.sh: --mode corevia or ob1, not '$mode'" >&2; exit 2 ;; esac
case "$osc" in pt2pt|rdma) ;; *) echo "mpirun_ofi.sh: --osc pt2pt or rdma, not '$osc'" >&2; exit 2 ;; esac
[[ $np =~ ^[1-9][0-9]*$ ]] || { echo "mpirun_ofi.sh: NP '$np' is not a number" >&2; exit 2; }
[ "$hosts" = auto ] && hosts=mf$$ && hosts=${hosts:0:12}
if [ -n "$hosts" ] && ! [[ $hosts =~ ^[a-z0-9]{1,12}$ ]]; then
    echo "mpirun_ofi.sh: --hosts TAG: 1 to 12 lowercase letters or digits (netlab.sh's rule)" >&2; exit 2
fi
prov=${MPIRUN_OFI_PROVIDER:-corevia}
mult=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}
limit=$((60 * mult))
here=$(cd "$(dirname "$0")" && pwd)

mpirun=$(command -v mpirun) || { echo "SKIP: no mpirun (Debian: openmpi-bin)"; exit 77; }
if ! "$mpirun" --version 2>/dev/null | grep -q 'Open MPI'; then
    echo "FAIL: $mpirun is not Open MPI's; these tests use Open MPI's MCA parameters"
    exit 1
fi
[ -x "$prog" ] || { echo "FAIL: no program $prog"; exit 1; }
token="cvia-test-$$-$RANDOM"
. "$here/../func/leftovers.sh"
. "$here/mpi_hosts.sh"
mpi_work_init mpirun_ofi

args=(--oversubscribe --bind-to none -np "$np")
[ "$(id -u)" -eq 0 ] && args=(--allow-run-as-root "${args[@]}")

# Two hosts: netlab's namespaces cvia-TAG-h1/h2, one veth pair between
# them, h1 = 198.18.1.1, h2 = 198.18.1.2. mpirun runs inside h1, where its
# out-of-band TCP listener is reachable from h2's orted (from the root
# namespace it would not be, and nothing is routed there); the hostfile
# names the two addresses, so mpirun takes 198.18.1.1 for its own node (the
# ranks of h1 are its children) and starts an orted for 198.18.1.2 through
# the agent, which enters the namespace holding that address. Open MPI's
# out-of-band and TCP traffic is kept on the veth (198.18.0.0/15).
wrap=()          # the command that puts mpirun in h1
places=("")      # where the ranks run: "" (here) or the namespaces
if [ -n "$hosts" ]; then
    mpi_hosts_up "$hosts" "$np"
    places=("cvia-$hosts-h1" "cvia-$hosts-h2")
fi

btl_net=vader   # the BTL between ranks in ob1 mode
domains=""      # corevia mode: the provider's domain names, as fi_info lists them
if [ "$mode" = corevia ]; then
    if [ ! -d "$provdir" ]; then
        echo "FAIL: PROVIDER_DIR $provdir is not a directory"
        exit 1
    fi
    provdir=$(cd "$provdir" && pwd)
    # What libfabric itself makes of the directory, before any MPI, where
    # the ranks will run: the provider must offer a tagged RDM endpoint
    # (what the ofi MTL asks for), alone or under a utility provider
    # (corevia;ofi_rxm). Its domains may differ between hosts (tcp's are
    # interface names), so all of them count.
    if command -v fi_info >/dev/null 2>&1; then
        # a provider built with -fsanitize=address (CVIA_SANITIZE) loads
        # only into a process whose first library is ASan's runtime: fi_info
        # gets it preloaded (the test program is instrumented itself)
        asan=$(ldd "$provdir"/*.so 2>/dev/null | awk '$1 ~ /^lib[at]san/ && $3 ~ /^\// { print $3; exit }')
        for ns in "${places[@]}"; do
            in=(); [ -n "$ns" ] && in=(ip netns exec "$ns")
            FI_PROVIDER_PATH=$provdir FI_PROVIDER=$prov timeout -k 5 $((20 * mult)) \
                "${in[@]}" env ${asan:+LD_PRELOAD=$asan ASAN_OPTIONS=detect_leaks=0} \
                fi_info -p "$prov" -t FI_EP_RDM -c FI_TAGGED >"$work/fi_info" 2>&1
            if ! grep -Eq "^provider: (.*;)?$prov(;.*)?\$" "$work/fi_info"; then
                echo "FAIL: libfabric finds no tagged RDM endpoint of provider '$prov' in $provdir${ns:+ (in $ns)}:"
                echo "  FI_PROVIDER_PATH=$provdir FI_PROVIDER=$prov fi_info -p $prov -t FI_EP_RDM -c FI_TAGGED"
                head -n 40 "$work/fi_info"
                exit 1
            fi
            domains=$(printf '%s\n%s\n' "$domains" "$(sed -n 's/^[[:space:]]*domain: //p' "$work/fi_info")" |
                      sed '/^$/d' | sort -u)
        done
    else
        echo "note: no fi_info (Debian: libfabric-bin): the provider's domain names are not checked"
    fi
    # pml cm + mtl ofi, libfabric limited to the one provider: if it cannot
    # be opened MPI_Init fails (nothing falls back, the PML is forced).
    # btl self only: ob1 is never in the game.
    args+=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$prov"
           -x "FI_PROVIDER_PATH=$provdir" -x "FI_PROVIDER=$prov"
           --mca mtl_base_verbose 1)
    # One-sided: left alone, Open MPI 4.1.4 picks osc/rdma, which wants a
    # BTL reaching every peer and with btl self only fails MPI_Win_create
    # ("unreachable proc") instead of falling back; osc/sm would bypass the
    # provider on one machine. So the component is always named.
    if [ "$osc" = rdma ]; then
        # btl_ofi_provider_include is the same variable as
        # mtl_ofi_provider_include in 4.1 (opal_common_ofi_provider_include)
        args+=(--mca osc rdma --mca btl self,ofi --mca btl_ofi_provider_include "$prov")
    else
        args+=(--mca osc pt2pt --mca btl self)
    fi
else
    [ -n "$hosts" ] && btl_net=tcp
    args+=(--mca pml ob1 --mca btl "self,$btl_net")
    if [ "$osc" = rdma ]; then
        # osc/rdma over vader's single-copy path (CMA); not between hosts
        # (btl tcp has no put/get)
        args+=(--mca osc rdma)
    else
        # vader's single-copy path (CMA) off: with it Open MPI 4.1.4's ob1
        # writes past the receive buffer when a large (rendezvous) message
        # is truncated, and fails the trunc case (over btl tcp it even dies
        # of EFAULT/SIGPIPE); its copy-in/copy-out path gets it right. Then
        # osc/rdma has no put/get to work with: osc/pt2pt, as in corevia mode.
        [ "$btl_net" = vader ] && args+=(--mca btl_vader_single_copy_mechanism none)
        args+=(--mca osc pt2pt)
    fi
fi

start=$(date +%s)
# not under cvia-run: its variables must not leak into the ranks
env -u CVIA_BOOT_ADDR -u CVIA_RANK -u CVIA_SIZE \
    timeout -k 5 "$limit" "${wrap[@]}" "$mpirun" "${args[@]}" "$prog" "$case" "--token=$token" \
    >"$out" 2>"$err" </dev/null
rc=$?
echo "# mpirun ${args[*]} $prog $case --token=$token${wrap:+ (inside ${wrap[*]})}"
cat "$out"
cat "$err"
fail=0
nok=$(grep -c "^ok $case ($np ranks)\$" "$out")
# 124: timeout's TERM; 137: its KILL, or (a rank killed by SIGKILL)
# mpirun's own exit status, which is what --expect-fail wants
if [ $rc -eq 124 ] || [ $rc -eq 137 -a $expect_fail -eq 0 ]; then
    echo "FAIL: mpirun timed out or was killed (exit $rc) after $(( $(date +%s) - start )) s"
    fail=1
elif [ $expect_fail -eq 1 ]; then
    if [ $rc -eq 0 ] || [ "$nok" -ne 0 ]; then
        echo "FAIL: the job should have failed (a rank died), exit $rc"
        fail=1
    fi
elif [ $rc -ne 0 ]; then
    echo "FAIL: mpirun exited $rc"
    fail=1
elif [ "$nok" -ne 1 ]; then
    echo "FAIL: expected exactly one 'ok $case ($np ranks)' line on stdout, found $nok"
    fail=1
fi

# provider_check: was the provider really used? The PML and MTL are forced
# and libfabric sees no other provider (FI_PROVIDER), so a job that ran can
# only have run on it; the positive proof is the ofi MTL's own line, printed
# once per rank at mtl_base_verbose >= 1 when it has opened its endpoint:
#   .../mtl_ofi_component.c:365: mtl:ofi:provider: DOMAIN
# Open MPI 4.1.4 prints the fi_info's domain name there (not the provider
# name: "eth0" for tcp), so each DOMAIN must be one that fi_info lists for
# the provider in PROVIDER_DIR. Every rank must print it; after a death
# (--expect-fail) at least one, since the output of killed ranks may be lost.
# (FI_LOG_LEVEL=info serves less well: libfabric 1.17 registers every
# provider it finds whatever FI_PROVIDER says, logs "Opened fabric: NAME"
# without the provider, and names a provider only on that provider's own
# log lines, which are the provider's business.)
if [ "$mode" = corevia ]; then
    nprov=$(grep -c 'mtl:ofi:provider: ' "$err")
    if [ $expect_fail -eq 0 ] && [ "$nprov" -ne "$np" ]; then
        echo "FAIL: $nprov of $np ranks report the ofi MTL open on '$prov' (mtl:ofi:provider lines)"
        fail=1
    elif [ "$nprov" -lt 1 ]; then
        echo "FAIL: no rank reports the ofi MTL open on '$prov' (did MPI_Init get that far?)"
        fail=1
    fi
    if [ -n "$domains" ]; then
        while read -r d; do
            [ -n "$d" ] || continue
            if ! grep -qxF -- "$d" <<<"$domains"; then
                echo "FAIL: a rank's ofi MTL opened domain '$d', which is not one of provider '$prov''s:" $domains
                fail=1
            fi
        done < <(sed -n 's/.*mtl:ofi:provider: //p' "$err" | sort -u)
    fi
fi
leftovers "$token" || fail=1
exit $fail
