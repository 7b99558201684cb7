/* afs_query_parse_pickle through the C ABI: for every query and option set below, the
 * pickle loads (afs_value_from_pickle) as the tree afs_query_parse returns (same keys in
 * the same order, same values), byte for byte afs_value_to_pickle of that tree for a query
 * of flat names without repeats; a failure has the same status and message as
 * afs_query_parse; misuse. */
#define _GNU_SOURCE
#include "check.h"

#include <stdint.h>
#include <stdlib.h>

static const char *queries[] = {
    "", "a=1", "a=1&b=2&a=3", "key", "x=1&&y=", "?x=1", "a+b=c+d", "a%5Bb%5D=1",
    "a[]=1&a[]=2", "u[l][]=1&u[n]=x", "a[b=1&c]=2&[d]=3", "a[b]x=1", "a=1&a=2&b=3",
    "a[1]=y&a[0]=x", "a[0]=x&a[2]=y", "a[0][k]=1&a[1][k]=2", "a[][k]=1&a[][j]=2&a[][k]=3",
    "b=1&b=2&a[x]=1&b=3", "a[b][c][d][e][f][g][h]=1", "a=%C3%A9&%C3%A9=a", "s=a+b&s=c",
    "a[]=1&a[x]=2", "a=1&a[b]=2", "a=%zz", "a=%E9", "%E9=1", "a=%4", "=v&k",
};

static void compare(const char *q, const afs_query_parse_options *o) {
    afs_error e1, e2;
    size_t n = 99;
    afs_value *v = afs_query_parse(q, AFS_NTS, o, &e1);
    uint8_t *p = afs_query_parse_pickle(q, AFS_NTS, o, &n, &e2);
    CHECK((v == NULL) == (p == NULL));
    if (!v || !p) {
        CHECK(n == 0);
        CHECK(e1.code == e2.code);
        CHECK_STR(e2.message, e1.message);
    } else {
        size_t n1 = 0, n2 = 0;
        uint8_t *want = afs_value_to_pickle(v, &n1, &e1);
        afs_value *back = afs_value_from_pickle(p, n, &e2);
        uint8_t *got = back ? afs_value_to_pickle(back, &n2, &e2) : NULL;
        CHECK(want && got && n1 == n2 && memcmp(want, got, n1) == 0);
        int plain = strstr(q, "[") == NULL && strstr(q, "%") == NULL && strstr(q, "a=1&b=2&a") == NULL
                    && strstr(q, "s=a+b&s") == NULL && strstr(q, "a=1&a=2") == NULL;
        if (plain) CHECK(n == n1 && memcmp(p, want, n) == 0);
        afs_free(want);
        afs_free(got);
        afs_value_free(back);
    }
    afs_value_free(v);
    afs_free(p);
}

int main(void) {
    afs_query_parse_options o = {0};
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
        compare(queries[i], NULL);
        for (int style = 0; style < 3; style++) {
            for (unsigned flags = 0; flags < 8; flags++) {
                memset(&o, 0, sizeof o);
                o.array_style = style;
                o.flags = flags;
                o.max_depth = flags & 2 ? 2 : 0;
                compare(queries[i], &o);
            }
        }
        o.max_params = 1;
        o.max_length = 1;
        compare(queries[i], &o);
    }

    /* the repeated flat name: written twice, loaded once at its first position */
    afs_error err;
    size_t n = 0;
    uint8_t *p = afs_query_parse_pickle("a=1&b=2&a=3", AFS_NTS, NULL, &n, &err);
    afs_value *v = p ? afs_value_from_pickle(p, n, &err) : NULL;
    CHECK(v && afs_value_count(v) == 2);
    CHECK_STR(v ? afs_value_get_string(afs_value_get(v, "a"), NULL) : NULL, "3");
    afs_value_free(v);
    afs_free(p);

    /* a form body: AFS_QUERY_PLUS_AS_SPACE; embedded NUL bytes with an explicit length */
    memset(&o, 0, sizeof o);
    o.flags = AFS_QUERY_PLUS_AS_SPACE;
    p = afs_query_parse_pickle("s=a+b&z=\0x", 10, &o, &n, &err);
    v = p ? afs_value_from_pickle(p, n, &err) : NULL;
    CHECK_STR(v ? afs_value_get_string(afs_value_get(v, "s"), NULL) : NULL, "a b");
    CHECK(v && afs_value_get(v, "z") && afs_value_get_string(afs_value_get(v, "z"), &n) && n == 2);
    afs_value_free(v);
    afs_free(p);

    /* misuse */
    n = 7;
    CHECK(afs_query_parse_pickle("a=1", AFS_NTS, NULL, NULL, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "pickle_len");
    CHECK(afs_query_parse_pickle(NULL, 3, NULL, &n, &err) == NULL);
    CHECK(err.code == AFS_E_INVALID_ARGUMENT && n == 0);
    o.array_style = 7;
    CHECK(afs_query_parse_pickle("a=1", AFS_NTS, &o, &n, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "array_style");
    p = afs_query_parse_pickle(NULL, 0, NULL, &n, &err);
    v = p ? afs_value_from_pickle(p, n, &err) : NULL;
    CHECK(v && afs_value_kind_of(v) == AFS_VALUE_DICT && afs_value_count(v) == 0);
    afs_value_free(v);
    afs_free(p);
    return check_summary("test_query_pickle");
}
