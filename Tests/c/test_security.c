/* Security policy (afs_security_policy, header section 13) through the C ABI: every rule
 * provoked with its message, pins (certificates in DER and PEM, sha256// pins, malformed
 * ones refused whole), afs_certificate_read, argument errors, copies, NULL and wrong-kind
 * handles, and one policy evaluated by several threads at once.
 *
 * Certificates are built here with a small DER writer: the library verifies no signature,
 * so a dummy signature is read exactly as a real one. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct { uint8_t *p; size_t n; } buf;

static void put(buf *b, const uint8_t *bytes, size_t n) {
    b->p = realloc(b->p, b->n + n + 1);
    if (!b->p) abort();
    memcpy(b->p + b->n, bytes, n);
    b->n += n;
}

/* tag + DER length + contents (takes ownership of contents). */
static buf tlv(uint8_t tag, buf contents) {
    buf out = {0};
    uint8_t head[6];
    size_t h = 0;
    head[h++] = tag;
    if (contents.n < 0x80) {
        head[h++] = (uint8_t)contents.n;
    } else if (contents.n < 0x100) {
        head[h++] = 0x81; head[h++] = (uint8_t)contents.n;
    } else {
        head[h++] = 0x82; head[h++] = (uint8_t)(contents.n >> 8); head[h++] = (uint8_t)contents.n;
    }
    put(&out, head, h);
    if (contents.n) put(&out, contents.p, contents.n);
    free(contents.p);
    return out;
}

static buf raw(const void *bytes, size_t n) { buf b = {0}; put(&b, bytes, n ? n : 0); return b; }
static buf cat(buf a, buf b) { if (b.n) put(&a, b.p, b.n); free(b.p); return a; }

static buf name(const char *cn) {
    static const uint8_t oid_cn[] = {0x06, 0x03, 0x55, 0x04, 0x03};
    return tlv(0x30, tlv(0x31, tlv(0x30, cat(raw(oid_cn, 5), tlv(0x0C, raw(cn, strlen(cn)))))));
}

/* A certificate with subject CN `cn`, DNS names, optional IPv4 address, a key from `seed`. */
static buf make_cert(const char *cn, const char *const *dns, size_t ndns, const uint8_t *ipv4, uint8_t seed,
                     const char *not_before, const char *not_after) {
    static const uint8_t sigalg[] = {0x30, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02};
    static const uint8_t version[] = {0xA0, 0x03, 0x02, 0x01, 0x02};
    static const uint8_t serial[] = {0x02, 0x01, 0x01};
    static const uint8_t ecalg[] = {0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
                                    0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07};
    static const uint8_t oid_san[] = {0x06, 0x03, 0x55, 0x1D, 0x11};
    uint8_t point[66];
    point[0] = 0x00; point[1] = 0x04;
    for (int i = 2; i < 66; i++) point[i] = (uint8_t)(seed * 31 + i * 7);
    buf spki = tlv(0x30, cat(raw(ecalg, sizeof ecalg), tlv(0x03, raw(point, sizeof point))));
    buf validity = tlv(0x30, cat(tlv(0x17, raw(not_before, strlen(not_before))),
                                 tlv(0x18, raw(not_after, strlen(not_after)))));
    buf tbs = cat(cat(cat(raw(version, sizeof version), raw(serial, sizeof serial)), raw(sigalg, sizeof sigalg)), name("Test CA"));
    tbs = cat(cat(cat(tbs, validity), name(cn)), spki);
    if (ndns || ipv4) {
        buf names = {0};
        for (size_t i = 0; i < ndns; i++) names = cat(names, tlv(0x82, raw(dns[i], strlen(dns[i]))));
        if (ipv4) names = cat(names, tlv(0x87, raw(ipv4, 4)));
        buf ext = tlv(0x30, cat(raw(oid_san, sizeof oid_san), tlv(0x04, tlv(0x30, names))));
        tbs = cat(tbs, tlv(0xA3, tlv(0x30, ext)));
    }
    static const uint8_t sig[] = {0x03, 0x02, 0x00, 0x01};
    return tlv(0x30, cat(cat(tlv(0x30, tbs), raw(sigalg, sizeof sigalg)), raw(sig, sizeof sig)));
}

static char *base64(const uint8_t *p, size_t n) {
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    if (!out) abort();
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *o++ = a[v >> 18]; *o++ = a[v >> 12 & 63];
        *o++ = i + 1 < n ? a[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? a[v & 63] : '=';
    }
    *o = 0;
    return out;
}

static char *pem(buf der) {
    char *b = base64(der.p, der.n);
    size_t len = strlen(b);
    char *out = malloc(len + len / 64 + 80);
    if (!out) abort();
    strcpy(out, "-----BEGIN CERTIFICATE-----\n");
    for (size_t i = 0; i < len; i += 64) {
        strncat(out, b + i, 64);
        strcat(out, "\n");
    }
    strcat(out, "-----END CERTIFICATE-----\n");
    free(b);
    return out;
}

static buf leaf, intermediate, other, self_signed;

static afs_status eval(const afs_security_policy *p, const buf *chain, size_t n, const char *domain, bool trusted,
                       afs_error *err) {
    const uint8_t *der[4];
    size_t len[4];
    for (size_t i = 0; i < n; i++) { der[i] = chain[i].p; len[i] = chain[i].n; }
    return afs_security_policy_evaluate(p, der, len, n, domain, trusted, err);
}

/* "sha256//..." of a certificate's SPKI, through afs_certificate_read. */
static char *pin_of(buf cert) {
    afs_value *list = NULL;
    afs_error err;
    CHECK_STATUS(afs_certificate_read(cert.p, cert.n, &list, &err), AFS_OK);
    size_t n = 0;
    const uint8_t *hash = afs_value_get_data(afs_value_get(afs_value_at(list, 0), "spki_sha256"), &n);
    CHECK(n == 32);
    char *b = base64(hash, n);
    char *out = malloc(strlen(b) + 9);
    if (!out) abort();
    strcpy(out, "sha256//");
    strcat(out, b);
    free(b);
    afs_value_free(list);
    return out;
}

static void test_rules(void) {
    afs_error err;
    buf chain[] = {leaf, intermediate};
    buf other_chain[] = {other, intermediate};

    /* Mode none. */
    afs_security_policy *p = afs_security_policy_new(AFS_PINNING_NONE, &err);
    CHECK(p != NULL);
    CHECK_STATUS(eval(p, chain, 2, "www.example.com", true, &err), AFS_OK);
    CHECK_STATUS(eval(p, chain, 2, "WWW.Example.COM.", true, &err), AFS_OK);
    CHECK_STATUS(eval(p, chain, 2, "a.wild.example", true, &err), AFS_OK);
    CHECK_STATUS(eval(p, chain, 2, "127.0.0.1", true, &err), AFS_OK);
    CHECK_STATUS(eval(p, chain, 2, NULL, true, &err), AFS_OK);
    CHECK_STATUS(eval(p, chain, 2, "evil.example", true, &err), AFS_E_UNTRUSTED);
    CHECK_ERROR(err, AFS_E_UNTRUSTED, "rule 2 (domain name)");
    CHECK(strstr(err.message, "evil.example") && strstr(err.message, "DNS:www.example.com") && strstr(err.message, "CN=\"leaf\""));
    CHECK_STATUS(eval(p, chain, 2, "wild.example", true, &err), AFS_E_UNTRUSTED);
    CHECK_STATUS(eval(p, chain, 2, "a.b.wild.example", true, &err), AFS_E_UNTRUSTED);
    CHECK_STATUS(eval(p, chain, 2, "127.0.0.2", true, &err), AFS_E_UNTRUSTED);
    CHECK_STATUS(eval(p, chain, 2, "leaf", true, &err), AFS_E_UNTRUSTED);   /* no CN fallback */
    CHECK_STATUS(eval(p, chain, 2, "www.example.com", false, &err), AFS_E_UNTRUSTED);
    CHECK_ERROR(err, AFS_E_UNTRUSTED, "rule 3 (pinning mode none)");
    afs_security_policy_set_allows_invalid_certificates(p, true);
    CHECK_STATUS(eval(p, chain, 2, "www.example.com", false, &err), AFS_E_UNTRUSTED);
    CHECK_ERROR(err, AFS_E_UNTRUSTED, "rule 1");
    afs_security_policy_set_validates_domain_name(p, false);
    CHECK_STATUS(eval(p, chain, 2, "evil.example", false, &err), AFS_OK);
    afs_security_policy_free(p);

    /* Certificate mode. */
    p = afs_security_policy_new(AFS_PINNING_CERTIFICATE, &err);
    CHECK_STATUS(eval(p, chain, 2, "www.example.com", true, &err), AFS_E_UNTRUSTED);
    CHECK_ERROR(err, AFS_E_UNTRUSTED, "rule 4 (certificate pinning): the policy has no certificate pins");
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(p, intermediate.p, intermediate.n, &err), AFS_OK);
    CHECK_STATUS(eval(p, chain, 2, "www.example.com", true, &err), AFS_OK);
    CHECK_STATUS(eval(p, other_chain, 2, "other.example", true, &err), AFS_OK);
    /* Untrusted: only a pinned leaf counts. */
    CHECK_STATUS(eval(p, chain, 2, "www.example.com", false, &err), AFS_E_UNTRUSTED);
    CHECK_ERROR(err, AFS_E_UNTRUSTED, "only a pinned leaf counts");
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(p, self_signed.p, self_signed.n, &err), AFS_OK);
    afs_security_policy_set_time(p, 1700000000);  /* 2023-11-14: inside 2020-2049 */
    CHECK_STATUS(eval(p, &self_signed, 1, "self.example", false, &err), AFS_OK);
    afs_security_policy_set_time(p, 4102444800);  /* 2100 */
    CHECK_STATUS(eval(p, &self_signed, 1, "self.example", false, &err), AFS_E_UNTRUSTED);
    CHECK_ERROR(err, AFS_E_UNTRUSTED, "outside its validity");
    afs_security_policy_free(p);

    /* Public-key mode with sha256// pins. */
    p = afs_security_policy_new(AFS_PINNING_PUBLIC_KEY, &err);
    char *pin = pin_of(leaf);
    char *bad = malloc(strlen(pin) * 2 + 40);
    if (!bad) abort();
    sprintf(bad, "%s;sha256//notbase64!", pin);
    CHECK_STATUS(afs_security_policy_add_pinned_public_key_sha256(p, bad, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "entry 2");
    CHECK_STATUS(eval(p, chain, 2, "www.example.com", true, &err), AFS_E_UNTRUSTED);   /* none added */
    sprintf(bad, "%s;;%s", pin, pin);
    CHECK_STATUS(afs_security_policy_add_pinned_public_key_sha256(p, bad, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_security_policy_add_pinned_public_key_sha256(p, "sha256//AAAA", &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "not a SHA-256");
    CHECK_STATUS(afs_security_policy_add_pinned_public_key_sha256(p, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_security_policy_add_pinned_public_key_sha256(p, "sha256//\xff", &err), AFS_E_INVALID_UTF8);
    CHECK_STATUS(afs_security_policy_add_pinned_public_key_sha256(p, pin, &err), AFS_OK);
    CHECK_STATUS(eval(p, chain, 2, "www.example.com", true, &err), AFS_OK);
    CHECK_STATUS(eval(p, other_chain, 2, "other.example", true, &err), AFS_E_UNTRUSTED);
    CHECK_ERROR(err, AFS_E_UNTRUSTED, "rule 4 (public key pinning)");
    CHECK_STATUS(eval(p, chain, 2, "www.example.com", false, &err), AFS_E_UNTRUSTED);
    afs_security_policy_set_allows_invalid_certificates(p, true);
    CHECK_STATUS(eval(p, chain, 2, "www.example.com", false, &err), AFS_OK);
    /* A copy is independent. */
    afs_security_policy *c = afs_security_policy_copy(p);
    CHECK(c != NULL);
    afs_security_policy_set_allows_invalid_certificates(p, false);
    CHECK_STATUS(eval(c, chain, 2, "www.example.com", false, &err), AFS_OK);
    CHECK_STATUS(eval(p, chain, 2, "www.example.com", false, &err), AFS_E_UNTRUSTED);
    afs_security_policy_free(c);
    afs_security_policy_free(p);
    free(bad);
    free(pin);
}

static void test_certificates_and_arguments(void) {
    afs_error err;
    afs_security_policy *p = afs_security_policy_new(AFS_PINNING_CERTIFICATE, &err);
    /* PEM with two certificates pins both. */
    char *a = pem(leaf), *b = pem(other);
    char *both = malloc(strlen(a) + strlen(b) + 40);
    if (!both) abort();
    sprintf(both, "comment line\n%s%s", a, b);
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(p, (const uint8_t *)both, strlen(both), &err), AFS_OK);
    buf chain[] = {other, intermediate};
    CHECK_STATUS(eval(p, chain, 2, "other.example", false, &err), AFS_OK);
    afs_value *list = NULL;
    CHECK_STATUS(afs_certificate_read((const uint8_t *)both, strlen(both), &list, &err), AFS_OK);
    CHECK(afs_value_count(list) == 2);
    CHECK_STR(afs_value_get_string(afs_value_get(afs_value_at(list, 0), "common_name"), NULL), "leaf");
    CHECK_STR(afs_value_get_string(afs_value_at(afs_value_get(afs_value_at(list, 0), "dns_names"), 1), NULL), "*.wild.example");
    CHECK(afs_value_get_int(afs_value_get(afs_value_at(list, 1), "not_after")) == 2524607999);
    afs_value_free(list);
    /* Malformed: truncated, trailing bytes, bad PEM; messages name the field and offset. */
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(p, leaf.p, leaf.n - 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "byte offset");
    uint8_t *longer = malloc(leaf.n + 1);
    if (!longer) abort();
    memcpy(longer, leaf.p, leaf.n);
    longer[leaf.n] = 0;
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(p, longer, leaf.n + 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "unexpected bytes after");
    free(longer);
    both[strlen("comment line\n") + 40] = '*';
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(p, (const uint8_t *)both, strlen(both), &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "PEM: the CERTIFICATE block at line 2 is not valid base64");
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(p, NULL, 0, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(p, NULL, 5, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(NULL, leaf.p, leaf.n, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_certificate_read(leaf.p, leaf.n, NULL, &err), AFS_E_INVALID_ARGUMENT);
    list = (afs_value *)1;
    CHECK_STATUS(afs_certificate_read((const uint8_t *)"\x30\x80", 2, &list, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(list == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "indefinite length");
    free(a); free(b); free(both);

    /* evaluate's arguments. */
    const uint8_t *der[2] = {leaf.p, NULL};
    size_t len[2] = {leaf.n, 5};
    CHECK_STATUS(afs_security_policy_evaluate(p, der, len, 0, NULL, true, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "count is 0");
    CHECK_STATUS(afs_security_policy_evaluate(p, NULL, len, 1, NULL, true, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_security_policy_evaluate(p, der, NULL, 1, NULL, true, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_security_policy_evaluate(p, der, len, 2, NULL, true, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "chain_der[1] is NULL");
    CHECK_STATUS(afs_security_policy_evaluate(p, der, len, 65, NULL, true, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_security_policy_evaluate(p, der, len, (size_t)-1, NULL, true, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_security_policy_evaluate(p, der, len, 1, "\xff.example", true, &err), AFS_E_INVALID_UTF8);
    CHECK_STATUS(afs_security_policy_evaluate(p, der, len, 1, "a..example", true, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_security_policy_evaluate(NULL, der, len, 1, NULL, true, &err), AFS_E_INVALID_ARGUMENT);
    /* A wrong-kind handle is refused, not a crash. */
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    CHECK_STATUS(afs_security_policy_evaluate((const afs_security_policy *)(void *)s, der, len, 1, NULL, true, &err),
                 AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "wrong kind");
    afs_security_policy_set_time((afs_security_policy *)(void *)s, 0);
    afs_security_policy_free((afs_security_policy *)(void *)s);   /* ignored */
    CHECK(afs_security_policy_copy((afs_security_policy *)(void *)s) == NULL);
    afs_serializer_free(s);
    CHECK(afs_security_policy_new((afs_pinning_mode)7, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "not an afs_pinning_mode");
    afs_security_policy_set_allows_invalid_certificates(NULL, true);
    afs_security_policy_set_validates_domain_name(NULL, true);
    afs_security_policy_set_time(NULL, 0);
    CHECK(afs_security_policy_copy(NULL) == NULL);
    afs_security_policy_free(NULL);
    afs_security_policy_free(p);
}

/* afs_security_limits: lower and higher limits, the depth ceiling, copies keep them. */
static void test_limits(void) {
    afs_error err;
    afs_security_policy *p = afs_security_policy_new(AFS_PINNING_CERTIFICATE, &err);
    afs_security_limits lim = {0};
    lim.max_pins = 1;
    lim.max_chain = 1;
    CHECK_STATUS(afs_security_policy_set_limits(p, &lim, &err), AFS_OK);
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(p, leaf.p, leaf.n, &err), AFS_OK);
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(p, other.p, other.n, &err), AFS_E_LIMIT);
    CHECK_ERROR(err, AFS_E_LIMIT, "at most 1 pins");
    buf two[] = {leaf, intermediate};
    CHECK_STATUS(eval(p, two, 2, NULL, true, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "more than the limit of 1 certificates");
    afs_security_policy *c = afs_security_policy_copy(p);
    CHECK_STATUS(eval(c, two, 2, NULL, true, &err), AFS_E_INVALID_ARGUMENT);
    afs_security_policy_free(c);
    lim.max_certificate_bytes = leaf.n - 1;
    CHECK_STATUS(afs_security_policy_set_limits(p, &lim, &err), AFS_OK);
    CHECK_STATUS(eval(p, two, 1, NULL, true, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "chain[0]");
    lim.max_der_depth = 257;
    CHECK_STATUS(afs_security_policy_set_limits(p, &lim, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "max_der_depth 257");
    CHECK_STATUS(afs_security_policy_set_limits(p, NULL, &err), AFS_OK);   /* the defaults */
    CHECK_STATUS(eval(p, two, 2, NULL, true, &err), AFS_OK);
    CHECK_STATUS(afs_security_policy_set_limits(NULL, &lim, &err), AFS_E_INVALID_ARGUMENT);
    afs_security_policy_free(p);

    afs_value *list = NULL;
    afs_security_limits read_lim = {0};
    read_lim.max_der_depth = 2;
    CHECK_STATUS(afs_certificate_read_with_limits(leaf.p, leaf.n, &read_lim, &list, &err), AFS_E_INVALID_ARGUMENT);
    CHECK(list == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "nested deeper than 2 levels");
    CHECK_STATUS(afs_certificate_read_with_limits(leaf.p, leaf.n, NULL, &list, &err), AFS_OK);
    CHECK(afs_value_count(list) == 1);
    afs_value_free(list);
}

static afs_security_policy *shared;

static void *worker(void *arg) {
    (void)arg;
    buf chain[] = {leaf, intermediate};
    buf wrong[] = {other, intermediate};
    long failures = 0;
    for (int i = 0; i < 300; i++) {
        afs_error err;
        if (eval(shared, chain, 2, "www.example.com", true, &err) != AFS_OK) failures++;
        if (eval(shared, wrong, 2, "other.example", true, &err) != AFS_E_UNTRUSTED) failures++;
    }
    return (void *)failures;
}

static void test_threads(void) {
    afs_error err;
    shared = afs_security_policy_new(AFS_PINNING_PUBLIC_KEY, &err);
    CHECK_STATUS(afs_security_policy_add_pinned_certificate(shared, leaf.p, leaf.n, &err), AFS_OK);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        CHECK(r == NULL);
    }
    afs_security_policy_free(shared);
}

int main(void) {
    static const char *const leaf_names[] = {"www.example.com", "*.wild.example"};
    static const char *const other_names[] = {"other.example"};
    static const char *const self_names[] = {"self.example"};
    static const uint8_t localhost[] = {127, 0, 0, 1};
    leaf = make_cert("leaf", leaf_names, 2, localhost, 1, "200101000000Z", "20491231235959Z");
    intermediate = make_cert("intermediate", NULL, 0, NULL, 2, "200101000000Z", "20491231235959Z");
    other = make_cert("other", other_names, 1, NULL, 3, "200101000000Z", "20491231235959Z");
    self_signed = make_cert("self", self_names, 1, NULL, 4, "200101000000Z", "20491231235959Z");
    test_rules();
    test_certificates_and_arguments();
    test_limits();
    test_threads();
    free(leaf.p); free(intermediate.p); free(other.p); free(self_signed.p);
    return check_summary("test_security");
}
