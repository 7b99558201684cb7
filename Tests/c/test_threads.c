/* One serializer shared by many threads: some change headers, query styles and properties
 * while others build requests. Every request must be complete and consistent. */
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
    return check_summary(argv[0]);
}
