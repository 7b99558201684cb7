// The body stream's second stage: compression and trailer digests on the way out, and the
// chunked framing (RFC 9112, 7.1) that `Request.write(to:…)` puts around a body whose
// length is not known in advance.
//
// Rules (docs/DESIGN.md, "Body transforms"):
// - A stream with transforms produces its bytes through `TransformState.out` (64 KiB): the
//   raw body is pulled with `fill` in 64 KiB blocks (full blocks except the last), so a
//   compressed body is the same bytes however it is read, and a one-shot encoding
//   (`ContentEncoder.encode`) equals the streamed one.
// - Digests are updated with the bytes as they are delivered (read or written), from byte 0
//   on: such a stream seeks only back to its start (rewind), which starts the digests over.
// - Chunked framing: each chunk is `SIZE-IN-HEX CRLF data CRLF`; the body ends with
//   `0 CRLF`, the trailer fields, and `CRLF`. Without transforms, a file part's body is one
//   chunk sent with sendfile/copy_file_range, and the other bytes go in chunks of at most
//   64 KiB; with transforms, each 64 KiB of output is a chunk. `position` counts body bytes,
//   never framing.

/// The compression a body gets while it streams: coding and effective level.
public struct EncodingSpec: Sendable, Equatable {
    public let coding: ContentCoding
    public let level: Int32
    public init(coding: ContentCoding, level: Int32) {
        self.coding = coding
        self.level = level
    }
}

/// What is done to a streamed body on its way out.
public struct BodyTransforms: Sendable {
    /// Compression while streaming (the body is then chunked), or nil.
    public var encoding: EncodingSpec?
    /// Digests computed while streaming, sent as trailer fields.
    public var trailerDigests: [DigestAlgorithm] = []

    public init() {}

    var isActive: Bool { encoding != nil || !trailerDigests.isEmpty }
}

/// `Content-Digest` (RFC 9530) and `Content-MD5` (RFC 1864) fields for `digests`.
func digestFields(_ digests: [(DigestAlgorithm, [UInt8])]) throws(AFSError) -> [(name: String, value: String)] {
    var fields: [(name: String, value: String)] = []
    var items: [String] = []
    for (alg, d) in digests {
        var w = ByteWriter(capacity: d.count * 4 / 3 + 8)
        d.withUnsafeBufferPointer { Base64.encode($0, to: &w) }
        let b64 = try w.toString()
        if alg == .md5 {
            fields.append(("Content-MD5", b64))
        } else {
            items.append(alg.name + "=:" + b64 + ":")
        }
    }
    if !items.isEmpty { fields.insert(("Content-Digest", items.joined(separator: ", ")), at: 0) }
    return fields
}

/// The names of the fields `digestFields` gives for `algorithms` (for `Trailer:`).
func digestFieldNames(_ algorithms: [DigestAlgorithm]) -> [String] {
    var names: [String] = []
    if algorithms.contains(where: { $0 != .md5 }) { names.append("Content-Digest") }
    if algorithms.contains(.md5) { names.append("Content-MD5") }
    return names
}

/// Per-reader state of the second stage and of the chunked writer.
final class TransformState {
    static let bufferSize = ContentEncoder.blockSize

    var encoder: ContentEncoder?
    var digests: [AnyDigest]
    let algorithms: [DigestAlgorithm]
    /// Raw input for the encoder: `inBuf[inStart ..< inStart+inCount]`.
    let inBuf: UnsafeMutablePointer<UInt8>?
    var inStart = 0, inCount = 0
    /// The raw body has ended (its last block is in `inBuf`).
    var rawEnded = false
    /// Produced, not yet delivered bytes: `out[outStart ..< outStart+outCount]`.
    let out: UnsafeMutablePointer<UInt8>
    var outStart = 0, outCount = 0
    /// Nothing more will be produced after `out`.
    var ended = false
    /// The trailer fields, once the last byte has been delivered.
    var trailerFields: [(name: String, value: String)]?

    // Chunked framing.
    var frame: [UInt8] = []
    var frameAt = 0
    var chunkLeft: UInt64 = 0
    var chunkFromFile = false
    var needCRLF = false
    var lastChunkQueued = false

    init(_ t: BodyTransforms) throws(AFSError) {
        let size = TransformState.bufferSize
        guard let o = afsMalloc(size) else { throw AFSError.noMemory("the body stream's output buffer", bytes: size) }
        out = o.assumingMemoryBound(to: UInt8.self)
        if let e = t.encoding {
            guard let i = afsMalloc(size) else {
                free(o)
                throw AFSError.noMemory("the body stream's compression buffer", bytes: size)
            }
            inBuf = i.assumingMemoryBound(to: UInt8.self)
            do {
                encoder = try ContentEncoder(e.coding, level: e.level)
            } catch {
                free(o)
                free(i)
                throw error
            }
        } else {
            inBuf = nil
        }
        algorithms = t.trailerDigests
        digests = t.trailerDigests.map { AnyDigest($0) }
    }

    deinit {
        free(out)
        free(inBuf)
    }

    func reset() throws(AFSError) {
        try encoder?.reset()
        digests = algorithms.map { AnyDigest($0) }
        inStart = 0; inCount = 0; rawEnded = false
        outStart = 0; outCount = 0; ended = false
        trailerFields = nil
        resetChunking()
    }

    func resetChunking() {
        frame = []; frameAt = 0; chunkLeft = 0
        chunkFromFile = false; needCRLF = false; lastChunkQueued = false
    }

    func queueFrame(_ s: String) {
        if frameAt == frame.count {
            frame.removeAll(keepingCapacity: true)
            frameAt = 0
        }
        frame.append(contentsOf: s.utf8)
    }
}

extension MultipartBodyStream {
    /// Compression or trailer digests are on.
    var hasTransforms: Bool { layout.transforms.isActive }

    /// The body goes out with chunked framing: its length is unknown, it is compressed while
    /// it streams, or it has trailer fields.
    public var isChunked: Bool { layout.contentLength == BodyPart.unknownLength || hasTransforms }

    /// The trailer fields (`Content-Digest`, `Content-MD5`) once the whole body has been
    /// delivered from its start; nil before. C: `afs_request_copy_trailers`.
    public var trailerFields: [(name: String, value: String)]? {
        guard !layout.transforms.trailerDigests.isEmpty else { return nil }
        return transformState?.trailerFields
    }

    /// The names announced in `Trailer:`.
    public var trailerNames: [String] { digestFieldNames(layout.transforms.trailerDigests) }

    func transforms() throws(AFSError) -> TransformState {
        if let t = transformState { return t }
        let t = try TransformState(layout.transforms)
        transformState = t
        return t
    }

    /// The end has been delivered (for `hasBytesAvailable`).
    var transformedAtEnd: Bool {
        guard hasTransforms else { return phase == .end }
        guard let t = transformState else { return false }
        return t.ended && t.outCount == 0
    }

    /// Produces the next bytes into `t.out` (which must be empty).
    func refill(_ t: TransformState) throws {
        t.outStart = 0
        t.outCount = 0
        guard let enc = t.encoder, let inBuf = t.inBuf else {
            let n = try fill(t.out, TransformState.bufferSize)
            t.outCount = n
            if n == 0 { t.ended = true }
            return
        }
        if t.inCount == 0 && !t.rawEnded {
            let n = try fill(inBuf, TransformState.bufferSize)
            t.inStart = 0
            t.inCount = n
            if n < TransformState.bufferSize { t.rawEnded = true }
        }
        let (c, p) = try enc.compress(UnsafeRawBufferPointer(start: inBuf + t.inStart, count: t.inCount), finish: t.rawEnded,
                                      into: t.out, capacity: TransformState.bufferSize)
        t.inStart += c
        t.inCount -= c
        t.outCount = p
        if enc.isFinished { t.ended = true }
    }

    /// Up to `limit` bytes of the transformed body; 0 at its end.
    func produce(_ buf: UnsafeMutablePointer<UInt8>, _ limit: Int) throws -> Int {
        let t = try transforms()
        while true {
            if t.outCount > 0 {
                let k = Swift.min(t.outCount, limit)
                memcpy(buf, t.out + t.outStart, k)
                t.outStart += k
                t.outCount -= k
                return k
            }
            if t.ended {
                try finishDigests(t)
                return 0
            }
            try refill(t)
        }
    }

    /// Bytes handed to the caller: the digests see them.
    @inline(__always)
    func delivered(_ bytes: UnsafeRawBufferPointer) {
        guard let t = transformState, !t.digests.isEmpty else { return }
        for i in t.digests.indices { t.digests[i].update(bytes) }
    }

    func finishDigests(_ t: TransformState) throws(AFSError) {
        guard t.trailerFields == nil else { return }
        var results: [(DigestAlgorithm, [UInt8])] = []
        for i in t.digests.indices { results.append((t.digests[i].algorithm, t.digests[i].finalize())) }
        t.trailerFields = try digestFields(results)
    }

    /// `seek` for streams with transforms or of unknown length: only back to the start
    /// (or to where the stream is). Returns true when handled.
    func seekTransformed(to target: UInt64) throws -> Bool {
        let unknown = layout.contentLength == BodyPart.unknownLength
        guard hasTransforms || unknown else { return false }
        if target == 0 {
            transformState?.resetChunking()
            guard hasTransforms else { return false }  // the plain seek handles the start
            for part in parts {
                if case .stream(let source) = part.source, !source.canRewind, part.consumed > 0 { throw cannotRewind(part) }
            }
            closeFile()
            dropCarry()
            partIndex = 0
            phase = .boundary
            offset = 0
            position = 0
            error = nil
            do { try transformState?.reset() } catch {
                self.error = error
                throw error
            }
            return true
        }
        if target == position && error == nil { return true }
        throw AFSError(.unsupported, "cannot seek to byte \(target) of a body that is \(hasTransforms ? "compressed or digested while it streams" : "of unknown length"): only back to its start (rewind)")
    }

    /// `write(to:written:)` for a stream with transforms: the produced bytes, written as
    /// they come (resumable after a failing destination like the plain path).
    func writeTransformed(to out: Int32, written: inout UInt64, _ sig: inout SigpipeGuard) throws {
        let t = try source { try transforms() }
        while true {
            if t.outCount == 0 {
                if t.ended {
                    try source { try finishDigests(t) }
                    return
                }
                try source { try refill(t) }
                continue
            }
            let wanted = Swift.min(t.outCount, packetSize)
            let r = try writeSome(out, t.out + t.outStart, wanted, &sig)
            delivered(UnsafeRawBufferPointer(start: t.out + t.outStart, count: r))
            t.outStart += r
            t.outCount -= r
            position += UInt64(r)
            written += UInt64(r)
            if stopsOnSignal && r < wanted { throw interruptedError(out) }
            if report(), let e = error { throw e }
            if delay > 0 { MultipartBodyStream.sleep(delay) }
        }
    }

    /// Writes the rest of the body with chunked framing and the trailer fields to a
    /// blocking `out`. Resumable: after a failing destination the next call goes on where
    /// this one stopped (framing included); a failing source is sticky, and leaves the
    /// receiver with an incomplete chunk (the connection cannot be reused). `written`
    /// counts every byte written, framing included; `position` only body bytes.
    /// `interruptible`: a signal returns to the caller (`.io`, errno `EINTR`), resumable as
    /// after `EAGAIN`. Used by `Request.write(to:offset:written:interruptible:)`.
    public func writeChunked(to out: Int32, written: inout UInt64, interruptible: Bool = false) throws {
        written = 0
        let regular = try beginWrite(to: out)
        var sig = SigpipeGuard(active: !regular)
        defer { sig.restore() }
        // Interruptible (as `write(to:written:interruptible:)`): an EINTR, or a short write to
        // a pipe or socket, returns to the caller once the bytes written are counted.
        let stopsOnSignal = interruptible && !regular
        self.stopsOnSignal = stopsOnSignal
        defer { self.stopsOnSignal = false }
        let t = try source { try transforms() }
        let plain = !hasTransforms
        var kernel = true
        while true {
            // 1. Framing waiting to be written.
            if t.frameAt < t.frame.count {
                let wanted = t.frame.count - t.frameAt
                let r = try t.frame.withUnsafeMutableBufferPointer { f in
                    try writeSome(out, f.baseAddress! + t.frameAt, f.count - t.frameAt, &sig)
                }
                t.frameAt += r
                written += UInt64(r)
                if stopsOnSignal && r < wanted { throw interruptedError(out) }
                continue
            }
            if t.lastChunkQueued { return }
            // 2. The data of the current chunk.
            if t.chunkLeft > 0 {
                var did = 0
                var wanted = 0  // what the write asked for (a short write is a signal when interruptible)
                if t.chunkFromFile {
                    let part = parts[partIndex]
                    if fd < 0 { try source { try openFile(part) } }
                    let want = Int(Swift.min(t.chunkLeft, UInt64(Swift.min(packetSize, MultipartBodyStream.writeStep))))
                    guard let step = try fileStep(part, to: out, regular: regular, want, kernel: &kernel, &sig) else { continue }
                    (did, wanted) = step
                    offset += UInt64(did)
                } else {
                    let k = Int(Swift.min(UInt64(Swift.min(t.outCount, packetSize)), t.chunkLeft))
                    did = try writeSome(out, t.out + t.outStart, k, &sig)
                    wanted = k
                    if !plain { delivered(UnsafeRawBufferPointer(start: t.out + t.outStart, count: did)) }
                    t.outStart += did
                    t.outCount -= did
                }
                t.chunkLeft -= UInt64(did)
                if t.chunkLeft == 0 { t.needCRLF = true }
                position += UInt64(did)
                written += UInt64(did)
                if stopsOnSignal && did < wanted { throw interruptedError(out) }
                if report(), let e = error { throw e }
                if delay > 0 { MultipartBodyStream.sleep(delay) }
                continue
            }
            // 3. The next chunk.
            var size = 0
            if plain {
                let part = parts[partIndex]
                if phase == .body, case .file = part.source, offset < part.length {
                    if fd < 0 { try source { try openFile(part) } }
                    t.chunkFromFile = true
                    t.chunkLeft = part.length - offset
                    queueChunkHeader(t, t.chunkLeft)
                    kernel = true
                    continue
                }
                fillStopsAtFiles = true
                defer { fillStopsAtFiles = false }
                let n = try source { try fill(t.out, TransformState.bufferSize) }
                t.outStart = 0
                t.outCount = n
                if n == 0 && phase != .end { continue }  // at a file part's body
                size = n
            } else {
                if t.outCount == 0 {
                    if !t.ended {
                        try source { try refill(t) }
                        continue
                    }
                    try source { try finishDigests(t) }
                }
                size = t.outCount
            }
            if size == 0 {
                var s = t.needCRLF ? "\r\n0\r\n" : "0\r\n"
                for (name, value) in trailerFields ?? [] { s += name + ": " + value + "\r\n" }
                s += "\r\n"
                t.needCRLF = false
                t.queueFrame(s)
                t.lastChunkQueued = true
                continue
            }
            t.chunkFromFile = false
            t.chunkLeft = UInt64(size)
            queueChunkHeader(t, t.chunkLeft)
        }
    }

    private func queueChunkHeader(_ t: TransformState, _ size: UInt64) {
        t.queueFrame((t.needCRLF ? "\r\n" : "") + String(size, radix: 16) + "\r\n")
        t.needCRLF = false
    }

    /// Starts the chunked writer over (a new request write from byte 0).
    func resetChunking() { transformState?.resetChunking() }

    /// The digests of the whole body as sent (read once through a reader of its own).
    /// - Throws: the body's errors.
    public func digestOfBody(_ algorithms: [DigestAlgorithm]) throws -> [(DigestAlgorithm, [UInt8])] {
        let reader = makeReader()
        var ds = algorithms.map { AnyDigest($0) }
        let size = TransformState.bufferSize
        guard let buf = afsMalloc(size)?.assumingMemoryBound(to: UInt8.self) else {
            throw AFSError.noMemory("a buffer for the body's digest", bytes: size)
        }
        defer { free(buf) }
        while true {
            let n = reader.read(into: buf, maxLength: size)
            if n < 0 { throw reader.error ?? AFSError(.io, "reading the body for its digest failed") }
            if n == 0 { break }
            for i in ds.indices { ds[i].update(UnsafeRawBufferPointer(start: buf, count: n)) }
        }
        return ds.indices.map { (algorithms[$0], ds[$0].finalize()) }
    }
}
