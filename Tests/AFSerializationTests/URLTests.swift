import XCTest
@testable import AFSerialization

/// URL intake, IDNA, RFC 3986 resolution, base URLs and the request as HTTP/1.1 bytes.
final class URLTests: XCTestCase {
    func intake(_ s: String) throws -> String { try HTTPSyntax.intakeURL(s) }

    func testThatURLsPeopleWriteAreEncodedByTheRules() throws {
        let cases: [(String, String)] = [
            ("https://api.example.com/articles?filter[title]=x", "https://api.example.com/articles?filter%5Btitle%5D=x"),
            ("https://example.com/movies?hd=[1]", "https://example.com/movies?hd=%5B1%5D"),
            ("https://de.wikipedia.org/wiki/Köln", "https://de.wikipedia.org/wiki/K%C3%B6ln"),
            ("https://example.com/a b", "https://example.com/a%20b"),
            ("https://example.com/?q=a|b", "https://example.com/?q=a%7Cb"),
            ("https://example.com/?q={x}", "https://example.com/?q=%7Bx%7D"),
            ("http://e.com/\"<>\\^`{|}", "http://e.com/%22%3C%3E%5C%5E%60%7B%7C%7D"),
            ("http://e.com/100%", "http://e.com/100%25"), ("http://e.com/%zz%4", "http://e.com/%25zz%254"),
            ("http://e.com/%c3%A9", "http://e.com/%c3%A9"),
            ("http://e.com/#a#b", "http://e.com/#a%23b"), ("http://a@b:c@e.com/", "http://a%40b:c@e.com/"),
            ("http://us er@e.com/", "http://us%20er@e.com/"), ("http://[x]@e.com/", "http://%5Bx%5D@e.com/"),
            ("  http://e.com/x  ", "http://e.com/x"), ("http://e.com/?a=日本", "http://e.com/?a=%E6%97%A5%E6%9C%AC"),
            ("http://e.com/#ü", "http://e.com/#%C3%BC"),
            ("https://Bücher.example:8080/x", "https://xn--bcher-kva.example:8080/x"),
            ("http://日本語。ＪＰ/", "http://xn--wgv71a119e.jp/"), ("http://faß.de/", "http://xn--fa-hia.de/"),
            ("http://u:p@☃.net/", "http://u:p@xn--n3h.net/"), ("http://e\u{301}.com", "http://xn--9ca.com"),
            ("http://مثال.إختبار/", "http://xn--mgbh0fb.xn--kgbechtv/"),
            ("http://ok\u{94D}\u{200D}x.com", "http://xn--okx-tmh4320a.com"),
            ("http://a.b.c.\u{5E9}\u{5C1}1.com", "http://a.b.c.xn--1-4gc3j.com"),
            ("http://4.\u{5D5}/", "http://4.xn--9db/"),  // Bidi rules only for right-to-left labels (as ada)
        ]
        for (input, want) in cases {
            XCTAssertEqual(try intake(input), want, input)
            XCTAssertEqual(try intake(want), want, "the output of intake is kept as it is: \(want)")
        }
    }

    func testThatValidURIsAreKeptByteForByte() throws {
        for u in ["HTTP://Example.COM:0080/a/./b/../c;p?q=%7e&r#frag", "http://e.com", "http://e.com:/", "http:e.com/x",
                  "mailto:John.Doe@example.com", "urn:oasis:names:specification:docbook:dtd:xml:4.1.2",
                  "http://[::FFFF:129.144.52.38]:80/index.html", "http://[2010:836B:4179::836B:4179]",
                  "https://example.com/movies?hd=%5B1%5D", "http://%C3%A9.com/", "http://xn--a.com/",
                  "http://a!$&'()*+,;=b.com/?/?:@#/?:@", "tel:+1-816-555-1212", "http://u:p:q@e.com/"] {
            XCTAssertEqual(try intake(u), u)
        }
    }

    func testThatWhatIsStillRefusedSaysWhereAndWhy() {
        let cases: [(String, String)] = [
            ("http://e.com/a\rb", "control character 0x0D at offset 14"), ("http://e.com/\u{7F}", "0x7F at offset 13"),
            ("http://e.com\n/", "0x0A at offset 12"), ("http://e.com:99999/", "exceeds 65535"),
            ("http://e.com:-1/", "'-' (0x2D) at offset 13 in the port"), ("http://e|x.com/", "'|' (0x7C) at offset 8 in the host"),
            ("http://e%zz.com/", "'%' at offset 8 in the host"), ("http://[::1:/", "not closed"), ("http://[1:2:3]/", "malformed IPv6"),
            ("http://[::1]a/", "after the IP literal"), ("users/1", "a base URL is needed"), ("/users/1", "a base URL is needed"),
            ("", "empty"), ("   ", "empty"),
            ("http://a.ß\u{200C}.com/", "ZERO WIDTH NON-JOINER"), ("http://a\u{200D}b.com", "ZERO WIDTH JOINER"),
            ("http://\u{661}\u{662}\u{663}.com", "RFC 5893"), ("http://\u{301}a.com", "combining mark U+0301"),
            ("http://a\u{FFFF}.com", "U+FFFF is not allowed"), ("http://\u{AD}/", "empty after IDNA"),
            ("http://xn--ü.com", "non-ASCII"), ("http://ü.xn--a-.com", "Punycode"), ("http://ü.a<b.com", "'<' (0x3C) at offset 11 in the host"),
            ("http://%FF\u{E9}.com", "not UTF-8 after percent-decoding"),
        ]
        for (u, needle) in cases {
            XCTAssertThrowsError(try intake(u), u) { e in
                XCTAssertEqual((e as? AFSError)?.status, .badURL, u)
                XCTAssertTrue((e as? AFSError)?.message.contains(needle) ?? false, "\(u): \(e)")
            }
        }
    }

    func testThatPunycodeMatchesRFC3492Samples() {
        // RFC 3492 section 7.1: (A) Arabic (Egyptian), (L) 3<nen>B<gumi><kinpachi><sensei>.
        let arabic: [UInt32] = [0x644, 0x64A, 0x647, 0x645, 0x627, 0x628, 0x62A, 0x643, 0x644, 0x645, 0x648, 0x634,
                                0x639, 0x631, 0x628, 0x64A, 0x61F]
        XCTAssertEqual(Punycode.encode(arabic).map { String(decoding: $0, as: UTF8.self) }, "egbpdaj6bu4bxfgehfvwxn")
        let l: [UInt32] = [0x33, 0x5E74, 0x42, 0x7D44, 0x91D1, 0x516B, 0x5148, 0x751F]
        XCTAssertEqual(Punycode.encode(l).map { String(decoding: $0, as: UTF8.self) }, "3B-ww4c5e180e575a65lsy2b")
        XCTAssertEqual(Punycode.decode("egbpdaj6bu4bxfgehfvwxn".unicodeScalars.map(\.value)), arabic)
        XCTAssertEqual(Punycode.decode("3B-ww4c5e180e575a65lsy2b".unicodeScalars.map(\.value)), l)
        XCTAssertNil(Punycode.decode("a-".unicodeScalars.map(\.value)))
        XCTAssertNil(Punycode.decode("99999999999999".unicodeScalars.map(\.value)))
    }

    func testThatNFCComposesAndReorders() {
        let d = IDNAData.shared
        XCTAssertEqual(NFC.normalize([0x65, 0x301], d), [0xE9])
        XCTAssertEqual(NFC.normalize([0x61, 0x323, 0x302], d), [0x1EAD])  // ậ
        XCTAssertEqual(NFC.normalize([0x61, 0x302, 0x323], d), [0x1EAD])  // reordered first
        XCTAssertEqual(NFC.normalize([0x1100, 0x1161, 0x11A8], d), [0xAC01])  // Hangul LVT
        XCTAssertEqual(NFC.normalize([0x2126], d), [0x3A9])  // singleton: OHM SIGN -> OMEGA
        XCTAssertEqual(NFC.normalize([0x915, 0x93C], d), [0x915, 0x93C])  // composition exclusion (U+0958)
    }

    // MARK: Resolution

    /// RFC 3986 section 5.4.1 and 5.4.2, base "http://a/b/c/d;p?q".
    static let rfc3986Examples: [(String, String)] = [
        ("g:h", "g:h"), ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"), ("g#s", "http://a/b/c/g#s"), ("g?y#s", "http://a/b/c/g?y#s"),
        (";x", "http://a/b/c/;x"), ("g;x", "http://a/b/c/g;x"), ("g;x?y#s", "http://a/b/c/g;x?y#s"),
        ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"), ("./", "http://a/b/c/"), ("..", "http://a/b/"),
        ("../", "http://a/b/"), ("../g", "http://a/b/g"), ("../..", "http://a/"), ("../../", "http://a/"),
        ("../../g", "http://a/g"),
        // 5.4.2
        ("../../../g", "http://a/g"), ("../../../../g", "http://a/g"), ("/./g", "http://a/g"), ("/../g", "http://a/g"),
        ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"), ("g..", "http://a/b/c/g.."), ("..g", "http://a/b/c/..g"),
        ("./../g", "http://a/b/g"), ("./g/.", "http://a/b/c/g/"), ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"), ("g;x=1/../y", "http://a/b/c/y"), ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g?y/../x", "http://a/b/c/g?y/../x"), ("g#s/./x", "http://a/b/c/g#s/./x"), ("g#s/../x", "http://a/b/c/g#s/../x"),
        ("http:g", "http:g"),
    ]

    func testThatResolutionFollowsRFC3986Examples() throws {
        XCTAssertEqual(Self.rfc3986Examples.count, 42)
        for (r, want) in Self.rfc3986Examples {
            XCTAssertEqual(try URLResolve.resolve(r, base: "http://a/b/c/d;p?q"), want, r)
        }
        XCTAssertEqual(try URLResolve.resolve("a b", base: "http://a/b/c"), "http://a/b/a%20b")
        XCTAssertEqual(try URLResolve.resolve("//bücher.de/x", base: "http://a/b/c"), "http://xn--bcher-kva.de/x")
        XCTAssertThrowsError(try URLResolve.resolve("g", base: "/relative")) { e in
            XCTAssertTrue("\(e)".contains("the base URL must be absolute"), "\(e)")
        }
    }

    func testThatABaseURLResolvesRelativeReferencesLikeAFHTTPSessionManager() throws {
        var s = RequestSerializer(kind: .http)
        XCTAssertThrowsError(try s.request(method: "GET", url: "users/1", params: nil)) { e in
            XCTAssertTrue("\(e)".contains("a base URL is needed"), "\(e)")
        }
        try s.setBaseURL("https://api.example.com/v1")
        XCTAssertEqual(s.baseURL, "https://api.example.com/v1/")
        XCTAssertEqual(try s.request(method: "GET", url: "users/1", params: nil).url, "https://api.example.com/v1/users/1")
        XCTAssertEqual(try s.request(method: "GET", url: "/users/1", params: nil).url, "https://api.example.com/users/1")
        XCTAssertEqual(try s.request(method: "GET", url: "../x/./y", params: nil).url, "https://api.example.com/x/y")
        XCTAssertEqual(try s.request(method: "GET", url: "search", params: .dict(ValueDict([("q", .string("a b"))]))).url,
                       "https://api.example.com/v1/search?q=a%20b")
        XCTAssertEqual(try s.request(method: "GET", url: "http://other.org/a/../b", params: nil).url, "http://other.org/a/../b",
                       "absolute URLs ignore the base and are kept as given")
        let form = try s.multipartForm(method: "POST", url: "upload", params: nil)
        XCTAssertEqual(try form.finish().url, "https://api.example.com/v1/upload")
        let copy = s
        XCTAssertEqual(try copy.request(method: "GET", url: "a", params: nil).url, "https://api.example.com/v1/a")
        XCTAssertThrowsError(try s.setBaseURL("relative/base"))
        XCTAssertEqual(s.baseURL, "https://api.example.com/v1/", "a refused base leaves the old one")
        try s.setBaseURL("https://api.example.com")
        XCTAssertEqual(s.baseURL, "https://api.example.com", "an empty path gets no slash")
        XCTAssertEqual(try s.request(method: "GET", url: "users", params: nil).url, "https://api.example.com/users")
        try s.setBaseURL(nil)
        XCTAssertNil(s.baseURL)
        XCTAssertThrowsError(try s.request(method: "GET", url: "users", params: nil))
    }

    // MARK: The request on the wire

    func testThatTheHeadIsTheRequestAsHTTP11() throws {
        var s = RequestSerializer(kind: .json)
        try s.setHeader("Accept-Language", nil)
        try s.setHeader("User-Agent", "t/1")
        let r = try s.request(method: "POST", url: "http://us%20er:p%40ss@e.com:8080/a%20b?x=1#frag",
                              params: .dict(ValueDict([("k", .int(1))])))
        let head = String(decoding: try r.head(), as: UTF8.self)
        XCTAssertEqual(head, "POST /a%20b?x=1 HTTP/1.1\r\nHost: e.com:8080\r\n"
                       + "Authorization: Basic " + (try Base64.encode("us er:p@ss")) + "\r\n"
                       + "User-Agent: t/1\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n")
        var g = try Request(method: "GET", url: "https://user@[::1]")
        XCTAssertEqual(String(decoding: try g.head(), as: UTF8.self),
                       "GET / HTTP/1.1\r\nHost: [::1]\r\nAuthorization: Basic " + (try Base64.encode("user:")) + "\r\n\r\n")
        try g.setHeader("Authorization", "Bearer t")
        try g.setHeader("Host", "virtual.example")
        XCTAssertEqual(String(decoding: try g.head(), as: UTF8.self),
                       "GET / HTTP/1.1\r\nAuthorization: Bearer t\r\nHost: virtual.example\r\n\r\n",
                       "the request's own Authorization and Host win; the userinfo is dropped")
        XCTAssertThrowsError(try Request(method: "GET", url: "mailto:a@b.c").head()) { e in
            XCTAssertTrue("\(e)".contains("no host"), "\(e)")
        }
    }

    func testThatWriteToFdWritesHeadAndBodyAndResumes() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]) }
        let r = try RequestSerializer(kind: .http).request(method: "POST", url: "http://e.com/f", params: .dict(ValueDict([("a", .string("b"))])))
        var n: UInt64 = 0, offset: UInt64 = 0
        try r.write(to: fds[1], offset: &offset, written: &n)
        XCTAssertEqual(offset, 0, "complete: the next call starts over")
        close(fds[1])
        var got = [UInt8](repeating: 0, count: 4096)
        let k = read(fds[0], &got, got.count)
        let want = try r.head() + Array("a=b".utf8)
        XCTAssertEqual(Array(got[..<k]), want)
        XCTAssertEqual(n, UInt64(want.count))
        XCTAssertThrowsError(try r.write(to: -1, offset: &offset, written: &n)) { e in XCTAssertEqual((e as? AFSError)?.status, .io) }
    }
}
