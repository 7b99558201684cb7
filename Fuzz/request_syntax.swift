// Fuzz target: what a request puts on the wire — method, URL, headers, parameters — for
// any input, so that nothing a caller passes can inject a header, split a request line or
// leave a malformed URL (docs/DESIGN.md, "Requests").
//
// The input is a script: a URL (pieces of URLs that stress the checks, or raw bytes), a
// method (a token or not), serializer headers (names and values valid or not), the kind
// (HTTP, JSON, plist), the URI methods, and a parameters tree. Properties:
// - `HTTPSyntax.validateURL` accepts exactly what an independent reference accepts: a scheme
//   (`ALPHA *(ALPHA / DIGIT / + / - / .)` then `:`), then only unreserved, reserved and
//   `%XX` characters, at most one `#`, and brackets only as one `[...]` IP literal that is
//   the whole host of the authority (optionally followed by `:` and the rest of it);
//   refusals are `.badURL` and a refusal that names an offset names one inside the URL;
// - `validateMethod` accepts exactly non-empty RFC 9110 tokens (`.invalidMethod`), and
//   `setHeader` exactly token names and values without CR, LF or NUL (`.invalidHeader`),
//   storing nothing when it refuses;
// - `request(method:url:params:)` succeeds exactly when the method and URL are accepted and
//   the parameters can be written for that kind; then the method is the one given, every
//   header is a token and a value without CR/LF/NUL, the final URL passes `validateURL`, and
//   the parameters are where AFNetworking puts them: in the URL (`appendingQuery`, before
//   any `#`) for URI methods, else a form body equal to the query string (HTTP), or a body
//   the JSON / plist reader reads back to the parameters.
@testable import AFSerialization

// MARK: - The reference URL check

func isLetterRef(_ c: UInt8) -> Bool { (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) }
func isDigitRef(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
func isHexRef(_ c: UInt8) -> Bool { isDigitRef(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66) }
let unreservedAndReserved = Set(Array("-._~:/?@!$&'()*+,;=".utf8))

func referenceAcceptsURL(_ u: [UInt8]) -> Bool {
    guard let colon = u.firstIndex(of: UInt8(ascii: ":")), colon > 0, isLetterRef(u[0]) else { return false }
    let schemeOK = u[..<colon].allSatisfy { isLetterRef($0) || isDigitRef($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    guard schemeOK else { return false }
    let rest = Array(u[(colon + 1)...])
    // Characters.
    var i = 0
    var hashes = 0
    while i < rest.count {
        let c = rest[i]
        if c == UInt8(ascii: "%") {
            guard i + 2 < rest.count, isHexRef(rest[i + 1]), isHexRef(rest[i + 2]) else { return false }
            i += 3
            continue
        }
        if c == UInt8(ascii: "#") {
            hashes += 1
        } else if !(isLetterRef(c) || isDigitRef(c) || unreservedAndReserved.contains(c) || c == UInt8(ascii: "[") || c == UInt8(ascii: "]")) {
            return false
        }
        i += 1
    }
    guard hashes <= 1 else { return false }
    // Brackets.
    let isBracket = { (c: UInt8) in c == UInt8(ascii: "[") || c == UInt8(ascii: "]") }
    var authority: ArraySlice<UInt8> = []
    var afterAuthority = rest[...]
    if rest.starts(with: Array("//".utf8)) {
        let end = rest[2...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? rest.count
        authority = rest[2..<end]
        afterAuthority = rest[end...]
    }
    if afterAuthority.contains(where: isBracket) { return false }
    let brackets = authority.filter(isBracket)
    if brackets.isEmpty { return true }
    guard brackets == [UInt8(ascii: "["), UInt8(ascii: "]")] else { return false }
    let host = authority.lastIndex(of: UInt8(ascii: "@")).map { authority[($0 + 1)...] } ?? authority
    guard host.first == UInt8(ascii: "["), let close = host.firstIndex(of: UInt8(ascii: "]")) else { return false }
    // The userinfo before the host holds no bracket (the two are in the host).
    guard !authority[..<host.startIndex].contains(where: isBracket) else { return false }
    let after = host[(close + 1)...]
    return after.isEmpty || after.first == UInt8(ascii: ":")
}

// MARK: - Script pieces

let urlPieces: [String] = [
    "http://", "https://", "HTTP://", "x-y.z+1:", "mailto:", "urn:a:b", "//", "/", "?", "#", "&",
    "=", "@", ":", "[", "]", "[::1]", "[fe80::1%25en0]", "[v7.x]", ":8080", "user:pw@", "example.com",
    "a", "0", "%", "%2", "%20", "%zz", "%C3%A9", " ", "\t", "\r\n", "\0", "\"", "<", ">", "\\", "^",
    "`", "{", "|", "}", "é", "日", "\u{7F}", "-", ".", "_", "~", "!", "$", "'", "(", ")", "*", "+",
    ",", ";", "path", "q=1", "frag",
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
    let expectURL = referenceAcceptsURL(bytes)
    var urlError: AFSError? = nil
    do {
        try HTTPSyntax.validateURL(url)
    } catch let e as AFSError {
        urlError = e
    } catch {
        fail("validateURL threw \(error)")
    }
    if let e = urlError {
        require(!expectURL, "validateURL refused \(show(bytes)), which the reference accepts: \(e)")
        require(e.status == .badURL, "validateURL failed with \(e), not .badURL")
        if let at = namedOffset(e.message) { require(at < bytes.count, "validateURL names offset \(at) of \(bytes.count): \(e.message)") }
    } else {
        require(expectURL, "validateURL accepted \(show(bytes)), which the reference refuses")
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
        let ok = referenceIsToken(name) && (value.map(referenceIsHeaderValue) ?? true)
        do {
            try serializer.setHeader(name, value)
            require(ok, "setHeader accepted \(show(Array(name.utf8))): \(value.map { show(Array($0.utf8)) } ?? "nil")")
            require(serializer.header(name) == value, "setHeader(\(name)) then header() gives \(String(describing: serializer.header(name)))")
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
    if !expectURL { refusals.insert(.badURL) }
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
                require(e.status == .badURL && (try? HTTPSyntax.validateURL(HTTPSyntax.appendingQuery(q, to: url))) == nil,
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
        let want = (query ?? "").isEmpty ? url : HTTPSyntax.appendingQuery(query!, to: url)
        require(request.url == want, "the URL is \(request.url), expected \(want)")
        // The query sits before the fragment, and the fragment is unchanged.
        if let hash = bytes.firstIndex(of: UInt8(ascii: "#")) {
            require(request.url.utf8.reversed().starts(with: bytes[hash...].reversed()), "the fragment moved: \(request.url)")
        }
        require(request.body == nil || request.body!.isEmpty, "a URI method got a body")
    } else {
        require(request.url == url, "the URL changed to \(request.url) for a body method")
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
