// A conforming non-validating XML 1.0 (fifth edition) reader with Namespaces in XML 1.0,
// push-based: bytes may arrive in any split and give the same events (character data may
// be cut at other places: runs are reported as they arrive).
//
// Design: the input stage (XMLInput) converts to validated UTF-8 into `buf`; the tokenizer
// reads one token at a time (a tag, a comment, a PI, a declaration, a reference, or a run of
// character data up to the end of the buffer) and, when a token is incomplete, stops and
// retries it once the buffer has grown (geometrically, so one-byte feeds stay linear). No
// event is reported for an incomplete token, and nothing but `expanded` changes before a
// token is complete (it is restored on a retry). The buffer holds at most the token in
// progress. Nothing is ever read but the bytes fed: external entities and the external DTD
// subset are never fetched.

internal import CAFSerialization

enum XMLFail: Error {
    case needMore
    case error(AFSError)
}

/// The reader. One instance reads one document; it is not thread-safe.
/// C: `afs_xml_parser` (`afs_xml_parser_new`, `_feed`, `_finish`).
public final class XMLPushParser {
    struct Cur {
        let p: UnsafePointer<UInt8>
        let n: Int
        var i: Int
        let final: Bool
        /// Replacement text of an entity: no line-end normalization, positions are the
        /// outermost reference's.
        let inEntity: Bool
    }

    struct Entity {
        var text: [UInt8]? = nil     // internal: the replacement text
        var external = false
        var unparsed = false
    }

    struct AttDecl {
        var name: [UInt8]
        var isCDATA: Bool
        var defaultValue: [UInt8]?
    }

    struct Open {
        var start: Int, len: Int, prefixLen: Int
        var uri: Int         // -1 none, -2 the xml namespace, else index in `bindings`
        var nsMark: Int
    }

    /// A namespace binding: offsets and lengths in `nsBytes`.
    struct NSBinding {
        var prefix: Int, prefixLen: Int, uri: Int, uriLen: Int
    }

    /// An attribute of the start tag in progress: offsets and lengths in `sbytes`, where it
    /// is in the input (for errors; a defaulted one: the tag's start), its prefix length
    /// and namespace (as `Open.uri`, -3 for a namespace declaration).
    struct RawAttr {
        var name: Int, nameLen: Int, value: Int, valueLen: Int, pos: Int
        var prefixLen = 0, uri = -1
        var isDecl = false
    }

    enum Phase { case start, prolog, subset, content, epilog, done }

    static let xmlNS = Array("http://www.w3.org/XML/1998/namespace".utf8)
    static let xmlnsNS = Array("http://www.w3.org/2000/xmlns/".utf8)

    let sink: XMLEventSink
    public var limits: XMLLimits

    var input = XMLInput()
    var buf: [UInt8] = []
    var base = 0
    var pos = 0
    var retryAt = 0
    var finished = false
    var failure: AFSError? = nil
    var phase = Phase.start

    // Position tracking (lazy: advanced at compaction and for errors).
    var trackOff = 0, line = 1, col = 1, chars = 0, supp = 0, prevCR = false

    // The DTD.
    var standalone: Bool? = nil
    var hasDoctype = false, hasExternalSubset = false, sawPERef = false, stopDecls = false
    var entities: [[UInt8]: Entity] = [:]
    var pentities: [[UInt8]: Entity] = [:]
    var attlists: [[UInt8]: [AttDecl]] = [:]
    var expanding: [[UInt8]] = []
    var expanded = 0
    var entityRefPos = 0
    var entityBaseDepth = 0

    // Elements and namespaces, in manually managed buffers (no reference counting on the
    // hot path). `names` holds each open element's qname followed by a NUL (the end event
    // points into it); a binding's prefix and URI (the URI followed by a NUL) are in
    // `nsBytes`.
    var names = XMLScratch<UInt8>()
    var stack = XMLScratch<Open>()
    var nsBytes = XMLScratch<UInt8>()
    var bindings = XMLScratch<NSBinding>()

    // Scratch: the start tag in progress (`sbytes`: each attribute's name NUL value NUL).
    var attrs = XMLScratch<RawAttr>()
    var ev: [UInt8] = []
    var sbytes = XMLScratch<UInt8>()
    var sviews = XMLScratch<XMLAttribute>()

    public init(sink: XMLEventSink, limits: XMLLimits = XMLLimits()) {
        self.sink = sink
        self.limits = limits
    }

    deinit {
        names.free()
        stack.free()
        nsBytes.free()
        bindings.free()
        attrs.free()
        sbytes.free()
        sviews.free()
    }

    /// Parses a whole document. C: `afs_xml_parse`.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, sink: XMLEventSink, limits: XMLLimits = XMLLimits()) throws(AFSError) {
        let p = XMLPushParser(sink: sink, limits: limits)
        // One final feed: the whole input at once (no compaction before the end).
        p.finished = true
        do {
            if bytes.count >= 1 << 20 {
                // A large document: its UTF-8 in one block (not grown by doubling, each
                // step a copy into fresh pages), pre-faulted in one system call.
                try p.buf.checkedReserve(bytes.count &+ 1, "the XML reader's \(bytes.count)-byte input buffer")
                p.buf.withUnsafeMutableBufferPointer {
                    if let b = $0.baseAddress { XMLTapeBuilder.prefault(UnsafeMutableRawPointer(b), bytes.count) }
                }
            }
            try p.input.feed(bytes, final: true, into: &p.buf, outBase: 0)
        } catch { throw p.fail(error) }
        try p.run()
    }

    /// Feeds the next bytes. C: `afs_xml_parser_feed`.
    public func feed(_ bytes: UnsafeBufferPointer<UInt8>) throws(AFSError) {
        if let f = failure { throw f }
        if finished { throw fail(AFSError(.state, "the XML parser was already finished")) }
        do {
            try input.feed(bytes, final: false, into: &buf, outBase: base)
        } catch { throw fail(error) }
        if base + buf.count < retryAt && input.error == nil { return }
        try run()
    }

    /// Ends the document: reports what is left and checks it is complete.
    /// C: `afs_xml_parser_finish`.
    public func finish() throws(AFSError) {
        if let f = failure { throw f }
        if finished { throw fail(AFSError(.state, "the XML parser was already finished")) }
        finished = true
        do {
            try input.feed(UnsafeBufferPointer(start: nil, count: 0), final: true, into: &buf, outBase: base)
        } catch { throw fail(error) }
        try run()
    }

    private func fail(_ e: AFSError) -> AFSError {
        failure = e
        return e
    }

    // MARK: Driving

    private func run() throws(AFSError) {
        let final = finished && input.error == nil
        var needMore = false
        if buf.isEmpty { buf.reserveCapacity(16) }
        let r: Result<Int, XMLFail> = buf.withUnsafeBufferPointer { b in
            var c = Cur(p: b.baseAddress!, n: b.count, i: pos, final: final, inEntity: false)
            do {
                try document(&c)
                return .success(c.i)
            } catch let e as XMLFail {
                if case .needMore = e { needMore = true; return .success(c.i) }
                return .failure(e)
            } catch {
                return .failure(.error(AFSError(.invalidXML, "\(error)")))
            }
        }
        switch r {
        case .failure(.error(let e)): throw fail(e)
        case .failure(.needMore): break
        case .success(let i):
            pos = i
            if let de = input.error, needMore || pos == buf.count {
                throw fail(AFSError(.invalidXML, "not well-formed: \(de.message) \(location(de.offset))"))
            }
            if needMore {
                let tokenBytes = buf.count - pos
                retryAt = base + buf.count + Swift.max(tokenBytes, 1)
            }
            compact()
        }
    }

    private func compact() {
        guard pos > 0 else { return }
        if phase != .done { track(to: base + pos) }  // a finished document reports no more errors
        if pos == buf.count { buf.removeAll(keepingCapacity: buf.capacity <= 1 << 20) } else { buf.removeSubrange(0..<pos) }
        base += pos
        pos = 0
    }

    /// Advances the line/column tracker to the decoded offset `abs` (within `buf`).
    private func track(to abs: Int) {
        let start = trackOff - base
        let end = Swift.min(abs - base, buf.count)
        guard start < end else { return }
        var line = self.line, col = self.col, chars = self.chars, supp = self.supp, prevCR = self.prevCR
        buf.withUnsafeBufferPointer { p in
            for i in start..<end {
                let b = p[i]
                if b < 0x80 {
                    chars += 1
                    if b == 0x0A {
                        if !prevCR { line += 1; col = 1 }
                        prevCR = false
                    } else if b == 0x0D {
                        line += 1; col = 1; prevCR = true
                    } else {
                        prevCR = false
                        col += 1
                    }
                } else {
                    prevCR = false
                    if b & 0xC0 != 0x80 { col += 1; chars += 1 }
                    if b >= 0xF0 { supp += 1 }
                }
            }
        }
        self.line = line; self.col = col; self.chars = chars; self.supp = supp; self.prevCR = prevCR
        trackOff = base + end
    }

    /// "at line L, column C (byte offset O)" for the decoded offset `abs`.
    func location(_ abs: Int) -> String {
        track(to: abs)
        let off: Int
        switch input.encoding ?? .utf8 {
        case .utf8: off = input.bomLength + trackOff
        case .latin1, .ascii: off = chars
        case .utf16le, .utf16be: off = input.bomLength + 2 * (chars + supp)
        }
        return "at line \(line), column \(col) (byte offset \(off))"
    }

    func err(_ msg: String, _ c: Cur, _ at: Int, _ status: AFSStatus = .invalidXML) -> XMLFail {
        if c.inEntity {
            let name = expanding.last.map { String(decoding: $0, as: UTF8.self) } ?? "?"
            return .error(AFSError(status, (status == .invalidXML ? "not well-formed: " : "") + msg
                + " in the replacement text of entity '\(name)' referenced " + location(entityRefPos)))
        }
        return .error(AFSError(status, (status == .invalidXML ? "not well-formed: " : "") + msg + " " + location(base + at)))
    }

    /// Ensures `k` bytes at `c.i`; needMore when more may come, else an error.
    @inline(__always)
    func need(_ c: Cur, _ k: Int, _ what: @autoclosure () -> String) throws {
        if c.i + k <= c.n { return }
        if !c.final { throw XMLFail.needMore }
        throw err("the input ends inside " + what(), c, c.n)
    }

    /// Runs a token function; on needMore, restores the position and the expansion count.
    @inline(__always)
    func token(_ c: inout Cur, _ f: (inout Cur) throws -> Void) throws {
        let s = c.i, e = expanded
        do { try f(&c) } catch let x as XMLFail {
            if case .needMore = x { c.i = s; expanded = e }
            throw x
        }
    }

    // MARK: Document structure

    func document(_ c: inout Cur) throws {
        while true {
            switch phase {
            case .start:
                try token(&c) { try self.xmlDecl(&$0) }
                phase = .prolog
            case .prolog, .epilog:
                try misc(&c)
                if phase == .done { return }
            case .subset:
                try subset(&c)
            case .content:
                try content(&c)
            case .done:
                return
            }
        }
    }

    func misc(_ c: inout Cur) throws {
        while true {
            while c.i < c.n && XMLChars.isSpace(c.p[c.i]) { c.i += 1 }
            if c.i == c.n {
                if !c.final { throw XMLFail.needMore }
                if phase == .prolog { throw err("no root element", c, c.n) }
                phase = .done
                return
            }
            guard c.p[c.i] == 0x3C else {
                throw err(phase == .prolog ? "text before the root element" : "text after the root element", c, c.i)
            }
            try need(c, 2, "markup")
            let b = c.p[c.i + 1]
            if b == 0x3F {
                try token(&c) { try self.pi(&$0, report: true) }
            } else if b == 0x21 {
                try need(c, 4, "markup")
                if c.p[c.i + 2] == 0x2D && c.p[c.i + 3] == 0x2D {
                    try token(&c) { try self.comment(&$0, report: true) }
                } else if try phase == .prolog && !hasDoctype && startsWith(c, "<!DOCTYPE") {
                    try token(&c) { try self.doctype(&$0) }
                    return
                } else {
                    try need(c, 9, "markup")
                    let second = try phase == .prolog && hasDoctype && startsWith(c, "<!DOCTYPE")
                    throw err(second ? "a second document type declaration"
                              : "'<!' markup not allowed here", c, c.i)
                }
            } else if phase == .prolog {
                try token(&c) { try self.startTag(&$0) }
                phase = .content
                return
            } else {
                throw err("junk after the root element (a second root element?)", c, c.i)
            }
        }
    }

    /// Whether `lit` is at `c.i` (needMore when the buffer ends before deciding).
    func startsWith(_ c: Cur, _ lit: StaticString) throws -> Bool {
        let n = lit.utf8CodeUnitCount
        let l = lit.utf8Start
        for k in 0..<n {
            if c.i + k >= c.n {
                if !c.final { throw XMLFail.needMore }
                return false
            }
            if c.p[c.i + k] != l[k] { return false }
        }
        return true
    }

    func expectLiteral(_ c: inout Cur, _ lit: StaticString, _ what: String) throws {
        guard try startsWith(c, lit) else { throw err("expected \(what)", c, c.i) }
        c.i += lit.utf8CodeUnitCount
    }

    func skipS(_ c: inout Cur) throws -> Bool {
        let s = c.i
        while c.i < c.n && XMLChars.isSpace(c.p[c.i]) { c.i += 1 }
        if c.i == c.n && !c.final { throw XMLFail.needMore }
        return c.i > s
    }

    func requireS(_ c: inout Cur, _ what: String) throws {
        guard try skipS(&c) else {
            if c.i == c.n { throw err("the input ends inside \(what)", c, c.i) }
            throw err("whitespace required in \(what)", c, c.i)
        }
    }

    /// A Name at `c.i`.
    func name(_ c: inout Cur, _ what: String) throws -> Range<Int> {
        let s = c.i
        var i = c.i
        let p = c.p
        var first = true
        if i < c.n && cafs_xml_class(p[i]) & 1 != 0 {
            i = cafs_xml_scan_name(p, i + 1, c.n)  // the ASCII part at once
            first = false
        }
        while i < c.n {
            let b = p[i]
            if b < 0x80 {
                let cl = cafs_xml_class(b)
                if cl & (first ? 1 : 2) == 0 { break }
                i += 1
            } else {
                let (ch, l) = XMLChars.decode(p, i)
                if first ? !XMLChars.isNameStart(ch) : !XMLChars.isNameChar(ch) { break }
                i += l
            }
            first = false
        }
        if i == c.n && !c.final { throw XMLFail.needMore }
        if i == s {
            if i == c.n { throw err("the input ends where \(what) is expected", c, i) }
            throw err("expected \(what)", c, i)
        }
        c.i = i
        return s..<i
    }

    func bytes(_ c: Cur, _ r: Range<Int>) -> [UInt8] { Array(UnsafeBufferPointer(start: c.p + r.lowerBound, count: r.count)) }

    func hasColon(_ c: Cur, _ r: Range<Int>) -> Bool {
        for k in r where c.p[k] == 0x3A { return true }
        return false
    }

    // MARK: XML declaration

    func xmlDecl(_ c: inout Cur) throws {
        let s = c.i
        var isDecl = false
        if try startsWith(c, "<?xml") {
            if c.i + 5 >= c.n {
                if !c.final { throw XMLFail.needMore }
            } else {
                isDecl = XMLChars.isSpace(c.p[c.i + 5])
            }
        }
        guard isDecl else {
            if let e = input.encoding, (e == .utf16le || e == .utf16be) && input.bomLength == 0 {
                throw err("UTF-16 input without a byte order mark needs an encoding declaration", c, s)
            }
            return
        }
        c.i += 5
        func pseudoAttr(_ c: inout Cur, _ key: StaticString) throws -> Range<Int>? {
            let save = c.i
            let hadS = try skipS(&c)
            guard hadS, try startsWith(c, key) else { c.i = save; return nil }
            c.i += key.utf8CodeUnitCount
            _ = try skipS(&c)
            try need(c, 1, "the XML declaration")
            guard c.p[c.i] == 0x3D else { throw err("expected '=' in the XML declaration", c, c.i) }
            c.i += 1
            _ = try skipS(&c)
            try need(c, 1, "the XML declaration")
            let q = c.p[c.i]
            guard q == 0x22 || q == 0x27 else { throw err("expected a quoted value in the XML declaration", c, c.i) }
            var j = c.i + 1
            while j < c.n && c.p[j] != q && c.p[j] != 0x3F && c.p[j] != 0x3E { j += 1 }
            if j == c.n { try need(c, j - c.i + 1, "the XML declaration") }
            guard c.p[j] == q else { throw err("unterminated value in the XML declaration", c, j) }
            let r = (c.i + 1)..<j
            c.i = j + 1
            return r
        }
        guard let v = try pseudoAttr(&c, "version") else { throw err("the XML declaration needs a version", c, c.i) }
        let vb = bytes(c, v)
        guard vb.count >= 3, vb[0] == 0x31, vb[1] == 0x2E, vb[2...].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw err("unsupported XML version '\(String(decoding: vb, as: UTF8.self))'", c, v.lowerBound)
        }
        if let e = try pseudoAttr(&c, "encoding") {
            let eb = bytes(c, e)
            guard let f = eb.first, (f | 0x20) >= 0x61 && (f | 0x20) <= 0x7A,
                  eb.allSatisfy({ ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }) else {
                throw err("invalid encoding name '\(String(decoding: eb, as: UTF8.self))'", c, e.lowerBound)
            }
            let label = String(decoding: eb, as: UTF8.self)
            guard let named = XMLEncoding.named(eb) else {
                throw err("unsupported encoding '\(label)' (supported: UTF-8, UTF-16, ISO-8859-1, US-ASCII)", c, e.lowerBound)
            }
            let actual = input.encoding ?? .utf8
            let isUTF16 = actual == .utf16le || actual == .utf16be
            if let d = named {
                if isUTF16 || (input.bomLength == 3 && d != .utf8) || d != actual {
                    throw err("the declared encoding '\(label)' does not match the input (\(actual.name))", c, e.lowerBound)
                }
            } else if !isUTF16 {
                throw err("the declared encoding '\(label)' does not match the input (\(actual.name))", c, e.lowerBound)
            }
        } else if let e = input.encoding, (e == .utf16le || e == .utf16be) && input.bomLength == 0 {
            throw err("UTF-16 input without a byte order mark needs an encoding declaration", c, s)
        }
        if let sd = try pseudoAttr(&c, "standalone") {
            let sb = bytes(c, sd)
            if sb == Array("yes".utf8) { standalone = true } else if sb == Array("no".utf8) { standalone = false } else {
                throw err("standalone must be 'yes' or 'no'", c, sd.lowerBound)
            }
        }
        _ = try skipS(&c)
        try need(c, 2, "the XML declaration")
        guard c.p[c.i] == 0x3F && c.p[c.i + 1] == 0x3E else { throw err("expected '?>' to end the XML declaration", c, c.i) }
        c.i += 2
    }

    // MARK: Comments, PIs, CDATA

    func comment(_ c: inout Cur, report: Bool) throws {
        let s = c.i
        c.i += 4
        var j = c.i
        while true {
            while j < c.n && c.p[j] != 0x2D { j += 1 }
            if j + 1 >= c.n { c.i = j; try need(c, 3, "a comment"); }
            if c.p[j + 1] == 0x2D {
                if j + 2 >= c.n { c.i = j; try need(c, 3, "a comment") }
                guard c.p[j + 2] == 0x3E else { throw err("'--' inside a comment", c, j) }
                break
            }
            j += 1
        }
        let textStart = s + 4
        c.i = j + 3
        if report && !c.inEntity || report && c.inEntity {
            try emitNormalized(c, textStart..<j) { t in self.sink.comment(t) }
        }
    }

    func pi(_ c: inout Cur, report: Bool) throws {
        let s = c.i
        c.i += 2
        let t = try name(&c, "a processing instruction target")
        let tb = bytes(c, t)
        if tb.count == 3 && (tb[0] | 0x20) == 0x78 && (tb[1] | 0x20) == 0x6D && (tb[2] | 0x20) == 0x6C {
            throw err(tb == Array("xml".utf8) ? "an XML declaration is allowed only at the start of the document"
                      : "the processing instruction target '\(String(decoding: tb, as: UTF8.self))' is reserved", c, s)
        }
        if hasColon(c, t) { throw err("a processing instruction target may not contain ':'", c, t.lowerBound) }
        var dataStart = c.i
        let hadS = try skipS(&c)
        if hadS { dataStart = c.i }
        var j = c.i
        while true {
            while j < c.n && c.p[j] != 0x3F { j += 1 }
            if j + 1 >= c.n { c.i = j; try need(c, 2, "a processing instruction") }
            if c.p[j + 1] == 0x3E { break }
            j += 1
        }
        if !hadS && j != dataStart { throw err("whitespace required after the processing instruction target", c, dataStart) }
        c.i = j + 2
        guard report else { return }
        // target\0 data\0 in the scratch buffer (the data normalized).
        ev.removeAll(keepingCapacity: true)
        ev.append(contentsOf: UnsafeBufferPointer(start: c.p + t.lowerBound, count: t.count))
        ev.append(0)
        let dstart = ev.count
        appendNormalized(c, dataStart..<j, to: &ev)
        let dlen = ev.count - dstart
        ev.append(0)
        let ok = ev.withUnsafeBufferPointer { b in
            sink.processingInstruction(target: XMLText(start: b.baseAddress!, count: t.count),
                                       data: XMLText(start: b.baseAddress! + dstart, count: dlen))
        }
        if !ok { throw XMLFail.error(AFSError(.state, "stopped by the handler")) }
    }

    /// Appends `c.p[r]` with line ends normalized (outside entities).
    func appendNormalized(_ c: Cur, _ r: Range<Int>, to out: inout [UInt8]) {
        if c.inEntity {
            out.append(contentsOf: UnsafeBufferPointer(start: c.p + r.lowerBound, count: r.count))
            return
        }
        var k = r.lowerBound
        var run = k
        while k < r.upperBound {
            if c.p[k] == 0x0D {
                out.append(contentsOf: UnsafeBufferPointer(start: c.p + run, count: k - run))
                out.append(0x0A)
                if k + 1 < r.upperBound && c.p[k + 1] == 0x0A { k += 1 }
                run = k + 1
            }
            k += 1
        }
        out.append(contentsOf: UnsafeBufferPointer(start: c.p + run, count: r.upperBound - run))
    }

    func emitNormalized(_ c: Cur, _ r: Range<Int>, _ f: (XMLText) -> Bool) throws {
        ev.removeAll(keepingCapacity: true)
        appendNormalized(c, r, to: &ev)
        let n = ev.count
        ev.append(0)
        let ok = ev.withUnsafeBufferPointer { f(XMLText(start: $0.baseAddress!, count: n)) }
        if !ok { throw XMLFail.error(AFSError(.state, "stopped by the handler")) }
    }

    func cdata(_ c: inout Cur) throws {
        c.i += 9
        var j = c.i
        while true {
            while j < c.n && c.p[j] != 0x5D { j += 1 }
            if j + 2 >= c.n { let save = c.i; c.i = j; try need(c, 3, "a CDATA section"); c.i = save }
            if c.p[j + 1] == 0x5D && c.p[j + 2] == 0x3E { break }
            j += 1
        }
        let r = c.i..<j
        c.i = j + 3
        if !r.isEmpty { try emitNormalized(c, r) { t in self.sink.characters(t) } }
    }

    // MARK: Content

    /// A NUL-terminated line feed (what a CR in content becomes).
    static var newline: UnsafePointer<UInt8> { ("\n" as StaticString).utf8Start }

    func emitText(_ p: UnsafePointer<UInt8>, _ n: Int) throws {
        if !sink.characters(XMLText(start: p, count: n)) { throw XMLFail.error(AFSError(.state, "stopped by the handler")) }
    }

    func content(_ c: inout Cur) throws {
        let p = c.p
        while c.i < c.n {
            if !c.inEntity && stack.count == 0 { phase = .epilog; return }
            let b = p[c.i]
            if b == 0x3C {
                try token(&c) { try self.markup(&$0) }
                continue
            }
            if b == 0x26 {
                try token(&c) { try self.reference(&$0) }
                continue
            }
            let start = c.i
            var i = c.i
            var stopped = false
            while i < c.n {
                i = cafs_xml_scan_text(p, i, c.n)  // to the next '<', '&', ']' or CR
                if i >= c.n { break }
                let x = p[i]
                if x == 0x5D {
                    if i + 1 < c.n && p[i + 1] != 0x5D { i += 1; continue }
                    if i + 2 < c.n {
                        if p[i + 2] == 0x3E {
                            if i > start { try emitText(p + start, i - start) }
                            throw err("']]>' is not allowed in character data", c, i)
                        }
                        i += 1; continue
                    }
                    if c.final { i += 1; continue }
                    stopped = true
                    break
                }
                if x == 0x0D && c.inEntity { i += 1; continue }
                break
            }
            if i > start { try emitText(p + start, i - start) }
            c.i = i
            if stopped { throw XMLFail.needMore }
            if i < c.n && p[i] == 0x0D {
                if i + 1 >= c.n && !c.final { throw XMLFail.needMore }
                try emitText(XMLPushParser.newline, 1)
                c.i += (i + 1 < c.n && p[i + 1] == 0x0A) ? 2 : 1
            }
        }
        if c.inEntity { return }
        if stack.count > 0 {
            if !c.final { throw XMLFail.needMore }
            let o = stack.base![stack.count - 1]
            let q = String(decoding: UnsafeBufferPointer(start: names.base! + o.start, count: o.len), as: UTF8.self)
            throw err("the input ends before the end tag of <\(q)>", c, c.n)
        }
        phase = .epilog
    }

    func markup(_ c: inout Cur) throws {
        try need(c, 2, "markup")
        switch c.p[c.i + 1] {
        case 0x2F: try endTag(&c)
        case 0x3F: try pi(&c, report: true)
        case 0x21:
            if try startsWith(c, "<!--") { try comment(&c, report: true) } else if try startsWith(c, "<![CDATA[") { try cdata(&c) } else {
                throw err("'<!' markup not allowed in content", c, c.i)
            }
        default: try startTag(&c)
        }
    }

    // MARK: References

    /// A character reference at `c.i` ("&#"): its scalar.
    func charRef(_ c: inout Cur) throws -> UInt32 {
        let s = c.i
        c.i += 2
        var hexa = false
        try need(c, 1, "a character reference")
        if c.p[c.i] == 0x78 { hexa = true; c.i += 1 }
        var v: UInt32 = 0
        var digits = 0
        while true {
            try need(c, 1, "a character reference")
            let b = c.p[c.i]
            var d: UInt32
            if b >= 0x30 && b <= 0x39 { d = UInt32(b - 0x30) } else if hexa && (b | 0x20) >= 0x61 && (b | 0x20) <= 0x66 { d = UInt32((b | 0x20) - 0x61 + 10) } else { break }
            v = v > 0x10FFFF ? v : v * (hexa ? 16 : 10) + d
            digits += 1
            c.i += 1
        }
        guard digits > 0, c.p[c.i] == 0x3B else { throw err("malformed character reference", c, s) }
        c.i += 1
        guard XMLChars.isChar(v) else {
            throw err("character reference to U+\(v > 0x10FFFF ? "(out of range)" : hex(v)), which is not an XML character", c, s)
        }
        return v
    }

    /// The predefined entities' characters, in the order `predefinedIndex` returns.
    static var predefinedChars: UnsafePointer<UInt8> { ("<>&'\"" as StaticString).utf8Start }

    /// The index in `predefinedChars` of the predefined entity named by the `n` bytes at
    /// `p` (lt, gt, amp, apos, quot); nil for any other name.
    @inline(__always)
    static func predefinedIndex(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int? {
        switch n {
        case 2:
            guard p[1] == 0x74 else { return nil }  // "t"
            return p[0] == 0x6C ? 0 : p[0] == 0x67 ? 1 : nil  // lt, gt
        case 3:
            return p[0] == 0x61 && p[1] == 0x6D && p[2] == 0x70 ? 2 : nil  // amp
        case 4:
            if p[0] == 0x61 && p[1] == 0x70 && p[2] == 0x6F && p[3] == 0x73 { return 3 }  // apos
            if p[0] == 0x71 && p[1] == 0x75 && p[2] == 0x6F && p[3] == 0x74 { return 4 }  // quot
            return nil
        default: return nil
        }
    }

    /// Whether an undeclared entity is a well-formedness error here (WFC: Entity Declared).
    var undeclaredIsError: Bool { standalone == true || (!hasExternalSubset && !sawPERef) }

    /// An entity or character reference in content at `c.i`.
    func reference(_ c: inout Cur) throws {
        let s = c.i
        try need(c, 2, "a reference")
        if c.p[c.i + 1] == 0x23 {
            let v = try charRef(&c)
            var tmp: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
            try withUnsafeMutableBytes(of: &tmp) { t in
                let n = XMLChars.encodeUTF8(v, into: t.baseAddress!.assumingMemoryBound(to: UInt8.self))
                try emitText(UnsafePointer(t.baseAddress!.assumingMemoryBound(to: UInt8.self)), n)
            }
            return
        }
        c.i += 1
        let nr = try name(&c, "an entity name")
        try need(c, 1, "an entity reference")
        guard c.p[c.i] == 0x3B else { throw err("expected ';' after the entity name", c, c.i) }
        c.i += 1
        if let k = XMLPushParser.predefinedIndex(c.p + nr.lowerBound, nr.count) {
            try emitText(XMLPushParser.predefinedChars + k, 1)
            return
        }
        let nb = bytes(c, nr)
        guard let e = entities[nb] else {
            if undeclaredIsError { throw err("undeclared entity '\(String(decoding: nb, as: UTF8.self))'", c, s) }
            return  // skipped: it may be declared in the unread external subset
        }
        if e.unparsed { throw err("reference to the unparsed entity '\(String(decoding: nb, as: UTF8.self))'", c, s) }
        guard let text = e.text else { return }  // external parsed entity: never read (skipped)
        try expand(nb, text, c, s) { sub in
            let depth = self.stack.count
            let savedBase = self.entityBaseDepth
            self.entityBaseDepth = depth
            defer { self.entityBaseDepth = savedBase }
            try self.content(&sub)
            if self.stack.count != depth {
                throw self.err("an element started in the entity is not ended in it", sub, sub.n)
            }
        }
    }

    /// Runs `body` on the replacement text of entity `name` (recursion and bounds checked).
    func expand(_ name: [UInt8], _ text: [UInt8], _ c: Cur, _ at: Int, pe: Bool = false, _ body: (inout Cur) throws -> Void) throws {
        let shown = (pe ? "%" : "") + String(decoding: name, as: UTF8.self)
        if expanding.contains(where: { $0 == name }) && !pe || pe && expanding.contains(where: { $0 == [0x25] + name }) {
            throw err("recursive reference to entity '\(shown)'", c, at)
        }
        if expanding.count >= limits.maxEntityNesting {
            throw err("entity references nested more than \(limits.maxEntityNesting) deep", c, at, .limit)
        }
        if !c.inEntity { entityRefPos = base + at }
        let limit = limits.maxExpandedBytes ?? DecodeBudget.defaultLimit(bodySize: entityRefPos)
        expanded += text.count
        if expanded > limit {
            throw err("entity expansion exceeds the limit of \(limit) bytes (expanding '\(shown)')", c, at, .limit)
        }
        expanding.append(pe ? [0x25] + name : name)
        defer { expanding.removeLast() }
        try text.withUnsafeBufferPointer { b in
            var sub = Cur(p: b.baseAddress ?? UnsafePointer(bitPattern: 1)!, n: b.count, i: 0, final: true, inEntity: true)
            if b.count == 0 { return }
            try body(&sub)
        }
    }

    // MARK: Tags

    func startTag(_ c: inout Cur) throws {
        let s = c.i
        c.i += 1
        let nr = try name(&c, "an element name")
        attrs.count = 0
        sbytes.count = 0
        var empty = false
        while true {
            let hadS = try skipS(&c)
            try need(c, 1, "a start tag")
            let b = c.p[c.i]
            if b == 0x3E { c.i += 1; break }
            if b == 0x2F {
                try need(c, 2, "a start tag")
                guard c.p[c.i + 1] == 0x3E else { throw err("expected '>' after '/' in a start tag", c, c.i + 1) }
                c.i += 2
                empty = true
                break
            }
            guard hadS else { throw err("whitespace required before an attribute", c, c.i) }
            let an = try name(&c, "an attribute name")
            _ = try skipS(&c)
            try need(c, 1, "a start tag")
            guard c.p[c.i] == 0x3D else { throw err("expected '=' after the attribute name", c, c.i) }
            c.i += 1
            _ = try skipS(&c)
            try need(c, 1, "a start tag")
            let q = c.p[c.i]
            guard q == 0x22 || q == 0x27 else { throw err("expected a quoted attribute value", c, c.i) }
            c.i += 1
            // name NUL value NUL
            let ns = sbytes.count
            try XMLPushParser.put(&sbytes, c.p + an.lowerBound, an.count)
            try XMLPushParser.put(&sbytes, 0)
            let vs = sbytes.count
            try attValue(&c, quote: q, into: &sbytes)
            let vl = sbytes.count - vs
            try XMLPushParser.put(&sbytes, 0)
            try XMLPushParser.put(&attrs, RawAttr(name: ns, nameLen: an.count, value: vs, valueLen: vl, pos: an.lowerBound))
        }
        try element(c, s, nr, empty: empty)
    }

    /// Appends the normalized attribute value at `c.i` (after the quote; up to and past the
    /// closing `quote`, or to the end for replacement text: quote 0).
    func attValue(_ c: inout Cur, quote: UInt8, into out: inout XMLScratch<UInt8>) throws {
        let p = c.p
        var run = c.i
        while true {
            c.i = cafs_xml_scan_attr(p, c.i, c.n, quote)
            if c.i >= c.n {
                if quote == 0 { try XMLPushParser.put(&out, p + run, c.i - run); return }
                if !c.final { throw XMLFail.needMore }
                throw err("the input ends inside an attribute value", c, c.i)
            }
            let b = p[c.i]
            if b == quote { try XMLPushParser.put(&out, p + run, c.i - run); c.i += 1; return }
            switch b {
            case 0x3C:
                throw err("'<' is not allowed in an attribute value", c, c.i)
            case 0x09, 0x0A, 0x0D:
                try XMLPushParser.put(&out, p + run, c.i - run)
                try XMLPushParser.put(&out, 0x20)
                if b == 0x0D && !c.inEntity {
                    if c.i + 1 >= c.n && !c.final { throw XMLFail.needMore }
                    if c.i + 1 < c.n && p[c.i + 1] == 0x0A { c.i += 1 }
                }
                c.i += 1
                run = c.i
            case 0x26:
                try XMLPushParser.put(&out, p + run, c.i - run)
                let s = c.i
                try need(c, 2, "a reference")
                if p[c.i + 1] == 0x23 {
                    let v = try charRef(&c)
                    var tmp: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
                    try withUnsafeMutableBytes(of: &tmp) { t in
                        let q = t.baseAddress!.assumingMemoryBound(to: UInt8.self)
                        try XMLPushParser.put(&out, q, XMLChars.encodeUTF8(v, into: q))
                    }
                } else {
                    c.i += 1
                    let nr = try name(&c, "an entity name")
                    try need(c, 1, "an entity reference")
                    guard p[c.i] == 0x3B else { throw err("expected ';' after the entity name", c, c.i) }
                    c.i += 1
                    if let k = XMLPushParser.predefinedIndex(p + nr.lowerBound, nr.count) {
                        try XMLPushParser.put(&out, XMLPushParser.predefinedChars[k])
                    } else if let e = entities[bytes(c, nr)] {
                        let nb = bytes(c, nr)
                        let shown = String(decoding: nb, as: UTF8.self)
                        if e.unparsed { throw err("reference to the unparsed entity '\(shown)' in an attribute value", c, s) }
                        guard let text = e.text else { throw err("reference to the external entity '\(shown)' in an attribute value", c, s) }
                        try expand(nb, text, c, s) { sub in try self.attValue(&sub, quote: 0, into: &out) }
                    } else if undeclaredIsError {
                        throw err("undeclared entity '\(String(decoding: bytes(c, nr), as: UTF8.self))'", c, s)
                    }
                }
                run = c.i
            default:
                c.i += 1
            }
        }
    }

    /// Appends `n` bytes at `p` to a scratch buffer (out of memory: the reader's error).
    @inline(__always)
    static func put(_ out: inout XMLScratch<UInt8>, _ p: UnsafePointer<UInt8>, _ n: Int) throws {
        if n == 0 { return }
        do { try out.append(UnsafeBufferPointer(start: p, count: n)) } catch { throw XMLFail.error(error) }
    }

    @inline(__always)
    static func put(_ out: inout XMLScratch<UInt8>, _ b: UInt8) throws {
        do { try out.append(b) } catch { throw XMLFail.error(error) }
    }

    @inline(__always)
    static func put<T>(_ out: inout XMLScratch<T>, _ x: T) throws {
        do { try out.append(x) } catch { throw XMLFail.error(error) }
    }

    /// The name's prefix length (0: none) after checking it is a QName.
    func qnamePrefix(_ q: UnsafeBufferPointer<UInt8>, _ c: Cur, _ at: Int) throws -> Int {
        var colon = -1
        for k in 0..<q.count where q[k] == 0x3A {
            if colon >= 0 { throw err("the name '\(String(decoding: q, as: UTF8.self))' has more than one ':'", c, at) }
            colon = k
        }
        if colon < 0 { return 0 }
        if colon == 0 || colon == q.count - 1 { throw err("the name '\(String(decoding: q, as: UTF8.self))' is not a qualified name", c, at) }
        let (ch, _) = XMLChars.decode(q.baseAddress!, colon + 1)
        if !XMLChars.isNameStart(ch) { throw err("the local part of '\(String(decoding: q, as: UTF8.self))' is not a name", c, at) }
        return colon
    }

    func lookup(_ prefix: UnsafeBufferPointer<UInt8>) -> Int? {
        if prefix.count == 3 && prefix[0] == 0x78 && prefix[1] == 0x6D && prefix[2] == 0x6C { return -2 }
        var k = bindings.count - 1
        while k >= 0 {
            let b = bindings.base![k]
            if b.prefixLen == prefix.count && (b.prefixLen == 0 || cafs_xml_eq(nsBytes.base! + b.prefix, prefix.baseAddress!, b.prefixLen) != 0) {
                return b.uriLen == 0 ? -1 : k
            }
            k -= 1
        }
        return prefix.isEmpty ? -1 : nil
    }

    /// The namespace name `u` (as `Open.uri`, -3: the xmlns namespace), NUL-terminated.
    @inline(__always)
    func uriText(_ u: Int) -> XMLText {
        if u >= 0 {
            let b = bindings.base![u]
            return XMLText(start: nsBytes.base! + b.uri, count: b.uriLen)
        }
        if u == -2 { return XMLText(start: ("http://www.w3.org/XML/1998/namespace" as StaticString).utf8Start, count: 36) }
        if u == -3 { return XMLText(start: ("http://www.w3.org/2000/xmlns/" as StaticString).utf8Start, count: 29) }
        return XMLText(start: ("" as StaticString).utf8Start, count: 0)
    }

    /// Drops the bindings from index `mark` on.
    @inline(__always)
    func popBindings(to mark: Int) {
        if mark < bindings.count {
            nsBytes.count = bindings.base![mark].prefix
            bindings.count = mark
        }
    }

    /// The name of attribute `k` of the tag in progress (in `sbytes`).
    @inline(__always)
    func attrName(_ k: Int) -> UnsafeBufferPointer<UInt8> {
        let a = attrs.base![k]
        return UnsafeBufferPointer(start: sbytes.base! + a.name, count: a.nameLen)
    }

    @inline(__always)
    func attrValue(_ k: Int) -> UnsafeBufferPointer<UInt8> {
        let a = attrs.base![k]
        return UnsafeBufferPointer(start: sbytes.base! + a.value, count: a.valueLen)
    }

    /// Attribute defaults and tokenized-type normalization for the tag in progress
    /// (declarations of the internal subset).
    func applyDeclarations(_ decls: [AttDecl], _ s: Int) throws {
        let specified = attrs.count
        for d in decls {
            var found = -1
            for k in 0..<specified where attrName(k).elementsEqual(d.name) { found = k }
            if found >= 0 {
                if !d.isCDATA {
                    // collapse spaces in place (the result is never longer)
                    let a = attrs.base![found]
                    let v = sbytes.base! + a.value
                    var w = 0
                    var pendingSpace = false
                    for r in 0..<a.valueLen {
                        let b = v[r]
                        if b == 0x20 { pendingSpace = w > 0; continue }
                        if pendingSpace { v[w] = 0x20; w += 1; pendingSpace = false }
                        v[w] = b
                        w += 1
                    }
                    v[w] = 0
                    attrs.base![found].valueLen = w
                }
            } else if let dv = d.defaultValue {
                let ns = sbytes.count
                try d.name.withUnsafeBufferPointer { try XMLPushParser.put(&sbytes, $0.baseAddress ?? XMLPushParser.newline, $0.count) }
                try XMLPushParser.put(&sbytes, 0)
                let vs = sbytes.count
                try dv.withUnsafeBufferPointer { try XMLPushParser.put(&sbytes, $0.baseAddress ?? XMLPushParser.newline, $0.count) }
                try XMLPushParser.put(&sbytes, 0)
                try XMLPushParser.put(&attrs, RawAttr(name: ns, nameLen: d.name.count, value: vs, valueLen: dv.count, pos: s))
            }
        }
    }

    /// Namespaces, defaults, uniqueness; reports the start (and the end of an empty element).
    func element(_ c: Cur, _ s: Int, _ nr: Range<Int>, empty: Bool) throws {
        if stack.count >= limits.maxDepth {
            throw err("elements nested more than \(limits.maxDepth) deep", c, s, .limit)
        }
        let qname = UnsafeBufferPointer(start: c.p + nr.lowerBound, count: nr.count)
        let specified = attrs.count
        if !attlists.isEmpty, let decls = attlists[Array(qname)] { try applyDeclarations(decls, s) }
        let total = attrs.count
        // WFC: Unique Att Spec.
        if specified > 1 {
            if specified <= 16 {
                for a in 1..<specified {
                    let an = attrName(a)
                    for b in 0..<a {
                        let bn = attrName(b)
                        if an.count == bn.count && cafs_xml_eq(an.baseAddress!, bn.baseAddress!, an.count) != 0 {
                            throw err("duplicate attribute '\(String(decoding: an, as: UTF8.self))'", c, attrs.base![a].pos)
                        }
                    }
                }
            } else {
                var seen = Set<[UInt8]>()
                for a in 0..<specified where !seen.insert(Array(attrName(a))).inserted {
                    throw err("duplicate attribute '\(String(decoding: attrName(a), as: UTF8.self))'", c, attrs.base![a].pos)
                }
            }
        }
        // Namespace declarations.
        let nsMark = bindings.count
        for k in 0..<total {
            let an = attrName(k)
            let at = attrs.base![k].pos
            let pl = try qnamePrefix(an, c, at)
            attrs.base![k].prefixLen = pl
            let isDefault = an.count == 5 && an.elementsEqual("xmlns".utf8)
            let isPrefixed = pl == 5 && UnsafeBufferPointer(rebasing: an[0..<5]).elementsEqual("xmlns".utf8)
            guard isDefault || isPrefixed else { continue }
            attrs.base![k].isDecl = true
            attrs.base![k].uri = -3
            let uriBuf = attrValue(k)
            let uri = Array(uriBuf)
            let prefixBuf = isDefault ? UnsafeBufferPointer(start: an.baseAddress, count: 0) : UnsafeBufferPointer(rebasing: an[6...])
            let prefix = Array(prefixBuf)
            if prefix == Array("xmlns".utf8) { throw err("the prefix 'xmlns' may not be declared", c, at) }
            if prefix == Array("xml".utf8) {
                if uri != XMLPushParser.xmlNS { throw err("the prefix 'xml' may be bound only to \(String(decoding: XMLPushParser.xmlNS, as: UTF8.self))", c, at) }
                continue
            }
            if uri == XMLPushParser.xmlNS { throw err("the XML namespace may be bound only to the prefix 'xml'", c, at) }
            if uri == XMLPushParser.xmlnsNS { throw err("the xmlns namespace may not be declared", c, at) }
            if !isDefault && uri.isEmpty { throw err("the prefix '\(String(decoding: prefix, as: UTF8.self))' may not be undeclared (Namespaces in XML 1.0)", c, at) }
            let ps = nsBytes.count
            if let pb = prefixBuf.baseAddress { try XMLPushParser.put(&nsBytes, pb, prefixBuf.count) }
            let us = nsBytes.count
            if let ub = uriBuf.baseAddress { try XMLPushParser.put(&nsBytes, ub, uriBuf.count) }
            try XMLPushParser.put(&nsBytes, 0)
            try XMLPushParser.put(&bindings, NSBinding(prefix: ps, prefixLen: prefixBuf.count, uri: us, uriLen: uriBuf.count))
        }
        // The element's namespace.
        let epl = try qnamePrefix(qname, c, nr.lowerBound)
        let euri: Int
        if epl > 0 {
            let pre = UnsafeBufferPointer(rebasing: qname[0..<epl])
            if pre.elementsEqual("xmlns".utf8) { throw err("an element may not have the prefix 'xmlns'", c, nr.lowerBound) }
            guard let u = lookup(pre) else { throw err("undeclared namespace prefix '\(String(decoding: pre, as: UTF8.self))'", c, nr.lowerBound) }
            euri = u
        } else {
            euri = lookup(UnsafeBufferPointer(start: qname.baseAddress, count: 0)) ?? -1
        }
        // Attributes' namespaces and WFC: expanded names unique.
        var prefixedCount = 0
        for k in 0..<total {
            let a = attrs.base![k]
            if a.isDecl || a.prefixLen == 0 { continue }
            let pre = UnsafeBufferPointer(start: sbytes.base! + a.name, count: a.prefixLen)
            guard let u = lookup(pre) else {
                throw err("undeclared namespace prefix '\(String(decoding: pre, as: UTF8.self))'", c, a.pos)
            }
            attrs.base![k].uri = u
            prefixedCount += 1
        }
        if prefixedCount > 1 {
            for a in 0..<total where attrs.base![a].uri != -1 && attrs.base![a].uri != -3 {
                for b in 0..<a where attrs.base![b].uri != -1 && attrs.base![b].uri != -3 {
                    let x = attrs.base![a], y = attrs.base![b]
                    let xl = UnsafeBufferPointer(start: sbytes.base! + x.name + x.prefixLen + 1, count: x.nameLen - x.prefixLen - 1)
                    let yl = UnsafeBufferPointer(start: sbytes.base! + y.name + y.prefixLen + 1, count: y.nameLen - y.prefixLen - 1)
                    if xl.elementsEqual(yl) && uriText(x.uri).bytes.elementsEqual(uriText(y.uri).bytes) {
                        throw err("duplicate attribute '\(String(decoding: attrName(a), as: UTF8.self))' (same namespace and local name as '\(String(decoding: attrName(b), as: UTF8.self))')", c, x.pos)
                    }
                }
            }
        }
        // The event: the qname (NUL-terminated) goes on the open-element stack; the
        // attributes point into `sbytes`, the namespace names into `nsBytes`.
        let nstart = names.count
        try XMLPushParser.put(&names, qname.baseAddress!, qname.count)
        try XMLPushParser.put(&names, 0)
        do { try sviews.reserve(Swift.max(total, 1)) } catch { throw XMLFail.error(error) }
        let sb = UnsafePointer(sbytes.base ?? names.base!)
        let views = sviews.base!
        for k in 0..<total {
            let a = attrs.base![k]
            let local = a.prefixLen > 0 ? a.prefixLen + 1 : 0
            (views + k).initialize(to: XMLAttribute(qname: XMLText(start: sb + a.name, count: a.nameLen), nsURI: uriText(a.uri),
                                                    localName: XMLText(start: sb + a.name + local, count: a.nameLen - local),
                                                    value: XMLText(start: sb + a.value, count: a.valueLen), isNamespaceDeclaration: a.isDecl))
        }
        sviews.count = total
        let o = Open(start: nstart, len: qname.count, prefixLen: epl, uri: euri, nsMark: nsMark)
        let q = UnsafePointer(names.base! + nstart)
        let local = epl > 0 ? epl + 1 : 0
        let ok = sink.startElement(qname: XMLText(start: q, count: qname.count), nsURI: uriText(euri),
                                   localName: XMLText(start: q + local, count: qname.count - local),
                                   attributes: UnsafeBufferPointer(start: views, count: total))
        if !ok { names.count = nstart; throw XMLFail.error(AFSError(.state, "stopped by the handler")) }
        if empty {
            try reportEnd(o)
            names.count = nstart
            popBindings(to: nsMark)
        } else {
            try XMLPushParser.put(&stack, o)
        }
    }

    static func collapse(_ v: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(v.count)
        var pendingSpace = false
        for b in v {
            if b == 0x20 { pendingSpace = !out.isEmpty; continue }
            if pendingSpace { out.append(0x20); pendingSpace = false }
            out.append(b)
        }
        return out
    }

    func reportEnd(_ o: Open) throws {
        let q = UnsafePointer(names.base! + o.start)
        let local = o.prefixLen > 0 ? o.prefixLen + 1 : 0
        let ok = sink.endElement(qname: XMLText(start: q, count: o.len), nsURI: uriText(o.uri),
                                 localName: XMLText(start: q + local, count: o.len - local))
        if !ok { throw XMLFail.error(AFSError(.state, "stopped by the handler")) }
    }

    func endTag(_ c: inout Cur) throws {
        let s = c.i
        c.i += 2
        let nr = try name(&c, "an element name")
        _ = try skipS(&c)
        try need(c, 1, "an end tag")
        guard c.p[c.i] == 0x3E else { throw err("expected '>' to end the end tag", c, c.i) }
        c.i += 1
        let q = UnsafeBufferPointer(start: c.p + nr.lowerBound, count: nr.count)
        guard stack.count > 0, !(c.inEntity && stack.count <= entityBaseDepth) else {
            throw err("end tag </\(String(decoding: q, as: UTF8.self))> without a matching start tag", c, s)
        }
        let o = stack.base![stack.count - 1]
        let open = UnsafeBufferPointer(start: UnsafePointer(names.base! + o.start), count: o.len)
        guard o.len == q.count && cafs_xml_eq(open.baseAddress!, q.baseAddress!, q.count) != 0 else {
            throw err("end tag </\(String(decoding: q, as: UTF8.self))> does not match the start tag <\(String(decoding: open, as: UTF8.self))>", c, s)
        }
        try reportEnd(o)
        stack.count -= 1
        names.count = o.start
        popBindings(to: o.nsMark)
    }
}
