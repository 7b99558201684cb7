// Fuzz target: what a request puts on the wire — method, URL, headers, parameters — for
// any input, so that nothing a caller passes can inject a header, split a request line or
// leave a malformed URL (docs/DESIGN.md, "Requests").
//
// The input is a script: a URL (pieces of URLs that stress the checks, or raw bytes), a
// method (a token or not), serializer headers (names and values valid or not), the kind
// (HTTP, JSON, plist), the URI methods, and a parameters tree. Properties:
// - `HTTPSyntax.intakeURL` (URL intake, DESIGN.md "URLs") gives exactly what an independent
//   reference gives: refused for control characters, a missing scheme, a malformed host
//   (IP literal checked by inet_pton, ASCII reg-name of unreserved, sub-delims and %XX) or
//   a port beyond 65535; otherwise the same bytes, with what RFC 3986 does not allow in the
//   userinfo, path, query and fragment percent-encoded and a bare '%' as %25 (a non-ASCII
//   host goes to IDNA: its output is only checked to be ASCII); intake is idempotent;
//   refusals are `.badURL` and a refusal that names an offset names one inside the URL;
// - `validateMethod` accepts exactly non-empty RFC 9110 tokens (`.invalidMethod`), and
//   `setHeader` exactly token names and values without CR, LF or NUL (`.invalidHeader`),
//   storing nothing when it refuses;
// - `request(method:url:params:)` succeeds exactly when the method and URL are accepted and
//   the parameters can be written for that kind; then the method is the one given, every
//   header is a token and a value without CR/LF/NUL, the final URL passes `validateURL`
//   (intake keeps it unchanged), and
//   the parameters are where AFNetworking puts them: in the URL (`appendingQuery`, before
//   any `#`) for URI methods, else a form body equal to the query string (HTTP), or a body
//   the JSON / plist reader reads back to the parameters.
@testable import AFSerialization
import Glibc

// MARK: - The reference URL intake

func isLetterRef(_ c: UInt8) -> Bool { (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) }
func isDigitRef(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
func isHexRef(_ c: UInt8) -> Bool { isDigitRef(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66) }
let unreservedRef = Set(Array("-._~".utf8))
let subDelimsRef = Set(Array("!$&'()*+,;=".utf8))
func isUnreservedRef(_ c: UInt8) -> Bool { isLetterRef(c) || isDigitRef(c) || unreservedRef.contains(c) }

/// What the reference makes of a URL: refused, accepted as these bytes, or accepted with a
/// non-ASCII host that IDNA converts (the bytes are then not predicted).
enum ReferenceIntake: Equatable { case refused, accepted([UInt8]), idnaHost }

/// Percent-encodes the bytes outside `keep` (and a '%' without two hex digits).
func encodeRef(_ s: ArraySlice<UInt8>, keep: (UInt8) -> Bool) -> [UInt8] {
    let a = Array(s)
    var out: [UInt8] = []
    var i = 0
    while i < a.count {
        if a[i] == UInt8(ascii: "%") && i + 2 < a.count && isHexRef(a[i + 1]) && isHexRef(a[i + 2]) {
            out += a[i...(i + 2)]
            i += 3
            continue
        }
        if a[i] != UInt8(ascii: "%") && keep(a[i]) {
            out.append(a[i])
        } else {
            let hex = Array("0123456789ABCDEF".utf8)
            out += [UInt8(ascii: "%"), hex[Int(a[i] >> 4)], hex[Int(a[i] & 15)]]
        }
        i += 1
    }
    return out
}

/// An IP literal's inside: IPv6 (glibc's inet_pton decides) with an optional RFC 6874
/// zone, or IPvFuture.
func referenceIPLiteral(_ a: ArraySlice<UInt8>) -> Bool {
    if let v = a.first, v == UInt8(ascii: "v") || v == UInt8(ascii: "V") {
        guard let dot = a.firstIndex(of: UInt8(ascii: ".")), dot > a.startIndex + 1, dot < a.endIndex - 1 else { return false }
        return a[(a.startIndex + 1)..<dot].allSatisfy(isHexRef)
            && a[(dot + 1)...].allSatisfy { isUnreservedRef($0) || subDelimsRef.contains($0) || $0 == UInt8(ascii: ":") }
    }
    var addr = a
    if let pct = a.firstIndex(of: UInt8(ascii: "%")) {
        let zone = a[pct...]
        guard zone.count > 3, zone.starts(with: Array("%25".utf8)) else { return false }
        let name = Array(zone.dropFirst(3))
        var i = 0
        while i < name.count {
            if name[i] == UInt8(ascii: "%") {
                guard i + 2 < name.count, isHexRef(name[i + 1]), isHexRef(name[i + 2]) else { return false }
                i += 3
            } else {
                guard isUnreservedRef(name[i]) else { return false }
                i += 1
            }
        }
        addr = a[..<pct]
    }
    var buf = [UInt8](repeating: 0, count: 16)
    return inet_pton(AF_INET6, String(decoding: addr, as: UTF8.self), &buf) == 1
}

/// URL intake by the rules of DESIGN.md, written independently of the library: control
/// characters refused; spaces around dropped; a scheme required (no base URL here); in
/// userinfo, path, query and fragment what RFC 3986 does not allow there percent-encoded;
/// a host that is an IP literal, an ASCII reg-name (unreserved, sub-delims, %XX), or
/// non-ASCII (IDNA); a port of digits up to 65535.
func referenceIntake(_ input: [UInt8]) -> ReferenceIntake {
    if input.contains(where: { $0 < 0x20 || $0 == 0x7F }) { return .refused }
    var u = input[...]
    while u.first == 0x20 { u = u.dropFirst() }
    while u.last == 0x20 { u = u.dropLast() }
    guard let colon = u.firstIndex(of: UInt8(ascii: ":")), colon > u.startIndex, isLetterRef(u[u.startIndex]),
          u[..<colon].allSatisfy({ isLetterRef($0) || isDigitRef($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") })
    else { return .refused }
    var out = Array(u[...colon])
    var rest = u[(colon + 1)...]
    var fragment: ArraySlice<UInt8>? = nil
    if let h = rest.firstIndex(of: UInt8(ascii: "#")) { fragment = rest[(h + 1)...]; rest = rest[..<h] }
    var query: ArraySlice<UInt8>? = nil
    if let q = rest.firstIndex(of: UInt8(ascii: "?")) { query = rest[(q + 1)...]; rest = rest[..<q] }
    let pathKeep = { (c: UInt8) in isUnreservedRef(c) || subDelimsRef.contains(c) || Array(":@/".utf8).contains(c) }
    let queryKeep = { (c: UInt8) in pathKeep(c) || c == UInt8(ascii: "?") }
    var idna = false
    if rest.starts(with: Array("//".utf8)) {
        let afterSlashes = rest.dropFirst(2)
        let end = afterSlashes.firstIndex(of: UInt8(ascii: "/")) ?? afterSlashes.endIndex
        var authority = afterSlashes[..<end]
        rest = afterSlashes[end...]
        out += Array("//".utf8)
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
            out += encodeRef(authority[..<at]) { isUnreservedRef($0) || subDelimsRef.contains($0) || $0 == UInt8(ascii: ":") }
            out.append(UInt8(ascii: "@"))
            authority = authority[(at + 1)...]
        }
        var port: ArraySlice<UInt8>? = nil
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")),
                  referenceIPLiteral(authority[(authority.startIndex + 1)..<close]) else { return .refused }
            out += authority[...close]
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return .refused }
                port = after.dropFirst()
            }
        } else {
            let c = authority.firstIndex(of: UInt8(ascii: ":"))
            let host = authority[..<(c ?? authority.endIndex)]
            if let c { port = authority[(c + 1)...] }
            var i = host.startIndex
            while i < host.endIndex {
                let b = host[i]
                if b >= 0x80 { idna = true; i += 1; continue }
                if b == UInt8(ascii: "%") {
                    guard i + 2 < host.endIndex, isHexRef(host[i + 1]), isHexRef(host[i + 2]) else { return .refused }
                    i += 3
                    continue
                }
                guard isUnreservedRef(b) || subDelimsRef.contains(b) else { return .refused }
                i += 1
            }
            out += host
        }
        if let p = port {
            let digits = p.drop { $0 == UInt8(ascii: "0") }
            guard p.allSatisfy(isDigitRef), digits.count <= 5, digits.isEmpty || Int(String(decoding: digits, as: UTF8.self))! <= 65535 else { return .refused }
            out.append(UInt8(ascii: ":"))
            out += p
        }
    }
    out += encodeRef(rest, keep: pathKeep)
    if let q = query { out.append(UInt8(ascii: "?")); out += encodeRef(q, keep: queryKeep) }
    if let f = fragment { out.append(UInt8(ascii: "#")); out += encodeRef(f, keep: queryKeep) }
    return idna ? .idnaHost : .accepted(out)
}

// MARK: - Script pieces

let urlPieces: [String] = [
    "http://", "https://", "HTTP://", "x-y.z+1:", "mailto:", "urn:a:b", "//", "/", "?", "#", "&",
    "=", "@", ":", "[", "]", "[::1]", "[fe80::1%25en0]", "[v7.x]", ":8080", "user:pw@", "example.com",
    "a", "0", "%", "%2", "%20", "%zz", "%C3%A9", " ", "\t", "\r\n", "\0", "\"", "<", ">", "\\", "^",
    "`", "{", "|", "}", "é", "日", "\u{7F}", "-", ".", "_", "~", "!", "$", "'", "(", ")", "*", "+",
    ",", ";", "path", "q=1", "frag", "bücher", "xn--", ":65535", ":65536", "[::1%25eth0]", "[v1.x]", "%25",
    "\u{200C}", "\u{5D0}", "\u{301}", " ",
]

func urlBytes(_ inp: inout FuzzInput) -> [UInt8] {
    if inp.oneIn(8) { return inp.bytes(max: 40) }
    var out: [UInt8] = []
    if inp.below(4) != 0 { out += Array(["http://", "https://", "h:", "ftp://"][inp.below(4)].utf8) }
    for _ in 0..<inp.below(12) { out += Array(urlPieces[inp.below(urlPieces.count)].utf8) }
    return out
}

let methodPieces = ["GET", "get", "POST", "PUT", "DELETE", "HEAD", "PATCH", "M-SEARCH", "X!#$%&'*+.^_`|~9",
                    "", "GE T", "GET\r\n", "G\0", "Ω", "(GET)", "GET/1.1", "\"", "a:b"]

let headerNamePieces = ["Content-Type", "content-type", "Accept", "X-A", "Authorization", "User-Agent",
                        "", "A B", "A:B", "A\r\nB", "\u{E9}", "A\0", "(x)", "a\"b", "{}", "X-\u{7F}"]
let headerValuePieces = ["text/plain", "application/json", "", " x ", "a\tb", "é日", "a\rb", "a\nb",
                         "a\0b", "\r\n", "x\r\nInjected: 1", "\u{1}", "\u{7F}", "Basic YTpi"]

func textOrPiece(_ inp: inout FuzzInput, _ pieces: [String], gen: inout TreeGen) -> String {
    inp.oneIn(4) ? gen.string(&inp) : pieces[inp.below(pieces.count)]
}

func referenceIsToken(_ s: String) -> Bool {
    !s.isEmpty && s.utf8.allSatisfy { isLetterRef($0) || isDigitRef($0) || Array("!#$%&'*+-.^_`|~".utf8).contains($0) }
}

func referenceIsHeaderValue(_ s: String) -> Bool { !s.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 } }

/// A header value as the library keeps it: without leading and trailing spaces and tabs.
func referenceTrimmed(_ s: String) -> String {
    var u = Array(s.utf8)
    while let l = u.last, l == 0x20 || l == 0x09 { u.removeLast() }
    var i = 0
    while i < u.count && (u[i] == 0x20 || u[i] == 0x09) { i += 1 }
    return String(decoding: u[i...], as: UTF8.self)
}

/// The headers only the library sets (it frames the body).
func referenceIsFraming(_ name: String) -> Bool {
    ["content-length", "transfer-encoding"].contains(String(decoding: name.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self))
}

/// The N of "at offset N" in a message, if any.
func namedOffset(_ message: String) -> Int? {
    let m = Array(message.utf8), needle = Array("at offset ".utf8)
    guard m.count >= needle.count,
          let start = (0...(m.count - needle.count)).first(where: { m[$0..<($0 + needle.count)].elementsEqual(needle) }) else { return nil }
    return Int(String(decoding: m[(start + needle.count)...].prefix { isDigitRef($0) }, as: UTF8.self))
}

// MARK: - The target

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var inp = FuzzInput(data, size)
    var gen = TreeGen()
    gen.maxDepth = 3
    gen.maxCount = 4
    gen.budget = 20

    // The URL check against the reference.
    let raw = urlBytes(&inp)
    let url = String(decoding: raw, as: UTF8.self)  // what a caller's String holds (bad UTF-8 repaired)
    let bytes = Array(url.utf8)
    let reference = referenceIntake(bytes)
    let expectURL = reference != .refused
    var urlError: AFSError? = nil
    var intaken = ""
    do {
        intaken = try HTTPSyntax.intakeURL(url)
    } catch let e as AFSError {
        urlError = e
    } catch {
        fail("intakeURL threw \(error)")
    }
    if let e = urlError {
        // IDNA may refuse a non-ASCII host the reference leaves to it.
        require(!expectURL || (reference == .idnaHost && (e.message.contains("IDNA") || e.message.contains("host"))),
                "intakeURL refused \(show(bytes)), which the reference accepts: \(e)")
        require(e.status == .badURL, "intakeURL failed with \(e), not .badURL")
        if let at = namedOffset(e.message) { require(at < bytes.count, "intakeURL names offset \(at) of \(bytes.count): \(e.message)") }
    } else {
        switch reference {
        case .refused: fail("intakeURL accepted \(show(bytes)) as \(intaken), which the reference refuses")
        case .accepted(let want): require(Array(intaken.utf8) == want, "intakeURL made \(show(bytes)) \(intaken), the reference \(show(want))")
        case .idnaHost: require(intaken.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "intakeURL left non-ASCII in \(intaken)")
        }
        require((try? HTTPSyntax.intakeURL(intaken)) == intaken, "intake is not idempotent on \(intaken)")
    }

    // The method.
    let method = textOrPiece(&inp, methodPieces, gen: &gen)
    let methodOK = referenceIsToken(method)
    do {
        try HTTPSyntax.validateMethod(method)
        require(methodOK, "validateMethod accepted \(show(Array(method.utf8)))")
    } catch let e as AFSError {
        require(!methodOK && e.status == .invalidMethod, "validateMethod refused \(show(Array(method.utf8))) with \(e)")
    } catch {
        fail("validateMethod threw \(error)")
    }

    // The serializer: kind, URI methods, headers.
    let kind: RequestSerializer.Kind = [.http, .json, .propertyList][inp.below(3)]
    var serializer = RequestSerializer(kind: kind)
    if inp.oneIn(4) {
        let methods = (0..<inp.below(3)).map { _ in methodPieces[inp.below(methodPieces.count)] }
        do {
            try serializer.setURIMethods(methods)
            require(methods.allSatisfy(referenceIsToken), "setURIMethods accepted \(methods)")
        } catch let e as AFSError {
            require(e.status == .invalidMethod && !methods.allSatisfy(referenceIsToken), "setURIMethods(\(methods)) failed with \(e)")
        } catch {
            fail("setURIMethods threw \(error)")
        }
    }
    for _ in 0..<inp.below(5) {
        let name = textOrPiece(&inp, headerNamePieces, gen: &gen)
        let value: String? = inp.oneIn(8) ? nil : textOrPiece(&inp, headerValuePieces, gen: &gen)
        let before = serializer.headers
        let ok = referenceIsToken(name) && !referenceIsFraming(name) && (value.map(referenceIsHeaderValue) ?? true)
        do {
            try serializer.setHeader(name, value)
            require(ok, "setHeader accepted \(show(Array(name.utf8))): \(value.map { show(Array($0.utf8)) } ?? "nil")")
            require(serializer.header(name) == value.map(referenceTrimmed), "setHeader(\(name)) then header() gives \(String(describing: serializer.header(name)))")
        } catch let e as AFSError {
            require(!ok && e.status == .invalidHeader, "setHeader(\(show(Array(name.utf8))), \(value.map { show(Array($0.utf8)) } ?? "nil")) failed with \(e)")
            require(serializer.headers == before, "a refused setHeader changed the headers")
        } catch {
            fail("setHeader threw \(error)")
        }
    }
    if inp.oneIn(4) { serializer.jsonOptions = .fragmentsAllowed }

    // The parameters.
    let params: Value? = inp.oneIn(5) ? nil : (inp.oneIn(6) ? gen.value(&inp) : gen.dict(&inp, depth: 1))

    // The request.
    let inURI = serializer.encodesParametersInURI(method)
    var refusals: Set<AFSStatus> = []
    if !methodOK { refusals.insert(.invalidMethod) }
    if urlError != nil { refusals.insert(.badURL) }
    var query: String? = nil
    var queryError: AFSError? = nil
    if let params, inURI || kind == .http {
        do { query = try QueryString.make(params, style: serializer.queryStyle) } catch let e as AFSError { queryError = e } catch { fail("\(error)") }
        if let e = queryError { refusals.insert(e.status) }
    }
    let request: Request
    do {
        request = try serializer.request(method: method, url: url, params: params)
    } catch let e as AFSError {
        trace("request(\(show(Array(method.utf8))), \(show(bytes)), \(kind)) failed: \(e)")
        if refusals.isEmpty {
            // Left: the writers (JSON, plist) and a query that made the URL invalid.
            if inURI, let q = query, !q.isEmpty {
                require(e.status == .badURL && (try? HTTPSyntax.intakeURL(HTTPSyntax.appendingQuery(q, to: intaken))) == nil,
                        "request() failed with \(e) for a URL that stays valid with its query")
            } else if kind == .json, !inURI, let p = params {
                require(e.status == .invalidJSON && (try? JSONWriter.data(p, options: serializer.jsonOptions)) == nil, "request() failed with \(e) but the JSON writer accepts the parameters")
            } else if kind == .propertyList, !inURI, let p = params {
                require(e.status == .invalidPlist && (try? PropertyListWriter.data(p, format: serializer.plistFormat)) == nil, "request() failed with \(e) but the plist writer accepts the parameters")
            } else {
                fail("request(\(show(Array(method.utf8))), \(show(bytes))) failed with \(e) where it must succeed")
            }
        } else {
            require(refusals.contains(e.status), "request() failed with \(e), expected one of \(refusals.map { "\($0)" })")
        }
        return 0
    } catch {
        fail("request() threw \(error)")
    }
    require(refusals.isEmpty, "request(\(show(Array(method.utf8))), \(show(bytes))) succeeded where it must fail with \(refusals.map { "\($0)" })")

    // What goes on the wire.
    trace("request(\(show(Array(method.utf8))), \(show(bytes)), \(kind)) -> \(request.url), \(request.headers.count) headers, body \(request.body?.count ?? 0) bytes")
    require(request.method == method, "the method became \(request.method)")
    for (name, value) in request.headers {
        require(referenceIsToken(name) && referenceIsHeaderValue(value), "header \(show(Array(name.utf8))): \(show(Array(value.utf8))) is not safe on the wire")
    }
    for (name, value) in serializer.headers {
        require(request.header(name) == value, "the serializer's header \(name) did not reach the request")
    }
    do { try HTTPSyntax.validateURL(request.url) } catch { fail("the final URL \(show(Array(request.url.utf8))) does not validate: \(error)") }
    if inURI {
        let want = (query ?? "").isEmpty ? intaken : HTTPSyntax.appendingQuery(query!, to: intaken)
        require(request.url == want, "the URL is \(request.url), expected \(want)")
        // The query sits before the fragment, and the fragment is unchanged.
        let ib = Array(intaken.utf8)
        if let hash = ib.firstIndex(of: UInt8(ascii: "#")) {
            require(request.url.utf8.reversed().starts(with: ib[hash...].reversed()), "the fragment moved: \(request.url)")
        }
        require(request.body == nil || request.body!.isEmpty, "a URI method got a body")
    } else {
        require(request.url == intaken, "the URL changed to \(request.url) for a body method, expected \(intaken)")
        switch kind {
        case .http:
            require((request.body ?? []) == Array((query ?? "").utf8), "the form body differs from the query string")
            if serializer.header("Content-Type") == nil {
                require(request.header("Content-Type") == "application/x-www-form-urlencoded", "Content-Type \(String(describing: request.header("Content-Type")))")
            }
        case .json:
            if let p = params {
                guard let body = request.body, let back = try? JSONParser.parse(body, allowFragments: true) else { fail("the JSON body does not parse") }
                require(same(back, normalizedForJSON(p), orderedDicts: false), "the JSON body reads back as another tree")
            } else {
                require(request.body == nil, "a JSON request without parameters got a body")
            }
        case .propertyList:
            if let p = params {
                guard let body = request.body, let back = try? PropertyListReader.parse(body) else { fail("the plist body does not parse") }
                require(same(back, p, orderedDicts: false), "the plist body reads back as another tree")
            } else {
                require(request.body == nil, "a plist request without parameters got a body")
            }
        }
    }
    return 0
}
