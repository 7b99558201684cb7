/*
 * Private scanning helpers of the XML reader (Sources/AFSerialization/XML), written in C so
 * that the byte loops use SSE2 where the machine has it (x86_64 always does) and a table
 * lookup per byte elsewhere. Header only (static inline); nothing here is exported.
 *
 * Each function returns an index in [i, n]: the first byte at or after `i` that the loop
 * must look at itself (or `n` when there is none). They only skip bytes the caller would
 * skip byte by byte, so the reader's results do not depend on them.
 */
#ifndef CAFS_XML_H
#define CAFS_XML_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ASCII classes: 1 NameStartChar, 2 NameChar (XML 1.0 fifth edition; bytes >= 0x80 have no
 * class here: the reader decodes them). */
static const uint8_t cafs_xml_ascii_class[256] = {
    ['a'] = 3, ['b'] = 3, ['c'] = 3, ['d'] = 3, ['e'] = 3, ['f'] = 3, ['g'] = 3, ['h'] = 3, ['i'] = 3,
    ['j'] = 3, ['k'] = 3, ['l'] = 3, ['m'] = 3, ['n'] = 3, ['o'] = 3, ['p'] = 3, ['q'] = 3, ['r'] = 3,
    ['s'] = 3, ['t'] = 3, ['u'] = 3, ['v'] = 3, ['w'] = 3, ['x'] = 3, ['y'] = 3, ['z'] = 3,
    ['A'] = 3, ['B'] = 3, ['C'] = 3, ['D'] = 3, ['E'] = 3, ['F'] = 3, ['G'] = 3, ['H'] = 3, ['I'] = 3,
    ['J'] = 3, ['K'] = 3, ['L'] = 3, ['M'] = 3, ['N'] = 3, ['O'] = 3, ['P'] = 3, ['Q'] = 3, ['R'] = 3,
    ['S'] = 3, ['T'] = 3, ['U'] = 3, ['V'] = 3, ['W'] = 3, ['X'] = 3, ['Y'] = 3, ['Z'] = 3,
    ['_'] = 3, [':'] = 3,
    ['0'] = 2, ['1'] = 2, ['2'] = 2, ['3'] = 2, ['4'] = 2, ['5'] = 2, ['6'] = 2, ['7'] = 2, ['8'] = 2, ['9'] = 2,
    ['-'] = 2, ['.'] = 2,
};

/** The ASCII class bits of byte `b` (0 for bytes >= 0x80). */
static inline uint8_t cafs_xml_class(uint8_t b) { return cafs_xml_ascii_class[b]; }

/** Skips ASCII NameChars from `i`: the index of the first byte that is not one. */
static inline size_t cafs_xml_scan_name(const uint8_t *p, size_t i, size_t n) {
    while (i < n && (cafs_xml_ascii_class[p[i]] & 2)) i++;
    return i;
}

/** Skips character data from `i`: the index of the first '<', '&', ']' or CR. */
static inline size_t cafs_xml_scan_text(const uint8_t *p, size_t i, size_t n) {
#if defined(__SSE2__)
    const __m128i lt = _mm_set1_epi8('<'), amp = _mm_set1_epi8('&'), rb = _mm_set1_epi8(']'), cr = _mm_set1_epi8('\r');
    while (i + 16 <= n) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, lt), _mm_cmpeq_epi8(x, amp)),
                                 _mm_or_si128(_mm_cmpeq_epi8(x, rb), _mm_cmpeq_epi8(x, cr)));
        unsigned bits = (unsigned)_mm_movemask_epi8(m);
        if (bits) return i + (size_t)__builtin_ctz(bits);
        i += 16;
    }
#endif
    while (i < n) {
        uint8_t b = p[i];
        if (b == '<' || b == '&' || b == ']' || b == '\r') return i;
        i++;
    }
    return n;
}

/** Skips bytes 0x20-0x7F from `i`: the index of the first control or non-ASCII byte (the
 *  UTF-8 check looks at those one by one). */
static inline size_t cafs_xml_scan_ascii(const uint8_t *p, size_t i, size_t n) {
#if defined(__SSE2__)
    const __m128i lim = _mm_set1_epi8(0x20);
    while (i + 16 <= n) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        /* signed: bytes >= 0x80 are negative, so one compare finds both kinds */
        unsigned bits = (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(x, lim));
        if (bits) return i + (size_t)__builtin_ctz(bits);
        i += 16;
    }
#endif
    while (i < n && p[i] >= 0x20 && p[i] < 0x80) i++;
    return i;
}

/** Skips bytes that need no attention in an attribute value from `i`: the index of the
 *  first `quote`, '<', '&', TAB, LF or CR. */
static inline size_t cafs_xml_scan_attr(const uint8_t *p, size_t i, size_t n, uint8_t quote) {
    while (i < n) {
        uint8_t b = p[i];
        if (b == quote || b == '<' || b == '&' || b == '\t' || b == '\n' || b == '\r') return i;
        i++;
    }
    return n;
}

/** Whether the `n` bytes at `a` and `b` are equal. */
static inline int cafs_xml_eq(const uint8_t *a, const uint8_t *b, size_t n) {
    return n == 0 || memcmp(a, b, n) == 0;
}

#endif
