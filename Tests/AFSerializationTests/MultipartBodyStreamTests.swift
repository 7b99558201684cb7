import XCTest
@testable import AFSerialization

#if canImport(Glibc)
import Glibc
#endif

/// A callback source over bytes that can yield more or fewer than declared, fail, and
/// count its rewinds.
final class TestSource: PartStreamSource {
    let data: [UInt8]
    var pos = 0
    var failAt: Int?
    var rewinds = 0
    let canRewind: Bool

    init(_ data: [UInt8], canRewind: Bool = true) {
        self.data = data
        self.canRewind = canRewind
    }

    func read(into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        if let f = failAt, pos >= f { return -1 }
        let k = Swift.min(maxLength, data.count - pos)
        data.withUnsafeBufferPointer { _ = memcpy(buffer, $0.baseAddress! + pos, k) }
        pos += k
        return k
    }

    func rewind() -> Bool {
        pos = 0
        rewinds += 1
        return true
    }
}

final class MultipartBodyStreamTests: XCTestCase {
    let serializer = RequestSerializer()

    func streamWith(_ source: TestSource, declared: UInt64) throws -> MultipartBodyStream {
        let form = try serializer.multipartForm(method: "POST", url: "http://h/", params: nil)
        try form.setBoundary("b")
        try form.appendFormData(Array("head".utf8), name: "first")
        try form.appendStream(source, length: declared, name: "cb", filename: "c.bin")
        try form.appendFormData(Array("tail".utf8), name: "last")
        return try XCTUnwrap(form.finish().bodyStream)
    }

    func testThatAStreamYieldingFewerBytesThanDeclaredFailsAndStaysFailed() throws {
        let s = try streamWith(TestSource(Array(repeating: 7, count: 100)), declared: 101)
        XCTAssertThrowsError(try drainBody(s)) { XCTAssertEqual(($0 as! AFSError).status, .lengthMismatch) }
        var b: UInt8 = 0
        XCTAssertEqual(s.read(into: &b, maxLength: 1), -1)
        XCTAssertEqual(s.error?.status, .lengthMismatch)
        XCTAssertEqual(s.position, 0)
        XCTAssertFalse(s.hasBytesAvailable)
        try s.rewind()
        XCTAssertNil(s.error)
    }

    func testThatAStreamYieldingMoreBytesThanDeclaredNeverEmitsThem() throws {
        let s = try streamWith(TestSource(Array(repeating: 7, count: 100)), declared: 99)
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 1)
        while true {
            let n = buf.withUnsafeMutableBufferPointer { s.read(into: $0.baseAddress, maxLength: 1) }
            if n <= 0 {
                XCTAssertEqual(n, -1)
                break
            }
            got += buf
        }
        XCTAssertEqual(s.error?.status, .lengthMismatch)
        XCTAssertFalse(String(decoding: got, as: UTF8.self).contains("last"))
    }

    func testThatSeekingRewindsAndSkipsCallbacks() throws {
        let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0) }
        let src = TestSource(data)
        let s = try streamWith(src, declared: 1000)
        let whole = try drainBody(s)
        for offset in [0, 1, 50, 150, 600, whole.count - 1, whole.count] {
            try s.seek(to: UInt64(offset))
            XCTAssertEqual(try drainBody(s, chunk: 0), Array(whole[offset...]))
        }
        XCTAssertGreaterThan(src.rewinds, 0)
        XCTAssertThrowsError(try s.seek(to: UInt64(whole.count + 1))) {
            XCTAssertEqual(($0 as! AFSError).status, .invalidArgument)
        }
    }

    func testThatRewindingACallbackWithoutRewindIsUnsupported() throws {
        let src = TestSource(Array(repeating: 1, count: 500), canRewind: false)
        let s = try streamWith(src, declared: 500)
        _ = try drainBody(s)
        XCTAssertThrowsError(try s.rewind()) { XCTAssertEqual(($0 as! AFSError).status, .unsupported) }
        XCTAssertEqual(s.position, s.contentLength)
    }

    func testThatAFailingCallbackIsAnIOError() throws {
        let src = TestSource(Array(repeating: 1, count: 500))
        src.failAt = 200
        let s = try streamWith(src, declared: 500)
        XCTAssertThrowsError(try drainBody(s, chunk: 64)) { XCTAssertEqual(($0 as! AFSError).status, .io) }
        src.failAt = nil
        try s.seek(to: s.position)
        XCTAssertNoThrow(try drainBody(s))
    }

    func testThatProgressEndsWithTheTotalAndClosedStreamsRefuseWork() throws {
        let s = try streamWith(TestSource(Array(repeating: 1, count: 5000)), declared: 5000)
        var calls: [(UInt64, UInt64)] = []
        s.progress = { calls.append(($0, $1)) }
        _ = try drainBody(s, chunk: 1000)
        XCTAssertEqual(calls.last?.0, s.contentLength)
        XCTAssertEqual(calls.last?.1, s.contentLength)
        XCTAssertEqual(calls.map(\.0), calls.map(\.0).sorted())
        s.close()
        var b: UInt8 = 0
        XCTAssertEqual(s.read(into: &b, maxLength: 1), -1)
        XCTAssertEqual(s.error?.status, .state)
        XCTAssertThrowsError(try s.open())
        XCTAssertThrowsError(try s.seek(to: 0))
    }

    func testThatWritingToAFileGivesTheSameBytes() throws {
        let path = scratchPath("write.out")
        let src = scratchPath("write.src")
        defer { unlink(path); unlink(src) }
        writeFile(src, (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let form = try serializer.multipartForm(method: "POST", url: "http://h/", params: ["a": 1])
        try form.appendFile(path: src, name: "f")
        let r = try form.finish()
        let s = try XCTUnwrap(r.bodyStream)
        let whole = try drainBody(s)
        let copy = try r.writingBody(toFile: path)
        XCTAssertNil(copy.bodyStream)
        XCTAssertEqual(copy.header("Content-Length"), String(whole.count))
        let fd = open(path, O_RDONLY)
        var onDisk = [UInt8](repeating: 0, count: whole.count + 10)
        let n = onDisk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        close(fd)
        XCTAssertEqual(Array(onDisk[0..<n]), whole)

        try s.rewind()
        let out = open(path, O_WRONLY | O_TRUNC)
        var written: UInt64 = 0
        try s.write(to: out, written: &written)
        close(out)
        XCTAssertEqual(written, UInt64(whole.count))
        XCTAssertEqual(s.position, s.contentLength)
    }

    func testThatLocateFindsEveryPhase() throws {
        let form = try serializer.multipartForm(method: "POST", url: "http://h/", params: nil)
        try form.setBoundary("b")
        try form.appendFormData([1, 2], name: "x")
        let s = try XCTUnwrap(form.finish().bodyStream)
        // "--b\r\n" (5) + headers (44) + body (2) + "\r\n--b--\r\n" (9)
        XCTAssertEqual(s.contentLength, 5 + 44 + 2 + 9)
        XCTAssertEqual(s.locate(0).1, .boundary)
        XCTAssertEqual(s.locate(5).1, .headers)
        XCTAssertEqual(s.locate(49).1, .body)
        XCTAssertEqual(s.locate(50).2, 1)
        // Just after the body: the part is behind, as it is for a part with a successor.
        XCTAssertEqual(s.locate(51).1, .closing)
        XCTAssertEqual(s.locate(51).2, 0)
        XCTAssertEqual(s.locate(52).1, .closing)
        XCTAssertEqual(s.locate(52).2, 1)
        XCTAssertEqual(s.locate(60).1, .end)

        let two = try serializer.multipartForm(method: "POST", url: "http://h/", params: nil)
        try two.setBoundary("b")
        try two.appendFormData([1, 2], name: "x")
        try two.appendFormData([], name: "y")
        let t = try XCTUnwrap(two.finish().bodyStream)
        // Part 1 starts at 51 with "\r\n--b\r\n" (7) + headers (44) + an empty body.
        XCTAssertTrue(t.locate(51) == (1, .boundary, 0))
        XCTAssertTrue(t.locate(58) == (1, .headers, 0))
        XCTAssertTrue(t.locate(102) == (1, .closing, 0))  // the empty body is behind too
        XCTAssertTrue(t.locate(t.contentLength) == (1, .end, 0))
    }
}
