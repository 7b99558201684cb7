/* print_requests — builds a GET, a form POST, a JSON POST and a property-list PUT with
 * AFSerialization and prints each as it would go on the wire (HTTP/1.1).
 *
 *   print_requests [BASE_URL]        default BASE_URL: http://example.com/api
 */
#include <afserialization.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Prints the request line, Host, the request's headers, Content-Length and the body
 * (binary bodies as a hex dump). Returns 0 on success. */
static int print_wire(const afs_request *r) {
    const char *url = afs_request_url(r);
    const char *auth = strstr(url, "://");
    auth = auth ? auth + 3 : url;
    size_t host_len = strcspn(auth, "/?#");
    const char *target = auth + host_len;
    size_t target_len = strcspn(target, "#");
    printf("%s %.*s HTTP/1.1\r\n", afs_request_method(r), target_len ? (int)target_len : 1,
           target_len ? target : "/");
    printf("Host: %.*s\r\n", (int)host_len, auth);
    for (size_t i = 0; i < afs_request_header_count(r); i++)
        printf("%s: %s\r\n", afs_request_header_name(r, i), afs_request_header_value(r, i));
    size_t len = 0;
    const uint8_t *body = afs_request_body(r, &len);
    if (body) printf("Content-Length: %zu\r\n", len);
    printf("\r\n");
    int binary = 0;
    for (size_t i = 0; i < len; i++)
        if (!isprint(body[i]) && !isspace(body[i])) { binary = 1; break; }
    if (binary) {
        for (size_t i = 0; i < len; i += 16) {
            printf("  %04zx ", i);
            for (size_t j = i; j < i + 16 && j < len; j++) printf(" %02x", body[j]);
            printf("\n");
        }
    } else if (len) {
        fwrite(body, 1, len, stdout);
    }
    printf("\n\n");
    return 0;
}

static afs_value *str(const char *s) { return afs_value_new_string(s, AFS_NTS, NULL); }

static int show(afs_serializer_kind kind, const char *title, const char *method, const char *url,
                afs_value *params) {
    afs_error err;
    afs_serializer *s = afs_serializer_new(kind);
    if (kind == AFS_SERIALIZER_PLIST) afs_serializer_set_plist_format(s, AFS_PLIST_BINARY, NULL);
    afs_request *r = afs_serializer_request(s, method, url, params, &err);
    int rc = 0;
    printf("### %s\n", title);
    if (r) {
        print_wire(r);
    } else {
        fprintf(stderr, "print_requests: %s: %s\n", afs_status_name(err.code), err.message);
        rc = 1;
    }
    afs_request_free(r);
    afs_serializer_free(s);
    return rc;
}

int main(int argc, char **argv) {
    const char *base = argc > 1 ? argv[1] : "http://example.com/api";
    char url[2048];
    snprintf(url, sizeof url, "%s", base);

    afs_value *p = afs_value_new_dict();
    afs_value_dict_set(p, "q", AFS_NTS, str("swift & c"), NULL);
    afs_value *tags = afs_value_new_array();
    afs_value_append(tags, str("a"), NULL);
    afs_value_append(tags, str("b/c"), NULL);
    afs_value_dict_set(p, "tags", AFS_NTS, tags, NULL);
    afs_value *user = afs_value_new_dict();
    afs_value_dict_set(user, "name", AFS_NTS, str("Zoë"), NULL);
    afs_value_dict_set(user, "admin", AFS_NTS, afs_value_new_bool(false), NULL);
    afs_value_dict_set(user, "score", AFS_NTS, afs_value_new_double(9.5), NULL);
    afs_value_dict_set(p, "user", AFS_NTS, user, NULL);

    int rc = 0;
    rc |= show(AFS_SERIALIZER_HTTP, "GET: parameters in the query string", "GET", url, p);
    rc |= show(AFS_SERIALIZER_HTTP, "POST: application/x-www-form-urlencoded", "POST", url, p);
    rc |= show(AFS_SERIALIZER_JSON, "POST: application/json", "POST", url, p);
    rc |= show(AFS_SERIALIZER_PLIST, "PUT: application/x-plist (binary)", "PUT", url, p);
    afs_value_free(p);
    return rc;
}
