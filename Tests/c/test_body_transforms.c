/* Body transforms (header section 15): sources of unknown length and chunked framing
 * (write_to_fd into a file, de-chunked here and compared with the raw body), body sources,
 * compression (chunked and exact give the same bytes; magic numbers; serializer-wide rules),
 * digests in headers and trailers (FIPS 180 / RFC 1321 values of "abc"), read errors
 * inside a chunk, rewinds, argument errors and release-exactly-once.
 *
 * Usage: test_body_transforms [scratch-dir]   (default: $TMPDIR or /tmp) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static char scratch[1024];

typedef struct {
    const uint8_t *data;
    size_t len, pos, step;
    long fail_at;          /* -1: never */
    int released;
} gen;

static int64_t gen_read(void *ctx, uint8_t *buf, size_t max) {
    gen *g = ctx;
    if (g->fail_at >= 0 && g->pos >= (size_t)g->fail_at) return -1;
    size_t k = g->len - g->pos;
    if (k > max) k = max;
    if (k > g->step) k = g->step;
    memcpy(buf, g->data + g->pos, k);
    g->pos += k;
    return (int64_t)k;
}
static int gen_rewind(void *ctx) { ((gen *)ctx)->pos = 0; return 0; }
static void gen_release(void *ctx) { ((gen *)ctx)->released++; }

static uint8_t *make_data(size_t n) {
    uint8_t *d = malloc(n ? n : 1);
    uint32_t s = 22;
    for (size_t i = 0; i < n; i++) { s = s * 1103515245u + 12345u; d[i] = (uint8_t)('a' + (s >> 16) % 7); }
    return d;
}

typedef struct { uint8_t *p; size_t n; } buf;

/* Writes the request with afs_request_write_to_fd into a file; returns all bytes. */
static buf wire(afs_request *r) {
    char path[1100];
    snprintf(path, sizeof path, "%s/bt-wire-%d.bin", scratch, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    uint64_t n = 0;
    afs_error err;
    CHECK_STATUS(afs_request_write_to_fd(r, fd, &n, &err), AFS_OK);
    buf b = { malloc(n + 1), (size_t)n };
    CHECK(pread(fd, b.p, n, 0) == (ssize_t)n);
    close(fd);
    unlink(path);
    return b;
}

/* Splits a wire request: returns the offset of the body (after CRLFCRLF). */
static size_t body_offset(buf w) {
    for (size_t i = 0; i + 3 < w.n; i++)
        if (memcmp(w.p + i, "\r\n\r\n", 4) == 0) return i + 4;
    return w.n;
}

/* De-chunks w from `at`; out gets the body, trailers the trailer section. 0 on success. */
static int dechunk(buf w, size_t at, buf *out, char *trailers, size_t tcap) {
    out->p = malloc(w.n + 1);
    out->n = 0;
    for (;;) {
        char *end;
        unsigned long size = strtoul((const char *)w.p + at, &end, 16);
        size_t i = (size_t)((uint8_t *)end - w.p);
        if (i + 2 > w.n || memcmp(w.p + i, "\r\n", 2) != 0) return -1;
        at = i + 2;
        if (size == 0) break;
        if (at + size + 2 > w.n || memcmp(w.p + at + size, "\r\n", 2) != 0) return -1;
        memcpy(out->p + out->n, w.p + at, size);
        out->n += size;
        at += size + 2;
    }
    size_t t = w.n - at;
    if (t < 2 || memcmp(w.p + w.n - 2, "\r\n", 2) != 0 || t >= tcap) return -1;
    memcpy(trailers, w.p + at, t - 2);
    trailers[t - 2] = 0;
    return 0;
}

static buf drain(afs_body_stream *bs, size_t chunk) {
    buf b = { NULL, 0 };
    size_t cap = 1 << 16;
    b.p = malloc(cap);
    for (;;) {
        if (b.n + chunk > cap) { cap *= 2; b.p = realloc(b.p, cap); }
        int64_t r = afs_body_stream_read(bs, b.p + b.n, chunk);
        if (r <= 0) { CHECK(r == 0); break; }
        b.n += (size_t)r;
    }
    return b;
}

static void test_unknown_length_form(void) {
    afs_error err;
    size_t n = 150000;
    uint8_t *data = make_data(n);
    gen g = { data, n, 0, 999, -1, 0 };
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://127.0.0.1/up", NULL, &err);
    CHECK_STATUS(afs_form_set_boundary(f, "XyZ", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_form_data(f, "v", 1, "a", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_stream(f, gen_read, gen_rewind, gen_release, &g, AFS_LENGTH_UNKNOWN,
                                        "s", "s.bin", NULL, &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    afs_form_free(f);
    CHECK(r != NULL);
    CHECK(afs_request_is_chunked(r));
    CHECK(afs_request_header(r, "Content-Length") == NULL);
    afs_body_stream *bs = afs_request_body_stream(r);
    CHECK(afs_body_stream_content_length(bs) == AFS_LENGTH_UNKNOWN);
    size_t hl;
    char *head = afs_request_copy_head(r, &hl, &err);
    CHECK(head && strstr(head, "\r\nTransfer-Encoding: chunked\r\n") && !strstr(head, "Content-Length"));
    afs_free(head);
    buf raw = drain(bs, 4093);
    CHECK(raw.n > n);
    buf w = wire(r);
    buf body;
    char trailers[256];
    CHECK(dechunk(w, body_offset(w), &body, trailers, sizeof trailers) == 0);
    CHECK(body.n == raw.n && memcmp(body.p, raw.p, raw.n) == 0);
    CHECK_STR(trailers, "");
    free(body.p); free(w.p); free(raw.p);
    CHECK(afs_body_stream_rewind(bs, &err) == AFS_OK);
    CHECK_STATUS(afs_body_stream_seek(bs, 10, &err), AFS_E_UNSUPPORTED);
    afs_request_free(r);
    CHECK(g.released == 1);
    afs_serializer_free(s);
    free(data);
}

static void test_body_source_and_errors(void) {
    afs_error err;
    uint8_t *data = make_data(5000);
    gen g = { data, 5000, 0, 100, -1, 0 };
    afs_request *r = afs_request_new("PUT", "http://127.0.0.1/x", &err);
    CHECK_STATUS(afs_request_set_body_stream(r, gen_read, gen_rewind, gen_release, &g, 5000, &err), AFS_OK);
    CHECK(!afs_request_is_chunked(r));
    CHECK_STR(afs_request_header(r, "Content-Length"), "5000");
    size_t len = 1;
    CHECK(afs_request_body(r, &len) == NULL && len == 0);
    buf w = wire(r);
    size_t at = body_offset(w);
    CHECK(w.n - at == 5000 && memcmp(w.p + at, data, 5000) == 0);
    free(w.p);
    /* release runs exactly once, also when the call fails */
    gen g2 = { data, 10, 0, 10, -1, 0 };
    CHECK_STATUS(afs_request_set_body_stream(r, NULL, NULL, gen_release, &g2, 10, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(g2.released == 1);
    CHECK_STATUS(afs_request_set_body_stream(NULL, gen_read, NULL, gen_release, &g2, 10, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(g2.released == 2);
    CHECK_STATUS(afs_request_set_body_stream(r, gen_read, NULL, gen_release, &g2, (uint64_t)INT64_MAX + 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(g2.released == 3);
    /* a read error inside a chunk */
    gen g3 = { data, 5000, 0, 700, 2100, 0 };
    CHECK_STATUS(afs_request_set_body_stream(r, gen_read, gen_rewind, gen_release, &g3, AFS_LENGTH_UNKNOWN, &err), AFS_OK);
    CHECK(g.released == 1);
    CHECK_STATUS(afs_request_set_content_encoding(r, "gzip", 1, 0, &err), AFS_OK);
    int fd = open("/dev/null", O_WRONLY);
    uint64_t n = 0;
    CHECK_STATUS(afs_request_write_to_fd(r, fd, &n, &err), AFS_E_IO);
    CHECK_ERROR(err, AFS_E_IO, "the body source: the read callback failed");
    close(fd);
    /* argument errors */
    CHECK_STATUS(afs_request_set_content_encoding(r, "gzip", 1, 0, &err), AFS_E_STATE);
    afs_request *e = afs_request_new("POST", "http://127.0.0.1/x", &err);
    CHECK_STATUS(afs_request_set_content_encoding(e, "gzip", 0, 0, &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, "no body");
    CHECK_STATUS(afs_request_set_content_encoding(e, "lzma", 0, 0, &err), AFS_E_UNSUPPORTED);
    CHECK_STATUS(afs_request_set_content_encoding(e, NULL, 0, 0, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_request_set_content_encoding(e, "gzip", 10, 0, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_request_set_content_encoding(e, "gzip", 1, 2, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_request_add_digest(e, "sha-1", AFS_DIGEST_HEADER, &err), AFS_E_UNSUPPORTED);
    CHECK_STATUS(afs_request_add_digest(e, "sha-256", (afs_digest_where)7, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_request_add_digest(e, "sha-256", AFS_DIGEST_HEADER, &err), AFS_E_STATE);
    CHECK_STATUS(afs_request_set_temp_dir(NULL, "/tmp", &err), AFS_E_INVALID_ARGUMENT);
    CHECK(!afs_request_is_chunked(NULL));
    afs_request_free(e);
    afs_request_free(r);
    CHECK(g3.released == 1);
    free(data);
}

static const char *abc_sha256 = "sha-256=:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=:";
static const char *abc_md5 = "kAFQmDzST7DWlj99KOF/cg==";

static void test_digests(void) {
    afs_error err;
    gen g = { (const uint8_t *)"abc", 3, 0, 1, -1, 0 };
    afs_request *r = afs_request_new("PUT", "http://127.0.0.1/x", &err);
    CHECK_STATUS(afs_request_set_body_stream(r, gen_read, gen_rewind, NULL, &g, AFS_LENGTH_UNKNOWN, &err), AFS_OK);
    CHECK_STATUS(afs_request_add_digest(r, "sha-256", AFS_DIGEST_HEADER, &err), AFS_OK);
    CHECK_STR(afs_request_header(r, "Content-Digest"), abc_sha256);
    CHECK_STATUS(afs_request_add_digest(r, "md5", AFS_DIGEST_HEADER, &err), AFS_OK);
    CHECK_STR(afs_request_header(r, "Content-MD5"), abc_md5);
    CHECK_STATUS(afs_request_add_digest(r, "MD5", AFS_DIGEST_TRAILER, &err), AFS_OK);
    CHECK_STATUS(afs_request_add_digest(r, "sha-256", AFS_DIGEST_TRAILER, &err), AFS_OK);
    size_t tl;
    CHECK(afs_request_copy_trailers(r, &tl, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, "read to its end");
    size_t hl;
    char *head = afs_request_copy_head(r, &hl, &err);
    CHECK(head && strstr(head, "\r\nTrailer: Content-Digest, Content-MD5\r\n"));
    afs_free(head);
    for (int round = 0; round < 2; round++) {  /* a rewound body has the same digests */
        buf w = wire(r);
        buf body;
        char trailers[512];
        CHECK(dechunk(w, body_offset(w), &body, trailers, sizeof trailers) == 0);
        CHECK(body.n == 3 && memcmp(body.p, "abc", 3) == 0);
        char expected[512];
        snprintf(expected, sizeof expected, "Content-Digest: %s\r\nContent-MD5: %s\r\n", abc_sha256, abc_md5);
        CHECK_STR(trailers, expected);
        free(w.p); free(body.p);
    }
    char *t = afs_request_copy_trailers(r, &tl, &err);
    CHECK(t && strstr(t, abc_md5) && tl == strlen(t));
    afs_free(t);
    afs_request_free(r);
    /* no rewind: no header digest */
    gen g2 = { (const uint8_t *)"abc", 3, 0, 1, -1, 0 };
    r = afs_request_new("PUT", "http://127.0.0.1/x", &err);
    CHECK_STATUS(afs_request_set_body_stream(r, gen_read, NULL, NULL, &g2, 3, &err), AFS_OK);
    CHECK_STATUS(afs_request_add_digest(r, "sha-512", AFS_DIGEST_HEADER, &err), AFS_E_UNSUPPORTED);
    afs_request_free(r);
}

static void test_compression(void) {
    afs_error err;
    size_t n = 200000;
    uint8_t *data = make_data(n);
    const char *codings[] = { "gzip", "deflate", "zstd", "br" };
    const uint8_t magic[][4] = { { 0x1f, 0x8b }, { 0x78 }, { 0x28, 0xb5, 0x2f, 0xfd }, { 0 } };
    const size_t magic_len[] = { 2, 1, 4, 0 };
    for (int c = 0; c < 4; c++) {
        afs_request *chunked = afs_request_new("POST", "http://127.0.0.1/x", &err);
        afs_request *exact = afs_request_new("POST", "http://127.0.0.1/x", &err);
        gen g1 = { data, n, 0, 5000, -1, 0 }, g2 = { data, n, 0, 7, -1, 0 };
        CHECK_STATUS(afs_request_set_body_stream(chunked, gen_read, gen_rewind, NULL, &g1, n, &err), AFS_OK);
        CHECK_STATUS(afs_request_set_body_stream(exact, gen_read, gen_rewind, NULL, &g2, AFS_LENGTH_UNKNOWN, &err), AFS_OK);
        CHECK_STATUS(afs_request_set_content_encoding(chunked, codings[c], 1, 0, &err), AFS_OK);
        CHECK_STATUS(afs_request_set_temp_dir(exact, scratch, &err), AFS_OK);
        CHECK_STATUS(afs_request_set_content_encoding(exact, codings[c], 1, AFS_COMPRESS_EXACT, &err), AFS_OK);
        CHECK(afs_request_is_chunked(chunked) && !afs_request_is_chunked(exact));
        CHECK_STR(afs_request_header(chunked, "Content-Encoding"), codings[c]);
        buf a = drain(afs_request_body_stream(chunked), 1000);
        buf b = drain(afs_request_body_stream(exact), 65536);
        CHECK(a.n == b.n && a.n > 0 && a.n < n / 2 && memcmp(a.p, b.p, a.n) == 0);
        CHECK(memcmp(a.p, magic[c], magic_len[c]) == 0);
        char cl[32];
        snprintf(cl, sizeof cl, "%zu", b.n);
        CHECK_STR(afs_request_header(exact, "Content-Length"), cl);
        free(a.p); free(b.p);
        afs_request_free(chunked);
        afs_request_free(exact);
    }
    /* serializer-wide: threshold, existing Content-Encoding rules */
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_JSON);
    CHECK_STATUS(afs_serializer_set_content_encoding(s, "gzip", 0, AFS_COMPRESS_EXACT, AFS_EXISTING_ENCODING_ERROR, 64, &err), AFS_OK);
    afs_value *small = afs_value_new_dict();
    afs_value_dict_set(small, "a", AFS_NTS, afs_value_new_int(1), &err);
    afs_value *big = afs_value_new_dict();
    afs_value_dict_set(big, "a", AFS_NTS, afs_value_new_string((const char *)data, 3000, &err), &err);
    afs_request *r = afs_serializer_request(s, "POST", "http://127.0.0.1/x", small, &err);
    CHECK(r && afs_request_header(r, "Content-Encoding") == NULL);
    afs_request_free(r);
    r = afs_serializer_request(s, "POST", "http://127.0.0.1/x", big, &err);
    CHECK(r && afs_request_header(r, "Content-Encoding") && strcmp(afs_request_header(r, "Content-Encoding"), "gzip") == 0);
    size_t len = 0;
    const uint8_t *body = afs_request_body(r, &len);
    CHECK(body && len > 2 && len < 3000 && body[0] == 0x1f && body[1] == 0x8b);
    afs_request_free(r);
    CHECK_STATUS(afs_serializer_set_header(s, "Content-Encoding", "identity", &err), AFS_OK);
    CHECK(afs_serializer_request(s, "POST", "http://127.0.0.1/x", big, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, "Content-Encoding: identity");
    CHECK_STATUS(afs_serializer_set_content_encoding(s, "zstd", 0, 0, AFS_EXISTING_ENCODING_SKIP, 0, &err), AFS_OK);
    r = afs_serializer_request(s, "POST", "http://127.0.0.1/x", big, &err);
    CHECK(r && !afs_request_is_chunked(r) && afs_request_body(r, &len) != NULL);
    afs_request_free(r);
    CHECK_STATUS(afs_serializer_set_content_encoding(s, "zstd", 0, 0, AFS_EXISTING_ENCODING_REPLACE, 0, &err), AFS_OK);
    r = afs_serializer_request(s, "POST", "http://127.0.0.1/x", big, &err);
    CHECK(r && afs_request_is_chunked(r) && afs_request_body(r, &len) == NULL && afs_request_body_stream(r) != NULL);
    CHECK_STR(afs_request_header(r, "Content-Encoding"), "zstd");
    afs_request_free(r);
    CHECK_STATUS(afs_serializer_set_content_encoding(s, "zstd", 99, 0, AFS_EXISTING_ENCODING_SKIP, 0, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_serializer_set_content_encoding(s, "zstd", 0, 0, (afs_existing_encoding)9, 0, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_serializer_set_content_encoding(s, NULL, 0, 0, AFS_EXISTING_ENCODING_ERROR, 0, &err), AFS_OK);
    r = afs_serializer_request(s, "POST", "http://127.0.0.1/x", big, &err);
    CHECK_STR(afs_request_header(r, "Content-Encoding"), "identity");
    afs_request_free(r);
    afs_value_free(small);
    afs_value_free(big);
    afs_serializer_free(s);
    free(data);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s", dir && *dir ? dir : "/tmp");
    test_unknown_length_form();
    test_body_source_and_errors();
    test_digests();
    test_compression();
    return check_summary("test_body_transforms");
}
