import Foundation
import XCTest
@testable import AFSerialization

/// A source of unknown length: yields its bytes in reads of at most `step`, then 0.
final class UnknownLengthSource: PartStreamSource {
    let data: [UInt8]
    var pos = 0
    let step: Int
    var failAt: Int?
    let canRewind: Bool
    init(_ data: [UInt8], step: Int = 1000, canRewind: Bool = true) {
        self.data = data
        self.step = step
        self.canRewind = canRewind
    }
    func read(into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        if let f = failAt, pos >= f { return -1 }
        let k = Swift.min(maxLength, step, data.count - pos)
        data.withUnsafeBufferPointer { _ = memcpy(buffer, $0.baseAddress! + pos, k) }
        pos += k
        return k
    }
    func rewind() -> Bool { pos = 0; return true }
}

/// Splits HTTP/1.1 chunked framing: the body and the trailer lines. Fails on bad framing.
func dechunk(_ wire: [UInt8]) throws -> (body: [UInt8], trailers: [String]) {
    struct Bad: Error { let why: String }
    var i = 0
    func line() throws -> String {
        var j = i
        while j + 1 < wire.count && !(wire[j] == 13 && wire[j + 1] == 10) { j += 1 }
        guard j + 1 < wire.count else { throw Bad(why: "no CRLF after offset \(i)") }
        let s = String(decoding: wire[i..<j], as: UTF8.self)
        i = j + 2
        return s
    }
    var body: [UInt8] = []
    while true {
        let sizeLine = try line()
        guard let size = Int(sizeLine, radix: 16), size >= 0 else { throw Bad(why: "bad chunk size \(sizeLine)") }
        if size == 0 { break }
        guard size > 0, i + size + 2 <= wire.count else { throw Bad(why: "chunk overruns") }
        body += wire[i..<(i + size)]
        i += size
        guard wire[i] == 13 && wire[i + 1] == 10 else { throw Bad(why: "no CRLF after chunk data") }
        i += 2
    }
    var trailers: [String] = []
    while true {
        let l = try line()
        if l.isEmpty { break }
        trailers.append(l)
    }
    guard i == wire.count else { throw Bad(why: "\(wire.count - i) bytes after the last chunk") }
    return (body, trailers)
}

final class BodyTransformTests: XCTestCase {
    let serializer = RequestSerializer()

    func randomBytes(_ n: Int, seed: UInt64) -> [UInt8] {
        var g = SeededGenerator(seed: seed)
        // Compressible: words from a small alphabet with random runs.
        return (0..<n).map { _ in UInt8(97 + Int(g.next() % 7)) }
    }

    /// Writes `r` with `Request.write` to a temporary file and returns head and body bytes.
    func wire(_ r: Request) throws -> (head: String, body: [UInt8]) {
        let path = scratchPath("wire-\(UUID().uuidString)")
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd); unlink(path) }
        var off: UInt64 = 0, written: UInt64 = 0
        try r.write(to: fd, offset: &off, written: &written)
        let all = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertEqual(UInt64(all.count), written)
        var k = 0
        while !(all[k] == 13 && all[k + 1] == 10 && all[k + 2] == 13 && all[k + 3] == 10) { k += 1 }
        return (String(decoding: all[0..<(k + 4)], as: UTF8.self), Array(all[(k + 4)...]))
    }

    func form(_ parts: (MultipartForm) throws -> Void) throws -> Request {
        let f = try serializer.multipartForm(method: "POST", url: "http://h/up", params: nil)
        try f.setBoundary("BOUNDARY")
        try parts(f)
        return try f.finish()
    }

    func testUnknownLengthPartMakesAChunkedRequestWithTheSameRawBody() throws {
        let data = randomBytes(200_000, seed: 1)
        let known = try form { f in
            try f.appendFormData(Array("v".utf8), name: "a")
            try f.appendStream(TestSource(data), length: UInt64(data.count), name: "s", filename: "s.bin")
        }
        let unknown = try form { f in
            try f.appendFormData(Array("v".utf8), name: "a")
            try f.appendStream(UnknownLengthSource(data, step: 777), length: BodyPart.unknownLength, name: "s", filename: "s.bin")
        }
        let s = try XCTUnwrap(unknown.bodyStream)
        XCTAssertEqual(s.contentLength, BodyPart.unknownLength)
        XCTAssertTrue(unknown.isChunked)
        XCTAssertFalse(known.isChunked)
        XCTAssertNil(unknown.header("Content-Length"))
        let expected = try drainBody(try XCTUnwrap(known.bodyStream))
        for chunk in [0, 1, 7, 4096, 65536, 1 << 20] {
            try s.rewind()
            XCTAssertTrue(try drainBody(s, chunk: chunk) == expected, "read size \(chunk)")
        }
        let w = try wire(unknown)
        XCTAssertTrue(w.head.contains("\r\nTransfer-Encoding: chunked\r\n"))
        XCTAssertFalse(w.head.contains("Content-Length"))
        let d = try dechunk(w.body)
        XCTAssertTrue(d.body == expected)
        XCTAssertEqual(d.trailers, [])
        // A second write starts over and gives the same wire bytes.
        XCTAssertTrue(try wire(unknown).body == w.body)
    }

    func testFilePartsGoInChunksOfTheirOwn() throws {
        let data = randomBytes(300_000, seed: 2)
        let path = scratchPath("file-\(UUID().uuidString)")
        try Data(data).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        let r = try form { f in
            try f.appendFile(path: path, name: "f", filename: "f.bin", mimeType: "application/octet-stream")
            try f.appendStream(UnknownLengthSource(Array("tail".utf8)), length: BodyPart.unknownLength, name: "t", filename: "t")
        }
        let w = try wire(r)
        let d = try dechunk(w.body)
        try r.bodyStream?.rewind()
        XCTAssertTrue(d.body == (try drainBody(try XCTUnwrap(r.bodyStream))))
        // The file body is one chunk: its size in hex appears as a chunk-size line.
        XCTAssertTrue(String(decoding: w.body, as: UTF8.self).contains("\r\n" + String(data.count, radix: 16) + "\r\n"))
    }

    func testBodySourceKnownAndUnknownLength() throws {
        let data = randomBytes(100_000, seed: 3)
        var r = try Request(method: "PUT", url: "http://h/x")
        try r.setBodyStream(TestSource(data), length: UInt64(data.count))
        XCTAssertFalse(r.isChunked)
        XCTAssertEqual(r.header("Content-Length"), "\(data.count)")
        var w = try wire(r)
        XCTAssertTrue(w.body == data)
        try r.setBodyStream(UnknownLengthSource(data), length: BodyPart.unknownLength)
        XCTAssertTrue(r.isChunked)
        XCTAssertNil(r.header("Content-Length"))
        w = try wire(r)
        XCTAssertTrue(try dechunk(w.body).body == data)
        try r.bodyStream?.rewind()
        XCTAssertEqual(try drainBody(try XCTUnwrap(r.bodyStream), chunk: 0).count, data.count)
        // Empty body of unknown length: only the last chunk.
        try r.setBodyStream(UnknownLengthSource([]), length: BodyPart.unknownLength)
        XCTAssertEqual(try wire(r).body, Array("0\r\n\r\n".utf8))
    }

    func testCompressedStreamEqualsOneShotForAnyReadSizeAndRewinds() throws {
        let data = randomBytes(150_000, seed: 4)
        for coding in ContentCoding.allCases {
            for size in [0, 1, 65536, 65537, 131072, 150_000] {
                let body = Array(data[0..<size])
                let once = try data.withUnsafeBytes { b in
                    try ContentEncoder.encode(UnsafeRawBufferPointer(rebasing: b[0..<size]), coding: coding, level: 1)
                }
                var r = try Request(method: "POST", url: "http://h/")
                r.body = body
                try r.setContentEncoding(coding, level: 1, exact: false)
                XCTAssertTrue(r.isChunked)
                XCTAssertNil(r.body)
                XCTAssertEqual(r.header("Content-Encoding"), coding.rawValue)
                let s = try XCTUnwrap(r.bodyStream)
                XCTAssertEqual(s.contentLength, BodyPart.unknownLength)
                let first = try drainBody(s, chunk: 0)
                XCTAssertTrue(first == Array(once.bytes), "\(coding) \(size)")
                try s.rewind()
                XCTAssertTrue(try drainBody(s, chunk: 4093) == first)
                XCTAssertTrue(try dechunk(try wire(r).body).body == first)
                // Exact: the same bytes, in memory, with Content-Length.
                var e = try Request(method: "POST", url: "http://h/")
                e.body = body
                try e.setContentEncoding(coding, level: 1, exact: true)
                XCTAssertFalse(e.isChunked)
                XCTAssertTrue(e.body == first, "exact \(coding) \(size)")
                XCTAssertEqual(e.header("Content-Length"), "\(first.count)")
            }
        }
    }

    func testExactCompressionOfAStreamUsesATemporaryFile() throws {
        let data = randomBytes(200_000, seed: 5)
        var r = try form { f in
            try f.appendStream(UnknownLengthSource(data), length: BodyPart.unknownLength, name: "s", filename: "s")
        }
        let raw = try drainBody(try XCTUnwrap(r.bodyStream))
        var chunkedR = r
        try chunkedR.setContentEncoding(.zstd, level: 0, exact: false)
        let dir = scratchPath("tmpdir-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        r.transformSettings.temporaryDirectory = dir
        try r.setContentEncoding(.zstd, level: 0, exact: true)
        XCTAssertFalse(r.isChunked)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).count, 1)
        let compressed = try drainBody(try XCTUnwrap(r.bodyStream))
        XCTAssertEqual(r.header("Content-Length"), "\(compressed.count)")
        XCTAssertTrue(compressed == (try drainBody(try XCTUnwrap(chunkedR.bodyStream))))
        XCTAssertLessThan(compressed.count, raw.count / 2)
        XCTAssertTrue(try wire(r).body == compressed)
        r = try Request(method: "GET", url: "http://h/")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).count, 0, "the temporary file goes with the request")
    }

    func testDigestsHeaderAndTrailerOverTheBodyAsSent() throws {
        let data = randomBytes(100_000, seed: 6)
        func b64(_ d: [UInt8]) -> String { Data(d).base64EncodedString() }
        // In memory, header digest, then compression: recomputed over the compressed body.
        var r = try Request(method: "POST", url: "http://h/")
        r.body = data
        try r.addDigest(.sha256, trailer: false)
        XCTAssertEqual(r.header("Content-Digest"), "sha-256=:\(b64(SHA256.hash(data))):")
        try r.addDigest(.md5, trailer: false)
        XCTAssertEqual(r.header("Content-MD5"), b64(MD5.hash(data)))
        try r.setContentEncoding(.gzip, level: 1, exact: false)
        let sent = try drainBody(try XCTUnwrap(r.bodyStream))
        XCTAssertEqual(r.header("Content-Digest"), "sha-256=:\(b64(SHA256.hash(sent))):")
        XCTAssertEqual(r.header("Content-MD5"), b64(MD5.hash(sent)))
        // Trailer digests: in the trailers of the chunked body, same after a rewind.
        try r.addDigest(.sha512, trailer: true)
        try r.addDigest(.sha256, trailer: true)
        let w = try wire(r)
        XCTAssertTrue(w.head.contains("\r\nTrailer: Content-Digest\r\n"))
        let d = try dechunk(w.body)
        XCTAssertTrue(d.body == sent)
        XCTAssertEqual(d.trailers, ["Content-Digest: sha-512=:\(b64(SHA512.hash(sent))):, sha-256=:\(b64(SHA256.hash(sent))):"])
        XCTAssertEqual(try dechunk(try wire(r).body).trailers, d.trailers)
        let s = try XCTUnwrap(r.bodyStream)
        try s.rewind()
        _ = try drainBody(s, chunk: 0)
        XCTAssertEqual(s.trailerFields?.map { "\($0.name): \($0.value)" }, d.trailers)
        // A trailer digest on a request with a Content-Length makes it chunked.
        var k = try Request(method: "POST", url: "http://h/")
        k.body = data
        try k.addDigest(.md5, trailer: true)
        XCTAssertTrue(k.isChunked)
        XCTAssertNil(k.header("Content-Length"))
        XCTAssertEqual(try dechunk(try wire(k).body).trailers, ["Content-MD5: \(b64(MD5.hash(data)))"])
    }

    func testRulesAndErrors() throws {
        var r = try Request(method: "GET", url: "http://h/")
        XCTAssertThrowsError(try r.setContentEncoding(.gzip, level: 0, exact: false)) { XCTAssertEqual(($0 as! AFSError).status, .state) }
        XCTAssertThrowsError(try r.addDigest(.sha256, trailer: false)) { XCTAssertEqual(($0 as! AFSError).status, .state) }
        r.body = [1, 2, 3]
        XCTAssertThrowsError(try r.setContentEncoding(.gzip, level: 10, exact: false)) { XCTAssertEqual(($0 as! AFSError).status, .invalidArgument) }
        try r.setContentEncoding(.gzip, level: 9, exact: true)
        XCTAssertThrowsError(try r.setContentEncoding(.br, level: 0, exact: true)) { XCTAssertEqual(($0 as! AFSError).status, .state) }
        // A source without rewind: no header digest; after reading, no rewind.
        var s = try Request(method: "PUT", url: "http://h/")
        try s.setBodyStream(UnknownLengthSource([1, 2, 3], canRewind: false), length: BodyPart.unknownLength)
        XCTAssertThrowsError(try s.addDigest(.sha256, trailer: false)) { XCTAssertEqual(($0 as! AFSError).status, .unsupported) }
        try s.addDigest(.sha256, trailer: true)
        let st = try XCTUnwrap(s.bodyStream)
        XCTAssertEqual(try drainBody(st), [1, 2, 3])
        XCTAssertThrowsError(try st.rewind()) { XCTAssertEqual(($0 as! AFSError).status, .unsupported) }
        XCTAssertThrowsError(try st.seek(to: 1)) { XCTAssertEqual(($0 as! AFSError).status, .unsupported) }
        // A read error inside the body is sticky and named.
        let failing = UnknownLengthSource(randomBytes(10_000, seed: 7))
        failing.failAt = 5000
        var f = try Request(method: "PUT", url: "http://h/")
        try f.setBodyStream(failing, length: BodyPart.unknownLength)
        try f.setContentEncoding(.deflate, level: 0, exact: false)
        XCTAssertThrowsError(try wire(f)) { XCTAssertEqual(($0 as! AFSError).status, .io) }
        XCTAssertEqual(try XCTUnwrap(f.bodyStream).read(into: UnsafeMutablePointer<UInt8>.allocate(capacity: 1), maxLength: 1), -1)
    }
}
