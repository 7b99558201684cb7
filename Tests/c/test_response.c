/* Response serializers (AFURLResponseSerialization): defaults per kind, validation
 * messages, decoding, the error document on an unacceptable status, compound order,
 * configuration errors, NULL and wrong-kind handles, and one serializer shared by threads.
 * Every status this area can return is provoked and its message checked. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* afs_response_object on a NUL-terminated body. */
static afs_status object(const afs_response_serializer *rs, int status, const char *type, const char *body,
                         afs_value **out, afs_error *err) {
    return afs_response_object(rs, status, type, body, strlen(body), out, err);
}

static afs_status validate(const afs_response_serializer *rs, int status, const char *type, const char *body,
                           afs_error *err) {
    return afs_response_validate(rs, status, type, body, strlen(body), err);
}

static const char *string_at(const afs_value *dict, const char *key) {
    return afs_value_get_string(afs_value_get(dict, key), NULL);
}

static void test_json_defaults(void) {
    afs_error err;
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    const char *json = "{\"foo\":\"bar\"}";
    CHECK_STATUS(validate(rs, 200, "application/json", json, &err), AFS_OK);
    CHECK_STATUS(validate(rs, 200, "text/json", json, &err), AFS_OK);
    CHECK_STATUS(validate(rs, 200, "text/javascript", json, &err), AFS_OK);
    CHECK_STATUS(validate(rs, 200, "Application/JSON; charset=utf-8", json, &err), AFS_OK);
    memset(&err, 0, sizeof err);
    CHECK_STATUS(validate(rs, 200, "nonstandard/json", json, &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    CHECK_STR(err.message, "Request failed: unacceptable content-type: nonstandard/json");
    CHECK_STATUS(validate(rs, 200, NULL, json, &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    CHECK_STR(err.message, "Request failed: unacceptable content-type: (none)");
    CHECK_STATUS(validate(rs, 204, NULL, "", &err), AFS_OK);           /* absent type, empty body */
    CHECK_STATUS(afs_response_validate(rs, 204, NULL, NULL, 0, &err), AFS_OK);
    CHECK_STATUS(validate(rs, 404, "application/json", json, &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK_STR(err.message, "Request failed: not found (404)");
    CHECK_STATUS(validate(rs, 500, "text/html", json, &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK_STR(err.message, "Request failed: internal server error (500); unacceptable content-type: text/html");
    CHECK_STATUS(validate(rs, 200, "application/json", json, NULL), AFS_OK);
    CHECK_STATUS(validate(rs, 200, "text/html", json, NULL), AFS_E_UNACCEPTABLE_CONTENT_TYPE);  /* err may be NULL */
    afs_response_serializer_free(rs);
}

static void test_json_decoding(void) {
    afs_error err;
    afs_value *v = (afs_value *)1;
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);

    CHECK_STATUS(object(rs, 200, "text/json", "{\"foo\":\"bar\"}", &v, &err), AFS_OK);
    CHECK(afs_value_kind_of(v) == AFS_VALUE_DICT);
    CHECK_STR(string_at(v, "foo"), "bar");
    afs_value_free(v);

    /* empty and single-space bodies: no object, no error */
    v = (afs_value *)1;
    CHECK_STATUS(object(rs, 200, "text/json", "", &v, &err), AFS_OK);
    CHECK(v == NULL);
    v = (afs_value *)1;
    CHECK_STATUS(object(rs, 200, "text/json", " ", &v, &err), AFS_OK);
    CHECK(v == NULL);
    v = (afs_value *)1;
    CHECK_STATUS(afs_response_object(rs, 200, "text/json", NULL, 0, &v, &err), AFS_OK);
    CHECK(v == NULL);

    /* malformed JSON names the byte offset */
    memset(&err, 0, sizeof err);
    v = (afs_value *)1;
    CHECK_STATUS(object(rs, 200, "text/json", "{invalid}", &v, &err), AFS_E_INVALID_JSON);
    CHECK_STR(err.message, "expected a string key or '}', found 'i' at byte offset 1");
    CHECK(v == NULL);
    CHECK_STATUS(object(rs, 200, "application/json", "[1, 2,]", &v, &err), AFS_E_INVALID_JSON);
    CHECK_ERROR(err, AFS_E_INVALID_JSON, "at byte offset 6");
    CHECK_STATUS(object(rs, 200, "application/json", "[\"\\udc00\"]", &v, &err), AFS_E_INVALID_JSON);
    CHECK_STR(err.message, "invalid \\u escape: a lone low surrogate at byte offset 2");
    /* a top-level scalar needs FRAGMENTS_ALLOWED */
    CHECK_STATUS(object(rs, 200, "application/json", "42", &v, &err), AFS_E_INVALID_JSON);
    CHECK_ERROR(err, AFS_E_INVALID_JSON, "without fragments");
    CHECK_STATUS(afs_response_serializer_set_json_reading_options(rs, AFS_JSON_READING_FRAGMENTS_ALLOWED, &err), AFS_OK);
    CHECK_STATUS(object(rs, 200, "application/json", "42", &v, &err), AFS_OK);
    CHECK(afs_value_kind_of(v) == AFS_VALUE_INT && afs_value_get_int(v) == 42);
    afs_value_free(v);
    CHECK_STATUS(afs_response_serializer_set_json_reading_options(rs, 3, &err), AFS_OK);  /* mutable*: no-ops */
    CHECK_STATUS(afs_response_serializer_set_json_reading_options(rs, 8, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "unsupported JSON reading options 0x8");

    /* nesting deeper than 512 is an error, not a crash */
    size_t n = 100000;
    char *deep = malloc(n + 1);
    memset(deep, '[', n);
    deep[n] = 0;
    CHECK_STATUS(object(rs, 200, "application/json", deep, &v, &err), AFS_E_INVALID_JSON);
    CHECK_STR(err.message, "nesting deeper than 512 levels at byte offset 512");
    free(deep);

    /* A byte-order mark is skipped; the document is walked and written back as it came
     * (afs_response_object keeps it as afs_value_parse_json does); a change works on it. */
    const char *text = "\xef\xbb\xbf{\"a\":[1,{\"b\":\"x\"}],\"c\":-0.5}";
    CHECK_STATUS(object(rs, 200, "application/json", text, &v, &err), AFS_OK);
    CHECK(afs_value_count(v) == 2 && afs_value_get_double(afs_value_get(v, "c")) == -0.5);
    CHECK_STR(string_at(afs_value_at(afs_value_get(v, "a"), 1), "b"), "x");
    afs_serializer *js = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_request *r = afs_serializer_request(js, "POST", "http://example.com/", v, &err);
    size_t blen = 0;
    const uint8_t *body = r ? afs_request_body(r, &blen) : NULL;
    CHECK(body && blen == strlen(text) - 3 && memcmp(body, text + 3, blen) == 0);
    afs_request_free(r);
    afs_serializer_free(js);
    CHECK_STATUS(afs_value_dict_set(v, "c", AFS_NTS, afs_value_new_null(), &err), AFS_OK);
    CHECK(afs_value_kind_of(afs_value_get(v, "c")) == AFS_VALUE_NULL);
    afs_value_free(v);
    /* only a mark and whitespace: the same error as before, offsets counting the mark */
    CHECK_STATUS(object(rs, 200, "application/json", "\xef\xbb\xbf  ", &v, &err), AFS_E_INVALID_JSON);
    CHECK_ERROR(err, AFS_E_INVALID_JSON, "only a byte order mark and whitespace at byte offset 5");
    CHECK_STATUS(object(rs, 200, "application/json", "\xef\xbb\xbf[1,]", &v, &err), AFS_E_INVALID_JSON);
    CHECK_ERROR(err, AFS_E_INVALID_JSON, "at byte offset 6");
    afs_response_serializer_free(rs);
}

static void test_null_removal(void) {
    afs_error err;
    afs_value *v = NULL;
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    const char *body = "{\"key\":\"value\",\"nullkey\":null,\"array\":[{\"subnullkey\":null},null,[null,1]]}";
    CHECK_STATUS(object(rs, 200, "application/json", body, &v, &err), AFS_OK);
    CHECK(afs_value_count(v) == 3);
    CHECK(afs_value_kind_of(afs_value_get(v, "nullkey")) == AFS_VALUE_NULL && afs_value_get(v, "nullkey") != NULL);
    afs_value_free(v);

    afs_response_serializer_set_removes_keys_with_null_values(rs, true);
    CHECK_STATUS(object(rs, 200, "application/json", body, &v, &err), AFS_OK);
    CHECK(afs_value_count(v) == 2);
    CHECK(afs_value_get(v, "nullkey") == NULL);
    const afs_value *array = afs_value_get(v, "array");
    CHECK(afs_value_count(array) == 2);                             /* the null element is gone */
    CHECK(afs_value_count(afs_value_at(array, 0)) == 0);            /* {"subnullkey":null} -> {} */
    CHECK(afs_value_count(afs_value_at(array, 1)) == 1);            /* [null,1] -> [1] */
    CHECK(afs_value_get_int(afs_value_at(afs_value_at(array, 1), 0)) == 1);
    afs_value_free(v);
    afs_response_serializer_set_removes_keys_with_null_values(NULL, true);   /* ignored */
    afs_response_serializer_free(rs);
}

static void test_unacceptable_status_returns_the_error_document(void) {
    afs_error err;
    afs_value *v = NULL;
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    memset(&err, 0, sizeof err);
    CHECK_STATUS(object(rs, 422, "application/json", "{\"error\":\"name taken\"}", &v, &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK_STR(err.message, "Request failed: unprocessable content (422)");
    CHECK(v != NULL);
    CHECK_STR(string_at(v, "error"), "name taken");
    afs_value_free(v);

    v = (afs_value *)1;
    CHECK_STATUS(object(rs, 502, "application/json", "<html>", &v, &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK_ERROR(err, AFS_E_UNACCEPTABLE_STATUS, "Request failed: bad gateway (502); the body could not be decoded: ");
    CHECK_ERROR(err, AFS_E_UNACCEPTABLE_STATUS, "at byte offset 0");
    CHECK(v == NULL);

    /* unacceptable content type: nothing decoded, whatever the status */
    v = (afs_value *)1;
    CHECK_STATUS(object(rs, 200, "text/html", "{\"a\":1}", &v, &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    CHECK_STR(err.message, "Request failed: unacceptable content-type: text/html");
    CHECK(v == NULL);
    v = (afs_value *)1;
    CHECK_STATUS(object(rs, 404, "text/html", "{\"a\":1}", &v, &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK_STR(err.message, "Request failed: not found (404); unacceptable content-type: text/html");
    CHECK(v == NULL);
    afs_response_serializer_free(rs);
}

static void test_http_and_status_ranges(void) {
    afs_error err;
    afs_value *v = NULL;
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_HTTP);
    for (int code = 200; code < 300; code++) CHECK_STATUS(validate(rs, code, "text/html", "text", &err), AFS_OK);
    for (int code = 400; code < 600; code++) CHECK_STATUS(validate(rs, code, "text/html", "text", &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK_STATUS(validate(rs, 418, "text/html", "text", &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK_STR(err.message, "Request failed: i'm a teapot (418)");
    CHECK_STATUS(validate(rs, 299, "anything/at-all", "text", &err), AFS_OK);

    /* the HTTP serializer returns the body as data */
    size_t len = 0;
    CHECK_STATUS(afs_response_object(rs, 200, "image/png", "\x89PNG\0\1", 6, &v, &err), AFS_OK);
    const uint8_t *bytes = afs_value_get_data(v, &len);
    CHECK(afs_value_kind_of(v) == AFS_VALUE_DATA && len == 6 && bytes && memcmp(bytes, "\x89PNG\0\1", 6) == 0);
    afs_value_free(v);

    /* several inclusive ranges */
    int first[] = { 200, 304, 400 }, last[] = { 204, 304, 404 };
    CHECK_STATUS(afs_response_serializer_set_acceptable_status_codes(rs, first, last, 3, &err), AFS_OK);
    CHECK_STATUS(validate(rs, 304, NULL, "", &err), AFS_OK);
    CHECK_STATUS(validate(rs, 404, NULL, "", &err), AFS_OK);
    CHECK_STATUS(validate(rs, 205, NULL, "", &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK_STR(err.message, "Request failed: reset content (205)");
    /* count 0 accepts every status */
    CHECK_STATUS(afs_response_serializer_set_acceptable_status_codes(rs, NULL, NULL, 0, &err), AFS_OK);
    CHECK_STATUS(validate(rs, 999, NULL, "", &err), AFS_OK);
    /* bad ranges leave the configuration as it was */
    int bad_first[] = { 200, 300 }, bad_last[] = { 299, 200 };
    memset(&err, 0, sizeof err);
    CHECK_STATUS(afs_response_serializer_set_acceptable_status_codes(rs, bad_first, bad_last, 2, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "acceptable status code range 1 is empty: first 300 is greater than last 200");
    CHECK_STATUS(validate(rs, 999, NULL, "", &err), AFS_OK);
    CHECK_STATUS(afs_response_serializer_set_acceptable_status_codes(rs, first, NULL, 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "last is NULL but count is 1");

    /* acceptable content types */
    const char *types[] = { "Text/Plain", "application/vnd.api+json" };
    CHECK_STATUS(afs_response_serializer_set_acceptable_content_types(rs, types, 2, &err), AFS_OK);
    CHECK_STATUS(validate(rs, 200, "text/plain; charset=us-ascii", "x", &err), AFS_OK);
    CHECK_STATUS(validate(rs, 200, "APPLICATION/VND.API+JSON", "x", &err), AFS_OK);
    CHECK_STATUS(validate(rs, 200, "text/html", "x", &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    CHECK_STATUS(validate(rs, 200, "\xff\xfe", "x", &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);  /* any bytes */
    const char *bad[] = { "text/plain", "text/html; charset=utf-8" };
    CHECK_STATUS(afs_response_serializer_set_acceptable_content_types(rs, bad, 2, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "acceptable content type 1 \"text/html; charset=utf-8\" is not a MIME type of the form type/subtype without parameters");
    const char *null_entry[] = { "text/plain", NULL };
    CHECK_STATUS(afs_response_serializer_set_acceptable_content_types(rs, null_entry, 2, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "types[1] is NULL");
    const char *not_utf8[] = { "text/\xc3" };
    CHECK_STATUS(afs_response_serializer_set_acceptable_content_types(rs, not_utf8, 1, &err), AFS_E_INVALID_UTF8);
    CHECK_ERROR(err, AFS_E_INVALID_UTF8, "types[0]");
    CHECK_STATUS(afs_response_serializer_set_acceptable_content_types(rs, NULL, 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "types is NULL but count is 1");
    CHECK_STATUS(validate(rs, 200, "text/html", "x", &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);  /* unchanged */
    CHECK_STATUS(afs_response_serializer_set_acceptable_content_types(rs, NULL, 0, &err), AFS_OK);
    CHECK_STATUS(validate(rs, 200, "text/html", "x", &err), AFS_OK);
    afs_response_serializer_free(rs);
}

/* {"foo": "bar"} as plistlib and Foundation write it, XML and bplist00. */
static const char plist_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
    "<plist version=\"1.0\">\n<dict>\n\t<key>foo</key>\n\t<string>bar</string>\n</dict>\n</plist>\n";
static const unsigned char plist_binary[] = {
    'b', 'p', 'l', 'i', 's', 't', '0', '0', 0xD1, 0x01, 0x02, 0x53, 'f', 'o', 'o', 0x53, 'b', 'a', 'r',
    0x08, 0x0B, 0x0F, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0x13 };

static void test_plist(void) {
    afs_error err;
    afs_value *v = NULL;
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_PLIST);
    CHECK_STATUS(object(rs, 200, "application/x-plist", plist_xml, &v, &err), AFS_OK);
    CHECK_STR(string_at(v, "foo"), "bar");
    afs_value_free(v);
    CHECK_STATUS(afs_response_object(rs, 200, "application/x-plist", plist_binary, sizeof plist_binary, &v, &err), AFS_OK);
    CHECK_STR(string_at(v, "foo"), "bar");
    afs_value_free(v);
    v = (afs_value *)1;
    CHECK_STATUS(afs_response_object(rs, 204, "application/x-plist", NULL, 0, &v, &err), AFS_OK);  /* AFNetworking's 204 test */
    CHECK(v == NULL);
    CHECK_STATUS(object(rs, 200, "application/json", plist_xml, &v, &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    CHECK_STR(err.message, "Request failed: unacceptable content-type: application/json");
    memset(&err, 0, sizeof err);
    CHECK_STATUS(object(rs, 200, "application/x-plist", "<plist><dict><key>a</key></dict></plist>", &v, &err), AFS_E_INVALID_PLIST);
    CHECK_ERROR(err, AFS_E_INVALID_PLIST, "at byte offset");
    CHECK(v == NULL);
    CHECK_STATUS(afs_response_object(rs, 200, "application/x-plist", plist_binary, 20, &v, &err), AFS_E_INVALID_PLIST);
    CHECK_ERROR(err, AFS_E_INVALID_PLIST, "at byte offset");
    afs_response_serializer_free(rs);
}

static void test_compound(void) {
    afs_error err;
    afs_value *v = NULL;
    afs_response_serializer *json = afs_response_serializer_new(AFS_RESPONSE_JSON);
    afs_response_serializer *plist = afs_response_serializer_new(AFS_RESPONSE_PLIST);
    afs_response_serializer *http = afs_response_serializer_new(AFS_RESPONSE_HTTP);

    const afs_response_serializer *members[] = { plist, json };
    afs_response_serializer *c = afs_response_serializer_new_compound(members, 2, &err);
    CHECK(c != NULL);
    afs_response_serializer_free(json);  /* members were copied */
    afs_response_serializer_free(plist);
    CHECK_STATUS(object(c, 200, "application/json", "{\"key\":\"value\"}", &v, &err), AFS_OK);
    CHECK_STR(string_at(v, "key"), "value");
    afs_value_free(v);
    CHECK_STATUS(object(c, 200, "application/x-plist", plist_xml, &v, &err), AFS_OK);
    CHECK_STR(string_at(v, "foo"), "bar");
    afs_value_free(v);
    /* none accepts: the first member's error */
    v = (afs_value *)1;
    CHECK_STATUS(object(c, 200, "text/html", "<html>", &v, &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    CHECK_STR(err.message, "Request failed: unacceptable content-type: text/html");
    CHECK(v == NULL);
    CHECK_STATUS(validate(c, 200, "text/html", "<html>", &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    /* an accepting member's decoding error is the outcome (no fallback) */
    CHECK_STATUS(object(c, 200, "application/json", "{", &v, &err), AFS_E_INVALID_JSON);

    /* nested: [c, http] tries plist, json, then http */
    const afs_response_serializer *outer_members[] = { c, http };
    afs_response_serializer *outer = afs_response_serializer_new_compound(outer_members, 2, &err);
    CHECK_STATUS(object(outer, 200, "text/html", "<html>", &v, &err), AFS_OK);
    CHECK(afs_value_kind_of(v) == AFS_VALUE_DATA);
    afs_value_free(v);
    /* settings reach every member; copies are independent */
    afs_response_serializer *copy = afs_response_serializer_copy(outer);
    int first = 200, last = 499;
    CHECK_STATUS(afs_response_serializer_set_acceptable_status_codes(copy, &first, &last, 1, &err), AFS_OK);
    CHECK_STATUS(object(copy, 404, "application/json", "[1]", &v, &err), AFS_OK);
    afs_value_free(v);
    CHECK_STATUS(object(outer, 404, "application/json", "[1]", &v, &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK(afs_value_count(v) == 1);
    afs_value_free(v);
    afs_response_serializer_free(copy);
    afs_response_serializer_free(outer);
    afs_response_serializer_free(c);

    /* construction errors */
    memset(&err, 0, sizeof err);
    CHECK(afs_response_serializer_new_compound(NULL, 0, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "a compound response serializer needs at least one member");
    CHECK(afs_response_serializer_new_compound(NULL, 2, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "members is NULL but count is 2");
    const afs_response_serializer *with_null[] = { http, NULL };
    CHECK(afs_response_serializer_new_compound(with_null, 2, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "members[1] is NULL");
    afs_value *not_rs = afs_value_new_int(1);
    const afs_response_serializer *wrong[] = { (const afs_response_serializer *)not_rs };
    CHECK(afs_response_serializer_new_compound(wrong, 1, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "members[0] is a handle of the wrong kind (expected afs_response_serializer)");
    afs_value_free(not_rs);
    afs_response_serializer_free(http);
}

static void test_misuse(void) {
    afs_error err;
    afs_value *v = (afs_value *)1;
    CHECK(afs_response_serializer_new((afs_response_kind)7) == NULL);
    CHECK(afs_response_serializer_new((afs_response_kind)-1) == NULL);
    CHECK(afs_response_serializer_copy(NULL) == NULL);
    afs_response_serializer_free(NULL);

    memset(&err, 0, sizeof err);
    CHECK_STATUS(afs_response_validate(NULL, 200, NULL, "", 0, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "response serializer is NULL");
    CHECK_STATUS(afs_response_object(NULL, 200, NULL, "", 0, &v, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(v == NULL);
    CHECK_STATUS(afs_response_serializer_set_json_reading_options(NULL, 0, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_response_serializer_set_acceptable_status_codes(NULL, NULL, NULL, 0, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_response_serializer_set_acceptable_content_types(NULL, NULL, 0, &err), AFS_E_INVALID_ARGUMENT);

    /* handles of another kind */
    afs_serializer *req = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_response_serializer *as_rs = (afs_response_serializer *)req;
    CHECK_STATUS(afs_response_validate(as_rs, 200, NULL, "", 0, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "response serializer is a handle of the wrong kind (expected afs_response_serializer)");
    CHECK_STATUS(afs_response_object(as_rs, 200, NULL, "", 0, &v, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(afs_response_serializer_copy(as_rs) == NULL);
    afs_response_serializer_set_removes_keys_with_null_values(as_rs, true);   /* ignored */
    afs_response_serializer_free(as_rs);                                      /* ignored: still a serializer */
    char *ua = afs_serializer_copy_header(req, "User-Agent");                 /* req is alive */
    CHECK(ua != NULL);
    afs_free(ua);
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    CHECK(afs_value_count((afs_value *)rs) == 0);                            /* not a value */
    afs_value_free((afs_value *)rs);                                          /* ignored */
    CHECK(afs_serializer_copy((afs_serializer *)rs) == NULL);
    afs_serializer_free(req);

    /* bad arguments */
    CHECK_STATUS(afs_response_object(rs, 200, "application/json", "[]", 2, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "out is NULL");
    CHECK_STATUS(afs_response_object(rs, 200, "application/json", NULL, 3, &v, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "data is NULL but len is 3");
    CHECK_STATUS(afs_response_validate(rs, 200, "application/json", "[]", AFS_NTS, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "is not a byte count");
    afs_response_serializer_free(rs);
}

/* One serializer shared by threads: decoders and a writer that toggles null removal and
 * the status ranges. Every decode must see one configuration or the other, whole. */
enum { DECODERS = 4, ROUNDS = 1500 };
static afs_response_serializer *shared;
static int thread_failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *decoder(void *arg) {
    (void)arg;
    const char *body = "{\"a\":null,\"b\":[1,null,{\"c\":\"d\"}]}";
    for (int i = 0; i < ROUNDS; i++) {
        afs_value *v = NULL;
        afs_error err;
        afs_status st = afs_response_object(shared, 250, "application/json", body, strlen(body), &v, &err);
        size_t n = afs_value_count(v), m = afs_value_count(afs_value_get(v, "b"));
        int ok = (st == AFS_OK || st == AFS_E_UNACCEPTABLE_STATUS) && v != NULL &&
                 ((n == 2 && m == 3) || (n == 1 && m == 2)) &&
                 strcmp(afs_value_get_string(afs_value_get(afs_value_at(afs_value_get(v, "b"), m - 1), "c"), NULL), "d") == 0;
        afs_value_free(v);
        if (!ok) { pthread_mutex_lock(&lock); thread_failures++; pthread_mutex_unlock(&lock); }
    }
    return NULL;
}

static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        afs_response_serializer_set_removes_keys_with_null_values(shared, i % 2);
        int first = 200, last = i % 3 ? 299 : 249;
        afs_response_serializer_set_acceptable_status_codes(shared, &first, &last, 1, NULL);
        afs_response_serializer *copy = afs_response_serializer_copy(shared);
        afs_response_serializer_free(copy);
    }
    return NULL;
}

static void test_threads(void) {
    pthread_t t[DECODERS + 1];
    shared = afs_response_serializer_new(AFS_RESPONSE_JSON);
    for (int i = 0; i < DECODERS; i++) pthread_create(&t[i], NULL, decoder, NULL);
    pthread_create(&t[DECODERS], NULL, writer, NULL);
    for (int i = 0; i <= DECODERS; i++) pthread_join(t[i], NULL);
    CHECK(thread_failures == 0);
    afs_response_serializer_free(shared);
}

int main(int argc, char **argv) {
    (void)argc;
    test_json_defaults();
    test_json_decoding();
    test_null_removal();
    test_unacceptable_status_returns_the_error_document();
    test_http_and_status_ranges();
    test_plist();
    test_compound();
    test_misuse();
    test_threads();
    return check_summary(argv[0]);
}
