/* URLs: intake (afs_request_new), RFC 3986 resolution (afs_url_resolve, every example of
 * section 5.4), base URLs (afs_serializer_set_base_url), and the request as HTTP/1.1 bytes
 * (afs_request_copy_head, afs_request_write_to_fd, resumed after EAGAIN). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

static const char *const rfc3986_examples[][2] = {
    /* 5.4.1 normal examples */
    {"g:h", "g:h"}, {"g", "http://a/b/c/g"}, {"./g", "http://a/b/c/g"}, {"g/", "http://a/b/c/g/"},
    {"/g", "http://a/g"}, {"//g", "http://g"}, {"?y", "http://a/b/c/d;p?y"}, {"g?y", "http://a/b/c/g?y"},
    {"#s", "http://a/b/c/d;p?q#s"}, {"g#s", "http://a/b/c/g#s"}, {"g?y#s", "http://a/b/c/g?y#s"},
    {";x", "http://a/b/c/;x"}, {"g;x", "http://a/b/c/g;x"}, {"g;x?y#s", "http://a/b/c/g;x?y#s"},
    {"", "http://a/b/c/d;p?q"}, {".", "http://a/b/c/"}, {"./", "http://a/b/c/"}, {"..", "http://a/b/"},
    {"../", "http://a/b/"}, {"../g", "http://a/b/g"}, {"../..", "http://a/"}, {"../../", "http://a/"},
    {"../../g", "http://a/g"},
    /* 5.4.2 abnormal examples */
    {"../../../g", "http://a/g"}, {"../../../../g", "http://a/g"}, {"/./g", "http://a/g"}, {"/../g", "http://a/g"},
    {"g.", "http://a/b/c/g."}, {".g", "http://a/b/c/.g"}, {"g..", "http://a/b/c/g.."}, {"..g", "http://a/b/c/..g"},
    {"./../g", "http://a/b/g"}, {"./g/.", "http://a/b/c/g/"}, {"g/./h", "http://a/b/c/g/h"}, {"g/../h", "http://a/b/c/h"},
    {"g;x=1/./y", "http://a/b/c/g;x=1/y"}, {"g;x=1/../y", "http://a/b/c/y"}, {"g?y/./x", "http://a/b/c/g?y/./x"},
    {"g?y/../x", "http://a/b/c/g?y/../x"}, {"g#s/./x", "http://a/b/c/g#s/./x"}, {"g#s/../x", "http://a/b/c/g#s/../x"},
    {"http:g", "http:g"},
};

static void test_resolve(void) {
    afs_error err;
    size_t n = sizeof rfc3986_examples / sizeof rfc3986_examples[0];
    CHECK(n == 42);
    for (size_t i = 0; i < n; i++) {
        char *t = afs_url_resolve("http://a/b/c/d;p?q", rfc3986_examples[i][0], &err);
        CHECK_STR(t, rfc3986_examples[i][1]);
        afs_free(t);
    }
    CHECK(afs_url_resolve("relative/base", "g", &err) == NULL);
    CHECK_ERROR(err, AFS_E_BAD_URL, "the base URL must be absolute");
    CHECK(afs_url_resolve("http://a/", "x\ny", &err) == NULL);
    CHECK_ERROR(err, AFS_E_BAD_URL, "control character 0x0A at offset 1");
    CHECK(afs_url_resolve(NULL, "g", &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "base");
}

static void test_intake(void) {
    static const char *const cases[][2] = {
        {"https://api.example.com/articles?filter[title]=x", "https://api.example.com/articles?filter%5Btitle%5D=x"},
        {"https://example.com/movies?hd=[1]", "https://example.com/movies?hd=%5B1%5D"},
        {"https://de.wikipedia.org/wiki/K\xc3\xb6ln", "https://de.wikipedia.org/wiki/K%C3%B6ln"},
        {"https://example.com/a b", "https://example.com/a%20b"},
        {"https://example.com/?q=a|b", "https://example.com/?q=a%7Cb"},
        {"https://example.com/?q={x}", "https://example.com/?q=%7Bx%7D"},
        {"https://b\xc3\xbc" "cher.example/x", "https://xn--bcher-kva.example/x"},
        {"HTTP://E.com:0080/a/./b/../c", "HTTP://E.com:0080/a/./b/../c"},
    };
    afs_error err;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        afs_request *r = afs_request_new("GET", cases[i][0], &err);
        CHECK(r != NULL);
        CHECK_STR(afs_request_url(r), cases[i][1]);
        afs_request_free(r);
    }
    CHECK(afs_request_new("GET", "users/1", &err) == NULL);
    CHECK_ERROR(err, AFS_E_BAD_URL, "a base URL is needed");
    CHECK(afs_request_new("GET", "http://e.com:65536/", &err) == NULL);
    CHECK_ERROR(err, AFS_E_BAD_URL, "exceeds 65535");
    CHECK(afs_request_new("GET", "http://a.b\xc3\x9f\xe2\x80\x8c.com/", &err) == NULL);  /* ZWNJ outside a joining context */
    CHECK_ERROR(err, AFS_E_BAD_URL, "IDNA refuses");
    CHECK(afs_request_new("GET", "http://e.com/\xff", &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_UTF8, "offset 13");
}

static void test_base_url(const char *scratch) {
    afs_error err;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_request *r = afs_serializer_request(s, "GET", "users/1", NULL, &err);
    CHECK(r == NULL);
    CHECK_ERROR(err, AFS_E_BAD_URL, "a base URL is needed");
    CHECK_STATUS(afs_serializer_set_base_url(s, "https://api.example.com/v1", &err), AFS_OK);
    r = afs_serializer_request(s, "GET", "users/1", NULL, &err);
    CHECK_STR(r ? afs_request_url(r) : NULL, "https://api.example.com/v1/users/1");
    afs_request_free(r);
    r = afs_serializer_request(s, "GET", "/users/../me", NULL, &err);
    CHECK_STR(r ? afs_request_url(r) : NULL, "https://api.example.com/me");
    afs_request_free(r);
    r = afs_serializer_request(s, "GET", "http://other.example/a/../b", NULL, &err);
    CHECK_STR(r ? afs_request_url(r) : NULL, "http://other.example/a/../b");
    afs_request_free(r);

    afs_serializer *copy = afs_serializer_copy(s);
    afs_form *f = afs_serializer_multipart_form(copy, "POST", "upload?x=1", NULL, &err);
    CHECK(f != NULL);
    r = afs_form_finish(f, &err);
    CHECK_STR(r ? afs_request_url(r) : NULL, "https://api.example.com/v1/upload?x=1");
    afs_request_free(r);
    afs_form_free(f);
    afs_serializer_free(copy);

    CHECK_STATUS(afs_serializer_set_base_url(s, "not absolute", &err), AFS_E_BAD_URL);
    CHECK_ERROR(err, AFS_E_BAD_URL, "must be absolute");
    r = afs_serializer_request(s, "GET", "a", NULL, &err);  /* the old base stays */
    CHECK_STR(r ? afs_request_url(r) : NULL, "https://api.example.com/v1/a");
    afs_request_free(r);
    CHECK_STATUS(afs_serializer_set_base_url(s, NULL, &err), AFS_OK);
    CHECK(afs_serializer_request(s, "GET", "a", NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_BAD_URL, "a base URL is needed");
    CHECK_STATUS(afs_serializer_set_base_url(NULL, "http://a/", &err), AFS_E_INVALID_ARGUMENT);
    afs_serializer_free(s);
    (void)scratch;
}

static void test_head(void) {
    afs_error err;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_JSON);
    CHECK_STATUS(afs_serializer_set_header(s, "Accept-Language", NULL, &err), AFS_OK);
    CHECK_STATUS(afs_serializer_set_header(s, "User-Agent", "t/1", &err), AFS_OK);
    afs_value *p = afs_value_new_dict();
    afs_value_dict_set(p, "k", AFS_NTS, afs_value_new_int(1), NULL);
    afs_request *r = afs_serializer_request(s, "POST", "http://al%20ice:pw@e.com:8080/a%20b?x=1#frag", p, &err);
    CHECK(r != NULL);
    size_t len = 0;
    char *head = afs_request_copy_head(r, &len, &err);
    /* base64("al ice:pw") = YWwgaWNlOnB3 */
    const char *want = "POST /a%20b?x=1 HTTP/1.1\r\nHost: e.com:8080\r\nAuthorization: Basic YWwgaWNlOnB3\r\n"
                       "User-Agent: t/1\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n";
    CHECK_STR(head, want);
    CHECK(len == strlen(want));
    afs_free(head);
    afs_request_free(r);

    r = afs_request_new("GET", "urn:isbn:1", &err);
    CHECK(afs_request_copy_head(r, &len, &err) == NULL);
    CHECK_ERROR(err, AFS_E_BAD_URL, "no host");
    afs_request_free(r);
    CHECK(afs_request_copy_head(NULL, &len, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "request");
    afs_value_free(p);
    afs_serializer_free(s);
}

/* Reads everything from fd until EOF. */
static char *slurp(int fd, size_t *n) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len == cap) buf = realloc(buf, cap *= 2);
        ssize_t k = read(fd, buf + len, cap - len);
        if (k <= 0) break;
        len += (size_t)k;
    }
    *n = len;
    return buf;
}

static void test_write_to_fd(const char *scratch) {
    afs_error err;
    /* A multipart upload with a 3 MiB file part. */
    char path[512];
    snprintf(path, sizeof path, "%s/test_urls_upload.bin", scratch);
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (!fp) return;
    for (int i = 0; i < 3 << 20; i++) fputc((i * 7 + i / 4096) & 0xFF, fp);
    fclose(fp);
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://127.0.0.1:9/up", NULL, &err);
    CHECK_STATUS(afs_form_append_form_data(f, "x", 1, "title", &err), AFS_OK);
    CHECK_STATUS(afs_form_append_file(f, path, "file", &err), AFS_OK);
    afs_request *r = afs_form_finish(f, &err);
    CHECK(r != NULL);
    size_t head_len = 0;
    char *head = afs_request_copy_head(r, &head_len, &err);
    uint64_t body_len = afs_body_stream_content_length(afs_request_body_stream(r));

    /* Non-blocking socket with a small buffer: the writer stops with EAGAIN and resumes. */
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    size_t cap = head_len + (size_t)body_len, got = 0;
    char *wire = malloc(cap + 1);
    uint64_t total = 0;
    int calls = 0, eagain = 0;
    for (;;) {
        uint64_t w = 0;
        afs_status st = afs_request_write_to_fd(r, sv[0], &w, &err);
        total += w;
        calls++;
        /* drain what is there */
        for (;;) {
            ssize_t k = recv(sv[1], wire + got, cap + 1 - got, MSG_DONTWAIT);
            if (k <= 0) break;
            got += (size_t)k;
        }
        if (st == AFS_OK) break;
        if (st != AFS_E_IO || (err.os_errno != EAGAIN && err.os_errno != EWOULDBLOCK) || calls > 100000) {
            CHECK_STATUS(st, AFS_OK);
            break;
        }
        eagain++;
    }
    shutdown(sv[0], SHUT_WR);
    size_t rest_n = 0;
    char *rest = slurp(sv[1], &rest_n);
    CHECK(got + rest_n <= cap);
    if (got + rest_n <= cap) memcpy(wire + got, rest, rest_n);
    got += rest_n;
    free(rest);
    CHECK(eagain > 0);
    CHECK(total == head_len + body_len);
    CHECK(got == head_len + body_len);
    CHECK(got >= head_len && memcmp(wire, head, head_len) == 0);

    /* The body equals what the stream reads. */
    afs_body_stream *bs = afs_request_body_stream(r);
    CHECK_STATUS(afs_body_stream_rewind(bs, &err), AFS_OK);
    char *body = malloc((size_t)body_len + 1);
    size_t bn = 0;
    int64_t k;
    while ((k = afs_body_stream_read(bs, (uint8_t *)body + bn, 65536)) > 0) bn += (size_t)k;
    CHECK(bn == body_len);
    CHECK(got == head_len + bn && memcmp(wire + head_len, body, bn) == 0);

    /* Complete: the next call writes the whole request again (to a pipe this time). */
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    char *again_buf = NULL;
    size_t again_n = 0;
    pid_t child = fork();
    if (child == 0) {
        close(pfd[0]);
        uint64_t w = 0;
        _exit(afs_request_write_to_fd(r, pfd[1], &w, NULL) == AFS_OK && w == head_len + body_len ? 0 : 1);
    }
    close(pfd[1]);
    again_buf = slurp(pfd[0], &again_n);
    close(pfd[0]);
    int wstatus = -1;
    CHECK(waitpid(child, &wstatus, 0) == child && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    CHECK(again_n == got && memcmp(again_buf, wire, got) == 0);
    free(again_buf);

    uint64_t w = 7;
    CHECK_STATUS(afs_request_write_to_fd(r, -1, &w, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(w == 0);
    CHECK_STATUS(afs_request_write_to_fd(NULL, 1, &w, &err), AFS_E_INVALID_ARGUMENT);

    free(body);
    free(wire);
    afs_free(head);
    close(sv[0]);
    close(sv[1]);
    afs_request_free(r);
    afs_form_free(f);
    afs_serializer_free(s);
    remove(path);
}

int main(int argc, char **argv) {
    const char *scratch = argc > 1 ? argv[1] : ".";
    test_resolve();
    test_intake();
    test_base_url(scratch);
    test_head();
    test_write_to_fd(scratch);
    return check_summary("test_urls");
}
