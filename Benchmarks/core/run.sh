#!/usr/bin/env bash
# Core benchmark (issue 2): percent escaping, query strings and JSON bodies, the library
# side by side with a plain C loop, libcurl and Python on the same inputs. One table.
#   Benchmarks/core/run.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$root/scripts/install-deps.sh"
lib=$("$root/scripts/build-library.sh" "$root/build/lib" 2>/dev/null)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -std=c99 -Wall -I"$root/include" "$root/Benchmarks/core/bench_core.c" -o "$work/bench_core" \
    -L"$(dirname "$lib")" -lafserialization -lcurl -Wl,-rpath,"$(dirname "$lib")"
{ "$work/bench_core" "$work"; python3 "$root/Benchmarks/core/bench_core_peers.py" "$work"; } > "$work/results.tsv"
python3 - "$work/results.tsv" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print(f"{'benchmark':<22} {'implementation':<26} {'ms':>10} {'MB/s':>10} {'vs afs':>8}")
print("-" * 80)
base = {}
for name, peer, nbytes, sec in rows:
    if peer.startswith("afs"):
        base[name] = float(sec)
for name, peer, nbytes, sec in rows:
    s = float(sec)
    mbs = int(nbytes) / s / 1e6
    ratio = s / base[name] if name in base else float("nan")
    print(f"{name:<22} {peer:<26} {s * 1e3:>10.2f} {mbs:>10.1f} {ratio:>7.2f}x")
print("(MB/s: input bytes for escaping, output bytes for query strings and JSON; 'vs afs': time relative to the library)")
PY
