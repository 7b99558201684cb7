import XCTest
@testable import AFSerialization

/// Bugs found by the fuzz targets (Fuzz/), each with its input in Fuzz/regressions/.
final class FuzzRegressionTests: XCTestCase {
    func chain(_ depth: Int, dict: Bool) -> Value {
        var v: Value = 1
        for _ in 0..<depth { v = dict ? .dict(ValueDict([("k", v)])) : .array([v]) }
        return v
    }

    /// plist_write (Fuzz/regressions/plist_write/tree-deeper-than-512): the writer accepted
    /// trees nested deeper than the reader's limit (and, much deeper, would have exhausted the
    /// stack); now it refuses them as the JSON writer does.
    func testThatThePlistWriterRefusesTreesDeeperThanTheReaderAccepts() throws {
        for format in [PropertyListFormat.xml, .binary] {
            for dict in [false, true] {
                let ok = chain(PropertyListWriter.maxDepth, dict: dict)
                let bytes = try PropertyListWriter.data(ok, format: format)
                XCTAssertEqual(try PropertyListReader.parse(bytes), ok)
                XCTAssertThrowsError(try PropertyListWriter.data(chain(PropertyListWriter.maxDepth + 1, dict: dict), format: format)) {
                    let e = $0 as! AFSError
                    XCTAssertEqual(e.status, .invalidPlist)
                    XCTAssertTrue(e.message.contains("nested deeper than 512 levels"), e.message)
                }
            }
        }
    }

    /// multipart_stream (Fuzz/regressions/multipart_stream/seek-closing-after-failed-
    /// nonrewindable-callback): after the last part's callback (without rewind) failed, a seek
    /// into the closing boundary or to the end was refused as if the callback had to be read
    /// again, although nothing of it is read from there.
    func testThatASeekPastAFailedCallbackWithoutRewindIntoTheClosingBoundarySucceeds() throws {
        let form = try RequestSerializer().multipartForm(method: "POST", url: "http://h/", params: nil)
        try form.setBoundary("b")
        // Declares 3 bytes and yields 4: the end check fails.
        try form.appendStream(TestSource([1, 2, 3, 4], canRewind: false), length: 3, name: "cb", filename: "c.bin")
        let s = try XCTUnwrap(form.finish().bodyStream)
        var buf = [UInt8](repeating: 0, count: 1024)
        XCTAssertEqual(s.read(into: &buf, maxLength: buf.count), -1)
        XCTAssertEqual(s.error?.status, .lengthMismatch)

        let closing = Array("\r\n--b--\r\n".utf8)
        let total = s.contentLength
        try s.seek(to: total - UInt64(closing.count) + 2)
        XCTAssertNil(s.error)
        let n = s.read(into: &buf, maxLength: buf.count)
        XCTAssertEqual(Array(buf[0..<max(n, 0)]), Array(closing[2...]))
        XCTAssertEqual(s.read(into: &buf, maxLength: buf.count), 0)
        try s.seek(to: total)
        XCTAssertEqual(s.read(into: &buf, maxLength: buf.count), 0)

        // Just after the body the part is skipped: nothing of the callback is needed.
        try s.seek(to: total - UInt64(closing.count))
        XCTAssertEqual(s.read(into: &buf, maxLength: buf.count), closing.count)
        // Going back into the part still needs the callback again: refused.
        XCTAssertThrowsError(try s.seek(to: total - UInt64(closing.count) - 1)) {
            XCTAssertEqual(($0 as! AFSError).status, .unsupported)
        }
        XCTAssertThrowsError(try s.rewind()) { XCTAssertEqual(($0 as! AFSError).status, .unsupported) }
    }

    /// multipart_stream (Fuzz/regressions/multipart_stream/seek-to-the-end-of-a-short-
    /// callback-body): a seek to the first byte after a callback part's body skipped the part
    /// unread when another part followed, but checked the source's length (reading the whole
    /// part) when it was the last part. Now every part is skipped alike; reads that go
    /// through a body still check its end, so a dishonest length is never read from 0.
    func testThatASeekJustAfterACallbackBodySkipsThePartWhetherOrNotItIsTheLast() throws {
        for last in [false, true] {
            let form = try RequestSerializer().multipartForm(method: "POST", url: "http://h/", params: nil)
            try form.setBoundary("b")
            // Declares 32 bytes and yields 16.
            let source = TestSource(Array(1...16))
            try form.appendStream(source, length: 32, name: "cb", filename: "c.bin")
            if !last { try form.appendFormData(Array("v".utf8), name: "f") }
            let request = try form.finish()
            let s = try XCTUnwrap(request.bodyStream)
            let whole = try XCTUnwrap(request.header("Content-Length").flatMap { UInt64($0) })
            let header = Array("--b\r\nContent-Disposition: form-data; name=\"cb\"; filename=\"c.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n".utf8)
            let after = UInt64(header.count) + 32
            var rest = Array("\r\n--b".utf8)
            if !last { rest += Array("\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n--b".utf8) }
            rest += Array("--\r\n".utf8)
            XCTAssertEqual(after + UInt64(rest.count), whole)

            try s.seek(to: after)
            var buf = [UInt8](repeating: 0, count: 1024)
            let n = s.read(into: &buf, maxLength: buf.count)
            XCTAssertEqual(Array(buf[0..<max(n, 0)]), rest, "last: \(last)")
            XCTAssertEqual(source.pos, 0, "the skipped part's source was called (last: \(last))")
            XCTAssertEqual(s.read(into: &buf, maxLength: buf.count), 0)

            // From the start the short source is found, whatever the read sizes.
            for size in [1, 16, header.count + 16, header.count + 32, 1024] {
                try s.rewind()
                var got = 0
                var n = 0
                repeat {
                    n = s.read(into: &buf, maxLength: size)
                    got += max(n, 0)
                } while n > 0
                XCTAssertEqual(n, -1, "size \(size), last: \(last)")
                XCTAssertEqual(s.error?.status, .lengthMismatch, "size \(size), last: \(last)")
                // A failing call delivers nothing: at most the 16 honest bytes came before.
                XCTAssertLessThanOrEqual(got, header.count + 16, "size \(size), last: \(last)")
                XCTAssertEqual(s.position, UInt64(got), "size \(size), last: \(last)")
            }
        }
    }
}
