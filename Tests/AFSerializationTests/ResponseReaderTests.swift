import XCTest
@testable import AFSerialization
import CAFSerialization

/// What a reader made of an input: everything observable except `consumed`.
struct ReaderOutcome: Equatable, CustomStringConvertible {
    var state: ResponseReader.State
    var status: Int
    var version: Int
    var reason: [UInt8]
    var headers: [[UInt8]]
    var trailers: [[UInt8]]
    var interim: [Int]
    var body: [UInt8]
    var error: AFSError?
    var description: String {
        "state \(state) status \(status) headers \(headers.count) trailers \(trailers.count) body \(body.count) error \(error.map { "\($0)" } ?? "none")"
    }
}

func readOutcome(_ input: [UInt8], splits: [Int] = [], method: String = "GET", eof: Bool = true,
                 configure: (ResponseReader) throws -> Void = { _ in }) -> ReaderOutcome {
    let r = try! ResponseReader(method: method)
    try! configure(r)
    var error: AFSError?
    var start = 0
    let cuts = splits.filter { $0 > 0 && $0 < input.count }.sorted() + [input.count]
    input.withUnsafeBufferPointer { all in
        for end in cuts where end >= start {
            // Feed the piece, re-feeding what was not consumed (the reader stops at DONE).
            let piece = UnsafeBufferPointer(rebasing: all[start..<end])
            do {
                let n = try r.feed(piece)
                start += n
                if r.state == .done { break }
            } catch {
                return
            }
        }
    }
    if eof && error == nil && r.state != .done { do { try r.eof() } catch {} }
    error = r.error
    func list(_ fs: [ResponseReader.Field], _ t: Bool) -> [[UInt8]] {
        fs.map { let (n, v) = r.bytes($0, trailer: t); return Array(n) + [0x3A] + Array(v) }
    }
    return ReaderOutcome(state: r.state, status: r.status, version: r.version, reason: Array(r.reason),
                         headers: r.headComplete ? list(r.fields, false) : [], trailers: r.state == .done ? list(r.trailerFields, true) : [],
                         interim: r.interim, body: Array(r.body.bytes), error: error)
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

final class ResponseReaderTests: XCTestCase {
    func testThatAContentLengthResponseIsRead() {
        let o = readOutcome(bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A:  b \r\n\r\nhello"), eof: false)
        XCTAssertEqual(o.state, .done)
        XCTAssertEqual(o.status, 200)
        XCTAssertEqual(o.version, 11)
        XCTAssertEqual(String(decoding: o.reason, as: UTF8.self), "OK")
        XCTAssertEqual(o.headers, [bytes("Content-Length:5"), bytes("X-A:b")])
        XCTAssertEqual(o.body, bytes("hello"))
        XCTAssertNil(o.error)
    }

    func testThatPipelinedBytesAreNotConsumed() throws {
        let r = try ResponseReader(method: "GET")
        let two = bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        let n = try two.withUnsafeBufferPointer { try r.feed($0) }
        XCTAssertEqual(n, 40)
        XCTAssertEqual(try two.withUnsafeBufferPointer { try r.feed(UnsafeBufferPointer(rebasing: $0[n...])) }, 0)
        try r.reset(method: "GET")
        let m = try two.withUnsafeBufferPointer { try r.feed(UnsafeBufferPointer(rebasing: $0[n...])) }
        XCTAssertEqual(n + m, two.count)
        XCTAssertEqual(r.status, 404)
        XCTAssertEqual(r.state, .done)
    }

    func testThatChunkedBodiesKeepTrailersAndIgnoreExtensions() {
        let o = readOutcome(bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b;c=\"d\"\r\nhello\r\n6 ; x\r\n world\r\n0\r\nDigest: x\r\nY: z\r\n\r\n"), eof: false)
        XCTAssertNil(o.error)
        XCTAssertEqual(o.body, bytes("hello world"))
        XCTAssertEqual(o.trailers, [bytes("Digest:x"), bytes("Y:z")])
        XCTAssertEqual(o.state, .done)
    }

    func testThatInterimResponsesAreSkippedAndKept() {
        let o = readOutcome(bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"), eof: false)
        XCTAssertEqual(o.interim, [100, 103])
        XCTAssertEqual(o.status, 200)
        XCTAssertEqual(o.headers, [bytes("Content-Length:1")])
        XCTAssertEqual(o.body, bytes("x"))
    }

    func testThatSomeResponsesHaveNoBody() {
        for (method, head) in [("HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"), ("GET", "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"),
                               ("GET", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"),
                               ("CONNECT", "HTTP/1.1 200 Connection established\r\n\r\n")] {
            let o = readOutcome(bytes(head + "extra"), method: method, eof: false)
            XCTAssertEqual(o.state, .done, head)
            XCTAssertEqual(o.body, [], head)
        }
    }

    func testThatBodiesWithoutLengthRunToEOF() {
        var o = readOutcome(bytes("HTTP/1.1 200 OK\r\n\r\nall of it"))
        XCTAssertEqual(o.body, bytes("all of it"))
        XCTAssertEqual(o.state, .done)
        o = readOutcome(bytes("HTTP/1.0 200 OK\r\n\r\nold"))
        XCTAssertEqual(o.version, 10)
        XCTAssertEqual(o.body, bytes("old"))
        // The last transfer coding is not chunked: to the end of the connection (RFC 9112 6.3 rule 4).
        let gz = gzip(bytes("abc"))
        o = readOutcome(bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n") + gz)
        XCTAssertNil(o.error)
        XCTAssertEqual(o.body, bytes("abc"))
        // chunked not last: to the end of the connection, as sent.
        o = readOutcome(bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n"))
        XCTAssertNil(o.error)
        XCTAssertEqual(o.body, bytes("3\r\nabc\r\n"))
        o = readOutcome(bytes("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"))
        XCTAssertEqual(o.error?.status, .badResponse)
        XCTAssertTrue(o.error!.message.contains("after 3 of 10 body bytes"), o.error!.message)
    }

    /// (input, expected status, a fragment of the message)
    static let badCases: [(String, AFSStatus, String)] = [
        ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", .badResponse, "both Content-Length and Transfer-Encoding"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", .badResponse, "differing Content-Length"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabcd", .badResponse, "differing Content-Length"),
        ("HTTP/1.1 200 OK\r\nContent-Length : 3\r\n\r\nabc", .badResponse, "whitespace before the colon"),
        ("HTTP/1.1 200 OK\r\nX-A: b\r\n  folded\r\n\r\n", .badResponse, "obs-fold"),
        ("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", .badResponse, "bare LF"),
        ("HTTP/1.1 200 OK\r\nX-A: b\n\r\n", .badResponse, "bare LF"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", .badResponse, "overflows"),
        ("HTTP/1.1 200 OK\r\nX-A: b\0c\r\n\r\n", .badResponse, "NUL"),
        ("HTTP/1.1 200 OK\r\nX-A: b\rc\r\n\r\n", .badResponse, "CR"),
        ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", .badResponse, "not a decimal"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", .badResponse, "too large"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: foo\r\n\r\n", .badResponse, "unknown transfer coding"),
        ("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .badResponse, "HTTP/1.0"),
        ("HTTP/2.0 200 OK\r\n\r\n", .badResponse, "unsupported HTTP version"),
        ("HTTP/1.1 20 OK\r\n\r\n", .badResponse, "three digits"),
        ("HTTP/1.1 099 OK\r\n\r\n", .badResponse, "below 100"),
        ("ICY 200 OK\r\n\r\n", .badResponse, "does not start with 'HTTP/'"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", .badResponse, "not followed by CRLF"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", .badResponse, "not a hexadecimal"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3 x\r\n", .badResponse, "after the chunk size"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", .badResponse, "closed inside the chunked body"),
        ("HTTP/1.1 200 OK\r\n: empty\r\n\r\n", .badResponse, "empty header name"),
        ("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", .badResponse, "without a colon"),
        ("", .badResponse, "before a response began"),
        ("HTTP/1.1 200 OK\r\nX: y\r\n", .badResponse, "inside the head"),
    ]

    func testThatSmugglingShapesAreRefusedWithLineAndOffset() {
        for (input, status, fragment) in ResponseReaderTests.badCases {
            let o = readOutcome(bytes(input))
            XCTAssertEqual(o.error?.status, status, input)
            XCTAssertTrue(o.error?.message.contains(fragment) ?? false, "\(input.debugDescription): \(o.error?.message ?? "no error")")
            XCTAssertTrue(o.error?.message.hasPrefix("line ") ?? false, o.error?.message ?? "")
        }
        let o = readOutcome(bytes("HTTP/1.1 200 OK\r\nA: b\r\nContent-Length : 3\r\n\r\nabc"))
        XCTAssertEqual(o.error?.message.hasPrefix("line 3, byte offset 37 of the response"), true, o.error?.message ?? "")
    }

    func testThatLimitsAreEnforced() {
        func limited(_ input: String, _ set: (inout ReaderLimits) -> Void) -> ReaderOutcome {
            readOutcome(bytes(input)) { r in var l = ReaderLimits(); set(&l); try r.setLimits(l) }
        }
        var o = limited("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n") { $0.maxHeaders = 2 }
        XCTAssertEqual(o.error?.status, .limit)
        XCTAssertTrue(o.error!.message.contains("more than 2 header fields"))
        o = limited("HTTP/1.1 200 OK\r\nA: 0123456789abcdef\r\n\r\n") { $0.maxLineLength = 18 }
        XCTAssertEqual(o.error?.status, .limit)
        XCTAssertTrue(o.error!.message.contains("longer than the limit of 18"))
        XCTAssertTrue(o.error!.message.hasPrefix("line 2, byte offset 17"), o.error!.message)
        o = limited("HTTP/1.1 200 OK\r\nA: 0123456789abcdef\r\n\r\n") { $0.maxLineLength = 19 }
        XCTAssertNil(o.error)
        o = limited("HTTP/1.1 200 OK\r\nA: 0123456789\r\n\r\n") { $0.maxHeadBytes = 33 }
        XCTAssertEqual(o.error?.status, .limit)
        o = limited("HTTP/1.1 200 OK\r\nA: 0123456789\r\n\r\n") { $0.maxHeadBytes = 34 }
        XCTAssertNil(o.error)
        o = limited("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;abcdef\r\nx\r\n0\r\n\r\n") { $0.maxChunkExtension = 6 }
        XCTAssertEqual(o.error?.status, .limit)
        o = limited("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;abcdef\r\nx\r\n0\r\n\r\n") { $0.maxChunkExtension = 7 }
        XCTAssertNil(o.error)
        XCTAssertEqual(o.body, bytes("x"))
    }

    /// A peer that is not speaking HTTP/1.x, or an obs-fold, is refused from the first bytes
    /// that show it, without waiting for the line end (h11's
    /// test_early_detection_of_invalid_response; llhttp's "Invalid space after start line"):
    /// the same error as the complete line gets, for every split.
    func testThatWrongLineStartsAreRefusedBeforeTheLineEnds() {
        let cases: [(String, String, String)] = [
            ("\u{0}", "does not start with 'HTTP/'", "line 1, byte offset 0"),
            (" ", "does not start with 'HTTP/'", "line 1, byte offset 0"),
            ("\u{16}\u{3}\u{3}\u{0}1", "does not start with 'HTTP/'", "line 1, byte offset 0"),
            ("HTTP/1.1 100 Continue\r\n\r\nHTX", "does not start with 'HTTP/'", "line 3, byte offset 25"),
            ("HTTP/1.1 200 OK\r\n Host: foo", "whitespace at the start of the first header line", "line 2, byte offset 17"),
            ("HTTP/1.1 200 OK\r\nA: b\r\n\tc", "obs-fold", "line 3, byte offset 23"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: b\r\n c", "obs-fold", "line 6, byte offset 56"),
        ]
        for (input, fragment, at) in cases {
            let b = bytes(input)
            let one = readOutcome(b, eof: false)
            XCTAssertEqual(one.error?.status, .badResponse, input.debugDescription)
            XCTAssertTrue(one.error?.message.contains(fragment) ?? false, "\(input.debugDescription): \(one.error?.message ?? "no error")")
            XCTAssertTrue(one.error?.message.hasPrefix(at) ?? false, "\(input.debugDescription): \(one.error?.message ?? "no error")")
            if b.count > 1 { XCTAssertEqual(readOutcome(b, splits: Array(1..<b.count), eof: false), one, input.debugDescription) }
        }
        // Still waiting: a prefix of "HTTP/", and a line that starts with CR (left to the
        // full-line check, which names the empty line).
        for input in ["H", "HTTP", "HTTP/1.1 2", "\r"] {
            XCTAssertNil(readOutcome(bytes(input), eof: false).error, input.debugDescription)
        }
        XCTAssertTrue(readOutcome(bytes("\r\n"), eof: false).error?.message.contains("an empty line") ?? false)
    }

    /// Every input, split in two at every position and fed one byte at a time, gives the
    /// outcome of one feed.
    func testThatEverySplitGivesTheOneFeedResult() {
        var inputs = ResponseReaderTests.badCases.map { bytes($0.0) }
        inputs += [
            bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nT: v\r\n\r\n"),
            bytes("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: ") + bytes(String(gzip(Array(repeating: 0x61, count: 100_000)).count))
                + bytes("\r\n\r\n") + gzip(Array(repeating: 0x61, count: 100_000)),
            bytes("HTTP/1.1 200 OK\r\nA: 0123456789abcdef\r\n\r\n"),
        ]
        for input in inputs {
            let one = readOutcome(input)
            let limitsCfg: (ResponseReader) throws -> Void = { r in var l = ReaderLimits(); l.maxLineLength = 16; l.maxHeadBytes = 40; try r.setLimits(l) }
            let oneLimited = readOutcome(input, configure: limitsCfg)
            let step = input.count > 2000 ? 997 : 1
            for cut in stride(from: 1, to: input.count, by: step) {
                XCTAssertEqual(readOutcome(input, splits: [cut]), one, "cut at \(cut) of \(String(decoding: input.prefix(60), as: UTF8.self).debugDescription)")
                XCTAssertEqual(readOutcome(input, splits: [cut], configure: limitsCfg), oneLimited, "limited, cut at \(cut)")
            }
            if input.count < 2000 && input.count > 1 {
                XCTAssertEqual(readOutcome(input, splits: Array(1..<input.count)), one, "byte at a time")
                XCTAssertEqual(readOutcome(input, splits: Array(1..<input.count), configure: limitsCfg), oneLimited, "limited, byte at a time")
            }
        }
    }

    // MARK: - Content codings

    func testThatEveryCodingDecodes() {
        let text = Array((0..<200_000).map { UInt8(truncatingIfNeeded: $0 * 7 % 251) })
        let cases: [(String, [UInt8])] = [("gzip", gzip(text)), ("x-gzip", gzip(text)), ("deflate", zlibFormat(text)),
                                          ("deflate", rawDeflate(text)), ("br", brotli(text)), ("zstd", zstd(text)),
                                          ("gzip, br", brotli(gzip(text))), ("zstd, identity, deflate", zlibFormat(zstd(text)))]
        for (coding, coded) in cases {
            let input = bytes("HTTP/1.1 200 OK\r\nContent-Encoding: \(coding)\r\nContent-Length: \(coded.count)\r\n\r\n") + coded
            let o = readOutcome(input, eof: false)
            XCTAssertNil(o.error, coding)
            XCTAssertEqual(o.body, text, coding)
            XCTAssertEqual(readOutcome(input, splits: [100, 101, 5000, 17000]), o, coding)
            let raw = readOutcome(input, eof: false) { $0.decodesContent = false }
            XCTAssertEqual(raw.body, coded, coding)
        }
        // Several gzip members.
        let two = gzip(bytes("ab")) + gzip(bytes("cd"))
        let o = readOutcome(bytes("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(two.count)\r\n\r\n") + two)
        XCTAssertEqual(o.body, bytes("abcd"))
    }

    func testThatCorruptAndTruncatedCodingsAreRefused() {
        let text = Array(repeating: UInt8(ascii: "q"), count: 5000) + bytes("end")
        for (coding, coded) in [("gzip", gzip(text)), ("deflate", zlibFormat(text)), ("br", brotli(text)), ("zstd", zstd(text))] {
            let cut = Array(coded.prefix(coded.count - 3))
            var o = readOutcome(bytes("HTTP/1.1 200 OK\r\nContent-Encoding: \(coding)\r\nContent-Length: \(cut.count)\r\n\r\n") + cut)
            XCTAssertEqual(o.error?.status, .badResponse, coding)
            XCTAssertTrue(o.error?.message.contains("truncated") ?? false, o.error?.message ?? coding)
            var bad = coded
            for k in 0..<min(8, bad.count) { bad[k] ^= 0x5A }
            o = readOutcome(bytes("HTTP/1.1 200 OK\r\nContent-Encoding: \(coding)\r\nContent-Length: \(bad.count)\r\n\r\n") + bad)
            XCTAssertEqual(o.error?.status, .badResponse, coding)
        }
        // An empty body with a coding is an empty body.
        let o = readOutcome(bytes("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n\r\n"))
        XCTAssertNil(o.error)
        XCTAssertEqual(o.state, .done)
    }

    func testThatBombsStopAtTheLimit() {
        let zeros = Array(repeating: UInt8(0), count: 20 << 20)
        for (coding, coded) in [("gzip", gzip(zeros)), ("br", brotli(zeros)), ("zstd", zstd(zeros))] {
            let input = bytes("HTTP/1.1 200 OK\r\nContent-Encoding: \(coding)\r\nContent-Length: \(coded.count)\r\n\r\n") + coded
            var delivered = 0
            let o = readOutcome(input) { r in r.bodyCallback = { delivered += $0.count; return true } }
            XCTAssertEqual(o.error?.status, .limit, coding)
            XCTAssertLessThanOrEqual(UInt64(delivered), 64 * UInt64(coded.count) + (1 << 20), coding)
            // A caller's limit: equal is allowed.
            let exact = readOutcome(input) { r in r.maxDecodedBytes = UInt64(zeros.count) }
            XCTAssertNil(exact.error, coding)
            XCTAssertEqual(exact.body.count, zeros.count)
            let under = readOutcome(input) { r in r.maxDecodedBytes = UInt64(zeros.count - 1) }
            XCTAssertEqual(under.error?.status, .limit, coding)
        }
    }

    // MARK: - Text

    func testThatTextFollowsTheWHATWGRules() throws {
        func text(_ body: [UInt8], _ ct: String?, _ fb: String? = nil) throws -> String {
            String(decoding: try body.withUnsafeBufferPointer { try TextDecoding.decode($0, contentType: ct, fallback: fb) }, as: UTF8.self)
        }
        XCTAssertEqual(try text([0xE9], "text/plain; charset=iso-8859-1"), "é")
        XCTAssertEqual(try text([0x80], "text/plain; charset=latin1"), "€")        // windows-1252
        XCTAssertEqual(try text([0x80], "text/plain; charset=\"US-ASCII\""), "€")
        XCTAssertEqual(try text([0x81], "text/plain; charset=windows-1252"), "\u{81}")
        XCTAssertEqual(try text([0xEF, 0xBB, 0xBF, 0x41], "text/plain; charset=latin1"), "A")   // BOM wins
        XCTAssertEqual(try text([0xFF, 0xFE, 0x41, 0x00], nil), "A")
        XCTAssertEqual(try text([0xFE, 0xFF, 0xD8, 0x3D, 0xDE, 0x00], nil), "😀")
        XCTAssertEqual(try text([0x41, 0x00, 0x00, 0xD8], "text/plain; charset=utf-16le"), "A\u{FFFD}")
        XCTAssertEqual(try text([0xC1, 0x41], nil), "\u{FFFD}A")
        XCTAssertEqual(try text([0xE0, 0x80, 0x41], nil), "\u{FFFD}\u{FFFD}A")    // maximal subparts
        XCTAssertEqual(try text([0xF0, 0x9F, 0x98], nil), "\u{FFFD}")
        XCTAssertEqual(try text([0xED, 0xA0, 0x80], nil), "\u{FFFD}\u{FFFD}\u{FFFD}")
        XCTAssertEqual(try text([0xC4], nil, "koi8-r"), "д")
        XCTAssertEqual(try text([0xAE], nil, "koi8-u"), "ў")
        XCTAssertEqual(try text([0xA4], nil, "iso-8859-15"), "€")
        XCTAssertEqual(try text([0x41], nil, "  UTF8  "), "A")
        XCTAssertThrowsError(try text([0x41], "text/plain; charset=klingon")) { e in
            XCTAssertEqual((e as? AFSError)?.status, .encoding)
            XCTAssertTrue((e as? AFSError)?.message.contains("klingon") ?? false)
        }
        XCTAssertThrowsError(try text([0x41], "text/plain; charset=shift_jis"))
    }
}

// MARK: - Encoders for the tests (zlib, libbrotli, libzstd)

func zlibCompress(_ data: [UInt8], windowBits: Int32) -> [UInt8] {
    var s = z_stream()
    precondition(deflateInit2_(&s, 6, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK)
    var out = [UInt8](repeating: 0, count: Int(deflateBound(&s, UInt(data.count))) + 64)
    var input = data
    let n = input.withUnsafeMutableBufferPointer { inp in
        out.withUnsafeMutableBufferPointer { o -> Int in
            s.next_in = inp.baseAddress
            s.avail_in = UInt32(inp.count)
            s.next_out = o.baseAddress
            s.avail_out = UInt32(o.count)
            precondition(deflate(&s, Z_FINISH) == Z_STREAM_END)
            return o.count - Int(s.avail_out)
        }
    }
    deflateEnd(&s)
    return Array(out.prefix(n))
}
func gzip(_ d: [UInt8]) -> [UInt8] { zlibCompress(d, windowBits: 31) }
func zlibFormat(_ d: [UInt8]) -> [UInt8] { zlibCompress(d, windowBits: 15) }
func rawDeflate(_ d: [UInt8]) -> [UInt8] { zlibCompress(d, windowBits: -15) }
func brotli(_ d: [UInt8]) -> [UInt8] {
    var n = BrotliEncoderMaxCompressedSize(d.count) + 64
    var out = [UInt8](repeating: 0, count: n)
    precondition(BrotliEncoderCompress(5, 22, BROTLI_MODE_GENERIC, d.count, d, &n, &out) == 1)
    return Array(out.prefix(n))
}
func zstd(_ d: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: ZSTD_compressBound(d.count))
    let n = ZSTD_compress(&out, out.count, d, d.count, 3)
    precondition(ZSTD_isError(n) == 0)
    return Array(out.prefix(n))
}
