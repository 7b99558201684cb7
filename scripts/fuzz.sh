#!/usr/bin/env bash
# libFuzzer targets for the core (Fuzz/README.md says what each one checks).
#
#   scripts/fuzz.sh [SECONDS]        build every target, fuzz each for SECONDS (default 60)
#                                    from its seeds and coverage corpus; print a table; a
#                                    crash is copied to Fuzz/regressions/<target>/ and the
#                                    exit status is 1
#   scripts/fuzz.sh --regressions    build, then run every seed (Fuzz/corpus/) and regression
#                                    input (Fuzz/regressions/) through every target, and each
#                                    target's coverage corpus through that target, once:
#                                    fast and deterministic
#   scripts/fuzz.sh --build          build only
#   scripts/fuzz.sh --pack-corpus    fold loose Fuzz/corpus/<target>/cov-* files into the
#                                    target's archive Fuzz/coverage/<target>.tar.xz
#
# Coverage corpora: the edge-coverage-minimised inputs of longer runs are kept out of the
# tracked tree as one archive per target, Fuzz/coverage/<target>.tar.xz, unpacked into
# $FUZZ_BUILD_DIR/coverage/<target>/ when needed (a stamp skips unchanged archives).
#
# Environment: FUZZ_TARGETS="json_parse query_string" restricts the targets;
# FUZZ_BUILD_DIR (default .build-fuzz); FUZZ_ARTIFACTS (default .build-fuzz/artifacts) keeps
# the working corpora and logs of the timed run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

all_targets=(percent_escape json_parse json_write plist_write plist_read query_string request_syntax multipart_stream value_api pickle_read pickle_write response_reader x509_parse chunked_body query_parse multipart_parse image_header xml_parse)
read -r -a targets <<<"${FUZZ_TARGETS:-${all_targets[*]}}"
build="${FUZZ_BUILD_DIR:-$root/.build-fuzz}"
artifacts="${FUZZ_ARTIFACTS:-$build/artifacts}"
mode=timed
seconds=60
case "${1:-}" in
    --regressions) mode=regressions ;;
    --build) mode=build ;;
    --pack-corpus) mode=pack ;;
    "") ;;
    *[!0-9]*) echo "usage: $0 [SECONDS | --regressions | --build | --pack-corpus]" >&2; exit 2 ;;
    *) seconds=$1 ;;
esac

# ---------------------------------------------------------------------------------------
# Coverage corpora: Fuzz/coverage/<target>.tar.xz <-> $build/coverage/<target>/
coverage_dir() { echo "$build/coverage/$1"; }
unpack_coverage() {
    local t=$1 archive="Fuzz/coverage/$1.tar.xz" dir
    dir=$(coverage_dir "$t")
    if [ ! -f "$archive" ]; then rm -rf "$dir"; mkdir -p "$dir"; return; fi
    local stamp
    stamp=$(sha256sum "$archive" | cut -c1-16)
    [ "$(cat "$dir.stamp" 2>/dev/null)" = "$stamp" ] && [ -d "$dir" ] && return
    rm -rf "$dir" "$dir.stamp"
    mkdir -p "$dir"
    tar -xJf "$archive" -C "$dir"
    echo "$stamp" >"$dir.stamp"
}
if [ "$mode" = pack ]; then
    mkdir -p Fuzz/coverage "$build"
    for t in "${targets[@]}"; do
        mapfile -t loose < <(find "Fuzz/corpus/$t" -maxdepth 1 -type f -name 'cov-*' 2>/dev/null | LC_ALL=C sort)
        [ ${#loose[@]} -gt 0 ] || continue
        unpack_coverage "$t"
        dir=$(coverage_dir "$t")
        cp "${loose[@]}" "$dir/"
        (cd "$dir" && find . -maxdepth 1 -type f -name 'cov-*' -printf '%f\n' | LC_ALL=C sort |
            tar --create --file=- --files-from=- --owner=0 --group=0 --numeric-owner --mtime=2020-01-01 |
            xz -9e) >"Fuzz/coverage/$t.tar.xz.tmp"
        mv -f "Fuzz/coverage/$t.tar.xz.tmp" "Fuzz/coverage/$t.tar.xz"
        rm -f "${loose[@]}" "$dir.stamp"
        echo "$t: $(tar -tJf "Fuzz/coverage/$t.tar.xz" | wc -l) inputs in Fuzz/coverage/$t.tar.xz (${#loose[@]} added)"
    done
    exit 0
fi

# ---------------------------------------------------------------------------------------
# Build: the C target (Sources/CAFSerialization: the header's module and the private C
# helpers) with clang, the core once as a static library instrumented for libFuzzer and
# ASan (with -enable-testing so the targets can check internal helpers), the exports layer
# (Sources/AFSerializationExports: the C API) likewise, then one binary per target.
# A stamp of the sources and flags skips work that is already done.
swiftc=${SWIFTC:-swiftc}
clang=${AFS_CLANG:-$(dirname "$(command -v "$swiftc")")/clang}
flags=(-O -sanitize=fuzzer,address -parse-as-library -use-ld=lld)
cmodule=Sources/CAFSerialization/include          # module.modulemap: the header + private helpers
cinc=(-I "$cmodule" -I include)
mkdir -p "$build"
# Before the C target existed, the export layer's Swift module was called CAFSerialization:
# a stale copy would shadow the C module.
rm -rf "$build/CAFSerialization.swiftmodule" "$build/libCAFSerialization.a" "$build/c.stamp"
stamp_of() { cat "$@" | { sha256sum; echo "${flags[*]} $($swiftc --version 2>&1 | head -1)"; } | sha256sum | cut -c1-16; }

c_files=$(find Sources/CAFSerialization -name '*.c' | LC_ALL=C sort)
cheaders=$(find include "$cmodule" -type f | LC_ALL=C sort)
# shellcheck disable=SC2086
ctarget_stamp=$(stamp_of $c_files $cheaders)
if [ "$(cat "$build/ctarget.stamp" 2>/dev/null)" != "$ctarget_stamp" ] || [ ! -f "$build/libCAFSerializationC.a" ]; then
    echo "building the C target (libFuzzer + ASan) ..."
    rm -f "$build/ctarget.stamp" "$build/libCAFSerializationC.a"
    objs=()
    for c in $c_files; do
        o="$build/$(basename "$c" .c).o"
        "$clang" -O1 -g -fPIC -fsanitize=fuzzer-no-link,address "${cinc[@]}" -c "$c" -o "$o"
        objs+=("$o")
    done
    ar rcs "$build/libCAFSerializationC.a" "${objs[@]}"
    echo "$ctarget_stamp" >"$build/ctarget.stamp"
fi

core_sources=$(find Sources/AFSerialization -name '*.swift' | LC_ALL=C sort)
# shellcheck disable=SC2086
core_stamp=$(stamp_of $core_sources "$build/ctarget.stamp")
if [ "$(cat "$build/core.stamp" 2>/dev/null)" != "$core_stamp" ] || [ ! -f "$build/libAFSerialization.a" ]; then
    echo "building the core (libFuzzer + ASan) ..."
    rm -f "$build/core.stamp"
    # shellcheck disable=SC2086
    "$swiftc" "${flags[@]}" -wmo -enable-testing -module-name AFSerialization "${cinc[@]}" \
        -emit-library -static -emit-module -emit-module-path "$build/AFSerialization.swiftmodule" \
        $core_sources -o "$build/libAFSerialization.a"
    echo "$core_stamp" >"$build/core.stamp"
fi
# The exports layer too (the targets call the C API: afs_value_parse_json, afs_value_free …).
x_sources=$(find Sources/AFSerializationExports -name '*.swift' | LC_ALL=C sort)
# shellcheck disable=SC2086
x_stamp=$(stamp_of $x_sources "$build/core.stamp")
if [ "$(cat "$build/exports.stamp" 2>/dev/null)" != "$x_stamp" ] || [ ! -f "$build/libAFSerializationExports.a" ]; then
    echo "building the exports layer (libFuzzer + ASan) ..."
    rm -f "$build/exports.stamp"
    # shellcheck disable=SC2086
    "$swiftc" "${flags[@]}" -wmo -module-name AFSerializationExports -I "$build" "${cinc[@]}" \
        -emit-library -static -emit-module -emit-module-path "$build/AFSerializationExports.swiftmodule" \
        $x_sources -o "$build/libAFSerializationExports.a"
    echo "$x_stamp" >"$build/exports.stamp"
fi

for t in "${targets[@]}"; do
    src="Fuzz/$t.swift"
    [ -f "$src" ] || { echo "no such target: $t ($src)" >&2; exit 2; }
    s=$(stamp_of "$src" Fuzz/Support/*.swift "$build/core.stamp" "$build/exports.stamp")
    if [ "$(cat "$build/$t.stamp" 2>/dev/null)" != "$s" ] || [ ! -x "$build/$t" ]; then
        echo "building $t ..."
        rm -f "$build/$t.stamp"
        "$swiftc" "${flags[@]}" -wmo -module-name "fuzz_$t" -I "$build" "${cinc[@]}" -L "$build" \
            -lAFSerializationExports -lAFSerialization -lCAFSerializationC \
            "$src" Fuzz/Support/*.swift -o "$build/$t"
        echo "$s" >"$build/$t.stamp"
    fi
done
[ "$mode" = build ] && exit 0

# LeakSanitizer stays on (libFuzzer checks every input for leaks); a property violation is
# a fatalError, i.e. a crash with the input saved.
# The Swift runtime's own backtracer is switched off: it would hold the output pipe open
# (and time out) after a crash, and libFuzzer's handler already reports and saves it.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"

# ---------------------------------------------------------------------------------------
if [ "$mode" = regressions ]; then
    mapfile -t inputs < <(find Fuzz/corpus Fuzz/regressions -type f ! -name '*.md' ! -name '.*' 2>/dev/null | LC_ALL=C sort)
    status=0
    start=$(date +%s)
    for t in "${targets[@]}"; do
        log="$build/$t.regressions.log"
        unpack_coverage "$t"
        mapfile -t own < <(find "$(coverage_dir "$t")" -type f | LC_ALL=C sort)
        # libFuzzer runs each named file once (no fuzzing) and stops at the first crash.
        if "$build/$t" -rss_limit_mb=2048 -timeout=60 "${inputs[@]}" "${own[@]}" >"$log" 2>&1; then
            printf '%-18s %5d inputs  ok\n' "$t" "$((${#inputs[@]} + ${#own[@]}))"
        else
            printf '%-18s %5d inputs  FAILED (log: %s)\n' "$t" "$((${#inputs[@]} + ${#own[@]}))" "$log"
            grep -E 'Running: |fuzz property violated|ERROR: |Fatal error' "$log" | tail -n 8 | sed 's/^/    /'
            status=1
        fi
    done
    echo "regressions: $(( $(date +%s) - start )) s"
    exit $status
fi

# ---------------------------------------------------------------------------------------
# Timed run: each target in turn (the machine's cores are shared) from a fresh copy of its
# seeds; the working corpus is kept under $artifacts, never committed.
mkdir -p "$artifacts"
status=0
rows=()
for t in "${targets[@]}"; do
    work="$artifacts/$t"
    rm -rf "$work"
    mkdir -p "$work/corpus" "$work/crashes"
    if [ -d "Fuzz/corpus/$t" ]; then cp -R "Fuzz/corpus/$t/." "$work/corpus/"; fi
    unpack_coverage "$t"
    cp -R "$(coverage_dir "$t")/." "$work/corpus/"
    dict=()
    [ -f "Fuzz/dict/$t.dict" ] && dict=(-dict="Fuzz/dict/$t.dict")
    log="$work/fuzz.log"
    echo "fuzzing $t for ${seconds} s ..."
    set +e
    "$build/$t" "$work/corpus" "${dict[@]}" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 \
        -print_final_stats=1 -artifact_prefix="$work/crashes/" \
        >"$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -E '^stat::number_of_executed_units:' "$log" | awk '{s+=$2} END {print s+0}')
    rate=$(grep -E '^stat::average_exec_per_sec:' "$log" | awk '{s+=$2} END {print s+0}')
    size=$(find "$work/corpus" -type f | wc -l)
    crashes=0
    for c in "$work"/crashes/crash-* "$work"/crashes/leak-* "$work"/crashes/timeout-* "$work"/crashes/oom-*; do
        [ -f "$c" ] || continue
        crashes=$((crashes + 1))
        mkdir -p "Fuzz/regressions/$t"
        cp "$c" "Fuzz/regressions/$t/"
        echo "  crash: $c -> Fuzz/regressions/$t/$(basename "$c")"
    done
    if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
        crashes="?"  # libFuzzer failed without an artifact (see the log)
    fi
    if [ "$rc" -ne 0 ]; then
        status=1
        grep -E 'fuzz property violated|ERROR: |Fatal error|SUMMARY' "$log" | head -n 8 | sed 's/^/    /'
    fi
    rows+=("$(printf '%-18s %12s %10s %8s %8s' "$t" "$execs" "$rate" "$size" "$crashes")")
done

echo
printf '%-18s %12s %10s %8s %8s\n' target executions exec/s corpus crashes
for r in "${rows[@]}"; do echo "$r"; done
echo "(logs and working corpora: $artifacts)"
exit $status
