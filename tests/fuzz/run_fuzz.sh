#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run a libFuzzer harness for a bounded number of inputs from a fresh
# corpus: the seeds the harness writes itself (FUZZ_DGRAM_SEEDS), plus
# whatever is in tests/fuzz/corpus/<harness> of the source tree.
#   run_fuzz.sh HARNESS [libFuzzer options...]
# An empty HARNESS: not built here (no clang with libFuzzer): skip (77).
# Crashing inputs are kept in fuzz-artifacts/ beside the harness, to
# replay with: HARNESS ARTIFACT. FUZZ_SEED: libFuzzer's seed (default 1,
# so that a run replays; any other value explores elsewhere).
set -u
harness=${1:-}
if [ -z "$harness" ]; then
    echo "SKIP: the libFuzzer harness is not built (needs clang with -fsanitize=fuzzer:" \
         "scripts/install-deps.sh test installs it)"
    exit 77
fi
shift
here=$(cd "$(dirname "$0")" && pwd)
name=$(basename "$harness")
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
arts=$(dirname "$harness")/fuzz-artifacts
mkdir -p "$arts" "$work/corpus" "$work/seeds"
dirs=("$work/corpus" "$work/seeds")
[ -d "$here/corpus/$name" ] && dirs+=("$here/corpus/$name")
# the engine's error lines (one per protocol error) would drown the log
# -error_exitcode: libFuzzer's default for a crash is 77, which ctest takes
# for this test's skip (SKIP_RETURN_CODE): a crash passed as a skip
FUZZ_DGRAM_SEEDS=$work/seeds "$harness" -seed="${FUZZ_SEED:-1}" -timeout=20 -rss_limit_mb=2048 \
    -error_exitcode=1 \
    -artifact_prefix="$arts/" -print_final_stats=1 -close_fd_mask=2 "$@" "${dirs[@]}" 2>&1 |
    grep -v '^corevia[[ ]' | tail -n 60
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
    echo "FAIL: $name exited $rc; crashing inputs in $arts:"
    ls -l "$arts"
fi
exit "$rc"
