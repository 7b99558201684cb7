#!/usr/bin/env bash
# The main job: builds the library and the curl example, starts a local HTTP server on
# 127.0.0.1, prints a GET, a form POST, a JSON POST and a plist PUT as they go on the wire
# and what the server parsed, then uploads a generated file as multipart/form-data from C
# (libcurl over afs_body_stream_read/seek) and from Python (requests, with a progress bar),
# checks what arrived, stops the server and ends with the verdict of every check. A line
# per stage (with the seconds it took) says what it is doing while it installs and builds.
#   scripts/demo.sh [--size-mib N] [--url BASE]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
started=$SECONDS
stage() { echo "demo: [$1/4] $2 (at ${SECONDS}s)" >&2; }
stage 1 "installing what is missing: Debian packages, the .venv/ Python environment (scripts/install-deps.sh)"
"$root/scripts/install-deps.sh"
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"          # the project's virtual environment: python3, cmake
stage 2 "configuring the build (cmake -S . -B build)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
stage 3 "building libafserialization.so with SwiftPM and the C examples (a first build takes minutes; SwiftPM prints [n/m] steps)"
cmake --build build -j2 --target upload_with_curl print_requests get_with_socket >&2
# the Python package's compiled module, beside its sources (without it the package runs its
# pure-Python loops)
python3 bindings/python/build_speedups.py >/dev/null || echo "demo: the Python package runs without its compiled module" >&2
stage 4 "running the demo (built in $((SECONDS - started)) s)"
export AFSERIALIZATION_LIBRARY="$root/build/lib/libafserialization.so"
export AFS_UPLOAD_WITH_CURL="$root/build/upload_with_curl"
export AFS_GET_WITH_SOCKET="$root/build/get_with_socket"
exec python3 "$root/scripts/demo.py" "$@"
