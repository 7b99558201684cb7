/* Multipart forms: exact wire bytes with a fixed boundary, every part kind, parameters as
 * field parts, escaping, MIME types, boundary rules, the finished request's headers, and
 * bad input (each a clear status and message).
 *
 * Usage: test_multipart [scratch-dir]   (default: $TMPDIR or /tmp) */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char scratch[1024];

/* Drains a body with reads of `chunk` bytes into a malloc'd buffer (*len). NULL on -1. */
static uint8_t *drain(afs_body_stream *bs, size_t chunk, size_t *len) {
    size_t cap = 4096, n = 0;
    uint8_t *out = malloc(cap);
    uint8_t *buf = malloc(chunk);
    for (;;) {
        int64_t r = afs_body_stream_read(bs, buf, chunk);
        if (r < 0) { free(out); free(buf); return NULL; }
        if (r == 0) break;
        if (n + (size_t)r > cap) { while (n + (size_t)r > cap) cap *= 2; out = realloc(out, cap); }
        memcpy(out + n, buf, (size_t)r);
        n += (size_t)r;
    }
    free(buf);
    *len = n;
    return out;
}

static int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    if (len && fwrite(data, 1, len, f) != len) { fclose(f); return -1; }
    return fclose(f);
}

static void path_in_scratch(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", scratch, name);
}

/* Compares a whole body against the expected text; prints both on mismatch. */
#define CHECK_BODY(req, expected) do { \
    afs_body_stream *bs_ = afs_request_body_stream(req); size_t n_ = 0; \
    uint8_t *b_ = bs_ ? drain(bs_, 65536, &n_) : NULL; const char *e_ = (expected); \
    check_count++; \
    if (!b_ || n_ != strlen(e_) || memcmp(b_, e_, n_) != 0) { check_failures++; \
        fprintf(stderr, "%s:%d: body mismatch\n  got (%zu):\n%.*s\n  expected (%zu):\n%s\n", __FILE__, __LINE__, \
                n_, (int)n_, b_ ? (const char *)b_ : "", strlen(e_), e_); } \
    free(b_); } while (0)

static afs_serializer *http(void) {
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_serializer_set_header(s, "Accept-Language", NULL, NULL);
    afs_serializer_set_header(s, "User-Agent", NULL, NULL);
    return s;
}

static void test_exact_wire_bytes(void) {
    afs_error err;
    afs_serializer *s = http();
    afs_value *p = afs_value_new_dict();
    afs_value *arr = afs_value_new_array();
    afs_value_append(arr, afs_value_new_string("x", AFS_NTS, NULL), NULL);
    afs_value_append(arr, afs_value_new_int(2), NULL);
    afs_value_dict_set(p, "b", AFS_NTS, arr, NULL);
    afs_value_dict_set(p, "a", AFS_NTS, afs_value_new_string("1 2", AFS_NTS, NULL), NULL);
    afs_value_dict_set(p, "n", AFS_NTS, afs_value_new_null(), NULL);
    afs_value_dict_set(p, "d", AFS_NTS, afs_value_new_data("\x00\xff", 2), NULL);
    afs_value_dict_set(p, "t", AFS_NTS, afs_value_new_bool(true), NULL);
    afs_value_dict_set(p, "f", AFS_NTS, afs_value_new_double(0.5), NULL);

    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://example.com/upload", p, &err);
    CHECK(f != NULL);
    CHECK_STATUS(afs_form_set_boundary(f, "XyZ", &err), AFS_OK);
    CHECK_STR(afs_form_boundary(f), "XyZ");
    CHECK_STATUS(afs_form_append_form_data(f, "hello", 5, "c", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_file_data(f, "DATA", 4, "up", "a.txt", "text/plain", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_file_data(f, "PNG", 3, "img", "i.PNG", NULL, &err), AFS_OK);
    const char *names[] = { "X-One", "Content-Disposition" };
    const char *values[] = { "1", "form-data; name=\"raw\"" };
    CHECK_STATUS(afs_form_append_part(f, names, values, 2, "raw body", 8, &err), AFS_OK);
    CHECK_STATUS(afs_form_append_part(f, NULL, NULL, 0, NULL, 0, &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    CHECK(r != NULL);
    /* the body holds NUL bytes: compare with an explicit length */
    size_t elen = 0;
    {
        static const char exp_bytes[] =
            "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1 2"
            "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"b[]\"\r\n\r\nx"
            "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"b[]\"\r\n\r\n2"
            "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"d\"\r\n\r\n\x00\xff"
            "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n0.5"
            "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\n"
            "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\n1"
            "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"c\"\r\n\r\nhello"
            "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"up\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nDATA"
            "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"img\"; filename=\"i.PNG\"\r\nContent-Type: image/png\r\n\r\nPNG"
            "\r\n--XyZ\r\nX-One: 1\r\nContent-Disposition: form-data; name=\"raw\"\r\n\r\nraw body"
            "\r\n--XyZ\r\n\r\n"
            "\r\n--XyZ--\r\n";
        elen = sizeof exp_bytes - 1;
        afs_body_stream *bs = afs_request_body_stream(r);
        CHECK(bs != NULL);
        CHECK(afs_request_body_stream(r) == bs); /* stable borrowed handle */
        CHECK(afs_body_stream_content_length(bs) == elen);
        size_t n = 0;
        uint8_t *body = drain(bs, 7, &n);
        CHECK(body != NULL && n == elen && memcmp(body, exp_bytes, elen) == 0);
        if (body && (n != elen || memcmp(body, exp_bytes, elen) != 0))
            fprintf(stderr, "got:\n%.*s\n", (int)n, (const char *)body);
        free(body);
    }
    char cl[32];
    snprintf(cl, sizeof cl, "%zu", elen);
    CHECK_STR(afs_request_header(r, "Content-Length"), cl);
    CHECK_STR(afs_request_header(r, "Content-Type"), "multipart/form-data; boundary=XyZ");
    CHECK_STR(afs_request_method(r), "POST");
    CHECK_STR(afs_request_url(r), "http://example.com/upload");
    size_t blen = 99;
    CHECK(afs_request_body(r, &blen) == NULL && blen == 0);
    /* the form is spent, its boundary still readable */
    CHECK_STR(afs_form_boundary(f), "XyZ");
    CHECK_STATUS(afs_form_append_form_data(f, "x", 1, "late", &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, "spent");
    CHECK(afs_form_finish(f, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, "spent");
    CHECK_STATUS(afs_form_set_boundary(f, "abc", &err), AFS_E_STATE);
    afs_form_free(f);
    afs_request_free(r);
    afs_value_free(p);
    afs_serializer_free(s);
}

static void test_request_headers_and_properties(void) {
    afs_error err;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_serializer_set_header(s, "X-Api", "k", NULL);
    afs_serializer_set_header(s, "Content-Type", "text/bogus", NULL);
    afs_serializer_set_timeout_interval(s, 12.5);
    afs_serializer_set_should_handle_cookies(s, false);
    afs_form *f = afs_serializer_multipart_form(s, "PUT", "https://h/p?q=1", NULL, &err);
    CHECK(f != NULL);
    const char *b = afs_form_boundary(f);
    CHECK(b != NULL && strncmp(b, "Boundary+", 9) == 0 && strlen(b) == 25);
    for (size_t i = 9; b && i < 25; i++) CHECK((b[i] >= '0' && b[i] <= '9') || (b[i] >= 'A' && b[i] <= 'F'));
    CHECK_STATUS(afs_form_append_form_data(f, "v", 1, "k", &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    CHECK(r != NULL);
    char ct[64];
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", afs_form_boundary(f));
    CHECK_STR(afs_request_header(r, "Content-Type"), ct);
    CHECK_STR(afs_request_header(r, "X-Api"), "k");
    CHECK(afs_request_header(r, "User-Agent") != NULL);
    CHECK(afs_request_header(r, "Accept-Language") != NULL);
    CHECK_STR(afs_request_url(r), "https://h/p?q=1");
    CHECK(afs_request_timeout_interval(r) == 12.5);
    CHECK(!afs_request_should_handle_cookies(r));
    /* Content-Type appears once */
    size_t count = 0;
    for (size_t i = 0; i < afs_request_header_count(r); i++)
        if (strcmp(afs_request_header_name(r, i), "Content-Type") == 0) count++;
    CHECK(count == 1);
    afs_request_free(r);
    afs_form_free(f);

    /* two forms get different boundaries */
    afs_form *f1 = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, NULL);
    afs_form *f2 = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, NULL);
    CHECK(strcmp(afs_form_boundary(f1), afs_form_boundary(f2)) != 0);
    afs_form_free(f1);
    afs_form_free(f2);
    afs_serializer_free(s);
}

static void test_empty_form_is_plain_request(void) {
    afs_error err;
    afs_serializer *s = http();
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://example.com/", NULL, &err);
    afs_request *r = afs_form_finish(f, &err);
    CHECK(r != NULL);
    CHECK(afs_request_body_stream(r) == NULL);
    size_t len = 99;
    CHECK(afs_request_body(r, &len) != NULL && len == 0);
    CHECK_STR(afs_request_header(r, "Content-Type"), "application/x-www-form-urlencoded");
    CHECK(afs_request_header(r, "Content-Length") == NULL);
    afs_request_free(r);
    afs_form_free(f);

    /* an empty dictionary of parameters is an empty form too */
    afs_value *p = afs_value_new_dict();
    f = afs_serializer_multipart_form(s, "POST", "http://example.com/", p, &err);
    r = afs_form_finish(f, &err);
    CHECK(r != NULL && afs_request_body_stream(r) == NULL);
    afs_request_free(r);
    afs_form_free(f);
    afs_value_free(p);
    afs_serializer_free(s);
}

static void test_methods_and_arguments(void) {
    afs_error err;
    afs_serializer *s = http();
    CHECK(afs_serializer_multipart_form(s, "GET", "http://h/", NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_METHOD, "GET");
    CHECK(afs_serializer_multipart_form(s, "head", "http://h/", NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_METHOD, "HEAD");
    CHECK(afs_serializer_multipart_form(s, "PO ST", "http://h/", NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_METHOD, "offset 2");
    CHECK(afs_serializer_multipart_form(s, "POST", "not a url", NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_BAD_URL, "URL");
    CHECK(afs_serializer_multipart_form(NULL, "POST", "http://h/", NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "serializer is NULL");
    CHECK(afs_serializer_multipart_form(s, NULL, "http://h/", NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "method");
    afs_value *arr = afs_value_new_array();
    CHECK(afs_serializer_multipart_form(s, "POST", "http://h/", arr, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "dictionary");
    /* a wrong handle kind */
    CHECK(afs_serializer_multipart_form((afs_serializer *)arr, "POST", "http://h/", NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "wrong kind");
    CHECK_STATUS(afs_form_append_form_data((afs_form *)arr, "x", 1, "n", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "afs_form");
    CHECK(afs_request_body_stream((afs_request *)arr) == NULL);
    CHECK(afs_body_stream_read((afs_body_stream *)arr, (uint8_t *)"", 1) == -1);
    afs_value_free(arr);

    /* NULL everywhere */
    CHECK_STATUS(afs_form_append_form_data(NULL, "x", 1, "n", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_form_append_file(NULL, "/etc/hostname", "n", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_form_set_boundary(NULL, "b", &err), AFS_E_INVALID_ARGUMENT);
    CHECK(afs_form_finish(NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "NULL");
    CHECK(afs_form_boundary(NULL) == NULL);
    afs_form_throttle_bandwidth(NULL, 1, 1);
    afs_form_free(NULL);
    CHECK(afs_request_body_stream(NULL) == NULL);
    CHECK(afs_request_write_body_to_file(NULL, "/tmp/x", &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "NULL");

    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    CHECK_STATUS(afs_form_append_form_data(f, NULL, 3, "n", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "data is NULL");
    CHECK_STATUS(afs_form_append_form_data(f, NULL, 0, "empty", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_form_data(f, "x", 1, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "name");
    CHECK_STATUS(afs_form_append_form_data(f, "x", 1, "\xff", &err), AFS_E_INVALID_UTF8);
    CHECK_STATUS(afs_form_append_file_data(f, "x", 1, "n", NULL, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "filename");
    CHECK_STATUS(afs_form_append_file_data(f, "x", 1, "n", "a.bin", "text/plain\r\nX-Evil: 1", &err), AFS_E_INVALID_HEADER);
    CHECK_ERROR(err, AFS_E_INVALID_HEADER, "Content-Type");
    const char *one[] = { "X" };
    CHECK_STATUS(afs_form_append_part(f, NULL, one, 1, "", 0, &err), AFS_E_INVALID_ARGUMENT);
    afs_form_free(f);
    afs_serializer_free(s);
}

static void test_encoding_of_field_values(void) {
    afs_error err;
    afs_serializer *s = http();
    afs_serializer_set_string_encoding(s, AFS_ENCODING_ISO_8859_1, NULL);
    afs_value *p = afs_value_new_dict();
    afs_value_dict_set(p, "caf\xc3\xa9", AFS_NTS, afs_value_new_string("\xc3\xa9t\xc3\xa9", AFS_NTS, NULL), NULL);
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", p, &err);
    CHECK(f != NULL);
    afs_form_set_boundary(f, "B", NULL);
    afs_request *r = afs_form_finish(f, &err);
    /* value in ISO-8859-1, name (a header) in UTF-8 */
    CHECK_BODY(r, "--B\r\nContent-Disposition: form-data; name=\"caf\xc3\xa9\"\r\n\r\n\xe9t\xe9\r\n--B--\r\n");
    afs_request_free(r);
    afs_form_free(f);
    afs_value_free(p);

    afs_serializer_set_string_encoding(s, AFS_ENCODING_ASCII, NULL);
    p = afs_value_new_dict();
    afs_value *user = afs_value_new_dict();
    afs_value_dict_set(user, "name", AFS_NTS, afs_value_new_string("J\xc3\xbcrgen", AFS_NTS, NULL), NULL);
    afs_value_dict_set(p, "user", AFS_NTS, user, NULL);
    CHECK(afs_serializer_multipart_form(s, "POST", "http://h/", p, &err) == NULL);
    CHECK_ERROR(err, AFS_E_ENCODING, "user[name]");
    afs_value_free(p);

    /* query styles apply to names and bools */
    afs_serializer_set_string_encoding(s, AFS_ENCODING_UTF8, NULL);
    afs_serializer_set_query_style(s, AFS_ARRAY_INDEXED, AFS_BOOL_LITERAL, AFS_SPACE_PLUS, NULL);
    p = afs_value_new_dict();
    afs_value *arr = afs_value_new_array();
    afs_value_append(arr, afs_value_new_bool(false), NULL);
    afs_value_dict_set(p, "a b", AFS_NTS, arr, NULL);
    f = afs_serializer_multipart_form(s, "POST", "http://h/", p, &err);
    afs_form_set_boundary(f, "B", NULL);
    r = afs_form_finish(f, &err);
    CHECK_BODY(r, "--B\r\nContent-Disposition: form-data; name=\"a b[0]\"\r\n\r\nfalse\r\n--B--\r\n");
    afs_request_free(r);
    afs_form_free(f);
    afs_value_free(p);
    afs_serializer_free(s);
}

static void test_escaping(void) {
    afs_error err;
    afs_serializer *s = http();
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_set_boundary(f, "B", NULL);
    CHECK_STATUS(afs_form_append_form_data(f, "v", 1, "a\"b\r\nc", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_file_data(f, "w", 1, "n", "evil\".txt\r\nX: y", NULL, &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    CHECK_BODY(r, "--B\r\nContent-Disposition: form-data; name=\"a%22b%0D%0Ac\"\r\n\r\nv"
                  "\r\n--B\r\nContent-Disposition: form-data; name=\"n\"; filename=\"evil%22.txt%0D%0AX: y\"\r\n"
                  "Content-Type: application/octet-stream\r\n\r\nw\r\n--B--\r\n");
    afs_request_free(r);
    afs_form_free(f);

    /* custom part headers are checked like request headers */
    f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    const char *n1[] = { "X-Ok", "X-Bad" };
    const char *v1[] = { "fine", "a\r\nInjected: 1" };
    CHECK_STATUS(afs_form_append_part(f, n1, v1, 2, "b", 1, &err), AFS_E_INVALID_HEADER);
    CHECK_ERROR(err, AFS_E_INVALID_HEADER, "X-Bad");
    const char *n2[] = { "Bad Name" };
    const char *v2[] = { "v" };
    CHECK_STATUS(afs_form_append_part(f, n2, v2, 1, "b", 1, &err), AFS_E_INVALID_HEADER);
    CHECK_ERROR(err, AFS_E_INVALID_HEADER, "offset 3");
    const char *n3[] = { "X-Lf" };
    const char *v3[] = { "a\nb" };
    CHECK_STATUS(afs_form_append_part(f, n3, v3, 1, "b", 1, &err), AFS_E_INVALID_HEADER);
    /* none of them was added: finishing gives the plain request */
    afs_request *plain = afs_form_finish(f, &err);
    CHECK(plain != NULL && afs_request_body_stream(plain) == NULL);
    afs_request_free(plain);
    afs_form_free(f);
    afs_serializer_free(s);
}

static void test_boundaries(void) {
    afs_error err;
    afs_serializer *s = http();
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    CHECK_STATUS(afs_form_set_boundary(f, "", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "1 to 70");
    char longb[72];
    memset(longb, 'a', 71);
    longb[71] = 0;
    CHECK_STATUS(afs_form_set_boundary(f, longb, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "not 71");
    longb[70] = 0;
    CHECK_STATUS(afs_form_set_boundary(f, longb, &err), AFS_OK);
    CHECK_STATUS(afs_form_set_boundary(f, "has space", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "offset 3");
    CHECK_STATUS(afs_form_set_boundary(f, "quo\"te", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_form_set_boundary(f, "a;b", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_form_set_boundary(f, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_form_set_boundary(f, "AZaz09'+_-.", &err), AFS_OK);
    CHECK_STR(afs_form_boundary(f), "AZaz09'+_-.");

    /* collision with in-memory content: refused at finish, fixable */
    CHECK_STATUS(afs_form_set_boundary(f, "sep", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_form_data(f, "a--sep-b", 8, "x", &err), AFS_OK);
    CHECK(afs_form_finish(f, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "part 0");
    CHECK_STATUS(afs_form_set_boundary(f, "sep2", &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    CHECK(r != NULL);
    afs_request_free(r);
    afs_form_free(f);

    /* collision in a header (the name) */
    f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_set_boundary(f, "zz", NULL);
    afs_form_append_form_data(f, "ok", 2, "name--zz", NULL);
    CHECK(afs_form_finish(f, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "\"zz\"");
    afs_form_free(f);

    /* the boundary without "--" is no collision */
    f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_set_boundary(f, "zz", NULL);
    afs_form_append_form_data(f, "-zz zz", 6, "n", NULL);
    r = afs_form_finish(f, &err);
    CHECK(r != NULL);
    afs_request_free(r);
    afs_form_free(f);

    /* a generated boundary found in a part is redrawn */
    f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    char first[32];
    snprintf(first, sizeof first, "%s", afs_form_boundary(f));
    afs_form_append_form_data(f, first, strlen(first), "n", NULL);
    r = afs_form_finish(f, &err);
    CHECK(r != NULL);
    CHECK(strcmp(afs_form_boundary(f), first) != 0);
    CHECK(strncmp(afs_form_boundary(f), "Boundary+", 9) == 0);
    char ct[64];
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", afs_form_boundary(f));
    CHECK_STR(afs_request_header(r, "Content-Type"), ct);
    afs_request_free(r);
    afs_form_free(f);
    afs_serializer_free(s);
}

static void test_files_and_mime(void) {
    afs_error err;
    char cer[1200], txt[1200], noext[1200], dir[1200], office[1200];
    path_in_scratch(cer, sizeof cer, "adn_0.cer");
    path_in_scratch(txt, sizeof txt, "Notes.TXT");
    path_in_scratch(noext, sizeof noext, "README");
    path_in_scratch(office, sizeof office, "q.xlsx");
    path_in_scratch(dir, sizeof dir, "afs_mp_dir");
    CHECK(write_file(cer, "\x30\x82\x01", 3) == 0);
    CHECK(write_file(txt, "hi", 2) == 0);
    CHECK(write_file(noext, "", 0) == 0);
    CHECK(write_file(office, "PK", 2) == 0);
    mkdir(dir, 0700);

    afs_serializer *s = http();
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    afs_form_set_boundary(f, "B", NULL);
    CHECK_STATUS(afs_form_append_file(f, cer, "cert", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_file(f, txt, "t", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_file(f, noext, "e", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_file(f, office, "x", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_file_ex(f, txt, "t2", "other.json", NULL, &err), AFS_OK);
    CHECK_STATUS(afs_form_append_file_ex(f, txt, "t3", NULL, "application/x-mine", &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    CHECK_BODY(r,
        "--B\r\nContent-Disposition: form-data; name=\"cert\"; filename=\"adn_0.cer\"\r\nContent-Type: application/x-x509-ca-cert\r\n\r\n\x30\x82\x01"
        "\r\n--B\r\nContent-Disposition: form-data; name=\"t\"; filename=\"Notes.TXT\"\r\nContent-Type: text/plain\r\n\r\nhi"
        "\r\n--B\r\nContent-Disposition: form-data; name=\"e\"; filename=\"README\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        "\r\n--B\r\nContent-Disposition: form-data; name=\"x\"; filename=\"q.xlsx\"\r\nContent-Type: application/vnd.openxmlformats-officedocument.spreadsheetml.sheet\r\n\r\nPK"
        "\r\n--B\r\nContent-Disposition: form-data; name=\"t2\"; filename=\"other.json\"\r\nContent-Type: application/json\r\n\r\nhi"
        "\r\n--B\r\nContent-Disposition: form-data; name=\"t3\"; filename=\"Notes.TXT\"\r\nContent-Type: application/x-mine\r\n\r\nhi"
        "\r\n--B--\r\n");
    afs_request_free(r);
    afs_form_free(f);

    /* MIME types through filenames of data parts: built-in table, /etc/mime.types, fallback */
    struct { const char *file, *type; } cases[] = {
        { "a.png", "image/png" }, { "a.JPG", "image/jpeg" }, { "a.jpeg", "image/jpeg" }, { "a.gif", "image/gif" },
        { "a.webp", "image/webp" }, { "a.heic", "image/heic" }, { "a.svg", "image/svg+xml" }, { "a.txt", "text/plain" },
        { "a.html", "text/html" }, { "a.htm", "text/html" }, { "a.css", "text/css" }, { "a.js", "text/javascript" },
        { "a.json", "application/json" }, { "a.xml", "application/xml" }, { "a.csv", "text/csv" },
        { "a.pdf", "application/pdf" }, { "a.zip", "application/zip" }, { "a.gz", "application/x-gzip" },
        { "a.tar", "application/x-tar" }, { "a.mp3", "audio/mpeg" }, { "a.mp4", "video/mp4" },
        { "a.mov", "video/quicktime" }, { "a.wav", "audio/vnd.wave" }, { "a.cer", "application/x-x509-ca-cert" },
        { "a.plist", "application/x-plist" }, { "a.doc", "application/msword" },
        { "a.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document" },
        { "a.xls", "application/vnd.ms-excel" }, { "a.ppt", "application/vnd.ms-powerpoint" },
        { "a.pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation" },
        { "a.unknownext", "application/octet-stream" }, { "noext", "application/octet-stream" },
        { "trailingdot.", "application/octet-stream" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
        afs_form_set_boundary(f, "B", NULL);
        afs_form_append_file_data(f, "", 0, "n", cases[i].file, NULL, &err);
        r = afs_form_finish(f, &err);
        char exp[512];
        snprintf(exp, sizeof exp, "--B\r\nContent-Disposition: form-data; name=\"n\"; filename=\"%s\"\r\nContent-Type: %s\r\n\r\n\r\n--B--\r\n",
                 cases[i].file, cases[i].type);
        CHECK_BODY(r, exp);
        afs_request_free(r);
        afs_form_free(f);
    }
    /* /etc/mime.types is consulted after the table (when present) */
    if (access("/etc/mime.types", R_OK) == 0) {
        FILE *mt = fopen("/etc/mime.types", "r");
        char line[512], type[256] = "", ext[64] = "";
        while (mt && fgets(line, sizeof line, mt)) {
            if (line[0] == '#') continue;
            if (sscanf(line, "%255s %63s", type, ext) == 2 && strcmp(ext, "odt") == 0) break;
            ext[0] = 0;
        }
        if (mt) fclose(mt);
        if (strcmp(ext, "odt") == 0) {
            f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
            afs_form_set_boundary(f, "B", NULL);
            afs_form_append_file_data(f, "", 0, "n", "doc.odt", NULL, &err);
            r = afs_form_finish(f, &err);
            char exp[512];
            snprintf(exp, sizeof exp, "--B\r\nContent-Disposition: form-data; name=\"n\"; filename=\"doc.odt\"\r\nContent-Type: %s\r\n\r\n\r\n--B--\r\n", type);
            CHECK_BODY(r, exp);
            afs_request_free(r);
            afs_form_free(f);
        }
    }

    /* bad files */
    f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    char missing[1200];
    path_in_scratch(missing, sizeof missing, "does-not-exist.bin");
    CHECK_STATUS(afs_form_append_file(f, missing, "m", &err), AFS_E_FILE);
    CHECK_ERROR(err, AFS_E_FILE, "does-not-exist.bin");
    CHECK(err.os_errno == ENOENT);
    CHECK_STATUS(afs_form_append_file(f, dir, "d", &err), AFS_E_FILE);
    CHECK_ERROR(err, AFS_E_FILE, "directory");
    CHECK(err.os_errno == EISDIR);
    CHECK_STATUS(afs_form_append_file(f, "/dev/null", "d", &err), AFS_E_FILE);
    CHECK_ERROR(err, AFS_E_FILE, "not a regular file");
    CHECK_STATUS(afs_form_append_file(f, "", "d", &err), AFS_E_FILE);
    CHECK_STATUS(afs_form_append_file(f, txt, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_form_append_file(f, NULL, "n", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_form_append_file_ex(f, txt, "n", "f", "bad\ntype", &err), AFS_E_INVALID_HEADER);

    /* unreadable: as root, check in a child that drops to "nobody" */
    char unreadable[1200];
    path_in_scratch(unreadable, sizeof unreadable, "unreadable.bin");
    CHECK(write_file(unreadable, "secret", 6) == 0);
    chmod(unreadable, 0);
    if (geteuid() != 0) {
        CHECK_STATUS(afs_form_append_file(f, unreadable, "u", &err), AFS_E_FILE);
        CHECK_ERROR(err, AFS_E_FILE, "Permission denied");
        CHECK(err.os_errno == EACCES);
    } else {
        /* the child reports through a pipe (its exit status may be valgrind's) */
        int fds[2];
        CHECK(pipe(fds) == 0);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            char ok = '0';
            close(fds[0]);
            chmod(scratch, 0755);
            if (setgid(65534) == 0 && setuid(65534) == 0) {
                afs_error e2;
                if (afs_form_append_file(f, unreadable, "u", &e2) == AFS_E_FILE && e2.os_errno == EACCES &&
                    strstr(e2.message, "Permission denied") != NULL) ok = '1';
            } else {
                ok = 's'; /* cannot drop privileges here: nothing to check */
            }
            if (write(fds[1], &ok, 1) != 1) _exit(1);
            _exit(0);
        }
        close(fds[1]);
        char got = 0;
        CHECK(read(fds[0], &got, 1) == 1);
        close(fds[0]);
        int st = 0;
        waitpid(pid, &st, 0);
        CHECK(got == '1' || got == 's');
    }
    /* no failed append left a part behind */
    afs_request *plain = afs_form_finish(f, &err);
    CHECK(plain != NULL && afs_request_body_stream(plain) == NULL);
    afs_request_free(plain);
    afs_form_free(f);
    afs_serializer_free(s);
    unlink(cer); unlink(txt); unlink(noext); unlink(office); unlink(unreadable); rmdir(dir);
}

/* release runs exactly once */
static int released[8];
static void release_fn(void *ctx) { released[(intptr_t)ctx]++; }
static int64_t read_abc(void *ctx, uint8_t *buf, size_t max) { (void)ctx; (void)buf; (void)max; return 0; }

static void test_release_once(void) {
    afs_error err;
    afs_serializer *s = http();
    memset(released, 0, sizeof released);
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    /* failing appends release at once */
    CHECK_STATUS(afs_form_append_stream(f, NULL, NULL, release_fn, (void *)1, 3, "n", "f", NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "read");
    CHECK(released[1] == 1);
    CHECK_STATUS(afs_form_append_stream(f, read_abc, NULL, release_fn, (void *)2, 3, NULL, "f", NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(released[2] == 1);
    CHECK_STATUS(afs_form_append_stream(f, read_abc, NULL, release_fn, (void *)3, 3, "n", "f", "x\ry", &err), AFS_E_INVALID_HEADER);
    CHECK(released[3] == 1);
    CHECK_STATUS(afs_form_append_stream(NULL, read_abc, NULL, release_fn, (void *)4, 3, "n", "f", NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(released[4] == 1);
    /* a part freed with its form */
    CHECK_STATUS(afs_form_append_stream(f, read_abc, NULL, release_fn, (void *)5, 0, "n", "f", NULL, &err), AFS_OK);
    CHECK(released[5] == 0);
    afs_form_free(f);
    CHECK(released[5] == 1);
    /* a part freed with its request */
    f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    CHECK_STATUS(afs_form_append_stream(f, read_abc, NULL, release_fn, (void *)6, 0, "n", "f.bin", NULL, &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    afs_form_free(f);
    CHECK(released[6] == 0);
    afs_request *copy = afs_request_write_body_to_file(r, "/dev/null/not-a-dir/x", &err);
    CHECK(copy == NULL);
    afs_request_free(r);
    CHECK(released[6] == 1);
    /* on a spent form */
    f = afs_serializer_multipart_form(s, "POST", "http://h/", NULL, &err);
    r = afs_form_finish(f, &err);
    CHECK_STATUS(afs_form_append_stream(f, read_abc, NULL, release_fn, (void *)7, 0, "n", "f", NULL, &err), AFS_E_STATE);
    CHECK(released[7] == 1);
    afs_request_free(r);
    afs_form_free(f);
    afs_serializer_free(s);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    snprintf(scratch, sizeof scratch, "%s/afs_test_multipart_XXXXXX", dir);
    if (!mkdtemp(scratch)) { perror("mkdtemp"); return 1; }
    test_exact_wire_bytes();
    test_request_headers_and_properties();
    test_empty_form_is_plain_request();
    test_methods_and_arguments();
    test_encoding_of_field_values();
    test_escaping();
    test_boundaries();
    test_files_and_mime();
    test_release_once();
    rmdir(scratch);
    return check_summary(argv[0]);
}
