/* The host is never taken down by its own callbacks, by lengths, or by readers on many
 * threads (issue 10, C layer):
 *   - re-entrancy: a progress callback that seeks its stream, a read callback that reads
 *     its own stream, callbacks that close or free the stream's request, a release
 *     function that calls back into its form — each refused with AFS_E_STATE (or deferred)
 *     while the outer call delivers exactly the body;
 *   - lengths: every function taking a length refuses one above INT64_MAX that is not
 *     AFS_NTS (AFS_E_INVALID_ARGUMENT, NULL, or ignored where nothing is returned);
 *   - const getters walking one tree on 8 threads at once (run under TSan by
 *     scripts/sanitize.sh; here under valgrind for memory errors). */
#include "check.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static afs_error err;
#define BIG ((size_t)INT64_MAX + 1)

/* ---- a form with one callback part of 300,000 bytes -------------------------------- */

typedef struct {
    uint64_t pos, len;
    afs_body_stream *bs;         /* the stream to call back into */
    afs_request *request;
    int mode;                    /* what the callback does, see below */
    int refused, calls;
    afs_status last;
} src_t;

enum { MODE_NONE, MODE_READ_OWN, MODE_SEEK_FROM_READ, MODE_CLOSE, MODE_FREE_REQUEST };

static int64_t src_read(void *ctx, uint8_t *buf, size_t max) {
    src_t *s = ctx;
    s->calls++;
    if (s->bs && s->calls == 2) {
        afs_error e;
        uint8_t tmp[64];
        switch (s->mode) {
        case MODE_READ_OWN:
            if (afs_body_stream_read(s->bs, tmp, sizeof tmp) == -1) {
                s->last = afs_body_stream_error(s->bs, &e);
                s->refused += s->last == AFS_E_STATE && strstr(e.message, "afs_body_stream_read") != NULL;
            }
            break;
        case MODE_SEEK_FROM_READ:
            s->last = afs_body_stream_seek(s->bs, 0, &e);
            s->refused += s->last == AFS_E_STATE;
            s->last = afs_body_stream_rewind(s->bs, &e);
            s->refused += s->last == AFS_E_STATE;
            s->refused += afs_request_set_header(s->request, "X-A", "b", &e) == AFS_E_STATE;
            s->refused += afs_request_write_body_to_file(s->request, "/nonexistent/x", &e) == NULL && e.code == AFS_E_STATE;
            break;
        case MODE_CLOSE:
            afs_body_stream_close(s->bs);   /* deferred to the end of the running read */
            break;
        case MODE_FREE_REQUEST:
            afs_request_free(s->request);   /* deferred to the end of the running read */
            break;
        }
    }
    uint64_t n = s->len - s->pos;
    if (n > max) n = max;
    for (uint64_t i = 0; i < n; i++) buf[i] = (uint8_t)('a' + (s->pos + i) % 26);
    s->pos += n;
    return (int64_t)n;
}

static int src_rewind(void *ctx) {
    ((src_t *)ctx)->pos = 0;
    return 0;
}

static afs_request *make_request(src_t *s, afs_serializer *http) {
    afs_form *f = afs_serializer_multipart_form(http, "POST", "https://example.com/", NULL, &err);
    afs_form_set_boundary(f, "B", &err);
    CHECK_STATUS(afs_form_append_stream(f, src_read, src_rewind, NULL, s, s->len, "f", "f.bin", NULL, &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    afs_form_free(f);
    s->bs = afs_request_body_stream(r);
    s->request = r;
    return r;
}

/* Reads the whole body in 4096-byte reads; the number of bytes, or -1. */
static int64_t drain(afs_body_stream *bs) {
    uint8_t buf[4096];
    int64_t total = 0, n;
    while ((n = afs_body_stream_read(bs, buf, sizeof buf)) > 0) total += n;
    return n < 0 ? -1 : total;
}

typedef struct { afs_body_stream *bs; int seeks, refused; } progress_ctx;
static void seek_from_progress(void *ctx, uint64_t sent, uint64_t total) {
    progress_ctx *p = ctx;
    (void)total;
    if (sent > 0 && p->seeks == 0) {
        afs_error e;
        p->seeks++;
        p->refused += afs_body_stream_seek(p->bs, 0, &e) == AFS_E_STATE;
        afs_body_stream_set_progress(p->bs, NULL, NULL);  /* ignored from inside */
    }
}

static void test_reentrant_stream_calls(void) {
    afs_serializer *http = afs_serializer_new(AFS_SERIALIZER_HTTP);

    /* The case: a progress callback that seeks once. Exactly Content-Length. */
    src_t s1 = {0, 300000, NULL, NULL, MODE_NONE, 0, 0, AFS_OK};
    afs_request *r = make_request(&s1, http);
    progress_ctx p = {s1.bs, 0, 0};
    afs_body_stream_set_progress(s1.bs, seek_from_progress, &p);
    int64_t got = drain(s1.bs);
    CHECK(got == (int64_t)afs_body_stream_content_length(s1.bs));
    CHECK(p.seeks == 1 && p.refused == 1);
    afs_request_free(r);

    /* A read callback that reads its own stream: refused, the outer read loses nothing. */
    src_t s2 = {0, 300000, NULL, NULL, MODE_READ_OWN, 0, 0, AFS_OK};
    r = make_request(&s2, http);
    got = drain(s2.bs);
    CHECK(got == (int64_t)afs_body_stream_content_length(s2.bs));
    CHECK(s2.refused == 1);
    CHECK(afs_body_stream_error(s2.bs, NULL) == AFS_OK);  /* the refusal was cleared by the next read */
    afs_request_free(r);

    /* Seek, rewind, set_header, write_body_to_file from a read callback: all refused. */
    src_t s3 = {0, 300000, NULL, NULL, MODE_SEEK_FROM_READ, 0, 0, AFS_OK};
    r = make_request(&s3, http);
    got = drain(s3.bs);
    CHECK(got == (int64_t)afs_body_stream_content_length(s3.bs));
    CHECK(s3.refused == 4);
    CHECK(afs_request_header(r, "X-A") == NULL);
    afs_request_free(r);

    /* Close from a read callback: the running read completes, the next one sees it closed. */
    src_t s4 = {0, 300000, NULL, NULL, MODE_CLOSE, 0, 0, AFS_OK};
    r = make_request(&s4, http);
    uint8_t buf[4096];
    int64_t n = afs_body_stream_read(s4.bs, buf, sizeof buf);
    while (n > 0 && s4.calls < 2) n = afs_body_stream_read(s4.bs, buf, sizeof buf);
    CHECK(n > 0);
    CHECK(afs_body_stream_read(s4.bs, buf, sizeof buf) == -1);
    CHECK(afs_body_stream_error(s4.bs, &err) == AFS_E_STATE);
    afs_request_free(r);

    /* Free the request from a read callback: deferred; valgrind checks nothing is used
     * after it and nothing leaks. */
    src_t s5 = {0, 300000, NULL, NULL, MODE_FREE_REQUEST, 0, 0, AFS_OK};
    r = make_request(&s5, http);
    n = afs_body_stream_read(s5.bs, buf, sizeof buf);
    while (n > 0 && s5.calls < 2) n = afs_body_stream_read(s5.bs, buf, sizeof buf);
    CHECK(n > 0);   /* the read that freed its request still delivered its bytes */
    /* r is gone now: not touched again. */

    afs_serializer_free(http);
}

/* ---- a release function that calls back into its form ----------------------------- */

typedef struct { afs_form *form; int refused, ran; } release_ctx;
static int64_t read_nothing(void *ctx, uint8_t *buf, size_t max) { (void)ctx; (void)buf; (void)max; return 0; }
static void release_calls_back(void *ctx) {
    release_ctx *c = ctx;
    afs_error e;
    c->ran++;
    c->refused += afs_form_append_form_data(c->form, "x", 1, "late", &e) == AFS_E_STATE;
    afs_form_free(c->form);   /* from inside afs_form_free: ignored (already being freed) */
}

static void test_reentrant_form_calls(void) {
    afs_serializer *http = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_form *f = afs_serializer_multipart_form(http, "POST", "https://example.com/", NULL, &err);
    release_ctx c = {f, 0, 0};
    CHECK_STATUS(afs_form_append_stream(f, read_nothing, NULL, release_calls_back, &c, 0, "n", "f", NULL, &err), AFS_OK);
    afs_form_free(f);
    CHECK(c.ran == 1 && c.refused == 1);
    afs_serializer_free(http);
}

/* ---- lengths above INT64_MAX ------------------------------------------------------- */

static void test_lengths(void) {
    afs_value *d = afs_value_new_dict();
    memset(&err, 0, sizeof err);
    CHECK(afs_value_new_string("abc", SIZE_MAX - 1, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "INT64_MAX");
    CHECK(afs_value_new_string("abc", BIG, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "INT64_MAX");
    CHECK(afs_value_new_data("abc", BIG) == NULL);
    CHECK(afs_value_new_data("abc", AFS_NTS) == NULL);
    CHECK_STATUS(afs_value_dict_set(d, "k", SIZE_MAX - 1, afs_value_new_int(1), &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "INT64_MAX");
    CHECK(afs_value_dict_set_new_dict(d, "k", BIG, &err) == NULL);
    CHECK(afs_value_count(d) == 0);
    CHECK(afs_value_parse_json("[1]", SIZE_MAX - 1, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "INT64_MAX");
    CHECK(afs_percent_escape("a b", SIZE_MAX - 1, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "INT64_MAX");
    CHECK(afs_string_new("abc", SIZE_MAX - 1) == NULL);
    char *ok = afs_string_new("abc", AFS_NTS);       /* AFS_NTS still means NUL-terminated */
    CHECK_STR(ok, "abc");
    afs_free(ok);

    afs_serializer *http = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_form *f = afs_serializer_multipart_form(http, "POST", "https://example.com/", NULL, &err);
    CHECK_STATUS(afs_form_append_form_data(f, "abc", SIZE_MAX - 1, "n", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "INT64_MAX");
    CHECK_STATUS(afs_form_append_form_data(f, "abc", AFS_NTS, "n", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "AFS_NTS is only for strings");
    CHECK_STATUS(afs_form_append_file_data(f, "abc", BIG, "n", "f", NULL, &err), AFS_E_INVALID_ARGUMENT);
    const char *names[] = {"X-A"}, *values[] = {"1"};
    CHECK_STATUS(afs_form_append_part(f, names, values, 1, "abc", SIZE_MAX - 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_form_append_part(f, names, values, BIG, "abc", 3, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "header_count");
    CHECK_STATUS(afs_form_append_stream(f, read_nothing, NULL, NULL, NULL, (uint64_t)INT64_MAX + 1, "n", "f", NULL, &err),
                 AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "INT64_MAX");
    const char *methods[] = {"GET"};
    CHECK_STATUS(afs_serializer_set_uri_methods(http, methods, BIG, &err), AFS_E_INVALID_ARGUMENT);
    afs_request *r = afs_form_finish(f, &err);     /* nothing was appended */
    CHECK(r != NULL && afs_request_body_stream(r) == NULL);
    afs_request_free(r);
    afs_form_free(f);

    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    CHECK_STATUS(afs_response_validate(rs, 200, "application/json", "{}", SIZE_MAX - 1, &err), AFS_E_INVALID_ARGUMENT);
    afs_value *out = NULL;
    CHECK_STATUS(afs_response_object(rs, 200, "application/json", "{}", BIG, &out, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(out == NULL);
    const char *types[] = {"a/b"};
    CHECK_STATUS(afs_response_serializer_set_acceptable_content_types(rs, types, BIG, &err), AFS_E_INVALID_ARGUMENT);
    const int lo[] = {200}, hi[] = {299};
    CHECK_STATUS(afs_response_serializer_set_acceptable_status_codes(rs, lo, hi, BIG, &err), AFS_E_INVALID_ARGUMENT);
    const afs_response_serializer *members[] = {rs};
    CHECK(afs_response_serializer_new_compound(members, BIG, &err) == NULL);
    CHECK(err.code == AFS_E_INVALID_ARGUMENT);
    afs_response_serializer_free(rs);
    afs_serializer_free(http);
    afs_value_free(d);
}

/* ---- const getters on many threads ------------------------------------------------- */

#define THREADS 8
static afs_value *shared_tree;
static int walk_failures[THREADS];

static void *walker(void *arg) {
    int t = (int)(intptr_t)arg;
    for (int round = 0; round < 20; round++) {
        size_t n = afs_value_count(shared_tree);
        for (size_t i = 0; i < n; i++) {
            size_t klen = 0;
            const char *key = afs_value_key_at(shared_tree, i, &klen);
            const afs_value *m = afs_value_at(shared_tree, i);
            const afs_value *inner = afs_value_get(m, "name");
            const char *s = afs_value_get_string(inner, NULL);
            char expected[32];
            snprintf(expected, sizeof expected, "k%zu", i);
            if (!key || strcmp(key, expected) != 0 || !s || strcmp(s, expected) != 0 ||
                afs_value_get_int(afs_value_at(m, 1)) != (int64_t)i)
                walk_failures[t]++;
        }
    }
    return NULL;
}

static void test_concurrent_getters(void) {
    /* Built top-down, so the first reads also complete the tree (under the lock). */
    shared_tree = afs_value_new_dict();
    for (int i = 0; i < 200; i++) {
        char k[32];
        snprintf(k, sizeof k, "k%d", i);
        afs_value *m = afs_value_dict_set_new_dict(shared_tree, k, AFS_NTS, &err);
        afs_value_dict_set(m, "name", AFS_NTS, afs_value_new_string(k, AFS_NTS, NULL), &err);
        afs_value_dict_set(m, "n", AFS_NTS, afs_value_new_int(i), &err);
    }
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, walker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    int failures = 0;
    for (int t = 0; t < THREADS; t++) failures += walk_failures[t];
    CHECK(failures == 0);
    afs_value_free(shared_tree);
}

int main(void) {
    test_reentrant_stream_calls();
    test_reentrant_form_calls();
    test_lengths();
    test_concurrent_getters();
    return check_summary("test_reentrancy");
}
