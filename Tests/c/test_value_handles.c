/* Value handles that the natural code cannot turn into a memory error (run under valgrind
 * by ctest, and under ASan by scripts/sanitize.sh):
 *   - top-down building (afs_value_dict_set_new_dict, _new_array, afs_value_append_new_dict,
 *     _new_array): the header's example, deep trees, reading while building;
 *   - spent handles (consumed by afs_value_dict_set / afs_value_append, or of a consumed
 *     tree): every function that takes a value handle, on one — statuses are AFS_E_STATE
 *     naming the consuming call, getters answer as for NULL, afs_value_free ignores it;
 *   - borrowed pointers kept past a change of their owner: still readable;
 *   - the handles lent to a query callback: freeing or changing them does nothing. */
#include "check.h"

#include <stdint.h>
#include <stdlib.h>

static afs_error err;

static char *query(const afs_value *v) {
    char *q = afs_query_string(v, &err);
    if (!q) fprintf(stderr, "afs_query_string: %s\n", err.message);
    return q;
}

#define CHECK_QUERY(v, expected) do { char *q_ = query(v); CHECK_STR(q_, expected); afs_free(q_); } while (0)

static void test_top_down_example(void) {
    /* The header's example, then the JSON body it gives. */
    afs_value *root = afs_value_new_dict();
    afs_value *user = afs_value_dict_set_new_dict(root, "user", AFS_NTS, &err);
    CHECK(user != NULL);
    CHECK_STATUS(afs_value_dict_set(user, "name", AFS_NTS, afs_value_new_string("Zoë", AFS_NTS, NULL), &err), AFS_OK);
    afs_value *tags = afs_value_dict_set_new_array(user, "tags", AFS_NTS, &err);
    CHECK(tags != NULL);
    CHECK_STATUS(afs_value_append(tags, afs_value_new_string("admin", AFS_NTS, NULL), &err), AFS_OK);
    CHECK_QUERY(root, "user%5Bname%5D=Zo%C3%AB&user%5Btags%5D%5B%5D=admin");

    /* Filling goes on after the tree was read; the next read sees it. */
    CHECK_STATUS(afs_value_append(tags, afs_value_new_string("ops", AFS_NTS, NULL), &err), AFS_OK);
    afs_value *jobs = afs_value_append_new_dict(afs_value_dict_set_new_array(root, "jobs", AFS_NTS, &err), &err);
    CHECK_STATUS(afs_value_dict_set(jobs, "id", AFS_NTS, afs_value_new_int(7), &err), AFS_OK);
    afs_serializer *json = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_serializer_set_json_options(json, AFS_JSON_SORTED_KEYS, NULL);
    afs_request *r = afs_serializer_request(json, "POST", "https://example.com/", root, &err);
    size_t len = 0;
    const uint8_t *body = r ? afs_request_body(r, &len) : NULL;
    const char *expected = "{\"jobs\":[{\"id\":7}],\"user\":{\"name\":\"Zoë\",\"tags\":[\"admin\",\"ops\"]}}";
    CHECK(body && len == strlen(expected) && memcmp(body, expected, len) == 0);
    if (body && (len != strlen(expected) || memcmp(body, expected, len) != 0))
        fprintf(stderr, "  got %.*s\n", (int)len, (const char *)body);
    afs_request_free(r);
    afs_serializer_free(json);

    /* Walking shows the live tree: the member of a slot made top-down is that handle. */
    CHECK(afs_value_get(root, "user") == user);
    CHECK(afs_value_count(tags) == 2);
    CHECK(afs_value_kind_of(afs_value_at(tags, 1)) == AFS_VALUE_STRING);
    CHECK_STR(afs_value_get_string(afs_value_get(user, "name"), NULL), "Zoë");

    /* Handles made inside a tree are not the caller's: free and consume refuse them. */
    afs_value_free(user);                            /* ignored */
    afs_value *other = afs_value_new_array();
    CHECK_STATUS(afs_value_append(other, tags, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "belongs to that tree");
    afs_value_free(other);
    CHECK_QUERY(root, "jobs%5B%5D%5Bid%5D=7&user%5Bname%5D=Zo%C3%AB&user%5Btags%5D%5B%5D=admin&user%5Btags%5D%5B%5D=ops");
    afs_value_free(root);                            /* frees user, tags, jobs */
}

static void test_top_down_refusals(void) {
    afs_value *set = afs_value_new_set();
    memset(&err, 0, sizeof err);
    CHECK(afs_value_append_new_dict(set, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "set");
    afs_value *d = afs_value_new_dict();
    CHECK(afs_value_append_new_array(d, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "not an array");
    CHECK(afs_value_dict_set_new_dict(set, "k", AFS_NTS, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "not a dictionary");
    CHECK(afs_value_dict_set_new_dict(NULL, "k", AFS_NTS, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "NULL");
    CHECK(afs_value_dict_set_new_dict(d, "\xff", AFS_NTS, &err) == NULL);
    CHECK(err.code == AFS_E_INVALID_UTF8);
    CHECK(afs_value_dict_set_new_array(d, "k", SIZE_MAX - 1, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "INT64_MAX");
    CHECK(afs_value_count(d) == 0);

    /* A borrowed member cannot be filled. */
    afs_value_dict_set(d, "inner", AFS_NTS, afs_value_new_dict(), &err);
    afs_value *borrowed = (afs_value *)afs_value_get(d, "inner");
    CHECK(afs_value_dict_set_new_dict(borrowed, "x", AFS_NTS, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "borrowed");

    /* The depth limit holds for trees built top-down: 512 levels, not 513. */
    afs_value *root = afs_value_new_array(), *c = root;
    int made = 1;
    while (c && made < 600) {
        afs_value *next = afs_value_append_new_array(c, &err);
        if (!next) break;
        c = next;
        made++;
    }
    CHECK(made == 512);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "deeper than 512");
    /* A scalar still fits at the deepest level; a container does not. */
    CHECK_STATUS(afs_value_append(c, afs_value_new_int(1), &err), AFS_OK);
    CHECK_STATUS(afs_value_append(c, afs_value_new_array(), &err), AFS_E_INVALID_ARGUMENT);
    char *q = afs_query_string(root, &err); /* not a dictionary */
    CHECK(q == NULL && err.code == AFS_E_INVALID_ARGUMENT);
    afs_value *top = afs_value_new_dict();
    CHECK_STATUS(afs_value_dict_set(top, "deep", AFS_NTS, root, &err), AFS_E_INVALID_ARGUMENT); /* 513 */
    afs_value_free(top);
    afs_value_free(set);
    afs_value_free(d);
}

/* Every function taking a value handle, on a spent one. `who` is the consuming call. */
static void check_spent(afs_value *v, const char *who) {
    afs_serializer *http = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_request *plain = afs_request_new("POST", "https://example.com/", NULL);

    memset(&err, 0, sizeof err);
    CHECK_STATUS(afs_value_dict_set(v, "k", AFS_NTS, afs_value_new_int(1), &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, who);
    afs_value *d = afs_value_new_dict();
    CHECK_STATUS(afs_value_dict_set(d, "k", AFS_NTS, v, &err), AFS_E_STATE);   /* not consumed again */
    CHECK_ERROR(err, AFS_E_STATE, who);
    CHECK_STATUS(afs_value_append(v, afs_value_new_int(1), &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, who);
    afs_value *a = afs_value_new_array();
    CHECK_STATUS(afs_value_append(a, v, &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, who);
    CHECK(afs_value_count(d) == 0 && afs_value_count(a) == 0);
    afs_value_free(d);
    afs_value_free(a);
    CHECK(afs_value_dict_set_new_dict(v, "k", AFS_NTS, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, who);
    CHECK(afs_value_dict_set_new_array(v, "k", AFS_NTS, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, who);
    CHECK(afs_value_append_new_dict(v, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, who);
    CHECK(afs_value_append_new_array(v, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, who);
    CHECK(afs_query_string(v, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, who);
    CHECK(afs_serializer_request(http, "GET", "https://example.com/", v, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, who);
    CHECK(afs_serializer_serialize(http, plain, v, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, who);
    CHECK(afs_serializer_multipart_form(http, "POST", "https://example.com/", v, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, who);

    /* Getters answer as for NULL. */
    size_t len = 99;
    CHECK(afs_value_kind_of(v) == AFS_VALUE_NULL);
    CHECK(afs_value_count(v) == 0);
    CHECK(afs_value_key_at(v, 0, &len) == NULL && len == 0);
    CHECK(afs_value_at(v, 0) == NULL);
    CHECK(afs_value_get(v, "k") == NULL);
    CHECK(afs_value_get_bool(v) == false);
    CHECK(afs_value_get_int(v) == 0);
    CHECK(afs_value_get_double(v) == 0);
    len = 99;
    CHECK(afs_value_get_string(v, &len) == NULL && len == 0);
    len = 99;
    CHECK(afs_value_get_data(v, &len) == NULL && len == 0);
    afs_value_free(v);                               /* ignored: its tree owns it */
    afs_value_free(v);

    afs_request_free(plain);
    afs_serializer_free(http);
}

static void test_spent_handles(void) {
    /* The code: a child filled after it was inserted. */
    afs_value *root = afs_value_new_dict();
    afs_value *child = afs_value_new_dict();
    CHECK_STATUS(afs_value_dict_set(root, "k", AFS_NTS, child, &err), AFS_OK);
    CHECK_STATUS(afs_value_dict_set(child, "x", AFS_NTS, afs_value_new_int(1), &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, "consumed by afs_value_dict_set");
    check_spent(child, "afs_value_dict_set");

    afs_value *arr = afs_value_new_array();
    afs_value *s = afs_value_new_string("text", AFS_NTS, NULL);
    CHECK_STATUS(afs_value_append(arr, s, &err), AFS_OK);
    check_spent(s, "afs_value_append");

    /* Consumed by a failing call (a bad key): still spent, kept by the tree. */
    afs_value *d = afs_value_new_data("ab", 2);
    CHECK_STATUS(afs_value_dict_set(root, "\xc3", AFS_NTS, d, &err), AFS_E_INVALID_UTF8);
    check_spent(d, "afs_value_dict_set");

    /* A consumed tree: its handles made inside it and its borrowed members are spent. */
    afs_value *sub = afs_value_new_dict();
    afs_value *inner = afs_value_dict_set_new_dict(sub, "inner", AFS_NTS, &err);
    afs_value_dict_set(inner, "n", AFS_NTS, afs_value_new_int(5), &err);
    afs_value_dict_set(sub, "s", AFS_NTS, afs_value_new_string("kept", AFS_NTS, NULL), &err);
    const afs_value *member = afs_value_get(sub, "s");
    const char *text = afs_value_get_string(member, NULL);
    CHECK_STATUS(afs_value_append(arr, sub, &err), AFS_OK);
    check_spent(inner, "afs_value_append");
    CHECK(afs_value_kind_of(member) == AFS_VALUE_NULL);
    CHECK_STR(text, "kept");                         /* the string itself stays readable */
    afs_value *wrap = afs_value_new_dict();
    CHECK_STATUS(afs_value_dict_set(wrap, "a", AFS_NTS, arr, &err), AFS_OK);
    CHECK_QUERY(wrap, "a%5B%5D=text&a%5B%5D%5Binner%5D%5Bn%5D=5&a%5B%5D%5Bs%5D=kept");

    /* The root of the container's own tree, and the container itself, are not consumed. */
    afs_value *t = afs_value_new_dict();
    afs_value *b = afs_value_dict_set_new_dict(t, "b", AFS_NTS, &err);
    CHECK_STATUS(afs_value_dict_set(b, "t", AFS_NTS, t, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "root of the container's own tree");
    CHECK_STATUS(afs_value_dict_set(t, "t", AFS_NTS, t, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(afs_value_count(t) == 1);
    afs_value_free(t);

    /* An unusable container: there is no tree to keep the value, which is freed. */
    CHECK_STATUS(afs_value_append(NULL, afs_value_new_int(3), &err), AFS_E_INVALID_ARGUMENT);

    afs_value_free(root);
    afs_value_free(wrap);
}

static void test_replaced_and_kept(void) {
    afs_value *root = afs_value_new_dict();
    afs_value *made = afs_value_dict_set_new_array(root, "a", AFS_NTS, &err);
    afs_value_append(made, afs_value_new_int(1), &err);
    afs_value_dict_set(root, "b", AFS_NTS, afs_value_new_string("bee", AFS_NTS, NULL), &err);
    const afs_value *b = afs_value_get(root, "b");
    const char *bee = afs_value_get_string(b, NULL);
    size_t klen = 0;
    const char *key0 = afs_value_key_at(root, 0, &klen);

    /* Replacing both slots: the handles made or lent for the old values are spent; every
     * pointer handed out stays readable. */
    CHECK_STATUS(afs_value_dict_set(root, "a", AFS_NTS, afs_value_new_int(2), &err), AFS_OK);
    CHECK_STATUS(afs_value_append(made, afs_value_new_int(3), &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, "replaced by afs_value_dict_set");
    CHECK_STATUS(afs_value_dict_set(root, "b", AFS_NTS, afs_value_new_null(), &err), AFS_OK);
    CHECK(afs_value_kind_of(b) == AFS_VALUE_NULL);
    CHECK_STR(bee, "bee");
    CHECK_STR(key0, "a");
    CHECK_QUERY(root, "a=2&b");

    /* Appending many members keeps every pointer lent before (the lent slots grow). */
    afs_value *arr = afs_value_new_array();
    afs_value_append(arr, afs_value_new_string("first", AFS_NTS, NULL), &err);
    const afs_value *first = afs_value_at(arr, 0);
    const char *first_text = afs_value_get_string(first, NULL);
    for (int i = 0; i < 1000; i++) {
        afs_value_append(arr, afs_value_new_int(i), &err);
        if (i % 100 == 0) CHECK(afs_value_at(arr, (size_t)i + 1) != NULL);
    }
    CHECK(afs_value_at(arr, 0) == first);
    CHECK_STR(first_text, "first");
    CHECK(afs_value_count(arr) == 1001);
    afs_value_dict_set(root, "arr", AFS_NTS, arr, &err);
    CHECK_STR(first_text, "first");                  /* its tree was consumed; text kept */
    afs_value_free(root);
}

/* A query callback that tries to free and change what it was lent. */
static char *abusive_query(void *ctx, const afs_request *request, const afs_value *params, afs_error *e) {
    (void)ctx; (void)e;
    afs_value_free((afs_value *)params);
    afs_error local;
    int refused = afs_value_dict_set((afs_value *)params, "x", AFS_NTS, afs_value_new_int(1), &local) == AFS_E_INVALID_ARGUMENT;
    afs_request_free((afs_request *)request);
    return afs_string_new(refused ? "refused=1" : "refused=0", AFS_NTS);
}

static void test_callback_lends(void) {
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_serializer_set_query_callback(s, abusive_query, NULL);
    afs_value *params = afs_value_new_dict();
    afs_value_dict_set(params, "a", AFS_NTS, afs_value_new_int(1), &err);
    afs_request *r = afs_serializer_request(s, "GET", "https://example.com/", params, &err);
    CHECK(r != NULL);
    CHECK_STR(r ? afs_request_url(r) : NULL, "https://example.com/?refused=1");
    afs_request_free(r);
    CHECK_QUERY(params, "a=1");
    afs_value_free(params);
    afs_serializer_free(s);
}

static void test_request_strings_kept(void) {
    afs_request *r = afs_request_new("GET", "https://example.com/", &err);
    afs_request_set_header(r, "X-A", "one", &err);
    const char *name = afs_request_header_name(r, 0), *value = afs_request_header_value(r, 0);
    const char *url = afs_request_url(r);
    CHECK_STATUS(afs_request_set_header(r, "X-A", "two", &err), AFS_OK);
    CHECK_STR(name, "X-A");                          /* earlier copies stay readable */
    CHECK_STR(value, "one");
    CHECK_STR(url, "https://example.com/");
    CHECK_STR(afs_request_header(r, "x-a"), "two");
    afs_request_free(r);
}

int main(void) {
    test_top_down_example();
    test_top_down_refusals();
    test_spent_handles();
    test_replaced_and_kept();
    test_callback_lends();
    test_request_strings_kept();
    return check_summary("test_value_handles");
}
