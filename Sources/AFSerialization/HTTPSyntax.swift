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

    /// - Throws: `.invalidHeader` when `value` contains CR, LF or NUL (header injection).
    public static func validateHeaderValue(_ value: String, name: String) throws {
        for (i, c) in value.utf8.enumerated() where c == 0x0D || c == 0x0A || c == 0 {
            throw AFSError(.invalidHeader, "invalid character \(describe(c)) at offset \(i) in the value of header \"\(name)\"")
        }
    }

    /// Validates an absolute RFC 3986 URI: a scheme, then only URI characters (unreserved,
    /// reserved, `%XX`); `[` `]` only in the authority; at most one `#`.
    /// - Throws: `.badURL` naming the offending character and its byte offset.
    public static func validateURL(_ url: String) throws {
        var url = url
        try url.withUTF8 { u in
            let n = u.count
            func fail(_ why: String) -> AFSError { AFSError(.badURL, "\(why) in URL \(quote(String(decoding: u, as: UTF8.self)))") }
            if n == 0 { throw AFSError(.badURL, "the URL is empty") }
            // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
            var i = 0
            guard isAlpha(u[0]) else {
                throw fail("no scheme: the URL must be absolute and start with a letter, found \(describe(u[0])) at offset 0")
            }
            while i < n, isAlpha(u[i]) || isDigit(u[i]) || u[i] == UInt8(ascii: "+") || u[i] == UInt8(ascii: "-") || u[i] == UInt8(ascii: ".") {
                i += 1
            }
            guard i < n, u[i] == UInt8(ascii: ":") else {
                if i < n { throw fail("no scheme: invalid character \(describe(u[i])) at offset \(i) before ':'") }
                throw fail("no scheme: the URL must be absolute (scheme \":\" …)")
            }
            i += 1
            // The authority, if any, runs from "//" to the next "/", "?" or "#".
            var authorityEnd = i
            if i + 1 < n, u[i] == UInt8(ascii: "/"), u[i + 1] == UInt8(ascii: "/") {
                authorityEnd = i + 2
                while authorityEnd < n, u[authorityEnd] != UInt8(ascii: "/"), u[authorityEnd] != UInt8(ascii: "?"), u[authorityEnd] != UInt8(ascii: "#") {
                    authorityEnd += 1
                }
            }
            // An IP-literal host: "[" right after "//" or the userinfo's "@", a closing "]"
            // inside the authority, then only ":port" or the end of the authority.
            if authorityEnd > i {
                let auth = (i + 2)..<authorityEnd
                let open = auth.firstIndex { u[$0] == UInt8(ascii: "[") }
                let close = auth.firstIndex { u[$0] == UInt8(ascii: "]") }
                if let o = open {
                    let hostStart = (auth.lastIndex { u[$0] == UInt8(ascii: "@") }).map { $0 + 1 } ?? auth.lowerBound
                    guard o == hostStart else {
                        throw fail("'[' (0x5B) at offset \(o) does not start the host")
                    }
                    guard let c = close, c > o else {
                        throw fail("'[' (0x5B) at offset \(o) is not closed by ']' in the authority")
                    }
                    let after = c + 1
                    if after < authorityEnd && u[after] != UInt8(ascii: ":") {
                        throw fail("invalid character \(describe(u[after])) at offset \(after) after the IP literal (expected ':' and a port)")
                    }
                    // Exactly these two brackets (an IP literal holds none; found by fuzzing).
                    if let extra = auth.first(where: { $0 != o && $0 != c && (u[$0] == UInt8(ascii: "[") || u[$0] == UInt8(ascii: "]")) }) {
                        throw fail("a second bracket \(describe(u[extra])) at offset \(extra) in the authority")
                    }
                } else if let c = close {
                    throw fail("']' (0x5D) at offset \(c) without '['")
                }
            }
            var seenHash = false
            while i < n {
                let c = u[i]
                if c == UInt8(ascii: "%") {
                    guard i + 2 < n, isHex(u[i + 1]), isHex(u[i + 2]) else {
                        throw fail("'%' at offset \(i) is not followed by two hex digits")
                    }
                    i += 3
                    continue
                }
                if c == UInt8(ascii: "#") {
                    if seenHash { throw fail("a second '#' (0x23) at offset \(i)") }
                    seenHash = true
                } else if c == UInt8(ascii: "[") || c == UInt8(ascii: "]") {
                    if i >= authorityEnd { throw fail("invalid character \(describe(c)) at offset \(i) (brackets are allowed only around an IP literal host)") }
                } else if !isURIChar(c) {
                    throw fail("invalid character \(describe(c)) at offset \(i)")
                }
                i += 1
            }
        }
    }

    @inline(__always) static func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "z") }
    @inline(__always) static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
    @inline(__always) static func isHex(_ c: UInt8) -> Bool { isDigit(c) || ((c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "f")) }

    /// unreserved / gen-delims (without brackets) / sub-delims.
    static func isURIChar(_ c: UInt8) -> Bool {
        if isAlpha(c) || isDigit(c) { return true }
        switch c {
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
            UInt8(ascii: ":"), UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "@"),
            UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }

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
