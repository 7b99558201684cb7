/* Decoder benchmark, C side: the multipart push parser over a body held in memory (fed in
 * 1 MiB pieces, part data counted and dropped), and afs_query_parse over a query string.
 * Usage: bench_decoders multipart BODY CONTENT_TYPE | query FILE | query-pickle FILE
 * Prints one line: "<parts or params (query-pickle: the pickle's bytes)> <bytes> <best seconds of 3>"
 * (query-pickle: afs_query_parse_pickle, what Python's parse_query calls). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "afserialization.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) { fprintf(stderr, "read failed\n"); exit(2); }
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

struct counts { size_t parts; uint64_t bytes; };
static int on_begin(void *c, size_t i, const char *n, const char *f, const char *const *hn,
                    const char *const *hv, size_t hc) {
    (void)i; (void)n; (void)f; (void)hn; (void)hv; (void)hc;
    ((struct counts *)c)->parts++;
    return 0;
}
static int on_data(void *c, const uint8_t *b, size_t n) { (void)b; ((struct counts *)c)->bytes += n; return 0; }

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    size_t len;
    uint8_t *body = slurp(argv[2], &len);
    double best = 1e9;
    afs_error err;
    if (strcmp(argv[1], "multipart") == 0 && argc == 4) {
        struct counts c = {0, 0};
        afs_multipart_limits l = {0};
        l.max_parts = 1000000;
        l.max_field_bytes = UINT64_MAX;
        afs_multipart_handler h = { on_begin, on_data, NULL };
        for (int r = 0; r < 3; r++) {
            c.parts = 0; c.bytes = 0;
            double t0 = now();
            afs_multipart_parser *p = afs_multipart_parser_new(argv[3], &l, &h, &c, &err);
            if (!p) { fprintf(stderr, "%s\n", err.message); return 1; }
            for (size_t i = 0; i < len; i += 1 << 20) {
                size_t k = len - i < (1u << 20) ? len - i : (1u << 20);
                if (afs_multipart_parser_feed(p, body + i, k, &err) != AFS_OK) { fprintf(stderr, "%s\n", err.message); return 1; }
            }
            if (afs_multipart_parser_finish(p, &err) != AFS_OK) { fprintf(stderr, "%s\n", err.message); return 1; }
            afs_multipart_parser_free(p);
            double t = now() - t0;
            if (t < best) best = t;
        }
        printf("%zu %llu %.6f\n", c.parts, (unsigned long long)c.bytes, best);
    } else if (strcmp(argv[1], "query-pickle") == 0) {
        afs_query_parse_options o = {0};
        o.max_params = 1u << 30;
        size_t n = 0;
        for (int r = 0; r < 3; r++) {
            double t0 = now();
            uint8_t *p = afs_query_parse_pickle((const char *)body, len, &o, &n, &err);
            if (!p) { fprintf(stderr, "%s\n", err.message); return 1; }
            afs_free(p);
            double t = now() - t0;
            if (t < best) best = t;
        }
        printf("%zu %zu %.6f\n", n, len, best);
    } else {
        afs_query_parse_options o = {0};
        o.max_params = 1u << 30;
        size_t count = 0;
        for (int r = 0; r < 3; r++) {
            double t0 = now();
            afs_value *v = afs_query_parse((const char *)body, len, &o, &err);
            if (!v) { fprintf(stderr, "%s\n", err.message); return 1; }
            count = afs_value_count(v);
            afs_value_free(v);
            double t = now() - t0;
            if (t < best) best = t;
        }
        printf("%zu %zu %.6f\n", count, len, best);
    }
    free(body);
    return 0;
}
