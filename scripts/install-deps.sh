#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install, from Debian's packages, what corevia needs and is missing.
# Idempotent: installs nothing (and does not touch the network) when all
# is present.   install-deps.sh [build|test|peers|all]   (default: test)
#   build  compiler, CMake, pkg-config, hwloc, libnuma, gnuplot (plots), PMIx,
#          libfabric's headers (the provider libcorevia-fi.so), pandoc (the
#          roff man pages from man/*.md)
#   test   build + what the test suite calls (procps, python3, hwloc tools,
#          iproute2, bzip2, nftables for random loss, clang with libFuzzer's
#          runtime for tests/fuzz, Open MPI's mpirun and mpicc and
#          libfabric's fi_info / fi_pingpong for the provider's tests,
#          g++, man-db and file for the install test, dpkg-dev,
#          debhelper, devscripts and lintian for the Debian packages) and
#          scripts/affinity-eval.sh (iperf3)
#   peers  test + UCX, for scripts/compare-peers.sh and compare-mpi.sh;
#          ethtool, for scripts/repro-mvia.sh (issue 7)
set -euo pipefail

profile=${1:-test}
build_pkgs=(gcc libc6-dev cmake make pkg-config libhwloc-dev libnuma-dev gnuplot-nox libpmix-dev
            libfabric-dev pandoc)
test_pkgs=(procps python3 hwloc util-linux coreutils iproute2 iperf3 bzip2 nftables clang
           libclang-rt-14-dev openmpi-bin libopenmpi-dev libfabric-bin g++ man-db file
           dpkg-dev debhelper devscripts lintian)
peer_pkgs=(ucx-utils ethtool)

case "$profile" in
    build) want=("${build_pkgs[@]}") ;;
    test)  want=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
    peers|all) want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${peer_pkgs[@]}") ;;
    -h|--help)
        sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps.sh: unknown profile '$profile' (build|test|peers|all)" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#want[@]} packages of profile '$profile' are present"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
