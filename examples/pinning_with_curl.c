/*
 * pinning_with_curl — a GET with libcurl (OpenSSL backend) whose server is checked by an
 * afs_security_policy INSIDE the TLS handshake: CURLOPT_SSL_CTX_FUNCTION installs an OpenSSL
 * verify callback that, at the leaf, hands the chain (DER, leaf first) and OpenSSL's verdict
 * to afs_security_policy_evaluate. A refused server fails the handshake, so it never
 * receives a byte of the request.
 *
 *   usage: pinning_with_curl [options] URL
 *     --mode none|public-key|certificate   pinning mode (default none)
 *     --pin-cert FILE                      pin a certificate (DER or PEM; repeatable)
 *     --pin-key sha256//BASE64[;...]       pin public keys (repeatable)
 *     --cacert FILE                        the CA file OpenSSL verifies against
 *     --allow-invalid                      the policy's allows_invalid_certificates
 *     --no-domain                          the policy's validates_domain_name off
 *     --resolve HOST:PORT:ADDRESS          as curl's --resolve (test names on 127.0.0.1)
 *
 * The policy replaces libcurl's host-name check (CURLOPT_SSL_VERIFYHOST 0: the policy
 * checks the host, RFC 9525). libcurl's peer verification stays on: OpenSSL verifies the
 * chain, and its verdict is the policy's chain_trusted; when the policy accepts an
 * untrusted chain (a pinned self-signed leaf in certificate mode, or invalid certificates
 * allowed) the callback clears OpenSSL's error so that libcurl goes on.
 * Exit status: 0 for a 2xx answer (its body on standard output), 2 when the policy refused
 * the server (its message on standard error), 1 for other failures.
 *
 *   cc -o pinning_with_curl pinning_with_curl.c -lafserialization -lcurl -lssl -lcrypto
 */
#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "afserialization.h"

/* What the verify callback needs: OpenSSL calls it without a user pointer, and this program
 * makes one transfer at a time. */
static struct {
    afs_security_policy *policy;
    char *host;
    int chain_ok;        /* OpenSSL's verdict so far (every preverify_ok of this handshake) */
    int refused;         /* the policy refused: its error below */
    afs_error err;
} state;

/* OpenSSL's verify callback: called for each certificate from the anchor down to the leaf
 * (and once more per error). The policy decides at depth 0 over the whole chain. */
static int verify_cb(int preverify_ok, X509_STORE_CTX *ctx) {
    if (!preverify_ok) state.chain_ok = 0;
    if (X509_STORE_CTX_get_error_depth(ctx) != 0) {
        /* Not the leaf yet: go on; the leaf's call decides (and clears the error when the
         * policy accepts). */
        X509_STORE_CTX_set_error(ctx, X509_V_OK);
        return 1;
    }
    STACK_OF(X509) *chain = X509_STORE_CTX_get0_chain(ctx);
    int n = chain ? sk_X509_num(chain) : 0;
    if (n <= 0) { state.refused = 1; return 0; }
    if (n > 64) n = 64;
    unsigned char *der[64] = {0};
    const uint8_t *ders[64];
    size_t lens[64];
    int ok = 1;
    for (int i = 0; i < n; i++) {
        int len = i2d_X509(sk_X509_value(chain, i), &der[i]);
        if (len <= 0) { ok = 0; n = i; break; }
        ders[i] = der[i];
        lens[i] = (size_t)len;
    }
    afs_status st = ok ? afs_security_policy_evaluate(state.policy, ders, lens, (size_t)n, state.host,
                                                      state.chain_ok != 0, &state.err)
                       : AFS_E_NO_MEMORY;
    for (int i = 0; i < n; i++) OPENSSL_free(der[i]);
    if (st != AFS_OK) {
        state.refused = 1;
        if (!ok) snprintf(state.err.message, sizeof state.err.message, "could not encode the chain");
        X509_STORE_CTX_set_error(ctx, X509_V_ERR_APPLICATION_VERIFICATION);
        return 0;
    }
    X509_STORE_CTX_set_error(ctx, X509_V_OK);
    return 1;
}

/* CURLOPT_SSL_CTX_FUNCTION: runs before each handshake with libcurl's SSL_CTX. */
static CURLcode ssl_ctx_cb(CURL *curl, void *ssl_ctx, void *userptr) {
    (void)curl;
    (void)userptr;
    state.chain_ok = 1;
    state.refused = 0;
    SSL_CTX_set_verify((SSL_CTX *)ssl_ctx, SSL_VERIFY_PEER, verify_cb);
    return CURLE_OK;
}

static size_t write_body(char *p, size_t size, size_t n, void *userdata) {
    (void)userdata;
    return fwrite(p, size, n, stdout);
}

static int fail(const char *what, afs_error *err) {
    fprintf(stderr, "pinning_with_curl: %s: %s: %s\n", what, afs_status_name(err->code), err->message);
    return 1;
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *bigger = realloc(buf, cap *= 2);
            if (!bigger) { free(buf); buf = NULL; }
            buf = bigger;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv) {
    afs_pinning_mode mode = AFS_PINNING_NONE;
    const char *url = NULL, *cacert = NULL;
    struct curl_slist *resolve = NULL;
    int allow_invalid = 0, no_domain = 0;
    afs_error err;
    /* The mode comes first: the policy is made once it is known. */
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--mode") == 0) {
            const char *m = argv[++i];
            if (strcmp(m, "public-key") == 0) mode = AFS_PINNING_PUBLIC_KEY;
            else if (strcmp(m, "certificate") == 0) mode = AFS_PINNING_CERTIFICATE;
            else if (strcmp(m, "none") != 0) { fprintf(stderr, "pinning_with_curl: unknown mode %s\n", m); return 1; }
        }
    }
    state.policy = afs_security_policy_new(mode, &err);
    if (!state.policy) return fail("afs_security_policy_new", &err);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (strcmp(a, "--mode") == 0 && has) { i++; continue; }
        if (strcmp(a, "--pin-cert") == 0 && has) {
            size_t len = 0;
            unsigned char *data = read_file(argv[++i], &len);
            if (!data) { perror(argv[i]); return 1; }
            afs_status st = afs_security_policy_add_pinned_certificate(state.policy, data, len, &err);
            free(data);
            if (st != AFS_OK) return fail(argv[i], &err);
        } else if (strcmp(a, "--pin-key") == 0 && has) {
            if (afs_security_policy_add_pinned_public_key_sha256(state.policy, argv[++i], &err) != AFS_OK)
                return fail("--pin-key", &err);
        } else if (strcmp(a, "--cacert") == 0 && has) {
            cacert = argv[++i];
        } else if (strcmp(a, "--resolve") == 0 && has) {
            resolve = curl_slist_append(resolve, argv[++i]);
        } else if (strcmp(a, "--allow-invalid") == 0) {
            allow_invalid = 1;
        } else if (strcmp(a, "--no-domain") == 0) {
            no_domain = 1;
        } else if (a[0] != '-' && !url) {
            url = a;
        } else {
            fprintf(stderr, "usage: pinning_with_curl [--mode M] [--pin-cert FILE] [--pin-key PINS] [--cacert FILE]\n"
                            "       [--allow-invalid] [--no-domain] [--resolve HOST:PORT:ADDR] URL\n");
            return 1;
        }
    }
    if (!url) { fprintf(stderr, "pinning_with_curl: no URL\n"); return 1; }
    afs_security_policy_set_allows_invalid_certificates(state.policy, allow_invalid);
    afs_security_policy_set_validates_domain_name(state.policy, !no_domain);

    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLU *u = curl_url();
    if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &state.host, 0) != CURLUE_OK) {
        fprintf(stderr, "pinning_with_curl: cannot read the host of %s\n", url);
        return 1;
    }
    curl_url_cleanup(u);

    CURL *curl = curl_easy_init();
    if (!curl) { fprintf(stderr, "pinning_with_curl: curl_easy_init failed\n"); return 1; }
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);   /* the policy checks the host */
    curl_easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, ssl_ctx_cb);
    if (cacert) curl_easy_setopt(curl, CURLOPT_CAINFO, cacert);
    if (resolve) curl_easy_setopt(curl, CURLOPT_RESOLVE, resolve);

    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    int exit_code = 0;
    if (state.refused) {
        fprintf(stderr, "pinning_with_curl: refused: %s: %s\n", afs_status_name(state.err.code), state.err.message);
        exit_code = 2;
    } else if (rc != CURLE_OK) {
        fprintf(stderr, "pinning_with_curl: %s\n", curl_easy_strerror(rc));
        exit_code = 1;
    } else if (status < 200 || status > 299) {
        fprintf(stderr, "pinning_with_curl: HTTP status %ld\n", status);
        exit_code = 1;
    }
    curl_easy_cleanup(curl);
    curl_slist_free_all(resolve);
    curl_free(state.host);
    afs_security_policy_free(state.policy);
    curl_global_cleanup();
    return exit_code;
}
