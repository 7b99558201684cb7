/// JSON text straight to the pickle subset, without building a `Value` tree: the JSON
/// response serializer's path to Python (one pass, no allocation per node).
///
/// It runs the JSON reader's own scanning functions (strings, numbers, literals,
/// whitespace) and its structure rules in the same order, so it accepts exactly the texts
/// `JSONParser.parse` accepts and fails with the same messages at the same offsets. What
/// Python gets is what `PickleWriter` writes for the parsed tree: integers beyond int64 are
/// the nearest double, as Foundation (and the tree) reads them, unless `exactIntegers` asks
/// for the exact `int` (`LONG1`/`LONG4`, as `json.loads` keeps them). Dictionary keys are written once and then referred
/// to through the pickle memo (`MEMOIZE`, `BINGET`), so Python shares one `str` per key as
/// `json.loads` does (short string values too, up to 24 bytes); a repeated key in one object keeps its first position and takes the
/// last value in Python's `dict` too.
public enum JSONToPickle {
    /// String values up to this many bytes are memoized like keys.
    static let sharedStringLimit = 24

    /// The pickle of the JSON `text` in `malloc` memory (free with `free`) and its length.
    /// - Throws: `.invalidJSON` as `JSONParser.parse(_:allowFragments:)`.
    public static func transcode(_ text: UnsafeBufferPointer<UInt8>, allowFragments: Bool,
                                 exactIntegers: Bool = false) throws -> (UnsafeMutablePointer<UInt8>, Int) {
        guard text.baseAddress != nil, text.count > 0 else {
            throw AFSError(.invalidJSON, "no JSON value: the input is empty at byte offset 0")
        }
        // Stage 1 and a walk of its index (JSONToPickleIndexed.swift); the reader below
        // names any problem.
        if let done = try transcodeIndexed(text, allowFragments: allowFragments, exactIntegers: exactIntegers) {
            return done
        }
        return try transcodeWithReader(text, allowFragments: allowFragments, exactIntegers: exactIntegers)
    }

    /// `transcode` by `JSONReader`, value by value (the reference; names every problem).
    static func transcodeWithReader(_ text: UnsafeBufferPointer<UInt8>, allowFragments: Bool,
                                    exactIntegers: Bool) throws -> (UnsafeMutablePointer<UInt8>, Int) {
        guard let base = text.baseAddress, text.count > 0 else {
            throw AFSError(.invalidJSON, "no JSON value: the input is empty at byte offset 0")
        }
        var w = PickleWriter(capacity: text.count + text.count / 4 + 64)
        var reader = JSONReader(base, text.count, maxDepth: JSONParser.defaultMaxDepth)
        try reader.transcode(into: &w, allowFragments: allowFragments, exactIntegers: exactIntegers)
        return try w.take()
    }

    /// `transcode` into a byte array (tests, fuzzing).
    public static func pickle(_ text: [UInt8], allowFragments: Bool = true, exactIntegers: Bool = false) throws -> [UInt8] {
        let (p, n) = try text.withUnsafeBufferPointer {
            try transcode($0, allowFragments: allowFragments, exactIntegers: exactIntegers)
        }
        defer { free(p) }
        return Array(UnsafeBufferPointer(start: p, count: n))
    }
}

extension JSONReader {
    /// `document(allowFragments:)` writing pickle opcodes instead of values.
    mutating func transcode(into w: inout PickleWriter, allowFragments: Bool, exactIntegers: Bool) throws {
        try startDocument(allowFragments: allowFragments)
        try transcodeTree(&w, exactIntegers: exactIntegers)
        skipWhitespace()
        if i < n {
            throw error("unexpected \(found(i)) after the JSON value", at: i)
        }
    }

    /// `tree()` writing pickle opcodes: a container is `EMPTY_DICT`/`EMPTY_LIST`, then (when
    /// not empty) `MARK`, its members, `SETITEMS`/`APPENDS`.
    mutating func transcodeTree(_ w: inout PickleWriter, exactIntegers: Bool) throws {
        var open: [Bool] = []  // isObject, innermost last
        open.reserveCapacity(16)
        var keyMemo = KeyMemo()
        outer: while true {
            guard i < n else { throw unexpected("a JSON value") }
            switch p[i] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = p[i] == UInt8(ascii: "{")
                if open.count >= maxDepth { throw error("nesting deeper than \(maxDepth) levels", at: i) }
                i &+= 1
                skipWhitespace()
                w.out.append(isObject ? Pickle.EMPTY_DICT : Pickle.EMPTY_LIST)
                if i < n && p[i] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    i &+= 1
                } else {
                    w.out.append(Pickle.MARK)
                    open.append(isObject)
                    if isObject { try transcodeKey(&w, &keyMemo, afterComma: false) }
                    continue outer
                }
            case 0x22:
                // Short strings (enumerations, tags, names) go through the memo like keys:
                // Python then shares one str per distinct text instead of making one each.
                let inInput = UnsafePointer(p + (i &+ 1))
                try transcodeString { bytes in
                    if bytes.count <= JSONToPickle.sharedStringLimit && bytes.baseAddress == inInput {
                        if let index = keyMemo.find(bytes) {
                            w.memoGet(index)
                        } else {
                            w.stringBytes(bytes)
                            if keyMemo.hasRoom, let index = w.memoize() { keyMemo.insert(bytes, index) }
                        }
                    } else {
                        w.stringBytes(bytes)
                    }
                }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let start = i
                switch try number() {
                case .int(let x): w.int(x)
                case .double(let d):
                    // Exact up to 4,300 digits (CPython's own limit for int(str)): the conversion is
                    // quadratic in the digits, so longer literals stay doubles.
                    if exactIntegers && i - start <= 4301 && isIntegerLiteral(start, i) && !(i - start == 2 && p[start] == UInt8(ascii: "-")) {
                        w.bigInt(decimal: UnsafeBufferPointer(start: p + start, count: i - start))
                    } else {
                        w.double(d)
                    }
                default: break
                }
            case UInt8(ascii: "t"):
                try literal("true")
                w.bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                w.bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                w.out.append(Pickle.NONE)
            default:
                throw unexpected("a JSON value")
            }

            // A value is complete: close the containers that end here.
            while let isObject = open.last {
                if try nextMember(inObject: isObject) {
                    if isObject { try transcodeKey(&w, &keyMemo, afterComma: true) }
                    continue outer
                }
                w.out.append(isObject ? Pickle.SETITEMS : Pickle.APPENDS)
                open.removeLast()
            }
            return
        }
    }

    /// Digits only, after an optional minus: an integer literal (no fraction, no exponent).
    func isIntegerLiteral(_ start: Int, _ end: Int) -> Bool {
        var k = start
        if k < end && p[k] == UInt8(ascii: "-") { k &+= 1 }
        while k < end {
            if p[k] &- UInt8(ascii: "0") >= 10 { return false }
            k &+= 1
        }
        return true
    }

    /// `key(afterComma:)` writing the key: the first time as a string plus `MEMOIZE`, then
    /// as `BINGET`/`LONG_BINGET` of that memo entry.
    mutating func transcodeKey(_ w: inout PickleWriter, _ memo: inout KeyMemo, afterComma: Bool) throws {
        guard i < n && p[i] == 0x22 else {
            throw unexpected(afterComma ? "a string key after ',' (trailing commas are not allowed)" : "a string key or '}'")
        }
        let inInput = UnsafePointer(p + (i &+ 1))
        try transcodeString { bytes in
            // Keys without escapes are looked up by their bytes in the input.
            let plain = bytes.baseAddress == inInput
            if plain, let index = memo.find(bytes) {
                w.memoGet(index)
            } else {
                w.stringBytes(bytes)
                if plain && memo.hasRoom, let index = w.memoize() { memo.insert(bytes, index) }
            }
        }
        skipWhitespace()
        guard i < n && p[i] == UInt8(ascii: ":") else { throw unexpected("':' after an object key") }
        i &+= 1
        skipWhitespace()
    }

    /// `string()` handing the UTF-8 bytes to `emit` (straight from the input when the
    /// string has no escapes).
    mutating func transcodeString(_ emit: (UnsafeBufferPointer<UInt8>) -> Void) throws {
        let start = try scanString()
        if start >= 0 {
            emit(UnsafeBufferPointer(start: p + start, count: i &- start))
            i &+= 1
        } else {
            try scratch.withBytes { emit($0) }
        }
    }
}

extension PickleWriter {
    /// A `str` from UTF-8 bytes.
    mutating func stringBytes(_ u: UnsafeBufferPointer<UInt8>) {
        header(u.count, short: Pickle.SHORT_BINUNICODE, long: Pickle.BINUNICODE, huge: Pickle.BINUNICODE8)
        out.append(u)
    }

    /// `MEMOIZE` for the object just written; its memo index, or nil once the memo holds
    /// 2^32 entries (the object is then written again each time).
    mutating func memoize() -> UInt32? {
        guard memoCount < Int(UInt32.max) else { return nil }
        out.append(Pickle.MEMOIZE)
        memoCount += 1
        return UInt32(memoCount - 1)
    }

    mutating func memoGet(_ index: UInt32) {
        guard out.reserve(5) else { return }  // out of memory: take() reports it
        if index < 256 {
            out.put(Pickle.BINGET)
            out.put(UInt8(index))
        } else {
            out.put(Pickle.LONG_BINGET)
            for k in 0..<4 { out.put(UInt8(truncatingIfNeeded: index >> (8 * UInt32(k)))) }
        }
    }

    /// An integer given as decimal digits (optional minus), any size: `LONG1`/`LONG4` with
    /// its little-endian two's complement.
    mutating func bigInt(decimal text: UnsafeBufferPointer<UInt8>) {
        var negative = false
        var digits = text[...]
        if digits.first == UInt8(ascii: "-") {
            negative = true
            digits = digits.dropFirst()
        }
        // Magnitude, little-endian base 256: multiply by 10 and add each digit.
        var mag: [UInt8] = [0]
        for d in digits {
            var carry = Int(d &- UInt8(ascii: "0"))
            for k in mag.indices {
                let v = Int(mag[k]) * 10 + carry
                mag[k] = UInt8(truncatingIfNeeded: v)
                carry = v >> 8
            }
            while carry > 0 {
                mag.append(UInt8(truncatingIfNeeded: carry))
                carry >>= 8
            }
        }
        if negative {  // two's complement: invert and add one
            var carry = 1
            for k in mag.indices {
                let v = Int(~mag[k]) + carry
                mag[k] = UInt8(truncatingIfNeeded: v)
                carry = v >> 8
            }
            if mag.last! & 0x80 == 0 { mag.append(0xFF) }
        } else if mag.last! & 0x80 != 0 {
            mag.append(0)
        }
        // Drop redundant sign bytes.
        let fill: UInt8 = negative ? 0xFF : 0
        while mag.count > 1 && mag[mag.count - 1] == fill && (mag[mag.count - 2] & 0x80 != 0) == negative {
            mag.removeLast()
        }
        guard out.reserve(5 + mag.count) else { return }  // out of memory: take() reports it
        if mag.count < 256 {
            out.put(Pickle.LONG1)
            out.put(UInt8(mag.count))
        } else {
            out.put(Pickle.LONG4)
            for k in 0..<4 { out.put(UInt8(truncatingIfNeeded: mag.count >> (8 * k))) }
        }
        for b in mag { out.put(b) }
    }
}

/// FNV-1a over `b`, folded: the hash of the byte-keyed tables (`KeyMemo`, a parsed
/// document's member index).
@inline(__always)
func byteHash(_ b: UnsafeBufferPointer<UInt8>) -> Int {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for c in b { h = (h ^ UInt64(c)) &* 0x100_0000_01b3 }
    return Int(truncatingIfNeeded: h ^ (h >> 29))
}

/// The memo indices of the dictionary keys written so far, by their bytes in the input (an
/// open-addressing table: no allocation per key, none at all for documents without
/// objects). At most 65,536 distinct keys are remembered; later new keys are written out
/// each time.
struct KeyMemo {
    private struct Entry {
        var start: UnsafePointer<UInt8>
        var length: Int
        var index: UInt32
    }
    private var slots: [Int32] = []
    private var entries: [Entry] = []

    @inline(__always)
    private static func hash(_ b: UnsafeBufferPointer<UInt8>) -> Int { byteHash(b) }

    func find(_ b: UnsafeBufferPointer<UInt8>) -> UInt32? {
        guard !slots.isEmpty else { return nil }
        let mask = slots.count - 1
        var s = KeyMemo.hash(b) & mask
        while true {
            let e = Int(slots[s])
            if e < 0 { return nil }
            let entry = entries[e]
            if entry.length == b.count && (b.count == 0 || memcmp(entry.start, b.baseAddress!, b.count) == 0) {
                return entry.index
            }
            s = (s &+ 1) & mask
        }
    }

    /// Whether another text can be remembered (at most 65,536).
    var hasRoom: Bool { entries.count < 65536 }

    mutating func insert(_ b: UnsafeBufferPointer<UInt8>, _ index: UInt32) {
        guard hasRoom, let base = b.baseAddress else { return }
        if slots.isEmpty || (entries.count + 1) * 2 > slots.count { grow() }
        let mask = slots.count - 1
        var s = KeyMemo.hash(b) & mask
        while slots[s] >= 0 { s = (s &+ 1) & mask }
        slots[s] = Int32(entries.count)
        entries.append(Entry(start: base, length: b.count, index: index))
    }

    private mutating func grow() {
        let size = Swift.max(16, slots.count * 2)
        slots = Array(repeating: -1, count: size)
        entries.reserveCapacity(size / 2)  // room until the next growth: one allocation
        let mask = size - 1
        for e in entries.indices {
            var s = KeyMemo.hash(UnsafeBufferPointer(start: entries[e].start, count: entries[e].length)) & mask
            while slots[s] >= 0 { s = (s &+ 1) & mask }
            slots[s] = Int32(e)
        }
    }
}
