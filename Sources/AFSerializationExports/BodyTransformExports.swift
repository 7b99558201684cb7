// afs_request_set_body_stream, afs_request_set_content_encoding, afs_request_add_digest and
// friends (header section 15): bodies of unknown length, compressed bodies, body digests.
import AFSerialization
import CAFSerialization

/// Runs a change of `h.request` unless a call on the request is running (a callback).
private func change(_ h: RequestHandle, _ call: String, _ body: (inout Request) throws -> Void) throws {
    if h.busy > 0 { throw reentrancyError(call) }
    var r = h.request
    try body(&r)  // on failure the request is unchanged
    h.request = r
}

private func codingArg(_ coding: UnsafePointer<CChar>?) throws -> ContentCoding {
    let name = try stringArg(coding, NTS, "coding")
    guard let c = ContentCoding(name: name) else {
        throw AFSError(.unsupported, "the content coding \"\(name)\" is not supported (gzip, deflate, zstd, br)")
    }
    return c
}

private func flagsArg(_ flags: UInt32) throws -> Bool {
    guard flags & ~UInt32(AFS_COMPRESS_EXACT) == 0 else {
        throw AFSError(.invalidArgument, "unknown flags 0x\(String(flags, radix: 16)) (only AFS_COMPRESS_EXACT)")
    }
    return flags != 0
}

@c @implementation
public func afs_request_set_body_stream(_ r: OpaquePointer?, _ read: afs_read_fn?, _ rewind: afs_rewind_fn?,
                                        _ release: afs_release_fn?, _ ctx: UnsafeMutableRawPointer?, _ length: UInt64,
                                        _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    // Made first, so that every failure below releases ctx exactly once.
    let source = CallbackSource(read, rewind, release, ctx)
    return status(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        guard read != nil else { throw AFSError(.invalidArgument, "read is NULL") }
        guard length <= UInt64(Int64.max) || length == BodyPart.unknownLength else {
            throw AFSError(.invalidArgument, "length \(length) is not a byte count (larger than INT64_MAX) nor AFS_LENGTH_UNKNOWN")
        }
        try change(h, "afs_request_set_body_stream") { try $0.setBodyStream(source, length: length) }
    }
}

@c @implementation
public func afs_request_is_chunked(_ r: OpaquePointer?) -> Bool {
    peek(r, RequestHandle.self)?.request.isChunked ?? false
}

@c @implementation
public func afs_request_set_content_encoding(_ r: OpaquePointer?, _ coding: UnsafePointer<CChar>?, _ level: Int32,
                                             _ flags: UInt32, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        let c = try codingArg(coding)
        let exact = try flagsArg(flags)
        try change(h, "afs_request_set_content_encoding") { try $0.setContentEncoding(c, level: level, exact: exact) }
    }
}

@c @implementation
public func afs_request_add_digest(_ r: OpaquePointer?, _ algorithm: UnsafePointer<CChar>?, _ where_: afs_digest_where,
                                   _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        let name = try stringArg(algorithm, NTS, "algorithm")
        guard where_ == AFS_DIGEST_HEADER || where_ == AFS_DIGEST_TRAILER else {
            throw AFSError(.invalidArgument, "where \(where_.rawValue) is neither AFS_DIGEST_HEADER nor AFS_DIGEST_TRAILER")
        }
        guard let alg = DigestAlgorithm(name: name) else {
            throw AFSError(.unsupported, "the digest algorithm \"\(name)\" is not supported (sha-256, sha-512, md5)")
        }
        let trailer = where_ == AFS_DIGEST_TRAILER
        // A header digest of a streamed body reads it: its callbacks run inside this call.
        let done: Void? = try exclusive(h) {
            var req = h.request
            try req.addDigest(alg, trailer: trailer)
            return req
        }.map { h.request = $0 }
        if done == nil { throw reentrancyError("afs_request_add_digest") }
    }
}

@c @implementation
public func afs_request_set_temp_dir(_ r: OpaquePointer?, _ dir: UnsafePointer<CChar>?,
                                     _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        let d = try optionalStringArg(dir, "dir")
        try change(h, "afs_request_set_temp_dir") { $0.transformSettings.temporaryDirectory = d }
    }
}

@c @implementation
public func afs_request_copy_trailers(_ r: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?,
                                      _ err: UnsafeMutablePointer<afs_error>?) -> UnsafeMutablePointer<CChar>? {
    len?.pointee = 0
    return pointer(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        var text = ""
        if let s = h.request.bodyStream, !s.trailerNames.isEmpty {
            guard let fields = s.trailerFields else {
                throw AFSError(.state, "the trailer fields are known once the body has been read to its end")
            }
            for (n, v) in fields { text += n + ": " + v + "\r\n" }
        }
        var t = text
        guard let p = t.withUTF8({ mallocCString(UnsafeRawBufferPointer($0)) }) else {
            throw AFSError(.noMemory, "out of memory copying \(text.utf8.count) bytes of trailer fields")
        }
        len?.pointee = text.utf8.count
        return p
    }
}

@c @implementation
public func afs_serializer_set_content_encoding(_ s: OpaquePointer?, _ coding: UnsafePointer<CChar>?, _ level: Int32,
                                                _ flags: UInt32, _ existing: afs_existing_encoding, _ minSize: UInt64,
                                                _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(s, "serializer", err) { (c: inout RequestSerializer) in
        guard coding != nil else {
            c.compression = nil
            return
        }
        let cd = try codingArg(coding)
        let exact = try flagsArg(flags)
        guard let rule = SerializerCompression.Existing(rawValue: Int32(bitPattern: existing.rawValue)) else {
            throw AFSError(.invalidArgument, "existing \(existing.rawValue) is not an afs_existing_encoding")
        }
        c.compression = try SerializerCompression(coding: cd, level: level, exact: exact, existing: rule, minimumSize: minSize)
    }
}
