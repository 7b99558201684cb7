/// NSJSONSerialization's writing options, with Foundation's raw values.
///
/// C: the `AFS_JSON_*` flags of `afs_serializer_set_json_options`.
public struct JSONWritingOptions: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Two-space indentation, `"key" : value`, one element per line.
    public static let prettyPrinted = JSONWritingOptions(rawValue: 1)
    /// Dictionary keys in ascending Unicode-scalar order (`utf8Less`), never locale order.
    public static let sortedKeys = JSONWritingOptions(rawValue: 2)
    /// A scalar (string, number, bool, null) is accepted as the top-level value.
    public static let fragmentsAllowed = JSONWritingOptions(rawValue: 4)
    /// `/` is written as is instead of `\/`.
    public static let withoutEscapingSlashes = JSONWritingOptions(rawValue: 8)
}

/// Writes a parameters tree as JSON, byte for byte in NSJSONSerialization's format.
///
/// Compact output is `{"key":"value"}` / `[1,2]`. Strings escape `"` `\` and (unless
/// `withoutEscapingSlashes`) `/` with a backslash, write `\b \f \n \r \t` for those control
/// characters and `\u00xx` (lowercase hex) for the other bytes below 0x20; every other
/// character, DEL and U+2028 included, is raw UTF-8. Integers are decimal, doubles use
/// `formatDouble`, bools `true`/`false`, null `null`. Dictionaries keep insertion order
/// unless `sortedKeys`.
///
/// Pretty output indents by two spaces, writes `"key" : value`, puts every element on its
/// own line and writes an empty container as `{\n\n}` / `[\n\n]` with the closing bracket
/// indented to the container's level. There is no trailing newline.
public enum JSONWriter {
    /// AFNetworking's message for parameters that cannot be written as JSON; every writer
    /// error message starts with it.
    public static let invalidParametersMessage = "The `parameters` argument is not valid JSON."

    /// The most containers that may be nested inside one another, as in `JSONParser`: what
    /// the writer accepts can be read back, and no caller's tree can exhaust the stack.
    public static let maxDepth = JSONParser.defaultMaxDepth

    /// Appends `value` as JSON to `out`.
    /// - Parameters:
    ///   - value: the tree to write.
    ///   - options: NSJSONSerialization's writing options.
    ///   - out: the buffer; on failure it is left as it was before the call.
    /// - Throws: `AFSError` `.invalidJSON` for NaN or infinite doubles, data, sets, a scalar
    ///   top level without `fragmentsAllowed`, and nesting deeper than `maxDepth`. The message is
    ///   `invalidParametersMessage` followed by what was found and where, e.g.
    ///   ``The `parameters` argument is not valid JSON. (a set at parameters["tags"])``.
    ///   C: `afs_serializer_request` / `afs_serializer_serialize` with a JSON serializer.
    public static func write(_ value: Value, options: JSONWritingOptions, to out: inout ByteWriter) throws {
        if !options.contains(.fragmentsAllowed) {
            switch value {
            case .array, .dict, .set, .data: break  // sets and data fail below, with their path
            case .null, .bool, .int, .double, .string, .date:
                throw AFSError(
                    .invalidJSON,
                    "\(invalidParametersMessage) (\(value.kind.article) at the top level: only a dictionary or an array is allowed without fragmentsAllowed)")
            }
        }
        let start = out.count
        let emitter = Emitter(options)
        do {
            try emitter.value(value, depth: 0, to: &out)
        } catch {
            out.recover(to: start)
            throw AFSError(.invalidJSON, "\(invalidParametersMessage) (\(error.what) at \(error.pathText()))")
        }
        try out.check("the JSON body", recoveringTo: start)
    }

    /// `value` as JSON bytes (see `write(_:options:to:)`).
    /// - Throws: `AFSError` `.invalidJSON` as `write(_:options:to:)`.
    public static func data(_ value: Value, options: JSONWritingOptions = []) throws -> [UInt8] {
        var out = ByteWriter(capacity: 256)
        try write(value, options: options, to: &out)
        return try out.toArray()
    }
}

// MARK: - Errors with a path

/// What could not be written and where; the path is collected innermost first while the
/// recursion unwinds, so the success path never builds it.
struct JSONWriteFailure: Error {
    enum Step {
        case key(String)
        case index(Int)
    }
    var what: String
    var path: [Step] = []

    static func tooDeep() -> JSONWriteFailure {
        JSONWriteFailure(what: "a container nested deeper than \(JSONWriter.maxDepth) levels")
    }

    /// `parameters["a"][2]`: keys are written as JSON strings (without escaping slashes).
    /// A path of more than 24 steps shows its first and last 12 around `[…]`.
    func pathText() -> String {
        var out = ByteWriter(capacity: 64)
        out.append("parameters" as StaticString)
        let steps = Array(path.reversed())
        for (n, step) in steps.enumerated() {
            if steps.count > 24 && n >= 12 && n < steps.count - 12 {
                if n == 12 { out.append("[…]" as StaticString) }
                continue
            }
            switch step {
            case .key(let k):
                out.append(UInt8(ascii: "["))
                JSONWriter.appendString(k, escapeSlashes: false, to: &out)
                out.append(UInt8(ascii: "]"))
            case .index(let i):
                out.append(UInt8(ascii: "["))
                out.appendDecimal(Int64(i))
                out.append(UInt8(ascii: "]"))
            }
        }
        return (try? out.toString()) ?? "parameters"
    }
}

// MARK: - The recursive writer

extension JSONWriter {
    struct Emitter {
        let pretty: Bool
        let sorted: Bool
        let escapeSlashes: Bool

        init(_ options: JSONWritingOptions) {
            pretty = options.contains(.prettyPrinted)
            sorted = options.contains(.sortedKeys)
            escapeSlashes = !options.contains(.withoutEscapingSlashes)
        }

        func value(_ v: borrowing Value, depth: Int, to out: inout ByteWriter) throws(JSONWriteFailure) {
            switch v {
            case .string(let s):
                JSONWriter.appendString(s, escapeSlashes: escapeSlashes, to: &out)
            case .int(let i):
                out.appendDecimal(i)
            case .double(let d):
                try JSONWriter.appendDouble(d, to: &out)
            case .bool(let b):
                if b { out.append("true" as StaticString) } else { out.append("false" as StaticString) }
            case .null:
                out.append("null" as StaticString)
            case .dict(let d):
                guard depth < JSONWriter.maxDepth else { throw JSONWriteFailure.tooDeep() }
                if depth == LargeStack.hopDepth {  // deeper levels run on a large stack
                    try LargeStack.run(&out) { (out) throws(JSONWriteFailure) in try dict(keys: d.keys, values: d.values, depth: depth, to: &out) }
                    return
                }
                try dict(keys: d.keys, values: d.values, depth: depth, to: &out)
            case .array(let a):
                guard depth < JSONWriter.maxDepth else { throw JSONWriteFailure.tooDeep() }
                if depth == LargeStack.hopDepth {
                    try LargeStack.run(&out) { (out) throws(JSONWriteFailure) in try array(a, depth: depth, to: &out) }
                    return
                }
                try array(a, depth: depth, to: &out)
            case .set:
                throw JSONWriteFailure(what: "a set")
            case .data(let bytes):
                throw JSONWriteFailure(what: "data (\(bytes.count) bytes)")
            case .date(let t):
                // ISO 8601 text (NSJSONSerialization refuses an NSDate; AFNetworking users
                // send its description: see the README's deviations)
                guard let text = DateText.iso8601(t) else {
                    throw JSONWriteFailure(what: "a date (\(t) s since 1970) outside the years 1 to 9999")
                }
                JSONWriter.appendString(text, escapeSlashes: escapeSlashes, to: &out)
            }
        }

        func array(_ a: [Value], depth: Int, to out: inout ByteWriter) throws(JSONWriteFailure) {
            out.append(UInt8(ascii: "["))
            if a.isEmpty {
                if pretty { out.append(UInt8(ascii: "\n")); newline(depth, to: &out) }
                out.append(UInt8(ascii: "]"))
                return
            }
            // Element access through the buffer borrows instead of copying (no retains).
            try a.withUnsafeBufferPointer { (elements) throws(JSONWriteFailure) in
                for i in 0..<elements.count {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    if pretty { newline(depth + 1, to: &out) }
                    do throws(JSONWriteFailure) {
                        try value(elements[i], depth: depth + 1, to: &out)
                    } catch {
                        var e = error
                        e.path.append(.index(i))
                        throw e
                    }
                }
            }
            if pretty { newline(depth, to: &out) }
            out.append(UInt8(ascii: "]"))
        }

        func dict(keys: [String], values: [Value], depth: Int, to out: inout ByteWriter) throws(JSONWriteFailure) {
            out.append(UInt8(ascii: "{"))
            if keys.isEmpty {
                if pretty { out.append(UInt8(ascii: "\n")); newline(depth, to: &out) }
                out.append(UInt8(ascii: "}"))
                return
            }
            try keys.withUnsafeBufferPointer { (keys) throws(JSONWriteFailure) in
                try values.withUnsafeBufferPointer { (values) throws(JSONWriteFailure) in
                    if sorted {
                        // Sort member indices in stack memory; keys compare by UTF-8 bytes.
                        try withUnsafeTemporaryAllocation(of: Int.self, capacity: keys.count) {
                            (buffer) throws(JSONWriteFailure) in
                            var order = buffer
                            for i in 0..<keys.count { buffer.initializeElement(at: i, to: i) }
                            order.sort { JSONWriter.keyLess(keys[$0], keys[$1]) }
                            for n in 0..<order.count {
                                let i = order[n]
                                try member(keys[i], values[i], first: n == 0, depth: depth, to: &out)
                            }
                        }
                    } else {
                        for i in 0..<keys.count {
                            try member(keys[i], values[i], first: i == 0, depth: depth, to: &out)
                        }
                    }
                }
            }
            if pretty { newline(depth, to: &out) }
            out.append(UInt8(ascii: "}"))
        }

        @inline(__always)
        func member(_ key: String, _ v: Value, first: Bool, depth: Int, to out: inout ByteWriter) throws(JSONWriteFailure) {
            if !first { out.append(UInt8(ascii: ",")) }
            if pretty { newline(depth + 1, to: &out) }
            JSONWriter.appendString(key, escapeSlashes: escapeSlashes, to: &out)
            if pretty {
                out.append(" : " as StaticString)
            } else {
                out.append(UInt8(ascii: ":"))
            }
            do {
                try value(v, depth: depth + 1, to: &out)
            } catch {
                var e = error
                e.path.append(.key(key))
                throw e
            }
        }

        /// A newline and `2 * depth` spaces.
        @inline(__always)
        func newline(_ depth: Int, to out: inout ByteWriter) {
            let n = 2 &* depth
            guard out.reserve(n &+ 1) else { return }
            out.put(UInt8(ascii: "\n"))
            if n > 0 {
                memset(out.base + out.count, 0x20, n)
                out.count &+= n
            }
        }
    }

    /// `utf8Less` without copying native strings: byte order, which is Unicode-scalar order.
    @inline(__always)
    static func keyLess(_ a: String, _ b: String) -> Bool {
        let r: Bool?? = a.utf8.withContiguousStorageIfAvailable { pa in
            b.utf8.withContiguousStorageIfAvailable { pb in
                let n = Swift.min(pa.count, pb.count)
                if n > 0 {
                    let c = memcmp(pa.baseAddress!, pb.baseAddress!, n)
                    if c != 0 { return c < 0 }
                }
                return pa.count < pb.count
            }
        }
        if let r, let r { return r }
        return utf8Less(a, b)
    }

    /// Appends a finite double exactly as `formatDouble` writes it.
    @inline(__always)
    static func appendDouble(_ d: Double, to out: inout ByteWriter) throws(JSONWriteFailure) {
        guard d.isFinite else {
            throw JSONWriteFailure(what: "a double \(formatDouble(d))")
        }
        // Integral values below 2^53 print as their integer digits (Swift's description
        // writes them in positional form, `formatDouble` drops the `.0`); skip the String.
        if d.magnitude < 9_007_199_254_740_992, d.rounded(.towardZero) == d, !(d == 0 && d.sign == .minus) {
            out.appendDecimal(Int64(d))
        } else {
            guard out.reserve(DoubleTextSink.capacity) else { return }
            // Most doubles in parameters have few digits: found here without a String.
            if let n = writeShortDecimal(d, to: out.base + out.count) {
                out.count &+= n
                return
            }
            var sink = DoubleTextSink(out: out.base + out.count)
            d.write(to: &sink)
            if sink.overflowed {
                out.append(formatDouble(d))  // never seen: the text is at most 24 bytes
            } else {
                var n = sink.count
                let text = out.base + out.count
                if n >= 2 && text[n &- 2] == UInt8(ascii: ".") && text[n &- 1] == UInt8(ascii: "0") { n &-= 2 }
                out.count &+= n
            }
        }
    }
}

extension JSONWriter {
    /// 1e0 ... 1e15, each exact.
    static let exactPowersOfTen: [Double] = (0...15).map { k in (0..<k).reduce(1.0) { r, _ in r * 10 } }

    /// Writes a non-integral double of magnitude 1e-3 ..< 1e15 in positional form with the
    /// fewest fraction digits that read back as the same double (the shortest round-trip
    /// text, as `formatDouble` writes it), or returns nil when that takes more than 15
    /// fraction digits or 2^52 as the integer of its digits, or is too close to a tie to
    /// decide here; the caller then takes the standard library's path.
    ///
    /// For f = 1, 2, … the candidate is the integer m nearest to |d|·10^f (the product's
    /// rounding error is recovered exactly with a fused multiply-add); m / 10^f is then one
    /// correctly rounded division of exact operands, the value a reader gets for the text,
    /// so comparing it with |d| proves the round trip. The first f that works gives the
    /// fewest significant digits, and the nearest m is the digit string closest to d.
    @inline(__always)
    static func writeShortDecimal(_ d: Double, to p: UnsafeMutablePointer<UInt8>) -> Int? {
        let a = d.magnitude
        guard a >= 1e-3 && a < 1e15 else { return nil }
        return exactPowersOfTen.withUnsafeBufferPointer { pow10 -> Int? in
            var f = 1
            while f <= 15 {
                let scale = pow10[f]
                let product = a * scale
                guard product < 4_503_599_627_370_496 else { return nil }  // 2^52
                let error = (-product).addingProduct(a, scale)  // a * scale - product, exactly
                var m = product.rounded()
                let distance = (product - m) + error  // |d|·10^f - m
                let fromTie = distance.magnitude - 0.5
                if fromTie > -1e-9 && fromTie < 1e-9 { return nil }
                if distance > 0.5 { m += 1 } else if distance < -0.5 { m -= 1 }
                if m / scale == a {
                    return writeDigits(UInt64(m), fractionDigits: f, negative: d < 0, to: p)
                }
                f &+= 1
            }
            return nil
        }
    }

    /// Writes `m / 10^fractionDigits` as `[-]int.frac`; returns the length.
    @inline(__always)
    static func writeDigits(_ m: UInt64, fractionDigits f: Int, negative: Bool, to p: UnsafeMutablePointer<UInt8>) -> Int {
        // Digits right to left into a 24-byte scratch, then one copy.
        var tmp: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &tmp) { raw -> Int in
            let t = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var i = 32
            var v = m
            var k = 0
            while k < f {
                i &-= 1
                t[i] = UInt8(truncatingIfNeeded: v % 10) &+ 48
                v /= 10
                k &+= 1
            }
            i &-= 1
            t[i] = UInt8(ascii: ".")
            repeat {
                i &-= 1
                t[i] = UInt8(truncatingIfNeeded: v % 10) &+ 48
                v /= 10
            } while v != 0
            if negative {
                i &-= 1
                t[i] = UInt8(ascii: "-")
            }
            memcpy(p, t + i, 32 &- i)
            return 32 &- i
        }
    }
}

/// Receives the text of `Double.write(to:)` (the same text as `description`) straight into
/// reserved output, without a String.
struct DoubleTextSink: TextOutputStream {
    /// More than the longest double text (`-2.2250738585072014e-308`, 24 bytes).
    static let capacity = 48
    var out: UnsafeMutablePointer<UInt8>
    var count = 0
    var overflowed = false

    init(out: UnsafeMutablePointer<UInt8>) { self.out = out }

    mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { _writeASCII($0) }
    }

    /// The standard library hands floating-point text to this hook as ASCII bytes.
    mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
        let n = buffer.count
        guard let src = buffer.baseAddress, n > 0 else { return }
        guard count &+ n <= DoubleTextSink.capacity else {
            overflowed = true
            return
        }
        memcpy(out + count, src, n)
        count &+= n
    }
}

// MARK: - Strings

extension JSONWriter {
    /// The letter after the backslash for each byte below 0x20 (`u` for `\u00xx`).
    static let controlEscapes: StaticString = "uuuuuuuubtnufruuuuuuuuuuuuuuuuuu"

    /// Nonzero when one of the 8 bytes of `w` must be escaped: below 0x20, `"`, `\`, and the
    /// byte repeated in `slash` (`/` when slashes are escaped, else `"` again). Bytes of
    /// 0x80 and above never match. Exact as a yes/no answer.
    @inline(__always)
    static func escapeMask(_ w: UInt64, slash: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let q = w ^ (ones &* 0x22)
        let b = w ^ (ones &* 0x5C)
        let s = w ^ slash
        let m = ((w &- ones &* 0x20) & ~w) | ((q &- ones) & ~q) | ((b &- ones) & ~b) | ((s &- ones) & ~s)
        return m & 0x8080_8080_8080_8080
    }

    /// Whether none of the 16 bytes must be escaped (below 0x20, `"`, `\`, and the byte
    /// repeated in `slash`).
    @inline(__always)
    static func plainRun(_ v: SIMD16<UInt8>, slash: SIMD16<UInt8>) -> Bool {
        let m = (v .< Wide.splat(0x20)) .| (v .== Wide.splat(0x22)) .| (v .== Wide.splat(0x5C)) .| (v .== slash)
        return !Wide.anyNonzero(unsafeBitCast(m, to: SIMD16<UInt8>.self))
    }

    /// Appends `s` as a JSON string literal, quotes included.
    static func appendString(_ s: String, escapeSlashes: Bool, to out: inout ByteWriter) {
        // Native strings (small or not) have contiguous UTF-8: no copy, no retain.
        let done: Void? = s.utf8.withContiguousStorageIfAvailable {
            appendString(utf8: $0, escapeSlashes: escapeSlashes, to: &out)
        }
        if done == nil {
            var s = s
            s.withUTF8 { appendString(utf8: $0, escapeSlashes: escapeSlashes, to: &out) }
        }
    }

    /// Appends UTF-8 bytes (already valid) as a JSON string literal, quotes included.
    @inline(__always)
    static func appendString(utf8 src: UnsafeBufferPointer<UInt8>, escapeSlashes: Bool, to out: inout ByteWriter) {
        let n = src.count
        let slash: UInt64 = 0x0101_0101_0101_0101 &* (escapeSlashes ? 0x2F : 0x22)
        guard let s = src.baseAddress, n > 0 else {
            out.append("\"\"" as StaticString)
            return
        }
        if n <= chunk {
            // The common case: one reservation for the worst case (6 bytes per input byte),
            // the quotes and the slack of an 8-byte store.
            guard out.reserve(n &* 6 &+ 16) else { return }
            var d = out.base + out.count
            d.pointee = UInt8(ascii: "\"")
            d = escape(s, n, into: d + 1, slash: slash)
            d.pointee = UInt8(ascii: "\"")
            out.count = d + 1 - out.base
            return
        }
        out.append(UInt8(ascii: "\""))
        var i = 0
        while i < n {
            let k = Swift.min(chunk, n &- i)
            guard out.reserve(k &* 6 &+ 16) else { return }
            let d = escape(s + i, k, into: out.base + out.count, slash: slash)
            out.count = d - out.base
            i &+= k
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Long strings are escaped in chunks so the worst-case reservation stays small.
    static let chunk = 8192

    /// Escapes `n` bytes from `s` into `d`, which has room for `6 * n + 8` bytes; returns the
    /// end of the output.
    @inline(__always)
    static func escape(
        _ s: UnsafePointer<UInt8>, _ n: Int, into d: UnsafeMutablePointer<UInt8>, slash: UInt64
    ) -> UnsafeMutablePointer<UInt8> {
        var d = d
        var i = 0
        let slashVector = SIMD16<UInt8>(repeating: UInt8(truncatingIfNeeded: slash))
        while i < n {
            let k = n &- i
            if k >= 16 {
                // 16 bytes at a time with vector compares while nothing needs escaping.
                let v = Wide.load(s + i)
                if plainRun(v, slash: slashVector) {
                    UnsafeMutableRawPointer(d).storeBytes(of: v, as: SIMD16<UInt8>.self)
                    d += 16
                    i &+= 16
                    while i &+ 16 <= n {
                        let v = Wide.load(s + i)
                        guard plainRun(v, slash: slashVector) else { break }
                        UnsafeMutableRawPointer(d).storeBytes(of: v, as: SIMD16<UInt8>.self)
                        d += 16
                        i &+= 16
                    }
                    continue
                }
            }
            if k >= 8 {
                let w = UnsafeRawPointer(s + i).loadUnaligned(as: UInt64.self)
                if escapeMask(w, slash: slash) == 0 {
                    UnsafeMutableRawPointer(d).storeBytes(of: w, as: UInt64.self)
                    d += 8
                    i &+= 8
                    continue
                }
            } else if k >= 4 {
                // 4 to 7 bytes left: two overlapping 4-byte words cover them.
                let lo = UnsafeRawPointer(s + i).loadUnaligned(as: UInt32.self)
                let hi = UnsafeRawPointer(s + i + k - 4).loadUnaligned(as: UInt32.self)
                if escapeMask(UInt64(lo) | UInt64(hi) << 32, slash: slash) == 0 {
                    UnsafeMutableRawPointer(d).storeBytes(of: lo, as: UInt32.self)
                    UnsafeMutableRawPointer(d + k - 4).storeBytes(of: hi, as: UInt32.self)
                    d += k
                    i &+= k
                    continue
                }
            }
            // One of the next bytes needs an escape (or 1-3 bytes are left): byte by byte.
            let stop = Swift.min(n, i &+ 8)
            while i < stop {
                let c = s[i]
                i &+= 1
                if c < 0x20 {
                    let e = controlEscapes.utf8Start[Int(c)]
                    if e == UInt8(ascii: "u") {
                        let hex = ("0123456789abcdef" as StaticString).utf8Start
                        d[0] = UInt8(ascii: "\\"); d[1] = e; d[2] = 0x30; d[3] = 0x30
                        d[4] = hex[Int(c >> 4)]; d[5] = hex[Int(c & 15)]
                        d += 6
                    } else {
                        d[0] = UInt8(ascii: "\\"); d[1] = e; d += 2
                    }
                } else if c == 0x22 || c == 0x5C || (c == 0x2F && slash & 0xFF == 0x2F) {
                    d[0] = UInt8(ascii: "\\"); d[1] = c; d += 2
                } else {
                    d.pointee = c; d += 1
                }
            }
        }
        return d
    }
}
