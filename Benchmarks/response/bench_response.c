/* Decoding a JSON document with afs_response_object (JSON serializer, Content-Type
 * application/json), best of several runs. Prints "name<TAB>implementation<TAB>bytes<TAB>seconds"
 * rows: the decode alone, and the decode plus afs_value_free of the tree.
 *   bench_response FILE [RUNS] */
#define _POSIX_C_SOURCE 200809L
#include "afserialization.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s FILE [RUNS]\n", argv[0]); return 2; }
    int runs = argc > 2 ? atoi(argv[2]) : 7;
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *body = malloc((size_t)n);
    if (fread(body, 1, (size_t)n, f) != (size_t)n) { perror("fread"); return 1; }
    fclose(f);

    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    double best_decode = 1e9, best_total = 1e9;
    for (int i = 0; i < runs; i++) {
        afs_value *v = NULL;
        afs_error err;
        double t0 = now();
        afs_status st = afs_response_object(rs, 200, "application/json", body, (size_t)n, &v, &err);
        double t1 = now();
        if (st != AFS_OK || !v) { fprintf(stderr, "decode failed: %s\n", err.message); return 1; }
        afs_value_free(v);
        double t2 = now();
        if (t1 - t0 < best_decode) best_decode = t1 - t0;
        if (t2 - t0 < best_total) best_total = t2 - t0;
    }
    printf("json_decode_10MB\tafs_response_object\t%ld\t%.6f\n", n, best_decode);
    printf("json_decode_10MB\tafs (decode + free)\t%ld\t%.6f\n", n, best_total);
    afs_response_serializer_free(rs);
    free(body);
    return 0;
}
