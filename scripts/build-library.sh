#!/usr/bin/env bash
# Builds the shipped library: release mode, Swift runtime linked statically
# (-static-stdlib, so `ldd` lists no libswift*), only afs_* exported (version script),
# SONAME libafserialization.so.MAJOR. The C target's debug information is DWARF 4, which
# valgrind reads (clang's default DWARF 5 makes it give up on the library).
#
#   scripts/build-library.sh [OUTDIR]      default OUTDIR: build/lib
#
# Leaves OUTDIR/libafserialization.so.MAJOR.MINOR.PATCH plus the .so.MAJOR and .so links.
# SwiftPM's scratch folder is .build-release (override with AFS_SCRATCH).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/build/lib}
scratch=${AFS_SCRATCH:-$root/.build-release}

ver() { sed -n "s/^#define AFS_VERSION_$1 \([0-9]*\)$/\1/p" "$root/include/afserialization.h"; }
major=$(ver MAJOR); minor=$(ver MINOR); patch=$(ver PATCH)
[ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] || { echo "build-library.sh: cannot read the version from include/afserialization.h" >&2; exit 1; }

swift build -c release --package-path "$root" --scratch-path "$scratch" --product afserialization \
    -Xswiftc -static-stdlib -Xswiftc -enforce-exclusivity=unchecked \
    -Xcc -gdwarf-4 \
    -Xlinker --version-script="$root/scripts/afserialization.map" \
    -Xlinker -soname=libafserialization.so.$major >&2

mkdir -p "$out"
real=libafserialization.so.$major.$minor.$patch
cp "$scratch/release/libafserialization.so" "$out/$real.tmp"
mv -f "$out/$real.tmp" "$out/$real"
ln -sf "$real" "$out/libafserialization.so.$major"
ln -sf "libafserialization.so.$major" "$out/libafserialization.so"
echo "$out/$real"
