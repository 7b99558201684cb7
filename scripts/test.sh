#!/usr/bin/env bash
# Runs every test, after installing what is missing:
#   1. C programs through ctest: the ABI per area, each also under valgrind; the header as
#      C99 and C++; exported symbols; downstream projects (find_package, pkg-config)
#   2. Swift XCTest: the core
#   3. Python tests: bindings and real HTTP clients against a local server
#   4. Hardening: sanitizers (ASan+UBSan, TSan), fault injection, the bad-input matrix
#      (docs/bad-input-matrix.md must match what the library answers), fuzz regressions
#      and a bounded fuzzing run (AFS_FUZZ_SECONDS per target, default 60; 0 skips it)
# Every stage runs; the exit status is non-zero if any failed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
"$root/scripts/install-deps.sh" || exit 1

failed=()
stage() { echo; echo "=== $1"; }

stage "build (cmake: library via SwiftPM, C tests, examples)"
if cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j2; then
    stage "C tests (ctest)"
    ctest --test-dir build --output-on-failure -j2 || failed+=(ctest)
else
    failed+=(build)
fi

stage "Swift tests (XCTest)"
swift test --disable-swift-testing 2>&1 | grep -vE '^\[[0-9]+/[0-9]+\] (Compiling|Emitting|Write|Linking|Planning)' ; [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(swift)

if compgen -G "Tests/python/test_*.py" >/dev/null; then
    stage "Python tests (pytest)"
    if [ -f bindings/python/pyproject.toml ]; then
        AFSERIALIZATION_LIBRARY="$root/build/lib/libafserialization.so" \
            python3 -m pip install -q --disable-pip-version-check --no-build-isolation ./bindings/python || failed+=(pip-install)
    fi
    AFSERIALIZATION_LIBRARY="$root/build/lib/libafserialization.so" \
    AFS_UPLOAD_WITH_CURL="$root/build/upload_with_curl" \
        python3 -m pytest Tests/python -q -p no:cacheprovider || failed+=(pytest)
fi

stage "sanitizers (scripts/sanitize.sh)"
scripts/sanitize.sh --skip-valgrind || failed+=(sanitizers)   # ctest ran the valgrind tests

stage "fault injection (Tests/fault/run.sh)"
Tests/fault/run.sh || failed+=(fault-injection)

stage "bad-input matrix (scripts/bad-input-matrix.sh --check)"
scripts/bad-input-matrix.sh --check || failed+=(bad-input-matrix)

if [ -x scripts/fuzz.sh ]; then
    stage "fuzz regressions and seeds (scripts/fuzz.sh --regressions)"
    scripts/fuzz.sh --regressions || failed+=(fuzz-regressions)
    if [ "${AFS_FUZZ_SECONDS:-60}" != 0 ]; then
        stage "fuzzing, ${AFS_FUZZ_SECONDS:-60} s per target (scripts/fuzz.sh)"
        scripts/fuzz.sh "${AFS_FUZZ_SECONDS:-60}" || failed+=(fuzz)
    fi
fi

echo
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED stages: ${failed[*]}"
    exit 1
fi
echo "all test stages passed"
