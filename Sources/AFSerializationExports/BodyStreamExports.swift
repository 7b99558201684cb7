// afs_body_stream_*, afs_request_body_stream and afs_request_write_body_to_file: pulling a
// multipart body.
import AFSerialization
import CAFSerialization

/// `afs_body_stream`: borrowed from its request (`afs_request_body_stream`), never freed
/// by the caller.
final class BodyStreamHandle: Handle {
    let stream: MultipartBodyStream
    init(_ s: MultipartBodyStream) { stream = s }
    override class var cName: String { "afs_body_stream" }
}

@c @implementation
public func afs_request_body_stream(_ r: OpaquePointer?) -> OpaquePointer? {
    guard let h = peek(r, RequestHandle.self), let s = h.request.bodyStream else { return nil }
    if h.bodyStreamHandle?.stream !== s { h.bodyStreamHandle = BodyStreamHandle(s) }
    return lend(h.bodyStreamHandle!)
}

@c @implementation
public func afs_request_write_body_to_file(_ r: OpaquePointer?, _ path: UnsafePointer<CChar>?,
                                           _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        return box(RequestHandle(try h.request.writingBody(toFile: try stringArg(path, NTS, "path"))))
    }
}

@c @implementation
public func afs_body_stream_open(_ bs: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) { try unbox(bs, BodyStreamHandle.self, "stream").stream.open() }
}

@c @implementation
public func afs_body_stream_read(_ bs: OpaquePointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ maxLength: Int) -> Int64 {
    guard let h = peek(bs, BodyStreamHandle.self) else { return -1 }
    // A size_t above Int.max arrives negative: it only means "as much as you have".
    return Int64(h.stream.read(into: buffer, maxLength: maxLength < 0 ? Int.max : maxLength))
}

@c @implementation
public func afs_body_stream_has_bytes_available(_ bs: OpaquePointer?) -> Bool {
    peek(bs, BodyStreamHandle.self)?.stream.hasBytesAvailable ?? false
}

@c @implementation
public func afs_body_stream_content_length(_ bs: OpaquePointer?) -> UInt64 {
    peek(bs, BodyStreamHandle.self)?.stream.contentLength ?? 0
}

@c @implementation
public func afs_body_stream_close(_ bs: OpaquePointer?) {
    peek(bs, BodyStreamHandle.self)?.stream.close()
}

@c @implementation
public func afs_body_stream_error(_ bs: OpaquePointer?, _ out: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(out) {
        if let e = try unbox(bs, BodyStreamHandle.self, "stream").stream.error { throw e }
    }
}

@c @implementation
public func afs_body_stream_rewind(_ bs: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) { try unbox(bs, BodyStreamHandle.self, "stream").stream.rewind() }
}

@c @implementation
public func afs_body_stream_seek(_ bs: OpaquePointer?, _ offset: UInt64, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) { try unbox(bs, BodyStreamHandle.self, "stream").stream.seek(to: offset) }
}

@c @implementation
public func afs_body_stream_position(_ bs: OpaquePointer?) -> UInt64 {
    peek(bs, BodyStreamHandle.self)?.stream.position ?? 0
}

@c @implementation
public func afs_body_stream_write_to_fd(_ bs: OpaquePointer?, _ fd: Int32, _ written: UnsafeMutablePointer<UInt64>?,
                                        _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    written?.pointee = 0
    return status(err) {
        let s = try unbox(bs, BodyStreamHandle.self, "stream").stream
        guard fd >= 0 else { throw AFSError(.invalidArgument, "fd \(fd) is not a file descriptor") }
        var n: UInt64 = 0
        defer { written?.pointee = n }
        try s.write(to: fd, written: &n)
    }
}

@c @implementation
public func afs_body_stream_set_progress(_ bs: OpaquePointer?, _ fn: afs_progress_fn?, _ ctx: UnsafeMutableRawPointer?) {
    guard let s = peek(bs, BodyStreamHandle.self)?.stream else { return }
    guard let fn = fn else {
        s.progress = nil
        return
    }
    s.progress = { sent, total in fn(ctx, sent, total) }
}
