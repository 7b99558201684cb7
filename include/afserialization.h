/*
 * afserialization.h — AFNetworking's request and response serialization as a C library.
 *
 * AFSerialization builds HTTP requests exactly as AFNetworking's
 * AFURLRequestSerialization does: percent-escaped query strings, form, JSON and
 * property-list bodies, streaming multipart/form-data bodies, and bodies of unknown
 * length, compressed or with digests. It opens no connection itself: hand the method,
 * URL, headers and body to libcurl, http.client, requests or any other HTTP stack, or
 * write them to a socket. Its response side (AFURLResponseSerialization) validates status
 * codes and content types and decodes JSON, property-list, XML and image bodies into
 * values; it reads HTTP/1.1 responses off the wire (sans-I/O), applies AFSecurityPolicy's
 * pinning rules to the chain any TLS stack verified, and decodes query strings, form
 * bodies and multipart uploads for the servers on the other end.
 *
 * Sections, in reading order:
 *   1. Version and conventions      9. Response serializers
 *   2. Errors                      10. Bulk transfer (one call each way)
 *   3. Values: building, walking   11. XML: events, push parser, trees
 *   4. Helpers                     12. Images and the rest of the response family
 *   5. Serializers                 13. Security policy: pinning for any TLS stack
 *   6. Requests                    14. Response reader: HTTP/1.1 responses off the wire
 *   7. Multipart forms             15. Body transforms: unknown length, compression, digests
 *   8. Body streams                16. Decoders: query strings, form bodies, multipart
 *
 * CONVENTIONS
 *   - Opaque handles: afs_value, afs_json_parser, afs_serializer, afs_request, afs_form,
 *     afs_body_stream, afs_response_serializer, afs_xml_parser, afs_security_policy,
 *     afs_response_reader, afs_multipart_parser, afs_multipart_reader.
 *     A function that returns a handle gives the caller ownership; free it with the
 *     matching afs_*_free, which accepts NULL.
 *   - Returned `const char *` / `const uint8_t *` are borrowed: valid until their owner is
 *     freed or changed. Returned `char *` is owned by the caller: free it with afs_free().
 *   - Strings are UTF-8 and NUL-terminated, unless a length follows; a length of AFS_NTS
 *     means "NUL-terminated". Invalid UTF-8 is AFS_E_INVALID_UTF8. Every other length
 *     above INT64_MAX is AFS_E_INVALID_ARGUMENT (or NULL / ignored where the function
 *     returns no status), as is AFS_NTS where a byte count is required (data, bodies).
 *   - Every call that can fail takes `afs_error *err` last (it may be NULL) and returns an
 *     afs_status or NULL. On failure err->code and err->message are set; on success err is
 *     left untouched.
 *   - NULL where a handle is required, or a handle of the wrong kind, is
 *     AFS_E_INVALID_ARGUMENT, never a crash. Getters given NULL return NULL, 0 or false;
 *     void setters and the _free functions ignore NULL.
 *   - A handle argument marked "consumed" is owned by the library afterwards, also when the
 *     call fails; the handle stays allocated as a spent handle owned by the tree it went
 *     into, so a later call on it is AFS_E_STATE, never a memory error (section 3).
 *   - Threads: an afs_serializer or afs_response_serializer may be used from many threads
 *     at once. Requests, forms and body streams are used by one thread at a time. A value
 *     tree is changed by one thread at a time; its const getters may run on many threads at
 *     once while no thread changes it.
 *   - fork(): the library's locks are taken before fork() and released after it in parent
 *     and child (pthread_atfork), so a child forked while other threads were using a
 *     serializer can use it (and every other handle it inherited). One limit: the Swift
 *     runtime's own locks (taken while it fills its type caches, mostly during a thread's
 *     first calls into the library) are not covered; a fork at that moment can leave the
 *     child blocked. Make one call before starting threads that may run while you fork.
 *   - Callbacks: a call on a request, its body stream or a form from inside one of their
 *     own callbacks (read, rewind, release, progress) returns AFS_E_STATE (reads -1, void
 *     setters ignore it) and changes nothing; afs_request_free, afs_form_free and
 *     afs_body_stream_close from there are deferred to the end of the running call. The
 *     request and parameters a query callback receives are lent for the call: freeing or
 *     changing them is ignored or refused.
 *   - Memory: allocations that grow with the input are checked (AFS_E_NO_MEMORY, or NULL
 *     from getters that lend copies and from functions without an afs_error): buffers of
 *     16 KiB and more are asked of malloc before they are made. What is not checked, and
 *     stops the process like any allocation failure inside the Swift runtime: its small
 *     allocations (under 16 KiB each: handle objects, one tree node, one short string,
 *     type metadata). A decoded response makes many of those; the decoding limit
 *     (afs_response_serializer_set_max_decoded_bytes) bounds how many.
 */
#ifndef AFSERIALIZATION_H
#define AFSERIALIZATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define AFS_API __attribute__((visibility("default")))
#else
#define AFS_API
#endif

/* ===================================================================================== */
/* 1. Version and conventions                                                           */
/* ===================================================================================== */

/* The one place the version is written: the build, the Swift core, the Python package and
 * its packaging read these three lines. */
#define AFS_VERSION_MAJOR 0
#define AFS_VERSION_MINOR 1
#define AFS_VERSION_PATCH 0
/** MAJOR*10000 + MINOR*100 + PATCH, for compile-time checks; afs_version_number() gives
 *  the loaded library's. */
#define AFS_VERSION_NUMBER (AFS_VERSION_MAJOR * 10000 + AFS_VERSION_MINOR * 100 + AFS_VERSION_PATCH)

/** A string length meaning "the string is NUL-terminated". Every other length must be at
 *  most INT64_MAX (a larger one is AFS_E_INVALID_ARGUMENT). */
#define AFS_NTS SIZE_MAX

/** The library's version, "MAJOR.MINOR.PATCH". Static storage; never NULL. */
AFS_API const char *afs_version(void);
/** The library's AFS_VERSION_NUMBER, so a program can check that the header it was built
 *  with matches the library it runs with:
 *  `if (afs_version_number() / 10000 != AFS_VERSION_MAJOR) ...` */
AFS_API unsigned afs_version_number(void);

/** Frees memory the library returned as owned (`char *` results, afs_string_new). NULL is
 *  ignored. */
AFS_API void afs_free(void *p);
/* ===================================================================================== */
/* 2. Errors                                                                            */
/* ===================================================================================== */

/** Status of a call. Values are pinned forever; new ones are appended. */
typedef enum afs_status {
    AFS_OK = 0,                       /**< success */
    AFS_E_INVALID_ARGUMENT = 1,       /**< NULL or wrong-kind handle, bad enum value, bad boundary,
                                           seek past the end, parameters of the wrong shape */
    AFS_E_INVALID_UTF8 = 2,           /**< a string argument is not valid UTF-8 (offset named) */
    AFS_E_BAD_URL = 3,                /**< not an absolute RFC 3986 URI (character and offset named) */
    AFS_E_INVALID_METHOD = 4,         /**< the method is not an HTTP token; GET/HEAD with multipart */
    AFS_E_INVALID_HEADER = 5,         /**< header name not a token, or CR/LF/NUL in a value */
    AFS_E_INVALID_JSON = 6,           /**< parameters not representable as JSON; malformed JSON text */
    AFS_E_INVALID_PLIST = 7,          /**< parameters not representable as a property list */
    AFS_E_ENCODING = 8,               /**< text not representable in the serializer's string encoding */
    AFS_E_QUERY_CALLBACK = 9,         /**< the custom query callback failed */
    AFS_E_FILE = 10,                  /**< a file could not be opened or stat'ed when appended */
    AFS_E_IO = 11,                    /**< a read or write failed while streaming or writing a body */
    AFS_E_LENGTH_MISMATCH = 12,       /**< a part source yielded fewer or more bytes than declared */
    AFS_E_STATE = 13,                 /**< call on a spent form, a closed stream, a spent
                                           (consumed) value, or from inside a callback of
                                           the same request, stream or form */
    AFS_E_UNSUPPORTED = 14,           /**< e.g. rewinding a callback part that has no rewind function */
    AFS_E_NO_MEMORY = 15,             /**< allocation failed */
    AFS_E_UNACCEPTABLE_STATUS = 16,   /**< response status outside the acceptable ranges */
    AFS_E_UNACCEPTABLE_CONTENT_TYPE = 17, /**< response MIME type not acceptable */
    AFS_E_INVALID_XML = 18,           /**< XML that is not well-formed, or an undeclared or
                                           unsupported encoding (line, column and offset named) */
    AFS_E_INVALID_IMAGE = 19,         /**< a corrupt or truncated image header, or a content
                                           type that disagrees with the image's bytes */
    AFS_E_UNTRUSTED = 20,             /**< a security policy refused the server (the rule, the
                                           host and the certificate names are named) */
    AFS_E_BAD_RESPONSE = 21,          /**< malformed HTTP response framing, or a corrupt or
                                           truncated content coding (line and offset named) */
    AFS_E_LIMIT = 22,                 /**< a documented limit of a reader or decoder was
                                           reached (the limit and where are named) */
    AFS_E_INVALID_MULTIPART = 23      /**< malformed multipart framing, or a body that ends
                                           before its closing boundary */
} afs_status;

/**
 * Error details, filled by a failing call when the caller passes one (libcurl's
 * CURLOPT_ERRORBUFFER idea: no allocation, no thread-local "last error").
 * `message` names what was wrong and where (the header, the path, the byte offset) and is
 * always NUL-terminated; `os_errno` is errno when the OS reported one, else 0.
 */
typedef struct afs_error {
    afs_status code;
    int os_errno;
    char message[512];
} afs_error;

/** The enumerator's name, e.g. "AFS_E_BAD_URL"; "AFS_E_UNKNOWN" for other values.
 *  Static storage. */
AFS_API const char *afs_status_name(afs_status status);

/*
 * Out of memory (AFS_E_NO_MEMORY). Every allocation whose size grows with the input is
 * checked: output buffers (bodies, query strings, escaped and returned strings), copies
 * of part bodies and header blocks, parser stacks, and the arrays, strings and tables
 * built while decoding or writing (their size is asked of malloc first). When one fails
 * the call returns AFS_E_NO_MEMORY, os_errno ENOMEM, "out of memory: could not allocate N
 * bytes for WHAT", and nothing is half-done: no handle is created, a form or value is as
 * it was before the call, a body stream can be read again. The small fixed allocations of
 * the Swift runtime itself (objects of a few dozen bytes, short strings and arrays below
 * 16 KiB, type metadata, a thread's first use of the runtime) are not checked: when one of
 * those fails the process stops, as any Swift or C++ program does. Decoding is bounded
 * (afs_response_serializer_set_max_decoded_bytes), so a response cannot make the library
 * allocate many times its size, and walking what it decoded allocates nothing per node
 * (decoding plus a full walk of a JSON body stays below 10 x its size + 8 MiB).
 *
 * Deep trees and small stacks: writing, walking and freeing trees nested 32 levels or
 * more continues on a thread the library starts with an 8 MiB stack (and joins before
 * returning), so a caller's thread with a 64 KiB stack can handle the 512-level limit;
 * when that thread cannot be started, the call returns AFS_E_NO_MEMORY.
 */

/* ===================================================================================== */
/* 3. Values: building, walking, freeing                                                */
/* ===================================================================================== */

/*
 * afs_value — a parameters tree, like Foundation's property-list objects: dictionary
 * (string keys, insertion order kept; setting an existing key replaces its value in
 * place), array, set (appending a member equal to one already there is a successful
 * no-op; 1, true and "1" are different members), string, integer, double, bool, null,
 * data, date. Strings compare by their bytes. Trees nest at most 512 levels.
 *
 * HANDLES. A value handle is one of:
 *   - owned: made by afs_value_new_*, afs_value_parse_json or afs_response_object; the
 *     caller frees it with afs_value_free (the root of a tree);
 *   - inside a tree: made by afs_value_dict_set_new_dict, _new_array,
 *     afs_value_append_new_dict, _new_array — a container created in its parent and filled
 *     in place (top-down building); borrowed: the tree owns it;
 *   - borrowed member: lent by afs_value_at / afs_value_get (read-only);
 *   - spent: an owned handle consumed by afs_value_dict_set / afs_value_append, and every
 *     handle of a tree that was consumed. A spent handle is not freed: it is kept, empty,
 *     by the tree it went into and freed with that tree's root, so a call on it is never a
 *     use of freed memory: calls that return a status give AFS_E_STATE and a message naming
 *     the call that consumed it, getters answer as for NULL, afs_value_free ignores it.
 *     (When the container of the consuming call is itself unusable — NULL, not a value, a
 *     borrowed member, spent — there is no tree to keep it: the value is freed at once.)
 * Borrowed and inside-a-tree handles, and the strings and bytes the getters return, stay
 * valid until their root is freed (a member replaced by afs_value_dict_set becomes spent,
 * it is not freed earlier). Appending never invalidates anything already lent.
 *
 * Building bottom-up (consume each child into its parent):
 *
 *     afs_value *user = afs_value_new_dict();
 *     afs_value_dict_set(user, "name", AFS_NTS, afs_value_new_string("Zoë", AFS_NTS, NULL), &err);
 *     afs_value *root = afs_value_new_dict();
 *     afs_value_dict_set(root, "user", AFS_NTS, user, &err);   // user is spent now
 *
 * or top-down (create each container inside its parent, then fill it):
 *
 *     afs_value *root = afs_value_new_dict();
 *     afs_value *user = afs_value_dict_set_new_dict(root, "user", AFS_NTS, &err);
 *     afs_value_dict_set(user, "name", AFS_NTS, afs_value_new_string("Zoë", AFS_NTS, NULL), &err);
 *     afs_value *tags = afs_value_dict_set_new_array(user, "tags", AFS_NTS, &err);
 *     afs_value_append(tags, afs_value_new_string("admin", AFS_NTS, NULL), &err);
 *     afs_value_free(root);                                     // frees user and tags too
 *
 * THREADS. A tree is changed by one thread at a time, with no other thread using it. The
 * getters (const functions: kind, count, keys, members, scalars) may run on many threads
 * at once over one tree while no thread changes it: what they lend is published atomically
 * and a tree built top-down is completed under a lock.
 */
typedef struct afs_value afs_value;

typedef enum afs_value_kind {
    AFS_VALUE_NULL, AFS_VALUE_BOOL, AFS_VALUE_INT, AFS_VALUE_DOUBLE, AFS_VALUE_STRING,
    AFS_VALUE_DATA, AFS_VALUE_ARRAY, AFS_VALUE_SET, AFS_VALUE_DICT,
    AFS_VALUE_DATE = 9   /**< a point in time: seconds since 1970-01-01T00:00:00Z (NSDate) */
} afs_value_kind;

/* -- Building ------------------------------------------------------------------------ */

/** A new empty dictionary. Owned: free with afs_value_free. Never NULL. */
AFS_API afs_value *afs_value_new_dict(void);
/** A new empty array. Owned. Never NULL. */
AFS_API afs_value *afs_value_new_array(void);
/** A new empty set. Owned. Never NULL. */
AFS_API afs_value *afs_value_new_set(void);
/**
 * A new string value.
 * @param utf8 the text (NULL only with len 0); @param len its length or AFS_NTS.
 * @return owned value, or NULL with AFS_E_INVALID_UTF8 (offset named) or
 *         AFS_E_INVALID_ARGUMENT (NULL text, a length above INT64_MAX).
 */
AFS_API afs_value *afs_value_new_string(const char *utf8, size_t len, afs_error *err);
/** A new integer value. Owned. Never NULL. */
AFS_API afs_value *afs_value_new_int(int64_t v);
/** A new double value (NaN and infinities allowed; the JSON writer rejects them). Owned. */
AFS_API afs_value *afs_value_new_double(double v);
/** A new bool value. Owned. Never NULL. */
AFS_API afs_value *afs_value_new_bool(bool v);
/** A new null value (NSNull). Owned. Never NULL. */
AFS_API afs_value *afs_value_new_null(void);
/** A new data value holding a copy of `len` bytes. `bytes` may be NULL only when len is 0;
 *  NULL with len > 0, a len above INT64_MAX, or no memory for the copy returns NULL.
 *  Owned. */
AFS_API afs_value *afs_value_new_data(const void *bytes, size_t len);
/**
 * A new date value (NSDate): `seconds_since_1970` since 1970-01-01T00:00:00Z, any double.
 * Written as a property list's <date> (XML: UTC with `Z`, whole seconds, years 1 to 9999;
 * binary: type 0x33, exact), as ISO 8601 text in JSON bodies, query strings and form
 * fields (`2024-05-06T07:08:09Z`, with `.ffffff` when it has microseconds; AFNetworking
 * writes NSDate's description there), as a UTC datetime.datetime in Python. A date
 * outside the years 1 to 9999 (or NaN) cannot be written as text: the writers refuse it.
 * Property lists read <date> and 0x33 as dates. Owned. Never NULL.
 */
AFS_API afs_value *afs_value_new_date(double seconds_since_1970);

/**
 * Sets `key` in a dictionary (owned, or made inside a tree) to `value` (consumed, also on
 * failure: it becomes spent, see HANDLES). An existing key keeps its position and gets the
 * new value; a handle made or lent for the old value becomes spent. `key` may be the
 * value's own text (afs_value_get_string(value)): it is copied before the value is
 * consumed.
 * @param key_len length of key or AFS_NTS.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT when dict is NULL, not a dictionary or a borrowed
 *         member (read-only), value is NULL, not a value, borrowed, made inside a tree, dict
 *         itself or the root of dict's tree (in these cases it is not consumed), a length
 *         above INT64_MAX, or the tree would nest deeper than 512 levels; AFS_E_STATE when
 *         dict or value is spent (a spent value is not consumed again);
 *         AFS_E_INVALID_UTF8 for a bad key.
 */
AFS_API afs_status afs_value_dict_set(afs_value *dict, const char *key, size_t key_len,
                                      afs_value *value /* consumed */, afs_error *err);
/**
 * Appends `value` (consumed, also on failure) to an array, or adds it to a set (an equal
 * member already there makes this a successful no-op).
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT and AFS_E_STATE as afs_value_dict_set (the
 *         container neither an array nor a set instead of not a dictionary).
 */
AFS_API afs_status afs_value_append(afs_value *array_or_set, afs_value *value /* consumed */,
                                    afs_error *err);
/**
 * Top-down building: sets `key` in `dict` to a new empty dictionary and returns it, to be
 * filled in place (cJSON's cJSON_AddObjectToObject). An existing key keeps its position.
 * @return the new dictionary, borrowed: owned by dict's tree, valid until its root is freed
 *         (never free it; it cannot be consumed); or NULL with AFS_E_INVALID_ARGUMENT
 *         (dict NULL, not a dictionary, a borrowed member; key NULL or its length above
 *         INT64_MAX; deeper than 512 levels), AFS_E_STATE (dict spent),
 *         AFS_E_INVALID_UTF8 (key).
 */
AFS_API afs_value *afs_value_dict_set_new_dict(afs_value *dict, const char *key, size_t key_len,
                                               afs_error *err);
/** As afs_value_dict_set_new_dict, with a new empty array. */
AFS_API afs_value *afs_value_dict_set_new_array(afs_value *dict, const char *key, size_t key_len,
                                                afs_error *err);
/**
 * Top-down building: appends a new empty dictionary to `array` and returns it, borrowed
 * (as afs_value_dict_set_new_dict). Sets are refused (their members are compared when
 * added: add a finished value with afs_value_append).
 * @return the new dictionary, or NULL with AFS_E_INVALID_ARGUMENT (array NULL, not an
 *         array, a borrowed member; deeper than 512 levels), AFS_E_STATE (array spent).
 */
AFS_API afs_value *afs_value_append_new_dict(afs_value *array, afs_error *err);
/** As afs_value_append_new_dict, with a new empty array. */
AFS_API afs_value *afs_value_append_new_array(afs_value *array, afs_error *err);
/**
 * Parses JSON text (RFC 8259, strict; any value at the top level) into a value tree.
 * Integers within int64 stay integers, others become doubles; duplicate keys keep the last
 * value at the first position; nesting deeper than 512 is an error.
 *
 * The tree is kept as the parser laid it out (simdjson's and yyjson's approach): one
 * block of 16-byte nodes in document order and one block with the text of every string,
 * so parsing allocates per block, not per node, and afs_value_free is two frees. The
 * getters read those blocks (keys and strings are lent from the text block, NUL-terminated,
 * with no copy) and a JSON serializer writes the body from them. What needs another form
 * (a query string, a property list, a pickle) builds it once and keeps it; the first change
 * (afs_value_dict_set, afs_value_append, ...) does the same, and the value behaves as any
 * other from then on. None of this shows in the API: handles, borrowing and spent handles
 * work as for values built by hand, and what was lent stays valid across the change.
 * afs_value_copy of such a value (or of a member) shares the blocks.
 * The member handles such a value lends (afs_value_at, afs_value_get, and theirs) are
 * views, not objects: the pointer names the value and a node of its block, so walking
 * every node allocates nothing per node (see afs_response_serializer_set_max_decoded_bytes
 * for the bound). They are handles in every other respect: the same pointer on every call,
 * read-only, valid until the root is freed, spent when their slot is replaced or their root
 * consumed, refused as the wrong kind by functions of other handles. Never dereference an
 * afs_value pointer (none is a C object you may read).
 * @return owned value, or NULL with AFS_E_INVALID_JSON naming the byte offset;
 *         AFS_E_INVALID_ARGUMENT (NULL text, a length above INT64_MAX); AFS_E_NO_MEMORY.
 */
AFS_API afs_value *afs_value_parse_json(const char *json, size_t len, afs_error *err);
/** Frees an owned value and everything of its tree (members, handles made inside it, spent
 *  handles it keeps). NULL is ignored, and so are borrowed, inside-a-tree and spent
 *  handles (their tree owns them). */
AFS_API void afs_value_free(afs_value *v);

/*
 * A JSON PARSER (afs_json_parser) reads many documents and keeps its buffers between them:
 * the structural index (a window of 64K positions, 256 KiB, that stage 1 fills ahead of
 * stage 2) and its stack of open containers; and when a value it returned is freed,
 * the two blocks of that value (its nodes and its text) wait in the parser for the next
 * document that fits in them (one value's blocks at most; freed with the parser), so a
 * parse-free loop writes into memory already mapped. afs_value_parse_json
 * makes and drops those buffers on every call; a caller that reads many documents (a
 * server, a log reader, a benchmark loop) makes one parser with afs_json_parser_new, calls
 * afs_json_parser_parse for each document, and frees it with afs_json_parser_free. The
 * values it returns are the caller's, exactly as afs_value_parse_json's (same rules, same
 * errors and offsets, same layout), and outlive the parser.
 *
 * How it reads: stage 1 makes one pass over the text in 64-byte blocks with vector compares
 * (AVX-512 or AVX2 when the CPU has them, chosen at run time; 16-byte SSE2 otherwise; the
 * environment variable AFS_JSON_STAGE1=portable|sse2|avx2|avx512 forces one) that finds the quotes,
 * the escaped bytes, the bytes inside strings, the structural characters and the start of
 * every number and literal, checks the UTF-8 of the whole text, and writes their positions
 * to the index, a window at a time; stage 2 walks the index and builds the value. A text either stage rejects
 * is read again by the value-by-value reader, which names the problem (errors are rare, so
 * this costs nothing on good input). afs_value_parse_json and the JSON response serializer
 * read the same way with a parser of their own.
 *
 * THREADS: one thread at a time per parser. Calls from several threads on one parser are
 * safe but take turns (a lock); give each thread its own parser to read in parallel.
 *
 *     afs_json_parser *jp = afs_json_parser_new(&err);
 *     for (size_t i = 0; i < n; i++) {
 *         afs_value *v = afs_json_parser_parse(jp, texts[i], lens[i], &err);
 *         if (!v) { fprintf(stderr, "%s\n", err.message); continue; }
 *         ... use v ...
 *         afs_value_free(v);
 *     }
 *     afs_json_parser_free(jp);
 */
typedef struct afs_json_parser afs_json_parser;
/**
 * Makes a JSON parser (empty buffers; they grow with the first documents).
 * @return owned parser (free with afs_json_parser_free), or NULL with AFS_E_NO_MEMORY.
 */
AFS_API afs_json_parser *afs_json_parser_new(afs_error *err);
/**
 * Parses JSON text as afs_value_parse_json does (same rules, limits, errors and offsets),
 * reusing the parser's buffers.
 * @param parser the parser (not NULL).
 * @param json   the text, `len` bytes (NULL only with `len` 0, which is an empty text).
 * @return owned value (free with afs_value_free; it does not depend on the parser), or
 *         NULL with AFS_E_INVALID_JSON naming the byte offset; AFS_E_INVALID_ARGUMENT
 *         (parser NULL or not a parser, NULL text, a length above INT64_MAX);
 *         AFS_E_NO_MEMORY.
 */
AFS_API afs_value *afs_json_parser_parse(afs_json_parser *parser, const char *json, size_t len,
                                         afs_error *err);
/** Frees a parser and its buffers (values it returned stay valid). NULL is ignored. */
AFS_API void afs_json_parser_free(afs_json_parser *parser);

/* -- Walking ------------------------------------------------------------------------- */

/*
 * These work on every afs_value (decoded, parsed or built, including trees built top-down
 * and the handles made inside them). Members and keys are in insertion order (a
 * dictionary's file order, a set's insertion order). Returned handles and pointers are
 * borrowed: valid until the root is freed (see HANDLES); repeated calls return the same
 * pointers. The member handle of a slot filled by afs_value_*_new_dict/_new_array is that
 * handle itself. Never free or change a borrowed member. NULL, a spent handle or the
 * wrong kind gives 0, NULL or false.
 *
 *     for (size_t i = 0; i < afs_value_count(dict); i++) {
 *         size_t klen;
 *         const char *key = afs_value_key_at(dict, i, &klen);
 *         const afs_value *member = afs_value_at(dict, i);
 *         ...
 *     }
 */

/** The kind of `v`; AFS_VALUE_NULL for NULL and spent handles. */
AFS_API afs_value_kind afs_value_kind_of(const afs_value *v);
/** Number of members of a dictionary, array or set; 0 for scalars and NULL. */
AFS_API size_t afs_value_count(const afs_value *v);
/** Key `i` of a dictionary (NUL-terminated; *len, if len is not NULL, gets its length,
 *  which counts any NUL inside it), or NULL (*len 0) when `dict` is not a dictionary or i
 *  is out of range (or the copy cannot be allocated). Borrowed. */
AFS_API const char *afs_value_key_at(const afs_value *dict, size_t i, size_t *len);
/** Member `i`: a dictionary's value, an array's element, a set's member; NULL when out of
 *  range or not a container. Borrowed. */
AFS_API const afs_value *afs_value_at(const afs_value *v, size_t i);
/** The value of `key` (NUL-terminated; compared by bytes) in a dictionary; NULL when
 *  absent, or when dict is not a dictionary or key is NULL. Borrowed. */
AFS_API const afs_value *afs_value_get(const afs_value *dict, const char *key);
/** A bool's value; false for other kinds. */
AFS_API bool afs_value_get_bool(const afs_value *v);
/** An integer's value; 0 for other kinds (doubles are not converted). */
AFS_API int64_t afs_value_get_int(const afs_value *v);
/** A double's value, or an integer's converted to double; 0 for other kinds. */
AFS_API double afs_value_get_double(const afs_value *v);
/** A string's UTF-8 bytes, NUL-terminated; *len (if not NULL) gets the length, which
 *  counts any NUL inside the string. NULL (*len 0) for other kinds, and when there is no
 *  memory for the NUL-terminated copy it lends. Borrowed. */
AFS_API const char *afs_value_get_string(const afs_value *v, size_t *len);
/** A data value's bytes and *len (if not NULL) their count; an empty data value gives a
 *  non-NULL pointer and 0. NULL (*len 0) for other kinds. Borrowed. */
AFS_API const uint8_t *afs_value_get_data(const afs_value *v, size_t *len);
/** A date's seconds since 1970-01-01T00:00:00Z; 0 for other kinds (and NULL). */
AFS_API double afs_value_get_date(const afs_value *v);

/* ===================================================================================== */
/* 4. Helpers                                                                           */
/* ===================================================================================== */

/**
 * AFPercentEscapedStringFromString: every byte outside `A-Z a-z 0-9 - . _ ~ / ?` becomes
 * %XX (uppercase hex) of its UTF-8 encoding.
 * @return owned string (afs_free), or NULL with AFS_E_INVALID_UTF8 (offset named) or
 *         AFS_E_INVALID_ARGUMENT (NULL text).
 */
AFS_API char *afs_percent_escape(const char *utf8, size_t len, afs_error *err);
/**
 * Resolves `reference` against `base` by RFC 3986 section 5.2 strictly (section 5.2.2 with
 * the merge of 5.2.3 and remove_dot_segments of 5.2.4; no AFNetworking slash rule: for
 * that, see afs_serializer_set_base_url). Both strings go through URL intake first (see
 * "URL intake" in section 6). `base` must be absolute; its fragment is ignored.
 * Example: base `http://a/b/c/d;p?q`, reference `../g` -> `http://a/b/g`.
 * @return owned string (afs_free), or NULL with AFS_E_BAD_URL (base not absolute, or a
 *         string intake refuses: offset named), AFS_E_INVALID_UTF8, AFS_E_INVALID_ARGUMENT
 *         (NULL base or reference).
 */
AFS_API char *afs_url_resolve(const char *base, const char *reference, afs_error *err);
/**
 * AFQueryStringFromParameters with the default styles: pairs `escape(key)=escape(text)`
 * joined by `&`, dictionary keys in ascending Unicode-scalar order, nested keys
 * `parent[child]`, array elements under `key[]`, set members under `key`, null as `key`
 * alone. Data values are escaped byte by byte.
 * @return owned string (afs_free; "" for an empty dictionary), or NULL with
 *         AFS_E_INVALID_ARGUMENT when params is NULL or not a dictionary; AFS_E_STATE when
 *         params is spent (consumed earlier).
 */
AFS_API char *afs_query_string(const afs_value *params, afs_error *err);
/** An owned copy of `len` bytes (or AFS_NTS) plus a NUL; free with afs_free. NULL when
 *  utf8 is NULL (and len is not 0) or when there is no memory for the copy. */
AFS_API char *afs_string_new(const char *utf8, size_t len);

/* ===================================================================================== */
/* 5. Serializers                                                                       */
/* ===================================================================================== */

/*
 * afs_serializer — AFHTTPRequestSerializer, AFJSONRequestSerializer or
 * AFPropertyListRequestSerializer: default headers, request properties, query options and
 * the body format. Create with afs_serializer_new or afs_serializer_copy, free with
 * afs_serializer_free. Thread-safe: configuration and request building may run on many
 * threads at once (a request is built from a snapshot of the configuration).
 *
 * Defaults: headers `Accept-Language` (from LANGUAGE, else LC_ALL, LC_MESSAGES, LANG;
 * `fr_FR.UTF-8` -> `fr-FR`; C/POSIX/unset -> `en`; at most six, `fr-FR;q=1, de;q=0.9`) and
 * `User-Agent` (`<program> (<sysname> <release>; <machine>) AFSerialization/<version>`);
 * URI methods GET HEAD DELETE; UTF-8; NSURLRequest's properties (timeout 60 s, cache policy
 * 0, cookies on, pipelining off, cellular on, network service type 0).
 */
typedef struct afs_serializer afs_serializer;
typedef struct afs_request afs_request;

typedef enum afs_serializer_kind {
    AFS_SERIALIZER_HTTP,   /**< form-urlencoded bodies */
    AFS_SERIALIZER_JSON,   /**< application/json bodies */
    AFS_SERIALIZER_PLIST   /**< application/x-plist bodies */
} afs_serializer_kind;

/** A new serializer with the defaults above. Owned: free with afs_serializer_free. NULL
 *  for an unknown kind (or when its lock cannot be allocated). */
AFS_API afs_serializer *afs_serializer_new(afs_serializer_kind kind);
/** An independent copy of everything: headers, query styles and callback, URI methods,
 *  string encoding, request properties, JSON options, plist format and base URL. Owned.
 *  NULL for a NULL or wrong handle. */
AFS_API afs_serializer *afs_serializer_copy(const afs_serializer *s);
/** Frees a serializer. NULL is ignored. */
AFS_API void afs_serializer_free(afs_serializer *s);

/**
 * Sets a default header, added to every request that lacks it (names compare
 * case-insensitively; setting an existing name replaces it in place). `value` NULL
 * removes the header. `Content-Length` and `Transfer-Encoding` are refused: the library
 * frames every body (see afs_request_copy_head).
 * @return AFS_OK; AFS_E_INVALID_HEADER for a name that is not a token, a value with CR,
 *         LF or NUL, or a framing header; AFS_E_INVALID_UTF8; AFS_E_INVALID_ARGUMENT.
 */
AFS_API afs_status afs_serializer_set_header(afs_serializer *s, const char *field,
                                             const char *value /* NULL removes */, afs_error *err);
/** The default header `field` (case-insensitive), or NULL if unset (or no memory for the
 *  copy). Owned: afs_free. */
AFS_API char *afs_serializer_copy_header(const afs_serializer *s, const char *field);
/** All default headers at one instant, in order, as `Name: value` lines ending in CR LF (names are
 *  tokens and values hold no CR or LF, so the text splits unambiguously). Consistent even
 *  while other threads change the headers. Owned: afs_free. NULL for a NULL or wrong
 *  handle, or when there is no memory for the copy. */
AFS_API char *afs_serializer_copy_headers(const afs_serializer *s);
/** Sets `Authorization: Basic base64(user:password)` (UTF-8 bytes, as AFNetworking).
 *  @return AFS_OK; AFS_E_INVALID_UTF8; AFS_E_INVALID_ARGUMENT for NULL arguments. */
AFS_API afs_status afs_serializer_set_basic_auth(afs_serializer *s, const char *user,
                                                 const char *password, afs_error *err);
/** Removes the `Authorization` header. */
AFS_API void afs_serializer_clear_authorization(afs_serializer *s);
/**
 * AFHTTPSessionManager's baseURL: relative references (`users/1`, `/users/1`, `?page=2`,
 * `//host/x`) given to afs_serializer_request and afs_serializer_multipart_form resolve
 * against it by RFC 3986 section 5.2 (with remove_dot_segments); absolute URLs ignore it.
 * As in AFNetworking, a base whose path is not empty and does not end in `/` gets one:
 * base `https://api.example.com/v1` resolves `users` to `https://api.example.com/v1/users`
 * (and `/users` to `https://api.example.com/users`). The base goes through URL intake.
 * Copied by afs_serializer_copy.
 * @param base_url an absolute URL, or NULL to clear the base.
 * @return AFS_OK; AFS_E_BAD_URL (not absolute, or refused by intake: offset named; the old
 *         base is kept); AFS_E_INVALID_UTF8; AFS_E_INVALID_ARGUMENT (NULL serializer).
 */
AFS_API afs_status afs_serializer_set_base_url(afs_serializer *s, const char *base_url /* NULL clears */,
                                               afs_error *err);
/**
 * Replaces the methods whose parameters go into the URL query (default GET HEAD DELETE).
 * Methods are stored uppercase; a request matches when its uppercased method is in the
 * list. `methods` may be NULL when count is 0.
 * @return AFS_OK; AFS_E_INVALID_METHOD for a method that is not a token.
 */
AFS_API afs_status afs_serializer_set_uri_methods(afs_serializer *s, const char *const *methods,
                                                  size_t count, afs_error *err);

typedef enum afs_string_encoding {
    AFS_ENCODING_UTF8, AFS_ENCODING_ASCII, AFS_ENCODING_ISO_8859_1
} afs_string_encoding;
/** Encoding of form bodies (and multipart field values). Percent-escaped queries are
 *  ASCII in any encoding; text a custom query callback returns that the encoding cannot
 *  represent makes the request fail with AFS_E_ENCODING.
 *  @return AFS_OK; AFS_E_INVALID_ARGUMENT for an unknown encoding. */
AFS_API afs_status afs_serializer_set_string_encoding(afs_serializer *s, afs_string_encoding e,
                                                      afs_error *err);

/* NSURLRequest's properties copied onto each request by afs_serializer_request. */
AFS_API void afs_serializer_set_timeout_interval(afs_serializer *s, double seconds);
AFS_API void afs_serializer_set_cache_policy(afs_serializer *s, int policy); /* NSURLRequestCachePolicy */
AFS_API void afs_serializer_set_should_handle_cookies(afs_serializer *s, bool on);
AFS_API void afs_serializer_set_should_use_pipelining(afs_serializer *s, bool on);
AFS_API void afs_serializer_set_allows_cellular_access(afs_serializer *s, bool on);
AFS_API void afs_serializer_set_network_service_type(afs_serializer *s, int type);

/** How arrays are written: `a[]=1` (AFNetworking), `a=1`, `a[0]=1`. */
typedef enum afs_array_style { AFS_ARRAY_BRACKETS, AFS_ARRAY_NO_BRACKETS, AFS_ARRAY_INDEXED } afs_array_style;
/** How bools are written: `1`/`0` (AFNetworking) or `true`/`false`. */
typedef enum afs_bool_style { AFS_BOOL_NUMERIC, AFS_BOOL_LITERAL } afs_bool_style;
/** How spaces are written: `%20` (AFNetworking) or `+` (a literal `+` stays `%2B`). */
typedef enum afs_space_style { AFS_SPACE_PERCENT, AFS_SPACE_PLUS } afs_space_style;
/** Sets the query styles used wherever the default algorithm runs (URL queries, form
 *  bodies, multipart field names).
 *  @return AFS_OK; AFS_E_INVALID_ARGUMENT for an unknown style value. */
AFS_API afs_status afs_serializer_set_query_style(afs_serializer *s, afs_array_style a,
                                                  afs_bool_style b, afs_space_style sp, afs_error *err);

/**
 * A custom query serializer: returns the query string for `params` allocated with
 * afs_string_new (the library frees it), or NULL after optionally filling err->message
 * (the request then fails with AFS_E_QUERY_CALLBACK and that message). `request` and
 * `params` are borrowed for the duration of the call. May be called from any thread that
 * builds a request.
 */
typedef char *(*afs_query_fn)(void *ctx, const afs_request *request,
                              const afs_value *params, afs_error *err);
/** Replaces the default query algorithm with `fn` (NULL restores the default). A query
 *  that makes the URL invalid fails the request with AFS_E_BAD_URL. */
AFS_API void afs_serializer_set_query_callback(afs_serializer *s, afs_query_fn fn, void *ctx);

/** NSJSONWritingOptions (used by JSON serializers; stored by all). */
enum {
    AFS_JSON_PRETTY_PRINTED = 1,          /**< 2-space indent, `"key" : value` */
    AFS_JSON_SORTED_KEYS = 2,             /**< keys by Unicode scalars (not locale) */
    AFS_JSON_FRAGMENTS_ALLOWED = 4,       /**< a scalar at the top level */
    AFS_JSON_WITHOUT_ESCAPING_SLASHES = 8 /**< `/` instead of `\/` */
};
/** @return AFS_OK; AFS_E_INVALID_ARGUMENT for unknown option bits. */
AFS_API afs_status afs_serializer_set_json_options(afs_serializer *s, unsigned options, afs_error *err);
/** NSPropertyListFormat (used by plist serializers; stored by all). */
enum { AFS_PLIST_XML = 100, AFS_PLIST_BINARY = 200 };
/** @return AFS_OK; AFS_E_INVALID_ARGUMENT for another format. */
AFS_API afs_status afs_serializer_set_plist_format(afs_serializer *s, int format, afs_error *err);

/* ===================================================================================== */
/* 6. Requests                                                                          */
/* ===================================================================================== */

/*
 * afs_request — a serialized request: method, URL, headers in order, body, and
 * NSURLRequest's properties. Made by afs_serializer_request, afs_serializer_serialize,
 * afs_request_new or afs_form_finish; freed with afs_request_free. One thread at a time.
 *
 * How parameters land (requestBySerializingRequest:withParameters:error:):
 *   - uppercase(method) in the URI methods: the query is appended to the URL with `?`
 *     (`&` after an existing query, nothing after a bare trailing `?`), before any
 *     `#fragment`; body and Content-Type untouched.
 *   - otherwise HTTP serializer: body = the query in the string encoding (empty, not
 *     absent, without parameters) and `Content-Type: application/x-www-form-urlencoded`
 *     unless set.
 *   - otherwise JSON / plist serializer: with parameters, the JSON / property-list body and
 *     `Content-Type: application/json` / `application/x-plist` unless set; without
 *     parameters, no body and no Content-Type.
 *
 * URL intake (every URL, base URL and reference the library is given):
 *   - a valid RFC 3986 URI is kept byte for byte: no case folding, no dot-segment removal,
 *     no default-port removal;
 *   - in the userinfo, path, query and fragment each byte RFC 3986 does not allow there is
 *     percent-encoded (UTF-8, %XX uppercase): space, non-ASCII, " < > \ ^ ` { | }, `[` `]`
 *     outside an IP-literal host, a second `#`, an `@` before the last one; a `%` not
 *     followed by two hex digits becomes %25. `https://example.com/movies?hd=[1]` becomes
 *     `https://example.com/movies?hd=%5B1%5D`, `https://example.com/wiki/Köln`
 *     `https://example.com/wiki/K%C3%B6ln`. Spaces before and after the URL are dropped;
 *   - a host with non-ASCII characters becomes its IDNA A-label by UTS #46 processing as
 *     browsers do (nontransitional, CheckBidi, CheckJoiners, no STD3 rules, no DNS length
 *     check): `https://bücher.example/` -> `https://xn--bcher-kva.example/`;
 *   - refused with AFS_E_BAD_URL, the offset and a hint: ASCII control characters anywhere
 *     (CR/LF never reach a request line), a port that is not digits or exceeds 65535, a
 *     malformed host (a character RFC 3986 does not allow in a host, a bad IPv6 literal,
 *     what IDNA refuses, saying why), and a relative reference when no base URL is set
 *     (afs_serializer_set_base_url). Invalid UTF-8 is AFS_E_INVALID_UTF8 (offset named).
 */

/**
 * requestWithMethod:URLString:parameters:error: — a new request with the serializer's
 * properties and headers, and `params` (may be NULL) serialized as described above.
 * @param url an absolute URL, or a relative reference when the serializer has a base URL;
 *        after URL intake (above) and resolution, kept byte for byte except for the query
 *        insertion.
 * @return owned request, or NULL with AFS_E_INVALID_METHOD, AFS_E_BAD_URL (character and
 *         offset named), AFS_E_INVALID_ARGUMENT (params not a dictionary where a query is
 *         needed), AFS_E_STATE (params spent), AFS_E_INVALID_JSON ("The `parameters` argument is not valid JSON."),
 *         AFS_E_INVALID_PLIST, AFS_E_ENCODING, AFS_E_QUERY_CALLBACK, AFS_E_INVALID_UTF8.
 */
AFS_API afs_request *afs_serializer_request(const afs_serializer *s, const char *method,
                                            const char *url, const afs_value *params, afs_error *err);
/** A bare request (no headers, NSURLRequest's default properties) for
 *  afs_serializer_serialize; `url` must be absolute and goes through URL intake.
 *  @return owned request, or NULL with AFS_E_INVALID_METHOD, AFS_E_BAD_URL,
 *  AFS_E_INVALID_UTF8, AFS_E_INVALID_ARGUMENT. */
AFS_API afs_request *afs_request_new(const char *method, const char *url, afs_error *err);
/** Sets (value NULL: removes) a header of `r`; replaces an existing one in place. Strings
 *  the getters returned earlier stay readable until afs_request_free (they show the old
 *  headers). `Content-Length` and `Transfer-Encoding` (any case, also to remove them) are
 *  refused: the library frames the body (see afs_request_copy_head).
 *  @return AFS_OK; AFS_E_INVALID_HEADER (also naming a framing header: "the library frames
 *  the body"); AFS_E_INVALID_UTF8; AFS_E_INVALID_ARGUMENT;
 *  AFS_E_STATE from inside a callback of r's body stream. */
AFS_API afs_status afs_request_set_header(afs_request *r, const char *field, const char *value,
                                          afs_error *err);
/** requestBySerializingRequest:withParameters:error: — a new request: a copy of `r` with
 *  the serializer's headers that `r` lacks and `params` (may be NULL) serialized. `r`'s
 *  own properties are kept. @return owned request, or NULL with the statuses of
 *  afs_serializer_request. */
AFS_API afs_request *afs_serializer_serialize(const afs_serializer *s, const afs_request *r,
                                              const afs_value *params, afs_error *err);
/** Frees a request (and its body stream). NULL is ignored; so is the request lent to a
 *  query callback. From inside a callback of its body stream, the request is freed when
 *  the running call returns. */
AFS_API void afs_request_free(afs_request *r);

/* Getters. Strings are borrowed: valid until afs_request_free(r) (after a change to r
 * they show the old request). A getter that has no memory for the NUL-terminated copy it
 * lends returns NULL. */
AFS_API const char *afs_request_method(const afs_request *r);
AFS_API const char *afs_request_url(const afs_request *r);
AFS_API size_t afs_request_header_count(const afs_request *r);
/** Name of header i (insertion order), or NULL when i is out of range. */
AFS_API const char *afs_request_header_name(const afs_request *r, size_t i);
/** Value of header i, or NULL when i is out of range. */
AFS_API const char *afs_request_header_value(const afs_request *r, size_t i);
/** Value of header `field` (case-insensitive), or NULL. */
AFS_API const char *afs_request_header(const afs_request *r, const char *field);
/** The body and its length in *len (may be NULL), as sent (compressed by
 *  AFS_COMPRESS_EXACT: section 15). NULL (and *len = 0): no body, or a body that streams
 *  (afs_request_body_stream). An empty
 *  body is a non-NULL pointer with *len = 0. Borrowed: the serializer's own buffer, valid
 *  until afs_request_free(r) (JSON and property-list bodies are lent as written, with no
 *  copy). */
AFS_API const uint8_t *afs_request_body(const afs_request *r, size_t *len);
AFS_API double afs_request_timeout_interval(const afs_request *r);
AFS_API int afs_request_cache_policy(const afs_request *r);
AFS_API bool afs_request_should_handle_cookies(const afs_request *r);
AFS_API bool afs_request_should_use_pipelining(const afs_request *r);
AFS_API bool afs_request_allows_cellular_access(const afs_request *r);
AFS_API int afs_request_network_service_type(const afs_request *r);

/**
 * The head of `r` as HTTP/1.1 bytes (RFC 9112), for programs that write to sockets
 * themselves:
 *   - `METHOD target HTTP/1.1`, target in origin form: the URL's path and query, `/` for
 *     an empty path, never the fragment;
 *   - `Host:` the URL's authority without userinfo (a `Host` header set on r replaces it);
 *   - `Authorization: Basic base64(user:password)` from the URL's userinfo, percent-
 *     decoded, unless r has an Authorization header (then the userinfo is dropped; it never
 *     appears elsewhere);
 *   - r's headers in order;
 *   - THE FRAMING, always exactly one and always the library's: `Content-Length` with the
 *     length of the bytes afs_request_write_to_fd sends after the head when r has a body
 *     (also an empty one, or a multipart body stream; a multipart request's Content-Length
 *     header keeps its place), none when r has no body (an unframed request has an empty
 *     body, RFC 9112 section 6.3). Callers cannot set Content-Length or Transfer-Encoding
 *     (afs_request_set_header, afs_serializer_set_header refuse them), so the head never
 *     declares other bytes than those that follow;
 *   - an empty line.
 * @param len receives the length (may be NULL; the text is also NUL-terminated).
 * @return owned bytes (afs_free), or NULL with AFS_E_BAD_URL (the URL has no host),
 *         AFS_E_INVALID_ARGUMENT (NULL request).
 */
AFS_API char *afs_request_copy_head(const afs_request *r, size_t *len, afs_error *err);
/**
 * Writes the head (afs_request_copy_head) and the body of `r` to `fd` (blocking: a socket,
 * pipe or file). A multipart body goes through afs_body_stream_write_to_fd (sendfile /
 * copy_file_range for file parts). Resumable: *written (may be NULL) gets the bytes this
 * call wrote, also on failure, and the next call continues exactly where a failed one
 * stopped (e.g. after EAGAIN on a non-blocking socket, wait until writable and call again).
 * After a complete write the next call writes the whole request again (the body stream is
 * sought back to 0). SIGPIPE is blocked while writing to a pipe or socket.
 * @return AFS_OK; AFS_E_IO (os_errno set) for a failing write; AFS_E_BAD_URL (no host);
 *         the statuses of afs_body_stream_write_to_fd; AFS_E_INVALID_ARGUMENT (NULL, fd < 0).
 */
AFS_API afs_status afs_request_write_to_fd(afs_request *r, int fd, uint64_t *written, afs_error *err);
/**
 * Interruptible writes (default off: a signal's EINTR is retried inside the call). When on,
 * afs_request_write_to_fd (and the write of r's body stream inside it) returns to the
 * caller when a signal interrupts a write to a pipe or socket: AFS_E_IO with os_errno
 * EINTR, after an EINTR or after a short write (which on a blocking descriptor only a
 * signal causes). The request is resumable exactly as after EAGAIN: *written counts what
 * was written, the next call continues there. Use it to let a host's signal handling run
 * (Ctrl-C in an interpreter) while a peer stopped reading. Writes to regular files are not
 * affected. NULL r, and a call from inside one of r's body stream callbacks, are ignored.
 */
AFS_API void afs_request_set_interruptible(afs_request *r, bool interruptible);

/* ===================================================================================== */
/* 7. Multipart forms                                                                   */
/* ===================================================================================== */

/*
 * afs_form — a multipart/form-data form being built (AFNetworking's
 * AFStreamingMultipartFormData). Create it with afs_serializer_multipart_form (the
 * parameters become field parts), append parts in order, then afs_form_finish gives the
 * request whose body is a streaming afs_body_stream. Free the form with afs_form_free, also
 * after finishing it. One thread at a time.
 *
 * On the wire, part i is `--B\r\n` (first part) or `\r\n--B\r\n` (the others), its headers
 * (`Name: value\r\n` each, in insertion order), `\r\n` and its body; after the last part
 * comes `\r\n--B--\r\n`. File, data and stream parts carry
 * `Content-Disposition: form-data; name="N"; filename="F"` and `Content-Type: M`; field
 * parts `Content-Disposition: form-data; name="N"`. In names and filenames `"`, CR and LF
 * are written %22, %0D and %0A (as browsers do). Header blocks are UTF-8.
 *
 * Part sources: bytes (copied when appended), a file (a regular file whose size is taken
 * when appended and which is opened only while its part is read, so thousands of file
 * parts never hold thousands of descriptors), or a read callback with a declared length.
 * A source that yields fewer or more bytes than its length makes afs_body_stream_read fail
 * with AFS_E_LENGTH_MISMATCH: the body never differs in length from its Content-Length.
 *
 * A `release` function given with a part runs exactly once: when the part is destroyed
 * (with the form or the request's body stream), or at once when the append fails.
 * Functions called on a spent form (after a successful afs_form_finish) return AFS_E_STATE;
 * the form handle itself stays valid until afs_form_free (afs_form_boundary gives the
 * final boundary). A release function that calls back into its form gets AFS_E_STATE.
 */
typedef struct afs_form afs_form;
typedef struct afs_body_stream afs_body_stream;

/** AFNetworking's 3G suggestions for afs_form_throttle_bandwidth. */
#define AFS_UPLOAD_STREAM_3G_SUGGESTED_PACKET_SIZE 16384
#define AFS_UPLOAD_STREAM_3G_SUGGESTED_DELAY 0.2

/** Reads up to max_length bytes of a part body into buffer: returns the count (> 0), 0 at
 *  the end, -1 on error. Called only while the part is read, never with max_length 0. */
typedef int64_t (*afs_read_fn)(void *ctx, uint8_t *buffer, size_t max_length);
/** Goes back to the first byte of the part body: 0 on success. */
typedef int (*afs_rewind_fn)(void *ctx);
/** Called once when the part is destroyed (or when its append fails). */
typedef void (*afs_release_fn)(void *ctx);

/**
 * multipartFormRequestWithMethod:URLString:parameters:constructingBodyWithBlock:error: up to
 * the block — a form over the serializer's plain request for `method` and `url` (its
 * headers and request properties included). The parameters (`params`, may be NULL) become
 * field parts in query-pair order (names with brackets, e.g. `user[tags][]`, by the
 * serializer's query styles); data values are their raw bytes, null an empty part, other
 * scalars their text in the serializer's string encoding.
 * @return owned form (afs_form_free), or NULL with AFS_E_INVALID_METHOD (GET and HEAD, in
 *         any case, cannot carry a multipart body; or not a token), AFS_E_BAD_URL,
 *         AFS_E_INVALID_ARGUMENT (NULL serializer/method/url, params not a dictionary),
 *         AFS_E_ENCODING (a value the string encoding cannot represent; the field is named),
 *         AFS_E_INVALID_UTF8.
 */
AFS_API afs_form *afs_serializer_multipart_form(const afs_serializer *s, const char *method,
                                                const char *url, const afs_value *params, afs_error *err);
/**
 * appendPartWithFileURL:name:error: — a file part streamed from disk, filename the last
 * path component, Content-Type from its extension (a built-in table, then
 * /etc/mime.types, then application/octet-stream; `.cer` is application/x-x509-ca-cert).
 * @return AFS_OK; AFS_E_FILE (os_errno set) when the file is missing, a directory, not a
 *         regular file or unreadable; AFS_E_STATE on a spent form; AFS_E_INVALID_ARGUMENT
 *         (NULL form, path or name); AFS_E_INVALID_UTF8.
 */
AFS_API afs_status afs_form_append_file(afs_form *f, const char *path, const char *name, afs_error *err);
/**
 * appendPartWithFileURL:name:fileName:mimeType:error: — as afs_form_append_file with a
 * chosen `filename` (NULL: the last path component) and `mime_type` (NULL: from the
 * filename's extension).
 * @return the statuses of afs_form_append_file; AFS_E_INVALID_HEADER for CR, LF or NUL in
 *         mime_type.
 */
AFS_API afs_status afs_form_append_file_ex(afs_form *f, const char *path, const char *name,
                                           const char *filename, const char *mime_type, afs_error *err);
/**
 * appendPartWithFileData:name:fileName:mimeType: — a file part whose `len` bytes are
 * copied now (`data` may be NULL only when len is 0). `mime_type` NULL: from the
 * filename's extension.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT (NULL form, name or filename); AFS_E_INVALID_HEADER
 *         (CR/LF/NUL in mime_type); AFS_E_STATE; AFS_E_INVALID_UTF8.
 */
AFS_API afs_status afs_form_append_file_data(afs_form *f, const void *data, size_t len, const char *name,
                                             const char *filename, const char *mime_type, afs_error *err);
/**
 * appendPartWithFormData:name: — a field part with `len` bytes copied now (`data` may be
 * NULL only when len is 0).
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT; AFS_E_STATE; AFS_E_INVALID_UTF8 (name).
 */
AFS_API afs_status afs_form_append_form_data(afs_form *f, const void *data, size_t len,
                                             const char *name, afs_error *err);
/**
 * appendPartWithInputStream:name:fileName:length:mimeType: — a file part read through
 * `read` (required), which must yield exactly `length` bytes (one extra call checks that
 * it is then at its end), or with AFS_LENGTH_UNKNOWN until it returns 0 (the request is
 * then chunked: section 15). `rewind` (may be NULL) lets the stream go back: without it,
 * rewinding or seeking back over this part once it was read is AFS_E_UNSUPPORTED.
 * `release` (may be NULL) runs once with `ctx` when the part is destroyed — or before this
 * function returns when it fails. `mime_type` NULL: from the filename's extension.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT (NULL form, read, name or filename; length above
 *         INT64_MAX other than AFS_LENGTH_UNKNOWN);
 *         AFS_E_INVALID_HEADER; AFS_E_STATE; AFS_E_INVALID_UTF8.
 */
AFS_API afs_status afs_form_append_stream(afs_form *f, afs_read_fn read, afs_rewind_fn rewind,
                                          afs_release_fn release, void *ctx, uint64_t length,
                                          const char *name, const char *filename, const char *mime_type,
                                          afs_error *err);
/**
 * appendPartWithHeaders:body: — a part with exactly these headers, in this order, and a
 * copy of `len` body bytes. Part headers stay inside the body, never in the request head,
 * so any name is allowed (the request's framing is the library's: afs_request_copy_head). `header_names`/`header_values` may be NULL when header_count
 * is 0; `body` may be NULL when len is 0.
 * @return AFS_OK; AFS_E_INVALID_HEADER (a name that is not a token, a value with CR, LF or
 *         NUL: no header injection); AFS_E_INVALID_ARGUMENT; AFS_E_STATE; AFS_E_INVALID_UTF8.
 */
AFS_API afs_status afs_form_append_part(afs_form *f, const char *const *header_names,
                                        const char *const *header_values, size_t header_count,
                                        const void *body, size_t len, afs_error *err);
/**
 * throttleBandwidthWithPacketSize:delay: — the body stream returns at most `packet_size`
 * bytes per read (and writes at most that much per system call in
 * afs_body_stream_write_to_fd) and sleeps `delay_seconds` after each chunk. packet_size 0
 * removes the limit; a negative or non-finite delay counts as 0. Ignored for NULL or a
 * spent form.
 */
AFS_API void afs_form_throttle_bandwidth(afs_form *f, size_t packet_size, double delay_seconds);
/**
 * Sets the boundary (tests, reproducible bodies): 1-70 characters of
 * `A-Z a-z 0-9 ' + _ - .`. If `--` followed by it occurs in the headers or in-memory body of
 * a part, afs_form_finish fails with AFS_E_INVALID_ARGUMENT (file and callback bodies
 * cannot be checked). Without it the boundary is `Boundary+` and 16 uppercase hex digits
 * from the OS random source, redrawn at finish if it occurs in an in-memory part.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT (bad boundary, NULL); AFS_E_STATE; AFS_E_INVALID_UTF8.
 */
AFS_API afs_status afs_form_set_boundary(afs_form *f, const char *boundary, afs_error *err);
/** The boundary (the final one after afs_form_finish). Borrowed: valid until the boundary
 *  changes or afs_form_free(f). NULL for NULL or a wrong handle. */
AFS_API const char *afs_form_boundary(const afs_form *f);
/**
 * requestByFinalizingMultipartFormData — the request: the serializer's headers,
 * `Content-Type: multipart/form-data; boundary=B` (replacing any Content-Type),
 * `Content-Length` (exact), no plain body (afs_request_body returns NULL) and a body stream
 * (afs_request_body_stream). A form without parts gives what AFNetworking gives: the
 * serializer's plain request (for the HTTP serializer, an empty
 * application/x-www-form-urlencoded body) and no body stream. Afterwards the form is spent;
 * still free it.
 * @return owned request (afs_request_free), or NULL with AFS_E_INVALID_ARGUMENT (a boundary
 *         set with afs_form_set_boundary occurs in a part; the form stays usable: set
 *         another and finish again), AFS_E_STATE (already finished).
 */
AFS_API afs_request *afs_form_finish(afs_form *f, afs_error *err);
/** Frees a form and the parts it still owns (running their release functions; calls they
 *  make on the form get AFS_E_STATE). NULL is ignored. From inside a callback of one of
 *  the form's calls, the form is freed when that call returns. */
AFS_API void afs_form_free(afs_form *f);

/* ===================================================================================== */
/* 8. Body streams                                                                      */
/* ===================================================================================== */

/*
 * afs_body_stream — the body of a multipart request (AFNetworking's
 * AFMultipartBodyStream), pulled with afs_body_stream_read while file parts stream from
 * disk. It is borrowed from its request: get it with afs_request_body_stream, never free
 * it; it lives until afs_request_free. One thread at a time.
 *
 * HOW TO STREAM A MULTIPART BODY
 *
 *     afs_request *r = afs_form_finish(form, &err);
 *     afs_body_stream *bs = afs_request_body_stream(r);
 *     // send afs_request_method(r), afs_request_url(r) and every header, including
 *     // Content-Type and Content-Length (== afs_body_stream_content_length(bs))
 *     uint8_t buf[65536];
 *     int64_t n;
 *     while ((n = afs_body_stream_read(bs, buf, sizeof buf)) > 0)
 *         send_bytes(buf, (size_t)n);
 *     if (n < 0) {                        // nothing of the failing call counts
 *         afs_body_stream_error(bs, &err); // e.g. AFS_E_LENGTH_MISMATCH, AFS_E_IO
 *         ...                              // afs_body_stream_rewind/seek to retry
 *     }
 *     afs_request_free(r);
 *
 * Or let the kernel copy it: afs_body_stream_write_to_fd(bs, socket_or_file, &n, &err).
 * For a redirect or a retry, afs_body_stream_rewind (or libcurl's SEEKFUNCTION over
 * afs_body_stream_seek) starts again.
 *
 * Reads give the same bytes for every sequence of buffer sizes, including 1. After a read
 * returned -1 every later read returns -1 and afs_body_stream_error reports the same error,
 * until afs_body_stream_rewind or afs_body_stream_seek. A call from inside one of the
 * stream's own callbacks (a part's read or rewind function, the progress function) is
 * refused: AFS_E_STATE (reads -1, afs_body_stream_error then reports it), nothing changes,
 * and afs_body_stream_close / afs_request_free from there happen when the running call
 * returns. A closed stream stays closed: calls
 * on it return -1 / AFS_E_STATE.
 */

/** The body stream of a request whose body streams: multipart, a body source, chunked or
 *  compressed while it streams (section 15); NULL when `r` has none (an in-memory body,
 *  no body, NULL). Borrowed: valid until afs_request_free(r); do not free it. */
AFS_API afs_body_stream *afs_request_body_stream(afs_request *r);
/**
 * requestWithMultipartFormRequest:writingStreamContentsToFile:completionHandler:, but
 * synchronous — writes the whole body, from its first byte, to `path` through a temporary
 * file in the same directory renamed over `path` at the end (no partial file is left on
 * failure), and returns a copy of `r` without body stream, headers kept. The position of
 * r's own stream is not changed; callback parts are shared and rewound as needed.
 * @return owned request (afs_request_free), or NULL with AFS_E_INVALID_ARGUMENT (NULL, no
 *         body stream), AFS_E_IO (os_errno set; the destination, or a source failing),
 *         AFS_E_LENGTH_MISMATCH, AFS_E_UNSUPPORTED (a callback part that cannot rewind and
 *         was already read), AFS_E_STATE (the stream was closed).
 */
AFS_API afs_request *afs_request_write_body_to_file(const afs_request *r, const char *path, afs_error *err);

/** Opens the stream (afs_body_stream_read opens it implicitly).
 *  @return AFS_OK; AFS_E_STATE when closed; AFS_E_INVALID_ARGUMENT for NULL. */
AFS_API afs_status afs_body_stream_open(afs_body_stream *bs, afs_error *err);
/**
 * Reads up to `max_length` bytes of the body into `buffer` (at most the throttle's packet
 * size, then sleeps its delay). File and callback bytes go straight into `buffer`.
 * @return the number of bytes (> 0); 0 at the end; -1 on error (NULL stream or buffer,
 *         max_length 0, closed stream, a source failing or yielding a different length):
 *         then afs_body_stream_error tells why, the position is unchanged and the buffer's
 *         content is unspecified. The progress callback runs after each successful read.
 */
AFS_API int64_t afs_body_stream_read(afs_body_stream *bs, uint8_t *buffer, size_t max_length);
/** True from open (or the first read) until the last byte has been read; false after an
 *  error, after close, and for NULL. */
AFS_API bool afs_body_stream_has_bytes_available(const afs_body_stream *bs);
/** The exact body length (the request's Content-Length); AFS_LENGTH_UNKNOWN when a
 *  source's length is unknown or the body is compressed while it streams (section 15);
 *  0 for NULL. */
AFS_API uint64_t afs_body_stream_content_length(const afs_body_stream *bs);
/** Closes the stream and any file it has open. Later calls return AFS_E_STATE (reads -1).
 *  NULL is ignored. */
AFS_API void afs_body_stream_close(afs_body_stream *bs);
/**
 * The sticky error after a read returned -1 (or after afs_body_stream_write_to_fd failed
 * because of a source) or, when there is none, the refusal of the last call made from
 * inside one of the stream's callbacks (AFS_E_STATE): copies it into `out` (may be NULL)
 * and returns its code.
 * @return AFS_OK (out untouched) when there is none; AFS_E_INVALID_ARGUMENT for NULL.
 */
AFS_API afs_status afs_body_stream_error(const afs_body_stream *bs, afs_error *out);
/** Goes back to the first byte and clears the sticky error. The request starts over too:
 *  the next afs_request_write_to_fd writes the whole request again, head included.
 *  @return AFS_OK; AFS_E_UNSUPPORTED when a callback part without rewind function was read;
 *  AFS_E_STATE when closed; AFS_E_INVALID_ARGUMENT for NULL. */
AFS_API afs_status afs_body_stream_rewind(afs_body_stream *bs, afs_error *err);
/**
 * Moves to body offset `offset` (0 to the content length) and clears the sticky error; the
 * next read starts there (libcurl's SEEKFUNCTION, resumable uploads, Python's seek).
 * Parts that end at or before `offset` are skipped unread: their callbacks are not called,
 * so a callback part whose source gives more or fewer bytes than its declared length is
 * reported (AFS_E_LENGTH_MISMATCH) only by reads that go through it, never by reads that
 * start after it.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT past the end or for NULL; AFS_E_UNSUPPORTED when
 *         a callback part at or after the offset has no rewind function and was already
 *         read past it (position unchanged); AFS_E_STATE when closed.
 */
AFS_API afs_status afs_body_stream_seek(afs_body_stream *bs, uint64_t offset, afs_error *err);
/** Bytes delivered so far (read, or written by afs_body_stream_write_to_fd); 0 for NULL. */
AFS_API uint64_t afs_body_stream_position(const afs_body_stream *bs);
/**
 * Writes the rest of the body to a blocking `fd`: copy_file_range for file parts when fd is
 * a regular file, sendfile when it is a socket or pipe, write(2)/writev for in-memory parts;
 * read/write when the kernel cannot copy (EXDEV, EINVAL, ENOSYS). SIGPIPE is held back: a
 * closed reader gives AFS_E_IO with os_errno EPIPE.
 * @param written (may be NULL) the bytes written by this call, also on failure; the
 *        position then reflects exactly what was written, so the call can be repeated.
 * @return AFS_OK; AFS_E_IO with os_errno — when the destination failed (EPIPE, ENOSPC) the
 *         stream stays usable, when a source failed the error is sticky;
 *         AFS_E_LENGTH_MISMATCH, AFS_E_UNSUPPORTED (sticky); the sticky error of an earlier
 *         failure; AFS_E_STATE when closed; AFS_E_INVALID_ARGUMENT (NULL, fd < 0).
 */
AFS_API afs_status afs_body_stream_write_to_fd(afs_body_stream *bs, int fd, uint64_t *written, afs_error *err);
/** Interruptible writes for afs_body_stream_write_to_fd (default off), as
 *  afs_request_set_interruptible: a signal returns AFS_E_IO with os_errno EINTR and the
 *  stream resumable (its position is what was written). NULL bs, and a call from inside
 *  one of the stream's callbacks, are ignored. */
AFS_API void afs_body_stream_set_interruptible(afs_body_stream *bs, bool interruptible);
/** Progress of a body: (bytes delivered so far, content length). */
typedef void (*afs_progress_fn)(void *ctx, uint64_t sent, uint64_t total);
/** Calls `fn(ctx, sent, total)` after every successful read or write. `sent` never
 *  decreases except after a rewind or seek; the last call before the end is
 *  (total, total). NULL fn removes the callback; NULL bs, and a call from inside one of
 *  the stream's callbacks, are ignored. */
AFS_API void afs_body_stream_set_progress(afs_body_stream *bs, afs_progress_fn fn, void *ctx);
/** Progress that can cancel: return 0 to go on, nonzero to cancel. */
typedef int (*afs_progress_cancel_fn)(void *ctx, uint64_t sent, uint64_t total);
/**
 * Calls `fn(ctx, sent, total)` after every successful read or write (after the
 * afs_progress_fn, if both are set); a nonzero return cancels:
 * afs_body_stream_write_to_fd stops at once (`written` and the position count what was
 * written), and afs_body_stream_read returns the bytes of the call that was cancelled and
 * fails the next one. Either way the error is AFS_E_IO with os_errno ECANCELED,
 * "cancelled by the progress callback at byte N of TOTAL", sticky until a rewind or seek.
 * Writes to a descriptor report at least every 1 MiB (kernel copies and memory parts are
 * written in steps of at most 1 MiB). NULL fn removes the callback; NULL bs is ignored.
 */
AFS_API void afs_body_stream_set_progress_cancel(afs_body_stream *bs, afs_progress_cancel_fn fn, void *ctx);

/* ===================================================================================== */
/* 9. Response serializers                                                              */
/* ===================================================================================== */

/*
 * afs_response_serializer — AFHTTPResponseSerializer, AFJSONResponseSerializer,
 * AFPropertyListResponseSerializer or AFCompoundResponseSerializer: checks a response's
 * status code and MIME type, then decodes its body into an afs_value. It sends and
 * receives nothing: give it what your HTTP stack received (status code, Content-Type
 * header, body bytes). Create with afs_response_serializer_new,
 * afs_response_serializer_new_compound or afs_response_serializer_copy; free with
 * afs_response_serializer_free. Thread-safe: configuration, validation and decoding may
 * run on many threads at once (each call works on a snapshot of the configuration).
 *
 * Validation (validateResponse:data:error:):
 *   - the MIME type is the Content-Type value before any `;`, without surrounding spaces
 *     and tabs, compared case-insensitively with the acceptable types; it must be one of
 *     them, except that an absent Content-Type with an empty body passes. Otherwise
 *     AFS_E_UNACCEPTABLE_CONTENT_TYPE, "Request failed: unacceptable content-type:
 *     text/html" ("(none)" when absent).
 *   - the status code must lie in one of the acceptable ranges, else
 *     AFS_E_UNACCEPTABLE_STATUS, "Request failed: not found (404)": the lowercase IANA
 *     reason phrase, or the class of an unregistered code ("client error"). When the MIME
 *     type is refused too, the status wins and the message adds
 *     "; unacceptable content-type: text/html".
 * Defaults: status codes 200-299; content types: HTTP any; JSON application/json,
 * text/json, text/javascript; PLIST application/x-plist; IMAGE AFNetworking's image types
 * and image/webp (section 12).
 *
 * Decoding (responseObjectForResponse:data:error:), by kind:
 *   - HTTP: the body as an AFS_VALUE_DATA value.
 *   - JSON: RFC 8259 text in UTF-8 (a leading UTF-8 byte-order mark is skipped); objects,
 *     arrays, strings (surrogate pairs combined), integers within int64 as AFS_VALUE_INT,
 *     other numbers as AFS_VALUE_DOUBLE, true/false, null; nesting deeper than 512 is an
 *     error. Malformed text is AFS_E_INVALID_JSON naming the byte offset. A scalar at the
 *     top level needs AFS_JSON_READING_FRAGMENTS_ALLOWED. With removes_keys_with_null_values,
 *     null dictionary values and null array elements are dropped at every depth. The value
 *     is kept as afs_value_parse_json keeps it (two blocks, read in place), except with
 *     removes_keys_with_null_values or a lowered decoding limit.
 *   - PLIST: XML and binary (bplist00) property lists, as Python's plistlib and Foundation
 *     write them; errors are AFS_E_INVALID_PLIST naming the byte offset.
 *   - An empty body gives no value and no error (every kind; with empty-response codes
 *     set, only for those codes or a HEAD request: section 12); so does a body of one space
 *     for JSON and PLIST (AFNetworking's rule).
 *   - IMAGE: the header read strictly, the body handed back (section 12).
 *   - Compound: the first member whose validation passes decodes the response. When none
 *     passes, the outcome is that of the first member that accepts the MIME type (so a
 *     JSON error document with status 500 is decoded by the JSON member), or, when none
 *     accepts it, of the first member.
 *
 * How to decode a response:
 *
 *     afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_JSON);
 *     afs_value *doc = NULL;
 *     afs_error err;
 *     afs_status st = afs_response_object(rs, status, content_type, body, body_len, &doc, &err);
 *     if (st == AFS_OK && doc) { ... walk doc (below) ... }
 *     else if (st == AFS_E_UNACCEPTABLE_STATUS && doc) { ... the server's error document ... }
 *     else if (st != AFS_OK) { fprintf(stderr, "%s\n", err.message); }
 *     afs_value_free(doc);
 *     afs_response_serializer_free(rs);
 */
typedef struct afs_response_serializer afs_response_serializer;

typedef enum afs_response_kind {
    AFS_RESPONSE_HTTP,   /**< validation only; the body is returned as data */
    AFS_RESPONSE_JSON,   /**< JSON bodies */
    AFS_RESPONSE_PLIST,  /**< XML and binary property-list bodies */
    AFS_RESPONSE_XML = 3,  /**< XML bodies (application/xml, text/xml): a JsonML tree (section 11) */
    AFS_RESPONSE_IMAGE = 4 /**< image bodies: header read, body handed back (section 12) */
} afs_response_kind;

/** A new response serializer of `kind` with AFNetworking's defaults. Owned: free with
 *  afs_response_serializer_free. NULL for an unknown kind (or when its lock cannot be
 *  allocated). */
AFS_API afs_response_serializer *afs_response_serializer_new(afs_response_kind kind);
/**
 * AFCompoundResponseSerializer: a serializer that tries `members` in order. Each member is
 * copied (the caller keeps and frees its own); a compound member contributes its members
 * (the list is flattened, which tries them in the same order).
 * @param members `count` serializers; may be NULL only when count is 0.
 * @return owned serializer, or NULL with AFS_E_INVALID_ARGUMENT when count is 0, members
 *         is NULL, or a member is NULL or not a response serializer.
 */
AFS_API afs_response_serializer *afs_response_serializer_new_compound(
    const afs_response_serializer *const *members, size_t count, afs_error *err);
/** An independent copy of everything (kind, members, status codes, content types, JSON
 *  options, null removal). Owned. NULL for a NULL or wrong handle. */
AFS_API afs_response_serializer *afs_response_serializer_copy(const afs_response_serializer *rs);
/** Frees a response serializer. NULL is ignored. */
AFS_API void afs_response_serializer_free(afs_response_serializer *rs);

/**
 * Replaces the acceptable status codes with the inclusive ranges first[i]..last[i]
 * (e.g. {200} and {299}). count 0 accepts every status. On a compound serializer, sets
 * them on every member.
 * @param first `count` lower bounds; may be NULL only when count is 0.
 * @param last `count` upper bounds; may be NULL only when count is 0.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT for a NULL or wrong handle, NULL arrays with
 *         count > 0, or a range whose first exceeds its last (its index named).
 */
AFS_API afs_status afs_response_serializer_set_acceptable_status_codes(afs_response_serializer *rs,
    const int *first, const int *last, size_t count, afs_error *err);
/**
 * Replaces the acceptable MIME types (`type/subtype`, compared case-insensitively).
 * types NULL or count 0 accepts every type. On a compound serializer, sets them on every
 * member.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT for a NULL or wrong handle, types NULL with
 *         count > 0, a NULL entry, or an entry that is not two tokens around a `/` (no
 *         parameters, no spaces; its index named); AFS_E_INVALID_UTF8.
 */
AFS_API afs_status afs_response_serializer_set_acceptable_content_types(afs_response_serializer *rs,
    const char *const *types, size_t count, afs_error *err);
/** AFJSONResponseSerializer's removesKeysWithNullValues (default off): drop null
 *  dictionary values and null array elements, recursively. Used by JSON serializers,
 *  stored by all; on a compound serializer, set on every member. */
AFS_API void afs_response_serializer_set_removes_keys_with_null_values(afs_response_serializer *rs, bool on);

/**
 * Lowers the limit on what decoding a JSON or property-list body may build (not
 * AFNetworking's; a guard for hosts). A decoded tree is charged 32 bytes per value
 * (dictionary keys included) plus the bytes of every string, key and data, a shared
 * binary-plist object at every place it is referenced. The limit is 64 x the body size +
 * 1 MiB (JSON and XML bodies never reach it; a binary plist whose shared objects expand
 * beyond it is refused), or max_bytes when that is lower; 0 restores the default.
 * Beyond the limit afs_response_object fails with AFS_E_INVALID_JSON or
 * AFS_E_INVALID_PLIST, "the decoded tree would take more than N bytes …". On a compound
 * serializer, sets it on every member. A NULL or wrong handle is ignored.
 * Walking a decoded JSON value (afs_value_count, _at, _key_at, _get and the scalar
 * getters, over every node, from any number of threads) adds no memory per node: the
 * members lent are views into the parsed document (section 3), and only a container of
 * more than 32 members that are not all scalars gets a member index (8 bytes a member,
 * made once). Decoding plus a full walk stays below 10 x the body size + 8 MiB of resident
 * memory (a 16 MB `[1,1,...]`, a 16 MB object of short keys, a 10 MB document of nested
 * records: Tests/c/test_value_walk_memory.c).
 */
AFS_API void afs_response_serializer_set_max_decoded_bytes(afs_response_serializer *rs, uint64_t max_bytes);

/** NSJSONReadingOptions. 1 (mutable containers) and 2 (mutable leaves) are accepted and
 *  change nothing: decoded values are always new trees. */
enum { AFS_JSON_READING_FRAGMENTS_ALLOWED = 4 /**< a scalar at the top level */ };
/** Sets the JSON reading options (default 0: the top level must be an object or an array).
 *  Used by JSON serializers, stored by all; on a compound serializer, set on every member.
 *  @return AFS_OK; AFS_E_INVALID_ARGUMENT for a NULL or wrong handle or bits other than
 *  1, 2 and 4. */
AFS_API afs_status afs_response_serializer_set_json_reading_options(afs_response_serializer *rs,
    unsigned options, afs_error *err);

/**
 * validateResponse:data:error: — checks the status code and the MIME type (see above).
 * @param content_type the Content-Type header value (parameters ignored; any bytes), NULL
 *        when absent.
 * @param data the body; may be NULL only when len is 0 (len is a byte count: AFS_NTS is
 *        not allowed).
 * @return AFS_OK; AFS_E_UNACCEPTABLE_STATUS; AFS_E_UNACCEPTABLE_CONTENT_TYPE (naming the
 *         type); AFS_E_INVALID_ARGUMENT for a NULL or wrong handle or bad data/len.
 */
AFS_API afs_status afs_response_validate(const afs_response_serializer *rs, int status_code,
    const char *content_type, const void *data, size_t len, afs_error *err);
/**
 * responseObjectForResponse:data:error: — validates, then decodes the body (see above).
 * *out is always written: NULL unless a value is returned.
 * @param out receives the decoded value, owned by the caller (afs_value_free).
 * @return AFS_OK with *out set, or with *out NULL for an empty body (or a single space,
 *         JSON and PLIST);
 *         AFS_E_UNACCEPTABLE_STATUS: the body is still decoded and *out set when possible
 *         (the server's error document; free it); when it cannot be decoded, *out is NULL
 *         and the message adds "; the body could not be decoded: ...";
 *         AFS_E_UNACCEPTABLE_CONTENT_TYPE: nothing decoded, *out NULL;
 *         AFS_E_INVALID_JSON / AFS_E_INVALID_PLIST naming the byte offset, *out NULL;
 *         AFS_E_INVALID_ARGUMENT for a NULL or wrong handle, out NULL, or bad data/len.
 */
AFS_API afs_status afs_response_object(const afs_response_serializer *rs, int status_code,
    const char *content_type, const void *data, size_t len, afs_value **out, afs_error *err);

/* ===================================================================================== */
/* 10. Bulk transfer (one call each way)                                                */
/* ===================================================================================== */

/*
 * For bindings that pay for every foreign call (Python's ctypes, cffi, cgo): parameters go
 * in as one buffer, a request comes back as one snapshot, a response as one buffer. The
 * buffers are a strict subset of Python's pickle protocol 4 (also read as protocol 5),
 * which CPython reads and writes at C speed and which is simple to read anywhere:
 *
 *   None, True, False   NONE 'N', NEWTRUE 0x88, NEWFALSE 0x89
 *   int                 BININT1 'K', BININT2 'M', BININT 'J', LONG1 0x8A, LONG4 0x8B
 *   float               BINFLOAT 'G' (8 bytes, big-endian IEEE 754)
 *   str                 SHORT_BINUNICODE 0x8C, BINUNICODE 'X', BINUNICODE8 0x8D (UTF-8)
 *   bytes               SHORT_BINBYTES 'C', BINBYTES 'B', BINBYTES8 0x8E
 *   dict                EMPTY_DICT '}', SETITEM 's', SETITEMS 'u'
 *   list / tuple        EMPTY_LIST ']', APPEND 'a', APPENDS 'e' / EMPTY_TUPLE ')',
 *                       TUPLE1-3 0x85-0x87, TUPLE 't'
 *   set / frozenset     EMPTY_SET 0x8F, ADDITEMS 0x90 / FROZENSET 0x91
 *   bookkeeping         PROTO 0x80, FRAME 0x95, MARK '(', STOP '.', POP '0', POP_MARK '1',
 *                       MEMOIZE 0x94, BINPUT 'q', LONG_BINPUT 'r', BINGET 'h',
 *                       LONG_BINGET 'j'
 *
 * Values map as: dict <-> dictionary (str keys, order kept), list and tuple -> array,
 * set and frozenset -> set, str <-> string, bytes <-> data, int <-> integer (int64), float
 * <-> double, bool <-> bool, None <-> null. Written arrays are lists; a written set is a
 * frozenset when its members are hashable in Python and stay distinct there (1, 1.0 and
 * true are one Python member), otherwise a list in the set's order.
 *
 * The reader refuses every other opcode with AFS_E_INVALID_ARGUMENT naming the opcode,
 * its byte offset and the Python type it stands for (GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
 * INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1-4, PERSID, BINPERSID: a class or function; BYTEARRAY8:
 * a bytearray; NEXT_BUFFER, READONLY_BUFFER: out-of-band buffers; the text opcodes of
 * protocols 0-1), so no input can name code. It also refuses, with the path (`['a'][2]`):
 * dict keys that are not str, ints outside int64, nesting deeper than 512, a container
 * that contains itself ("a cycle"), and shared members (the memo) that would expand to
 * more than max(2^20, 16 x the input length) values; truncated input, a memo index never
 * stored, and bytes after STOP are errors naming the offset; a str that is not UTF-8 is
 * AFS_E_INVALID_UTF8. The writer emits only the opcodes above; Python should load its
 * output with an Unpickler whose find_class refuses everything.
 */

/**
 * Reads a pickle of the subset above into a new value tree.
 * @param data the pickle (NULL only with len 0); @param len its length (an empty input is
 *        an error).
 * @return owned value (afs_value_free), or NULL with AFS_E_INVALID_ARGUMENT or
 *         AFS_E_INVALID_UTF8 as described above.
 */
AFS_API afs_value *afs_value_from_pickle(const void *data, size_t len, afs_error *err);
/**
 * Writes a value tree as a pickle of the subset (PROTO 4, one FRAME, no memo).
 * @param len receives the length (must not be NULL; 0 on failure).
 * @return owned bytes (afs_free), or NULL with AFS_E_INVALID_ARGUMENT for a NULL or
 *         wrong handle, len NULL, or a tree nested deeper than 512 levels.
 */
AFS_API uint8_t *afs_value_to_pickle(const afs_value *v, size_t *len, afs_error *err);
/**
 * afs_serializer_request with the parameters as a pickle, and the new request's snapshot
 * (afs_request_pickle) in the same call.
 * @param params the pickled parameters (the subset above); NULL with params_len 0 means no
 *        parameters.
 * @param snapshot if not NULL, receives the request's snapshot, borrowed from the request
 *        (valid until afs_request_free); @param snapshot_len receives its length
 *        (may be NULL). Both are set to NULL/0 on failure.
 * @return owned request (afs_request_free), or NULL with the statuses of
 *         afs_serializer_request and those of afs_value_from_pickle for the parameters.
 */
AFS_API afs_request *afs_serializer_request_pickle(const afs_serializer *s, const char *method,
    const char *url, const void *params, size_t params_len, const uint8_t **snapshot,
    size_t *snapshot_len, afs_error *err);
/**
 * The request in one piece: a pickled tuple (method str, url str, headers as a list of
 * (name, value) str tuples in order, body bytes or None, has_body_stream bool,
 * timeout_interval float, cache_policy int, should_handle_cookies bool,
 * should_use_pipelining bool, allows_cellular_access bool, network_service_type int).
 * *len (if not NULL) gets its length. Borrowed: valid until afs_request_free(r) (a change
 * to r makes a new snapshot; earlier ones stay readable, as the getters' strings do).
 * NULL (*len 0) for a NULL or wrong handle, or when the snapshot cannot be allocated.
 */
AFS_API const uint8_t *afs_request_pickle(const afs_request *r, size_t *len);
/** An independent copy of a value tree (also of a borrowed member). Owned: free with
 *  afs_value_free. NULL for a NULL or wrong handle. */
AFS_API afs_value *afs_value_copy(const afs_value *v);
/**
 * An independent copy of a request: method, URL, headers, body and properties.
 * @return owned request, or NULL with AFS_E_INVALID_ARGUMENT (NULL or wrong handle) or
 *         AFS_E_UNSUPPORTED for a multipart request (its body stream has one read
 *         position; build the form again).
 */
AFS_API afs_request *afs_request_copy(const afs_request *r, afs_error *err);
/**
 * afs_response_object with the decoded document written as a pickle of the subset: the
 * same validation, decoding, statuses and messages. JSON bodies (without
 * removes_keys_with_null_values) are written straight from the text, dictionary keys
 * once each (MEMOIZE, then BINGET); integers beyond int64 are the nearest double, as in
 * the tree.
 * @param out receives the pickle, owned by the caller (afs_free), or NULL when no
 *        document (the same cases in which afs_response_object gives no value);
 *        @param out_len its length. Both must not be NULL; both are always written.
 * @return the statuses of afs_response_object (AFS_E_UNACCEPTABLE_STATUS still gives the
 *         error document in *out when it can be decoded).
 */
AFS_API afs_status afs_response_object_pickle(const afs_response_serializer *rs, int status_code,
    const char *content_type, const void *data, size_t len, uint8_t **out, size_t *out_len,
    afs_error *err);

/* ===================================================================================== */
/* 11. XML: events, push parser, trees                                                   */
/* ===================================================================================== */
/*
 * A conforming non-validating XML 1.0 (fifth edition) reader with Namespaces in XML 1.0
 * (documents declaring version 1.x are read as 1.0, as the fifth edition allows).
 *
 * Input: UTF-8 (with or without a byte order mark), UTF-16 LE/BE (byte order mark, or an
 * encoding declaration), and documents declaring ISO-8859-1 or US-ASCII; every string
 * reported is UTF-8. Any other declared encoding is AFS_E_INVALID_XML.
 *
 * Safe by construction: nothing but the bytes given is ever read. The external DTD subset
 * is not read; a reference to an external parsed entity in content is skipped (reported as
 * nothing), in an attribute value it is AFS_E_INVALID_XML; an undeclared entity is an error
 * where the Entity Declared constraint applies (no external subset and no parameter-entity
 * reference, or standalone="yes"), and skipped otherwise. Internal entities are expanded
 * (in content and in attribute values, their replacement text parsed for markup); the bytes
 * of replacement text expanded in total are limited to 64 x the input decoded up to the
 * reference + 1 MiB (the decoding limit of the other readers; a response serializer uses
 * its own decoding limit), beyond which the parse fails with AFS_E_LIMIT, and so does
 * element nesting beyond 512 and entity references nested beyond 64 (billion laughs,
 * quadratic blowup, deep nesting). Attribute defaults declared in the internal subset are
 * applied, and values of attributes declared with a tokenized type are normalized (XML 1.0
 * section 3.3.3); declarations after a reference to an unread parameter entity are not
 * processed (section 5.1).
 *
 * Errors: AFS_E_INVALID_XML with "not well-formed: WHAT at line L, column C (byte offset
 * O)" (lines and columns from 1, columns in characters, the byte offset in the input as
 * given); inside an entity's replacement text, the position of the reference.
 *
 * Events: start and end of every element (with its qualified name as written, its
 * namespace URI or "" and its local name), attributes without the namespace declarations
 * (xmlns, xmlns:p), character data (CDATA sections included; a run of text may come in
 * several calls, split anywhere between characters, differently for different feed
 * splits; joined, the text is the same), comments and processing instructions outside the
 * DTD. Strings passed to a callback are borrowed for the call only. Names, URIs,
 * attribute values and the PI target and data are NUL-terminated; character data and
 * comments come as a pointer and a length and are not NUL-terminated.
 */
typedef struct afs_xml_attribute {
    const char *qname;       /**< as written, e.g. "xlink:href" */
    const char *ns_uri;      /**< "" when none */
    const char *local_name;  /**< "href" */
    const char *value;       /**< normalized as XML 1.0 section 3.3.3 says, UTF-8 */
} afs_xml_attribute;

/** The callbacks of a parse; any member may be NULL. A callback returning non-zero stops
 *  the parse: it then fails with AFS_E_STATE, "stopped by the handler". */
typedef struct afs_xml_handler {
    int (*start_element)(void *ctx, const char *qname, const char *ns_uri, const char *local_name,
                         const afs_xml_attribute *attrs, size_t attr_count);
    int (*end_element)(void *ctx, const char *qname, const char *ns_uri, const char *local_name);
    int (*characters)(void *ctx, const char *utf8, size_t len);     /**< CDATA included */
    int (*comment)(void *ctx, const char *utf8, size_t len);
    int (*processing_instruction)(void *ctx, const char *target, const char *data);
} afs_xml_handler;

/**
 * afs_xml_parser: a push parser for a document that arrives in pieces. Made by
 * afs_xml_parser_new, fed with afs_xml_parser_feed, ended with afs_xml_parser_finish, freed
 * with afs_xml_parser_free. Feeding a document in any split, down to one byte at a time,
 * gives the same events (character data aside, see above) and the same error. It holds the
 * token in progress (a tag, comment, PI, declaration) and nothing else of the input. After
 * an error or a stop it refuses further input with the same error. One thread at a time.
 */
typedef struct afs_xml_parser afs_xml_parser;

/**
 * Parses a whole document, calling `handler`'s callbacks in document order.
 * @param xml the document; may be NULL only when len is 0 (an empty input is not a
 *        document: AFS_E_INVALID_XML).
 * @param handler the callbacks; NULL: check well-formedness only.
 * @param ctx passed to every callback.
 * @return AFS_OK; AFS_E_INVALID_XML (not well-formed, unsupported encoding);
 *         AFS_E_LIMIT (nesting, entity expansion); AFS_E_STATE (stopped by the handler);
 *         AFS_E_NO_MEMORY; AFS_E_INVALID_ARGUMENT.
 */
AFS_API afs_status afs_xml_parse(const uint8_t *xml, size_t len, const afs_xml_handler *handler, void *ctx,
                                 afs_error *err);
/** A new push parser (the handler is copied; NULL: no callbacks). Owned: free with
 *  afs_xml_parser_free. NULL only when out of memory (AFS_E_NO_MEMORY). */
AFS_API afs_xml_parser *afs_xml_parser_new(const afs_xml_handler *handler, void *ctx, afs_error *err);
/** Sets the limits of afs_xml_parser `p` before its first feed: `max_depth` (0: 512) and
 *  `max_expanded_bytes` (0: the default above). AFS_E_STATE after the first feed,
 *  AFS_E_INVALID_ARGUMENT for a NULL parser. */
AFS_API afs_status afs_xml_parser_set_limits(afs_xml_parser *p, size_t max_depth, uint64_t max_expanded_bytes,
                                             afs_error *err);
/** Feeds the next `len` bytes (`bytes` may be NULL when len is 0); callbacks run for every
 *  complete token. Statuses as afs_xml_parse; after a failure every call returns it again. */
AFS_API afs_status afs_xml_parser_feed(afs_xml_parser *p, const uint8_t *bytes, size_t len, afs_error *err);
/** Ends the input: reports what is left and checks the document is complete (AFS_E_INVALID_XML
 *  naming what is unclosed). A second finish is AFS_E_STATE. */
AFS_API afs_status afs_xml_parser_finish(afs_xml_parser *p, afs_error *err);
/** Frees a push parser (NULL is accepted). Called from one of the parser's callbacks, it
 *  takes effect when the running feed or finish returns. */
AFS_API void afs_xml_parser_free(afs_xml_parser *p);
/*
 * The tree: afs_response_object with an AFS_RESPONSE_XML serializer gives the document as
 * JsonML (jsonml.org): an element is an array ["qname", {attributes}, children...], the
 * attribute dictionary always present (possibly empty) and keeping the namespace
 * declarations as written; text children are strings (adjacent runs joined); comments and
 * PIs are not in the tree. Walk it with the value API (section 3); it writes back as JSON.
 * It is held as a decoded JSON value is (one block of 16-byte nodes and one of text, see
 * afs_value_parse_json), and walks with the same memory. The serializer's decoding
 * limit (afs_response_serializer_set_max_decoded_bytes) bounds both the entity text
 * expanded and the tree, charged as for JSON (AFS_E_LIMIT beyond).
 *
 * How to: count the elements of a document as it arrives.
 *
 *     static int on_start(void *ctx, const char *qname, const char *ns_uri, const char *local,
 *                         const afs_xml_attribute *attrs, size_t n) {
 *         ++*(size_t *)ctx;
 *         return 0;                              // non-zero would stop the parse
 *     }
 *     afs_xml_handler h = {0};
 *     h.start_element = on_start;
 *     size_t count = 0;
 *     afs_error err = {0};
 *     afs_xml_parser *p = afs_xml_parser_new(&h, &count, &err);
 *     while ((n = read(fd, buf, sizeof buf)) > 0)
 *         if (afs_xml_parser_feed(p, buf, (size_t)n, &err) != AFS_OK) break;
 *     if (err.code == AFS_OK) afs_xml_parser_finish(p, &err);
 *     if (err.code != AFS_OK) fprintf(stderr, "%s\n", err.message);   // "... at line 3, column 7 (byte offset 41)"
 *     afs_xml_parser_free(p);
 *
 * And the tree of a response:
 *
 *     afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_XML);
 *     afs_value *doc = NULL;
 *     if (afs_response_object(rs, 200, "application/xml", body, body_len, &doc, &err) == AFS_OK) {
 *         // afs_value_get_string(afs_value_at(doc, 0)) is the root's name; afs_value_at(doc, 1) its attributes
 *     }
 *     afs_value_free(doc);
 *     afs_response_serializer_free(rs);
 */





/* ===================================================================================== */
/* 12. Images and the rest of the response family                                        */
/* ===================================================================================== */
/*
 * AFS_RESPONSE_IMAGE — AFImageResponseSerializer without the pixels. A serializer made by
 * afs_response_serializer_new(AFS_RESPONSE_IMAGE) is an afs_response_serializer (section 9:
 * same handle rules, same validation, same threads rule). Acceptable content types:
 * image/tiff, image/jpeg, image/gif, image/png, image/ico, image/x-icon, image/bmp,
 * image/x-bmp, image/x-xbitmap, image/x-win-bitmap (AFNetworking's) and image/webp.
 *
 * Decoding identifies the body from its bytes and reads its header strictly, walking the
 * file's structure to its end marker (PNG chunks with their CRCs to IEND, JPEG marker
 * segments and entropy-coded data to EOI, GIF blocks to the trailer, the BMP pixel array,
 * every TIFF IFD and strip, every ICO entry, every WebP chunk), so truncated and corrupt
 * files are refused; bytes after the end marker are ignored. NO PIXEL IS DECODED: the
 * library has no image codecs. The result is a dictionary:
 *
 *     {"format": "png" | "jpeg" | "gif" | "bmp" | "tiff" | "ico" | "webp" | "xbm",
 *      "width": int, "height": int,            pixels (ICO: the largest entry; TIFF: page 1)
 *      "scale": double,                        the image scale (default 1)
 *      "point_width": double, "point_height": double,   pixels / scale
 *      "frames": int,                          GIF images, APNG acTL frames, animated WebP
 *                                              ANMF frames, ICO entries, TIFF pages; else 1
 *      "data": data}                           the body as sent: give it to your codec
 *                                              (libpng, libjpeg-turbo, stb_image, Pillow...)
 *
 * Rules: a content type that names image formats (image/png, image/apng; image/jpeg,
 * image/jpg, image/pjpeg; image/gif; image/bmp, image/x-bmp, image/x-ms-bmp; image/tiff;
 * image/ico, image/x-icon, image/vnd.microsoft.icon; image/x-win-bitmap = BMP or ICO;
 * image/webp; image/x-xbitmap = XBM, the only way XBM text is read besides an unknown type
 * with a body starting "#define") must agree with the bytes, else AFS_E_INVALID_IMAGE
 * "content type image/png says PNG but the body is a JPEG image"; another type (when the
 * acceptable types were changed) lets the bytes decide. A truncated or corrupt structure is
 * AFS_E_INVALID_IMAGE naming the format, what is wrong and the byte offset. Width x height
 * above the pixel limit (default 2^31) is AFS_E_LIMIT. BigTIFF, hierarchical JPEG (two
 * frame headers) and a JPEG whose height comes from a DNL marker are refused.
 *
 * How to read an image response:
 *
 *     afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_IMAGE);
 *     afs_response_serializer_set_image_scale(rs, 2.0, &err);      // @2x assets
 *     afs_value *img = NULL;
 *     if (afs_response_object(rs, 200, "image/png", body, body_len, &img, &err) == AFS_OK && img) {
 *         printf("%s %lldx%lld, %lld frame(s)\n",
 *                afs_value_get_string(afs_value_get(img, "format"), NULL),
 *                (long long)afs_value_get_int(afs_value_get(img, "width")),
 *                (long long)afs_value_get_int(afs_value_get(img, "height")),
 *                (long long)afs_value_get_int(afs_value_get(img, "frames")));
 *         size_t n;
 *         const uint8_t *bytes = afs_value_get_data(afs_value_get(img, "data"), &n);
 *         ... decode bytes[0..n) with your image codec ...
 *     }
 *     afs_value_free(img);
 *     afs_response_serializer_free(rs);
 *
 * The rest of the response family (Alamofire's rules; each off by default, so that
 * AFNetworking's behaviour is kept; each set on a compound serializer applies to its
 * members):
 *   - empty responses: afs_response_serializer_set_empty_response_codes (Alamofire uses
 *     204 and 205) and afs_response_object_for_method: with codes set, an empty body is no
 *     object (*out NULL, AFS_OK) only for those status codes or a HEAD request; elsewhere an
 *     empty JSON, XML or property-list body is AFS_E_INVALID_JSON, AFS_E_INVALID_XML or
 *     AFS_E_INVALID_PLIST ("no JSON value: the body is empty: status 200 is not one of the
 *     empty-response codes (204, 205) and the request is not HEAD") and an empty image body
 *     AFS_E_INVALID_IMAGE; an HTTP serializer still gives no object. Without codes (the
 *     default) every empty body is no object, as in AFNetworking. The one-space body rule of
 *     section 9 is kept either way.
 *   - structured-syntax suffixes (RFC 6839): with afs_response_serializer_set_accepts_
 *     structured_suffix on, a JSON serializer also accepts any type/name+json and an XML
 *     serializer any type/name+xml. Whatever the option, an unacceptable status with an
 *     application/problem+json body (RFC 9457; application/problem+xml for XML) is decoded
 *     by a JSON (XML) serializer and returned with AFS_E_UNACCEPTABLE_STATUS, as an error
 *     document of an acceptable type is (section 9); with an acceptable status that type
 *     still needs the option or an acceptable-types entry.
 *   - XSSI: with afs_response_serializer_set_strips_xssi_prefix on, a JSON body starting
 *     with )]}' loses it, an optional ',' after it and an optional newline (LF or CR LF)
 *     before decoding; offsets in error messages count from the start of the body.
 */

/**
 * AFImageResponseSerializer's imageScale: the result's point sizes are the pixel sizes
 * divided by `scale` (default 1).
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT when rs is NULL or not a response serializer, or
 *         scale is not a finite number above 0.
 */
AFS_API afs_status afs_response_serializer_set_image_scale(afs_response_serializer *rs, double scale,
                                                           afs_error *err);
/**
 * The most pixels (width x height) an image may have; beyond it afs_response_object is
 * AFS_E_LIMIT naming the size. Default 2^31; 0 restores the default.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT when rs is NULL or not a response serializer.
 */
AFS_API afs_status afs_response_serializer_set_max_image_pixels(afs_response_serializer *rs,
                                                                uint64_t max_pixels, afs_error *err);
/**
 * Alamofire's emptyResponseCodes (see the rules above). `codes` holds `count` status codes
 * (copied); count 0 restores AFNetworking's rule (codes may then be NULL).
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT when rs is NULL or not a response serializer,
 *         codes is NULL with count > 0, or a code is outside 100-999 (named by index).
 */
AFS_API afs_status afs_response_serializer_set_empty_response_codes(afs_response_serializer *rs,
                                                                    const int *codes, size_t count,
                                                                    afs_error *err);
/**
 * afs_response_object for a request made with `method` (NULL: unknown, as
 * afs_response_object): under the empty-response codes rule, a HEAD request's empty body
 * is no object whatever its status. Compared case-insensitively. Otherwise as
 * afs_response_object (same out, ownership and statuses).
 */
AFS_API afs_status afs_response_object_for_method(const afs_response_serializer *rs, const char *method,
                                                  int status_code, const char *content_type,
                                                  const void *data, size_t len, afs_value **out,
                                                  afs_error *err);
/** RFC 6839 suffixes (see the rules above); default off. NULL or a wrong handle is ignored. */
AFS_API void afs_response_serializer_set_accepts_structured_suffix(afs_response_serializer *rs, bool on);
/** The JSON XSSI prefix rule (see the rules above); default off. NULL or a wrong handle is
 *  ignored. */
AFS_API void afs_response_serializer_set_strips_xssi_prefix(afs_response_serializer *rs, bool on);
/**
 * afs_response_object_pickle (section 10) for a request made with `method` (see
 * afs_response_object_for_method). For bindings.
 */
AFS_API afs_status afs_response_object_pickle_for_method(const afs_response_serializer *rs,
    const char *method, int status_code, const char *content_type, const void *data, size_t len,
    uint8_t **out, size_t *out_len, afs_error *err);


/* ===================================================================================== */
/* 13. Security policy: pinning for any TLS stack                                        */
/* ===================================================================================== */
/*
 * afs_security_policy — AFNetworking's AFSecurityPolicy for any TLS stack: certificate and
 * public-key pinning and host-name validation, decided over the chain your TLS stack
 * (OpenSSL, libcurl, GnuTLS, Python's ssl...) received and its verdict on it.
 *
 * WHAT THE LIBRARY DOES NOT DO: it verifies no signature, builds no chain and keeps no trust
 * store. The caller's TLS stack does all of that; the caller passes the chain that stack
 * verified (leaf first) and whether it trusted it. A certificate the server did not send is
 * not in that chain: a pinned root that the server leaves out (as servers usually do) is
 * not found unless the stack adds it to the verified chain (OpenSSL's verified chain, as
 * X509_STORE_CTX_get0_chain or SSL_get0_verified_chain give it, ends at the trust anchor).
 *
 * Create with afs_security_policy_new(mode), add pins, set the options, then evaluate from
 * any number of threads at once (the policy is locked while it changes and each evaluation
 * works on a snapshot). afs_security_policy_copy makes an independent copy;
 * afs_security_policy_free releases it (NULL is ignored).
 *
 * THE DECISION (afs_security_policy_evaluate), AFNetworking's rules in its order; the first
 * rule that refuses gives AFS_E_UNTRUSTED with a message naming the rule, the host and the
 * certificates ("rule 2 (domain name): ..."):
 *   1. invalid certificates allowed, domain validation on, a domain given, and no pin the
 *      mode uses (mode NONE uses none): refused, as AFNetworking refuses it.
 *   2. domain validation on and a domain given: one of the leaf's subjectAltName entries
 *      must match it (RFC 9525: dNSName for host names, iPAddress for IPv4/IPv6 literals,
 *      never the other way; a wildcard only as the whole left-most label, matching one
 *      label, with two labels after it; no Common Name fallback; ASCII case folding; a
 *      U-label host is converted with the library's IDNA and matches its A-label SAN). Also
 *      when invalid certificates are allowed (AFNetworking skips it then).
 *   3. AFS_PINNING_NONE: accepted when chain_trusted or invalid certificates are allowed.
 *   4. pinning modes: a certificate of the chain must match a pin. Certificate mode: equal
 *      DER bytes. Public-key mode: equal SubjectPublicKeyInfo (of a pinned certificate) or
 *      SPKI SHA-256 equal to a "sha256//" pin. When chain_trusted is false only a pin that
 *      matches the LEAF counts (the handshake proved the server holds the leaf's key; no
 *      signature is checked here, so a pinned intermediate sent beside a forged leaf must
 *      not be enough); certificate mode then also needs the leaf within its validity at the
 *      policy's time (this is how a pinned self-signed certificate is accepted, as
 *      AFNetworking's anchors accept it); public-key mode refuses an untrusted chain unless
 *      invalid certificates are allowed.
 * Any status other than AFS_OK means "do not trust the server".
 *
 * CERTIFICATES are read as strict DER (definite, minimal lengths, nothing after the
 * certificate, at most 32 levels deep, at most 1 MiB each, at most 64 per chain); a
 * malformed one is AFS_E_INVALID_ARGUMENT naming the field and the byte offset. RFC 5280's
 * profile is not enforced beyond the structure (real roots have serial 0 or version 1).
 * A policy holds at most 4096 pins (AFS_E_LIMIT beyond). These sizes and the certificate
 * reader's are limits with a setter: afs_security_policy_set_limits (afs_security_limits).
 *
 * HOW TO (OpenSSL, inside the handshake; examples/pinning_with_curl.c does it for libcurl):
 *
 *     afs_security_policy *p = afs_security_policy_new(AFS_PINNING_PUBLIC_KEY, &err);
 *     afs_security_policy_add_pinned_public_key_sha256(p,
 *         "sha256//YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg=", &err);
 *     ...
 *     static int verify_cb(int ok, X509_STORE_CTX *ctx) {       // SSL_CTX_set_verify
 *         if (!ok) chain_ok = 0;                                  // OpenSSL's verdict so far
 *         if (X509_STORE_CTX_get_error_depth(ctx) != 0) return 1; // decide at the leaf
 *         STACK_OF(X509) *chain = X509_STORE_CTX_get0_chain(ctx); // leaf ... anchor
 *         ... i2d_X509 each certificate into der[i], len[i] ...
 *         return afs_security_policy_evaluate(p, der, len, n, host, chain_ok, NULL) == AFS_OK;
 *     }
 */
typedef struct afs_security_policy afs_security_policy;

/** AFSSLPinningMode. */
typedef enum afs_pinning_mode {
    AFS_PINNING_NONE = 0,         /**< no pins: the stack's verdict (and the domain) decide */
    AFS_PINNING_PUBLIC_KEY = 1,   /**< a chain certificate's public key must be pinned */
    AFS_PINNING_CERTIFICATE = 2   /**< a chain certificate must be pinned */
} afs_pinning_mode;

/**
 * The certificate reader's limits and a policy's; 0 in a field (or a NULL struct) means the
 * default named here. Values above SIZE_MAX/2 mean "no practical limit", except the DER
 * depth, which is at most 256.
 */
typedef struct afs_security_limits {
    size_t max_certificate_bytes; /**< 1048576: one DER certificate (a pin or a chain entry) */
    size_t max_pem_bytes;         /**< 16777216: one PEM text */
    size_t max_der_depth;         /**< 32: DER nesting (a certificate needs about 8); at most 256 */
    size_t max_pins;              /**< 4096: pins per policy (certificates and sha256// keys) */
    size_t max_chain;             /**< 64: certificates per afs_security_policy_evaluate */
} afs_security_limits;

/**
 * A new policy: the given mode, no pins, invalid certificates not allowed, domain
 * validation on, the time "now" (read at each evaluation).
 * @return owned policy (afs_security_policy_free), or NULL with AFS_E_INVALID_ARGUMENT for
 *         a mode that is not one of the enumerators, AFS_E_NO_MEMORY.
 */
AFS_API afs_security_policy *afs_security_policy_new(afs_pinning_mode mode, afs_error *err);
/**
 * Pins a certificate (both modes use it: public-key mode pins its SubjectPublicKeyInfo).
 * @param der_or_pem DER bytes, or PEM text (detected: "-----BEGIN CERTIFICATE-----"; every
 *        CERTIFICATE block is pinned, text outside blocks is ignored, another block type is
 *        refused); NULL only with len 0 (which is refused as empty).
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT for a NULL or wrong handle or a malformed
 *         certificate (field and byte offset, or the PEM line, named; one bad PEM block adds
 *         none; a certificate above 1 MiB, a PEM text above 16 MiB: the defaults of
 *         afs_security_limits); AFS_E_LIMIT beyond 4096 pins (max_pins); AFS_E_NO_MEMORY. A certificate already pinned is not added twice.
 */
AFS_API afs_status afs_security_policy_add_pinned_certificate(afs_security_policy *p,
    const uint8_t *der_or_pem, size_t len, afs_error *err);
/**
 * Pins public keys by the SHA-256 of their DER SubjectPublicKeyInfo, libcurl's
 * CURLOPT_PINNEDPUBLICKEY format: "sha256//BASE64" entries separated by ';' (no spaces;
 * standard base64 with padding, 32 bytes). Public-key mode only (certificate mode ignores
 * them).
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT for a NULL or wrong handle, NULL pins, or any
 *         malformed entry (its number and byte offset named; then none is added);
 *         AFS_E_INVALID_UTF8; AFS_E_LIMIT beyond 4096 pins.
 */
AFS_API afs_status afs_security_policy_add_pinned_public_key_sha256(afs_security_policy *p,
    const char *pins, afs_error *err);
/**
 * Sets the policy's limits (NULL or 0 fields: the defaults of afs_security_limits). They
 * apply to the pins added afterwards (pins already held are kept, even beyond a lower
 * max_pins) and to every evaluation; afs_security_policy_copy copies them.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT for a NULL or wrong handle or a max_der_depth above
 *         256 (the policy is then unchanged).
 */
AFS_API afs_status afs_security_policy_set_limits(afs_security_policy *p, const afs_security_limits *limits,
                                                  afs_error *err);
/** allowInvalidCertificates (default off): accept a chain the stack did not trust (see the
 *  rules above). A NULL or wrong handle is ignored. */
AFS_API void afs_security_policy_set_allows_invalid_certificates(afs_security_policy *p, bool on);
/** validatesDomainName (default on). A NULL or wrong handle is ignored. */
AFS_API void afs_security_policy_set_validates_domain_name(afs_security_policy *p, bool on);
/** The time, in Unix seconds, at which a pinned leaf's validity is checked (default: the
 *  clock at each evaluation). A NULL or wrong handle is ignored. */
AFS_API void afs_security_policy_set_time(afs_security_policy *p, int64_t unix_seconds);
/** An independent copy (pins, options, time). Owned; NULL for a NULL or wrong handle or
 *  when out of memory. */
AFS_API afs_security_policy *afs_security_policy_copy(const afs_security_policy *p);
/** Frees a policy; NULL is ignored. */
AFS_API void afs_security_policy_free(afs_security_policy *p);
/**
 * Decides whether the server may be trusted (the rules above). Safe to call from many
 * threads at once on one policy.
 * @param chain_der count DER certificates, leaf first: the chain your TLS stack verified
 *        (when it did not trust it, the chain the server sent); NULL only with count 0.
 * @param chain_len their lengths.
 * @param count how many (1 to the policy's max_chain, default 64).
 * @param domain the host the client connected to (a DNS name, U-labels allowed, or an IPv4
 *        or IPv6 literal, brackets allowed); NULL: no domain check.
 * @param chain_trusted your TLS stack's verdict on the chain.
 * @return AFS_OK: trust the server. AFS_E_UNTRUSTED: refused (message: the rule, the host,
 *         the certificates). AFS_E_INVALID_ARGUMENT: a NULL or wrong handle, count 0, NULL
 *         arrays or entries, more than max_chain certificates, a certificate above
 *         max_certificate_bytes, a malformed certificate ("chain[i]:"
 *         then the field and offset), a domain that is not a host name (with validation
 *         on). AFS_E_INVALID_UTF8 for a domain that is not UTF-8. AFS_E_NO_MEMORY.
 */
AFS_API afs_status afs_security_policy_evaluate(const afs_security_policy *p,
    const uint8_t *const *chain_der, const size_t *chain_len, size_t count,
    const char *domain, bool chain_trusted, afs_error *err);
/**
 * Reads certificates as the policy reads them (to see what a pin or a host will be compared
 * with, or to compute a "sha256//" pin).
 * @param der_or_pem DER bytes (one certificate) or PEM text (every CERTIFICATE block).
 * @param out receives an owned array value (afs_value_free), one dictionary per certificate:
 *        "spki" (data: the DER SubjectPublicKeyInfo), "spki_sha256" (data, 32 bytes: base64
 *        it after "sha256//" for a pin), "dns_names" (array of strings), "ip_addresses"
 *        (array of data, 4 or 16 bytes), "not_before", "not_after" (integers, Unix
 *        seconds), "common_name" (string or null), "version" (0 for v1, 2 for v3).
 *        Always written: NULL on failure.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT for NULL out or data, or a malformed certificate
 *         (the field and byte offset, or the PEM line, named; the limits of
 *         afs_security_policy_add_pinned_certificate); AFS_E_NO_MEMORY.
 */
AFS_API afs_status afs_certificate_read(const uint8_t *der_or_pem, size_t len, afs_value **out,
    afs_error *err);
/**
 * afs_certificate_read with other limits than the defaults (NULL: the defaults; only the
 * size and depth fields of afs_security_limits are used). Statuses as afs_certificate_read,
 * plus AFS_E_INVALID_ARGUMENT for a max_der_depth above 256.
 */
AFS_API afs_status afs_certificate_read_with_limits(const uint8_t *der_or_pem, size_t len,
    const afs_security_limits *limits, afs_value **out, afs_error *err);


/* ===================================================================================== */
/* 14. Response reader: HTTP/1.1 responses off the wire                                  */
/* ===================================================================================== */
/*
 * afs_response_reader: a sans-I/O HTTP/1.1 response reader (RFC 9112). It does no I/O:
 * the caller reads bytes from its socket (or TLS library) and feeds them; the reader
 * gives the status line, the header fields, the body (de-chunked and, by default, with its
 * Content-Encoding decoded) and the trailers. Made by afs_response_reader_new, freed by
 * afs_response_reader_free (NULL is a no-op). One thread at a time per reader; different
 * readers are independent.
 *
 * Framing, as RFC 9112 section 6.3 says:
 *   - interim 1xx responses (except 101) are skipped; their codes are kept
 *     (afs_response_reader_interim_count/_status);
 *   - no body after a HEAD request, for 101, 204 and 304, and for a 2xx answer to CONNECT;
 *   - Transfer-Encoding whose last coding is chunked: de-chunked (chunk extensions are
 *     checked and ignored, trailers kept); other transfer codings listed before chunked
 *     (gzip, deflate, br, zstd) are always decoded; when the last coding is not chunked
 *     the body runs to the end of the connection (decoded when chunked is absent, as sent
 *     when chunked is listed before another coding); an unknown transfer coding is
 *     AFS_E_BAD_RESPONSE;
 *   - else Content-Length (a list of identical values is one value); else the body runs to
 *     the end of the connection (call afs_response_reader_eof when it closes).
 * Strict where request smuggling lives, each AFS_E_BAD_RESPONSE: Content-Length with
 * Transfer-Encoding, differing Content-Length values, a Content-Length that is not a
 * decimal number below 2^63, whitespace before a colon, obs-fold (a line starting with
 * whitespace), a bare LF, a chunk size that is not hexadecimal or overflows 2^63 - 1,
 * chunk data not followed by CRLF, NUL, CR or another control character (except HTAB) in
 * a field, the reason phrase or a chunk extension, Transfer-Encoding in an HTTP/1.0
 * response, an HTTP version other than 1.0 and 1.1, a status code that is not three digits
 * from 100. Messages name the line (framing lines are numbered from the status line, line
 * 1, across interim responses; body bytes are not lines) and the byte offset counted from
 * the first byte fed since afs_response_reader_new or _reset.
 *
 * Limits (afs_response_reader_set_limits; AFS_E_LIMIT): the head (status line and fields,
 * CRLFs included; the trailer section separately), the field count (also the count of
 * interim responses and of trailers), the line length (without CRLF) and the chunk
 * extension length (from its ';'). They are checked as if the bytes arrived one at a
 * time, so every split of the input gives the same result.
 *
 * Content codings: gzip (also x-gzip, several members), deflate (the zlib format of
 * RFC 1950, or raw RFC 1951 data as some servers send it: told apart by the first two
 * bytes), br, zstd, identity, stacked in any order ("Content-Encoding: gzip, br" is
 * decoded br first). A body with a coding this library does not know is left as sent
 * (as urllib3 does). An empty body with a coding is an empty body. Corrupt or truncated
 * coded data is AFS_E_BAD_RESPONSE; a decoded size beyond the decoding limit is
 * AFS_E_LIMIT (never more memory: the decoders write into fixed 64 KiB buffers, checked
 * before anything is handed on). The codecs' own memory is bounded by their windows:
 * 32 KiB for gzip/deflate, at most 16 MiB for br (no large windows), 8 MiB for zstd
 * (RFC 9659; a zstd frame that needs more is AFS_E_LIMIT). Decoding happens while feeding, in blocks of 16 KiB of
 * coded bytes counted from the start of the body (the last partial block at the end of
 * the body), so every split of the input gives the same bytes and the same errors.
 *
 * Errors are sticky: after a failed feed or eof every later feed and eof returns the same
 * error until afs_response_reader_reset. Settings (body callback, decoding, decoding
 * limit, size limits) are kept across reset.
 *
 * How to read responses on a keep-alive connection (error checks shortened):
 *
 *     afs_response_reader *rd = afs_response_reader_new("GET", &err);
 *     uint8_t buf[65536];
 *     size_t have = 0;                             // bytes in buf not consumed yet
 *     for (int n = 0; n < 2; n++) {                // two requests, one connection
 *         afs_request_write_to_fd(req[n], sock, NULL, &err);
 *         while (afs_response_reader_state(rd) != AFS_READER_DONE) {
 *             if (have == 0) {
 *                 ssize_t got = read(sock, buf, sizeof buf);
 *                 if (got < 0) break;                            // I/O error: yours
 *                 if (got == 0) { if (afs_response_reader_eof(rd, &err)) break; continue; }
 *                 have = (size_t)got;
 *             }
 *             size_t used = 0;
 *             if (afs_response_reader_feed(rd, buf, have, &used, &err) != AFS_OK) break;
 *             memmove(buf, buf + used, have - used);             // pipelined bytes stay
 *             have -= used;
 *         }
 *         printf("%d %s\n", afs_response_reader_status(rd), afs_response_reader_reason(rd));
 *         size_t len;
 *         const uint8_t *body = afs_response_reader_body(rd, &len);
 *         ...
 *         afs_response_reader_reset(rd, "GET", &err);            // the next response
 *     }
 *     afs_response_reader_free(rd);
 */
typedef struct afs_response_reader afs_response_reader;

/** Where a reader is: reading the head, the body, or done (the response is complete). */
typedef enum afs_reader_state {
    AFS_READER_HEAD = 0,  /**< reading the status line and fields (or interim responses) */
    AFS_READER_BODY = 1,  /**< the head is complete; reading the body (and trailers) */
    AFS_READER_DONE = 2   /**< the response is complete; feed consumes nothing more */
} afs_reader_state;

/** Receives decoded body bytes in order (any chunking); return non-zero to stop the read
 *  (the feed then fails with AFS_E_STATE). */
typedef int (*afs_body_fn)(void *ctx, const uint8_t *bytes, size_t len);

/** The reader's size limits; 0 (or a NULL struct) means the default named here. */
typedef struct afs_reader_limits {
    size_t max_head_bytes;      /**< 65536: status line and fields (CRLFs included); the trailers separately */
    size_t max_headers;         /**< 256: fields (and trailers, and interim responses) */
    size_t max_line_length;     /**< 16384: one line without its CRLF */
    size_t max_chunk_extension; /**< 4096: a chunk extension, from its ';' */
} afs_reader_limits;

/**
 * A new reader for the response to a request made with `request_method` (an RFC 9110 token
 * such as "GET" or "HEAD": HEAD and CONNECT decide whether a body can follow).
 * Statuses: AFS_E_INVALID_ARGUMENT (NULL), AFS_E_INVALID_METHOD.
 * Owned: free with afs_response_reader_free.
 */
AFS_API afs_response_reader *afs_response_reader_new(const char *request_method, afs_error *err);

/**
 * Feeds `len` bytes read from the connection. Consumes what it can (a partial line is kept
 * inside the reader and counts as consumed) until the response is complete; then it
 * consumes nothing and returns AFS_OK: the bytes left (`len - *consumed`) belong to the next
 * response (pipelining), to be fed after afs_response_reader_reset.
 * `bytes` may be NULL when `len` is 0; `consumed` may be NULL.
 * Statuses: AFS_E_BAD_RESPONSE (framing, corrupt or truncated coded data), AFS_E_LIMIT,
 * AFS_E_STATE (the body callback stopped, or bytes after afs_response_reader_eof),
 * AFS_E_NO_MEMORY, AFS_E_INVALID_ARGUMENT. On failure `*consumed` is the count consumed
 * before the error.
 */
AFS_API afs_status afs_response_reader_feed(afs_response_reader *rd, const uint8_t *bytes, size_t len,
                                            size_t *consumed, afs_error *err);

/**
 * The connection closed. Completes a body that runs to the end of the connection; anywhere
 * else before the response is complete it is AFS_E_BAD_RESPONSE ("closed after 10 of 20
 * body bytes", "before a response began", ...). AFS_OK when already done.
 */
AFS_API afs_status afs_response_reader_eof(afs_response_reader *rd, afs_error *err);

/**
 * Forgets the response (head, body, trailers, error) and gets ready for the next one on the
 * same connection, for a request made with `request_method`. Settings are kept.
 * Statuses: AFS_E_INVALID_ARGUMENT, AFS_E_INVALID_METHOD (the reader is then unchanged).
 */
AFS_API afs_status afs_response_reader_reset(afs_response_reader *rd, const char *request_method, afs_error *err);

/** Frees the reader and everything it lent. NULL is a no-op. */
AFS_API void afs_response_reader_free(afs_response_reader *rd);

/** The reader's state; AFS_READER_HEAD for NULL. */
AFS_API afs_reader_state afs_response_reader_state(const afs_response_reader *rd);

/** The final status code once the head is complete; 0 before (and for NULL). */
AFS_API int afs_response_reader_status(const afs_response_reader *rd);

/** The reason phrase as sent (may be ""; bytes as sent, not checked as UTF-8) once the head
 *  is complete; NULL before. Borrowed: valid until reset or free. */
AFS_API const char *afs_response_reader_reason(const afs_response_reader *rd);

/** The HTTP version of the final response: 10 or 11; 0 before the head is complete. */
AFS_API int afs_response_reader_version(const afs_response_reader *rd);

/** The number of header fields of the final response (0 before the head is complete). */
AFS_API size_t afs_response_reader_header_count(const afs_response_reader *rd);

/** The name of field `i`, as sent; NULL when out of range. Borrowed: valid until reset or
 *  free. */
AFS_API const char *afs_response_reader_header_name(const afs_response_reader *rd, size_t i);

/** The value of field `i` without surrounding spaces and tabs, the bytes as sent (obs-text
 *  kept: not checked as UTF-8); NULL when out of range. Borrowed: valid until reset or free. */
AFS_API const char *afs_response_reader_header_value(const afs_response_reader *rd, size_t i);

/** The value of the first field named `name` (ASCII case-insensitive); NULL when absent,
 *  before the head is complete, or for NULL arguments. Borrowed: valid until reset or free. */
AFS_API const char *afs_response_reader_header(const afs_response_reader *rd, const char *name);

/** The number of trailer fields of a chunked body (0 until the response is done). */
AFS_API size_t afs_response_reader_trailer_count(const afs_response_reader *rd);

/** The name of trailer `i`; NULL when out of range. Borrowed: valid until reset or free. */
AFS_API const char *afs_response_reader_trailer_name(const afs_response_reader *rd, size_t i);

/** The value of trailer `i`; NULL when out of range. Borrowed: valid until reset or free. */
AFS_API const char *afs_response_reader_trailer_value(const afs_response_reader *rd, size_t i);

/** Sends the decoded body to `fn` instead of accumulating it (then afs_response_reader_body
 *  is empty and afs_response_reader_object is AFS_E_STATE). NULL `fn` goes back to
 *  accumulating. Set it before the body begins; kept across reset. */
AFS_API void afs_response_reader_set_body_callback(afs_response_reader *rd, afs_body_fn fn, void *ctx);

/** The accumulated decoded body so far (all of it once done); `*len` gets its length (len
 *  may be NULL). Never NULL for a reader (an empty body is a valid pointer with *len 0);
 *  NULL for NULL. Borrowed: valid until the next feed, reset or free. */
AFS_API const uint8_t *afs_response_reader_body(const afs_response_reader *rd, size_t *len);

/** Whether Content-Encoding is decoded (default on). Off: the body is delivered as sent
 *  (transfer codings are still removed). Set before the head completes; kept across reset. */
AFS_API void afs_response_reader_set_decodes_content(afs_response_reader *rd, bool on);

/** The decoding limit: the most decoded bytes a coded body may give (equal is allowed).
 *  Default (0 sets it back): 64 x the coded body bytes received so far + 1 MiB, checked
 *  while decoding. Beyond it the feed fails with AFS_E_LIMIT. Kept across reset. */
AFS_API void afs_response_reader_set_max_decoded_bytes(afs_response_reader *rd, uint64_t max_bytes);

/**
 * Sets the size limits (NULL or 0 fields: the defaults). Only before the first byte of a
 * response is fed (AFS_E_STATE after); kept across reset.
 * Statuses: AFS_E_INVALID_ARGUMENT (NULL reader), AFS_E_STATE.
 */
AFS_API afs_status afs_response_reader_set_limits(afs_response_reader *rd, const afs_reader_limits *limits,
                                                  afs_error *err);

/** The number of interim (1xx) responses skipped before the final one. */
AFS_API size_t afs_response_reader_interim_count(const afs_response_reader *rd);

/** The status code of interim response `i` (in order); 0 when out of range. */
AFS_API int afs_response_reader_interim_status(const afs_response_reader *rd, size_t i);

/**
 * The finished body as UTF-8 text, decoded as the WHATWG Encoding Standard decodes: a
 * byte-order mark first (UTF-8, UTF-16BE, UTF-16LE; removed), else the charset parameter
 * of Content-Type, else `fallback_charset` (NULL: "utf-8"). Labels are WHATWG's
 * ("iso-8859-1", "latin1" and "ascii" mean windows-1252); decoded: UTF-8, UTF-16LE/BE, the
 * single-byte encodings, x-user-defined, replacement; invalid sequences become U+FFFD (for
 * UTF-8 one per maximal subpart). JSON (application/json, text/json, +json) is UTF-8 as
 * RFC 8259 says: a UTF-8 BOM is removed, the charset parameter and fallback are not used.
 * `len` (may be NULL) gets the length; the text may hold NUL bytes.
 * Statuses: AFS_E_STATE (not done, or the body went to a callback), AFS_E_ENCODING (an
 * unknown label, named; or a known multi-byte CJK encoding this library does not decode),
 * AFS_E_NO_MEMORY, AFS_E_INVALID_ARGUMENT.
 * Owned: free with afs_free. NULL on failure.
 */
AFS_API char *afs_response_reader_text(const afs_response_reader *rd, const char *fallback_charset,
                                       size_t *len, afs_error *err);

/**
 * Validates and decodes the finished response with `rs`, exactly as afs_response_object
 * does with the reader's status code, Content-Type and decoded body (same statuses, same
 * `*object` rules: an error document may come with AFS_E_UNACCEPTABLE_STATUS).
 * AFS_E_STATE when the response is not done or its body went to a callback.
 * Owned: free *object with afs_value_free.
 */
AFS_API afs_status afs_response_reader_object(const afs_response_reader *rd, const afs_response_serializer *rs,
                                              afs_value **object, afs_error *err);





/* ===================================================================================== */
/* 15. Body transforms: unknown length, compression, digests                             */
/* ===================================================================================== */
/*
 * A request's body can have an unknown length, be compressed while it streams, and carry
 * digests of itself. These functions change an afs_request (section 6) in place; they use
 * no new handle. The request's one-thread rule applies, and none of them may be called
 * from inside a callback of the same request (AFS_E_STATE).
 *
 * UNKNOWN LENGTH
 *   afs_form_append_stream and afs_request_set_body_stream accept AFS_LENGTH_UNKNOWN: the
 *   source is read until its read callback returns 0. Such a request has no Content-Length
 *   header; afs_body_stream_content_length returns AFS_LENGTH_UNKNOWN and
 *   afs_request_is_chunked returns true. afs_request_copy_head then adds
 *   `Transfer-Encoding: chunked` (and `Trailer:` naming the trailer fields), and
 *   afs_request_write_to_fd writes the chunked framing itself (RFC 9112, 7.1): a file part's
 *   body is one chunk whose data goes by sendfile/copy_file_range, other bytes go in chunks
 *   of at most 64 KiB, then `0\r\n`, the trailer fields, `\r\n`. afs_body_stream_read and
 *   afs_body_stream_write_to_fd give the raw body (no framing), for stacks that frame it
 *   themselves (libcurl without CURLOPT_INFILESIZE, http.client with encode_chunked=True);
 *   afs_request_copy_trailers gives the trailer fields once the body has been read.
 *   A source error inside a chunk leaves the receiver with an incomplete chunk: the
 *   connection cannot be reused (retry on a new one; the body rewinds).
 *
 * COMPRESSION
 *   afs_request_set_content_encoding compresses the body with gzip, deflate (the zlib
 *   format, RFC 1950, as HTTP's "deflate" means), zstd or br and sets Content-Encoding.
 *   By default the body (in memory or streamed) is compressed while it streams, in 64 KiB
 *   blocks and constant memory, and sent chunked. With AFS_COMPRESS_EXACT it is compressed
 *   once, now: an in-memory body in memory (afs_request_body lends the compressed bytes),
 *   a streamed one into a temporary file (afs_request_set_temp_dir; default $TMPDIR, else
 *   /tmp; removed when the request is freed), so Content-Length is exact and the file goes
 *   by sendfile. The compressed bytes are the same however the body is read.
 *
 * DIGESTS
 *   afs_request_add_digest adds `Content-Digest: sha-256=:BASE64:` (RFC 9530; sha-256 and
 *   sha-512 share one field) or `Content-MD5: BASE64` (RFC 1864), over the content as sent:
 *   after compression, whichever call came first (a header digest is computed again when the
 *   body is compressed later). AFS_DIGEST_HEADER: in the header list when the call returns
 *   (an in-memory body is hashed directly; a streamed body is read once for it, file parts
 *   included, and again when it is sent). AFS_DIGEST_TRAILER: computed while the body
 *   streams and sent as a trailer field; the request becomes chunked.
 *
 * STREAMS AND REWINDS
 *   afs_request_body_stream exists for every request whose body streams (multipart, a body
 *   source, chunked, compressed while streaming); afs_request_body returns NULL for those,
 *   and the body as sent for in-memory ones. A call here that changes how the body streams
 *   gives the request a new body stream: fetch it again with afs_request_body_stream (the
 *   old pointer stays valid, detached, until afs_request_free). A chunked or compressed body
 *   rewinds (afs_body_stream_rewind, afs_request_write_to_fd from its start) unless a read
 *   callback without rewind was read; afs_body_stream_seek to any other offset than 0 is
 *   AFS_E_UNSUPPORTED for them. The digests of a rewound body are the same.
 *
 * How to send a generator's output compressed, with a trailer digest:
 *
 *     afs_request *r = afs_request_new("POST", "http://127.0.0.1:8080/upload", &err);
 *     afs_request_set_body_stream(r, my_read, NULL, my_release, ctx, AFS_LENGTH_UNKNOWN, &err);
 *     afs_request_set_content_encoding(r, "zstd", 0, 0, &err);
 *     afs_request_add_digest(r, "sha-256", AFS_DIGEST_TRAILER, &err);
 *     uint64_t n;
 *     afs_request_write_to_fd(r, sock, &n, &err);   // head, chunks, trailer
 *     afs_request_free(r);                            // my_release(ctx) runs here
 */

/** The length of a source whose length is not known (stream parts, body sources). */
#define AFS_LENGTH_UNKNOWN UINT64_MAX

/**
 * Makes the request's body a caller's source: `read` (required) yields `length` bytes, or
 * with AFS_LENGTH_UNKNOWN until it returns 0 (the request is then chunked). `rewind` (may be
 * NULL) and `release` (may be NULL, runs exactly once, also when this call fails) as for
 * afs_form_append_stream. Replaces any body; a known length sets Content-Length and is
 * checked as a stream part's is (AFS_E_LENGTH_MISMATCH when the source yields another
 * count), an unknown one removes it.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT (NULL r or read; length above INT64_MAX other than
 *         AFS_LENGTH_UNKNOWN); AFS_E_STATE (after afs_request_set_content_encoding or a
 *         header afs_request_add_digest: set the body first; or from a callback).
 */
AFS_API afs_status afs_request_set_body_stream(afs_request *r, afs_read_fn read, afs_rewind_fn rewind,
                                               afs_release_fn release, void *ctx, uint64_t length,
                                               afs_error *err);
/** True when the request's body goes out with `Transfer-Encoding: chunked`: a source of
 *  unknown length, compression without AFS_COMPRESS_EXACT, or a trailer digest. False for
 *  NULL. */
AFS_API bool afs_request_is_chunked(const afs_request *r);

/** Flags of afs_request_set_content_encoding and afs_serializer_set_content_encoding. */
enum {
    AFS_COMPRESS_EXACT = 1 /**< compress once ahead (memory or a temporary file): exact Content-Length */
};
/**
 * Compresses the request's body and sets `Content-Encoding: coding` (see COMPRESSION above).
 * @param coding  "gzip", "deflate" (zlib format), "zstd" or "br" (ASCII case-insensitive).
 * @param level   0: the coding's default (zlib 6, zstd 3, brotli 11 — slow: pass a level for
 *                large bodies); else gzip/deflate 1-9, zstd ZSTD_minCLevel()..ZSTD_maxCLevel(),
 *                br 1-11.
 * @param flags   0 or AFS_COMPRESS_EXACT.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT (NULL r or coding, a level out of range, unknown
 *         flags); AFS_E_UNSUPPORTED (another coding); AFS_E_STATE (no body, the request
 *         already has Content-Encoding, or was compressed before); AFS_E_NO_MEMORY (also
 *         when the compression library cannot allocate); with AFS_COMPRESS_EXACT, AFS_E_IO
 *         for the temporary file and the body's own errors. On failure the request is
 *         unchanged.
 * Out of memory with "br": libbrotli 1.0 (Debian 12's) ends the process when its own
 * allocator fails. The library therefore probes the encoder's working memory (about 16 MiB,
 * 32 MiB at levels 10-11) before every encoder call and answers AFS_E_NO_MEMORY when it is
 * not there, and lets libbrotli fall back to plain malloc; an allocation that still fails
 * inside libbrotli after a successful probe ends the process there. gzip, deflate and zstd
 * have no such case.
 */
AFS_API afs_status afs_request_set_content_encoding(afs_request *r, const char *coding, int level,
                                                    unsigned flags, afs_error *err);
/** Where a digest goes (afs_request_add_digest). */
typedef enum afs_digest_where {
    AFS_DIGEST_HEADER = 0, /**< in the header list now */
    AFS_DIGEST_TRAILER = 1 /**< a trailer field of the chunked body, computed while it streams */
} afs_digest_where;
/**
 * Adds a digest of the body as sent (see DIGESTS above). Adding the same algorithm again
 * at the same place is a no-op.
 * @param algorithm "sha-256", "sha-512" (Content-Digest) or "md5" (Content-MD5).
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT (NULL r or algorithm, another `where`);
 *         AFS_E_UNSUPPORTED (another algorithm; a header digest over a body with a read
 *         callback that has no rewind: use AFS_DIGEST_TRAILER); AFS_E_STATE (no body);
 *         for a header digest of a streamed body, the body's errors (AFS_E_IO,
 *         AFS_E_LENGTH_MISMATCH, AFS_E_NO_MEMORY).
 */
AFS_API afs_status afs_request_add_digest(afs_request *r, const char *algorithm, afs_digest_where where,
                                          afs_error *err);
/** The directory for the temporary file of AFS_COMPRESS_EXACT on a streamed body (copied;
 *  NULL: back to $TMPDIR, else /tmp).
 *  @return AFS_OK; AFS_E_INVALID_ARGUMENT (NULL r); AFS_E_INVALID_UTF8. */
AFS_API afs_status afs_request_set_temp_dir(afs_request *r, const char *dir, afs_error *err);
/**
 * The trailer fields, one `Name: value` line each (CRLF-terminated), once the body has been delivered to its end
 * from its start (by afs_body_stream_read, afs_body_stream_write_to_fd or
 * afs_request_write_to_fd); "" when the request has no trailer digest. *len (may be NULL)
 * gets the length. Owned by the caller: free with afs_free.
 * @return the text, or NULL with AFS_E_INVALID_ARGUMENT (NULL r), AFS_E_STATE (the body has
 *         not been read to its end yet), AFS_E_NO_MEMORY.
 */
AFS_API char *afs_request_copy_trailers(const afs_request *r, size_t *len, afs_error *err);

/** What a serializer-wide compression does with a request that already has
 *  Content-Encoding (Alamofire's DuplicateHeaderBehavior). */
typedef enum afs_existing_encoding {
    AFS_EXISTING_ENCODING_ERROR = 0,   /**< the request fails with AFS_E_STATE */
    AFS_EXISTING_ENCODING_REPLACE = 1, /**< compress the body anyway, replacing the header */
    AFS_EXISTING_ENCODING_SKIP = 2     /**< leave that request as it is */
} afs_existing_encoding;
/**
 * Compresses the body of every request the serializer makes from now on
 * (afs_serializer_request, afs_serializer_serialize, afs_form_finish) as
 * afs_request_set_content_encoding does, when the body has at least `min_size` bytes (a body
 * of unknown length always; smaller bodies stay as they are). `coding` NULL turns it off.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT (NULL s, a level out of range, unknown flags or
 *         `existing`); AFS_E_UNSUPPORTED (another coding).
 */
AFS_API afs_status afs_serializer_set_content_encoding(afs_serializer *s, const char *coding, int level,
                                                       unsigned flags, afs_existing_encoding existing,
                                                       uint64_t min_size, afs_error *err);





/* ===================================================================================== */
/* 16. Decoders: query strings, form bodies, multipart                                   */
/* ===================================================================================== */
/*
 * The other direction: what a server receives. A query string or an
 * application/x-www-form-urlencoded body becomes an afs_value dictionary, nested as
 * AFNetworking writes names (`a[b]=1`, `a[]=1`, `a[0]=1`); a multipart body (RFC 2046,
 * RFC 7578) becomes parts, streamed: a push parser (afs_multipart_parser) that calls you
 * back, and a pull reader (afs_multipart_reader) over a file descriptor.
 *
 * QUERY NAMES. After percent-decoding (and `+` as space where asked), a name `a[b][]`
 * is split into `a`, `b`, `` (append). Rules per style:
 *   brackets (default): `a[]=` appends to an array, `a[k]=` nests in a dictionary (also a
 *       numeric k), a repeated plain key keeps the last value;
 *   no_brackets: a repeated plain key makes an array (one occurrence: a string); brackets
 *       still nest;
 *   indexed: `a[0]`, `a[1]` make an array in index order (indices 0..n-1 without gaps; any
 *       other set of digit keys stays a dictionary with those keys); `a[]` appends.
 * A bare `key` (no `=`) is null, as AFNetworking writes null. An empty name part (`&&`,
 * leading `&`) is skipped; `=v` (empty name) is skipped.
 * Deeper than max_depth bracket levels: the rest of the name from the first bracket past
 * the limit is one literal key (`a[b][c][d][e][f][g]` with depth 5 → keys a,b,c,d,e,f then
 * "[g]"), as the `qs` package does; with AFS_QUERY_REFUSE_DEEP it is AFS_E_LIMIT.
 * A name part that cannot be used (`a[]=1&a[x]=2`: a dictionary key on an array, or a
 * value where a container is) is AFS_E_INVALID_ARGUMENT naming the parameter.
 *
 * ROUND TRIP (what comes back). For a tree whose leaves are strings and nulls, whose keys
 * hold no `[` or `]` and are not empty, written by afs_query_string with the same style,
 * afs_query_parse gives the tree back, except:
 *   - empty arrays, sets and dictionaries are not written, so they do not come back;
 *   - numbers and bools come back as their text ("1", "0", "true", "3.5");
 *   - sets are written as repeated plain keys (`s=a&s=b`, AFNetworking's format): under
 *     brackets and indexed only the last member (in the writer's order) comes back, under
 *     no_brackets an array (a string for one member);
 *   - brackets style: an array's members that are containers (arrays of arrays or
 *     dictionaries) flatten: `a[][k]=1&a[][k]=2` is {"a":[{"k":"1"},{"k":"2"}]} only when
 *     each dictionary has a single key; the parser starts a new dictionary in an array
 *     when the key it sets is already in the last one (qs's rule), so arrays of
 *     dictionaries whose keys all differ from one element to the next come back merged;
 *     arrays of arrays come back as one inner array (`[[1,2],[3]]` → `[[1,2,3]]`);
 *   - no_brackets: an array with one member comes back as that member; arrays of arrays
 *     flatten; arrays of dictionaries come back as a dictionary of arrays;
 *   - indexed: round trips whole (arrays of arrays and of dictionaries included), except
 *     that a dictionary whose keys are exactly "0" … "n-1" comes back as an array.
 *
 * MULTIPART. Parts are numbered from 0. The boundary comes from the Content-Type's
 * `boundary` parameter (quoted or not), or is given bare. The preamble before the first
 * boundary and the epilogue after the closing one are ignored; spaces and tabs after a
 * boundary (transport padding) are skipped; the delimiter is CRLF `--` boundary (a bare LF
 * is accepted on boundary and header lines, as Go and Python do). name and filename come
 * from Content-Disposition, decoded: quoted-pairs (`\\`, `\"`), the `%22 %0D %0A`
 * escapes browsers write, and `filename*=UTF-8''…` (RFC 5987/2231), which wins over
 * filename. filename="" is "", an absent filename is NULL. A part with
 * Content-Transfer-Encoding base64 or quoted-printable is decoded before it reaches you.
 * Header values are the bytes as sent, trimmed of surrounding spaces and tabs (obs-text
 * kept; not checked as UTF-8). Malformed framing, and a body that ends before its closing
 * boundary, are AFS_E_INVALID_MULTIPART; a limit is AFS_E_LIMIT naming the limit and the
 * part index; a handler that returns non-zero stops the parse with AFS_E_STATE. After an
 * error every later call returns the same status (sticky).
 */

/** Options of afs_query_parse / afs_form_body_parse; NULL or zero fields: the defaults. */
typedef struct afs_query_parse_options {
    int array_style;        /**< afs_array_style: 0 brackets (default), 1 no_brackets (repeated keys), 2 indexed */
    size_t max_depth;       /**< bracket levels kept; 0: default 5 */
    size_t max_params;      /**< parameters (`&`-separated pieces) at most; 0: default 1000 */
    size_t max_length;      /**< longest name or value after decoding; 0: default 65536 */
    unsigned flags;         /**< AFS_QUERY_* below */
} afs_query_parse_options;

enum {
    AFS_QUERY_KEEP_BAD_ESCAPES = 1, /**< `%zz` and escapes that are not UTF-8 are kept as written (bytes that are not UTF-8 become U+FFFD) instead of AFS_E_INVALID_ARGUMENT / AFS_E_INVALID_UTF8 */
    AFS_QUERY_REFUSE_DEEP = 2,      /**< a name deeper than max_depth is AFS_E_LIMIT instead of a literal rest */
    AFS_QUERY_PLUS_AS_SPACE = 4     /**< `+` is a space (always on for afs_form_body_parse) */
};

/**
 * Parses a query string into a new dictionary value.
 * @param text the query without the URL's `?` (a leading `?` belongs to the first name, since
 *        the writer leaves `?` unescaped as AFNetworking does; a `#fragment` is not removed);
 *        NULL with len 0 is the empty query.
 * @param len its length in bytes, or AFS_NTS.
 * @param opts NULL for the defaults.
 * @return an owned dictionary (free with afs_value_free), or NULL with err set:
 *         AFS_E_LIMIT (too many parameters, a name or value too long, too deep with
 *         AFS_QUERY_REFUSE_DEEP: the message names the parameter by index and name),
 *         AFS_E_INVALID_ARGUMENT (a malformed escape, a name that conflicts with an
 *         earlier one, a bad option), AFS_E_INVALID_UTF8 (decoded bytes that are not
 *         UTF-8), AFS_E_NO_MEMORY.
 */
AFS_API afs_value *afs_query_parse(const char *text, size_t len, const afs_query_parse_options *opts, afs_error *err);

/**
 * Parses an application/x-www-form-urlencoded body: afs_query_parse with `+` as a space.
 * @param body the bytes (NULL only with len 0); len may not be AFS_NTS.
 */
AFS_API afs_value *afs_form_body_parse(const uint8_t *body, size_t len, const afs_query_parse_options *opts, afs_error *err);

/**
 * afs_query_parse written straight as a pickle of the subset of section 10, without
 * building the tree: for bindings that turn the result into their own objects in one call
 * (Python's parse_query and parse_form load it with pickle). It loads as the pickle
 * afs_value_to_pickle writes for the tree afs_query_parse returns, but is not always the
 * same bytes: when every name is flat and the style is not no_brackets, a repeated name is
 * written each time (a dict, like the tree, keeps it at its first position with the last
 * value), and below the top level, repeated keys and values of up to 24 bytes are written
 * once and then referred to through the memo (MEMOIZE, BINGET: Python shares one str).
 * A form body is this with AFS_QUERY_PLUS_AS_SPACE in opts->flags.
 * @param text the query (NULL with len 0 is the empty query); @param len its length in
 *        bytes, or AFS_NTS. @param opts NULL for the defaults.
 * @param pickle_len receives the pickle's length (must not be NULL; 0 on failure).
 * @return owned bytes (afs_free), or NULL with err set exactly as afs_query_parse would
 *         (same statuses and messages), or AFS_E_INVALID_ARGUMENT for pickle_len NULL.
 *
 *     size_t n;
 *     uint8_t *p = afs_query_parse_pickle("a[]=1&a[]=2", AFS_NTS, NULL, &n, &err);
 *     // p: the pickle of {"a": ["1", "2"]}
 *     afs_free(p);
 */
AFS_API uint8_t *afs_query_parse_pickle(const char *text, size_t len, const afs_query_parse_options *opts,
                                        size_t *pickle_len, afs_error *err);

/** Limits of a multipart parser or reader; NULL or zero fields: the defaults. */
typedef struct afs_multipart_limits {
    size_t max_parts;          /**< 1000 */
    size_t max_header_bytes;   /**< 16384 per part (all its header lines with their line ends) */
    size_t max_headers;        /**< 32 per part */
    size_t max_line_length;    /**< 16384 (header lines, boundary lines, padding) */
    uint64_t max_total_bytes;  /**< unlimited (UINT64_MAX): bytes fed in all */
    uint64_t max_field_bytes;  /**< 1 MiB of decoded data for a part without a filename */
} afs_multipart_limits;

/**
 * What the push parser calls. Any member may be NULL. A non-zero return stops the parse:
 * the feed returns AFS_E_STATE. Strings and arrays are borrowed for the call only.
 * part_begin: the part's index, name (NULL when it has none), filename (NULL when absent),
 * and its headers in order (names as sent). part_data: decoded bytes, in any chunking
 * (never called with len 0). part_end: the part is complete.
 */
typedef struct afs_multipart_handler {
    int (*part_begin)(void *ctx, size_t index, const char *name, const char *filename,
                      const char *const *header_names, const char *const *header_values, size_t header_count);
    int (*part_data)(void *ctx, const uint8_t *bytes, size_t len);
    int (*part_end)(void *ctx);
} afs_multipart_handler;

/*
 * afs_multipart_parser: a push parser for one multipart body. Create it with
 * afs_multipart_parser_new, feed it the body in any pieces with afs_multipart_parser_feed,
 * end with afs_multipart_parser_finish, free with afs_multipart_parser_free. Memory is
 * bounded by the limits (one header block, one boundary's worth of look-ahead), not by the
 * body. One thread at a time; the handler may not call back into the same parser (such a
 * call is AFS_E_STATE).
 *
 * How to parse an upload in a C server:
 *
 *   static int on_begin(void *ctx, size_t i, const char *name, const char *filename,
 *                       const char *const *hn, const char *const *hv, size_t hc) {
 *       struct upload *u = ctx;
 *       u->fd = filename ? open_spool_file(u, filename) : -1;   // your code
 *       return 0;
 *   }
 *   static int on_data(void *ctx, const uint8_t *b, size_t n) { return write_all(ctx, b, n); }
 *   static int on_end(void *ctx) { return close_part(ctx); }
 *
 *   afs_multipart_handler h = { on_begin, on_data, on_end };
 *   afs_error err;
 *   afs_multipart_parser *p = afs_multipart_parser_new(content_type_header, NULL, &h, &up, &err);
 *   if (!p) return reply_400(err.message);
 *   while ((n = recv(sock, buf, sizeof buf, 0)) > 0)
 *       if (afs_multipart_parser_feed(p, buf, (size_t)n, &err) != AFS_OK) break;
 *   if (err.code == AFS_OK) afs_multipart_parser_finish(p, &err);  // (err.code: set it to AFS_OK first)
 *   afs_multipart_parser_free(p);
 */
typedef struct afs_multipart_parser afs_multipart_parser;

/**
 * A new push parser.
 * @param content_type_or_boundary a Content-Type value (`multipart/form-data; boundary=…`,
 *        any multipart subtype) or the bare boundary (1 to 70 characters).
 * @param limits NULL for the defaults.
 * @param handler the callbacks (copied); NULL parses and checks only.
 * @param ctx passed to every callback.
 * @return an owned parser, or NULL with err: AFS_E_INVALID_ARGUMENT (NULL content type, no
 *         boundary, a boundary longer than 70 or with a CR/LF), AFS_E_NO_MEMORY.
 */
AFS_API afs_multipart_parser *afs_multipart_parser_new(const char *content_type_or_boundary,
        const afs_multipart_limits *limits, const afs_multipart_handler *handler, void *ctx, afs_error *err);

/**
 * Feeds the next `len` bytes of the body (NULL only with len 0). Calls the handler for
 * what they complete. After the closing boundary the rest is epilogue and ignored.
 * @return AFS_OK, AFS_E_INVALID_MULTIPART (malformed framing or headers, bad base64 or
 *         quoted-printable), AFS_E_LIMIT, AFS_E_STATE (a handler stopped, or a call after
 *         finish or from a callback), AFS_E_INVALID_ARGUMENT, AFS_E_NO_MEMORY. Errors are
 *         sticky: later calls return the same status and message.
 */
AFS_API afs_status afs_multipart_parser_feed(afs_multipart_parser *p, const uint8_t *bytes, size_t len, afs_error *err);

/**
 * Ends the body. AFS_OK when the closing boundary was seen; AFS_E_INVALID_MULTIPART when
 * the body ended before it (or had no part boundary at all), naming the part and offset.
 */
AFS_API afs_status afs_multipart_parser_finish(afs_multipart_parser *p, afs_error *err);

/** Frees the parser (NULL: no-op). From inside one of its callbacks it is deferred to the end of the call. */
AFS_API void afs_multipart_parser_free(afs_multipart_parser *p);

/*
 * Events as records instead of callbacks: afs_multipart_parser_feed_events parses a piece
 * of the body and writes what it completes into an array of afs_multipart_event that you
 * provide, one call per piece instead of one callback per event (for callers where a
 * callback is expensive: a Python ctypes binding pays about a microsecond per call).
 *
 * A record describes one part's progress within the call: its head (AFS_MULTIPART_BEGIN:
 * `head_offset`/`head_length` in the arena), some data (`data_length` > 0: at
 * `data_offset` in the bytes of this call, or in the arena with AFS_MULTIPART_DATA_IN_ARENA),
 * and its end (AFS_MULTIPART_END), in that order; a small part is often one record with
 * all three. The head block is: the name, NUL, the filename, NUL, then each header's name,
 * NUL, value (trimmed), NUL: `2 + 2 * header_count` NUL-terminated strings; an absent name
 * or filename is an empty string there, told apart by AFS_MULTIPART_HAS_NAME and
 * AFS_MULTIPART_HAS_FILENAME. Data is in the bytes you passed when it is the body as
 * sent; bytes the parser held back from an earlier call and decoded base64 or
 * quoted-printable data are copied into the arena.
 *
 * The arena is the parser's, valid until the next call on the parser (or its free). The
 * call returns early (result.more = 1) when the records are full or the arena passed
 * 64 KiB (bound: 64 KiB plus one event's bytes: one head block, at most twice
 * max_header_bytes, or the data decoded from one call's bytes); then call again with the
 * bytes after result.consumed (len 0 once all were consumed) until more is 0. Before
 * afs_multipart_parser_finish, call it with len 0 until more is 0 (it then has no event
 * left to give). A parser fed this way gives every event as a record:
 * afs_multipart_parser_feed on it is AFS_E_STATE, and so is finish while events are
 * pending; its handler (if any) is not called.
 *
 * How to count the fields of a body held in memory:
 *
 *   afs_multipart_event ev[256];
 *   afs_multipart_feed_result r;
 *   afs_multipart_parser *p = afs_multipart_parser_new(content_type, NULL, NULL, NULL, &err);
 *   size_t off = 0, fields = 0;
 *   do {
 *       if (afs_multipart_parser_feed_events(p, body + off, len - off, ev, 256, &r, &err) != AFS_OK) break;
 *       for (size_t i = 0; i < r.event_count; i++)
 *           if (ev[i].flags & AFS_MULTIPART_END) fields++;   // data: body + off + ev[i].data_offset
 *       off += r.consumed;
 *   } while (r.more || off < len);
 *   if (err.code == AFS_OK) afs_multipart_parser_finish(p, &err);
 *   afs_multipart_parser_free(p);
 */

/** afs_multipart_event.flags */
#define AFS_MULTIPART_BEGIN 1u           /**< the part begins: its head block is at head_offset in the arena */
#define AFS_MULTIPART_END 2u             /**< the part ends (after this record's data) */
#define AFS_MULTIPART_DATA_IN_ARENA 4u   /**< data_offset is in the arena, not in the bytes of the call */
#define AFS_MULTIPART_HAS_NAME 8u        /**< (with BEGIN) Content-Disposition has a name */
#define AFS_MULTIPART_HAS_FILENAME 16u   /**< (with BEGIN) Content-Disposition has a filename */

/** One record of afs_multipart_parser_feed_events (fixed layout: 48 bytes). */
typedef struct afs_multipart_event {
    uint32_t flags;          /**< AFS_MULTIPART_* */
    uint32_t header_count;   /**< with BEGIN: the part's header count (else 0) */
    uint64_t index;          /**< the part's index (0 for the first part) */
    uint64_t head_offset;    /**< with BEGIN: the head block's offset in the arena */
    uint64_t head_length;    /**< with BEGIN: its length in bytes (its last NUL included) */
    uint64_t data_offset;    /**< data: offset in the call's bytes, or in the arena */
    uint64_t data_length;    /**< data: decoded bytes (0: no data in this record) */
} afs_multipart_event;

/** What afs_multipart_parser_feed_events did. */
typedef struct afs_multipart_feed_result {
    size_t consumed;         /**< bytes of the call taken (the rest: offer it again) */
    size_t event_count;      /**< records written */
    const uint8_t *arena;    /**< head blocks and copied data; NULL when arena_length is 0 */
    size_t arena_length;
    int more;                /**< 1: it returned early (records or arena full): call again */
} afs_multipart_feed_result;

/**
 * Feeds the next bytes of the body (NULL only with len 0) and writes the events they
 * complete as records (see above).
 * @param events an array of max_events records (max_events >= 1), written from index 0.
 * @param result receives the counts and the arena (must not be NULL); zeroed on error.
 * @return as afs_multipart_parser_feed; AFS_E_INVALID_ARGUMENT for NULL events or result,
 *         or max_events 0; AFS_E_STATE after finish or from a callback. Errors are sticky.
 */
AFS_API afs_status afs_multipart_parser_feed_events(afs_multipart_parser *p, const uint8_t *bytes, size_t len,
        afs_multipart_event *events, size_t max_events, afs_multipart_feed_result *result, afs_error *err);

/*
 * afs_multipart_reader: the pull form over a file descriptor (a socket, a pipe, a file)
 * positioned at the start of the body; it reads the fd to its end (EOF) or to the closing
 * boundary. afs_multipart_reader_new, then afs_multipart_reader_next_part until it returns
 * 0, reading each part with afs_multipart_reader_read or afs_multipart_reader_part_to_fd;
 * afs_multipart_reader_free. Constant memory (a 64 KiB buffer plus one part's headers).
 * The reader does not close the fd. One thread at a time.
 *
 * How to store every file of an upload in a C server:
 *
 *   afs_multipart_reader *rd = afs_multipart_reader_new(sock, content_type, NULL, &err);
 *   int more;
 *   while (rd && (more = afs_multipart_reader_next_part(rd, &err)) == 1) {
 *       const char *fn = afs_multipart_reader_filename(rd);
 *       if (fn) { int out = open_safe(fn); afs_multipart_reader_part_to_fd(rd, out, NULL, &err); close(out); }
 *       else { uint8_t b[1024]; int64_t n; while ((n = afs_multipart_reader_read(rd, b, sizeof b, &err)) > 0) use(b, n); }
 *   }
 *   // more == 0: all parts read; more == -1: err says why
 *   afs_multipart_reader_free(rd);
 */
typedef struct afs_multipart_reader afs_multipart_reader;

/**
 * A new reader of the body on `fd` (not taken: the caller closes it).
 * @return an owned reader, or NULL with err (as afs_multipart_parser_new; a negative fd
 *         is AFS_E_INVALID_ARGUMENT).
 */
AFS_API afs_multipart_reader *afs_multipart_reader_new(int fd, const char *content_type_or_boundary,
        const afs_multipart_limits *limits, afs_error *err);

/**
 * Moves to the next part, skipping what is unread of the current one.
 * @return 1 there is a part (its name, filename and headers are readable), 0 the closing
 *         boundary was read (no more parts), -1 error with err set (AFS_E_INVALID_MULTIPART,
 *         AFS_E_LIMIT, AFS_E_IO with os_errno, AFS_E_INVALID_ARGUMENT); errors are sticky.
 */
AFS_API int afs_multipart_reader_next_part(afs_multipart_reader *rd, afs_error *err);

/** The current part's name, NULL when none (or no current part). Borrowed: valid until the next next_part or free. */
AFS_API const char *afs_multipart_reader_name(const afs_multipart_reader *rd);
/** The current part's filename, NULL when absent. Borrowed as the name. */
AFS_API const char *afs_multipart_reader_filename(const afs_multipart_reader *rd);
/** The current part's header count (0 without a current part). */
AFS_API size_t afs_multipart_reader_header_count(const afs_multipart_reader *rd);
/** Header i's name as sent, NULL when i is out of range. Borrowed as the name. */
AFS_API const char *afs_multipart_reader_header_name(const afs_multipart_reader *rd, size_t i);
/** Header i's value (trimmed), NULL when i is out of range. Borrowed as the name. */
AFS_API const char *afs_multipart_reader_header_value(const afs_multipart_reader *rd, size_t i);

/**
 * Reads up to `max` decoded bytes of the current part into `buffer`.
 * @return the count (> 0), 0 at the end of the part (or without a current part), -1 on
 *         error with err set (as next_part; a NULL buffer with max > 0 is
 *         AFS_E_INVALID_ARGUMENT).
 */
AFS_API int64_t afs_multipart_reader_read(afs_multipart_reader *rd, uint8_t *buffer, size_t max, afs_error *err);

/**
 * Writes the rest of the current part to `fd` (a file, pipe or socket) with write(2)
 * straight from the reader's buffer. (The bytes must pass through this process for the
 * boundary search, so splice/copy_file_range, which would move them unsearched, are not
 * used.) `written` (may be NULL) receives the bytes written.
 * @return AFS_OK, AFS_E_IO (write failed; os_errno set), or as afs_multipart_reader_read.
 */
AFS_API afs_status afs_multipart_reader_part_to_fd(afs_multipart_reader *rd, int fd, uint64_t *written, afs_error *err);

/** Frees the reader (NULL: no-op); the fd stays open. */
AFS_API void afs_multipart_reader_free(afs_multipart_reader *rd);





#ifdef __cplusplus
}
#endif

#endif /* AFSERIALIZATION_H */
