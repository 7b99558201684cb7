// Shared by every fuzz target (compiled into each target binary next to its own file).
//
// - `FuzzInput`: reads decisions from the fuzzer's bytes (0 once they run out, so every
//   input, including the empty one, is a complete script).
// - `TreeGen`: a small deterministic parameters-tree generator driven by those bytes.
// - `same`, `normalizedForJSON`, `sortedKeys`: strict comparisons of trees.
// - `require`: a violated property ends the process through `fatalError`, which libFuzzer
//   records as a crash (and saves the input).
// - `ErrorBox`: the `afs_error` passed to a C API call, to tell an untouched one apart.
@testable import AFSerialization
import CAFSerialization

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Failing

/// Checks a property; on violation prints `message` and traps.
@inline(__always)
func require(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition { fail(message(), file: file, line: line) }
}

func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fputs("\n=== fuzz property violated (\(file):\(line)): \(message)\n", stderr)
    fatalError("fuzz property violated: \(message)", file: file, line: line)
}

/// Bytes shown as text with non-printable bytes as `\xNN`, shortened.
func show(_ bytes: some Collection<UInt8>, max: Int = 400) -> String {
    var s = "\""
    for (i, b) in bytes.enumerated() {
        if i == max { s += "…(\(bytes.count) bytes)"; break }
        if b >= 0x20 && b < 0x7F && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") {
            s.unicodeScalars.append(Unicode.Scalar(b))
        } else {
            s += "\\x" + (b < 16 ? "0" : "") + String(b, radix: 16)
        }
    }
    return s + "\""
}

func show(_ v: Value) -> String {
    let s = "\(v)"
    return s.utf8.count > 2000 ? String(decoding: Array(s.utf8.prefix(2000)), as: UTF8.self) + "…" : s
}

// MARK: - Reading decisions from the input

struct FuzzInput {
    let p: UnsafePointer<UInt8>?
    let n: Int
    var i = 0

    init(_ p: UnsafePointer<UInt8>?, _ n: Int) {
        self.p = p
        self.n = n
    }

    var remaining: Int { Swift.max(n - i, 0) }
    var isExhausted: Bool { i >= n }

    mutating func byte() -> UInt8 {
        guard i < n, let p else { return 0 }
        defer { i += 1 }
        return p[i]
    }

    mutating func u16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }
    mutating func u32() -> UInt32 { UInt32(u16()) | UInt32(u16()) << 16 }
    mutating func u64() -> UInt64 { UInt64(u32()) | UInt64(u32()) << 32 }

    /// 0 ..< k (k ≥ 1), from one byte when k ≤ 256, else two or four.
    mutating func below(_ k: Int) -> Int {
        precondition(k >= 1)
        if k <= 256 { return Int(byte()) % k }
        if k <= 65536 { return Int(u16()) % k }
        return Int(u32() % UInt32(truncatingIfNeeded: k))
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    /// True with probability about 1/k.
    mutating func oneIn(_ k: Int) -> Bool { below(k) == 0 }

    /// Up to `max` raw bytes: a length byte, then that many bytes (fewer at the end).
    mutating func bytes(max: Int) -> [UInt8] {
        let want = below(Swift.min(max, 255) + 1)
        var out: [UInt8] = []
        out.reserveCapacity(want)
        for _ in 0..<Swift.min(want, remaining) { out.append(byte()) }
        return out
    }
}

// MARK: - Generating trees

/// Strings that matter to at least one writer: escaping sets, XML specials and forbidden
/// characters, JSON escapes, brackets, multipart delimiters, non-BMP characters.
let interestingPieces: [String] = [
    "a", "Z", "0", "9", " ", "+", "%", "%20", "&", "=", "[", "]", "[]", "/", "?", "#", ":",
    "\"", "\\", "'", "\r", "\n", "\r\n", "\t", "\u{0}", "\u{1}", "\u{8}", "\u{B}", "\u{C}",
    "\u{1F}", "\u{7F}", "\u{80}", "é", "e\u{301}", "\u{2028}", "\u{FEFF}", "\u{FFFD}",
    "\u{FFFE}", "\u{FFFF}", "\u{E000}", "👴🏿", "𝄞", "\u{10FFFF}", "~", ".", "-", "_", "<", ">",
    "&amp;", "]]>", "<![CDATA[", "--", "--b", "\r\n--", "name", "key", "user[name]", "\\u0000",
    "1", "-0", "1e5", "true", "null", "nan", "inf", "日本",
]

struct TreeGen {
    /// Which kinds may appear (the others are replaced by a string).
    var sets = true
    var data = true
    var null = true
    var nonFinite = true
    var maxDepth = 6
    var maxCount = 8
    /// Nodes left to create; bounds the size of a tree whatever the input.
    var budget = 300
    /// Allow an occasional chain of 500-600 containers (depth limits of writers and readers).
    var deepChains = false

    mutating func string(_ inp: inout FuzzInput) -> String {
        let pieces = inp.below(6)
        var s = ""
        for _ in 0..<pieces {
            let sel = inp.byte()
            switch sel {
            case 0..<120:
                s += interestingPieces[Int(sel) % interestingPieces.count]
            case 120..<200:
                // Printable ASCII runs.
                let k = 1 + inp.below(8)
                for _ in 0..<k { s.unicodeScalars.append(Unicode.Scalar(0x20 + inp.byte() % 95)) }
            case 200..<230:
                // One scalar from the whole range (surrogates become U+FFFD).
                let v = inp.u32() % 0x110000
                s.unicodeScalars.append(Unicode.Scalar(v) ?? "\u{FFFD}")
            default:
                // Raw bytes, repaired into UTF-8.
                s += String(decoding: inp.bytes(max: 16), as: UTF8.self)
            }
        }
        return s
    }

    mutating func int(_ inp: inout FuzzInput) -> Int64 {
        switch inp.below(8) {
        case 0: return Int64.min
        case 1: return Int64.max
        case 2: return Int64(1) << 53 + Int64(inp.below(3)) - 1
        case 3: return Int64(bitPattern: inp.u64())
        case 4: return -Int64(inp.u32())
        default: return Int64(Int8(bitPattern: inp.byte()))
        }
    }

    static let specialDoubles: [Double] = [
        0, -0.0, 1, -1, 0.1, 0.5, 1e16, 1e15, 1e-7, 1e300, -1e-300, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
        .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNormalMagnitude,
        9007199254740992, 9007199254740994, 9.2233720368547758e18, -9.2233720368547758e18,
        123456789012345, 0.30000000000000004, 1.5, 100, 1e21, 1e22, 1e23, 2.5e-5,
    ]

    mutating func double(_ inp: inout FuzzInput) -> Double {
        var d: Double
        switch inp.below(6) {
        case 0: d = Double(bitPattern: inp.u64())
        case 1: d = TreeGen.specialDoubles[inp.below(TreeGen.specialDoubles.count)]
        case 2: d = Double(Int64(bitPattern: inp.u64()) >> inp.below(64))
        case 3: d = Double(Int32(bitPattern: inp.u32())) / Double(1 << inp.below(40))
        case 4: d = [Double.nan, .infinity, -.infinity, -Double.nan][inp.below(4)]
        default: d = Double(Int16(bitPattern: inp.u16())) * [1, 0.1, 0.001, 1e10, 1e-10][inp.below(5)]
        }
        if !nonFinite && !d.isFinite { d = 0.25 }
        return d
    }

    /// A random tree; containers only while `depth < maxDepth`.
    mutating func value(_ inp: inout FuzzInput, depth: Int = 0) -> Value {
        budget -= 1
        let sel = inp.byte()
        if deepChains && sel == 255 && depth == 0 {
            return deepChain(&inp)
        }
        let containerOK = depth < maxDepth && budget > 0
        switch sel % 16 {
        case 0: return null ? .null : .string("")
        case 1: return .bool(inp.bool())
        case 2, 3: return .int(int(&inp))
        case 4, 5: return .double(double(&inp))
        case 6, 7, 8: return .string(string(&inp))
        case 9: return data ? .data(inp.bytes(max: 40)) : .string(string(&inp))
        case 10...11 where containerOK: return .array(members(&inp, depth: depth))
        case 12...14 where containerOK: return dict(&inp, depth: depth)
        case 15 where containerOK:
            if !sets { return .array(members(&inp, depth: depth)) }
            return .set(ValueSet(members(&inp, depth: depth)))
        default: return .string(string(&inp))
        }
    }

    mutating func members(_ inp: inout FuzzInput, depth: Int) -> [Value] {
        let k = inp.below(maxCount + 1)
        var a: [Value] = []
        for _ in 0..<k where budget > 0 && !inp.isExhausted { a.append(value(&inp, depth: depth + 1)) }
        return a
    }

    mutating func dict(_ inp: inout FuzzInput, depth: Int) -> Value {
        let k = inp.below(maxCount + 1)
        var d = ValueDict()
        for _ in 0..<k where budget > 0 && !inp.isExhausted {
            let key = string(&inp)
            d[key] = value(&inp, depth: depth + 1)
        }
        return .dict(d)
    }

    /// A chain of 500-600 containers (arrays or one-key dictionaries) around a scalar.
    mutating func deepChain(_ inp: inout FuzzInput) -> Value {
        let n = 500 + inp.below(101)
        let useDict = inp.bool()
        var v: Value = .int(Int64(n))
        for _ in 0..<n {
            if useDict {
                v = .dict(ValueDict([("k", v)]))
            } else {
                v = .array([v])
            }
        }
        return v
    }
}

// MARK: - Comparing trees

/// Strict equality: same kinds, doubles bit for bit (any NaN equals any NaN), strings byte
/// for byte, dictionaries with the same keys in the same order when `orderedDicts`, arrays
/// in order, sets as sets (`Value ==`).
func same(_ a: Value, _ b: Value, orderedDicts: Bool = true) -> Bool {
    switch (a, b) {
    case (.double(let x), .double(let y)):
        return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
    case (.array(let x), .array(let y)):
        guard x.count == y.count else { return false }
        for i in x.indices where !same(x[i], y[i], orderedDicts: orderedDicts) { return false }
        return true
    case (.dict(let x), .dict(let y)):
        guard x.count == y.count else { return false }
        if orderedDicts {
            for i in 0..<x.count {
                guard utf8Equal(x.keys[i], y.keys[i]), same(x.values[i], y.values[i], orderedDicts: true) else { return false }
            }
        } else {
            for (k, v) in x.pairs {
                guard let w = y[k], same(v, w, orderedDicts: false) else { return false }
            }
        }
        return true
    default:
        return a == b
    }
}

/// What JSON gives back for a tree: a double whose text (`formatDouble`) is an integer
/// within Int64 (`1.0` is written `1`) reads back as that integer; `-0` stays a double.
func normalizedForJSON(_ v: Value) -> Value {
    switch v {
    case .double(let d):
        let t = formatDouble(d)
        if t != "-0", t.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "-") }), let i = Int64(t) {
            return .int(i)
        }
        return v
    case .array(let a): return .array(a.map(normalizedForJSON))
    case .dict(let d): return .dict(ValueDict(d.pairs.map { ($0, normalizedForJSON($1)) }))
    case .set(let s): return .set(ValueSet(s.members.map(normalizedForJSON)))
    default: return v
    }
}

/// The tree with every dictionary's keys in ascending Unicode-scalar (UTF-8 byte) order.
func sortedKeys(_ v: Value) -> Value {
    switch v {
    case .array(let a): return .array(a.map(sortedKeys))
    case .dict(let d):
        let order = d.keys.indices.sorted { d.keys[$0].utf8.lexicographicallyPrecedes(d.keys[$1].utf8) }
        return .dict(ValueDict(order.map { (d.keys[$0], sortedKeys(d.values[$0])) }))
    case .set(let s): return .set(ValueSet(s.members.map(sortedKeys)))
    default: return v
    }
}

/// The tree with every date in whole seconds (what an XML property list keeps of it).
func wholeSecondDates(_ v: Value) -> Value {
    switch v {
    case .array(let a): return .array(a.map(wholeSecondDates))
    case .dict(let d): return .dict(ValueDict(d.pairs.map { ($0.0, wholeSecondDates($0.1)) }))
    case .set(let s): return .set(ValueSet(s.members.map(wholeSecondDates)))
    case .date(let t): return .date(t.rounded(.down))
    default: return v
    }
}

/// Whether any node of the tree satisfies `test`, keys excluded.
func anyNode(_ v: Value, _ test: (Value) -> Bool) -> Bool {
    if test(v) { return true }
    switch v {
    case .array(let a): return a.contains { anyNode($0, test) }
    case .dict(let d): return d.values.contains { anyNode($0, test) }
    case .set(let s): return s.members.contains { anyNode($0, test) }
    default: return false
    }
}

/// Every dictionary key of the tree.
func allKeys(_ v: Value) -> [String] {
    switch v {
    case .array(let a): return a.flatMap(allKeys)
    case .dict(let d): return d.keys + d.values.flatMap(allKeys)
    case .set(let s): return s.members.flatMap(allKeys)
    default: return []
    }
}

// MARK: - Bytes

/// Decodes `%XX` (either case) and, with `plus`, `+` as a space; nil for a malformed `%`.
func percentDecode(_ s: some Collection<UInt8>, plus: Bool) -> [UInt8]? {
    func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
    var out: [UInt8] = []
    out.reserveCapacity(s.count)
    var it = Array(s)[...]
    while let c = it.popFirst() {
        if c == UInt8(ascii: "%") {
            guard let h = it.popFirst(), let l = it.popFirst(), let hv = hex(h), let lv = hex(l) else { return nil }
            out.append(hv << 4 | lv)
        } else if plus && c == UInt8(ascii: "+") {
            out.append(0x20)
        } else {
            out.append(c)
        }
    }
    return out
}

/// Whether `a` contains `needle` as a contiguous run.
func contains(_ a: some Collection<UInt8>, _ needle: [UInt8]) -> Bool {
    let hay = Array(a)
    guard !needle.isEmpty else { return true }
    guard hay.count >= needle.count else { return false }
    for i in 0...(hay.count - needle.count) where hay[i] == needle[0] {
        if hay[i..<(i + needle.count)].elementsEqual(needle) { return true }
    }
    return false
}

/// The number N of a message ending "… offset N" or "… offset N)".
func trailingOffset(_ message: String) -> Int? {
    var digits: [UInt8] = []
    var bytes = Array(message.utf8)
    while let last = bytes.last, last == UInt8(ascii: ")") || last == UInt8(ascii: ".") { bytes.removeLast() }
    while let last = bytes.last, last >= 0x30 && last <= 0x39 { digits.insert(last, at: 0); bytes.removeLast() }
    guard !digits.isEmpty, String(decoding: bytes, as: UTF8.self).hasSuffix("offset ") else { return nil }
    return Int(String(decoding: digits, as: UTF8.self))
}

extension ByteWriter {
    var bytes: [UInt8] { (try? toArray()) ?? [] }
}

// MARK: - Tracing

/// `FUZZ_TRACE=1 .build-fuzz/<target> <input>` prints what a target does with the input.
let fuzzTrace = getenv("FUZZ_TRACE") != nil

@inline(__always)
func trace(_ message: @autoclosure () -> String) {
    if fuzzTrace { fputs(message() + "\n", stderr) }
}

// MARK: - The afs_error of a C call

/// An `afs_error` (status, errno, 512-byte message) filled with 0xAA before each call, so
/// that an untouched one can be recognised.
final class ErrorBox {
    static let size = MemoryLayout<afs_error>.size
    let raw = UnsafeMutableRawPointer.allocate(byteCount: ErrorBox.size, alignment: 8)
    deinit { raw.deallocate() }

    /// Fresh for the next call.
    func reset() -> UnsafeMutablePointer<afs_error> {
        raw.initializeMemory(as: UInt8.self, repeating: 0xAA, count: ErrorBox.size)
        return raw.assumingMemoryBound(to: afs_error.self)
    }
    var status: Int32 { raw.load(as: Int32.self) }
    var message: String { String(cString: (raw + 8).assumingMemoryBound(to: CChar.self)) }
    var untouched: Bool { UnsafeRawBufferPointer(start: raw, count: ErrorBox.size).allSatisfy { $0 == 0xAA } }
}
