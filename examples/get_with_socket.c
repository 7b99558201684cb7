/* get_with_socket — HTTP/1.1 on a raw socket with AFSerialization: each request is written
 * with afs_request_write_to_fd and its answer read with afs_response_reader, two (or more)
 * requests on one keep-alive connection (a new connection only when the server closes).
 *
 *   get_with_socket URL [URL...]     default: two GETs of the same URL (http:// only)
 *
 * Prints, per response: the status line, the headers, the interim codes, the decoded body
 * (gzip, br, zstd and deflate are asked for and decoded; the first 400 bytes shown) and the
 * trailers. Exit status 0 when every response was read completely.
 */
#define _POSIX_C_SOURCE 200809L
#include <afserialization.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* host and port of an http:// URL (no userinfo, no IPv6 literal: an example). */
static int split_url(const char *url, char *host, size_t host_size, char *port, size_t port_size) {
    if (strncmp(url, "http://", 7) != 0) return -1;
    const char *h = url + 7;
    size_t n = strcspn(h, ":/?#");
    if (n == 0 || n >= host_size) return -1;
    memcpy(host, h, n);
    host[n] = 0;
    if (h[n] == ':') {
        size_t p = strcspn(h + n + 1, "/?#");
        if (p == 0 || p >= port_size) return -1;
        memcpy(port, h + n + 1, p);
        port[p] = 0;
    } else {
        snprintf(port, port_size, "80");
    }
    return 0;
}

static int connect_to(const char *host, const char *port) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) return -1;
    int fd = -1;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* Reads one response from fd into rd. buf/have carry bytes between responses (pipelining).
 * Returns 0 when complete, -1 on an error (printed). *closed is set when the peer closed. */
static int read_response(int fd, afs_response_reader *rd, uint8_t *buf, size_t size, size_t *have, int *closed) {
    afs_error err;
    while (afs_response_reader_state(rd) != AFS_READER_DONE) {
        if (*have == 0) {
            ssize_t got = read(fd, buf, size);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) {
                perror("read");
                return -1;
            }
            if (got == 0) {
                *closed = 1;
                if (afs_response_reader_eof(rd, &err) != AFS_OK) {
                    fprintf(stderr, "%s: %s\n", afs_status_name(err.code), err.message);
                    return -1;
                }
                continue;
            }
            *have = (size_t)got;
        }
        size_t used = 0;
        if (afs_response_reader_feed(rd, buf, *have, &used, &err) != AFS_OK) {
            fprintf(stderr, "%s: %s\n", afs_status_name(err.code), err.message);
            return -1;
        }
        memmove(buf, buf + used, *have - used);   /* what is left belongs to the next response */
        *have -= used;
    }
    return 0;
}

static void print_response(const afs_response_reader *rd) {
    for (size_t i = 0; i < afs_response_reader_interim_count(rd); i++)
        printf("  (interim %d)\n", afs_response_reader_interim_status(rd, i));
    printf("  HTTP/%s %d %s\n", afs_response_reader_version(rd) == 10 ? "1.0" : "1.1",
           afs_response_reader_status(rd), afs_response_reader_reason(rd));
    for (size_t i = 0; i < afs_response_reader_header_count(rd); i++)
        printf("  %s: %s\n", afs_response_reader_header_name(rd, i), afs_response_reader_header_value(rd, i));
    size_t len = 0;
    const uint8_t *body = afs_response_reader_body(rd, &len);
    printf("  -- body: %zu bytes (decoded)\n", len);
    size_t shown = len < 400 ? len : 400;
    for (size_t i = 0; i < shown; i++) putchar(body[i] == '\n' || (body[i] >= 0x20 && body[i] < 0x7F) ? body[i] : '.');
    if (shown && body[shown - 1] != '\n') putchar('\n');
    for (size_t i = 0; i < afs_response_reader_trailer_count(rd); i++)
        printf("  trailer %s: %s\n", afs_response_reader_trailer_name(rd, i), afs_response_reader_trailer_value(rd, i));
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s http://HOST[:PORT]/PATH [URL...]\n", argv[0]);
        return 2;
    }
    const char *urls[64];
    int count = 0;
    for (int i = 1; i < argc && count < 64; i++) urls[count++] = argv[i];
    if (count == 1) urls[count++] = argv[1];     /* keep-alive: the same URL twice */

    char host[256], port[16];
    if (split_url(urls[0], host, sizeof host, port, sizeof port) != 0) {
        fprintf(stderr, "only http://host[:port]/... URLs: %s\n", urls[0]);
        return 2;
    }
    afs_error err;
    afs_response_reader *rd = afs_response_reader_new("GET", &err);
    static uint8_t buf[65536];
    size_t have = 0;
    int fd = -1, connections = 0, status = 0;
    for (int n = 0; n < count; n++) {
        if (fd < 0) {
            fd = connect_to(host, port);
            if (fd < 0) {
                fprintf(stderr, "cannot connect to %s:%s\n", host, port);
                status = 1;
                break;
            }
            connections++;
            have = 0;
        }
        afs_request *req = afs_request_new("GET", urls[n], &err);
        if (!req || afs_request_set_header(req, "Accept-Encoding", "gzip, br, zstd, deflate", &err) != AFS_OK ||
            afs_request_write_to_fd(req, fd, NULL, &err) != AFS_OK) {
            fprintf(stderr, "request %s: %s\n", urls[n], err.message);
            afs_request_free(req);
            status = 1;
            break;
        }
        afs_request_free(req);
        printf("GET %s (connection %d)\n", urls[n], connections);
        int closed = 0;
        if (read_response(fd, rd, buf, sizeof buf, &have, &closed) != 0) {
            status = 1;
            break;
        }
        print_response(rd);
        const char *conn = afs_response_reader_header(rd, "Connection");
        if (closed || (conn && strstr(conn, "close")) || afs_response_reader_version(rd) == 10) {
            close(fd);          /* the server ends the connection: the next request opens one */
            fd = -1;
        }
        afs_response_reader_reset(rd, "GET", &err);
    }
    if (fd >= 0) close(fd);
    printf("%d request(s) on %d connection(s)\n", count, connections);
    afs_response_reader_free(rd);
    return status;
}
