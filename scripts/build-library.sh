#!/usr/bin/env bash
# Builds the shipped library: release mode, Swift runtime linked statically
# (-static-stdlib, so `ldd` lists no libswift*), only afs_* exported (version script),
# SONAME libafserialization.so.MAJOR, linked by lld (gold keeps ten local Swift type
# metadata symbols in .dynsym, for GOT entries; lld resolves those locally, so `nm -D`
# lists the afs_* functions and the imports only). The C target's debug information is DWARF 4, which
# valgrind reads (clang's default DWARF 5 makes it give up on the library).
#
#   scripts/build-library.sh [OUTDIR]      default OUTDIR: build/lib
#
# Leaves OUTDIR/libafserialization.so.MAJOR.MINOR.PATCH plus the .so.MAJOR and .so links.
# SwiftPM's scratch folder is .build-release (override with AFS_SCRATCH).
# AFS_GLIBC_COMPAT=0 leaves the old-glibc bindings out (see glibc_compat.c).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/build/lib}
scratch=${AFS_SCRATCH:-$root/.build-release}

ver() { sed -n "s/^#define AFS_VERSION_$1 \([0-9]*\)$/\1/p" "$root/include/afserialization.h"; }
major=$(ver MAJOR); minor=$(ver MINOR); patch=$(ver PATCH)
[ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] || { echo "build-library.sh: cannot read the version from include/afserialization.h" >&2; exit 1; }

# glibc 2.28 and later (manylinux_2_28): on x86_64, Sources/CAFSerialization/glibc_compat.c
# binds the C-library functions whose versions are newer to their old versions, and
# libpthread.so.0 / libdl.so.2 (where those lived before glibc 2.34) are needed explicitly.
compat=()
if [ "$(uname -m)" = x86_64 ] && [ "${AFS_GLIBC_COMPAT:-1}" = 1 ]; then
    compat=(-Xcc -DAFS_GLIBC_COMPAT
            -Xlinker --no-as-needed -Xlinker -l:libpthread.so.0 -Xlinker -l:libdl.so.2)
fi

# The compression libraries (zlib, libzstd, libbrotli; `link` lines of the CAFSerialization
# module map) are linked statically when their archives exist: a folder holding only the
# archives comes first on the linker's search path, so `-lzstd` finds libzstd.a. Their
# references to pthread_create, log2 … then bind to glibc_compat.c too, and the library
# needs no shared library outside the manylinux policies (the wheel carries nothing else).
# AFS_STATIC_CODECS=0 links the shared libraries instead.
static=()
if [ "${AFS_STATIC_CODECS:-1}" = 1 ]; then
    archives="$scratch/static-codecs"
    mkdir -p "$archives"
    for a in libz.a libzstd.a libbrotlienc.a libbrotlidec.a libbrotlicommon.a; do
        f=$(${CC:-cc} -print-file-name=$a 2>/dev/null || true)
        if [ -n "$f" ] && [ "$f" != "$a" ] && [ -f "$f" ]; then
            ln -sf "$f" "$archives/$a"
        else
            echo "build-library.sh: $a not found: linking the shared library instead" >&2
            rm -f "$archives/$a"
        fi
    done
    static=(-Xlinker -L"$archives")
    # libbrotlienc/dec need libbrotlicommon, which the module map does not name
    [ -e "$archives/libbrotlicommon.a" ] && static+=(-Xlinker -lbrotlicommon)
fi

swift build -c release --package-path "$root" --scratch-path "$scratch" --product afserialization \
    -Xswiftc -static-stdlib -Xswiftc -enforce-exclusivity=unchecked -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld \
    -Xcc -gdwarf-4 "${compat[@]}" "${static[@]}" \
    -Xlinker --version-script="$root/scripts/afserialization.map" \
    -Xlinker -soname=libafserialization.so.$major >&2

mkdir -p "$out"
real=libafserialization.so.$major.$minor.$patch
cp "$scratch/release/libafserialization.so" "$out/$real.tmp"
mv -f "$out/$real.tmp" "$out/$real"
ln -sf "$real" "$out/libafserialization.so.$major"
ln -sf "libafserialization.so.$major" "$out/libafserialization.so"
echo "$out/$real"
