#!/usr/bin/env bash
# Runs the test suites under sanitizers and prints one table (suite, sanitizer, result, time):
#
#   1. AddressSanitizer (+ LeakSanitizer): the library built with `swiftc -sanitize=address`
#      (SwiftPM debug build, scratch .build-asan); every C test (Tests/c/test_*.c) compiled
#      by the toolchain's clang with -fsanitize=address,undefined (UBSan on the C side: swiftc
#      has no -sanitize=undefined on Linux; Swift code traps on overflow and out-of-bounds
#      access by itself in these debug builds); the Swift XCTest suite with
#      `swift test --sanitize=address` (LeakSanitizer off there: XCTest and Foundation on
#      Linux leak the test-suite object graph at exit; the C tests check the library's leaks).
#   2. ThreadSanitizer: the library built with `-sanitize=thread` (scratch .build-tsan), every
#      C test (test_threads and test_response's threads above all) compiled with
#      -fsanitize=thread, and the Swift suite with `swift test --sanitize=thread` (it holds the
#      concurrency test RequestSerializerTests.testThatManyThreadsCanBuildFromOneSerializer).
#   3. valgrind (memcheck, zero definite/indirect leaks) over the release library through
#      ctest's valgrind_* tests (skip with --skip-valgrind when ctest already ran them).
#   4. Canaries: deliberate bugs (heap overflow and use-after-free through the library, a
#      leaked handle, C signed overflow, two threads changing one afs_value) that each
#      sanitizer must report, so a silently inactive sanitizer fails the run.
#
# Exits non-zero on any finding, test failure or undetected canary. Python stays out.
# Logs: build-sanitize/*.log (kept; the last lines of a failing one are printed).
#
#   scripts/sanitize.sh [--skip-valgrind]
#
# Why the C side uses clang: the Swift library's instrumentation needs the sanitizer runtime
# of the same LLVM (the toolchain's clang); gcc's libasan/libtsan would clash with it.
# Why test programs linked against the TSan library also link a tiny interposer (below):
# Synchronization.Mutex takes its contended path (futex) inside the uninstrumented
# libswiftSynchronization.so, so TSan would miss that lock's ordering and report false
# races in code that holds it; the interposer tells TSan about it (__tsan_acquire/release).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

skip_valgrind=0
for a in "$@"; do
    case "$a" in
        --skip-valgrind) skip_valgrind=1 ;;
        -h|--help) sed -n "2,31p" "$0"; exit 0 ;;
        *) echo "sanitize.sh: unknown option $a" >&2; exit 2 ;;
    esac
done

CLANG=${AFS_CLANG:-$(dirname "$(command -v swift)")/clang}
[ -x "$CLANG" ] || CLANG=$(command -v clang || echo clang)   # the toolchain's clang is best (same LLVM)
SWIFT_LIBS=$(cd "$(dirname "$(command -v swift)")/../lib/swift/linux" 2>/dev/null && pwd)
out="$root/build-sanitize"
rm -rf "$out"
mkdir -p "$out/asan" "$out/tsan" "$out/scratch"
scratch="$out/scratch"

rows=()
failed=0
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
row() { rows+=("$1|$2|$3|$4"); printf '  %-44s %-14s %-28s %s\n' "$1" "$2" "$3" "$4"; }
show_log() { echo "  --- last lines of $1:"; tail -n 30 "$1" | sed 's/^/  | /'; }

# A sanitizer finding in a log, whatever the exit status said.
FINDINGS='ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|runtime error:|SUMMARY: UndefinedBehaviorSanitizer'

# allocator_may_return_null=1: malloc answers an impossible size with NULL, as libc does, so
# the tests of the library's out-of-memory paths (a request for 2^62 bytes must become
# AFS_E_NO_MEMORY) run under the sanitizers instead of stopping them.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:allocator_may_return_null=1"
export LSAN_OPTIONS="exitcode=23"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1"

# run SUITE SANITIZER LOG CMD... — one table row.
run() {
    local suite=$1 san=$2 log=$3
    shift 3
    local t0
    t0=$(now)
    "$@" >"$log" 2>&1
    local rc=$? result
    if grep -qE "$FINDINGS" "$log"; then
        result="FINDING (rc=$rc)"
    elif [ $rc -ne 0 ]; then
        result="FAIL (rc=$rc)"
    else
        result="clean"
    fi
    row "$suite" "$san" "$result" "$(elapsed "$t0")"
    if [ "$result" != clean ]; then
        failed=1
        show_log "$log"
    fi
}

# canary SUITE SANITIZER PATTERN LOG CMD... — the run must fail and report PATTERN.
canary() {
    local suite=$1 san=$2 pattern=$3 log=$4
    shift 4
    local t0
    t0=$(now)
    "$@" >"$log" 2>&1
    local rc=$?
    if [ $rc -ne 0 ] && grep -qE "$pattern" "$log"; then
        row "$suite" "$san" "detected (as expected)" "$(elapsed "$t0")"
    else
        row "$suite" "$san" "NOT DETECTED (rc=$rc)" "$(elapsed "$t0")"
        failed=1
        show_log "$log"
    fi
}

# build NAME LOG CMD... — a build step; a failure stops the run (nothing to test).
build() {
    local name=$1 log=$2
    shift 2
    local t0
    t0=$(now)
    if "$@" >"$log" 2>&1; then
        row "$name" "" "built" "$(elapsed "$t0")"
    else
        row "$name" "" "BUILD FAILED" "$(elapsed "$t0")"
        show_log "$log"
        summary
        exit 1
    fi
}

summary() {
    echo
    echo "| suite | sanitizer | result | time |"
    echo "| --- | --- | --- | --- |"
    local r
    for r in "${rows[@]}"; do
        IFS='|' read -r a b c d <<<"$r"
        echo "| $a | $b | $c | $d |"
    done
    echo
    echo "total: $(elapsed "$T0")"
}

# ---- helper sources: the TSan interposer and the canaries -------------------------------
cat >"$out/tsan_mutex.c" <<'EOF'
/* Tells ThreadSanitizer about the contended path of Swift's Synchronization.Mutex, which
 * runs inside the uninstrumented libswiftSynchronization.so: after _lockSlow acquired the
 * lock, an acquire on the mutex's address; before _unlockSlow releases it, a release. The
 * uncontended paths are atomics inlined into the (instrumented) library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define SWIFTCALL __attribute__((swiftcall))
#define SWIFT_CONTEXT __attribute__((swift_context))
#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
typedef SWIFTCALL void (*lock_slow_t)(uint32_t tid, void *SWIFT_CONTEXT self);
typedef SWIFTCALL void (*unlock_slow_t)(void *SWIFT_CONTEXT self);
SWIFTCALL void afs_tsan_lock_slow(uint32_t tid, void *SWIFT_CONTEXT self) __asm__(LOCK_SLOW);
SWIFTCALL void afs_tsan_unlock_slow(void *SWIFT_CONTEXT self) __asm__(UNLOCK_SLOW);
static lock_slow_t real_lock;
static unlock_slow_t real_unlock;
SWIFTCALL void afs_tsan_lock_slow(uint32_t tid, void *SWIFT_CONTEXT self) {
    real_lock(tid, self);
    __tsan_acquire(self);
}
SWIFTCALL void afs_tsan_unlock_slow(void *SWIFT_CONTEXT self) {
    __tsan_release(self);
    real_unlock(self);
}
__attribute__((constructor)) static void afs_tsan_init(void) {
    real_lock = (lock_slow_t)dlsym(RTLD_NEXT, LOCK_SLOW);
    real_unlock = (unlock_slow_t)dlsym(RTLD_NEXT, UNLOCK_SLOW);
    /* A library that does not use Synchronization.Mutex never calls the two functions
     * above (its locks are pthread mutexes, which TSan intercepts itself). */
    if (!real_lock != !real_unlock) { fprintf(stderr, "tsan_mutex: only one Synchronization symbol found\n"); abort(); }
}
EOF

cat >"$out/canary.c" <<'EOF'
/* Deliberate bugs the sanitizers must report: canary overflow|escape|leak|ubsan|race */
#define _POSIX_C_SOURCE 200809L   /* pthread barriers under -std=c99 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "afserialization.h"
static afs_value *shared;
static pthread_barrier_t start_together;
static void *appender(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start_together);   /* overlap for real: appends take microseconds */
    for (int i = 0; i < 100000; i++) afs_value_append(shared, afs_value_new_int(i), NULL);
    return NULL;
}
int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "overflow") == 0) {          /* the library reads past a heap block */
        char *small = malloc(16);
        memset(small, 'x', 16);
        afs_value *v = afs_value_new_data(small, 64);
        afs_value_free(v);
        free(small);
    } else if (strcmp(what, "escape") == 0) {     /* Swift code itself reads past a heap block */
        /* shorter than 16 bytes: the escaper's byte loop reads it in Swift (longer input is
           copied with memcpy first, and the interceptor, not Swift's instrumentation, would
           report it) */
        char *small = malloc(8);
        memset(small, 'a', 8);
        afs_free(afs_percent_escape(small, 9, NULL));
        free(small);
    } else if (strcmp(what, "leak") == 0) {       /* a handle never freed */
        afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_JSON);
        afs_request *r = afs_serializer_request(s, "GET", "http://example.com/", NULL, NULL);
        s = NULL;
        r = NULL;
        (void)s; (void)r;
    } else if (strcmp(what, "ubsan") == 0) {      /* C signed overflow */
        int x = INT_MAX - 1;
        x += argc;
        printf("%d\n", x);
    } else if (strcmp(what, "race") == 0) {       /* one afs_value changed by two threads */
        shared = afs_value_new_array();
        pthread_barrier_init(&start_together, NULL, 2);
        pthread_t a, b;
        pthread_create(&a, NULL, appender, NULL);
        pthread_create(&b, NULL, appender, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        afs_value_free(shared);
    } else {
        return 2;
    }
    return 0;
}
EOF

T0=$(now)
echo "sanitize.sh: clang $CLANG, $(swift --version 2>/dev/null | head -1)"
printf '  %-44s %-14s %-28s %s\n' suite sanitizer result time

csrc=(Tests/c/test_*.c)
CFLAGS=(-std=c99 -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror -Iinclude -fuse-ld=lld)

# ---- 1. ASan (+ LSan, + UBSan on the C side) ------------------------------------------
build "build library + Swift tests (ASan)" "$out/build-asan.log" \
    swift build --build-tests --sanitize=address --scratch-path "$root/.build-asan"
asanlib="$root/.build-asan/debug"
cc_asan() {
    "$CLANG" "${CFLAGS[@]}" -fsanitize=address,undefined -fno-sanitize-recover=all "$1" \
        -L"$asanlib" -lafserialization -Wl,-rpath,"$asanlib" -lpthread -o "$2"
}
compile_asan() {
    for s in "${csrc[@]}"; do cc_asan "$s" "$out/asan/$(basename "$s" .c)" || return 1; done
    cc_asan "$out/canary.c" "$out/asan/canary"
}
build "compile C tests (ASan+UBSan)" "$out/cc-asan.log" compile_asan
for s in "${csrc[@]}"; do
    n=$(basename "$s" .c)
    mkdir -p "$scratch/asan_$n"
    run "C $n" "ASan+UBSan" "$out/asan_$n.log" "$out/asan/$n" "$scratch/asan_$n"
done
canary "canary: heap overflow through the library" "ASan" "heap-buffer-overflow" "$out/canary_overflow.log" "$out/asan/canary" overflow
canary "canary: Swift code reads past a heap block" "ASan" '#0 0x[0-9a-f]+ in [$]s15AFSerialization' "$out/canary_escape.log" "$out/asan/canary" escape
canary "canary: handle never freed" "LSan" "detected memory leaks" "$out/canary_leak.log" "$out/asan/canary" leak
canary "canary: C signed overflow" "UBSan" "runtime error: signed integer overflow" "$out/canary_ubsan.log" "$out/asan/canary" ubsan
# Leaks are not checked here: XCTest and Foundation on Linux leak the whole test-suite
# object graph at exit (rooted at weak-reference side tables in XCTest's
# awaitUsingExpectation and Foundation.Process.run, and a buffer of Data(contentsOf:)).
# The library's own leaks are checked by LSan in every C test above and by valgrind.
ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" run "Swift tests (XCTest, all; no LSan)" "ASan" "$out/swift-asan.log" \
    swift test --skip-build --sanitize=address --scratch-path "$root/.build-asan"

# UBSan for Swift: use it if a later toolchain offers it.
echo 'let x = 1; print(x)' >"$out/probe.swift"
if swiftc -sanitize=undefined "$out/probe.swift" -o "$out/probe" >/dev/null 2>&1; then
    build "build library + Swift tests (UBSan)" "$out/build-ubsan.log" \
        swift build --build-tests --sanitize=undefined --scratch-path "$root/.build-ubsan"
    run "Swift tests (XCTest, all)" "UBSan" "$out/swift-ubsan.log" \
        swift test --skip-build --sanitize=undefined --scratch-path "$root/.build-ubsan"
else
    row "Swift tests (XCTest, all)" "UBSan" "n/a: swiftc has none" "-"
fi

# ---- 2. TSan ----------------------------------------------------------------------------
build "build library + Swift tests (TSan)" "$out/build-tsan.log" \
    swift build --build-tests --sanitize=thread --scratch-path "$root/.build-tsan"
tsanlib="$root/.build-tsan/debug"
cc_tsan() {
    # the TSan runtime of Swift's clang carries libdispatch interceptors: link libdispatch
    "$CLANG" "${CFLAGS[@]}" -fsanitize=thread "$1" "$3" \
        -L"$tsanlib" -lafserialization -Wl,-rpath,"$tsanlib" \
        -L"$SWIFT_LIBS" -ldispatch -lBlocksRuntime -Wl,-rpath,"$SWIFT_LIBS" -lpthread -ldl -o "$2"
}
compile_tsan() {
    for s in "${csrc[@]}"; do cc_tsan "$s" "$out/tsan/$(basename "$s" .c)" "$out/tsan_mutex.c" || return 1; done
    cc_tsan "$out/canary.c" "$out/tsan/canary" "$out/tsan_mutex.c"
}
build "compile C tests (TSan)" "$out/cc-tsan.log" compile_tsan
for n in test_threads test_response test_body_stream; do   # the threaded ones first
    mkdir -p "$scratch/tsan_$n"
    run "C $n" "TSan" "$out/tsan_$n.log" "$out/tsan/$n" "$scratch/tsan_$n"
done
for s in "${csrc[@]}"; do
    n=$(basename "$s" .c)
    # test_fork: ThreadSanitizer does not support fork() while other threads run (its own
    # locks are inherited held: children block); it runs natively, under valgrind and ASan.
    case $n in test_threads|test_response|test_body_stream|test_fork) continue ;; esac
    mkdir -p "$scratch/tsan_$n"
    run "C $n" "TSan" "$out/tsan_$n.log" "$out/tsan/$n" "$scratch/tsan_$n"
done
canary "canary: one afs_value changed by two threads" "TSan" "WARNING: ThreadSanitizer" "$out/canary_race.log" "$out/tsan/canary" race
run "Swift tests (XCTest, all; concurrency)" "TSan" "$out/swift-tsan.log" \
    swift test --skip-build --sanitize=thread --scratch-path "$root/.build-tsan"
if ! grep -q "testThatManyThreadsCanBuildFromOneSerializer' passed" "$out/swift-tsan.log"; then
    row "Swift concurrency test present" "TSan" "MISSING" "-"
    failed=1
fi

# ---- 3. valgrind --------------------------------------------------------------------------
if [ $skip_valgrind -eq 0 ]; then
    if [ ! -f build/CTestTestfile.cmake ]; then
        build "cmake build (release library, C tests)" "$out/cmake.log" \
            bash -c "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2"
    else
        build "cmake build (up to date)" "$out/cmake.log" cmake --build build -j2
    fi
    run "C tests (ctest -R ^valgrind_)" "valgrind" "$out/valgrind.log" \
        ctest --test-dir build -R '^valgrind_' -j2 --output-on-failure
fi

rm -rf "$scratch"
summary
if [ $failed -ne 0 ]; then
    echo "sanitize.sh: FAILED (see build-sanitize/*.log)"
    exit 1
fi
echo "sanitize.sh: all clean"
