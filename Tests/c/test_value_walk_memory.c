/* Walking a parsed document costs nothing per node (issue 19): decoding a response and
 * walking every node with the getters (afs_value_count, afs_value_at, afs_value_key_at,
 * afs_value_get, the scalar getters) peaks below 10 x the body + 8 MiB of resident memory.
 * Each shape runs in a forked child, which reads its own VmHWM (/proc/self/status) before
 * building the body and after the walk; the walk's sums are checked against the values the
 * body was built from, so a walk that skips nodes cannot pass.
 *   shapes: a 16 MB array [1,1,...]; a 16 MB object of short keys {"k0":0,...}; a 10 MB
 *   document of nested records (arrays of objects with strings, numbers and small arrays,
 *   so containers that are not flat get member indexes).
 * Under valgrind and the sanitizers the shapes are 64 KB and only the walk is checked (its
 * memory is not). */
#define _GNU_SOURCE
#include "check.h"
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static long vm_hwm_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kib = strtol(line + 6, NULL, 10);
    fclose(f);
    return kib;
}

typedef struct { char *p; size_t n, cap; } buf;
static void put(buf *b, const char *s) {
    size_t len = strlen(s);
    if (b->n + len + 1 > b->cap) {
        b->cap = (b->n + len + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) { perror("realloc"); exit(2); }
    }
    memcpy(b->p + b->n, s, len + 1);
    b->n += len;
}

/* What a walk saw: nodes, the sum of integers, string bytes. */
typedef struct { uint64_t nodes, ints, bytes; int bad; } tally;

static void walk(const afs_value *v, tally *t) {
    size_t len;
    t->nodes++;
    switch (afs_value_kind_of(v)) {
    case AFS_VALUE_INT: t->ints += (uint64_t)afs_value_get_int(v); break;
    case AFS_VALUE_STRING:
        if (!afs_value_get_string(v, &len)) t->bad++;
        t->bytes += len;
        break;
    case AFS_VALUE_ARRAY:
        for (size_t i = 0, n = afs_value_count(v); i < n; i++) walk(afs_value_at(v, i), t);
        break;
    case AFS_VALUE_DICT:
        for (size_t i = 0, n = afs_value_count(v); i < n; i++) {
            const char *k = afs_value_key_at(v, i, &len);
            const afs_value *m = afs_value_at(v, i);
            if (!k || afs_value_get(v, k) != m) t->bad++;  /* by key: the same borrowed pointer */
            t->bytes += len;
            walk(m, t);
        }
        break;
    default: break;
    }
}

enum shape { ARRAY, OBJECT, RECORDS };
static const char *const shape_names[] = { "16 MB [1,1,...]", "16 MB object of short keys", "10 MB nested records" };

/* Builds the body of `shape` with about `size` bytes; *want gets what a walk must see. */
static buf make(enum shape s, size_t size, tally *want) {
    buf b = { NULL, 0, 0 };
    char item[256];
    memset(want, 0, sizeof *want);
    want->nodes = 1;
    if (s == ARRAY) {
        put(&b, "[1");
        want->nodes++, want->ints++;
        while (b.n + 3 < size) { put(&b, ",1"); want->nodes++, want->ints++; }
        put(&b, "]");
    } else if (s == OBJECT) {
        put(&b, "{");
        for (uint64_t i = 0; b.n + 24 < size; i++) {
            int n = snprintf(item, sizeof item, "%s\"k%llu\":%llu", i ? "," : "", (unsigned long long)i,
                             (unsigned long long)(i % 7));
            (void)n;
            put(&b, item);
            want->nodes++, want->ints += i % 7;
            want->bytes += (uint64_t)snprintf(item, sizeof item, "k%llu", (unsigned long long)i);
        }
        put(&b, "}");
    } else {
        put(&b, "{\"records\":[");
        want->nodes++, want->bytes += 7;
        for (uint64_t i = 0; b.n + 200 < size; i++) {
            snprintf(item, sizeof item,
                     "%s{\"id\":%llu,\"name\":\"user %llu\",\"tags\":[\"a\",\"bc\",%llu],\"geo\":{\"x\":%llu,\"y\":[1,2]}}",
                     i ? "," : "", (unsigned long long)i, (unsigned long long)i, (unsigned long long)(i % 5),
                     (unsigned long long)(i % 3));
            put(&b, item);
            /* record: dict, id, name, tags array + 3, geo dict + x + y array + 2 */
            want->nodes += 1 + 1 + 1 + 4 + 1 + 1 + 3;
            want->ints += i + i % 5 + i % 3 + 3;
            want->bytes += 15 + (uint64_t)snprintf(item, sizeof item, "user %llu", (unsigned long long)i) + 3;
        }
        put(&b, "]}");
    }
    return b;
}

/* In a child: baseline, body, decode, walk, peak. Exit 0 when within the bound. */
static int run_shape(enum shape s, size_t size, int measure) {
    long before = vm_hwm_kib();
    tally want, got = { 0, 0, 0, 0 };
    buf b = make(s, size, &want);
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    afs_value *v = NULL;
    afs_error err;
    if (afs_response_object(rs, 200, "application/json", b.p, b.n, &v, &err) != AFS_OK) {
        fprintf(stderr, "%s: decode failed: %s\n", shape_names[s], err.message);
        return 1;
    }
    long decoded = vm_hwm_kib();
    walk(v, &got);
    walk(v, &got);  /* a second walk reuses what the first made */
    long peak = vm_hwm_kib();
    int ok = got.nodes == 2 * want.nodes && got.ints == 2 * want.ints && got.bytes == 2 * want.bytes && !got.bad;
    if (!ok)
        fprintf(stderr, "%s: walked %llu nodes, ints %llu, bytes %llu, %d mismatches; expected twice %llu, %llu, %llu\n",
                shape_names[s], (unsigned long long)got.nodes, (unsigned long long)got.ints,
                (unsigned long long)got.bytes, got.bad, (unsigned long long)want.nodes,
                (unsigned long long)want.ints, (unsigned long long)want.bytes);
    double limit_mib = (10.0 * (double)b.n + 8.0 * 1048576.0) / 1048576.0;
    double used_mib = (double)(peak - before) / 1024.0;
    printf("  %-28s body %6.1f MiB, decode peak %7.1f MiB, decode+walk peak %7.1f MiB (limit %6.1f MiB)%s\n",
           shape_names[s], (double)b.n / 1048576.0, (double)(decoded - before) / 1024.0, used_mib, limit_mib,
           measure ? "" : " [not measured]");
    if (measure && (before < 0 || used_mib >= limit_mib)) ok = 0;
    afs_value_free(v);
    afs_response_serializer_free(rs);
    free(b.p);
    fflush(stdout);
    return ok ? 0 : 1;
}

/* The members a parsed document lends behave as handles: the same pointer on every call,
 * read-only, spent when their slot is replaced or their root consumed, refused as the
 * wrong kind by other handles' functions, copied into owned values. */
static void test_views_are_handles(void) {
    afs_error err;
    afs_value *root = afs_value_parse_json("{\"a\":[1,[2,3],{\"k\":\"v\"}],\"b\":\"x\",\"c\":{\"d\":4}}", AFS_NTS, &err);
    CHECK(root != NULL);
    const afs_value *a = afs_value_get(root, "a"), *b = afs_value_get(root, "b"), *c = afs_value_get(root, "c");
    CHECK(a == afs_value_at(root, 0) && a == afs_value_get(root, "a"));
    const afs_value *inner = afs_value_at(a, 1), *k = afs_value_get(afs_value_at(a, 2), "k");
    CHECK(afs_value_get_int(afs_value_at(inner, 1)) == 3);
    CHECK_STR(afs_value_get_string(k, NULL), "v");
    /* read-only: a member is neither a container to change nor a value to consume */
    CHECK_STATUS(afs_value_append((afs_value *)a, afs_value_new_int(1), &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "borrowed");
    CHECK_STATUS(afs_value_dict_set(root, "z", AFS_NTS, (afs_value *)b, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "borrowed");
    afs_value_free((afs_value *)a);  /* ignored */
    /* another kind of handle: refused, never read as an object */
    CHECK_STATUS(afs_request_set_header((afs_request *)a, "X", "y", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "wrong kind");
    afs_request_free((afs_request *)a);  /* ignored */
    /* a member as parameters and as a copy */
    char *q = afs_query_string(c, &err);
    CHECK_STR(q, "d=4");
    afs_free(q);
    afs_value *copy = afs_value_copy(a);
    CHECK(copy != NULL && afs_value_count(copy) == 3 && afs_value_get_int(afs_value_at(afs_value_at(copy, 1), 0)) == 2);
    /* replacing "a": the views inside it are spent, the others stay */
    CHECK_STATUS(afs_value_dict_set(root, "a", AFS_NTS, afs_value_new_int(7), &err), AFS_OK);
    CHECK(afs_value_kind_of(a) == AFS_VALUE_NULL && afs_value_count(inner) == 0 && afs_value_get_string(k, NULL) == NULL);
    CHECK(afs_query_string(inner, &err) == NULL);
    CHECK_ERROR(err, AFS_E_STATE, "replaced by afs_value_dict_set");
    CHECK(afs_value_get_int(afs_value_get(root, "a")) == 7);
    CHECK(afs_value_get(root, "b") == b && afs_value_at(root, 2) == c);  /* unchanged slots: the same pointers */
    CHECK_STR(afs_value_get_string(b, NULL), "x");
    /* the copy has its own root: untouched */
    CHECK(afs_value_get_int(afs_value_at(afs_value_at(copy, 1), 1)) == 3);
    /* consuming the root: every view of it is spent */
    afs_value *holder = afs_value_new_array();
    CHECK_STATUS(afs_value_append(holder, root, &err), AFS_OK);
    CHECK(afs_value_kind_of(b) == AFS_VALUE_NULL && afs_value_get_int(afs_value_get(c, "d")) == 0);
    CHECK(afs_value_copy(c) == NULL);
    CHECK_STATUS(afs_value_dict_set((afs_value *)c, "e", AFS_NTS, afs_value_new_null(), &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, "consumed by afs_value_append");
    afs_value_free(holder);
    afs_value_free(copy);
}

int main(void) {
    test_views_are_handles();
    const char *preload = getenv("LD_PRELOAD");
    int under_valgrind = preload && strstr(preload, "vgpreload") != NULL;
    /* Sanitizers' shadow memory and quarantine are resident memory too: checked small,
       not measured (as under valgrind). */
    int sanitized = getenv("ASAN_OPTIONS") != NULL || getenv("TSAN_OPTIONS") != NULL;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    sanitized = 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    sanitized = 1;
#endif
#endif
    under_valgrind |= sanitized;
    static const size_t sizes[] = { 16000000, 16000000, 10000000 };
    for (int s = ARRAY; s <= RECORDS; s++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) _exit(run_shape((enum shape)s, under_valgrind ? 65536 : sizes[s], !under_valgrind));
        int status = 0;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    return check_summary("test_value_walk_memory");
}
