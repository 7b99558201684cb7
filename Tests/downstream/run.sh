#!/usr/bin/env bash
# Installs the built tree into a scratch prefix and builds Tests/downstream against it.
#   run.sh find_package|pkg_config BUILD_DIR WORK_DIR
set -euo pipefail
mode=$1 build=$2 work=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libafserialization.so' | head -n 1)")
case $mode in
  find_package)
    cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
    cmake --build "$work/build" >/dev/null
    "$work/build/downstream"
    ;;
  pkg_config)
    export PKG_CONFIG_PATH=$libdir/pkgconfig
    # shellcheck disable=SC2046
    cc -std=c99 -Wall -Wextra -Werror "$here/main.c" -o "$work/downstream" \
       $(pkg-config --cflags --libs afserialization) -Wl,-rpath,"$libdir"
    "$work/downstream"
    ;;
  *) echo "run.sh: unknown mode $mode" >&2; exit 2 ;;
esac
