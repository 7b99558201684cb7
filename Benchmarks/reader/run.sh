#!/usr/bin/env bash
# Response reader benchmark (issue 21): 100,000 small keep-alive responses and one large
# chunked response (1 GiB by default), gzip and zstd decoding, the library from C against
# memcpy and the gzip/zstd command-line tools, and from Python against llhttp (through
# httptools) and h11, in one run, one table (Benchmarks/reader/run.py says what each row is).
#   Benchmarks/reader/run.sh [--chunked-mib N] [--py-chunked-mib N]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/Benchmarks/reader"
"$root/scripts/install-deps.sh"
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"
lib=$("$root/scripts/build-library.sh" "$root/build/lib" 2>/dev/null)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -std=gnu99 -Wall -I"$root/include" "$here/bench_reader.c" -o "$work/bench_reader" \
    -L"$(dirname "$lib")" -lafserialization -Wl,-rpath,"$(dirname "$lib")"
export AFSERIALIZATION_LIBRARY="$lib"
export PYTHONPATH="$root/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
python3 "$here/run.py" "$work" "$work/bench_reader" "$@"
