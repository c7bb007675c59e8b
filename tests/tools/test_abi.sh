#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The ABI (issue 15): each shared library exports exactly the functions its
# public headers declare, each at a version node CVIA_1.N of its map
# file (CVIA_1.0, then one node per release that added functions), under
# SONAME .so.0; the
# public headers compile alone as strict C11 and as C++17.
#   test_abi.sh SOURCE_DIR LIBCOREVIA LIBCOREVIA_DSM [LIBCOREVIA_FI]
set -u
src=$1 core=$2 dsm=$3 fi=${4:-}
inc=$src/include
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok()  { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; failed=1; }
CC=${CC:-cc} CXX=${CXX:-c++}

# What the headers declare, as the compiler sees it (-aux-info lists every
# prototype with its file); static inline helpers are not part of the ABI.
declared() {   # declared OUT HEADER FILE-REGEX [CFLAGS...]
    local out=$1 hdr=$2 re=$3
    shift 3
    printf '#include <corevia/%s>\n' "$hdr" >"$tmp/decl.c"
    if ! "$CC" -std=c11 "$@" -I"$inc" -aux-info "$tmp/aux" -fsyntax-only "$tmp/decl.c"; then
        return 1
    fi
    grep -E "^/\\* [^ ]*include/corevia/($re)\\.h:" "$tmp/aux" | grep -v ' static ' |
        sed -E 's/^.* \**([A-Za-z_][A-Za-z0-9_]*) \(.*$/\1/' | sort -u >"$out"
}
exported() {   # exported OUT LIB: defined dynamic symbols, without version nodes
    nm -D --defined-only "$2" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u >"$1"
}
compare() {    # compare NAME LIB HEADER REGEX
    local name=$1 lib=$2
    if ! declared "$tmp/$name.decl" "$3" "$4"; then
        bad "$name: $3 does not compile"
        return
    fi
    exported "$tmp/$name.exp" "$lib"
    local nd ne
    nd=$(wc -l <"$tmp/$name.decl") ne=$(wc -l <"$tmp/$name.exp")
    if [ "$nd" -gt 0 ] && cmp -s "$tmp/$name.decl" "$tmp/$name.exp"; then
        ok "$name: exports exactly the $nd functions its headers declare"
    else
        bad "$name: exported ($ne) and declared ($nd) differ (< declared only, > exported only):
$(diff "$tmp/$name.decl" "$tmp/$name.exp" | grep '^[<>]')"
    fi
    # every export at CVIA_1.0 but those added later, at the node named
    # for them (NAME@CVIA_1.1 ...): a released node never changes
    local unversioned
    unversioned=$(nm -D --defined-only --with-symbol-versions "$lib" |
                  awk -v later="${5:-}" 'BEGIN { n = split(later, l, " ")
                          for (i = 1; i <= n; i++) { full[l[i]] = 1; b = l[i]; sub(/@.*/, "", b); base[b] = 1 } }
                      $2 != "A" { s = $3; sub(/@@/, "@", s); b = s; sub(/@.*/, "", b)
                                  if (b in base) { if (!(s in full)) print $3 }
                                  else if (s !~ /@CVIA_1\.0$/) print $3 }')
    if [ -z "$unversioned" ]; then
        ok "$name: every export is at version CVIA_1.0${5:+, and $5}"
    else
        bad "$name: exports at the wrong version node: $unversioned"
    fi
    local soname
    soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    if [ "$soname" = "$(basename "${lib%%.so*}").so.0" ]; then
        ok "$name: SONAME $soname"
    else
        bad "$name: SONAME '$soname', expected $(basename "${lib%%.so*}").so.0"
    fi
}

compare libcorevia "$core" corevia.h 'corevia|cvia_errno' \
    'cvia_addr@CVIA_1.1 cvia_connect@CVIA_1.1 cvia_imm_block@CVIA_1.1 cvia_imm_kick@CVIA_1.1 cvia_imm_kicks@CVIA_1.1 cvia_input_wait@CVIA_1.1 cvia_provider_cleanup@CVIA_1.1 cvia_provider_info@CVIA_1.1 cvia_var_check@CVIA_1.1 cvia_var_info@CVIA_1.1 cvia_var_register@CVIA_1.1 cvia_var_unregister@CVIA_1.1 cvia_inbox_close@CVIA_1.2 cvia_inbox_open@CVIA_1.2 cvia_inbox_poll@CVIA_1.2 cvia_inbox_release@CVIA_1.2 cvia_inject@CVIA_1.2 cvia_inbox_progress@CVIA_1.3'
compare libcorevia_dsm "$dsm" parmacs.h 'dsm|parmacs'

# The DSM library's undefined corevia symbols must all be libcorevia's API
# (the C library's own, such as shm_open@GLIBC_2.34, are not corevia's).
nm -D --undefined-only "$dsm" | awk '{ print $2 }' | grep -v '@GLIBC_' |
    grep -E '^(cvia|dsm|shm|tcp)' | sed 's/@.*//' |
    sort -u >"$tmp/dsm.need"
missing=$(comm -23 "$tmp/dsm.need" "$tmp/libcorevia.exp")
if [ -z "$missing" ]; then ok "libcorevia_dsm needs nothing of libcorevia beyond its API"
else bad "libcorevia_dsm needs non-API symbols: $missing"; fi

if [ -n "$fi" ]; then
    exp=$(nm -D --defined-only "$fi" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | tr '\n' ' ')
    if [ "$exp" = "fi_prov_ini " ]; then ok "libcorevia-fi exports fi_prov_ini only"
    else bad "libcorevia-fi exports: $exp"; fi
fi

# Every public header alone, strict C11 and C++17; parmacs.h in both modes.
strict=(-Wall -Wextra -pedantic -Werror)
for h in "$inc"/corevia/*.h; do
    hn=$(basename "$h")
    for mode in "" -DCVIA_PARMACS_NULL -DCVIA_PARMACS_THREADS; do
        [ -n "$mode" ] && [ "$hn" != parmacs.h ] && continue
        printf '#include <corevia/%s>\n#include <corevia/%s>\nint main(void) { return 0; }\n' \
            "$hn" "$hn" >"$tmp/h.c"
        if out=$("$CC" -std=c11 "${strict[@]}" $mode -I"$inc" -c "$tmp/h.c" -o "$tmp/h.o" 2>&1); then
            ok "$hn${mode:+ $mode}: -std=c11 ${strict[*]}"
        else
            bad "$hn${mode:+ $mode}: -std=c11 ${strict[*]}: $out"
        fi
        cp "$tmp/h.c" "$tmp/h.cc"
        if out=$("$CXX" -std=c++17 "${strict[@]}" $mode -I"$inc" -c "$tmp/h.cc" -o "$tmp/h.o" 2>&1); then
            ok "$hn${mode:+ $mode}: -std=c++17 ${strict[*]}"
        else
            bad "$hn${mode:+ $mode}: -std=c++17 ${strict[*]}: $out"
        fi
    done
done

# C++ sees C linkage: a declaration's symbol is the plain C name.
printf '#include <corevia/parmacs.h>\nvoid *f(void) { return (void *)&cvia_init; }\nvoid *g(void) { return (void *)&cvia_dsm_init; }\nvoid *h(void) { return (void *)&cvia_parmacs_init; }\n' >"$tmp/l.cc"
if "$CXX" -std=c++17 -I"$inc" -c "$tmp/l.cc" -o "$tmp/l.o" &&
   [ "$(nm -u "$tmp/l.o" | awk '{ print $2 }' | grep -c -E '^cvia_(init|dsm_init|parmacs_init)$')" = 3 ]; then
    ok "C++ refers to cvia_init, cvia_dsm_init, cvia_parmacs_init unmangled (extern \"C\")"
else
    bad "C++ mangles the API's names: $(nm -u "$tmp/l.o" 2>&1 | tr '\n' ' ')"
fi
echo "1..$n"
exit $failed
