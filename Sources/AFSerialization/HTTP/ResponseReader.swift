// A sans-I/O HTTP/1.1 response reader (RFC 9112): bytes in; the head, the body (decoded)
// and the trailers out. No I/O of its own: the caller reads a socket and feeds it.
//
// Framing (RFC 9112 section 6.3): interim 1xx responses are skipped (their codes kept); no
// body for a HEAD request, a 2xx answer to CONNECT, 1xx, 204 and 304; `Transfer-Encoding`
// whose last coding is chunked is de-chunked (extensions ignored, trailers kept); another
// last coding means reading to the end of the connection; else `Content-Length`; else to the
// end of the connection.
//
// Strict where request smuggling lives: both Content-Length and Transfer-Encoding, differing
// Content-Length values, whitespace before a colon, obs-fold, a bare LF, a chunk size that
// overflows, NUL, CR or another control character in a field, Transfer-Encoding in an
// HTTP/1.0 response: each `.badResponse` naming the line (framing lines are counted from the
// status line, line 1; body bytes are not lines) and the byte offset from the first byte
// fed since the reader was made or reset (interim responses included).
//
// Split invariance: the result (head, decoded body, trailers, state, error and its message)
// does not depend on how the input was split between `feed` calls; only `consumed` does.
// Limits are checked as if bytes arrived one at a time: the first byte that crosses one
// decides which.

/// The reader's size limits (C: `afs_reader_limits`; 0 means the default).
public struct ReaderLimits: Sendable, Equatable {
    public var maxHeadBytes = 65536
    public var maxHeaders = 256
    public var maxLineLength = 16384
    public var maxChunkExtension = 4096
    public init() {}
}

public final class ResponseReader {
    public enum State: Int32, Sendable { case head = 0, body = 1, done = 2 }

    private enum Phase: Equatable {
        case statusLine, headers, chunkSize, chunkData(UInt64), chunkCR, chunkLF, trailers
        case length(UInt64), toEOF, done
    }

    /// Content coding and decoding options, kept across `reset`.
    public var decodesContent = true
    public var maxDecodedBytes: UInt64?
    public private(set) var limits = ReaderLimits()
    /// Receives the decoded body instead of accumulation; returns false to stop the read
    /// (`.state`). Kept across `reset`.
    public var bodyCallback: ((UnsafeBufferPointer<UInt8>) -> Bool)?

    public private(set) var method: String
    public private(set) var state = State.head
    public private(set) var status = 0
    public private(set) var version = 11
    public private(set) var interim: [Int] = []
    /// The error that stopped the reader (sticky until `reset`).
    public private(set) var error: AFSError?

    /// Head: reason, then name NUL value NUL per field.
    private let head = GrowBuffer()
    private let trailerStore = GrowBuffer()
    public let body = GrowBuffer()
    public struct Field { public var name: Int, nameLength: Int, value: Int, valueLength: Int }
    public private(set) var fields: [Field] = []
    public private(set) var trailerFields: [Field] = []
    private var reasonOffset = 0
    private var reasonLength = 0

    private var phase = Phase.statusLine
    private let lineBuffer = GrowBuffer()
    /// Response offset of the first byte of the current `feed` call.
    private var feedBase = 0
    /// Bytes consumed since `new`/`reset`.
    public private(set) var offset = 0
    private var lineNumber = 1
    private var lineStart = 0
    private var headBytes = 0
    private var decoder: ContentDecoder?
    public private(set) var encodedBodyBytes: UInt64 = 0
    private var expectedLength: UInt64 = 0
    private var noBody = false
    private var sawEOF = false
    /// Which framing fields the head has (set while reading fields: endOfHead looks only at those).
    private var framingFields: UInt8 = 0
    private static let hasCL: UInt8 = 1, hasTE: UInt8 = 2, hasCE: UInt8 = 4
    private var isHEAD = false
    private var isCONNECT = false

    public init(method: String) throws(AFSError) {
        self.method = try ResponseReader.checkMethod(method)
        setMethodFlags()
    }

    private func setMethodFlags() {
        let m = method.uppercased()
        isHEAD = m == "HEAD"
        isCONNECT = m == "CONNECT"
    }

    private static func checkMethod(_ m: String) throws(AFSError) -> String {
        guard !m.isEmpty, m.utf8.allSatisfy(HTTPSyntax.isTokenChar) else {
            throw AFSError(.invalidMethod, "request method \(HTTPSyntax.quote(m)) is not an RFC 9110 token")
        }
        return m
    }

    public func setLimits(_ l: ReaderLimits) throws(AFSError) {
        guard state == .head && offset == 0 else {
            throw AFSError(.state, "the limits can only be set before the first byte of a response is fed")
        }
        var n = ReaderLimits()
        if l.maxHeadBytes > 0 { n.maxHeadBytes = l.maxHeadBytes }
        if l.maxHeaders > 0 { n.maxHeaders = l.maxHeaders }
        if l.maxLineLength > 0 { n.maxLineLength = l.maxLineLength }
        if l.maxChunkExtension > 0 { n.maxChunkExtension = l.maxChunkExtension }
        limits = n
    }

    /// Starts the next response on the same connection (settings are kept).
    public func reset(method: String) throws(AFSError) {
        let m = try ResponseReader.checkMethod(method)
        if m != self.method {
            self.method = m
            setMethodFlags()
        }
        resetKeepingMethod()
    }

    /// `reset(method:)` with the method of the last response.
    public func resetKeepingMethod() {
        state = .head
        status = 0
        version = 11
        interim.removeAll(keepingCapacity: true)
        error = nil
        head.shrink(keeping: 1 << 16)
        trailerStore.shrink(keeping: 1 << 16)
        body.shrink(keeping: 1 << 20)
        lineBuffer.shrink(keeping: 1 << 16)
        fields.removeAll(keepingCapacity: true)
        trailerFields.removeAll(keepingCapacity: true)
        reasonOffset = 0
        reasonLength = 0
        phase = .statusLine
        feedBase = 0
        offset = 0
        lineNumber = 1
        lineStart = 0
        headBytes = 0
        decoder = nil
        encodedBodyBytes = 0
        expectedLength = 0
        noBody = false
        sawEOF = false
        framingFields = 0
    }

    // MARK: - Results

    public var headComplete: Bool { state != .head }
    public var reason: UnsafeBufferPointer<UInt8> {
        guard let b = head.base, headComplete else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: b + reasonOffset, count: reasonLength)
    }
    public var reasonCString: UnsafePointer<CChar>? { headComplete ? head.cString(at: reasonOffset) : nil }

    public func bytes(_ f: Field, trailer: Bool = false) -> (name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let b = (trailer ? trailerStore : head).base!
        return (UnsafeBufferPointer(start: b + f.name, count: f.nameLength), UnsafeBufferPointer(start: b + f.value, count: f.valueLength))
    }
    public func nameCString(_ i: Int, trailer: Bool = false) -> UnsafePointer<CChar>? {
        let list = trailer ? trailerFields : fields
        guard i >= 0 && i < list.count else { return nil }
        return (trailer ? trailerStore : head).cString(at: list[i].name)
    }
    public func valueCString(_ i: Int, trailer: Bool = false) -> UnsafePointer<CChar>? {
        let list = trailer ? trailerFields : fields
        guard i >= 0 && i < list.count else { return nil }
        return (trailer ? trailerStore : head).cString(at: list[i].value)
    }
    public var headerCount: Int { headComplete ? fields.count : 0 }
    public var trailerCount: Int { state == .done ? trailerFields.count : 0 }

    /// The index of the first header named `name` (ASCII case-insensitive).
    public func headerIndex(_ name: UnsafeBufferPointer<UInt8>) -> Int? {
        guard headComplete else { return nil }
        for (i, f) in fields.enumerated() where f.nameLength == name.count {
            if ResponseReader.equalFold(bytes(f).name, name) { return i }
        }
        return nil
    }
    public func header(_ name: String) -> String? {
        var n = name
        let i = n.withUTF8 { headerIndex($0) }
        return i.map { String(decoding: bytes(fields[$0]).value, as: UTF8.self) }
    }

    static func equalFold(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for k in 0..<a.count where lower(a[k]) != lower(b[k]) { return false }
        return true
    }

    /// `name` equals the lowercase ASCII `lower` ignoring case.
    static func isName(_ name: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
        guard name.count == lower.utf8CodeUnitCount else { return false }
        let p = lower.utf8Start
        for k in 0..<name.count where ResponseReader.lower(name[k]) != p[k] { return false }
        return true
    }

    @inline(__always)
    static func lower(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c | 0x20 : c
    }

    // MARK: - Errors

    private func bad(_ what: String, at off: Int) -> AFSError {
        AFSError(.badResponse, "line \(lineNumber), byte offset \(off) of the response: \(what)")
    }
    private func limit(_ what: String, at off: Int) -> AFSError {
        AFSError(.limit, "line \(lineNumber), byte offset \(off) of the response: \(what)")
    }

    // MARK: - Feeding

    /// Consumes what it can of `input` (partial lines are buffered); stops at the end of the
    /// response. Returns the bytes consumed. C: `afs_response_reader_feed`.
    public func feed(_ input: UnsafeBufferPointer<UInt8>) throws(AFSError) -> Int {
        if let e = error { throw e }
        if state == .done { return 0 }
        if sawEOF { throw AFSError(.state, "bytes fed after afs_response_reader_eof") }
        var i = 0
        feedBase = offset
        do throws(AFSError) {
            try run(input, &i)
        } catch {
            offset = feedBase + i
            self.error = error
            throw error
        }
        offset = feedBase + i
        return i
    }

    private func run(_ input: UnsafeBufferPointer<UInt8>, _ i: inout Int) throws(AFSError) {
        let n = input.count
        guard let base = input.baseAddress else { return }
        while i < n {
            switch phase {
            case .statusLine, .headers, .chunkSize, .trailers:
                try refuseEarly(base + i, n - i, at: feedBase + i)
                guard let line = try takeLine(base + i, n - i, &i) else { return }
                try handleLine(line)
                lineBuffer.removeAll()
                lineNumber += 1
            case .chunkData(let rem):
                let take = Int(min(rem, UInt64(n - i)))
                try deliver(UnsafeBufferPointer(start: base + i, count: take))
                i += take
                phase = rem == UInt64(take) ? .chunkCR : .chunkData(rem - UInt64(take))
            case .chunkCR, .chunkLF:
                let want: UInt8 = phase == .chunkCR ? 0x0D : 0x0A
                guard base[i] == want else {
                    throw bad("chunk data is not followed by CRLF (found \(HTTPSyntax.describe(base[i])))", at: feedBase + i)
                }
                i += 1
                if phase == .chunkCR {
                    phase = .chunkLF
                } else {
                    phase = .chunkSize
                    lineNumber += 1
                }
            case .length(let rem):
                let take = Int(min(rem, UInt64(n - i)))
                try deliver(UnsafeBufferPointer(start: base + i, count: take))
                i += take
                if rem == UInt64(take) {
                    try finishBody()
                    return
                }
                phase = .length(rem - UInt64(take))
            case .toEOF:
                try deliver(UnsafeBufferPointer(start: base + i, count: n - i))
                i = n
            case .done:
                return
            }
            if state == .done { return }
        }
    }

    private var inHead: Bool { phase == .statusLine || phase == .headers || phase == .trailers }

    /// Checks the limits for a line of which `count` bytes before the LF are known, as if
    /// bytes arrived one at a time (see the file's notes): the first threshold crossed wins.
    private func checkLineLimits(_ count: Int, complete: Bool) throws(AFSError) {
        let lineThreshold = limits.maxLineLength + 2  // bytes before LF, CR included
        let lineFails = count >= lineThreshold
        var headThreshold = Int.max
        if inHead { headThreshold = limits.maxHeadBytes - headBytes + 1 }
        let headFails = count + (complete ? 1 : 0) >= headThreshold
        if lineFails && (!headFails || lineThreshold <= headThreshold) {
            throw limit("the line is longer than the limit of \(limits.maxLineLength) bytes", at: lineStart)
        }
        if headFails {
            let what = phase == .trailers ? "the trailer section" : "the head"
            throw limit("\(what) is larger than the limit of \(limits.maxHeadBytes) bytes", at: lineStart)
        }
    }

    /// Refuses a line as soon as its first bytes show it is wrong, before its LF arrives, so a
    /// peer that is not speaking HTTP/1.x (a TLS ServerHello, a NUL) or an obs-fold fails now
    /// instead of waiting for a line end or the line limit: a status line whose first bytes are
    /// not a prefix of "HTTP/" (a line starting with CR is left to the full-line checks, which
    /// name an empty line), and a header or trailer line starting with SP or HTAB. Only bytes
    /// before the line's LF are looked at, and the error is the one the full line would get
    /// (same message, same offset), so every split of the input still gives the one-feed result.
    private func refuseEarly(_ p: UnsafePointer<UInt8>, _ avail: Int, at here: Int) throws(AFSError) {
        let have = lineBuffer.count
        let start = have == 0 ? here : lineStart
        switch phase {
        case .statusLine:
            guard have < 5, avail > 0 else { return }
            let first = have > 0 ? lineBuffer.bytes[0] : p[0]
            if first == 0x0D { return }
            for k in have..<min(5, have + avail) {
                let c = p[k - have]
                if c == 0x0A { return }
                let want: UInt8 = k == 0 ? 0x48 : k == 3 ? 0x50 : k == 4 ? 0x2F : 0x54  // "HTTP/"
                if c != want { throw bad("the status line does not start with 'HTTP/'", at: start) }
            }
        case .headers, .trailers:
            guard have == 0, avail > 0, p[0] == 0x20 || p[0] == 0x09 else { return }
            let trailer = phase == .trailers
            let what = trailer ? "trailer" : "header"
            if (trailer ? trailerFields : fields).isEmpty {
                throw bad("whitespace at the start of the first \(what) line", at: start)
            }
            throw bad("obs-fold: a \(what) line continued on the next line (starts with whitespace)", at: start)
        default:
            return
        }
    }

    /// The next complete line without its CRLF, or nil when more input is needed.
    private func takeLine(_ p: UnsafePointer<UInt8>, _ avail: Int, _ i: inout Int) throws(AFSError) -> UnsafeBufferPointer<UInt8>? {
        if lineBuffer.count == 0 { lineStart = feedBase + i }
        guard let lf = memchr(p, 0x0A, avail) else {
            try checkLineLimits(lineBuffer.count + avail, complete: false)
            try lineBuffer.append(UnsafeBufferPointer(start: p, count: avail), "a partial line")
            i += avail
            return nil
        }
        let k = UnsafeRawPointer(lf) - UnsafeRawPointer(p)
        let total = lineBuffer.count + k
        try checkLineLimits(total, complete: true)
        i += k + 1
        if inHead { headBytes += total + 1 }
        var line: UnsafeBufferPointer<UInt8>
        if lineBuffer.count == 0 {
            line = UnsafeBufferPointer(start: p, count: k)
        } else {
            try lineBuffer.append(UnsafeBufferPointer(start: p, count: k), "a partial line")
            line = lineBuffer.bytes
        }
        guard line.count > 0 && line[line.count - 1] == 0x0D else {
            throw bad("bare LF: the line ends without CR", at: lineStart + line.count)
        }
        line = UnsafeBufferPointer(rebasing: line[..<(line.count - 1)])
        return line
    }

    private func handleLine(_ line: UnsafeBufferPointer<UInt8>) throws(AFSError) {
        switch phase {
        case .statusLine: try statusLine(line)
        case .headers, .trailers:
            if line.isEmpty {
                if phase == .headers { try endOfHead() } else { try finishBody() }
            } else {
                try fieldLine(line, trailer: phase == .trailers)
            }
        case .chunkSize: try chunkSizeLine(line)
        default: break
        }
    }

    private func statusLine(_ l: UnsafeBufferPointer<UInt8>) throws(AFSError) {
        // HTTP-version SP status-code [SP reason-phrase]
        if l.isEmpty { throw bad("an empty line where the status line should be", at: lineStart) }
        guard l.count >= 5 && l[0] == 0x48 && l[1] == 0x54 && l[2] == 0x54 && l[3] == 0x50 && l[4] == 0x2F else {
            throw bad("the status line does not start with 'HTTP/'", at: lineStart)
        }
        guard l.count >= 12, l[5] == 0x31, l[6] == 0x2E, l[7] == 0x30 || l[7] == 0x31 else {
            if l.count >= 8, l[5] >= 0x30, l[5] <= 0x39, l[6] == 0x2E, l[7] >= 0x30, l[7] <= 0x39 {
                throw bad("unsupported HTTP version \(Character(Unicode.Scalar(l[5]))).\(Character(Unicode.Scalar(l[7]))) (1.0 and 1.1 are read)", at: lineStart + 5)
            }
            throw bad("the status line is not 'HTTP/1.x NNN reason'", at: lineStart)
        }
        version = l[7] == 0x31 ? 11 : 10
        guard l[8] == 0x20 else { throw bad("expected one space after the HTTP version, found \(HTTPSyntax.describe(l[8]))", at: lineStart + 8) }
        var code = 0
        for k in 9..<12 {
            guard l[k] >= 0x30 && l[k] <= 0x39 else {
                throw bad("the status code is not three digits (found \(HTTPSyntax.describe(l[k])))", at: lineStart + k)
            }
            code = code * 10 + Int(l[k] - 0x30)
        }
        guard code >= 100 else { throw bad("status code \(code) is below 100", at: lineStart + 9) }
        var reasonStart = 12
        if l.count > 12 {
            guard l[12] == 0x20 else {
                throw bad("expected a space after the status code, found \(HTTPSyntax.describe(l[12]))", at: lineStart + 12)
            }
            reasonStart = 13
        }
        for k in reasonStart..<l.count {
            let c = l[k]
            if (c < 0x20 && c != 0x09) || c == 0x7F { throw bad(controlName(c) + " in the reason phrase", at: lineStart + k) }
        }
        status = code
        head.removeAll()
        fields.removeAll(keepingCapacity: true)
        framingFields = 0
        reasonOffset = 0
        reasonLength = l.count - reasonStart
        try head.append(UnsafeBufferPointer(rebasing: l[reasonStart...]), "the reason phrase")
        try head.append(0, "the reason phrase")
        phase = .headers
    }

    private func controlName(_ c: UInt8) -> String {
        switch c {
        case 0: return "NUL"
        case 0x0D: return "CR"
        default: return "control character \(HTTPSyntax.describe(c))"
        }
    }

    private func fieldLine(_ l: UnsafeBufferPointer<UInt8>, trailer: Bool) throws(AFSError) {
        let what = trailer ? "trailer" : "header"
        if l[0] == 0x20 || l[0] == 0x09 {
            let list = trailer ? trailerFields : fields
            if list.isEmpty { throw bad("whitespace at the start of the first \(what) line", at: lineStart) }
            throw bad("obs-fold: a \(what) line continued on the next line (starts with whitespace)", at: lineStart)
        }
        var colon = -1
        for k in 0..<l.count {
            let c = l[k]
            if c == 0x3A { colon = k; break }
            if !HTTPSyntax.isTokenChar(c) {
                if c == 0x20 || c == 0x09 {
                    var j = k
                    while j < l.count && (l[j] == 0x20 || l[j] == 0x09) { j += 1 }
                    if j < l.count && l[j] == 0x3A { throw bad("whitespace before the colon in a \(what) line", at: lineStart + k) }
                }
                if c < 0x20 || c == 0x7F { throw bad(controlName(c) + " in a \(what) name", at: lineStart + k) }
                throw bad("invalid character \(HTTPSyntax.describe(c)) in a \(what) name", at: lineStart + k)
            }
        }
        guard colon >= 0 else { throw bad("a \(what) line without a colon", at: lineStart) }
        guard colon > 0 else { throw bad("an empty \(what) name", at: lineStart) }
        var a = colon + 1, b = l.count
        while a < b && (l[a] == 0x20 || l[a] == 0x09) { a += 1 }
        while b > a && (l[b - 1] == 0x20 || l[b - 1] == 0x09) { b -= 1 }
        for k in a..<b {
            let c = l[k]
            if (c < 0x20 && c != 0x09) || c == 0x7F { throw bad(controlName(c) + " in the value of a \(what)", at: lineStart + k) }
        }
        let count = trailer ? trailerFields.count : fields.count
        guard count < limits.maxHeaders else {
            throw limit("more than \(limits.maxHeaders) \(what) fields", at: lineStart)
        }
        let f = trailer ? try ResponseReader.store(l, colon, a, b, in: trailerStore, what)
                        : try ResponseReader.store(l, colon, a, b, in: head, what)
        if trailer {
            try trailerFields.checkedAppend(f, "the trailer list")
        } else {
            try fields.checkedAppend(f, "the header list")
            if colon >= 14 && colon <= 17 && (l[0] | 0x20 == 0x63 || l[0] | 0x20 == 0x74) {
                let name = UnsafeBufferPointer(rebasing: l[..<colon])
                if colon == 14 && ResponseReader.isName(name, "content-length") {
                    framingFields |= ResponseReader.hasCL
                } else if colon == 17 && ResponseReader.isName(name, "transfer-encoding") {
                    framingFields |= ResponseReader.hasTE
                } else if colon == 16 && ResponseReader.isName(name, "content-encoding") {
                    framingFields |= ResponseReader.hasCE
                }
            }
        }
    }

    /// Appends `name NUL value NUL` to `store`.
    private static func store(_ l: UnsafeBufferPointer<UInt8>, _ colon: Int, _ a: Int, _ b: Int, in store: GrowBuffer,
                              _ what: String) throws(AFSError) -> Field {
        let nameAt = store.count
        try store.append(UnsafeBufferPointer(rebasing: l[..<colon]), "a \(what) name")
        try store.append(0, "a \(what) name")
        let valueAt = store.count
        try store.append(UnsafeBufferPointer(rebasing: l[a..<b]), "a \(what) value")
        try store.append(0, "a \(what) value")
        return Field(name: nameAt, nameLength: colon, value: valueAt, valueLength: b - a)
    }

    // MARK: - Framing

    private static let httpSlash = Array("HTTP/".utf8)
    private static let contentLengthName = Array("content-length".utf8)
    private static let transferEncodingName = Array("transfer-encoding".utf8)
    private static let contentEncodingName = Array("content-encoding".utf8)

    /// The comma-separated elements of every field named `name`, trimmed (empty ones too).
    private func listElements(_ name: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        name.withUnsafeBufferPointer { nb in
            for f in fields where f.nameLength == nb.count {
                let (n, v) = bytes(f)
                guard ResponseReader.equalFold(n, nb) else { continue }
                for part in v.split(separator: 0x2C, omittingEmptySubsequences: false) {
                    var s = part[...]
                    while let c = s.first, c == 0x20 || c == 0x09 { s = s.dropFirst() }
                    while let c = s.last, c == 0x20 || c == 0x09 { s = s.dropLast() }
                    out.append(Array(s))
                }
            }
        }
        return out
    }

    /// The Content-Length: every element of every Content-Length field, each a decimal
    /// number below 2^63, all equal (RFC 9112 6.3 rule 5); nil without one.
    private func contentLength(_ endOffset: Int) throws(AFSError) -> UInt64? {
        var length: UInt64?
        guard let base = head.base else { return nil }
        for f in fields where f.nameLength == 14 {
            let n = UnsafeBufferPointer(start: base + f.name, count: f.nameLength)
            let v = UnsafeBufferPointer(start: base + f.value, count: f.valueLength)
            guard ResponseReader.isName(n, "content-length") else { continue }
            var k = 0
            while true {
                var e = k
                while e < v.count && v[e] != 0x2C { e += 1 }
                var a = k, b = e
                while a < b && (v[a] == 0x20 || v[a] == 0x09) { a += 1 }
                while b > a && (v[b - 1] == 0x20 || v[b - 1] == 0x09) { b -= 1 }
                let text = { String(decoding: UnsafeBufferPointer(rebasing: v[a..<b]), as: UTF8.self) }
                guard a < b else { throw bad("an empty Content-Length element", at: endOffset) }
                var x: UInt64 = 0
                for c in v[a..<b] {
                    guard c >= 0x30 && c <= 0x39 else {
                        throw bad("Content-Length \(HTTPSyntax.quote(text())) is not a decimal number", at: endOffset)
                    }
                    let (m, o1) = x.multipliedReportingOverflow(by: 10)
                    let (sum, o2) = m.addingReportingOverflow(UInt64(c - 0x30))
                    guard !o1 && !o2 && sum <= UInt64(Int64.max) else {
                        throw bad("Content-Length \(text()) is too large", at: endOffset)
                    }
                    x = sum
                }
                if let l = length, l != x { throw bad("differing Content-Length values (\(l) and \(x))", at: endOffset) }
                length = x
                if e == v.count { break }
                k = e + 1
            }
        }
        return length
    }

    private func endOfHead() throws(AFSError) {
        let endOffset = lineStart
        if status < 200 && status != 101 {
            guard interim.count < limits.maxHeaders else {
                throw limit("more than \(limits.maxHeaders) interim (1xx) responses", at: endOffset)
            }
            interim.append(status)
            phase = .statusLine
            headBytes = 0
            return
        }
        // Content-Length: every element the same non-negative integer.
        let length = framingFields & ResponseReader.hasCL != 0 ? try contentLength(endOffset) : nil
        // Transfer-Encoding: codings, chunked only last.
        let te = framingFields & ResponseReader.hasTE != 0 ? listElements(ResponseReader.transferEncodingName) : []
        var transfer: [ContentCoding] = []
        var chunked = false
        var rawToEOF = false
        let hasTE = !te.isEmpty
        if hasTE {
            if length != nil { throw bad("both Content-Length and Transfer-Encoding (request smuggling guard)", at: endOffset) }
            if version == 10 { throw bad("Transfer-Encoding in an HTTP/1.0 response", at: endOffset) }
            var tokens: [String] = []
            for e in te {
                let tok = String(decoding: e.prefix { $0 != 0x3B && $0 != 0x20 && $0 != 0x09 }, as: UTF8.self).lowercased()
                if !tok.isEmpty { tokens.append(tok) }
            }
            chunked = tokens.last == "chunked"
            if tokens.dropLast().contains("chunked") {
                // chunked is not the last coding: the body runs to the end of the connection
                // (RFC 9112 6.3 rule 4), delivered as sent (its codings cannot be undone).
                rawToEOF = true
                chunked = false
            } else {
                for (k, tok) in tokens.enumerated() where tok != "chunked" && tok != "identity" {
                    guard let c = ContentCoding(token: tok) else {
                        throw bad("unknown transfer coding \(HTTPSyntax.quote(tok)) (element \(k + 1) of Transfer-Encoding)", at: endOffset)
                    }
                    transfer.append(c)
                }
            }
        }
        state = .body
        noBody = isHEAD || status == 101 || status == 204 || status == 304 || (isCONNECT && status / 100 == 2)
        if noBody {
            phase = .done
            try finishBody()
            return
        }
        // Decoders: content codings applied first, then transfer codings.
        var applied: [ContentCoding] = []
        if decodesContent && !rawToEOF && framingFields & ResponseReader.hasCE != 0 {
            var ce: [ContentCoding] = []
            var unknown = false
            for e in listElements(ResponseReader.contentEncodingName) {
                let tok = String(decoding: e, as: UTF8.self).lowercased()
                if tok.isEmpty || tok == "identity" { continue }
                if let c = ContentCoding(token: tok) { ce.append(c) } else { unknown = true }
            }
            // An unknown content coding: the body is left as sent (as urllib3 does).
            if !unknown { applied = ce }
        }
        applied += transfer
        if !applied.isEmpty { decoder = try ContentDecoder(codings: applied, maxDecodedBytes: maxDecodedBytes) }
        if hasTE {
            phase = chunked ? .chunkSize : .toEOF
        } else if let l = length {
            expectedLength = l
            phase = .length(l)
            if l == 0 { try finishBody() }
        } else {
            phase = .toEOF
        }
    }

    private func chunkSizeLine(_ l: UnsafeBufferPointer<UInt8>) throws(AFSError) {
        var k = 0
        var size: UInt64 = 0
        var digits = 0
        while k < l.count, let d = ResponseReader.hexValue(l[k]) {
            let (m, o) = size.multipliedReportingOverflow(by: 16)
            guard !o && m | UInt64(d) <= UInt64(Int64.max) else {
                throw bad("the chunk size overflows (more than 2^63 - 1)", at: lineStart)
            }
            size = m | UInt64(d)
            digits += 1
            k += 1
        }
        guard digits > 0 else {
            if l.isEmpty { throw bad("an empty line where a chunk size should be", at: lineStart) }
            throw bad("the chunk size is not a hexadecimal number (found \(HTTPSyntax.describe(l[0])))", at: lineStart)
        }
        var j = k
        while j < l.count && (l[j] == 0x20 || l[j] == 0x09) { j += 1 }
        if j < l.count {
            guard l[j] == 0x3B else {
                throw bad("invalid character \(HTTPSyntax.describe(l[j])) after the chunk size", at: lineStart + j)
            }
            guard l.count - j <= limits.maxChunkExtension else {
                throw limit("the chunk extension is longer than the limit of \(limits.maxChunkExtension) bytes", at: lineStart + j)
            }
            for x in j..<l.count where (l[x] < 0x20 && l[x] != 0x09) || l[x] == 0x7F {
                throw bad(controlName(l[x]) + " in a chunk extension", at: lineStart + x)
            }
        }
        if size == 0 {
            phase = .trailers
            headBytes = 0
        } else {
            phase = .chunkData(size)
        }
    }

    @inline(__always)
    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }

    // MARK: - Body

    @inline(__always)
    private func deliver(_ b: UnsafeBufferPointer<UInt8>) throws(AFSError) {
        if b.isEmpty { return }
        encodedBodyBytes &+= UInt64(b.count)
        if let d = decoder {
            try d.feed(b) { (o) throws(AFSError) in try self.output(o) }
        } else {
            try output(b)
        }
    }

    @inline(__always)
    private func output(_ b: UnsafeBufferPointer<UInt8>) throws(AFSError) {
        if let cb = bodyCallback {
            guard cb(b) else { throw AFSError(.state, "the body callback stopped the read after \(encodedBodyBytes) body bytes") }
        } else {
            try body.append(b, "the response body")
        }
    }

    private func finishBody() throws(AFSError) {
        if let d = decoder {
            try d.finish { (o) throws(AFSError) in try self.output(o) }
        }
        phase = .done
        state = .done
    }

    /// The connection closed. C: `afs_response_reader_eof`.
    public func eof() throws(AFSError) {
        if let e = error { throw e }
        if state == .done { return }
        sawEOF = true
        do throws(AFSError) {
            switch phase {
            case .toEOF:
                try finishBody()
            case .statusLine where offset == 0 && interim.isEmpty:
                throw bad("the connection closed before a response began", at: offset)
            case .statusLine, .headers:
                throw bad("the connection closed inside the head", at: offset)
            case .length(let rem):
                throw bad("the connection closed after \(expectedLength - rem) of \(expectedLength) body bytes (Content-Length)", at: offset)
            default:
                throw bad("the connection closed inside the chunked body", at: offset)
            }
        } catch let e {
            self.error = e
            throw e
        }
    }
}
