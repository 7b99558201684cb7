/* The XML reader through the C ABI (header section 11): events, the push parser in every
 * split, errors with positions, handler stops, limits, the JsonML tree of a response, and
 * argument checks. Runs under valgrind too (valgrind_test_xml). */
#include <stdlib.h>
#include "check.h"

/* Records events as text: "S{uri}local[a=v,...]" "E{uri}local" "T..." "C..." "P target|data". */
typedef struct rec {
    char buf[8192];
    size_t len;
    int stop_at;   /* stop when this many events were seen (0: never) */
    int events;
    int in_text;   /* the last event was character data (runs are joined) */
} rec;

static void put(rec *r, const char *s, size_t n) {
    if (r->len + n < sizeof r->buf) { memcpy(r->buf + r->len, s, n); r->len += n; r->buf[r->len] = 0; }
}
static void puts_(rec *r, const char *s) { put(r, s, strlen(s)); }
static void name(rec *r, const char *uri, const char *local) {
    if (*uri) { puts_(r, "{"); puts_(r, uri); puts_(r, "}"); }
    puts_(r, local);
}
static int counted(rec *r) { r->events++; return r->stop_at && r->events >= r->stop_at; }

static int on_start(void *ctx, const char *q, const char *uri, const char *local, const afs_xml_attribute *a, size_t n) {
    rec *r = ctx;
    r->in_text = 0;
    (void)q;
    puts_(r, " S");
    name(r, uri, local);
    puts_(r, "[");
    for (size_t i = 0; i < n; i++) {
        if (i) puts_(r, ",");
        name(r, a[i].ns_uri, a[i].local_name);
        puts_(r, "=");
        puts_(r, a[i].value);
        if (strchr(a[i].qname, ':') == NULL && strcmp(a[i].qname, a[i].local_name) != 0) puts_(r, "!BADQNAME");
    }
    puts_(r, "]");
    return counted(r);
}
static int on_end(void *ctx, const char *q, const char *uri, const char *local) {
    rec *r = ctx;
    r->in_text = 0;
    (void)q;
    puts_(r, " E");
    name(r, uri, local);
    return counted(r);
}
static int on_text(void *ctx, const char *s, size_t n) {
    rec *r = ctx;
    if (!r->in_text) puts_(r, " T");   /* adjacent runs are joined */
    put(r, s, n);
    r->in_text = 1;
    return counted(r);
}
static int on_comment(void *ctx, const char *s, size_t n) {
    rec *r = ctx;
    r->in_text = 0;
    puts_(r, " C");
    put(r, s, n);
    return counted(r);
}
static int on_pi(void *ctx, const char *t, const char *d) {
    rec *r = ctx;
    r->in_text = 0;
    puts_(r, " P");
    puts_(r, t);
    puts_(r, "|");
    puts_(r, d);
    return counted(r);
}

static const afs_xml_handler handler = { on_start, on_end, on_text, on_comment, on_pi };

static const char *doc =
    "<?xml version='1.0' encoding='UTF-8'?>\n"
    "<!DOCTYPE p:r [<!ENTITY e 'ent<b/>'><!ATTLIST p:r d CDATA 'dflt'><!-- not reported -->]>\n"
    "<p:r xmlns:p='urn:p' xmlns='urn:d' p:a='1' b=' x\ty '>t&e;&#65;<![CDATA[<c>]]><!--c--><?pi data?><k/></p:r>\n";
static const char *want =
    " S{urn:p}r[{urn:p}a=1,b= x y ,d=dflt] Ttent S{urn:d}b[] E{urn:d}b TA<c> Cc Ppi|data S{urn:d}k[] E{urn:d}k E{urn:p}r";

static void test_events_one_shot(void) {
    rec r = {0};
    afs_error err = {0};
    CHECK_STATUS(afs_xml_parse((const uint8_t *)doc, strlen(doc), &handler, &r, &err), AFS_OK);
    CHECK_STR(r.buf, want);
}

static void test_every_split(void) {
    size_t n = strlen(doc);
    for (size_t step = 1; step <= 9; step++) {
        rec r = {0};
        afs_error err = {0};
        afs_xml_parser *p = afs_xml_parser_new(&handler, &r, &err);
        CHECK(p != NULL);
        for (size_t i = 0; i < n; i += step) {
            size_t k = n - i < step ? n - i : step;
            CHECK_STATUS(afs_xml_parser_feed(p, (const uint8_t *)doc + i, k, &err), AFS_OK);
        }
        CHECK_STATUS(afs_xml_parser_finish(p, &err), AFS_OK);
        CHECK_STR(r.buf, want);
        CHECK_STATUS(afs_xml_parser_finish(p, &err), AFS_E_STATE);
        afs_xml_parser_free(p);
    }
}

static void test_errors(void) {
    afs_error err = {0};
    const char *bad = "<r>\n  <a></b></r>";
    CHECK_STATUS(afs_xml_parse((const uint8_t *)bad, strlen(bad), NULL, NULL, &err), AFS_E_INVALID_XML);
    CHECK_ERROR(err, AFS_E_INVALID_XML, "end tag </b> does not match the start tag <a> at line 2, column 6 (byte offset 9)");
    /* the same error, fed one byte at a time; then every later call repeats it */
    afs_xml_parser *p = afs_xml_parser_new(NULL, NULL, &err);
    afs_status s = AFS_OK;
    for (size_t i = 0; i < strlen(bad) && s == AFS_OK; i++) s = afs_xml_parser_feed(p, (const uint8_t *)bad + i, 1, &err);
    CHECK(s == AFS_E_INVALID_XML);
    CHECK_ERROR(err, AFS_E_INVALID_XML, "at line 2, column 6 (byte offset 9)");
    memset(&err, 0, sizeof err);
    CHECK_STATUS(afs_xml_parser_feed(p, (const uint8_t *)"x", 1, &err), AFS_E_INVALID_XML);
    CHECK_STATUS(afs_xml_parser_finish(p, &err), AFS_E_INVALID_XML);
    afs_xml_parser_free(p);
    CHECK_STATUS(afs_xml_parse((const uint8_t *)"", 0, NULL, NULL, &err), AFS_E_INVALID_XML);
    CHECK_ERROR(err, AFS_E_INVALID_XML, "no root element");
    const char *enc = "<?xml version='1.0' encoding='KOI8-R'?><r/>";
    CHECK_STATUS(afs_xml_parse((const uint8_t *)enc, strlen(enc), NULL, NULL, &err), AFS_E_INVALID_XML);
    CHECK_ERROR(err, AFS_E_INVALID_XML, "unsupported encoding 'KOI8-R'");
    const uint8_t utf16[] = { 0xFF, 0xFE, '<', 0, 'r', 0, '>', 0, 0xE9, 0, '<', 0, '/', 0, 'r', 0, '>', 0 };
    rec r = {0};
    CHECK_STATUS(afs_xml_parse(utf16, sizeof utf16, &handler, &r, &err), AFS_OK);
    CHECK_STR(r.buf, " Sr[] T\xC3\xA9 Er");
}

static void test_handler_stop(void) {
    for (int k = 1; k <= 8; k++) {
        rec r = {0};
        r.stop_at = k;
        afs_error err = {0};
        CHECK_STATUS(afs_xml_parse((const uint8_t *)doc, strlen(doc), &handler, &r, &err), AFS_E_STATE);
        CHECK_ERROR(err, AFS_E_STATE, "stopped by the handler");
        CHECK(r.events == k);
    }
}

static void test_limits(void) {
    afs_error err = {0};
    /* billion laughs */
    char bomb[2048] = "<!DOCTYPE r [<!ENTITY a0 'lol'>";
    for (int i = 1; i < 10; i++) {
        char line[160];
        snprintf(line, sizeof line, "<!ENTITY a%d '&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;'>", i,
                 i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
        strcat(bomb, line);
    }
    strcat(bomb, "]><r>&a9;</r>");
    CHECK_STATUS(afs_xml_parse((const uint8_t *)bomb, strlen(bomb), NULL, NULL, &err), AFS_E_LIMIT);
    CHECK_ERROR(err, AFS_E_LIMIT, "entity expansion exceeds the limit");
    /* nesting: 512 levels pass, 513 do not; a parser's own limits */
    size_t n = 513;
    char *deep = malloc(n * 7 + 1);
    char *q = deep;
    for (size_t i = 0; i < n; i++) { memcpy(q, "<a>", 3); q += 3; }
    for (size_t i = 0; i < n; i++) { memcpy(q, "</a>", 4); q += 4; }
    CHECK_STATUS(afs_xml_parse((const uint8_t *)deep, n * 7, NULL, NULL, &err), AFS_E_LIMIT);
    CHECK_ERROR(err, AFS_E_LIMIT, "nested more than 512");
    CHECK_STATUS(afs_xml_parse((const uint8_t *)deep + 3, (n - 1) * 7, NULL, NULL, &err), AFS_OK);  /* 512 levels */
    afs_xml_parser *p = afs_xml_parser_new(NULL, NULL, &err);
    CHECK_STATUS(afs_xml_parser_set_limits(p, 4, 16, &err), AFS_OK);
    CHECK_STATUS(afs_xml_parser_feed(p, (const uint8_t *)"<a><a><a><a><a>", 15, &err), AFS_E_LIMIT);
    CHECK_ERROR(err, AFS_E_LIMIT, "nested more than 4");
    CHECK_STATUS(afs_xml_parser_set_limits(p, 0, 0, &err), AFS_E_STATE);
    afs_xml_parser_free(p);
    free(deep);
}

static void test_tree(void) {
    afs_error err = {0};
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_XML);
    CHECK(rs != NULL);
    afs_value *tree = NULL;
    const char *body = "<r xmlns:p='urn:p' a='1'>t<!--c-->u<p:c/>tail</r>";
    CHECK_STATUS(afs_response_object(rs, 200, "application/xml; charset=utf-8", body, strlen(body), &tree, &err), AFS_OK);
    CHECK(tree != NULL && afs_value_kind_of(tree) == AFS_VALUE_ARRAY && afs_value_count(tree) == 5);
    /* written back as JSON unchanged */
    afs_serializer *js = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_request *req = afs_serializer_request(js, "POST", "http://127.0.0.1/", tree, &err);
    CHECK(req != NULL);
    size_t len = 0;
    const uint8_t *json = afs_request_body(req, &len);
    char text[256] = {0};
    if (json && len < sizeof text) memcpy(text, json, len);
    CHECK_STR(text, "[\"r\",{\"xmlns:p\":\"urn:p\",\"a\":\"1\"},\"tu\",[\"p:c\",{}],\"tail\"]");
    afs_request_free(req);
    afs_value_free(tree);
    tree = NULL;
    /* text that JSON escapes (quote, backslash, control characters), entities, CDATA,
       nesting: read member by member and written back */
    body = "<!DOCTYPE r [<!ENTITY e 'x&#10;y'>]><r q='a\"b'>\\&e;&#9;<![CDATA[\"]]><s><t/></s>\xc3\xbc</r>";
    CHECK_STATUS(afs_response_object(rs, 200, "application/xml", body, strlen(body), &tree, &err), AFS_OK);
    CHECK(tree != NULL && afs_value_count(tree) == 5);
    size_t slen = 0;
    const char *s = afs_value_get_string(afs_value_at(tree, 2), &slen);
    CHECK(s != NULL && slen == 6 && memcmp(s, "\\x\ny\t\"", 6) == 0 && s[6] == 0);
    CHECK_STR(afs_value_get_string(afs_value_at(afs_value_at(afs_value_at(tree, 3), 2), 0), NULL), "t");
    CHECK_STR(afs_value_get_string(afs_value_at(tree, 4), NULL), "\xc3\xbc");
    req = afs_serializer_request(js, "POST", "http://127.0.0.1/", tree, &err);
    CHECK(req != NULL);
    json = afs_request_body(req, &len);
    memset(text, 0, sizeof text);
    if (json && len < sizeof text) memcpy(text, json, len);
    CHECK_STR(text, "[\"r\",{\"q\":\"a\\\"b\"},\"\\\\x\\ny\\t\\\"\",[\"s\",{},[\"t\",{}]],\"\xc3\xbc\"]");
    afs_request_free(req);
    afs_serializer_free(js);
    afs_value_free(tree);
    tree = NULL;
    CHECK_STATUS(afs_response_object(rs, 200, "text/xml", "<r>", 3, &tree, &err), AFS_E_INVALID_XML);
    CHECK(tree == NULL);
    CHECK_STATUS(afs_response_object(rs, 200, "application/json", "<r/>", 4, &tree, &err), AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    /* a compound serializer with an XML member */
    afs_response_serializer *json_rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    const afs_response_serializer *members[2] = { json_rs, rs };
    afs_response_serializer *c = afs_response_serializer_new_compound(members, 2, &err);
    CHECK_STATUS(afs_response_object(c, 200, "text/xml", "<x>1</x>", 8, &tree, &err), AFS_OK);
    CHECK(tree != NULL && afs_value_count(tree) == 3);
    afs_value_free(tree);
    afs_response_serializer_free(c);
    afs_response_serializer_free(json_rs);
    afs_response_serializer_free(rs);
}

static void test_arguments(void) {
    afs_error err = {0};
    CHECK_STATUS(afs_xml_parse(NULL, 3, NULL, NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_xml_parser_feed(NULL, (const uint8_t *)"x", 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_xml_parser_finish(NULL, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_STATUS(afs_xml_parser_set_limits(NULL, 1, 1, &err), AFS_E_INVALID_ARGUMENT);
    afs_xml_parser *p = afs_xml_parser_new(NULL, NULL, NULL);
    CHECK_STATUS(afs_xml_parser_feed(p, NULL, 0, &err), AFS_OK);
    CHECK_STATUS(afs_xml_parser_feed(p, NULL, 5, &err), AFS_E_INVALID_ARGUMENT);
    afs_xml_parser_free(p);
    afs_xml_parser_free(NULL);
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    CHECK_STATUS(afs_xml_parser_feed((afs_xml_parser *)rs, (const uint8_t *)"x", 1, &err), AFS_E_INVALID_ARGUMENT);
    CHECK_ERROR(err, AFS_E_INVALID_ARGUMENT, "wrong kind");
    afs_response_serializer_free(rs);
}

/* afs_xml_parser_free from inside a callback takes effect when the feed returns (valgrind
 * checks there is no use after free and no leak). */
static int free_self(void *ctx, const char *q, const char *u, const char *l, const afs_xml_attribute *a, size_t n) {
    (void)q; (void)u; (void)l; (void)a; (void)n;
    afs_xml_parser_free(*(afs_xml_parser **)ctx);
    return 1;
}

static void test_free_from_a_callback(void) {
    afs_xml_handler h = {0};
    h.start_element = free_self;
    afs_xml_parser *p = NULL;
    afs_error err = {0};
    p = afs_xml_parser_new(&h, &p, &err);
    CHECK_STATUS(afs_xml_parser_feed(p, (const uint8_t *)"<r><a/>", 7, &err), AFS_E_STATE);
    CHECK_ERROR(err, AFS_E_STATE, "stopped by the handler");
}

int main(void) {
    test_free_from_a_callback();
    test_events_one_shot();
    test_every_split();
    test_errors();
    test_handler_stop();
    test_limits();
    test_tree();
    test_arguments();
    return check_summary("test_xml");
}
