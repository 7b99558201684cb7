import XCTest
@testable import AFSerialization

/// Collects parts; optionally stops at an event.
final class PartCollector: MultipartSink {
    struct Part: Equatable {
        var head: MultipartPartHead
        var body: [UInt8] = []
        var ended = false
    }
    var parts: [Part] = []
    var stopAtData = false

    func partBegin(_ head: MultipartPartHead) -> MultipartFlow {
        parts.append(Part(head: head))
        return .proceed
    }
    func partData(_ bytes: UnsafeBufferPointer<UInt8>) -> MultipartFlow {
        XCTAssertFalse(bytes.isEmpty)
        parts[parts.count - 1].body.append(contentsOf: bytes)
        return stopAtData ? .stop : .proceed
    }
    func partEnd() -> MultipartFlow {
        parts[parts.count - 1].ended = true
        return .proceed
    }
}

/// Parses `body` fed in pieces of the given sizes (cycled; empty: one feed).
func parseMultipart(_ body: [UInt8], boundary: String, splits: [Int] = [], limits: MultipartLimits = MultipartLimits()) throws -> [PartCollector.Part] {
    let p = try MultipartParser(contentTypeOrBoundary: "multipart/form-data; boundary=\"\(boundary)\"", limits: limits)
    let c = PartCollector()
    p.sink = c
    try body.withUnsafeBufferPointer { b in
        if splits.isEmpty {
            try p.feed(b)
        } else {
            var i = 0, k = 0
            while i < b.count {
                let n = Swift.min(splits[k % splits.count], b.count - i)
                k += 1
                try p.feed(UnsafeBufferPointer(rebasing: b[i..<(i + n)]))
                i += n
            }
        }
    }
    try p.finish()
    return c.parts
}

// bytes(_:) comes from ResponseReaderTests.swift (the same helper)
private func text(_ b: [UInt8]?) -> String? { b.map { String(decoding: $0, as: UTF8.self) } }

final class MultipartParserTests: XCTestCase {
    func testThatPreambleEpiloguePaddingAndHeadersAreRead() throws {
        let body = bytes("preamble\r\n--B  \t\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad:   v  \r\n\r\nhello\r\n--B\r\n"
                         + "Content-Disposition: form-data; name=\"f\"; filename=\"x.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                         + "\r\n--Bnot\r\n--B--\r\nepilogue --B\r\n")
        for splits in [[], [1], [2, 3, 5], [7]] {
            let parts = try parseMultipart(body, boundary: "B", splits: splits)
            XCTAssertEqual(parts.count, 2)
            XCTAssertEqual(text(parts[0].head.name), "a")
            XCTAssertNil(parts[0].head.filename)
            XCTAssertEqual(text(parts[0].head.header("x-pad")), "v")
            XCTAssertEqual(text(parts[0].body), "hello")
            XCTAssertEqual(text(parts[1].head.filename), "x.bin")
            XCTAssertEqual(text(parts[1].body), "\r\n--Bnot")
            XCTAssertTrue(parts.allSatisfy(\.ended))
        }
    }

    func testThatDispositionParametersAreDecoded() throws {
        func head(_ cd: String) throws -> MultipartPartHead {
            try parseMultipart(bytes("--b\r\nContent-Disposition: \(cd)\r\n\r\nx\r\n--b--"), boundary: "b")[0].head
        }
        XCTAssertEqual(text(try head(#"form-data; name="a\\b\"c""#).name), #"a\b"c"#)
        XCTAssertEqual(text(try head(#"form-data; name="q%22r%0D%0As""#).name), "q\"r\r\ns")
        XCTAssertEqual(text(try head(#"form-data; name=plain; filename="""#).filename), "")
        XCTAssertEqual(text(try head(#"form-data; name="n"; filename="a.txt"; filename*=UTF-8''%E2%82%AC%20rates.txt"#).filename), "€ rates.txt")
        XCTAssertEqual(text(try head(#"form-data; filename*=iso-8859-1'en'%E9t%E9"#).filename), "été")
        XCTAssertEqual(text(try head(#"form-data; name="n"; filename="C:\\dir\\f.txt""#).filename), #"C:\dir\f.txt"#)
    }

    func testThatTransferEncodingsAreDecoded() throws {
        let body = bytes("--b\r\nContent-Transfer-Encoding: base64\r\n\r\naGVs\r\nbG8=\r\n--b\r\nContent-Transfer-Encoding: Quoted-Printable\r\n\r\na=3Db=\r\nc =\nd=zz\r\n--b--\r\n")
        for splits in [[], [1], [3]] {
            let parts = try parseMultipart(body, boundary: "b", splits: splits)
            XCTAssertEqual(text(parts[0].body), "hello")
            XCTAssertEqual(text(parts[1].body), "a=bc d=zz")
        }
        XCTAssertThrowsError(try parseMultipart(bytes("--b\r\nContent-Transfer-Encoding: base64\r\n\r\na*==\r\n--b--"), boundary: "b")) {
            XCTAssertEqual(($0 as? AFSError)?.status, .invalidMultipart)
        }
    }

    func testThatLineFeedOnlyBodiesAndEmptyBodiesParse() throws {
        let parts = try parseMultipart(bytes("--b\nContent-Disposition: form-data; name=\"a\"\n\n1\n--b\n\n\n--b--"), boundary: "b")
        XCTAssertEqual(parts.map { text($0.body) }, ["1", ""])
        let tight = try parseMultipart(bytes("--b\r\nContent-Disposition: form-data; name=\"e\"\r\n\r\n--b--\r\n"), boundary: "b")
        XCTAssertEqual(tight.count, 1)
        XCTAssertEqual(tight[0].body, [])
        XCTAssertEqual(try parseMultipart(bytes("--b--\r\n"), boundary: "b").count, 0)
    }

    func testThatMalformedFramingIsInvalidMultipart() {
        for (body, needle) in [("no boundary here", "no boundary line"),
                               ("--b\r\nA: 1\r\n\r\nbody without end", "before its closing boundary"),
                               ("--b\r\nA: 1\r\n", "in the headers"),
                               ("--b x\r\n\r\n--b--", "after the boundary"),
                               ("--b\r\nnocolon\r\n\r\n--b--", "no name and colon"),
                               ("--b\r\nBad Name: v\r\n\r\n--b--", "header name"),
                               ("--b\r\nA: 1\r\n\r\nx\r\n--b-x", "before its closing boundary"),
                               ("--b-x\r\n", "without a second")] {
            XCTAssertThrowsError(try parseMultipart(bytes(body), boundary: "b"), body) { e in
                XCTAssertEqual((e as? AFSError)?.status, .invalidMultipart, body)
                XCTAssertTrue((e as? AFSError)?.message.contains(needle) ?? false, "\(e)")
            }
        }
    }

    func testThatEachLimitIsRefusedNamingItAndThePart() {
        func limited(_ body: String, _ configure: (inout MultipartLimits) -> Void = { _ in }, splits: [Int] = []) -> String? {
            var l = MultipartLimits()
            configure(&l)
            do { _ = try parseMultipart(bytes(body), boundary: "b", splits: splits, limits: l); return nil } catch let e as AFSError {
                return e.status == .limit ? e.message : "wrong status \(e)"
            } catch { return "\(error)" }
        }
        let manyParts = String(repeating: "--b\r\n\r\nx\r\n", count: 1001) + "--b--"
        XCTAssertTrue(limited(manyParts)?.contains("max_parts (1000)") ?? false)
        XCTAssertNil(limited(String(repeating: "--b\r\n\r\nx\r\n", count: 1000) + "--b--"))
        let bigHeader = "--b\r\nX: " + String(repeating: "h", count: 17000) + "\r\n\r\nx\r\n--b--"
        XCTAssertTrue(limited(bigHeader)?.contains("max_line_length") ?? false)
        XCTAssertTrue(limited(bigHeader, splits: [100])?.contains("max_line_length") ?? false)
        let manyHeaders = "--b\r\n" + String(repeating: "X: 1\r\n", count: 33) + "\r\nx\r\n--b--"
        XCTAssertTrue(limited(manyHeaders)?.contains("max_headers (32)") ?? false)
        let headerBytes = "--b\r\n" + String(repeating: "X: " + String(repeating: "v", count: 1000) + "\r\n", count: 20) + "\r\nx\r\n--b--"
        XCTAssertTrue(limited(headerBytes)?.contains("max_header_bytes (16384)") ?? false)
        let noCRLF = "--b\r\nX: " + String(repeating: "a", count: 40000)
        XCTAssertTrue(limited(noCRLF, splits: [1000])?.contains("part 0") ?? false)
        let bigField = "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n" + String(repeating: "z", count: (1 << 20) + 1) + "\r\n--b--"
        XCTAssertTrue(limited(bigField)?.contains("max_field_bytes (1048576)") ?? false)
        let bigFile = "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\n" + String(repeating: "z", count: (1 << 20) + 1) + "\r\n--b--"
        XCTAssertNil(limited(bigFile))
        XCTAssertTrue(limited(bigFile) { $0.maxTotalBytes = 1000 }?.contains("max_total_bytes") ?? false)
        let padding = "--b" + String(repeating: " ", count: 20000) + "\r\n\r\nx\r\n--b--"
        XCTAssertTrue(limited(padding)?.contains("max_line_length") ?? false)
    }

    func testThatAHandlerStopIsState() throws {
        let p = try MultipartParser(contentTypeOrBoundary: "b")
        let c = PartCollector()
        c.stopAtData = true
        p.sink = c
        var body = bytes("--b\r\n\r\nxyz\r\n--b--")
        XCTAssertThrowsError(try body.withUnsafeMutableBufferPointer { try p.feed(UnsafeBufferPointer($0)) }) {
            XCTAssertEqual(($0 as? AFSError)?.status, .state)
        }
        XCTAssertThrowsError(try p.finish()) { XCTAssertEqual(($0 as? AFSError)?.status, .state) }  // sticky
    }

    func testThatEveryFormBodyParsesBackUnderAnySplit() throws {
        var s = RequestSerializer()
        try s.setHeader("User-Agent", nil)
        var g = SeededGenerator(seed: 7)
        for round in 0..<30 {
            let form = try s.multipartForm(method: "POST", url: "http://h/", params: ["a": "1", "n": ["x": "y"], "q": #"back\slash "quote""#])
            var files: [(String, String, [UInt8])] = []
            for i in 0..<(1 + Int(g.next() % 4)) {
                let size = Int(g.next() % 5000)
                var data = (0..<size).map { _ in UInt8(truncatingIfNeeded: g.next()) }
                if size > 10 { data.replaceSubrange(3..<10, with: Array("\r\n--".utf8) + Array(form.boundary.utf8.prefix(3))) }
                let fname = i % 2 == 0 ? "f\(i)\\x \"q\".bin" : "plain\(i).txt"
                try form.appendFileData(data, name: "file\(i)", filename: fname, mimeType: "application/octet-stream")
                files.append(("file\(i)", fname, data))
            }
            try form.appendPart(headers: [("Content-Disposition", "form-data; name=\"custom\""), ("X-Trace", "abc")], body: [1, 2, 3])
            let r = try form.finish()
            let body = try drainBody(XCTUnwrap(r.bodyStream))
            let ct = try XCTUnwrap(r.header("Content-Type"))
            let splits = [[], [1], [Int(1 + g.next() % 17)], [4096, 3]][round % 4]
            let p = try MultipartParser(contentTypeOrBoundary: ct)
            let c = PartCollector()
            p.sink = c
            try body.withUnsafeBufferPointer { b in
                var i = 0, k = 0
                while i < b.count {
                    let n = splits.isEmpty ? b.count : Swift.min(splits[k % splits.count], b.count - i)
                    k += 1
                    try p.feed(UnsafeBufferPointer(rebasing: b[i..<(i + n)]))
                    i += n
                }
            }
            try p.finish()
            let parts = c.parts
            XCTAssertEqual(parts.map { text($0.head.name) }, ["a", "n[x]", "q"] + files.map(\.0) + ["custom"])
            XCTAssertEqual(text(parts[2].body), #"back\slash "quote""#)
            for (i, f) in files.enumerated() {
                XCTAssertEqual(text(parts[3 + i].head.filename), f.1)
                XCTAssertEqual(parts[3 + i].body, f.2, "round \(round) file \(i)")
            }
            XCTAssertEqual(text(parts.last?.head.header("X-Trace")), "abc")
            XCTAssertEqual(parts.last?.body, [1, 2, 3])
        }
    }

    func testThatHeaderValuesAreTrimmedWhenSetAndBackslashesEscaped() throws {
        var s = RequestSerializer()
        try s.setHeader("X-A", " \t v 1 \t ")
        XCTAssertEqual(s.header("X-A"), "v 1")
        var r = try s.request(method: "GET", url: "http://h/", params: nil)
        try r.setHeader("X-B", "  b  ")
        XCTAssertEqual(r.header("X-B"), "b")
        XCTAssertEqual(BodyPart.contentDisposition(name: #"a\b"#, filename: #"c\"#), #"form-data; name="a\\b"; filename="c\\""#)
    }

    func testThatTheReaderPullsPartsFromADescriptor() throws {
        let body = bytes("--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n") + [UInt8](repeating: 7, count: 200_000)
            + bytes("\r\n--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"t\"\r\n\r\nsecond\r\n--b--\r\n")
        let path = scratchPath("reader.bin")
        defer { unlink(path) }
        writeFile(path, body)
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var l = MultipartLimits()
        l.maxFieldBytes = 1 << 30
        let r = try MultipartReader(fd: fd, contentTypeOrBoundary: "b", limits: l)
        XCTAssertTrue(try r.nextPart())
        XCTAssertEqual(text(r.current?.name), "a")
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 1000)
        while true {
            let n = try buf.withUnsafeMutableBufferPointer { try r.read(into: $0.baseAddress!, max: 777) }
            if n == 0 { break }
            got += buf[0..<n]
        }
        XCTAssertEqual(got.count, 200_000)
        XCTAssertTrue(try r.nextPart())
        XCTAssertEqual(text(r.current?.filename), "t")
        XCTAssertFalse(try r.nextPart())  // the rest of "second" is skipped
    }
}
