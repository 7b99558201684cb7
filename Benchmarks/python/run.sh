#!/usr/bin/env bash
# Runs one Python benchmark as the README shows it, with what it needs set up: the
# project's tools (scripts/install-deps.sh, then its python3 first on PATH), the library
# built (scripts/build-library.sh, reused when up to date) and the package from this
# checkout.
#   Benchmarks/python/run.sh bench_table.py|bench.py|bench_response.py [ARGS...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 bench_table.py|bench.py|bench_response.py [ARGS...]" >&2; exit 2; }
script=$root/Benchmarks/python/$(basename "$1")
shift
[ -f "$script" ] || { echo "run.sh: no benchmark $script" >&2; exit 2; }
"$root/scripts/install-deps.sh"
. "$root/scripts/env.sh"
lib=$("$root/scripts/build-library.sh" "$root/build/lib" 2>/dev/null)
export AFSERIALIZATION_LIBRARY=${AFSERIALIZATION_LIBRARY:-$lib}
export PYTHONPATH="$root/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
exec python3 "$script" "$@"
