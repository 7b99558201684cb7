#!/usr/bin/env bash
# The main job: builds the library and shows real requests as they go on the wire.
#   scripts/demo.sh [BASE_URL]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
"$root/scripts/install-deps.sh"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target print_requests >&2
exec build/print_requests "$@"
