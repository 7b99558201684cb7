/* Body streams: chunk-size invariance (1, random 1-16, 4096, 65536 and part boundaries at
 * every offset around buffer ends), seek and rewind, sticky errors, length mismatches both
 * ways, callbacks, progress, throttling, close, write_to_fd (files, pipes, sockets, EPIPE,
 * ENOSPC, EFBIG and repeating the call), write_body_to_file, and thousands of file parts
 * with few descriptors.
 *
 * Usage: test_body_stream [scratch-dir]   (default: $TMPDIR or /tmp) */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

#include "check.h"

static char scratch[1024];

/* ---- helpers ------------------------------------------------------------------------ */

typedef struct { uint8_t *p; size_t n, cap; } bytes;

static void bytes_add(bytes *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (b->n + n > c) c *= 2;
        b->p = realloc(b->p, c);
        b->cap = c;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void bytes_str(bytes *b, const char *s) { bytes_add(b, s, strlen(s)); }

static uint32_t rng_state = 12345;
static uint32_t rnd(void) { rng_state = rng_state * 1103515245u + 12345u; return (rng_state >> 8) & 0xFFFFFF; }

/* Drains the rest of a body; chunk 0 means random sizes 1-16. Returns -1 on a -1 read. */
static int drain(afs_body_stream *bs, size_t chunk, bytes *out) {
    uint8_t buf[65536];
    for (;;) {
        size_t n = chunk ? chunk : 1 + rnd() % 16;
        int64_t r = afs_body_stream_read(bs, buf, n);
        if (r < 0) return -1;
        if (r == 0) return 0;
        if ((size_t)r > n) return -2;
        bytes_add(out, buf, (size_t)r);
    }
}

static int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    if (len && fwrite(data, 1, len, f) != len) { fclose(f); return -1; }
    return fclose(f);
}

static bytes read_whole(const char *path) {
    bytes b = {0};
    FILE *f = fopen(path, "rb");
    uint8_t buf[65536];
    size_t n;
    while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) bytes_add(&b, buf, n);
    if (f) fclose(f);
    return b;
}

static void spath(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", scratch, name); }

static afs_serializer *serializer(void) {
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_serializer_set_header(s, "User-Agent", "t", NULL);
    return s;
}

/* A callback part over memory. */
typedef struct {
    const uint8_t *data;
    size_t len;      /* bytes it yields */
    size_t pos;
    long fail_at;    /* -1 when reaching this position, unless < 0 */
    int fail_once;   /* stop failing after the first failure */
    int rewinds, released, reads;
    size_t max_asked;
} src_t;

static int64_t src_read(void *ctx, uint8_t *buf, size_t max) {
    src_t *s = ctx;
    s->reads++;
    if (max == 0) return -1; /* never asked for 0 */
    if (max > s->max_asked) s->max_asked = max;
    if (s->fail_at >= 0 && s->pos >= (size_t)s->fail_at) {
        if (s->fail_once) s->fail_at = -1;
        return -1;
    }
    size_t k = s->len - s->pos < max ? s->len - s->pos : max;
    if (s->fail_at >= 0 && s->pos + k > (size_t)s->fail_at) k = (size_t)s->fail_at - s->pos;
    memcpy(buf, s->data + s->pos, k);
    s->pos += k;
    return (int64_t)k;
}
static int src_rewind(void *ctx) { src_t *s = ctx; s->pos = 0; s->rewinds++; return 0; }
static void src_release(void *ctx) { ((src_t *)ctx)->released++; }

static src_t src_new(const void *data, size_t len) {
    src_t s;
    memset(&s, 0, sizeof s);
    s.data = data;
    s.len = len;
    s.fail_at = -1;
    return s;
}

/* ---- chunk-size invariance ---------------------------------------------------------- */

static uint8_t pattern[300000];

static void test_chunk_invariance(void) {
    afs_error err;
    for (size_t i = 0; i < sizeof pattern; i++) pattern[i] = (uint8_t)(i * 7 + (i >> 9));
    char fpath[1200];
    spath(fpath, sizeof fpath, "big.bin");
    CHECK(write_file(fpath, pattern, 200000) == 0);
    char epath[1200];
    spath(epath, sizeof epath, "empty.txt");
    CHECK(write_file(epath, "", 0) == 0);

    afs_serializer *s = serializer();
    afs_value *p = afs_value_new_dict();
    afs_value_dict_set(p, "field", AFS_NTS, afs_value_new_string("value", AFS_NTS, NULL), NULL);
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", p, &err);
    src_t cb = src_new(pattern + 1000, 70001);
    CHECK_STATUS(afs_form_append_file(f, fpath, "file", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_file(f, epath, "empty", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_stream(f, src_read, src_rewind, src_release, &cb, 70001, "cb", "cb.bin", NULL, &err), AFS_OK);
    CHECK_STATUS(afs_form_append_form_data(f, pattern, 5000, "mem", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_file_data(f, "", 0, "nothing", "n.txt", NULL, &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    afs_form_free(f);
    afs_body_stream *bs = afs_request_body_stream(r);

    /* the reference, built independently */
    const char *B = NULL;
    const char *ct = afs_request_header(r, "Content-Type");
    B = strstr(ct, "boundary=") + 9;
    bytes ref = {0};
    char line[512];
    snprintf(line, sizeof line, "--%s\r\nContent-Disposition: form-data; name=\"field\"\r\n\r\nvalue", B);
    bytes_str(&ref, line);
    snprintf(line, sizeof line, "\r\n--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n"
             "Content-Type: application/octet-stream\r\n\r\n", B);
    bytes_str(&ref, line);
    bytes_add(&ref, pattern, 200000);
    snprintf(line, sizeof line, "\r\n--%s\r\nContent-Disposition: form-data; name=\"empty\"; filename=\"empty.txt\"\r\n"
             "Content-Type: text/plain\r\n\r\n", B);
    bytes_str(&ref, line);
    snprintf(line, sizeof line, "\r\n--%s\r\nContent-Disposition: form-data; name=\"cb\"; filename=\"cb.bin\"\r\n"
             "Content-Type: application/octet-stream\r\n\r\n", B);
    bytes_str(&ref, line);
    bytes_add(&ref, pattern + 1000, 70001);
    snprintf(line, sizeof line, "\r\n--%s\r\nContent-Disposition: form-data; name=\"mem\"\r\n\r\n", B);
    bytes_str(&ref, line);
    bytes_add(&ref, pattern, 5000);
    snprintf(line, sizeof line, "\r\n--%s\r\nContent-Disposition: form-data; name=\"nothing\"; filename=\"n.txt\"\r\n"
             "Content-Type: text/plain\r\n\r\n\r\n--%s--\r\n", B, B);
    bytes_str(&ref, line);
    CHECK(afs_body_stream_content_length(bs) == ref.n);
    char cl[32];
    snprintf(cl, sizeof cl, "%zu", ref.n);
    CHECK_STR(afs_request_header(r, "Content-Length"), cl);

    size_t sizes[] = { 65536, 4096, 0, 1, 3, 4095, 4097, 65535, 65537 - 1, 77777 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t chunk = sizes[i] > 65536 ? 65536 : sizes[i];
        if (sizes[i] == 1 && i > 3) continue;
        CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_OK);
        CHECK(afs_body_stream_position(bs) == 0);
        bytes got = {0};
        CHECK(drain(bs, chunk, &got) == 0);
        CHECK(got.n == ref.n && memcmp(got.p, ref.p, ref.n) == 0);
        if (got.n != ref.n || memcmp(got.p, ref.p, ref.n) != 0)
            fprintf(stderr, "  chunk %zu: got %zu bytes, expected %zu\n", chunk, got.n, ref.n);
        CHECK(afs_body_stream_position(bs) == ref.n);
        CHECK(!afs_body_stream_has_bytes_available(bs));
        CHECK(afs_body_stream_read(bs, (uint8_t *)line, 10) == 0);
        free(got.p);
    }
    CHECK(cb.max_asked <= 65536);
    CHECK(cb.rewinds >= 1);

    /* seek to many offsets (all around every part edge) and read the rest */
    size_t offsets[64], no = 0;
    size_t edges[] = { 0, 1, strlen(B) + 3, 60, 120, 200100, 200200, 200300, 270300, 270400, 275400, ref.n - 5, ref.n - 1, ref.n };
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) offsets[no++] = edges[e];
    for (int k = 0; k < 20; k++) offsets[no++] = rnd() % (ref.n + 1);
    for (size_t i = 0; i < no; i++) {
        size_t off = offsets[i] > ref.n ? ref.n : offsets[i];
        CHECK_STATUS(afs_body_stream_seek(bs, off, &err), AFS_OK);
        CHECK(afs_body_stream_position(bs) == off);
        bytes got = {0};
        CHECK(drain(bs, i % 2 ? 4096 : 0, &got) == 0);
        CHECK(got.n == ref.n - off && (got.n == 0 || memcmp(got.p, ref.p + off, got.n) == 0));
        free(got.p);
    }
    /* seek past the end */
    CHECK_STATUS(afs_body_stream_seek(bs, ref.n + 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "seek");
    CHECK(afs_body_stream_position(bs) == ref.n);

    /* a partial read then seek back into the middle of the file part */
    CHECK_STATUS(afs_body_stream_seek(bs, 100000, &err), AFS_OK);
    uint8_t small[10];
    CHECK(afs_body_stream_read(bs, small, 10) == 10);
    CHECK(memcmp(small, ref.p + 100000, 10) == 0);

    afs_request_free(r);
    CHECK(cb.released == 1);
    afs_value_free(p);
    afs_serializer_free(s);
    free(ref.p);
    unlink(fpath);
    unlink(epath);
}

/* Part boundaries at every offset around buffer ends: bodies of 0..2*B bytes read with
 * buffers of B bytes (and B-1, B+1), for memory, file and callback parts. */
static void test_boundaries_at_every_offset(void) {
    afs_error err;
    afs_serializer *s = serializer();
    char fpath[1200];
    spath(fpath, sizeof fpath, "sweep.bin");
    size_t bufs[] = { 16, 64 };
    for (size_t bi = 0; bi < 2; bi++) {
        size_t B = bufs[bi];
        for (size_t len = 0; len <= 2 * B + 2; len++) {
            for (int kind = 0; kind < 3; kind++) {
                afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
                afs_form_set_boundary(f, "b", NULL);
                src_t cb = src_new(pattern, len);
                if (kind == 0) afs_form_append_form_data(f, pattern, len, "x", &err);
                if (kind == 1) {
                    write_file(fpath, pattern, len);
                    CHECK_STATUS(afs_form_append_file_ex(f, fpath, "x", "f", "t/t", &err), AFS_OK);
                }
                if (kind == 2) afs_form_append_stream(f, src_read, src_rewind, NULL, &cb, len, "x", "f", "t/t", &err);
                afs_form_append_form_data(f, pattern + 7, len % 5, "y", &err);
                afs_request *r = afs_form_finish(f, &err);
                afs_form_free(f);
                bytes ref = {0};
                bytes_str(&ref, kind == 0 ? "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n"
                                          : "--b\r\nContent-Disposition: form-data; name=\"x\"; filename=\"f\"\r\nContent-Type: t/t\r\n\r\n");
                bytes_add(&ref, pattern, len);
                bytes_str(&ref, "\r\n--b\r\nContent-Disposition: form-data; name=\"y\"\r\n\r\n");
                bytes_add(&ref, pattern + 7, len % 5);
                bytes_str(&ref, "\r\n--b--\r\n");
                afs_body_stream *bs = afs_request_body_stream(r);
                for (size_t c = B - 1; c <= B + 1; c++) {
                    afs_body_stream_rewind(bs, NULL);
                    bytes got = {0};
                    int rc = drain(bs, c, &got);
                    check_count++;
                    if (rc != 0 || got.n != ref.n || memcmp(got.p, ref.p, ref.n) != 0) {
                        check_failures++;
                        fprintf(stderr, "sweep: kind %d len %zu chunk %zu: rc %d, %zu vs %zu bytes\n", kind, len, c, rc, got.n, ref.n);
                    }
                    free(got.p);
                }
                /* and at every start offset with tiny reads */
                if (len == B) {
                    for (size_t off = 0; off <= ref.n; off++) {
                        afs_body_stream_seek(bs, off, NULL);
                        bytes got = {0};
                        int rc = drain(bs, 0, &got);
                        check_count++;
                        if (rc != 0 || got.n != ref.n - off || (got.n && memcmp(got.p, ref.p + off, got.n) != 0)) {
                            check_failures++;
                            fprintf(stderr, "seek sweep: kind %d off %zu failed\n", kind, off);
                        }
                        free(got.p);
                    }
                }
                free(ref.p);
                afs_request_free(r);
            }
        }
    }
    unlink(fpath);
    afs_serializer_free(s);
}

/* ---- errors -------------------------------------------------------------------------- */

static afs_request *one_part_request(afs_serializer *s, src_t *cb, uint64_t declared, bool rewind) {
    afs_error err;
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_set_boundary(f, "b", NULL);
    afs_form_append_form_data(f, "head", 4, "first", NULL);
    afs_form_append_stream(f, src_read, rewind ? src_rewind : NULL, src_release, cb, declared, "cb", "c.bin", NULL, NULL);
    afs_form_append_form_data(f, "tail", 4, "last", NULL);
    afs_request *r = afs_form_finish(f, &err);
    afs_form_free(f);
    return r;
}

static void test_callback_errors(void) {
    afs_error err;
    afs_serializer *s = serializer();
    uint8_t buf[100000];

    /* declared longer than what the callback yields */
    src_t cb = src_new(pattern, 100);
    afs_request *r = one_part_request(s, &cb, 101, true);
    afs_body_stream *bs = afs_request_body_stream(r);
    CHECK(afs_body_stream_read(bs, buf, sizeof buf) == -1);
    CHECK(afs_body_stream_position(bs) == 0);
    CHECK_STATUS(afs_body_stream_error(bs, &err), AFS_E_LENGTH_MISMATCH);
    CHECK_ERROR(err, AFS_E_LENGTH_MISMATCH, "ended after 100 of the 101 bytes");
    CHECK_ERROR(err, AFS_E_LENGTH_MISMATCH, "\"cb\"");
    CHECK(!afs_body_stream_has_bytes_available(bs));
    /* sticky */
    CHECK(afs_body_stream_read(bs, buf, 1) == -1);
    afs_error err2;
    CHECK_STATUS(afs_body_stream_error(bs, &err2), AFS_E_LENGTH_MISMATCH);
    CHECK(strcmp(err.message, err2.message) == 0);
    uint64_t w = 99;
    CHECK_STATUS(afs_body_stream_write_to_fd(bs, 1, &w, &err2), AFS_E_LENGTH_MISMATCH);
    CHECK(w == 0);
    /* rewind clears it; the body still fails the same way */
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_OK);
    CHECK_STATUS(afs_body_stream_error(bs, &err), AFS_OK);
    CHECK(afs_body_stream_read(bs, buf, 10) == 10);
    CHECK(afs_body_stream_read(bs, buf, sizeof buf) == -1);
    CHECK(afs_body_stream_position(bs) == 10);
    afs_request_free(r);
    CHECK(cb.released == 1);

    /* the callback yields more than declared: never emitted */
    cb = src_new(pattern, 100);
    r = one_part_request(s, &cb, 99, true);
    bs = afs_request_body_stream(r);
    bytes got = {0};
    CHECK(drain(bs, 1, &got) == -1);
    CHECK_STATUS(afs_body_stream_error(bs, &err), AFS_E_LENGTH_MISMATCH);
    CHECK_ERROR(err, AFS_E_LENGTH_MISMATCH, "more than the 99 bytes declared");
    /* nothing after the part's declared bytes was delivered */
    CHECK(got.n < afs_body_stream_content_length(bs) - strlen("\r\n--b\r\nContent-Disposition: form-data; name=\"last\"\r\n\r\ntail\r\n--b--\r\n") + 1);
    free(got.p);
    afs_request_free(r);

    /* the callback fails (-1); rewind gives it another chance */
    cb = src_new(pattern, 1000);
    cb.fail_at = 500;
    cb.fail_once = 1;
    r = one_part_request(s, &cb, 1000, true);
    bs = afs_request_body_stream(r);
    got.n = 0;
    got.p = NULL;
    got.cap = 0;
    CHECK(drain(bs, 64, &got) == -1);
    CHECK_STATUS(afs_body_stream_error(bs, &err), AFS_E_IO);
    CHECK_ERROR(err, AFS_E_IO, "read callback failed");
    uint64_t at = afs_body_stream_position(bs);
    CHECK(at == got.n);
    /* seek to where it failed: the callback is rewound and skipped forward */
    CHECK_STATUS(afs_body_stream_seek(bs, at, &err), AFS_OK);
    CHECK(drain(bs, 64, &got) == 0);
    CHECK(got.n == afs_body_stream_content_length(bs));
    free(got.p);
    afs_request_free(r);

    /* no rewind function: rewinding after the part was read is unsupported */
    cb = src_new(pattern, 1000);
    r = one_part_request(s, &cb, 1000, false);
    bs = afs_request_body_stream(r);
    CHECK(afs_body_stream_read(bs, buf, 20) == 20);
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_OK); /* nothing of the callback read yet */
    CHECK(afs_body_stream_read(bs, buf, 200) == 200);
    uint64_t pos = afs_body_stream_position(bs);
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_E_UNSUPPORTED);
    CHECK_ERROR(err, AFS_E_UNSUPPORTED, "rewind");
    CHECK(afs_body_stream_position(bs) == pos);
    CHECK_STATUS(afs_body_stream_seek(bs, 10, &err), AFS_E_UNSUPPORTED);
    CHECK_STATUS(afs_body_stream_seek(bs, pos - 1, &err), AFS_E_UNSUPPORTED);
    CHECK_STATUS(afs_body_stream_seek(bs, pos + 100, &err), AFS_OK); /* forward: skipped */
    got.n = 0;
    got.p = NULL;
    got.cap = 0;
    CHECK(drain(bs, 4096, &got) == 0);
    CHECK(got.n == afs_body_stream_content_length(bs) - pos - 100);
    free(got.p);
    CHECK_STATUS(afs_body_stream_seek(bs, afs_body_stream_content_length(bs) - 3, &err), AFS_OK); /* after it */
    /* write_body_to_file needs the callback from its start */
    char out[1200];
    spath(out, sizeof out, "norewind.out");
    CHECK(afs_request_write_body_to_file(r, out, &err) == NULL);
    CHECK_ERROR(err, AFS_E_UNSUPPORTED, "rewind");
    CHECK(access(out, F_OK) != 0);
    afs_request_free(r);
    afs_serializer_free(s);
}

static void test_file_errors(void) {
    afs_error err;
    afs_serializer *s = serializer();
    char fpath[1200];
    spath(fpath, sizeof fpath, "changing.bin");
    uint8_t buf[4096];

    /* truncated after append */
    CHECK(write_file(fpath, pattern, 1000) == 0);
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_append_form_data(f, "x", 1, "a", NULL);
    CHECK_STATUS(afs_form_append_file(f, fpath, "file", &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    afs_form_free(f);
    CHECK(truncate(fpath, 600) == 0);
    afs_body_stream *bs = afs_request_body_stream(r);
    bytes got = {0};
    CHECK(drain(bs, 100, &got) == -1);
    CHECK_STATUS(afs_body_stream_error(bs, &err), AFS_E_LENGTH_MISMATCH);
    CHECK_ERROR(err, AFS_E_LENGTH_MISMATCH, "changing.bin");
    CHECK_ERROR(err, AFS_E_LENGTH_MISMATCH, "1000");
    /* write_to_fd sees the same, and write_body_to_file leaves nothing behind */
    char out[1200];
    spath(out, sizeof out, "trunc.out");
    CHECK(afs_request_write_body_to_file(r, out, &err) == NULL);
    CHECK_ERROR(err, AFS_E_LENGTH_MISMATCH, "changing.bin");
    CHECK(access(out, F_OK) != 0);
    /* extended after append */
    CHECK(write_file(fpath, pattern, 1001) == 0);
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_OK);
    got.n = 0;
    CHECK(drain(bs, 100, &got) == -1);
    CHECK_ERROR((afs_body_stream_error(bs, &err), err), AFS_E_LENGTH_MISMATCH, "1001");
    /* back to its size: fine again */
    CHECK(truncate(fpath, 1000) == 0);
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_OK);
    got.n = 0;
    CHECK(drain(bs, 100, &got) == 0);
    CHECK(got.n == afs_body_stream_content_length(bs));
    /* grows while it is being read: the probe past the end catches it */
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_OK);
    CHECK(afs_body_stream_read(bs, buf, 300) == 300); /* inside the file part: it is open */
    FILE *a = fopen(fpath, "ab");
    fputc('!', a);
    fclose(a);
    got.n = 0;
    CHECK(drain(bs, 4096, &got) == -1);
    CHECK_ERROR((afs_body_stream_error(bs, &err), err), AFS_E_LENGTH_MISMATCH, "more than the 1000 bytes");
    /* shrinks while being read */
    CHECK(truncate(fpath, 1000) == 0);
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_OK);
    CHECK(afs_body_stream_read(bs, buf, 300) == 300);
    CHECK(truncate(fpath, 500) == 0);
    got.n = 0;
    CHECK(drain(bs, 4096, &got) == -1);
    CHECK_ERROR((afs_body_stream_error(bs, &err), err), AFS_E_LENGTH_MISMATCH, "ended after");
    /* removed after append */
    unlink(fpath);
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_OK);
    got.n = 0;
    CHECK(drain(bs, 4096, &got) == -1);
    CHECK_ERROR((afs_body_stream_error(bs, &err), err), AFS_E_IO, "No such file");
    CHECK(err.os_errno == ENOENT);
    free(got.p);
    afs_request_free(r);
    afs_serializer_free(s);
}

static void test_close_and_arguments(void) {
    afs_error err;
    afs_serializer *s = serializer();
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_append_form_data(f, "0123456789", 10, "a", NULL);
    afs_request *r = afs_form_finish(f, &err);
    afs_form_free(f);
    afs_body_stream *bs = afs_request_body_stream(r);
    uint8_t buf[64];
    CHECK(!afs_body_stream_has_bytes_available(bs));      /* not open yet */
    CHECK_STATUS(afs_body_stream_open(bs, &err), AFS_OK);
    CHECK(afs_body_stream_has_bytes_available(bs));
    CHECK(afs_body_stream_read(bs, buf, 5) == 5);
    CHECK(afs_body_stream_has_bytes_available(bs));
    afs_body_stream_close(bs);
    CHECK(!afs_body_stream_has_bytes_available(bs));
    CHECK(afs_body_stream_read(bs, buf, 5) == -1);
    CHECK_STATUS(afs_body_stream_error(bs, &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, "closed");
    CHECK_STATUS(afs_body_stream_open(bs, &err), AFS_E_STATE);
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_E_STATE);
    CHECK_STATUS(afs_body_stream_seek(bs, 0, &err), AFS_E_STATE);
    CHECK_STATUS(afs_body_stream_write_to_fd(bs, 1, NULL, &err), AFS_E_STATE);
    CHECK(afs_request_write_body_to_file(r, "/tmp/never-written", &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, "closed");
    afs_body_stream_close(bs); /* twice is fine */
    afs_request_free(r);

    /* NULL and bad arguments */
    CHECK(afs_body_stream_read(NULL, buf, 1) == -1);
    CHECK(!afs_body_stream_has_bytes_available(NULL));
    CHECK(afs_body_stream_content_length(NULL) == 0);
    CHECK(afs_body_stream_position(NULL) == 0);
    afs_body_stream_close(NULL);
    afs_body_stream_set_progress(NULL, NULL, NULL);
    CHECK_STATUS(afs_body_stream_error(NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_body_stream_open(NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_body_stream_rewind(NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_body_stream_seek(NULL, 0, &err), AFS_E_INVALID_ARGUMENT);
    uint64_t w = 5;
    CHECK_STATUS(afs_body_stream_write_to_fd(NULL, 1, &w, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(w == 0);

    f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_append_form_data(f, "0123456789", 10, "a", NULL);
    r = afs_form_finish(f, &err);
    afs_form_free(f);
    bs = afs_request_body_stream(r);
    CHECK(afs_body_stream_read(bs, NULL, 5) == -1);
    CHECK_ERROR((afs_body_stream_error(bs, &err), err), AFS_E_INVALID_ARGUMENT, "buffer is NULL");
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_OK);
    CHECK(afs_body_stream_read(bs, buf, 0) == -1);
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_OK);
    CHECK_STATUS(afs_body_stream_write_to_fd(bs, -1, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_body_stream_write_to_fd(bs, 987654, NULL, &err), AFS_E_IO);
    CHECK(err.os_errno == EBADF);
    /* a plain request has no body stream; writing its body to a file is refused */
    afs_request *plain = afs_serializer_request(s, "POST", "http://h/", NULL, &err);
    CHECK(afs_request_body_stream(plain) == NULL);
    CHECK(afs_request_write_body_to_file(plain, "/tmp/x", &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "no multipart body stream");
    afs_request_free(plain);
    afs_request_free(r);
    afs_serializer_free(s);
}

/* ---- progress and throttling ---------------------------------------------------------- */

typedef struct { uint64_t last_sent, last_total; int calls, decreased; } progress_t;
static void on_progress(void *ctx, uint64_t sent, uint64_t total) {
    progress_t *p = ctx;
    if (sent < p->last_sent) p->decreased++;
    p->last_sent = sent;
    p->last_total = total;
    p->calls++;
}

static double now(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static void test_progress_and_throttle(void) {
    afs_error err;
    afs_serializer *s = serializer();
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_append_form_data(f, pattern, 10000, "a", NULL);
    afs_form_throttle_bandwidth(f, 1000, 0.01);
    afs_request *r = afs_form_finish(f, &err);
    afs_form_throttle_bandwidth(f, 1, 5); /* spent: ignored */
    afs_form_free(f);
    afs_body_stream *bs = afs_request_body_stream(r);
    progress_t pr = {0, 0, 0, 0};
    afs_body_stream_set_progress(bs, on_progress, &pr);
    uint8_t buf[65536];
    uint64_t total = afs_body_stream_content_length(bs);
    double t0 = now();
    int64_t n;
    int reads = 0, over = 0;
    while ((n = afs_body_stream_read(bs, buf, sizeof buf)) > 0) {
        reads++;
        if (n > 1000) over++;
    }
    double t = now() - t0;
    CHECK(n == 0);
    CHECK(over == 0);
    CHECK(reads == (int)((total + 999) / 1000));
    CHECK(t >= 0.01 * (reads - 1));
    CHECK(pr.calls == reads);
    CHECK(pr.decreased == 0);
    CHECK(pr.last_sent == total && pr.last_total == total);
    /* seek back: progress may go down, then climbs to total again */
    afs_body_stream_seek(bs, 10, NULL);
    while ((n = afs_body_stream_read(bs, buf, sizeof buf)) > 0) {}
    CHECK(pr.decreased == 1);
    CHECK(pr.last_sent == total);
    afs_body_stream_set_progress(bs, NULL, NULL);
    afs_body_stream_rewind(bs, NULL);
    int before = pr.calls;
    while ((n = afs_body_stream_read(bs, buf, sizeof buf)) > 0) {}
    CHECK(pr.calls == before);
    afs_request_free(r);

    /* packet size 0 removes the limit */
    f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_append_form_data(f, pattern, 10000, "a", NULL);
    afs_form_throttle_bandwidth(f, 1000, 0);
    afs_form_throttle_bandwidth(f, 0, -1);
    r = afs_form_finish(f, &err);
    afs_form_free(f);
    bs = afs_request_body_stream(r);
    CHECK((uint64_t)afs_body_stream_read(bs, buf, sizeof buf) == afs_body_stream_content_length(bs));
    afs_request_free(r);
    afs_serializer_free(s);
}

/* ---- write_to_fd ----------------------------------------------------------------------- */

static afs_request *mixed_request(afs_serializer *s, const char *fpath, src_t *cb) {
    afs_error err;
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_append_form_data(f, "v", 1, "a", NULL);
    CHECK_STATUS(afs_form_append_file(f, fpath, "file", &err), AFS_OK);
    for (int i = 0; i < 100; i++) afs_form_append_form_data(f, pattern + i, (size_t)i, "many", NULL);
    afs_form_append_stream(f, src_read, src_rewind, NULL, cb, cb->len, "cb", "c.bin", NULL, NULL);
    CHECK_STATUS(afs_form_append_file(f, fpath, "again", &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    afs_form_free(f);
    return r;
}

typedef struct { int fd; bytes got; size_t limit; } reader_t;
static void *reader_thread(void *arg) {
    reader_t *rd = arg;
    uint8_t buf[65536];
    for (;;) {
        size_t want = sizeof buf;
        if (rd->limit && rd->got.n + want > rd->limit) want = rd->limit - rd->got.n;
        if (want == 0) break;
        ssize_t n = read(rd->fd, buf, want);
        if (n <= 0) break;
        bytes_add(&rd->got, buf, (size_t)n);
    }
    close(rd->fd);
    return NULL;
}

static void test_write_to_fd(void) {
    afs_error err;
    afs_serializer *s = serializer();
    char fpath[1200], out[1200], out2[1200];
    spath(fpath, sizeof fpath, "w.bin");
    spath(out, sizeof out, "w.out");
    spath(out2, sizeof out2, "w2.out");
    CHECK(write_file(fpath, pattern, 250000) == 0);
    src_t cb = src_new(pattern + 3, 150000);
    afs_request *r = mixed_request(s, fpath, &cb);
    afs_body_stream *bs = afs_request_body_stream(r);
    bytes ref = {0};
    CHECK(drain(bs, 65536, &ref) == 0);
    CHECK(ref.n == afs_body_stream_content_length(bs));

    /* to a regular file (copy_file_range), after a partial read */
    afs_body_stream_rewind(bs, NULL);
    uint8_t buf[1000];
    CHECK(afs_body_stream_read(bs, buf, 1000) == 1000);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(write(fd, buf, 1000) == 1000);
    progress_t pr = {0, 0, 0, 0};
    afs_body_stream_set_progress(bs, on_progress, &pr);
    uint64_t w = 0;
    CHECK_STATUS(afs_body_stream_write_to_fd(bs, fd, &w, &err), AFS_OK);
    close(fd);
    CHECK(w == ref.n - 1000);
    CHECK(afs_body_stream_position(bs) == ref.n);
    CHECK(pr.last_sent == ref.n && pr.decreased == 0 && pr.calls > 0);
    afs_body_stream_set_progress(bs, NULL, NULL);
    bytes file = read_whole(out);
    CHECK(file.n == ref.n && memcmp(file.p, ref.p, ref.n) == 0);
    free(file.p);
    /* at the end: writes nothing */
    CHECK_STATUS(afs_body_stream_write_to_fd(bs, 1, &w, &err), AFS_OK);
    CHECK(w == 0);

    /* to an O_APPEND file (copy_file_range refuses: falls back) */
    afs_body_stream_rewind(bs, NULL);
    fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    CHECK_STATUS(afs_body_stream_write_to_fd(bs, fd, &w, &err), AFS_OK);
    close(fd);
    file = read_whole(out);
    CHECK(file.n == ref.n && memcmp(file.p, ref.p, ref.n) == 0);
    free(file.p);

    /* to a socket (sendfile) and to a pipe, with a reader thread */
    for (int kind = 0; kind < 2; kind++) {
        int sv[2];
        if (kind == 0) CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        else CHECK(pipe(sv) == 0);
        int rfd = kind == 0 ? sv[1] : sv[0], wfd = kind == 0 ? sv[0] : sv[1];
        reader_t rd = { rfd, {0}, 0 };
        pthread_t th;
        pthread_create(&th, NULL, reader_thread, &rd);
        afs_body_stream_rewind(bs, NULL);
        CHECK_STATUS(afs_body_stream_write_to_fd(bs, wfd, &w, &err), AFS_OK);
        CHECK(w == ref.n);
        close(wfd);
        pthread_join(th, NULL);
        CHECK(rd.got.n == ref.n && memcmp(rd.got.p, ref.p, ref.n) == 0);
        free(rd.got.p);
    }

    /* EPIPE: the reader goes away after some bytes; no SIGPIPE, not sticky, exact position */
    {
        int pfd[2];
        CHECK(pipe(pfd) == 0);
        reader_t rd = { pfd[0], {0}, 100000 };
        pthread_t th;
        pthread_create(&th, NULL, reader_thread, &rd);
        afs_body_stream_rewind(bs, NULL);
        CHECK_STATUS(afs_body_stream_write_to_fd(bs, pfd[1], &w, &err), AFS_E_IO);
        CHECK(err.os_errno == EPIPE);
        CHECK_ERROR(err, AFS_E_IO, "Broken pipe");
        pthread_join(th, NULL);
        CHECK(w >= 100000 && w < ref.n);
        CHECK(afs_body_stream_position(bs) == w);
        CHECK_STATUS(afs_body_stream_error(bs, &err), AFS_OK); /* not sticky */
        close(pfd[1]);
        free(rd.got.p);
        /* the rest can still be read */
        bytes rest = {0};
        CHECK(drain(bs, 4096, &rest) == 0);
        CHECK(rest.n == ref.n - w && memcmp(rest.p, ref.p + w, rest.n) == 0);
        free(rest.p);
    }

    /* ENOSPC on /dev/full */
    fd = open("/dev/full", O_WRONLY);
    if (fd >= 0) {
        afs_body_stream_rewind(bs, NULL);
        CHECK_STATUS(afs_body_stream_write_to_fd(bs, fd, &w, &err), AFS_E_IO);
        CHECK(err.os_errno == ENOSPC);
        CHECK(w == 0 && afs_body_stream_position(bs) == 0);
        CHECK_STATUS(afs_body_stream_error(bs, &err), AFS_OK);
        close(fd);
    }

    /* EFBIG at several limits: the position is exactly what was written, and repeating the
     * call into another file completes the body */
    signal(SIGXFSZ, SIG_IGN);
    size_t limits[] = { 1, 100, 150, 1000, 250100, 250300, 252000, 300000, 400000, ref.n - 1 };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        struct rlimit old, lim;
        getrlimit(RLIMIT_FSIZE, &old);
        afs_body_stream_rewind(bs, NULL);
        fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        lim = old;
        lim.rlim_cur = limits[i];
        setrlimit(RLIMIT_FSIZE, &lim);
        afs_status st = afs_body_stream_write_to_fd(bs, fd, &w, &err);
        setrlimit(RLIMIT_FSIZE, &old);
        close(fd);
        CHECK(st == AFS_E_IO && err.os_errno == EFBIG);
        CHECK(w == limits[i] && afs_body_stream_position(bs) == limits[i]);
        int fd2 = open(out2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        uint64_t w2 = 0;
        CHECK_STATUS(afs_body_stream_write_to_fd(bs, fd2, &w2, &err), AFS_OK);
        close(fd2);
        CHECK(w + w2 == ref.n);
        bytes a = read_whole(out), b2 = read_whole(out2);
        CHECK(a.n == w && b2.n == w2 && memcmp(a.p, ref.p, a.n) == 0 && memcmp(b2.p, ref.p + w, b2.n) == 0);
        free(a.p);
        free(b2.p);
    }
    signal(SIGXFSZ, SIG_DFL);

    /* throttled: at most packet_size per system call, same bytes */
    afs_request_free(r);
    {
        afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
        afs_form_append_form_data(f, pattern, 5000, "a", NULL);
        CHECK_STATUS(afs_form_append_file(f, fpath, "file", &err), AFS_OK);
        afs_form_throttle_bandwidth(f, 65536, 0.001);
        r = afs_form_finish(f, &err);
        afs_form_free(f);
        bs = afs_request_body_stream(r);
        pr.calls = 0;
        pr.last_sent = 0;
        afs_body_stream_set_progress(bs, on_progress, &pr);
        fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK_STATUS(afs_body_stream_write_to_fd(bs, fd, &w, &err), AFS_OK);
        close(fd);
        CHECK(pr.calls >= (int)(w / 65536));
        afs_body_stream_rewind(bs, NULL);
        bytes ref2 = {0};
        drain(bs, 4096, &ref2);
        file = read_whole(out);
        CHECK(file.n == ref2.n && memcmp(file.p, ref2.p, file.n) == 0);
        free(file.p);
        free(ref2.p);
        afs_request_free(r);
    }
    free(ref.p);
    unlink(out);
    unlink(out2);
    unlink(fpath);
    afs_serializer_free(s);
}

/* A short write inside a callback part without rewind function: the bytes the callback
 * already gave are kept, so reading (or writing) on from the position still works. */
static void test_short_write_inside_a_one_shot_callback(void) {
    afs_error err;
    afs_serializer *s = serializer();
    src_t cb = src_new(pattern, 200000);
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_set_boundary(f, "b", NULL);
    afs_form_append_form_data(f, "head", 4, "first", NULL);
    afs_form_append_stream(f, src_read, NULL, NULL, &cb, 200000, "cb", "c.bin", "t/t", NULL);
    afs_form_append_form_data(f, "tail", 4, "last", NULL);
    afs_request *r = afs_form_finish(f, &err);
    afs_form_free(f);
    bytes ref = {0};
    bytes_str(&ref, "--b\r\nContent-Disposition: form-data; name=\"first\"\r\n\r\nhead"
                    "\r\n--b\r\nContent-Disposition: form-data; name=\"cb\"; filename=\"c.bin\"\r\nContent-Type: t/t\r\n\r\n");
    bytes_add(&ref, pattern, 200000);
    bytes_str(&ref, "\r\n--b\r\nContent-Disposition: form-data; name=\"last\"\r\n\r\ntail\r\n--b--\r\n");
    afs_body_stream *bs = afs_request_body_stream(r);
    CHECK(afs_body_stream_content_length(bs) == ref.n);

    int pfd[2];
    CHECK(pipe(pfd) == 0);
    reader_t rd = { pfd[0], {0}, 100000 };
    pthread_t th;
    pthread_create(&th, NULL, reader_thread, &rd);
    uint64_t w = 0;
    CHECK_STATUS(afs_body_stream_write_to_fd(bs, pfd[1], &w, &err), AFS_E_IO);
    CHECK(err.os_errno == EPIPE);
    pthread_join(th, NULL);
    close(pfd[1]);
    CHECK(w > 1000 && w < ref.n);
    CHECK(afs_body_stream_position(bs) == w);
    CHECK(rd.got.n <= w && memcmp(rd.got.p, ref.p, rd.got.n) == 0);
    free(rd.got.p);
    /* seeking to where we are keeps what the callback already gave; going back cannot work */
    CHECK_STATUS(afs_body_stream_seek(bs, w, &err), AFS_OK);
    CHECK_STATUS(afs_body_stream_seek(bs, w - 1, &err), AFS_E_UNSUPPORTED);
    CHECK(afs_body_stream_position(bs) == w);
    bytes rest = {0};
    CHECK(drain(bs, 0, &rest) == 0);
    CHECK(rest.n == ref.n - w && memcmp(rest.p, ref.p + w, rest.n) == 0);
    CHECK(cb.rewinds == 0);
    free(rest.p);
    free(ref.p);
    afs_request_free(r);
    afs_serializer_free(s);
}

static int count_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

static void test_write_body_to_file_and_many_files(void) {
    afs_error err;
    afs_serializer *s = serializer();
    enum { NFILES = 2000 };
    char path[1200];
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_set_boundary(f, "mb", NULL);
    for (int i = 0; i < NFILES; i++) {
        char name[64];
        snprintf(name, sizeof name, "many-%04d.txt", i);
        spath(path, sizeof path, name);
        write_file(path, pattern + i, (size_t)(i % 37));
        CHECK_STATUS(afs_form_append_file(f, path, "f", &err), AFS_OK);
    }
    int base = count_fds();
    afs_request *r = afs_form_finish(f, &err);
    afs_form_free(f);
    afs_body_stream *bs = afs_request_body_stream(r);
    uint8_t buf[4096];
    int64_t n;
    int maxfds = 0, i = 0;
    bytes body = {0};
    while ((n = afs_body_stream_read(bs, buf, (size_t)(1 + (i * 131) % 4096))) > 0) {
        bytes_add(&body, buf, (size_t)n);
        if (i++ % 97 == 0) { int c = count_fds(); if (c > maxfds) maxfds = c; }
    }
    CHECK(n == 0);
    CHECK(maxfds <= base + 1);
    CHECK(body.n == afs_body_stream_content_length(bs));

    /* write the body to a file: same bytes, a copy of the request without stream */
    char out[1200];
    spath(out, sizeof out, "body.out");
    CHECK(write_file(out, "old", 3) == 0); /* replaced atomically */
    afs_request *copy = afs_request_write_body_to_file(r, out, &err);
    CHECK(copy != NULL);
    CHECK(afs_request_body_stream(copy) == NULL);
    size_t blen = 1;
    CHECK(afs_request_body(copy, &blen) == NULL);
    CHECK_STR(afs_request_header(copy, "Content-Type"), afs_request_header(r, "Content-Type"));
    CHECK_STR(afs_request_header(copy, "Content-Length"), afs_request_header(r, "Content-Length"));
    CHECK_STR(afs_request_url(copy), afs_request_url(r));
    bytes file = read_whole(out);
    CHECK(file.n == body.n && memcmp(file.p, body.p, body.n) == 0);
    free(file.p);
    CHECK(afs_body_stream_position(bs) == body.n); /* r's own stream untouched */
    afs_request_free(copy);
    /* a destination that cannot be written */
    char bad[1300];
    snprintf(bad, sizeof bad, "%s/no-such-dir/body.out", scratch);
    CHECK(afs_request_write_body_to_file(r, bad, &err) == NULL);
    CHECK_ERROR(err, AFS_E_IO, "no-such-dir");
    CHECK(err.os_errno == ENOENT);
    /* a source failing half-way: no file, no temporary left */
    spath(path, sizeof path, "many-1999.txt");
    unlink(path);
    unlink(out);
    CHECK(afs_request_write_body_to_file(r, out, &err) == NULL);
    CHECK_ERROR(err, AFS_E_IO, "many-1999.txt");
    CHECK(access(out, F_OK) != 0);
    DIR *d = opendir(scratch);
    struct dirent *e;
    int leftovers = 0;
    while (d && (e = readdir(d)) != NULL) if (strstr(e->d_name, ".tmp")) leftovers++;
    if (d) closedir(d);
    CHECK(leftovers == 0);
    free(body.p);
    afs_request_free(r);
    for (int k = 0; k < NFILES; k++) {
        char name[64];
        snprintf(name, sizeof name, "many-%04d.txt", k);
        spath(path, sizeof path, name);
        unlink(path);
    }
    afs_serializer_free(s);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    snprintf(scratch, sizeof scratch, "%s/afs_test_body_stream_XXXXXX", dir);
    if (!mkdtemp(scratch)) { perror("mkdtemp"); return 1; }
    test_chunk_invariance();
    test_boundaries_at_every_offset();
    test_callback_errors();
    test_file_errors();
    test_close_and_arguments();
    test_progress_and_throttle();
    test_write_to_fd();
    test_short_write_inside_a_one_shot_callback();
    test_write_body_to_file_and_many_files();
    rmdir(scratch);
    return check_summary(argv[0]);
}
