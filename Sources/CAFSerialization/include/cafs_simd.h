/*
 * Vector helpers for the core's Swift SIMD code (not installed; static inline, so no
 * symbol is exported). Swift has no bit mask of a vector compare: `cafs_movemask16` is
 * one pmovmskb on x86-64 (SSE2 is part of the baseline) and a loop elsewhere. Swift sees
 * `cafs_u8x16` as SIMD16<UInt8>.
 */
#ifndef CAFS_SIMD_H
#define CAFS_SIMD_H

#include <stdint.h>

typedef uint8_t cafs_u8x16 __attribute__((ext_vector_type(16)));

/** Bit j set when lane j of `v` has its high bit set (a compare's all-ones lane). */
#if defined(__SSE2__)
#include <emmintrin.h>
static inline uint32_t cafs_movemask16(cafs_u8x16 v) { return (uint32_t)_mm_movemask_epi8((__m128i)v); }
#else
static inline uint32_t cafs_movemask16(cafs_u8x16 v) {
    uint32_t m = 0;
    for (int j = 0; j < 16; j++) m |= (uint32_t)(v[j] >> 7) << j;
    return m;
}
#endif

#endif
