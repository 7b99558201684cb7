/* bench_core — the C side of the core benchmark. Times afs_percent_escape, afs_query_string,
 * the JSON reader (afs_value_parse_json) and the JSON serializer against C peers on the same
 * inputs: a table loop and a branchless loop for escaping, memcpy, libcurl's curl_easy_escape,
 * cJSON and jansson for JSON (simdjson runs in bench_simdjson.cpp), and writes the escaping
 * and query inputs to DIR for the Python peers. The JSON documents (doc.json, small_objects.json,
 * long_strings.json) must already be in DIR.
 *
 *   bench_core DIR [LABEL]   prints one "name<TAB>peer<TAB>bytes<TAB>seconds" line per run;
 *                            with LABEL only the library's rows, their peer named "afs LABEL"
 *                            (to time another build of the library in the same run)
 */
#define _POSIX_C_SOURCE 200809L
#include <afserialization.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <jansson.h>
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

/* The other reference: a branchless loop, one table load and one 4-byte store per byte
 * (bytes 0-2 the text, byte 3 the length), advancing 1 or 3. */
static char *c_escape_branchless(const unsigned char *s, size_t n) {
    static uint32_t entry[256];
    if (!entry['a']) {
        static const char hex[] = "0123456789ABCDEF";
        for (int c = 0; c < 256; c++) {
            int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '.' || c == '_' || c == '~' || c == '/' || c == '?';
            entry[c] = keep ? (uint32_t)c | 1u << 24
                            : '%' | (uint32_t)hex[c >> 4] << 8 | (uint32_t)hex[c & 15] << 16 | 3u << 24;
        }
    }
    char *out = malloc(3 * n + 4), *d = out;
    for (size_t i = 0; i < n; i++) {
        uint32_t w = entry[s[i]];
        memcpy(d, &w, 4);
        d += w >> 24;
    }
    *d = 0;
    return out;
}

/* Called through a volatile pointer so the compiler cannot drop a copy nobody reads. */
static void *(*volatile copy_bytes)(void *, const void *, size_t) = memcpy;

static const char *label = NULL;   /* only the library's rows, named "afs LABEL" */

static void emit(const char *name, const char *peer, double bytes, double seconds) {
    char named[256];
    if (label) {
        if (strncmp(peer, "afs", 3) != 0) return;
        snprintf(named, sizeof named, "afs %s", label);
        peer = named;
    }
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
    if (label) return;
    TIME_BEST(5, t, { out = c_escape(s, n); free(out); });
    emit(name, "C table loop -O2", n, t);
    TIME_BEST(5, t, { out = c_escape_branchless(s, n); free(out); });
    emit(name, "C branchless loop -O2", n, t);
    TIME_BEST(5, t, { out = malloc(n + 1); copy_bytes(out, s, n); free(out); });
    emit(name, "malloc+memcpy+free", n, t);
    out = malloc(n + 1);
    memcpy(out, s, n);
    TIME_BEST(5, t, { copy_bytes(out, s, n); });
    free(out);
    emit(name, "memcpy (warm buffer)", n, t);
    CURL *curl = curl_easy_init();
    TIME_BEST(5, t, { out = curl_easy_escape(curl, (const char *)s, (int)n); curl_free(out); });
    curl_easy_cleanup(curl);
    emit(name, "curl_easy_escape", n, t);
}

static char *read_file(const char *dir, const char *name, size_t *len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(1); }
    p[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return p;
}

#define JSON_REPS 7

/* Best of JSON_REPS runs of PARSE (which sets `v`, NULL on failure) then FREE(v): the parse
 * alone into `tp`, the parse plus the free into `tf`. */
#define TIME_PARSE(tp, tf, PARSE, FREE) do { tp = tf = 1e30; for (int r_ = 0; r_ < JSON_REPS; r_++) { \
    double t0_ = now(); PARSE; double t1_ = now(); \
    if (!v) { fprintf(stderr, "%s: " #PARSE " failed\n", file); exit(1); } \
    FREE(v); double t2_ = now(); \
    tp = t1_ - t0_ < tp ? t1_ - t0_ : tp; tf = t2_ - t0_ < tf ? t2_ - t0_ : tf; } } while (0)

/* Parsing DIR/FILE to a tree: the parse alone, and the parse plus freeing the tree. */
static void bench_parse(const char *dir, const char *file, const char *name) {
    size_t n;
    char *text = read_file(dir, file, &n);
    char row[64], row_free[64];
    snprintf(row, sizeof row, "parse_%s", name);
    snprintf(row_free, sizeof row_free, "parse+free_%s", name);
    double t, tf;
    {
        afs_value *v;
        TIME_PARSE(t, tf, v = afs_value_parse_json(text, n, NULL), afs_value_free);
        emit(row, "afs_value_parse_json", n, t);
        emit(row_free, "afs parse + afs_value_free", n, tf);
    }
    if (!label) {
        /* One parser for all the runs (issue 23): its index and stack are kept, as
         * simdjson's reused parser keeps its buffers. */
        afs_json_parser *jp = afs_json_parser_new(NULL);
        afs_value *v;
        TIME_PARSE(t, tf, v = afs_json_parser_parse(jp, text, n, NULL), afs_value_free);
        emit(row, "afs_json_parser_parse (reused)", n, t);
        emit(row_free, "afs reused parser + afs_value_free", n, tf);
        afs_json_parser_free(jp);
    }
    if (!label) {
        cJSON *v;
        TIME_PARSE(t, tf, v = cJSON_ParseWithLength(text, n), cJSON_Delete);
        emit(row, "cJSON_Parse", n, t);
        emit(row_free, "cJSON parse + cJSON_Delete", n, tf);
    }
    if (!label) {
        json_t *v;
        TIME_PARSE(t, tf, v = json_loadb(text, n, 0, NULL), json_decref);
        emit(row, "jansson json_loadb", n, t);
        emit(row_free, "jansson load + json_decref", n, tf);
    }
    free(text);
}

/* Writing the benchmark document's tree back as compact JSON. */
static void bench_write(const char *dir) {
    size_t n;
    char *text = read_file(dir, "doc.json", &n);
    double t;
    afs_value *tree = afs_value_parse_json(text, n, NULL);
    afs_serializer *js = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_serializer_set_json_options(js, AFS_JSON_WITHOUT_ESCAPING_SLASHES, NULL);
    afs_request *r = NULL;
    size_t blen = 0;
    TIME_BEST(JSON_REPS, t, { afs_request_free(r); r = afs_serializer_request(js, "POST", "http://example.com/", tree, NULL); });
    if (!r) exit(1);
    afs_request_body(r, &blen);
    emit("write_doc", "afs JSON serializer", blen, t);
    afs_request_free(r);
    afs_serializer_free(js);
    afs_value_free(tree);
    if (!label) {
        char *out;
        cJSON *c = cJSON_ParseWithLength(text, n);
        TIME_BEST(JSON_REPS, t, { out = cJSON_PrintUnformatted(c); blen = strlen(out); cJSON_free(out); });
        emit("write_doc", "cJSON_PrintUnformatted", blen, t);
        cJSON_Delete(c);
        json_t *j = json_loadb(text, n, 0, NULL);
        TIME_BEST(JSON_REPS, t, { out = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER); blen = strlen(out); free(out); });
        emit("write_doc", "jansson json_dumps", blen, t);
        json_decref(j);
    }
    free(text);
}

static afs_value *str(const char *s) { return afs_value_new_string(s, AFS_NTS, NULL); }

/* VmHWM of this process in KiB (/proc/self/status), -1 when unknown. */
static long vm_hwm_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kib = strtol(line + 6, NULL, 10);
    fclose(f);
    return kib;
}

/* A full walk with the getters, as a C host reads a document. */
static uint64_t walk(const afs_value *v) {
    uint64_t nodes = 1;
    size_t len;
    switch (afs_value_kind_of(v)) {
    case AFS_VALUE_STRING: afs_value_get_string(v, &len); break;
    case AFS_VALUE_INT: (void)afs_value_get_int(v); break;
    case AFS_VALUE_DOUBLE: (void)afs_value_get_double(v); break;
    case AFS_VALUE_ARRAY:
        for (size_t i = 0, n = afs_value_count(v); i < n; i++) nodes += walk(afs_value_at(v, i));
        break;
    case AFS_VALUE_DICT:
        for (size_t i = 0, n = afs_value_count(v); i < n; i++) {
            (void)afs_value_get(v, afs_value_key_at(v, i, &len));
            nodes += walk(afs_value_at(v, i));
        }
        break;
    default: break;
    }
    return nodes;
}

/* bench_core --walk-rss FILE: reads FILE, decodes it as a JSON response and walks every
 * node; prints the body's size and the peak resident memory above the process's start
 * (KiB; the body included). One process per measurement: the peak is per process. */
static int walk_rss(const char *path) {
    long before = vm_hwm_kib();
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return 1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n);
    if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) { perror(path); return 1; }
    fclose(f);
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    afs_value *v = NULL;
    afs_error err;
    if (afs_response_object(rs, 200, "application/json", text, (size_t)n, &v, &err) != AFS_OK) {
        fprintf(stderr, "%s: %s\n", path, err.message);
        return 1;
    }
    uint64_t nodes = walk(v);
    printf("%ld\t%ld\t%llu\n", n, vm_hwm_kib() - before, (unsigned long long)nodes);
    afs_value_free(v);
    afs_response_serializer_free(rs);
    free(text);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--walk-rss") == 0) return walk_rss(argv[2]);
    if (argc < 2) { fprintf(stderr, "usage: bench_core DIR [LABEL] | bench_core --walk-rss FILE\n"); return 2; }
    const char *dir = argv[1];
    if (argc > 2) label = argv[2];
    const size_t n = 64u << 20;
    unsigned char *s = malloc(n);
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    for (size_t i = 0; i < n; i++) s[i] = (unsigned char)alnum[next() % 62];
    bench_escape(dir, "escape_ascii_64MiB", s, n);
    if (!label) write_file(dir, "escape_ascii_64MiB.txt", s, n);
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
    if (!label) write_file(dir, "escape_mixed_64MiB.txt", s, n);
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
    if (!label) write_file(dir, "tree.json", body, blen);
    afs_request_free(r);
    afs_serializer_free(js);
    afs_value_free(tree);

    bench_parse(dir, "doc.json", "doc_10MB");
    bench_parse(dir, "small_objects.json", "small_objects");
    bench_parse(dir, "long_strings.json", "long_strings");
    bench_write(dir);
    return 0;
}
