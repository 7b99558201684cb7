/// A strict RFC 8259 JSON reader producing a `Value` tree.
///
/// Strict means: exactly one value surrounded by optional whitespace (space, tab, CR, LF
/// only); no byte order mark, comments, trailing commas, single quotes, unquoted keys,
/// `NaN`/`Infinity`, leading `+` or leading zeros; no raw control characters (below 0x20)
/// in strings; the input must be valid UTF-8; `\u` escapes must not leave a lone surrogate
/// (pairs are combined); `\u0000` is accepted and gives a NUL character.
///
/// Numbers: an integer (no fraction, no exponent) that fits in Int64 becomes `.int`; every
/// other number becomes `.double`, correctly rounded. `-0` becomes `.double(-0.0)` (it is not
/// an Int64 value, and the double keeps the sign, so it is written back as `-0`); integers
/// beyond Int64 become the nearest double. A number whose magnitude is too large for a
/// double (`1e400`) is an error; one too small (`1e-400`) becomes 0 or a subnormal.
///
/// Objects: a repeated key keeps its first position and takes the last value.
///
/// Nesting deeper than `maxDepth` containers is an error; the parser is iterative, so no
/// input can overflow the stack.
///
/// Every error is `AFSError` `.invalidJSON` whose message names what was expected and what
/// was found, and ends with "at byte offset N" (0-based, in the input bytes).
public enum JSONParser {
    /// The nesting limit used by `afs_value_parse_json` and the JSON response serializer.
    public static let defaultMaxDepth = 512

    /// Parses one JSON document.
    /// - Parameters:
    ///   - bytes: the UTF-8 text.
    ///   - allowFragments: whether a scalar (string, number, `true`, `false`, `null`) is
    ///     accepted as the top-level value; when false the document must be an object or an
    ///     array.
    ///   - maxDepth: the most containers that may be nested inside one another.
    /// - Returns: the value.
    /// - Throws: `AFSError` `.invalidJSON` with the byte offset of the problem.
    ///   C: `afs_value_parse_json`, `afs_response_object` with a JSON response serializer.
    ///   - maxDecodedBytes: the `DecodeBudget` limit (default: none).
    public static func parse(
        _ bytes: UnsafeBufferPointer<UInt8>, allowFragments: Bool = true, maxDepth: Int = defaultMaxDepth,
        maxDecodedBytes: Int = Int.max
    ) throws -> Value {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw AFSError(.invalidJSON, "no JSON value: the input is empty at byte offset 0")
        }
        var reader = JSONReader(base, bytes.count, maxDepth: maxDepth)
        reader.budget = DecodeBudget(limit: maxDecodedBytes)
        do {
            return try reader.document(allowFragments: allowFragments)
        } catch {
            reader.releaseDeep()
            throw error
        }
    }

    /// Parses one JSON document from bytes (see `parse(_:allowFragments:maxDepth:)`).
    public static func parse(_ bytes: [UInt8], allowFragments: Bool = true) throws -> Value {
        try bytes.withUnsafeBufferPointer { try parse($0, allowFragments: allowFragments) }
    }

    /// Parses one JSON document from a string's UTF-8 (see `parse(_:allowFragments:maxDepth:)`).
    public static func parse(_ text: String, allowFragments: Bool = true) throws -> Value {
        var text = text
        return try text.withUTF8 { try parse($0, allowFragments: allowFragments) }
    }
}

// MARK: - The reader

private let asciiQuote = UInt8(ascii: "\"")
private let asciiBackslash = UInt8(ascii: "\\")

/// Exact powers of ten representable as doubles (Clinger's fast path).
private let exactPowersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]

/// A stack of values in `malloc` memory from which finished containers take their members
/// by moving them (no retain/release per member, no per-container scratch arrays).
struct MoveStack<Element>: ~Copyable {
    var base: UnsafeMutablePointer<Element>
    var count = 0
    var capacity: Int

    /// Checked `malloc` memory (`afsMalloc`): a stack that cannot grow is `.noMemory`. A
    /// stack whose first block cannot be had starts empty with capacity 0 and fails at the
    /// first push.
    init(capacity: Int) {
        if let p = afsMalloc(capacity * MemoryLayout<Element>.stride) {
            self.capacity = capacity
            base = p.bindMemory(to: Element.self, capacity: capacity)
        } else {
            self.capacity = 0
            base = UnsafeMutablePointer(bitPattern: MemoryLayout<Element>.alignment)!
        }
    }

    deinit {
        base.deinitialize(count: count)
        if capacity > 0 { free(base) }
    }

    @inline(__always)
    mutating func push(_ e: __owned Element) throws(AFSError) {
        if count == capacity { try grow() }
        (base + count).initialize(to: e)
        count &+= 1
    }

    /// Doubles the capacity with `realloc` (Swift values are bitwise movable).
    mutating func grow() throws(AFSError) {
        let c = Swift.max(capacity &* 2, 16)
        let (bytes, o) = c.multipliedReportingOverflow(by: MemoryLayout<Element>.stride)
        guard !o, let p = capacity > 0 ? afsRealloc(base, bytes) : afsMalloc(bytes) else {
            throw AFSError.noMemory("the parser's stack", bytes: o ? Int.max : bytes)
        }
        base = p.bindMemory(to: Element.self, capacity: c)
        capacity = c
    }

    /// Moves the elements from `start` to the top into a new array.
    /// - Throws: `.noMemory` when the array cannot be allocated (nothing moved).
    @inline(__always)
    mutating func popArray(from start: Int) throws(AFSError) -> [Element] {
        let n = count &- start
        guard n > 0 else { return [] }
        try Memory.probe(n, of: Element.self, "an array of \(n) values")
        let a = [Element](unsafeUninitializedCapacity: n) { buffer, initialized in
            if n &* MemoryLayout<Element>.stride < MoveStack.releaseAbove {
                buffer.baseAddress!.moveInitialize(from: base + start, count: n)
            } else {
                moveReleasing(into: buffer.baseAddress!, from: start, count: n)
            }
            initialized = n
        }
        count = start
        return a
    }

    /// Moves of more than this many bytes give the stack's emptied pages back as they go.
    static var releaseAbove: Int { 8 << 20 }

    /// Moves `n` elements from `start` into `dst` from the top down, 1 MiB at a time, and
    /// returns each emptied stretch of whole pages to the OS (`MADV_DONTNEED`; they come
    /// back zeroed when the stack grows again): a large array then costs its own size, not
    /// twice it, at its peak (a 16 MB `[1,1,…]` would otherwise hold 256 MB of stack and
    /// 256 MB of array at once).
    mutating func moveReleasing(into dst: UnsafeMutablePointer<Element>, from start: Int, count n: Int) {
        let stride = MemoryLayout<Element>.stride
        let step = Swift.max(1, (1 << 20) / stride)
        let page = 4096
        var left = n
        var end = Int(bitPattern: base + start + n)  // the stack's used end, as an address
        while left > 0 {
            let k = Swift.min(step, left)
            left -= k
            (dst + left).moveInitialize(from: base + start + left, count: k)
            #if os(Linux)
            let lo = (Int(bitPattern: base + start + left) + page - 1) & ~(page - 1)
            let hi = end & ~(page - 1)
            if hi > lo, let p = UnsafeMutableRawPointer(bitPattern: lo) {
                _ = madvise(p, hi - lo, 4 /* MADV_DONTNEED */)
                end = lo
            }
            #endif
        }
    }
}

struct JSONReader: ~Copyable {
    /// An open container: whether it is an object, and where its members start on the
    /// value and key stacks.
    struct Frame {
        var isObject: Bool
        /// An object whose keys so far are those of the last object at its level.
        var matchesShape: Bool
        var valueStart: Int
        var keyStart: Int
    }

    let p: UnsafePointer<UInt8>
    let n: Int
    let maxDepth: Int
    var i = 0
    /// Finished members of every open container, innermost last.
    var values = MoveStack<Value>(capacity: 64)
    /// Keys of every open object, parallel to their values.
    var keys = MoveStack<String>(capacity: 32)
    var frames = MoveStack<Frame>(capacity: 16)
    /// Unescaped bytes of a string that contains escapes, from `scratchStart` on.
    var scratch = ByteWriter(capacity: 256)
    /// Where a string's unescaped text starts in `scratch`: 0, except for `JSONDocument`,
    /// which keeps the text of every string there, one after the other.
    var scratchStart = 0
    /// What the tree built so far is charged (values, keys, string bytes).
    var budget = DecodeBudget.unlimited

    /// After a failure: releases the finished subtrees still held (members of open
    /// containers, the last object of each level) without deep recursion on this stack.
    mutating func releaseDeep() {
        while values.count > 0 {
            values.count &-= 1
            var v = (values.base + values.count).move()
            Value.releaseDeep(&v)
        }
        for i in shapes.indices {
            var d = Value.dict(shapes[i])
            shapes[i] = ValueDict()
            Value.releaseDeep(&d)
        }
    }

    @inline(__always)
    mutating func charge(_ bytes: Int) throws {
        if !budget.charge(bytes) { throw error(budget.exceeded(), at: i) }
    }
    /// The last object built from scratch at each nesting level. The next object there with
    /// the same keys in the same order (records in an array) reuses its key strings while it
    /// is read and starts from a copy of it, sharing its key list and index: each key is
    /// then looked up once instead of inserted, and no key String is created.
    var shapes: [ValueDict] = []
    /// The keys of `shapes`, level by level.
    var shapeKeys: [[String]] = []

    init(_ p: UnsafePointer<UInt8>, _ n: Int, maxDepth: Int) {
        self.p = p
        self.n = n
        self.maxDepth = max(0, maxDepth)
    }

    // MARK: Errors

    func error(_ message: String, at offset: Int) -> AFSError {
        AFSError(.invalidJSON, "\(message) at byte offset \(offset)")
    }

    /// `'x'` for printable ASCII, `byte 0xNN` otherwise, `the end of the input` past the end.
    func found(_ offset: Int) -> String {
        guard offset < n else { return "the end of the input" }
        let c = p[offset]
        if c >= 0x20 && c < 0x7F { return "'\(Character(Unicode.Scalar(c)))'" }
        let h = String(c, radix: 16, uppercase: true)
        return "byte 0x\(c < 16 ? "0" : "")\(h)"
    }

    /// "expected X, found Y at byte offset i".
    func unexpected(_ expected: String) -> AFSError {
        error("expected \(expected), found \(found(i))", at: i)
    }

    // MARK: Document and structure

    /// Checks what may stand before the top-level value (no BOM, not only whitespace, a
    /// container unless fragments are allowed) and steps to it. Shared by `document` and
    /// the JSON-to-pickle transcoder.
    mutating func startDocument(allowFragments: Bool) throws {
        if n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF {
            throw error("a byte order mark (U+FEFF) is not allowed", at: 0)
        }
        skipWhitespace()
        if i >= n {
            throw error("no JSON value: the input is only whitespace", at: i)
        }
        if !allowFragments && p[i] != UInt8(ascii: "{") && p[i] != UInt8(ascii: "[") {
            throw unexpected("'{' or '[' (a scalar top-level value is not allowed without fragments)")
        }
    }

    mutating func document(allowFragments: Bool) throws -> Value {
        try startDocument(allowFragments: allowFragments)
        let v = try tree()
        skipWhitespace()
        if i < n {
            throw error("unexpected \(found(i)) after the JSON value", at: i)
        }
        return v
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while i < n {
            let c = p[i]
            if c > 0x20 { return }
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            i &+= 1
        }
    }

    /// Parses one value starting at `i` (whitespace skipped), iteratively.
    mutating func tree() throws -> Value {
        outer: while true {
            guard i < n else { throw unexpected("a JSON value") }
            var v: Value
            switch p[i] {
            case UInt8(ascii: "{"):
                try checkDepth()
                i &+= 1
                skipWhitespace()
                if i < n && p[i] == UInt8(ascii: "}") {
                    i &+= 1
                    v = .dict(ValueDict())
                } else {
                    let level = frames.count
                    let known = level < shapeKeys.count && !shapeKeys[level].isEmpty
                    try frames.push(Frame(isObject: true, matchesShape: known, valueStart: values.count, keyStart: keys.count))
                    try key(afterComma: false)
                    continue outer
                }
            case UInt8(ascii: "["):
                try checkDepth()
                i &+= 1
                skipWhitespace()
                if i < n && p[i] == UInt8(ascii: "]") {
                    i &+= 1
                    v = .array([])
                } else {
                    try frames.push(Frame(isObject: false, matchesShape: false, valueStart: values.count, keyStart: keys.count))
                    continue outer
                }
            case asciiQuote:
                v = .string(try string())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                v = try number()
            case UInt8(ascii: "t"):
                try literal("true")
                v = .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                v = .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                v = .null
            default:
                throw unexpected("a JSON value")
            }

            // `v` is complete: hand it to its container, closing containers as they end.
            while frames.count > 0 {
                let top = frames.base[frames.count &- 1]
                try charge(DecodeBudget.bytesPerValue)
                try values.push(v)
                if try nextMember(inObject: top.isObject) {
                    if top.isObject { try key(afterComma: true) }
                    continue outer
                }
                v = top.isObject ? .dict(try closeObject(top)) : .array(try closeArray(top))
                frames.count &-= 1
            }
            return v
        }
    }

    /// After a member of an open container: steps over a `,` and the whitespace after it
    /// and returns true, or over the container's closing bracket and returns false
    /// (`tree()`, `JSONDocument` and `JSONToPickle` alike).
    @inline(__always)
    mutating func nextMember(inObject isObject: Bool) throws -> Bool {
        skipWhitespace()
        guard i < n else {
            throw unexpected(isObject ? "',' or '}' after an object member" : "',' or ']' after an array element")
        }
        let c = p[i]
        if c == UInt8(ascii: ",") {
            i &+= 1
            skipWhitespace()
            return true
        }
        if isObject {
            guard c == UInt8(ascii: "}") else { throw unexpected("',' or '}' after an object member") }
        } else {
            guard c == UInt8(ascii: "]") else { throw unexpected("',' or ']' after an array element") }
        }
        i &+= 1
        return false
    }

    @inline(__always)
    func checkDepth() throws {
        if frames.count >= maxDepth {
            throw error("nesting deeper than \(maxDepth) levels", at: i)
        }
    }

    /// Parses `"key"` and `:` and the whitespace after them; `i` is at the key.
    @inline(__always)
    mutating func key(afterComma: Bool) throws {
        guard i < n && p[i] == asciiQuote else {
            throw unexpected(afterComma ? "a string key after ',' (trailing commas are not allowed)" : "a string key or '}'")
        }
        try charge(DecodeBudget.bytesPerValue)
        let f = frames.count &- 1
        if frames.base[f].matchesShape {
            let j = keys.count &- frames.base[f].keyStart
            let known = shapeKeys[f]
            if j < known.count, try reuseKey(known[j]) {
                // `i` is past the key.
            } else {
                frames.base[f].matchesShape = false
                try keys.push(try string())
            }
        } else {
            try keys.push(try string())
        }
        skipWhitespace()
        guard i < n && p[i] == UInt8(ascii: ":") else { throw unexpected("':' after an object key") }
        i &+= 1
        skipWhitespace()
    }

    /// If the string at `i` is exactly `candidate` with no escapes, pushes `candidate` as
    /// the key (no new String) and steps past the string.
    @inline(__always)
    mutating func reuseKey(_ candidate: String) throws(AFSError) -> Bool {
        let start = i &+ 1
        var q = start
        while q &+ 8 <= n && JSONReader.keyStopMask(UnsafeRawPointer(p + q).loadUnaligned(as: UInt64.self)) == 0 {
            q &+= 8
        }
        while q < n {
            let c = p[q]
            if c == asciiQuote { break }
            if c == asciiBackslash || c < 0x20 { return false }
            q &+= 1
        }
        guard q < n else { return false }
        let len = q &- start
        let same: Bool? = candidate.utf8.withContiguousStorageIfAvailable { k in
            k.count == len && (len == 0 || memcmp(k.baseAddress!, p + start, len) == 0)
        }
        guard same == true else { return false }
        try keys.push(candidate)
        i = q &+ 1
        return true
    }

    /// Nonzero when one of the 8 bytes is `"`, `\` or below 0x20.
    @inline(__always)
    static func keyStopMask(_ w: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let q = w ^ (ones &* 0x22)
        let b = w ^ (ones &* 0x5C)
        let m = ((w &- ones &* 0x20) & ~w) | ((q &- ones) & ~q) | ((b &- ones) & ~b)
        return m & 0x8080_8080_8080_8080
    }

    @inline(__always)
    mutating func closeArray(_ f: Frame) throws(AFSError) -> [Value] {
        try values.popArray(from: f.valueStart)
    }

    mutating func closeObject(_ f: Frame) throws(AFSError) -> ValueDict {
        let count = keys.count &- f.keyStart
        // The dictionary's key list, value list and index, checked before anything moves.
        try Memory.probe(count, of: (String, Value, Int, Int).self, "a dictionary of \(count) members")
        let level = frames.count &- 1
        let k = keys.base + f.keyStart
        let v = values.base + f.valueStart
        defer {
            keys.count = f.keyStart
            values.count = f.valueStart
        }
        if f.matchesShape && shapes[level].count == count {
            // Same keys in the same order as the last object here (checked key by key as
            // they were read): start from it, sharing its key list and index.
            var d = shapes[level]
            for j in 0..<count {
                (k + j).deinitialize(count: 1)
                d.setValue((v + j).move(), at: j)
            }
            return d
        }
        // A repeated key keeps its position and takes the last value.
        let d = ValueDict(count: count) { j in ((k + j).move(), (v + j).move()) }
        while shapes.count <= level {
            shapes.append(ValueDict())
            shapeKeys.append([])
        }
        shapes[level] = d
        shapeKeys[level] = d.keys
        return d
    }

    mutating func literal(_ word: StaticString) throws {
        let w = word.utf8Start
        let len = word.utf8CodeUnitCount
        for k in 0..<len {
            guard i &+ k < n && p[i &+ k] == w[k] else {
                let start = i
                i = i &+ k
                throw error(
                    "invalid literal: expected '\(word)' (starting at byte offset \(start)), found \(found(i))", at: i)
            }
        }
        i &+= len
    }

    // MARK: Numbers

    @inline(__always)
    func isDigit(_ k: Int) -> Bool {
        k < n && p[k] &- UInt8(ascii: "0") < 10
    }

    mutating func number() throws -> Value {
        let start = i
        var negative = false
        if p[i] == UInt8(ascii: "-") {
            negative = true
            i &+= 1
        }
        // Digits of the integer and fraction parts accumulate in `mantissa` until it would
        // overflow; later digits set `truncated` and leave the work to the slow path.
        var mantissa: UInt64 = 0
        var truncated = false
        guard isDigit(i) else { throw unexpected(negative ? "a digit after '-'" : "a digit") }
        if p[i] == UInt8(ascii: "0") {
            i &+= 1
            if isDigit(i) { throw error("invalid number: leading zeros are not allowed", at: i) }
        } else {
            while isDigit(i) {
                let d = UInt64(p[i] &- UInt8(ascii: "0"))
                if !truncated {
                    let (m1, o1) = mantissa.multipliedReportingOverflow(by: 10)
                    let (m2, o2) = m1.addingReportingOverflow(d)
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
            guard isDigit(i) else { throw unexpected("a digit after '.'") }
            while isDigit(i) {
                if !truncated {
                    let d = UInt64(p[i] &- UInt8(ascii: "0"))
                    let (m1, o1) = mantissa.multipliedReportingOverflow(by: 10)
                    let (m2, o2) = m1.addingReportingOverflow(d)
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
            guard isDigit(i) else { throw unexpected("a digit in the exponent") }
            while isDigit(i) {
                if exponent < 100_000_000 { exponent = exponent &* 10 &+ Int(p[i] &- UInt8(ascii: "0")) }
                i &+= 1
            }
            if expNegative { exponent = -exponent }
        }

        if isInteger && !truncated {
            if !negative {
                if mantissa <= UInt64(Int64.max) { return .int(Int64(mantissa)) }
            } else if mantissa == 0 {
                return .double(-0.0)
            } else if mantissa <= UInt64(Int64.max) + 1 {
                return .int(Int64(truncatingIfNeeded: 0 &- mantissa))
            }
        }
        // A clamped exponent (100,000,000 or more in magnitude) is no longer exact: strtod.
        if !truncated && exponent > -100_000_000 && exponent < 100_000_000 {
            if mantissa == 0 { return .double(negative ? -0.0 : 0.0) }
            // Clinger: both operands exact, so one correctly rounded operation.
            let e10 = exponent &- fractionDigits
            if mantissa <= 1 << 53 && e10 >= -22 && e10 <= 22 {
                var d = Double(mantissa)
                d = e10 < 0 ? d / exactPowersOfTen[-e10] : d * exactPowersOfTen[e10]
                return .double(negative ? -d : d)
            }
            // Eisel-Lemire: exact unless the value is too close to a halfway point between
            // two doubles, or infinite (strtod decides those and reports the overflow).
            if let d = decimalToDouble(significand: mantissa, exponent: e10) {
                return .double(negative ? -d : d)
            }
        }
        return try slowDouble(start)
    }

    /// Correctly rounded conversion of the token `p[start..<i]` (already validated) through
    /// the standard library's C-locale `strtod`, which ignores the process locale.
    mutating func slowDouble(_ start: Int) throws -> Value {
        let token = String(decoding: UnsafeBufferPointer(start: p + start, count: i &- start), as: UTF8.self)
        guard let d = Double(token) else {
            throw error("invalid number", at: start)
        }
        guard d.isFinite else {
            let shown = token.utf8.count <= 40 ? token : String(token.prefix(37)) + "..."
            throw error("number \(shown) is too large for a double", at: start)
        }
        return .double(d)
    }

    // MARK: Strings

    /// Nonzero when one of the 8 bytes needs a closer look: `"`, `\`, below 0x20, or 0x80
    /// and above.
    @inline(__always)
    static func stringStopMask(_ w: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let q = w ^ (ones &* 0x22)
        let b = w ^ (ones &* 0x5C)
        let m = ((w &- ones &* 0x20) & ~w) | ((q &- ones) & ~q) | ((b &- ones) & ~b) | w
        return m & 0x8080_8080_8080_8080
    }

    /// 0xFF in the lanes that hold `"`, `\` or a byte below 0x20, 0 elsewhere.
    @inline(__always)
    static func stringStops(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> {
        let m = (v .< Wide.splat(0x20)) .| (v .== Wide.splat(0x22)) .| (v .== Wide.splat(0x5C))
        return unsafeBitCast(m, to: SIMD16<UInt8>.self)
    }

    /// Steps `i` over string bytes up to the next quote, backslash or control byte, 16 at
    /// a time: past whole blocks, then to the stop inside the last one when the bytes before
    /// it are ASCII. A run with bytes of 0x80 and above has its UTF-8 checked in one vector
    /// pass (`firstInvalidUTF8Offset`) and ends at a sequence boundary; if the check fails,
    /// `i` goes back to the run's start, and the byte loop of the caller scans it again and
    /// names the first problem, as without this pass.
    @inline(__always)
    mutating func skipPlainRun() {
        let start = i
        guard i &+ 16 <= n else { return }
        var seen = SIMD16<UInt8>()
        while i &+ 16 <= n {
            let v = Wide.load(p + i)
            let stops = JSONReader.stringStops(v)
            if Wide.anyNonzero(stops) {
                let (s0, s1) = Wide.halves(stops)
                let k = s0 != 0 ? s0.trailingZeroBitCount >> 3 : 8 &+ (s1.trailingZeroBitCount >> 3)
                let (v0, v1) = Wide.halves(v)
                let before = k < 8 ? v0 & ((1 << (UInt64(k) << 3)) &- 1)
                    : v0 | (k == 8 ? 0 : v1 & ((1 << (UInt64(k &- 8) << 3)) &- 1))
                if before & 0x8080_8080_8080_8080 == 0 { i &+= k }
                break
            }
            seen |= v
            i &+= 16
        }
        if i > start && Wide.anyHigh(seen) {  // an ASCII run needs no UTF-8 check
            var end = i
            var back = 0
            while back < 3 && end < n && end > start && p[end] & 0xC0 == 0x80 {
                end &-= 1
                back &+= 1
            }
            let run = UnsafeBufferPointer(start: p + start, count: end &- start)
            i = firstInvalidUTF8Offset(run) == nil ? end : start
        }
    }

    /// Parses a string; `i` is at its opening quote, and ends after the closing one.
    mutating func string() throws -> String {
        let start = try scanString()
        guard start >= 0 else {  // escaped: the text is in `scratch`
            try charge(scratch.count)
            return try scratch.toString()
        }
        try charge(i &- start)
        try Memory.probe(i &- start, "a string of \(i &- start) bytes")
        let s = String(decoding: UnsafeBufferPointer(start: p + start, count: i &- start), as: UTF8.self)
        i &+= 1
        return s
    }

    /// Scans a string whose opening quote is at `i`, checking its UTF-8 and escapes. A string
    /// without escapes returns where its text starts and leaves `i` at the closing quote
    /// (the text is `p[start..<i]`). A string with escapes returns -1, with the unescaped
    /// text in `scratch` from `scratchStart` on and `i` after the closing quote. (`string()` and `JSONDocument`.)
    @inline(__always)
    mutating func scanString() throws -> Int {
        let open = i
        i &+= 1
        let start = i
        skipPlainRun()
        while true {
            while i &+ 8 <= n && JSONReader.stringStopMask(UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)) == 0 {
                i &+= 8
            }
            guard i < n else { throw unterminated(open) }
            let c = p[i]
            if c == asciiQuote { return start }
            if c == asciiBackslash {
                scratch.truncate(to: scratchStart)
                scratch.append(UnsafeBufferPointer(start: p + start, count: i &- start))
                try unescapeIntoScratch(open)
                return -1
            }
            if c < 0x20 { throw controlCharacter() }
            if c >= 0x80 { try skipUTF8Sequence() } else { i &+= 1 }
        }
    }

    func unterminated(_ open: Int) -> AFSError {
        error("unterminated string (opened at byte offset \(open)): expected '\"', found the end of the input", at: n)
    }

    func controlCharacter() -> AFSError {
        let c = p[i]
        let h = String(c, radix: 16, uppercase: true)
        return error("unescaped control character 0x\(c < 16 ? "0" : "")\(h) in a string", at: i)
    }

    /// Checks the UTF-8 sequence at `i` (a lead byte of 0x80 or above) and steps over it.
    @inline(__always)
    mutating func skipUTF8Sequence() throws {
        let c = p[i]
        var len = 0
        var lo: UInt8 = 0x80, hi: UInt8 = 0xBF  // allowed range of the second byte
        switch c {
        case 0xC2...0xDF: len = 2
        case 0xE0: len = 3; lo = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: len = 3
        case 0xED: len = 3; hi = 0x9F  // no UTF-16 surrogates
        case 0xF0: len = 4; lo = 0x90
        case 0xF1...0xF3: len = 4
        case 0xF4: len = 4; hi = 0x8F  // nothing above U+10FFFF
        default: throw error("invalid UTF-8 in a string (\(found(i)))", at: i)
        }
        guard i &+ len <= n else { throw error("invalid UTF-8 in a string (truncated sequence)", at: i) }
        let c1 = p[i &+ 1]
        guard c1 >= lo && c1 <= hi else { throw error("invalid UTF-8 in a string (\(found(i)) followed by \(found(i + 1)))", at: i) }
        var k = 2
        while k < len {
            guard p[i &+ k] & 0xC0 == 0x80 else {
                throw error("invalid UTF-8 in a string (bad continuation \(found(i + k)))", at: i)
            }
            k &+= 1
        }
        i &+= len
    }

    /// The rest of a string with escapes, unescaped and appended to `scratch`; `i` ends
    /// after the closing quote. (`JSONToPickle` takes the bytes from `scratch` directly.)
    mutating func unescapeIntoScratch(_ open: Int) throws {
        while true {
            let runStart = i
            skipPlainRun()
            while i &+ 8 <= n && JSONReader.stringStopMask(UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)) == 0 {
                i &+= 8
            }
            var c: UInt8 = 0
            while i < n {
                c = p[i]
                if c == asciiQuote || c == asciiBackslash || c < 0x20 { break }
                if c >= 0x80 { try skipUTF8Sequence() } else { i &+= 1 }
            }
            if i > runStart {
                scratch.append(UnsafeBufferPointer(start: p + runStart, count: i &- runStart))
            }
            guard i < n else { throw unterminated(open) }
            if c == asciiQuote {
                i &+= 1
                return
            }
            if c < 0x20 { throw controlCharacter() }
            // A backslash.
            let escapeAt = i
            guard i &+ 1 < n else { i &+= 1; throw unterminated(open) }
            let e = p[i &+ 1]
            i &+= 2
            switch e {
            case UInt8(ascii: "\""): scratch.append(0x22)
            case UInt8(ascii: "\\"): scratch.append(0x5C)
            case UInt8(ascii: "/"): scratch.append(0x2F)
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar <= 0xDBFF {
                    guard i &+ 1 < n && p[i] == asciiBackslash && p[i &+ 1] == UInt8(ascii: "u") else {
                        throw error("invalid \\u escape: a high surrogate not followed by a \\u low surrogate", at: escapeAt)
                    }
                    i &+= 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low <= 0xDFFF else {
                        throw error("invalid \\u escape: a high surrogate followed by \\u\(hexText(low)), not a low surrogate", at: escapeAt)
                    }
                    scalar = 0x10000 &+ ((scalar &- 0xD800) << 10) &+ (low &- 0xDC00)
                } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                    throw error("invalid \\u escape: a lone low surrogate", at: escapeAt)
                }
                appendUTF8(scalar)
            default:
                i = escapeAt &+ 1
                throw error("invalid escape in a string: expected one of \" \\ / b f n r t u after '\\', found \(found(i))", at: escapeAt)
            }
        }
    }

    func hexText(_ v: UInt32) -> String {
        let h = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - h.count)) + h
    }

    /// Reads 4 hex digits at `i`.
    mutating func hex4() throws -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard i < n else { throw unexpected("4 hex digits after \\u") }
            let c = p[i]
            let d: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c &- UInt8(ascii: "a") &+ 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c &- UInt8(ascii: "A") &+ 10
            default: throw unexpected("4 hex digits after \\u")
            }
            v = v << 4 | UInt32(d)
            i &+= 1
        }
        return v
    }

    mutating func appendUTF8(_ s: UInt32) {
        if s < 0x80 {
            scratch.append(UInt8(s))
        } else if s < 0x800 {
            scratch.append(UInt8(0xC0 | (s >> 6)))
            scratch.append(UInt8(0x80 | (s & 0x3F)))
        } else if s < 0x10000 {
            scratch.append(UInt8(0xE0 | (s >> 12)))
            scratch.append(UInt8(0x80 | ((s >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (s & 0x3F)))
        } else {
            scratch.append(UInt8(0xF0 | (s >> 18)))
            scratch.append(UInt8(0x80 | ((s >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((s >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (s & 0x3F)))
        }
    }
}
