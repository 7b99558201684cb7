#!/usr/bin/env bash
# XML benchmark (issue 24): the library's event pass and JsonML tree beside expat and
# libxml2's SAX interface, on a 10 MB document of many small elements and one of long text
# runs, in the same run. One table: best of 5, MB/s, ratio to expat, and tree / events.
#   Benchmarks/xml/run.sh
# Needs libexpat1-dev and libxml2-dev (scripts/install-deps.sh installs them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$root/scripts/install-deps.sh"
. "$root/scripts/env.sh"   # the project's python3 and cmake
here="$root/Benchmarks/xml"
lib=$("$root/scripts/build-library.sh" "$root/build/lib" 2>/dev/null)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -std=c99 -Wall -I"$root/include" $(pkg-config --cflags libxml-2.0) "$here/bench_xml.c" -o "$work/bench_xml" \
    -L"$(dirname "$lib")" -lafserialization -lexpat $(pkg-config --libs libxml-2.0) -Wl,-rpath,"$(dirname "$lib")"
python3 "$here/make_docs.py" "$work"
"$work/bench_xml" "$work/small-elements.xml" "$work/long-text.xml"
