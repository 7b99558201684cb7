#!/usr/bin/env bash
# Installs what the build, the demo and the tests need — only what is missing, so a second
# run does nothing: Debian packages (cmake, pkg-config, valgrind, libcurl headers) with one
# `apt-get update`, then Python packages with pip.
set -euo pipefail

debs=()
command -v cmake >/dev/null 2>&1 || debs+=(cmake)
command -v pkg-config >/dev/null 2>&1 || debs+=(pkg-config)
command -v valgrind >/dev/null 2>&1 || debs+=(valgrind)
command -v gcc >/dev/null 2>&1 || debs+=(gcc)
command -v g++ >/dev/null 2>&1 || debs+=(g++)
[ -e /usr/include/curl/curl.h ] || [ -e "/usr/include/$(gcc -dumpmachine 2>/dev/null)/curl/curl.h" ] || debs+=(libcurl4-openssl-dev)
if [ ${#debs[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "install-deps: apt-get install ${debs[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${debs[@]}" >/dev/null
fi

# "import-name pip-name" pairs for the tests, the demo and the benchmarks.
py=()
while read -r module package; do
    [ -n "$module" ] || continue
    python3 -c "import $module" >/dev/null 2>&1 || py+=("$package")
done <<'LIST'
pytest pytest
werkzeug werkzeug
requests requests
urllib3 urllib3
multipart multipart
python_multipart python-multipart
requests_toolbelt requests-toolbelt
orjson orjson
LIST
if [ ${#py[@]} -gt 0 ]; then
    echo "install-deps: pip install ${py[*]}" >&2
    python3 -m pip install -q --disable-pip-version-check "${py[@]}"
fi
