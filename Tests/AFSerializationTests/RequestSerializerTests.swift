import XCTest
@testable import AFSerialization

final class RequestSerializerTests: XCTestCase {
    let url = "http://example.com"

    func testThatPOSTRequestsAreSerializedAsForms() throws {
        let r = try RequestSerializer().request(method: "POST", url: url, params: ["key": "value"])
        XCTAssertEqual(r.header("Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(r.body.map { String(decoding: $0, as: UTF8.self) }, "key=value")
    }

    func testThatPOSTWithoutParametersHasAnEmptyBody() throws {
        let r = try RequestSerializer().request(method: "POST", url: url, params: nil)
        XCTAssertEqual(r.body, [])
        XCTAssertEqual(r.header("Content-Type"), "application/x-www-form-urlencoded")
    }

    func testThatQueryParametersGoIntoTheURLBeforeTheFragment() throws {
        let s = RequestSerializer()
        XCTAssertEqual(try s.request(method: "GET", url: url, params: ["key": "value"]).url, "http://example.com?key=value")
        XCTAssertEqual(try s.request(method: "GET", url: url + "/p?a=1#top", params: ["key": "value"]).url,
                       "http://example.com/p?a=1&key=value#top")
        XCTAssertEqual(try s.request(method: "GET", url: url + "/p?", params: ["k": "v"]).url, "http://example.com/p?k=v")
        XCTAssertEqual(try s.request(method: "GET", url: url, params: [:]).url, url)
    }

    func testThatTheQueryCallbackReplacesTheDefaultAlgorithm() throws {
        var s = RequestSerializer()
        s.queryCallback = { _, _ in "moof" }
        XCTAssertEqual(try s.request(method: "GET", url: url, params: ["key": "value"]).url, "http://example.com?moof")
        struct Refused: Error {}
        s.queryCallback = { _, _ in throw Refused() }
        XCTAssertThrowsError(try s.request(method: "GET", url: url, params: ["key": "value"])) { e in
            XCTAssertEqual((e as? AFSError)?.status, .queryCallback)
        }
    }

    func testThatHeadersCanBeSetReadAndRemoved() throws {
        var s = RequestSerializer()
        try s.setHeader("Set-Header", "Actual Value")
        XCTAssertEqual(s.header("set-header"), "Actual Value")
        XCTAssertNil(s.header("Unset-Header"))
        try s.setHeader("SET-HEADER", nil)
        XCTAssertNil(s.header("Set-Header"))
        XCTAssertThrowsError(try s.setHeader("X", "a\rb"))
    }

    func testThatRequestHeadersWinOverSerializerHeaders() throws {
        var s = RequestSerializer()
        try s.setHeader("Accept", "text/plain")
        var r = try Request(method: "PUT", url: url)
        try r.setHeader("accept", "application/json")
        let out = try s.serialize(r, params: nil)
        XCTAssertEqual(out.header("Accept"), "application/json")
        XCTAssertEqual(out.headers.fields.filter { $0.name.lowercased() == "accept" }.count, 1)
    }

    func testThatAcceptLanguageFollowsTheEnvironment() {
        func al(_ env: [String: String]) -> String { DefaultHeaders.acceptLanguage { env[$0] } }
        XCTAssertEqual(al([:]), "en;q=1")
        XCTAssertEqual(al(["LANG": "C.UTF-8"]), "en;q=1")
        XCTAssertEqual(al(["LANG": "fr_FR.UTF-8"]), "fr-FR;q=1")
        XCTAssertEqual(al(["LC_ALL": "de_DE@euro", "LANG": "fr_FR"]), "de-DE;q=1")
        XCTAssertEqual(al(["LC_MESSAGES": "ja_JP.eucJP", "LANG": "fr_FR"]), "ja-JP;q=1")
        XCTAssertEqual(al(["LANGUAGE": "fr_FR:de:POSIX", "LANG": "it_IT"]), "fr-FR;q=1, de;q=0.9, en;q=0.8")
        XCTAssertEqual(al(["LANGUAGE": "a:b:c:d:e:f:g:h"]), "a;q=1, b;q=0.9, c;q=0.8, d;q=0.7, e;q=0.6, f;q=0.5")
    }

    func testThatTheUserAgentIsPrintableASCII() {
        let ua = DefaultHeaders.userAgent()
        XCTAssertTrue(ua.contains(") AFSerialization/\(AFSVersion.string)"), ua)
        XCTAssertTrue(ua.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
    }

    func testThatBasicAuthIsBase64() throws {
        var s = RequestSerializer()
        try s.setBasicAuth(user: "Aladdin", password: "open sesame")
        XCTAssertEqual(s.header("Authorization"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        s.clearAuthorization()
        XCTAssertNil(s.header("Authorization"))
        XCTAssertEqual(try Base64.encode(""), "")
        XCTAssertEqual(try Base64.encode("f"), "Zg==")
        XCTAssertEqual(try Base64.encode("fo"), "Zm8=")
        XCTAssertEqual(try Base64.encode("foo"), "Zm9v")
    }

    func testThatRequestPropertiesAreCopiedFromTheSerializer() throws {
        var s = RequestSerializer()
        s.properties.timeoutInterval = 5
        s.properties.allowsCellularAccess = false
        let r = try s.request(method: "GET", url: url, params: nil)
        XCTAssertEqual(r.properties.timeoutInterval, 5)
        XCTAssertFalse(r.properties.allowsCellularAccess)
        XCTAssertEqual(try Request(method: "GET", url: url).properties, RequestProperties())
    }

    func testThatBadURLsNameTheCharacterAndOffset() {
        let cases: [(String, String)] = [
            ("http://e.com/a\tb", "0x09 at offset 14"), ("e.com", "a base URL is needed"), ("1http://x", "'1' (0x31) at offset 0 cannot be part of a scheme"), ("h~p://x", "'~' (0x7E) at offset 1"),
            ("http://e.com:8x/", "'x' (0x78) at offset 14 in the port"), ("http://e.com:65536/", "exceeds 65535"),
            ("http://[::1/", "not closed by ']'"), ("http://a[::1]/", "'[' (0x5B) at offset 8 in the host"),
            ("http://[::1]x/", "after the IP literal"), ("http://e x/", "space (0x20) at offset 8 in the host"),
            ("http://[::1]:80[/", "'[' (0x5B) at offset 15 in the port"), ("http://[12345::1]/", "malformed IPv6 address"),
            // Fuzz/regressions/request_syntax/second-bracket-inside-an-ip-literal
            ("ftp://['[fe80::1%25en0]", "malformed IPv6 address"),
            ("http://[::1[]/", "malformed IPv6 address"),
        ]
        for (u, needle) in cases {
            XCTAssertThrowsError(try Request(method: "GET", url: u)) { e in
                XCTAssertEqual((e as? AFSError)?.status, .badURL, u)
                XCTAssertTrue((e as? AFSError)?.message.contains(needle) ?? false, "\(e)")
            }
        }
        for u in ["http://e.com", "https://u:p@e.com:8443/a/b;c?d=e&f=g#h", "mailto:a@b.c", "urn:isbn:0451450523",
                  "http://[2001:db8::1]/x", "http://e.com/%20", "http://u:p@[::1]:8080?q#f", "http://[::1]",
                  "HTTP://E.COM:80/a/../b/./c?", "http://[fe80::1%25en0]:8/", "http://[v7.x:y]/"] {
            XCTAssertEqual(try Request(method: "GET", url: u).url, u, "a valid URI is kept byte for byte")
        }
    }

    func testThatEncodingsRefuseWhatTheyCannotRepresent() throws {
        XCTAssertEqual(try StringEncoding.isoLatin1.encode("café", what: "x"), [0x63, 0x61, 0x66, 0xE9])
        XCTAssertThrowsError(try StringEncoding.ascii.encode("café", what: "the field")) { e in
            XCTAssertEqual((e as? AFSError)?.status, .encoding)
            XCTAssertEqual((e as? AFSError)?.message, "the field cannot be encoded as ASCII: U+E9 at byte offset 3")
        }
        XCTAssertThrowsError(try StringEncoding.isoLatin1.encode("€", what: "x"))
    }

    func testThatURIMethodsAreCaseInsensitive() throws {
        var s = RequestSerializer()
        try s.setURIMethods(["get", "Purge"])
        XCTAssertTrue(s.encodesParametersInURI("PURGE"))
        XCTAssertTrue(s.encodesParametersInURI("get"))
        XCTAssertFalse(s.encodesParametersInURI("DELETE"))
    }

    func testThatJSONSerializerFollowsAFNetworking() throws {
        let s = RequestSerializer(kind: .json)
        let r = try s.request(method: "POST", url: url, params: ["key": "value"])
        XCTAssertEqual(r.header("Content-Type"), "application/json")
        XCTAssertEqual(r.body.map { String(decoding: $0, as: UTF8.self) }, #"{"key":"value"}"#)
        let none = try s.request(method: "POST", url: url, params: nil)
        XCTAssertNil(none.body)
        XCTAssertNil(none.header("Content-Type"))
        let get = try s.request(method: "GET", url: url, params: ["key": "value"])
        XCTAssertEqual(get.url, "http://example.com?key=value")
        XCTAssertThrowsError(try s.request(method: "POST", url: url, params: ["n": .double(.nan)])) { e in
            XCTAssertEqual((e as? AFSError)?.status, .invalidJSON)
        }
    }

    func testThatPropertyListSerializerSetsItsContentType() throws {
        var s = RequestSerializer(kind: .propertyList)
        let r = try s.request(method: "POST", url: url, params: ["key": "value"])
        XCTAssertEqual(r.header("Content-Type"), "application/x-plist")
        XCTAssertTrue(r.body.map { $0.starts(with: Array("<?xml".utf8)) } ?? false)
        s.plistFormat = .binary
        XCTAssertTrue(try s.request(method: "POST", url: url, params: ["key": "value"]).body?.starts(with: Array("bplist00".utf8)) ?? false)
        XCTAssertThrowsError(try s.request(method: "POST", url: url, params: ["k": nil])) { e in
            XCTAssertEqual((e as? AFSError)?.status, .invalidPlist)
        }
    }

    func testThatSerializingAMultipartRequestReplacesItsBodyStream() throws {
        let form = try RequestSerializer().multipartForm(method: "POST", url: url, params: ["a": "1"])
        let multipart = try form.finish()
        XCTAssertNotNil(multipart.bodyStream)
        XCTAssertNil(multipart.body)
        let plain = try RequestSerializer().serialize(multipart, params: ["b": "2"])
        XCTAssertNil(plain.bodyStream)
        XCTAssertEqual(plain.body, Array("b=2".utf8))
    }

    func testThatManyThreadsCanBuildFromOneSerializer() throws {
        var s = RequestSerializer()
        try s.setHeader("X-Shared", "1")
        let shared = s, target = url
        DispatchQueue.concurrentPerform(iterations: 2000) { i in
            let r = try? shared.request(method: i % 2 == 0 ? "GET" : "POST", url: target, params: ["i": .int(Int64(i))])
            XCTAssertEqual(r?.header("X-Shared"), "1")
        }
    }
}
