// afs_body_stream_*, afs_request_body_stream and afs_request_write_body_to_file: pulling a
// multipart body.
import AFSerialization

/// `afs_body_stream`: borrowed from its request (`afs_request_body_stream`), never freed
/// by the caller.
final class BodyStreamHandle: Handle {
    let stream: MultipartBodyStream
    init(_ s: MultipartBodyStream) { stream = s }
    override class var cName: String { "afs_body_stream" }
}

/// `void (*)(void *ctx, uint64_t sent, uint64_t total)`
public typealias afs_progress_fn = @convention(c) (UnsafeMutableRawPointer?, UInt64, UInt64) -> Void

@_cdecl("afs_request_body_stream")
public func afs_request_body_stream(_ r: OpaquePointer?) -> OpaquePointer? {
    guard let h = peek(r, RequestHandle.self), let s = h.request.bodyStream else { return nil }
    if h.bodyStreamHandle?.stream !== s { h.bodyStreamHandle = BodyStreamHandle(s) }
    return OpaquePointer(Unmanaged.passUnretained(h.bodyStreamHandle!).toOpaque())
}

@_cdecl("afs_request_write_body_to_file")
public func afs_request_write_body_to_file(_ r: OpaquePointer?, _ path: UnsafePointer<CChar>?,
                                           _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        return box(RequestHandle(try h.request.writingBody(toFile: try stringArg(path, NTS, "path"))))
    }
}

@_cdecl("afs_body_stream_open")
public func afs_body_stream_open(_ bs: OpaquePointer?, _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) { try unbox(bs, BodyStreamHandle.self, "stream").stream.open() }
}

@_cdecl("afs_body_stream_read")
public func afs_body_stream_read(_ bs: OpaquePointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ maxLength: Int) -> Int64 {
    guard let h = peek(bs, BodyStreamHandle.self) else { return -1 }
    // A size_t above Int.max arrives negative: it only means "as much as you have".
    return Int64(h.stream.read(into: buffer, maxLength: maxLength < 0 ? Int.max : maxLength))
}

@_cdecl("afs_body_stream_has_bytes_available")
public func afs_body_stream_has_bytes_available(_ bs: OpaquePointer?) -> Bool {
    peek(bs, BodyStreamHandle.self)?.stream.hasBytesAvailable ?? false
}

@_cdecl("afs_body_stream_content_length")
public func afs_body_stream_content_length(_ bs: OpaquePointer?) -> UInt64 {
    peek(bs, BodyStreamHandle.self)?.stream.contentLength ?? 0
}

@_cdecl("afs_body_stream_close")
public func afs_body_stream_close(_ bs: OpaquePointer?) {
    peek(bs, BodyStreamHandle.self)?.stream.close()
}

@_cdecl("afs_body_stream_error")
public func afs_body_stream_error(_ bs: OpaquePointer?, _ out: UnsafeMutableRawPointer?) -> Int32 {
    status(out) {
        if let e = try unbox(bs, BodyStreamHandle.self, "stream").stream.error { throw e }
    }
}

@_cdecl("afs_body_stream_rewind")
public func afs_body_stream_rewind(_ bs: OpaquePointer?, _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) { try unbox(bs, BodyStreamHandle.self, "stream").stream.rewind() }
}

@_cdecl("afs_body_stream_seek")
public func afs_body_stream_seek(_ bs: OpaquePointer?, _ offset: UInt64, _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) { try unbox(bs, BodyStreamHandle.self, "stream").stream.seek(to: offset) }
}

@_cdecl("afs_body_stream_position")
public func afs_body_stream_position(_ bs: OpaquePointer?) -> UInt64 {
    peek(bs, BodyStreamHandle.self)?.stream.position ?? 0
}

@_cdecl("afs_body_stream_write_to_fd")
public func afs_body_stream_write_to_fd(_ bs: OpaquePointer?, _ fd: Int32, _ written: UnsafeMutablePointer<UInt64>?,
                                        _ err: UnsafeMutableRawPointer?) -> Int32 {
    written?.pointee = 0
    return status(err) {
        let s = try unbox(bs, BodyStreamHandle.self, "stream").stream
        guard fd >= 0 else { throw AFSError(.invalidArgument, "fd \(fd) is not a file descriptor") }
        var n: UInt64 = 0
        defer { written?.pointee = n }
        try s.write(to: fd, written: &n)
    }
}

@_cdecl("afs_body_stream_set_progress")
public func afs_body_stream_set_progress(_ bs: OpaquePointer?, _ fn: afs_progress_fn?, _ ctx: UnsafeMutableRawPointer?) {
    guard let s = peek(bs, BodyStreamHandle.self)?.stream else { return }
    guard let fn = fn else {
        s.progress = nil
        return
    }
    s.progress = { sent, total in fn(ctx, sent, total) }
}

public typealias afs_progress_cancel_fn = @convention(c) (UnsafeMutableRawPointer?, UInt64, UInt64) -> Int32

@_cdecl("afs_body_stream_set_progress_cancel")
public func afs_body_stream_set_progress_cancel(_ bs: OpaquePointer?, _ fn: afs_progress_cancel_fn?, _ ctx: UnsafeMutableRawPointer?) {
    guard let s = peek(bs, BodyStreamHandle.self)?.stream else { return }
    guard let fn = fn else {
        s.shouldCancel = nil
        return
    }
    s.shouldCancel = { sent, total in fn(ctx, sent, total) != 0 }
}
