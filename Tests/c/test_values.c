/* Values: construction, dictionaries keep order and replace in place, sets ignore equal
 * members, consumed arguments, JSON parsing, wrong kinds and NULL handles. */
#include "check.h"
#include <stdlib.h>

static afs_value *str(const char *s) { return afs_value_new_string(s, AFS_NTS, NULL); }

static void test_kinds(void) {
    afs_value *v[9] = {
        afs_value_new_null(), afs_value_new_bool(true), afs_value_new_int(-5), afs_value_new_double(0.5),
        str("x"), afs_value_new_data("\0\1", 2), afs_value_new_array(), afs_value_new_set(), afs_value_new_dict(),
    };
    afs_value_kind kinds[9] = { AFS_VALUE_NULL, AFS_VALUE_BOOL, AFS_VALUE_INT, AFS_VALUE_DOUBLE, AFS_VALUE_STRING,
                                AFS_VALUE_DATA, AFS_VALUE_ARRAY, AFS_VALUE_SET, AFS_VALUE_DICT };
    for (int i = 0; i < 9; i++) { CHECK(afs_value_kind_of(v[i]) == kinds[i]); afs_value_free(v[i]); }
    CHECK(afs_value_kind_of(NULL) == AFS_VALUE_NULL);
    CHECK(afs_value_new_data(NULL, 3) == NULL);
    afs_value *empty = afs_value_new_data(NULL, 0);
    CHECK(empty && afs_value_kind_of(empty) == AFS_VALUE_DATA);
    afs_value_free(empty);
}

static void test_dict_order_and_replace(void) {
    afs_error err;
    afs_value *d = afs_value_new_dict();
    CHECK_STATUS(afs_value_dict_set(d, "b", AFS_NTS, str("1"), &err), AFS_OK);
    CHECK_STATUS(afs_value_dict_set(d, "a", AFS_NTS, str("2"), &err), AFS_OK);
    CHECK_STATUS(afs_value_dict_set(d, "b", AFS_NTS, str("3"), &err), AFS_OK);
    /* key with explicit length: "cZZ" cut to "c" */
    CHECK_STATUS(afs_value_dict_set(d, "cZZ", 1, afs_value_new_int(4), &err), AFS_OK);
    char *q = afs_query_string(d, &err);
    CHECK_STR(q, "a=2&b=3&c=4");
    afs_free(q);
    afs_value_free(d);
}

static void test_set_members(void) {
    afs_error err;
    afs_value *d = afs_value_new_dict(), *s = afs_value_new_set();
    CHECK_STATUS(afs_value_append(s, str("1"), &err), AFS_OK);
    CHECK_STATUS(afs_value_append(s, afs_value_new_int(1), &err), AFS_OK);
    CHECK_STATUS(afs_value_append(s, afs_value_new_bool(true), &err), AFS_OK);
    CHECK_STATUS(afs_value_append(s, str("1"), &err), AFS_OK);       /* equal member: no-op */
    CHECK_STATUS(afs_value_append(s, afs_value_new_int(1), &err), AFS_OK);
    CHECK_STATUS(afs_value_append(s, str("0"), &err), AFS_OK);
    CHECK_STATUS(afs_value_dict_set(d, "k", AFS_NTS, s, &err), AFS_OK);
    char *q = afs_query_string(d, &err);
    /* three distinct "1" members (string, int, bool) and "0", ascending by text, stable */
    CHECK_STR(q, "k=0&k=1&k=1&k=1");
    afs_free(q);
    afs_value_free(d);
}

static void test_wrong_kinds_and_consumption(void) {
    afs_error err;
    afs_value *d = afs_value_new_dict(), *a = afs_value_new_array();
    memset(&err, 0, sizeof err);
    CHECK_STATUS(afs_value_append(d, afs_value_new_int(1), &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "not an array or a set");
    CHECK_STATUS(afs_value_dict_set(a, "k", AFS_NTS, afs_value_new_int(1), &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "not a dictionary");
    /* consumed also when the container is NULL (valgrind proves no leak) */
    CHECK_STATUS(afs_value_dict_set(NULL, "k", AFS_NTS, afs_value_new_int(1), &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "dict is NULL");
    CHECK_STATUS(afs_value_append(NULL, str("x"), &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_value_dict_set(d, "k", AFS_NTS, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "value is NULL");
    /* a bad key: the value is still consumed */
    CHECK_STATUS(afs_value_dict_set(d, "\xff", AFS_NTS, afs_value_new_int(1), &err), AFS_E_INVALID_UTF8);
    CHECK_ERROR(err, AFS_E_INVALID_UTF8, "offset 0");
    CHECK_STATUS(afs_value_dict_set(d, NULL, AFS_NTS, afs_value_new_int(1), &err), AFS_E_INVALID_ARGUMENT);
    /* a container cannot be put into itself; it is not consumed then */
    CHECK_STATUS(afs_value_append(a, a, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "container itself");
    /* a serializer is not a value */
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    CHECK_STATUS(afs_value_append(a, (afs_value *)s, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "wrong kind");
    afs_value_free((afs_value *)s);          /* wrong kind: ignored, s stays valid */
    CHECK(afs_value_kind_of((afs_value *)s) == AFS_VALUE_NULL);
    afs_serializer_free(s);
    afs_value_free(a);
    afs_value_free(d);
    afs_value_free(NULL);
}

static void test_strings(void) {
    afs_error err;
    memset(&err, 0, sizeof err);
    CHECK(afs_value_new_string("ok\xc3", AFS_NTS, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_UTF8, "offset 2");
    CHECK(afs_value_new_string("\xed\xa0\x80", AFS_NTS, &err) == NULL);   /* a surrogate */
    CHECK_ERROR(err, AFS_E_INVALID_UTF8, "offset 0");
    CHECK(afs_value_new_string(NULL, 3, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "NULL");
    afs_value *nul = afs_value_new_string("a\0b", 3, &err);   /* embedded NUL with a length */
    afs_value *d = afs_value_new_dict();
    CHECK_STATUS(afs_value_dict_set(d, "k", AFS_NTS, nul, &err), AFS_OK);
    char *q = afs_query_string(d, &err);
    CHECK_STR(q, "k=a%00b");
    afs_free(q);
    afs_value_free(d);
}

static void test_parse_json(void) {
    afs_error err;
    const char *text = "{\"b\":[1,2.5,true,null,\"x\"],\"a\":{\"n\":-9223372036854775808},\"b\":\"last\"}";
    afs_value *v = afs_value_parse_json(text, AFS_NTS, &err);
    CHECK(v != NULL);
    if (v) {
        CHECK(afs_value_kind_of(v) == AFS_VALUE_DICT);
        char *q = afs_query_string(v, &err);
        CHECK_STR(q, "a%5Bn%5D=-9223372036854775808&b=last");
        afs_free(q);
        afs_value_free(v);
    }
    memset(&err, 0, sizeof err);
    CHECK(afs_value_parse_json("{\"a\":}", AFS_NTS, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_JSON, "offset 5");
    CHECK(afs_value_parse_json("", 0, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_JSON, "offset 0");
    CHECK(afs_value_parse_json(NULL, AFS_NTS, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "NULL");
    /* nesting far beyond the limit is an error, not a stack overflow */
    size_t n = 200000;
    char *deep = malloc(n);
    memset(deep, '[', n);
    CHECK(afs_value_parse_json(deep, n, &err) == NULL);
    CHECK(err.code == AFS_E_INVALID_JSON);
    free(deep);
}

/* Trees deeper than 512 levels are refused while they are built (they would overflow the
 * stack when written or freed); the member is still consumed. */
static void test_depth_limit(void) {
    afs_error err;
    afs_value *v = afs_value_new_array();
    int depth = 1, refused = 0;
    for (int i = 0; i < 600 && !refused; i++) {
        afs_value *outer = afs_value_new_array();
        memset(&err, 0, sizeof err);
        if (afs_value_append(outer, v, &err) == AFS_OK) { v = outer; depth++; }
        else { refused = 1; afs_value_free(outer); v = NULL; }
    }
    CHECK(refused);
    CHECK(depth == 512);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "nesting deeper than 512 levels");
    afs_value_free(v);
    /* a wide tree is fine */
    afs_value *d = afs_value_new_dict();
    for (int i = 0; i < 1000; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        CHECK_STATUS(afs_value_dict_set(d, key, AFS_NTS, afs_value_new_array(), &err), AFS_OK);
    }
    afs_value_free(d);
}

/* Members lent by afs_value_at / afs_value_get belong to their parent: freeing one is
 * ignored and consuming one is refused (valgrind proves nothing is freed twice). */
static void test_borrowed_members(void) {
    afs_error err;
    afs_value *v = afs_value_parse_json("{\"a\":[1,2],\"b\":\"x\"}", AFS_NTS, &err);
    CHECK(v != NULL);
    if (!v) return;
    afs_value *a = (afs_value *)afs_value_get(v, "a");
    CHECK(a != NULL && afs_value_kind_of(a) == AFS_VALUE_ARRAY);
    afs_value_free(a);                                   /* ignored */
    afs_value *other = afs_value_new_dict();
    memset(&err, 0, sizeof err);
    CHECK_STATUS(afs_value_dict_set(other, "k", AFS_NTS, a, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "borrowed");
    CHECK_STATUS(afs_value_append(other, (afs_value *)afs_value_at(v, 1), &err), AFS_E_INVALID_ARGUMENT);
    CHECK(afs_value_count(afs_value_get(v, "a")) == 2);  /* still alive and unchanged */
    afs_value_free(other);
    afs_value_free(v);
}

/* Found by Fuzz/value_api.swift (Fuzz/regressions/value_api/): three ways a consuming call
 * read memory that consuming its value had just freed, or freed what it lent out. Under
 * valgrind (and ASan in scripts/sanitize.sh) each was an invalid read. */
static void test_consuming_calls_and_borrowed_memory(void) {
    afs_error err;
    /* 1. A failed call changes nothing: members borrowed before it stay valid. */
    afs_value *d = afs_value_parse_json("{\"k\":[1,2,3]}", AFS_NTS, &err);
    const afs_value *k = afs_value_get(d, "k");
    CHECK(k != NULL);
    memset(&err, 0, sizeof err);
    CHECK_STATUS(afs_value_append(d, afs_value_new_bool(true), &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "not an array or a set");
    CHECK(afs_value_count(k) == 3 && afs_value_get_int(afs_value_at(k, 2)) == 3);
    CHECK(afs_value_get(d, "k") == k);
    /* A successful change ends them (the same call now lends a new handle). */
    CHECK_STATUS(afs_value_dict_set(d, "n", AFS_NTS, afs_value_new_null(), &err), AFS_OK);
    CHECK(afs_value_count(afs_value_get(d, "k")) == 3);

    /* 2. A borrowed container whose root is the value: the value is consumed, the container
     *    refused, and nothing is read after it was freed. */
    afs_value *member = (afs_value *)afs_value_get(d, "k");
    memset(&err, 0, sizeof err);
    CHECK_STATUS(afs_value_append(member, d, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "borrowed");
    /* d is consumed (freed); so is the member handle borrowed from it. */

    /* 3. A string value's own bytes as its key, in the call that consumes it. */
    afs_value *dict = afs_value_new_dict();
    afs_value *s = afs_value_new_string("name", AFS_NTS, &err);
    size_t len = 0;
    const char *text = afs_value_get_string(s, &len);
    CHECK_STATUS(afs_value_dict_set(dict, text, len, s, &err), AFS_OK);
    char *q = afs_query_string(dict, &err);
    CHECK_STR(q, "name=name");
    afs_free(q);
    /* ... also when the call fails after consuming it (a borrowed container). */
    afs_value *arr = afs_value_parse_json("[{}]", AFS_NTS, &err);
    afs_value *s2 = afs_value_new_string("x", AFS_NTS, &err);
    text = afs_value_get_string(s2, &len);
    memset(&err, 0, sizeof err);
    CHECK_STATUS(afs_value_dict_set((afs_value *)afs_value_at(arr, 0), text, len, s2, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "borrowed");
    CHECK(afs_value_count(afs_value_at(arr, 0)) == 0);
    afs_value_free(arr);
    afs_value_free(dict);
}

/* A parsed document is read from its tape until it changes: members, keys and strings lent
 * from it stay valid across the change (valgrind checks the memory), a copy shares it and
 * outlives the root, large objects find every key, and JSON written from it is the text. */
static void test_parsed_documents(void) {
    afs_error err;
    const char *text = "{\"s\":\"a\\/b\\u00e9\",\"n\":[1,-2.5,true,false,null,{},[]],\"o\":{\"x\":7}}";
    afs_value *v = afs_value_parse_json(text, AFS_NTS, &err);
    CHECK(v != NULL);
    if (!v) return;
    CHECK(afs_value_count(v) == 3);
    size_t len = 0;
    const char *key = afs_value_key_at(v, 2, &len);
    CHECK(key && len == 1 && strcmp(key, "o") == 0);
    const char *s = afs_value_get_string(afs_value_get(v, "s"), &len);
    CHECK(s && len == 5 && memcmp(s, "a/b\xc3\xa9", 6) == 0);  /* NUL included */
    const afs_value *n = afs_value_get(v, "n");
    CHECK(afs_value_count(n) == 7 && afs_value_get_int(afs_value_at(n, 0)) == 1);
    CHECK(afs_value_get_double(afs_value_at(n, 0)) == 1.0 && afs_value_get_double(afs_value_at(n, 1)) == -2.5);
    CHECK(afs_value_get_bool(afs_value_at(n, 2)) && !afs_value_get_bool(afs_value_at(n, 3)));
    CHECK(afs_value_kind_of(afs_value_at(n, 4)) == AFS_VALUE_NULL && afs_value_at(n, 7) == NULL);
    CHECK(afs_value_kind_of(afs_value_at(n, 5)) == AFS_VALUE_DICT && afs_value_count(afs_value_at(n, 6)) == 0);
    CHECK(afs_value_get(v, "missing") == NULL && afs_value_get(n, "s") == NULL && afs_value_key_at(n, 0, NULL) == NULL);
    CHECK(afs_value_at(v, 0) == afs_value_get(v, "s"));  /* one handle per member */

    /* The JSON body is the text (slashes escaped by default, é raw). */
    afs_serializer *js = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_request *r = afs_serializer_request(js, "POST", "http://example.com/", v, &err);
    CHECK(r != NULL);
    size_t blen = 0;
    const uint8_t *body = afs_request_body(r, &blen);
    const char *expected = "{\"s\":\"a\\/b\xc3\xa9\",\"n\":[1,-2.5,true,false,null,{},[]],\"o\":{\"x\":7}}";
    CHECK(body && blen == strlen(expected) && memcmp(body, expected, blen) == 0);
    afs_request_free(r);

    /* A copy of a member shares the document and outlives the root. */
    afs_value *o = afs_value_copy(afs_value_get(v, "o"));
    CHECK(o && afs_value_get_int(afs_value_get(o, "x")) == 7);

    /* The first change turns the root into a tree; what it lent before stays valid. */
    CHECK_STATUS(afs_value_dict_set(v, "s", AFS_NTS, afs_value_new_int(5), &err), AFS_OK);
    CHECK(strcmp(key, "o") == 0 && memcmp(s, "a/b\xc3\xa9", 6) == 0);
    CHECK(afs_value_get_int(afs_value_get(v, "s")) == 5 && afs_value_count(n) == 7);
    CHECK_STATUS(afs_value_append((afs_value *)afs_value_get(v, "n"), afs_value_new_null(), &err), AFS_E_INVALID_ARGUMENT);
    char *q = afs_query_string(v, &err);
    CHECK_STR(q, "n%5B%5D=1&n%5B%5D=-2.5&n%5B%5D=1&n%5B%5D=0&n%5B%5D&o%5Bx%5D=7&s=5");
    afs_free(q);
    afs_value_free(v);
    r = afs_serializer_request(js, "POST", "http://example.com/", o, &err);
    body = afs_request_body(r, &blen);
    CHECK(body && blen == 7 && memcmp(body, "{\"x\":7}", 7) == 0);
    afs_request_free(r);
    afs_value_free(o);
    afs_serializer_free(js);

    /* An object of many members: every key found, in order. */
    char big[4096] = "{";
    for (int i = 0; i < 100; i++) {
        size_t at = strlen(big);
        snprintf(big + at, sizeof big - at, "%s\"key%d\":%d", i ? "," : "", i, i);
    }
    strcat(big, "}");
    afs_value *b = afs_value_parse_json(big, AFS_NTS, &err);
    CHECK(b && afs_value_count(b) == 100);
    for (int i = 0; i < 100 && b; i++) {
        char k[16];
        snprintf(k, sizeof k, "key%d", i);
        CHECK(afs_value_get_int(afs_value_get(b, k)) == i);
        CHECK(strcmp(afs_value_key_at(b, (size_t)i, NULL), k) == 0);
    }
    CHECK(afs_value_get(b, "key100") == NULL);
    afs_value_free(b);
}

int main(int argc, char **argv) {
    (void)argc;
    test_kinds();
    test_dict_order_and_replace();
    test_set_members();
    test_wrong_kinds_and_consumption();
    test_strings();
    test_parse_json();
    test_depth_limit();
    test_borrowed_members();
    test_consuming_calls_and_borrowed_memory();
    test_parsed_documents();
    return check_summary(argv[0]);
}
