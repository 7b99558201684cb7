// afs_body_stream_*, afs_request_body_stream and afs_request_write_body_to_file: pulling a
// multipart body.
import AFSerialization
import CAFSerialization

/// `afs_body_stream`: borrowed from its request (`afs_request_body_stream`), never freed
/// by the caller.
final class BodyStreamHandle: Handle {
    let stream: MultipartBodyStream
    /// The request that owns this handle (and outlives it).
    unowned(unsafe) let owner: RequestHandle
    /// Why the last call was refused without touching the stream (a call from inside one of
    /// the stream's own callbacks); afs_body_stream_error reports it when the stream has no
    /// sticky error. Cleared by the next call that runs.
    var refusal: AFSError?
    var closeDeferred = false
    init(_ s: MultipartBodyStream, owner: RequestHandle) {
        stream = s
        self.owner = owner
    }
    override class var cName: String { "afs_body_stream" }
}

// MARK: - Re-entrancy

/// A call on a request or its body stream from inside one of their callbacks (read, rewind,
/// release, progress) is refused with AFS_E_STATE; afs_request_free and
/// afs_body_stream_close from there are deferred to the end of the running call.
func reentrancyError(_ call: String) -> AFSError {
    AFSError(.state, "\(call) was called from inside a callback of the same request or body stream (re-entrant calls are refused; afs_request_free and afs_body_stream_close are deferred)")
}

/// Runs `body` as the one running call on `r` (and its stream); nil when another call on it
/// is running (the caller refuses). Applies a deferred close or free at the end.
func exclusive<R>(_ r: RequestHandle, _ body: () throws -> R) rethrows -> R? {
    if r.busy > 0 { return nil }
    r.busy += 1
    defer {
        r.busy -= 1
        if r.busy == 0 {
            if let b = r.bodyStreamHandle, b.closeDeferred {
                b.closeDeferred = false
                b.stream.close()
            }
            if r.freeDeferred {
                r.freeDeferred = false
                Unmanaged.passUnretained(r).release()  // the caller's reference (box) ends here
            }
        }
    }
    return try body()
}

/// `exclusive` for a stream call that returns a status.
private func streamCall(_ bs: OpaquePointer?, _ call: String, _ err: UnsafeMutablePointer<afs_error>?,
                        _ body: (BodyStreamHandle) throws -> Void) -> afs_status {
    status(err) {
        let h = try unbox(bs, BodyStreamHandle.self, "stream")
        let ran: Void? = try exclusive(h.owner) {
            h.refusal = nil
            try body(h)
        }
        if ran == nil {
            h.refusal = reentrancyError(call)
            throw h.refusal!
        }
    }
}

@c @implementation
public func afs_request_body_stream(_ r: OpaquePointer?) -> OpaquePointer? {
    guard let h = peek(r, RequestHandle.self), let s = h.request.bodyStream else { return nil }
    if h.bodyStreamHandle?.stream !== s {
        // A body transform gave the request a new stream: the old handle stays readable
        // (detached) until the request is freed.
        if let old = h.bodyStreamHandle { h.retiredStreamHandles.append(old) }
        h.bodyStreamHandle = BodyStreamHandle(s, owner: h)
    }
    return lend(h.bodyStreamHandle!)
}

@c @implementation
public func afs_request_write_body_to_file(_ r: OpaquePointer?, _ path: UnsafePointer<CChar>?,
                                           _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        let p = try stringArg(path, NTS, "path")
        guard let written = try exclusive(h, { try h.request.writingBody(toFile: p) }) else {
            throw reentrancyError("afs_request_write_body_to_file")
        }
        return box(RequestHandle(written))
    }
}

@c @implementation
public func afs_body_stream_open(_ bs: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    streamCall(bs, "afs_body_stream_open", err) { try $0.stream.open() }
}

@c @implementation
public func afs_body_stream_read(_ bs: OpaquePointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ maxLength: Int) -> Int64 {
    guard let h = peek(bs, BodyStreamHandle.self) else { return -1 }
    let n = exclusive(h.owner) { () -> Int64 in
        h.refusal = nil
        // max_length is a buffer capacity: a size_t above INT64_MAX only means "as much
        // as you have".
        return Int64(h.stream.read(into: buffer, maxLength: maxLength < 0 ? Int.max : maxLength))
    }
    guard let n = n else {
        h.refusal = reentrancyError("afs_body_stream_read")
        return -1
    }
    return n
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
    guard let h = peek(bs, BodyStreamHandle.self) else { return }
    if exclusive(h.owner, { h.stream.close() }) == nil { h.closeDeferred = true }
}

@c @implementation
public func afs_body_stream_error(_ bs: OpaquePointer?, _ out: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(out) {
        let h = try unbox(bs, BodyStreamHandle.self, "stream")
        if let e = h.stream.error ?? h.refusal { throw e }
    }
}

@c @implementation
public func afs_body_stream_rewind(_ bs: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    streamCall(bs, "afs_body_stream_rewind", err) {
        try $0.stream.rewind()
        // The body starts over, so does the request: afs_request_write_to_fd writes the
        // head again (after a failing source, a retry goes on a new connection).
        $0.owner.wireOffset = 0
    }
}

@c @implementation
public func afs_body_stream_seek(_ bs: OpaquePointer?, _ offset: UInt64, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    streamCall(bs, "afs_body_stream_seek", err) { try $0.stream.seek(to: offset) }
}

@c @implementation
public func afs_body_stream_position(_ bs: OpaquePointer?) -> UInt64 {
    peek(bs, BodyStreamHandle.self)?.stream.position ?? 0
}

@c @implementation
public func afs_body_stream_write_to_fd(_ bs: OpaquePointer?, _ fd: Int32, _ written: UnsafeMutablePointer<UInt64>?,
                                        _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    written?.pointee = 0
    return streamCall(bs, "afs_body_stream_write_to_fd", err) { h in
        guard fd >= 0 else { throw AFSError(.invalidArgument, "fd \(fd) is not a file descriptor") }
        var n: UInt64 = 0
        defer { written?.pointee = n }
        try h.stream.write(to: fd, written: &n)
    }
}

@c @implementation
public func afs_body_stream_set_interruptible(_ bs: OpaquePointer?, _ interruptible: Bool) {
    guard let h = peek(bs, BodyStreamHandle.self) else { return }
    _ = exclusive(h.owner) { h.stream.returnsOnInterrupt = interruptible }  // from inside a callback: ignored
}

@c @implementation
public func afs_body_stream_set_progress(_ bs: OpaquePointer?, _ fn: afs_progress_fn?, _ ctx: UnsafeMutableRawPointer?) {
    guard let h = peek(bs, BodyStreamHandle.self) else { return }
    // From inside a callback: ignored (the running call keeps the callback it started with).
    _ = exclusive(h.owner) {
        h.stream.progress = fn.map { fn in { sent, total in fn(ctx, sent, total) } }
    }
}

@c @implementation
public func afs_body_stream_set_progress_cancel(_ bs: OpaquePointer?, _ fn: afs_progress_cancel_fn?, _ ctx: UnsafeMutableRawPointer?) {
    guard let h = peek(bs, BodyStreamHandle.self) else { return }
    // From inside a callback: ignored (the running call keeps the callback it started with).
    _ = exclusive(h.owner) {
        h.stream.shouldCancel = fn.map { fn in { sent, total in fn(ctx, sent, total) != 0 } }
    }
}
