#!/usr/bin/env bash
# Multipart benchmark (issue 3): draining a body with a 1 GiB file part through
# afs_body_stream_read against a plain read(2) loop and requests-toolbelt, and
# afs_body_stream_write_to_fd against cp, with peak RSS. One table.
#   Benchmarks/multipart/run.sh [--size-mib N] [--runs N] [--dir DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$root/scripts/install-deps.sh"
. "$root/scripts/env.sh"   # the project's python3 (with requests-toolbelt, orjson …) and cmake
lib=$("$root/scripts/build-library.sh" "$root/build/lib" 2>/dev/null)
exec python3 "$root/Benchmarks/multipart/run.py" --lib "$lib" "$@"
