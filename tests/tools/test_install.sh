#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# cmake --install gives a library others can use: install into a temporary
# prefix, move the tree elsewhere (everything must be relocatable), then
# from there: the tools run, the DSM applications run, the examples
# (C, C++, the DSM) build and run both with find_package(corevia CONFIG)
# and with pkg-config, the version check refuses another major version,
# and the man pages render.
#   test_install.sh BUILD_DIR SOURCE_DIR
# CVIA_TEST_CFLAGS: flags for the external builds (the sanitizers of an
# instrumented library).
set -u
build=$1 src=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok()  { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; failed=1; }
cflags=${CVIA_TEST_CFLAGS:-}
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH MANPATH
T=$((60 * ${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}))

if cmake --install "$build" --prefix "$tmp/staged" >"$tmp/install.log" 2>&1; then
    ok "cmake --install"
else
    bad "cmake --install: $(tail -5 "$tmp/install.log")"
fi
# relocatable: nothing may remember where it was installed
mv "$tmp/staged" "$tmp/prefix"
prefix=$tmp/prefix
pc=$(find "$prefix" -name corevia.pc | head -1)
libdir=$(dirname "$(dirname "${pc:-/nonexistent/x/y}")")

for f in include/corevia/corevia.h include/corevia/cvia_errno.h include/corevia/cvia_api.h \
         include/corevia/dsm.h include/corevia/parmacs.h \
         bin/cvia-run bin/cvia-bench bin/cvia-info bin/cvia-strerror bin/cvia-affinity \
         libexec/corevia/sor share/man/man1/cvia-run.1 share/man/man7/corevia.7 \
         share/man/man7/cvia-config.7; do
    if [ -e "$prefix/$f" ]; then ok "installed $f"; else bad "missing $f"; fi
done
for f in libcorevia.so libcorevia.so.0 libcorevia_dsm.so libcorevia_dsm.so.0 \
         pkgconfig/corevia.pc pkgconfig/corevia-dsm.pc cmake/corevia/corevia-config.cmake \
         cmake/corevia/corevia-config-version.cmake cmake/corevia/corevia-targets.cmake; do
    if [ -e "$libdir/$f" ]; then ok "installed <libdir>/$f"; else bad "missing <libdir>/$f"; fi
done
if [ -e "$build/fabric/libcorevia-fi.so" ]; then
    if [ -e "$libdir/libfabric/libcorevia-fi.so" ]; then ok "installed <libdir>/libfabric/libcorevia-fi.so"
    else bad "missing <libdir>/libfabric/libcorevia-fi.so"; fi
fi

# No installed ELF file may point into the build tree; programs and the
# libraries above libcorevia find theirs through $ORIGIN.
leaks=""
while IFS= read -r f; do
    if file -b "$f" | grep -q '^ELF' && readelf -d "$f" 2>/dev/null | grep -E 'R(UN)?PATH' |
            grep -qF "$build"; then
        leaks="$leaks ${f#"$prefix"/}"
    fi
done < <(find "$prefix" -type f)
if [ -z "$leaks" ]; then ok "no installed file has a RUNPATH into the build tree"
else bad "RUNPATH into the build tree:$leaks"; fi
for f in bin/cvia-run libexec/corevia/sor "${libdir#"$prefix"/}/libcorevia_dsm.so.0"; do
    if readelf -d "$prefix/$f" 2>/dev/null | grep -E 'RUNPATH' | grep -qF '$ORIGIN'; then
        ok "$f: RUNPATH relative to \$ORIGIN"
    else
        bad "$f: no \$ORIGIN RUNPATH: $(readelf -d "$prefix/$f" 2>&1 | grep -E 'R(UN)?PATH')"
    fi
done

# The tools from the moved prefix
for t in cvia-run cvia-info cvia-bench cvia-strerror cvia-affinity; do
    if out=$(timeout "$T" "$prefix/bin/$t" --help 2>&1) && grep -q "$t" <<<"$out"; then
        ok "installed $t --help runs"
    else
        bad "installed $t --help: $out"
    fi
done
if out=$(timeout "$T" "$prefix/bin/cvia-info" --version 2>&1) && grep -qF "$(pkg-config --with-path "$libdir/pkgconfig" --modversion corevia 2>/dev/null || echo x)" <<<"$out"; then
    ok "installed cvia-info --version names the installed version"
else
    bad "installed cvia-info --version: $out"
fi
# cvia-info describes the installed library and the layers installed with
# it: it loads libcorevia.so.0 from the prefix, and lists the DSM's and the
# provider's variables, which they register when loaded from there
lib=$(ldd "$prefix/bin/cvia-info" 2>/dev/null | awk '$1 == "libcorevia.so.0" { print $3 }')
if [ "$(readlink -f "$lib")" = "$(readlink -f "$libdir/libcorevia.so.0")" ]; then
    ok "installed cvia-info links the installed libcorevia.so.0"
else
    bad "installed cvia-info links '$lib', not $libdir/libcorevia.so.0"
fi
conf=$(env -u FI_PROVIDER_PATH timeout "$T" "$prefix/bin/cvia-info" -c 2>&1)
want="CVIA_DSM_SIZE"
[ -e "$libdir/libfabric/libcorevia-fi.so" ] && want="$want CVIA_FI_EAGER"
miss=""
for v in $want; do grep -q "^#* *$v=" <<<"$conf" || miss="$miss $v"; done
if [ -z "$miss" ]; then ok "installed cvia-info -c lists the installed layers' variables ($want)"
else bad "installed cvia-info -c lacks$miss"; fi
if out=$(timeout "$T" "$prefix/bin/cvia-run" -n 2 -- "$prefix/libexec/corevia/sor" small 2>&1); then
    ok "installed cvia-run runs the installed DSM application sor on 2 ranks"
else
    bad "installed sor: $out"
fi

run_examples() {   # run_examples HOW DIR: hello, hello++ and dsm_counter on 3 ranks
    local how=$1 dir=$2 out rc
    out=$(timeout "$T" "$prefix/bin/cvia-run" -n 3 -- "$dir/hello" 2>&1); rc=$?
    if [ $rc -eq 0 ] && grep -q 'hello from rank 2 of 3' <<<"$out"; then ok "$how: C example runs on 3 ranks"
    else bad "$how: C example: exit $rc: $out"; fi
    out=$(timeout "$T" "$prefix/bin/cvia-run" -n 3 -- "$dir/hello++" 2>&1); rc=$?
    if [ $rc -eq 0 ] && grep -q 'hello++ from rank 2 of 3' <<<"$out"; then ok "$how: C++ example runs on 3 ranks"
    else bad "$how: C++ example: exit $rc: $out"; fi
    out=$(timeout "$T" "$prefix/bin/cvia-run" -n 3 -- "$dir/dsm_counter" 2>&1); rc=$?
    if [ $rc -eq 0 ] && grep -q 'counter 300 of 300' <<<"$out"; then ok "$how: DSM example runs on 3 ranks"
    else bad "$how: DSM example: exit $rc: $out"; fi
}

# pkg-config: the examples' Makefile, as a user would run it
mkdir -p "$tmp/mk" && cp "$src"/examples/{hello.c,hello.cc,dsm_counter.c,Makefile} "$tmp/mk/"
export PKG_CONFIG_PATH=$libdir/pkgconfig
if [ "$(pkg-config --modversion corevia-dsm 2>&1)" = "$(pkg-config --modversion corevia 2>&1)" ] &&
   pkg-config --libs corevia-dsm | grep -q -- '-lcorevia_dsm.*-lcorevia\b'; then
    ok "pkg-config: corevia-dsm requires corevia ($(pkg-config --libs corevia-dsm))"
else
    bad "pkg-config corevia-dsm: $(pkg-config --modversion --libs corevia-dsm 2>&1)"
fi
if out=$(make -C "$tmp/mk" CFLAGS="-std=c11 -Wall -Wextra -pedantic -Werror $cflags" \
             CXXFLAGS="-std=c++17 -Wall -Wextra -pedantic -Werror $cflags" 2>&1); then
    ok "pkg-config: examples (C, C++, DSM) build with -Werror"
    run_examples pkg-config "$tmp/mk"
else
    bad "pkg-config: examples do not build: $out"
fi
unset PKG_CONFIG_PATH

# CMake: examples/CMakeLists.txt, find_package(corevia 0.1 CONFIG COMPONENTS dsm)
if out=$(cmake -S "$src/examples" -B "$tmp/ex" -DCMAKE_PREFIX_PATH="$prefix" \
             -DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_FLAGS="$cflags" 2>&1) &&
   out=$(cmake --build "$tmp/ex" 2>&1); then
    ok "find_package: examples (C, C++, DSM) build"
    run_examples find_package "$tmp/ex"
else
    bad "find_package: examples do not build: $out"
fi
# the version file: same major version only
mkdir -p "$tmp/ver"
cat >"$tmp/ver/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(ver LANGUAGES C)
find_package(corevia ${WANT} CONFIG)
message(STATUS "corevia_FOUND=${corevia_FOUND} version=${corevia_VERSION}")
EOF
for want in 0.1 0.0.1 1.0; do
    out=$(cmake -S "$tmp/ver" -B "$tmp/ver/b$want" -DWANT="$want" -DCMAKE_PREFIX_PATH="$prefix" 2>&1)
    if [ "$want" = 1.0 ]; then expect=0; else expect=1; fi
    if grep -q "corevia_FOUND=$expect " <<<"$out"; then
        ok "find_package(corevia $want): found=$expect"
    else
        bad "find_package(corevia $want): expected found=$expect: $(grep -E 'corevia_FOUND|version' <<<"$out")"
    fi
done

# man pages, from the installed tree only
export MANWIDTH=80
if out=$(man -l "$prefix/share/man/man1/cvia-run.1" 2>&1) && grep -q -- '--hosts' <<<"$out"; then
    ok "man -l cvia-run.1 renders (options keep their two hyphens)"
else
    bad "man -l cvia-run.1: $(head -5 <<<"$out")"
fi
for page in "cvia-run" "7 corevia" "7 cvia-config" "7 cvia-dsm" "cvia-info"; do
    # shellcheck disable=SC2086
    if out=$(man -M "$prefix/share/man" $page 2>&1) && [ "$(wc -l <<<"$out")" -gt 10 ]; then
        ok "man -M <prefix>/share/man $page"
    else
        bad "man -M <prefix>/share/man $page: $(head -3 <<<"$out")"
    fi
done
# every variable of cvia-info -c is in the installed cvia-config(7)
vars=$("$prefix/bin/cvia-info" -c 2>/dev/null | sed -n 's/^#* *\(CVIA_[A-Z0-9_]*\)=.*/\1/p' | sort -u)
page=$(man -M "$prefix/share/man" 7 cvia-config 2>/dev/null)
missing=""
for v in $vars; do grep -qF "$v" <<<"$page" || missing="$missing $v"; done
if [ -n "$vars" ] && [ -z "$missing" ]; then ok "cvia-config(7) names all $(wc -w <<<"$vars") variables"
else bad "cvia-config(7) lacks:$missing (variables: $(wc -w <<<"$vars"))"; fi

echo "1..$n"
exit $failed
