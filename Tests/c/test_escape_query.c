/* Percent escaping and query strings: AFNetworking's vectors, docs/DESIGN.md's vectors, styles. */
#include "check.h"

static void check_escape(const char *in, const char *expected) {
    afs_error err;
    char *out = afs_percent_escape(in, AFS_NTS, &err);
    CHECK_STR(out, expected);
    afs_free(out);
}

static afs_value *str(const char *s) { return afs_value_new_string(s, AFS_NTS, NULL); }

static void set(afs_value *d, const char *k, afs_value *v) { afs_value_dict_set(d, k, AFS_NTS, v, NULL); }

static void check_query(afs_value *params, const char *expected) {
    afs_error err;
    char *q = afs_query_string(params, &err);
    CHECK_STR(q, expected);
    afs_free(q);
    afs_value_free(params);
}

static void test_escaping(void) {
    check_escape(":#[]@!$&'()*+,;=?/", "%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D?/");
    check_escape("!#$&'()*+,/:;=?@[]", "%21%23%24%26%27%28%29%2A%2B%2C/%3A%3B%3D?%40%5B%5D");
    check_escape(" ", "%20");
    check_escape("%20", "%2520");
    check_escape("AZaz09-._~/?", "AZaz09-._~/?");
    check_escape("\xf0\x9f\x91\xb4\xf0\x9f\x8f\xbf", "%F0%9F%91%B4%F0%9F%8F%BF");   /* 👴🏿 whole */
    check_escape("\xf0\x9f\x94\x9f\xf0\x9f\xa4\x93\xf0\x9f\x98\x80",
                 "%F0%9F%94%9F%F0%9F%A4%93%F0%9F%98%80");                         /* AFNetworking's emoji test */
    check_escape("", "");
    afs_error err;
    memset(&err, 0, sizeof err);
    CHECK(afs_percent_escape("abc\x80", AFS_NTS, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_UTF8, "offset 3");
    CHECK(afs_percent_escape("\xc0\xaf", AFS_NTS, &err) == NULL);   /* overlong */
    CHECK_ERROR(err, AFS_E_INVALID_UTF8, "offset 0");
    char *empty = afs_percent_escape(NULL, 0, &err);   /* NULL with length 0 is the empty string */
    CHECK_STR(empty, "");
    afs_free(empty);
    CHECK(afs_percent_escape(NULL, AFS_NTS, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "utf8 is NULL");
    char *withlen = afs_percent_escape("a b\0c", 5, &err);
    CHECK_STR(withlen, "a%20b%00c");
    afs_free(withlen);
}

static void test_queries(void) {
    afs_value *d;
    d = afs_value_new_dict(); set(d, "key", str("value")); check_query(d, "key=value");
    check_query(afs_value_new_dict(), "");
    d = afs_value_new_dict(); set(d, "key", str(" :#[]@!$&'()*+,;=/?"));
    check_query(d, "key=%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D/?");
    d = afs_value_new_dict(); set(d, "key", str("%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F"));
    check_query(d, "key=%2520%2521%2522%2523%2524%2525%2526%2527%2528%2529%252A%252B%252C%252F");

    /* keys sorted by Unicode scalars; nested dictionaries; arrays; sets; null; numbers */
    d = afs_value_new_dict();
    afs_value *user = afs_value_new_dict();
    set(user, "name", str("Ann Lee"));
    set(user, "age", afs_value_new_int(42));
    set(d, "user", user);
    afs_value *ids = afs_value_new_array();
    afs_value_append(ids, afs_value_new_int(1), NULL);
    afs_value_append(ids, afs_value_new_int(2), NULL);
    set(d, "ids", ids);
    afs_value *tags = afs_value_new_set();
    afs_value_append(tags, str("b"), NULL);
    afs_value_append(tags, str("a"), NULL);
    set(d, "tags", tags);
    set(d, "Z", afs_value_new_null());
    set(d, "pi", afs_value_new_double(3.25));
    set(d, "big", afs_value_new_double(1e16));
    set(d, "yes", afs_value_new_bool(true));
    set(d, "\xc3\xa9", str("\xc3\xa9"));   /* é sorts after ASCII */
    check_query(d, "Z&big=1e%2B16&ids%5B%5D=1&ids%5B%5D=2&pi=3.25&tags=a&tags=b"
                   "&user%5Bage%5D=42&user%5Bname%5D=Ann%20Lee&yes=1&%C3%A9=%C3%A9");

    /* arrays of dictionaries; empty containers vanish */
    d = afs_value_new_dict();
    afs_value *list = afs_value_new_array(), *item = afs_value_new_dict();
    set(item, "x", str("1"));
    afs_value_append(list, item, NULL);
    afs_value_append(list, afs_value_new_array(), NULL);
    set(d, "l", list);
    set(d, "e", afs_value_new_dict());
    check_query(d, "l%5B%5D%5Bx%5D=1");

    /* data is escaped byte by byte, without a UTF-8 check */
    d = afs_value_new_dict(); set(d, "d", afs_value_new_data("\xff\x00 ", 3)); check_query(d, "d=%FF%00%20");

    /* the top level must be a dictionary */
    afs_error err;
    memset(&err, 0, sizeof err);
    afs_value *a = afs_value_new_array();
    CHECK(afs_query_string(a, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "must be a dictionary");
    afs_value_free(a);
    CHECK(afs_query_string(NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "params is NULL");
}

/* Query styles go through a serializer: GET puts the query into the URL. */
static void check_styled(afs_array_style as, afs_bool_style bs, afs_space_style ss, const char *expected_url) {
    afs_error err;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    CHECK_STATUS(afs_serializer_set_query_style(s, as, bs, ss, &err), AFS_OK);
    afs_value *d = afs_value_new_dict(), *a = afs_value_new_array();
    afs_value_append(a, str("x y"), NULL);
    afs_value_append(a, str("+"), NULL);
    set(d, "a b", a);
    set(d, "t", afs_value_new_bool(true));
    set(d, "f", afs_value_new_bool(false));
    afs_request *r = afs_serializer_request(s, "GET", "http://example.com/p", d, &err);
    CHECK(r != NULL);
    if (r) CHECK_STR(afs_request_url(r), expected_url);
    afs_request_free(r);
    afs_value_free(d);
    afs_serializer_free(s);
}

static void test_styles(void) {
    check_styled(AFS_ARRAY_BRACKETS, AFS_BOOL_NUMERIC, AFS_SPACE_PERCENT,
                 "http://example.com/p?a%20b%5B%5D=x%20y&a%20b%5B%5D=%2B&f=0&t=1");
    check_styled(AFS_ARRAY_NO_BRACKETS, AFS_BOOL_LITERAL, AFS_SPACE_PLUS,
                 "http://example.com/p?a+b=x+y&a+b=%2B&f=false&t=true");
    check_styled(AFS_ARRAY_INDEXED, AFS_BOOL_NUMERIC, AFS_SPACE_PLUS,
                 "http://example.com/p?a+b%5B0%5D=x+y&a+b%5B1%5D=%2B&f=0&t=1");
    afs_error err;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    memset(&err, 0, sizeof err);
    CHECK_STATUS(afs_serializer_set_query_style(s, (afs_array_style)7, AFS_BOOL_NUMERIC, AFS_SPACE_PERCENT, &err),
                 AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "array style 7");
    afs_serializer_free(s);
}

int main(int argc, char **argv) {
    (void)argc;
    test_escaping();
    test_queries();
    test_styles();
    return check_summary(argv[0]);
}
