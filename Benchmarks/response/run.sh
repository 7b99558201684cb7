#!/usr/bin/env bash
# Response benchmark (issue 6): decoding a 10 MB JSON document with afs_response_object
# (JSON serializer, Content-Type application/json) beside Python's json.loads and
# orjson.loads on the same bytes. One table.
#   Benchmarks/response/run.sh [RUNS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/Benchmarks/response"
runs=${1:-7}
"$root/scripts/install-deps.sh"   # orjson among the rest, into the project's environment
. "$root/scripts/env.sh"
lib=$("$root/scripts/build-library.sh" "$root/build/lib" 2>/dev/null)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -std=c99 -Wall -I"$root/include" "$here/bench_response.c" -o "$work/bench_response" \
    -L"$(dirname "$lib")" -lafserialization -Wl,-rpath,"$(dirname "$lib")"
python3 "$here/make_document.py" "$work/doc.json"
{ "$work/bench_response" "$work/doc.json" "$runs"; python3 "$here/bench_response_peers.py" "$work/doc.json" "$runs"; } > "$work/results.tsv"
python3 - "$work/results.tsv" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
t = {peer: float(sec) for _, peer, _, sec in rows}
base = t["afs_response_object"]
print(f"{'benchmark':<18} {'implementation':<22} {'ms':>9} {'MB/s':>9} {'vs afs':>8}")
print("-" * 70)
for name, peer, nbytes, sec in rows:
    s = float(sec)
    print(f"{name:<18} {peer:<22} {s * 1e3:>9.2f} {int(nbytes) / s / 1e6:>9.1f} {s / base:>7.2f}x")
print(f"(best of the runs; document {int(rows[0][2]) / 1e6:.1f} MB; 'vs afs': time relative to afs_response_object)")
goals = []
if "json.loads" in t:
    goals.append(f"at least as fast as json.loads: {'yes' if base <= t['json.loads'] else 'NO'} ({t['json.loads'] / base:.2f}x)")
if "orjson.loads" in t:
    goals.append(f"within 2x of orjson.loads: {'yes' if base <= 2 * t['orjson.loads'] else 'NO'} ({base / t['orjson.loads']:.2f}x its time)")
print("; ".join(goals))
PY
