#!/usr/bin/env bash
# The symbol versions an ELF library needs fit the manylinux_2_28 policy (glibc 2.28:
# RHEL 8, Debian 10, Ubuntu 18.10 and later): prints, per file, the highest GLIBC_,
# GLIBCXX_, CXXABI_ and GCC_ version it needs (readelf's version-needs section) and the
# libraries it needs outside that policy, and fails when any is above the target.
#
#   Tests/c/check_glibc.sh FILE...        (ctest `glibc_versions`; the python_wheel stage
#                                          of scripts/test.sh runs it on the wheel's files)
#
# AFS_GLIBC_TARGET=2.28 (default) sets the glibc version; the others follow the policy.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 FILE..." >&2; exit 2; }
glibc=${AFS_GLIBC_TARGET:-2.28}
# manylinux_2_28 (auditwheel's policy): GLIBCXX 3.4.24, CXXABI 1.3.11, GCC 7.0.0
declare -A limit=([GLIBC]=$glibc [GLIBCXX]=3.4.24 [CXXABI]=1.3.11 [GCC]=7.0.0)
allowed=" libc.so.6 libm.so.6 libdl.so.2 librt.so.1 libpthread.so.0 libstdc++.so.6 libgcc_s.so.1
 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1 libutil.so.1 libresolv.so.2 libatomic.so.1 libz.so.1 "
allowed=" $(echo $allowed) "
status=0
for file in "$@"; do
    versions=$(readelf -V --wide "$file" | sed -n 's/.*Name: \([A-Z]*\)_\([0-9][0-9.]*\) .*/\1 \2/p' | sort -u)
    line="$file:"
    for family in GLIBC GLIBCXX CXXABI GCC; do
        top=$(awk -v f=$family '$1 == f {print $2}' <<<"$versions" | sort -V | tail -1)
        [ -n "$top" ] || continue
        line+=" ${family}_$top"
        if [ "$(printf '%s\n%s\n' "$top" "${limit[$family]}" | sort -V | tail -1)" != "${limit[$family]}" ]; then
            line+=" (above ${family}_${limit[$family]}:"
            line+=$(readelf --dyn-syms --wide "$file" | awk -v v="@${family}_$top" 'index($8, v) {sub(/@.*/, "", $8); printf " %s", $8}')
            line+=")"
            status=1
        fi
    done
    for lib in $(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        case $allowed in
            *" $lib "*) ;;
            *) if [ -e "$(dirname "$file")/$lib" ]; then :; else line+=" needs $lib (outside the policy)"; status=1; fi ;;
        esac
    done
    echo "$line"
done
[ $status -eq 0 ] && echo "all within manylinux_${glibc/./_}" || echo "ABOVE manylinux_${glibc/./_}"
exit $status
