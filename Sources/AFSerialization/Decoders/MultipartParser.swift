// A streaming multipart parser (RFC 2046 framing, RFC 7578 form-data), the reverse of
// `MultipartForm`.
//
// Phases: preamble (up to the first `--boundary` at the start of the body or of a line),
// boundary line (`--` closes; spaces and tabs are transport padding; then CRLF, or LF),
// headers (one line at a time, limits checked on partial lines too), body (data up to the
// delimiter CRLF `--boundary`, or LF `--boundary` when the first boundary line ended with a
// bare LF, as Go reads it), epilogue (ignored).
//
// The body's hot path looks for the delimiter's first byte with `memchr` (glibc's SIMD
// search) and compares the rest with `memcmp` only at those positions: no per-byte state
// machine. Bytes that could be the start of a delimiter at the end of a feed are carried
// to the next one (at most one delimiter's length), as are partial header and boundary
// lines (at most the line and header limits): memory is bounded by the limits, never by
// the body.
//
// Events go to a `MultipartSink`; a sink may pause (the pull reader does, after each event)
// or stop (a handler that returned non-zero: `.state`). Errors are sticky.

/// Limits of a multipart parse. C: `afs_multipart_limits`.
public struct MultipartLimits: Sendable, Equatable {
    public var maxParts = 1000
    public var maxHeaderBytes = 16384
    public var maxHeaders = 32
    public var maxLineLength = 16384
    public var maxTotalBytes: UInt64 = .max
    public var maxFieldBytes: UInt64 = 1 << 20
    public init() {}
}

/// A part's head: its index, its headers as sent (values trimmed), and the name and
/// filename from Content-Disposition, decoded.
public struct MultipartPartHead: Sendable, Equatable {
    public var index: Int
    public var name: [UInt8]?
    public var filename: [UInt8]?
    public var headerNames: [[UInt8]]
    public var headerValues: [[UInt8]]

    /// The first header called `name` (ASCII case-insensitive).
    public func header(_ name: String) -> [UInt8]? { header(bytes: Array(name.utf8)) }

    func header(bytes want: [UInt8]) -> [UInt8]? {
        for (i, n) in headerNames.enumerated() where asciiCaseEqual(n, want) { return headerValues[i] }
        return nil
    }
}

public enum MultipartFlow: Sendable { case proceed, pause, stop }

/// A part's head as the parser holds it, borrowed for one `partBegin(raw:)` call: every
/// string is in `bytes` at an offset, followed by a NUL (header lines and decoded names
/// cannot contain NUL), so a C caller gets pointers without a copy.
public struct MultipartRawHead {
    public let index: Int
    /// The parser's header arena (valid for the call only).
    public let bytes: UnsafePointer<UInt8>
    /// Four per header: name offset, name length, value offset, value length.
    public let fields: UnsafeBufferPointer<Int>
    /// Offset and length of the decoded name / filename; offset -1 when absent.
    public let nameOffset: Int, nameLength: Int
    public let filenameOffset: Int, filenameLength: Int

    public var headerCount: Int { fields.count / 4 }

    /// The head as owned arrays (what `partBegin(_:)` gets).
    public func makeHead() -> MultipartPartHead {
        func bytesAt(_ o: Int, _ n: Int) -> [UInt8] { Array(UnsafeBufferPointer(start: bytes + o, count: n)) }
        var names: [[UInt8]] = [], values: [[UInt8]] = []
        names.reserveCapacity(headerCount)
        values.reserveCapacity(headerCount)
        for i in 0..<headerCount {
            names.append(bytesAt(fields[4 * i], fields[4 * i + 1]))
            values.append(bytesAt(fields[4 * i + 2], fields[4 * i + 3]))
        }
        return MultipartPartHead(index: index, name: nameOffset < 0 ? nil : bytesAt(nameOffset, nameLength),
                                 filename: filenameOffset < 0 ? nil : bytesAt(filenameOffset, filenameLength),
                                 headerNames: names, headerValues: values)
    }
}

/// What the parser calls. `partData` gets decoded bytes, never empty. A sink that wants
/// no per-part allocation implements `partBegin(raw:)`; by default it builds the owned
/// head and calls `partBegin(_:)`.
public protocol MultipartSink: AnyObject {
    func partBegin(_ head: MultipartPartHead) -> MultipartFlow
    func partBegin(raw: MultipartRawHead) -> MultipartFlow
    func partData(_ bytes: UnsafeBufferPointer<UInt8>) -> MultipartFlow
    func partEnd() -> MultipartFlow
}

extension MultipartSink {
    public func partBegin(raw: MultipartRawHead) -> MultipartFlow { partBegin(raw.makeHead()) }
}

func asciiCaseEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    for i in 0..<a.count where a[i] | 0x20 != b[i] | 0x20 { return false }
    return true
}

/// A malloc'd buffer of trivial elements, reused; a failure to grow is `.noMemory`: the
/// parser's byte buffers (`CarryBuffer`) and its table of header offsets (`IntTable`).
/// (The response reader's `GrowBuffer` is the same idea as a class, whose bytes a handle
/// lends to C; this one is a field of the parser, with no reference to count. The message
/// is picked by element type on the failure path: a stored name made the parse ~5% slower.)
struct ParserBuffer<Element: BitwiseCopyable>: ~Copyable {
    var base: UnsafeMutablePointer<Element>?
    var count = 0
    var capacity = 0
    init() {}
    deinit { free(base) }

    /// (the check inline, the growth out of line: it runs a few times per parser)
    @inline(__always)
    mutating func reserve(_ n: Int) throws(AFSError) {
        if n > capacity { try grow(n) }
    }

    @inline(never)
    mutating func grow(_ n: Int) throws(AFSError) {
        let stride = MemoryLayout<Element>.stride
        let c = Swift.max(n, capacity * 2, 256 / stride)
        guard let q = afsRealloc(base, c * stride) else {
            let what = Element.self == UInt8.self ? "a multipart parser's buffer" : "a multipart part's header table"
            throw AFSError.noMemory(what, bytes: c * stride)
        }
        base = q.assumingMemoryBound(to: Element.self)
        capacity = c
    }
}

typealias CarryBuffer = ParserBuffer<UInt8>
typealias IntTable = ParserBuffer<Int>

extension ParserBuffer where Element == UInt8 {
    @inline(__always)
    mutating func append(_ p: UnsafePointer<UInt8>, _ n: Int) throws(AFSError) {
        if n == 0 { return }
        try reserve(count + n)
        (base! + count).update(from: p, count: n)
        count += n
    }

    @inline(__always)
    mutating func append(byte c: UInt8) throws(AFSError) {
        if count == capacity { try reserve(count + 1) }
        base![count] = c
        count += 1
    }

    mutating func removeFirst(_ n: Int) {
        if n == 0 { return }
        if n >= count { count = 0; return }
        base!.update(from: base! + n, count: count - n)
        count -= n
    }
}

extension ParserBuffer where Element == Int {
    subscript(i: Int) -> Int {
        @inline(__always) get { base![i] }
        @inline(__always) set { base![i] = newValue }
    }

    @inline(__always)
    mutating func append4(_ a: Int, _ b: Int, _ c: Int, _ d: Int) throws(AFSError) {
        try reserve(count + 4)
        let p = base! + count
        p[0] = a; p[1] = b; p[2] = c; p[3] = d
        count += 4
    }
}

public final class MultipartParser {
    public let boundary: [UInt8]
    public let limits: MultipartLimits
    /// Held strongly (a weak reference would put the sink's reference counts in a side
    /// table, slow on every event): a sink that owns its parser sets this to a small object
    /// of its own, not to itself, to avoid a cycle.
    /// The parse loop reads it once per `feed` or `finish` and passes it down as a
    /// parameter (`s`): a call on a parameter needs no reference counting, a call on a stored
    /// reference (even `unowned(unsafe)` or `let`) retains and releases it around every event.
    public var sink: MultipartSink?

    enum Phase { case preamble, boundaryLine, headers, body, epilogue }
    enum Coding { case identity, base64, quotedPrintable }

    private var phase = Phase.preamble
    private let dashBoundary: [UInt8]
    private var delimiter: [UInt8]
    private var firstLine = true
    /// The previous byte consumed in the preamble (a boundary must start a line).
    private var lastByte: UInt8 = UInt8(ascii: "\n")
    private var carry = CarryBuffer()
    /// The error that ended the parse (sticky), nil while none did.
    public private(set) var failure: AFSError?
    private var paused = false
    /// Bytes taken so far, and the offset (in the body) of the window being stepped.
    public private(set) var totalBytes: UInt64 = 0
    private var windowOffset: UInt64 = 0
    /// Events delivered so far (the pull reader watches it for progress).
    public private(set) var events = 0
    private var inCall = false

    // Boundary line
    private var padding = 0
    private var sawCR = false
    // Headers and the current part
    private var partIndex = 0
    private var headerBytes = 0
    /// The current part's header block: each header name and (trimmed) value, then the
    /// decoded name and filename, each followed by a NUL; reused from part to part (at most
    /// max_header_bytes plus NULs plus the decoded name and filename).
    private var hbuf = CarryBuffer()
    /// Four per header: name offset, name length, value offset, value length (in `hbuf`).
    private var hfields = IntTable()
    /// `--boundary` at 0, the delimiter at 80 (boundaries have at most 70 bytes): the hot
    /// loops compare with these instead of the arrays.
    private let marks: UnsafeMutablePointer<UInt8>
    private var delimiterCount: Int
    private let dashCount: Int
    private var nameOff = -1, nameLen = 0, fileOff = -1, fileLen = 0
    /// The Content-Disposition value being parsed (a copy, as `hbuf` grows meanwhile).
    private var scratch = CarryBuffer()
    private var hasFilename = false
    private var coding = Coding.identity
    private var bodyRaw: UInt64 = 0
    private var fieldBytes: UInt64 = 0
    private var quantum: [UInt8] = []
    private var decoded: [UInt8] = []

    /// - Parameter contentTypeOrBoundary: a Content-Type value with a `boundary` parameter,
    ///   or the bare boundary.
    /// - Throws: `.invalidArgument` when there is no usable boundary.
    public init(contentTypeOrBoundary: String, limits: MultipartLimits = MultipartLimits()) throws {
        boundary = try MultipartParser.boundary(of: contentTypeOrBoundary)
        self.limits = limits
        dashBoundary = Array("--".utf8) + boundary
        delimiter = Array("\r\n--".utf8) + boundary
        guard let m = afsMalloc(160) else { throw AFSError.noMemory("a multipart parser", bytes: 160) }
        let mk = m.assumingMemoryBound(to: UInt8.self)
        let dash = dashBoundary, delim = delimiter
        dash.withUnsafeBufferPointer { mk.update(from: $0.baseAddress!, count: $0.count) }
        delim.withUnsafeBufferPointer { (mk + 80).update(from: $0.baseAddress!, count: $0.count) }
        marks = mk
        delimiterCount = delim.count
        dashCount = dash.count
    }

    deinit { free(marks) }

    /// True once the closing boundary was read.
    public var isDone: Bool { phase == .epilogue }
    /// Bytes taken but not yet parsed.
    public var buffered: Int { carry.count }
    public var currentPartIndex: Int { partIndex }

    /// The boundary of a Content-Type value, or the value itself when it is a bare boundary.
    public static func boundary(of text: String) throws -> [UInt8] {
        let bytes = Array(text.utf8)
        var b: [UInt8]
        if !bytes.contains(UInt8(ascii: ";")) && !bytes.contains(UInt8(ascii: "/")) {
            b = bytes
        } else {
            guard let p = HeaderParameters.parse(bytes).first(where: { asciiCaseEqual($0.name, Array("boundary".utf8)) }) else {
                throw AFSError.invalidArgument("the content type \"\(String(text.prefix(200)))\" has no boundary parameter")
            }
            b = p.value
        }
        guard !b.isEmpty, b.count <= 70 else {
            throw AFSError.invalidArgument("the multipart boundary must be 1 to 70 bytes long, not \(b.count)")
        }
        guard !b.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) else {
            throw AFSError.invalidArgument("the multipart boundary contains CR, LF or NUL")
        }
        return b
    }

    /// Takes bytes of the body; returns how many were taken (fewer than offered only when
    /// the sink paused: offer the rest again, possibly after `feed` of nothing).
    /// - Throws: `.invalidMultipart`, `.limit`, `.state`, `.noMemory`; sticky.
    @discardableResult
    public func feed(_ input: UnsafeBufferPointer<UInt8>) throws -> Int {
        if let f = failure { throw f }
        guard !inCall else { throw AFSError(.state, "the multipart parser was called from inside one of its own callbacks") }
        inCall = true
        defer { inCall = false }
        do {
            return try feedHere(input, sink)
        } catch let e as AFSError {
            failure = e
            throw e
        }
    }

    private func take(_ n: Int) throws {
        totalBytes += UInt64(n)
    }

    /// `step` within max_total_bytes: the bytes past it are never parsed, and their
    /// presence is `.limit` once the parse reaches the limit (wherever the feeds split).
    private func limitedStep(_ w: UnsafeBufferPointer<UInt8>, _ s: MultipartSink?) throws -> Int {
        if limits.maxTotalBytes == .max { return try step(w, s) }
        let allowed = limits.maxTotalBytes > windowOffset ? limits.maxTotalBytes - windowOffset : 0
        if UInt64(w.count) <= allowed { return try step(w, s) }
        let c = allowed == 0 ? 0 : try step(UnsafeBufferPointer(rebasing: w[0..<Int(allowed)]), s)
        if paused || phase == .epilogue { return phase == .epilogue ? w.count : c }
        throw AFSError(.limit, "the multipart body is larger than max_total_bytes (\(limits.maxTotalBytes)) in part \(partIndex)")
    }

    private func feedHere(_ input: UnsafeBufferPointer<UInt8>, _ s: MultipartSink?) throws -> Int {
        paused = false
        let n = input.count
        let p = input.baseAddress
        var off = 0
        while carry.count > 0 {
            let c = try limitedStep(UnsafeBufferPointer(start: carry.base!, count: carry.count), s)
            windowOffset += UInt64(c)
            carry.removeFirst(c)
            if paused { return off }
            if carry.count == 0 { break }
            if off == n { return off }
            let t = Swift.min(n - off, Swift.max(4096, delimiter.count + 4))
            try take(t)
            try carry.append(p! + off, t)
            off += t
        }
        guard off < n, let p else { return off }
        let rest = n - off
        try take(rest)
        let c = try limitedStep(UnsafeBufferPointer(start: p + off, count: rest), s)
        windowOffset += UInt64(c)
        if paused {
            // Untake what the caller offers again.
            totalBytes -= UInt64(rest - c)
            return off + c
        }
        try carry.append(p + off + c, rest - c)
        return n
    }

    /// Ends the body: `.invalidMultipart` unless the closing boundary was read.
    public func finish() throws {
        if let f = failure { throw f }
        guard !inCall else { throw AFSError(.state, "the multipart parser was called from inside one of its own callbacks") }
        inCall = true
        defer { inCall = false }
        do {
            let s = sink
            while carry.count > 0 {
                paused = false
                let c = try limitedStep(UnsafeBufferPointer(start: carry.base!, count: carry.count), s)
                windowOffset += UInt64(c)
                carry.removeFirst(c)
                if c == 0 && !paused { break }
            }
            guard phase == .epilogue else {
                let at = "at byte offset \(totalBytes)"
                switch phase {
                case .preamble:
                    throw AFSError(.invalidMultipart, "the multipart body has no boundary line \"--\(String(decoding: boundary, as: UTF8.self))\" (\(totalBytes) bytes read)")
                case .boundaryLine:
                    throw AFSError(.invalidMultipart, "the multipart body ended in a boundary line before part \(partIndex) (\(at))")
                case .headers:
                    throw AFSError(.invalidMultipart, "the multipart body ended in the headers of part \(partIndex) (\(at))")
                default:
                    throw AFSError(.invalidMultipart, "the multipart body ended in part \(partIndex) before its closing boundary (\(at))")
                }
            }
            phase = .epilogue
        } catch let e as AFSError {
            failure = e
            throw e
        }
    }

    // MARK: - Steps

    private func deliver(_ f: MultipartFlow, _ what: String) throws {
        events += 1
        switch f {
        case .proceed: break
        case .pause: paused = true
        case .stop: throw AFSError(.state, "the handler stopped the parse (\(what) of part \(partIndex))")
        }
    }

    private func invalid(_ why: String, _ at: Int) -> AFSError {
        AFSError(.invalidMultipart, "\(why) (part \(partIndex), byte offset \(windowOffset + UInt64(at)))")
    }

    /// Parses as much of `w` as it can; returns the bytes consumed.
    private func step(_ w: UnsafeBufferPointer<UInt8>, _ s: MultipartSink?) throws -> Int {
        let p = w.baseAddress!
        let n = w.count
        var pos = 0
        while pos < n && !paused {
            switch phase {
            case .preamble:
                guard let hit = findLineStart(p, from: pos, n) else {
                    // Keep what could be the start of a boundary.
                    let keep = Swift.min(n - pos, dashCount)
                    if n - keep > pos { lastByte = p[n - keep - 1] }
                    return n - keep
                }
                if hit < 0 {  // need more from that position
                    let k = -hit - 1
                    if k > 0 { lastByte = p[k - 1] }
                    return k
                }
                pos = hit + dashCount
                phase = .boundaryLine
                padding = 0
                sawCR = false
            case .boundaryLine:
                let c = p[pos]
                if padding == 0 && !sawCR && c == UInt8(ascii: "-") {
                    if pos + 1 >= n { return pos }
                    guard p[pos + 1] == UInt8(ascii: "-") else { throw invalid("a boundary is followed by \"-\" without a second \"-\"", pos) }
                    phase = .epilogue
                    pos += 2
                    continue
                }
                if sawCR {
                    guard c == 10 else { throw invalid("a boundary line has a CR without LF", pos) }
                    try endBoundaryLine(lf: false)
                    pos += 1
                } else if c == 13 {
                    sawCR = true
                    pos += 1
                } else if c == 10 {
                    try endBoundaryLine(lf: true)
                    pos += 1
                } else if c == 32 || c == 9 {
                    padding += 1
                    if padding > limits.maxLineLength {
                        throw AFSError(.limit, "the transport padding after a boundary is longer than max_line_length (\(limits.maxLineLength)) before part \(partIndex)")
                    }
                    pos += 1
                } else {
                    throw invalid("a boundary line has \(byteName(c)) after the boundary (only spaces and tabs may follow it)", pos)
                }
            case .headers:
                let room = n - pos
                guard let q = memchr(p + pos, 10, room) else {
                    try checkHeaderLimits(lineBytes: room)
                    return pos
                }
                let e = UnsafePointer<UInt8>(q.assumingMemoryBound(to: UInt8.self)) - p
                try headerLine(p + pos, e - pos, at: pos, s)
                pos = e + 1
            case .body:
                pos = try bodyStep(p, pos, n, s)
                if pos < 0 { return -pos - 1 }
            case .epilogue:
                return n
            }
        }
        return pos
    }

    private func byteName(_ c: UInt8) -> String {
        c >= 0x21 && c < 0x7F ? "\"\(Character(Unicode.Scalar(c)))\"" : "byte 0x\(String(c, radix: 16))"
    }

    /// The position of the first `--boundary` at a line start followed by a byte that can
    /// end a boundary; `-(k + 1)` when more bytes are needed from position k; nil when none.
    private func findLineStart(_ p: UnsafePointer<UInt8>, from: Int, _ n: Int) -> Int? {
        var s = from
        let dl = dashCount
        while s < n {
            guard let h = memchr(p + s, Int32(UInt8(ascii: "-")), n - s) else { return nil }
            let i = UnsafePointer<UInt8>(h.assumingMemoryBound(to: UInt8.self)) - p
            let before = i > 0 ? p[i - 1] : (i == from ? lastByte : p[i - 1])
            if before == 10 {
                let avail = n - i
                let m = Swift.min(avail, dl)
                let same = memcmp(p + i, marks, m) == 0
                if same {
                    if avail <= dl { return -(i + 1) }
                    let c = p[i + dl]
                    if c == 45 || c == 32 || c == 9 || c == 13 || c == 10 { return i }
                }
            }
            s = i + 1
        }
        return nil
    }

    private func endBoundaryLine(lf: Bool) throws {
        if firstLine {
            firstLine = false
            if lf {
                delimiter = Array("\n--".utf8) + boundary
                delimiter.withUnsafeBufferPointer { (marks + 80).update(from: $0.baseAddress!, count: $0.count) }
                delimiterCount = delimiter.count
            }
        }
        if partIndex >= limits.maxParts {
            throw AFSError(.limit, "the multipart body has more than max_parts (\(limits.maxParts)) parts (part \(partIndex))")
        }
        phase = .headers
        headerBytes = 0
        hbuf.count = 0
        hfields.count = 0
        sawCR = false
        padding = 0
    }

    /// RFC 7230 token characters: visible ASCII except `()<>@,;:\"/[]?={}` (two 64-bit
    /// masks, no table behind a lazy global).
    @inline(__always)
    static func isToken(_ c: UInt8) -> Bool {
        if c < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) >> UInt64(c) & 1 != 0 }
        if c < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> UInt64(c - 64) & 1 != 0 }
        return false
    }

    /// The line and header-block limits for a line of which `lineBytes` are known: the limit
    /// whose byte is reached first wins (the line's at a tie), so that where the feeds split
    /// never changes which limit is reported.
    private func checkHeaderLimits(lineBytes: Int) throws {
        let lineAt = limits.maxLineLength + 1
        let blockAt = limits.maxHeaderBytes >= headerBytes ? limits.maxHeaderBytes - headerBytes + 1 : 0
        guard Swift.min(lineAt, blockAt) <= lineBytes else { return }
        if lineAt <= blockAt {
            throw AFSError(.limit, "a header line of part \(partIndex) is longer than max_line_length (\(limits.maxLineLength))")
        }
        throw AFSError(.limit, "the headers of part \(partIndex) are larger than max_header_bytes (\(limits.maxHeaderBytes))")
    }

    private func headerLine(_ l: UnsafePointer<UInt8>, _ count: Int, at pos: Int, _ s: MultipartSink?) throws {
        try checkHeaderLimits(lineBytes: count + 1)
        headerBytes += count + 1
        var len = count
        if len > 0 && l[len - 1] == 13 { len -= 1 }
        if len == 0 {
            try beginPart(s)
            return
        }
        let bad = MultipartParser.firstNulOrCR(l, len)
        if bad < len {
            throw invalid("a header line of part \(partIndex) contains \(l[bad] == 0 ? "NUL" : "a bare CR")", pos + bad)
        }
        if l[0] == 32 || l[0] == 9 {  // obsolete line folding: continues the previous value
            guard hfields.count > 0 else { throw invalid("the first header line of part \(partIndex) starts with white space", pos) }
            let v = trim(UnsafeBufferPointer(start: l, count: len))
            if !v.isEmpty {
                // The last value ends the block, before its NUL: extend it in place.
                let last = hfields.count - 1
                hbuf.count -= 1
                if hfields[last] > 0 { try hbuf.append(byte: 32); hfields[last] += 1 }
                try hbuf.append(v.base.baseAddress! + v.startIndex, v.count)
                hfields[last] += v.count
                try hbuf.append(byte: 0)
            }
            return
        }
        var colon = -1
        // The header of nearly every part, compared 8 bytes at a time, case-insensitively
        // (OR 0x20 maps only 'A'-'Z' onto letters, and only CR, excluded above, onto '-').
        if len >= 20 && MultipartParser.isContentDisposition(l) { colon = 19 }
        for i in 0..<(colon < 0 ? len : 0) {
            if l[i] == UInt8(ascii: ":") { colon = i; break }
            if !MultipartParser.isToken(l[i]) {
                throw invalid("a header name of part \(partIndex) has \(byteName(l[i])) (header names are tokens followed by \":\")", pos + i)
            }
        }
        guard colon > 0 else { throw invalid("a header line of part \(partIndex) has no name and colon", pos) }
        if hfields.count / 4 >= limits.maxHeaders {
            throw AFSError(.limit, "part \(partIndex) has more than max_headers (\(limits.maxHeaders)) headers")
        }
        let v = trim(UnsafeBufferPointer(start: l + colon + 1, count: len - colon - 1))
        let at = hbuf.count
        try hbuf.reserve(at + colon + v.count + 2)
        try hbuf.append(l, colon)
        try hbuf.append(byte: 0)
        if !v.isEmpty { try hbuf.append(v.base.baseAddress! + v.startIndex, v.count) }
        try hbuf.append(byte: 0)
        try hfields.append4(at, colon, at + colon + 1, v.count)
    }

    /// The 20 bytes at `l` are `Content-Disposition:` in any case.
    @inline(__always)
    static func isContentDisposition(_ l: UnsafePointer<UInt8>) -> Bool {
        let r = UnsafeRawPointer(l)
        let lower: UInt64 = 0x2020_2020_2020_2020
        // "content-" "disposit" "ion:" as little-endian words
        return r.loadUnaligned(as: UInt64.self) | lower == 0x2D74_6E65_746E_6F63
            && r.loadUnaligned(fromByteOffset: 8, as: UInt64.self) | lower == 0x7469_736F_7073_6964
            && r.loadUnaligned(fromByteOffset: 16, as: UInt32.self) | 0x0020_2020 == 0x3A6E_6F69
    }

    /// The index of the first NUL or CR among the `n` bytes at `l`, or `n`: 8 bytes a step
    /// (a word has a zero byte when `(w - 0x01…) & ~w & 0x80…` is not zero; CR is the zero
    /// byte of `w ^ 0x0D…`), the exact byte by the loop after.
    @inline(__always)
    static func firstNulOrCR(_ l: UnsafePointer<UInt8>, _ n: Int) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let crs: UInt64 = 0x0D0D_0D0D_0D0D_0D0D
        var i = 0
        while i + 8 <= n {
            let w = UnsafeRawPointer(l + i).loadUnaligned(as: UInt64.self)
            let x = w ^ crs
            if ((w &- ones) & ~w | (x &- ones) & ~x) & highs != 0 { break }
            i += 8
        }
        while i < n && l[i] != 0 && l[i] != 13 { i += 1 }
        return i
    }

    private func trim(_ b: UnsafeBufferPointer<UInt8>) -> Slice<UnsafeBufferPointer<UInt8>> {
        var s = 0, e = b.count
        while s < e && (b[s] == 32 || b[s] == 9) { s += 1 }
        while e > s && (b[e - 1] == 32 || b[e - 1] == 9) { e -= 1 }
        return b[s..<e]
    }

    /// The index of the first header called `want` (lowercase ASCII), nil when none.
    private func headerIndex(_ want: StaticString) -> Int? {
        guard let b = hbuf.base else { return nil }
        let n = want.utf8CodeUnitCount
        var k = 0
        while k < hfields.count {
            if hfields[k + 1] == n && MultipartParser.caseEqual(b + hfields[k], want) { return k / 4 }
            k += 4
        }
        return nil
    }

    /// The `want.count` bytes at `p` equal `want` (lowercase ASCII letters) ignoring case.
    @inline(__always)
    static func caseEqual(_ p: UnsafePointer<UInt8>, _ want: StaticString) -> Bool {
        let w = want.utf8Start
        for i in 0..<want.utf8CodeUnitCount where p[i] | 0x20 != w[i] | 0x20 { return false }
        return true
    }

    /// The name and filename of the Content-Disposition value at `vOff` in `hbuf`, decoded
    /// into `hbuf` (as `ContentDisposition` reads them: quoted-pairs, the HTML5 escapes,
    /// `filename*` over `filename`), without an allocation per part.
    private func parseDisposition(_ vOff: Int, _ vLen: Int) throws {
        scratch.count = 0
        try scratch.reserve(vLen + 1)
        if vLen > 0 { try scratch.append(hbuf.base! + vOff, vLen) }
        let b = scratch.base!
        let n = vLen
        var extended: [UInt8]?
        var sawExtended = false
        var i = 0
        while i < n && b[i] != UInt8(ascii: ";") { i += 1 }
        while i < n {
            i += 1  // past `;`
            while i < n && (b[i] == 32 || b[i] == 9) { i += 1 }
            let ns = i
            while i < n && b[i] != UInt8(ascii: "=") && b[i] != UInt8(ascii: ";") { i += 1 }
            var ne = i
            while ne > ns && (b[ne - 1] == 32 || b[ne - 1] == 9) { ne -= 1 }
            guard i < n && b[i] == UInt8(ascii: "=") else { continue }
            i += 1
            while i < n && (b[i] == 32 || b[i] == 9) { i += 1 }
            // 1 name, 2 filename, 3 filename*, 0 another parameter
            let nl = ne - ns
            let which = nl == 4 && MultipartParser.caseEqual(b + ns, "name") ? 1
                : nl == 8 && MultipartParser.caseEqual(b + ns, "filename") ? 2
                : nl == 9 && MultipartParser.caseEqual(b + ns, "filename*") ? 3 : 0
            let start = hbuf.count
            if i < n && b[i] == UInt8(ascii: "\"") {
                i += 1
                let vs = i
                var pairs = false
                while i < n && b[i] != UInt8(ascii: "\"") {
                    if b[i] == UInt8(ascii: "\\") && i + 1 < n { i += 1; pairs = true }
                    i += 1
                }
                if which != 0 {
                    try hbuf.reserve(start + (i - vs) + 1)
                    let dst = hbuf.base! + start
                    if !pairs {  // the common case: the bytes as they are
                        dst.update(from: b + vs, count: i - vs)
                        hbuf.count = start + (i - vs)
                    } else {
                        var w = 0
                        var k = vs
                        while k < i {
                            if b[k] == UInt8(ascii: "\\") && k + 1 < n { k += 1 }
                            dst[w] = b[k]
                            w += 1
                            k += 1
                        }
                        hbuf.count = start + w
                    }
                }
                i += 1
                while i < n && b[i] != UInt8(ascii: ";") { i += 1 }
            } else {
                let vs = i
                while i < n && b[i] != UInt8(ascii: ";") { i += 1 }
                var ve = i
                while ve > vs && (b[ve - 1] == 32 || b[ve - 1] == 9) { ve -= 1 }
                if which != 0 { try hbuf.reserve(start + (ve - vs) + 1); try hbuf.append(b + vs, ve - vs) }
            }
            switch which {
            case 1, 2:
                let len = MultipartParser.unescapeHTML5(hbuf.base! + start, hbuf.count - start)
                hbuf.count = start + len
                try hbuf.append(byte: 0)
                if which == 1 { nameOff = start; nameLen = len } else { fileOff = start; fileLen = len }
            case 3:
                let raw = Array(UnsafeBufferPointer(start: hbuf.base! + start, count: hbuf.count - start))
                hbuf.count = start
                extended = ContentDisposition.extendedValue(raw)
                sawExtended = true
            default:
                break
            }
        }
        if sawExtended, let e = extended {
            let start = hbuf.count
            try hbuf.reserve(start + e.count + 1)
            e.withUnsafeBufferPointer { if let a = $0.baseAddress { (hbuf.base! + start).update(from: a, count: e.count) } }
            hbuf.count += e.count
            try hbuf.append(byte: 0)
            fileOff = start
            fileLen = e.count
        }
    }

    /// `ContentDisposition.unescapeHTML5` in place; returns the new length.
    static func unescapeHTML5(_ v: UnsafeMutablePointer<UInt8>, _ n: Int) -> Int {
        var r = 0, w = 0
        while r < n {
            if v[r] == UInt8(ascii: "%") && r + 2 < n {
                if v[r + 1] == UInt8(ascii: "2") && v[r + 2] == UInt8(ascii: "2") { v[w] = UInt8(ascii: "\""); w += 1; r += 3; continue }
                if v[r + 1] == UInt8(ascii: "0") {
                    let c = v[r + 2] | 0x20
                    if c == UInt8(ascii: "d") { v[w] = 13; w += 1; r += 3; continue }
                    if c == UInt8(ascii: "a") { v[w] = 10; w += 1; r += 3; continue }
                }
            }
            v[w] = v[r]
            w += 1
            r += 1
        }
        return w
    }

    private func beginPart(_ s: MultipartSink?) throws {
        nameOff = -1; nameLen = 0; fileOff = -1; fileLen = 0
        try hbuf.reserve(16)
        if let k = headerIndex("content-disposition") { try parseDisposition(hfields[4 * k + 2], hfields[4 * k + 3]) }
        coding = .identity
        if let k = headerIndex("content-transfer-encoding") {
            let o = hfields[4 * k + 2], l = hfields[4 * k + 3]
            if l == 6 && MultipartParser.caseEqual(hbuf.base! + o, "base64") {
                coding = .base64
            } else if l == 16 && MultipartParser.caseEqual(hbuf.base! + o, "quoted-printable") {
                coding = .quotedPrintable
            }
        }
        hasFilename = fileOff >= 0
        bodyRaw = 0
        fieldBytes = 0
        quantum.removeAll(keepingCapacity: true)
        phase = .body
        if s != nil {
            let f = UnsafeBufferPointer(start: hfields.base, count: hfields.count)
            let flow = s.unsafelyUnwrapped.partBegin(raw: MultipartRawHead(index: partIndex, bytes: UnsafePointer(hbuf.base!), fields: f, nameOffset: nameOff,
                                                         nameLength: nameLen, filenameOffset: fileOff, filenameLength: fileLen))
            try deliver(flow, "the beginning")
        } else { events += 1 }
    }

    /// Body bytes from `pos`: returns the next position, or `-(k + 1)` to stop at k.
    private func bodyStep(_ p: UnsafePointer<UInt8>, _ pos: Int, _ n: Int, _ sink: MultipartSink?) throws -> Int {
        let dp = UnsafePointer(marks + 80)
        let d0 = Int32(dp[0])
        let dl = delimiterCount
        // An empty body written without its line break: `--boundary` right after the headers.
        if bodyRaw == 0 {
            let bl = dashCount
            let m = Swift.min(n - pos, bl)
            if memcmp(p + pos, marks, m) == 0 {
                if n - pos < bl + 2 { return -(pos + 1) }
                if isDelimiterEnd(p + pos + bl) {
                    try endPart(at: pos, sink)
                    return pos + bl
                }
            }
        }
        var s = pos
        let v0 = Wide.splat(dp[0]), v1 = Wide.splat(dp[1]), v2 = Wide.splat(dp[2]), v3 = Wide.splat(dp[3])
        while true {
            // 32 bytes a step: lanes where the delimiter's first 4 bytes start (CR LF - -, or
            // LF - - and the boundary's first byte); on random data almost never one.
            var found = -1
            while s + 35 <= n {
                let a = MultipartParser.match4(p + s, v0, v1, v2, v3), b = MultipartParser.match4(p + s + 16, v0, v1, v2, v3)
                let (a0, a1) = Wide.halves(a), (b0, b1) = Wide.halves(b)
                if a0 | a1 | b0 | b1 != 0 {
                    if a0 != 0 { found = s + a0.trailingZeroBitCount / 8 } else if a1 != 0 { found = s + 8 + a1.trailingZeroBitCount / 8 } else if b0 != 0 { found = s + 16 + b0.trailingZeroBitCount / 8 } else { found = s + 24 + b1.trailingZeroBitCount / 8 }
                    break
                }
                s += 32
            }
            if found < 0 {
                // The last bytes (and where a delimiter may start cut off by the end).
                guard let h = memchr(p + s, d0, n - s) else {
                    try emit(p + pos, n - pos, sink)
                    return n
                }
                found = UnsafePointer<UInt8>(h.assumingMemoryBound(to: UInt8.self)) - p
            }
            let i = found
            let avail = n - i
            let m = Swift.min(avail, dl)
            let same = memcmp(p + i, dp, m) == 0
            if !same { s = i + 1; continue }
            if avail < dl + 2 {
                try emit(p + pos, i - pos, sink)
                return -(i + 1)
            }
            if !isDelimiterEnd(p + i + dl) { s = i + 1; continue }
            try emit(p + pos, i - pos, sink)
            if paused {  // deliver the end on the next step
                return -(i + 1)
            }
            try endPart(at: i, sink)
            return i + dl
        }
    }

    /// 0xFF in the lanes of the 16 bytes at `q` where the 4 bytes `v0 v1 v2 v3` start.
    @inline(__always)
    static func match4(_ q: UnsafePointer<UInt8>, _ v0: SIMD16<UInt8>, _ v1: SIMD16<UInt8>, _ v2: SIMD16<UInt8>, _ v3: SIMD16<UInt8>) -> SIMD16<UInt8> {
        let m = (Wide.load(q) .== v0) .& (Wide.load(q + 1) .== v1) .& (Wide.load(q + 2) .== v2) .& (Wide.load(q + 3) .== v3)
        return unsafeBitCast(m, to: SIMD16<UInt8>.self)
    }

    @inline(__always) private func isDelimiterEnd(_ q: UnsafePointer<UInt8>) -> Bool {
        let c = q[0]
        if c == 45 { return q[1] == 45 }
        return c == 32 || c == 9 || c == 13 || c == 10
    }

    private func endPart(at pos: Int, _ s: MultipartSink?) throws {
        try flushDecoder(at: pos, s)
        phase = .boundaryLine
        padding = 0
        sawCR = false
        let index = partIndex
        partIndex += 1
        if s != nil {
            events += 1
            switch s.unsafelyUnwrapped.partEnd() {
            case .proceed: break
            case .pause: paused = true
            case .stop: throw AFSError(.state, "the handler stopped the parse (the end of part \(index))")
            }
        } else { events += 1 }
    }

    // MARK: - Data and transfer encodings

    private func emit(_ p: UnsafePointer<UInt8>, _ n: Int, _ s: MultipartSink?) throws {
        if n == 0 { return }
        bodyRaw += UInt64(n)
        switch coding {
        case .identity:
            try send(UnsafeBufferPointer(start: p, count: n), s)
        case .base64:
            decoded.removeAll(keepingCapacity: true)
            try decoded.checkedReserve(n, "a base64 part's decoded bytes")
            for i in 0..<n {
                let c = p[i]
                if c == 13 || c == 10 || c == 32 || c == 9 { continue }
                quantum.append(c)
                if quantum.count == 4 {
                    try decodeQuantum(at: bodyRaw - UInt64(n - i - 1))
                    try sendIfOverLimit(s)
                }
            }
            try sendDecoded(s)
        case .quotedPrintable:
            decoded.removeAll(keepingCapacity: true)
            try decoded.checkedReserve(n, "a quoted-printable part's decoded bytes")
            for i in 0..<n {
                qpByte(p[i])
                try sendIfOverLimit(s)
            }
            try sendDecoded(s)
        }
    }

    private func send(_ b: UnsafeBufferPointer<UInt8>, _ s: MultipartSink?) throws {
        if b.isEmpty { return }
        if !hasFilename {
            fieldBytes += UInt64(b.count)
            if fieldBytes > limits.maxFieldBytes {
                let name = nameOff < 0 ? "" : " (\"\(String(decoding: UnsafeBufferPointer(start: hbuf.base! + nameOff, count: Swift.min(nameLen, 64)), as: UTF8.self))\")"
                throw AFSError(.limit, "part \(partIndex)\(name) has no filename and is larger than max_field_bytes (\(limits.maxFieldBytes))")
            }
        }
        if s != nil { try deliver(s.unsafelyUnwrapped.partData(b), "the data") }
    }

    /// A field's limit is reached at the encoded byte whose decoding passes it, whatever the
    /// split of the input: decoded bytes go out (and the limit error with them) as soon as
    /// they pass it, before a later byte of the same feed can fail otherwise.
    private func sendIfOverLimit(_ s: MultipartSink?) throws {
        if !hasFilename && fieldBytes + UInt64(decoded.count) > limits.maxFieldBytes {
            try sendDecoded(s)
        }
    }

    private func sendDecoded(_ s: MultipartSink?) throws {
        try decoded.withUnsafeBufferPointer { try send($0, s) }
        decoded.removeAll(keepingCapacity: true)
    }

    private static let base64Table: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }()

    /// `at`: the part's body bytes up to and including the quantum's last character.
    private func decodeQuantum(at: UInt64) throws {
        let t = MultipartParser.base64Table
        var v: UInt32 = 0
        var pad = 0
        for (k, c) in quantum.enumerated() {
            if c == UInt8(ascii: "=") && k >= 2 { pad += 1; v <<= 6; continue }
            let x = t[Int(c)]
            if x == 0xFF || pad > 0 {
                throw AFSError(.invalidMultipart, "part \(partIndex) is not valid base64 (\(byteName(c)) in the quantum ending at byte \(at) of its body)")
            }
            v = v << 6 | UInt32(x)
        }
        decoded.append(UInt8(truncatingIfNeeded: v >> 16))
        if pad < 2 { decoded.append(UInt8(truncatingIfNeeded: v >> 8)) }
        if pad < 1 { decoded.append(UInt8(truncatingIfNeeded: v)) }
        quantum.removeAll(keepingCapacity: true)
    }

    /// One byte of a quoted-printable body: `=XY` is a byte, `=` CRLF or `=` LF a soft line
    /// break; any other `=` is kept as written (RFC 2045 6.7, note 1).
    private func qpByte(_ c: UInt8) {
        if quantum.isEmpty {
            if c == UInt8(ascii: "=") { quantum.append(c) } else { decoded.append(c) }
            return
        }
        quantum.append(c)
        if quantum.count == 2 {
            if c == 10 { quantum.removeAll(keepingCapacity: true); return }
            if c == 13 || QueryDecoder.hexValue(c) != nil { return }
            quantum.removeAll(keepingCapacity: true)
            decoded.append(UInt8(ascii: "="))
            qpByte(c)
            return
        }
        let a = quantum[1], b = quantum[2]
        quantum.removeAll(keepingCapacity: true)
        if a == 13 && b == 10 { return }
        if let h = QueryDecoder.hexValue(a), let l = QueryDecoder.hexValue(b) {
            decoded.append(h << 4 | l)
            return
        }
        decoded.append(UInt8(ascii: "="))
        qpByte(a)
        qpByte(b)
    }

    private func flushDecoder(at pos: Int, _ s: MultipartSink?) throws {
        switch coding {
        case .identity: return
        case .base64:
            if !quantum.isEmpty {
                throw invalid("part \(partIndex) ends inside a base64 quantum (\(quantum.count) of 4 characters)", pos)
            }
        case .quotedPrintable:
            if !quantum.isEmpty {
                decoded.removeAll(keepingCapacity: true)
                decoded.append(contentsOf: quantum)
                quantum.removeAll(keepingCapacity: true)
                try sendDecoded(s)
            }
        }
    }
}

// MARK: - Header parameters

/// Names compared per part, made once.
enum Names {
    static let contentDisposition = Array("content-disposition".utf8)
    static let contentTransferEncoding = Array("content-transfer-encoding".utf8)
    static let base64 = Array("base64".utf8)
    static let quotedPrintable = Array("quoted-printable".utf8)
    static let name = Array("name".utf8)
    static let filename = Array("filename".utf8)
    static let filenameStar = Array("filename*".utf8)
    static let boundary = Array("boundary".utf8)
}

/// `type; a=b; c="d"` parameters, RFC 2045 quoted-strings with quoted-pairs.
enum HeaderParameters {
    struct Parameter { var name: [UInt8]; var value: [UInt8]; var quoted: Bool }

    static func parse(_ b: [UInt8]) -> [Parameter] {
        var out: [Parameter] = []
        var i = 0
        let n = b.count
        // Skip the leading value (type or disposition).
        while i < n && b[i] != UInt8(ascii: ";") { i += 1 }
        while i < n {
            i += 1  // past `;`
            while i < n && (b[i] == 32 || b[i] == 9) { i += 1 }
            let ns = i
            while i < n && b[i] != UInt8(ascii: "=") && b[i] != UInt8(ascii: ";") { i += 1 }
            var name = Array(b[ns..<i])
            while let l = name.last, l == 32 || l == 9 { name.removeLast() }
            guard i < n && b[i] == UInt8(ascii: "=") else { continue }
            i += 1
            while i < n && (b[i] == 32 || b[i] == 9) { i += 1 }
            var value: [UInt8] = []
            var quoted = false
            if i < n && b[i] == UInt8(ascii: "\"") {
                quoted = true
                i += 1
                while i < n && b[i] != UInt8(ascii: "\"") {
                    if b[i] == UInt8(ascii: "\\") && i + 1 < n { i += 1 }
                    value.append(b[i])
                    i += 1
                }
                i += 1
                while i < n && b[i] != UInt8(ascii: ";") { i += 1 }
            } else {
                while i < n && b[i] != UInt8(ascii: ";") { value.append(b[i]); i += 1 }
                while let l = value.last, l == 32 || l == 9 { value.removeLast() }
            }
            out.append(Parameter(name: name, value: value, quoted: quoted))
        }
        return out
    }
}

/// name and filename of a Content-Disposition value.
struct ContentDisposition {
    var name: [UInt8]?
    var filename: [UInt8]?

    init(_ value: [UInt8]) {
        var extended: [UInt8]?
        for p in HeaderParameters.parse(value) {
            if asciiCaseEqual(p.name, Names.name) {
                name = ContentDisposition.unescapeHTML5(p.value)
            } else if asciiCaseEqual(p.name, Names.filename) {
                filename = ContentDisposition.unescapeHTML5(p.value)
            } else if asciiCaseEqual(p.name, Names.filenameStar) {
                extended = ContentDisposition.extendedValue(p.value)
            }
        }
        if let e = extended { filename = e }
    }

    /// `%22`, `%0D`, `%0A` as the WHATWG form encoding writes `"`, CR and LF.
    static func unescapeHTML5(_ v: [UInt8]) -> [UInt8] {
        guard v.contains(UInt8(ascii: "%")) else { return v }
        var out: [UInt8] = []
        out.reserveCapacity(v.count)
        var i = 0
        while i < v.count {
            if v[i] == UInt8(ascii: "%") && i + 2 < v.count + 0 && v[i + 1] == UInt8(ascii: "2") && v[i + 2] == UInt8(ascii: "2") {
                out.append(UInt8(ascii: "\"")); i += 3; continue
            }
            if v[i] == UInt8(ascii: "%") && i + 2 < v.count && v[i + 1] == UInt8(ascii: "0") {
                let c = v[i + 2] | 0x20
                if c == UInt8(ascii: "d") { out.append(13); i += 3; continue }
                if c == UInt8(ascii: "a") { out.append(10); i += 3; continue }
            }
            out.append(v[i])
            i += 1
        }
        return out
    }

    /// RFC 5987 / 2231: `charset'language'pct-encoded` for UTF-8 and ISO-8859-1; nil otherwise.
    static func extendedValue(_ v: [UInt8]) -> [UInt8]? {
        guard let q1 = v.firstIndex(of: UInt8(ascii: "'")) else { return nil }
        guard let q2 = v[(q1 + 1)...].firstIndex(of: UInt8(ascii: "'")) else { return nil }
        let charset = Array(v[0..<q1])
        let latin1 = asciiCaseEqual(charset, Array("iso-8859-1".utf8))
        guard latin1 || asciiCaseEqual(charset, Array("utf-8".utf8)) else { return nil }
        var bytes: [UInt8] = []
        var i = q2 + 1
        while i < v.count {
            if v[i] == UInt8(ascii: "%") {
                guard i + 2 < v.count, let h = QueryDecoder.hexValue(v[i + 1]), let l = QueryDecoder.hexValue(v[i + 2]) else { return nil }
                bytes.append(h << 4 | l)
                i += 3
            } else {
                bytes.append(v[i])
                i += 1
            }
        }
        if bytes.contains(0) { return nil }
        if latin1 {
            var s = ""
            s.unicodeScalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
            return Array(s.utf8)
        }
        guard String(validating: bytes, as: UTF8.self) != nil else { return nil }
        return bytes
    }
}
