/* Multipart body benchmark: one measurement per run, printed as `key=value` pairs for
 * run.py, which puts them side by side.
 *
 *   bench_multipart read FILE         drain a form (a field + FILE as a file part) with
 *                                      afs_body_stream_read, 64 KiB reads
 *   bench_multipart plainread FILE    a plain read(2) loop over FILE, 64 KiB reads
 *   bench_multipart writefd FILE OUT  afs_body_stream_write_to_fd of the same form to OUT
 *
 * Output: mode, bytes, seconds, rss_before_kib (VmRSS just before the timed part),
 * peak_rss_kib (VmHWM at the end), checksum (keeps the reads honest). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "afserialization.h"

#define CHUNK 65536

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A field of /proc/self/status in KiB: VmRSS (now) or VmHWM (peak of this process image;
 * unlike ru_maxrss it does not include the parent's RSS inherited through fork+exec). */
static long status_kib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0) v = strtol(line + n, NULL, 10);
    if (f) fclose(f);
    return v;
}

static long rss_kib(void) { return status_kib("VmRSS:"); }
static long peak_kib(void) { return status_kib("VmHWM:"); }

static afs_request *make_request(afs_serializer *s, const char *path) {
    afs_error err;
    afs_form *form = afs_serializer_multipart_form(s, "POST", "http://127.0.0.1/upload", NULL, &err);
    afs_request *r = NULL;
    if (form && afs_form_append_form_data(form, "value", 5, "field", &err) == AFS_OK &&
        afs_form_append_file(form, path, "file", &err) == AFS_OK)
        r = afs_form_finish(form, &err);
    if (!r) fprintf(stderr, "bench_multipart: %s: %s\n", afs_status_name(err.code), err.message);
    afs_form_free(form);
    return r;
}

static void report(const char *mode, uint64_t bytes, double secs, long before, uint64_t sum) {
    printf("mode=%s bytes=%llu seconds=%.6f rss_before_kib=%ld peak_rss_kib=%ld checksum=%llu\n", mode,
           (unsigned long long)bytes, secs, before, peak_kib(), (unsigned long long)sum);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s read|plainread|writefd FILE [OUT]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    static uint8_t buf[CHUNK];
    if (strcmp(mode, "plainread") == 0) {
        int fd = open(path, O_RDONLY);
        if (fd < 0) { perror(path); return 1; }
        long before = rss_kib();
        uint64_t total = 0, sum = 0;
        double t0 = now();
        ssize_t n;
        while ((n = read(fd, buf, CHUNK)) > 0) {
            total += (uint64_t)n;
            sum += buf[0];
        }
        double t = now() - t0;
        close(fd);
        report(mode, total, t, before, sum);
        return n < 0;
    }
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_request *r = make_request(s, path);
    if (!r) return 1;
    afs_body_stream *bs = afs_request_body_stream(r);
    int status = 0;
    if (strcmp(mode, "read") == 0) {
        long before = rss_kib();
        uint64_t total = 0, sum = 0;
        double t0 = now();
        int64_t n;
        while ((n = afs_body_stream_read(bs, buf, CHUNK)) > 0) {
            total += (uint64_t)n;
            sum += buf[0];
        }
        double t = now() - t0;
        status = n < 0 || total != afs_body_stream_content_length(bs);
        report(mode, total, t, before, sum);
    } else if (strcmp(mode, "writefd") == 0 && argc > 3) {
        int out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0) { perror(argv[3]); return 1; }
        long before = rss_kib();
        uint64_t written = 0;
        afs_error err;
        double t0 = now();
        afs_status st = afs_body_stream_write_to_fd(bs, out, &written, &err);
        double t = now() - t0;
        close(out);
        if (st != AFS_OK) fprintf(stderr, "bench_multipart: %s\n", err.message);
        status = st != AFS_OK || written != afs_body_stream_content_length(bs);
        report(mode, written, t, before, 0);
    } else {
        fprintf(stderr, "bench_multipart: unknown mode %s\n", mode);
        status = 2;
    }
    afs_request_free(r);
    afs_serializer_free(s);
    return status;
}
