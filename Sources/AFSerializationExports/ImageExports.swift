// Images and the rest of the response family (header section 12): image scale and pixel
// limit, empty-response codes, a request method, structured suffixes, the XSSI prefix.
import AFSerialization
import CAFSerialization

import Glibc  // Linux with glibc only, as the core (Sources/AFSerialization/Platform.swift)

@c @implementation
public func afs_response_serializer_set_image_scale(_ rs: OpaquePointer?, _ scale: Double,
                                                    _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(rs, "response serializer", err) { (c: inout ResponseSerializer) in try c.setImageScale(scale) }
}

@c @implementation
public func afs_response_serializer_set_max_image_pixels(_ rs: OpaquePointer?, _ maxPixels: UInt64,
                                                         _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(rs, "response serializer", err) { (c: inout ResponseSerializer) in c.setMaxImagePixels(maxPixels) }
}

@c @implementation
public func afs_response_serializer_set_empty_response_codes(_ rs: OpaquePointer?, _ codes: UnsafePointer<Int32>?, _ count: Int,
                                                             _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(rs, "response serializer", err) { (c: inout ResponseSerializer) in
        try c.setEmptyResponseCodes(count == 0 ? nil : try arrayArg(codes, count, "codes").map { Int($0) })
    }
}

@c @implementation
public func afs_response_serializer_set_accepts_structured_suffix(_ rs: OpaquePointer?, _ on: Bool) {
    configure(rs, ResponseSerializer.self) { $0.setAcceptsStructuredSuffix(on) }
}

@c @implementation
public func afs_response_serializer_set_strips_xssi_prefix(_ rs: OpaquePointer?, _ on: Bool) {
    configure(rs, ResponseSerializer.self) { $0.setStripsXSSIPrefix(on) }
}

/// The method argument: NULL for unknown.
private func methodArg(_ p: UnsafePointer<CChar>?) -> String? {
    p.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) }
}

@c @implementation
public func afs_response_object_for_method(_ rs: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ statusCode: Int32,
                                           _ contentType: UnsafePointer<CChar>?, _ data: UnsafeRawPointer?, _ len: Int,
                                           _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                           _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    out?.pointee = nil
    return status(err) {
        let h = try unbox(rs, ResponseSerializerHandle.self, "response serializer")
        guard let out = out else { throw AFSError(.invalidArgument, "out is NULL") }
        let r = h.snapshot.responseParameters(statusCode: Int(statusCode), contentType: contentTypeArg(contentType),
                                              body: try bodyArg(data, len), method: methodArg(method))
        switch r.parameters {
        case .tree(let v)?: out.pointee = box(ValueHandle(v))
        case .document(let d, let node)?: out.pointee = box(try ValueHandle.owning(d, node: node))
        case nil: break
        }
        if let e = r.error { throw e }
    }
}

@c @implementation
public func afs_response_object_pickle_for_method(_ rs: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ statusCode: Int32,
                                                  _ contentType: UnsafePointer<CChar>?, _ data: UnsafeRawPointer?, _ len: Int,
                                                  _ out: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                                                  _ outLen: UnsafeMutablePointer<Int>?,
                                                  _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    out?.pointee = nil
    outLen?.pointee = 0
    return status(err) {
        let h = try unbox(rs, ResponseSerializerHandle.self, "response serializer")
        guard let out = out, let outLen = outLen else { throw AFSError(.invalidArgument, "\(out == nil ? "out" : "out_len") is NULL") }
        let r = h.snapshot.responseObjectPickle(statusCode: Int(statusCode), contentType: contentTypeArg(contentType),
                                                body: try bodyArg(data, len), method: methodArg(method))
        if let (p, n) = r.pickle {
            out.pointee = p
            outLen.pointee = n
        }
        if let e = r.error { throw e }
    }
}
