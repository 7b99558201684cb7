// The library owns the framing (issue 19): callers cannot set Content-Length or
// Transfer-Encoding, and a request head always carries exactly one framing that matches
// the bytes that follow it.
@testable import AFSerialization
import XCTest

final class FramingTests: XCTestCase {
    func testRequestRefusesFramingHeaders() throws {
        var r = try Request(method: "POST", url: "http://example.com/x")
        for name in ["Content-Length", "content-length", "Transfer-Encoding", "TRANSFER-ENCODING"] {
            for value in ["5", "chunked", nil] as [String?] {
                XCTAssertThrowsError(try r.setHeader(name, value)) { e in
                    let e = e as! AFSError
                    XCTAssertEqual(e.status, .invalidHeader)
                    XCTAssertTrue(e.message.contains("\"\(name)\"") && e.message.contains("the library frames the body"), e.message)
                }
            }
        }
        XCTAssertNil(r.header("Content-Length"))
        try r.setHeader("Content-Type", "text/plain")  // others still go through
        try r.setHeader("Content-Length-Extra", "1")
    }

    func testSerializerRefusesFramingDefaults() throws {
        var s = RequestSerializer(kind: .http)
        XCTAssertThrowsError(try s.setHeader("Content-Length", "300")) { XCTAssertEqual(($0 as! AFSError).status, .invalidHeader) }
        XCTAssertThrowsError(try s.setHeader("Transfer-Encoding", "chunked")) { XCTAssertEqual(($0 as! AFSError).status, .invalidHeader) }
        XCTAssertNil(s.header("Content-Length"))
    }

    /// Framing headers put straight into `headers` by Swift code do not reach the head: the
    /// one Content-Length is the body's.
    func testHeadWritesTheBodysLengthOnly() throws {
        var r = try Request(method: "POST", url: "http://example.com/x")
        r.body = Array("hello world".utf8)
        r.headers.set("Content-Length", "5")
        r.headers.set("X-A", "1")
        r.headers.set("Transfer-Encoding", "chunked")
        let head = String(decoding: try r.head(), as: UTF8.self)
        XCTAssertEqual(head, "POST /x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 11\r\nX-A: 1\r\n\r\n")
        var g = try Request(method: "GET", url: "http://example.com/")
        g.headers.set("Content-Length", "3")
        XCTAssertEqual(String(decoding: try g.head(), as: UTF8.self), "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
    }
}
