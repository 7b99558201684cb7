import XCTest

@testable import AFSerialization

/// AFHTTPResponseSerializationTests, re-expressed; status ranges, MIME types and messages.
final class ResponseHTTPSerializerTests: XCTestCase {
    let serializer = ResponseSerializer(kind: .http)

    // MARK: AFNetworking's tests

    func testThatAFHTTPResponseSerializationHandlesAll2XXCodes() {
        for code in 200..<300 {
            XCTAssertNil(validationError(serializer, code, "text/html", "text"), "status \(code)")
        }
    }

    func testThatAFHTTPResponseSerializationFailsAll4XX5XXStatusCodes() {
        for code in 400..<600 {
            let e = validationError(serializer, code, "text/html", "text")
            XCTAssertEqual(e?.status, .unacceptableStatus, "status \(code)")
        }
    }

    func testThatAFHTTPResponseSerializationSucceedsWith205WithNoResponseContentTypeAndNoResponseData() throws {
        var s = serializer
        try s.setAcceptableContentTypes(["text/html"])
        XCTAssertNil(validationError(s, 205, nil, ""))
        XCTAssertEqual(validationError(s, 205, nil, "test")?.status, .unacceptableContentType)
    }

    func testThatAFHTTPResponseSerializationFailsWith205WithNoResponseContentTypeAndResponseData() throws {
        var s = serializer
        try s.setAcceptableContentTypes(["text/html"])
        let e = validationError(s, 205, nil, "test")
        XCTAssertEqual(e?.status, .unacceptableContentType)
        XCTAssertEqual(e?.message, "Request failed: unacceptable content-type: (none)")
    }

    func testResponseIsValidated() {
        XCTAssertNil(validationError(serializer, 200, "text/html", "text"))
    }

    func testCanBeCopied() throws {
        var s = serializer
        try s.setAcceptableContentTypes(["text/html"])
        var copy = s
        copy.setAcceptableStatusCodes([100...599])
        XCTAssertEqual(copy.acceptableContentTypes, ["text/html"])
        XCTAssertEqual(s.acceptableStatusCodes, [200...299])
        XCTAssertEqual(copy.acceptableStatusCodes, [100...599])
    }

    // MARK: Messages

    func testThatStatusErrorsAreWordedAsAFNetworking() {
        let cases: [(Int, String)] = [
            (404, "Request failed: not found (404)"),
            (500, "Request failed: internal server error (500)"),
            (401, "Request failed: unauthorized (401)"),
            (403, "Request failed: forbidden (403)"),
            (400, "Request failed: bad request (400)"),
            (503, "Request failed: service unavailable (503)"),
            (301, "Request failed: moved permanently (301)"),
            (418, "Request failed: i'm a teapot (418)"),
            (499, "Request failed: client error (499)"),
            (599, "Request failed: server error (599)"),
            (199, "Request failed: informational (199)"),
            (700, "Request failed: unknown status (700)"),
            (-1, "Request failed: unknown status (-1)"),
        ]
        for (code, message) in cases {
            let e = validationError(serializer, code, "text/html", "x")
            XCTAssertEqual(e?.status, .unacceptableStatus)
            XCTAssertEqual(e?.message, message)
        }
    }

    func testThatContentTypeErrorsNameTheMIMETypeAsSent() throws {
        var s = serializer
        try s.setAcceptableContentTypes(["application/json"])
        XCTAssertEqual(validationError(s, 200, "text/html; charset=utf-8", "x")?.message,
                       "Request failed: unacceptable content-type: text/html")
        XCTAssertEqual(validationError(s, 200, "Text/HTML", "x")?.message,
                       "Request failed: unacceptable content-type: Text/HTML")
        XCTAssertEqual(validationError(s, 200, "a\u{1}b", "x")?.message,
                       "Request failed: unacceptable content-type: a\\x01b")
    }

    func testThatBothFailuresGiveTheStatusErrorNamingTheTypeToo() throws {
        var s = serializer
        try s.setAcceptableContentTypes(["application/json"])
        let e = validationError(s, 404, "text/html", "<html>")
        XCTAssertEqual(e?.status, .unacceptableStatus)
        XCTAssertEqual(e?.message, "Request failed: not found (404); unacceptable content-type: text/html")
        let r = respond(s, 404, "text/html", "<html>")
        XCTAssertNil(r.value, "an unacceptable type is never decoded")
        XCTAssertEqual(r.error, e)
    }

    // MARK: MIME type parsing

    func testThatTheMIMETypeIsTheContentTypeWithoutParameters() {
        XCTAssertEqual(ResponseSerializer.mimeType(of: "application/json; charset=utf-8"), "application/json")
        XCTAssertEqual(ResponseSerializer.mimeType(of: " \tapplication/json \t;charset=utf-8"), "application/json")
        XCTAssertEqual(ResponseSerializer.mimeType(of: "application/json"), "application/json")
        XCTAssertNil(ResponseSerializer.mimeType(of: nil))
        XCTAssertNil(ResponseSerializer.mimeType(of: ""))
        XCTAssertNil(ResponseSerializer.mimeType(of: "  ; charset=utf-8"))
    }

    func testThatMIMETypesCompareCaseInsensitively() throws {
        var s = serializer
        try s.setAcceptableContentTypes(["Application/JSON"])
        XCTAssertEqual(s.acceptableContentTypes, ["application/json"])
        XCTAssertNil(validationError(s, 200, "APPLICATION/json; Charset=UTF-8", "x"))
        XCTAssertNil(validationError(s, 200, "application/json", "x"))
    }

    func testThatAnEmptyContentTypeIsAnAbsentOne() throws {
        var s = serializer
        try s.setAcceptableContentTypes(["text/plain"])
        XCTAssertNil(validationError(s, 204, "", ""))
        XCTAssertEqual(validationError(s, 200, " ", "x")?.message, "Request failed: unacceptable content-type: (none)")
        // A present but unacceptable type is refused even with an empty body.
        XCTAssertEqual(validationError(s, 204, "text/html", "")?.status, .unacceptableContentType)
    }

    func testThatAcceptableContentTypesMustBeMIMETypes() {
        var s = serializer
        for bad in ["", "json", "/json", "application/", "text/html; charset=utf-8", "text /html", "a/b/c\u{0}", "tëxt/html"] {
            XCTAssertThrowsError(try s.setAcceptableContentTypes(["text/plain", bad]), bad) { e in
                XCTAssertEqual((e as? AFSError)?.status, .invalidArgument)
                XCTAssertTrue((e as? AFSError)?.message.hasPrefix("acceptable content type 1 ") ?? false)
            }
        }
        XCTAssertNoThrow(try s.setAcceptableContentTypes(["application/vnd.api+json", "*/*"]))
        XCTAssertNoThrow(try s.setAcceptableContentTypes(nil))
        XCTAssertNil(s.acceptableContentTypes)
        XCTAssertNoThrow(try s.setAcceptableContentTypes([]))
        XCTAssertNil(s.acceptableContentTypes, "an empty list accepts any type")
    }

    // MARK: Status ranges

    func testThatStatusRangesAreInclusiveAndSeveral() throws {
        var s = serializer
        try s.setAcceptableStatusCodes([(first: 200, last: 204), (first: 304, last: 304), (first: 400, last: 404)])
        for code in [200, 204, 304, 400, 404] { XCTAssertNil(validationError(s, code, nil, "x"), "\(code)") }
        for code in [199, 205, 303, 305, 399, 405, 500] {
            XCTAssertEqual(validationError(s, code, nil, "x")?.status, .unacceptableStatus, "\(code)")
        }
    }

    func testThatNoStatusRangesAcceptEveryStatus() throws {
        var s = serializer
        try s.setAcceptableStatusCodes([(first: Int, last: Int)]())
        XCTAssertNil(s.acceptableStatusCodes)
        for code in [-5, 0, 100, 404, 999] { XCTAssertNil(validationError(s, code, nil, "x")) }
    }

    func testThatAnEmptyRangeIsRefused() {
        var s = serializer
        XCTAssertThrowsError(try s.setAcceptableStatusCodes([(first: 200, last: 299), (first: 300, last: 299)])) { e in
            XCTAssertEqual(e as? AFSError, AFSError(.invalidArgument,
                "acceptable status code range 1 is empty: first 300 is greater than last 299"))
        }
        XCTAssertEqual(s.acceptableStatusCodes, [200...299], "unchanged after a failure")
    }

    // MARK: Decoding

    func testThatTheHTTPSerializerReturnsTheBodyAsData() {
        let r = respond(serializer, 200, "text/html", "<p>hi</p>")
        XCTAssertNil(r.error)
        XCTAssertEqual(r.value, .data(Array("<p>hi</p>".utf8)))
        XCTAssertEqual(respond(serializer, 200, nil, " ").value, .data([0x20]), "the single-space rule is for decoders")
        let empty = respond(serializer, 200, nil, "")
        XCTAssertNil(empty.value)
        XCTAssertNil(empty.error)
    }

    func testThatAnUnacceptableStatusStillReturnsTheBody() {
        let r = respond(serializer, 500, "text/plain", "oops")
        XCTAssertEqual(r.error?.status, .unacceptableStatus)
        XCTAssertEqual(r.value, .data(Array("oops".utf8)))
    }

    func testThatReasonPhrasesCoverTheRegistry() {
        XCTAssertEqual(HTTPStatus.reasonPhrase(200), "ok")
        XCTAssertEqual(HTTPStatus.reasonPhrase(204), "no content")
        XCTAssertEqual(HTTPStatus.reasonPhrase(429), "too many requests")
        XCTAssertEqual(HTTPStatus.reasonPhrase(511), "network authentication required")
        XCTAssertEqual(HTTPStatus.reasonPhrase(299), "success")
        XCTAssertEqual(HTTPStatus.reasonPhrase(399), "redirection")
    }
}
