/*
 * The body of stage 1's scanner, included once per path by json_stage1.c with the path's
 * macros: FILL_NAME, FILL_ATTR, FILL_SKIP_IN_STRING, UTF8_DECL / UTF8_BLOCK / UTF8_ANY,
 * CLASSIFY, STOPS, PREFIX_XOR and CTZ. Not a header of its own (no include guard).
 */
FILL_ATTR static void FILL_NAME(cafs_json_stage1 *s, size_t keep) {
    uint32_t *out = s->out;
    size_t left = s->count > keep ? s->count - keep : 0;
    if (left > 0 && keep > 0) memmove(out, out + keep, left * sizeof *out);
    size_t k = left;
    const uint8_t *p = s->p;
    const size_t n = s->n, window = s->window;
    size_t pos = s->pos;
    uint64_t esc = s->escape_carry, in_string_carry = s->in_string_carry, other_carry = s->other_carry;
    uint64_t problems = s->problems, high_before = s->high_before;
    uint8_t *t = s->scratch;
    UTF8_DECL
    while (pos < n && k + 64 <= window) {
        const uint8_t *src;
        if (pos > 0 && pos + 64 <= n) {
            src = p + pos;
        } else {
            /* The first block (3 zero bytes before it for the UTF-8 check) and a short last
             * block (padded with spaces) are read from the scratch copy. */
            memset(t, 0, 3);
            if (pos >= 3) memcpy(t, p + pos - 3, 3);
            memset(t + 3, 0x20, 64);
            memcpy(t + 3, p + pos, n - pos < 64 ? n - pos : 64);
            src = t + 3;
        }
        if (FILL_SKIP_IN_STRING && in_string_carry) {
            /* Inside a string: a block without a quote, a backslash or a control byte adds
             * nothing to the index (long strings skip the full classification). */
            uint64_t high;
            if (!STOPS(src, &high)) {
                if (high | high_before) UTF8_BLOCK(src);
                high_before = high;
                esc = 0;  /* its first byte may be escaped; no backslash ends it */
                pos += 64;
                continue;
            }
        }
        cafs_json_masks m;
        CLASSIFY(src, &m);
        /* UTF-8: blocks with a byte of 0x80 or above, and the block after one (a sequence
         * may end there). */
        if (m.high | high_before) UTF8_BLOCK(src);
        high_before = m.high;
        uint64_t quotes = m.quote & ~cafs_json_escaped(m.backslash, &esc);
        /* Set from each opening quote up to (not including) its closing quote. */
        uint64_t in_string = PREFIX_XOR(quotes) ^ in_string_carry;
        in_string_carry = (uint64_t)((int64_t)in_string >> 63);
        problems |= m.control & in_string;
        uint64_t outside = ~(in_string | quotes);
        uint64_t other = ~(m.structural | m.whitespace) & outside;
        uint64_t starts = other & ~((other << 1) | other_carry);
        other_carry = other >> 63;
        uint64_t bits = (m.structural & outside) | quotes | starts;
        if (pos + 64 > n) bits &= (1ULL << (n - pos)) - 1;
        /* Up to 8 entries per step, written whether used or not (the index leaves room):
         * fewer mispredicted branches. */
        const uint32_t base = (uint32_t)pos;
        const size_t c = (size_t)__builtin_popcountll(bits);
        uint32_t *w = out + k;
        while (bits) {
            for (int j = 0; j < 8; j++) {
                w[j] = base + (uint32_t)CTZ(bits);
                bits &= bits - 1;
            }
            w += 8;
        }
        k += c;
        pos += 64;
    }
    if (UTF8_ANY()) s->utf8_errors = 1;
    s->count = k;
    s->pos = pos;
    s->escape_carry = esc;
    s->in_string_carry = in_string_carry;
    s->other_carry = other_carry;
    s->problems = problems;
    s->high_before = high_before;
}
