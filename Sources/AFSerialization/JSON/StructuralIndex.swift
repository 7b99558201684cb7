internal import CAFSerialization

/// JSON reading in two stages, as simdjson does it (issue 23).
///
/// Stage 1 (`Stage1`, C in Sources/CAFSerialization/json_stage1.c) makes one pass over the
/// input in 64-byte blocks. Each block is classified by vector compares (64-byte AVX-512 or
/// 32-byte AVX2 when the CPU has them, chosen at run time; 16-byte SSE2 otherwise; byte by
/// byte on the portable path, the reference) into 64-bit masks: quotes, backslashes, the structural characters
/// `{}[]:,`, whitespace and control bytes. Backslash runs decide which bytes are escaped (a
/// byte after an odd run); the unescaped quotes, prefix-XORed (a carry-less multiplication
/// on the AVX2 and AVX-512 paths, a shift-xor ladder otherwise), give the bytes inside strings. Written to the index, in order: every structural character outside strings,
/// every opening and closing quote, and the first byte of every other run outside strings
/// (a number, a literal, or a stray byte). UTF-8 is checked for the whole input (the
/// compares of `Wide.utf8Errors`, only on blocks with a byte of 0x80 or above and the block
/// after one).
///
/// Stage 2 (`JSONTapeParser.parse`) walks the index and writes the same tape
/// `JSONDocument` has always had: strings copied (or unescaped) between the quote positions,
/// numbers converted exactly (Clinger, Eisel-Lemire, `strtod` for the rest), keys checked
/// for repeats by `TapeBuilder` (whole-key hash), the depth limit.
///
/// Errors: stage 1 and stage 2 accept exactly the documents the reader accepts, and only
/// decide whether a document is good. On anything wrong (invalid UTF-8, a control byte in
/// a string, an unterminated string, a grammar error, a bad escape or number, the depth
/// limit) the input is read again by `JSONReader` (`JSONDocument.parseWithReader`), which
/// names the problem with the message and offset it always has. Out of memory is
/// `.noMemory` in either stage.
struct JSONStructuralIndex: ~Copyable {
    /// Positions of the structural characters, quotes and scalar starts, ascending.
    var positions: UnsafeMutablePointer<UInt32>
    var count = 0
    var capacity = 0

    init() {
        positions = UnsafeMutablePointer(bitPattern: MemoryLayout<UInt32>.alignment)!
    }

    deinit {
        if capacity > 0 { free(positions) }
    }

    /// The largest input stage 1 indexes (positions are 32-bit); larger input goes to the reader.
    static let maxInput = Int(UInt32.max) &- 128

    /// Makes room for the index of `n` bytes (at most one entry per byte).
    mutating func reserve(_ n: Int) throws(AFSError) {
        let need = n &+ 72 &+ Stage1.scratchEntries  // `n` entries, the 8-entry steps of `fill`, scratch
        if need <= capacity { return }
        let bytes = need &* MemoryLayout<UInt32>.stride
        guard let p = capacity > 0 ? afsRealloc(positions, bytes) : afsMalloc(bytes) else {
            throw AFSError.noMemory("a JSON structural index", bytes: bytes)
        }
        positions = p.bindMemory(to: UInt32.self, capacity: need)
        capacity = need
    }

    /// Bits of the bytes escaped by a backslash (`cafs_json_escaped`, the scanner's own
    /// function; the tests compare it with `escapedByLoop`).
    static func escaped(_ backslash: UInt64, _ carry: inout UInt64) -> UInt64 {
        cafs_json_escaped(backslash, &carry)
    }

    /// `escaped` one backslash at a time (the tests' reference).
    static func escapedByLoop(_ backslash: UInt64, _ carry: inout UInt64) -> UInt64 {
        var escaped = carry
        var b = backslash & ~carry
        carry = 0
        while b != 0 {
            let t = UInt64(b.trailingZeroBitCount)
            if t == 63 {
                carry = 1
                break
            }
            let next: UInt64 = 1 << (t &+ 1)
            escaped |= next
            b &= ~(next | (1 << t))
        }
        return escaped
    }

    /// Stage 1 over the whole of `p[0..<n]` into `positions` (tests), by `path` (one of
    /// `Stage1.paths`). Returns false when the input is not a well-formed JSON text at the
    /// byte level (invalid UTF-8, a control byte inside a string, an unterminated string).
    mutating func build(_ p: UnsafePointer<UInt8>, _ n: Int, path: Int32 = Stage1.defaultPath) throws(AFSError) -> Bool {
        try reserve(n &+ 64)
        var scanner = Stage1(p: p, n: n, path: path, out: positions, window: n &+ 64,
                             scratch: UnsafeMutableRawPointer(positions + (capacity &- Stage1.scratchEntries)))
        scanner.fill(keeping: 0)
        count = scanner.count
        return scanner.valid
    }
}

/// Stage 1 as a scanner: each `fill` indexes the next blocks until about `window` entries
/// wait (or the input ends), so stage 2 reads the index while it is in cache and the index
/// costs a fixed amount of memory, not 4 bytes per byte of input. The scanning is C
/// (Sources/CAFSerialization/json_stage1.c: portable, SSE2 and AVX2 copies of one loop,
/// the AVX2 one chosen at run time); this holds its state. Copyable (pointers only).
struct Stage1 {
    /// Index entries kept for the scratch block at the end of the index buffer (80 bytes).
    static let scratchEntries = 24
    /// The window of a parse: 64K entries (256 KiB).
    static let window = 1 << 16

    /// Byte by byte (the reference), 16-byte vectors, 32-byte AVX2 vectors, 64-byte
    /// AVX-512 (F and BW) vectors.
    static let portable = Int32(CAFS_JSON_PORTABLE), sse2 = Int32(CAFS_JSON_SSE2), avx2 = Int32(CAFS_JSON_AVX2)
    static let avx512 = Int32(CAFS_JSON_AVX512)
    /// The paths this CPU runs (tests run each).
    static let paths: [Int32] = [portable, sse2, avx2, avx512].filter { cafs_json_stage1_has_path($0) != 0 }
    /// The fastest path the CPU has, unless the environment variable `AFS_JSON_STAGE1`
    /// (portable, sse2, avx2, avx512) names another it has.
    static let defaultPath = Int32(cafs_json_stage1_default_path())

    var c: cafs_json_stage1
    /// `c.p` and `c.out` (not optional).
    let p: UnsafePointer<UInt8>
    let out: UnsafeMutablePointer<UInt32>

    init(p: UnsafePointer<UInt8>, n: Int, path: Int32, out: UnsafeMutablePointer<UInt32>, window: Int,
         scratch: UnsafeMutableRawPointer) {
        self.p = p
        self.out = out
        c = cafs_json_stage1(p: p, n: n, out: out, window: window,
                             scratch: scratch.assumingMemoryBound(to: UInt8.self), count: 0, pos: 0,
                             escape_carry: 0, in_string_carry: 0, other_carry: 0, problems: 0,
                             utf8_errors: 0, high_before: 0,
                             path: cafs_json_stage1_has_path(path) != 0 ? path : Stage1.sse2)
    }

    var count: Int { c.count }
    var finished: Bool { c.pos >= c.n }

    /// After the whole input: whether no byte-level problem was seen.
    var valid: Bool {
        if c.in_string_carry != 0 || c.problems != 0 || c.utf8_errors != 0 { return false }
        // A sequence cut off by the end of a whole last block.
        let n = c.n
        if n % 64 == 0 && c.high_before != 0 {
            if p[n &- 1] >= 0xC0 || (n >= 2 && p[n &- 2] >= 0xE0) || (n >= 3 && p[n &- 3] >= 0xF0) { return false }
        }
        return true
    }

    /// Moves the entries from `keep` on to the front, then indexes blocks until the
    /// window is nearly full or the input ends.
    @inline(__always)
    mutating func fill(keeping keep: Int) {
        cafs_json_stage1_fill(&c, keep)
    }
}

/// Exact powers of ten representable as doubles (Clinger's fast path).
private let powersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]

/// A JSON parser whose buffers (the structural index, the stack of open containers) are
/// kept from one document to the next. One thread at a time.
///
/// C: `afs_json_parser_new`, `afs_json_parser_parse`, `afs_json_parser_free`;
/// `afs_value_parse_json` uses a new one each time.
public final class JSONTapeParser {
    var index = JSONStructuralIndex()
    var frames = MoveStack<JSONReader.Frame>(capacity: 16)
    /// How stage 1 classifies (one of `Stage1.paths`; tests run each).
    var stage1Path = Stage1.defaultPath
    /// Index entries stage 1 runs ahead of stage 2 (tests use small windows; at least 64).
    var window = Stage1.window
    /// Where the documents of a reused parser give their blocks back (nil: not reused).
    let spare: JSONBlockSpare?

    /// - Parameter reused: whether the parser will read many documents: the blocks of the
    ///   last document freed are then kept for the next one (`afs_json_parser`).
    public init(reused: Bool = false) {
        spare = reused ? JSONBlockSpare() : nil
    }

    /// Parses one JSON document: `JSONDocument.parse`'s rules, limits and errors.
    public func parse(_ bytes: UnsafeBufferPointer<UInt8>, allowFragments: Bool = true,
                      maxDepth: Int = JSONParser.defaultMaxDepth) throws -> JSONDocument {
        if let doc = try parseIndexed(bytes, allowFragments: allowFragments, maxDepth: maxDepth) { return doc }
        return try JSONDocument.parseWithReader(bytes, allowFragments: allowFragments, maxDepth: maxDepth)
    }

    /// The two stages; nil when the document is not accepted (the reader then names why).
    func parseIndexed(_ bytes: UnsafeBufferPointer<UInt8>, allowFragments: Bool, maxDepth: Int) throws(AFSError)
        -> JSONDocument?
    {
        guard let p = bytes.baseAddress, bytes.count > 0, bytes.count <= JSONStructuralIndex.maxInput else { return nil }
        let n = bytes.count
        let window = Swift.min(Swift.max(64, self.window), n &+ 64)
        try index.reserve(window)
        var scanner = Stage1(p: p, n: n, path: stage1Path, out: index.positions, window: window,
                             scratch: UnsafeMutableRawPointer(index.positions + (index.capacity &- Stage1.scratchEntries)))
        scanner.fill(keeping: 0)
        guard scanner.count > 0 else { return nil }
        let first = p[Int(index.positions[0])]
        if !allowFragments && first != UInt8(ascii: "{") && first != UInt8(ascii: "[") { return nil }
        // The tape starts at an eighth of the input's size in nodes and doubles as needed;
        // the text of every string and a NUL after each is never more than the input (each
        // string's quotes leave room for its NUL), plus 8 bytes of room for `copyPlain`
        // and `keyPrintPadded`. A reused parser starts from the blocks of the last document
        // it made that was freed, when they fit without wasting much.
        let nodeCount = Swift.max(64, n / 8)
        let nodeBytes = nodeCount &* MemoryLayout<JSONDocument.Node>.stride
        let textBytes = n &+ 9
        var keptNodes: (UnsafeMutableRawPointer, Int)?
        var keptText: (UnsafeMutableRawPointer, Int)?
        if let spare, let (np, nb, tp, tb) = spare.take() {
            if nb >= nodeBytes && nb <= 16 &* nodeBytes &+ (1 << 20) { keptNodes = (np, nb) } else { free(np) }
            if tb >= textBytes && tb <= 2 &* textBytes &+ (1 << 20) { keptText = (tp, tb) } else { free(tp) }
        }
        var b: TapeBuilder
        if let (np, nb) = keptNodes {
            b = TapeBuilder(nodes: np, capacity: nb / MemoryLayout<JSONDocument.Node>.stride)
        } else {
            b = try TapeBuilder(inputSize: n)
        }
        let text: UnsafeMutablePointer<UInt8>
        let textCapacity: Int
        if let (tp, tb) = keptText {
            text = tp.bindMemory(to: UInt8.self, capacity: tb)
            textCapacity = tb
        } else {
            guard let rawText = afsMalloc(textBytes) else { throw AFSError.noMemory("a JSON document's text", bytes: textBytes) }
            text = rawText.bindMemory(to: UInt8.self, capacity: textBytes)
            textCapacity = textBytes
        }
        var stage = Stage2(p: p, n: n, s1: scanner, text: text, maxDepth: Swift.max(0, maxDepth))
        frames.count = 0
        let ok: Bool
        do {
            ok = try stage.run(&b, &frames)
        } catch {
            free(text)
            throw error
        }
        guard ok else {
            free(text)
            return nil
        }
        let nodesKept = b.capacity &* MemoryLayout<JSONDocument.Node>.stride
        let doc = b.finish(text: text, textCount: stage.textCount)
        if let spare {
            doc.spare = spare
            doc.blockBytes = (nodesKept, textCapacity)
        }
        return doc
    }
}

/// The tape and text blocks of the last freed document of a reused parser: the next parse
/// writes into memory already mapped instead of a fresh block the kernel must fault in and
/// zero (a third of a 10 MB parse). Documents may be freed on any thread: a lock.
final class JSONBlockSpare: @unchecked Sendable {  // every access under `lock`
    private let lock: OpaquePointer?
    private var nodes: UnsafeMutableRawPointer?
    private var nodesBytes = 0
    private var text: UnsafeMutableRawPointer?
    private var textBytes = 0

    init() { lock = cafs_lock_new() }

    deinit {
        free(nodes)
        free(text)
        if let lock { cafs_lock_free(lock) }
    }

    /// Keeps a freed document's blocks when none are kept; false when the caller frees them.
    func give(_ n: UnsafeMutableRawPointer, _ nb: Int, _ t: UnsafeMutableRawPointer, _ tb: Int) -> Bool {
        guard let lock else { return false }
        cafs_lock_acquire(lock)
        defer { cafs_lock_release(lock) }
        if nodes != nil || text != nil { return false }
        nodes = n
        nodesBytes = nb
        text = t
        textBytes = tb
        return true
    }

    /// The kept blocks (now the caller's), or nil.
    func take() -> (UnsafeMutableRawPointer, Int, UnsafeMutableRawPointer, Int)? {
        guard let lock else { return nil }
        cafs_lock_acquire(lock)
        defer { cafs_lock_release(lock) }
        guard let n = nodes, let t = text else { return nil }
        nodes = nil
        text = nil
        return (n, nodesBytes, t, textBytes)
    }
}

/// Stage 2: the tape from the index.
struct Stage2 {
    let p: UnsafePointer<UInt8>
    let n: Int
    /// Stage 1, run a window ahead of this walk.
    var s1: Stage1
    var text: UnsafeMutablePointer<UInt8>
    let maxDepth: Int
    /// The next index entry (in the window).
    var k = 0
    var textCount = 0
    /// JSON-to-pickle's scratch for unescaped strings (JSONToPickleIndexed.swift): its size,
    /// and whether growing it failed (out of memory, not a rejection).
    var scratchCapacity = 0
    var scratchFailed = false

    @inline(__always)
    func at(_ j: Int) -> Int { Int(truncatingIfNeeded: s1.out[j]) }

    /// Whether entry `k` exists, indexing the next window when the walk reached the end of
    /// this one (the entries before `k` are done with).
    @inline(__always)
    mutating func has() -> Bool {
        k < s1.count || refill()
    }

    mutating func refill() -> Bool {
        while !s1.finished {
            s1.fill(keeping: k)
            k = 0
            if s1.count > 0 { return true }
        }
        return false
    }

    mutating func run(_ b: inout TapeBuilder, _ frames: inout MoveStack<JSONReader.Frame>) throws(AFSError) -> Bool {
        outer: while true {
            guard has() else { return false }
            let q = at(k)
            k &+= 1
            let c = p[q]
            switch c {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = c == UInt8(ascii: "{")
                if frames.count >= maxDepth { return false }
                b.depth = Swift.max(b.depth, frames.count &+ 1)
                let node = try b.push(isObject ? .dict : .array)
                guard has() else { return false }
                if p[at(k)] == c &+ 2 {  // `}` and `]` are 2 above `{` and `[`
                    k &+= 1
                    b.nodes[node].word = UInt64(b.count)
                } else {
                    try frames.push(JSONReader.Frame(isObject: isObject, matchesShape: false, valueStart: node, keyStart: b.keys.count))
                    if isObject { guard try key(&b) else { return false } }
                    continue outer
                }
            case 0x22:
                guard try string(&b, q) != nil else { return false }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard try number(&b, q) else { return false }
            case UInt8(ascii: "t"):
                guard literal(q, 0x6575_7274, 4) else { return false }
                _ = try b.push(.true)
            case UInt8(ascii: "f"):
                guard literal(q, 0x6573_6C61_66, 5) else { return false }
                _ = try b.push(.false)
            case UInt8(ascii: "n"):
                guard literal(q, 0x6C6C_756E, 4) else { return false }
                _ = try b.push(.null)
            default:
                return false
            }
            // A value is complete: count it in its container, closing containers as they end.
            while frames.count > 0 {
                let top = frames.base[frames.count &- 1]
                b.nodes[top.valueStart].head &+= 16
                guard has() else { return false }
                let d = p[at(k)]
                k &+= 1
                if d == UInt8(ascii: ",") {
                    if top.isObject { guard try key(&b) else { return false } }
                    continue outer
                }
                guard d == (top.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { return false }
                if top.isObject { try b.closeObject(keysFrom: top.keyStart, text: text) }
                b.nodes[top.valueStart].word = UInt64(b.count)
                frames.count &-= 1
            }
            return !has() && s1.valid
        }
    }

    /// Whether the byte at `e` may follow a scalar: the end, whitespace or a structural character.
    @inline(__always)
    func boundary(_ e: Int) -> Bool {
        guard e < n else { return true }
        switch p[e] {
        case 0x20, 0x0A, 0x0D, 0x09, 0x2C, 0x3A, 0x5B, 0x5D, 0x7B, 0x7D: return true
        default: return false
        }
    }

    /// Whether `p[q...]` is the literal whose bytes are `word` (little-endian), `len` long.
    @inline(__always)
    func literal(_ q: Int, _ word: UInt64, _ len: Int) -> Bool {
        guard q &+ len <= n else { return false }
        for j in 0..<len where p[q &+ j] != UInt8(truncatingIfNeeded: word >> (8 &* UInt64(j))) { return false }
        return boundary(q &+ len)
    }

    /// A key string, its print, and the `:` after it.
    @inline(__always)
    mutating func key(_ b: inout TapeBuilder) throws(AFSError) -> Bool {
        guard has() else { return false }
        let q = at(k)
        guard p[q] == 0x22 else { return false }
        k &+= 1
        let start = textCount
        guard let node = try string(&b, q) else { return false }
        try b.keys.push(node)
        // The print is read from the input when the key had no escape (same bytes): the
        // text was just written with stores the masked 8-byte load would straddle (a
        // store-forwarding stall on every short key).
        let length = textCount &- 1 &- start
        let plain = b.nodes[node].head & JSONDocument.plainFlag != 0
        let from = plain && q &+ 9 &+ length <= n ? p + (q &+ 1) : UnsafePointer(text + start)
        try b.prints.push(TapeBuilder.keyPrintPadded(from, length))
        guard has(), p[at(k)] == UInt8(ascii: ":") else { return false }
        k &+= 1
        return true
    }

    /// The string whose opening quote is at `q` (its closing quote is the next entry); nil
    /// for a bad escape.
    @inline(__always)
    mutating func string(_ b: inout TapeBuilder, _ q: Int) throws(AFSError) -> Int? {
        guard has() else { return nil }
        let close = at(k)
        k &+= 1
        let start = q &+ 1
        let len = close &- start
        let dst = text + textCount
        let node: Int
        let escape = Stage2.copyPlain(p, n, start, close, dst)
        if escape < 0 {
            node = try b.push(.string, UInt64(len), UInt64(textCount))
            b.nodes[node].head |= JSONDocument.plainFlag
            textCount &+= len
        } else {
            // The bytes before the first backslash are copied already.
            let copied = escape &- start
            guard let written = unescape(escape, close, dst + copied) else { return nil }
            node = try b.push(.string, UInt64(copied &+ written), UInt64(textCount))
            textCount &+= copied &+ written
        }
        text[textCount] = 0
        textCount &+= 1
        return node
    }

    @inline(__always)
    static func hasBackslash(_ w: UInt64) -> Bool {
        let x = w ^ 0x5C5C_5C5C_5C5C_5C5C
        return (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080 != 0
    }

    /// Copies `p[from..<end]` to `dst` up to its first backslash: -1 when there is none
    /// (all copied), else the backslash's offset (the bytes before it are copied, those
    /// after it may be too). Short strings 8 bytes at a time (`dst` has 8 bytes of room
    /// after the text: see `parseIndexed`), long ones by `memchr` and `memcpy`.
    @inline(__always)
    static func copyPlain(_ p: UnsafePointer<UInt8>, _ n: Int, _ from: Int, _ end: Int,
                          _ dst: UnsafeMutablePointer<UInt8>) -> Int {
        let len = end &- from
        if len >= 48 {
            if let hit = memchr(p + from, 0x5C, len) {
                let at = UnsafeRawPointer(hit).assumingMemoryBound(to: UInt8.self) - p
                memcpy(dst, p + from, at &- from)
                return at
            }
            memcpy(dst, p + from, len)
            return -1
        }
        var i = from
        var o = dst
        while i &+ 8 <= end {
            let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
            if hasBackslash(w) { return i }
            UnsafeMutableRawPointer(o).storeBytes(of: w, as: UInt64.self)
            i &+= 8
            o += 8
        }
        let r = end &- i
        if r == 0 { return -1 }
        if i &+ 8 <= n {
            let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
            let x = (w ^ 0x5C5C_5C5C_5C5C_5C5C) | ~((1 << (UInt64(r) &* 8)) &- 1)
            if (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080 != 0 { return i }
            UnsafeMutableRawPointer(o).storeBytes(of: w, as: UInt64.self)
            return -1
        }
        for j in 0..<r {
            if p[i &+ j] == 0x5C { return i &+ j }
            o[j] = p[i &+ j]
        }
        return -1
    }

    /// What each one-byte escape stands for (`"`, backslash, `/`, `b`, `f`, `n`, `r`, `t`
    /// after the backslash), by the byte after the backslash; 0 for any other byte. 128
    /// bytes of constant data.
    static let escapes: StaticString = "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\"\0\0\0\0\0\0\0\0\0\0\0\0/\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\\\0\0\0\0\0\u{8}\0\0\0\u{C}\0\0\0\0\0\0\0\n\0\0\0\r\0\t\0\0\0\0\0\0\0\0\0\0\0"

    /// Unescapes `p[from..<end]` into `dst`; the bytes written, or nil for a bad escape.
    func unescape(_ from: Int, _ end: Int, _ dst: UnsafeMutablePointer<UInt8>) -> Int? {
        var i = from
        var o = 0
        while i < end {
            // Copy up to the next backslash: 8 bytes at a time while the run is short
            // (escapes often come close together: a call per run cost more than the run),
            // `memchr` and `memcpy` once it passes 32 bytes. The 8-byte stores stay inside
            // the string's room (the output is never longer than the input read so far).
            var at = -1
            var steps = 0
            while i &+ 8 <= end && steps < 4 {
                let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                UnsafeMutableRawPointer(dst + o).storeBytes(of: w, as: UInt64.self)
                let x = w ^ 0x5C5C_5C5C_5C5C_5C5C
                let t = (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080
                if t != 0 {
                    // The lowest flagged byte is the first backslash (a borrow only flags
                    // bytes above a real match).
                    let z = t.trailingZeroBitCount >> 3
                    i &+= z
                    o &+= z
                    at = i
                    break
                }
                i &+= 8
                o &+= 8
                steps &+= 1
            }
            if at < 0 {
                let rest = end &- i
                if rest == 0 { return o }
                guard let hit = memchr(p + i, 0x5C, rest) else {
                    memcpy(dst + o, p + i, rest)
                    return o &+ rest
                }
                at = UnsafeRawPointer(hit).assumingMemoryBound(to: UInt8.self) - p
                let run = at &- i
                if run > 0 { memcpy(dst + o, p + i, run); o &+= run }
            }
            i = at &+ 1
            guard i < end else { return nil }
            let e = p[i]
            i &+= 1
            // The one-byte escapes by a table lookup (a switch compiled to a jump table
            // whose indirect branch mispredicted on mixed escapes).
            let out = e < 0x80 ? Stage2.escapes.utf8Start[Int(e)] : 0
            if out != 0 {
                dst[o] = out
                o &+= 1
                continue
            }
            guard e == UInt8(ascii: "u") else { return nil }
            guard var s = hex4(i, end) else { return nil }
            i &+= 4
            if s >= 0xD800 && s <= 0xDBFF {
                guard i &+ 1 < end, p[i] == 0x5C, p[i &+ 1] == UInt8(ascii: "u"), let low = hex4(i &+ 2, end),
                      low >= 0xDC00 && low <= 0xDFFF else { return nil }
                i &+= 6
                s = 0x10000 &+ ((s &- 0xD800) << 10) &+ (low &- 0xDC00)
            } else if s >= 0xDC00 && s <= 0xDFFF {
                return nil
            }
            if s < 0x80 {
                dst[o] = UInt8(s); o &+= 1
            } else if s < 0x800 {
                dst[o] = UInt8(0xC0 | (s >> 6)); dst[o &+ 1] = UInt8(0x80 | (s & 0x3F)); o &+= 2
            } else if s < 0x10000 {
                dst[o] = UInt8(0xE0 | (s >> 12)); dst[o &+ 1] = UInt8(0x80 | ((s >> 6) & 0x3F))
                dst[o &+ 2] = UInt8(0x80 | (s & 0x3F)); o &+= 3
            } else {
                dst[o] = UInt8(0xF0 | (s >> 18)); dst[o &+ 1] = UInt8(0x80 | ((s >> 12) & 0x3F))
                dst[o &+ 2] = UInt8(0x80 | ((s >> 6) & 0x3F)); dst[o &+ 3] = UInt8(0x80 | (s & 0x3F)); o &+= 4
            }
        }
        return o
    }

    @inline(__always)
    func hex4(_ i: Int, _ end: Int) -> UInt32? {
        guard i &+ 4 <= end else { return nil }
        var v: UInt32 = 0
        for j in 0..<4 {
            let c = p[i &+ j]
            let d: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c &- UInt8(ascii: "a") &+ 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c &- UInt8(ascii: "A") &+ 10
            default: return nil
            }
            v = v << 4 | UInt32(d)
        }
        return v
    }

    @inline(__always)
    func digit(_ j: Int) -> Bool { j < n && p[j] &- 0x30 < 10 }

    /// The value of the 8 ASCII digits at `j`, or nil when fewer than 8 bytes remain or
    /// one is not a digit. SWAR: pairs, then quads, then the whole, each step one
    /// multiply-add of neighbouring lanes (no lane overflows into the next).
    @inline(__always)
    func eightDigits(_ j: Int) -> UInt64? {
        guard j &+ 8 <= n else { return nil }
        let w = UnsafeRawPointer(p + j).loadUnaligned(as: UInt64.self)
        let high: UInt64 = 0xF0F0_F0F0_F0F0_F0F0, threes: UInt64 = 0x3030_3030_3030_3030
        guard w & high == threes, (w &+ 0x0606_0606_0606_0606) & high == threes else { return nil }
        var v = w &- threes  // digit k (the k-th most significant) in byte k
        v = ((v &* 10) &+ (v >> 8)) & 0x00FF_00FF_00FF_00FF
        v = ((v &* 100) &+ (v >> 16)) & 0x0000_FFFF_0000_FFFF
        return ((v &* 10000) &+ (v >> 32)) & 0xFFFF_FFFF
    }

    /// The number at `q` as `JSONReader.number` converts it (same grammar, same values);
    /// false when it is not a valid number followed by a boundary, or too large for a double.
    @inline(__always)
    mutating func number(_ b: inout TapeBuilder, _ q: Int) throws(AFSError) -> Bool {
        guard let (isInt, bits, _) = numberValue(q) else { return false }
        _ = try b.push(isInt ? .int : .double, 0, bits)
        return true
    }

    /// The number at `q`: whether an int64 (else a double), its bits, and where it ends;
    /// nil when it is not valid or too large for a double (the reader names why).
    @inline(__always)
    func numberValue(_ q: Int) -> (Bool, UInt64, Int)? {
        var i = q
        let negative = p[i] == UInt8(ascii: "-")
        if negative { i &+= 1 }
        var mantissa: UInt64 = 0
        var truncated = false
        guard digit(i) else { return nil }
        if p[i] == 0x30 {
            i &+= 1
            if digit(i) { return nil }
        } else {
            // Up to 19 digits cannot overflow.
            let first = i
            if let v = eightDigits(i) {
                mantissa = v
                i &+= 8
                if let v2 = eightDigits(i) {
                    mantissa = mantissa &* 100_000_000 &+ v2
                    i &+= 8
                }
            }
            while digit(i) && i &- first < 19 {
                mantissa = mantissa &* 10 &+ UInt64(p[i] &- 0x30)
                i &+= 1
            }
            while digit(i) {
                if !truncated {
                    let (m1, o1) = mantissa.multipliedReportingOverflow(by: 10)
                    let (m2, o2) = m1.addingReportingOverflow(UInt64(p[i] &- 0x30))
                    if o1 || o2 { truncated = true } else { mantissa = m2 }
                }
                i &+= 1
            }
        }
        var isInteger = true
        var fractionDigits = 0
        if i < n && p[i] == UInt8(ascii: ".") {
            isInteger = false
            i &+= 1
            guard digit(i) else { return nil }
            // 8 digits at a time while the mantissa surely has room (at most 19 digits).
            var room = truncated ? 0 : 19 &- (i &- 1 &- q &- (negative ? 1 : 0))
            while room >= 8, let v = eightDigits(i) {
                mantissa = mantissa &* 100_000_000 &+ v
                fractionDigits &+= 8
                room &-= 8
                i &+= 8
            }
            while digit(i) {
                if !truncated {
                    let (m1, o1) = mantissa.multipliedReportingOverflow(by: 10)
                    let (m2, o2) = m1.addingReportingOverflow(UInt64(p[i] &- 0x30))
                    if o1 || o2 { truncated = true } else { mantissa = m2; fractionDigits &+= 1 }
                }
                i &+= 1
            }
        }
        var exponent = 0
        if i < n && (p[i] | 0x20) == UInt8(ascii: "e") {
            isInteger = false
            i &+= 1
            var expNegative = false
            if i < n && (p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-")) {
                expNegative = p[i] == UInt8(ascii: "-")
                i &+= 1
            }
            guard digit(i) else { return nil }
            while digit(i) {
                if exponent < 100_000_000 { exponent = exponent &* 10 &+ Int(p[i] &- 0x30) }
                i &+= 1
            }
            if expNegative { exponent = -exponent }
        }
        guard boundary(i) else { return nil }

        if isInteger && !truncated {
            if !negative {
                if mantissa <= UInt64(Int64.max) { return (true, mantissa, i) }
            } else if mantissa == 0 {
                return (false, (-0.0 as Double).bitPattern, i)
            } else if mantissa <= UInt64(Int64.max) + 1 {
                return (true, 0 &- mantissa, i)
            }
        }
        var d: Double?
        if !truncated && exponent > -100_000_000 && exponent < 100_000_000 {
            if mantissa == 0 {
                d = 0
            } else {
                let e10 = exponent &- fractionDigits
                if mantissa <= 1 << 53 && e10 >= -22 && e10 <= 22 {
                    let m = Double(mantissa)
                    d = e10 < 0 ? m / powersOfTen[-e10] : m * powersOfTen[e10]
                } else {
                    d = decimalToDouble(significand: mantissa, exponent: e10)
                }
            }
            if let x = d { d = negative ? -x : x }
        }
        if d == nil {
            // The standard library's C-locale strtod; too large is the reader's error.
            let token = String(decoding: UnsafeBufferPointer(start: p + q, count: i &- q), as: UTF8.self)
            guard let x = Double(token), x.isFinite else { return nil }
            d = x
        }
        return (false, d!.bitPattern, i)
    }
}
