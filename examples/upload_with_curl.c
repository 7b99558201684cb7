/*
 * upload_with_curl — uploads a file as multipart/form-data with libcurl, pulling the body
 * from an afs_body_stream: CURLOPT_READFUNCTION over afs_body_stream_read and
 * CURLOPT_SEEKFUNCTION over afs_body_stream_seek (so curl can send the body again after a
 * 307/308 redirect or when it has to retry). The file streams from disk; memory use does
 * not grow with its size.
 *
 *   usage: upload_with_curl URL FILE [field=value ...]
 *
 * The file goes in part "file" (filename and Content-Type from FILE), each field=value in
 * a field part (in this order, before the file). The server's response is printed on
 * standard output; the exit status is 0 for a 2xx answer.
 *
 *   cc -o upload_with_curl upload_with_curl.c -lafserialization -lcurl
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "afserialization.h"

/* CURLOPT_READFUNCTION: fill curl's buffer from the body stream. */
static size_t read_body(char *buffer, size_t size, size_t nitems, void *userdata) {
    afs_body_stream *bs = userdata;
    int64_t n = afs_body_stream_read(bs, (uint8_t *)buffer, size * nitems);
    if (n < 0) {
        afs_error err;
        afs_body_stream_error(bs, &err);
        fprintf(stderr, "upload_with_curl: reading the body failed: %s: %s\n", afs_status_name(err.code), err.message);
        return CURL_READFUNC_ABORT;
    }
    return (size_t)n;
}

/* CURLOPT_SEEKFUNCTION: curl asks to start again (redirect, retry, auth). */
static int seek_body(void *userdata, curl_off_t offset, int origin) {
    afs_body_stream *bs = userdata;
    afs_error err;
    if (origin != SEEK_SET || offset < 0) return CURL_SEEKFUNC_CANTSEEK;
    fprintf(stderr, "upload_with_curl: seek to offset %lld\n", (long long)offset);
    if (afs_body_stream_seek(bs, (uint64_t)offset, &err) != AFS_OK) {
        fprintf(stderr, "upload_with_curl: seek failed: %s\n", err.message);
        return err.code == AFS_E_UNSUPPORTED ? CURL_SEEKFUNC_CANTSEEK : CURL_SEEKFUNC_FAIL;
    }
    return CURL_SEEKFUNC_OK;
}

/* The request head as libcurl sent it, on stderr, "> " before each line (the demo shows
 * it; a redirect shows a second one). */
static int show_head(CURL *handle, curl_infotype type, char *data, size_t size, void *userp) {
    (void)handle;
    (void)userp;
    if (type != CURLINFO_HEADER_OUT) return 0;
    size_t start = 0;
    for (size_t i = 0; i < size; i++) {
        if (data[i] != '\n') continue;
        size_t end = i > start && data[i - 1] == '\r' ? i - 1 : i;
        if (end > start) fprintf(stderr, "> %.*s\n", (int)(end - start), data + start);
        start = i + 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s URL FILE [field=value ...]\n", argv[0]);
        return 2;
    }
    const char *url = argv[1], *path = argv[2];
    afs_error err;
    int status = 1;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_form *form = afs_serializer_multipart_form(s, "POST", url, NULL, &err);
    afs_request *req = NULL;
    CURL *curl = NULL;
    struct curl_slist *headers = NULL;
    if (!form) goto fail;
    for (int i = 3; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "upload_with_curl: expected field=value, got \"%s\"\n", argv[i]);
            goto done;
        }
        char *name = malloc((size_t)(eq - argv[i]) + 1);
        memcpy(name, argv[i], (size_t)(eq - argv[i]));
        name[eq - argv[i]] = 0;
        afs_status st = afs_form_append_form_data(form, eq + 1, strlen(eq + 1), name, &err);
        free(name);
        if (st != AFS_OK) goto fail;
    }
    if (afs_form_append_file(form, path, "file", &err) != AFS_OK) goto fail;
    req = afs_form_finish(form, &err);
    if (!req) goto fail;

    afs_body_stream *bs = afs_request_body_stream(req);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    curl = curl_easy_init();
    if (!curl) {
        fprintf(stderr, "upload_with_curl: curl_easy_init failed\n");
        goto done;
    }
    /* Every header of the request except Content-Length, which curl writes from
     * CURLOPT_POSTFIELDSIZE_LARGE. "Expect:" turns off 100-continue. */
    for (size_t i = 0; i < afs_request_header_count(req); i++) {
        const char *name = afs_request_header_name(req, i), *value = afs_request_header_value(req, i);
        if (strcmp(name, "Content-Length") == 0) continue;
        size_t n = strlen(name) + strlen(value) + 3;
        char *line = malloc(n);
        snprintf(line, n, "%s: %s", name, value);
        headers = curl_slist_append(headers, line);
        free(line);
    }
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(curl, CURLOPT_URL, afs_request_url(req));
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    if (strcmp(afs_request_method(req), "POST") != 0)
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, afs_request_method(req));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)afs_body_stream_content_length(bs));
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, read_body);
    curl_easy_setopt(curl, CURLOPT_READDATA, bs);
    curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, seek_body);
    curl_easy_setopt(curl, CURLOPT_SEEKDATA, bs);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, (long)afs_request_timeout_interval(req));
    curl_easy_setopt(curl, CURLOPT_DEBUGFUNCTION, show_head);
    curl_easy_setopt(curl, CURLOPT_VERBOSE, 1L); /* only show_head sees it */
    CURLcode rc = curl_easy_perform(curl);
    if (rc != CURLE_OK) {
        fprintf(stderr, "upload_with_curl: %s\n", curl_easy_strerror(rc));
        goto done;
    }
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    fflush(stdout);
    fprintf(stderr, "upload_with_curl: HTTP %ld, %llu body bytes\n", code,
            (unsigned long long)afs_body_stream_content_length(bs));
    status = code >= 200 && code < 300 ? 0 : 1;
    goto done;

fail:
    fprintf(stderr, "upload_with_curl: %s: %s\n", afs_status_name(err.code), err.message);
done:
    curl_slist_free_all(headers);
    if (curl) curl_easy_cleanup(curl);
    curl_global_cleanup();
    afs_request_free(req);
    afs_form_free(form);
    afs_serializer_free(s);
    return status;
}
