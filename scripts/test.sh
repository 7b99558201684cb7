#!/usr/bin/env bash
# Runs every test, after installing what is missing (scripts/install-deps.sh: apt packages
# and the project's virtual environment .venv/):
#   1. C programs through ctest: the ABI per area, each also under valgrind; the header as
#      C99 and C++; exported symbols; glibc symbol versions within manylinux_2_28; the
#      installed tree (find_package, pkg-config with rpath and LD_LIBRARY_PATH, stripped
#      0755 library with a separate debug file)
#   2. fault injection (also under valgrind) and the bad-input matrix
#      (docs/bad-input-matrix.md must match what the library answers)
#   3. Python: `pip wheel ./bindings/python` (the library built by CMake and the compiled
#      module afserialization/_speedups, a cp38-abi3-manylinux_2_28 or older tag, every ELF
#      file in it checked by Tests/c/check_glibc.sh), the wheel
#      installed into a fresh virtual environment, and Tests/python run against it (with
#      the HTTPie comparison of the CLI, asyncio uploads, and the README's commands)
#   4. sanitizers (scripts/sanitize.sh): the C tests and the whole Swift XCTest suite under
#      ASan (+UBSan for C) and TSan, with canaries proving each sanitizer live
#   5. fuzzing: seeds, coverage corpora and regression inputs replayed through the targets,
#      then a smoke run of AFS_FUZZ_SECONDS per target, half the targets in each lane
#      (default 5; 60 with --long-fuzz or
#      when CI=true; 0 skips it)
# The stages run in two lanes side by side (the build, ctest and the sanitizers in one; the
# fuzzing, then fault injection and Python in the other). Each stage's output goes to
# build-test/<stage>.log, and a table of stages, results and times closes the run. The
# exit status is non-zero if any failed.
#
#   scripts/test.sh [--long-fuzz] [--serial]
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

long_fuzz=0
serial=0
for a in "$@"; do
    case "$a" in
        --long-fuzz) long_fuzz=1 ;;
        --serial) serial=1 ;;
        -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
        *) echo "test.sh: unknown option $a" >&2; exit 2 ;;
    esac
done
[ "${CI:-}" = true ] && long_fuzz=1
if [ $long_fuzz -eq 1 ]; then fuzz_seconds=${AFS_FUZZ_SECONDS:-60}; else fuzz_seconds=${AFS_FUZZ_SECONDS:-5}; fi
# In CI the packaging test also builds the library from the sdist's own sources.
[ "${CI:-}" = true ] && export AFS_TEST_SDIST_FULL_BUILD=${AFS_TEST_SDIST_FULL_BUILD:-1}

"$root/scripts/install-deps.sh" || exit 1
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"

out="$root/build-test"
rm -rf "$out"
mkdir -p "$out"
T0=$(date +%s)

# stage NAME CMD... — runs CMD with its output in build-test/NAME.log; records the result
# and time in build-test/NAME.result; prints one line when it ends.
stage() {
    local name=$1
    shift
    local t0 rc
    t0=$(date +%s)
    echo "[$(date +%H:%M:%S)] start  $name"
    "$@" >"$out/$name.log" 2>&1
    rc=$?
    local dt=$(($(date +%s) - t0))
    if [ $rc -eq 0 ]; then
        echo "ok $dt" >"$out/$name.result"
        echo "[$(date +%H:%M:%S)] ok     $name (${dt} s)"
    else
        echo "FAILED $dt" >"$out/$name.result"
        echo "[$(date +%H:%M:%S)] FAILED $name (${dt} s, rc=$rc); last lines of build-test/$name.log:"
        tail -n 40 "$out/$name.log" | sed 's/^/    | /'
    fi
    return $rc
}
skip() { echo "skipped $2" >"$out/$1.result"; echo "[$(date +%H:%M:%S)] skip   $1 ($2)"; }

# ---- the stages ---------------------------------------------------------------------------
build_all() {
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2
}
python_wheel() {
    # The wheel as a user gets it: no AFSERIALIZATION_LIBRARY, so CMake builds the library
    # (reusing the SwiftPM build of the cmake stage) and the hook packs the stripped copy.
    local wheels="$out/wheel" venv="$out/venv"
    rm -rf "$wheels" "$venv"
    (unset AFSERIALIZATION_LIBRARY; python -m pip wheel -q --no-deps --no-build-isolation \
        --disable-pip-version-check -w "$wheels" ./bindings/python) || return 1
    local whl
    whl=$(ls "$wheels"/afserialization-*.whl) || return 1
    echo "wheel: $(basename "$whl")"
    # cp38-abi3: the compiled module (afserialization/_speedups) is in it
    case $whl in *-cp38-abi3-manylinux_*) ;; *) echo "not a manylinux wheel with the compiled module: $whl"; return 1 ;; esac
    auditwheel show "$whl" || return 1
    # every ELF file of the wheel needs at most manylinux_2_28's symbol versions
    rm -rf "$out/wheel-elf" && mkdir -p "$out/wheel-elf" && (cd "$out/wheel-elf" && python -m zipfile -e "$whl" .) || return 1
    find "$out/wheel-elf" -type f -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print0 |
        xargs -0 Tests/c/check_glibc.sh || return 1
    # A fresh virtual environment with only the wheel installed; the test tools (pytest,
    # requests, werkzeug …) come from the project's environment through a .pth file placed
    # after the fresh site-packages, so nothing is fetched again.
    python -m venv --without-pip "$venv" || return 1
    python -m pip --python "$venv/bin/python" install -q --no-deps --disable-pip-version-check "$whl" || return 1
    local site tools
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    tools=$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$tools" >"$site/zz-afs-test-tools.pth"
}
python_tests() {
    local venv="$out/venv" pkg
    pkg=$("$venv/bin/python" -c 'import afserialization, os; print(os.path.dirname(afserialization.__file__))' 2>/dev/null)
    [ -n "$pkg" ] || { echo "the wheel is not installed in $venv"; return 1; }
    AFS_TEST_INSTALLED_PACKAGE=1 \
    AFSERIALIZATION_LIBRARY="$pkg/libafserialization.so.0" \
    AFS_UPLOAD_WITH_CURL="$root/build/upload_with_curl" \
    AFS_GET_WITH_SOCKET="$root/build/get_with_socket" \
        "$venv/bin/python" -m pytest Tests/python -q -p no:cacheprovider
}
fault_and_matrix() {
    Tests/fault/run.sh || return 1
    # the fault scenarios just ran (with valgrind): the matrix reuses their results
    scripts/bad-input-matrix.sh --check --fault-results "$root/build-fault/results.tsv"
}

# The timed fuzzing is split between the lanes: the first half of scripts/fuzz.sh's targets
# in lane 1, the second half in lane 2 after the sanitizers (each target runs alone, one
# core each; the working corpora are per target).
read -r -a fuzz_all <<<"$(sed -n 's/^all_targets=(\(.*\))$/\1/p' scripts/fuzz.sh)"
fuzz_half=$(( (${#fuzz_all[@]} + 1) / 2 ))
fuzz_first="${fuzz_all[*]:0:$fuzz_half}"
fuzz_second="${fuzz_all[*]:$fuzz_half}"
# --serial: lane 2 runs first, so lane 1 fuzzes every target
if [ $serial -eq 1 ]; then fuzz_first="${fuzz_all[*]}"; fuzz_second=""; fi
smoke() {  # smoke STAGE TARGETS...
    local name=$1
    shift
    if [ "$fuzz_seconds" = 0 ]; then skip "$name" "AFS_FUZZ_SECONDS=0"; return; fi
    stage "$name" env FUZZ_TARGETS="$*" scripts/fuzz.sh "$fuzz_seconds"
}

# Two lanes for 2 cores, balanced by their measured times:
#   lane 1: the fuzz build, replay and the first half of the smoke run, then (once lane 2
#           built the library) fault injection and the matrix, the Python wheel and the
#           Python tests;
#   lane 2: the build, ctest, the sanitizers, then the second half of the smoke run.
lane_one() {
    if stage fuzz-build scripts/fuzz.sh --build; then
        stage fuzz-replay scripts/fuzz.sh --regressions
        smoke fuzz-smoke $fuzz_first
    else
        skip fuzz-replay "fuzz build failed"; skip fuzz-smoke "fuzz build failed"
    fi
    while [ ! -f "$out/build.result" ]; do sleep 2; done
    if [ "$(cut -d' ' -f1 "$out/build.result")" = ok ]; then
        stage fault-and-matrix fault_and_matrix
        if stage python-wheel python_wheel; then
            stage python-tests python_tests
        else
            skip python-tests "no wheel"
        fi
    else
        for s in fault-and-matrix python-wheel python-tests; do skip $s "build failed"; done
    fi
}
lane_two() {
    if stage build build_all; then
        stage ctest ctest --test-dir build --output-on-failure -j2
    else
        skip ctest "build failed"
    fi
    stage sanitizers scripts/sanitize.sh --skip-valgrind   # ctest runs the valgrind tests
    if [ -z "$fuzz_second" ]; then skip fuzz-smoke-2 "--serial: lane 1 fuzzes every target"; return; fi
    while [ ! -f "$out/fuzz-build.result" ]; do sleep 2; done
    if [ "$(cut -d' ' -f1 "$out/fuzz-build.result")" = ok ]; then
        smoke fuzz-smoke-2 $fuzz_second
    else
        skip fuzz-smoke-2 "fuzz build failed"
    fi
}

echo "test.sh: $([ $serial -eq 1 ] && echo "one lane" || echo "two lanes"); fuzzing ${fuzz_seconds} s per target; logs in build-test/"
if [ $serial -eq 1 ]; then
    lane_two
    lane_one
else
    lane_two &
    two=$!
    lane_one
    wait $two
fi

# ---- summary ---------------------------------------------------------------------------------
echo
echo "| stage | result | time |"
echo "| --- | --- | --- |"
passed=0
failed=()
for s in build ctest fault-and-matrix python-wheel python-tests sanitizers fuzz-build fuzz-replay fuzz-smoke fuzz-smoke-2; do
    read -r result secs <"$out/$s.result" 2>/dev/null || { result=missing; secs=""; }
    case $result in
        ok) passed=$((passed + 1)); echo "| $s | ok | ${secs} s |" ;;
        skipped) echo "| $s | skipped ($secs) | - |" ;;
        *) failed+=("$s"); echo "| $s | $result | ${secs:-?} s |" ;;
    esac
done
echo
# What ran, from each runner's own closing lines.
grep -hE '^[0-9]+% tests passed' "$out/ctest.log" 2>/dev/null | sed 's/^/ctest: /'
grep -hE '^Total Test time' "$out/ctest.log" 2>/dev/null | sed 's/^/ctest: /'
tail -n 1 "$out/python-tests.log" 2>/dev/null | sed 's/^/pytest: /'
for san in asan tsan; do
    grep -hE 'Executed [0-9]+ tests' "$root/build-sanitize/swift-$san.log" 2>/dev/null | tail -n 1 | sed "s/^/XCTest ($san): /"
done
grep -hE '^\| fault injection|API inputs' "$out/fault-and-matrix.log" 2>/dev/null | tail -n 1 | sed 's/^/matrix: /'
grep -hE 'inputs  (ok|FAILED)' "$out/fuzz-replay.log" 2>/dev/null | awk '{n += $2} END {if (NR) printf "fuzz replay: %d inputs over %d targets\n", n, NR}'
# CPU time of everything the run started (bash's `times`: children's user and system
# time): on a shared machine the wall time also counts waiting for other processes.
times >"$out/times.txt"   # a builtin with a redirection runs in this shell (a pipe would not)
cpu=$(tail -n 1 "$out/times.txt")
echo "total: $(($(date +%s) - T0)) s wall; CPU of the stages: ${cpu% *} user, ${cpu#* } system"
echo
echo "stages: $passed passed, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED stages: ${failed[*]} (logs in build-test/)"
    exit 1
fi
echo "all test stages passed"
