#!/usr/bin/env bash
# Fault injection: builds the LD_PRELOAD shim (shim.c) and the C fault program (fault.c)
# with gcc against build/lib/libafserialization.so, then runs
#   1. the C scenarios natively (descriptors and heap in use, before and after),
#   2. the same scenarios under valgrind (memcheck errors and leaks of each scenario's
#      process, from its own log),
#   3. the Python scenarios (test_fault.py: stream sources that raise, through the bindings),
#   4. the host-limit scenarios (limits.c: calls under RLIMIT_AS that must end in
#      AFS_E_NO_MEMORY, 512-level trees on a 64 KiB thread stack, a binary plist whose shared
#      objects expand to 12.1M values, a lowered decoding limit),
# and prints one table. The C scenarios include failing each of the library's checked
# allocations in turn (the shim's op=realloc; see fault.c, group "alloc"). Exits non-zero when a scenario fails, hangs, dies, leaks a
# descriptor or heap memory, or valgrind reports an error or a definite/indirect leak.
#
#   Tests/fault/run.sh [--no-valgrind] [--no-python]
#
# Build the library first: scripts/build-library.sh (or cmake --build build).
# Results: build-fault/results.tsv (read by scripts/bad-input-matrix.sh), logs in build-fault/.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
lib="$root/build/lib/libafserialization.so"
out="$root/build-fault"
use_valgrind=1
use_python=1
for a in "$@"; do
    case "$a" in
        --no-valgrind) use_valgrind=0 ;;
        --no-python) use_python=0 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown option $a" >&2; exit 2 ;;
    esac
done
if [ ! -e "$lib" ]; then
    echo "run.sh: $lib is missing; build it first: scripts/build-library.sh" >&2
    exit 2
fi
command -v valgrind >/dev/null || use_valgrind=0

t0=$(date +%s.%N)
rm -rf "$out"
mkdir -p "$out/scratch" "$out/vg"
CC=${CC:-gcc}
"$CC" -std=c99 -Wall -Wextra -Werror -O2 -g -fPIC -shared "$here/shim.c" -o "$out/libafsfault.so" -ldl -lpthread || exit 1
"$CC" -std=c99 -Wall -Wextra -Werror -O1 -g -I"$root/include" "$here/fault.c" \
    -L"$root/build/lib" -lafserialization -Wl,-rpath,"$root/build/lib" -lpthread -ldl -o "$out/fault" || exit 1
"$CC" -std=c99 -Wall -Wextra -Werror -O1 -g -I"$root/include" "$here/limits.c" \
    -L"$root/build/lib" -lafserialization -Wl,-rpath,"$root/build/lib" -lpthread -o "$out/limits" || exit 1

# Exact heap accounting: no per-thread caches (tcache chunks count as in use for mallinfo2)
# and one arena (mallinfo2 reports the main arena only).
export GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1
export LD_PRELOAD="$out/libafsfault.so"
failed=0

# 1. native
"$out/fault" "$out/scratch" >"$out/native.tsv" 2>"$out/native.log" || failed=1

# 2. valgrind: each scenario's child writes its own log (vg/<pid>.log)
if [ $use_valgrind -eq 1 ]; then
    AFS_FAULT_TIMEOUT=120 valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect \
        --show-leak-kinds=definite,indirect --error-exitcode=99 \
        --suppressions="$root/Tests/c/valgrind.supp" --log-file="$out/vg/%p.log" \
        "$out/fault" "$out/scratch" >"$out/valgrind.tsv" 2>"$out/valgrind.log" || failed=1
fi

# 3. Python
if [ $use_python -eq 1 ]; then
    AFSERIALIZATION_LIBRARY="$lib" python3 "$here/test_fault.py" "$out/scratch" \
        >"$out/python.tsv" 2>"$out/python.log" || failed=1
fi
unset LD_PRELOAD

# 4. host limits (no shim, no valgrind: RLIMIT_AS and valgrind do not mix)
GLIBC_TUNABLES= "$out/limits" >"$out/limits.tsv" 2>"$out/limits.log" || failed=1

# valgrind's verdict for a scenario: its child's log
vg_summary() {
    local log="$out/vg/$1.log"
    [ -f "$log" ] || { echo "no log"; return; }
    awk '
        /ERROR SUMMARY:/ { for (i = 1; i <= NF; i++) if ($i == "SUMMARY:") errors = $(i + 1) }
        /definitely lost:/ { for (i = 1; i <= NF; i++) if ($i == "lost:") { d = $(i + 1); gsub(",", "", d) } }
        /indirectly lost:/ { for (i = 1; i <= NF; i++) if ($i == "lost:") { n = $(i + 1); gsub(",", "", n) } }
        /All heap blocks were freed/ { d = 0; n = 0 }
        END { printf "%s errors, %s B definitely + %s B indirectly lost", errors == "" ? "?" : errors, d == "" ? 0 : d, n == "" ? 0 : n }
    ' "$log"
}

# results.tsv: the native (or Python) columns plus valgrind's verdict
: >"$out/results.tsv"
if [ -s "$out/native.tsv" ]; then
    while IFS=$'\t' read -r name group desc verdict status eno msg fired fb fa hb ha pid notes; do
        vg="-"
        if [ $use_valgrind -eq 1 ]; then
            vrow=$(awk -F'\t' -v n="$name" '$1 == n' "$out/valgrind.tsv")
            vpid=$(echo "$vrow" | cut -f13)
            vverdict=$(echo "$vrow" | cut -f4)
            vg=$(vg_summary "$vpid")
            [ "$vverdict" = PASS ] || vg="$vg; run under valgrind: ${vverdict:-missing} $(echo "$vrow" | cut -f14)"
            case "$vg" in "0 errors, 0 B definitely + 0 B indirectly lost") ;; *) failed=1 ;; esac
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
            "$name" "$group" "$desc" "$verdict" "$status" "$eno" "$msg" "$fired" "$fb" "$fa" "$hb" "$ha" "$notes" "$vg" >>"$out/results.tsv"
    done <"$out/native.tsv"
fi
if [ -s "$out/python.tsv" ]; then
    while IFS=$'\t' read -r name group desc verdict status eno msg fired fb fa hb ha pid notes; do
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
            "$name" "$group" "$desc" "$verdict" "$status" "$eno" "$msg" "$fired" "$fb" "$fa" "$hb" "$ha" "$notes" "-" >>"$out/results.tsv"
    done <"$out/python.tsv"
fi
if [ -s "$out/limits.tsv" ]; then
    while IFS=$'\t' read -r name group desc verdict status eno msg notes; do
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t%s\t-\n' \
            "$name" "$group" "$desc" "$verdict" "$status" "$eno" "$msg" "$notes" >>"$out/results.tsv"
    done <"$out/limits.tsv"
else
    echo "run.sh: the limits program produced nothing (see $out/limits.log)"; failed=1
fi
grep -q $'\tFAIL\t' "$out/results.tsv" && failed=1
[ -s "$out/native.tsv" ] || { echo "run.sh: the C fault program produced nothing (see $out/native.log)"; failed=1; }

# the table
printf '%-40s %-6s %-22s %-7s %-9s %-19s %s\n' scenario result status errno "fds b/a" "heap b/a (bytes)" "valgrind"
while IFS=$'\t' read -r name group desc verdict status eno msg fired fb fa hb ha notes vg; do
    printf '%-40s %-6s %-22s %-7s %-9s %-19s %s\n' "$name" "$verdict" "$status" "$eno" "$fb/$fa" "$hb/$ha" \
        "$(echo "$vg" | sed 's/ B definitely + / + /; s/ B indirectly lost/ B lost/')"
    [ "$verdict" = PASS ] || echo "    -> $notes"
done <"$out/results.tsv"
n=$(wc -l <"$out/results.tsv")
echo
echo "$n scenarios ($(grep -c $'\tPASS\t' "$out/results.tsv") passed) in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }');" \
     "valgrind: $([ $use_valgrind -eq 1 ] && echo on || echo off); python: $([ $use_python -eq 1 ] && echo on || echo off)"
if [ $failed -ne 0 ]; then
    echo "run.sh: FAILED (logs in $out)"
    exit 1
fi
echo "run.sh: all fault scenarios passed"
