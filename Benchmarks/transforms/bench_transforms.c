/* Body transforms benchmark (issue 22), one row per run: a file part of the given file
 * written by the library, then the seconds, the body bytes (before compression / framing)
 * and the RSS growth (VmHWM after minus VmRSS before the work) on one line.
 *
 *   bench_transforms MODE FILE
 *   MODE: plain    length-framed afs_request_write_to_fd to a TCP socket on 127.0.0.1
 *         chunked  the same request made chunked (plus an empty part of unknown length):
 *                  framing written by the library, the file part by sendfile in its chunk
 *         gzip1    afs_body_stream_write_to_fd of the body compressed with gzip level 1
 *                  (streaming, AFS_LENGTH_UNKNOWN) to /dev/null
 *         zstd1    the same with zstd level 1
 *         sha256   chunked write to a socket with a SHA-256 trailer digest
 * The reader of the socket is a thread that drains into a buffer. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "afserialization.h"

static long status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t k = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, k) == 0) v = atol(line + k + 1);
    if (f) fclose(f);
    return v;
}

static void *drain(void *arg) {
    int fd = *(int *)arg;
    static char buf[1 << 20];
    while (read(fd, buf, sizeof buf) > 0) {}
    return NULL;
}

static int64_t empty_read(void *ctx, uint8_t *b, size_t n) { (void)ctx; (void)b; (void)n; return 0; }
static int empty_rewind(void *ctx) { (void)ctx; return 0; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const afs_error *e) {
    fprintf(stderr, "bench_transforms: %s: %s\n", what, e ? e->message : "");
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: bench_transforms MODE FILE\n"); return 2; }
    const char *mode = argv[1], *path = argv[2];
    struct stat st;
    if (stat(path, &st) != 0) die("stat", NULL);
    afs_error err;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://127.0.0.1/upload", NULL, &err);
    if (!f || afs_form_append_file(f, path, "file", &err) != AFS_OK) die("form", &err);
    int chunked = strcmp(mode, "chunked") == 0 || strcmp(mode, "sha256") == 0;
    if (chunked && afs_form_append_stream(f, empty_read, empty_rewind, NULL, NULL, AFS_LENGTH_UNKNOWN,
                                          "tail", "tail.bin", NULL, &err) != AFS_OK) die("stream part", &err);
    afs_request *r = afs_form_finish(f, &err);
    if (!r) die("finish", &err);
    if (strcmp(mode, "gzip1") == 0 && afs_request_set_content_encoding(r, "gzip", 1, 0, &err) != AFS_OK) die("gzip", &err);
    if (strcmp(mode, "zstd1") == 0 && afs_request_set_content_encoding(r, "zstd", 1, 0, &err) != AFS_OK) die("zstd", &err);
    if (strcmp(mode, "sha256") == 0 && afs_request_add_digest(r, "sha-256", AFS_DIGEST_TRAILER, &err) != AFS_OK) die("digest", &err);

    int out = -1, peer = -1;
    pthread_t t;
    int to_socket = strcmp(mode, "gzip1") != 0 && strcmp(mode, "zstd1") != 0;
    if (to_socket) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t al = sizeof a;
        if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) || getsockname(l, (struct sockaddr *)&a, &al)) die("listen", NULL);
        out = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(out, (struct sockaddr *)&a, sizeof a)) die("connect", NULL);
        peer = accept(l, NULL, NULL);
        close(l);
        pthread_create(&t, NULL, drain, &peer);
    } else {
        out = open("/dev/null", O_WRONLY);
    }
    long rss0 = status_kb("VmRSS");
    double t0 = now();
    uint64_t n = 0;
    afs_status rc = to_socket ? afs_request_write_to_fd(r, out, &n, &err)
                              : afs_body_stream_write_to_fd(afs_request_body_stream(r), out, &n, &err);
    double dt = now() - t0;
    if (rc != AFS_OK) die("write", &err);
    long hwm = status_kb("VmHWM");
    close(out);
    if (to_socket) { pthread_join(t, NULL); close(peer); }
    printf("%s\t%.6f\t%lld\t%ld\n", mode, dt, (long long)st.st_size, hwm - rss0);
    afs_request_free(r);
    afs_form_free(f);
    afs_serializer_free(s);
    return 0;
}
