// afs_serializer_*: configuration and request building.
import AFSerialization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs `body` on the serializer's configuration under its lock.
private func configure(_ s: OpaquePointer?, _ err: UnsafeMutableRawPointer?, _ body: (inout RequestSerializer) throws -> Void) -> Int32 {
    status(err) {
        let h = try unbox(s, SerializerHandle.self, "serializer")
        try h.state.withLock { try body(&$0) }
    }
}

/// The same for the `void` setters: NULL or a wrong handle is ignored.
private func configure(_ s: OpaquePointer?, _ body: (inout RequestSerializer) -> Void) {
    peek(s, SerializerHandle.self)?.state.withLock { body(&$0) }
}

@_cdecl("afs_serializer_new")
public func afs_serializer_new(_ kind: Int32) -> OpaquePointer? {
    guard let k = RequestSerializer.Kind(rawValue: kind) else { return nil }
    return box(SerializerHandle(RequestSerializer(kind: k)))
}

@_cdecl("afs_serializer_copy")
public func afs_serializer_copy(_ s: OpaquePointer?) -> OpaquePointer? {
    guard let h = peek(s, SerializerHandle.self) else { return nil }
    return box(SerializerHandle(h.snapshot))
}

@_cdecl("afs_serializer_free")
public func afs_serializer_free(_ s: OpaquePointer?) { release(s, SerializerHandle.self) }

@_cdecl("afs_serializer_set_header")
public func afs_serializer_set_header(_ s: OpaquePointer?, _ field: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?,
                                      _ err: UnsafeMutableRawPointer?) -> Int32 {
    configure(s, err) { c in
        let name = try stringArg(field, NTS, "field")
        try c.setHeader(name, try optionalStringArg(value, "the value of header \"\(name)\""))
    }
}

@_cdecl("afs_serializer_copy_header")
public func afs_serializer_copy_header(_ s: OpaquePointer?, _ field: UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>? {
    guard let h = peek(s, SerializerHandle.self), let name = try? stringArg(field, NTS, "field"),
          let v = h.state.withLock({ $0.header(name) }) else { return nil }
    return ownedCString(v)
}

@_cdecl("afs_serializer_copy_headers")
public func afs_serializer_copy_headers(_ s: OpaquePointer?) -> UnsafeMutablePointer<CChar>? {
    guard let h = peek(s, SerializerHandle.self) else { return nil }
    let headers = h.state.withLock { $0.headers }
    var out = ByteWriter(capacity: 256)
    for (name, value) in headers {
        out.append(name)
        out.append(": " as StaticString)
        out.append(value)
        out.append("\r\n" as StaticString)
    }
    return try? out.takeCString()
}

@_cdecl("afs_serializer_set_basic_auth")
public func afs_serializer_set_basic_auth(_ s: OpaquePointer?, _ user: UnsafePointer<CChar>?, _ password: UnsafePointer<CChar>?,
                                          _ err: UnsafeMutableRawPointer?) -> Int32 {
    configure(s, err) { c in
        try c.setBasicAuth(user: try stringArg(user, NTS, "user"), password: try stringArg(password, NTS, "password"))
    }
}

@_cdecl("afs_serializer_clear_authorization")
public func afs_serializer_clear_authorization(_ s: OpaquePointer?) {
    configure(s) { $0.clearAuthorization() }
}

@_cdecl("afs_serializer_set_uri_methods")
public func afs_serializer_set_uri_methods(_ s: OpaquePointer?, _ methods: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int,
                                           _ err: UnsafeMutableRawPointer?) -> Int32 {
    configure(s, err) { c in
        guard count == 0 || methods != nil else { throw AFSError(.invalidArgument, "methods is NULL but count is \(count)") }
        var list: [String] = []
        for i in 0..<count { list.append(try stringArg(methods![i], NTS, "methods[\(i)]")) }
        try c.setURIMethods(list)
    }
}

@_cdecl("afs_serializer_set_string_encoding")
public func afs_serializer_set_string_encoding(_ s: OpaquePointer?, _ e: Int32, _ err: UnsafeMutableRawPointer?) -> Int32 {
    configure(s, err) { c in
        guard let enc = StringEncoding(rawValue: e) else {
            throw AFSError(.invalidArgument, "unknown string encoding \(e) (expected AFS_ENCODING_UTF8, _ASCII or _ISO_8859_1)")
        }
        c.stringEncoding = enc
    }
}

@_cdecl("afs_serializer_set_timeout_interval")
public func afs_serializer_set_timeout_interval(_ s: OpaquePointer?, _ seconds: Double) {
    configure(s) { $0.properties.timeoutInterval = seconds }
}

@_cdecl("afs_serializer_set_cache_policy")
public func afs_serializer_set_cache_policy(_ s: OpaquePointer?, _ policy: Int32) {
    configure(s) { $0.properties.cachePolicy = policy }
}

@_cdecl("afs_serializer_set_should_handle_cookies")
public func afs_serializer_set_should_handle_cookies(_ s: OpaquePointer?, _ on: Bool) {
    configure(s) { $0.properties.shouldHandleCookies = on }
}

@_cdecl("afs_serializer_set_should_use_pipelining")
public func afs_serializer_set_should_use_pipelining(_ s: OpaquePointer?, _ on: Bool) {
    configure(s) { $0.properties.shouldUsePipelining = on }
}

@_cdecl("afs_serializer_set_allows_cellular_access")
public func afs_serializer_set_allows_cellular_access(_ s: OpaquePointer?, _ on: Bool) {
    configure(s) { $0.properties.allowsCellularAccess = on }
}

@_cdecl("afs_serializer_set_network_service_type")
public func afs_serializer_set_network_service_type(_ s: OpaquePointer?, _ type: Int32) {
    configure(s) { $0.properties.networkServiceType = type }
}

@_cdecl("afs_serializer_set_query_style")
public func afs_serializer_set_query_style(_ s: OpaquePointer?, _ arrays: Int32, _ bools: Int32, _ spaces: Int32,
                                           _ err: UnsafeMutableRawPointer?) -> Int32 {
    configure(s, err) { c in
        guard let a = QueryStyle.ArrayStyle(rawValue: arrays) else { throw AFSError(.invalidArgument, "unknown array style \(arrays)") }
        guard let b = QueryStyle.BoolStyle(rawValue: bools) else { throw AFSError(.invalidArgument, "unknown bool style \(bools)") }
        guard let sp = QueryStyle.SpaceStyle(rawValue: spaces) else { throw AFSError(.invalidArgument, "unknown space style \(spaces)") }
        c.queryStyle = QueryStyle(arrays: a, bools: b, spaces: sp)
    }
}

/// `char *(*)(void *ctx, const afs_request *, const afs_value *, afs_error *)`
public typealias afs_query_fn = @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> UnsafeMutablePointer<CChar>?

/// The caller's context pointer; the caller vouches for its thread safety.
private struct CallbackContext: @unchecked Sendable { let pointer: UnsafeMutableRawPointer? }

@_cdecl("afs_serializer_set_query_callback")
public func afs_serializer_set_query_callback(_ s: OpaquePointer?, _ fn: afs_query_fn?, _ ctx: UnsafeMutableRawPointer?) {
    guard let fn = fn else {
        configure(s) { $0.queryCallback = nil }
        return
    }
    let context = CallbackContext(pointer: ctx)
    configure(s) {
        $0.queryCallback = { request, params in
            // Borrowed handles for the duration of the call.
            let r = RequestHandle(request), p = ValueHandle(params, depth: 0)  // const: never a container target
            var error = [UInt8](repeating: 0, count: 8 + errorMessageCapacity)
            let out = withExtendedLifetime((r, p)) {
                error.withUnsafeMutableBytes { e in
                    fn(context.pointer, OpaquePointer(Unmanaged.passUnretained(r).toOpaque()),
                       OpaquePointer(Unmanaged.passUnretained(p).toOpaque()), e.baseAddress)
                }
            }
            guard let out = out else {
                let message = error[8...].prefix { $0 != 0 }
                throw AFSError(.queryCallback, message.isEmpty ? "the query callback returned NULL" : String(decoding: message, as: UTF8.self))
            }
            defer { free(out) }
            let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(out).assumingMemoryBound(to: UInt8.self), count: strlen(out))
            return try String(validatingUTF8Bytes: bytes, what: "the query returned by the query callback")
        }
    }
}

@_cdecl("afs_serializer_set_json_options")
public func afs_serializer_set_json_options(_ s: OpaquePointer?, _ options: UInt32, _ err: UnsafeMutableRawPointer?) -> Int32 {
    configure(s, err) { c in
        guard options & ~UInt32(15) == 0 else {
            throw AFSError(.invalidArgument, "unknown JSON writing options 0x\(String(options & ~UInt32(15), radix: 16))")
        }
        c.jsonOptions = JSONWritingOptions(rawValue: options)
    }
}

@_cdecl("afs_serializer_set_plist_format")
public func afs_serializer_set_plist_format(_ s: OpaquePointer?, _ format: Int32, _ err: UnsafeMutableRawPointer?) -> Int32 {
    configure(s, err) { c in
        guard let f = PropertyListFormat(rawValue: format) else {
            throw AFSError(.invalidArgument, "unknown property list format \(format) (expected AFS_PLIST_XML 100 or AFS_PLIST_BINARY 200)")
        }
        c.plistFormat = f
    }
}

@_cdecl("afs_serializer_request")
public func afs_serializer_request(_ s: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ url: UnsafePointer<CChar>?,
                                   _ params: OpaquePointer?, _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(s, SerializerHandle.self, "serializer")
        let m = try stringArg(method, NTS, "method"), u = try stringArg(url, NTS, "url")
        let p = try params.map { try unbox($0, ValueHandle.self, "params").value }
        return box(RequestHandle(try h.snapshot.request(method: m, url: u, params: p)))
    }
}

@_cdecl("afs_serializer_serialize")
public func afs_serializer_serialize(_ s: OpaquePointer?, _ r: OpaquePointer?, _ params: OpaquePointer?,
                                     _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(s, SerializerHandle.self, "serializer")
        let req = try unbox(r, RequestHandle.self, "request")
        let p = try params.map { try unbox($0, ValueHandle.self, "params").value }
        return box(RequestHandle(try h.snapshot.serialize(req.request, params: p)))
    }
}
