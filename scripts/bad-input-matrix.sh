#!/usr/bin/env bash
# Regenerates docs/bad-input-matrix.md from the tests: Tests/matrix/matrix.c runs every bad
# input class through the public C API (under valgrind when it is installed, so each error
# path is also checked for memory errors and leaks) and prints what the library answers;
# Tests/fault/run.sh (without valgrind) adds the fault-injection scenarios. A row whose
# status differs from what include/afserialization.h promises, or a failing fault scenario,
# fails the script.
#
#   scripts/bad-input-matrix.sh            rewrite docs/bad-input-matrix.md
#   scripts/bad-input-matrix.sh --check    regenerate into a temporary file and fail when
#                                          the committed document differs (stale)
#   --fault-results FILE                   take the fault scenarios from FILE (the
#                                          build-fault/results.tsv of a Tests/fault/run.sh
#                                          that just ran) instead of running them again
#
# Needs build/lib/libafserialization.so (scripts/build-library.sh) and gcc.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
doc="$root/docs/bad-input-matrix.md"
lib="$root/build/lib/libafserialization.so"
check=0
fault_results=""
while [ $# -gt 0 ]; do
    case "$1" in
        --check) check=1 ;;
        --fault-results) fault_results=${2:?--fault-results needs a file}; shift ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "bad-input-matrix.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
if [ ! -e "$lib" ]; then
    echo "bad-input-matrix.sh: $lib is missing; build it first: scripts/build-library.sh" >&2
    exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${CC:-gcc}" -std=c99 -Wall -Wextra -Werror -O1 -g -I"$root/include" "$root/Tests/matrix/matrix.c" \
    -L"$root/build/lib" -lafserialization -Wl,-rpath,"$root/build/lib" -lm -o "$work/matrix" || exit 1

# 1. the API inputs
runner=()
if command -v valgrind >/dev/null; then
    runner=(valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect
            --show-leak-kinds=definite,indirect --error-exitcode=99
            "--suppressions=$root/Tests/c/valgrind.supp")
fi
LC_ALL=C "${runner[@]}" "$work/matrix" "$work" >"$work/rows.md" 2>"$work/matrix.log"
rc=$?
if [ $rc -ne 0 ]; then
    cat "$work/matrix.log" >&2
    [ $rc -eq 99 ] && echo "bad-input-matrix.sh: valgrind reported errors or leaks" >&2
    exit 1
fi

# 2. the fault-injection scenarios
if [ -n "$fault_results" ]; then
    [ -s "$fault_results" ] || { echo "bad-input-matrix.sh: $fault_results is missing or empty" >&2; exit 1; }
    results=$fault_results
else
    if ! "$root/Tests/fault/run.sh" --no-valgrind >"$work/fault.log" 2>&1; then
        cat "$work/fault.log" >&2
        exit 1
    fi
    results="$root/build-fault/results.tsv"
fi

# 3. the document
{
    cat <<'EOF'
# Bad-input matrix

**Generated** by `scripts/bad-input-matrix.sh` from `Tests/matrix/matrix.c` and
`Tests/fault/` — do not edit by hand; CI runs `scripts/bad-input-matrix.sh --check`, which
fails when this file no longer matches what the library answers.

Every row is an input the tests actually tried and the library's actual answer: the status
(`afs_status_name`) and the message of the `afs_error` it filled (with `errno` when the OS
reported one). Paths under the test's scratch directory are written `<tmp>`, descriptor
numbers `<fd>`, and byte offsets that depend on timing or socket buffer sizes `<n>`. Each
API row also carries the status `include/afserialization.h` promises; a row that breaks
that promise fails the generator. The API inputs run under valgrind when it is installed
(no errors, no definite or indirect leaks).

Unreadable files: root ignores file modes, so for the "mode 000" and "directory without
search permission" rows the generator drops `CAP_DAC_OVERRIDE` and `CAP_DAC_READ_SEARCH`
from its effective capability set around the call (and restores them after); run as an
ordinary user it needs nothing, and the answers are the same.

EOF
    echo "## Summary"
    echo
    echo "| area | inputs |"
    echo "| --- | --- |"
    awk -F' \\| ' 'NR > 2 { a = substr($1, 3); n[a]++; if (!(a in seen)) { seen[a] = 1; order[++k] = a } }
                   END { for (i = 1; i <= k; i++) printf "| %s | %d |\n", order[i], n[order[i]] }' "$work/rows.md"
    echo "| fault injection (\`Tests/fault\`) | $(wc -l <"$results") |"
    echo
    echo "## API inputs"
    echo
    cat "$work/rows.md"
    echo
    echo "## Fault injection"
    echo
    echo "From \`Tests/fault/run.sh\`: system calls failed or altered through an \`LD_PRELOAD\` shim"
    echo "(\`Tests/fault/shim.c\`), files changed under a live body stream, real sockets whose peer"
    echo "goes away, and Python stream sources that raise. Every scenario also checks that the"
    echo "stream position equals the bytes delivered, that errors are sticky exactly when a source"
    echo "failed, and that descriptors and heap memory are back to their baseline afterwards"
    echo "(\`run.sh\` prints the numbers and also runs the C scenarios under valgrind)."
    echo
    echo "| scenario | what happens | status | errno | message (or result) | descriptors and heap back to baseline |"
    echo "| --- | --- | --- | --- | --- | --- |"
    awk -F'\t' '{
        for (i = 1; i <= NF; i++) gsub(/\|/, "\\|", $i)
        back = ($4 == "PASS" && $9 == $10 && $11 == $12) ? "yes" : "NO"
        printf "| %s | %s | %s | %s | %s | %s |\n", $1, $3, $5, $6, $7, back
    }' "$results"
} >"$work/doc.md"

if [ $check -eq 1 ]; then
    if ! diff -u "$doc" "$work/doc.md" >"$work/diff" 2>&1; then
        cat "$work/diff"
        echo "bad-input-matrix.sh: docs/bad-input-matrix.md is stale; run scripts/bad-input-matrix.sh and commit it" >&2
        exit 1
    fi
    echo "bad-input-matrix.sh: docs/bad-input-matrix.md is up to date ($(($(wc -l <"$work/rows.md") - 2)) API inputs, $(wc -l <"$results") fault scenarios)"
    exit 0
fi
mkdir -p "$(dirname "$doc")"
cp "$work/doc.md" "$doc"
echo "bad-input-matrix.sh: wrote docs/bad-input-matrix.md ($(($(wc -l <"$work/rows.md") - 2)) API inputs, $(wc -l <"$results") fault scenarios)"
