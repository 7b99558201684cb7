// afs_response_*: response serializers, validation and decoding (header section 9).
import AFSerialization
import CAFSerialization

import Glibc  // Linux with glibc only, as the core (Sources/AFSerialization/Platform.swift)

/// The Content-Type argument: NULL when absent. Not validated as UTF-8 (a header from the
/// wire may hold anything; invalid bytes cannot match an acceptable type).
func contentTypeArg(_ p: UnsafePointer<CChar>?) -> String? {
    p.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) }
}

/// The response body argument: NULL only with len 0; `AFS_NTS` is not a byte count.
func bodyArg(_ data: UnsafeRawPointer?, _ len: Int) throws -> UnsafeBufferPointer<UInt8> {
    let b = try dataArg(data, len, "data", lenName: "len")
    return UnsafeBufferPointer(start: b.baseAddress?.assumingMemoryBound(to: UInt8.self), count: b.count)
}

@c @implementation
public func afs_response_serializer_new(_ kind: afs_response_kind) -> OpaquePointer? {
    let k: ResponseSerializer.Kind
    switch kind {
    case AFS_RESPONSE_HTTP: k = .http
    case AFS_RESPONSE_JSON: k = .json
    case AFS_RESPONSE_PLIST: k = .propertyList
    case AFS_RESPONSE_XML: k = .xml
    case AFS_RESPONSE_IMAGE: k = .image
    default: return nil
    }
    return try? ResponseSerializerHandle.boxed(ResponseSerializer(kind: k))
}

@c @implementation
public func afs_response_serializer_new_compound(_ members: UnsafePointer<OpaquePointer?>?, _ count: Int,
                                                 _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let list = try arrayArg(members, count, "members").enumerated().map {
            try unbox($1, ResponseSerializerHandle.self, "members[\($0)]").snapshot
        }
        return try ResponseSerializerHandle.boxed(try ResponseSerializer(compound: list))
    }
}

@c @implementation
public func afs_response_serializer_copy(_ rs: OpaquePointer?) -> OpaquePointer? {
    guard let h = peek(rs, ResponseSerializerHandle.self) else { return nil }
    return try? ResponseSerializerHandle.boxed(h.snapshot)
}

@c @implementation
public func afs_response_serializer_free(_ rs: OpaquePointer?) { release(rs, ResponseSerializerHandle.self) }

@c @implementation
public func afs_response_serializer_set_acceptable_status_codes(_ rs: OpaquePointer?, _ first: UnsafePointer<Int32>?,
                                                                _ last: UnsafePointer<Int32>?, _ count: Int,
                                                                _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(rs, "response serializer", err) { (c: inout ResponseSerializer) in
        let f = try arrayArg(first, count, "first"), l = try arrayArg(last, count, "last")
        try c.setAcceptableStatusCodes(zip(f, l).map { (first: Int($0), last: Int($1)) })
    }
}

@c @implementation
public func afs_response_serializer_set_acceptable_content_types(_ rs: OpaquePointer?, _ types: UnsafePointer<UnsafePointer<CChar>?>?,
                                                                 _ count: Int, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(rs, "response serializer", err) { (c: inout ResponseSerializer) in
        try c.setAcceptableContentTypes(try stringArrayArg(types, count, "types"))
    }
}

@c @implementation
public func afs_response_serializer_set_removes_keys_with_null_values(_ rs: OpaquePointer?, _ on: Bool) {
    configure(rs, ResponseSerializer.self) { $0.setRemovesKeysWithNullValues(on) }
}

@c @implementation
public func afs_response_serializer_set_max_decoded_bytes(_ rs: OpaquePointer?, _ maxBytes: UInt64) {
    configure(rs, ResponseSerializer.self) { $0.setMaxDecodedBytes(Int(clamping: maxBytes)) }
}

@c @implementation
public func afs_response_serializer_set_json_reading_options(_ rs: OpaquePointer?, _ options: UInt32,
                                                             _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(rs, "response serializer", err) { (c: inout ResponseSerializer) in try c.setJSONReadingOptions(JSONReadingOptions(rawValue: options)) }
}

@c @implementation
public func afs_response_validate(_ rs: OpaquePointer?, _ statusCode: Int32, _ contentType: UnsafePointer<CChar>?,
                                  _ data: UnsafeRawPointer?, _ len: Int, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let h = try unbox(rs, ResponseSerializerHandle.self, "response serializer")
        try h.snapshot.validate(statusCode: Int(statusCode), contentType: contentTypeArg(contentType), body: try bodyArg(data, len))
    }
}

@c @implementation
public func afs_response_object(_ rs: OpaquePointer?, _ statusCode: Int32, _ contentType: UnsafePointer<CChar>?,
                                _ data: UnsafeRawPointer?, _ len: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    out?.pointee = nil
    return status(err) {
        let h = try unbox(rs, ResponseSerializerHandle.self, "response serializer")
        guard let out = out else { throw AFSError(.invalidArgument, "out is NULL") }
        let r = h.snapshot.responseParameters(statusCode: Int(statusCode), contentType: contentTypeArg(contentType),
                                              body: try bodyArg(data, len))
        switch r.parameters {
        case .tree(let v)?: out.pointee = box(ValueHandle(v))
        case .document(let d, let node)?: out.pointee = box(try ValueHandle.owning(d, node: node))
        case nil: break
        }
        if let e = r.error { throw e }
    }
}
