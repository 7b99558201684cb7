/* A libcurl client for Tests/python/test_body_transforms.py: sends a body of unknown length
 * (read from FILE through a read callback, so the library does not know its size) to URL
 * with curl's own chunked framing: CURLOPT_UPLOAD with CURLOPT_READFUNCTION over
 * afs_body_stream_read and no CURLOPT_INFILESIZE. Optional CODING compresses it
 * (afs_request_set_content_encoding); "trailer" adds a SHA-256 trailer digest, which curl
 * sends through CURLOPT_TRAILERFUNCTION from afs_request_copy_trailers.
 *
 * Usage: curl_chunked_upload URL FILE [CODING|-] [trailer]
 * Prints the response body on stdout; exit status 0 on HTTP 200. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "afserialization.h"

static int64_t file_read(void *ctx, uint8_t *buf, size_t max) {
    size_t n = fread(buf, 1, max, (FILE *)ctx);
    if (n == 0 && ferror((FILE *)ctx)) return -1;
    return (int64_t)n;
}
static int file_rewind(void *ctx) { return fseek((FILE *)ctx, 0, SEEK_SET); }

static size_t read_body(char *dst, size_t size, size_t nitems, void *bs) {
    int64_t n = afs_body_stream_read(bs, (uint8_t *)dst, size * nitems);
    return n < 0 ? CURL_READFUNC_ABORT : (size_t)n;
}

static size_t write_out(char *p, size_t size, size_t n, void *u) {
    (void)u;
    return fwrite(p, size, n, stdout);
}

static afs_request *request;

static int trailers(struct curl_slist **list, void *u) {
    (void)u;
    afs_error err;
    char *t = afs_request_copy_trailers(request, NULL, &err);
    if (!t) return CURL_TRAILERFUNC_ABORT;
    for (char *line = strtok(t, "\r\n"); line; line = strtok(NULL, "\r\n")) *list = curl_slist_append(*list, line);
    afs_free(t);
    return CURL_TRAILERFUNC_OK;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s URL FILE [CODING|-] [trailer]\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 2; }
    afs_error err;
    request = afs_request_new("PUT", argv[1], &err);
    if (!request || afs_request_set_body_stream(request, file_read, file_rewind, NULL, f, AFS_LENGTH_UNKNOWN, &err) != AFS_OK ||
        (argc > 3 && strcmp(argv[3], "-") != 0 && afs_request_set_content_encoding(request, argv[3], 1, 0, &err) != AFS_OK) ||
        (argc > 4 && afs_request_add_digest(request, "sha-256", AFS_DIGEST_TRAILER, &err) != AFS_OK)) {
        fprintf(stderr, "curl_chunked_upload: %s: %s\n", afs_status_name(err.code), err.message);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *curl = curl_easy_init();
    struct curl_slist *headers = NULL;
    for (size_t i = 0; i < afs_request_header_count(request); i++) {
        char line[1024];
        snprintf(line, sizeof line, "%s: %s", afs_request_header_name(request, i), afs_request_header_value(request, i));
        headers = curl_slist_append(headers, line);
    }
    curl_easy_setopt(curl, CURLOPT_URL, argv[1]);
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);           /* PUT, no CURLOPT_INFILESIZE: chunked */
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, read_body);
    curl_easy_setopt(curl, CURLOPT_READDATA, afs_request_body_stream(request));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_out);
    if (argc > 4) curl_easy_setopt(curl, CURLOPT_TRAILERFUNCTION, trailers);
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK) fprintf(stderr, "curl_chunked_upload: %s\n", curl_easy_strerror(rc));
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    curl_global_cleanup();
    afs_request_free(request);
    fclose(f);
    return rc == CURLE_OK && status == 200 ? 0 : 1;
}
