#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install what is missing, build, and run the whole test suite three
# times: a normal build, one with -fsanitize=address,undefined, and one
# with -fsanitize=thread.
set -euo pipefail
case "${1:-}" in
    -h|--help)
        cat <<'USAGE'
test.sh: install what the tests need (scripts/install-deps.sh test), then
build and run the whole suite three times: a normal RelWithDebInfo build
(build/), AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/) and
ThreadSanitizer (build-tsan/). Exits non-zero when a test fails or when the
skips exceed .ci/max-skips. Takes no arguments; to run part of the suite,
use ctest in a build directory (cd build && ctest -R REGEX).
USAGE
        exit 0 ;;
    "") ;;
    *) echo "test.sh: takes no arguments (try --help)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
./scripts/install-deps.sh test
jobs=$(nproc)
# A test that skips (exit 77) says why; the number of skips over the three
# passes may not rise above the count kept in .ci/max-skips.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# Each test takes one of $jobs "cpus" slots (RESOURCE_GROUPS, set in
# cmake/CviaTestCpu.cmake) but the few that mostly wait (a peer timeout
# expiring, a rate-limited link, sleeping ranks): with twice $jobs ctest
# jobs those run beside the CPU-bound tests, which stay at $jobs at once.
printf '{"version": {"major": 1, "minor": 0}, "local": [{"cpus": [{"id": "0", "slots": %d}]}]}\n' \
    "$jobs" >"$logs/resources.json"
run_ctest() {   # run_ctest NAME DIR [ENV=VALUE...] -- [CTEST ARGS...]
    local name=$1 dir=$2
    shift 2
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    (cd "$dir" && env "${envs[@]}" ctest --output-on-failure -j"$((2 * jobs))" \
        --resource-spec-file "$logs/resources.json" "$@") 2>&1 | tee "$logs/$name.log"
}

echo "== build (RelWithDebInfo) and test"
./scripts/build.sh build
run_ctest normal build --

# tools.deb builds the Debian packages from the source tree with the
# packaging's own flags, whatever this build's are: it runs in the normal
# pass only (a second and third identical package build would add two
# minutes and test nothing new). So do fabric.mpi4py-ob1.*: mpi4py's suite
# on Open MPI's own transports, the reference beside the provider's runs,
# loads no corevia code that a sanitizer could check; and fabric.mpi-ob1*
# (sizes on 2 ranks, on 4 across two hosts): mpi_fabric on Open MPI's
# transports, no corevia code loaded (mpirun_ofi.sh --mode ob1), and the
# program's own code for sizes runs in this pass over the provider
# (fabric.mpi.sizes.np2, .np4, .domain.np2, fabric.mpi-hosts-*.sizes.np4).
echo "== build with AddressSanitizer + UndefinedBehaviorSanitizer and test"
./scripts/build.sh build-asan -DCVIA_SANITIZE=ON
run_ctest asan build-asan ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 CVIA_TEST_TIMEOUT_MULTIPLIER=3 -- \
    -E '^(tools\.deb|fabric\.mpi4py-ob1\..*|fabric\.mpi-ob1(-hosts)?\..*)$'

echo "== build with ThreadSanitizer and test"
# Left out, and why (DESIGN.md, "Testing on one machine"):
#  dsm.*        all but a subset, for time (120 tests, 74 s on 2 cores):
#               the DSM no longer reads a word its peers write one-sided
#               (credits and diff acks travel in the immediate since race18),
#               and every dsm.* test passes here; the subset, run below,
#               covers each race that TSan found then (shm, tcp and udp
#               between hosts, a rank's death)
#  fabric.mpi*  Open MPI is not instrumented: its own locks and atomics are
#               invisible to TSan, so every request it completes "races"
#  tools.*      the tools run one thread (none of them starts one), and
#  topo.*       so do the topology tests: TSan has nothing to compare there;
#               ASan and UBSan cover their memory. (tools.install also runs
#               the installed DSM example, as dsm.*; tools.deb: see above.)
#  slurm.lab    Slurm's and PMIx's own threads are not instrumented, as
#               with Open MPI; its functional tests run in this pass anyway
#  fuzz.dgram   its harness drives the dgram engine from one thread on a
#               virtual clock (no thread is started): TSan has no two
#               threads to compare; ASan and UBSan run it (libFuzzer in the
#               normal pass, the replay in the ASan one)
./scripts/build.sh build-tsan -DCVIA_TSAN=ON
run_ctest tsan build-tsan TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    CVIA_TEST_TIMEOUT_MULTIPLIER=4 -- -E '^(dsm\.|fabric\.mpi|tools\.|topo\.|slurm\.lab$|fuzz\.dgram$)'
run_ctest tsan-dsm build-tsan TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    CVIA_TEST_TIMEOUT_MULTIPLIER=4 -- \
    -R '^dsm\.(counter\.np4|shared-death\.np4|hosts\.tcp\.(shmfull|dsm_stress-counter|death)\.np4|hosts\.udp\.dsm_stress-counter\.np4)$'

max=$(grep -v '^#' .ci/max-skips | head -1)
skips=$(cat "$logs"/*.log | grep -c -- '\*\*\*Skipped' || true)
echo "== skipped tests over the three passes: $skips (at most $max, .ci/max-skips)"
cat "$logs"/*.log | grep -- '\*\*\*Skipped' || true
if [ "$skips" -gt "$max" ]; then
    echo "test.sh: $skips tests skipped, more than the $max of .ci/max-skips" >&2
    exit 1
fi
