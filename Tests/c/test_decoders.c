/* Decoders through the C ABI: afs_query_parse / afs_form_body_parse into values, the
 * multipart push parser with a handler (any split of the input), the pull reader over a
 * pipe and a file, part_to_fd, limits, sticky errors, misuse. */
#define _GNU_SOURCE
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>

/* A value's JSON text through the existing writer (afs_value_to_json is not in scope:
 * walk with the getters instead). */
static const char *dict_string(const afs_value *d, const char *key) {
    const afs_value *v = afs_value_get(d, key);
    if (!v || afs_value_kind_of(v) != AFS_VALUE_STRING) return NULL;
    return afs_value_get_string(v, NULL);
}

static void test_query(void) {
    afs_error err;
    afs_value *v = afs_query_parse("a%5Bb%5D=1&c[]=x&c[]=y&n&s=a+b", AFS_NTS, NULL, &err);
    CHECK(v != NULL);
    if (v) {
        const afs_value *a = afs_value_get(v, "a");
        CHECK(a && afs_value_kind_of(a) == AFS_VALUE_DICT);
        CHECK_STR(a ? dict_string(a, "b") : NULL, "1");
        const afs_value *c = afs_value_get(v, "c");
        CHECK(c && afs_value_kind_of(c) == AFS_VALUE_ARRAY && afs_value_count(c) == 2);
        const afs_value *n = afs_value_get(v, "n");
        CHECK(n && afs_value_kind_of(n) == AFS_VALUE_NULL);
        CHECK_STR(dict_string(v, "s"), "a+b");
        afs_value_free(v);
    }
    v = afs_form_body_parse((const uint8_t *)"s=a+b", 5, NULL, &err);
    CHECK(v && strcmp(dict_string(v, "s"), "a b") == 0);
    afs_value_free(v);

    afs_query_parse_options o = {0};
    o.array_style = AFS_ARRAY_INDEXED;
    v = afs_query_parse("a[1]=y&a[0]=x", AFS_NTS, &o, &err);
    CHECK(v && afs_value_kind_of(afs_value_get(v, "a")) == AFS_VALUE_ARRAY);
    afs_value_free(v);

    /* limits and escapes */
    memset(&o, 0, sizeof o);
    o.max_params = 2;
    CHECK(afs_query_parse("a=1&b=2&c=3", AFS_NTS, &o, &err) == NULL);
    CHECK_ERROR(err, AFS_E_LIMIT, "max_params");
    CHECK(afs_query_parse("a=%zz", AFS_NTS, NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "malformed escape");
    CHECK(afs_query_parse("a=%E9", AFS_NTS, NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_UTF8, "parameter 0");
    o.max_params = 0;
    o.flags = AFS_QUERY_KEEP_BAD_ESCAPES;
    v = afs_query_parse("a=%zz", AFS_NTS, &o, &err);
    CHECK_STR(v ? dict_string(v, "a") : NULL, "%zz");
    afs_value_free(v);
    o.flags = AFS_QUERY_REFUSE_DEEP;
    o.max_depth = 2;
    CHECK(afs_query_parse("a[b][c][d]=1", AFS_NTS, &o, &err) == NULL);
    CHECK_ERROR(err, AFS_E_LIMIT, "max_depth");
    o.flags = 0x100;
    CHECK(afs_query_parse("a=1", AFS_NTS, &o, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "flags");
    o.flags = 0;
    o.array_style = 7;
    CHECK(afs_query_parse("a=1", AFS_NTS, &o, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "array_style");
    v = afs_query_parse(NULL, 0, NULL, &err);
    CHECK(v && afs_value_count(v) == 0);
    afs_value_free(v);
    CHECK(afs_form_body_parse(NULL, 3, NULL, &err) == NULL);
    CHECK(err.code == AFS_E_INVALID_ARGUMENT);
}

/* --- push parser --- */

struct collected {
    int parts, ended;
    char names[8][64], filenames[8][64], last_header[128];
    int has_filename[8];
    uint8_t data[8][4096];
    size_t len[8];
    int stop_at_data;
};

static int on_begin(void *ctx, size_t index, const char *name, const char *filename,
                    const char *const *hn, const char *const *hv, size_t hc) {
    struct collected *c = ctx;
    if (index != (size_t)c->parts || c->parts >= 8) return 1;
    snprintf(c->names[index], 64, "%s", name ? name : "(none)");
    c->has_filename[index] = filename != NULL;
    snprintf(c->filenames[index], 64, "%s", filename ? filename : "");
    if (hc) snprintf(c->last_header, sizeof c->last_header, "%s=%s", hn[hc - 1], hv[hc - 1]);
    c->parts++;
    return 0;
}
static int on_data(void *ctx, const uint8_t *b, size_t n) {
    struct collected *c = ctx;
    size_t i = (size_t)c->parts - 1;
    if (c->stop_at_data) return 1;
    if (c->len[i] + n > sizeof c->data[i]) return 1;
    memcpy(c->data[i] + c->len[i], b, n);
    c->len[i] += n;
    return 0;
}
static int on_end(void *ctx) { ((struct collected *)ctx)->ended++; return 0; }

static const char body1[] =
    "preamble\r\n"
    "--XyZ \r\n"
    "Content-Disposition: form-data; name=\"a\\\\b\"\r\n"
    "\r\n"
    "v1\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"up\"; filename=\"x.txt\"; filename*=UTF-8''%E2%82%AC.txt\r\n"
    "Content-Type: text/plain\r\n"
    "X-Trace:   t1  \r\n"
    "\r\n"
    "line\r\n--XyZnot a boundary\r\n"
    "--XyZ--\r\n"
    "epilogue";

static void check_body1(struct collected *c) {
    CHECK(c->parts == 2 && c->ended == 2);
    CHECK_STR(c->names[0], "a\\b");
    CHECK(!c->has_filename[0]);
    CHECK(c->len[0] == 2 && memcmp(c->data[0], "v1", 2) == 0);
    CHECK_STR(c->names[1], "up");
    CHECK_STR(c->filenames[1], "\xE2\x82\xAC.txt");
    CHECK_STR(c->last_header, "X-Trace=t1");
    const char *want = "line\r\n--XyZnot a boundary";
    CHECK(c->len[1] == strlen(want) && memcmp(c->data[1], want, c->len[1]) == 0);
}

static void test_push(void) {
    afs_error err;
    afs_multipart_handler h = { on_begin, on_data, on_end };
    size_t n = sizeof body1 - 1;
    for (size_t split = 1; split <= n; split += (split < 20 ? 1 : 37)) {
        struct collected c;
        memset(&c, 0, sizeof c);
        afs_multipart_parser *p = afs_multipart_parser_new("multipart/form-data; boundary=\"XyZ\"", NULL, &h, &c, &err);
        CHECK(p != NULL);
        if (!p) return;
        int ok = 1;
        for (size_t i = 0; i < n && ok; i += split) {
            size_t k = n - i < split ? n - i : split;
            if (afs_multipart_parser_feed(p, (const uint8_t *)body1 + i, k, &err) != AFS_OK) ok = 0;
        }
        CHECK(ok);
        CHECK_STATUS(afs_multipart_parser_finish(p, &err), AFS_OK);
        check_body1(&c);
        afs_multipart_parser_free(p);
    }

    /* handler stop, sticky */
    struct collected c;
    memset(&c, 0, sizeof c);
    c.stop_at_data = 1;
    afs_multipart_parser *p = afs_multipart_parser_new("XyZ", NULL, &h, &c, &err);
    CHECK_STATUS(afs_multipart_parser_feed(p, (const uint8_t *)body1, n, &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, "handler stopped");
    CHECK_STATUS(afs_multipart_parser_finish(p, &err), AFS_E_STATE);
    afs_multipart_parser_free(p);

    /* early end, limits */
    p = afs_multipart_parser_new("XyZ", NULL, NULL, NULL, &err);
    CHECK_STATUS(afs_multipart_parser_feed(p, (const uint8_t *)body1, 60, &err), AFS_OK);
    CHECK_STATUS(afs_multipart_parser_finish(p, &err), AFS_E_INVALID_MULTIPART);
    CHECK_ERROR(err, AFS_E_INVALID_MULTIPART, "part 0");
    CHECK_STATUS(afs_multipart_parser_feed(p, (const uint8_t *)"x", 1, &err), AFS_E_INVALID_MULTIPART);
    afs_multipart_parser_free(p);

    afs_multipart_limits l = {0};
    l.max_headers = 1;
    p = afs_multipart_parser_new("XyZ", &l, NULL, NULL, &err);
    CHECK_STATUS(afs_multipart_parser_feed(p, (const uint8_t *)body1, n, &err), AFS_E_LIMIT);
    CHECK_ERROR(err, AFS_E_LIMIT, "part 1 has more than max_headers (1)");
    afs_multipart_parser_free(p);

    /* misuse */
    CHECK(afs_multipart_parser_new(NULL, NULL, NULL, NULL, &err) == NULL);
    CHECK(err.code == AFS_E_INVALID_ARGUMENT);
    CHECK(afs_multipart_parser_new("multipart/form-data", NULL, NULL, NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "no boundary");
    CHECK_STATUS(afs_multipart_parser_feed(NULL, (const uint8_t *)"x", 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_multipart_parser_finish(NULL, &err), AFS_E_INVALID_ARGUMENT);
    afs_multipart_parser_free(NULL);
}

/* --- records (afs_multipart_parser_feed_events) --- */

/* Replays records as the handler's calls (so that check_body1 applies); 0 on a bad record. */
static int replay(struct collected *c, const afs_multipart_event *ev, size_t count, const uint8_t *bytes,
                  const afs_multipart_feed_result *r) {
    for (size_t i = 0; i < count; i++) {
        const afs_multipart_event *e = &ev[i];
        if (e->flags & AFS_MULTIPART_BEGIN) {
            if (!r->arena || e->head_offset + e->head_length > r->arena_length) return 0;
            const char *s[2 + 2 * 8];
            size_t want = 2 + 2 * (size_t)e->header_count, got = 0;
            if (want > 18) return 0;
            const char *q = (const char *)r->arena + e->head_offset, *end = q + e->head_length;
            while (q < end && got < want) { s[got++] = q; q += strlen(q) + 1; }
            if (got != want || q != end) return 0;
            if (on_begin(c, (size_t)e->index, e->flags & AFS_MULTIPART_HAS_NAME ? s[0] : NULL,
                         e->flags & AFS_MULTIPART_HAS_FILENAME ? s[1] : NULL, NULL, NULL, 0) != 0) return 0;
            if (e->header_count) {
                size_t k = 2 + 2 * ((size_t)e->header_count - 1);
                snprintf(c->last_header, sizeof c->last_header, "%s=%s", s[k], s[k + 1]);
            }
        }
        if (e->data_length) {
            const uint8_t *base = e->flags & AFS_MULTIPART_DATA_IN_ARENA ? r->arena : bytes;
            if (!base || (size_t)e->index + 1 != (size_t)c->parts) return 0;
            if (on_data(c, base + e->data_offset, (size_t)e->data_length) != 0) return 0;
        }
        if (e->flags & AFS_MULTIPART_END) {
            if ((size_t)e->index + 1 != (size_t)c->parts) return 0;
            on_end(c);
        }
    }
    return 1;
}

/* Feeds `body` in pieces of `split` through feed_events with `max` records; AFS_OK or the status. */
static afs_status feed_records(afs_multipart_parser *p, const char *body, size_t n, size_t split, size_t max,
                               struct collected *c, afs_error *err) {
    afs_multipart_event ev[64];
    afs_multipart_feed_result r;
    for (size_t i = 0; i < n; i += split) {
        size_t k = n - i < split ? n - i : split, off = 0;
        do {
            afs_status st = afs_multipart_parser_feed_events(p, (const uint8_t *)body + i + off, k - off, ev, max, &r, err);
            if (st != AFS_OK) return st;
            CHECK(r.event_count <= max && r.consumed <= k - off);
            CHECK(replay(c, ev, r.event_count, (const uint8_t *)body + i + off, &r));
            off += r.consumed;
        } while (r.more || off < k);
    }
    do {  /* what was held back */
        afs_status st = afs_multipart_parser_feed_events(p, NULL, 0, ev, max, &r, err);
        if (st != AFS_OK) return st;
        CHECK(replay(c, ev, r.event_count, NULL, &r));
    } while (r.more);
    return afs_multipart_parser_finish(p, err);
}

static void test_records(void) {
    afs_error err;
    size_t n = sizeof body1 - 1;
    size_t maxes[] = {1, 2, 64};
    for (size_t m = 0; m < 3; m++) {
        for (size_t split = 1; split <= n; split += (split < 20 ? 1 : 37)) {
            struct collected c;
            memset(&c, 0, sizeof c);
            afs_multipart_parser *p = afs_multipart_parser_new("multipart/form-data; boundary=\"XyZ\"", NULL, NULL, NULL, &err);
            CHECK(p != NULL);
            if (!p) return;
            CHECK_STATUS(feed_records(p, body1, n, split, maxes[m], &c, &err), AFS_OK);
            check_body1(&c);
            afs_multipart_parser_free(p);
        }
    }

    /* decoded data (base64) comes in the arena; a small part is one record */
    static const char b64[] =
        "--b\r\nContent-Disposition: form-data; name=\"f\"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        "aGVsbG8=\r\n--b\r\nContent-Disposition: form-data; name=\"g\"\r\n\r\nworld\r\n--b--";
    afs_multipart_event ev[8];
    afs_multipart_feed_result r;
    afs_multipart_parser *p = afs_multipart_parser_new("b", NULL, NULL, NULL, &err);
    CHECK_STATUS(afs_multipart_parser_feed_events(p, (const uint8_t *)b64, sizeof b64 - 1, ev, 8, &r, &err), AFS_OK);
    CHECK(r.consumed == sizeof b64 - 1 && r.more == 0 && r.event_count == 2);
    CHECK(ev[0].flags == (AFS_MULTIPART_BEGIN | AFS_MULTIPART_END | AFS_MULTIPART_DATA_IN_ARENA | AFS_MULTIPART_HAS_NAME));
    CHECK(ev[0].index == 0 && ev[0].header_count == 2 && ev[0].data_length == 5);
    CHECK(r.arena && memcmp(r.arena + ev[0].data_offset, "hello", 5) == 0);
    CHECK(r.arena && memcmp(r.arena + ev[0].head_offset, "f\0\0Content-Disposition\0form-data; name=\"f\"\0", 43) == 0);
    CHECK(ev[1].flags == (AFS_MULTIPART_BEGIN | AFS_MULTIPART_END | AFS_MULTIPART_HAS_NAME) && ev[1].index == 1);
    CHECK(ev[1].data_length == 5 && memcmp(b64 + ev[1].data_offset, "world", 5) == 0);
    /* records mode: feed and pending finish are refused */
    CHECK_STATUS(afs_multipart_parser_feed(p, (const uint8_t *)"x", 1, &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, "afs_multipart_parser_feed_events");
    CHECK_STATUS(afs_multipart_parser_finish(p, &err), AFS_OK);
    CHECK_STATUS(afs_multipart_parser_feed_events(p, NULL, 0, ev, 8, &r, &err), AFS_E_STATE);
    afs_multipart_parser_free(p);

    /* limits and errors keep their part index */
    afs_multipart_limits l = {0};
    l.max_headers = 1;
    struct collected c;
    memset(&c, 0, sizeof c);
    p = afs_multipart_parser_new("XyZ", &l, NULL, NULL, &err);
    CHECK_STATUS(feed_records(p, body1, n, 7, 3, &c, &err), AFS_E_LIMIT);
    CHECK_ERROR(err, AFS_E_LIMIT, "part 1 has more than max_headers (1)");
    CHECK_STATUS(afs_multipart_parser_feed_events(p, NULL, 0, ev, 8, &r, &err), AFS_E_LIMIT);
    CHECK(r.event_count == 0 && r.consumed == 0);
    afs_multipart_parser_free(p);

    /* misuse */
    p = afs_multipart_parser_new("XyZ", NULL, NULL, NULL, &err);
    CHECK_STATUS(afs_multipart_parser_feed_events(p, (const uint8_t *)body1, n, NULL, 8, &r, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "events is NULL");
    CHECK_STATUS(afs_multipart_parser_feed_events(p, (const uint8_t *)body1, n, ev, 0, &r, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "max_events");
    CHECK_STATUS(afs_multipart_parser_feed_events(p, (const uint8_t *)body1, n, ev, 8, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "result is NULL");
    CHECK_STATUS(afs_multipart_parser_feed_events(p, NULL, 3, ev, 8, &r, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_multipart_parser_feed_events(NULL, (const uint8_t *)body1, n, ev, 8, &r, &err), AFS_E_INVALID_ARGUMENT);
    /* pending events at finish: held back by a full record array */
    CHECK_STATUS(afs_multipart_parser_feed_events(p, (const uint8_t *)body1, n, ev, 1, &r, &err), AFS_OK);
    CHECK(r.more == 1 && r.event_count == 1 && r.consumed < n);
    CHECK_STATUS(afs_multipart_parser_finish(p, &err), AFS_E_INVALID_MULTIPART);
    afs_multipart_parser_free(p);
    p = afs_multipart_parser_new("XyZ", NULL, NULL, NULL, &err);
    CHECK_STATUS(afs_multipart_parser_feed_events(p, (const uint8_t *)body1, n, ev, 1, &r, &err), AFS_OK);
    CHECK_STATUS(afs_multipart_parser_feed_events(p, (const uint8_t *)body1 + r.consumed, n - r.consumed, ev, 8, &r, &err), AFS_OK);
    CHECK_STATUS(afs_multipart_parser_finish(p, &err), AFS_OK);
    afs_multipart_parser_free(p);
    /* held back in the look-ahead (all bytes consumed, more = 1), then finish too early */
    p = afs_multipart_parser_new("XyZ", NULL, NULL, NULL, &err);
    CHECK_STATUS(afs_multipart_parser_feed_events(p, (const uint8_t *)"-", 1, ev, 1, &r, &err), AFS_OK);
    CHECK(r.consumed == 1 && r.more == 0 && r.event_count == 0);
    CHECK_STATUS(afs_multipart_parser_feed_events(p, (const uint8_t *)"-XyZ\r\n\r\nabc\r\n--XyZ--", 20, ev, 1, &r, &err), AFS_OK);
    CHECK(r.consumed == 20 && r.more == 1 && r.event_count == 1 && ev[0].flags == AFS_MULTIPART_BEGIN);
    CHECK_STATUS(afs_multipart_parser_finish(p, &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, "events pending");
    afs_multipart_parser_free(p);
}

/* --- pull reader --- */

static void test_reader(void) {
    afs_error err;
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        size_t n = sizeof body1 - 1;
        for (size_t i = 0; i < n; i += 7) {  /* small writes: the reader sees partial reads */
            size_t k = n - i < 7 ? n - i : 7;
            if (write(fds[1], body1 + i, k) != (ssize_t)k) _exit(1);
        }
        _exit(0);
    }
    close(fds[1]);
    afs_multipart_reader *rd = afs_multipart_reader_new(fds[0], "multipart/form-data; boundary=XyZ", NULL, &err);
    CHECK(rd != NULL);
    CHECK(afs_multipart_reader_next_part(rd, &err) == 1);
    CHECK_STR(afs_multipart_reader_name(rd), "a\\b");
    CHECK(afs_multipart_reader_filename(rd) == NULL);
    uint8_t buf[64];
    int64_t got = afs_multipart_reader_read(rd, buf, 1, &err);
    CHECK(got == 1 && buf[0] == 'v');
    got = afs_multipart_reader_read(rd, buf, sizeof buf, &err);
    CHECK(got == 1 && buf[0] == '1');
    CHECK(afs_multipart_reader_read(rd, buf, sizeof buf, &err) == 0);
    CHECK(afs_multipart_reader_next_part(rd, &err) == 1);
    CHECK_STR(afs_multipart_reader_filename(rd), "\xE2\x82\xAC.txt");
    CHECK(afs_multipart_reader_header_count(rd) == 3);
    CHECK_STR(afs_multipart_reader_header_name(rd, 2), "X-Trace");
    CHECK_STR(afs_multipart_reader_header_value(rd, 2), "t1");
    CHECK(afs_multipart_reader_header_name(rd, 3) == NULL);
    char path[] = "/tmp/afs-test-decoders-XXXXXX";
    int out = mkstemp(path);
    CHECK(out >= 0);
    uint64_t written = 0;
    CHECK_STATUS(afs_multipart_reader_part_to_fd(rd, out, &written, &err), AFS_OK);
    const char *want = "line\r\n--XyZnot a boundary";
    CHECK(written == strlen(want));
    char back[64] = {0};
    CHECK(pread(out, back, sizeof back - 1, 0) == (ssize_t)strlen(want));
    CHECK_STR(back, want);
    close(out);
    unlink(path);
    CHECK(afs_multipart_reader_next_part(rd, &err) == 0);
    CHECK(afs_multipart_reader_name(rd) == NULL);
    afs_multipart_reader_free(rd);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);

    /* a truncated body from a file: -1 with AFS_E_INVALID_MULTIPART, sticky */
    char p2[] = "/tmp/afs-test-decoders-XXXXXX";
    int f = mkstemp(p2);
    CHECK(write(f, body1, 80) == 80);
    lseek(f, 0, SEEK_SET);
    rd = afs_multipart_reader_new(f, "XyZ", NULL, &err);
    CHECK(afs_multipart_reader_next_part(rd, &err) == 1);
    CHECK(afs_multipart_reader_next_part(rd, &err) == -1);
    CHECK_ERROR(err, AFS_E_INVALID_MULTIPART, "ended in the headers of part 1");
    CHECK(afs_multipart_reader_read(rd, buf, sizeof buf, &err) == -1);
    afs_multipart_reader_free(rd);
    close(f);
    unlink(p2);

    CHECK(afs_multipart_reader_new(-1, "XyZ", NULL, &err) == NULL);
    CHECK(err.code == AFS_E_INVALID_ARGUMENT);
    CHECK(afs_multipart_reader_next_part(NULL, &err) == -1);
    CHECK(afs_multipart_reader_read(NULL, buf, 1, &err) == -1);
    CHECK(afs_multipart_reader_header_count(NULL) == 0);
    afs_multipart_reader_free(NULL);
}

int main(void) {
    test_query();
    test_push();
    test_records();
    test_reader();
    return check_summary("test_decoders");
}
