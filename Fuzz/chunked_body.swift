// Fuzz target: bodies of unknown length, chunked framing, compression and trailer digests
// (Transforms/, header section 15) driven by a random script.
//
// The script builds a body — a multipart form (fields, in-memory parts, callback parts of
// known and unknown length that yield in random step sizes) or a whole-body source of
// unknown length, or an in-memory body — then maybe a trailer digest (sha-256, sha-512,
// md5) and maybe compression (gzip, deflate, zstd, br, random level 1-3). Properties:
// - any split of the reads (sizes from the script, 1..70000) gives the same bytes as one
//   big read, and a rewind gives them again ("any split = one feed");
// - without compression those bytes equal the same body built with every length known
//   (an independent reference: the same parts as in-memory data);
// - with compression they equal `ContentEncoder.encode` of the uncompressed bytes;
// - `Request.write(to:)` writes a head with `Transfer-Encoding: chunked` (and `Trailer:`
//   when there are trailers) and no Content-Length, then chunked framing that an independent
//   de-chunker splits into exactly those bytes, with trailer fields equal to the digests of
//   those bytes (SHA256/SHA512/MD5 computed here, base64 by an independent encoder);
// - `contentLength` is unknown (BodyPart.unknownLength) exactly when a length is unknown
//   or the body is compressed, and `isChunked` is true.
@testable import AFSerialization

#if canImport(Glibc)
import Glibc
#endif

/// A callback source over bytes, yielding in steps from the script; `known` declares the
/// length (else unknown).
final class StepSource: PartStreamSource {
    let data: [UInt8]
    let steps: [Int]
    var pos = 0, k = 0
    init(_ data: [UInt8], steps: [Int]) {
        self.data = data
        self.steps = steps.isEmpty ? [4096] : steps
    }
    func read(into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let step = steps[k % steps.count]
        k += 1
        let n = Swift.min(maxLength, step, data.count - pos)
        if n > 0 { data.withUnsafeBufferPointer { _ = memcpy(buffer, $0.baseAddress! + pos, n) } }
        pos += n
        return n
    }
    var canRewind: Bool { true }
    func rewind() -> Bool {
        pos = 0
        k = 0
        return true
    }
}

/// Base64 written independently of the library's (RFC 4648 table lookups by arithmetic).
func base64(_ d: [UInt8]) -> String {
    func c(_ v: UInt32) -> Character {
        let v = UInt8(v & 63)
        switch v {
        case 0..<26: return Character(Unicode.Scalar(65 + v))
        case 26..<52: return Character(Unicode.Scalar(97 + v - 26))
        case 52..<62: return Character(Unicode.Scalar(48 + v - 52))
        case 62: return "+"
        default: return "/"
        }
    }
    var s = ""
    var i = 0
    while i < d.count {
        let b0 = UInt32(d[i]), b1 = i + 1 < d.count ? UInt32(d[i + 1]) : 0, b2 = i + 2 < d.count ? UInt32(d[i + 2]) : 0
        let v = b0 << 16 | b1 << 8 | b2
        s.append(c(v >> 18)); s.append(c(v >> 12))
        s.append(i + 1 < d.count ? c(v >> 6) : "=")
        s.append(i + 2 < d.count ? c(v) : "=")
        i += 3
    }
    return s
}

/// Splits chunked framing; nil when it is malformed.
func dechunk(_ w: ArraySlice<UInt8>) -> (body: [UInt8], trailers: [String])? {
    var i = w.startIndex
    func line() -> String? {
        var j = i
        while j + 1 < w.endIndex && !(w[j] == 13 && w[j + 1] == 10) { j += 1 }
        guard j + 1 < w.endIndex else { return nil }
        let s = String(decoding: w[i..<j], as: UTF8.self)
        i = j + 2
        return s
    }
    var body: [UInt8] = []
    while true {
        guard let l = line(), let size = Int(l, radix: 16), size >= 0 else { return nil }
        if size == 0 { break }
        guard i + size + 2 <= w.endIndex, w[i + size] == 13, w[i + size + 1] == 10 else { return nil }
        body += w[i..<(i + size)]
        i += size + 2
    }
    var trailers: [String] = []
    while true {
        guard let l = line() else { return nil }
        if l.isEmpty { break }
        trailers.append(l)
    }
    return i == w.endIndex ? (body, trailers) : nil
}

func readAll(_ s: MultipartBodyStream, sizes: [Int]) -> [UInt8] {
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 70000)
    var k = 0
    while true {
        let want = sizes.isEmpty ? 65536 : sizes[k % sizes.count]
        k += 1
        let n = buf.withUnsafeMutableBufferPointer { s.read(into: $0.baseAddress, maxLength: want) }
        require(n >= 0, "read failed: \(String(describing: s.error))")
        if n == 0 { return out }
        require(n <= want, "read returned \(n) > \(want)")
        out += buf[0..<n]
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var inp = FuzzInput(data, size)
    let kind = inp.below(3)
    var parts: [(bytes: [UInt8], mode: Int, steps: [Int])] = []  // mode 0 memory, 1 known, 2 unknown
    let count = kind == 0 ? 1 + inp.below(4) : 1
    for _ in 0..<count {
        var b = inp.bytes(max: 300)
        if inp.oneIn(4) {  // long, compressible
            let n = inp.below(200_000)
            let seed = inp.byte()
            b += (0..<n).map { UInt8(truncatingIfNeeded: ($0 / 7) &* Int(seed | 1)) & 0x3F }
        }
        let steps = (0..<inp.below(4)).map { _ in 1 + inp.below(9000) }
        // No '-' in parts, so "--fuzzBoundary" cannot occur in them (multipart_stream
        // covers boundary collisions).
        if kind == 0 { b = b.map { $0 == 0x2D ? 0x2E : $0 } }
        parts.append((b, kind == 1 ? 2 : inp.below(3), steps))
    }
    let sizes = (0..<inp.below(5)).map { _ in 1 + inp.below(70000) }
    let digest: DigestAlgorithm? = inp.oneIn(2) ? [.sha256, .sha512, .md5][inp.below(3)] : nil
    let coding: ContentCoding? = inp.oneIn(2) ? ContentCoding.allCases[inp.below(4)] : nil
    let level = Int32(1 + inp.below(3))

    func build(reference: Bool) -> Request {
        do {
            switch kind {
            case 0:
                let f = try RequestSerializer().multipartForm(method: "POST", url: "http://127.0.0.1/up", params: nil)
                try f.setBoundary("fuzzBoundary")
                for (i, p) in parts.enumerated() {
                    if reference || p.mode == 0 {
                        try f.appendFileData(p.bytes, name: "p\(i)", filename: "f\(i)", mimeType: "application/octet-stream")
                    } else {
                        try f.appendStream(StepSource(p.bytes, steps: p.steps),
                                           length: p.mode == 1 ? UInt64(p.bytes.count) : BodyPart.unknownLength,
                                           name: "p\(i)", filename: "f\(i)", mimeType: "application/octet-stream")
                    }
                }
                return try f.finish()
            case 1:
                var r = try Request(method: "PUT", url: "http://127.0.0.1/up")
                if reference { r.body = parts[0].bytes } else {
                    try r.setBodyStream(StepSource(parts[0].bytes, steps: parts[0].steps), length: BodyPart.unknownLength)
                }
                return r
            default:
                var r = try Request(method: "POST", url: "http://127.0.0.1/up")
                r.body = parts[0].bytes
                return r
            }
        } catch {
            fail("building the body failed: \(error)")
        }
    }

    // The reference: every length known, no transforms.
    let ref = build(reference: true)
    let expected: [UInt8] = ref.bodyStream.map { readAll($0, sizes: []) } ?? ref.body ?? []

    var r = build(reference: false)
    do {
        if let d = digest { try r.addDigest(d, trailer: true) }
        if let c = coding { try r.setContentEncoding(c, level: level, exact: false) }
    } catch {
        fail("a transform failed: \(error)")
    }
    let unknown = parts.contains { $0.mode == 2 } && kind != 2
    guard let s = r.bodyStream else {
        require(digest == nil && coding == nil && !unknown, "no body stream for a transformed body")
        return 0
    }
    require(r.isChunked == (unknown || digest != nil || coding != nil), "isChunked")
    require((s.contentLength == BodyPart.unknownLength) == (unknown || coding != nil), "contentLength \(s.contentLength)")
    require(r.header("Content-Length") == nil || !r.isChunked, "a chunked request with a Content-Length header")

    // Any split = one feed; a rewind gives the same bytes.
    let split = readAll(s, sizes: sizes)
    do { try s.rewind() } catch { fail("rewind failed: \(error)") }
    let whole = readAll(s, sizes: [70000])
    require(split == whole, "a split read differs from one read: \(split.count) vs \(whole.count) bytes")
    if let c = coding {
        let once = expected.withUnsafeBytes { b -> [UInt8] in
            guard let enc = try? ContentEncoder.encode(b, coding: c, level: level) else { fail("encode failed") }
            return Array(enc.bytes)
        }
        require(whole == once, "the streamed \(c) body differs from the one-shot encoding")
    } else {
        require(whole == expected, "the body differs from the reference: \(show(whole, max: 80)) vs \(show(expected, max: 80))")
    }

    // The wire: head, chunked framing, trailers.
    var path = Array("/tmp/afs-fuzz-chunked-XXXXXX".utf8CString)
    let fd = path.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    require(fd >= 0, "mkstemp failed")
    path.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    defer { close(fd) }
    var off: UInt64 = 0, written: UInt64 = 0
    do { try r.write(to: fd, offset: &off, written: &written) } catch { fail("write failed: \(error)") }
    var wire = [UInt8](repeating: 0, count: Int(written))
    let got = wire.withUnsafeMutableBytes { pread(fd, $0.baseAddress, Int(written), 0) }
    require(got == Int(written), "read back \(got) of \(written) bytes")
    guard let headEnd = (0..<Swift.max(wire.count - 3, 0)).first(where: { wire[$0] == 13 && wire[$0 + 1] == 10 && wire[$0 + 2] == 13 && wire[$0 + 3] == 10 }) else {
        fail("no end of head")
    }
    let head = String(decoding: wire[0..<headEnd], as: UTF8.self)
    if !r.isChunked {  // a multipart body of known length: plain framing
        require(head.contains("\r\nContent-Length: \(whole.count)\r\n") || head.hasSuffix("\r\nContent-Length: \(whole.count)"),
                "head: \(head)")
        require(Array(wire[(headEnd + 4)...]) == whole, "the length-framed body differs")
        return 0
    }
    require(head.contains("\r\nTransfer-Encoding: chunked") && !head.contains("Content-Length"), "head: \(head)")
    guard let d = dechunk(wire[(headEnd + 4)...]) else { fail("malformed chunked framing") }
    require(d.body == whole, "the de-chunked body differs from the body read")
    if let alg = digest {
        let h: [UInt8]
        switch alg {
        case .sha256: h = SHA256.hash(whole)
        case .sha512: h = SHA512.hash(whole)
        case .md5: h = MD5.hash(whole)
        }
        let field = alg == .md5 ? "Content-MD5: " + base64(h) : "Content-Digest: \(alg.name)=:" + base64(h) + ":"
        require(d.trailers == [field], "trailers \(d.trailers), expected \(field)")
        require(head.contains("\r\nTrailer: " + (alg == .md5 ? "Content-MD5" : "Content-Digest")), "Trailer header")
    } else {
        require(d.trailers.isEmpty, "unexpected trailers \(d.trailers)")
    }
    return 0
}
