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
        {"<?xml version=\"1.0\"?><plist version=\"1.0\"><date>yesterday</date></plist>", "a date that is not ISO 8601"},
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

/* ---- body transforms (issue 22) ------------------------------------------------------------ */

static int64_t fail_after_100(void *ctx, uint8_t *b, size_t n) {
    size_t *pos = ctx;
    if (*pos >= 100) return -1;
    size_t k = n < 100 - *pos ? n : 100 - *pos;
    memset(b, 'x', k);
    *pos += k;
    return (int64_t)k;
}
static int64_t three_bytes(void *ctx, uint8_t *b, size_t n) {
    size_t *pos = ctx;
    if (*pos >= 3 || n == 0) return 0;
    b[0] = 'a';
    (*pos)++;
    return 1;
}

static void body_transforms(void) {
    area = "body transforms";
    afs_request *r = afs_request_new("POST", "http://127.0.0.1/x", NULL);
    row("a request without a body", "afs_request_set_content_encoding", AFS_E_STATE,
        afs_request_set_content_encoding(r, "gzip", 0, 0, fresh()), &E, NULL);
    row("a request without a body", "afs_request_add_digest", AFS_E_STATE,
        afs_request_add_digest(r, "sha-256", AFS_DIGEST_HEADER, fresh()), &E, NULL);
    size_t p1 = 0;
    afs_request_set_body_stream(r, three_bytes, NULL, NULL, &p1, 3, NULL);
    row("coding `lzma`", "afs_request_set_content_encoding", AFS_E_UNSUPPORTED,
        afs_request_set_content_encoding(r, "lzma", 0, 0, fresh()), &E, NULL);
    row("gzip level 10", "afs_request_set_content_encoding", AFS_E_INVALID_ARGUMENT,
        afs_request_set_content_encoding(r, "gzip", 10, 0, fresh()), &E, NULL);
    row("flags 0x6 (unknown bits)", "afs_request_set_content_encoding", AFS_E_INVALID_ARGUMENT,
        afs_request_set_content_encoding(r, "gzip", 0, 6, fresh()), &E, NULL);
    row("algorithm `sha-1`", "afs_request_add_digest", AFS_E_UNSUPPORTED,
        afs_request_add_digest(r, "sha-1", AFS_DIGEST_HEADER, fresh()), &E, NULL);
    row("where = 9", "afs_request_add_digest", AFS_E_INVALID_ARGUMENT,
        afs_request_add_digest(r, "sha-256", (afs_digest_where)9, fresh()), &E, NULL);
    row("a header digest over a read callback without rewind", "afs_request_add_digest", AFS_E_UNSUPPORTED,
        afs_request_add_digest(r, "sha-256", AFS_DIGEST_HEADER, fresh()), &E, NULL);
    row("length 2^63 (neither a byte count nor AFS_LENGTH_UNKNOWN)", "afs_request_set_body_stream", AFS_E_INVALID_ARGUMENT,
        afs_request_set_body_stream(r, three_bytes, NULL, NULL, &p1, (uint64_t)1 << 63, fresh()), &E, NULL);
    char *none = afs_request_copy_trailers(r, NULL, fresh());
    row("trailers asked for before the body was read", "afs_request_copy_trailers", AFS_OK,
        STATUS_OF(none), &E, "\"\" (no trailer digest)");
    afs_free(none);
    afs_request_add_digest(r, "md5", AFS_DIGEST_TRAILER, NULL);
    char *t = afs_request_copy_trailers(r, NULL, fresh());
    row("trailers of a trailer digest before the body was read", "afs_request_copy_trailers", AFS_E_STATE, STATUS_OF(t), &E, t);
    afs_free(t);
    row("a body of unknown length sought to byte 1", "afs_body_stream_seek", AFS_E_UNSUPPORTED,
        afs_body_stream_seek(afs_request_body_stream(r), 1, fresh()), &E, NULL);
    afs_request_free(r);
    r = afs_request_new("PUT", "http://127.0.0.1/x", NULL);
    size_t p2 = 0;
    afs_request_set_body_stream(r, fail_after_100, NULL, NULL, &p2, AFS_LENGTH_UNKNOWN, NULL);
    afs_request_set_content_encoding(r, "br", 1, 0, NULL);
    char out[700];
    path_in_tmp(out, sizeof out, "transforms.out");
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    uint64_t n;
    row("a read callback failing after 100 bytes, inside a chunk of a br body", "afs_request_write_to_fd", AFS_E_IO,
        afs_request_write_to_fd(r, fd, &n, fresh()), &E, NULL);
    close(fd);
    afs_request_free(r);
    r = afs_request_new("PUT", "http://127.0.0.1/x", NULL);
    afs_request_set_body_stream(r, fail_after_100, NULL, NULL, &p2, 50, NULL);
    p2 = 0;
    afs_request_set_temp_dir(r, tmp, NULL);
    row("exact compression of a source declaring 50 bytes that yields 100", "afs_request_set_content_encoding", AFS_E_LENGTH_MISMATCH,
        afs_request_set_content_encoding(r, "gzip", 1, AFS_COMPRESS_EXACT, fresh()), &E, NULL);
    row("a temporary directory that does not exist", "afs_request_set_temp_dir", AFS_OK,
        afs_request_set_temp_dir(r, "/nonexistent/afs", fresh()), &E, "accepted (used at the next exact compression)");
    afs_request_free(r);
    r = afs_request_new("PUT", "http://127.0.0.1/x", NULL);
    size_t p3 = 0;
    afs_request_set_body_stream(r, three_bytes, NULL, NULL, &p3, AFS_LENGTH_UNKNOWN, NULL);
    afs_request_set_temp_dir(r, "/nonexistent/afs", NULL);
    row("exact compression with a temporary directory that does not exist", "afs_request_set_content_encoding", AFS_E_IO,
        afs_request_set_content_encoding(r, "zstd", 1, AFS_COMPRESS_EXACT, fresh()), &E, NULL);
    afs_request_free(r);
    afs_serializer *s = http();
    row("existing = 7", "afs_serializer_set_content_encoding", AFS_E_INVALID_ARGUMENT,
        afs_serializer_set_content_encoding(s, "gzip", 0, 0, (afs_existing_encoding)7, 0, fresh()), &E, NULL);
    afs_serializer_set_header(s, "Content-Encoding", "identity", NULL);
    afs_serializer_set_content_encoding(s, "gzip", 0, 0, AFS_EXISTING_ENCODING_ERROR, 0, NULL);
    afs_value *params = afs_value_new_dict();
    afs_value_dict_set(params, "a", AFS_NTS, afs_value_new_int(1), NULL);
    afs_request *q = afs_serializer_request(s, "POST", "http://127.0.0.1/x", params, fresh());
    row("a serializer rule `error` and a request with Content-Encoding", "afs_serializer_request", AFS_E_STATE, STATUS_OF(q), &E, NULL);
    afs_request_free(q);
    afs_value_free(params);
    afs_serializer_free(s);
}

/* ---- response reader (header section 14) ------------------------------------------------- */

/* Feeds `resp` (then eof) to a new reader set up by `limits`/`max_decoded`; one row. */
static void reader_row(const char *resp, size_t n, const char *in, const afs_reader_limits *limits,
                       uint64_t max_decoded, afs_status expected) {
    afs_response_reader *rd = afs_response_reader_new("GET", fresh());
    if (limits) afs_response_reader_set_limits(rd, limits, fresh());
    if (max_decoded) afs_response_reader_set_max_decoded_bytes(rd, max_decoded);
    afs_status st = afs_response_reader_feed(rd, (const uint8_t *)resp, n, NULL, fresh());
    const char *call = "afs_response_reader_feed";
    if (st == AFS_OK && afs_response_reader_state(rd) != AFS_READER_DONE) {
        st = afs_response_reader_eof(rd, fresh());
        call = "afs_response_reader_feed + _eof";
    }
    row(in, call, expected, st, &E, "read");
    afs_response_reader_free(rd);
}
#define READER_ROW(lit_, in_, lim_, max_, st_) reader_row((lit_), sizeof(lit_) - 1, (in_), (lim_), (max_), (st_))

static void response_reader(void) {
    area = "response reader framing";
    READER_ROW("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
               "Content-Length and Transfer-Encoding", NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "differing Content-Length values",
               NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab", "identical Content-Length values",
               NULL, 0, AFS_OK);
    READER_ROW("HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc", "Content-Length `+3`", NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", "Content-Length above 2^63",
               NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nContent-Length : 3\r\n\r\nabc", "whitespace before a colon", NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nX-A: b\r\n  c\r\n\r\n", "obs-fold", NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\nContent-Length: 0\n\n", "bare LF", NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nX-A: a\0b\r\n\r\n", "NUL in a field value", NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n", "CR in a field value", NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", "chunk size overflowing 2^63",
               NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY", "chunk data not followed by CRLF",
               NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab", "connection closed in a chunk",
               NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "connection closed before Content-Length bytes",
               NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "Transfer-Encoding in HTTP/1.0",
               NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nTransfer-Encoding: compress\r\n\r\n", "unknown transfer coding", NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/2 200 OK\r\n\r\n", "HTTP/2 status line", NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 20 OK\r\n\r\n", "two-digit status code", NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("", "no bytes, then EOF", NULL, 0, AFS_E_BAD_RESPONSE);

    area = "response reader limits";
    afs_reader_limits l1 = {0, 2, 0, 0}, l2 = {0, 0, 10, 0}, l3 = {40, 0, 0, 0}, l4 = {0, 0, 0, 4};
    READER_ROW("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", "3 fields, max_headers 2", &l1, 0, AFS_E_LIMIT);
    READER_ROW("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "a 15-byte status line, max_line_length 10", &l2, 0, AFS_E_LIMIT);
    READER_ROW("HTTP/1.1 200 OK\r\nA: 0123456789\r\nB: 0123456789\r\n\r\n", "a 51-byte head, max_head_bytes 40",
               &l3, 0, AFS_E_LIMIT);
    READER_ROW("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;abcdef\r\nx\r\n0\r\n\r\n",
               "a 7-byte chunk extension, max_chunk_extension 4", &l4, 0, AFS_E_LIMIT);
    /* "hello gzip\n" as gzip -n writes it (11 bytes decoded) */
    static const char gz[] = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 31\r\n\r\n"
        "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\x48\xcd\xc9\xc9\x57\x48\xaf\xca\x2c\xe0\x02\x00\x39\x7c\x63\x56\x0b\x00\x00\x00";
    READER_ROW(gz, "gzip body of 11 decoded bytes, decoding limit 10", NULL, 10, AFS_E_LIMIT);
    READER_ROW(gz, "gzip body of 11 decoded bytes, decoding limit 11", NULL, 11, AFS_OK);

    area = "response reader codings";
    static const char cut[] = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 20\r\n\r\n"
        "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\x48\xcd\xc9\xc9\x57\x48\xaf\xca\x2c";
    READER_ROW(cut, "truncated gzip body", NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 4\r\n\r\n\xff\xff\xff\xff", "corrupt br body",
               NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nContent-Encoding: zstd\r\nContent-Length: 4\r\n\r\nabcd", "corrupt zstd body",
               NULL, 0, AFS_E_BAD_RESPONSE);
    READER_ROW("HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: 1\r\n\r\nx", "one-byte deflate body",
               NULL, 0, AFS_E_BAD_RESPONSE);

    area = "response reader text";
    afs_response_reader *rd = afs_response_reader_new("GET", fresh());
    static const char kl[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=klingon\r\nContent-Length: 1\r\n\r\nx";
    afs_response_reader_feed(rd, (const uint8_t *)kl, sizeof kl - 1, NULL, fresh());
    char *t = afs_response_reader_text(rd, NULL, NULL, fresh());
    row("charset=klingon", "afs_response_reader_text", AFS_E_ENCODING, STATUS_OF(t), &E, "text");
    afs_free(t);
    afs_response_reader_free(rd);
    rd = afs_response_reader_new("GET", fresh());
    t = afs_response_reader_text(rd, NULL, NULL, fresh());
    row("a response not read yet", "afs_response_reader_text", AFS_E_STATE, STATUS_OF(t), &E, "text");
    afs_free(t);
    afs_response_reader_free(rd);
    rd = afs_response_reader_new("G ET", fresh());
    row("method `G ET`", "afs_response_reader_new", AFS_E_INVALID_METHOD, STATUS_OF(rd), &E, "a reader");
    afs_response_reader_free(rd);
}

/* ---- security policy (header section 13) ------------------------------------------------------ */

/* A certificate (www.example.com, 2020-2049, a dummy signature: no signature is verified). */
static const uint8_t matrix_cert[] = {
    0x30, 0x81, 0xF6, 0x30, 0x81, 0xE3, 0xA0, 0x03, 0x02, 0x01, 0x02, 0x02, 0x01, 0x01, 0x30, 0x0A,
    0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02, 0x30, 0x14, 0x31, 0x12, 0x30, 0x10,
    0x06, 0x03, 0x55, 0x04, 0x03, 0x0C, 0x09, 0x4D, 0x61, 0x74, 0x72, 0x69, 0x78, 0x20, 0x43, 0x41,
    0x30, 0x20, 0x17, 0x0D, 0x32, 0x30, 0x30, 0x31, 0x30, 0x31, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30,
    0x5A, 0x18, 0x0F, 0x32, 0x30, 0x34, 0x39, 0x31, 0x32, 0x33, 0x31, 0x32, 0x33, 0x35, 0x39, 0x35,
    0x39, 0x5A, 0x30, 0x1A, 0x31, 0x18, 0x30, 0x16, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0C, 0x0F, 0x77,
    0x77, 0x77, 0x2E, 0x65, 0x78, 0x61, 0x6D, 0x70, 0x6C, 0x65, 0x2E, 0x63, 0x6F, 0x6D, 0x30, 0x59,
    0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48,
    0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
    0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
    0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27,
    0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x2D, 0x2E, 0x2F, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37,
    0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F, 0x40, 0xA3, 0x1E, 0x30, 0x1C, 0x30, 0x1A, 0x06,
    0x03, 0x55, 0x1D, 0x11, 0x04, 0x13, 0x30, 0x11, 0x82, 0x0F, 0x77, 0x77, 0x77, 0x2E, 0x65, 0x78,
    0x61, 0x6D, 0x70, 0x6C, 0x65, 0x2E, 0x63, 0x6F, 0x6D, 0x30, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48,
    0xCE, 0x3D, 0x04, 0x03, 0x02, 0x03, 0x02, 0x00, 0x01
};

static void cert_row(const uint8_t *der, size_t n, const char *in) {
    afs_security_policy *p = afs_security_policy_new(AFS_PINNING_CERTIFICATE, NULL);
    row(in, "afs_security_policy_add_pinned_certificate", AFS_E_INVALID_ARGUMENT,
        afs_security_policy_add_pinned_certificate(p, der, n, fresh()), &E, "pinned");
    afs_security_policy_free(p);
}

static void pin_row(const char *pins, const char *in, afs_status expected) {
    afs_security_policy *p = afs_security_policy_new(AFS_PINNING_PUBLIC_KEY, NULL);
    row(in, "afs_security_policy_add_pinned_public_key_sha256", expected,
        afs_security_policy_add_pinned_public_key_sha256(p, pins, fresh()), &E, "pinned");
    afs_security_policy_free(p);
}

static void eval_row(afs_security_policy *p, const uint8_t *const *der, const size_t *len, size_t count,
                     const char *domain, bool trusted, const char *in, afs_status expected) {
    row(in, "afs_security_policy_evaluate", expected,
        afs_security_policy_evaluate(p, der, len, count, domain, trusted, fresh()), &E, "trusted");
}

static void security(void) {
    const size_t n = sizeof matrix_cert;
    uint8_t buf[600];
    area = "certificate";
    cert_row(matrix_cert, 0, "empty (0 bytes)");
    cert_row(matrix_cert, n - 1, "truncated by one byte");
    cert_row(matrix_cert, 40, "truncated inside tbsCertificate");
    memcpy(buf, matrix_cert, n);
    buf[n] = 0x00;
    cert_row(buf, n + 1, "a trailing byte after the certificate");
    buf[0] = 0x30; buf[1] = 0x80;                      /* indefinite length (BER) */
    memcpy(buf + 2, matrix_cert + 3, n - 3);
    buf[n - 1] = 0; buf[n] = 0;
    cert_row(buf, n + 1, "indefinite length (0x30 0x80 ... 0x00 0x00)");
    buf[0] = 0x30; buf[1] = 0x82; buf[2] = 0x00; buf[3] = matrix_cert[2];   /* 0x82 0x00 0xF6 */
    memcpy(buf + 4, matrix_cert + 3, n - 3);
    cert_row(buf, n + 1, "non-minimal length (0x82 0x00 0xF6)");
    size_t d = 2;
    buf[0] = 0x05; buf[1] = 0x00;
    for (int i = 0; i < 40; i++) { memmove(buf + 2, buf, d); buf[0] = 0x30; buf[1] = (uint8_t)d; d += 2; }
    cert_row(buf, d, "40 nested SEQUENCEs");
    memcpy(buf, matrix_cert, n);
    buf[0] = 0x31;
    cert_row(buf, n, "a SET where the Certificate SEQUENCE is");
    const char *key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    cert_row((const uint8_t *)key, strlen(key), "PEM holding a PRIVATE KEY block");
    const char *bad64 = "-----BEGIN CERTIFICATE-----\nMIIB*AAA\n-----END CERTIFICATE-----\n";
    cert_row((const uint8_t *)bad64, strlen(bad64), "PEM with a character outside base64");
    const char *open = "-----BEGIN CERTIFICATE-----\nMIIBAAAA\n";
    cert_row((const uint8_t *)open, strlen(open), "PEM without its END line");

    area = "public-key pins";
    pin_row("sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "one valid pin (32 zero bytes)", AFS_OK);
    pin_row("sha1//AAAAAAAAAAAAAAAAAAAAAAAAAAA=", "`sha1//` instead of `sha256//`", AFS_E_INVALID_ARGUMENT);
    pin_row("sha256//AAAA", "a pin of 3 bytes", AFS_E_INVALID_ARGUMENT);
    pin_row("sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "a pin without its padding", AFS_E_INVALID_ARGUMENT);
    pin_row("sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=;", "a trailing `;` (an empty entry)", AFS_E_INVALID_ARGUMENT);
    pin_row("sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=; sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "a space after `;`", AFS_E_INVALID_ARGUMENT);
    pin_row("sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA!=", "a character outside base64", AFS_E_INVALID_ARGUMENT);
    pin_row("sha256//\xC3", "invalid UTF-8", AFS_E_INVALID_UTF8);
    pin_row(NULL, "NULL", AFS_E_INVALID_ARGUMENT);

    area = "security policy";
    afs_security_policy *p = afs_security_policy_new(AFS_PINNING_NONE, NULL);
    const uint8_t *der[2] = {matrix_cert, NULL};
    size_t len[2] = {n, 3};
    eval_row(p, der, len, 1, "www.example.com", true, "the right host, a trusted chain", AFS_OK);
    eval_row(p, der, len, 1, "evil.example", true, "a host the certificate does not name", AFS_E_UNTRUSTED);
    eval_row(p, der, len, 1, "example.com", true, "the parent of the certificate's name", AFS_E_UNTRUSTED);
    eval_row(p, der, len, 1, "127.0.0.1", true, "an IP address the certificate does not name", AFS_E_UNTRUSTED);
    eval_row(p, der, len, 1, "www.example.com", false, "an untrusted chain, mode none", AFS_E_UNTRUSTED);
    eval_row(p, der, len, 1, "a..example", true, "a host with an empty label", AFS_E_INVALID_ARGUMENT);
    eval_row(p, der, len, 1, "*.example.com", true, "a wildcard as the host", AFS_E_INVALID_ARGUMENT);
    eval_row(p, der, len, 1, "www.\xFF.com", true, "a host that is not UTF-8", AFS_E_INVALID_UTF8);
    eval_row(p, der, len, 0, NULL, true, "count 0", AFS_E_INVALID_ARGUMENT);
    eval_row(p, der, len, 2, NULL, true, "chain_der[1] NULL", AFS_E_INVALID_ARGUMENT);
    eval_row(p, der, len, 65, NULL, true, "65 certificates", AFS_E_INVALID_ARGUMENT);
    eval_row(p, NULL, len, 1, NULL, true, "chain_der NULL", AFS_E_INVALID_ARGUMENT);
    der[1] = (const uint8_t *)"\x30\x80";
    len[1] = 2;
    eval_row(p, der, len, 2, NULL, true, "a malformed second certificate", AFS_E_INVALID_ARGUMENT);
    afs_security_policy_set_allows_invalid_certificates(p, true);
    eval_row(p, der, len, 1, "www.example.com", false, "invalid certificates allowed, domain validated, no pins", AFS_E_UNTRUSTED);
    afs_security_policy_free(p);
    p = afs_security_policy_new(AFS_PINNING_PUBLIC_KEY, NULL);
    eval_row(p, der, len, 1, "www.example.com", true, "public-key mode without pins", AFS_E_UNTRUSTED);
    afs_security_policy_add_pinned_public_key_sha256(p, "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", NULL);
    eval_row(p, der, len, 1, "www.example.com", true, "public-key mode, another key pinned", AFS_E_UNTRUSTED);
    afs_security_policy_free(p);
    p = afs_security_policy_new(AFS_PINNING_CERTIFICATE, NULL);
    afs_security_policy_add_pinned_certificate(p, matrix_cert, n, NULL);
    afs_security_policy_set_time(p, 4102444800);   /* 2100 */
    eval_row(p, der, len, 1, "www.example.com", false, "the pinned leaf, untrusted, after its notAfter", AFS_E_UNTRUSTED);
    afs_security_policy_free(p);
    eval_row(NULL, der, len, 1, NULL, true, "policy NULL", AFS_E_INVALID_ARGUMENT);
    afs_error *e = fresh();
    afs_security_policy *bad = afs_security_policy_new((afs_pinning_mode)9, e);
    row("mode 9", "afs_security_policy_new", AFS_E_INVALID_ARGUMENT, bad ? AFS_OK : E.code, &E, "made");
    afs_security_policy_free(bad);

    area = "security limits";
    p = afs_security_policy_new(AFS_PINNING_CERTIFICATE, NULL);
    afs_security_limits lim = {0};
    lim.max_der_depth = 257;
    row("max_der_depth 257", "afs_security_policy_set_limits", AFS_E_INVALID_ARGUMENT,
        afs_security_policy_set_limits(p, &lim, fresh()), &E, "set");
    row("limits NULL (the defaults)", "afs_security_policy_set_limits", AFS_OK,
        afs_security_policy_set_limits(p, NULL, fresh()), &E, "set");
    row("policy NULL", "afs_security_policy_set_limits", AFS_E_INVALID_ARGUMENT,
        afs_security_policy_set_limits(NULL, NULL, fresh()), &E, "set");
    lim.max_der_depth = 0;
    lim.max_pins = 1;
    lim.max_chain = 1;
    afs_security_policy_set_limits(p, &lim, NULL);
    afs_security_policy_add_pinned_certificate(p, matrix_cert, n, NULL);
    row("a second pin with max_pins 1", "afs_security_policy_add_pinned_public_key_sha256", AFS_E_LIMIT,
        afs_security_policy_add_pinned_public_key_sha256(p, "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", fresh()), &E, "pinned");
    der[1] = matrix_cert;
    len[1] = n;
    eval_row(p, der, len, 2, NULL, true, "2 certificates with max_chain 1", AFS_E_INVALID_ARGUMENT);
    afs_security_policy_free(p);
    afs_value *out = NULL;
    lim = (afs_security_limits){0};
    lim.max_certificate_bytes = n - 1;
    row("a certificate one byte above max_certificate_bytes", "afs_certificate_read_with_limits", AFS_E_INVALID_ARGUMENT,
        afs_certificate_read_with_limits(matrix_cert, n, &lim, &out, fresh()), &E, "read");
    afs_value_free(out);
    lim = (afs_security_limits){0};
    lim.max_der_depth = 3;
    row("a certificate deeper than max_der_depth 3", "afs_certificate_read_with_limits", AFS_E_INVALID_ARGUMENT,
        afs_certificate_read_with_limits(matrix_cert, n, &lim, &out, fresh()), &E, "read");
    afs_value_free(out);
}

/* ---- decoders (issue 26): query/form parsing limits and escapes, multipart limits and framing */

static afs_status feed_all(const char *ct, const afs_multipart_limits *l, const char *body, size_t n) {
    afs_multipart_parser *p = afs_multipart_parser_new(ct, l, NULL, NULL, fresh());
    if (!p) return E.code;
    afs_status st = afs_multipart_parser_feed(p, (const uint8_t *)body, n, fresh());
    if (st == AFS_OK) st = afs_multipart_parser_finish(p, fresh());
    afs_multipart_parser_free(p);
    return st;
}

static size_t n_records_scratch;

static char *repeat(const char *head, const char *unit, size_t times, const char *tail, size_t *len) {
    size_t hu = strlen(head), uu = strlen(unit), tu = strlen(tail);
    char *b = malloc(hu + uu * times + tu + 1);
    memcpy(b, head, hu);
    for (size_t i = 0; i < times; i++) memcpy(b + hu + i * uu, unit, uu);
    memcpy(b + hu + uu * times, tail, tu + 1);
    *len = hu + uu * times + tu;
    return b;
}

/* ---- multipart records (afs_multipart_parser_feed_events) ---------------------------------- */

static afs_status feed_records_all(const char *ct, const afs_multipart_limits *l, const char *body, size_t n) {
    afs_multipart_event ev[16];
    afs_multipart_feed_result r;
    afs_multipart_parser *p = afs_multipart_parser_new(ct, l, NULL, NULL, fresh());
    if (!p) return E.code;
    size_t off = 0;
    afs_status st;
    do {
        st = afs_multipart_parser_feed_events(p, (const uint8_t *)body + off, n - off, ev, 16, &r, fresh());
        off += r.consumed;
    } while (st == AFS_OK && (r.more || off < n));
    if (st == AFS_OK) st = afs_multipart_parser_finish(p, fresh());
    afs_multipart_parser_free(p);
    return st;
}

static void multipart_records(void) {
    area = "decoders";
    const char *ct = "multipart/form-data; boundary=b";
    char *b = repeat("", "--b\r\n\r\nx\r\n", 1001, "--b--\r\n", &n_records_scratch);
    row("1001 parts, fed as records (default max_parts 1000)", "afs_multipart_parser_feed_events", AFS_E_LIMIT,
        feed_records_all(ct, NULL, b, n_records_scratch), &E, NULL);
    free(b);
    b = repeat("--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n", "z", (1u << 20) + 1, "\r\n--b--", &n_records_scratch);
    row("a 1 MiB + 1 field without filename, fed as records (default max_field_bytes)", "afs_multipart_parser_feed_events", AFS_E_LIMIT,
        feed_records_all(ct, NULL, b, n_records_scratch), &E, NULL);
    free(b);
    row("a header line without a colon, fed as records", "afs_multipart_parser_feed_events", AFS_E_INVALID_MULTIPART,
        feed_records_all(ct, NULL, "--b\r\nnocolon\r\n\r\n--b--", 22), &E, NULL);
    row("a body that ends before its closing boundary, fed as records", "afs_multipart_parser_finish", AFS_E_INVALID_MULTIPART,
        feed_records_all(ct, NULL, "--b\r\n\r\nxyz", 11), &E, NULL);
    afs_multipart_event ev[4];
    afs_multipart_feed_result r;
    afs_multipart_parser *p = afs_multipart_parser_new(ct, NULL, NULL, NULL, fresh());
    row("NULL events array", "afs_multipart_parser_feed_events", AFS_E_INVALID_ARGUMENT,
        afs_multipart_parser_feed_events(p, (const uint8_t *)"--b", 3, NULL, 4, &r, fresh()), &E, NULL);
    row("max_events 0", "afs_multipart_parser_feed_events", AFS_E_INVALID_ARGUMENT,
        afs_multipart_parser_feed_events(p, (const uint8_t *)"--b", 3, ev, 0, &r, fresh()), &E, NULL);
    row("NULL result", "afs_multipart_parser_feed_events", AFS_E_INVALID_ARGUMENT,
        afs_multipart_parser_feed_events(p, (const uint8_t *)"--b", 3, ev, 4, NULL, fresh()), &E, NULL);
    row("NULL bytes with length 3", "afs_multipart_parser_feed_events", AFS_E_INVALID_ARGUMENT,
        afs_multipart_parser_feed_events(p, NULL, 3, ev, 4, &r, fresh()), &E, NULL);
    afs_multipart_parser_feed_events(p, (const uint8_t *)"--b\r\n\r\n", 7, ev, 4, &r, fresh());
    row("afs_multipart_parser_feed on a parser fed as records", "afs_multipart_parser_feed", AFS_E_STATE,
        afs_multipart_parser_feed(p, (const uint8_t *)"x", 1, fresh()), &E, NULL);
    afs_multipart_parser_free(p);
    row("a NULL parser", "afs_multipart_parser_feed_events", AFS_E_INVALID_ARGUMENT,
        afs_multipart_parser_feed_events(NULL, (const uint8_t *)"--b", 3, ev, 4, &r, fresh()), &E, NULL);
}

static void decoders(void) {
    area = "decoders";
    afs_value *v;
    size_t n;
    char *q = repeat("", "k=v&", 1001, "", &n);
    v = afs_query_parse(q, n, NULL, fresh());
    row("a query with 1001 parameters (default max_params 1000)", "afs_query_parse", AFS_E_LIMIT, STATUS_OF(v), &E, "parsed");
    afs_value_free(v);
    free(q);
    q = repeat("a=", "x", 65537, "", &n);
    v = afs_query_parse(q, n, NULL, fresh());
    row("a value of 65537 bytes (default max_length 65536)", "afs_query_parse", AFS_E_LIMIT, STATUS_OF(v), &E, "parsed");
    afs_value_free(v);
    free(q);
    afs_query_parse_options o = {0};
    o.flags = AFS_QUERY_REFUSE_DEEP;
    v = afs_query_parse("a[b][c][d][e][f][g]=1", AFS_NTS, &o, fresh());
    row("a name 6 brackets deep with AFS_QUERY_REFUSE_DEEP (default max_depth 5)", "afs_query_parse", AFS_E_LIMIT, STATUS_OF(v), &E, "parsed");
    afs_value_free(v);
    v = afs_query_parse("a[b][c][d][e][f][g]=1", AFS_NTS, NULL, fresh());
    row("a name 6 brackets deep (default: the rest is one literal key)", "afs_query_parse", AFS_OK, STATUS_OF(v), &E, "{a:{b:{c:{d:{e:{f:{\"[g]\":\"1\"}}}}}}}");
    afs_value_free(v);
    v = afs_query_parse("a=%zz", AFS_NTS, NULL, fresh());
    row("a malformed escape `%zz`", "afs_query_parse", AFS_E_INVALID_ARGUMENT, STATUS_OF(v), &E, "parsed");
    afs_value_free(v);
    v = afs_query_parse("a=%E9", AFS_NTS, NULL, fresh());
    row("an escape that is not UTF-8 `%E9`", "afs_query_parse", AFS_E_INVALID_UTF8, STATUS_OF(v), &E, "parsed");
    afs_value_free(v);
    v = afs_query_parse("a[]=1&a[x]=2", AFS_NTS, NULL, fresh());
    row("a key on an array: `a[]=1&a[x]=2`", "afs_query_parse", AFS_E_INVALID_ARGUMENT, STATUS_OF(v), &E, "parsed");
    afs_value_free(v);
    v = afs_form_body_parse(NULL, 4, NULL, fresh());
    row("NULL body with length 4", "afs_form_body_parse", AFS_E_INVALID_ARGUMENT, STATUS_OF(v), &E, "parsed");
    afs_value_free(v);

    const char *ct = "multipart/form-data; boundary=b";
    char *b = repeat("", "--b\r\n\r\nx\r\n", 1001, "--b--\r\n", &n);
    row("1001 parts (default max_parts 1000; Go CVE-2022-41725/CVE-2023-24536)", "afs_multipart_parser_feed", AFS_E_LIMIT, feed_all(ct, NULL, b, n), &E, NULL);
    free(b);
    b = repeat("--b\r\n", "X: 1\r\n", 33, "\r\nx\r\n--b--", &n);
    row("33 headers in a part (default max_headers 32; CVE-2023-24536)", "afs_multipart_parser_feed", AFS_E_LIMIT, feed_all(ct, NULL, b, n), &E, NULL);
    free(b);
    b = repeat("--b\r\n", "X: 0123456789012345678901234567890123456789012345678901234567890123456789\r\n", 240, "\r\nx\r\n--b--", &n);
    afs_multipart_limits many = {0};
    many.max_headers = 1000;
    row("17 KiB of header lines in a part (default max_header_bytes 16384; max_headers 1000)", "afs_multipart_parser_feed", AFS_E_LIMIT, feed_all(ct, &many, b, n), &E, NULL);
    free(b);
    b = repeat("--b\r\nX: ", "a", 100000, "", &n);
    row("a 100 KB header line without CRLF (default max_line_length 16384; CVE-2023-45290)", "afs_multipart_parser_feed", AFS_E_LIMIT, feed_all(ct, NULL, b, n), &E, NULL);
    free(b);
    b = repeat("--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n", "z", (1u << 20) + 1, "\r\n--b--", &n);
    row("a 1 MiB + 1 field without filename (default max_field_bytes; busboy/multer)", "afs_multipart_parser_feed", AFS_E_LIMIT, feed_all(ct, NULL, b, n), &E, NULL);
    free(b);
    afs_multipart_limits l = {0};
    l.max_total_bytes = 100;
    b = repeat("--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\n", "z", 200, "\r\n--b--", &n);
    row("a 300-byte body with max_total_bytes 100", "afs_multipart_parser_feed", AFS_E_LIMIT, feed_all(ct, &l, b, n), &E, NULL);
    free(b);
    b = repeat("--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n", "z", 10, "", &n);
    row("a body that ends before its closing boundary", "afs_multipart_parser_finish", AFS_E_INVALID_MULTIPART, feed_all(ct, NULL, b, n), &E, NULL);
    free(b);
    row("no boundary line at all", "afs_multipart_parser_finish", AFS_E_INVALID_MULTIPART, feed_all(ct, NULL, "hello", 5), &E, NULL);
    row("text after a boundary: `--b x`", "afs_multipart_parser_feed", AFS_E_INVALID_MULTIPART, feed_all(ct, NULL, "--b x\r\n\r\n--b--", 15), &E, NULL);
    row("a header line without a colon", "afs_multipart_parser_feed", AFS_E_INVALID_MULTIPART, feed_all(ct, NULL, "--b\r\nnocolon\r\n\r\n--b--", 22), &E, NULL);
    row("invalid base64 in a base64 part", "afs_multipart_parser_feed", AFS_E_INVALID_MULTIPART,
        feed_all(ct, NULL, "--b\r\nContent-Transfer-Encoding: base64\r\n\r\na*==\r\n--b--", 53), &E, NULL);
    afs_multipart_parser *p = afs_multipart_parser_new("multipart/form-data", NULL, NULL, NULL, fresh());
    row("a content type without a boundary", "afs_multipart_parser_new", AFS_E_INVALID_ARGUMENT, STATUS_OF(p), &E, "a parser");
    afs_multipart_parser_free(p);
    b = repeat("", "q", 71, "", &n);
    p = afs_multipart_parser_new(b, NULL, NULL, NULL, fresh());
    row("a 71-byte boundary", "afs_multipart_parser_new", AFS_E_INVALID_ARGUMENT, STATUS_OF(p), &E, "a parser");
    afs_multipart_parser_free(p);
    free(b);
    afs_multipart_reader *rd = afs_multipart_reader_new(-1, "b", NULL, fresh());
    row("fd -1", "afs_multipart_reader_new", AFS_E_INVALID_ARGUMENT, rd ? AFS_OK : E.code, &E, "a reader");
    afs_multipart_reader_free(rd);
}

/* ---- images and the rest of the response family (issue 24) ---------------------------------- */

static void images(void) {
    char in[300];
    area = "response image";
    afs_response_serializer *is = afs_response_serializer_new(AFS_RESPONSE_IMAGE);
    /* a valid 3x2 PNG: IHDR, IDAT, IEND with their CRCs */
    static const unsigned char png[] = {
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
        0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0x12, 0x16, 0xf1,
        0x4d, 0x00, 0x00, 0x00, 0x01, 0x49, 0x44, 0x41, 0x54, 0x00, 0x28, 0x38, 0x7d, 0xe8, 0x00, 0x00,
        0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82 };
    response_row(is, 200, "image/png", (const char *)png, sizeof png, "a valid 3x2 PNG", AFS_OK);
    for (size_t n = 1; n < sizeof png; n += 9) {
        snprintf(in, sizeof in, "that PNG cut to %zu bytes", n);
        response_row(is, 200, "image/png", (const char *)png, n, in, AFS_E_INVALID_IMAGE);
    }
    response_row(is, 200, "image/jpeg", (const char *)png, sizeof png, "that PNG as image/jpeg", AFS_E_INVALID_IMAGE);
    unsigned char crc[sizeof png];
    memcpy(crc, png, sizeof png);
    crc[30] ^= 1;
    response_row(is, 200, "image/png", (const char *)crc, sizeof crc, "that PNG with a wrong IHDR CRC", AFS_E_INVALID_IMAGE);
    const struct { const char *type, *body; size_t n; const char *what; } bad[] = {
        {"image/gif", "GIF89a\x01\x00\x01\x00\x00\x00\x00;", 14, "a GIF without any image"},
        {"image/gif", "GIF89a\x00\x00\x01\x00\x00\x00\x00;", 14, "a GIF with screen width 0"},
        {"image/jpeg", "\xFF\xD8\xFF\xD9", 4, "a JPEG of SOI and EOI"},
        {"image/jpeg", "\xFF\xD8\xFF\xC0\x00\x0B\x08\x00\x00\x00\x01\x01\x01\x11\x00\xFF\xD9", 17, "a JPEG with height 0 (DNL)"},
        {"image/bmp", "BM\x00\x00\x00\x00\x00\x00\x00\x00\x1A\x00\x00\x00\x0C\x00\x00\x00\x01\x00\x01\x00\x01\x00\x18\x00", 26, "a BMP core header without its pixels"},
        {"image/bmp", "BM\x00\x00\x00\x00\x00\x00\x00\x00\x1A\x00\x00\x00\x2C\x00\x00\x00", 18, "a BMP with DIB header size 44"},
        {"image/tiff", "II*\x00\x08\x00\x00\x00\x00\x00\x00\x00", 12, "a TIFF whose first IFD has no entries"},
        {"image/tiff", "II*\x00\x00\x00\x00\x00", 8, "a TIFF without any IFD"},
        {"image/tiff", "II+\x00\x08\x00\x00\x00", 8, "a BigTIFF header"},
        {"image/x-icon", "\x00\x00\x01\x00\x00\x00", 6, "an ICO with no entries"},
        {"image/x-icon", "\x00\x00\x01\x00\x01\x00\x10\x10\x00\x00\x01\x00\x20\x00\x00\x10\x00\x00\x16\x00\x00\x00", 22, "an ICO entry past the end"},
        {"image/webp", "RIFF\x04\x00\x00\x00WEBP", 12, "a RIFF WEBP with no chunk"},
        {"image/webp", "RIFF\x11\x00\x00\x00WEBPVP8L\x05\x00\x00\x00\x2F\x00\x00\x00\xE0", 25, "a VP8L with version 7"},
        {"image/x-xbitmap", "#define a_width 8\n#define a_height 2\nstatic char a_bits[] = { 0x00 };", 68, "an XBM with 1 of 2 values"},
        {"image/png", "hello", 5, "text as image/png"},
        {"image/png", "\x89PN", 3, "a PNG cut inside its signature"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        response_row(is, 200, bad[i].type, bad[i].body, bad[i].n, bad[i].what, AFS_E_INVALID_IMAGE);
    afs_response_serializer_set_max_image_pixels(is, 5, fresh());
    response_row(is, 200, "image/png", (const char *)png, sizeof png, "the 3x2 PNG with max_image_pixels 5", AFS_E_LIMIT);
    row("image scale 0", "afs_response_serializer_set_image_scale", AFS_E_INVALID_ARGUMENT,
        afs_response_serializer_set_image_scale(is, 0.0, fresh()), &E, NULL);
    row("image scale NaN", "afs_response_serializer_set_image_scale", AFS_E_INVALID_ARGUMENT,
        afs_response_serializer_set_image_scale(is, 0.0 / 0.0, fresh()), &E, NULL);
    row("serializer NULL", "afs_response_serializer_set_max_image_pixels", AFS_E_INVALID_ARGUMENT,
        afs_response_serializer_set_max_image_pixels(NULL, 5, fresh()), &E, NULL);
    afs_response_serializer_free(is);

    area = "response rules";
    afs_response_serializer *js = afs_response_serializer_new(AFS_RESPONSE_JSON);
    const int codes[] = { 204, 205 }, bad_codes[] = { 204, 1000 };
    afs_response_serializer_set_empty_response_codes(js, codes, 2, fresh());
    response_row(js, 200, "application/json", "", 0, "an empty JSON body, status 200, codes 204 205", AFS_E_INVALID_JSON);
    response_row(js, 204, "application/json", "", 0, "an empty JSON body, status 204, codes 204 205", AFS_OK);
    row("an empty body for a HEAD request, status 200", "afs_response_object_for_method", AFS_OK,
        afs_response_object_for_method(js, "HEAD", 200, "application/json", "", 0, &(afs_value *){NULL}, fresh()), &E, "no value, no error");
    row("codes {204, 1000}", "afs_response_serializer_set_empty_response_codes", AFS_E_INVALID_ARGUMENT,
        afs_response_serializer_set_empty_response_codes(js, bad_codes, 2, fresh()), &E, NULL);
    row("codes NULL with count 2", "afs_response_serializer_set_empty_response_codes", AFS_E_INVALID_ARGUMENT,
        afs_response_serializer_set_empty_response_codes(js, NULL, 2, fresh()), &E, NULL);
    row("out NULL", "afs_response_object_for_method", AFS_E_INVALID_ARGUMENT,
        afs_response_object_for_method(js, "GET", 200, "application/json", "{}", 2, NULL, fresh()), &E, NULL);
    response_row(js, 200, "application/vnd.api+json", "{}", 2, "application/vnd.api+json without the suffix option", AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    afs_response_serializer_set_accepts_structured_suffix(js, true);
    response_row(js, 200, "application/+json", "{}", 2, "application/+json (empty name) with the suffix option", AFS_E_UNACCEPTABLE_CONTENT_TYPE);
    response_row(js, 500, "application/problem+json", "{\"title\":1}", 11, "a problem document with status 500", AFS_E_UNACCEPTABLE_STATUS);
    response_row(js, 500, "application/problem+json", "{oops", 5, "a malformed problem document with status 500", AFS_E_UNACCEPTABLE_STATUS);
    afs_response_serializer_set_strips_xssi_prefix(js, true);
    response_row(js, 200, "application/json", ")]}'\n[1,]", 9, "an XSSI prefix before malformed JSON", AFS_E_INVALID_JSON);
    response_row(js, 200, "application/json", ")]}'", 4, "an XSSI prefix alone", AFS_E_INVALID_JSON);
    afs_response_serializer_free(js);

    area = "response plist";
    afs_response_serializer *ps = afs_response_serializer_new(AFS_RESPONSE_PLIST);
    response_row(ps, 200, "application/x-plist", "\xFF\xFE<\x00p\x00", 7, "UTF-16LE cut to an odd byte count", AFS_E_INVALID_PLIST);
    response_row(ps, 200, "application/x-plist", "\xFE\xFF\xD8\x00\x00<", 6, "UTF-16BE with an unpaired high surrogate", AFS_E_INVALID_PLIST);
    response_row(ps, 200, "application/x-plist", "<plist><date>2019-02-29T00:00:00Z</date></plist>", 48, "<date> of 29 February 2019", AFS_E_INVALID_PLIST);
    afs_response_serializer_free(ps);
}

/* ---- XML (header section 11) ---------------------------------------------------------------- */

static const struct { const char *what; const char *text; size_t len; afs_status expected; } bad_xml[] = {
    { "empty input", "", 0, AFS_E_INVALID_XML },
    { "mismatched end tag", "<r><a></r>", 0, AFS_E_INVALID_XML },
    { "unclosed element", "<r><a>", 0, AFS_E_INVALID_XML },
    { "two roots", "<a/><b/>", 0, AFS_E_INVALID_XML },
    { "duplicate attribute", "<r a='1' a='2'/>", 0, AFS_E_INVALID_XML },
    { "duplicate attribute after namespace expansion", "<r xmlns:a='u' xmlns:b='u' a:x='1' b:x='2'/>", 0, AFS_E_INVALID_XML },
    { "'<' in an attribute value", "<r a='<'/>", 0, AFS_E_INVALID_XML },
    { "']]>' in text", "<r>]]></r>", 0, AFS_E_INVALID_XML },
    { "character reference to U+0000", "<r>&#0;</r>", 0, AFS_E_INVALID_XML },
    { "undeclared entity", "<r>&e;</r>", 0, AFS_E_INVALID_XML },
    { "recursive entity", "<!DOCTYPE r [<!ENTITY a '&b;'><!ENTITY b '&a;'>]><r>&a;</r>", 0, AFS_E_INVALID_XML },
    { "external entity in an attribute value", "<!DOCTYPE r [<!ENTITY e SYSTEM 'file:///etc/passwd'>]><r a='&e;'/>", 0, AFS_E_INVALID_XML },
    { "external entity in content (skipped, never read)", "<!DOCTYPE r [<!ENTITY e SYSTEM 'file:///etc/passwd'>]><r>&e;</r>", 0, AFS_OK },
    { "external DTD (never read)", "<!DOCTYPE r SYSTEM 'http://127.0.0.1:9/x.dtd'><r/>", 0, AFS_OK },
    { "undeclared namespace prefix", "<p:r/>", 0, AFS_E_INVALID_XML },
    { "prefix undeclared (xmlns:p=\"\")", "<r xmlns:p=''/>", 0, AFS_E_INVALID_XML },
    { "invalid UTF-8", "<r>\xff</r>", 0, AFS_E_INVALID_XML },
    { "control character", "<r>\x01</r>", 0, AFS_E_INVALID_XML },
    { "unsupported declared encoding", "<?xml version='1.0' encoding='EBCDIC'?><r/>", 0, AFS_E_INVALID_XML },
    { "UTF-8 byte order mark declaring ISO-8859-1", "\xef\xbb\xbf<?xml version='1.0' encoding='ISO-8859-1'?><r/>", 0, AFS_E_INVALID_XML },
    { "UCS-4", "\0\0\0<\0\0\0r\0\0\0/\0\0\0>", 16, AFS_E_INVALID_XML },
    { "UTF-16 with an unpaired surrogate", "\xff\xfe<\0r\0>\0\0\xd8<\0/\0r\0>\0", 18, AFS_E_INVALID_XML },
    { "US-ASCII declared, byte 0xE9", "<?xml version='1.0' encoding='US-ASCII'?><r>\xe9</r>", 0, AFS_E_INVALID_XML },
};

static void xml(void) {
    area = "XML";
    char in[400];
    for (size_t i = 0; i < sizeof bad_xml / sizeof bad_xml[0]; i++) {
        size_t n = bad_xml[i].len ? bad_xml[i].len : strlen(bad_xml[i].text);
        snprintf(in, sizeof in, "%s: %s", bad_xml[i].what, lit(bad_xml[i].text, n));
        afs_status s = afs_xml_parse((const uint8_t *)bad_xml[i].text, n, NULL, NULL, fresh());
        row(in, "afs_xml_parse", bad_xml[i].expected, s, &E, "well-formed");
    }
    /* bombs and depth */
    static char buf[1 << 16];
    strcpy(buf, "<!DOCTYPE r [<!ENTITY a0 'lol'>");
    for (int i = 1; i < 10; i++) {
        char line[200];
        snprintf(line, sizeof line, "<!ENTITY a%d '&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;'>", i,
                 i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
        strcat(buf, line);
    }
    strcat(buf, "]><r>&a9;</r>");
    row("billion laughs (10^9 expansions of 'lol')", "afs_xml_parse", AFS_E_LIMIT,
        afs_xml_parse((const uint8_t *)buf, strlen(buf), NULL, NULL, fresh()), &E, NULL);
    {
        size_t n = 0;
        n += (size_t)sprintf(buf, "<!DOCTYPE r [<!ENTITY a '");
        memset(buf + n, 'x', 20000); n += 20000;
        n += (size_t)sprintf(buf + n, "'>]><r>");
        for (int i = 0; i < 2000 && n + 10 < sizeof buf; i++) { memcpy(buf + n, "&a;", 3); n += 3; }
        n += (size_t)sprintf(buf + n, "</r>");
        row("quadratic blowup (a 20 KB entity referenced 2000 times)", "afs_xml_parse", AFS_E_LIMIT,
            afs_xml_parse((const uint8_t *)buf, n, NULL, NULL, fresh()), &E, NULL);
    }
    for (int depth = 512; depth <= 513; depth++) {
        size_t n = 0;
        for (int i = 0; i < depth; i++) { memcpy(buf + n, "<a>", 3); n += 3; }
        for (int i = 0; i < depth; i++) { memcpy(buf + n, "</a>", 4); n += 4; }
        snprintf(in, sizeof in, "%d nested elements", depth);
        row(in, "afs_xml_parse", depth == 512 ? AFS_OK : AFS_E_LIMIT,
            afs_xml_parse((const uint8_t *)buf, n, NULL, NULL, fresh()), &E, "well-formed");
    }
    row("NULL xml with len 3", "afs_xml_parse", AFS_E_INVALID_ARGUMENT, afs_xml_parse(NULL, 3, NULL, NULL, fresh()), &E, NULL);
    row("NULL parser", "afs_xml_parser_feed", AFS_E_INVALID_ARGUMENT,
        afs_xml_parser_feed(NULL, (const uint8_t *)"<r/>", 4, fresh()), &E, NULL);
    afs_xml_parser *p = afs_xml_parser_new(NULL, NULL, NULL);
    afs_xml_parser_feed(p, (const uint8_t *)"<r>", 3, fresh());
    row("`<r>` then finish", "afs_xml_parser_finish", AFS_E_INVALID_XML, afs_xml_parser_finish(p, fresh()), &E, NULL);
    row("a second finish", "afs_xml_parser_finish", AFS_E_INVALID_XML, afs_xml_parser_finish(p, fresh()), &E, NULL);
    afs_xml_parser_free(p);
}

/* afs_query_parse_pickle (issue 26's fast path for bindings): the same refusals as afs_query_parse. */
static void query_pickle(void) {
    area = "decoders";
    size_t n, len;
    uint8_t *p;
    char *q = repeat("", "k=v&", 1001, "", &n);
    p = afs_query_parse_pickle(q, n, NULL, &len, fresh());
    row("a query with 1001 parameters (default max_params 1000)", "afs_query_parse_pickle", AFS_E_LIMIT, STATUS_OF(p), &E, "pickled");
    afs_free(p);
    free(q);
    q = repeat("a=", "x", 65537, "", &n);
    p = afs_query_parse_pickle(q, n, NULL, &len, fresh());
    row("a value of 65537 bytes (default max_length 65536)", "afs_query_parse_pickle", AFS_E_LIMIT, STATUS_OF(p), &E, "pickled");
    afs_free(p);
    free(q);
    afs_query_parse_options o = {0};
    o.flags = AFS_QUERY_REFUSE_DEEP;
    p = afs_query_parse_pickle("a[b][c][d][e][f][g]=1", AFS_NTS, &o, &len, fresh());
    row("a name 6 brackets deep with AFS_QUERY_REFUSE_DEEP (default max_depth 5)", "afs_query_parse_pickle", AFS_E_LIMIT, STATUS_OF(p), &E, "pickled");
    afs_free(p);
    p = afs_query_parse_pickle("a=%zz", AFS_NTS, NULL, &len, fresh());
    row("a malformed escape `%zz`", "afs_query_parse_pickle", AFS_E_INVALID_ARGUMENT, STATUS_OF(p), &E, "pickled");
    afs_free(p);
    p = afs_query_parse_pickle("a=%E9", AFS_NTS, NULL, &len, fresh());
    row("an escape that is not UTF-8 `%E9`", "afs_query_parse_pickle", AFS_E_INVALID_UTF8, STATUS_OF(p), &E, "pickled");
    afs_free(p);
    p = afs_query_parse_pickle("a=1&a[x]=2", AFS_NTS, NULL, &len, fresh());
    row("a key on a value after flat names: `a=1&a[x]=2`", "afs_query_parse_pickle", AFS_E_INVALID_ARGUMENT, STATUS_OF(p), &E, "pickled");
    afs_free(p);
    p = afs_query_parse_pickle("a=1", AFS_NTS, NULL, NULL, fresh());
    row("pickle_len NULL", "afs_query_parse_pickle", AFS_E_INVALID_ARGUMENT, STATUS_OF(p), &E, "pickled");
    afs_free(p);
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
    response_reader();
    images();
    xml();
    handles();
    c_edge();
    issue19();
    security();
    body_transforms();
    decoders();
    issue23();
    multipart_records();
    query_pickle();
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "matrix: could not remove %s\n", tmp);
    fprintf(stderr, "matrix: %d rows, %d not as the header promises\n", rows, mismatches);
    return mismatches ? 1 : 0;
}
