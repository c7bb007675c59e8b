# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
# Sourced by the Open MPI runners (mpirun_ofi.sh, mpi4py.sh): two emulated
# hosts for one mpirun. mpi_hosts_up TAG NP brings up netlab's namespaces
# cvia-TAG-h1/h2 (never replacing a lab of that tag that is already up),
# waits for their veth ends, writes $work/hostfile (NP slots split between
# them) and appends to the caller's args (hostfile, the rsh agent
# ns-agent.sh, Open MPI's traffic on the veth) and sets wrap (mpirun inside
# h1, whose host name is its namespace's, as ns-agent.sh names h2). Needs
# $here (tests/fabric) and $work; sets lab_up=1 once the lab exists, so the
# caller's clean-up takes it down. Exits 77 (skip) without root, iproute2 or
# namespaces, 1 on failure.
# mpi_work_init NAME: the runner's work directory $work (with $out and
# $err for mpirun's streams), removed at exit with the lab if
# mpi_hosts_up brought one up.
mpi_work_init() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
    out=$work/out err=$work/err
    lab_up=0
    trap mpi_work_cleanup EXIT
    trap 'exit 130' INT TERM
}
mpi_work_cleanup() {
    if [ "$lab_up" = 1 ]; then
        bash "$here/../../scripts/netlab.sh" down --tag "$hosts" >/dev/null 2>&1
    fi
    rm -rf "$work"
}

mpi_hosts_up() {   # TAG NP
    local tag=$1 np=$2 a1 a2 slots
    if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
        echo "SKIP: --hosts needs root and iproute2 (network namespaces)"
        exit 77
    fi
    # labs of these runners (m4PID: mpi4py.sh, mfPID: mpirun_ofi.sh) whose
    # runner is gone were left by one that was killed (ctest's timeout
    # sends SIGKILL, which no trap sees): take them down first
    local t
    for t in $(bash "$here/../../scripts/netlab.sh" list 2>/dev/null); do
        if [[ $t =~ ^m[4f]([0-9]+)$ ]] && ! [ -d "/proc/${BASH_REMATCH[1]}" ]; then
            bash "$here/../../scripts/netlab.sh" down --tag "$t" >/dev/null 2>&1 || true
        fi
    done
    # netlab's `up` would replace a lab of that tag: never someone else's
    if bash "$here/../../scripts/netlab.sh" list 2>/dev/null | grep -qxF "$tag"; then
        echo "FAIL: a netlab lab '$tag' is already up; not replacing what another job may use"
        exit 1
    fi
    lab_up=1     # from here on, the caller's clean-up takes it down
    if ! bash "$here/../../scripts/netlab.sh" up --tag "$tag" --hosts 2 >"$work/lab" 2>&1; then
        if grep -qiE 'permission|not permitted|cannot create' "$work/lab"; then
            echo "SKIP: cannot create network namespaces here:"; cat "$work/lab"; exit 77
        fi
        echo "FAIL: netlab.sh up --tag $tag --hosts 2:"; cat "$work/lab"; exit 1
    fi
    # the veth ends come up a moment after netlab returns (NO-CARRIER,
    # state DOWN): until then libfabric's tcp provider, for one, does not
    # list them. Wait for them, a bounded number of looks.
    links_up() {   # NS: it has links besides lo, and all of them are up
        local l
        l=$(ip -n "$1" -o link show 2>/dev/null | grep -v ': lo:')
        [ -n "$l" ] && ! grep -qv 'state UP' <<<"$l"
    }
    for _ in $(seq 100); do
        links_up "cvia-$tag-h1" && links_up "cvia-$tag-h2" && break
        sleep 0.1
    done
    a1=$(bash "$here/../../scripts/netlab.sh" addr --tag "$tag" h1 h2) &&
    a2=$(bash "$here/../../scripts/netlab.sh" addr --tag "$tag" h2 h1) ||
        { echo "FAIL: netlab.sh addr"; cat "$work/lab"; exit 1; }
    slots=$(( (np + 1) / 2 ))
    printf '%s slots=%d\n%s slots=%d\n' "$a1" "$slots" "$a2" "$slots" >"$work/hostfile"
    args+=(--hostfile "$work/hostfile" --map-by node
           --mca plm_rsh_agent "$here/ns-agent.sh"
           --mca oob_tcp_if_include 198.18.0.0/15
           --mca btl_tcp_if_include 198.18.0.0/15)
    export NETLAB_AGENT_TAG=$tag   # the agent (mpirun's child) reads it
    wrap=(ip netns exec "cvia-$tag-h1" unshare --uts sh -c 'hostname "$0" && exec "$@"' "cvia-$tag-h1")
}
