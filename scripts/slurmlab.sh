#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A real one-node Slurm for corevia's tests: slurmctld, slurmd and munged
# (Debian 12: slurmctld slurmd slurm-client munge, from
# scripts/install-deps.sh), everything they keep in one private state
# directory: munge key and socket, slurm.conf, state, spool, TmpFS (where
# the PMIx plugin puts its files), logs, pid files. Ports are free ones
# chosen at start, not Slurm's 6817/6818, so a site's Slurm is not hit.
#
#   slurmlab.sh [--dir DIR] up|down|status|env
#     up      start the three daemons, wait until the node is idle
#     down    cancel every job, stop the daemons (and any slurmstepd they
#             left), remove DIR; nothing of the lab is left anywhere
#     status  say which daemons run; exit 0 if all three, 1 if none, 3 else
#     env     print "export SLURM_CONF=..." for eval: srun, sbatch, squeue,
#             scancel then talk to this lab (and its munged)
#   DIR: --dir, else $SLURMLAB_DIR, else ${TMPDIR:-/tmp}/cvia-slurmlab-UID
#
# The node is this machine: its name from hostname, its CPUs, boards,
# sockets, cores and threads from "slurmd -C". SlurmUser=root (so up needs
# root), proctrack/linuxproc, task/none, select/cons_tres: no cgroups.
# Every daemon (and slurmstepd, which inherits slurmd's environment) carries
# CVIA_SLURMLAB=DIR in its environment: down finds exactly the lab's
# processes by it, and no other.
set -euo pipefail

die() { echo "slurmlab: $*" >&2; exit 1; }
usage() { sed -n '10,24p' "$0" | sed 's/^# \{0,1\}//'; }

dir=${SLURMLAB_DIR:-${TMPDIR:-/tmp}/cvia-slurmlab-$(id -u)}
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) [ $# -ge 2 ] || die "--dir needs a value"; dir=$2; shift 2 ;;
        --dir=*) dir=${1#--dir=}; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "slurmlab: unknown option '$1' (try --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] || { echo "slurmlab: expected one of up|down|status|env (try --help)" >&2; exit 2; }
cmd=$1
case "$dir" in /*) ;; *) dir=$PWD/$dir ;; esac
dir=${dir%/}
conf=$dir/slurm.conf
msock=$dir/munge/munge.socket
mult=${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}

# pids of the processes whose environment carries our tag
lab_pids() {
    local p
    for p in /proc/[0-9]*; do
        { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qxF "CVIA_SLURMLAB=$dir" &&
            echo "${p#/proc/}"
    done
    return 0
}
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { [ -r "$dir/$1.pid" ] && cat "$dir/$1.pid" || true; }

# wait_for SECONDS WHAT COMMAND...: poll COMMAND until it succeeds
wait_for() {
    local limit=$(( $1 * mult )) what=$2 t0=$SECONDS
    shift 2
    until "$@" >/dev/null 2>&1; do
        [ $((SECONDS - t0)) -lt "$limit" ] || return 1
        sleep 0.5
    done
}

free_port() {
    local p tries=0
    while [ $tries -lt 200 ]; do
        p=$(( 20000 + RANDOM % 20000 ))
        tries=$((tries + 1))
        [ "$p" = "${1:-}" ] && continue
        ss -Htan "( sport = :$p )" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
    done
    die "no free TCP port found"
}

# start NAME LOG COMMAND...: a daemon in the foreground of a session of its
# own, tagged, its output in LOG, its pid in DIR/NAME.pid
start() {
    local name=$1 log=$2
    shift 2
    setsid env CVIA_SLURMLAB="$dir" SLURM_CONF="$conf" "$@" </dev/null >>"$log" 2>&1 &
    echo $! >"$dir/$name.pid"
}

show_log() { echo "--- $1 (last lines) ---" >&2; tail -n 20 "$1" >&2 2>/dev/null || true; }

node_idle() {
    local s
    s=$(sinfo -h -N -o %T 2>/dev/null) || return 1
    case "$s" in idle*|mixed*|allocated*) return 0 ;; *) return 1 ;; esac
}

do_up() {
    [ "$(id -u)" -eq 0 ] || die "up needs root (SlurmUser=root)"
    local b
    for b in slurmctld slurmd munged mungekey sinfo scontrol ss; do
        command -v "$b" >/dev/null || die "$b not found (Debian: scripts/install-deps.sh test)"
    done
    if [ -e "$dir" ]; then
        [ -n "$(lab_pids)" ] && die "a lab already runs in $dir (slurmlab.sh --dir $dir down)"
        die "$dir exists (a lab that was not brought down? slurmlab.sh --dir $dir down)"
    fi
    mkdir -p "$(dirname "$dir")"
    mkdir -m 700 "$dir"
    : >"$dir/.slurmlab"
    mkdir -m 700 "$dir/munge" "$dir/ctld" "$dir/spool" "$dir/tmp"
    # on any failure from here on, leave nothing behind
    trap 'rc=$?; if [ $rc -ne 0 ]; then for l in "$dir"/*.log "$dir"/munge/*.log; do show_log "$l"; done; do_down >/dev/null 2>&1 || true; fi' EXIT

    mungekey --create --keyfile="$dir/munge/munge.key" 2>/dev/null ||
        die "mungekey could not create a key"
    chmod 600 "$dir/munge/munge.key"
    start munged "$dir/munge/munged.log" munged --foreground --force --socket="$msock" \
        --key-file="$dir/munge/munge.key" --log-file="$dir/munge/munged.log" \
        --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed"
    wait_for 30 munged test -S "$msock" || die "munged did not open $msock"

    local node ctld_port d_port hw
    node=$(hostname -s)
    ctld_port=$(free_port)
    d_port=$(free_port "$ctld_port")
    # CPUs=.. Boards=.. SocketsPerBoard=.. CoresPerSocket=.. ThreadsPerCore=..
    hw=$(slurmd -C | head -n 1 | tr ' ' '\n' |
         grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | paste -sd ' ')
    case "$hw" in *CPUs=[1-9]*) ;; *) die "slurmd -C did not report the CPUs" ;; esac
    cat >"$conf" <<EOF
# written by corevia's scripts/slurmlab.sh; removed by "slurmlab.sh down"
ClusterName=cvialab
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
AuthType=auth/munge
AuthInfo=socket=$msock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SwitchType=switch/none
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
PlugStackConfig=$dir/plugstack.conf
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
TmpFS=$dir/tmp
SlurmctldPidFile=$dir/slurmctld.pidfile
SlurmdPidFile=$dir/slurmd.pidfile
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ReturnToService=2
MessageTimeout=60
KillWait=5
InactiveLimit=0
MinJobAge=60
NodeName=$node NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=lab Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    : >"$dir/plugstack.conf"
    export SLURM_CONF=$conf

    start slurmctld "$dir/slurmctld.out" slurmctld -D -i -f "$conf"
    wait_for 60 slurmctld scontrol ping || die "slurmctld did not answer"
    start slurmd "$dir/slurmd.out" slurmd -D -f "$conf" -N "$node"
    wait_for 90 slurmd node_idle || { sinfo -N -l >&2 || true; die "node $node did not become idle"; }
    trap - EXIT
    echo "slurmlab: up in $dir: node $node ($hw), slurmctld on port $ctld_port, slurmd on $d_port"
    echo "slurmlab: use it with: export SLURM_CONF=$conf"
}

# stop PIDS...: SIGTERM, wait, then SIGKILL what is left; by pid only
stop_pids() {
    local p t0 left
    [ $# -gt 0 ] || return 0
    kill -TERM "$@" 2>/dev/null || true
    t0=$SECONDS
    while :; do
        left=""
        for p in "$@"; do alive "$p" && left="$left $p"; done
        [ -z "$left" ] && return 0
        [ $((SECONDS - t0)) -ge $((15 * mult)) ] && break
        sleep 0.3
    done
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null || true
    sleep 0.5
}

do_down() {
    local p ctld d m rest
    if [ ! -e "$dir" ]; then
        echo "slurmlab: nothing in $dir"
        return 0
    fi
    [ -e "$dir/.slurmlab" ] || die "$dir is not a lab directory (no .slurmlab): not touching it"
    export SLURM_CONF=$conf
    ctld=$(pid_of slurmctld) d=$(pid_of slurmd) m=$(pid_of munged)
    # jobs first, while the controller can still end their steps
    if alive "$ctld" && [ -e "$conf" ]; then
        scancel --quiet --user=root 2>/dev/null || true
        wait_for 30 jobs sh -c '[ -z "$(squeue -h -o %i 2>/dev/null)" ]' || true
    fi
    stop_pids $(for p in $d $ctld; do alive "$p" && echo "$p"; done)
    # what slurmd left (slurmstepd and anything tagged but munged)
    rest=$(lab_pids | grep -vxF "${m:-none}" || true)
    # shellcheck disable=SC2086
    stop_pids $rest
    alive "$m" && stop_pids "$m"
    rest=$(lab_pids)
    [ -z "$rest" ] || die "processes of the lab would not die: $rest"
    rm -rf -- "$dir"
    echo "slurmlab: down, $dir removed"
}

do_status() {
    local n=0 name p
    for name in munged slurmctld slurmd; do
        p=$(pid_of $name)
        if alive "$p"; then echo "$name: running (pid $p)"; n=$((n + 1)); else echo "$name: not running"; fi
    done
    if [ $n -gt 0 ] && [ -e "$conf" ]; then
        SLURM_CONF=$conf sinfo -N -o '%N %T %c' 2>/dev/null || true
    fi
    [ $n -eq 3 ] && return 0
    [ $n -eq 0 ] && return 1
    return 3
}

case "$cmd" in
    up) do_up ;;
    down) do_down ;;
    status) do_status ;;
    env) echo "export SLURM_CONF=$conf" ;;
    *) echo "slurmlab: unknown command '$cmd' (up|down|status|env)" >&2; exit 2 ;;
esac
