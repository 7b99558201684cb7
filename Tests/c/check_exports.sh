#!/usr/bin/env bash
# The library's exported functions must be exactly the afs_* functions the header declares.
#   check_exports.sh LIBRARY HEADER
set -euo pipefail
lib=$1 header=$2
declared=$(grep -oE 'AFS_API[^;]*\bafs_[a-z0-9_]+\(' "$header" | grep -oE 'afs_[a-z0-9_]+\($' | tr -d '(' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' | sed 's/@.*//' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
status=0
if [ -n "$missing" ]; then echo "declared in the header but not exported:"; echo "$missing" | sed 's/^/  /'; status=1; fi
if [ -n "$extra" ]; then echo "exported but not declared in the header:"; echo "$extra" | sed 's/^/  /'; status=1; fi
# .dynsym holds the exports and the imports only (no local symbols either: lld links the
# library, see scripts/build-library.sh)
others=$(nm -D --defined-only "$lib" | awk '$3 !~ /^afs_/ {print "  " $3}')
if [ -n "$others" ]; then echo "defined in .dynsym beside the afs_* functions:"; echo "$others"; status=1; fi
if ldd "$lib" | grep -qE 'libswift|libFoundation'; then echo "links the Swift runtime dynamically:"; ldd "$lib"; status=1; fi
[ $status -eq 0 ] && echo "exported_symbols: $(echo "$declared" | wc -l) functions declared and exported, no others; no libswift* needed"
exit $status
