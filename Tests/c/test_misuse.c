/* Misuse never crashes: NULL handles and handles of the wrong kind give
 * AFS_E_INVALID_ARGUMENT from fallible calls, NULL/0/false from getters, and nothing from
 * void setters and _free functions. */
#include "check.h"

#define CHECK_BAD(call) do { afs_error e_; memset(&e_, 0, sizeof e_); \
    CHECK_STATUS((call), AFS_E_INVALID_ARGUMENT); } while (0)
#define CHECK_NULL(call) CHECK((call) == NULL)

int main(int argc, char **argv) {
    (void)argc;
    afs_error err;
    afs_value *v = afs_value_new_dict();
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_request *r = afs_request_new("GET", "http://example.com", &err);
    afs_value *wrong_value = (afs_value *)s;          /* a serializer where a value is expected */
    afs_serializer *wrong_ser = (afs_serializer *)v;  /* a value where a serializer is expected */
    afs_request *wrong_req = (afs_request *)s;

    /* values */
    CHECK_BAD(afs_value_dict_set(wrong_value, "k", AFS_NTS, afs_value_new_int(1), &err));
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "wrong kind (expected afs_value)");
    CHECK_BAD(afs_value_append(wrong_value, afs_value_new_int(1), &err));
    CHECK(afs_value_kind_of(wrong_value) == AFS_VALUE_NULL);
    CHECK_NULL(afs_query_string(wrong_value, &err));
    CHECK(err.code == AFS_E_INVALID_ARGUMENT);
    afs_value_free(wrong_value);

    /* serializers */
    for (int i = 0; i < 2; i++) {
        afs_serializer *x = i ? wrong_ser : NULL;
        const char *m[] = { "GET" };
        CHECK_BAD(afs_serializer_set_header(x, "A", "b", &err));
        CHECK_BAD(afs_serializer_set_basic_auth(x, "u", "p", &err));
        CHECK_BAD(afs_serializer_set_uri_methods(x, m, 1, &err));
        CHECK_BAD(afs_serializer_set_string_encoding(x, AFS_ENCODING_UTF8, &err));
        CHECK_BAD(afs_serializer_set_query_style(x, AFS_ARRAY_BRACKETS, AFS_BOOL_NUMERIC, AFS_SPACE_PERCENT, &err));
        CHECK_BAD(afs_serializer_set_json_options(x, 0, &err));
        CHECK_BAD(afs_serializer_set_plist_format(x, AFS_PLIST_XML, &err));
        CHECK_NULL(afs_serializer_copy_header(x, "A"));
        CHECK_NULL(afs_serializer_copy(x));
        CHECK_NULL(afs_serializer_request(x, "GET", "http://example.com", NULL, &err));
        CHECK(err.code == AFS_E_INVALID_ARGUMENT);
        CHECK_NULL(afs_serializer_serialize(x, r, NULL, &err));
        afs_serializer_clear_authorization(x);
        afs_serializer_set_timeout_interval(x, 1);
        afs_serializer_set_cache_policy(x, 1);
        afs_serializer_set_should_handle_cookies(x, false);
        afs_serializer_set_should_use_pipelining(x, true);
        afs_serializer_set_allows_cellular_access(x, false);
        afs_serializer_set_network_service_type(x, 1);
        afs_serializer_set_query_callback(x, NULL, NULL);
        afs_serializer_free(x);
    }
    CHECK_NULL(afs_serializer_request(s, "GET", "http://example.com", wrong_value, &err));
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "params is a handle of the wrong kind");
    CHECK_NULL(afs_serializer_serialize(s, NULL, NULL, &err));
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "request is NULL");
    CHECK_NULL(afs_serializer_serialize(s, wrong_req, NULL, &err));
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "expected afs_request");
    CHECK_BAD(afs_serializer_set_header(s, NULL, "b", &err));
    CHECK_NULL(afs_serializer_copy_header(s, NULL));

    /* requests */
    for (int i = 0; i < 2; i++) {
        afs_request *x = i ? wrong_req : NULL;
        size_t n = 7;
        CHECK_BAD(afs_request_set_header(x, "A", "b", &err));
        CHECK_NULL(afs_request_method(x));
        CHECK_NULL(afs_request_url(x));
        CHECK(afs_request_header_count(x) == 0);
        CHECK_NULL(afs_request_header_name(x, 0));
        CHECK_NULL(afs_request_header_value(x, 0));
        CHECK_NULL(afs_request_header(x, "A"));
        CHECK_NULL(afs_request_body(x, &n));
        CHECK(n == 0);
        CHECK(afs_request_timeout_interval(x) == 0);
        CHECK(afs_request_cache_policy(x) == 0);
        CHECK(!afs_request_should_handle_cookies(x));
        CHECK(!afs_request_should_use_pipelining(x));
        CHECK(!afs_request_allows_cellular_access(x));
        CHECK(afs_request_network_service_type(x) == 0);
        afs_request_free(x);
    }
    CHECK_NULL(afs_request_header(r, NULL));
    CHECK_BAD(afs_request_set_header(r, NULL, "x", &err));

    /* helpers and status names */
    CHECK_NULL(afs_string_new(NULL, 3));
    CHECK_STR(afs_status_name(AFS_OK), "AFS_OK");
    CHECK_STR(afs_status_name(AFS_E_NO_MEMORY), "AFS_E_NO_MEMORY");
    CHECK_STR(afs_status_name((afs_status)999), "AFS_E_UNKNOWN");
    afs_free(NULL);
    /* a failing call with err == NULL is fine */
    CHECK(afs_serializer_set_header(NULL, "A", "b", NULL) == AFS_E_INVALID_ARGUMENT);
    /* success leaves err untouched */
    memset(&err, 0x5A, sizeof err);
    CHECK(afs_serializer_set_header(s, "A", "b", &err) == AFS_OK);
    CHECK(err.code == (afs_status)0x5A5A5A5A && err.message[0] == 0x5A);

    afs_request_free(r);
    afs_serializer_free(s);
    afs_value_free(v);
    return check_summary(argv[0]);
}
