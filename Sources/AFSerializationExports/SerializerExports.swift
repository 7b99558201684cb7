// afs_serializer_*: configuration and request building (header sections 5 and 6).
import AFSerialization
import CAFSerialization

import Glibc  // Linux with glibc only, as the core (Sources/AFSerialization/Platform.swift)

@c @implementation
public func afs_serializer_new(_ kind: afs_serializer_kind) -> OpaquePointer? {
    let k: RequestSerializer.Kind
    switch kind {
    case AFS_SERIALIZER_HTTP: k = .http
    case AFS_SERIALIZER_JSON: k = .json
    case AFS_SERIALIZER_PLIST: k = .propertyList
    default: return nil
    }
    return try? SerializerHandle.boxed(RequestSerializer(kind: k))
}

@c @implementation
public func afs_serializer_copy(_ s: OpaquePointer?) -> OpaquePointer? {
    guard let h = peek(s, SerializerHandle.self) else { return nil }
    return try? SerializerHandle.boxed(h.snapshot)
}

@c @implementation
public func afs_serializer_free(_ s: OpaquePointer?) { release(s, SerializerHandle.self) }

@c @implementation
public func afs_serializer_set_header(_ s: OpaquePointer?, _ field: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?,
                                      _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(s, "serializer", err) { (c: inout RequestSerializer) in
        let name = try stringArg(field, NTS, "field")
        try c.setHeader(name, try optionalStringArg(value, "the value of header \"\(name)\""))
    }
}

@c @implementation
public func afs_serializer_copy_header(_ s: OpaquePointer?, _ field: UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>? {
    guard let h = peek(s, SerializerHandle.self), let name = try? stringArg(field, NTS, "field"),
          let v = h.state.withLock({ $0.header(name) }) else { return nil }
    return try? ownedCString(v)
}

@c @implementation
public func afs_serializer_copy_headers(_ s: OpaquePointer?) -> UnsafeMutablePointer<CChar>? {
    guard let h = peek(s, SerializerHandle.self) else { return nil }
    return ownedHeaderLines(h.state.withLock { $0.headers })
}

@c @implementation
public func afs_serializer_set_basic_auth(_ s: OpaquePointer?, _ user: UnsafePointer<CChar>?, _ password: UnsafePointer<CChar>?,
                                          _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(s, "serializer", err) { (c: inout RequestSerializer) in
        try c.setBasicAuth(user: try stringArg(user, NTS, "user"), password: try stringArg(password, NTS, "password"))
    }
}

@c @implementation
public func afs_serializer_set_base_url(_ s: OpaquePointer?, _ base: UnsafePointer<CChar>?,
                                        _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(s, "serializer", err) { (c: inout RequestSerializer) in
        try c.setBaseURL(try optionalStringArg(base, "base_url"))
    }
}

@c @implementation
public func afs_serializer_clear_authorization(_ s: OpaquePointer?) {
    configure(s, RequestSerializer.self) { $0.clearAuthorization() }
}

@c @implementation
public func afs_serializer_set_uri_methods(_ s: OpaquePointer?, _ methods: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int,
                                           _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(s, "serializer", err) { (c: inout RequestSerializer) in
        try c.setURIMethods(try stringArrayArg(methods, count, "methods"))
    }
}

@c @implementation
public func afs_serializer_set_string_encoding(_ s: OpaquePointer?, _ e: afs_string_encoding, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(s, "serializer", err) { (c: inout RequestSerializer) in
        switch e {
        case AFS_ENCODING_UTF8: c.stringEncoding = .utf8
        case AFS_ENCODING_ASCII: c.stringEncoding = .ascii
        case AFS_ENCODING_ISO_8859_1: c.stringEncoding = .isoLatin1
        default:
            throw AFSError(.invalidArgument, "unknown string encoding \(e.rawValue) (expected AFS_ENCODING_UTF8, _ASCII or _ISO_8859_1)")
        }
    }
}

@c @implementation
public func afs_serializer_set_timeout_interval(_ s: OpaquePointer?, _ seconds: Double) {
    configure(s, RequestSerializer.self) { $0.properties.timeoutInterval = seconds }
}

@c @implementation
public func afs_serializer_set_cache_policy(_ s: OpaquePointer?, _ policy: Int32) {
    configure(s, RequestSerializer.self) { $0.properties.cachePolicy = policy }
}

@c @implementation
public func afs_serializer_set_should_handle_cookies(_ s: OpaquePointer?, _ on: Bool) {
    configure(s, RequestSerializer.self) { $0.properties.shouldHandleCookies = on }
}

@c @implementation
public func afs_serializer_set_should_use_pipelining(_ s: OpaquePointer?, _ on: Bool) {
    configure(s, RequestSerializer.self) { $0.properties.shouldUsePipelining = on }
}

@c @implementation
public func afs_serializer_set_allows_cellular_access(_ s: OpaquePointer?, _ on: Bool) {
    configure(s, RequestSerializer.self) { $0.properties.allowsCellularAccess = on }
}

@c @implementation
public func afs_serializer_set_network_service_type(_ s: OpaquePointer?, _ type: Int32) {
    configure(s, RequestSerializer.self) { $0.properties.networkServiceType = type }
}

@c @implementation
public func afs_serializer_set_query_style(_ s: OpaquePointer?, _ arrays: afs_array_style, _ bools: afs_bool_style, _ spaces: afs_space_style,
                                           _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(s, "serializer", err) { (c: inout RequestSerializer) in
        let a: QueryStyle.ArrayStyle, b: QueryStyle.BoolStyle, sp: QueryStyle.SpaceStyle
        switch arrays {
        case AFS_ARRAY_BRACKETS: a = .brackets
        case AFS_ARRAY_NO_BRACKETS: a = .noBrackets
        case AFS_ARRAY_INDEXED: a = .indexed
        default: throw AFSError(.invalidArgument, "unknown array style \(arrays.rawValue)")
        }
        switch bools {
        case AFS_BOOL_NUMERIC: b = .numeric
        case AFS_BOOL_LITERAL: b = .literal
        default: throw AFSError(.invalidArgument, "unknown bool style \(bools.rawValue)")
        }
        switch spaces {
        case AFS_SPACE_PERCENT: sp = .percent
        case AFS_SPACE_PLUS: sp = .plus
        default: throw AFSError(.invalidArgument, "unknown space style \(spaces.rawValue)")
        }
        c.queryStyle = QueryStyle(arrays: a, bools: b, spaces: sp)
    }
}

/// The caller's context pointer; the caller vouches for its thread safety.
private struct CallbackContext: @unchecked Sendable { let pointer: UnsafeMutableRawPointer? }

@c @implementation
public func afs_serializer_set_query_callback(_ s: OpaquePointer?, _ fn: afs_query_fn?, _ ctx: UnsafeMutableRawPointer?) {
    guard let fn = fn else {
        configure(s, RequestSerializer.self) { $0.queryCallback = nil }
        return
    }
    let context = CallbackContext(pointer: ctx)
    configure(s, RequestSerializer.self) {
        $0.queryCallback = { request, params in
            // Borrowed handles for the duration of the call.
            let r = RequestHandle(request, borrowed: true), p = ValueHandle(params, role: .member)  // read-only, owned by this call
            var error = afs_error()
            let out = withExtendedLifetime((r, p)) { fn(context.pointer, lend(r), lend(p), &error) }
            guard let out = out else {
                let m = message(of: &error)
                throw AFSError(.queryCallback, m.isEmpty ? "the query callback returned NULL" : m)
            }
            defer { free(out) }
            let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(out).assumingMemoryBound(to: UInt8.self), count: strlen(out))
            return try String(validatingUTF8Bytes: bytes, what: "the query returned by the query callback")
        }
    }
}

@c @implementation
public func afs_serializer_set_json_options(_ s: OpaquePointer?, _ options: UInt32, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(s, "serializer", err) { (c: inout RequestSerializer) in
        let known = UInt32(AFS_JSON_PRETTY_PRINTED | AFS_JSON_SORTED_KEYS | AFS_JSON_FRAGMENTS_ALLOWED
                           | AFS_JSON_WITHOUT_ESCAPING_SLASHES)
        guard options & ~known == 0 else {
            throw AFSError(.invalidArgument, "unknown JSON writing options 0x\(String(options & ~known, radix: 16))")
        }
        c.jsonOptions = JSONWritingOptions(rawValue: options)
    }
}

@c @implementation
public func afs_serializer_set_plist_format(_ s: OpaquePointer?, _ format: Int32, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(s, "serializer", err) { (c: inout RequestSerializer) in
        let f: PropertyListFormat
        switch format {
        case Int32(AFS_PLIST_XML): f = .xml
        case Int32(AFS_PLIST_BINARY): f = .binary
        default:
            throw AFSError(.invalidArgument, "unknown property list format \(format) (expected AFS_PLIST_XML 100 or AFS_PLIST_BINARY 200)")
        }
        c.plistFormat = f
    }
}

@c @implementation
public func afs_serializer_request(_ s: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ url: UnsafePointer<CChar>?,
                                   _ params: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(s, SerializerHandle.self, "serializer")
        let m = try stringArg(method, NTS, "method"), u = try stringArg(url, NTS, "url")
        let p = try params.map { (try valueArg($0, "params")).parameters() }
        return box(RequestHandle(try h.snapshot.request(method: m, url: u, parameters: p)))
    }
}

@c @implementation
public func afs_serializer_serialize(_ s: OpaquePointer?, _ r: OpaquePointer?, _ params: OpaquePointer?,
                                     _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(s, SerializerHandle.self, "serializer")
        let req = try unbox(r, RequestHandle.self, "request")
        let p = try params.map { (try valueArg($0, "params")).parameters() }
        return box(RequestHandle(try h.snapshot.serialize(req.request, parameters: p)))
    }
}
