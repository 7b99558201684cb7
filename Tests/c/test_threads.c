/* One serializer shared by many threads: some change headers, query styles and properties
 * while others build requests. Every request must be complete and consistent. Then one
 * parsed JSON value read by many threads at once: walking it, writing it as JSON from its
 * nodes, and building its tree for query strings, all at the same time. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <pthread.h>
#include <stdlib.h>

enum { WRITERS = 4, BUILDERS = 8, ROUNDS = 2000 };

static afs_serializer *shared;
static int build_failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *writer(void *arg) {
    int id = (int)(intptr_t)arg;
    char name[32], value[32];
    for (int i = 0; i < ROUNDS; i++) {
        snprintf(name, sizeof name, "X-Writer-%d", id);
        snprintf(value, sizeof value, "%d", i);
        afs_serializer_set_header(shared, name, value, NULL);
        if (i % 3 == 0) afs_serializer_set_header(shared, name, NULL, NULL);
        afs_serializer_set_timeout_interval(shared, 30 + (i % 2) * 30);
        char *copy = afs_serializer_copy_header(shared, "X-Constant");
        if (!copy || strcmp(copy, "constant") != 0) { pthread_mutex_lock(&lock); build_failures++; pthread_mutex_unlock(&lock); }
        afs_free(copy);
    }
    return NULL;
}

static void *builder(void *arg) {
    (void)arg;
    afs_value *p = afs_value_new_dict();
    afs_value_dict_set(p, "q", AFS_NTS, afs_value_new_string("a b", AFS_NTS, NULL), NULL);
    for (int i = 0; i < ROUNDS; i++) {
        afs_error err;
        afs_request *r = afs_serializer_request(shared, i % 2 ? "GET" : "POST", "http://example.com/t", p, &err);
        int ok = r != NULL;
        if (r) {
            double t = afs_request_timeout_interval(r);
            ok = ok && (t == 30 || t == 60);
            ok = ok && afs_request_header(r, "X-Constant") && afs_request_header(r, "User-Agent");
            if (i % 2) ok = ok && strcmp(afs_request_url(r), "http://example.com/t?q=a%20b") == 0;
            else { size_t n; const uint8_t *b = afs_request_body(r, &n); ok = ok && b && n == 7 && memcmp(b, "q=a%20b", 7) == 0; }
            for (size_t h = 0; h < afs_request_header_count(r); h++)
                ok = ok && afs_request_header_name(r, h) && afs_request_header_value(r, h);
        }
        if (!ok) { pthread_mutex_lock(&lock); build_failures++; pthread_mutex_unlock(&lock); }
        afs_request_free(r);
    }
    afs_value_free(p);
    return NULL;
}

static afs_value *parsed;
static afs_serializer *json;
static const char parsed_text[] = "{\"b\":[1,2.5,\"x y\",{\"c\":null}],\"a\":\"\\u00e9/\",\"t\":true}";

static void *reader(void *arg) {
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < ROUNDS / 20; i++) {
        int ok = afs_value_count(parsed) == 3;
        const afs_value *b = afs_value_get(parsed, "b");
        ok = ok && afs_value_count(b) == 4 && afs_value_get_int(afs_value_at(b, 0)) == 1;
        size_t len = 0;
        const char *s = afs_value_get_string(afs_value_get(parsed, "a"), &len);
        ok = ok && s && len == 3 && memcmp(s, "\xc3\xa9/", 4) == 0;
        const char *k = afs_value_key_at(parsed, 2, &len);
        ok = ok && k && strcmp(k, "t") == 0 && afs_value_get_bool(afs_value_at(parsed, 2));
        if ((i + id) % 2) {
            char *q = afs_query_string(parsed, NULL);
            ok = ok && q && strcmp(q, "a=%C3%A9/&b%5B%5D=1&b%5B%5D=2.5&b%5B%5D=x%20y&b%5B%5D%5Bc%5D&t=1") == 0;
            afs_free(q);
        } else {
            afs_request *r = afs_serializer_request(json, "POST", "http://example.com/", parsed, NULL);
            size_t n = 0;
            const uint8_t *body = r ? afs_request_body(r, &n) : NULL;
            const char *want = "{\"b\":[1,2.5,\"x y\",{\"c\":null}],\"a\":\"\xc3\xa9\\/\",\"t\":true}";
            ok = ok && body && n == strlen(want) && memcmp(body, want, n) == 0;
            afs_request_free(r);
        }
        if (!ok) { pthread_mutex_lock(&lock); build_failures++; pthread_mutex_unlock(&lock); }
    }
    return NULL;
}

/* A parsed document whose containers are large and nested (100 records of 40 members, one
 * of them an array): the member indexes the walk makes are published while other threads
 * walk the same containers (issue 19's views). */
static afs_value *records;
static void *record_reader(void *arg) {
    (void)arg;
    int ok = 1;
    const afs_value *list = afs_value_get(records, "records");
    ok = ok && afs_value_count(list) == 100;
    for (int round = 0; round < 20; round++) {
        for (size_t i = 0; i < 100; i++) {
            const afs_value *rec = afs_value_at(list, 99 - i);  /* backwards: the index, not a scan */
            char key[8];
            snprintf(key, sizeof key, "k%d", round % 39);
            ok = ok && rec == afs_value_at(list, 99 - i) && afs_value_count(rec) == 40;
            ok = ok && afs_value_get_int(afs_value_get(rec, key)) == (int64_t)((99 - i) * 100 + (size_t)(round % 39));
            const afs_value *nested = afs_value_get(rec, "n");
            ok = ok && afs_value_get_int(afs_value_at(nested, 1)) == (int64_t)(99 - i);
            size_t len = 0;
            const char *k = afs_value_key_at(rec, 39, &len);
            ok = ok && k && strcmp(k, "n") == 0 && len == 1;
        }
    }
    if (!ok) { pthread_mutex_lock(&lock); build_failures++; pthread_mutex_unlock(&lock); }
    return NULL;
}

static void walk_records_from_threads(void) {
    static char text[100 * 700 + 64];
    size_t n = (size_t)sprintf(text, "{\"records\":[");
    for (int i = 0; i < 100; i++) {
        n += (size_t)sprintf(text + n, "%s{", i ? "," : "");
        for (int j = 0; j < 39; j++) n += (size_t)sprintf(text + n, "\"k%d\":%d,", j, i * 100 + j);
        n += (size_t)sprintf(text + n, "\"n\":[0,%d]}", i);
    }
    n += (size_t)sprintf(text + n, "]}");
    records = afs_value_parse_json(text, n, NULL);
    CHECK(records != NULL);
    pthread_t r[BUILDERS];
    for (int i = 0; i < BUILDERS; i++) pthread_create(&r[i], NULL, record_reader, NULL);
    for (int i = 0; i < BUILDERS; i++) pthread_join(r[i], NULL);
    CHECK(build_failures == 0);
    afs_value_free(records);
}

int main(int argc, char **argv) {
    (void)argc;
    shared = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_serializer_set_header(shared, "X-Constant", "constant", NULL);
    pthread_t w[WRITERS], b[BUILDERS];
    for (int i = 0; i < WRITERS; i++) pthread_create(&w[i], NULL, writer, (void *)(intptr_t)i);
    for (int i = 0; i < BUILDERS; i++) pthread_create(&b[i], NULL, builder, NULL);
    for (int i = 0; i < WRITERS; i++) pthread_join(w[i], NULL);
    for (int i = 0; i < BUILDERS; i++) pthread_join(b[i], NULL);
    CHECK(build_failures == 0);
    afs_serializer_free(shared);

    parsed = afs_value_parse_json(parsed_text, AFS_NTS, NULL);
    json = afs_serializer_new(AFS_SERIALIZER_JSON);
    CHECK(parsed != NULL);
    pthread_t r[BUILDERS];
    for (int i = 0; i < BUILDERS; i++) pthread_create(&r[i], NULL, reader, (void *)(intptr_t)i);
    for (int i = 0; i < BUILDERS; i++) pthread_join(r[i], NULL);
    CHECK(build_failures == 0);
    afs_value_free(parsed);
    afs_serializer_free(json);
    walk_records_from_threads();
    return check_summary(argv[0]);
}
