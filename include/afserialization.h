/*
 * afserialization.h — AFNetworking's request serialization as a C library.
 *
 * AFSerialization builds HTTP requests exactly as AFNetworking's
 * AFURLRequestSerialization does: percent-escaped query strings, form, JSON and
 * property-list bodies, and streaming multipart/form-data bodies. It sends nothing
 * itself: hand the method, URL, headers and body to libcurl, http.client, requests or
 * any other HTTP stack.
 *
 * Sections, in reading order:
 *   1. Version and conventions      5. Serializers
 *   2. Errors                       6. Requests
 *   3. Values                       7. Multipart forms
 *   4. Helpers                      8. Body streams
 *                                   9. Response side
 *
 * CONVENTIONS
 *   - Opaque handles: afs_value, afs_serializer, afs_request, afs_form, afs_body_stream.
 *     A function that returns a handle gives the caller ownership; free it with the
 *     matching afs_*_free, which accepts NULL.
 *   - Returned `const char *` / `const uint8_t *` are borrowed: valid until their owner is
 *     freed or changed. Returned `char *` is owned by the caller: free it with afs_free().
 *   - Strings are UTF-8 and NUL-terminated, unless a length follows; a length of AFS_NTS
 *     means "NUL-terminated". Invalid UTF-8 is AFS_E_INVALID_UTF8.
 *   - Every call that can fail takes `afs_error *err` last (it may be NULL) and returns an
 *     afs_status or NULL. On failure err->code and err->message are set; on success err is
 *     left untouched.
 *   - NULL where a handle is required, or a handle of the wrong kind, is
 *     AFS_E_INVALID_ARGUMENT, never a crash. Getters given NULL return NULL, 0 or false;
 *     void setters and the _free functions ignore NULL.
 *   - A handle argument marked "consumed" is owned by the library afterwards, also when the
 *     call fails.
 *   - Threads: an afs_serializer may be used from many threads at once. Values, requests,
 *     forms and body streams are used by one thread at a time.
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

#define AFS_VERSION_MAJOR 0
#define AFS_VERSION_MINOR 1
#define AFS_VERSION_PATCH 0
/** MAJOR*10000 + MINOR*100 + PATCH, for compile-time checks. */
#define AFS_VERSION_NUMBER (AFS_VERSION_MAJOR * 10000 + AFS_VERSION_MINOR * 100 + AFS_VERSION_PATCH)

/** A string length meaning "the string is NUL-terminated". */
#define AFS_NTS ((size_t)-1)

/** The library's version, "MAJOR.MINOR.PATCH". Static storage; never NULL. */
AFS_API const char *afs_version(void);

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
    AFS_E_STATE = 13,                 /**< call on a spent form or a closed stream */
    AFS_E_UNSUPPORTED = 14,           /**< e.g. rewinding a callback part that has no rewind function */
    AFS_E_NO_MEMORY = 15,             /**< allocation failed */
    AFS_E_UNACCEPTABLE_STATUS = 16,   /**< response status outside the acceptable ranges */
    AFS_E_UNACCEPTABLE_CONTENT_TYPE = 17 /**< response MIME type not acceptable */
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

/* ===================================================================================== */
/* 3. Values                                                                            */
/* ===================================================================================== */

/*
 * afs_value — a parameters tree, like Foundation's property-list objects: dictionary
 * (string keys, insertion order kept; setting an existing key replaces its value in
 * place), array, set (appending a member equal to one already there is a successful
 * no-op; 1, true and "1" are different members), string, integer, double, bool, null,
 * data. Strings compare by their bytes.
 *
 * Create with afs_value_new_* or afs_value_parse_json; put children into containers with
 * afs_value_dict_set / afs_value_append (which consume the child); free the root with
 * afs_value_free. One thread at a time.
 */
typedef struct afs_value afs_value;

typedef enum afs_value_kind {
    AFS_VALUE_NULL, AFS_VALUE_BOOL, AFS_VALUE_INT, AFS_VALUE_DOUBLE, AFS_VALUE_STRING,
    AFS_VALUE_DATA, AFS_VALUE_ARRAY, AFS_VALUE_SET, AFS_VALUE_DICT
} afs_value_kind;

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
 *         AFS_E_INVALID_ARGUMENT (NULL text).
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
 *  NULL with len > 0 returns NULL. Owned. */
AFS_API afs_value *afs_value_new_data(const void *bytes, size_t len);

/**
 * Sets `key` in a dictionary to `value` (consumed, also on failure). An existing key keeps
 * its position and gets the new value.
 * @param key_len length of key or AFS_NTS.
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT when dict is NULL or not a dictionary, value is
 *         NULL or not a value, value is dict itself (then it is not consumed), or the tree
 *         would nest deeper than 512 levels; AFS_E_INVALID_UTF8 for a bad key.
 */
AFS_API afs_status afs_value_dict_set(afs_value *dict, const char *key, size_t key_len,
                                      afs_value *value /* consumed */, afs_error *err);
/**
 * Appends `value` (consumed, also on failure) to an array, or adds it to a set (an equal
 * member already there makes this a successful no-op).
 * @return AFS_OK; AFS_E_INVALID_ARGUMENT when the container is NULL or neither an array
 *         nor a set, value is NULL, not a value, or the container itself, or the tree would
 *         nest deeper than 512 levels.
 */
AFS_API afs_status afs_value_append(afs_value *array_or_set, afs_value *value /* consumed */,
                                    afs_error *err);
/**
 * Parses JSON text (RFC 8259, strict; any value at the top level) into a value tree.
 * Integers within int64 stay integers, others become doubles; duplicate keys keep the last
 * value at the first position; nesting deeper than 512 is an error.
 * @return owned value, or NULL with AFS_E_INVALID_JSON naming the byte offset.
 */
AFS_API afs_value *afs_value_parse_json(const char *json, size_t len, afs_error *err);
/** The kind of `v`; AFS_VALUE_NULL for NULL. */
AFS_API afs_value_kind afs_value_kind_of(const afs_value *v);
/** Frees a value and its children. NULL is ignored. */
AFS_API void afs_value_free(afs_value *v);

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
 * AFQueryStringFromParameters with the default styles: pairs `escape(key)=escape(text)`
 * joined by `&`, dictionary keys in ascending Unicode-scalar order, nested keys
 * `parent[child]`, array elements under `key[]`, set members under `key`, null as `key`
 * alone. Data values are escaped byte by byte.
 * @return owned string (afs_free; "" for an empty dictionary), or NULL with
 *         AFS_E_INVALID_ARGUMENT when params is NULL or not a dictionary.
 */
AFS_API char *afs_query_string(const afs_value *params, afs_error *err);

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
 *  for an unknown kind. */
AFS_API afs_serializer *afs_serializer_new(afs_serializer_kind kind);
/** An independent copy of everything: headers, query styles and callback, URI methods,
 *  string encoding, request properties, JSON options and plist format. Owned. NULL for a
 *  NULL or wrong handle. */
AFS_API afs_serializer *afs_serializer_copy(const afs_serializer *s);
/** Frees a serializer. NULL is ignored. */
AFS_API void afs_serializer_free(afs_serializer *s);

/**
 * Sets a default header, added to every request that lacks it (names compare
 * case-insensitively; setting an existing name replaces it in place). `value` NULL
 * removes the header.
 * @return AFS_OK; AFS_E_INVALID_HEADER for a name that is not a token or a value with CR,
 *         LF or NUL; AFS_E_INVALID_UTF8; AFS_E_INVALID_ARGUMENT.
 */
AFS_API afs_status afs_serializer_set_header(afs_serializer *s, const char *field,
                                             const char *value /* NULL removes */, afs_error *err);
/** The default header `field` (case-insensitive), or NULL if unset. Owned: afs_free. */
AFS_API char *afs_serializer_copy_header(const afs_serializer *s, const char *field);
/** Sets `Authorization: Basic base64(user:password)` (UTF-8 bytes, as AFNetworking).
 *  @return AFS_OK; AFS_E_INVALID_UTF8; AFS_E_INVALID_ARGUMENT for NULL arguments. */
AFS_API afs_status afs_serializer_set_basic_auth(afs_serializer *s, const char *user,
                                                 const char *password, afs_error *err);
/** Removes the `Authorization` header. */
AFS_API void afs_serializer_clear_authorization(afs_serializer *s);
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
/** An owned copy of `len` bytes (or AFS_NTS) plus a NUL; free with afs_free. NULL when
 *  utf8 is NULL (and len is not 0). */
AFS_API char *afs_string_new(const char *utf8, size_t len);
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
 */

/**
 * requestWithMethod:URLString:parameters:error: — a new request with the serializer's
 * properties and headers, and `params` (may be NULL) serialized as described above.
 * @param url an absolute RFC 3986 URI, kept byte for byte except for the query insertion.
 * @return owned request, or NULL with AFS_E_INVALID_METHOD, AFS_E_BAD_URL (character and
 *         offset named), AFS_E_INVALID_ARGUMENT (params not a dictionary where a query is
 *         needed), AFS_E_INVALID_JSON ("The `parameters` argument is not valid JSON."),
 *         AFS_E_INVALID_PLIST, AFS_E_ENCODING, AFS_E_QUERY_CALLBACK, AFS_E_INVALID_UTF8.
 */
AFS_API afs_request *afs_serializer_request(const afs_serializer *s, const char *method,
                                            const char *url, const afs_value *params, afs_error *err);
/** A bare request (no headers, NSURLRequest's default properties) for
 *  afs_serializer_serialize. @return owned request, or NULL with AFS_E_INVALID_METHOD,
 *  AFS_E_BAD_URL, AFS_E_INVALID_UTF8, AFS_E_INVALID_ARGUMENT. */
AFS_API afs_request *afs_request_new(const char *method, const char *url, afs_error *err);
/** Sets (value NULL: removes) a header of `r`; replaces an existing one in place.
 *  @return AFS_OK; AFS_E_INVALID_HEADER; AFS_E_INVALID_UTF8; AFS_E_INVALID_ARGUMENT. */
AFS_API afs_status afs_request_set_header(afs_request *r, const char *field, const char *value,
                                          afs_error *err);
/** requestBySerializingRequest:withParameters:error: — a new request: a copy of `r` with
 *  the serializer's headers that `r` lacks and `params` (may be NULL) serialized. `r`'s
 *  own properties are kept. @return owned request, or NULL with the statuses of
 *  afs_serializer_request. */
AFS_API afs_request *afs_serializer_serialize(const afs_serializer *s, const afs_request *r,
                                              const afs_value *params, afs_error *err);
/** Frees a request. NULL is ignored. */
AFS_API void afs_request_free(afs_request *r);

/* Getters. Strings are borrowed: valid until afs_request_free(r) or a change to r. */
AFS_API const char *afs_request_method(const afs_request *r);
AFS_API const char *afs_request_url(const afs_request *r);
AFS_API size_t afs_request_header_count(const afs_request *r);
/** Name of header i (insertion order), or NULL when i is out of range. */
AFS_API const char *afs_request_header_name(const afs_request *r, size_t i);
/** Value of header i, or NULL when i is out of range. */
AFS_API const char *afs_request_header_value(const afs_request *r, size_t i);
/** Value of header `field` (case-insensitive), or NULL. */
AFS_API const char *afs_request_header(const afs_request *r, const char *field);
/** The body and its length in *len (may be NULL). NULL (and *len = 0): no body. An empty
 *  body is a non-NULL pointer with *len = 0. Borrowed. */
AFS_API const uint8_t *afs_request_body(const afs_request *r, size_t *len);
AFS_API double afs_request_timeout_interval(const afs_request *r);
AFS_API int afs_request_cache_policy(const afs_request *r);
AFS_API bool afs_request_should_handle_cookies(const afs_request *r);
AFS_API bool afs_request_should_use_pipelining(const afs_request *r);
AFS_API bool afs_request_allows_cellular_access(const afs_request *r);
AFS_API int afs_request_network_service_type(const afs_request *r);

/* >>> MULTIPART SECTIONS (7, 8) >>> */
/* <<< MULTIPART SECTIONS (7, 8) <<< */

/* >>> RESPONSE SECTION (9) >>> */
/* <<< RESPONSE SECTION (9) <<< */

#ifdef __cplusplus
}
#endif

#endif /* AFSERIALIZATION_H */
