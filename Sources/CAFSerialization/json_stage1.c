/*
 * Stage 1 of the two-stage JSON reader (see include/cafs_json.h and
 * Sources/AFSerialization/JSON/StructuralIndex.swift, which describes the method): three
 * ways to classify a 64-byte block, each compiled into its own copy of the scanner
 * (json_stage1_fill.h) so the AVX2 copy can use AVX2 instructions while the library still
 * runs on any x86-64 CPU:
 *   portable  byte by byte (any CPU; the reference the tests compare the others with);
 *   sse2      16-byte vectors (SSE2 is part of x86-64; compiler vectors elsewhere);
 *   avx2      32-byte vectors, BMI1 tzcnt and a carry-less multiply for the prefix XOR,
 *             chosen at run time when the CPU and the OS support them;
 *   avx512    64-byte vectors (AVX-512 F and BW) whose compares give the 64-bit masks
 *             directly, chosen over avx2 when the CPU and the OS support them.
 */
#include "cafs_json.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CAFS_JSON_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

/* ---- pieces shared by every path ------------------------------------------------- */

typedef struct {
    uint64_t quote, backslash, structural, whitespace, control, high;
} cafs_json_masks;

static inline uint64_t cafs_json_prefix_xor_shifts(uint64_t x) {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

static inline uint64_t cafs_json_ctz_or_zero(uint64_t x) { return x ? (uint64_t)__builtin_ctzll(x) : 0; }

/* ---- portable: byte by byte ------------------------------------------------------- */

static inline void cafs_json_classify_portable(const uint8_t *p, cafs_json_masks *m) {
    memset(m, 0, sizeof *m);
    for (int j = 0; j < 64; j++) {
        uint8_t c = p[j];
        uint64_t bit = 1ULL << j;
        switch (c) {
        case 0x22: m->quote |= bit; break;
        case 0x5C: m->backslash |= bit; break;
        case 0x7B: case 0x7D: case 0x5B: case 0x5D: case 0x3A: case 0x2C: m->structural |= bit; break;
        case 0x20: case 0x0A: case 0x0D: case 0x09: m->whitespace |= bit; break;
        default: break;
        }
        if (c < 0x20) m->control |= bit;
        if (c >= 0x80) m->high = 1;
    }
}

/* Whether the 64 bytes at p (after the 3 bytes before them) break RFC 3629: a byte is a
 * continuation (0x80-0xBF) exactly when a lead 1, 2 or 3 bytes before reaches it (0xC0+,
 * 0xE0+, 0xF0+); C0, C1 and F5-FF never occur; after E0, ED, F0 and F4 the next byte's
 * range is narrower (no overlong forms, surrogates or values above U+10FFFF). A sequence
 * cut off by the end of the input is the caller's check. */
static inline uint64_t cafs_json_utf8_portable(const uint8_t *p) {
    uint64_t bad = 0;
    for (int j = 0; j < 64; j++) {
        uint8_t v = p[j], p1 = p[j - 1], p2 = p[j - 2], p3 = p[j - 3];
        int cont = (v & 0xC0) == 0x80;
        int needed = p1 >= 0xC0 || p2 >= 0xE0 || p3 >= 0xF0;
        bad |= (uint64_t)(cont != needed) | ((v & 0xFE) == 0xC0) | (v >= 0xF5)
             | (p1 == 0xE0 && v < 0xA0) | (p1 == 0xED && v > 0x9F)
             | (p1 == 0xF0 && v < 0x90) | (p1 == 0xF4 && v > 0x8F);
    }
    return bad;
}

#define FILL_NAME cafs_json_fill_portable
#define FILL_ATTR
#define FILL_SKIP_IN_STRING 0
#define UTF8_DECL uint64_t acc = 0;
#define UTF8_BLOCK(src) (acc |= cafs_json_utf8_portable(src))
#define UTF8_ANY() (acc != 0)
#define CLASSIFY(src, m) cafs_json_classify_portable(src, m)
#define STOPS(src, high) 1
#define PREFIX_XOR(x) cafs_json_prefix_xor_shifts(x)
#define CTZ(x) cafs_json_ctz_or_zero(x)
#include "json_stage1_fill.h"

/* ---- sse2: 16-byte vectors -------------------------------------------------------- */

typedef uint8_t cafs_v16 __attribute__((vector_size(16)));

static inline cafs_v16 v16_load(const uint8_t *p) {
    cafs_v16 v;
    memcpy(&v, p, 16);
    return v;
}
static inline cafs_v16 v16_splat(uint8_t b) { return (cafs_v16){b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b}; }
/* Compares give 0x00 / 0xFF lanes. */
#define V16(cmp) ((cafs_v16)(cmp))

static inline uint64_t v16_bits(cafs_v16 m) {
#ifdef CAFS_JSON_X86
    uint32_t r = (uint32_t)_mm_movemask_epi8((__m128i)m);
    __asm__("" : "+r"(r));  /* opaque: see a_bits */
    return r;
#else
    uint64_t r = 0;
    for (int j = 0; j < 16; j++) r |= (uint64_t)(m[j] >> 7) << j;
    return r;
#endif
}

static inline void cafs_json_classify_sse2(const uint8_t *p, cafs_json_masks *m) {
    cafs_v16 high = v16_splat(0);
    uint64_t q = 0, bs = 0, st = 0, ws = 0, ct = 0;
    for (int j = 0; j < 4; j++) {
        cafs_v16 v = v16_load(p + 16 * j);
        cafs_v16 lower = v | v16_splat(0x20);  /* `[` and `]` with 0x20 set are `{` and `}` */
        q |= v16_bits(V16(v == v16_splat(0x22))) << (16 * j);
        bs |= v16_bits(V16(v == v16_splat(0x5C))) << (16 * j);
        st |= v16_bits(V16(lower == v16_splat(0x7B)) | V16(lower == v16_splat(0x7D)) | V16(v == v16_splat(0x3A))
                       | V16(v == v16_splat(0x2C))) << (16 * j);
        ws |= v16_bits(V16(v == v16_splat(0x20)) | V16(v == v16_splat(0x0A)) | V16(v == v16_splat(0x0D))
                       | V16(v == v16_splat(0x09))) << (16 * j);
        ct |= v16_bits(V16(v < v16_splat(0x20))) << (16 * j);
        high |= v;
    }
    m->quote = q;
    m->backslash = bs;
    m->structural = st;
    m->whitespace = ws;
    m->control = ct;
    m->high = v16_bits(high) != 0;
}

/* Nonzero when the 64 bytes hold a quote, a backslash or a control byte; *high: whether
 * one is 0x80 or above. */
static inline int cafs_json_stops_sse2(const uint8_t *p, uint64_t *high) {
    cafs_v16 s = v16_splat(0), h = v16_splat(0);
    for (int j = 0; j < 4; j++) {
        cafs_v16 v = v16_load(p + 16 * j);
        s |= V16(v == v16_splat(0x22)) | V16(v == v16_splat(0x5C)) | V16(v < v16_splat(0x20));
        h |= v;
    }
    *high = v16_bits(h) != 0;
    return v16_bits(s) != 0;
}

static inline cafs_v16 cafs_json_utf8_16(const uint8_t *p) {
    cafs_v16 v = v16_load(p), p1 = v16_load(p - 1), p2 = v16_load(p - 2), p3 = v16_load(p - 3);
    cafs_v16 cont = V16((v & v16_splat(0xC0)) == v16_splat(0x80));
    cafs_v16 needed = V16(p1 >= v16_splat(0xC0)) | V16(p2 >= v16_splat(0xE0)) | V16(p3 >= v16_splat(0xF0));
    cafs_v16 bad = V16((v & v16_splat(0xFE)) == v16_splat(0xC0)) | V16(v >= v16_splat(0xF5));
    bad |= V16(p1 == v16_splat(0xE0)) & V16(v < v16_splat(0xA0));
    bad |= V16(p1 == v16_splat(0xED)) & V16(v > v16_splat(0x9F));
    bad |= V16(p1 == v16_splat(0xF0)) & V16(v < v16_splat(0x90));
    bad |= V16(p1 == v16_splat(0xF4)) & V16(v > v16_splat(0x8F));
    return (cont ^ needed) | bad;
}

#undef FILL_NAME
#undef FILL_ATTR
#undef FILL_SKIP_IN_STRING
#undef UTF8_DECL
#undef UTF8_BLOCK
#undef UTF8_ANY
#undef CLASSIFY
#undef STOPS
#undef PREFIX_XOR
#undef CTZ
#define FILL_NAME cafs_json_fill_sse2
#define FILL_ATTR
#define FILL_SKIP_IN_STRING 1
#define UTF8_DECL cafs_v16 acc = v16_splat(0);
#define UTF8_BLOCK(src) (acc |= cafs_json_utf8_16(src) | cafs_json_utf8_16((src) + 16) \
                         | cafs_json_utf8_16((src) + 32) | cafs_json_utf8_16((src) + 48))
#define UTF8_ANY() (v16_bits(acc) != 0)
#define CLASSIFY(src, m) cafs_json_classify_sse2(src, m)
#define STOPS(src, high) cafs_json_stops_sse2(src, high)
#define PREFIX_XOR(x) cafs_json_prefix_xor_shifts(x)
#define CTZ(x) cafs_json_ctz_or_zero(x)
#include "json_stage1_fill.h"

/* ---- avx2: 32-byte vectors --------------------------------------------------------- */

#ifdef CAFS_JSON_X86
#define AVX2_ATTR __attribute__((target("avx2,bmi,popcnt,pclmul")))
#define S32(b) _mm256_set1_epi8((char)(b))

AVX2_ATTR static inline __m256i a_ge(__m256i v, uint8_t c) { return _mm256_cmpeq_epi8(_mm256_max_epu8(v, S32(c)), v); }
AVX2_ATTR static inline __m256i a_le(__m256i v, uint8_t c) { return _mm256_cmpeq_epi8(_mm256_min_epu8(v, S32(c)), v); }
AVX2_ATTR static inline __m256i a_eq(__m256i v, uint8_t c) { return _mm256_cmpeq_epi8(v, S32(c)); }
/* The empty asm keeps the mask opaque: without it the compiler folds the masks of a block
 * into a 64-lane boolean vector and spends most of the loop moving single bytes. */
AVX2_ATTR static inline uint64_t a_bits(__m256i m) {
    uint32_t r = (uint32_t)_mm256_movemask_epi8(m);
    __asm__("" : "+r"(r));
    return r;
}

AVX2_ATTR static inline void cafs_json_classify_avx2(const uint8_t *p, cafs_json_masks *m) {
    __m256i v0 = _mm256_loadu_si256((const __m256i *)p), v1 = _mm256_loadu_si256((const __m256i *)(p + 32));
    __m256i l0 = _mm256_or_si256(v0, S32(0x20)), l1 = _mm256_or_si256(v1, S32(0x20));
#define BOTH(expr0, expr1) (a_bits(expr0) | a_bits(expr1) << 32)
    m->quote = BOTH(a_eq(v0, 0x22), a_eq(v1, 0x22));
    m->backslash = BOTH(a_eq(v0, 0x5C), a_eq(v1, 0x5C));
    m->structural = BOTH(_mm256_or_si256(_mm256_or_si256(a_eq(l0, 0x7B), a_eq(l0, 0x7D)), _mm256_or_si256(a_eq(v0, 0x3A), a_eq(v0, 0x2C))),
                         _mm256_or_si256(_mm256_or_si256(a_eq(l1, 0x7B), a_eq(l1, 0x7D)), _mm256_or_si256(a_eq(v1, 0x3A), a_eq(v1, 0x2C))));
    m->whitespace = BOTH(_mm256_or_si256(_mm256_or_si256(a_eq(v0, 0x20), a_eq(v0, 0x0A)), _mm256_or_si256(a_eq(v0, 0x0D), a_eq(v0, 0x09))),
                         _mm256_or_si256(_mm256_or_si256(a_eq(v1, 0x20), a_eq(v1, 0x0A)), _mm256_or_si256(a_eq(v1, 0x0D), a_eq(v1, 0x09))));
    m->control = BOTH(a_le(v0, 0x1F), a_le(v1, 0x1F));
#undef BOTH
    m->high = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(v0, v1)) != 0;
}

AVX2_ATTR static inline int cafs_json_stops_avx2(const uint8_t *p, uint64_t *high) {
    __m256i v0 = _mm256_loadu_si256((const __m256i *)p), v1 = _mm256_loadu_si256((const __m256i *)(p + 32));
    __m256i s = _mm256_or_si256(_mm256_or_si256(_mm256_or_si256(a_eq(v0, 0x22), a_eq(v0, 0x5C)), a_le(v0, 0x1F)),
                                _mm256_or_si256(_mm256_or_si256(a_eq(v1, 0x22), a_eq(v1, 0x5C)), a_le(v1, 0x1F)));
    *high = _mm256_movemask_epi8(_mm256_or_si256(v0, v1)) != 0;
    return !_mm256_testz_si256(s, s);
}

AVX2_ATTR static inline __m256i cafs_json_utf8_32(const uint8_t *p) {
    __m256i v = _mm256_loadu_si256((const __m256i *)p);
    __m256i p1 = _mm256_loadu_si256((const __m256i *)(p - 1));
    __m256i p2 = _mm256_loadu_si256((const __m256i *)(p - 2));
    __m256i p3 = _mm256_loadu_si256((const __m256i *)(p - 3));
    __m256i cont = a_eq(_mm256_and_si256(v, S32(0xC0)), 0x80);
    __m256i needed = _mm256_or_si256(_mm256_or_si256(a_ge(p1, 0xC0), a_ge(p2, 0xE0)), a_ge(p3, 0xF0));
    __m256i bad = _mm256_or_si256(a_eq(_mm256_and_si256(v, S32(0xFE)), 0xC0), a_ge(v, 0xF5));
    bad = _mm256_or_si256(bad, _mm256_and_si256(a_eq(p1, 0xE0), a_le(v, 0x9F)));
    bad = _mm256_or_si256(bad, _mm256_and_si256(a_eq(p1, 0xED), a_ge(v, 0xA0)));
    bad = _mm256_or_si256(bad, _mm256_and_si256(a_eq(p1, 0xF0), a_le(v, 0x8F)));
    bad = _mm256_or_si256(bad, _mm256_and_si256(a_eq(p1, 0xF4), a_ge(v, 0x90)));
    return _mm256_or_si256(_mm256_xor_si256(cont, needed), bad);
}

/* The prefix XOR as one carry-less multiplication by all-ones. */
AVX2_ATTR static inline uint64_t cafs_json_prefix_xor_clmul(uint64_t x) {
    return (uint64_t)_mm_cvtsi128_si64(_mm_clmulepi64_si128(_mm_set_epi64x(0, (long long)x), _mm_set1_epi8((char)0xFF), 0));
}

#undef FILL_NAME
#undef FILL_ATTR
#undef FILL_SKIP_IN_STRING
#undef UTF8_DECL
#undef UTF8_BLOCK
#undef UTF8_ANY
#undef CLASSIFY
#undef STOPS
#undef PREFIX_XOR
#undef CTZ
#define FILL_NAME cafs_json_fill_avx2
#define FILL_ATTR AVX2_ATTR
#define FILL_SKIP_IN_STRING 1
#define UTF8_DECL __m256i acc = _mm256_setzero_si256();
#define UTF8_BLOCK(src) (acc = _mm256_or_si256(acc, _mm256_or_si256(cafs_json_utf8_32(src), cafs_json_utf8_32((src) + 32))))
#define UTF8_ANY() (!_mm256_testz_si256(acc, acc))
#define CLASSIFY(src, m) cafs_json_classify_avx2(src, m)
#define STOPS(src, high) cafs_json_stops_avx2(src, high)
#define PREFIX_XOR(x) cafs_json_prefix_xor_clmul(x)
#define CTZ(x) ((uint64_t)_tzcnt_u64(x))
#include "json_stage1_fill.h"

static int cafs_json_cpu_has_avx2(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, pclmul = (c >> 1) & 1, popcnt = (c >> 23) & 1;
    if (!(osxsave && avx && pclmul && popcnt)) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6) != 6) return 0;  /* the OS saves the XMM and YMM registers */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return ((b >> 5) & 1) && ((b >> 3) & 1);  /* AVX2, BMI1 */
}
/* ---- avx512: 64-byte vectors, compares straight to 64-bit masks -------------------- */

#define AVX512_ATTR __attribute__((target("avx512f,avx512bw,bmi,popcnt,pclmul")))
#define S64(b) _mm512_set1_epi8((char)(b))

AVX512_ATTR static inline void cafs_json_classify_avx512(const uint8_t *p, cafs_json_masks *m) {
    __m512i v = _mm512_loadu_si512((const void *)p);
    __m512i lower = _mm512_or_si512(v, S64(0x20));
    m->quote = _mm512_cmpeq_epi8_mask(v, S64(0x22));
    m->backslash = _mm512_cmpeq_epi8_mask(v, S64(0x5C));
    m->structural = _mm512_cmpeq_epi8_mask(lower, S64(0x7B)) | _mm512_cmpeq_epi8_mask(lower, S64(0x7D))
                  | _mm512_cmpeq_epi8_mask(v, S64(0x3A)) | _mm512_cmpeq_epi8_mask(v, S64(0x2C));
    m->whitespace = _mm512_cmpeq_epi8_mask(v, S64(0x20)) | _mm512_cmpeq_epi8_mask(v, S64(0x0A))
                  | _mm512_cmpeq_epi8_mask(v, S64(0x0D)) | _mm512_cmpeq_epi8_mask(v, S64(0x09));
    m->control = _mm512_cmplt_epu8_mask(v, S64(0x20));
    m->high = _mm512_movepi8_mask(v) != 0;
}

AVX512_ATTR static inline int cafs_json_stops_avx512(const uint8_t *p, uint64_t *high) {
    __m512i v = _mm512_loadu_si512((const void *)p);
    *high = _mm512_movepi8_mask(v) != 0;
    return (_mm512_cmpeq_epi8_mask(v, S64(0x22)) | _mm512_cmpeq_epi8_mask(v, S64(0x5C))
            | _mm512_cmplt_epu8_mask(v, S64(0x20))) != 0;
}

AVX512_ATTR static inline uint64_t cafs_json_utf8_64(const uint8_t *p) {
    __m512i v = _mm512_loadu_si512((const void *)p);
    __m512i p1 = _mm512_loadu_si512((const void *)(p - 1));
    __m512i p2 = _mm512_loadu_si512((const void *)(p - 2));
    __m512i p3 = _mm512_loadu_si512((const void *)(p - 3));
    uint64_t cont = _mm512_cmpeq_epi8_mask(_mm512_and_si512(v, S64(0xC0)), S64(0x80));
    uint64_t needed = _mm512_cmpge_epu8_mask(p1, S64(0xC0)) | _mm512_cmpge_epu8_mask(p2, S64(0xE0))
                    | _mm512_cmpge_epu8_mask(p3, S64(0xF0));
    uint64_t bad = _mm512_cmpeq_epi8_mask(_mm512_and_si512(v, S64(0xFE)), S64(0xC0)) | _mm512_cmpge_epu8_mask(v, S64(0xF5));
    bad |= _mm512_cmpeq_epi8_mask(p1, S64(0xE0)) & _mm512_cmplt_epu8_mask(v, S64(0xA0));
    bad |= _mm512_cmpeq_epi8_mask(p1, S64(0xED)) & _mm512_cmpgt_epu8_mask(v, S64(0x9F));
    bad |= _mm512_cmpeq_epi8_mask(p1, S64(0xF0)) & _mm512_cmplt_epu8_mask(v, S64(0x90));
    bad |= _mm512_cmpeq_epi8_mask(p1, S64(0xF4)) & _mm512_cmpgt_epu8_mask(v, S64(0x8F));
    return (cont ^ needed) | bad;
}

#undef FILL_NAME
#undef FILL_ATTR
#undef FILL_SKIP_IN_STRING
#undef UTF8_DECL
#undef UTF8_BLOCK
#undef UTF8_ANY
#undef CLASSIFY
#undef STOPS
#undef PREFIX_XOR
#undef CTZ
#define FILL_NAME cafs_json_fill_avx512
#define FILL_ATTR AVX512_ATTR
#define FILL_SKIP_IN_STRING 1
#define UTF8_DECL uint64_t acc = 0;
#define UTF8_BLOCK(src) (acc |= cafs_json_utf8_64(src))
#define UTF8_ANY() (acc != 0)
#define CLASSIFY(src, m) cafs_json_classify_avx512(src, m)
#define STOPS(src, high) cafs_json_stops_avx512(src, high)
#define PREFIX_XOR(x) cafs_json_prefix_xor_clmul512(x)
#define CTZ(x) ((uint64_t)_tzcnt_u64(x))
AVX512_ATTR static inline uint64_t cafs_json_prefix_xor_clmul512(uint64_t x) {
    return (uint64_t)_mm_cvtsi128_si64(_mm_clmulepi64_si128(_mm_set_epi64x(0, (long long)x), _mm_set1_epi8((char)0xFF), 0));
}
#include "json_stage1_fill.h"

static int cafs_json_cpu_has_avx512(void) {
    if (!cafs_json_cpu_has_avx2()) return 0;
    unsigned a, b, c, d, lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0xE6) != 0xE6) return 0;  /* and the opmask and ZMM registers */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return ((b >> 16) & 1) && ((b >> 30) & 1);  /* AVX-512 F, BW */
}

#else
static int cafs_json_cpu_has_avx2(void) { return 0; }
static int cafs_json_cpu_has_avx512(void) { return 0; }
#endif

/* ---- dispatch ---------------------------------------------------------------------- */

int cafs_json_stage1_has_path(int path) {
    switch (path) {
    case CAFS_JSON_PORTABLE:
    case CAFS_JSON_SSE2: return 1;
    case CAFS_JSON_AVX2: return cafs_json_cpu_has_avx2();
    case CAFS_JSON_AVX512: return cafs_json_cpu_has_avx512();
    default: return 0;
    }
}

int cafs_json_stage1_default_path(void) {
    static int chosen = -1;
    int path = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
    if (path >= 0) return path;
    path = cafs_json_cpu_has_avx512() ? CAFS_JSON_AVX512 : cafs_json_cpu_has_avx2() ? CAFS_JSON_AVX2 : CAFS_JSON_SSE2;
    const char *forced = getenv("AFS_JSON_STAGE1");
    if (forced) {
        int want = -1;
        if (strcmp(forced, "portable") == 0) want = CAFS_JSON_PORTABLE;
        else if (strcmp(forced, "sse2") == 0) want = CAFS_JSON_SSE2;
        else if (strcmp(forced, "avx2") == 0) want = CAFS_JSON_AVX2;
        else if (strcmp(forced, "avx512") == 0) want = CAFS_JSON_AVX512;
        if (want >= 0 && cafs_json_stage1_has_path(want)) path = want;
    }
    __atomic_store_n(&chosen, path, __ATOMIC_RELAXED);
    return path;
}

void cafs_json_stage1_fill(cafs_json_stage1 *s, size_t keep) {
    switch (s->path) {
#ifdef CAFS_JSON_X86
    case CAFS_JSON_AVX512: cafs_json_fill_avx512(s, keep); break;
    case CAFS_JSON_AVX2: cafs_json_fill_avx2(s, keep); break;
#endif
    case CAFS_JSON_SSE2: cafs_json_fill_sse2(s, keep); break;
    default: cafs_json_fill_portable(s, keep); break;
    }
}
