/* bench_core — the C side of the core benchmark. Times afs_percent_escape, afs_query_string
 * and the JSON serializer against a plain C table loop and libcurl's curl_easy_escape on
 * the same inputs, and writes those inputs to DIR for the Python peers.
 *
 *   bench_core DIR         prints one "name<TAB>peer<TAB>bytes<TAB>seconds" line per run
 */
#define _POSIX_C_SOURCE 200809L
#include <afserialization.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (uint32_t)(rng >> 11); }

/* The reference: a table-lookup escaping loop as a C programmer would write it. */
static char *c_escape(const unsigned char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    static unsigned char keep[256];
    if (!keep['a']) {
        for (int c = 0; c < 256; c++)
            keep[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~' || c == '/' || c == '?';
    }
    char *out = malloc(3 * n + 1), *d = out;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (keep[c]) *d++ = (char)c;
        else { *d++ = '%'; *d++ = hex[c >> 4]; *d++ = hex[c & 15]; }
    }
    *d = 0;
    return out;
}

static void emit(const char *name, const char *peer, double bytes, double seconds) {
    printf("%s\t%s\t%.0f\t%.6f\n", name, peer, bytes, seconds);
    fflush(stdout);
}

/* Best of `reps` runs. */
#define TIME_BEST(reps, var, body) do { var = 1e30; for (int r_ = 0; r_ < (reps); r_++) { \
    double t0_ = now(); body; double t_ = now() - t0_; if (t_ < var) var = t_; } } while (0)

static void write_file(const char *dir, const char *name, const void *data, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) { perror(path); exit(1); }
    fclose(f);
}

static void bench_escape(const char *dir, const char *name, const unsigned char *s, size_t n) {
    double t;
    char *out = NULL;
    TIME_BEST(5, t, { out = afs_percent_escape((const char *)s, n, NULL); if (!out) exit(1); afs_free(out); });
    emit(name, "afs_percent_escape", n, t);
    TIME_BEST(5, t, { out = c_escape(s, n); free(out); });
    emit(name, "C table loop -O2", n, t);
    CURL *curl = curl_easy_init();
    TIME_BEST(5, t, { out = curl_easy_escape(curl, (const char *)s, (int)n); curl_free(out); });
    curl_easy_cleanup(curl);
    emit(name, "curl_easy_escape", n, t);
    char file[64];
    snprintf(file, sizeof file, "%s.txt", name);
    write_file(dir, file, s, n);
}

static afs_value *str(const char *s) { return afs_value_new_string(s, AFS_NTS, NULL); }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_core DIR\n"); return 2; }
    const char *dir = argv[1];
    const size_t n = 64u << 20;
    unsigned char *s = malloc(n);
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    for (size_t i = 0; i < n; i++) s[i] = (unsigned char)alnum[next() % 62];
    bench_escape(dir, "escape_ascii_64MiB", s, n);
    /* mixed: about 31% of bytes to escape (spaces, delimiters, é, €), the rest alphanumeric */
    size_t i = 0;
    while (i < n) {
        uint32_t r = next() % 100;
        if (r < 78 || i + 3 > n) s[i++] = (unsigned char)alnum[next() % 62];
        else if (r < 88) s[i++] = (unsigned char)" &=+%#"[next() % 6];
        else if (r < 96) { s[i++] = 0xC3; s[i++] = 0xA9; }            /* é */
        else { s[i++] = 0xE2; s[i++] = 0x82; s[i++] = 0xAC; }         /* € */
    }
    bench_escape(dir, "escape_mixed_64MiB", s, n);
    free(s);

    /* query string: a flat dictionary of 100,000 pairs */
    afs_value *flat = afs_value_new_dict();
    char key[64], val[64];
    FILE *f;
    char path[4096];
    snprintf(path, sizeof path, "%s/flat_pairs.tsv", dir);
    f = fopen(path, "w");
    for (int k = 0; k < 100000; k++) {
        snprintf(key, sizeof key, "key%d", k);
        snprintf(val, sizeof val, "value %d&more", k);
        afs_value_dict_set(flat, key, AFS_NTS, str(val), NULL);
        fprintf(f, "%s\t%s\n", key, val);
    }
    fclose(f);
    double t;
    size_t qlen = 0;
    char *q;
    TIME_BEST(5, t, { q = afs_query_string(flat, NULL); qlen = strlen(q); afs_free(q); });
    emit("query_flat_100k", "afs_query_string", qlen, t);
    afs_value_free(flat);

    /* query string: 10,000 nested entries (dict -> dict/array -> scalars) */
    afs_value *nested = afs_value_new_dict();
    for (int k = 0; k < 1000; k++) {
        afs_value *item = afs_value_new_dict(), *list = afs_value_new_array();
        for (int j = 0; j < 5; j++) afs_value_append(list, afs_value_new_int(k * 10 + j), NULL);
        afs_value_dict_set(item, "tags", AFS_NTS, list, NULL);
        afs_value_dict_set(item, "name", AFS_NTS, str("nested name"), NULL);
        afs_value *inner = afs_value_new_dict();
        afs_value_dict_set(inner, "x", AFS_NTS, afs_value_new_double(k + 0.5), NULL);
        afs_value_dict_set(inner, "y", AFS_NTS, afs_value_new_bool(k & 1), NULL);
        afs_value_dict_set(item, "point", AFS_NTS, inner, NULL);
        afs_value_dict_set(item, "id", AFS_NTS, afs_value_new_int(k), NULL);
        snprintf(key, sizeof key, "item%d", k);
        afs_value_dict_set(nested, key, AFS_NTS, item, NULL);     /* 10 leaves per item */
    }
    TIME_BEST(5, t, { q = afs_query_string(nested, NULL); qlen = strlen(q); afs_free(q); });
    emit("query_nested_10k", "afs_query_string", qlen, t);
    afs_value_free(nested);

    /* JSON: a ~10 MB parameters tree, serialized as a POST body */
    afs_value *tree = afs_value_new_array();
    size_t approx = 0;
    for (int k = 0; approx < 10u << 20; k++) {
        afs_value *o = afs_value_new_dict();
        snprintf(val, sizeof val, "user-%d@example.com", k);
        afs_value_dict_set(o, "email", AFS_NTS, str(val), NULL);
        afs_value_dict_set(o, "id", AFS_NTS, afs_value_new_int(1000000 + k), NULL);
        afs_value_dict_set(o, "score", AFS_NTS, afs_value_new_double(k * 0.25), NULL);
        afs_value_dict_set(o, "active", AFS_NTS, afs_value_new_bool(k % 3 == 0), NULL);
        afs_value_dict_set(o, "bio", AFS_NTS, str("Likes \"quotes\", tabs\tand unicode: caf\xc3\xa9 \xe2\x82\xac / slash"), NULL);
        afs_value *tags = afs_value_new_array();
        afs_value_append(tags, str("alpha"), NULL);
        afs_value_append(tags, str("beta"), NULL);
        afs_value_append(tags, afs_value_new_null(), NULL);
        afs_value_dict_set(o, "tags", AFS_NTS, tags, NULL);
        afs_value_append(tree, o, NULL);
        approx += 190;
    }
    afs_serializer *js = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_serializer_set_json_options(js, AFS_JSON_FRAGMENTS_ALLOWED, NULL);
    size_t blen = 0;
    afs_request *r = NULL;
    TIME_BEST(5, t, { afs_request_free(r); r = afs_serializer_request(js, "POST", "http://example.com/", tree, NULL); });
    const uint8_t *body = afs_request_body(r, &blen);
    emit("json_10MB", "afs JSON serializer", blen, t);
    write_file(dir, "tree.json", body, blen);
    afs_request_free(r);
    afs_serializer_free(js);
    afs_value_free(tree);
    return 0;
}
