/// Checks of HTTP and URI syntax: methods and header names are RFC 9110 tokens, header
/// values carry no CR, LF or NUL, URLs are absolute RFC 3986 URIs.
public enum HTTPSyntax {
    /// RFC 9110 `tchar`: `!#$%&'*+-.^_`|~`, digits, letters.
    @inlinable
    public static func isTokenChar(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Describes byte `c` for an error message: `'x' (0x78)` or `0x0A`.
    static func describe(_ c: UInt8) -> String {
        let hex = "0x" + (c < 16 ? "0" : "") + String(c, radix: 16, uppercase: true)
        if c >= 0x21 && c < 0x7F { return "'\(Character(Unicode.Scalar(c)))' (\(hex))" }
        if c == 0x20 { return "space (0x20)" }
        return hex
    }

    /// Shortens `s` for an error message.
    static func quote(_ s: String, max: Int = 120) -> String {
        let bytes = Array(s.utf8)
        if bytes.count <= max { return "\"\(s)\"" }
        return "\"" + String(decoding: bytes.prefix(max), as: UTF8.self) + "…\""
    }

    /// - Throws: `.invalidMethod` unless `method` is a non-empty token.
    public static func validateMethod(_ method: String) throws {
        if method.isEmpty { throw AFSError(.invalidMethod, "the HTTP method is empty") }
        for (i, c) in method.utf8.enumerated() where !isTokenChar(c) {
            throw AFSError(.invalidMethod, "invalid character \(describe(c)) at offset \(i) in HTTP method \(quote(method))")
        }
    }

    /// - Throws: `.invalidHeader` unless `name` is a non-empty token.
    public static func validateHeaderName(_ name: String) throws {
        if name.isEmpty { throw AFSError(.invalidHeader, "the header name is empty") }
        for (i, c) in name.utf8.enumerated() where !isTokenChar(c) {
            throw AFSError(.invalidHeader, "invalid character \(describe(c)) at offset \(i) in header name \(quote(name))")
        }
    }

    /// Whether `name` is `Content-Length` or `Transfer-Encoding` (any case): the headers
    /// that frame a message body, which the library writes itself.
    public static func isFramingHeader(_ name: String) -> Bool {
        asciiLowercased(name).utf8.elementsEqual("content-length".utf8)
            || asciiLowercased(name).utf8.elementsEqual("transfer-encoding".utf8)
    }

    /// - Throws: `.invalidHeader` for `Content-Length` and `Transfer-Encoding` set by a
    ///   caller (on a request or as a serializer default): the library frames the body (a
    ///   caller's framing over the library's body is request smuggling on a kept-alive
    ///   connection).
    public static func refuseFramingHeader(_ name: String) throws {
        guard isFramingHeader(name) else { return }
        throw AFSError(.invalidHeader,
                       "the header \(quote(name)) cannot be set: the library frames the body (it writes Content-Length from the bytes it sends)")
    }

    /// `value` without leading and trailing spaces and tabs: RFC 9110 (5.5) says a field value
    /// carries no surrounding whitespace, and h11, Go and nginx drop it on reading. Every
    /// header set on a serializer, a request or a part goes through here.
    public static func trimmedHeaderValue(_ value: String) -> String {
        let u = value.utf8
        guard let f = u.first, let l = u.last, f == 0x20 || f == 0x09 || l == 0x20 || l == 0x09 else { return value }
        let bytes = Array(u)
        var s = 0, e = bytes.count
        while s < e && (bytes[s] == 0x20 || bytes[s] == 0x09) { s += 1 }
        while e > s && (bytes[e - 1] == 0x20 || bytes[e - 1] == 0x09) { e -= 1 }
        return String(decoding: bytes[s..<e], as: UTF8.self)
    }

    /// - Throws: `.invalidHeader` when `value` contains CR, LF or NUL (header injection).
    public static func validateHeaderValue(_ value: String, name: String) throws {
        for (i, c) in value.utf8.enumerated() where c == 0x0D || c == 0x0A || c == 0 {
            throw AFSError(.invalidHeader, "invalid character \(describe(c)) at offset \(i) in the value of header \"\(name)\"")
        }
    }

    /// URL intake of an absolute URL (see `URIReference` for the rules): a valid RFC 3986
    /// URI comes back byte for byte; otherwise disallowed bytes are percent-encoded and a
    /// non-ASCII host becomes its IDNA A-label.
    /// - Throws: `.badURL` naming the offending character, its byte offset and a hint; for a
    ///   relative reference, that a base URL is needed.
    public static func intakeURL(_ url: String) throws -> String {
        try URIReference.parseAbsolute(url).checkedText()
    }

    /// Checks that `url` is an absolute URL the intake accepts unchanged.
    /// - Throws: `.badURL` as `intakeURL`, or naming the first byte intake would change.
    public static func validateURL(_ url: String) throws {
        let out = try intakeURL(url)
        if out != url {
            let a = Array(url.utf8), b = Array(out.utf8)
            let i = zip(a, b).prefix { $0 == $1 }.count
            let what = i < a.count ? describe(a[i]) : "the end"
            throw AFSError(.badURL, "\(what) at offset \(i) is not a valid URI character in URL \(quote(url)) (the library sends \(quote(out)))")
        }
    }

    @inline(__always) static func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "z") }
    @inline(__always) static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
    @inline(__always) static func isHex(_ c: UInt8) -> Bool { isDigit(c) || ((c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "f")) }
    @inline(__always) static func hexValue(_ c: UInt8) -> UInt8 { isDigit(c) ? c - 0x30 : (c | 0x20) - 0x61 + 10 }

    /// Inserts a non-empty query into `url`: `?query` when the URL has no query, `&query`
    /// when it has a non-empty one, `query` alone after a bare trailing `?`; always before
    /// any `#fragment`.
    public static func appendingQuery(_ query: String, to url: String) -> String {
        let u = Array(url.utf8)
        let hash = u.firstIndex(of: UInt8(ascii: "#")) ?? u.count
        let base = u[..<hash]
        var out = [UInt8]()
        out.reserveCapacity(u.count + query.utf8.count + 1)
        out.append(contentsOf: base)
        if let q = base.firstIndex(of: UInt8(ascii: "?")) {
            if q != base.count - 1 { out.append(UInt8(ascii: "&")) }
        } else {
            out.append(UInt8(ascii: "?"))
        }
        out.append(contentsOf: query.utf8)
        out.append(contentsOf: u[hash...])
        return String(decoding: out, as: UTF8.self)
    }

    /// ASCII case-insensitive equality (header names).
    public static func equalsIgnoringCase(_ a: String, _ b: String) -> Bool {
        var ia = a.utf8.makeIterator(), ib = b.utf8.makeIterator()
        while true {
            switch (ia.next(), ib.next()) {
            case (nil, nil): return true
            case (let x?, let y?):
                if x != y && lower(x) != lower(y) { return false }
            default: return false
            }
        }
    }

    @inline(__always) static func lower(_ c: UInt8) -> UInt8 { c >= 65 && c <= 90 ? c | 0x20 : c }
}
