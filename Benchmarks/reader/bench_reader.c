/* Response reader benchmark, the C side (Benchmarks/reader/run.sh prints the table).
 *
 *   bench_reader WORKDIR CHUNKED_MIB
 *
 * Prints tab-separated rows: case, implementation, bytes, seconds, responses.
 *   heads:   WORKDIR/responses.bin (100,000 small keep-alive responses, made by run.py),
 *            fed in 64 KiB reads with reset after each response (the body accumulated);
 *   chunked: one chunked response of CHUNKED_MIB MiB in 64 KiB chunks (a 16 MiB block of
 *            chunks fed again and again: no 1 GiB buffer), de-chunked into a body callback
 *            that copies each piece into a 64 KiB sink; against memcpy of the same bytes
 *            from the same block into the same sink;
 *   gzip/zstd: WORKDIR/text.gz and text.zst decoded by the reader (Content-Encoding, the
 *            file fed in 64 KiB reads, the decoded bytes into the callback, discarded).
 */
#define _POSIX_C_SOURCE 200809L
#include <afserialization.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(1); }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void die(const char *what, const afs_error *err) {
    fprintf(stderr, "%s: %s\n", what, err->message);
    exit(1);
}

static uint8_t sink[65536];
static uint64_t sunk;

static int copy_to_sink(void *ctx, const uint8_t *b, size_t n) {
    (void)ctx;
    while (n) {
        size_t k = n < sizeof sink ? n : sizeof sink;
        memcpy(sink, b, k);
        __asm__ __volatile__("" : : "r"(sink) : "memory");   /* the copy is not optimized away */
        b += k;
        n -= k;
        sunk += k;
    }
    return 0;
}

static int discard(void *ctx, const uint8_t *b, size_t n) {
    (void)ctx;
    sunk += n + b[0] * 0;
    return 0;
}

static void heads(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/responses.bin", dir);
    size_t len;
    uint8_t *all = slurp(path, &len);
    afs_error err;
    afs_response_reader *rd = afs_response_reader_new("GET", &err);
    double best = 1e9;
    long count = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        size_t pos = 0;
        count = 0;
        size_t end = 0;
        while (pos < len) {
            if (end <= pos) end = pos + 65536 < len ? pos + 65536 : len;   /* one 64 KiB read */
            size_t used = 0;
            if (afs_response_reader_feed(rd, all + pos, end - pos, &used, &err) != AFS_OK) die("heads", &err);
            pos += used;
            if (afs_response_reader_state(rd) == AFS_READER_DONE) {
                count++;
                if (afs_response_reader_status(rd) != 200) { fprintf(stderr, "bad status\n"); exit(1); }
                afs_response_reader_reset(rd, "GET", &err);
            }
        }
        double t = now() - t0;
        if (t < best) best = t;
    }
    printf("heads\tafs_response_reader (C)\t%zu\t%.6f\t%ld\n", len, best, count);
    afs_response_reader_free(rd);
    free(all);
}

static void chunked(uint64_t mib) {
    /* A block of 256 chunks of 64 KiB = 16 MiB of data (plus framing). */
    const size_t chunk = 65536, per_block = 256;
    size_t block_len = per_block * (chunk + 12);
    uint8_t *block = malloc(block_len);
    size_t b = 0;
    for (size_t i = 0; i < per_block; i++) {
        b += (size_t)sprintf((char *)block + b, "%zx\r\n", chunk);
        for (size_t j = 0; j < chunk; j++) block[b + j] = (uint8_t)('a' + (i + j) % 26);
        b += chunk;
        block[b++] = '\r';
        block[b++] = '\n';
    }
    block_len = b;
    uint64_t blocks = mib / 16;
    if (blocks == 0) blocks = 1;
    static const char head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    double best = 1e9;
    afs_error err;
    for (int rep = 0; rep < 3; rep++) {
        afs_response_reader *rd = afs_response_reader_new("GET", &err);
        afs_response_reader_set_body_callback(rd, copy_to_sink, NULL);
        sunk = 0;
        double t0 = now();
        if (afs_response_reader_feed(rd, (const uint8_t *)head, sizeof head - 1, NULL, &err)) die("chunked", &err);
        for (uint64_t k = 0; k < blocks; k++)
            for (size_t off = 0; off < block_len; off += 65536) {
                size_t n = block_len - off < 65536 ? block_len - off : 65536;
                if (afs_response_reader_feed(rd, block + off, n, NULL, &err)) die("chunked", &err);
            }
        if (afs_response_reader_feed(rd, (const uint8_t *)"0\r\n\r\n", 5, NULL, &err)) die("chunked", &err);
        double t = now() - t0;
        if (afs_response_reader_state(rd) != AFS_READER_DONE || sunk != blocks * per_block * chunk) {
            fprintf(stderr, "chunked: not done or wrong size\n");
            exit(1);
        }
        if (t < best) best = t;
        afs_response_reader_free(rd);
    }
    uint64_t data = blocks * per_block * chunk;
    printf("de-chunk\tafs_response_reader (C), callback copies to a 64 KiB sink\t%llu\t%.6f\t1\n",
           (unsigned long long)data, best);
    /* memcpy of the same data bytes from the same block into the same sink. */
    best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        sunk = 0;
        double t0 = now();
        for (uint64_t k = 0; k < blocks; k++) {
            size_t off = 0;
            for (size_t i = 0; i < per_block; i++) {
                off += (size_t)(strchr((char *)block + off, '\n') - (char *)(block + off)) + 1;
                copy_to_sink(NULL, block + off, chunk);
                off += chunk + 2;
            }
        }
        double t = now() - t0;
        if (t < best) best = t;
    }
    printf("de-chunk\tmemcpy of the same bytes to the same sink\t%llu\t%.6f\t1\n", (unsigned long long)data, best);
    free(block);
}

static void decode(const char *dir, const char *file, const char *coding) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    size_t len;
    uint8_t *coded = slurp(path, &len);
    char head[200];
    int hn = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %zu\r\n\r\n", coding, len);
    double best = 1e9;
    uint64_t out = 0;
    afs_error err;
    for (int rep = 0; rep < 3; rep++) {
        afs_response_reader *rd = afs_response_reader_new("GET", &err);
        afs_response_reader_set_body_callback(rd, discard, NULL);
        afs_response_reader_set_max_decoded_bytes(rd, UINT64_MAX);
        sunk = 0;
        double t0 = now();
        if (afs_response_reader_feed(rd, (const uint8_t *)head, (size_t)hn, NULL, &err)) die(coding, &err);
        for (size_t off = 0; off < len; off += 65536) {
            size_t n = len - off < 65536 ? len - off : 65536;
            if (afs_response_reader_feed(rd, coded + off, n, NULL, &err)) die(coding, &err);
        }
        double t = now() - t0;
        if (afs_response_reader_state(rd) != AFS_READER_DONE) { fprintf(stderr, "%s: not done\n", coding); exit(1); }
        out = sunk;
        if (t < best) best = t;
        afs_response_reader_free(rd);
    }
    printf("%s decode\tafs_response_reader (C)\t%llu\t%.6f\t1\n", coding, (unsigned long long)out, best);
    free(coded);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_reader WORKDIR CHUNKED_MIB\n");
        return 2;
    }
    heads(argv[1]);
    chunked((uint64_t)strtoull(argv[2], NULL, 10));
    decode(argv[1], "text.gz", "gzip");
    decode(argv[1], "text.zst", "zstd");
    return 0;
}
