/// The request as HTTP/1.1 bytes (RFC 9112), for stacks that write to sockets themselves.
extension Request {
    /// The request head:
    /// - `METHOD target HTTP/1.1`, the target in origin form: the URL's path and query
    ///   (`/` for an empty path), never the fragment;
    /// - `Host:` the URL's authority without userinfo (unless the request sets `Host`
    ///   itself: then that header, in its place, is the only one);
    /// - `Authorization: Basic base64(user:password)` from the URL's userinfo,
    ///   percent-decoded, unless the request sets `Authorization` (then the userinfo is
    ///   dropped: it never reaches the wire otherwise);
    /// - the request's headers in order, but for the framing: exactly one framing that
    ///   matches the bytes that follow. A chunked body (`isChunked`: unknown length,
    ///   compressed while streaming, trailer fields) gets `Transfer-Encoding: chunked` and
    ///   `Trailer:` with the trailer field names; any other body (also an empty one) exactly
    ///   one `Content-Length` with its length; no body, no framing (a request without
    ///   framing has an empty body, RFC 9112 section 6.3). A `Content-Length` among the
    ///   headers (a multipart request's, set by `MultipartForm.finish`) gives its place to
    ///   that line; any other `Content-Length` or `Transfer-Encoding` in `headers` (callers
    ///   cannot set them through `setHeader`; Swift code may through `headers`) is left out;
    /// - an empty line.
    /// C: `afs_request_copy_head`.
    /// - Throws: `.badURL` when the URL has no authority or an empty host (HTTP/1.1 needs a
    ///   Host), `.invalidHeader` for a header that is not safe on the wire.
    public func head() throws -> [UInt8] {
        let ref = try URIReference.parseAbsolute(url)
        guard let host = ref.hostAndPort, let h = ref.host, !h.isEmpty else {
            throw AFSError(.badURL, "the URL \(HTTPSyntax.quote(url)) has no host: an HTTP/1.1 request needs one for its Host header")
        }
        // Everything below fits in this (the Authorization line takes at most 2 x the URL).
        var size = 256 + 3 * url.utf8.count
        for (name, value) in headers { size += name.utf8.count + value.utf8.count + 4 }
        var out: [UInt8] = []
        try out.checkedReserve(size, "the request head")
        func line(_ name: String, _ value: String) {
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: value.utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        out.append(contentsOf: method.utf8)
        out.append(0x20)
        out.append(contentsOf: (ref.path.isEmpty ? "/" : ref.path).utf8)
        if let q = ref.query {
            out.append(0x3F)
            out.append(contentsOf: q.utf8)
        }
        out.append(contentsOf: " HTTP/1.1\r\n".utf8)
        if headers.index(of: "Host") == nil { line("Host", host) }
        if let ui = ref.userinfo, headers.index(of: "Authorization") == nil {
            let decoded = Request.percentDecode(Array(ui.utf8))
            let credentials = decoded.contains(0x3A) ? decoded : decoded + [0x3A]
            var w = ByteWriter(capacity: credentials.count * 4 / 3 + 8)
            credentials.withUnsafeBufferPointer { Base64.encode($0, to: &w) }
            line("Authorization", "Basic " + (try w.toString()))
        }
        // The one framing: chunked, or the length of the bytes `write(to:)` sends after the head.
        let chunked = bodyStream?.isChunked ?? false
        let length: String? = chunked ? nil : (bodyCount.map { String($0) } ?? bodyStream.map { String($0.contentLength) })
        var framed = false
        for (name, value) in headers {
            try HTTPSyntax.validateHeaderName(name)
            if HTTPSyntax.isFramingHeader(name) {
                if let n = length, !framed, asciiLowercased(name) == "content-length" {
                    line("Content-Length", n)
                    framed = true
                }
                continue
            }
            try HTTPSyntax.validateHeaderValue(value, name: name)
            line(name, value)
        }
        if chunked, let s = bodyStream {
            // The body goes out chunked (Transforms/TransformStream.swift): never a
            // Content-Length, and the trailer fields are announced.
            line("Transfer-Encoding", "chunked")
            let names = s.trailerNames
            if !names.isEmpty && headers.index(of: "Trailer") == nil { line("Trailer", names.joined(separator: ", ")) }
        } else if let n = length, !framed {
            line("Content-Length", n)
        }
        out.append(contentsOf: "\r\n".utf8)
        return out
    }

    static func percentDecode(_ u: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(u.count)
        var k = 0
        while k < u.count {
            if u[k] == 0x25, k + 2 < u.count, HTTPSyntax.isHex(u[k + 1]), HTTPSyntax.isHex(u[k + 2]) {
                out.append(HTTPSyntax.hexValue(u[k + 1]) << 4 | HTTPSyntax.hexValue(u[k + 2]))
                k += 3
            } else {
                out.append(u[k])
                k += 1
            }
        }
        return out
    }

    /// Writes the head and the body to a blocking `fd` (a socket, a pipe, a file). Resumable
    /// like `MultipartBodyStream.write(to:written:)`: `offset` is where the request stands
    /// (bytes of head and plain body already written; start with 0 and pass the same
    /// variable again). After a failure, `written` holds the bytes this call wrote and the
    /// next call continues where the failed one stopped; after a complete write `offset` is
    /// 0 again and the next call writes the whole request again (a multipart body is then
    /// sought back to its start). A multipart body goes through the body stream's
    /// writer (`sendfile`/`copy_file_range` for file parts); a chunked one through
    /// `writeChunked` (framing and trailers, file parts still by the kernel inside their
    /// chunks). C: `afs_request_write_to_fd`.
    /// `interruptible`: a signal returns to the caller (`.io` with errno `EINTR`, after an
    /// `EINTR` or a short write to a pipe or socket, which on a blocking descriptor only a
    /// signal causes), resumable exactly as after `EAGAIN`; otherwise EINTR is retried.
    /// - Throws: as `head()`; `.io` (with errno) for a failing write; the body stream's
    ///   errors.
    public func write(to fd: Int32, offset wireOffset: inout UInt64, written: inout UInt64,
                      interruptible: Bool = false) throws {
        written = 0
        let head = try self.head()
        let headCount = UInt64(head.count)
        if wireOffset == 0, let s = bodyStream {
            if s.isChunked { s.resetChunking() }
            if s.position != 0 { try s.seek(to: 0) }
        }
        var st = stat()
        if fstat(fd, &st) != 0 {
            let e = errno
            throw AFSError(.io, "cannot write the request to file descriptor \(fd): \(errorText(e))", osErrno: e)
        }
        var sig = SigpipeGuard(active: (st.st_mode & S_IFMT) != S_IFREG)
        defer { sig.restore() }
        let stopsOnSignal = interruptible && (st.st_mode & S_IFMT) != S_IFREG
        func put(_ bytes: UnsafeBufferPointer<UInt8>, from start: UInt64, what: String) throws {
            var k = Int(start)
            while k < bytes.count {
                var r: Int
                repeat {
                    r = Platform.write(fd, bytes.baseAddress! + k, bytes.count - k)
                } while r < 0 && errno == EINTR && !stopsOnSignal
                if r < 0 {
                    let e = errno
                    if e == EPIPE { sig.sawEPIPE = true }
                    throw AFSError(.io, "writing the request \(what) to file descriptor \(fd) failed at request offset \(wireOffset): \(errorText(e))", osErrno: e)
                }
                let short = r < bytes.count - k
                k += r
                wireOffset += UInt64(r)
                written += UInt64(r)
                if stopsOnSignal && short {
                    throw AFSError(.io, "writing the request \(what) to file descriptor \(fd) was interrupted by a signal at request offset \(wireOffset) (call again to continue)", osErrno: EINTR)
                }
            }
        }
        if wireOffset < headCount {
            try head.withUnsafeBufferPointer { try put($0, from: wireOffset, what: "head") }
        }
        if let n = bodyCount {
            let done = wireOffset - headCount
            if done < UInt64(n) { try withBody { try put($0, from: done, what: "body") } }
        } else if let s = bodyStream, s.isChunked {
            sig.restore()
            var n: UInt64 = 0
            defer {
                written += n
                wireOffset += n
            }
            try s.writeChunked(to: fd, written: &n, interruptible: interruptible || s.returnsOnInterrupt)
            s.resetChunking()
        } else if let s = bodyStream {
            sig.restore()
            var n: UInt64 = 0
            defer { written += n }
            try s.write(to: fd, written: &n, interruptible: interruptible || s.returnsOnInterrupt)
        }
        wireOffset = 0  // complete: the next call starts over
    }
}
