/* Walking values: count, keys and members in order, lookup by key, typed getters with
 * wrong kinds, borrowed pointers that stay put until the value changes, and a decoded
 * document printed back by a recursive walk. */
#include "check.h"
#include <stdint.h>
#include <stdlib.h>

static afs_value *decode_json(const char *text) {
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    afs_response_serializer_set_json_reading_options(rs, AFS_JSON_READING_FRAGMENTS_ALLOWED, NULL);
    afs_value *v = NULL;
    afs_error err;
    afs_status st = afs_response_object(rs, 200, "application/json", text, strlen(text), &v, &err);
    if (st != AFS_OK) fprintf(stderr, "decode_json: %s\n", err.message);
    afs_response_serializer_free(rs);
    return v;
}

/* A compact text form of a value, written by walking it with the afs_value_* getters. */
typedef struct { char buf[4096]; size_t n; } text;

static void put(text *t, const char *s, size_t len) {
    if (t->n + len < sizeof t->buf) { memcpy(t->buf + t->n, s, len); t->n += len; t->buf[t->n] = 0; }
}
static void puts_(text *t, const char *s) { put(t, s, strlen(s)); }

static void dump(text *t, const afs_value *v) {
    char num[64];
    size_t len;
    switch (afs_value_kind_of(v)) {
    case AFS_VALUE_NULL: puts_(t, "null"); break;
    case AFS_VALUE_BOOL: puts_(t, afs_value_get_bool(v) ? "true" : "false"); break;
    case AFS_VALUE_INT: snprintf(num, sizeof num, "%lld", (long long)afs_value_get_int(v)); puts_(t, num); break;
    case AFS_VALUE_DOUBLE: snprintf(num, sizeof num, "%.17g", afs_value_get_double(v)); puts_(t, num); break;
    case AFS_VALUE_STRING: {
        const char *s = afs_value_get_string(v, &len);
        puts_(t, "\"");
        put(t, s, len);
        puts_(t, "\"");
        break;
    }
    case AFS_VALUE_DATA: {
        const uint8_t *d = afs_value_get_data(v, &len);
        puts_(t, "<");
        for (size_t i = 0; i < len; i++) { snprintf(num, sizeof num, "%02x", d[i]); puts_(t, num); }
        puts_(t, ">");
        break;
    }
    case AFS_VALUE_DATE: snprintf(num, sizeof num, "date(%.17g)", afs_value_get_date(v)); puts_(t, num); break;
    case AFS_VALUE_ARRAY:
    case AFS_VALUE_SET:
        puts_(t, afs_value_kind_of(v) == AFS_VALUE_SET ? "set(" : "[");
        for (size_t i = 0; i < afs_value_count(v); i++) {
            if (i) puts_(t, ",");
            dump(t, afs_value_at(v, i));
        }
        puts_(t, afs_value_kind_of(v) == AFS_VALUE_SET ? ")" : "]");
        break;
    case AFS_VALUE_DICT:
        puts_(t, "{");
        for (size_t i = 0; i < afs_value_count(v); i++) {
            if (i) puts_(t, ",");
            const char *k = afs_value_key_at(v, i, &len);
            put(t, k, len);
            puts_(t, ":");
            dump(t, afs_value_at(v, i));
        }
        puts_(t, "}");
        break;
    }
}

static void test_walk_a_decoded_document(void) {
    afs_value *v = decode_json(
        "{\"name\":\"caf\\u00e9 \\ud83d\\ude00\",\"id\":9223372036854775807,\"big\":9223372036854775808,"
        "\"neg\":-9223372036854775808,\"pi\":3.25,\"ok\":true,\"no\":false,\"none\":null,"
        "\"tags\":[\"a\",[],{}],\"nested\":{\"z\":1,\"a\":[{\"deep\":[null]}]}}");
    CHECK(v != NULL);
    text t = { "", 0 };
    dump(&t, v);
    CHECK_STR(t.buf, "{name:\"caf\xc3\xa9 \xf0\x9f\x98\x80\",id:9223372036854775807,big:9.2233720368547758e+18,"
                     "neg:-9223372036854775808,pi:3.25,ok:true,no:false,none:null,"
                     "tags:[\"a\",[],{}],nested:{z:1,a:[{deep:[null]}]}}");
    CHECK(afs_value_count(v) == 10);
    CHECK(afs_value_kind_of(afs_value_get(v, "big")) == AFS_VALUE_DOUBLE);
    CHECK(afs_value_get_double(afs_value_get(v, "id")) == 9223372036854775807.0);  /* ints convert */
    CHECK(afs_value_get_int(afs_value_get(v, "pi")) == 0);                          /* doubles do not */
    CHECK(afs_value_get_bool(afs_value_get(v, "ok")) == true);
    CHECK(afs_value_get(v, "missing") == NULL);
    CHECK(afs_value_get(v, "Name") == NULL);
    CHECK(afs_value_get(afs_value_get(v, "nested"), "z") == afs_value_at(afs_value_get(v, "nested"), 0));
    afs_value_free(v);
}

static void test_wrong_kinds_give_zero(void) {
    afs_value *s = afs_value_new_string("text", AFS_NTS, NULL), *i = afs_value_new_int(7), *d = afs_value_new_dict();
    afs_value *a = afs_value_new_array();
    size_t len = 99;
    CHECK(afs_value_count(s) == 0 && afs_value_count(i) == 0 && afs_value_count(NULL) == 0);
    CHECK(afs_value_at(s, 0) == NULL && afs_value_at(d, 0) == NULL && afs_value_at(NULL, 0) == NULL);
    CHECK(afs_value_key_at(a, 0, &len) == NULL && len == 0);
    len = 99;
    CHECK(afs_value_key_at(NULL, 0, &len) == NULL && len == 0);
    CHECK(afs_value_get(a, "k") == NULL && afs_value_get(s, "k") == NULL && afs_value_get(d, NULL) == NULL);
    CHECK(afs_value_get(NULL, "k") == NULL);
    CHECK(afs_value_get_bool(i) == false && afs_value_get_bool(NULL) == false);
    CHECK(afs_value_get_int(s) == 0 && afs_value_get_int(NULL) == 0);
    CHECK(afs_value_get_double(s) == 0 && afs_value_get_double(NULL) == 0);
    CHECK(afs_value_get_double(i) == 7.0);
    len = 99;
    CHECK(afs_value_get_string(i, &len) == NULL && len == 0);
    CHECK(afs_value_get_string(NULL, NULL) == NULL);
    len = 99;
    CHECK(afs_value_get_data(s, &len) == NULL && len == 0);
    CHECK(afs_value_get_data(NULL, NULL) == NULL);
    /* a handle of another kind is not a value */
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_HTTP);
    const afs_value *not_value = (const afs_value *)rs;
    CHECK(afs_value_count(not_value) == 0 && afs_value_at(not_value, 0) == NULL && afs_value_get(not_value, "k") == NULL);
    CHECK(afs_value_get_string(not_value, NULL) == NULL && afs_value_get_int(not_value) == 0);
    afs_response_serializer_free(rs);
    afs_value_free(s); afs_value_free(i); afs_value_free(d); afs_value_free(a);
}

static void test_strings_and_data(void) {
    size_t len = 0;
    afs_value *v = decode_json("[\"a\\u0000b\",\"\",\"\\u00e9\"]");
    const char *s = afs_value_get_string(afs_value_at(v, 0), &len);
    CHECK(len == 3 && memcmp(s, "a\0b", 4) == 0);              /* NUL inside, NUL after */
    s = afs_value_get_string(afs_value_at(v, 1), &len);
    CHECK(s != NULL && len == 0 && s[0] == 0);
    s = afs_value_get_string(afs_value_at(v, 2), NULL);         /* len may be NULL */
    CHECK_STR(s, "\xc3\xa9");
    afs_value_free(v);

    afs_value *empty = afs_value_new_data(NULL, 0), *bytes = afs_value_new_data("\0\1\2", 3);
    const uint8_t *p = afs_value_get_data(empty, &len);
    CHECK(p != NULL && len == 0);
    p = afs_value_get_data(bytes, &len);
    CHECK(p != NULL && len == 3 && p[0] == 0 && p[1] == 1 && p[2] == 2);
    afs_value_free(empty);
    afs_value_free(bytes);
}

static void test_sets_keep_insertion_order(void) {
    afs_value *set = afs_value_new_set();
    afs_value_append(set, afs_value_new_string("z", AFS_NTS, NULL), NULL);
    afs_value_append(set, afs_value_new_int(1), NULL);
    afs_value_append(set, afs_value_new_string("a", AFS_NTS, NULL), NULL);
    afs_value_append(set, afs_value_new_int(1), NULL);          /* equal member: no-op */
    afs_value_append(set, afs_value_new_bool(true), NULL);
    text t = { "", 0 };
    dump(&t, set);
    CHECK_STR(t.buf, "set(\"z\",1,\"a\",true)");
    afs_value_free(set);
}

static void test_keys_compare_by_bytes(void) {
    afs_value *d = decode_json("{\"\\u00e9\":1,\"e\\u0301\":2}");
    CHECK(afs_value_get_int(afs_value_get(d, "\xc3\xa9")) == 1);
    CHECK(afs_value_get_int(afs_value_get(d, "e\xcc\x81")) == 2);
    CHECK(afs_value_get(d, "\xff") == NULL);                    /* not UTF-8: never a key */
    afs_value_free(d);

    /* a large dictionary: lookups through an index, same answers */
    afs_value *big = afs_value_new_dict();
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "key%d", i);
        afs_value_dict_set(big, key, AFS_NTS, afs_value_new_int(i), NULL);
    }
    int ok = 1;
    for (int i = 999; i >= 0; i--) {
        snprintf(key, sizeof key, "key%d", i);
        const afs_value *m = afs_value_get(big, key);
        ok = ok && m && afs_value_get_int(m) == i && m == afs_value_at(big, (size_t)i);
        size_t len;
        ok = ok && strcmp(afs_value_key_at(big, (size_t)i, &len), key) == 0 && len == strlen(key);
    }
    CHECK(ok);
    CHECK(afs_value_get(big, "key1000") == NULL);
    afs_value_free(big);
}

static void test_borrowed_pointers(void) {
    size_t len;
    afs_value *d = afs_value_new_dict();
    afs_value_dict_set(d, "k", AFS_NTS, afs_value_new_string("v", AFS_NTS, NULL), NULL);
    const afs_value *m1 = afs_value_get(d, "k");
    const char *k1 = afs_value_key_at(d, 0, &len);
    const char *s1 = afs_value_get_string(m1, &len);
    /* repeated calls lend the same pointers */
    CHECK(afs_value_get(d, "k") == m1 && afs_value_at(d, 0) == m1);
    CHECK(afs_value_key_at(d, 0, &len) == k1);
    CHECK(afs_value_get_string(m1, &len) == s1);
    CHECK_STR(k1, "k");
    CHECK_STR(s1, "v");
    /* changing the value drops them; new ones see the change (valgrind checks the old
       ones are freed, not leaked) */
    afs_value_dict_set(d, "k", AFS_NTS, afs_value_new_string("w", AFS_NTS, NULL), NULL);
    afs_value_dict_set(d, "k2", AFS_NTS, afs_value_new_int(2), NULL);
    CHECK_STR(afs_value_get_string(afs_value_get(d, "k"), NULL), "w");
    CHECK(afs_value_count(d) == 2);
    CHECK_STR(afs_value_key_at(d, 1, NULL), "k2");
    afs_value_free(d);

    /* a decoded tree walked 512 levels down, borrowed handles all the way */
    char *deep = malloc(2 * 512 + 2);
    memset(deep, '[', 512);
    deep[512] = '7';
    memset(deep + 513, ']', 512);
    deep[1025] = 0;
    afs_value *root = decode_json(deep);
    const afs_value *cur = root;
    int levels = 0;
    while (afs_value_kind_of(cur) == AFS_VALUE_ARRAY) { cur = afs_value_at(cur, 0); levels++; }
    CHECK(levels == 512);
    CHECK(afs_value_get_int(cur) == 7);
    afs_value_free(root);
    free(deep);
}

static void test_walk_a_plist_with_data(void) {
    const char *xml = "<plist><dict><key>blob</key><data>AAEC/w==</data><key>n</key><real>1.5</real>"
                      "<key>when</key><date>2020-01-02T03:04:05Z</date></dict></plist>";
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_PLIST);
    afs_value *v = NULL;
    CHECK_STATUS(afs_response_object(rs, 200, "application/x-plist", xml, strlen(xml), &v, NULL), AFS_OK);
    text t = { "", 0 };
    dump(&t, v);
    CHECK_STR(t.buf, "{blob:<000102ff>,n:1.5,when:date(1577934245)}");  /* a date value since issue 24 */
    afs_value_free(v);
    afs_response_serializer_free(rs);
}

int main(int argc, char **argv) {
    (void)argc;
    test_walk_a_decoded_document();
    test_wrong_kinds_give_zero();
    test_strings_and_data();
    test_sets_keep_insertion_order();
    test_keys_compare_by_bytes();
    test_borrowed_pointers();
    test_walk_a_plist_with_data();
    return check_summary(argv[0]);
}
