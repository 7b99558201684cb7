// Bodies of unknown length, compressed bodies and body digests on a request.
//
// Rules (include/afserialization.h section 15, docs/DESIGN.md "Body transforms"):
// - A request's body is either in memory (`body`, with an exact Content-Length) or streams
//   (`bodyStream`: multipart, a body source, or an in-memory body that is compressed or
//   chunked while it streams). Compression without `exact` and trailer digests turn an
//   in-memory body into a stream of one in-memory part.
// - A digest is over the content as sent: after compression, whichever call came first
//   (a header digest is computed again when the body is compressed later).
// - The request's own `Content-Length` header follows: set for an exact length, removed for
//   a chunked body.

/// What a request remembers about its body transforms.
public struct RequestTransformSettings: Sendable, Equatable {
    /// Digests kept in the header list (`Content-Digest`, `Content-MD5`), in call order.
    public var headerDigests: [DigestAlgorithm] = []
    /// Where `exact` compression of a streamed body puts its temporary file; nil: `TMPDIR`,
    /// else `/tmp`. C: `afs_request_set_temp_dir`.
    public var temporaryDirectory: String?
    /// Set once the library compressed the body (a second compression is refused).
    public var encoding: ContentCoding?

    public init() {}

    var isUsed: Bool { !headerDigests.isEmpty || encoding != nil }
}

/// A temporary file removed when the last body that uses it goes away.
final class TemporaryFile {
    let path: String
    let fd: Int32

    /// Creates `dir/.afs-body-RANDOM.tmp` (mode 0600, O_EXCL).
    init(in dir: String) throws(AFSError) {
        var g = SystemRandomNumberGenerator()
        var fd: Int32 = -1
        var p = ""
        for _ in 0..<16 {
            p = (dir.hasSuffix("/") ? dir : dir + "/") + ".afs-body-" + String(g.next() as UInt64, radix: 16) + ".tmp"
            repeat { fd = Platform.open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) } while fd < 0 && errno == EINTR
            if fd >= 0 || errno != EEXIST { break }
        }
        if fd < 0 {
            let e = errno
            throw AFSError(.io, "cannot create a temporary file in \"\(dir)\" for the compressed body: \(errorText(e))", osErrno: e)
        }
        self.fd = fd
        path = p
    }

    deinit {
        if fd >= 0 { Platform.close(fd) }
        unlink(path)
    }

    static func defaultDirectory() -> String {
        if let t = getenv("TMPDIR"), t.pointee != 0 { return String(cString: t) }
        return "/tmp"
    }
}

extension Request {
    /// True when the body goes out with `Transfer-Encoding: chunked`: a source of unknown
    /// length, compression while streaming, or trailer digests. C: `afs_request_is_chunked`.
    public var isChunked: Bool { bodyStream?.isChunked ?? false }

    /// Makes the body a caller's source (`afs_request_set_body_stream`): `length` bytes, or
    /// `BodyPart.unknownLength` (read until the source returns 0; sent chunked). Replaces
    /// any body; a known length sets `Content-Length`, an unknown one removes it.
    /// - Throws: `.state` after `setContentEncoding`/`addDigest` (set the body first),
    ///   `.noMemory`.
    public mutating func setBodyStream(_ source: PartStreamSource, length: UInt64) throws {
        guard !transformSettings.isUsed else {
            throw AFSError(.state, "the request's body is already compressed or digested: set the body source first")
        }
        let part = try BodyPart(wholeBody: .stream(source), length: length, label: "the body source")
        let layout = try MultipartBodyStream.Layout(parts: [part], boundary: "", raw: true, transforms: BodyTransforms(), keepAlive: nil)
        bodyStream = MultipartBodyStream(layout: layout)
        headers.set("Content-Length", length == BodyPart.unknownLength ? nil : String(length))
    }

    /// The body as a stream: the current one, or the in-memory body as one part.
    /// - Throws: `.state` without a body.
    mutating func streamingBody(_ what: String) throws -> MultipartBodyStream {
        if let s = bodyStream { return s }
        guard let block = try withBody({ b throws(AFSError) -> ByteBlock in try ByteBlock(UnsafeRawBufferPointer(b), what: "the request body") }) else {
            throw AFSError(.state, "the request has no body to \(what)")
        }
        let part = try BodyPart(wholeBody: .memory(block), length: UInt64(block.count), label: "the request body")
        let s = MultipartBodyStream(layout: try MultipartBodyStream.Layout(parts: [part], boundary: "", raw: true, transforms: BodyTransforms(), keepAlive: nil))
        s.packetSize = Int.max
        return s
    }

    /// A stream over the same parts with other transforms (packet size and delay kept).
    static func restream(_ s: MultipartBodyStream, _ t: BodyTransforms) throws -> MultipartBodyStream {
        let l = s.layout
        let n = MultipartBodyStream(layout: try MultipartBodyStream.Layout(parts: l.parts, boundary: l.boundary, raw: l.isRaw, transforms: t, keepAlive: l.keepAlive))
        n.packetSize = s.packetSize
        n.delay = s.delay
        return n
    }

    /// Compresses the body with `coding` (`afs_request_set_content_encoding`) and sets
    /// `Content-Encoding`. Without `exact` the body is compressed while it streams (chunked,
    /// in constant memory, also an in-memory body). With `exact` it is compressed once now:
    /// an in-memory body in memory, a streamed one into a temporary file in
    /// `transformSettings.temporaryDirectory` (removed when the request goes away), so the
    /// request has an exact `Content-Length` (and file bodies still go by `sendfile`).
    /// Header digests are computed again over the compressed body.
    /// - Throws: `.state` without a body, when the request already has a
    ///   `Content-Encoding`, or when it was compressed before; `.invalidArgument` for a level
    ///   out of range; `.noMemory`; with `exact`, `.io` for the temporary file and the
    ///   body's own errors.
    public mutating func setContentEncoding(_ coding: ContentCoding, level: Int32, exact: Bool) throws {
        if transformSettings.encoding != nil {
            throw AFSError(.state, "the request body is already compressed (\(transformSettings.encoding!.rawValue))")
        }
        if let existing = headers["Content-Encoding"] {
            throw AFSError(.state, "the request already has Content-Encoding: \(existing)")
        }
        let level = try coding.checkedLevel(level)
        let spec = EncodingSpec(coding: coding, level: level)
        if exact {
            if let s = bodyStream {
                var t = BodyTransforms()
                t.encoding = spec
                let encoder = try Request.restream(s, t)
                encoder.packetSize = Int.max
                encoder.delay = 0
                let dir = transformSettings.temporaryDirectory ?? TemporaryFile.defaultDirectory()
                let tmp = try TemporaryFile(in: dir)
                var n: UInt64 = 0
                do {
                    try encoder.write(to: tmp.fd, written: &n)
                } catch var e as AFSError {
                    e.message = "compressing the body into a temporary file in \"\(dir)\": " + e.message
                    throw e
                }
                let part = try BodyPart(wholeBody: .file(path: tmp.path), length: n, label: "the compressed body")
                var keep = BodyTransforms()
                keep.trailerDigests = s.layout.transforms.trailerDigests
                let layout = try MultipartBodyStream.Layout(parts: [part], boundary: "", raw: true, transforms: keep, keepAlive: tmp)
                let out = MultipartBodyStream(layout: layout)
                out.packetSize = s.packetSize
                out.delay = s.delay
                bodyStream = out
                headers.set("Content-Length", out.isChunked ? nil : String(n))
            } else {
                guard let compressed = try withBody({ b throws(AFSError) -> ByteBuffer in
                    try ContentEncoder.encode(UnsafeRawBufferPointer(b), coding: coding, level: level)
                }) else {
                    throw AFSError(.state, "the request has no body to compress")
                }
                bodyBuffer = compressed
                headers.set("Content-Length", String(compressed.count))
            }
        } else {
            let s = try streamingBody("compress")
            var t = s.layout.transforms
            t.encoding = spec
            bodyStream = try Request.restream(s, t)
            headers.set("Content-Length", nil)
        }
        headers.set("Content-Encoding", coding.rawValue)
        transformSettings.encoding = coding
        try updateHeaderDigests()
    }

    /// Adds a digest of the body as sent (`afs_request_add_digest`): in the header list now
    /// (`trailer` false: an in-memory body is hashed directly, a streamed one is read once,
    /// file parts included), or as a trailer field computed while the body streams (the
    /// request becomes chunked). `Content-Digest: sha-256=:…:` (RFC 9530; several
    /// algorithms share one field) or `Content-MD5` (RFC 1864). Adding one twice is a
    /// no-op.
    /// - Throws: `.state` without a body; `.unsupported` for a header digest over a body
    ///   with a read callback that cannot rewind (use a trailer); the body's errors.
    public mutating func addDigest(_ algorithm: DigestAlgorithm, trailer: Bool) throws {
        if trailer {
            let s = try streamingBody("digest")
            var t = s.layout.transforms
            if t.trailerDigests.contains(algorithm) && s === bodyStream { return }
            if !t.trailerDigests.contains(algorithm) { t.trailerDigests.append(algorithm) }
            bodyStream = try Request.restream(s, t)
            headers.set("Content-Length", nil)
            return
        }
        if bodyStream == nil && bodyCount == nil { throw AFSError(.state, "the request has no body to digest") }
        if let s = bodyStream {
            for p in s.parts {
                if case .stream(let src) = p.source, !src.canRewind {
                    throw AFSError(.unsupported, "\(p.label): its read callback has no rewind function, so the body cannot be read for a header digest and again for sending (use a trailer digest)")
                }
            }
        }
        if transformSettings.headerDigests.contains(algorithm) { return }
        transformSettings.headerDigests.append(algorithm)
        do {
            try updateHeaderDigests()
        } catch {
            transformSettings.headerDigests.removeLast()
            throw error
        }
    }

    /// Recomputes the header digests over the body as it is now.
    mutating func updateHeaderDigests() throws {
        let algs = transformSettings.headerDigests
        guard !algs.isEmpty else { return }
        let results: [(DigestAlgorithm, [UInt8])]
        if let s = bodyStream {
            results = try s.digestOfBody(algs)
        } else {
            results = withBody { b in
                algs.map { alg -> (DigestAlgorithm, [UInt8]) in
                    var d = AnyDigest(alg)
                    d.update(UnsafeRawBufferPointer(b))
                    return (alg, d.finalize())
                }
            } ?? []
        }
        for (name, value) in try digestFields(results) { headers.set(name, value) }
    }
}

/// A serializer-wide compression of request bodies (Alamofire's `DeflateRequestCompressor`
/// generalized): every request with a body of at least `minimumSize` bytes (a body of
/// unknown length always) is compressed with `coding` at `level`, `exact` or chunked as in
/// `Request.setContentEncoding`. C: `afs_serializer_set_content_encoding`.
public struct SerializerCompression: Sendable, Equatable {
    /// What to do with a request that already has a `Content-Encoding` (Alamofire's
    /// `DuplicateHeaderBehavior`).
    public enum Existing: Int32, Sendable {
        /// The request fails with `.state`.
        case error = 0
        /// The header is replaced: the body (taken as it is) is compressed.
        case replace = 1
        /// The request is left as it is.
        case skip = 2
    }

    public var coding: ContentCoding
    public var level: Int32
    public var exact: Bool
    public var existing: Existing
    public var minimumSize: UInt64

    /// - Throws: `.invalidArgument` for a level out of range.
    public init(coding: ContentCoding, level: Int32, exact: Bool, existing: Existing, minimumSize: UInt64) throws(AFSError) {
        _ = try coding.checkedLevel(level)
        self.coding = coding
        self.level = level
        self.exact = exact
        self.existing = existing
        self.minimumSize = minimumSize
    }

    /// The request compressed by these rules (unchanged without a body or below the size).
    /// - Throws: `.state` for an existing `Content-Encoding` under `.error`; the errors of
    ///   `Request.setContentEncoding`.
    public func apply(to request: Request) throws -> Request {
        let size: UInt64
        if let s = request.bodyStream {
            size = s.contentLength
        } else if let n = request.bodyCount {
            size = UInt64(n)
        } else {
            return request
        }
        if size != BodyPart.unknownLength && size < minimumSize { return request }
        var r = request
        if let existing = r.headers["Content-Encoding"] {
            switch self.existing {
            case .error:
                throw AFSError(.state, "the request already has Content-Encoding: \(existing) (the serializer's rule for an existing Content-Encoding is \"error\")")
            case .skip:
                return request
            case .replace:
                r.headers.set("Content-Encoding", nil)
            }
        }
        try r.setContentEncoding(coding, level: level, exact: exact)
        return r
    }
}
