// afs_response_*: response serializers (validation and decoding), and afs_value_* walking.
import AFSerialization
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `afs_response_serializer`: a response serializer behind a lock, so that configuration,
/// validation and decoding may run on many threads at once (decoding runs on a snapshot,
/// outside the lock).
final class ResponseSerializerHandle: Handle {
    let state: Mutex<ResponseSerializer>
    init(_ s: ResponseSerializer) { state = Mutex(s) }
    override class var cName: String { "afs_response_serializer" }

    /// A snapshot of the configuration (a value copy).
    var snapshot: ResponseSerializer { state.withLock { $0 } }
}

/// Runs `body` on the serializer's configuration under its lock.
private func configure(_ rs: OpaquePointer?, _ err: UnsafeMutableRawPointer?,
                       _ body: (inout ResponseSerializer) throws -> Void) -> Int32 {
    status(err) {
        let h = try unbox(rs, ResponseSerializerHandle.self, "response serializer")
        try h.state.withLock { try body(&$0) }
    }
}

/// The response body argument: NULL only with len 0; `AFS_NTS` is not a byte count.
private func bodyArg(_ data: UnsafeRawPointer?, _ len: Int) throws -> UnsafeBufferPointer<UInt8> {
    guard len >= 0 else { throw AFSError(.invalidArgument, "len \(UInt(bitPattern: len)) is not a byte count (AFS_NTS is for strings)") }
    guard let d = data else {
        if len == 0 { return UnsafeBufferPointer(start: nil, count: 0) }
        throw AFSError(.invalidArgument, "data is NULL but len is \(len)")
    }
    return UnsafeBufferPointer(start: d.assumingMemoryBound(to: UInt8.self), count: len)
}

/// The Content-Type argument: NULL when absent. Not validated as UTF-8 (a header from the
/// wire may hold anything; invalid bytes cannot match an acceptable type).
private func contentTypeArg(_ p: UnsafePointer<CChar>?) -> String? {
    p.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) }
}

@_cdecl("afs_response_serializer_new")
public func afs_response_serializer_new(_ kind: Int32) -> OpaquePointer? {
    guard let k = ResponseSerializer.Kind(rawValue: kind) else { return nil }
    return box(ResponseSerializerHandle(ResponseSerializer(kind: k)))
}

@_cdecl("afs_response_serializer_new_compound")
public func afs_response_serializer_new_compound(_ members: UnsafePointer<OpaquePointer?>?, _ count: Int,
                                                 _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    pointer(err) {
        guard count == 0 || members != nil else { throw AFSError(.invalidArgument, "members is NULL but count is \(count)") }
        var list: [ResponseSerializer] = []
        for i in 0..<count { list.append(try unbox(members![i], ResponseSerializerHandle.self, "members[\(i)]").snapshot) }
        return box(ResponseSerializerHandle(try ResponseSerializer(compound: list)))
    }
}

@_cdecl("afs_response_serializer_copy")
public func afs_response_serializer_copy(_ rs: OpaquePointer?) -> OpaquePointer? {
    guard let h = peek(rs, ResponseSerializerHandle.self) else { return nil }
    return box(ResponseSerializerHandle(h.snapshot))
}

@_cdecl("afs_response_serializer_free")
public func afs_response_serializer_free(_ rs: OpaquePointer?) { release(rs, ResponseSerializerHandle.self) }

@_cdecl("afs_response_serializer_set_acceptable_status_codes")
public func afs_response_serializer_set_acceptable_status_codes(_ rs: OpaquePointer?, _ first: UnsafePointer<Int32>?,
                                                                _ last: UnsafePointer<Int32>?, _ count: Int,
                                                                _ err: UnsafeMutableRawPointer?) -> Int32 {
    configure(rs, err) { c in
        guard count == 0 || (first != nil && last != nil) else {
            throw AFSError(.invalidArgument, "\(first == nil ? "first" : "last") is NULL but count is \(count)")
        }
        try c.setAcceptableStatusCodes((0..<count).map { (first: Int(first![$0]), last: Int(last![$0])) })
    }
}

@_cdecl("afs_response_serializer_set_acceptable_content_types")
public func afs_response_serializer_set_acceptable_content_types(_ rs: OpaquePointer?, _ types: UnsafePointer<UnsafePointer<CChar>?>?,
                                                                 _ count: Int, _ err: UnsafeMutableRawPointer?) -> Int32 {
    configure(rs, err) { c in
        guard count == 0 || types != nil else { throw AFSError(.invalidArgument, "types is NULL but count is \(count)") }
        var list: [String] = []
        for i in 0..<count { list.append(try stringArg(types![i], NTS, "types[\(i)]")) }
        try c.setAcceptableContentTypes(list)
    }
}

@_cdecl("afs_response_serializer_set_removes_keys_with_null_values")
public func afs_response_serializer_set_removes_keys_with_null_values(_ rs: OpaquePointer?, _ on: Bool) {
    peek(rs, ResponseSerializerHandle.self)?.state.withLock { $0.setRemovesKeysWithNullValues(on) }
}

@_cdecl("afs_response_serializer_set_max_decoded_bytes")
public func afs_response_serializer_set_max_decoded_bytes(_ rs: OpaquePointer?, _ maxBytes: UInt64) {
    peek(rs, ResponseSerializerHandle.self)?.state.withLock { $0.setMaxDecodedBytes(Int(clamping: maxBytes)) }
}

@_cdecl("afs_response_serializer_set_json_reading_options")
public func afs_response_serializer_set_json_reading_options(_ rs: OpaquePointer?, _ options: UInt32,
                                                             _ err: UnsafeMutableRawPointer?) -> Int32 {
    configure(rs, err) { try $0.setJSONReadingOptions(JSONReadingOptions(rawValue: options)) }
}

@_cdecl("afs_response_validate")
public func afs_response_validate(_ rs: OpaquePointer?, _ statusCode: Int32, _ contentType: UnsafePointer<CChar>?,
                                  _ data: UnsafeRawPointer?, _ len: Int, _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) {
        let h = try unbox(rs, ResponseSerializerHandle.self, "response serializer")
        try h.snapshot.validate(statusCode: Int(statusCode), contentType: contentTypeArg(contentType), body: try bodyArg(data, len))
    }
}

@_cdecl("afs_response_object")
public func afs_response_object(_ rs: OpaquePointer?, _ statusCode: Int32, _ contentType: UnsafePointer<CChar>?,
                                _ data: UnsafeRawPointer?, _ len: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                _ err: UnsafeMutableRawPointer?) -> Int32 {
    out?.pointee = nil
    return status(err) {
        let h = try unbox(rs, ResponseSerializerHandle.self, "response serializer")
        guard let out = out else { throw AFSError(.invalidArgument, "out is NULL") }
        let r = h.snapshot.responseObject(statusCode: Int(statusCode), contentType: contentTypeArg(contentType),
                                          body: try bodyArg(data, len))
        out.pointee = r.value.map { box(ValueHandle($0)) }
        if let e = r.error { throw e }
    }
}

// MARK: - Walking a value

@_cdecl("afs_value_count")
public func afs_value_count(_ v: OpaquePointer?) -> Int { peek(v, ValueHandle.self)?.value.count ?? 0 }

@_cdecl("afs_value_key_at")
public func afs_value_key_at(_ dict: OpaquePointer?, _ i: Int, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<CChar>? {
    let k = peek(dict, ValueHandle.self)?.key(at: i)
    len?.pointee = k?.count ?? 0
    return k.map { UnsafePointer($0.pointer) }
}

@_cdecl("afs_value_at")
public func afs_value_at(_ v: OpaquePointer?, _ i: Int) -> OpaquePointer? {
    peek(v, ValueHandle.self)?.child(at: i).map { OpaquePointer(Unmanaged.passUnretained($0).toOpaque()) }
}

@_cdecl("afs_value_get")
public func afs_value_get(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?) -> OpaquePointer? {
    guard let h = peek(dict, ValueHandle.self), let k = try? stringArg(key, NTS, "key"),
          let i = h.index(ofKey: k) else { return nil }
    return afs_value_at(dict, i)
}

@_cdecl("afs_value_get_bool")
public func afs_value_get_bool(_ v: OpaquePointer?) -> Bool {
    guard case .bool(let b)? = peek(v, ValueHandle.self)?.value else { return false }
    return b
}

@_cdecl("afs_value_get_int")
public func afs_value_get_int(_ v: OpaquePointer?) -> Int64 {
    guard case .int(let i)? = peek(v, ValueHandle.self)?.value else { return 0 }
    return i
}

@_cdecl("afs_value_get_double")
public func afs_value_get_double(_ v: OpaquePointer?) -> Double {
    switch peek(v, ValueHandle.self)?.value {
    case .double(let d)?: return d
    case .int(let i)?: return Double(i)
    default: return 0
    }
}

@_cdecl("afs_value_get_string")
public func afs_value_get_string(_ v: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<CChar>? {
    guard let h = peek(v, ValueHandle.self), case .string = h.value, let c = h.scalarBytes() else {
        len?.pointee = 0
        return nil
    }
    len?.pointee = c.count
    return UnsafePointer(c.pointer)
}

@_cdecl("afs_value_get_data")
public func afs_value_get_data(_ v: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<UInt8>? {
    guard let h = peek(v, ValueHandle.self), case .data = h.value, let c = h.scalarBytes() else {
        len?.pointee = 0
        return nil
    }
    len?.pointee = c.count
    return UnsafeRawPointer(c.pointer).assumingMemoryBound(to: UInt8.self)
}
