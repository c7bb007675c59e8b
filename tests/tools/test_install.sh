#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# cmake --install gives a working library, headers, tools and pkg-config
# file: build examples/hello.c against an installed tree and run it.
#   test_install.sh BUILD_DIR SOURCE_DIR
set -u
build=$1 src=$2
prefix=$(mktemp -d) || exit 1
trap 'rm -rf "$prefix"' EXIT
n=0 failed=0
ok()  { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; failed=1; }

if cmake --install "$build" --prefix "$prefix" >/dev/null; then ok "cmake --install"; else bad "cmake --install"; fi
for f in include/corevia/corevia.h include/corevia/cvia_errno.h bin/cvia-run bin/cvia-bench \
         bin/cvia-info bin/cvia-strerror; do
    if [ -e "$prefix/$f" ]; then ok "installed $f"; else bad "missing $f"; fi
done
pc=$(find "$prefix" -name corevia.pc | head -1)
if [ -n "$pc" ]; then ok "installed corevia.pc"; else bad "no corevia.pc"; fi
export PKG_CONFIG_PATH=$(dirname "${pc:-/nonexistent}")
libdir=$(pkg-config --variable=libdir corevia 2>/dev/null)
# shellcheck disable=SC2086
if cc ${CVIA_TEST_CFLAGS:-} $(pkg-config --cflags corevia) "$src/examples/hello.c" $(pkg-config --libs corevia) \
      -Wl,-rpath,"$libdir" -o "$prefix/hello" 2>&1; then
    ok "examples/hello.c builds with pkg-config"
else
    bad "examples/hello.c does not build with pkg-config"
fi
out=$(timeout 60 "$prefix/bin/cvia-run" -n 3 -- "$prefix/hello" 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q 'hello from rank 2 of 3' <<<"$out"; then
    ok "installed cvia-run runs the example on 3 ranks"
else
    bad "example run: exit $rc: $out"
fi
echo "1..$n"
exit $failed
