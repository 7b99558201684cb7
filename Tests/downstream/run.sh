#!/usr/bin/env bash
# Installs the built tree into a scratch prefix and checks it as a consumer would.
#   run.sh find_package|pkg_config|layout BUILD_DIR WORK_DIR
#
#   find_package  a CMake project (Tests/downstream/CMakeLists.txt) finds the installed
#                 package and its program runs
#   pkg_config    main.c built with `pkg-config --cflags --libs afserialization`, once with
#                 an rpath and once run through LD_LIBRARY_PATH (the README's quick start),
#                 also under valgrind with the installed suppressions
#   layout        the installed files: the library 0755 and stripped, its .gnu_debuglink
#                 naming the separate debug file beside it (which has the debug information);
#                 `cmake --install --strip` installs the stripped library without it; the
#                 SONAME links, header, .pc, CMake package and valgrind suppressions
set -euo pipefail
mode=$1 build=$2 work=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libafserialization.so' | head -n 1)")
fail() { echo "downstream $mode: $*" >&2; exit 1; }
case $mode in
  find_package)
    cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
    cmake --build "$work/build" >/dev/null
    "$work/build/downstream"
    ;;
  pkg_config)
    export PKG_CONFIG_PATH=$libdir/pkgconfig
    # shellcheck disable=SC2046
    cc -std=c99 -Wall -Wextra -Werror "$here/main.c" -o "$work/downstream-rpath" \
       $(pkg-config --cflags --libs afserialization) -Wl,-rpath,"$libdir"
    "$work/downstream-rpath"
    # shellcheck disable=SC2046
    cc -std=c99 -Wall -Wextra -Werror "$here/main.c" -o "$work/downstream" \
       $(pkg-config --cflags --libs afserialization)
    if "$work/downstream" >/dev/null 2>&1; then
        fail "a program without rpath found the library without LD_LIBRARY_PATH: is another copy installed system-wide?"
    fi
    LD_LIBRARY_PATH=$libdir "$work/downstream"
    supp=$prefix/share/afserialization/afserialization.supp
    if command -v valgrind >/dev/null; then
        LD_LIBRARY_PATH=$libdir valgrind --quiet --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite,indirect,possible --show-leak-kinds=definite,indirect,possible \
            --suppressions="$supp" "$work/downstream" >/dev/null \
            || fail "valgrind with $supp reported errors or leaks"
        echo "downstream (pkg-config) under valgrind with the installed suppressions: clean"
    fi
    ;;
  layout)
    real=$(readlink -f "$libdir/libafserialization.so")
    name=$(basename "$real")
    [ "$(stat -c %a "$real")" = 755 ] || fail "$real has mode $(stat -c %a "$real"), not 755"
    [ -L "$libdir/libafserialization.so" ] && [ -L "$libdir/$(readelf -d "$real" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" ] \
        || fail "the SONAME and development links are missing"
    sections=$(readelf -S -W "$real")
    grep -qE '\.symtab|\.debug_info' <<<"$sections" && fail "$real is not stripped"
    link=$(readelf -p .gnu_debuglink "$real" 2>/dev/null | sed -n 's/^ *\[ *0\] *//p')
    [ "$link" = "$name.debug" ] || fail "$real's .gnu_debuglink is '$link', not $name.debug"
    [ -f "$libdir/$link" ] || fail "the debug file $libdir/$link is not installed"
    readelf -S -W "$libdir/$link" | grep -q '\.debug_info' || fail "$libdir/$link has no debug information"
    readelf -S -W "$libdir/$link" | grep -q '\.symtab' || fail "$libdir/$link has no symbol table"
    for f in include/afserialization.h share/afserialization/afserialization.supp; do
        [ -f "$prefix/$f" ] || fail "$prefix/$f is not installed"
    done
    [ -f "$libdir/pkgconfig/afserialization.pc" ] || fail "afserialization.pc is not installed"
    [ -f "$libdir/cmake/AFSerialization/AFSerializationConfig.cmake" ] || fail "the CMake package is not installed"
    full=$(stat -c %s "$real") debug=$(stat -c %s "$libdir/$link")
    # --strip: stripped, no debug link and no debug file
    cmake --install "$build" --prefix "$work/stripped" --strip >/dev/null
    sreal=$(readlink -f "$(find "$work/stripped" -name 'libafserialization.so' | head -n 1)")
    [ "$(stat -c %a "$sreal")" = 755 ] || fail "--strip: $sreal has mode $(stat -c %a "$sreal")"
    readelf -S -W "$sreal" | grep -qE '\.symtab|\.debug_info|\.gnu_debuglink' && fail "--strip: $sreal keeps symbols or a debug link"
    [ ! -e "$sreal.debug" ] || fail "--strip installed $sreal.debug"
    echo "installed layout: $name $((full / 1024)) KiB (0755, stripped, .gnu_debuglink -> $link, $((debug / 1024)) KiB); --strip: $(($(stat -c %s "$sreal") / 1024)) KiB, no debug file"
    ;;
  *) echo "run.sh: unknown mode $mode" >&2; exit 2 ;;
esac
