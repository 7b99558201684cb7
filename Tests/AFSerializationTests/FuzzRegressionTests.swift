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

        // Going back into the part still needs the callback again: refused.
        XCTAssertThrowsError(try s.seek(to: total - UInt64(closing.count))) {
            XCTAssertEqual(($0 as! AFSError).status, .unsupported)
        }
        XCTAssertThrowsError(try s.rewind()) { XCTAssertEqual(($0 as! AFSError).status, .unsupported) }
    }
}
