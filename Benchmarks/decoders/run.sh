#!/usr/bin/env bash
# Decoder benchmark (issue 26): one table, same run.
#   Benchmarks/decoders/run.sh          (BENCH_MB=1024 by default: the file part's size)
# Rows: a body with one file part of BENCH_MB MiB, and a body of 10,000 small fields, parsed
# by the C push parser (in memory, fed in 1 MiB pieces) and Go's mime/multipart (Debian's
# golang, Tests/go/multipartcheck -bench: the body read into memory first, then NextPart and
# io.Copy to io.Discard); from Python by MultipartParser (data dropped, and spooled as
# iter_multipart gives it), python-multipart and streaming-form-data (Cython), each in its own
# process with its peak RSS; then 100,000 query parameters, flat (k<i>=value<i>) and nested
# (users[][name]=..., as the library writes an array of dictionaries), by afs_query_parse
# and afs_query_parse_pickle (C), parse_query (Python) and urllib.parse.parse_qs (which
# does not nest: a flat dict of lists), and for the flat query the CPython floor
# (query_floor.c: the result's str and dict made through the C API with no parser, the
# least any Python parser returning them can take). Best of 3 for C and Go, best of
# BENCH_PY_RUNS (default 1) processes for Python.
# Python rows use the package's compiled module (bindings/python/build_speedups.py); the
# "afs-pure" and "parse_query pure" rows run the same with AFSERIALIZATION_PURE_PYTHON=1.
# Every Python multipart row reads the body from its file in 1 MiB pieces; the "Python read
# only" row is that loop alone, and the "over read" column is each Python row's time minus
# it: what the parser costs on top of getting the bytes; "Python read + file write" writes
# each piece to a temporary file without parsing, the floor of afs-spooled on the big body
# (bench_decoders_py.py says what each row does).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/Benchmarks/decoders"
mb=${BENCH_MB:-1024}
"$root/scripts/install-deps.sh"
. "$root/scripts/env.sh"   # the project's python3 and cmake
lib=$("$root/scripts/build-library.sh" "$root/build/lib" 2>/dev/null)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -std=c99 -Wall -I"$root/include" "$here/bench_decoders.c" -o "$work/bench_decoders" \
    -L"$(dirname "$lib")" -lafserialization -Wl,-rpath,"$(dirname "$lib")"
(cd "$root/Tests/go/multipartcheck" && GOCACHE="$work/gocache" GOPATH="$work/gopath" GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local go build -o "$work/gobench" .)
boundary=$(python3 "$here/make_bodies.py" "$work" $((mb << 20)))
ct="multipart/form-data; boundary=$boundary"
export AFSERIALIZATION_LIBRARY="$lib"
export PYTHONPATH="$root/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
py=${AFS_VENV:-$root/.venv}/bin/python
[ -x "$py" ] || py=python3
# the package's compiled module, beside its sources (the "pure" rows run with
# AFSERIALIZATION_PURE_PYTHON=1, without it)
"$py" "$root/bindings/python/build_speedups.py" >/dev/null
# the floor of the flat query row: CPython making the result's objects, no parser
gcc -O2 -std=c99 -Wall -Werror -shared -fPIC -I"$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
    "$here/query_floor.c" -o "$work/query_floor.abi3.so"
row() { printf '%-22s %-26s %10s %10s %12s %10s\n' "$@"; }
pyruns=${BENCH_PY_RUNS:-1}
# best of $pyruns processes: prints "<seconds> <peak RSS KiB>" of the fastest
pybest() {
    local best="" rss="" s r
    for _ in $(seq "$pyruns"); do
        read -r s r < <("$py" "$here/bench_decoders_py.py" "$@")
        if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; rss=$r; fi
    done
    echo "$best $rss"
}
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a - b }'; }
rate() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.2f GB/s", b / s / 1e9 }'; }
echo "decoders benchmark: file part $mb MiB, 10,000 fields, 100,000 query parameters ($(nproc) cores, $(date -u +%F))"
row input parser seconds rate "peak RSS" "over read"
for input in big fields; do
    body="$work/$input.body"
    size=$(stat -c %s "$body")
    read -r _ _ s < <("$work/bench_decoders" multipart "$body" "$ct")
    row "$input ($((size >> 20)) MiB)" "C afs push parser" "$s" "$(rate "$size" "$s")" "-"
    read -r _ _ s < <("$work/gobench" -bench "$ct" "$body")
    row "" "Go mime/multipart" "$s" "$(rate "$size" "$s")" "-"
    read -r base rss < <(pybest read-only "$body" "$ct")
    row "" "Python read only" "$base" "$(rate "$size" "$base")" "$((rss >> 10)) MiB" "-"
    read -r s rss < <(pybest read-write "$body" "$ct")
    row "" "Python read + file write" "$s" "$(rate "$size" "$s")" "$((rss >> 10)) MiB" "$(minus "$s" "$base")"
    for peer in afs afs-pure afs-spooled python-multipart streaming-form-data; do
        if [ "$peer" = streaming-form-data ] && ! "$py" -c "import streaming_form_data" 2>/dev/null; then
            row "" "$peer" "not installed" "" "" ""; continue
        fi
        if [ "$peer" = afs-pure ]; then
            read -r s rss < <(AFSERIALIZATION_PURE_PYTHON=1 pybest afs "$body" "$ct")
        else
            read -r s rss < <(pybest "$peer" "$body" "$ct")
        fi
        row "" "Python $peer" "$s" "$(rate "$size" "$s")" "$((rss >> 10)) MiB" "$(minus "$s" "$base")"
    done
done
for q in "$work/query.txt" "$work/query_nested.txt"; do
    read -r _ _ s < <("$work/bench_decoders" query "$q")
    n=$(( $(tr -cd '&' <"$q" | wc -c) + 1 ))
    label="query ($n params)"
    [ "$q" = "$work/query_nested.txt" ] && label="nested ($n params)"
    row "$label" "C afs_query_parse" "$s" "-" "-" "-"
    read -r _ _ s < <("$work/bench_decoders" query-pickle "$q")
    row "" "C afs_query_parse_pickle" "$s" "-" "-" "-"
    read -r s rss < <(pybest query-afs "$q")
    row "" "Python parse_query" "$s" "-" "$((rss >> 10)) MiB" "-"
    read -r s rss < <(AFSERIALIZATION_PURE_PYTHON=1 pybest query-afs "$q")
    row "" "Python parse_query pure" "$s" "-" "$((rss >> 10)) MiB" "-"
    read -r s rss < <(pybest query-parse_qs "$q")
    row "" "Python parse_qs" "$s" "-" "$((rss >> 10)) MiB" "-"
    if [ "$q" = "$work/query.txt" ]; then
        read -r s rss < <(BENCH_FLOOR_DIR="$work" pybest query-floor "$q")
        row "" "CPython floor (no parser)" "$s" "-" "$((rss >> 10)) MiB" "-"
    fi
done
