/*
 * The bad-input matrix: runs a table of bad inputs through the public C API and prints one
 * Markdown table row per input with what the library actually answered (status name and
 * message). scripts/bad-input-matrix.sh turns the output into docs/bad-input-matrix.md.
 *
 * Every row also names the status the header promises; a row whose status differs is
 * reported on stderr and makes the program exit 1, so the matrix is a test as well.
 * Output is deterministic: the scratch directory is written <tmp>, descriptor numbers
 * <fd>; every boundary is set explicitly.
 *
 *   matrix [scratch-dir]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "afserialization.h"

static char tmp[512];
static int mismatches, rows;
static const char *area = "";

/* ---- printing ----------------------------------------------------------------------------- */

/* Writes text for a Markdown table cell: the scratch directory as <tmp>, descriptor numbers
 * as <fd>, '|' escaped, bytes outside printable ASCII as \xNN. */
static void cell(const char *s, size_t n) {
    size_t tl = strlen(tmp);
    for (size_t i = 0; i < n;) {
        if (tl && n - i >= tl && memcmp(s + i, tmp, tl) == 0) {
            fputs("<tmp>", stdout);
            i += tl;
        } else if (n - i > 16 && memcmp(s + i, "file descriptor ", 16) == 0 && s[i + 16] >= '0' && s[i + 16] <= '9') {
            fputs("file descriptor <fd>", stdout);
            i += 16;
            while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        } else {
            unsigned char c = (unsigned char)s[i++];
            if (c == '|') fputs("\\|", stdout);
            else if (c < 0x20 || c >= 0x7f) printf("\\x%02X", c);
            else putchar(c);
        }
    }
}

/* An input shown as a code span (bytes escaped like C). */
static const char *lit(const char *s, size_t n) {
    static char out[8][600];
    static int k;
    char *o = out[k++ % 8];
    size_t j = 0;
    o[j++] = '`';
    for (size_t i = 0; i < n && j < sizeof out[0] - 8; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\r') { o[j++] = '\\'; o[j++] = 'r'; }
        else if (c == '\n') { o[j++] = '\\'; o[j++] = 'n'; }
        else if (c == '\t') { o[j++] = '\\'; o[j++] = 't'; }
        else if (c == '`') { o[j++] = '\''; }
        else if (c < 0x20 || c >= 0x7f) j += (size_t)sprintf(o + j, "\\x%02X", c);
        else o[j++] = (char)c;
    }
    if (n > 0 && j >= sizeof out[0] - 8) { memcpy(o + j, "...", 3); j += 3; }
    o[j++] = '`';
    o[j] = 0;
    return o;
}
static const char *S(const char *s) { return s ? lit(s, strlen(s)) : "NULL"; }

/* One row: area | input | call | status | message. `ok_text` describes a success. */
static void row(const char *input, const char *call, afs_status expected, afs_status got,
                const afs_error *err, const char *ok_text) {
    rows++;
    printf("| %s | ", area);
    cell(input, strlen(input));
    printf(" | `%s` | %s | ", call, got == AFS_OK ? "AFS_OK" : afs_status_name(got));
    if (got == AFS_OK) {
        if (ok_text) cell(ok_text, strlen(ok_text));
        else fputs("-", stdout);
    } else if (err) {
        cell(err->message, strlen(err->message));
        if (err->os_errno) printf(" (errno %s)", strerrorname_np(err->os_errno));
    } else {
        fputs("(no message: err was NULL)", stdout);
    }
    puts(" |");
    if (got != expected) {
        mismatches++;
        fprintf(stderr, "matrix: %s: %s: %s: got %s, the header promises %s\n", area, input, call,
                afs_status_name(got), afs_status_name(expected));
    }
}

/* A row for calls without afs_error (getters, constructors returning NULL). */
static void note_row(const char *input, const char *call, int as_promised, const char *answer) {
    rows++;
    printf("| %s | ", area);
    cell(input, strlen(input));
    printf(" | `%s` | - | ", call);
    cell(answer, strlen(answer));
    puts(" |");
    if (!as_promised) {
        mismatches++;
        fprintf(stderr, "matrix: %s: %s: %s: %s (not as the header promises)\n", area, input, call, answer);
    }
}

static afs_error E;
static afs_error *fresh(void) {
    memset(&E, 0, sizeof E);
    return &E;
}
#define STATUS_OF(handle) ((handle) ? AFS_OK : E.code)

/* ---- fixtures ------------------------------------------------------------------------------- */

static afs_serializer *http(void) {
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_serializer_set_header(s, "User-Agent", "matrix", NULL);
    return s;
}

static void path_in_tmp(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", tmp, name); }

static void write_file(const char *name, const char *content, size_t n) {
    char p[700];
    path_in_tmp(p, sizeof p, name);
    FILE *f = fopen(p, "wb");
    if (n) fwrite(content, 1, n, f);
    fclose(f);
}

static afs_form *form(afs_serializer *s) {
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://example.com/upload", NULL, NULL);
    afs_form_set_boundary(f, "matrix-boundary", NULL);
    return f;
}

/* A multipart request with one part, and the body stream. */
static afs_request *one_part(afs_serializer *s, afs_body_stream **bs) {
    afs_form *f = form(s);
    afs_form_append_form_data(f, "0123456789", 10, "field", NULL);
    afs_request *r = afs_form_finish(f, NULL);
    afs_form_free(f);
    *bs = afs_request_body_stream(r);
    return r;
}

/* Reads a whole body; returns 0, or the stream's error code. */
static afs_status drain(afs_body_stream *bs, afs_error *err) {
    uint8_t buf[4096];
    int64_t n;
    while ((n = afs_body_stream_read(bs, buf, sizeof buf)) > 0) {}
    if (n == 0) return AFS_OK;
    return afs_body_stream_error(bs, err);
}

/* Root ignores file modes (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH): drop those two from the
 * effective set around a call so that mode 000 and a directory without x mean what they
 * mean for everybody else. Returns 1 when it changed something (restore afterwards). */
static struct __user_cap_data_struct saved_caps[2];
static int drop_dac(void) {
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    if (syscall(SYS_capget, &h, saved_caps) != 0) return 0;
    struct __user_cap_data_struct d[2];
    memcpy(d, saved_caps, sizeof d);
    unsigned mask = (1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH);
    if (!(d[0].effective & mask)) return 0;
    d[0].effective &= ~mask;
    return syscall(SYS_capset, &h, d) == 0;
}
static void restore_dac(int dropped) {
    if (!dropped) return;
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    syscall(SYS_capset, &h, saved_caps);
}

/* ---- values and helpers ------------------------------------------------------------------ */

static const struct { const char *bytes; const char *what; } bad_utf8[] = {
    {"\x80", "a lone continuation byte at offset 0"},
    {"ab\xC3", "a 2-byte sequence cut at the end"},
    {"ok\xE2\x82", "a 3-byte sequence cut at the end"},
    {"a\xF0\x9F\x98!", "a 4-byte sequence cut before `!`"},
    {"\xC0\xAF", "an overlong encoding of `/`"},
    {"x\xED\xA0\x80", "a UTF-16 surrogate (U+D800) at offset 1"},
    {"\xF4\x90\x80\x80", "a code point above U+10FFFF"},
    {"abc\xFF", "byte 0xFF at offset 3"},
};
#define NBAD (sizeof bad_utf8 / sizeof bad_utf8[0])

static void values(void) {
    area = "values";
    char in[256];
    for (size_t i = 0; i < NBAD; i++) {
        snprintf(in, sizeof in, "string with %s: %s", bad_utf8[i].what, S(bad_utf8[i].bytes));
        afs_value *v = afs_value_new_string(bad_utf8[i].bytes, AFS_NTS, fresh());
        row(in, "afs_value_new_string", AFS_E_INVALID_UTF8, STATUS_OF(v), &E, "accepted");
        afs_value_free(v);
    }
    afs_value *v = afs_value_new_string(NULL, 5, fresh());
    row("NULL text with length 5", "afs_value_new_string", AFS_E_INVALID_ARGUMENT, STATUS_OF(v), &E, NULL);
    v = afs_value_new_string("a\0b", 3, fresh());
    row("text with an embedded NUL (`a\\0b`, length 3)", "afs_value_new_string", AFS_OK, STATUS_OF(v), &E, "accepted: NUL is valid UTF-8");
    afs_value_free(v);
    v = afs_value_new_data(NULL, 5);
    note_row("NULL bytes with length 5", "afs_value_new_data", v == NULL, v ? "a value" : "NULL");
    afs_value_free(v);

    afs_value *d = afs_value_new_dict(), *a = afs_value_new_array(), *str = afs_value_new_string("s", AFS_NTS, NULL);
    row("dictionary key with byte 0xFF: `k\\xFF`", "afs_value_dict_set", AFS_E_INVALID_UTF8,
        afs_value_dict_set(d, "k\xFF", AFS_NTS, afs_value_new_int(1), fresh()), &E, NULL);
    row("key NULL", "afs_value_dict_set", AFS_E_INVALID_ARGUMENT,
        afs_value_dict_set(d, NULL, AFS_NTS, afs_value_new_int(1), fresh()), &E, NULL);
    row("an array where a dictionary is needed", "afs_value_dict_set", AFS_E_INVALID_ARGUMENT,
        afs_value_dict_set(a, "k", AFS_NTS, afs_value_new_int(1), fresh()), &E, NULL);
    row("value NULL", "afs_value_dict_set", AFS_E_INVALID_ARGUMENT, afs_value_dict_set(d, "k", AFS_NTS, NULL, fresh()), &E, NULL);
    row("the dictionary as its own value", "afs_value_dict_set", AFS_E_INVALID_ARGUMENT, afs_value_dict_set(d, "k", AFS_NTS, d, fresh()), &E, NULL);
    afs_value_dict_set(d, "member", AFS_NTS, afs_value_new_int(1), NULL);
    row("a borrowed member (from afs_value_get) as value", "afs_value_dict_set", AFS_E_INVALID_ARGUMENT,
        afs_value_dict_set(d, "k", AFS_NTS, (afs_value *)afs_value_get(d, "member"), fresh()), &E, NULL);
    row("a dictionary where an array or set is needed", "afs_value_append", AFS_E_INVALID_ARGUMENT,
        afs_value_append(d, afs_value_new_int(1), fresh()), &E, NULL);
    row("a string where an array or set is needed", "afs_value_append", AFS_E_INVALID_ARGUMENT,
        afs_value_append(str, afs_value_new_int(1), fresh()), &E, NULL);
    /* nesting, built bottom-up: 512 levels are fine, the 513th is refused */
    afs_value *leaf = afs_value_new_array();
    afs_status st = AFS_OK;
    int depth = 1;
    while (st == AFS_OK && depth < 600) {
        afs_value *parent = afs_value_new_array();
        st = afs_value_append(parent, leaf, fresh());   /* leaf consumed, also on failure */
        if (st == AFS_OK) depth++;
        leaf = parent;
    }
    afs_value_free(leaf);
    char deep[96];
    snprintf(deep, sizeof deep, "an array holding a tree %d levels deep", depth);
    row(deep, "afs_value_append", AFS_E_INVALID_ARGUMENT, st, &E, NULL);
    /* changing a borrowed member (it is a copy owned by its parent's cache) */
    afs_value_dict_set(d, "inner", AFS_NTS, afs_value_new_dict(), NULL);
    row("a borrowed member (from afs_value_get) as the dictionary to change", "afs_value_dict_set", AFS_E_INVALID_ARGUMENT,
        afs_value_dict_set((afs_value *)afs_value_get(d, "inner"), "k", AFS_NTS, afs_value_new_int(1), fresh()), &E, NULL);
    afs_value_dict_set(d, "list", AFS_NTS, afs_value_new_array(), NULL);
    row("a borrowed member (from afs_value_get) as the array to change", "afs_value_append", AFS_E_INVALID_ARGUMENT,
        afs_value_append((afs_value *)afs_value_get(d, "list"), afs_value_new_int(1), fresh()), &E, NULL);
    /* the value's own tree as container, and its own text as key (both read before the
     * value is consumed) */
    afs_value *owner = afs_value_new_dict();
    afs_value_dict_set(owner, "inner", AFS_NTS, afs_value_new_dict(), NULL);
    row("a member borrowed from the value itself as the dictionary to change", "afs_value_dict_set", AFS_E_INVALID_ARGUMENT,
        afs_value_dict_set((afs_value *)afs_value_get(owner, "inner"), "k", AFS_NTS, owner, fresh()), &E, NULL);
    afs_value *named = afs_value_new_string("name", AFS_NTS, NULL);
    size_t named_len = 0;
    const char *own_text = afs_value_get_string(named, &named_len);
    afs_status own_key = afs_value_dict_set(d, own_text, named_len, named, fresh());
    const afs_value *under_own_key = afs_value_get(d, "name");
    row("the value's own text (afs_value_get_string) as its key", "afs_value_dict_set", AFS_OK, own_key, &E,
        under_own_key ? "the key \"name\" is set" : "the key is missing");
    if (!under_own_key) {
        mismatches++;
        fprintf(stderr, "matrix: values: the value's own text as its key: the key is missing\n");
    }
    afs_value_free(d);
    afs_value_free(a);
    afs_value_free(str);

    area = "helpers";
    for (size_t i = 0; i < NBAD; i += 3) {
        snprintf(in, sizeof in, "text with %s: %s", bad_utf8[i].what, S(bad_utf8[i].bytes));
        char *out = afs_percent_escape(bad_utf8[i].bytes, AFS_NTS, fresh());
        row(in, "afs_percent_escape", AFS_E_INVALID_UTF8, STATUS_OF(out), &E, out);
        afs_free(out);
    }
    char *out = afs_percent_escape(NULL, 3, fresh());
    row("NULL text", "afs_percent_escape", AFS_E_INVALID_ARGUMENT, STATUS_OF(out), &E, NULL);
    afs_value *arr = afs_value_new_array();
    out = afs_query_string(arr, fresh());
    row("an array at the top level", "afs_query_string", AFS_E_INVALID_ARGUMENT, STATUS_OF(out), &E, out);
    afs_free(out);
    afs_value_free(arr);
    afs_value *q = afs_value_new_dict();
    afs_value_dict_set(q, "bin", AFS_NTS, afs_value_new_data("\xFF\x00 ", 3), NULL);
    out = afs_query_string(q, fresh());
    row("a data value with bytes 0xFF 0x00 0x20 (not UTF-8)", "afs_query_string", AFS_OK, STATUS_OF(out), &E, out);
    afs_free(out);
    afs_value_free(q);
}

/* ---- JSON text --------------------------------------------------------------------------------- */

static const struct { const char *text; const char *what; } bad_json[] = {
    {"", "empty text"},
    {"   ", "only spaces"},
    {"{", "an object never closed"},
    {"[1,]", "a trailing comma"},
    {"{\"a\" 1}", "a missing colon"},
    {"{\"a\":}", "a missing value"},
    {"{a:1}", "an unquoted key"},
    {"tru", "a truncated literal"},
    {"\"abc", "an unterminated string"},
    {"01", "a leading zero"},
    {"1.", "a number without fraction digits"},
    {"-", "a lone minus"},
    {"[1 2]", "a missing comma"},
    {"{}x", "garbage after the value"},
    {"\"\\x\"", "an invalid escape `\\x`"},
    {"\"\\u12G4\"", "a bad \\u escape"},
    {"\"\\ud800\"", "a lone high surrogate escape"},
    {"\"\\udc00\\ud800\"", "surrogate escapes in the wrong order"},
    {"\"a\x01z\"", "a raw control character in a string"},
    {"\"\xff\"", "invalid UTF-8 inside a string"},
    {"NaN", "NaN"},
    {"[Infinity]", "Infinity"},
    {"'a'", "single quotes"},
    {"/* c */ 1", "a comment"},
    {"[1]\n[2]", "two values"},
};

static void json_text(void) {
    area = "JSON text";
    char in[300];
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        snprintf(in, sizeof in, "%s: %s", bad_json[i].what, S(bad_json[i].text));
        afs_value *v = afs_value_parse_json(bad_json[i].text, AFS_NTS, fresh());
        row(in, "afs_value_parse_json", AFS_E_INVALID_JSON, STATUS_OF(v), &E, "parsed");
        afs_value_free(v);
    }
    /* depth */
    char text[1200];
    for (int depth = 512; depth <= 513; depth++) {
        memset(text, '[', (size_t)depth);
        memset(text + depth, ']', (size_t)depth);
        snprintf(in, sizeof in, "%d nested arrays", depth);
        afs_value *v = afs_value_parse_json(text, (size_t)(2 * depth), fresh());
        row(in, "afs_value_parse_json", depth == 512 ? AFS_OK : AFS_E_INVALID_JSON, STATUS_OF(v), &E, "parsed");
        afs_value_free(v);
    }
    afs_value *v = afs_value_parse_json("1e999", AFS_NTS, fresh());
    row("a number too large for a double: `1e999`", "afs_value_parse_json", STATUS_OF(v) /* not specified */,
        STATUS_OF(v), &E, v ? (isinf(afs_value_get_double(v)) ? "parsed as a double: inf" : "parsed") : NULL);
    afs_value_free(v);
    v = afs_value_parse_json("9223372036854775808", AFS_NTS, fresh());
    row("an integer above INT64_MAX: `9223372036854775808`", "afs_value_parse_json", AFS_OK, STATUS_OF(v), &E,
        v && afs_value_kind_of(v) == AFS_VALUE_DOUBLE ? "parsed as a double" : "parsed");
    afs_value_free(v);
    v = afs_value_parse_json(NULL, 4, fresh());
    row("NULL text", "afs_value_parse_json", AFS_E_INVALID_ARGUMENT, STATUS_OF(v), &E, NULL);
    afs_value_free(v);
}

/* ---- issue 23: the reused JSON parser ---------------------------------------------------------- */

static void issue23(void) {
    area = "JSON parser (reused)";
    char in[300];
    afs_json_parser *jp = afs_json_parser_new(fresh());
    /* The same texts through one parser, in turn: the messages of afs_value_parse_json. */
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        snprintf(in, sizeof in, "%s: %s", bad_json[i].what, S(bad_json[i].text));
        afs_value *v = afs_json_parser_parse(jp, bad_json[i].text, strlen(bad_json[i].text), fresh());
        row(in, "afs_json_parser_parse", AFS_E_INVALID_JSON, STATUS_OF(v), &E, "parsed");
        afs_value_free(v);
    }
    /* A string whose escape straddles the 64-byte block boundary, then a bad one there. */
    char text[200];
    memset(text, 'a', sizeof text);
    text[0] = '"';
    memcpy(text + 62, "\\\\\\\"", 4);
    text[120] = '"';
    afs_value *v = afs_json_parser_parse(jp, text, 121, fresh());
    row("a string with `\\\\\\\"` across byte 64", "afs_json_parser_parse", AFS_OK, STATUS_OF(v), &E, "parsed");
    afs_value_free(v);
    memcpy(text + 62, "\\\\\\q", 4);
    v = afs_json_parser_parse(jp, text, 121, fresh());
    row("a string with `\\\\\\q` across byte 64", "afs_json_parser_parse", AFS_E_INVALID_JSON, STATUS_OF(v), &E, "parsed");
    afs_value_free(v);
    v = afs_json_parser_parse(NULL, "[]", 2, fresh());
    row("NULL parser", "afs_json_parser_parse", AFS_E_INVALID_ARGUMENT, STATUS_OF(v), &E, "parsed");
    afs_value_free(v);
    v = afs_json_parser_parse(jp, NULL, 2, fresh());
    row("NULL text", "afs_json_parser_parse", AFS_E_INVALID_ARGUMENT, STATUS_OF(v), &E, "parsed");
    afs_value_free(v);
    afs_json_parser_free(jp);
}

/* ---- serializer configuration ------------------------------------------------------------------ */

static void configuration(void) {
    area = "serializer";
    afs_serializer *s = http();
    const char *bad_names[] = { "", "Bad Name", "X:Y", "X\x7f", "\xC3\x84rger", "(paren)", "a\tb" };
    char in[300];
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        snprintf(in, sizeof in, "header name %s", S(bad_names[i]));
        row(in, "afs_serializer_set_header", AFS_E_INVALID_HEADER, afs_serializer_set_header(s, bad_names[i], "v", fresh()), &E, NULL);
    }
    const char *bad_values[] = { "a\rb", "a\nb", "a\r\nX-Injected: 1", "\r\n " };
    for (size_t i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++) {
        snprintf(in, sizeof in, "header value %s", S(bad_values[i]));
        row(in, "afs_serializer_set_header", AFS_E_INVALID_HEADER, afs_serializer_set_header(s, "X-Test", bad_values[i], fresh()), &E, NULL);
    }
    row("header value with byte 0xFF: `a\\xFF`", "afs_serializer_set_header", AFS_E_INVALID_UTF8,
        afs_serializer_set_header(s, "X-Test", "a\xFF", fresh()), &E, NULL);
    row("header value with a tab and obs-text-free Unicode: `a\\tb \xC3\xA9`", "afs_serializer_set_header", AFS_OK,
        afs_serializer_set_header(s, "X-Test", "a\tb \xC3\xA9", fresh()), &E, "accepted (only CR, LF and NUL are refused)");
    {
        afs_status st = afs_serializer_set_header(s, "X-Nul", "a\0b", fresh());
        char *kept = afs_serializer_copy_header(s, "X-Nul");
        char text[120];
        snprintf(text, sizeof text, "accepted: C strings end at the first NUL, the value kept is %s", S(kept));
        row("header value `a\\0b` (a C string: nothing after the NUL can reach the library)", "afs_serializer_set_header", AFS_OK, st, &E, text);
        afs_free(kept);
    }
    row("header name NULL", "afs_serializer_set_header", AFS_E_INVALID_ARGUMENT, afs_serializer_set_header(s, NULL, "v", fresh()), &E, NULL);
    row("user with byte 0xFF", "afs_serializer_set_basic_auth", AFS_E_INVALID_UTF8,
        afs_serializer_set_basic_auth(s, "\xFFuser", "pw", fresh()), &E, NULL);
    row("password NULL", "afs_serializer_set_basic_auth", AFS_E_INVALID_ARGUMENT,
        afs_serializer_set_basic_auth(s, "user", NULL, fresh()), &E, NULL);
    const char *bad_methods[] = { "GE T" };
    row("URI method `GE T`", "afs_serializer_set_uri_methods", AFS_E_INVALID_METHOD,
        afs_serializer_set_uri_methods(s, bad_methods, 1, fresh()), &E, NULL);
    const char *empty_method[] = { "" };
    row("URI method `` (empty)", "afs_serializer_set_uri_methods", AFS_E_INVALID_METHOD,
        afs_serializer_set_uri_methods(s, empty_method, 1, fresh()), &E, NULL);
    row("URI methods NULL with count 2", "afs_serializer_set_uri_methods", AFS_E_INVALID_ARGUMENT,
        afs_serializer_set_uri_methods(s, NULL, 2, fresh()), &E, NULL);
    row("string encoding 99", "afs_serializer_set_string_encoding", AFS_E_INVALID_ARGUMENT,
        afs_serializer_set_string_encoding(s, (afs_string_encoding)99, fresh()), &E, NULL);
    row("array style 7", "afs_serializer_set_query_style", AFS_E_INVALID_ARGUMENT,
        afs_serializer_set_query_style(s, (afs_array_style)7, AFS_BOOL_NUMERIC, AFS_SPACE_PERCENT, fresh()), &E, NULL);
    row("space style 9", "afs_serializer_set_query_style", AFS_E_INVALID_ARGUMENT,
        afs_serializer_set_query_style(s, AFS_ARRAY_BRACKETS, AFS_BOOL_NUMERIC, (afs_space_style)9, fresh()), &E, NULL);
    row("JSON writing options 16 (unknown bit)", "afs_serializer_set_json_options", AFS_E_INVALID_ARGUMENT,
        afs_serializer_set_json_options(s, 16, fresh()), &E, NULL);
    row("plist format 300", "afs_serializer_set_plist_format", AFS_E_INVALID_ARGUMENT,
        afs_serializer_set_plist_format(s, 300, fresh()), &E, NULL);
    afs_serializer *none = afs_serializer_new((afs_serializer_kind)7);
    note_row("serializer kind 7", "afs_serializer_new", none == NULL, none ? "a serializer" : "NULL");
    afs_serializer_free(none);
    afs_serializer_free(s);
}

/* ---- requests ------------------------------------------------------------------------------------ */

static void requests(void) {
    area = "request";
    afs_serializer *s = http();
    const struct { const char *url, *what; } urls[] = {
        {"", "empty"},
        {"example.com/path", "no scheme"},
        {"/relative/path", "a relative reference"},
        {"//example.com/x", "a network-path reference"},
        {"http://exa mple.com/", "a space in the host"},
        {"http://example.com/a\tb", "a tab"},
        {"http://example.com/\x01", "a control character"},
        {"http://example.com/\x7f", "DEL"},
        {"http://example.com/caf\xC3\xA9", "a non-ASCII character (UTF-8): not refused, percent-encoded"},
        {"http://example.com/\xFF", "invalid UTF-8"},
        {"http://example.com/a\"b", "a double quote: not refused, percent-encoded"},
        {"http://example.com/<x>", "angle brackets: not refused, percent-encoded"},
        {"http://example.com/a\\b", "a backslash: not refused, percent-encoded"},
        {"http://example.com/{x}", "braces: not refused, percent-encoded"},
        {"http://example.com/%zz", "a bare `%`: not refused, becomes %25"},
        {"http://example.com/a#b#c", "two `#`: not refused, the second percent-encoded"},
        {"1http://example.com/", "a scheme starting with a digit"},
        {"ht~tp://example.com/", "a scheme with `~`"},
        {":no-scheme", "an empty scheme"},
        {"http://[::1/", "an unclosed IPv6 bracket"},
        {"http://a[::1]/", "an IPv6 literal that does not start the host"},
        {"http://[::1]x/", "text after an IPv6 literal"},
        {"http://[[::1]/", "a second bracket inside an IPv6 literal"},
        {"http://example.com/[x]", "brackets in the path: not refused, percent-encoded"},
        {"http://example.com:65536/", "a port above 65535"},
        {"http://example.com:8o/", "a port that is not digits"},
        {"http://a\xE2\x80\x8D" "b.com/", "a host IDNA refuses (a joiner out of context)"},
        {"http://b\xC3\xBC" "cher.example/", "a non-ASCII host: not refused, IDNA A-label"},
    };
    char in[300];
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        snprintf(in, sizeof in, "URL with %s: %s", urls[i].what, S(urls[i].url));
        afs_request *r = afs_serializer_request(s, "GET", urls[i].url, NULL, fresh());
        afs_status want = strstr(urls[i].what, "not refused") ? AFS_OK : strstr(urls[i].what, "invalid UTF-8") ? AFS_E_INVALID_UTF8 : AFS_E_BAD_URL;
        row(in, "afs_serializer_request", want, STATUS_OF(r), &E, r ? afs_request_url(r) : NULL);
        afs_request_free(r);
    }
    afs_request *r = afs_serializer_request(s, "GET", NULL, NULL, fresh());
    row("URL NULL", "afs_serializer_request", AFS_E_INVALID_ARGUMENT, STATUS_OF(r), &E, NULL);
    afs_request_free(r);
    const char *methods[] = { "", "GE T", "GET\r\n", "P(OST)", "P\xC3\x96ST", "G\xFF" };
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        snprintf(in, sizeof in, "method %s", S(methods[i]));
        r = afs_serializer_request(s, methods[i], "http://example.com/", NULL, fresh());
        row(in, "afs_serializer_request", i == 5 ? AFS_E_INVALID_UTF8 : AFS_E_INVALID_METHOD, STATUS_OF(r), &E, NULL);
        afs_request_free(r);
    }
    r = afs_serializer_request(s, NULL, "http://example.com/", NULL, fresh());
    row("method NULL", "afs_serializer_request", AFS_E_INVALID_ARGUMENT, STATUS_OF(r), &E, NULL);
    afs_request_free(r);
    afs_value *arr = afs_value_new_array();
    afs_value_append(arr, afs_value_new_int(1), NULL);
    r = afs_serializer_request(s, "GET", "http://example.com/", arr, fresh());
    row("parameters: an array (GET, query in the URL)", "afs_serializer_request", AFS_E_INVALID_ARGUMENT, STATUS_OF(r), &E, NULL);
    afs_request_free(r);
    r = afs_serializer_request(s, "POST", "http://example.com/", arr, fresh());
    row("parameters: an array (POST, form body)", "afs_serializer_request", AFS_E_INVALID_ARGUMENT, STATUS_OF(r), &E, NULL);
    afs_request_free(r);
    afs_value_free(arr);
    r = afs_request_new("BAD METHOD", "http://example.com/", fresh());
    row("method `BAD METHOD`", "afs_request_new", AFS_E_INVALID_METHOD, STATUS_OF(r), &E, NULL);
    afs_request_free(r);
    r = afs_request_new("GET", "not a url", fresh());
    row("URL `not a url`", "afs_request_new", AFS_E_BAD_URL, STATUS_OF(r), &E, NULL);
    afs_request_free(r);
    r = afs_request_new("GET", "http://example.com/", NULL);
    row("header value `x\\r\\nInjected: 1`", "afs_request_set_header", AFS_E_INVALID_HEADER,
        afs_request_set_header(r, "X-A", "x\r\nInjected: 1", fresh()), &E, NULL);
    row("header name `X A`", "afs_request_set_header", AFS_E_INVALID_HEADER, afs_request_set_header(r, "X A", "v", fresh()), &E, NULL);
    afs_request *copy = afs_serializer_serialize(s, NULL, NULL, fresh());
    row("request NULL", "afs_serializer_serialize", AFS_E_INVALID_ARGUMENT, STATUS_OF(copy), &E, NULL);
    afs_request_free(copy);
    afs_request_free(r);
    afs_serializer_free(s);
}

/* ---- bodies: JSON, plist, encodings, query callbacks ----------------------------------------------- */

static afs_value *dict1(const char *key, afs_value *v) {
    afs_value *d = afs_value_new_dict();
    afs_value_dict_set(d, key, AFS_NTS, v, NULL);
    return d;
}

static void body_row(afs_serializer *s, const char *method, afs_value *params, const char *in, const char *call_area,
                     afs_status expected) {
    (void)call_area;
    afs_request *r = afs_serializer_request(s, method, "http://example.com/", params, fresh());
    char ok[300] = "";
    if (r) {
        size_t n = 0;
        const uint8_t *b = afs_request_body(r, &n);
        snprintf(ok, sizeof ok, "body %s", b ? lit((const char *)b, n) : "(none)");
    }
    row(in, "afs_serializer_request", expected, STATUS_OF(r), &E, ok);
    afs_request_free(r);
    afs_value_free(params);
}

static char *fail_with_message(void *ctx, const afs_request *r, const afs_value *p, afs_error *err) {
    (void)ctx; (void)r; (void)p;
    snprintf(err->message, sizeof err->message, "the custom query refuses these parameters");
    return NULL;
}
static char *fail_silently(void *ctx, const afs_request *r, const afs_value *p, afs_error *err) {
    (void)ctx; (void)r; (void)p; (void)err;
    return NULL;
}
static char *answer(void *ctx, const afs_request *r, const afs_value *p, afs_error *err) {
    (void)r; (void)p; (void)err;
    return afs_string_new((const char *)ctx, AFS_NTS);
}

static void bodies(void) {
    area = "JSON body";
    afs_serializer *js = afs_serializer_new(AFS_SERIALIZER_JSON);
    body_row(js, "POST", dict1("x", afs_value_new_double(NAN)), "a NaN value", "", AFS_E_INVALID_JSON);
    body_row(js, "POST", dict1("x", afs_value_new_double(INFINITY)), "an infinite value", "", AFS_E_INVALID_JSON);
    body_row(js, "POST", dict1("x", afs_value_new_set()), "a set", "", AFS_E_INVALID_JSON);
    body_row(js, "POST", dict1("x", afs_value_new_data("ab", 2)), "a data value", "", AFS_E_INVALID_JSON);
    afs_value *inner = afs_value_new_array();
    afs_value_append(inner, afs_value_new_int(1), NULL);
    afs_value_append(inner, afs_value_new_double(-INFINITY), NULL);
    body_row(js, "POST", dict1("a", dict1("b", inner)), "-inf nested at a.b[1]", "", AFS_E_INVALID_JSON);
    body_row(js, "POST", afs_value_new_string("scalar", AFS_NTS, NULL), "a string at the top level (no FRAGMENTS_ALLOWED)", "", AFS_E_INVALID_JSON);
    afs_serializer_set_json_options(js, AFS_JSON_FRAGMENTS_ALLOWED, NULL);
    body_row(js, "POST", afs_value_new_string("scalar", AFS_NTS, NULL), "a string at the top level with FRAGMENTS_ALLOWED", "", AFS_OK);
    afs_serializer_free(js);

    area = "plist body";
    afs_serializer *ps = afs_serializer_new(AFS_SERIALIZER_PLIST);
    body_row(ps, "POST", dict1("x", afs_value_new_null()), "a null value", "", AFS_E_INVALID_PLIST);
    body_row(ps, "POST", dict1("x", afs_value_new_set()), "a set", "", AFS_E_INVALID_PLIST);
    afs_value *arr = afs_value_new_array();
    afs_value_append(arr, afs_value_new_null(), NULL);
    body_row(ps, "POST", dict1("list", arr), "null nested in an array", "", AFS_E_INVALID_PLIST);
    afs_serializer_set_plist_format(ps, AFS_PLIST_BINARY, NULL);
    body_row(ps, "POST", dict1("x", afs_value_new_null()), "a null value (binary format)", "", AFS_E_INVALID_PLIST);
    afs_serializer_free(ps);

    area = "encoding";
    afs_serializer *s = http();
    afs_serializer_set_string_encoding(s, AFS_ENCODING_ASCII, NULL);
    body_row(s, "POST", dict1("name", afs_value_new_string("caf\xC3\xA9", AFS_NTS, NULL)), "form body, ASCII encoding, value `caf\xC3\xA9`", "", AFS_OK);
    afs_serializer_set_query_callback(s, answer, (void *)"name=caf\xC3\xA9");
    body_row(s, "POST", dict1("k", afs_value_new_int(1)), "ASCII encoding, custom query returns `name=caf\xC3\xA9`", "", AFS_E_ENCODING);
    afs_serializer_set_string_encoding(s, AFS_ENCODING_ISO_8859_1, NULL);
    afs_serializer_set_query_callback(s, answer, (void *)"price=\xE2\x82\xAC" "5");
    body_row(s, "POST", dict1("k", afs_value_new_int(1)), "ISO-8859-1 encoding, custom query returns `price=\xE2\x82\xAC" "5`", "", AFS_E_ENCODING);
    afs_serializer_set_query_callback(s, answer, (void *)"name=caf\xC3\xA9");
    body_row(s, "POST", dict1("k", afs_value_new_int(1)), "ISO-8859-1 encoding, custom query returns `name=caf\xC3\xA9`", "", AFS_OK);
    afs_serializer_set_query_callback(s, NULL, NULL);
    afs_serializer_set_string_encoding(s, AFS_ENCODING_ASCII, NULL);
    afs_value *p = dict1("name", afs_value_new_string("caf\xC3\xA9", AFS_NTS, NULL));
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://example.com/", p, fresh());
    row("multipart field, ASCII encoding, value `caf\xC3\xA9`", "afs_serializer_multipart_form", AFS_E_ENCODING, STATUS_OF(f), &E, NULL);
    afs_form_free(f);
    afs_value_free(p);
    afs_serializer_free(s);

    area = "query callback";
    s = http();
    afs_serializer_set_query_callback(s, fail_with_message, NULL);
    body_row(s, "GET", dict1("k", afs_value_new_int(1)), "returns NULL with a message", "", AFS_E_QUERY_CALLBACK);
    afs_serializer_set_query_callback(s, fail_silently, NULL);
    body_row(s, "GET", dict1("k", afs_value_new_int(1)), "returns NULL without a message", "", AFS_E_QUERY_CALLBACK);
    afs_serializer_set_query_callback(s, answer, (void *)"a\r\nb");
    body_row(s, "GET", dict1("k", afs_value_new_int(1)), "returns `a CR LF b` for a GET (the query goes into the URL; a space would be percent-encoded)", "", AFS_E_BAD_URL);
    afs_serializer_set_query_callback(s, answer, (void *)"a=\xFF");
    body_row(s, "POST", dict1("k", afs_value_new_int(1)), "returns invalid UTF-8 `a=\\xFF` for a POST", "", AFS_E_QUERY_CALLBACK);
    afs_serializer_free(s);
}

/* ---- multipart forms ---------------------------------------------------------------------------- */

typedef struct { size_t yields, pos; int fail_at, rewind_result, over; } src_t;
static int64_t src_read(void *ctx, uint8_t *buf, size_t max) {
    src_t *s = ctx;
    if (s->fail_at >= 0 && s->pos >= (size_t)s->fail_at) return -1;
    if (s->over) return (int64_t)max + 5;
    size_t k = s->yields - s->pos < max ? s->yields - s->pos : max;
    if (s->fail_at >= 0 && s->pos + k > (size_t)s->fail_at) k = (size_t)s->fail_at - s->pos;
    memset(buf, 'x', k);
    s->pos += k;
    return (int64_t)k;
}
static int src_rewind(void *ctx) { src_t *s = ctx; s->pos = 0; return s->rewind_result; }

/* A form with one callback part; returns the status of reading the whole body. */
static void stream_row(const char *in, src_t src, uint64_t declared, int with_rewind, int rewind_first, afs_status expected) {
    afs_serializer *s = http();
    afs_form *f = form(s);
    afs_form_append_stream(f, src_read, with_rewind ? src_rewind : NULL, NULL, &src, declared, "cb", "cb.bin", NULL, NULL);
    afs_request *r = afs_form_finish(f, NULL);
    afs_form_free(f);
    afs_body_stream *bs = afs_request_body_stream(r);
    afs_status st;
    if (rewind_first) {
        drain(bs, fresh());
        st = afs_body_stream_rewind(bs, fresh());
        if (st == AFS_OK) st = drain(bs, fresh());
        row(in, rewind_first == 2 ? "afs_body_stream_read after rewind" : "afs_body_stream_rewind", expected, st, &E, "whole body read");
    } else {
        st = drain(bs, fresh());
        row(in, "afs_body_stream_read", expected, st, &E, "whole body read");
    }
    afs_request_free(r);
    afs_serializer_free(s);
}

static void multipart(void) {
    area = "multipart";
    afs_serializer *s = http();
    char p[700], in[300];
    write_file("ok.txt", "hello", 5);

    afs_form *f = afs_serializer_multipart_form(s, "GET", "http://example.com/", NULL, fresh());
    row("method GET", "afs_serializer_multipart_form", AFS_E_INVALID_METHOD, STATUS_OF(f), &E, NULL);
    afs_form_free(f);
    f = afs_serializer_multipart_form(s, "head", "http://example.com/", NULL, fresh());
    row("method `head` (lowercase HEAD)", "afs_serializer_multipart_form", AFS_E_INVALID_METHOD, STATUS_OF(f), &E, NULL);
    afs_form_free(f);
    f = afs_serializer_multipart_form(s, "POST", "no scheme", NULL, fresh());
    row("URL `no scheme`", "afs_serializer_multipart_form", AFS_E_BAD_URL, STATUS_OF(f), &E, NULL);
    afs_form_free(f);
    afs_value *arr = afs_value_new_array();
    f = afs_serializer_multipart_form(s, "POST", "http://example.com/", arr, fresh());
    row("parameters: an array", "afs_serializer_multipart_form", AFS_E_INVALID_ARGUMENT, STATUS_OF(f), &E, NULL);
    afs_form_free(f);
    afs_value_free(arr);
    afs_value *nulkey = afs_value_new_dict();
    afs_value_dict_set(nulkey, "a\0b", 3, afs_value_new_string("v", AFS_NTS, NULL), NULL);
    f = afs_serializer_multipart_form(s, "POST", "http://example.com/", nulkey, fresh());
    row("parameters: a key with a NUL (`a\\0b`), which would reach the part header", "afs_serializer_multipart_form", AFS_E_INVALID_HEADER, STATUS_OF(f), &E, NULL);
    afs_form_free(f);
    afs_value_free(nulkey);

    /* files at append */
    f = form(s);
    path_in_tmp(p, sizeof p, "missing.txt");
    row("a missing file", "afs_form_append_file", AFS_E_FILE, afs_form_append_file(f, p, "f", fresh()), &E, NULL);
    row("a directory (`<tmp>`)", "afs_form_append_file", AFS_E_FILE, afs_form_append_file(f, tmp, "f", fresh()), &E, NULL);
    row("a character device (`/dev/null`)", "afs_form_append_file", AFS_E_FILE, afs_form_append_file(f, "/dev/null", "f", fresh()), &E, NULL);
    path_in_tmp(p, sizeof p, "fifo");
    mkfifo(p, 0644);
    row("a FIFO", "afs_form_append_file", AFS_E_FILE, afs_form_append_file(f, p, "f", fresh()), &E, NULL);
    unlink(p);
    write_file("secret.txt", "x", 1);
    path_in_tmp(p, sizeof p, "secret.txt");
    chmod(p, 0);
    int dropped = drop_dac();
    row("an unreadable file (mode 000; as root: without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH)", "afs_form_append_file",
        AFS_E_FILE, afs_form_append_file(f, p, "f", fresh()), &E, NULL);
    restore_dac(dropped);
    path_in_tmp(p, sizeof p, "locked");
    mkdir(p, 0700);
    path_in_tmp(p, sizeof p, "locked/inner.txt");
    write_file("locked/inner.txt", "x", 1);
    path_in_tmp(in, sizeof in, "locked");
    chmod(in, 0600);
    dropped = drop_dac();
    row("a file in a directory without search (x) permission (as root: capabilities dropped as above)", "afs_form_append_file",
        AFS_E_FILE, afs_form_append_file(f, p, "f", fresh()), &E, NULL);
    restore_dac(dropped);
    chmod(in, 0700);
    row("an empty path", "afs_form_append_file", AFS_E_FILE, afs_form_append_file(f, "", "f", fresh()), &E, NULL);
    row("path NULL", "afs_form_append_file", AFS_E_INVALID_ARGUMENT, afs_form_append_file(f, NULL, "f", fresh()), &E, NULL);
    path_in_tmp(p, sizeof p, "ok.txt");
    row("name NULL", "afs_form_append_file", AFS_E_INVALID_ARGUMENT, afs_form_append_file(f, p, NULL, fresh()), &E, NULL);
    row("name with byte 0xFF", "afs_form_append_file", AFS_E_INVALID_UTF8, afs_form_append_file(f, p, "n\xFF", fresh()), &E, NULL);
    row("MIME type `text/plain\\r\\nX-Injected: 1`", "afs_form_append_file_ex", AFS_E_INVALID_HEADER,
        afs_form_append_file_ex(f, p, "f", "ok.txt", "text/plain\r\nX-Injected: 1", fresh()), &E, NULL);
    row("filename with byte 0xFF", "afs_form_append_file_ex", AFS_E_INVALID_UTF8,
        afs_form_append_file_ex(f, p, "f", "\xFF.txt", NULL, fresh()), &E, NULL);
    row("filename `a\"b\\r\\n.txt` (escaped, not refused)", "afs_form_append_file_ex", AFS_OK,
        afs_form_append_file_ex(f, p, "f", "a\"b\r\n.txt", NULL, fresh()), &E, "accepted: written a%22b%0D%0A.txt");
    row("data NULL with length 3", "afs_form_append_form_data", AFS_E_INVALID_ARGUMENT,
        afs_form_append_form_data(f, NULL, 3, "f", fresh()), &E, NULL);
    row("filename NULL", "afs_form_append_file_data", AFS_E_INVALID_ARGUMENT,
        afs_form_append_file_data(f, "x", 1, "f", NULL, NULL, fresh()), &E, NULL);
    row("read function NULL", "afs_form_append_stream", AFS_E_INVALID_ARGUMENT,
        afs_form_append_stream(f, NULL, NULL, NULL, NULL, 1, "f", "f.bin", NULL, fresh()), &E, NULL);
    const char *names[] = { "Bad Name" }, *vals[] = { "v" };
    row("part header name `Bad Name`", "afs_form_append_part", AFS_E_INVALID_HEADER,
        afs_form_append_part(f, names, vals, 1, "b", 1, fresh()), &E, NULL);
    const char *names2[] = { "X-Part" }, *vals2[] = { "v\r\nX-Injected: 1" };
    row("part header value `v\\r\\nX-Injected: 1`", "afs_form_append_part", AFS_E_INVALID_HEADER,
        afs_form_append_part(f, names2, vals2, 1, "b", 1, fresh()), &E, NULL);
    row("header arrays NULL with count 1", "afs_form_append_part", AFS_E_INVALID_ARGUMENT,
        afs_form_append_part(f, NULL, NULL, 1, "b", 1, fresh()), &E, NULL);

    /* boundaries */
    char b71[72];
    memset(b71, 'b', 71);
    b71[71] = 0;
    const struct { const char *b, *what; } bounds[] = {
        {"", "empty"}, {b71, "71 characters"}, {"has space", "a space"}, {"ends-with-space ", "a trailing space"},
        {"quote\"d", "a double quote"}, {"semi;colon", "`;`"}, {"caf\xC3\xA9", "non-ASCII"}, {"a\r\nb", "CR LF"},
    };
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        snprintf(in, sizeof in, "boundary with %s: %s", bounds[i].what, S(bounds[i].b));
        row(in, "afs_form_set_boundary", AFS_E_INVALID_ARGUMENT, afs_form_set_boundary(f, bounds[i].b, fresh()), &E, NULL);
    }
    afs_form_free(f);
    f = form(s);
    afs_form_set_boundary(f, "abc", NULL);
    afs_form_append_form_data(f, "xx--abcxx", 9, "f", NULL);
    afs_request *r = afs_form_finish(f, fresh());
    row("boundary `abc` while a part's body holds `--abc`", "afs_form_finish", AFS_E_INVALID_ARGUMENT, STATUS_OF(r), &E, NULL);
    afs_request_free(r);
    afs_form_set_boundary(f, "other", NULL);
    r = afs_form_finish(f, fresh());
    row("the same form after setting another boundary", "afs_form_finish", AFS_OK, STATUS_OF(r), &E, "finished");
    afs_request_free(r);
    /* a spent form */
    row("a spent form (after afs_form_finish)", "afs_form_append_form_data", AFS_E_STATE,
        afs_form_append_form_data(f, "x", 1, "f", fresh()), &E, NULL);
    r = afs_form_finish(f, fresh());
    row("a spent form", "afs_form_finish", AFS_E_STATE, STATUS_OF(r), &E, NULL);
    afs_request_free(r);
    row("a spent form", "afs_form_set_boundary", AFS_E_STATE, afs_form_set_boundary(f, "x", fresh()), &E, NULL);
    afs_form_free(f);

    /* files changed between append and read */
    write_file("changing.txt", "0123456789", 10);
    path_in_tmp(p, sizeof p, "changing.txt");
    const char *how[] = { "truncated to 4 bytes", "extended to 12 bytes", "deleted", "made unreadable (mode 000; capabilities dropped for root)" };
    for (int k = 0; k < 4; k++) {
        write_file("changing.txt", "0123456789", 10);
        f = form(s);
        afs_form_append_file(f, p, "f", NULL);
        r = afs_form_finish(f, NULL);
        afs_form_free(f);
        if (k == 0) truncate(p, 4);
        if (k == 1) write_file("changing.txt", "0123456789ab", 12);
        if (k == 2) unlink(p);
        if (k == 3) chmod(p, 0);
        dropped = k == 3 ? drop_dac() : 0;
        snprintf(in, sizeof in, "a 10-byte file %s after append", how[k]);
        row(in, "afs_body_stream_read", k < 2 ? AFS_E_LENGTH_MISMATCH : AFS_E_IO, drain(afs_request_body_stream(r), fresh()), &E, NULL);
        restore_dac(dropped);
        afs_request_free(r);
    }
    chmod(p, 0644);

    /* callback parts */
    src_t src = { 10, 0, -1, 0, 0 };
    stream_row("callback yields 10 bytes, 11 declared", src, 11, 1, 0, AFS_E_LENGTH_MISMATCH);
    stream_row("callback yields 10 bytes, 9 declared", src, 9, 1, 0, AFS_E_LENGTH_MISMATCH);
    src_t fails = { 10, 0, 4, 0, 0 };
    stream_row("callback returns -1 after 4 bytes", fails, 10, 1, 0, AFS_E_IO);
    src_t over = { 10, 0, -1, 0, 1 };
    stream_row("callback returns more than asked", over, 10, 1, 0, AFS_E_IO);
    stream_row("rewind after reading a callback part without rewind function", src, 10, 0, 1, AFS_E_UNSUPPORTED);
    src_t bad_rewind = { 10, 0, -1, -1, 0 };
    stream_row("rewind function returns -1 (after the part was read)", bad_rewind, 10, 1, 2, AFS_E_IO);
    afs_serializer_free(s);
}

/* ---- body streams ------------------------------------------------------------------------------ */

static int cancel_at_first(void *ctx, uint64_t sent, uint64_t total) {
    (void)ctx; (void)sent; (void)total;
    return 1;
}

static void streams(void) {
    area = "body stream";
    afs_serializer *s = http();
    afs_body_stream *bs;
    afs_request *r = one_part(s, &bs);
    uint8_t buf[16];
    char in[200];
    uint64_t len = afs_body_stream_content_length(bs);
    snprintf(in, sizeof in, "offset content length + 1 (%llu)", (unsigned long long)(len + 1));
    row(in, "afs_body_stream_seek", AFS_E_INVALID_ARGUMENT, afs_body_stream_seek(bs, len + 1, fresh()), &E, NULL);
    row("offset UINT64_MAX", "afs_body_stream_seek", AFS_E_INVALID_ARGUMENT, afs_body_stream_seek(bs, UINT64_MAX, fresh()), &E, NULL);
    afs_body_stream_read(bs, NULL, 5);
    row("buffer NULL", "afs_body_stream_read", AFS_E_INVALID_ARGUMENT, afs_body_stream_error(bs, fresh()), &E, NULL);
    afs_body_stream_rewind(bs, NULL);
    afs_body_stream_read(bs, buf, 0);
    row("max_length 0", "afs_body_stream_read", AFS_E_INVALID_ARGUMENT, afs_body_stream_error(bs, fresh()), &E, NULL);
    afs_body_stream_rewind(bs, NULL);
    row("descriptor -1", "afs_body_stream_write_to_fd", AFS_E_INVALID_ARGUMENT, afs_body_stream_write_to_fd(bs, -1, NULL, fresh()), &E, NULL);
    {
        int dn = open("/dev/null", O_WRONLY);
        afs_body_stream_set_progress_cancel(bs, cancel_at_first, NULL);
        row("a progress callback that returns nonzero (cancel)", "afs_body_stream_write_to_fd", AFS_E_IO, afs_body_stream_write_to_fd(bs, dn, NULL, fresh()), &E, NULL);
        row("a read after the cancelled write (sticky until rewind)", "afs_body_stream_error", AFS_E_IO, afs_body_stream_error(bs, fresh()), &E, NULL);
        afs_body_stream_set_progress_cancel(bs, NULL, NULL);
        afs_body_stream_rewind(bs, NULL);
        close(dn);
    }
    row("a descriptor that is not open", "afs_body_stream_write_to_fd", AFS_E_IO, afs_body_stream_write_to_fd(bs, 987654, NULL, fresh()), &E, NULL);
    int ro = open("/dev/null", O_RDONLY);
    row("a descriptor open read-only", "afs_body_stream_write_to_fd", AFS_E_IO, afs_body_stream_write_to_fd(bs, ro, NULL, fresh()), &E, NULL);
    close(ro);
    char p[700];
    path_in_tmp(p, sizeof p, "no-such-dir/body.out");
    afs_request *copy = afs_request_write_body_to_file(r, p, fresh());
    row("a path in a missing directory", "afs_request_write_body_to_file", AFS_E_IO, STATUS_OF(copy), &E, NULL);
    afs_request_free(copy);
    copy = afs_request_write_body_to_file(r, "", fresh());
    row("an empty path", "afs_request_write_body_to_file", AFS_E_INVALID_ARGUMENT, STATUS_OF(copy), &E, NULL);
    afs_request_free(copy);
    copy = afs_request_write_body_to_file(r, tmp, fresh());
    row("a path that is a directory (`<tmp>`)", "afs_request_write_body_to_file", AFS_E_IO, STATUS_OF(copy), &E, NULL);
    afs_request_free(copy);
    afs_body_stream_close(bs);
    afs_body_stream_read(bs, buf, sizeof buf);
    row("a closed stream", "afs_body_stream_read", AFS_E_STATE, afs_body_stream_error(bs, fresh()), &E, NULL);
    row("a closed stream", "afs_body_stream_open", AFS_E_STATE, afs_body_stream_open(bs, fresh()), &E, NULL);
    row("a closed stream", "afs_body_stream_seek", AFS_E_STATE, afs_body_stream_seek(bs, 0, fresh()), &E, NULL);
    row("a closed stream", "afs_body_stream_write_to_fd", AFS_E_STATE, afs_body_stream_write_to_fd(bs, 1, NULL, fresh()), &E, NULL);
    path_in_tmp(p, sizeof p, "closed.out");
    copy = afs_request_write_body_to_file(r, p, fresh());
    row("a request whose stream is closed", "afs_request_write_body_to_file", AFS_E_STATE, STATUS_OF(copy), &E, NULL);
    afs_request_free(copy);
    afs_request_free(r);
    r = afs_serializer_request(s, "POST", "http://example.com/", NULL, NULL);
    copy = afs_request_write_body_to_file(r, p, fresh());
    row("a request without multipart body", "afs_request_write_body_to_file", AFS_E_INVALID_ARGUMENT, STATUS_OF(copy), &E, NULL);
    afs_request_free(copy);
    note_row("a request without multipart body", "afs_request_body_stream", afs_request_body_stream(r) == NULL,
             afs_request_body_stream(r) ? "a stream" : "NULL");
    afs_request_free(r);
    afs_serializer_free(s);
}

/* ---- response side ------------------------------------------------------------------------------ */

static void response_row(afs_response_serializer *rs, int status, const char *type, const char *body, size_t n,
                         const char *in, afs_status expected) {
    afs_value *v = NULL;
    afs_status st = afs_response_object(rs, status, type, body, n, &v, fresh());
    const char *ok = v ? "decoded" : "no value, no error";
    if (st != AFS_OK && v) {
        static const char tail[] = " [the body was decoded and returned too]";
        size_t k = strlen(E.message);
        if (k + sizeof tail <= sizeof E.message) memcpy(E.message + k, tail, sizeof tail);
    }
    row(in, "afs_response_object", expected, st, &E, ok);
    afs_value_free(v);
}

static void response(void) {
    area = "response status";
    afs_response_serializer *h = afs_response_serializer_new(AFS_RESPONSE_HTTP);
    const int statuses[] = { 100, 199, 204, 302, 304, 404, 418, 451, 500, 599, 600, 999, 0, -1 };
    char in[300];
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        snprintf(in, sizeof in, "status %d", statuses[i]);
        response_row(h, statuses[i], "text/plain", "x", 1, in, statuses[i] == 204 ? AFS_OK : AFS_E_UNACCEPTABLE_STATUS);
    }
    afs_response_serializer_free(h);

    area = "response type";
    afs_response_serializer *js = afs_response_serializer_new(AFS_RESPONSE_JSON);
    const struct { const char *type, *what; afs_status st; } types[] = {
        {"text/html", "text/html", AFS_E_UNACCEPTABLE_CONTENT_TYPE},
        {NULL, "absent, body `{}`", AFS_E_UNACCEPTABLE_CONTENT_TYPE},
        {"", "empty", AFS_E_UNACCEPTABLE_CONTENT_TYPE},
        {"application/jsonx", "application/jsonx", AFS_E_UNACCEPTABLE_CONTENT_TYPE},
        {"json", "`json` (no slash)", AFS_E_UNACCEPTABLE_CONTENT_TYPE},
        {"application/\xC3\xA9", "non-ASCII", AFS_E_UNACCEPTABLE_CONTENT_TYPE},
        {"application/\xFF", "invalid UTF-8", AFS_E_UNACCEPTABLE_CONTENT_TYPE},
        {"  Application/JSON ; charset=utf-8", "spaces, case and parameters", AFS_OK},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        snprintf(in, sizeof in, "Content-Type %s", types[i].what);
        response_row(js, 200, types[i].type, "{}", 2, in, types[i].st);
    }
    response_row(js, 500, "text/html", "<html>", 6, "status 500 and Content-Type text/html", AFS_E_UNACCEPTABLE_STATUS);
    response_row(js, 404, "application/json", "{\"error\":1}", 11, "status 404 with a JSON error document", AFS_E_UNACCEPTABLE_STATUS);
    response_row(js, 404, "application/json", "{oops", 5, "status 404 with a malformed JSON body", AFS_E_UNACCEPTABLE_STATUS);

    area = "response JSON";
    /* with FRAGMENTS_ALLOWED, so that scalars get past the top-level check */
    afs_response_serializer *frag = afs_response_serializer_new(AFS_RESPONSE_JSON);
    afs_response_serializer_set_json_reading_options(frag, AFS_JSON_READING_FRAGMENTS_ALLOWED, NULL);
    for (size_t i = 2; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        snprintf(in, sizeof in, "%s: %s (FRAGMENTS_ALLOWED)", bad_json[i].what, S(bad_json[i].text));
        response_row(frag, 200, "application/json", bad_json[i].text, strlen(bad_json[i].text), in, AFS_E_INVALID_JSON);
    }
    afs_response_serializer_free(frag);
    response_row(js, 200, "application/json", "1", 1, "a scalar at the top level without FRAGMENTS_ALLOWED: `1`", AFS_E_INVALID_JSON);
    response_row(js, 200, "application/json", "\xEF\xBB\xBF{}", 5, "a UTF-8 byte-order mark before `{}`", AFS_OK);
    response_row(js, 200, "application/json", "\xFE\xFF\x00{\x00}", 6, "UTF-16 (big-endian BOM) `{}`", AFS_E_INVALID_JSON);
    response_row(js, 200, "application/json", "{\"a\":1}\x00", 8, "a NUL byte after the value", AFS_E_INVALID_JSON);
    char deep[1100];
    for (int depth = 512; depth <= 513; depth++) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        snprintf(in, sizeof in, "%d nested arrays", depth);
        response_row(js, 200, "application/json", deep, (size_t)(2 * depth), in, depth == 512 ? AFS_OK : AFS_E_INVALID_JSON);
    }
    memset(deep, '[', 100000 > sizeof deep ? sizeof deep : 100000);
    response_row(js, 200, "application/json", deep, sizeof deep, "1100 `[` and nothing else", AFS_E_INVALID_JSON);
    response_row(js, 200, "application/json", NULL, 5, "body NULL with length 5", AFS_E_INVALID_ARGUMENT);
    row("out NULL", "afs_response_object", AFS_E_INVALID_ARGUMENT, afs_response_object(js, 200, "application/json", "{}", 2, NULL, fresh()), &E, NULL);

    area = "response plist";
    afs_response_serializer *ps = afs_response_serializer_new(AFS_RESPONSE_PLIST);
    const char *head = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">";
    const struct { const char *body, *what; } plists[] = {
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>a</key>", "XML cut inside a dict"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>a</key></dict></plist>", "a key without value"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><integer>12x</integer></plist>", "a bad integer"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><real>abc</real></plist>", "a bad real"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><date>yesterday</date></plist>", "a date that is not ISO 8601 (accepted: XML dates are returned as their text)"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><data>@@@</data></plist>", "bad base64 data"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><unknown/></plist>", "an unknown element"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><string>a</strin></plist>", "mismatched tags"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><string>&bogus;</string></plist>", "an unknown entity"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><string>a&#0;b</string></plist>", "`&#0;` (XML 1.0 has no U+0000; plistlib refuses it)"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><string>a&#x1F;b</string></plist>", "`&#x1F;` (a control character XML 1.0 does not allow)"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><string>a\x01" "b</string></plist>", "a raw U+0001 in a string"},
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><string>a\xEF\xBF\xBF" "b</string></plist>", "a raw U+FFFF in a string"},
        {"not a plist at all", "plain text"},
        {"bplist00", "a binary header only"},
        {"bplist00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "a binary plist with a zeroed trailer"},
        {"bplist01garbagegarbagegarbagegarbagegarbage", "binary version 01 with garbage"},
    };
    for (size_t i = 0; i < sizeof plists / sizeof plists[0]; i++) {
        snprintf(in, sizeof in, "%s", plists[i].what);
        size_t n = strlen(plists[i].body);
        if (strstr(plists[i].what, "zeroed trailer")) n = 40;
        response_row(ps, 200, "application/x-plist", plists[i].body, n, in, strstr(in, "accepted") ? AFS_OK : AFS_E_INVALID_PLIST);
    }
    /* a deep XML plist */
    static char xml[40000];
    size_t n = (size_t)snprintf(xml, sizeof xml, "%s", head);
    for (int i = 0; i < 600; i++) n += (size_t)snprintf(xml + n, sizeof xml - n, "<array>");
    for (int i = 0; i < 600; i++) n += (size_t)snprintf(xml + n, sizeof xml - n, "</array>");
    n += (size_t)snprintf(xml + n, sizeof xml - n, "</plist>");
    response_row(ps, 200, "application/x-plist", xml, n, "600 nested XML arrays", AFS_E_INVALID_PLIST);
    /* a binary plist whose shared objects expand: 100,000 references (2 bytes each) to one
     * 120-element array of references to the integer 1, 12.1M values from 200 KB */
    {
        size_t outer = 100000, inner = 120, cap = 64 + 2 * (outer + inner) + 64, k = 0;
        uint8_t *b = calloc(1, cap);
        size_t off[3];
        memcpy(b, "bplist00", 8); k = 8;
        off[0] = k;
        b[k++] = 0xAF; b[k++] = 0x12; b[k++] = 0; b[k++] = (uint8_t)(outer >> 16); b[k++] = (uint8_t)(outer >> 8); b[k++] = (uint8_t)outer;
        for (size_t i = 0; i < outer; i++) { b[k++] = 0; b[k++] = 1; }
        off[1] = k;
        b[k++] = 0xAF; b[k++] = 0x10; b[k++] = (uint8_t)inner;
        for (size_t i = 0; i < inner; i++) { b[k++] = 0; b[k++] = 2; }
        off[2] = k;
        b[k++] = 0x10; b[k++] = 1;
        size_t table = k;
        for (int i = 0; i < 3; i++) { b[k++] = 0; b[k++] = (uint8_t)(off[i] >> 16); b[k++] = (uint8_t)(off[i] >> 8); b[k++] = (uint8_t)off[i]; }
        k += 6;
        b[k++] = 4; b[k++] = 2;
        uint64_t fields[3] = {3, 0, table};
        for (int f = 0; f < 3; f++) for (int j = 7; j >= 0; j--) b[k++] = (uint8_t)(fields[f] >> (8 * j));
        snprintf(in, sizeof in, "a %zu-byte binary plist: 100,000 references to one shared 120-element array (12.1M values)", k);
        response_row(ps, 200, "application/x-plist", (const char *)b, k, in, AFS_E_INVALID_PLIST);
        free(b);
    }
    afs_response_serializer_free(ps);
    {
        afs_response_serializer *lim = afs_response_serializer_new(AFS_RESPONSE_JSON);
        afs_response_serializer_set_max_decoded_bytes(lim, 100);
        response_row(lim, 200, "application/json", "[1,2,3,4]", 9, "`[1,2,3,4]` with afs_response_serializer_set_max_decoded_bytes(100)", AFS_E_INVALID_JSON);
        afs_response_serializer_free(lim);
    }

    area = "response config";
    int first[] = { 300 }, last[] = { 200 };
    row("status range 300-200", "afs_response_serializer_set_acceptable_status_codes", AFS_E_INVALID_ARGUMENT,
        afs_response_serializer_set_acceptable_status_codes(js, first, last, 1, fresh()), &E, NULL);
    row("ranges NULL with count 1", "afs_response_serializer_set_acceptable_status_codes", AFS_E_INVALID_ARGUMENT,
        afs_response_serializer_set_acceptable_status_codes(js, NULL, NULL, 1, fresh()), &E, NULL);
    const char *bad_types[][1] = { {"text"}, {"text/html; charset=x"}, {"text /html"}, {"*/*x"}, {"t\xFF/x"}, {"/html"} };
    for (size_t i = 0; i < 6; i++) {
        snprintf(in, sizeof in, "acceptable type %s%s", S(bad_types[i][0]), i == 3 ? " (accepted: two tokens around `/`)" : "");
        row(in, "afs_response_serializer_set_acceptable_content_types", i == 4 ? AFS_E_INVALID_UTF8 : i == 3 ? AFS_OK : AFS_E_INVALID_ARGUMENT,
            afs_response_serializer_set_acceptable_content_types(js, bad_types[i], 1, fresh()), &E, NULL);
    }
    const char *null_entry[] = { NULL };
    row("a NULL entry", "afs_response_serializer_set_acceptable_content_types", AFS_E_INVALID_ARGUMENT,
        afs_response_serializer_set_acceptable_content_types(js, null_entry, 1, fresh()), &E, NULL);
    row("JSON reading options 8", "afs_response_serializer_set_json_reading_options", AFS_E_INVALID_ARGUMENT,
        afs_response_serializer_set_json_reading_options(js, 8, fresh()), &E, NULL);
    afs_response_serializer *c = afs_response_serializer_new_compound(NULL, 0, fresh());
    row("no members", "afs_response_serializer_new_compound", AFS_E_INVALID_ARGUMENT, STATUS_OF(c), &E, NULL);
    afs_response_serializer_free(c);
    const afs_response_serializer *members[] = { js, NULL };
    c = afs_response_serializer_new_compound(members, 2, fresh());
    row("a NULL member", "afs_response_serializer_new_compound", AFS_E_INVALID_ARGUMENT, STATUS_OF(c), &E, NULL);
    afs_response_serializer_free(c);
    afs_response_serializer *none = afs_response_serializer_new((afs_response_kind)9);
    note_row("response kind 9", "afs_response_serializer_new", none == NULL, none ? "a serializer" : "NULL");
    afs_response_serializer_free(none);
    afs_response_serializer_free(js);
}

/* ---- NULL and wrong-kind handles ------------------------------------------------------------------ */

static void handles(void) {
    area = "handles";
    afs_serializer *s = http();
    afs_value *d = afs_value_new_dict();
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    afs_request *req = afs_serializer_request(s, "GET", "http://example.com/", NULL, NULL);
    afs_value *out = NULL;
    uint8_t buf[4];
    afs_request *r;
    afs_form *f;

    r = afs_serializer_request(NULL, "GET", "http://example.com/", NULL, fresh());
    row("serializer NULL", "afs_serializer_request", AFS_E_INVALID_ARGUMENT, STATUS_OF(r), &E, NULL);
    r = afs_serializer_request((afs_serializer *)d, "GET", "http://example.com/", NULL, fresh());
    row("a value passed as serializer", "afs_serializer_request", AFS_E_INVALID_ARGUMENT, STATUS_OF(r), &E, NULL);
    r = afs_serializer_request(s, "GET", "http://example.com/", (afs_value *)s, fresh());
    row("a serializer passed as parameters", "afs_serializer_request", AFS_E_INVALID_ARGUMENT, STATUS_OF(r), &E, NULL);
    row("a request passed as serializer", "afs_serializer_set_header", AFS_E_INVALID_ARGUMENT,
        afs_serializer_set_header((afs_serializer *)req, "A", "b", fresh()), &E, NULL);
    row("a serializer passed as value", "afs_value_dict_set", AFS_E_INVALID_ARGUMENT,
        afs_value_dict_set((afs_value *)s, "k", AFS_NTS, afs_value_new_int(1), fresh()), &E, NULL);
    row("dictionary NULL", "afs_value_dict_set", AFS_E_INVALID_ARGUMENT,
        afs_value_dict_set(NULL, "k", AFS_NTS, afs_value_new_int(1), fresh()), &E, NULL);
    char *q = afs_query_string((afs_value *)rs, fresh());
    row("a response serializer passed as value", "afs_query_string", AFS_E_INVALID_ARGUMENT, STATUS_OF(q), &E, NULL);
    afs_free(q);
    f = afs_serializer_multipart_form((afs_serializer *)rs, "POST", "http://example.com/", NULL, fresh());
    row("a response serializer passed as serializer", "afs_serializer_multipart_form", AFS_E_INVALID_ARGUMENT, STATUS_OF(f), &E, NULL);
    row("form NULL", "afs_form_append_form_data", AFS_E_INVALID_ARGUMENT, afs_form_append_form_data(NULL, "x", 1, "f", fresh()), &E, NULL);
    row("a request passed as form", "afs_form_append_file", AFS_E_INVALID_ARGUMENT,
        afs_form_append_file((afs_form *)req, "/etc/hostname", "f", fresh()), &E, NULL);
    r = afs_form_finish((afs_form *)s, fresh());
    row("a serializer passed as form", "afs_form_finish", AFS_E_INVALID_ARGUMENT, STATUS_OF(r), &E, NULL);
    row("a request passed as body stream", "afs_body_stream_open", AFS_E_INVALID_ARGUMENT,
        afs_body_stream_open((afs_body_stream *)req, fresh()), &E, NULL);
    note_row("a request passed as body stream", "afs_body_stream_read",
             afs_body_stream_read((afs_body_stream *)req, buf, sizeof buf) == -1, "-1");
    row("stream NULL", "afs_body_stream_error", AFS_E_INVALID_ARGUMENT, afs_body_stream_error(NULL, fresh()), &E, NULL);
    r = afs_request_write_body_to_file((afs_request *)d, "/tmp/x", fresh());
    row("a value passed as request", "afs_request_write_body_to_file", AFS_E_INVALID_ARGUMENT, STATUS_OF(r), &E, NULL);
    row("a request serializer passed as response serializer", "afs_response_object", AFS_E_INVALID_ARGUMENT,
        afs_response_object((afs_response_serializer *)s, 200, "application/json", "{}", 2, &out, fresh()), &E, NULL);
    row("response serializer NULL", "afs_response_validate", AFS_E_INVALID_ARGUMENT,
        afs_response_validate(NULL, 200, NULL, NULL, 0, fresh()), &E, NULL);
    note_row("a value passed as request", "afs_request_url", afs_request_url((afs_request *)d) == NULL,
             afs_request_url((afs_request *)d) ? "a string" : "NULL");
    note_row("a serializer passed as value", "afs_value_kind_of", afs_value_kind_of((afs_value *)s) == AFS_VALUE_NULL,
             afs_value_kind_of((afs_value *)s) == AFS_VALUE_NULL ? "AFS_VALUE_NULL" : "another kind");
    note_row("a request passed as serializer", "afs_serializer_copy", afs_serializer_copy((afs_serializer *)req) == NULL, "NULL");
    note_row("status 12345", "afs_status_name", strcmp(afs_status_name((afs_status)12345), "AFS_E_UNKNOWN") == 0,
             afs_status_name((afs_status)12345));
    afs_request_free(req);
    afs_response_serializer_free(rs);
    afs_value_free(d);
    afs_serializer_free(s);
}

/* ---- the C edge (issues 10 and 11): spent handles, top-down building, lengths above
 * INT64_MAX, calls from inside callbacks ----------------------------------------------- */

typedef struct { uint64_t pos, len; afs_body_stream *bs; afs_request *req; int mode, calls; afs_status inner; afs_error e; } edge_src;
static int64_t edge_read(void *ctx, uint8_t *buf, size_t max) {
    edge_src *s = ctx;
    if (++s->calls == 2 && s->bs) {
        uint8_t tmp[8];
        if (s->mode == 1 && afs_body_stream_read(s->bs, tmp, sizeof tmp) == -1) s->inner = afs_body_stream_error(s->bs, &s->e);
        if (s->mode == 2) s->inner = afs_request_set_header(s->req, "X-A", "b", &s->e);
        if (s->mode == 3) afs_request_free(s->req);
    }
    uint64_t n = s->len - s->pos < max ? s->len - s->pos : max;
    memset(buf, 'x', (size_t)n);
    s->pos += n;
    return (int64_t)n;
}
static int edge_rewind(void *ctx) { ((edge_src *)ctx)->pos = 0; return 0; }
typedef struct { afs_body_stream *bs; int done; afs_status inner; afs_error e; } edge_progress;
static void edge_on_progress(void *ctx, uint64_t sent, uint64_t total) {
    edge_progress *p = ctx;
    (void)sent; (void)total;
    if (!p->done++) p->inner = afs_body_stream_seek(p->bs, 0, &p->e);
}
static afs_request *edge_request(afs_serializer *s, edge_src *src) {
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://example.com/", NULL, NULL);
    afs_form_set_boundary(f, "B", NULL);
    afs_form_append_stream(f, edge_read, edge_rewind, NULL, src, src->len, "f", "f.bin", NULL, NULL);
    afs_request *r = afs_form_finish(f, NULL);
    afs_form_free(f);
    src->bs = afs_request_body_stream(r);
    src->req = r;
    return r;
}

static void c_edge(void) {
    area = "C edge";
    afs_serializer *s = http();
    afs_value *root = afs_value_new_dict(), *child = afs_value_new_dict();
    afs_value_dict_set(root, "child", AFS_NTS, child, NULL);          /* child is spent now */
    row("a handle consumed by afs_value_dict_set, as dictionary", "afs_value_dict_set", AFS_E_STATE,
        afs_value_dict_set(child, "k", AFS_NTS, afs_value_new_int(1), fresh()), &E, NULL);
    afs_value *other = afs_value_new_array();
    row("a handle consumed by afs_value_dict_set, as value", "afs_value_append", AFS_E_STATE,
        afs_value_append(other, child, fresh()), &E, NULL);
    char *q = afs_query_string(child, fresh());
    row("a consumed handle as parameters", "afs_query_string", AFS_E_STATE, STATUS_OF(q), &E, NULL);
    afs_request *r = afs_serializer_request(s, "GET", "http://example.com/", child, fresh());
    row("a consumed handle as parameters", "afs_serializer_request", AFS_E_STATE, STATUS_OF(r), &E, NULL);
    afs_value *made = afs_value_append_new_dict(child, fresh());
    row("a consumed handle as array", "afs_value_append_new_dict", AFS_E_STATE, STATUS_OF(made), &E, NULL);
    afs_value_free(child);
    note_row("a consumed handle", "afs_value_free", afs_value_kind_of(child) == AFS_VALUE_NULL,
             "ignored (the tree it went into frees it); afs_value_kind_of gives AFS_VALUE_NULL");
    afs_value *set = afs_value_new_set();
    made = afs_value_append_new_dict(set, fresh());
    row("a set where an array is needed", "afs_value_append_new_dict", AFS_E_INVALID_ARGUMENT, STATUS_OF(made), &E, NULL);
    afs_value_dict_set(root, "m", AFS_NTS, afs_value_new_dict(), NULL);
    made = afs_value_dict_set_new_array((afs_value *)afs_value_get(root, "m"), "k", AFS_NTS, fresh());
    row("a borrowed member (from afs_value_get) as dictionary", "afs_value_dict_set_new_array", AFS_E_INVALID_ARGUMENT,
        STATUS_OF(made), &E, NULL);
    afs_value *inside = afs_value_dict_set_new_dict(root, "inside", AFS_NTS, NULL);
    row("a handle made inside a tree (afs_value_dict_set_new_dict) as value", "afs_value_append", AFS_E_INVALID_ARGUMENT,
        afs_value_append(other, inside, fresh()), &E, NULL);
    row("the root of the container's own tree as value", "afs_value_dict_set", AFS_E_INVALID_ARGUMENT,
        afs_value_dict_set(inside, "root", AFS_NTS, root, fresh()), &E, NULL);
    afs_value *deep = afs_value_new_array(), *c = deep;
    for (int i = 1; i < 512 && c; i++) c = afs_value_append_new_array(c, NULL);
    made = c ? afs_value_append_new_array(c, fresh()) : NULL;
    row("a 513th level built top-down", "afs_value_append_new_array", AFS_E_INVALID_ARGUMENT, STATUS_OF(made), &E, NULL);
    afs_value_free(deep);

    const size_t big = (size_t)INT64_MAX + 1;
    afs_value *v = afs_value_new_string("abc", SIZE_MAX - 1, fresh());
    row("length SIZE_MAX - 1 (not AFS_NTS)", "afs_value_new_string", AFS_E_INVALID_ARGUMENT, STATUS_OF(v), &E, NULL);
    row("key length INT64_MAX + 1", "afs_value_dict_set", AFS_E_INVALID_ARGUMENT,
        afs_value_dict_set(root, "k", big, afs_value_new_int(1), fresh()), &E, NULL);
    v = afs_value_parse_json("[1]", SIZE_MAX - 1, fresh());
    row("length SIZE_MAX - 1", "afs_value_parse_json", AFS_E_INVALID_ARGUMENT, STATUS_OF(v), &E, NULL);
    q = afs_percent_escape("a b", SIZE_MAX - 1, fresh());
    row("length SIZE_MAX - 1", "afs_percent_escape", AFS_E_INVALID_ARGUMENT, STATUS_OF(q), &E, NULL);
    char *str = afs_string_new("abc", SIZE_MAX - 1);
    note_row("length SIZE_MAX - 1", "afs_string_new", str == NULL, str ? "a string" : "NULL");
    afs_free(str);
    v = afs_value_new_data("abc", big);
    note_row("length INT64_MAX + 1", "afs_value_new_data", v == NULL, v ? "a value" : "NULL");
    afs_value_free(v);
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://example.com/", NULL, NULL);
    row("data length SIZE_MAX - 1", "afs_form_append_form_data", AFS_E_INVALID_ARGUMENT,
        afs_form_append_form_data(f, "abc", SIZE_MAX - 1, "n", fresh()), &E, NULL);
    row("data length AFS_NTS", "afs_form_append_file_data", AFS_E_INVALID_ARGUMENT,
        afs_form_append_file_data(f, "abc", AFS_NTS, "n", "f.txt", NULL, fresh()), &E, NULL);
    row("body length INT64_MAX + 1", "afs_form_append_part", AFS_E_INVALID_ARGUMENT,
        afs_form_append_part(f, NULL, NULL, 0, "abc", big, fresh()), &E, NULL);
    row("length INT64_MAX + 1", "afs_form_append_stream", AFS_E_INVALID_ARGUMENT,
        afs_form_append_stream(f, edge_read, NULL, NULL, NULL, (uint64_t)INT64_MAX + 1, "n", "f", NULL, fresh()), &E, NULL);
    afs_form_free(f);
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    row("body length SIZE_MAX - 1", "afs_response_validate", AFS_E_INVALID_ARGUMENT,
        afs_response_validate(rs, 200, "application/json", "{}", SIZE_MAX - 1, fresh()), &E, NULL);
    afs_response_serializer_free(rs);

    /* calls from inside callbacks */
    uint8_t buf[4096];
    edge_src src = {0, 100000, NULL, NULL, 0, 0, AFS_OK, {0, 0, {0}}};
    r = edge_request(s, &src);
    edge_progress p = {src.bs, 0, AFS_OK, {0, 0, {0}}};
    afs_body_stream_set_progress(src.bs, edge_on_progress, &p);
    int64_t n, total = 0;
    while ((n = afs_body_stream_read(src.bs, buf, sizeof buf)) > 0) total += n;
    row("afs_body_stream_seek from the stream's progress callback", "afs_body_stream_seek", AFS_E_STATE, p.inner, &p.e, NULL);
    note_row("the read loop around that progress callback", "afs_body_stream_read",
             total == (int64_t)afs_body_stream_content_length(src.bs), total == (int64_t)afs_body_stream_content_length(src.bs)
             ? "exactly Content-Length bytes" : "a different length");
    afs_request_free(r);
    edge_src src1 = {0, 100000, NULL, NULL, 1, 0, AFS_OK, {0, 0, {0}}};
    r = edge_request(s, &src1);
    total = 0;
    while ((n = afs_body_stream_read(src1.bs, buf, sizeof buf)) > 0) total += n;
    row("afs_body_stream_read from a read callback of the same stream", "afs_body_stream_read", AFS_E_STATE, src1.inner, &src1.e, NULL);
    afs_request_free(r);
    edge_src src2 = {0, 100000, NULL, NULL, 2, 0, AFS_OK, {0, 0, {0}}};
    r = edge_request(s, &src2);
    while (afs_body_stream_read(src2.bs, buf, sizeof buf) > 0) {}
    row("afs_request_set_header from a read callback of its body stream", "afs_request_set_header", AFS_E_STATE, src2.inner, &src2.e, NULL);
    afs_request_free(r);
    edge_src src3 = {0, 100000, NULL, NULL, 3, 0, AFS_OK, {0, 0, {0}}};
    r = edge_request(s, &src3);
    n = afs_body_stream_read(src3.bs, buf, sizeof buf);
    while (n > 0 && src3.calls < 2) n = afs_body_stream_read(src3.bs, buf, sizeof buf);
    note_row("afs_request_free from a read callback of its body stream", "afs_request_free", n > 0,
             n > 0 ? "deferred: the running read returns its bytes, then the request is freed" : "the read failed");

    afs_value_free(other);
    afs_value_free(set);
    afs_value_free(root);
    afs_serializer_free(s);
}

/* ---- issue 19: bounded in memory, time and framing ------------------------------------------ */

static volatile sig_atomic_t alarms;
static void on_alarm(int sig) { (void)sig; alarms++; }

/* A JSON object of n keys of one length sharing their first 7 bytes. */
static char *same_prefix_keys(int n, size_t *len) {
    char *t = malloc((size_t)n * 24 + 4);
    size_t k = 0;
    t[k++] = '{';
    for (int i = 0; i < n; i++) k += (size_t)sprintf(t + k, "%s\"aaaaaaa%08d\":%d", i ? "," : "", i, i);
    t[k++] = '}';
    t[k] = 0;
    *len = k;
    return t;
}

/* A write to a socketpair whose peer does not read, interrupted by SIGALRM (a handler
 * without SA_RESTART) with the interruptible option on; then resumed while the peer drains
 * (non-blocking descriptors, calls repeated after EAGAIN). `bs` NULL: the request. */
static void interrupted_write(afs_request *r, afs_body_stream *bs, uint64_t total) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) { perror("socketpair"); exit(2); }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, &old);
    struct itimerval once = { { 0, 0 }, { 0, 100000 } };
    if (bs) afs_body_stream_set_interruptible(bs, true);
    else afs_request_set_interruptible(r, true);
    setitimer(ITIMER_REAL, &once, NULL);
    uint64_t written = 0, sent = 0, got = 0;
    afs_status st = bs ? afs_body_stream_write_to_fd(bs, sv[0], &written, fresh())
                       : afs_request_write_to_fd(r, sv[0], &written, fresh());
    sent += written;
    const char *call = bs ? "afs_body_stream_write_to_fd" : "afs_request_write_to_fd";
    note_row(bs ? "SIGALRM while a multipart body stream's write blocks on a peer that does not read, "
                  "afs_body_stream_set_interruptible(bs, true)"
                : "SIGALRM while a request's write blocks on a peer that does not read, afs_request_set_interruptible(r, true)",
             call, st == AFS_E_IO && E.os_errno == EINTR && sent > 0 && sent < total,
             "AFS_E_IO with os_errno EINTR: returned to the caller, \"interrupted by a signal ... (call again to continue)\"");
    int interrupted = st == AFS_E_IO && E.os_errno == EINTR;
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    char sink[65536];
    ssize_t k;
    for (;;) {
        st = bs ? afs_body_stream_write_to_fd(bs, sv[0], &written, fresh()) : afs_request_write_to_fd(r, sv[0], &written, fresh());
        sent += written;
        while ((k = read(sv[1], sink, sizeof sink)) > 0) got += (uint64_t)k;
        if (st == AFS_OK || !(st == AFS_E_IO && (E.os_errno == EAGAIN || E.os_errno == EINTR))) break;
    }
    while ((k = read(sv[1], sink, sizeof sink)) > 0) got += (uint64_t)k;
    note_row("the same write, called again while the peer drains", call,
             interrupted && st == AFS_OK && sent == total && got == total,
             "resumed where the signal stopped it: every byte once, AFS_OK");
    sigaction(SIGALRM, &old, NULL);
    close(sv[0]);
    close(sv[1]);
}

static void issue19(void) {
    char text[300];
    /* walking: a parsed document's members are views; every entry point tells them apart */
    area = "value walk";
    afs_value *doc = afs_value_parse_json("{\"a\":[1,2],\"b\":{\"c\":\"d\"}}", AFS_NTS, fresh());
    const afs_value *a = afs_value_get(doc, "a"), *b = afs_value_get(doc, "b");
    note_row("a member of a parsed document, asked for twice", "afs_value_get, afs_value_at",
             a == afs_value_get(doc, "a") && a == afs_value_at(doc, 0), "the same borrowed pointer");
    afs_status st = afs_request_set_header((afs_request *)a, "X", "y", fresh());
    row("a parsed document's member given as a request", "afs_request_set_header", AFS_E_INVALID_ARGUMENT, st, &E, NULL);
    st = afs_value_append((afs_value *)a, afs_value_new_int(3), fresh());
    row("a parsed document's member given as a container to change", "afs_value_append", AFS_E_INVALID_ARGUMENT, st, &E, NULL);
    afs_value_dict_set(doc, "a", AFS_NTS, afs_value_new_null(), fresh());
    char *q = afs_query_string(a, fresh());
    row("a parsed document's member after its slot was replaced", "afs_query_string", AFS_E_STATE, STATUS_OF(q), &E, NULL);
    afs_free(q);
    afs_value *holder = afs_value_new_array();
    afs_value_append(holder, doc, fresh());
    q = afs_query_string(b, fresh());
    row("a parsed document's member after its root was consumed", "afs_query_string", AFS_E_STATE, STATUS_OF(q), &E, NULL);
    afs_free(q);
    note_row("the same member after its root was consumed", "afs_value_kind_of, afs_value_count",
             afs_value_kind_of(b) == AFS_VALUE_NULL && afs_value_count(b) == 0, "AFS_VALUE_NULL, 0 (as for NULL)");
    afs_value_free(holder);

    /* linear in the input */
    area = "complexity";
    size_t n;
    char *keys = same_prefix_keys(16000, &n);
    afs_value *v = afs_value_parse_json(keys, n, fresh());
    snprintf(text, sizeof text, "parsed: %zu keys (the repeated-key check hashes whole keys: linear)", afs_value_count(v));
    row("a JSON object of 16,000 keys sharing their length and first 7 bytes (`{\"aaaaaaa00000000\":0,...}`)",
        "afs_value_parse_json", AFS_OK, STATUS_OF(v), &E, text);
    afs_value_free(v);
    free(keys);
    afs_value *set = afs_value_new_set();
    for (int i = 0; i < 4000; i++) {
        afs_value *member = afs_value_new_set();
        afs_value_append(member, afs_value_new_int(i), NULL);
        afs_value_append(set, member, NULL);
    }
    size_t plen = 0;
    uint8_t *pickle = afs_value_to_pickle(set, &plen, fresh());
    v = afs_value_from_pickle(pickle, plen, fresh());
    snprintf(text, sizeof text, "read: a set of %zu members (containers hash by content: linear)", afs_value_count(v));
    row("a pickled set of 4,000 distinct one-member sets", "afs_value_from_pickle", AFS_OK, STATUS_OF(v), &E, text);
    afs_value_free(v);
    afs_free(pickle);
    afs_value_free(set);
    static char type_text[4000][32];
    const char *types[4001];
    for (int i = 0; i < 4000; i++) {
        snprintf(type_text[i], sizeof type_text[i], "application/x-t%d", i);
        types[i] = type_text[i];
    }
    types[4000] = "APPLICATION/X-T0";
    afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
    st = afs_response_serializer_set_acceptable_content_types(rs, types, 4001, fresh());
    row("4,001 acceptable content types, the last a repeat in other case", "afs_response_serializer_set_acceptable_content_types",
        AFS_OK, st, &E, "deduped through a set: linear");
    afs_response_serializer_free(rs);

    /* the library owns the framing */
    area = "framing";
    afs_serializer *s = http();
    afs_value *params = afs_value_new_dict();
    afs_value_dict_set(params, "a", AFS_NTS, afs_value_new_string("b", AFS_NTS, NULL), NULL);
    afs_request *r = afs_serializer_request(s, "POST", "http://example.com/x", params, fresh());
    const char *names[] = { "Content-Length", "transfer-encoding", "CONTENT-LENGTH" };
    const char *values[] = { "5", "chunked", NULL };
    for (int i = 0; i < 3; i++) {
        snprintf(text, sizeof text, "%s: %s set on a request", names[i], values[i] ? values[i] : "(NULL: remove)");
        st = afs_request_set_header(r, names[i], values[i], fresh());
        row(text, "afs_request_set_header", AFS_E_INVALID_HEADER, st, &E, NULL);
    }
    st = afs_serializer_set_header(s, "Transfer-Encoding", "chunked", fresh());
    row("Transfer-Encoding: chunked as a serializer default", "afs_serializer_set_header", AFS_E_INVALID_HEADER, st, &E, NULL);
    st = afs_serializer_set_header(s, "Content-Length", "300", fresh());
    row("Content-Length: 300 as a serializer default", "afs_serializer_set_header", AFS_E_INVALID_HEADER, st, &E, NULL);
    size_t hlen = 0;
    char *head = afs_request_copy_head(r, &hlen, fresh());
    int framings = 0;
    for (const char *p = head; p && (p = strstr(p, "\r\nContent-Length: ")) != NULL; p++) framings++;
    note_row("a form POST after the refused framing headers", "afs_request_copy_head",
             head && framings == 1 && strstr(head, "\r\nContent-Length: 3\r\n") && !strstr(head, "Transfer-Encoding"),
             "exactly one framing: Content-Length: 3 (the body's)");
    afs_free(head);
    afs_request_free(r);
    afs_form *form = afs_serializer_multipart_form(s, "POST", "http://example.com/up", NULL, fresh());
    const char *pn[] = { "Content-Disposition", "Content-Length" }, *pv[] = { "form-data; name=\"x\"", "999" };
    st = afs_form_append_part(form, pn, pv, 2, "abc", 3, fresh());
    row("a part header `Content-Length: 999` (inside the body, never in the request head)", "afs_form_append_part",
        AFS_OK, st, &E, "kept in the part; the request head is framed by the library");
    r = afs_form_finish(form, fresh());
    head = afs_request_copy_head(r, &hlen, NULL);
    framings = 0;
    for (const char *p = head; p && (p = strstr(p, "\r\nContent-Length: ")) != NULL; p++) framings++;
    snprintf(text, sizeof text, "Content-Length: %llu", (unsigned long long)afs_body_stream_content_length(afs_request_body_stream(r)));
    note_row("the multipart request of that form", "afs_request_copy_head", head && framings == 1 && strstr(head, text) != NULL,
             "exactly one framing: the body stream's exact length");
    afs_free(head);
    afs_request_free(r);
    afs_form_free(form);

    /* interruptible writes */
    area = "interruptible write";
    static char big[4 << 20];
    memset(big, 'x', sizeof big);
    afs_value_free(params);
    params = afs_value_new_dict();
    afs_value_dict_set(params, "blob", AFS_NTS, afs_value_new_string(big, sizeof big, NULL), NULL);
    r = afs_serializer_request(s, "POST", "http://example.com/x", params, fresh());
    head = afs_request_copy_head(r, &hlen, NULL);
    size_t blen = 0;
    afs_request_body(r, &blen);
    afs_free(head);
    interrupted_write(r, NULL, hlen + blen);
    afs_request_free(r);
    form = afs_serializer_multipart_form(s, "POST", "http://example.com/up", NULL, fresh());
    afs_form_append_file_data(form, big, sizeof big, "blob", "b.bin", "application/octet-stream", fresh());
    r = afs_form_finish(form, fresh());
    afs_body_stream *bs = afs_request_body_stream(r);
    interrupted_write(r, bs, afs_body_stream_content_length(bs));
    afs_request_free(r);
    afs_form_free(form);
    afs_value_free(params);
    afs_serializer_free(s);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    snprintf(tmp, sizeof tmp, "%s/afs_matrix_XXXXXX", dir);
    if (!mkdtemp(tmp)) { perror("mkdtemp"); return 2; }
    setenv("LANG", "C", 1);
    puts("| area | input | call | status | message (or result) |");
    puts("| --- | --- | --- | --- | --- |");
    values();
    json_text();
    configuration();
    requests();
    bodies();
    multipart();
    streams();
    response();
    handles();
    c_edge();
    issue19();
    issue23();
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "matrix: could not remove %s\n", tmp);
    fprintf(stderr, "matrix: %d rows, %d not as the header promises\n", rows, mismatches);
    return mismatches ? 1 : 0;
}
