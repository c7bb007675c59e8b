#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# A "remote shell" for Open MPI's rsh launcher (--mca plm_rsh_agent), for
# hosts that are network namespaces of scripts/netlab.sh on this machine:
#
#     ns-agent.sh [OPTIONS...] HOST COMMAND...
#
# Open MPI calls it as it would call ssh: the host, then the command line of
# the orted as words that the remote shell joins and runs. HOST is an
# address (the hostfile's); the agent finds the namespace cvia-TAG-hN that
# holds it (TAG: $NETLAB_AGENT_TAG, which mpirun passes on to its
# children; without it, any namespace of any netlab that holds the address,
# which is ambiguous when several labs are up), then runs the command there
# with sh -c, as sshd would. Options before HOST (ssh's -x, -n, ...) are
# ignored. Exit 255 (ssh's "could not connect") when no namespace holds HOST.
set -u
while [ $# -gt 0 ]; do
    case "$1" in
        -[lpoiFJ]) shift 2 ;;    # ssh options that take a value
        -*) shift ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "ns-agent.sh: usage: ns-agent.sh [OPTIONS] HOST COMMAND..." >&2; exit 255; }
host=$1
shift
tag=${NETLAB_AGENT_TAG:-}

holds() {   # NS ADDR: does namespace NS have the address ADDR on an interface?
    ip -n "$1" -4 -o addr show 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $4 }' | grep -qxF -- "$2"
}

target=""
if [ -n "$tag" ]; then
    candidates=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^cvia-$tag-h[0-9]+\$")
else
    candidates=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^cvia-[a-z0-9]+-h[0-9]+$')
fi
for ns in $candidates; do
    # a namespace's own name also names it
    if [ "$ns" = "$host" ] || holds "$ns" "$host"; then
        target=$ns
        break
    fi
done
if [ -z "$target" ]; then
    echo "ns-agent.sh: no namespace${tag:+ of lab $tag} holds host '$host'" >&2
    exit 255
fi
# as sshd does: the words joined into one command line for a shell. The
# host also gets its own name (a UTS namespace named after the network
# namespace): software that names node-local objects after the host name
# must not find the other emulated host's. Open MPI's osc rdma names its
# window's backing file in /dev/shm after the node name, job and
# communicator: with one name for both hosts, the two hosts' local leaders
# created the same file and MPI_Win_create failed (MPI_ERR_WIN over tcp, a
# hang over udp) as soon as a host had two ranks.
exec ip netns exec "$target" unshare --uts /bin/sh -c "hostname $target && $*"
