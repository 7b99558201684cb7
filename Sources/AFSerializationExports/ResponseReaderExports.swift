// afs_response_reader_*: the sans-I/O HTTP/1.1 response reader (header section 14).
import AFSerialization
import CAFSerialization

import Glibc  // Linux with glibc only, as the core (Sources/AFSerialization/Platform.swift)

/// `afs_response_reader`: the core reader.
final class ResponseReaderHandle: Handle {
    let reader: ResponseReader
    init(_ r: ResponseReader) { reader = r }
    override class var cName: String { "afs_response_reader" }
}

/// Runs `body` on the reader behind `rd` without retaining it (the hot getters and the feed
/// loop); `orElse` for NULL or a handle of another kind.
@inline(__always)
private func withReader<R>(_ rd: OpaquePointer?, orElse: R, _ body: (ResponseReader) throws -> R) rethrows -> R {
    guard let rd = rd else { return orElse }
    return try Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(rd))._withUnsafeGuaranteedRef { h in
        guard type(of: h) == ResponseReaderHandle.self else { return orElse }
        return try body(unsafeDowncast(h, to: ResponseReaderHandle.self).reader)
    }
}

private func readerArg(_ rd: OpaquePointer?) throws -> ResponseReader {
    try unbox(rd, ResponseReaderHandle.self, "reader").reader
}

private func methodArg(_ m: UnsafePointer<CChar>?) throws -> String {
    try stringArg(m, NTS, "request_method")
}

@c @implementation
public func afs_response_reader_new(_ method: UnsafePointer<CChar>?, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) { box(ResponseReaderHandle(try ResponseReader(method: try methodArg(method)))) }
}

@c @implementation
public func afs_response_reader_feed(_ rd: OpaquePointer?, _ bytes: UnsafePointer<UInt8>?, _ len: Int,
                                     _ consumed: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    consumed?.pointee = 0
    return status(err) {
        let b = try dataArg(UnsafeRawPointer(bytes), len, "bytes", lenName: "len")
        let input = UnsafeBufferPointer(start: b.baseAddress?.assumingMemoryBound(to: UInt8.self), count: b.count)
        let done: Bool = try withReader(rd, orElse: false) { r in
            let before = r.offset
            do {
                let n = try r.feed(input)   // not on the right of `consumed?.pointee =`: skipped for NULL
                consumed?.pointee = n
            } catch {
                consumed?.pointee = max(0, r.offset - before)
                throw error
            }
            return true
        }
        if !done { _ = try readerArg(rd) }   // NULL or the wrong kind: its message
    }
}

@c @implementation
public func afs_response_reader_eof(_ rd: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) { try readerArg(rd).eof() }
}

@c @implementation
public func afs_response_reader_reset(_ rd: OpaquePointer?, _ method: UnsafePointer<CChar>?,
                                      _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        // The same method as before (the usual keep-alive loop): no string to make.
        let same = withReader(rd, orElse: false) { r in
            guard let m = method else { return false }
            let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(m).assumingMemoryBound(to: UInt8.self), count: strlen(m))
            guard r.method.utf8.elementsEqual(bytes) else { return false }
            r.resetKeepingMethod()
            return true
        }
        if same { return }
        let r = try readerArg(rd)
        try r.reset(method: try methodArg(method))
    }
}

@c @implementation
public func afs_response_reader_free(_ rd: OpaquePointer?) { release(rd, ResponseReaderHandle.self) }

@c @implementation
public func afs_response_reader_state(_ rd: OpaquePointer?) -> afs_reader_state {
    withReader(rd, orElse: AFS_READER_HEAD) { r in
        switch r.state {
        case .head: return AFS_READER_HEAD
        case .body: return AFS_READER_BODY
        case .done: return AFS_READER_DONE
        }
    }
}

@c @implementation
public func afs_response_reader_status(_ rd: OpaquePointer?) -> Int32 {
    withReader(rd, orElse: 0) { r in r.headComplete ? Int32(r.status) : 0 }
}

@c @implementation
public func afs_response_reader_reason(_ rd: OpaquePointer?) -> UnsafePointer<CChar>? {
    peek(rd, ResponseReaderHandle.self)?.reader.reasonCString
}

@c @implementation
public func afs_response_reader_version(_ rd: OpaquePointer?) -> Int32 {
    guard let r = peek(rd, ResponseReaderHandle.self)?.reader, r.headComplete else { return 0 }
    return Int32(r.version)
}

@c @implementation
public func afs_response_reader_header_count(_ rd: OpaquePointer?) -> Int {
    peek(rd, ResponseReaderHandle.self)?.reader.headerCount ?? 0
}

@c @implementation
public func afs_response_reader_header_name(_ rd: OpaquePointer?, _ i: Int) -> UnsafePointer<CChar>? {
    guard let r = peek(rd, ResponseReaderHandle.self)?.reader, r.headComplete else { return nil }
    return r.nameCString(i)
}

@c @implementation
public func afs_response_reader_header_value(_ rd: OpaquePointer?, _ i: Int) -> UnsafePointer<CChar>? {
    guard let r = peek(rd, ResponseReaderHandle.self)?.reader, r.headComplete else { return nil }
    return r.valueCString(i)
}

@c @implementation
public func afs_response_reader_header(_ rd: OpaquePointer?, _ name: UnsafePointer<CChar>?) -> UnsafePointer<CChar>? {
    guard let r = peek(rd, ResponseReaderHandle.self)?.reader, let name = name else { return nil }
    let n = UnsafeBufferPointer(start: UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self), count: strlen(name))
    return r.headerIndex(n).flatMap { r.valueCString($0) }
}

@c @implementation
public func afs_response_reader_trailer_count(_ rd: OpaquePointer?) -> Int {
    peek(rd, ResponseReaderHandle.self)?.reader.trailerCount ?? 0
}

@c @implementation
public func afs_response_reader_trailer_name(_ rd: OpaquePointer?, _ i: Int) -> UnsafePointer<CChar>? {
    guard let r = peek(rd, ResponseReaderHandle.self)?.reader, r.state == .done else { return nil }
    return r.nameCString(i, trailer: true)
}

@c @implementation
public func afs_response_reader_trailer_value(_ rd: OpaquePointer?, _ i: Int) -> UnsafePointer<CChar>? {
    guard let r = peek(rd, ResponseReaderHandle.self)?.reader, r.state == .done else { return nil }
    return r.valueCString(i, trailer: true)
}

@c @implementation
public func afs_response_reader_set_body_callback(_ rd: OpaquePointer?, _ fn: afs_body_fn?, _ ctx: UnsafeMutableRawPointer?) {
    guard let r = peek(rd, ResponseReaderHandle.self)?.reader else { return }
    guard let fn = fn else {
        r.bodyCallback = nil
        return
    }
    r.bodyCallback = { b in fn(ctx, b.baseAddress, b.count) == 0 }
}

/// A valid pointer for an empty body.
private nonisolated(unsafe) var emptyBody: UInt8 = 0

@c @implementation
public func afs_response_reader_body(_ rd: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<UInt8>? {
    len?.pointee = 0
    guard let r = peek(rd, ResponseReaderHandle.self)?.reader else { return nil }
    let b = r.body.bytes
    len?.pointee = b.count
    if let p = b.baseAddress, b.count > 0 { return UnsafePointer(p) }
    return withUnsafePointer(to: &emptyBody) { $0 }
}

@c @implementation
public func afs_response_reader_set_decodes_content(_ rd: OpaquePointer?, _ on: Bool) {
    peek(rd, ResponseReaderHandle.self)?.reader.decodesContent = on
}

@c @implementation
public func afs_response_reader_set_max_decoded_bytes(_ rd: OpaquePointer?, _ maxBytes: UInt64) {
    peek(rd, ResponseReaderHandle.self)?.reader.maxDecodedBytes = maxBytes == 0 ? nil : maxBytes
}

@c @implementation
public func afs_response_reader_set_limits(_ rd: OpaquePointer?, _ limits: UnsafePointer<afs_reader_limits>?,
                                           _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let r = try readerArg(rd)
        var l = ReaderLimits()
        if let c = limits?.pointee {
            // Values above Int.max arrive negative: they mean "no practical limit".
            func v(_ x: Int, _ d: Int) -> Int { x == 0 ? d : (x < 0 ? Int.max / 4 : min(x, Int.max / 4)) }
            l.maxHeadBytes = v(c.max_head_bytes, l.maxHeadBytes)
            l.maxHeaders = v(c.max_headers, l.maxHeaders)
            l.maxLineLength = v(c.max_line_length, l.maxLineLength)
            l.maxChunkExtension = v(c.max_chunk_extension, l.maxChunkExtension)
        }
        try r.setLimits(l)
    }
}

@c @implementation
public func afs_response_reader_interim_count(_ rd: OpaquePointer?) -> Int {
    peek(rd, ResponseReaderHandle.self)?.reader.interim.count ?? 0
}

@c @implementation
public func afs_response_reader_interim_status(_ rd: OpaquePointer?, _ i: Int) -> Int32 {
    guard let r = peek(rd, ResponseReaderHandle.self)?.reader, i >= 0, i < r.interim.count else { return 0 }
    return Int32(r.interim[i])
}

/// The finished, accumulated response, or `.state`.
private func finished(_ r: ResponseReader, _ what: String) throws -> Void {
    guard r.state == .done else { throw AFSError(.state, "\(what): the response is not complete (state \(r.state))") }
    guard r.bodyCallback == nil else { throw AFSError(.state, "\(what): the body went to the body callback, not accumulated") }
}

@c @implementation
public func afs_response_reader_text(_ rd: OpaquePointer?, _ fallback: UnsafePointer<CChar>?, _ len: UnsafeMutablePointer<Int>?,
                                     _ err: UnsafeMutablePointer<afs_error>?) -> UnsafeMutablePointer<CChar>? {
    len?.pointee = 0
    return pointer(err) {
        let r = try readerArg(rd)
        try finished(r, "afs_response_reader_text")
        let fb = try optionalStringArg(fallback, "fallback_charset")
        let text = try TextDecoding.decode(r.body.bytes, contentType: r.header("Content-Type"), fallback: fb)
        guard let p = text.withUnsafeBytes({ mallocCString($0) }) else {
            throw AFSError.noMemory("the decoded text", bytes: text.count + 1)
        }
        len?.pointee = text.count
        return p
    }
}

@c @implementation
public func afs_response_reader_object(_ rd: OpaquePointer?, _ rs: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                       _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    out?.pointee = nil
    return status(err) {
        let r = try readerArg(rd)
        let h = try unbox(rs, ResponseSerializerHandle.self, "response serializer")
        guard let out = out else { throw AFSError(.invalidArgument, "object is NULL") }
        try finished(r, "afs_response_reader_object")
        let res = h.snapshot.responseParameters(statusCode: r.status, contentType: r.header("Content-Type"), body: r.body.bytes)
        switch res.parameters {
        case .tree(let v)?: out.pointee = box(ValueHandle(v))
        case .document(let d, let node)?: out.pointee = box(try ValueHandle.owning(d, node: node))
        case nil: break
        }
        if let e = res.error { throw e }
    }
}
