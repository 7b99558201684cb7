/* Downstream smoke test: builds a JSON POST against the installed library. */
#include <afserialization.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    afs_error err;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_value *p = afs_value_new_dict();
    afs_value_dict_set(p, "key", AFS_NTS, afs_value_new_string("value", AFS_NTS, NULL), NULL);
    afs_request *r = afs_serializer_request(s, "POST", "http://example.com/", p, &err);
    int ok = 0;
    if (r) {
        size_t len = 0;
        const uint8_t *body = afs_request_body(r, &len);
        ok = len == 15 && memcmp(body, "{\"key\":\"value\"}", 15) == 0;
        printf("downstream (afserialization %s): %s %s -> %.*s\n", afs_version(), afs_request_method(r),
               afs_request_url(r), (int)len, (const char *)body);
    } else {
        fprintf(stderr, "downstream: %s: %s\n", afs_status_name(err.code), err.message);
    }
    afs_request_free(r);
    afs_value_free(p);
    afs_serializer_free(s);
    return ok ? 0 : 1;
}
