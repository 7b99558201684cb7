/* Bulk transfer (section 10): pickles in and out of values, a request built from a pickle
 * and read back as one snapshot, a response decoded into one pickle, request copies. The
 * pickles below are what CPython's pickle.dumps(obj, 5) writes; every refusal the header
 * lists is provoked and its message checked. */
#include "check.h"
#include <stdint.h>
#include <stdlib.h>

#define PK(s) (const void *)(s), (sizeof(s) - 1)

/* pickle.dumps({'a': [1, 2.5, 'x'], 'b': b'\x00\x01', 'c': None, 'd': True, 'e': (1,),
 *               'f': frozenset([3])}, 5) */
static const char RICH[] =
    "\x80\x05\x95@\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01" "a\x94]\x94(K\x01G@\x04\x00\x00\x00"
    "\x00\x00\x00\x8c\x01x\x94" "e\x8c\x01" "b\x94" "C\x02\x00\x01\x94\x8c\x01" "c\x94N\x8c\x01"
    "d\x94\x88\x8c\x01" "e\x94K\x01\x85\x94\x8c\x01" "f\x94(K\x03\x91\x94u.";

/* Finds `needle` (n bytes) in `hay` (len bytes). */
static int contains(const uint8_t *hay, size_t len, const char *needle, size_t n) {
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(hay + i, needle, n) == 0) return 1;
    return 0;
}

static void test_value_from_pickle(void) {
    afs_error err;
    afs_value *v = afs_value_from_pickle(PK(RICH), &err);
    CHECK(v != NULL);
    CHECK(afs_value_kind_of(v) == AFS_VALUE_DICT);
    CHECK(afs_value_count(v) == 6);
    const afs_value *a = afs_value_get(v, "a");
    CHECK(afs_value_kind_of(a) == AFS_VALUE_ARRAY && afs_value_count(a) == 3);
    CHECK(afs_value_get_int(afs_value_at(a, 0)) == 1);
    CHECK(afs_value_get_double(afs_value_at(a, 1)) == 2.5);
    CHECK_STR(afs_value_get_string(afs_value_at(a, 2), NULL), "x");
    size_t n = 0;
    const uint8_t *b = afs_value_get_data(afs_value_get(v, "b"), &n);
    CHECK(n == 2 && b && b[0] == 0 && b[1] == 1);
    CHECK(afs_value_kind_of(afs_value_get(v, "c")) == AFS_VALUE_NULL);
    CHECK(afs_value_get_bool(afs_value_get(v, "d")));
    CHECK(afs_value_kind_of(afs_value_get(v, "e")) == AFS_VALUE_ARRAY);   /* tuple -> array */
    CHECK(afs_value_kind_of(afs_value_get(v, "f")) == AFS_VALUE_SET);     /* frozenset -> set */
    char *q = afs_query_string(v, &err);
    CHECK_STR(q, "a%5B%5D=1&a%5B%5D=2.5&a%5B%5D=x&b=%00%01&c&d=1&e%5B%5D=1&f=3");
    afs_free(q);

    /* Back out and in again: the same tree. */
    size_t len = 99;
    uint8_t *p = afs_value_to_pickle(v, &len, &err);
    CHECK(p != NULL && len > 12);
    CHECK(p && p[0] == 0x80 && p[1] == 4 && p[2] == 0x95 && p[len - 1] == '.');
    afs_value *again = afs_value_from_pickle(p, len, &err);
    CHECK(again != NULL);
    char *q2 = afs_query_string(again, &err);
    CHECK_STR(q2, "a%5B%5D=1&a%5B%5D=2.5&a%5B%5D=x&b=%00%01&c&d=1&e%5B%5D=1&f=3");
    afs_free(q2);
    afs_value_free(again);
    afs_free(p);
    afs_value *copy = afs_value_copy(v);
    afs_value_free(v);
    CHECK(copy && afs_value_count(copy) == 6);                    /* independent of v */
    CHECK(copy && afs_value_get_int(afs_value_at(afs_value_get(copy, "a"), 0)) == 1);
    afs_value *member = afs_value_copy(afs_value_get(copy, "a"));  /* a borrowed member */
    afs_value_free(copy);
    CHECK(member && afs_value_count(member) == 3);
    CHECK_STATUS(afs_value_append(member, afs_value_new_null(), &err), AFS_OK);
    afs_value_free(member);
    CHECK(afs_value_copy(NULL) == NULL);

    /* int64 limits (LONG1 with 8 bytes). */
    afs_value *m = afs_value_from_pickle(PK("\x80\x05\x95\x12\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01n\x94"
                                            "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80s."), &err);
    CHECK(m && afs_value_get_int(afs_value_get(m, "n")) == INT64_MIN);
    afs_value_free(m);
}

static void test_refusals(void) {
    afs_error err;
    memset(&err, 0, sizeof err);
    /* pickle.dumps(decimal.Decimal(1), 4) starts with STACK_GLOBAL of decimal.Decimal */
    CHECK(afs_value_from_pickle(PK("\x80\x04\x95\x1e\x00\x00\x00\x00\x00\x00\x00\x8c\x07" "decimal\x94"
                                   "\x8c\x07" "Decimal\x94\x93\x94\x8c\x01" "1\x94\x85\x94R\x94."), &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "STACK_GLOBAL");
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "decimal.Decimal");
    CHECK(afs_value_from_pickle(PK("cos\nsystem\n(S'ls'\ntR."), &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "GLOBAL (a class or function named by module and name: os.system)");
    CHECK(afs_value_from_pickle(PK("\x80\x05\x96\x01\x00\x00\x00\x00\x00\x00\x00x."), &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "BYTEARRAY8 (a bytearray)");
    CHECK(afs_value_from_pickle(PK("\x80\x04\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."), &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "the int 18446744073709551616 is outside int64");
    CHECK(afs_value_from_pickle(PK("\x80\x04}\x94K\x01K\x02s."), &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "dict keys must be str, not int");
    /* d = {}; d['s'] = d */
    CHECK(afs_value_from_pickle(PK("\x80\x04\x95\n\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01s\x94h\x00s."), &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "the dict contains itself (a cycle) (at ['s'])");
    CHECK(afs_value_from_pickle(PK("\x80\x04\x8c\x05" "ab"), &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "SHORT_BINUNICODE declares 5 bytes but 2 are left (opcode at byte offset 2)");
    CHECK(afs_value_from_pickle(PK("\x80\x04N.N"), &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "1 bytes after STOP");
    CHECK(afs_value_from_pickle(PK("\x80\x04h\x00."), &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "memo index 0 was never stored");
    CHECK(afs_value_from_pickle(PK("\x80\x04\x8c\x01\xff."), &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_UTF8, "the str at pickle byte offset 4 is not valid UTF-8");
    CHECK(afs_value_from_pickle(NULL, 0, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "empty");
    CHECK(afs_value_from_pickle(NULL, 3, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "data is NULL");
    /* 600 nested lists */
    char deep[1300];
    size_t k = 0;
    deep[k++] = '\x80'; deep[k++] = 4;
    for (int i = 0; i < 600; i++) deep[k++] = ']';
    for (int i = 0; i < 599; i++) deep[k++] = 'a';
    deep[k++] = '.';
    CHECK(afs_value_from_pickle(deep, k, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "nested deeper than 512 levels");
    size_t len = 5;
    CHECK(afs_value_to_pickle(NULL, &len, &err) == NULL && len == 0);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "value is NULL");
}

static void test_request_pickle(void) {
    afs_error err;
    afs_serializer *json = afs_serializer_new(AFS_SERIALIZER_JSON);
    const uint8_t *snap = NULL;
    size_t snap_len = 0;
    /* pickle.dumps({'name': 'Zoë', 'admin': False}, 5) */
    static const char PARAMS[] = "\x80\x05\x95\x1a\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x04name\x94\x8c\x04Zo\xc3\xab\x94"
                                 "\x8c\x05" "admin\x94\x89u.";
    afs_request *r = afs_serializer_request_pickle(json, "POST", "https://example.com/users", PK(PARAMS),
                                                   &snap, &snap_len, &err);
    CHECK(r != NULL);
    size_t n;
    const uint8_t *body = afs_request_body(r, &n);
    CHECK(body && n == strlen("{\"name\":\"Zo\xc3\xab\",\"admin\":false}") &&
          memcmp(body, "{\"name\":\"Zo\xc3\xab\",\"admin\":false}", n) == 0);
    CHECK(snap != NULL && snap_len > 20 && snap[0] == 0x80 && snap[snap_len - 1] == '.');
    CHECK(snap && contains(snap, snap_len, "application/json", 16));
    CHECK(snap && contains(snap, snap_len, "https://example.com/users", 25));
    size_t again_len = 0;
    CHECK(afs_request_pickle(r, &again_len) == snap && again_len == snap_len);  /* the same, borrowed */
    CHECK_STATUS(afs_request_set_header(r, "X-Trace", "1", &err), AFS_OK);
    const uint8_t *changed = afs_request_pickle(r, &again_len);
    CHECK(changed && contains(changed, again_len, "X-Trace", 7));

    afs_request *copy = afs_request_copy(r, &err);
    CHECK(copy != NULL);
    CHECK_STATUS(afs_request_set_header(copy, "X-Trace", NULL, &err), AFS_OK);
    CHECK_STR(afs_request_header(r, "X-Trace"), "1");      /* the original keeps it */
    CHECK(afs_request_header(copy, "X-Trace") == NULL);
    afs_request_free(copy);
    afs_request_free(r);

    /* No parameters; a GET puts them in the query. */
    r = afs_serializer_request_pickle(json, "GET", "https://example.com/", NULL, 0, NULL, NULL, &err);
    CHECK(r != NULL);
    if (!r) fprintf(stderr, "%s\n", err.message);
    CHECK(afs_request_body(r, NULL) == NULL);
    afs_request_free(r);
    r = afs_serializer_request_pickle(json, "GET", "https://example.com/", PK(PARAMS), NULL, NULL, &err);
    CHECK_STR(r ? afs_request_url(r) : NULL, "https://example.com/?admin=0&name=Zo%C3%AB");
    afs_request_free(r);

    /* Refusals keep the request's statuses and add the pickle's. */
    snap = (const uint8_t *)"x";
    CHECK(afs_serializer_request_pickle(json, "BAD METHOD", "https://example.com/", NULL, 0, &snap, &snap_len, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_METHOD, "BAD METHOD");
    CHECK(snap == NULL && snap_len == 0);
    CHECK(afs_serializer_request_pickle(json, "POST", "https://example.com/", PK("\x80\x04\x96\x00\x00\x00\x00\x00\x00\x00\x00."),
                                        NULL, NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "bytearray");
    CHECK(afs_serializer_request_pickle(NULL, "GET", "https://example.com/", NULL, 0, NULL, NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "serializer is NULL");
    CHECK(afs_request_pickle(NULL, &n) == NULL && n == 0);
    CHECK(afs_request_copy(NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "request is NULL");
    afs_serializer_free(json);
}

static void test_response_pickle(void) {
    afs_error err;
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    uint8_t *out = NULL;
    size_t len = 0;
    const char *body = "{\"a\":[1,2],\"b\":{\"a\":null}}";
    CHECK_STATUS(afs_response_object_pickle(rs, 200, "application/json", body, strlen(body), &out, &len, &err), AFS_OK);
    CHECK(out != NULL && len > 12);
    /* The key "a" is written once and then fetched from the memo (BINGET 0). */
    CHECK(out && contains(out, len, "\x8c\x01" "a\x94", 4) && contains(out, len, "h\x00", 2));
    afs_value *v = out ? afs_value_from_pickle(out, len, &err) : NULL;
    CHECK(v && afs_value_count(afs_value_get(v, "a")) == 2);
    CHECK(v && afs_value_kind_of(afs_value_get(afs_value_get(v, "b"), "a")) == AFS_VALUE_NULL);
    afs_value_free(v);
    afs_free(out);

    /* The error document of an unacceptable status comes back too. */
    CHECK_STATUS(afs_response_object_pickle(rs, 404, "application/json", "{\"error\":\"gone\"}", 16, &out, &len, &err),
                 AFS_E_UNACCEPTABLE_STATUS);
    CHECK_STR(err.message, "Request failed: not found (404)");
    CHECK(out != NULL);
    afs_free(out);
    /* Malformed: the tree path's message, no document. */
    CHECK_STATUS(afs_response_object_pickle(rs, 200, "application/json", "[1,]", 4, &out, &len, &err),
                 AFS_E_INVALID_JSON);
    CHECK_ERROR(err, AFS_E_INVALID_JSON, "at byte offset 3");
    CHECK(out == NULL && len == 0);
    /* No object for an empty body. */
    CHECK_STATUS(afs_response_object_pickle(rs, 200, "application/json", "", 0, &out, &len, &err), AFS_OK);
    CHECK(out == NULL);
    CHECK_STATUS(afs_response_object_pickle(rs, 200, "text/html", "{}", 2, &out, &len, &err),
                 AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    CHECK(out == NULL);
    CHECK_STATUS(afs_response_object_pickle(rs, 200, "application/json", "{}", 2, NULL, &len, &err),
                 AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "out is NULL");
    /* Integers beyond int64 are the nearest double, as in the tree (BINFLOAT 'G'). */
    CHECK_STATUS(afs_response_object_pickle(rs, 200, "application/json", "[18446744073709551616]", 22, &out, &len, &err),
                 AFS_OK);
    CHECK(out && contains(out, len, "G\x43\xf0\x00\x00\x00\x00\x00\x00", 9));
    afs_free(out);
    /* With null removal: the tree path, nulls gone. */
    afs_response_serializer_set_removes_keys_with_null_values(rs, true);
    CHECK_STATUS(afs_response_object_pickle(rs, 200, "application/json", body, strlen(body), &out, &len, &err), AFS_OK);
    v = out ? afs_value_from_pickle(out, len, &err) : NULL;
    CHECK(v && afs_value_count(afs_value_get(v, "b")) == 0);
    afs_value_free(v);
    afs_free(out);
    afs_response_serializer_free(rs);
}

int main(void) {
    test_value_from_pickle();
    test_refusals();
    test_request_pickle();
    test_response_pickle();
    return check_summary("test_transfer");
}
