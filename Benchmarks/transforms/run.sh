#!/usr/bin/env bash
# Body transforms benchmark (issue 22): one table, every row in the same run on the same
# file (base64 text of random bytes: compresses like real-world text, about 0.76 with gzip -1).
#   Benchmarks/transforms/run.sh [--size MiB]     (default 256 MiB; the issue's figure is
#                                                   1024: --size 1024)
# Rows: the library's chunked write_to_fd of a file part to a TCP socket vs its plain
# length-framed path; gzip level 1 / zstd level 1 streaming compression of the body vs the
# gzip -1 / zstd -1 commands on the same file; a SHA-256 trailer digest while streaming to a
# socket vs sha256sum. Each row is its own process; RSS growth is the library process's
# peak RSS minus its RSS before the work (peers: their peak RSS, /usr/bin/time).
# The file is read from the page cache (one warm-up read first).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$root/scripts/install-deps.sh"
. "$root/scripts/env.sh"   # the project's python3 and cmake
here="$root/Benchmarks/transforms"
size=256
if [ "${1:-}" = --size ]; then size=$2; fi
lib=$("$root/scripts/build-library.sh" "$root/build/lib" 2>/dev/null)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -std=c99 -Wall -I"$root/include" "$here/bench_transforms.c" -o "$work/bench" \
    -L"$(dirname "$lib")" -lafserialization -lpthread -Wl,-rpath,"$(dirname "$lib")"
set +o pipefail  # head stops base64 early (SIGPIPE)
head -c $((size * 1024 * 1024 * 3 / 4)) /dev/urandom | base64 -w 76 | head -c $((size * 1024 * 1024)) >"$work/data.txt"
set -o pipefail
cat "$work/data.txt" >/dev/null

peer() {  # seconds and peak RSS (KiB) of a command
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null
    cat "$work/time"
}
lib_row() { "$work/bench" "$1" "$work/data.txt"; }

read -r _ plain_s bytes plain_rss < <(lib_row plain)
read -r _ chunked_s _ chunked_rss < <(lib_row chunked)
read -r _ gzip_s _ gzip_rss < <(lib_row gzip1)
read -r gzip_peer_s gzip_peer_rss < <(peer gzip -1 -c "$work/data.txt")
read -r _ zstd_s _ zstd_rss < <(lib_row zstd1)
read -r zstd_peer_s zstd_peer_rss < <(peer zstd -1 -q -c "$work/data.txt")
read -r _ sha_s _ sha_rss < <(lib_row sha256)
read -r sha_peer_s sha_peer_rss < <(peer sha256sum "$work/data.txt")

mb=$(awk -v b="$bytes" 'BEGIN { printf "%.0f", b / 1048576 }')
echo "Body transforms, one $mb MiB file part ($(nproc) cores; MiB/s of the file's bytes)"
printf '%-44s %10s  %-28s %10s  %7s  %s\n' "library row" "MiB/s" "peer" "MiB/s" "ratio" "RSS growth"
row() {  # name lib_s peer_name peer_s rss_kb
    awk -v n="$1" -v a="$2" -v p="$3" -v b="$4" -v r="$5" -v mb="$mb" 'BEGIN {
        la = mb / a; pb = mb / b;
        printf "%-44s %10.0f  %-28s %10.0f  %6.2fx  %.1f MiB\n", n, la, p, pb, la / pb, r / 1024 }'
}
row "chunked write_to_fd -> TCP socket" "$chunked_s" "length-framed write_to_fd" "$plain_s" "$chunked_rss"
row "gzip level 1 while streaming" "$gzip_s" "gzip -1 (same file)" "$gzip_peer_s" "$gzip_rss"
row "zstd level 1 while streaming" "$zstd_s" "zstd -1 (same file)" "$zstd_peer_s" "$zstd_rss"
row "SHA-256 trailer digest, chunked -> socket" "$sha_s" "sha256sum (same file)" "$sha_peer_s" "$sha_rss"
echo "(length-framed row: $(awk -v a="$plain_s" -v mb="$mb" 'BEGIN { printf "%.0f MiB/s", mb / a }'), RSS growth $(awk -v r="$plain_rss" 'BEGIN { printf "%.1f MiB", r / 1024 }'); peers' peak RSS: gzip $((gzip_peer_rss / 1024)) MiB, zstd $((zstd_peer_rss / 1024)) MiB, sha256sum $((sha_peer_rss / 1024)) MiB)"
