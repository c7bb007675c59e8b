#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install, from Debian's packages, what corevia needs and is missing.
# Idempotent: installs nothing (and does not touch the network) when all
# is present.   install-deps.sh [build|test|peers|all]   (default: test)
#   build  compiler, CMake, pkg-config, hwloc, libnuma, gnuplot (plots), PMIx,
#          libfabric's headers (the provider libcorevia-fi.so), libxdp and
#          libbpf (the xdp provider), pandoc (the roff man pages from man/*.md)
#   test   build + what the test suite calls (procps, python3, hwloc tools,
#          iproute2, ping, bzip2, nftables for random loss, clang with libFuzzer's
#          runtime for tests/fuzz, Open MPI's mpirun and mpicc and
#          libfabric's fi_info / fi_pingpong for the provider's tests,
#          g++, man-db and file for the install test, dpkg-dev,
#          debhelper, devscripts and lintian for the Debian packages,
#          Slurm (slurmctld, slurmd, srun/sbatch, munge; mpi_pmix.so is in
#          slurm-wlm-basic-plugins) for scripts/slurmlab.sh and tests.slurm)
#          and scripts/affinity-eval.sh (iperf3); python3-mpi4py and the
#          mpi4py 3.1.4 sdist's test/ directory (from PyPI, sha256 pinned,
#          kept in ${XDG_CACHE_HOME:-~/.cache}/corevia/mpi4py-3.1.4/test)
#          for tests/fabric/mpi4py.sh (fabric.mpi4py.*)
#   Installing Slurm and munge must not leave system daemons behind: a
#   policy-rc.d forbids starting services during the install, and the
#   packages' services are then stopped and disabled (slurmlab.sh runs
#   its own daemons, with a private key, sockets and ports).
#   peers  test + UCX, for scripts/compare-peers.sh and compare-mpi.sh;
#          ethtool, for scripts/repro-mvia.sh (issue 7); valgrind, for
#          scripts/mpi-budget.sh (instructions per MPI message)
set -euo pipefail

profile=${1:-test}
build_pkgs=(gcc libc6-dev cmake make pkg-config libhwloc-dev libnuma-dev gnuplot-nox libpmix-dev
            libfabric-dev libxdp-dev libbpf-dev pandoc)
test_pkgs=(procps python3 hwloc util-linux coreutils iproute2 iputils-ping iperf3 bzip2 nftables clang
           libclang-rt-14-dev openmpi-bin libopenmpi-dev libfabric-bin g++ man-db file
           dpkg-dev debhelper devscripts lintian
           slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge
           python3-mpi4py python3-distutils)
daemon_services=(slurmctld slurmd munge)   # each is also the name of its package
peer_pkgs=(ucx-utils ethtool valgrind)

case "$profile" in
    build) want=("${build_pkgs[@]}") ;;
    test)  want=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
    peers|all) want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${peer_pkgs[@]}") ;;
    -h|--help)
        sed -n '3,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps.sh: unknown profile '$profile' (build|test|peers|all)" >&2; exit 2 ;;
esac

# mpi4py's own test suite (tests/fabric/mpi4py.sh): the test/ directory of
# the sdist that Debian 12's python3-mpi4py was built from, fetched once
# from PyPI, checked against its pinned sha256, kept in the user's cache
mpi4py_tests() {
    local ver=3.1.4
    local sum=17858f2ebc623220d0120d1fa8d428d033dde749c4bc35b33d81a66ad7f93480
    # the file's own address on PyPI (as its simple index lists it)
    local url=https://files.pythonhosted.org/packages/bc/f2/749af7fd0e7703ddca6cea525ab40f26c3ca6cbe6c23658441c6f9705860/mpi4py-$ver.tar.gz
    local dir=${XDG_CACHE_HOME:-$HOME/.cache}/corevia/mpi4py-$ver tmp
    [ -f "$dir/test/runtests.py" ] && return 0
    echo "install-deps: fetching mpi4py $ver's test suite into $dir"
    mkdir -p "$dir" && tmp=$(mktemp -d "$dir/.fetch.XXXXXX") || return 1
    if ! python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' \
            "$url" "$tmp/sdist.tar.gz"; then
        echo "install-deps: cannot download $url" >&2; rm -rf "$tmp"; return 1
    fi
    if ! echo "$sum  $tmp/sdist.tar.gz" | sha256sum -c --quiet -; then
        echo "install-deps: $url: sha256 is not $sum" >&2; rm -rf "$tmp"; return 1
    fi
    tar -xzf "$tmp/sdist.tar.gz" -C "$tmp" "mpi4py-$ver/test" &&
        rm -rf "$dir/test" && mv "$tmp/mpi4py-$ver/test" "$dir/test"
    local rc=$?
    rm -rf "$tmp"
    return $rc
}

missing=()
for p in "${want[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#want[@]} packages of profile '$profile' are present"
    [ "$profile" = build ] || mpi4py_tests
    exit
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# No service may start while packages are installed (Debian starts slurmd,
# slurmctld and munge at install): keep an existing policy-rc.d, else put
# a refusing one in place for the install only.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# install-deps.sh: no service starts during the install\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    own_policy=1
    trap 'rm -f "$policy"' EXIT
fi
# the services whose packages this run brings (munge also as slurmd's dependency)
new_services=()
for svc in "${daemon_services[@]}"; do
    dpkg-query -W -f='${Status}' "$svc" 2>/dev/null | grep -q 'install ok installed' ||
        new_services+=("$svc")
done
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
[ $own_policy -eq 1 ] && { rm -f "$policy"; trap - EXIT; }
# ...and none that this run installed stays enabled for the next boot, or
# running if something started it anyway. A service whose package was
# already there is the machine's own (a cluster's munge): left alone.
for svc in ${new_services[@]+"${new_services[@]}"}; do
    dpkg-query -W -f='${Status}' "$svc" 2>/dev/null | grep -q 'install ok installed' || continue
    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
        systemctl disable --now "$svc" >/dev/null 2>&1 || true
    else
        command -v update-rc.d >/dev/null && [ -e "/etc/init.d/$svc" ] &&
            update-rc.d "$svc" disable >/dev/null 2>&1 || true
        [ -e "/etc/init.d/$svc" ] && "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
    fi
done
[ "$profile" = build ] || mpi4py_tests
