/// A URI reference (RFC 3986 section 4.1: an absolute URI or a relative reference) split
/// into its components, after URL intake.
///
/// URL intake, the rules every URL given to the library goes through:
/// - A valid RFC 3986 URI reference is kept byte for byte: no case folding, no dot-segment
///   removal, no default-port removal.
/// - In the userinfo, path, query and fragment, each byte that RFC 3986 does not allow there
///   is percent-encoded (UTF-8, `%XX` uppercase): space, non-ASCII, `"<>\^`{|}`, `[`/`]`
///   outside an IP-literal host, a second `#` (in the fragment) and an `@` before the last
///   one (in the userinfo). A `%` not followed by two hex digits becomes `%25`.
/// - Spaces before and after the URL are removed (as browsers do).
/// - A host with non-ASCII characters becomes its IDNA A-label (`IDNA.toASCII`, after
///   percent-decoding the host as WHATWG parsers do).
/// - Refused (`.badURL`, with the offset and a hint): ASCII control characters (C0, DEL)
///   anywhere, a port that is not digits or exceeds 65535, a malformed host (a character
///   RFC 3986 does not allow in a host, a bad IP literal, what IDNA refuses), and — where an
///   absolute URL is needed — a relative reference.
/// Invalid UTF-8 cannot reach the core (Swift strings are valid UTF-8): the C layer refuses
/// it with `AFS_E_INVALID_UTF8` and the offset.
public struct URIReference: Sendable, Equatable {
    /// Without the `:`; nil for a relative reference.
    public var scheme: String?
    /// Without the `@`; nil when the authority has none.
    public var userinfo: String?
    /// The host of the authority (an IP literal with its brackets); nil without authority.
    public var host: String?
    /// Without the `:`; nil when the authority has no `:`.
    public var port: String?
    public var path: String
    /// Without the `?`; nil when there is none.
    public var query: String?
    /// Without the `#`; nil when there is none.
    public var fragment: String?

    public init(scheme: String? = nil, userinfo: String? = nil, host: String? = nil, port: String? = nil,
                path: String = "", query: String? = nil, fragment: String? = nil) {
        self.scheme = scheme
        self.userinfo = userinfo
        self.host = host
        self.port = port
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    public var isAbsolute: Bool { scheme != nil }
    public var hasAuthority: Bool { host != nil }

    /// The authority without the userinfo (`host[:port]`): the `Host` header.
    public var hostAndPort: String? {
        guard let h = host else { return nil }
        return port.map { h + ":" + $0 } ?? h
    }

    /// RFC 3986 section 5.3 recomposition.
    public var text: String {
        var s = ""
        s.reserveCapacity(textSize)
        if let sc = scheme { s += sc + ":" }
        if let h = host {
            s += "//"
            if let u = userinfo { s += u + "@" }
            s += h
            if let p = port { s += ":" + p }
        }
        s += path
        if let q = query { s += "?" + q }
        if let f = fragment { s += "#" + f }
        return s
    }

    /// The length of `text` in bytes.
    var textSize: Int {
        func n(_ x: String?) -> Int { x.map { $0.utf8.count + 1 } ?? 0 }
        return n(scheme) + 2 + n(userinfo) + n(host) + n(port) + path.utf8.count + n(query) + n(fragment)
    }

    /// `text`, or `.noMemory` when it cannot be allocated (instead of a trap).
    public func checkedText() throws(AFSError) -> String {
        try Memory.probe(textSize + 32, "the URL")
        return text
    }

    // MARK: - Intake

    /// Parses `input` by the intake rules (see the type's documentation).
    /// - Parameter what: names the string in messages ("URL", "base URL", "reference").
    /// - Throws: `.badURL` naming the character, its byte offset in `input` and a hint.
    public static func parse(_ input: String, what: String = "URL") throws -> URIReference {
        try Memory.probe(input.utf8.count, "a copy of the \(what)")
        var p = Parser(Array(input.utf8), what: what)
        return try p.run()
    }

    /// `parse`, then requires an absolute URI.
    /// - Throws: `.badURL`; for a relative reference the message says a base URL is needed.
    public static func parseAbsolute(_ input: String, what: String = "URL", baseHint: String? = nil) throws -> URIReference {
        let r = try parse(input, what: what)
        if input.utf8.allSatisfy({ $0 == 0x20 }) { throw AFSError(.badURL, "the \(what) is empty") }
        if !r.isAbsolute {
            let hint = baseHint ?? "set a base URL on the serializer (afs_serializer_set_base_url, base_url=) or pass an absolute URL"
            throw AFSError(.badURL, "\(HTTPSyntax.quote(input)) is a relative reference (no scheme): a base URL is needed to resolve it; \(hint)")
        }
        return r
    }

    struct Parser {
        let u: [UInt8]
        let what: String
        init(_ u: [UInt8], what: String) {
            self.u = u
            self.what = what
        }

        func fail(_ why: String, hint: String? = nil) -> AFSError {
            var m = "\(why) in \(what) \(HTTPSyntax.quote(String(decoding: u, as: UTF8.self)))"
            if let h = hint { m += " (\(h))" }
            return AFSError(.badURL, m)
        }

        mutating func run() throws -> URIReference {
            // Control characters anywhere: CR/LF must never reach a request line.
            for (i, c) in u.enumerated() where c < 0x20 || c == 0x7F {
                throw fail("control character \(HTTPSyntax.describe(c)) at offset \(i)",
                           hint: "control characters are never accepted in a URL; percent-encode data bytes as %XX")
            }
            var start = 0, end = u.count
            while start < end && u[start] == 0x20 { start += 1 }
            while end > start && u[end - 1] == 0x20 { end -= 1 }
            var ref = URIReference()
            if start == end { return ref }  // the empty reference (same document)
            var i = start
            // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
            if HTTPSyntax.isAlpha(u[i]) {
                var j = i + 1
                while j < end, HTTPSyntax.isAlpha(u[j]) || HTTPSyntax.isDigit(u[j]) || u[j] == 0x2B || u[j] == 0x2D || u[j] == 0x2E { j += 1 }
                if j < end && u[j] == 0x3A {
                    ref.scheme = String(decoding: u[i..<j], as: UTF8.self)
                    i = j + 1
                }
            }
            // Fragment, then query.
            let hash = u[i..<end].firstIndex(of: 0x23)
            let beforeFragment = hash ?? end
            let question = u[i..<beforeFragment].firstIndex(of: 0x3F)
            let hierEnd = question ?? beforeFragment
            // Authority.
            if hierEnd - i >= 2 && u[i] == 0x2F && u[i + 1] == 0x2F {
                let aStart = i + 2
                let aEnd = u[aStart..<hierEnd].firstIndex(of: 0x2F) ?? hierEnd
                try parseAuthority(aStart, aEnd, into: &ref)
                i = aEnd
            }
            // RFC 3986 section 4.2: the first segment of a relative-path reference holds no
            // ':' (it would read as a scheme).
            if ref.scheme == nil && ref.host == nil && (i == hierEnd || u[i] != 0x2F),
               let colon = u[i..<hierEnd].firstIndex(where: { $0 == 0x3A || $0 == 0x2F }), u[colon] == 0x3A {
                let bad = u[i..<colon].firstIndex { !(HTTPSyntax.isAlpha($0) || HTTPSyntax.isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E) } ?? i
                throw fail("no scheme: \(HTTPSyntax.describe(u[bad])) at offset \(bad) cannot be part of a scheme before ':' at offset \(colon)",
                           hint: "a scheme starts with a letter, then letters, digits, + - .; a relative path with ':' in its first segment starts with ./")
            }
            ref.path = try encode(i, hierEnd, allowed: Parser.isPathByte)
            if let q = question { ref.query = try encode(q + 1, beforeFragment, allowed: Parser.isQueryByte) }
            if let h = hash { ref.fragment = try encode(h + 1, end, allowed: Parser.isQueryByte) }
            return ref
        }

        mutating func parseAuthority(_ aStart: Int, _ aEnd: Int, into ref: inout URIReference) throws {
            var hostStart = aStart
            if let at = u[aStart..<aEnd].lastIndex(of: 0x40) {
                ref.userinfo = try encode(aStart, at, allowed: Parser.isUserinfoByte)
                hostStart = at + 1
            }
            var hostEnd = aEnd
            if hostStart < aEnd && u[hostStart] == 0x5B {
                guard let close = u[hostStart..<aEnd].firstIndex(of: 0x5D) else {
                    throw fail("'[' (0x5B) at offset \(hostStart) is not closed by ']' in the authority",
                               hint: "brackets enclose an IPv6 address, as in http://[::1]:8080/")
                }
                try validateIPLiteral(hostStart + 1, close)
                hostEnd = close + 1
                if hostEnd < aEnd && u[hostEnd] != 0x3A {
                    throw fail("invalid character \(HTTPSyntax.describe(u[hostEnd])) at offset \(hostEnd) after the IP literal",
                               hint: "expected ':' and a port")
                }
                ref.host = String(decoding: u[hostStart..<hostEnd], as: UTF8.self)
            } else {
                hostEnd = u[hostStart..<aEnd].firstIndex(of: 0x3A) ?? aEnd
                ref.host = try regName(hostStart, hostEnd)
            }
            if hostEnd < aEnd {
                // ":" port
                let pStart = hostEnd + 1
                var value = 0
                for k in pStart..<aEnd {
                    guard HTTPSyntax.isDigit(u[k]) else {
                        throw fail("invalid character \(HTTPSyntax.describe(u[k])) at offset \(k) in the port",
                                   hint: "a port is decimal digits, at most 65535")
                    }
                    value = Swift.min(value * 10 + Int(u[k] - 0x30), 1 << 20)
                }
                if value > 65535 {
                    throw fail("the port at offset \(pStart) exceeds 65535", hint: "a port is decimal digits, at most 65535")
                }
                ref.port = String(decoding: u[pStart..<aEnd], as: UTF8.self)
            }
        }

        /// A reg-name host: kept when valid RFC 3986; converted by IDNA when it holds
        /// non-ASCII characters; else refused.
        func regName(_ s: Int, _ e: Int) throws -> String {
            var nonASCII = false
            var k = s
            while k < e {
                let c = u[k]
                if c >= 0x80 {
                    nonASCII = true
                } else if c == 0x25 {
                    guard k + 2 < e, HTTPSyntax.isHex(u[k + 1]), HTTPSyntax.isHex(u[k + 2]) else {
                        throw fail("'%' at offset \(k) in the host is not followed by two hex digits", hint: "a host cannot hold '%' itself")
                    }
                    k += 3
                    continue
                } else if !(Parser.isUnreserved(c) || Parser.isSubDelim(c)) {
                    var hint = "a host holds letters, digits and - . _ ~ ! $ & ' ( ) * + , ; ="
                    if c == 0x5B || c == 0x5D { hint = "brackets enclose a whole IPv6 host, as in http://[::1]:8080/" }
                    if c == 0x40 { hint = "userinfo ends at the last '@'" }
                    throw fail("invalid character \(HTTPSyntax.describe(c)) at offset \(k) in the host", hint: hint)
                }
                k += 1
            }
            let raw = String(decoding: u[s..<e], as: UTF8.self)
            if !nonASCII { return raw }
            // Percent-decode (as WHATWG does), then IDNA.
            var bytes: [UInt8] = []
            k = s
            while k < e {
                if u[k] == 0x25 {
                    bytes.append(UInt8(HTTPSyntax.hexValue(u[k + 1]) << 4 | HTTPSyntax.hexValue(u[k + 2])))
                    k += 3
                } else {
                    bytes.append(u[k])
                    k += 1
                }
            }
            guard let decoded = String(validating: bytes, as: UTF8.self) else {
                throw fail("the host at offset \(s) is not UTF-8 after percent-decoding", hint: "IDNA needs Unicode text")
            }
            let ascii: String
            do {
                ascii = try IDNA.toASCII(decoded)
            } catch var err as AFSError {
                err.message += " (host at offset \(s) in \(what) \(HTTPSyntax.quote(String(decoding: u, as: UTF8.self))))"
                throw err
            }
            for c in ascii.utf8 where !(Parser.isUnreserved(c) || Parser.isSubDelim(c)) || c == 0x25 {
                throw fail("the host at offset \(s) maps to \(HTTPSyntax.quote(ascii)) by IDNA, which holds \(HTTPSyntax.describe(c))",
                           hint: "that character is not allowed in a host")
            }
            if ascii.isEmpty {
                throw fail("the host at offset \(s) is empty after IDNA mapping")
            }
            return ascii
        }

        /// IP-literal contents between the brackets: IPv6address ["%25" zone] or IPvFuture.
        func validateIPLiteral(_ s: Int, _ e: Int) throws {
            let body = Array(u[s..<e])
            if let first = body.first, first | 0x20 == 0x76 {  // IPvFuture: "v" 1*HEXDIG "." 1*(unreserved / sub-delims / ":")
                var k = 1
                while k < body.count && HTTPSyntax.isHex(body[k]) { k += 1 }
                let ok = k > 1 && k < body.count - 1 && body[k] == 0x2E
                    && body[(k + 1)...].allSatisfy { Parser.isUnreserved($0) || Parser.isSubDelim($0) || $0 == 0x3A }
                if !ok { throw fail("malformed IPvFuture literal at offset \(s - 1)", hint: "expected v<hex>.<address>") }
                return
            }
            var addr = body[...]
            if let pct = body.firstIndex(of: 0x25) {
                // RFC 6874 zone: "%25" 1*(unreserved / pct-encoded)
                let zone = body[pct...]
                var ok = zone.count > 3 && zone.starts(with: [0x25, 0x32, 0x35])
                var k = pct + 3
                while ok && k < body.count {
                    if body[k] == 0x25 {
                        ok = k + 2 < body.count && HTTPSyntax.isHex(body[k + 1]) && HTTPSyntax.isHex(body[k + 2])
                        k += 3
                    } else {
                        ok = Parser.isUnreserved(body[k])
                        k += 1
                    }
                }
                if !ok { throw fail("malformed IPv6 zone at offset \(s + pct)", hint: "a zone is written %25 then its name, as in [fe80::1%25eth0]") }
                addr = body[..<pct]
            }
            if !Parser.isIPv6(Array(addr)) {
                throw fail("malformed IPv6 address \(HTTPSyntax.quote(String(decoding: addr, as: UTF8.self))) at offset \(s)",
                           hint: "brackets enclose an IPv6 address, as in http://[2001:db8::1]/")
            }
        }

        /// Copies u[s..<e], percent-encoding the bytes `allowed` refuses; a '%' not followed
        /// by two hex digits becomes %25.
        func encode(_ s: Int, _ e: Int, allowed: (UInt8) -> Bool) throws -> String {
            var out: [UInt8] = []
            if 3 * (e - s) < Memory.probeThreshold {
                out.reserveCapacity(e - s)  // small whatever it becomes: nothing to check
            } else {
                // A bound on the output size first (a byte kept is 1, any other 3: a valid
                // %XX counts 5), so that both copies (the bytes, then the string) are checked.
                var size = 0
                for c in u[s..<e] { size += allowed(c) ? 1 : 3 }
                try out.checkedReserve(size, "the percent-encoded \(what)")
                try Memory.probe(size + 32, "the percent-encoded \(what)")
            }
            var k = s
            while k < e {
                let c = u[k]
                if c == 0x25 {
                    if k + 2 < e, HTTPSyntax.isHex(u[k + 1]), HTTPSyntax.isHex(u[k + 2]) {
                        out.append(contentsOf: u[k...(k + 2)])
                        k += 3
                        continue
                    }
                    out.append(contentsOf: [0x25, 0x32, 0x35])
                } else if allowed(c) {
                    out.append(c)
                } else {
                    out.append(0x25)
                    out.append(Parser.hexDigit(c >> 4))
                    out.append(Parser.hexDigit(c & 15))
                }
                k += 1
            }
            return String(decoding: out, as: UTF8.self)
        }

        static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x41 + v - 10 }

        static func isUnreserved(_ c: UInt8) -> Bool {
            HTTPSyntax.isAlpha(c) || HTTPSyntax.isDigit(c) || c == 0x2D || c == 0x2E || c == 0x5F || c == 0x7E
        }

        static func isSubDelim(_ c: UInt8) -> Bool {
            switch c {
            case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D: return true
            default: return false
            }
        }

        static func isUserinfoByte(_ c: UInt8) -> Bool { isUnreserved(c) || isSubDelim(c) || c == 0x3A }
        static func isPChar(_ c: UInt8) -> Bool { isUserinfoByte(c) || c == 0x40 }
        static func isPathByte(_ c: UInt8) -> Bool { isPChar(c) || c == 0x2F }
        static func isQueryByte(_ c: UInt8) -> Bool { isPathByte(c) || c == 0x3F }

        /// RFC 3986 IPv6address (with an optional trailing IPv4 part).
        static func isIPv6(_ a: [UInt8]) -> Bool {
            if a.isEmpty { return false }
            var groups = 0
            var sawDouble = false
            var k = 0
            if a.starts(with: [0x3A, 0x3A]) {
                sawDouble = true
                k = 2
                if k == a.count { return true }
            } else if a[0] == 0x3A {
                return false
            }
            while k < a.count {
                // A group: 1-4 hex digits, or an IPv4 address at the end.
                var j = k
                while j < a.count && HTTPSyntax.isHex(a[j]) && j - k < 5 { j += 1 }
                if j < a.count && a[j] == 0x2E {
                    guard isIPv4(Array(a[k...])) else { return false }
                    groups += 2
                    k = a.count
                    break
                }
                let len = j - k
                if len < 1 || len > 4 { return false }
                groups += 1
                k = j
                if k == a.count { break }
                guard a[k] == 0x3A else { return false }
                k += 1
                if k < a.count && a[k] == 0x3A {
                    if sawDouble { return false }
                    sawDouble = true
                    k += 1
                    if k == a.count { break }
                } else if k == a.count {
                    return false  // a single trailing ':'
                }
            }
            return sawDouble ? groups <= 7 : groups == 8
        }

        static func isIPv4(_ a: [UInt8]) -> Bool {
            let parts = a.split(separator: 0x2E, omittingEmptySubsequences: false)
            guard parts.count == 4 else { return false }
            for p in parts {
                guard !p.isEmpty, p.count <= 3, p.allSatisfy(HTTPSyntax.isDigit) else { return false }
                if p.count > 1 && p.first == 0x30 { return false }
                var v = 0
                for d in p { v = v * 10 + Int(d - 0x30) }
                if v > 255 { return false }
            }
            return true
        }
    }
}
