/*
 * Host-safety limits: the library must end every call in a status, never a signal, when
 *   1. the address space is nearly exhausted (RLIMIT_AS): each scenario builds its input,
 *      then lowers RLIMIT_AS to what is mapped now plus a little headroom and makes a call
 *      whose output or copy cannot fit; the call must return AFS_E_NO_MEMORY (and the
 *      process must go on: a second, small call must succeed);
 *   2. the calling thread has a 64 KiB stack: trees nested 512 levels (the limit) are
 *      built, written as JSON, XML and binary property lists and as a query string,
 *      parsed, decoded and freed on such a thread;
 *   3. a response expands far beyond its size (a 200 KB binary plist of 100,000
 *      references to one shared 120-element array): it must be refused, with the RSS
 *      growth measured, and a caller-lowered decoding limit must refuse a plain JSON body.
 *
 * Every scenario runs in a forked child; a signal, a hang or a wrong status fails it.
 * Output: one tab-separated line per scenario (name, group, description, verdict, status,
 * errno, message, notes) as the fault program's, and a summary on stderr.
 *
 *   limits [--only NAME]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "afserialization.h"

typedef struct {
    afs_status status;
    int os_errno;
    char message[512];
    char notes[512];
    int failures;
} outcome;

static outcome *cur;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
    cur->failures++;
    size_t n = strlen(cur->notes);
    if (n + 4 >= sizeof cur->notes) return;
    if (n) { strcat(cur->notes, "; "); n += 2; }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cur->notes + n, sizeof cur->notes - n, fmt, ap);
    va_end(ap);
}

static void record(afs_status st, const afs_error *e) {
    cur->status = st;
    if (e) {
        cur->os_errno = e->os_errno;
        snprintf(cur->message, sizeof cur->message, "%s", e->message);
    }
}

/* ---- RLIMIT_AS ------------------------------------------------------------------------ */

/* Bytes mapped now (VmSize). */
static size_t mapped_now(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Caps the address space at what is mapped now + headroom (MiB). */
static void cap_memory(size_t headroom_mib) {
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = mapped_now() + headroom_mib * 1024 * 1024;
    if (setrlimit(RLIMIT_AS, &rl) != 0) note("setrlimit: %s", strerror(errno));
}

/* After the failing call: the process still works (a small call succeeds). */
static void still_works(void) {
    afs_error e;
    char *s = afs_percent_escape("a b", AFS_NTS, &e);
    if (!s) note("a small call after the failure failed: %s", e.message);
    afs_free(s);
}

#define BIG (96u << 20)   /* inputs of 96 MiB; headroom 48 MiB, so copies cannot fit */
#define HEADROOM 48

static char *text_of(size_t n, char fill) {
    char *p = malloc(n + 1);
    if (!p) { note("cannot allocate the input"); return NULL; }
    memset(p, fill, n);
    p[n] = 0;
    return p;
}
static char *big_text(char fill) { return text_of(BIG, fill); }
/* URLs of 12 MiB of '|': copied twice within the headroom, but not encoded (%7C, twice:
 * the bytes, then the string). Spaces would not do: intake trims them at the ends. */
#define URL_BARS (BIG / 8)

static void expect_no_memory(afs_status st, const afs_error *e) {
    record(st, e);
    if (st != AFS_E_NO_MEMORY) note("expected AFS_E_NO_MEMORY, got %s", afs_status_name(st));
}

/* For functions without an afs_error: NULL is their out-of-memory answer. */
static void expect_null(const void *p, const char *what) {
    record(p ? AFS_OK : AFS_E_NO_MEMORY, NULL);
    if (p) note("%s succeeded with %d MiB of headroom", what, HEADROOM);
}

static void oom_percent_escape(void) {
    char *in = big_text(' ');   /* every byte becomes %20: 288 MiB of output */
    if (!in) return;
    cap_memory(HEADROOM);
    afs_error e;
    char *out = afs_percent_escape(in, BIG, &e);
    expect_no_memory(out ? AFS_OK : e.code, &e);
    afs_free(out);
    still_works();
    free(in);
}

/* A dictionary {"k": <96 MiB string>} (the string value is built before the cap). */
static afs_value *big_params(char fill) {
    char *in = big_text(fill);
    if (!in) return NULL;
    afs_error e;
    afs_value *d = afs_value_new_dict();
    afs_value *s = afs_value_new_string(in, BIG, &e);
    free(in);
    if (!s) { note("cannot build the input: %s", e.message); return d; }
    afs_value_dict_set(d, "k", AFS_NTS, s, &e);
    return d;
}

static void oom_query_string(void) {
    afs_value *d = big_params(' ');
    if (!d) return;
    cap_memory(HEADROOM);
    afs_error e;
    char *q = afs_query_string(d, &e);
    expect_no_memory(q ? AFS_OK : e.code, &e);
    afs_free(q);
    still_works();
    afs_value_free(d);
}

static void oom_serializer(afs_serializer_kind kind, int plist_format, const char *method) {
    afs_value *d = big_params(kind == AFS_SERIALIZER_HTTP ? ' ' : '"');
    if (!d) return;
    afs_serializer *s = afs_serializer_new(kind);
    afs_error e;
    if (plist_format) afs_serializer_set_plist_format(s, plist_format, &e);
    cap_memory(HEADROOM);
    afs_request *r = afs_serializer_request(s, method, "https://example.com/x", d, &e);
    expect_no_memory(r ? AFS_OK : e.code, &e);
    afs_request_free(r);
    still_works();
    afs_serializer_free(s);
    afs_value_free(d);
}
static void oom_form_body(void) { oom_serializer(AFS_SERIALIZER_HTTP, 0, "POST"); }
static void oom_query_url(void) { oom_serializer(AFS_SERIALIZER_HTTP, 0, "GET"); }
static void oom_json_body(void) { oom_serializer(AFS_SERIALIZER_JSON, 0, "POST"); }
static void oom_plist_xml(void) { oom_serializer(AFS_SERIALIZER_PLIST, AFS_PLIST_XML, "POST"); }
static void oom_plist_binary(void) {
    /* binary plists copy the string as is: 96 MiB of '"' fit in a 48 MiB headroom? no */
    oom_serializer(AFS_SERIALIZER_PLIST, AFS_PLIST_BINARY, "POST");
}

static void oom_multipart_data(void) {
    /* the case: a 100 MB data part under `ulimit -v 200000` */
    size_t n = 100u * 1000 * 1000;
    char *in = malloc(n);
    if (!in) { note("cannot allocate the input"); return; }
    memset(in, 'x', n);
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_error e;
    afs_form *f = afs_serializer_multipart_form(s, "POST", "https://example.com/up", NULL, &e);
    if (!f) { note("form: %s", e.message); free(in); afs_serializer_free(s); return; }
    cap_memory(HEADROOM);
    afs_status st = afs_form_append_form_data(f, in, n, "blob", &e);
    expect_no_memory(st, &e);
    still_works();
    /* the form is still usable: a small part goes in and the form finishes */
    if (afs_form_append_form_data(f, "ok", 2, "small", &e) != AFS_OK) note("small part after the failure: %s", e.message);
    afs_request *r = afs_form_finish(f, &e);
    if (!r) note("finish after the failure: %s", e.message);
    else if (afs_body_stream_content_length(afs_request_body_stream(r)) > 1000) note("the failed part was kept");
    afs_request_free(r);
    afs_form_free(f);
    afs_serializer_free(s);
    free(in);
}

static void oom_multipart_file_data(void) {
    size_t n = BIG;
    char *in = malloc(n);
    if (!in) { note("cannot allocate the input"); return; }
    memset(in, 'y', n);
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_error e;
    afs_form *f = afs_serializer_multipart_form(s, "POST", "https://example.com/up", NULL, &e);
    cap_memory(HEADROOM);
    afs_status st = afs_form_append_file_data(f, in, n, "file", "a.bin", NULL, &e);
    expect_no_memory(st, &e);
    still_works();
    afs_form_free(f);
    afs_serializer_free(s);
    free(in);
}

/* A JSON array of 8M small numbers: [1,1,…] (16 MiB). Parsing builds 8M values. */
static char *json_ones(size_t count, size_t *len) {
    char *p = malloc(2 * count + 2);
    if (!p) return NULL;
    p[0] = '[';
    for (size_t i = 0; i < count; i++) { p[1 + 2 * i] = '1'; p[2 + 2 * i] = ','; }
    p[2 * count] = ']';
    p[2 * count + 1] = 0;
    *len = 2 * count + 1;
    return p;
}

static void oom_parse_json(void) {
    size_t len;
    char *j = json_ones(8u << 20, &len);
    if (!j) { note("cannot allocate the input"); return; }
    cap_memory(HEADROOM);
    afs_error e;
    afs_value *v = afs_value_parse_json(j, len, &e);
    expect_no_memory(v ? AFS_OK : e.code, &e);
    afs_value_free(v);
    still_works();
    free(j);
}

static void oom_response_json(void) {
    size_t len;
    char *j = json_ones(8u << 20, &len);
    if (!j) { note("cannot allocate the input"); return; }
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    cap_memory(HEADROOM);
    afs_error e;
    afs_value *v = NULL;
    afs_status st = afs_response_object(rs, 200, "application/json", j, len, &v, &e);
    expect_no_memory(st, &e);
    afs_value_free(v);
    still_works();
    afs_response_serializer_free(rs);
    free(j);
}

/* The one-crossing functions (header section 10). */

/* A pickle (protocol 4) of str('a' * BIG), or of {"k": that string} when in_dict. */
static unsigned char *big_pickle(int in_dict, size_t *len) {
    unsigned char *p = malloc(BIG + 32);
    if (!p) { note("cannot allocate the input"); return NULL; }
    size_t n = 0;
    p[n++] = 0x80; p[n++] = 4;                                   /* PROTO 4 */
    if (in_dict) { p[n++] = '}'; p[n++] = 0x8c; p[n++] = 1; p[n++] = 'k'; }  /* EMPTY_DICT, "k" */
    p[n++] = 0x8d;                                               /* BINUNICODE8 */
    for (int i = 0; i < 8; i++) p[n++] = (unsigned char)((uint64_t)BIG >> (8 * i));
    memset(p + n, 'a', BIG);
    n += BIG;
    if (in_dict) p[n++] = 's';                                   /* SETITEM */
    p[n++] = '.';                                                /* STOP */
    *len = n;
    return p;
}

static void oom_value_from_pickle(void) {
    size_t len;
    unsigned char *p = big_pickle(0, &len);
    if (!p) return;
    cap_memory(HEADROOM);
    afs_error e;
    afs_value *v = afs_value_from_pickle(p, len, &e);
    expect_no_memory(v ? AFS_OK : e.code, &e);
    afs_value_free(v);
    still_works();
    free(p);
}

static void oom_value_to_pickle(void) {
    afs_value *d = big_params('a');
    if (!d) return;
    cap_memory(HEADROOM);
    afs_error e;
    size_t len = 0;
    uint8_t *p = afs_value_to_pickle(d, &len, &e);
    expect_no_memory(p ? AFS_OK : e.code, &e);
    afs_free(p);
    still_works();
    afs_value_free(d);
}

static void oom_serializer_request_pickle(void) {
    size_t len;
    unsigned char *p = big_pickle(1, &len);
    if (!p) return;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_JSON);
    cap_memory(HEADROOM);
    afs_error e;
    const uint8_t *snapshot = NULL;
    size_t snapshot_len = 0;
    afs_request *r = afs_serializer_request_pickle(s, "POST", "https://example.com/x", p, len,
                                                   &snapshot, &snapshot_len, &e);
    expect_no_memory(r ? AFS_OK : e.code, &e);
    afs_request_free(r);
    still_works();
    afs_serializer_free(s);
    free(p);
}

static void oom_response_object_pickle(void) {
    char *j = malloc(BIG + 8);
    if (!j) { note("cannot allocate the input"); return; }
    j[0] = '[';
    j[1] = '"';
    memset(j + 2, 'a', BIG);
    memcpy(j + 2 + BIG, "\"]", 2);
    size_t len = BIG + 4;
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    cap_memory(HEADROOM);
    afs_error e;
    uint8_t *out = NULL;
    size_t out_len = 0;
    afs_status st = afs_response_object_pickle(rs, 200, "application/json", j, len, &out, &out_len, &e);
    expect_no_memory(st, &e);
    afs_free(out);
    still_works();
    afs_response_serializer_free(rs);
    free(j);
}

static void oom_response_http(void) {
    char *in = big_text('z');
    if (!in) return;
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_HTTP);
    cap_memory(HEADROOM);
    afs_error e;
    afs_value *v = NULL;
    afs_status st = afs_response_object(rs, 200, "text/plain", in, BIG, &v, &e);
    expect_no_memory(st, &e);
    afs_value_free(v);
    still_works();
    afs_response_serializer_free(rs);
    free(in);
}

static void oom_response_plist(void) {
    /* <plist><array><string/>… ×(BIG/9)…</array></plist>: 10M values */
    size_t count = BIG / 9;
    const char *head = "<plist><array>", *tail = "</array></plist>";
    size_t len = strlen(head) + 9 * count + strlen(tail);
    char *p = malloc(len + 1);
    if (!p) { note("cannot allocate the input"); return; }
    char *w = p;
    memcpy(w, head, strlen(head)); w += strlen(head);
    for (size_t i = 0; i < count; i++) { memcpy(w, "<string/>", 9); w += 9; }
    memcpy(w, tail, strlen(tail));
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_PLIST);
    cap_memory(HEADROOM);
    afs_error e;
    afs_value *v = NULL;
    afs_status st = afs_response_object(rs, 200, "application/x-plist", p, len, &v, &e);
    expect_no_memory(st, &e);
    afs_value_free(v);
    still_works();
    afs_response_serializer_free(rs);
    free(p);
}

/* The rest of the public functions whose work grows with their input. Each either fails
 * with AFS_E_NO_MEMORY (the copy cannot fit) or, where the library can share what it
 * already holds (copy-on-write), succeeds: never a signal. */

/* "https://example.com/" followed by URL_BARS bytes '|' (intake makes each one %7C). */
static char *big_url(void) {
    const char *head = "https://example.com/";
    size_t h = strlen(head);
    char *p = text_of(h + URL_BARS, '|');
    if (p) memcpy(p, head, h);
    return p;
}

static void oom_url_resolve(void) {
    char *ref = text_of(URL_BARS, '|');
    if (!ref) return;
    cap_memory(HEADROOM);
    afs_error e;
    char *u = afs_url_resolve("https://example.com/a/b", ref, &e);
    expect_no_memory(u ? AFS_OK : e.code, &e);
    afs_free(u);
    still_works();
    free(ref);
}

static void oom_request_new(void) {
    char *url = big_url();
    if (!url) return;
    cap_memory(HEADROOM);
    afs_error e;
    afs_request *r = afs_request_new("GET", url, &e);
    expect_no_memory(r ? AFS_OK : e.code, &e);
    afs_request_free(r);
    still_works();
    free(url);
}

static void oom_string_new(void) {
    char *in = big_text('s');
    if (!in) return;
    cap_memory(HEADROOM);
    char *copy = afs_string_new(in, BIG);
    expect_null(copy, "a 96 MiB afs_string_new");
    afs_free(copy);
    still_works();
    free(in);
}

static void oom_value_new_string(void) {
    char *in = big_text('s');
    if (!in) return;
    cap_memory(HEADROOM);
    afs_error e;
    afs_value *v = afs_value_new_string(in, BIG, &e);
    expect_no_memory(v ? AFS_OK : e.code, &e);
    afs_value_free(v);
    still_works();
    free(in);
}

static void oom_value_new_data(void) {
    char *in = big_text('d');
    if (!in) return;
    cap_memory(HEADROOM);
    afs_value *v = afs_value_new_data(in, BIG);
    expect_null(v, "a 96 MiB afs_value_new_data");
    afs_value_free(v);
    still_works();
    free(in);
}

/* 4M values parsed before the cap, then copied: the copy may share (OK) or fail cleanly. */
static void oom_value_copy(void) {
    size_t len;
    char *j = json_ones(4u << 20, &len);
    if (!j) { note("cannot allocate the input"); return; }
    afs_error e;
    afs_value *v = afs_value_parse_json(j, len, &e);
    free(j);
    if (!v) { note("cannot build the input: %s", e.message); return; }
    cap_memory(4);
    afs_value *c = afs_value_copy(v);
    record(c ? AFS_OK : AFS_E_NO_MEMORY, NULL);
    if (c && afs_value_count(c) != afs_value_count(v)) note("the copy has %zu members", afs_value_count(c));
    afs_value_free(c);
    still_works();
    afs_value_free(v);
}

/* A request with a header value of BIG bytes: setting it copies them. */
static void oom_request_set_header(void) {
    char *in = big_text('h');
    if (!in) return;
    afs_error e;
    afs_request *r = afs_request_new("GET", "https://example.com/", &e);
    cap_memory(HEADROOM);
    afs_status st = afs_request_set_header(r, "X-Big", in, &e);
    expect_no_memory(st, &e);
    if (afs_request_header(r, "X-Big")) note("the header was set after all");
    still_works();
    afs_request_free(r);
    free(in);
}

/* The request with a BIG header set before the cap; then `use` must copy it again. */
static afs_request *request_with_big_header(void) {
    char *in = big_text('h');
    if (!in) return NULL;
    afs_error e;
    afs_request *r = afs_request_new("GET", "https://example.com/", &e);
    if (afs_request_set_header(r, "X-Big", in, &e) != AFS_OK) note("cannot build the input: %s", e.message);
    free(in);
    return r;
}

static void oom_request_copy_head(void) {
    afs_request *r = request_with_big_header();
    if (!r) return;
    cap_memory(HEADROOM);
    afs_error e;
    size_t len = 0;
    char *head = afs_request_copy_head(r, &len, &e);
    expect_no_memory(head ? AFS_OK : e.code, &e);
    afs_free(head);
    still_works();
    afs_request_free(r);
}

static void oom_request_write_to_fd(void) {
    afs_request *r = request_with_big_header();
    if (!r) return;
    int fd = open("/dev/null", O_WRONLY);
    cap_memory(HEADROOM);
    afs_error e;
    uint64_t written = 0;
    afs_status st = afs_request_write_to_fd(r, fd, &written, &e);
    /* the head is written from a copy: it cannot be made, nothing is written */
    expect_no_memory(st, &e);
    still_works();
    close(fd);
    afs_request_free(r);
}

static void oom_request_pickle(void) {
    afs_request *r = request_with_big_header();
    if (!r) return;
    cap_memory(HEADROOM);
    size_t len = 1;
    const uint8_t *p = afs_request_pickle(r, &len);
    expect_null(p, "a 96 MiB snapshot");
    if (!p && len != 0) note("*len is %zu after a NULL snapshot", len);
    still_works();
    afs_request_free(r);
}

static void oom_serializer_serialize(void) {
    afs_value *d = big_params('"');
    if (!d) return;
    afs_error e;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_request *base = afs_request_new("POST", "https://example.com/x", &e);
    cap_memory(HEADROOM);
    afs_request *r = afs_serializer_serialize(s, base, d, &e);
    expect_no_memory(r ? AFS_OK : e.code, &e);
    afs_request_free(r);
    still_works();
    afs_request_free(base);
    afs_serializer_free(s);
    afs_value_free(d);
}

static void oom_serializer_set_header(void) {
    char *in = big_text('h');
    if (!in) return;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    cap_memory(HEADROOM);
    afs_error e;
    afs_status st = afs_serializer_set_header(s, "X-Big", in, &e);
    expect_no_memory(st, &e);
    still_works();
    afs_serializer_free(s);
    free(in);
}

static void oom_form_append_part(void) {
    char *in = big_text('p');
    if (!in) return;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_error e;
    afs_form *f = afs_serializer_multipart_form(s, "POST", "https://example.com/up", NULL, &e);
    if (!f) { note("form: %s", e.message); free(in); afs_serializer_free(s); return; }
    const char *names[] = {"Content-Disposition"}, *values[] = {"form-data; name=\"p\""};
    cap_memory(HEADROOM);
    afs_status st = afs_form_append_part(f, names, values, 1, in, BIG, &e);
    expect_no_memory(st, &e);
    still_works();
    afs_form_free(f);
    afs_serializer_free(s);
    free(in);
}

/* A serializer header of BIG bytes set before the cap; both copies of it then fail. */
static void oom_serializer_copy_headers(void) {
    char *in = big_text('h');
    if (!in) return;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_error e;
    if (afs_serializer_set_header(s, "X-Big", in, &e) != AFS_OK) note("cannot build the input: %s", e.message);
    free(in);
    cap_memory(HEADROOM);
    char *one = afs_serializer_copy_header(s, "X-Big");
    char *all = afs_serializer_copy_headers(s);
    expect_null(one, "afs_serializer_copy_header of 96 MiB");
    if (!one) expect_null(all, "afs_serializer_copy_headers of 96 MiB");
    afs_free(one);
    afs_free(all);
    still_works();
    afs_serializer_free(s);
}

/* Borrowed getters lend NUL-terminated copies: without memory for one they return NULL. */
static void oom_borrowed_getters(void) {
    afs_value *d = big_params('g');
    afs_request *r = request_with_big_header();
    if (!d || !r) { afs_value_free(d); afs_request_free(r); return; }
    cap_memory(HEADROOM);
    size_t len = 1;
    const char *str = afs_value_get_string(afs_value_get(d, "k"), &len);
    const char *hv = afs_request_header(r, "X-Big");
    const char *hi = afs_request_header_value(r, 0);
    record(str || hv || hi ? AFS_OK : AFS_E_NO_MEMORY, NULL);
    if (str && len != BIG) note("afs_value_get_string gave %zu bytes", len);
    if (!str && len != 0) note("*len is %zu after a NULL string", len);
    if (hv && strlen(hv) != BIG) note("afs_request_header gave %zu bytes", strlen(hv));
    still_works();
    afs_request_free(r);
    afs_value_free(d);
}

/* ---- small stacks ------------------------------------------------------------------------ */

#define DEPTH 512

/* [[[…[1]…]]] nested `depth` arrays inside {"k": …}. */
static afs_value *deep_tree(int depth) {
    afs_error e;
    afs_value *inner = afs_value_new_array();
    afs_value_append(inner, afs_value_new_int(1), &e);
    for (int i = 1; i < depth - 1; i++) {
        afs_value *outer = afs_value_new_array();
        if (afs_value_append(outer, inner, &e) != AFS_OK) {
            note("building level %d: %s", i, e.message);
            afs_value_free(outer);
            return NULL;
        }
        inner = outer;
    }
    afs_value *d = afs_value_new_dict();
    if (afs_value_dict_set(d, "k", AFS_NTS, inner, &e) != AFS_OK) note("dict_set: %s", e.message);
    return d;
}

static void *small_stack_work(void *arg) {
    (void)arg;
    afs_error e;
    afs_value *d = deep_tree(DEPTH);
    if (!d) return NULL;
    static const struct { afs_serializer_kind kind; int format; const char *method; } cases[] = {
        {AFS_SERIALIZER_JSON, 0, "POST"}, {AFS_SERIALIZER_PLIST, AFS_PLIST_XML, "POST"},
        {AFS_SERIALIZER_PLIST, AFS_PLIST_BINARY, "POST"}, {AFS_SERIALIZER_HTTP, 0, "GET"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        afs_serializer *s = afs_serializer_new(cases[c].kind);
        if (cases[c].format) afs_serializer_set_plist_format(s, cases[c].format, &e);
        afs_request *r = afs_serializer_request(s, cases[c].method, "https://example.com/x", d, &e);
        if (!r) note("serializer %d: %s", (int)c, e.message);
        /* read the body back on this stack: JSON and plists decode to a tree as deep */
        size_t len = 0;
        const uint8_t *body = r ? afs_request_body(r, &len) : NULL;
        if (body && cases[c].kind != AFS_SERIALIZER_HTTP) {
            afs_response_serializer *rs = afs_response_serializer_new(
                cases[c].kind == AFS_SERIALIZER_JSON ? AFS_RESPONSE_JSON : AFS_RESPONSE_PLIST);
            afs_response_serializer_set_removes_keys_with_null_values(rs, true);
            afs_value *back = NULL;
            afs_status st = afs_response_object(rs, 200, cases[c].kind == AFS_SERIALIZER_JSON ? "application/json" : "application/x-plist",
                                                body, len, &back, &e);
            if (st != AFS_OK) note("decoding case %d: %s", (int)c, e.message);
            afs_value_free(back);
            uint8_t *pickled = NULL;
            size_t pickled_len = 0;
            st = afs_response_object_pickle(rs, 200, cases[c].kind == AFS_SERIALIZER_JSON ? "application/json" : "application/x-plist",
                                            body, len, &pickled, &pickled_len, &e);
            if (st != AFS_OK) note("decoding case %d as a pickle: %s", (int)c, e.message);
            afs_free(pickled);
            afs_response_serializer_free(rs);
        }
        afs_request_free(r);
        afs_serializer_free(s);
    }
    char *q = afs_query_string(d, &e);
    if (!q) note("query string: %s", e.message);
    afs_free(q);
    afs_value_free(d);
    /* a parsed 512-level document, freed on this stack */
    char json[2 * DEPTH + 1];
    for (int i = 0; i < DEPTH; i++) { json[i] = '['; json[2 * DEPTH - 1 - i] = ']'; }
    json[2 * DEPTH] = 0;
    afs_value *v = afs_value_parse_json(json, AFS_NTS, &e);
    if (!v) note("parse: %s", e.message);
    /* 512 levels cannot go into a container (513): refused, and freed on the way out */
    afs_value *set = afs_value_new_set();
    if (v && afs_value_append(set, v, &e) != AFS_E_INVALID_ARGUMENT) note("513 levels accepted");
    v = NULL;
    afs_value_free(set);
    /* 511 levels as a set member (hashing walks it), twice (the second compares equal) */
    set = afs_value_new_set();
    for (int twice = 0; twice < 2; twice++) {
        v = afs_value_parse_json(json + 1, 2 * DEPTH - 2, &e);
        if (!v || afs_value_append(set, v, &e) != AFS_OK) note("set append: %s", e.message);
    }
    if (afs_value_count(set) != 1) note("the set holds %zu members, not 1", afs_value_count(set));
    afs_value_free(set);
    /* a complete 511-level array inside an array, then garbage: the parser drops the
     * finished subtree on the way out */
    static char bad[2 * DEPTH + 8];
    bad[0] = '[';
    for (int i = 0; i < DEPTH - 1; i++) { bad[1 + i] = '['; bad[2 * DEPTH - 2 - i] = ']'; }
    memcpy(bad + 2 * DEPTH - 1, ",x", 3);
    v = afs_value_parse_json(bad, AFS_NTS, &e);
    if (v || e.code != AFS_E_INVALID_JSON) note("bad deep JSON: %s", v ? "accepted" : afs_status_name(e.code));
    afs_value_free(v);
    /* the same as a plist response: the reader drops the finished subtree */
    static char badxml[32 * DEPTH];
    size_t k = (size_t)sprintf(badxml, "<plist><array>");
    for (int i = 0; i < DEPTH - 2; i++) k += (size_t)sprintf(badxml + k, "<array>");
    for (int i = 0; i < DEPTH - 2; i++) k += (size_t)sprintf(badxml + k, "</array>");
    k += (size_t)sprintf(badxml + k, "<oops/></array></plist>");
    afs_response_serializer *prs = afs_response_serializer_new(AFS_RESPONSE_PLIST);
    afs_value *pv = NULL;
    if (afs_response_object(prs, 200, "application/x-plist", badxml, k, &pv, &e) != AFS_E_INVALID_PLIST) note("bad deep plist accepted");
    afs_value_free(pv);
    afs_response_serializer_free(prs);
    /* pickles (Python's one crossing): 512 levels read and written on this stack; 100,000
     * nested lists refused, and what was built before the limit freed on this stack */
    afs_value *deep = afs_value_parse_json(json, AFS_NTS, &e);
    size_t plen = 0;
    uint8_t *pk = deep ? afs_value_to_pickle(deep, &plen, &e) : NULL;
    if (!pk) note("to_pickle: %s", e.message);
    afs_value *again = pk ? afs_value_from_pickle(pk, plen, &e) : NULL;
    if (pk && !again) note("from_pickle of 512 levels: %s", e.message);
    afs_value_free(again);
    afs_free(pk);
    afs_value_free(deep);
    /* the parameters of a request as a pickle, 512 levels ({"k": [[…]]}): read, written
     * as JSON, and released on this stack */
    afs_value *params = deep_tree(DEPTH);
    uint8_t *pp = params ? afs_value_to_pickle(params, &plen, &e) : NULL;
    if (params && !pp) note("to_pickle of the parameters: %s", e.message);
    if (pp) {
        afs_serializer *js = afs_serializer_new(AFS_SERIALIZER_JSON);
        const uint8_t *snap = NULL;
        size_t snap_len = 0;
        afs_request *pr = afs_serializer_request_pickle(js, "POST", "https://example.com/x", pp, plen, &snap, &snap_len, &e);
        if (!pr) note("afs_serializer_request_pickle of 512 levels: %s", e.message);
        afs_request_free(pr);
        afs_serializer_free(js);
    }
    afs_free(pp);
    afs_value_free(params);
    /* 511 lists around an empty set (the general reader: sets and shared members) */
    unsigned char viaset[2 * DEPTH + 8];
    size_t vn = 0;
    viaset[vn++] = 0x80; viaset[vn++] = 4;                            /* PROTO 4 */
    memset(viaset + vn, ']', DEPTH - 1); vn += DEPTH - 1;              /* EMPTY_LIST */
    viaset[vn++] = 0x8f;                                              /* EMPTY_SET */
    memset(viaset + vn, 'a', DEPTH - 1); vn += DEPTH - 1;              /* APPEND */
    viaset[vn++] = '.';
    afs_value *sv = afs_value_from_pickle(viaset, vn, &e);
    if (!sv) note("512 levels through the general pickle reader: %s", e.message);
    afs_value_free(sv);
    /* 511 nested sets written as a pickle (frozensets: Python's hashing rules walk them) */
    afs_value *sets = afs_value_new_set();
    for (int i = 1; i < DEPTH - 1 && sets; i++) {
        afs_value *outer = afs_value_new_set();
        if (afs_value_append(outer, sets, &e) != AFS_OK) { note("nested sets: %s", e.message); afs_value_free(outer); sets = NULL; break; }
        sets = outer;
    }
    uint8_t *sp = sets ? afs_value_to_pickle(sets, &plen, &e) : NULL;
    if (sets && !sp) note("to_pickle of nested sets: %s", e.message);
    afs_free(sp);
    afs_value_free(sets);
    enum { LISTS = 100000 };
    unsigned char *nest = malloc(2 * LISTS + 8);
    if (nest) {
        size_t n = 0;
        nest[n++] = 0x80; nest[n++] = 2;                             /* PROTO 2 */
        memset(nest + n, ']', LISTS); n += LISTS;                    /* EMPTY_LIST */
        nest[n++] = 'K'; nest[n++] = 1;                              /* BININT1 1 */
        memset(nest + n, 'a', LISTS); n += LISTS;                    /* APPEND */
        nest[n++] = '.';                                             /* STOP */
        afs_value *no = afs_value_from_pickle(nest, n, &e);
        if (no || e.code != AFS_E_INVALID_ARGUMENT) note("100,000 nested lists: %s", no ? "accepted" : afs_status_name(e.code));
        afs_value_free(no);
        free(nest);
    }
    cur->status = AFS_OK;
    return NULL;
}

static void small_stack(void) {
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    pthread_t t;
    int rc = pthread_create(&t, &a, small_stack_work, NULL);
    if (rc != 0) { note("pthread_create: %s", strerror(rc)); return; }
    pthread_join(t, NULL);
    pthread_attr_destroy(&a);
}

/* ---- expansion ------------------------------------------------------------------------------ */

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) v = atol(line + 6);
    if (f) fclose(f);
    return v;
}

/* bplist00: object 0 = array of 100,000 refs to object 1; object 1 = array of 120 refs to
 * object 2; object 2 = integer 1. 2-byte references: about 200 KB, 12.1M values expanded. */
static uint8_t *shared_plist(size_t *len) {
    size_t n_outer = 100000, n_inner = 120;
    size_t cap = 64 + 2 * (n_outer + n_inner) + 64;
    uint8_t *p = calloc(1, cap), *w = p;
    memcpy(w, "bplist00", 8); w += 8;
    size_t off[3];
    off[0] = (size_t)(w - p);
    *w++ = 0xAF; *w++ = 0x12;                 /* array, count as a 4-byte integer */
    *w++ = 0; *w++ = (uint8_t)(n_outer >> 16); *w++ = (uint8_t)(n_outer >> 8); *w++ = (uint8_t)n_outer;
    for (size_t i = 0; i < n_outer; i++) { *w++ = 0; *w++ = 1; }
    off[1] = (size_t)(w - p);
    *w++ = 0xAF; *w++ = 0x10; *w++ = (uint8_t)n_inner;
    for (size_t i = 0; i < n_inner; i++) { *w++ = 0; *w++ = 2; }
    off[2] = (size_t)(w - p);
    *w++ = 0x10; *w++ = 1;                    /* integer 1 */
    size_t table = (size_t)(w - p);
    for (int i = 0; i < 3; i++) { *w++ = 0; *w++ = (uint8_t)(off[i] >> 16); *w++ = (uint8_t)(off[i] >> 8); *w++ = (uint8_t)off[i]; }
    /* trailer: 6 unused, offset size 4, ref size 1, 8-byte count, top, table offset */
    memset(w, 0, 6); w += 6;
    *w++ = 4; *w++ = 2;
    uint64_t fields[3] = {3, 0, table};
    for (int f = 0; f < 3; f++) for (int b = 7; b >= 0; b--) *w++ = (uint8_t)(fields[f] >> (8 * b));
    *len = (size_t)(w - p);
    return p;
}

static void expansion_plist(void) {
    size_t len;
    uint8_t *p = shared_plist(&len);
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_PLIST);
    long before = rss_kib();
    afs_error e;
    afs_value *v = NULL;
    afs_status st = afs_response_object(rs, 200, "application/x-plist", p, len, &v, &e);
    long after = rss_kib();
    record(st, &e);
    if (st != AFS_E_INVALID_PLIST || !strstr(e.message, "decoded tree")) note("expected the decoding limit, got %s", afs_status_name(st));
    if (after - before > 64 * 1024) note("peak RSS grew by %ld KiB", after - before);
    fprintf(stderr, "limits: expansion_shared_plist: %zu-byte plist, peak RSS %ld -> %ld KiB\n", len, before, after);
    afs_value_free(v);
    afs_response_serializer_free(rs);
    free(p);
}

static void lowered_limit_json(void) {
    size_t len;
    char *j = json_ones(1000, &len);
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    afs_response_serializer_set_max_decoded_bytes(rs, 4096);
    afs_error e;
    afs_value *v = NULL;
    afs_status st = afs_response_object(rs, 200, "application/json", j, len, &v, &e);
    record(st, &e);
    if (st != AFS_E_INVALID_JSON || !strstr(e.message, "decoded tree")) note("expected the lowered limit, got %s", afs_status_name(st));
    afs_value_free(v);
    afs_response_serializer_set_max_decoded_bytes(rs, 0);   /* back to the default */
    if (afs_response_object(rs, 200, "application/json", j, len, &v, &e) != AFS_OK) note("default limit: %s", e.message);
    afs_value_free(v);
    afs_response_serializer_free(rs);
    free(j);
}

/* ---- the table ---------------------------------------------------------------------------- */

typedef struct {
    const char *name, *group, *desc;
    void (*run)(void);
} scenario;

static const scenario scenarios[] = {
    {"oom_percent_escape", "rlimit", "afs_percent_escape of 96 MiB of spaces under RLIMIT_AS", oom_percent_escape},
    {"oom_query_string", "rlimit", "afs_query_string with a 96 MiB value under RLIMIT_AS", oom_query_string},
    {"oom_form_body", "rlimit", "form-urlencoded POST body of 96 MiB under RLIMIT_AS", oom_form_body},
    {"oom_query_url", "rlimit", "GET with a 96 MiB query under RLIMIT_AS", oom_query_url},
    {"oom_json_body", "rlimit", "JSON body with a 96 MiB escaped string under RLIMIT_AS", oom_json_body},
    {"oom_plist_xml", "rlimit", "XML plist body with a 96 MiB string under RLIMIT_AS", oom_plist_xml},
    {"oom_plist_binary", "rlimit", "binary plist body with a 96 MiB string under RLIMIT_AS", oom_plist_binary},
    {"oom_multipart_data", "rlimit", "100 MB afs_form_append_form_data under RLIMIT_AS; the form stays usable", oom_multipart_data},
    {"oom_multipart_file_data", "rlimit", "96 MiB afs_form_append_file_data under RLIMIT_AS", oom_multipart_file_data},
    {"oom_parse_json", "rlimit", "afs_value_parse_json of [1,1,...] (8M values) under RLIMIT_AS", oom_parse_json},
    {"oom_response_json", "rlimit", "JSON response of 8M values under RLIMIT_AS", oom_response_json},
    {"oom_response_http", "rlimit", "HTTP response body copy of 96 MiB under RLIMIT_AS", oom_response_http},
    {"oom_value_from_pickle", "rlimit", "afs_value_from_pickle of a 96 MiB str under RLIMIT_AS", oom_value_from_pickle},
    {"oom_value_to_pickle", "rlimit", "afs_value_to_pickle of a 96 MiB string under RLIMIT_AS", oom_value_to_pickle},
    {"oom_serializer_request_pickle", "rlimit", "afs_serializer_request_pickle, JSON body of a 96 MiB str, under RLIMIT_AS", oom_serializer_request_pickle},
    {"oom_response_object_pickle", "rlimit", "afs_response_object_pickle of a 96 MiB JSON string under RLIMIT_AS", oom_response_object_pickle},
    {"oom_response_plist", "rlimit", "XML plist response of 10M values under RLIMIT_AS", oom_response_plist},
    {"oom_url_resolve", "rlimit", "afs_url_resolve of a 12 MiB reference of '|' (36 MiB encoded) under RLIMIT_AS", oom_url_resolve},
    {"oom_request_new", "rlimit", "afs_request_new with a 12 MiB URL of '|' (36 MiB encoded) under RLIMIT_AS", oom_request_new},
    {"oom_string_new", "rlimit", "afs_string_new of 96 MiB under RLIMIT_AS: NULL", oom_string_new},
    {"oom_value_new_string", "rlimit", "afs_value_new_string of 96 MiB under RLIMIT_AS", oom_value_new_string},
    {"oom_value_new_data", "rlimit", "afs_value_new_data of 96 MiB under RLIMIT_AS: NULL", oom_value_new_data},
    {"oom_value_copy", "rlimit", "afs_value_copy of 4M values with 4 MiB of headroom: shared or NULL", oom_value_copy},
    {"oom_request_set_header", "rlimit", "afs_request_set_header with a 96 MiB value under RLIMIT_AS", oom_request_set_header},
    {"oom_request_copy_head", "rlimit", "afs_request_copy_head of a request with a 96 MiB header under RLIMIT_AS", oom_request_copy_head},
    {"oom_request_write_to_fd", "rlimit", "afs_request_write_to_fd of a request with a 96 MiB header under RLIMIT_AS", oom_request_write_to_fd},
    {"oom_request_pickle", "rlimit", "afs_request_pickle of a request with a 96 MiB header under RLIMIT_AS: NULL", oom_request_pickle},
    {"oom_serializer_serialize", "rlimit", "afs_serializer_serialize, JSON body of a 96 MiB string, under RLIMIT_AS", oom_serializer_serialize},
    {"oom_serializer_set_header", "rlimit", "afs_serializer_set_header with a 96 MiB value under RLIMIT_AS", oom_serializer_set_header},
    {"oom_form_append_part", "rlimit", "afs_form_append_part of 96 MiB under RLIMIT_AS", oom_form_append_part},
    {"oom_serializer_copy_headers", "rlimit", "afs_serializer_copy_header(s) of a 96 MiB header under RLIMIT_AS: NULL", oom_serializer_copy_headers},
    {"oom_borrowed_getters", "rlimit", "afs_value_get_string, afs_request_header(_value) of 96 MiB under RLIMIT_AS: NULL or the bytes", oom_borrowed_getters},
    {"small_stack_512", "stack", "512-level trees written, read (JSON, plists, pickles), walked and freed on a 64 KiB thread stack; 100,000 nested pickle lists refused", small_stack},
    {"expansion_shared_plist", "decode", "200 KB binary plist: 100k refs to a shared 120-element array (12.1M values)", expansion_plist},
    {"lowered_decode_limit", "decode", "afs_response_serializer_set_max_decoded_bytes(4096) refuses a 1000-value JSON body", lowered_limit_json},
};

int main(int argc, char **argv) {
    const char *only = NULL;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    int failed = 0, count = 0;
    for (size_t k = 0; k < sizeof scenarios / sizeof scenarios[0]; k++) {
        const scenario *s = &scenarios[k];
        if (only && strcmp(only, s->name) != 0) continue;
        count++;
        int fds[2];
        if (pipe(fds) != 0) return 2;
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            outcome o;
            memset(&o, 0, sizeof o);
            o.status = AFS_OK;
            cur = &o;
            alarm(120);
            s->run();
            if (write(fds[1], &o, sizeof o) != (ssize_t)sizeof o) _exit(3);
            _exit(0);
        }
        close(fds[1]);
        outcome o;
        memset(&o, 0, sizeof o);
        ssize_t got = read(fds[0], &o, sizeof o);
        close(fds[0]);
        int ws = 0;
        waitpid(pid, &ws, 0);
        const char *verdict = "PASS";
        if (WIFSIGNALED(ws)) {
            snprintf(o.notes, sizeof o.notes, "killed by signal %d (%s)", WTERMSIG(ws), strsignal(WTERMSIG(ws)));
            verdict = "FAIL";
        } else if (got != (ssize_t)sizeof o) {
            snprintf(o.notes, sizeof o.notes, "no outcome (exit status %d)", WEXITSTATUS(ws));
            verdict = "FAIL";
        } else if (o.failures) {
            verdict = "FAIL";
        }
        if (strcmp(verdict, "PASS") != 0) failed++;
        for (char *c = o.message; *c; c++) if (*c == '\t' || *c == '\n') *c = ' ';
        printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s->name, s->group, s->desc, verdict,
               got == (ssize_t)sizeof o ? afs_status_name(o.status) : "-",
               o.os_errno ? strerrorname_np(o.os_errno) : "-", o.message[0] ? o.message : "-", o.notes[0] ? o.notes : "-");
        fflush(stdout);
    }
    fprintf(stderr, "limits: %d of %d scenarios passed\n", count - failed, count);
    return failed ? 1 : 0;
}
