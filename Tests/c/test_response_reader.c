/* afs_response_reader (header section 14): framing, getters, pipelining with reset, the body
 * callback, trailers and interim codes, every split of the input against one feed, the
 * smuggling and limit statuses with their messages, gzip decoding (zlib is linked by the
 * library anyway; the coded bytes are a constant here), text, afs_response_reader_object,
 * and NULL / wrong-state calls. Runs under valgrind too. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <stdint.h>
#include <stdlib.h>

static afs_status feed_all(afs_response_reader *rd, const char *s, size_t len, size_t *used, afs_error *err) {
    return afs_response_reader_feed(rd, (const uint8_t *)s, len, used, err);
}

#define FEED(rd, lit, used, err) feed_all((rd), (lit), sizeof(lit) - 1, (used), (err))

static void test_basic(void) {
    afs_error err;
    size_t used = 0, len = 0;
    afs_response_reader *rd = afs_response_reader_new("GET", &err);
    CHECK(rd != NULL);
    CHECK(afs_response_reader_state(rd) == AFS_READER_HEAD);
    CHECK(afs_response_reader_reason(rd) == NULL);
    CHECK_STATUS(FEED(rd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=latin1\r\nX-Two:  a b \r\n"
                          "Content-Length: 5\r\n\r\nh\xe9llo", &used, &err), AFS_OK);
    CHECK(afs_response_reader_state(rd) == AFS_READER_DONE);
    CHECK(afs_response_reader_status(rd) == 200);
    CHECK(afs_response_reader_version(rd) == 11);
    CHECK_STR(afs_response_reader_reason(rd), "OK");
    CHECK(afs_response_reader_header_count(rd) == 3);
    CHECK_STR(afs_response_reader_header_name(rd, 1), "X-Two");
    CHECK_STR(afs_response_reader_header_value(rd, 1), "a b");
    CHECK(afs_response_reader_header_name(rd, 3) == NULL);
    CHECK_STR(afs_response_reader_header(rd, "content-LENGTH"), "5");
    CHECK(afs_response_reader_header(rd, "missing") == NULL);
    const uint8_t *body = afs_response_reader_body(rd, &len);
    CHECK(len == 5 && memcmp(body, "h\xe9llo", 5) == 0);
    char *text = afs_response_reader_text(rd, NULL, &len, &err);
    CHECK_STR(text, "h\xc3\xa9llo");
    CHECK(len == 6);
    afs_free(text);
    afs_response_reader_free(rd);
}

static void test_pipelining_and_reset(void) {
    afs_error err;
    size_t used = 0;
    static const char two[] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "3;ext=1\r\nabc\r\n0\r\nDigest: x\r\n\r\nHTTP/1.0 404 Nope\r\n\r\ngone";
    afs_response_reader *rd = afs_response_reader_new("GET", &err);
    CHECK_STATUS(feed_all(rd, two, sizeof two - 1, &used, &err), AFS_OK);
    CHECK(afs_response_reader_state(rd) == AFS_READER_DONE);
    CHECK(afs_response_reader_interim_count(rd) == 1 && afs_response_reader_interim_status(rd, 0) == 100);
    CHECK(afs_response_reader_interim_status(rd, 1) == 0);
    CHECK(afs_response_reader_trailer_count(rd) == 1);
    CHECK_STR(afs_response_reader_trailer_name(rd, 0), "Digest");
    CHECK_STR(afs_response_reader_trailer_value(rd, 0), "x");
    size_t more = 99;
    CHECK_STATUS(feed_all(rd, two + used, sizeof two - 1 - used, &more, &err), AFS_OK);
    CHECK(more == 0);
    CHECK_STATUS(afs_response_reader_reset(rd, "GET", &err), AFS_OK);
    CHECK(afs_response_reader_state(rd) == AFS_READER_HEAD && afs_response_reader_status(rd) == 0);
    CHECK_STATUS(feed_all(rd, two + used, sizeof two - 1 - used, &more, &err), AFS_OK);
    CHECK(used + more == sizeof two - 1);
    CHECK(afs_response_reader_state(rd) == AFS_READER_BODY);       /* to EOF */
    CHECK_STATUS(afs_response_reader_eof(rd, &err), AFS_OK);
    size_t len = 0;
    const uint8_t *b = afs_response_reader_body(rd, &len);
    CHECK(afs_response_reader_status(rd) == 404 && afs_response_reader_version(rd) == 10);
    CHECK(len == 4 && memcmp(b, "gone", 4) == 0);
    CHECK_STATUS(afs_response_reader_reset(rd, "bad method", &err), AFS_E_INVALID_METHOD);
    afs_response_reader_free(rd);
}

struct sink {
    char buf[256];
    size_t len;
    int stop_after;
};

static int collect(void *ctx, const uint8_t *bytes, size_t len) {
    struct sink *s = ctx;
    if (s->len + len > sizeof s->buf) return 1;
    memcpy(s->buf + s->len, bytes, len);
    s->len += len;
    return s->stop_after && s->len >= (size_t)s->stop_after;
}

static void test_body_callback_and_splits(void) {
    static const char resp[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                               "5\r\nhello\r\n1 ; a=\"b\"\r\n \r\n5\r\nworld\r\n0\r\nT: 1\r\n\r\n";
    const size_t n = sizeof resp - 1;
    for (size_t cut = 0; cut <= n; cut++) {
        afs_error err;
        struct sink s = {{0}, 0, 0};
        afs_response_reader *rd = afs_response_reader_new("GET", &err);
        afs_response_reader_set_body_callback(rd, collect, &s);
        size_t a = 0, b = 0;
        CHECK_STATUS(feed_all(rd, resp, cut, &a, &err), AFS_OK);
        CHECK(a == cut);
        CHECK_STATUS(feed_all(rd, resp + cut, n - cut, &b, &err), AFS_OK);
        CHECK(a + b == n);
        CHECK(s.len == 11 && memcmp(s.buf, "hello world", 11) == 0);
        size_t len = 9;
        afs_response_reader_body(rd, &len);
        CHECK(len == 0);
        afs_value *v = NULL;
        afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_HTTP);
        CHECK_STATUS(afs_response_reader_object(rd, rs, &v, &err), AFS_E_STATE);
        CHECK(v == NULL);
        afs_response_serializer_free(rs);
        afs_response_reader_free(rd);
    }
    /* Byte at a time. */
    afs_error err;
    struct sink s = {{0}, 0, 0};
    afs_response_reader *rd = afs_response_reader_new("GET", &err);
    afs_response_reader_set_body_callback(rd, collect, &s);
    for (size_t i = 0; i < n; i++) {
        size_t u = 0;
        CHECK_STATUS(feed_all(rd, resp + i, 1, &u, &err), AFS_OK);
        CHECK(u == 1);
    }
    CHECK(afs_response_reader_state(rd) == AFS_READER_DONE && s.len == 11);
    afs_response_reader_free(rd);
    /* A callback that stops. */
    struct sink stop = {{0}, 0, 3};
    rd = afs_response_reader_new("GET", &err);
    afs_response_reader_set_body_callback(rd, collect, &stop);
    CHECK_STATUS(feed_all(rd, resp, n, NULL, &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, "body callback stopped");
    CHECK_STATUS(afs_response_reader_eof(rd, &err), AFS_E_STATE);      /* sticky */
    afs_response_reader_free(rd);
}

static void expect_error(const char *input, afs_status code, const char *needle) {
    afs_error err;
    memset(&err, 0, sizeof err);
    afs_response_reader *rd = afs_response_reader_new("GET", &err);
    afs_status st = feed_all(rd, input, strlen(input), NULL, &err);
    if (st == AFS_OK) st = afs_response_reader_eof(rd, &err);
    CHECK_STATUS(st, code);
    CHECK_ERROR(err, code, needle);
    CHECK_ERROR(err, code, "byte offset");
    afs_response_reader_free(rd);
}

static void test_smuggling_and_limits(void) {
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", AFS_E_BAD_RESPONSE,
                 "both Content-Length and Transfer-Encoding");
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", AFS_E_BAD_RESPONSE, "differing");
    expect_error("HTTP/1.1 200 OK\r\nA : b\r\n\r\n", AFS_E_BAD_RESPONSE, "line 2, byte offset 18");
    expect_error("HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", AFS_E_BAD_RESPONSE, "obs-fold");
    expect_error("HTTP/1.1 200 OK\nA: b\r\n\r\n", AFS_E_BAD_RESPONSE, "bare LF");
    expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n", AFS_E_BAD_RESPONSE, "overflows");
    expect_error("HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", AFS_E_BAD_RESPONSE, "CR in the value");
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", AFS_E_BAD_RESPONSE, "after 3 of 9 body bytes");

    afs_error err;
    afs_response_reader *rd = afs_response_reader_new("GET", &err);
    afs_reader_limits lim = {0, 2, 0, 0};
    CHECK_STATUS(afs_response_reader_set_limits(rd, &lim, &err), AFS_OK);
    CHECK_STATUS(FEED(rd, "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", NULL, &err), AFS_E_LIMIT);
    CHECK_ERROR(err, AFS_E_LIMIT, "more than 2 header fields");
    CHECK_STATUS(afs_response_reader_set_limits(rd, NULL, &err), AFS_E_STATE);  /* after bytes */
    CHECK_STATUS(afs_response_reader_reset(rd, "HEAD", &err), AFS_OK);
    CHECK_STATUS(FEED(rd, "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n\r\n", NULL, &err), AFS_OK);
    CHECK(afs_response_reader_state(rd) == AFS_READER_DONE);                   /* HEAD: no body */
    afs_response_reader_free(rd);
}

/* "hello gzip\n" compressed by gzip(1) -n. */
static const uint8_t gz[] = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48, 0xcd, 0xc9,
                             0xc9, 0x57, 0x48, 0xaf, 0xca, 0x2c, 0xe0, 0x02, 0x00, 0x39, 0x7c, 0x63, 0x56, 0x0b,
                             0x00, 0x00, 0x00};

static void test_gzip_and_object(void) {
    afs_error err;
    char head[128];
    int n = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n", sizeof gz);
    afs_response_reader *rd = afs_response_reader_new("GET", &err);
    CHECK_STATUS(feed_all(rd, head, (size_t)n, NULL, &err), AFS_OK);
    CHECK_STATUS(afs_response_reader_feed(rd, gz, sizeof gz, NULL, &err), AFS_OK);
    size_t len = 0;
    const uint8_t *b = afs_response_reader_body(rd, &len);
    CHECK(len == 11 && memcmp(b, "hello gzip\n", 11) == 0);
    afs_response_reader_free(rd);

    rd = afs_response_reader_new("GET", &err);
    afs_response_reader_set_decodes_content(rd, false);
    CHECK_STATUS(feed_all(rd, head, (size_t)n, NULL, &err), AFS_OK);
    CHECK_STATUS(afs_response_reader_feed(rd, gz, sizeof gz, NULL, &err), AFS_OK);
    b = afs_response_reader_body(rd, &len);
    CHECK(len == sizeof gz && memcmp(b, gz, len) == 0);
    afs_response_reader_free(rd);

    rd = afs_response_reader_new("GET", &err);
    afs_response_reader_set_max_decoded_bytes(rd, 10);
    CHECK_STATUS(feed_all(rd, head, (size_t)n, NULL, &err), AFS_OK);
    CHECK_STATUS(afs_response_reader_feed(rd, gz, sizeof gz, NULL, &err), AFS_E_LIMIT);
    CHECK_ERROR(err, AFS_E_LIMIT, "decoding limit of 10 bytes");
    afs_response_reader_free(rd);

    rd = afs_response_reader_new("GET", &err);
    CHECK_STATUS(feed_all(rd, head, (size_t)n, NULL, &err), AFS_OK);
    CHECK_STATUS(afs_response_reader_feed(rd, gz, sizeof gz - 4, NULL, &err), AFS_OK);
    CHECK_STATUS(afs_response_reader_eof(rd, &err), AFS_E_BAD_RESPONSE);
    afs_response_reader_free(rd);

    /* afs_response_reader_object = afs_response_object with the reader's values. */
    static const char json[] = "HTTP/1.1 500 Oops\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"a\": 1 }";
    rd = afs_response_reader_new("GET", &err);
    afs_value *v = NULL, *w = NULL;
    CHECK_STATUS(afs_response_reader_object(rd, NULL, &v, &err), AFS_E_INVALID_ARGUMENT);
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    CHECK_STATUS(afs_response_reader_object(rd, rs, &v, &err), AFS_E_STATE);
    CHECK_STATUS(FEED(rd, json, NULL, &err), AFS_OK);
    afs_error e2;
    CHECK_STATUS(afs_response_reader_object(rd, rs, &v, &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK_STATUS(afs_response_object(rs, 500, "application/json", "{\"a\": 1 }", 9, &w, &e2), AFS_E_UNACCEPTABLE_STATUS);
    CHECK_STR(err.message, e2.message);
    CHECK(v && w && afs_value_get_int(afs_value_get(v, "a")) == 1 && afs_value_get_int(afs_value_get(w, "a")) == 1);
    afs_value_free(v);
    afs_value_free(w);
    afs_response_serializer_free(rs);
    size_t tl = 0;
    char *t = afs_response_reader_text(rd, "x-no-such-charset", &tl, &err);
    CHECK_STR(t, "{\"a\": 1 }");                /* JSON is UTF-8 (RFC 8259): no label used */
    afs_free(t);
    afs_response_reader_free(rd);
}

static void test_misuse(void) {
    afs_error err;
    CHECK(afs_response_reader_new(NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "request_method is NULL");
    CHECK(afs_response_reader_new("GE T", &err) == NULL);
    CHECK(err.code == AFS_E_INVALID_METHOD);
    CHECK_STATUS(afs_response_reader_feed(NULL, NULL, 0, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_response_reader_eof(NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(afs_response_reader_state(NULL) == AFS_READER_HEAD);
    CHECK(afs_response_reader_status(NULL) == 0 && afs_response_reader_header(NULL, "a") == NULL);
    CHECK(afs_response_reader_body(NULL, NULL) == NULL);
    afs_response_reader_free(NULL);
    afs_response_reader *rd = afs_response_reader_new("GET", &err);
    CHECK_STATUS(afs_response_reader_feed(rd, NULL, 3, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_response_reader_feed(rd, NULL, 0, NULL, &err), AFS_OK);
    CHECK(afs_response_reader_text(rd, NULL, NULL, &err) == NULL);
    CHECK(err.code == AFS_E_STATE);
    CHECK_STATUS(afs_response_reader_eof(rd, &err), AFS_E_BAD_RESPONSE);
    CHECK_ERROR(err, AFS_E_BAD_RESPONSE, "before a response began");
    /* A wrong handle kind is refused, not a crash. */
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_HTTP);
    CHECK_STATUS(afs_response_reader_eof((afs_response_reader *)rs, &err), AFS_E_INVALID_ARGUMENT);
    afs_response_serializer_free(rs);
    afs_response_reader_free(rd);
    /* Unknown charset label named. */
    rd = afs_response_reader_new("GET", &err);
    CHECK_STATUS(FEED(rd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=klingon\r\nContent-Length: 1\r\n\r\nx", NULL, &err), AFS_OK);
    CHECK(afs_response_reader_text(rd, NULL, NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_ENCODING, "klingon");
    afs_response_reader_free(rd);
    rd = afs_response_reader_new("GET", &err);
    CHECK_STATUS(FEED(rd, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", NULL, &err), AFS_OK);
    CHECK(afs_response_reader_text(rd, "x-no-such-charset", NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_ENCODING, "x-no-such-charset");
    afs_response_reader_free(rd);
}

int main(void) {
    test_basic();
    test_pipelining_and_reset();
    test_body_callback_and_splits();
    test_smuggling_and_limits();
    test_gzip_and_object();
    test_misuse();
    return check_summary("test_response_reader");
}
