/* afs_json_parser (issue 23): one parser reused for many documents gives each the value
 * afs_value_parse_json gives, and the same error message at the same offset; values
 * outlive the parser; NULL and wrong handles are errors; valgrind-clean. */
#include "check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *docs[] = {
    "{\"a\":[1,-2.5e3,\"x\\u00e9\\n\",true,false,null,{\"b\":{}},[]],\"c\\/\":\"long string with \\\"escapes\\\"\"}",
    "[1,2,3]",
    "\"just a string\"",
    "  {\"k\":  12345678901234567890 , \"k2\" : 0.1 }  ",
    "[1,]",                     /* errors: the reader's message and offset */
    "{\"a\" 1}",
    "[\"\\x\"]",
    "[\"abc",
    "[\"\xC3\"]",
    "[1e400]",
    "",
    "   ",
};

/* The compact JSON of a value, through a JSON serializer (owned by the caller). */
static char *to_json(const afs_value *v, size_t *len) {
    afs_serializer *js = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_serializer_set_json_options(js, AFS_JSON_FRAGMENTS_ALLOWED, NULL);
    afs_request *r = afs_serializer_request(js, "POST", "http://example.com/", v, NULL);
    afs_serializer_free(js);
    if (!r) return NULL;
    size_t n = 0;
    const uint8_t *body = afs_request_body(r, &n);
    char *out = NULL;
    if (body || n == 0) {
        out = malloc(n + 1);
        memcpy(out, body, n);
        out[n] = 0;
        *len = n;
    }
    afs_request_free(r);
    return out;
}

static void test_same_as_parse_json(void) {
    afs_error e1, e2;
    afs_json_parser *jp = afs_json_parser_new(&e1);
    CHECK(jp != NULL);
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
            size_t n = strlen(docs[i]);
            afs_value *a = afs_json_parser_parse(jp, docs[i], n, &e1);
            afs_value *b = afs_value_parse_json(docs[i], n, &e2);
            CHECK((a == NULL) == (b == NULL));
            if (a && b) {
                size_t la = 0, lb = 0;
                char *ja = to_json(a, &la), *jb = to_json(b, &lb);
                CHECK(ja && jb);
                if (ja && jb) CHECK_STR(ja, jb);
                free(ja);
                free(jb);
            } else if (!a && !b) {
                CHECK(e1.code == AFS_E_INVALID_JSON && e2.code == AFS_E_INVALID_JSON);
                CHECK_STR(e1.message, e2.message);
            }
            afs_value_free(a);
            afs_value_free(b);
        }
    }
    /* A value outlives its parser. */
    afs_value *kept = afs_json_parser_parse(jp, "{\"name\":\"afs\"}", 14, &e1);
    afs_json_parser_free(jp);
    CHECK(kept != NULL);
    size_t len = 0;
    const char *s = afs_value_get_string(afs_value_get(kept, "name"), &len);
    CHECK(s && len == 3 && memcmp(s, "afs", 3) == 0);
    afs_value_free(kept);
}

static void test_large_then_small(void) {
    /* The index grows for a large document and is reused for the next ones. */
    afs_error err;
    afs_json_parser *jp = afs_json_parser_new(&err);
    size_t count = 100000;
    char *big = malloc(count * 8 + 16);
    size_t n = 0;
    big[n++] = '[';
    for (size_t i = 0; i < count; i++) n += (size_t)sprintf(big + n, "%s%zu", i ? "," : "", i);
    big[n++] = ']';
    afs_value *v = afs_json_parser_parse(jp, big, n, &err);
    CHECK(v && afs_value_count(v) == count);
    CHECK(v && afs_value_get_int(afs_value_at(v, count - 1)) == (int64_t)(count - 1));
    afs_value_free(v);
    v = afs_json_parser_parse(jp, "[7]", 3, &err);
    CHECK(v && afs_value_count(v) == 1 && afs_value_get_int(afs_value_at(v, 0)) == 7);
    afs_value_free(v);
    free(big);
    afs_json_parser_free(jp);
}

static void test_misuse(void) {
    afs_error err;
    CHECK(afs_json_parser_parse(NULL, "[]", 2, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "parser");
    afs_value *notparser = afs_value_new_array();
    CHECK(afs_json_parser_parse((afs_json_parser *)notparser, "[]", 2, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "wrong kind");
    afs_json_parser_free((afs_json_parser *)notparser);  /* ignored: not a parser */
    afs_value_free(notparser);
    afs_json_parser *jp = afs_json_parser_new(NULL);
    CHECK(afs_json_parser_parse(jp, NULL, 2, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "json");
    CHECK(afs_json_parser_parse(jp, NULL, 0, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_JSON, "empty");
    afs_json_parser_free(jp);
    afs_json_parser_free(NULL);
}

int main(void) {
    test_same_as_parse_json();
    test_large_then_small();
    test_misuse();
    return check_summary("test_json_parser");
}
