#!/usr/bin/env bash
# Core benchmark (issues 2 and 15): percent escaping, query strings, JSON parsing and JSON
# writing, the library side by side with its peers on the same inputs in the same run:
# a C table loop, a C branchless loop, memcpy, libcurl and urllib for escaping; simdjson
# (DOM), cJSON, jansson, orjson and Python's json for JSON. One table, then the issue 15
# targets with the ratios this run measured.
#   Benchmarks/core/run.sh [--baseline LIBDIR]
# --baseline LIBDIR also times another build of the library (a directory holding its
# libafserialization.so, e.g. one built from main by scripts/build-library.sh DIR) in the
# same run; its rows are named "afs LIBDIR".
# The C peers come from Debian's libsimdjson-dev, libcjson-dev, libjansson-dev and
# libcurl4-openssl-dev, installed with apt-get when missing.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/Benchmarks/core"
baseline=
if [ "${1:-}" = --baseline ]; then baseline=$(cd "$2" && pwd); fi
"$root/scripts/install-deps.sh"
. "$root/scripts/env.sh"   # the project's python3 (with requests-toolbelt, orjson …) and cmake
missing=
for p in libsimdjson-dev libcjson-dev libjansson-dev libcurl4-openssl-dev; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q $missing >&2
fi
lib=$("$root/scripts/build-library.sh" "$root/build/lib" 2>/dev/null)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -std=c99 -Wall -I"$root/include" "$here/bench_core.c" -o "$work/bench_core" \
    -L"$(dirname "$lib")" -lafserialization -lcurl -lcjson -ljansson -Wl,-rpath,"$(dirname "$lib")"
g++ -O2 -std=c++17 "$here/bench_simdjson.cpp" -o "$work/bench_simdjson" -lsimdjson
python3 "$root/Benchmarks/response/make_document.py" "$work/doc.json"
python3 "$here/make_shapes.py" "$work"
{
    "$work/bench_core" "$work"
    if [ -n "$baseline" ]; then LD_LIBRARY_PATH="$baseline" "$work/bench_core" "$work" "$baseline"; fi
    "$work/bench_simdjson" "$work"
    python3 "$here/bench_core_peers.py" "$work"
} > "$work/results.tsv"
python3 - "$work/results.tsv" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
order = []
for name, *_ in rows:
    if name not in order:
        order.append(name)
sec = {(name, peer): float(s) for name, peer, _, s in rows}
base = {}  # the first library row of each benchmark: the build under test
for name, peer, _, s in rows:
    if peer.startswith("afs") and name not in base:
        base[name] = float(s)
print(f"{'benchmark':<26} {'implementation':<32} {'ms':>9} {'MB/s':>9} {'vs afs':>8}")
print("-" * 88)
for name in order:
    for n, peer, nbytes, s in rows:
        if n != name:
            continue
        s = float(s)
        ratio = s / base[name] if name in base else float("nan")
        print(f"{name:<26} {peer:<32} {s * 1e3:>9.2f} {int(nbytes) / s / 1e6:>9.1f} {ratio:>7.2f}x")
print("(best of 5 runs for escaping and query strings, 7 for JSON; MB/s: input bytes for escaping and")
print(" parsing, output bytes for query strings and writing; 'vs afs': time relative to the library's")
print(" first row, so above 1 means the library is faster)")
print()
print("issue 15 targets (peer time / library time, from this run):")
def ratio(name, peer):
    a, b = base.get(name), sec.get((name, peer))
    return None if a is None or b is None else b / a
def goal(text, name, peer, need, extra=""):
    r = ratio(name, peer)
    if r is None:
        print(f"  {text}: not measured ({peer} missing)")
        return
    print(f"  {text}: {r:.2f}x {peer} (target {need}x) {'met' if r >= need else 'MISSED'}{extra}")
for kind in ("ascii", "mixed"):
    name = f"escape_{kind}_64MiB"
    gbs = 64 * 2**20 / base[name] / 1e9
    if kind == "ascii":
        goal("ASCII escaping vs the C table loop", name, "C table loop -O2", 2.0, f"; {gbs:.2f} GB/s (target 4) {'met' if gbs >= 4 else 'MISSED'}")
    else:
        goal("mixed escaping vs the C branchless loop", name, "C branchless loop -O2", 1.0, f"; {gbs:.2f} GB/s")
def goal_reused(text, name, mine, peer, need):
    a, b = sec.get((name, mine)), sec.get((name, peer))
    if a is None or b is None:
        print(f"  {text}: not measured")
        return
    r = b / a
    print(f"  {text}: {r:.2f}x {peer} (target {need}x) {'met' if r >= need else 'MISSED'}")
for doc in ("doc_10MB", "small_objects", "long_strings"):
    # Issue 23: both sides reusing their parser (afs_json_parser against simdjson's).
    goal_reused(f"parse {doc}, afs_json_parser vs simdjson DOM (both reused)", f"parse_{doc}",
                "afs_json_parser_parse (reused)", "simdjson DOM (parser reused)", 1.0)
    goal(f"parse {doc} vs simdjson DOM (new parser)", f"parse+free_{doc}", "simdjson DOM, new parser", 1.0, " (parse+free rows)")
goal("parse+free doc_10MB vs cJSON", "parse+free_doc_10MB", "cJSON parse + cJSON_Delete", 3.0)
goal("write doc_10MB vs orjson.dumps", "write_doc", "orjson.dumps", 1.0)
PY

# Decode + full walk, peak resident memory (issue 19): one process per measurement, the
# library through afs_response_object and the getters (afs_value_count / _at / _key_at /
# _get and the scalar getters), Python through json.loads and a walk of every value.
echo
echo "decode + full walk, peak RSS above the process's start (body included; issue 19 bound: 10 x body + 8 MiB)"
printf '%-22s %9s %12s %12s %12s %8s\n' document "body MiB" "afs MiB" "json.loads" "bound MiB" "afs"
echo "------------------------------------------------------------------------------------"
for file in doc.json walk_array_16MB.json walk_object_16MB.json; do
    IFS=$'\t' read -r bytes afs_kib _ < <("$work/bench_core" --walk-rss "$work/$file")
    IFS=$'\t' read -r _ py_kib _ < <(python3 "$here/bench_core_peers.py" --walk-rss "$work/$file")
    awk -v f="$file" -v b="$bytes" -v a="$afs_kib" -v p="$py_kib" 'BEGIN {
        bound = (10 * b + 8 * 1048576) / 1048576
        printf "%-22s %9.1f %12.1f %12.1f %12.1f %8s\n", f, b / 1048576, a / 1024, p / 1024, bound, (a / 1024 < bound ? "met" : "MISSED") }'
done
