#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian packages (issue 15): build them from a copy of the source tree
# with dpkg-buildpackage -us -uc -b, hold lintian to no errors, unpack them
# into an empty root (dpkg -x: nothing of the build tree or of an earlier
# install can help), and from there run the installed tools, the installed
# DSM application, and the installed examples built with pkg-config and
# with find_package.
#   test_deb.sh SOURCE_DIR
set -u
src=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok()  { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; failed=1; }
T=$((60 * ${CVIA_TEST_TIMEOUT_MULTIPLIER:-1}))
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH MANPATH

# the working tree as git sees it (tracked and new files, no build output)
mkdir -p "$tmp/corevia"
git -C "$src" ls-files -z -c -o --exclude-standard | (cd "$src" && tar --null -T - -cf -) |
    tar -C "$tmp/corevia" -xf -
if (cd "$tmp/corevia" && DEB_BUILD_OPTIONS="parallel=$(nproc)" \
        dpkg-buildpackage -us -uc -b >"$tmp/build.log" 2>&1); then
    ok "dpkg-buildpackage -us -uc -b"
else
    bad "dpkg-buildpackage: $(tail -30 "$tmp/build.log")"
    echo "1..$n"
    exit 1
fi
want=(libcorevia0 libcorevia-dsm0 libcorevia-dev corevia-tools)
if pkg-config --exists libfabric; then want+=(libfabric-corevia); fi
for p in "${want[@]}"; do
    if ls "$tmp/${p}_"*.deb >/dev/null 2>&1; then ok "built $p"; else bad "no $p package"; fi
done
if grep -q '^ok .*exports exactly' "$tmp/build.log" && ! grep -q '^not ok' "$tmp/build.log"; then
    ok "the package build ran the ABI check (tests/tools/test_abi.sh) and it passed"
else
    bad "the package build did not pass the ABI check: $(grep -E '^(not )?ok' "$tmp/build.log")"
fi
if out=$(lintian --fail-on error "$tmp"/*.changes 2>&1); then
    ok "lintian: no errors ($(grep -c '^W:' <<<"$out") warnings)"
    grep -E '^[WI]:' <<<"$out" | sed 's/^/# /'
else
    bad "lintian errors: $(grep -E '^E:' <<<"$out")"
fi
if grep -qE '^\s*dpkg-gensymbols: warning' "$tmp/build.log"; then
    bad "dpkg-gensymbols: the exports differ from debian/*.symbols: $(grep -A8 'dpkg-gensymbols: warning' "$tmp/build.log")"
else
    ok "dpkg-gensymbols: exports match debian/*.symbols"
fi
dep=$(dpkg-deb -f "$tmp"/corevia-tools_*.deb Depends 2>/dev/null)
dev=$(dpkg-deb -f "$tmp"/libcorevia-dev_*.deb Depends 2>/dev/null)
if grep -q 'libcorevia-dsm0' <<<"$dep" && grep -q 'libcorevia0 (=' <<<"$dev"; then
    ok "dependencies: corevia-tools on libcorevia-dsm0, libcorevia-dev on libcorevia0 (=)"
else
    bad "dependencies: corevia-tools: $dep; libcorevia-dev: $dev"
fi

root=$tmp/root
for d in "$tmp"/*.deb; do dpkg -x "$d" "$root"; done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=$root/usr/lib/$ma
# the packages carry no run path: the loader's path is /usr/lib/<multiarch>,
# which in this root is here
export LD_LIBRARY_PATH=$lib
for t in cvia-run cvia-info cvia-bench cvia-strerror cvia-affinity; do
    if out=$(timeout "$T" "$root/usr/bin/$t" --help 2>&1) && grep -q "$t" <<<"$out"; then
        ok "packaged $t runs"
    else
        bad "packaged $t: $out"
    fi
done
if out=$(timeout "$T" "$root/usr/bin/cvia-run" -n 2 -- "$root/usr/libexec/corevia/sor" small 2>&1); then
    ok "packaged cvia-run runs the packaged sor on 2 ranks"
else
    bad "packaged sor: $out"
fi
if readelf -d "$lib/libfabric/libcorevia-fi.so" 2>/dev/null | grep -q 'libcorevia.so.0' ||
   [ ! -e "$tmp"/libfabric-corevia_*.deb ]; then
    ok "libfabric-corevia: the provider needs libcorevia.so.0"
else
    bad "libfabric-corevia: no provider in $lib/libfabric"
fi
ex=$root/usr/share/doc/libcorevia-dev/examples
mkdir -p "$tmp/mk" && cp "$ex"/* "$tmp/mk/" 2>/dev/null
if out=$(PKG_CONFIG_PATH=$lib/pkgconfig make -C "$tmp/mk" 2>&1) &&
   out=$(timeout "$T" "$root/usr/bin/cvia-run" -n 3 -- "$tmp/mk/hello" 2>&1) &&
   grep -q 'hello from rank 2 of 3' <<<"$out"; then
    ok "packaged examples build with pkg-config, hello runs on 3 ranks"
else
    bad "packaged examples with pkg-config: $out"
fi
if out=$(cmake -S "$ex" -B "$tmp/ex" -DCMAKE_PREFIX_PATH="$root/usr" 2>&1) &&
   out=$(cmake --build "$tmp/ex" 2>&1) &&
   out=$(timeout "$T" "$root/usr/bin/cvia-run" -n 3 -- "$tmp/ex/dsm_counter" 2>&1) &&
   grep -q 'counter 300 of 300' <<<"$out"; then
    ok "packaged examples build with find_package, dsm_counter runs on 3 ranks"
else
    bad "packaged examples with find_package: $out"
fi
if out=$(man -M "$root/usr/share/man" cvia-run 2>&1) && grep -q -- '--hosts' <<<"$out"; then
    ok "packaged man page cvia-run renders"
else
    bad "packaged man cvia-run: $(head -3 <<<"$out")"
fi
echo "1..$n"
exit $failed
