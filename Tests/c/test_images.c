/* Images and the rest of the response family (header section 12) and dates (section 3):
 * the image result for every format from real files (image_samples.h, written by Pillow
 * 13: small images of each format; XBM text is written here), truncation, a type that
 * disagrees with the bytes, the pixel limit, the scale; empty-response codes and HEAD,
 * structured suffixes, problem documents, the XSSI prefix; date values through property
 * lists (XML and binary, both ways), JSON, query strings, pickles; UTF-16 XML property
 * lists; binary plists writing equal containers once. Every status provoked is checked
 * with its message. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "image_samples.h"
#include <stdint.h>
#include <stdlib.h>

static long long int_at(const afs_value *d, const char *k) { return (long long)afs_value_get_int(afs_value_get(d, k)); }
static double double_at(const afs_value *d, const char *k) { return afs_value_get_double(afs_value_get(d, k)); }
static const char *string_at(const afs_value *d, const char *k) { return afs_value_get_string(afs_value_get(d, k), NULL); }

static void check_image(afs_response_serializer *rs, const char *type, const unsigned char *bytes, size_t len,
                        const char *format, long long w, long long h, long long frames) {
    afs_value *img = NULL;
    afs_error err;
    CHECK_STATUS(afs_response_object(rs, 200, type, bytes, len, &img, &err), AFS_OK);
    if (!img) return;
    CHECK_STR(string_at(img, "format"), format);
    CHECK(int_at(img, "width") == w);
    CHECK(int_at(img, "height") == h);
    CHECK(int_at(img, "frames") == frames);
    size_t n = 0;
    const uint8_t *data = afs_value_get_data(afs_value_get(img, "data"), &n);
    CHECK(n == len && data && memcmp(data, bytes, len) == 0);
    CHECK(afs_value_count(img) == 8);
    CHECK_STR(afs_value_key_at(img, 3, NULL), "scale");
    /* every prefix is a truncated copy: refused, naming a byte offset (or the signature) */
    int refused = 0, tried = 0;
    for (size_t k = 1; k < len; k++) {
        afs_value *v = NULL;
        tried++;
        afs_status st = afs_response_object(rs, 200, type, bytes, k, &v, &err);
        if (st == AFS_E_INVALID_IMAGE && v == NULL && strstr(err.message, "byte offset")) refused++;
        else fprintf(stderr, "%s prefix %zu: %s %s\n", format, k, afs_status_name(st), err.message);
        afs_value_free(v);
    }
    CHECK(refused == tried);
    afs_value_free(img);
}

static void test_every_format(void) {
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_IMAGE);
    CHECK(rs != NULL);
    check_image(rs, "image/png", png_3x2, sizeof png_3x2, "png", 3, 2, 1);
    check_image(rs, "image/png", apng_3x2_3, sizeof apng_3x2_3, "png", 3, 2, 3);
    check_image(rs, "image/gif", gif_3x2_3, sizeof gif_3x2_3, "gif", 3, 2, 3);
    check_image(rs, "image/jpeg", jpeg_3x2, sizeof jpeg_3x2, "jpeg", 3, 2, 1);
    check_image(rs, "image/bmp", bmp_3x2, sizeof bmp_3x2, "bmp", 3, 2, 1);
    check_image(rs, "image/x-bmp", bmp_3x2, sizeof bmp_3x2, "bmp", 3, 2, 1);
    check_image(rs, "image/tiff", tiff_3x2_2, sizeof tiff_3x2_2, "tiff", 3, 2, 2);
    check_image(rs, "image/x-icon", ico_16_2, sizeof ico_16_2, "ico", 16, 16, 2);
    check_image(rs, "image/ico", ico_16_2, sizeof ico_16_2, "ico", 16, 16, 2);
    check_image(rs, "image/webp", webp_3x2, sizeof webp_3x2, "webp", 3, 2, 1);
    check_image(rs, "image/webp", webp_3x2_3, sizeof webp_3x2_3, "webp", 3, 2, 3);
    static const char xbm[] = "#define x_width 9\n#define x_height 2\n"
                              "static unsigned char x_bits[] = {\n 0x01, 0x00, 0xff, 0x01 };\n";
    afs_value *img = NULL;
    afs_error err;
    CHECK_STATUS(afs_response_object(rs, 200, "image/x-xbitmap", xbm, strlen(xbm), &img, &err), AFS_OK);
    CHECK_STR(string_at(img, "format"), "xbm");
    CHECK(int_at(img, "width") == 9 && int_at(img, "height") == 2);
    afs_value_free(img);
    img = NULL;
    static const char xbm_short[] = "#define x_width 9\n#define x_height 2\nstatic char x_bits[] = { 0x01, 0x00, 0xff };\n";
    CHECK_STATUS(afs_response_object(rs, 200, "image/x-xbitmap", xbm_short, strlen(xbm_short), &img, &err), AFS_E_INVALID_IMAGE);
    CHECK_ERROR(err, AFS_E_INVALID_IMAGE, "3 values in the bits array, 4 expected for 9x2");
    afs_response_serializer_free(rs);
}

static void test_rules_of_images(void) {
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_IMAGE);
    afs_value *img = NULL;
    afs_error err;
    /* a type that disagrees with the bytes */
    CHECK_STATUS(afs_response_object(rs, 200, "image/jpeg", png_3x2, sizeof png_3x2, &img, &err), AFS_E_INVALID_IMAGE);
    CHECK_STR(err.message, "content type image/jpeg says JPEG but the body is a PNG image");
    CHECK(img == NULL);
    /* corrupt: a wrong CRC in IHDR */
    unsigned char bad[sizeof png_3x2];
    memcpy(bad, png_3x2, sizeof bad);
    bad[29] ^= 0x40;
    CHECK_STATUS(afs_response_object(rs, 200, "image/png", bad, sizeof bad, &img, &err), AFS_E_INVALID_IMAGE);
    CHECK_STR(err.message, "not a valid PNG image: chunk 'IHDR' has a wrong CRC at byte offset 29");
    /* not an image at all */
    CHECK_STATUS(afs_response_object(rs, 200, "image/png", "hello", 5, &img, &err), AFS_E_INVALID_IMAGE);
    CHECK_ERROR(err, AFS_E_INVALID_IMAGE, "the body is not a PNG image (first bytes 68 65 6c 6c 6f): no known signature at byte offset 0");
    /* unacceptable type: nothing decoded */
    CHECK_STATUS(afs_response_object(rs, 200, "text/html", png_3x2, sizeof png_3x2, &img, &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    /* scale */
    CHECK_STATUS(afs_response_serializer_set_image_scale(rs, 2.0, &err), AFS_OK);
    CHECK_STATUS(afs_response_object(rs, 200, "image/png", png_3x2, sizeof png_3x2, &img, &err), AFS_OK);
    CHECK(double_at(img, "scale") == 2.0 && double_at(img, "point_width") == 1.5 && double_at(img, "point_height") == 1.0);
    afs_value_free(img);
    img = NULL;
    CHECK_STATUS(afs_response_serializer_set_image_scale(rs, 0.0, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "image scale 0.0 is not a finite number above 0");
    CHECK_STATUS(afs_response_serializer_set_image_scale(NULL, 1.0, &err), AFS_E_INVALID_ARGUMENT);
    /* the pixel limit: 6 pixels pass at 6, not at 5 */
    CHECK_STATUS(afs_response_serializer_set_max_image_pixels(rs, 6, &err), AFS_OK);
    CHECK_STATUS(afs_response_object(rs, 200, "image/png", png_3x2, sizeof png_3x2, &img, &err), AFS_OK);
    afs_value_free(img);
    img = NULL;
    CHECK_STATUS(afs_response_serializer_set_max_image_pixels(rs, 5, &err), AFS_OK);
    CHECK_STATUS(afs_response_object(rs, 200, "image/png", png_3x2, sizeof png_3x2, &img, &err), AFS_E_LIMIT);
    CHECK_STR(err.message, "the PNG image is 3x2 pixels, more than the limit of 5 pixels");
    CHECK_STATUS(afs_response_serializer_set_max_image_pixels(rs, 0, &err), AFS_OK);  /* default again */
    /* an unacceptable status: the image is the error document */
    CHECK_STATUS(afs_response_object(rs, 404, "image/gif", gif_3x2_3, sizeof gif_3x2_3, &img, &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK(img != NULL && int_at(img, "frames") == 3);
    afs_value_free(img);
    img = NULL;
    /* a compound serializer with an image member */
    const afs_response_serializer *members[2] = { afs_response_serializer_new(AFS_RESPONSE_JSON), rs };
    afs_response_serializer *c = afs_response_serializer_new_compound(members, 2, &err);
    CHECK_STATUS(afs_response_object(c, 200, "image/webp", webp_3x2, sizeof webp_3x2, &img, &err), AFS_OK);
    CHECK_STR(string_at(img, "format"), "webp");
    afs_value_free(img);
    afs_response_serializer_free(c);
    afs_response_serializer_free((afs_response_serializer *)members[0]);
    afs_response_serializer_free(rs);
}

static void test_empty_responses(void) {
    afs_error err;
    afs_value *v = NULL;
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    /* AFNetworking's rule by default: any empty body is no object */
    CHECK_STATUS(afs_response_object(rs, 200, "application/json", "", 0, &v, &err), AFS_OK);
    CHECK(v == NULL);
    const int codes[] = { 204, 205 };
    CHECK_STATUS(afs_response_serializer_set_empty_response_codes(rs, codes, 2, &err), AFS_OK);
    CHECK_STATUS(afs_response_object(rs, 204, "application/json", "", 0, &v, &err), AFS_OK);
    CHECK(v == NULL);
    CHECK_STATUS(afs_response_object(rs, 200, "application/json", "", 0, &v, &err), AFS_E_INVALID_JSON);
    CHECK_STR(err.message, "no JSON value: the body is empty: status 200 is not one of the empty-response codes (204, 205) and the request is not HEAD");
    CHECK_STATUS(afs_response_object_for_method(rs, "head", 200, "application/json", "", 0, &v, &err), AFS_OK);
    CHECK(v == NULL);
    CHECK_STATUS(afs_response_object_for_method(rs, "GET", 200, "application/json", "", 0, &v, &err), AFS_E_INVALID_JSON);
    CHECK_STATUS(afs_response_object_for_method(rs, NULL, 200, "application/json", "[1]", 3, &v, &err), AFS_OK);
    CHECK(afs_value_count(v) == 1);
    afs_value_free(v);
    v = NULL;
    const int bad[] = { 99 };
    CHECK_STATUS(afs_response_serializer_set_empty_response_codes(rs, bad, 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "empty response code 0 (99) is not a status code (100 to 999)");
    CHECK_STATUS(afs_response_serializer_set_empty_response_codes(rs, NULL, 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_response_serializer_set_empty_response_codes(rs, NULL, 0, &err), AFS_OK);  /* back to AFNetworking's */
    CHECK_STATUS(afs_response_object(rs, 200, "application/json", "", 0, &v, &err), AFS_OK);
    afs_response_serializer_free(rs);

    afs_response_serializer *ps = afs_response_serializer_new(AFS_RESPONSE_PLIST);
    CHECK_STATUS(afs_response_serializer_set_empty_response_codes(ps, codes, 2, &err), AFS_OK);
    CHECK_STATUS(afs_response_object(ps, 200, "application/x-plist", "", 0, &v, &err), AFS_E_INVALID_PLIST);
    CHECK_ERROR(err, AFS_E_INVALID_PLIST, "no property list: the body is empty");
    afs_response_serializer_free(ps);
    afs_response_serializer *is = afs_response_serializer_new(AFS_RESPONSE_IMAGE);
    CHECK_STATUS(afs_response_serializer_set_empty_response_codes(is, codes, 2, &err), AFS_OK);
    CHECK_STATUS(afs_response_object(is, 200, "image/png", "", 0, &v, &err), AFS_E_INVALID_IMAGE);
    CHECK_STATUS(afs_response_object(is, 205, "image/png", "", 0, &v, &err), AFS_OK);
    afs_response_serializer_free(is);
    afs_response_serializer *hs = afs_response_serializer_new(AFS_RESPONSE_HTTP);
    CHECK_STATUS(afs_response_serializer_set_empty_response_codes(hs, codes, 2, &err), AFS_OK);
    CHECK_STATUS(afs_response_object(hs, 200, NULL, "", 0, &v, &err), AFS_OK);
    CHECK(v == NULL);
    afs_response_serializer_free(hs);
}

static void test_suffixes_problems_and_xssi(void) {
    afs_error err;
    afs_value *v = NULL;
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    CHECK_STATUS(afs_response_object(rs, 200, "application/vnd.api+json", "{}", 2, &v, &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    afs_response_serializer_set_accepts_structured_suffix(rs, true);
    CHECK_STATUS(afs_response_object(rs, 200, "application/vnd.api+json; charset=utf-8", "{}", 2, &v, &err), AFS_OK);
    afs_value_free(v);
    v = NULL;
    CHECK_STATUS(afs_response_object(rs, 200, "application/+json", "{}", 2, &v, &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    CHECK_STATUS(afs_response_object(rs, 200, "application/atom+xml", "{}", 2, &v, &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    afs_response_serializer_set_accepts_structured_suffix(rs, false);
    /* a problem document with an unacceptable status: decoded and attached */
    const char *problem = "{\"type\":\"about:blank\",\"title\":\"Not Found\",\"status\":404}";
    CHECK_STATUS(afs_response_object(rs, 404, "application/problem+json", problem, strlen(problem), &v, &err), AFS_E_UNACCEPTABLE_STATUS);
    CHECK_STR(err.message, "Request failed: not found (404)");
    CHECK_STR(string_at(v, "title"), "Not Found");
    afs_value_free(v);
    v = NULL;
    /* with an acceptable status the type is still refused (no option, not listed) */
    CHECK_STATUS(afs_response_object(rs, 200, "application/problem+json", problem, strlen(problem), &v, &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    /* XSSI */
    const char *x = ")]}',\n{\"a\":1}";
    CHECK_STATUS(afs_response_object(rs, 200, "application/json", x, strlen(x), &v, &err), AFS_E_INVALID_JSON);
    afs_response_serializer_set_strips_xssi_prefix(rs, true);
    CHECK_STATUS(afs_response_object(rs, 200, "application/json", x, strlen(x), &v, &err), AFS_OK);
    CHECK(int_at(v, "a") == 1);
    afs_value_free(v);
    v = NULL;
    CHECK_STATUS(afs_response_object(rs, 200, "application/json", ")]}'\r\n[2]", 9, &v, &err), AFS_OK);
    CHECK(afs_value_get_int(afs_value_at(v, 0)) == 2);
    afs_value_free(v);
    v = NULL;
    CHECK_STATUS(afs_response_object(rs, 200, "application/json", ")]}'\n[2,]", 9, &v, &err), AFS_E_INVALID_JSON);
    CHECK_ERROR(err, AFS_E_INVALID_JSON, "byte offset 8");  /* offsets count the prefix */
    afs_response_serializer_set_strips_xssi_prefix(NULL, true);   /* ignored */
    afs_response_serializer_set_accepts_structured_suffix(NULL, true);
    afs_response_serializer_free(rs);
}

/* The body of a plist request for `params` in `format`. */
static uint8_t *plist_body(const afs_value *params, int format, size_t *len) {
    afs_error err;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_PLIST);
    CHECK_STATUS(afs_serializer_set_plist_format(s, format, &err), AFS_OK);
    afs_request *r = afs_serializer_request(s, "POST", "http://example.com/", params, &err);
    CHECK(r != NULL);
    const uint8_t *b = afs_request_body(r, len);
    uint8_t *copy = malloc(*len + 1);  /* NUL-terminated: the XML form is searched as text */
    if (b) memcpy(copy, b, *len);
    copy[*len] = 0;
    afs_request_free(r);
    afs_serializer_free(s);
    return copy;
}

static void test_dates(void) {
    afs_error err;
    afs_value *d = afs_value_new_date(1577934245.25);
    CHECK(afs_value_kind_of(d) == AFS_VALUE_DATE && AFS_VALUE_DATE == 9);
    CHECK(afs_value_get_date(d) == 1577934245.25);
    CHECK(afs_value_get_double(d) == 0 && afs_value_get_int(d) == 0);
    CHECK(afs_value_get_date(NULL) == 0);
    afs_value *i = afs_value_new_int(5);
    CHECK(afs_value_get_date(i) == 0);
    afs_value_free(i);
    afs_value *root = afs_value_new_dict();
    CHECK_STATUS(afs_value_dict_set(root, "when", AFS_NTS, d, &err), AFS_OK);
    /* JSON and query strings: ISO 8601 text */
    afs_serializer *js = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_request *r = afs_serializer_request(js, "POST", "http://example.com/", root, &err);
    size_t n = 0;
    const uint8_t *b = afs_request_body(r, &n);
    CHECK(n == strlen("{\"when\":\"2020-01-02T03:04:05.25Z\"}") && memcmp(b, "{\"when\":\"2020-01-02T03:04:05.25Z\"}", n) == 0);
    afs_request_free(r);
    afs_serializer_free(js);
    char *q = afs_query_string(root, &err);
    CHECK_STR(q, "when=2020-01-02T03%3A04%3A05.25Z");
    afs_free(q);
    /* property lists: XML <date> (whole seconds) and binary 0x33 (exact), read back as dates */
    afs_response_serializer *ps = afs_response_serializer_new(AFS_RESPONSE_PLIST);
    for (int f = 0; f < 2; f++) {
        uint8_t *body = plist_body(root, f ? AFS_PLIST_BINARY : AFS_PLIST_XML, &n);
        if (!f) CHECK(strstr((const char *)body, "<date>2020-01-02T03:04:05Z</date>") != NULL);
        else CHECK(memchr(body, 0x33, n) != NULL);
        afs_value *back = NULL;
        CHECK_STATUS(afs_response_object(ps, 200, "application/x-plist", body, n, &back, &err), AFS_OK);
        const afs_value *w = afs_value_get(back, "when");
        CHECK(afs_value_kind_of(w) == AFS_VALUE_DATE);
        CHECK(afs_value_get_date(w) == (f ? 1577934245.25 : 1577934245.0));
        afs_value_free(back);
        free(body);
    }
    /* a date outside the years 1 to 9999 cannot be written as text */
    afs_value *far = afs_value_new_dict();
    CHECK_STATUS(afs_value_dict_set(far, "x", AFS_NTS, afs_value_new_date(1e15), &err), AFS_OK);
    afs_serializer *xs = afs_serializer_new(AFS_SERIALIZER_PLIST);
    CHECK(afs_serializer_request(xs, "POST", "http://example.com/", far, &err) == NULL);
    CHECK_ERROR(err, AFS_E_INVALID_PLIST, "outside the years 1 to 9999");
    afs_serializer_free(xs);
    afs_value_free(far);
    /* pickles carry dates both ways */
    size_t plen = 0;
    uint8_t *p = afs_value_to_pickle(root, &plen, &err);
    CHECK(p != NULL);
    afs_value *again = afs_value_from_pickle(p, plen, &err);
    CHECK(afs_value_get_date(afs_value_get(again, "when")) == 1577934245.25);
    afs_value_free(again);
    afs_free(p);
    /* copies and equality keep the kind */
    afs_value *copy = afs_value_copy(root);
    CHECK(afs_value_kind_of(afs_value_get(copy, "when")) == AFS_VALUE_DATE);
    afs_value_free(copy);
    afs_value *set = afs_value_new_set();
    CHECK_STATUS(afs_value_append(set, afs_value_new_date(1), &err), AFS_OK);
    CHECK_STATUS(afs_value_append(set, afs_value_new_date(1), &err), AFS_OK);
    CHECK_STATUS(afs_value_append(set, afs_value_new_double(1), &err), AFS_OK);
    CHECK(afs_value_count(set) == 2);
    afs_value_free(set);
    afs_value_free(root);
    afs_response_serializer_free(ps);
}

static void test_utf16_plists_and_shared_containers(void) {
    afs_error err;
    const char *xml = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><plist version=\"1.0\"><array><string>z\xc3\xab</string>"
                      "<date>2001-01-01T00:00:00Z</date></array></plist>";
    /* as UTF-16LE with a BOM and as UTF-16BE without one */
    for (int be = 0; be < 2; be++) {
        size_t n = strlen(xml);
        uint8_t *u = malloc(2 * n + 2);
        size_t k = 0;
        if (!be) { u[k++] = 0xFF; u[k++] = 0xFE; }
        for (size_t j = 0; j < n; j++) {
            unsigned c = (unsigned char)xml[j];
            if (c == 0xC3) { c = ((c & 0x1F) << 6) | ((unsigned char)xml[++j] & 0x3F); }
            u[k++] = be ? (uint8_t)(c >> 8) : (uint8_t)c;
            u[k++] = be ? (uint8_t)c : (uint8_t)(c >> 8);
        }
        afs_response_serializer *ps = afs_response_serializer_new(AFS_RESPONSE_PLIST);
        afs_value *v = NULL;
        CHECK_STATUS(afs_response_object(ps, 200, "application/x-plist", u, k, &v, &err), AFS_OK);
        CHECK_STR(afs_value_get_string(afs_value_at(v, 0), NULL), "z\xc3\xab");
        CHECK(afs_value_get_date(afs_value_at(v, 1)) == 978307200.0);
        afs_value_free(v);
        v = NULL;
        u[k - 2] = 0;   /* an odd byte count after cutting one */
        CHECK_STATUS(afs_response_object(ps, 200, "application/x-plist", u, k - 1, &v, &err), AFS_E_INVALID_PLIST);
        CHECK_ERROR(err, AFS_E_INVALID_PLIST, "UTF-16 text of an odd number of bytes");
        afs_response_serializer_free(ps);
        free(u);
    }
    /* 1,000 references to one [12, 345]: written once (plistlib writes 1,000 refs in < 1,100 bytes) */
    afs_value *list = afs_value_new_array();
    for (int j = 0; j < 1000; j++) {
        afs_value *pair = afs_value_append_new_array(list, &err);
        afs_value_append(pair, afs_value_new_int(12), &err);
        afs_value_append(pair, afs_value_new_int(345), &err);
    }
    afs_value *root = afs_value_new_dict();
    afs_value_dict_set(root, "l", AFS_NTS, list, &err);
    size_t n = 0;
    uint8_t *body = plist_body(root, AFS_PLIST_BINARY, &n);
    CHECK(n < 1100);
    afs_response_serializer *ps = afs_response_serializer_new(AFS_RESPONSE_PLIST);
    afs_value *back = NULL;
    CHECK_STATUS(afs_response_object(ps, 200, "application/x-plist", body, n, &back, &err), AFS_OK);
    const afs_value *l = afs_value_get(back, "l");
    CHECK(afs_value_count(l) == 1000);
    CHECK(afs_value_get_int(afs_value_at(afs_value_at(l, 999), 1)) == 345);
    afs_value_free(back);
    afs_response_serializer_free(ps);
    free(body);
    afs_value_free(root);
}

int main(int argc, char **argv) {
    (void)argc;
    test_every_format();
    test_rules_of_images();
    test_empty_responses();
    test_suffixes_problems_and_xssi();
    test_dates();
    test_utf16_plists_and_shared_containers();
    return check_summary(argv[0]);
}
