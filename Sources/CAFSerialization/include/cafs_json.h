/*
 * Stage 1 of the two-stage JSON reader (Sources/AFSerialization/JSON/StructuralIndex.swift),
 * in C so that one library carries AVX2 and AVX-512 paths chosen at run time beside the SSE2 one and
 * a portable one (Swift compiles for the baseline x86-64 only). Not installed; not exported.
 *
 * The scanner indexes 64-byte blocks: each structural character `{}[]:,` outside strings,
 * every unescaped quote, and the first byte of every other run outside strings; it checks
 * UTF-8 (RFC 3629) and control bytes inside strings on the way. `fill` moves the entries
 * from `keep` on to the front of `out` and indexes blocks until `window` entries are nearly
 * reached or the input ends. Stage 2 (Swift) reads the entries and the state.
 */
#ifndef CAFS_JSON_H
#define CAFS_JSON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ways to classify a block: byte by byte, 16-byte SSE2 vectors, 32-byte AVX2 vectors,
 *  64-byte AVX-512 (F, BW) vectors with compares to 64-bit masks. */
enum { CAFS_JSON_PORTABLE = 0, CAFS_JSON_SSE2 = 1, CAFS_JSON_AVX2 = 2, CAFS_JSON_AVX512 = 3 };

typedef struct cafs_json_stage1 {
    const uint8_t *p;          /* the input, n bytes */
    size_t n;
    uint32_t *out;             /* the index: room for window + 72 entries */
    size_t window;
    uint8_t *scratch;          /* 80 bytes: a first or short last block, 3 bytes before it */
    size_t count;              /* entries in out */
    size_t pos;                /* the next block's offset */
    uint64_t escape_carry, in_string_carry, other_carry;
    uint64_t problems;         /* nonzero: a control byte inside a string */
    uint64_t utf8_errors;      /* nonzero: invalid UTF-8 seen */
    uint64_t high_before;      /* whether the last block had a byte of 0x80 or above */
    int path;                  /* CAFS_JSON_PORTABLE, _SSE2, _AVX2 or _AVX512 (one the CPU has) */
} cafs_json_stage1;

/* Bits of the bytes escaped by a backslash (the byte after each backslash that is not
 * itself escaped); `carry` says whether the block's first byte is escaped (in) and the
 * next block's (out). A run of backslashes escapes the byte after it when its length is
 * odd: adding each run's start on an odd bit to the run carries past its end, which tells
 * the runs starting on even bits apart, and the alternating mask is flipped for those. */
static inline uint64_t cafs_json_escaped(uint64_t backslash, uint64_t *carry) {
    if ((backslash | *carry) == 0) return 0;
    const uint64_t even = 0x5555555555555555ULL;
    uint64_t b = backslash & ~*carry;
    uint64_t follows = (b << 1) | *carry;
    uint64_t odd_starts = b & ~even & ~follows;
    uint64_t sum;
    *carry = __builtin_add_overflow(odd_starts, b, &sum) ? 1 : 0;
    return (even ^ (sum << 1)) & follows;
}

/** The path a parse uses by default: the fastest the CPU has, or the one named by the
 *  environment variable AFS_JSON_STAGE1 (portable, sse2, avx2 or avx512; one the CPU lacks falls
 *  back to the fastest it has). Read once. */
int cafs_json_stage1_default_path(void);
/** Whether this CPU (and this build) can run `path`. */
int cafs_json_stage1_has_path(int path);
/** Indexes the next blocks (see above). `s->path` must be a path the CPU has. */
void cafs_json_stage1_fill(cafs_json_stage1 *s, size_t keep);

#ifdef __cplusplus
}
#endif

#endif /* CAFS_JSON_H */
