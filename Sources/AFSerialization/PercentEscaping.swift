#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// AFNetworking's `AFPercentEscapedStringFromString`: every byte outside the unreserved set
/// `A-Z a-z 0-9 - . _ ~ / ?` is written as `%XX` (uppercase hex) of its UTF-8 encoding.
public enum PercentEscaping {
    /// Bit i set: ASCII byte i (0-63) is written as is: `- . / 0-9 ?`.
    @usableFromInline static let lowMask: UInt64 = (1 << 45) | (1 << 46) | (1 << 47) | (0x3FF << 48) | (1 << 63)
    /// Bit i set: ASCII byte 64+i is written as is: `A-Z _ a-z ~`.
    @usableFromInline static let highMask: UInt64 = (0x3FFFFFF << 1) | (1 << 31) | (0x3FFFFFF << 33) | (1 << 62)

    @inlinable @inline(__always)
    public static func isUnreserved(_ c: UInt8) -> Bool {
        if c < 64 { return (lowMask >> UInt64(c)) & 1 != 0 }
        if c < 128 { return (highMask >> UInt64(c &- 64)) & 1 != 0 }
        return false
    }

    /// Percent-escapes a string. C: `afs_percent_escape`.
    /// - Throws: `AFSError` `.noMemory`.
    public static func escape(_ s: String) throws(AFSError) -> String {
        var s = s
        var out = ByteWriter(capacity: s.utf8.count + 16)
        s.withUTF8 { append($0, spaceAsPlus: false, to: &out) }
        return try out.toString()
    }

    /// Percent-escapes UTF-8 bytes, rejecting invalid UTF-8.
    /// - Throws: `AFSError` `.invalidUTF8` naming the byte offset of the first bad sequence.
    public static func escape(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout ByteWriter) throws {
        let start = out.count
        // One pass escapes and checks the UTF-8; rejected input is scanned for the offset.
        if !escapeValidating(bytes, spaceAsPlus: false, to: &out) {
            out.recover(to: start)
            throw AFSError.invalidUTF8("the string to escape", offset: firstInvalidUTF8OffsetScan(bytes) ?? 0)
        }
        try out.check("the escaped string", recoveringTo: start)
    }

    /// For each byte, its output as a little-endian word: bytes 0-2 are the text (`c`, or
    /// `%`, hex, hex) and byte 3 is its length (1 or 3).
    static let escapeTable: [UInt32] = (0..<256).map { entry(UInt8($0), spaceAsPlus: false) }
    /// The same with a space written as `+`.
    static let escapeTablePlus: [UInt32] = (0..<256).map { entry(UInt8($0), spaceAsPlus: true) }

    private static func entry(_ c: UInt8, spaceAsPlus: Bool) -> UInt32 {
        if isUnreserved(c) { return UInt32(c) | 1 << 24 }
        if spaceAsPlus && c == 0x20 { return UInt32(UInt8(ascii: "+")) | 1 << 24 }
        let hex = Array("0123456789ABCDEF".utf8)
        return UInt32(UInt8(ascii: "%")) | UInt32(hex[Int(c >> 4)]) << 8 | UInt32(hex[Int(c & 15)]) << 16 | 3 << 24
    }

    /// Appends `src` escaped (no UTF-8 check: callers validated it, or it is data).
    /// With `spaceAsPlus` a space becomes `+` (a literal `+` is `%2B` either way).
    public static func append(_ src: UnsafeBufferPointer<UInt8>, spaceAsPlus: Bool, to out: inout ByteWriter) {
        _ = run(src, spaceAsPlus: spaceAsPlus, validate: false, to: &out)
    }

    /// Appends `src` escaped and checks that it is valid UTF-8 in the same pass. Returns
    /// false for invalid input (the bytes appended are then meaningless).
    public static func escapeValidating(_ src: UnsafeBufferPointer<UInt8>, spaceAsPlus: Bool, to out: inout ByteWriter) -> Bool {
        run(src, spaceAsPlus: spaceAsPlus, validate: true, to: &out)
    }

    /// Lanes set for the bytes written as is (the unreserved set), from 7 vector compares:
    /// `- . / 0-9` are the contiguous range 0x2D-0x39, letters are `(v | 0x20) - 'a' < 26`.
    @inline(__always)
    static func keepLanes(_ v: SIMD16<UInt8>) -> SIMDMask<SIMD16<Int8>> {
        let digits = (v &- Wide.splat(0x2D)) .<= Wide.splat(12)
        let letters = ((v | Wide.splat(0x20)) &- Wide.splat(0x61)) .<= Wide.splat(25)
        return digits .| letters .| (v .== Wide.splat(0x5F)) .| (v .== Wide.splat(0x7E)) .| (v .== Wide.splat(0x3F))
    }

    /// The escaping loop, 16 bytes at a time.
    ///
    /// A block of 16 unreserved bytes (all of ASCII text, most of the rest) is found with a
    /// few vector compares and stored in one 16-byte store. A block with bytes to escape
    /// takes one table load and one 4-byte store per byte, advancing 1 or 3, with no
    /// branches (driving the copy from a bit mask of the bytes to escape measured slower on
    /// mixed text: its loop exit mispredicts once per block). With
    /// `validate`, blocks that contain or follow a byte of 0x80 and above are checked as
    /// UTF-8 with vector compares (`Wide.utf8Errors`) and the errors accumulate in a
    /// vector tested once at the end.
    ///
    /// The output is reserved once for the worst case (3 bytes per input byte) plus the
    /// overshoot of the last store. The first block (which has no bytes before it) and the
    /// last 16-47 bytes (whose 16-byte loads would read past the input) are copied to a
    /// zero-padded stack buffer and run from there. Inputs under 16 bytes take the table
    /// loop alone, without the stack buffer's set-up.
    @inline(__always)
    private static func run(_ src: UnsafeBufferPointer<UInt8>, spaceAsPlus: Bool, validate: Bool, to out: inout ByteWriter) -> Bool {
        let n = src.count
        guard n > 0, let s = src.baseAddress else { return true }
        guard out.reserve(n &* 3 &+ 32) else { return true }  // out of memory: `failed` tells; +32: the overshoot of the last stores
        var d = UnsafeMutableRawPointer(out.base + out.count)
        if n < 16 {
            // Short strings (most query keys and values): the table loop alone, and the
            // sequence scan only when a byte of 0x80 and above is present.
            var high: UInt8 = 0
            (spaceAsPlus ? escapeTablePlus : escapeTable).withUnsafeBufferPointer { entries in
                let e = entries.baseAddress!
                for j in 0..<n {
                    let c = s[j]
                    high |= c
                    let w = e[Int(c)]
                    d.storeBytes(of: w, as: UInt32.self)
                    d += Int(w >> 24)
                }
            }
            out.count = d.assumingMemoryBound(to: UInt8.self) - out.base
            return !validate || high < 0x80 || firstInvalidUTF8OffsetScan(src) == nil
        }
        out.prefault(n)  // at least n bytes will be written
        var errors = SIMD16<UInt8>()
        (spaceAsPlus ? escapeTablePlus : escapeTable).withUnsafeBufferPointer { entries in
            let e = entries.baseAddress!
            // `p` has 3 readable bytes before it and 16 after; `k` (1-16) bytes are input.
            @inline(__always) func block(_ p: UnsafePointer<UInt8>, _ k: Int) {
                let v = UnsafeRawPointer(p).loadUnaligned(as: SIMD16<UInt8>.self)
                if validate {
                    let before = UnsafeRawPointer(p - 3).loadUnaligned(as: SIMD16<UInt8>.self)
                    if Wide.anyHigh(v | before) {
                        errors |= Wide.utf8Errors(at: p)
                    }
                }
                let keep = keepLanes(v)
                if k == 16 && Wide.all(keep) {
                    d.storeBytes(of: v, as: SIMD16<UInt8>.self)
                    d += 16
                    return
                }
                for j in 0..<k {
                    let w = e[Int(p[j])]
                    d.storeBytes(of: w, as: UInt32.self)
                    d += Int(w >> 24)
                }
            }
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 96) { scratch in
                let t = scratch.baseAddress!
                var i = 0
                if n >= 48 {
                    // The first block, with three zero bytes before it.
                    memset(t, 0, 3)
                    memcpy(t + 3, s, 32)
                    block(t + 3, 16)
                    i = 16
                    while i &+ 32 <= n {
                        block(s + i, 16)
                        i &+= 16
                    }
                }
                // The rest (fewer than 48 bytes), after the 3 bytes before it, zero-padded.
                let r = n &- i
                memset(t, 0, 96)
                let context = Swift.min(i, 3)
                memcpy(t + 3 - context, s + i - context, context &+ r)
                var j = 0
                while j < r {
                    block(t + 3 + j, Swift.min(16, r &- j))
                    j &+= 16
                }
                if validate {
                    // A sequence cut off by the end of the input.
                    let last = t + 3 + r
                    if last[-1] >= 0xC0 || last[-2] >= 0xE0 || last[-3] >= 0xF0 { errors[0] = 1 }
                }
            }
        }
        out.count = d.assumingMemoryBound(to: UInt8.self) - out.base
        return !validate || !Wide.anyNonzero(errors)
    }
}

/// Helpers for 16-byte vectors (`SIMD16<UInt8>`, SSE2 on x86-64 and NEON on arm64).
///
/// Every operation takes vectors on both sides: Swift's vector-with-scalar operators and
/// its generic paths lower to a per-lane loop, these lower to single instructions.
enum Wide {
    @inline(__always)
    static func splat(_ b: UInt8) -> SIMD16<UInt8> { SIMD16<UInt8>(repeating: b) }

    @inline(__always)
    static func load(_ p: UnsafePointer<UInt8>) -> SIMD16<UInt8> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD16<UInt8>.self)
    }

    // (`any` and `all` are not used: they call the generic `min()` out of line.)

    @inline(__always)
    static func halves(_ v: SIMD16<UInt8>) -> (UInt64, UInt64) {
        let w = unsafeBitCast(v, to: SIMD2<UInt64>.self)
        return (w[0], w[1])
    }

    /// Whether a lane has its high bit set.
    @inline(__always)
    static func anyHigh(_ v: SIMD16<UInt8>) -> Bool {
        let (a, b) = halves(v)
        return (a | b) & 0x8080_8080_8080_8080 != 0
    }

    @inline(__always)
    static func anyNonzero(_ v: SIMD16<UInt8>) -> Bool {
        let (a, b) = halves(v)
        return a | b != 0
    }

    /// Whether every lane of a mask is set.
    @inline(__always)
    static func all(_ m: SIMDMask<SIMD16<Int8>>) -> Bool {
        let (a, b) = halves(unsafeBitCast(m, to: SIMD16<UInt8>.self))
        return a & b == ~0
    }

    /// Nonzero lanes where the 16 bytes at `p` are not valid UTF-8 given the 3 bytes before
    /// them (which must be readable).
    ///
    /// RFC 3629 with compares only: a byte is a continuation (0x80-0xBF) exactly when one
    /// of the 3 bytes before it is a lead that reaches it (0xC0+ one before, 0xE0+ two
    /// before, 0xF0+ three before); C0, C1 and F5-FF never occur; after E0, ED, F0 and F4 the
    /// continuation's range is narrower (no overlong forms, surrogates or values above
    /// U+10FFFF). A sequence cut off by the end of the input is the caller's check.
    @inline(__always)
    static func utf8Errors(at p: UnsafePointer<UInt8>) -> SIMD16<UInt8> {
        let v = load(p), p1 = load(p - 1), p2 = load(p - 2), p3 = load(p - 3)
        let isCont = (v & splat(0xC0)) .== splat(0x80)
        let needed = (p1 .>= splat(0xC0)) .| (p2 .>= splat(0xE0)) .| (p3 .>= splat(0xF0))
        let bad = ((v & splat(0xFE)) .== splat(0xC0)) .| (v .>= splat(0xF5))
        let e0 = (p1 .== splat(0xE0)) .& (v .< splat(0xA0))
        let ed = (p1 .== splat(0xED)) .& (v .> splat(0x9F))
        let f0 = (p1 .== splat(0xF0)) .& (v .< splat(0x90))
        let f4 = (p1 .== splat(0xF4)) .& (v .> splat(0x8F))
        let m = (isCont .^ needed) .| bad .| e0 .| ed .| f0 .| f4
        return unsafeBitCast(m, to: SIMD16<UInt8>.self)
    }
}

/// The offset of the first byte that does not start a valid UTF-8 sequence, or nil.
/// Rejects overlong forms, surrogates (U+D800-U+DFFF) and values above U+10FFFF
/// (RFC 3629's table: the second byte's range depends on the lead byte).
///
/// Valid input (the common case) is checked 16 bytes at a time with vector compares
/// (`Wide.utf8Errors`), skipping ASCII blocks; the errors accumulate without branches. Only
/// rejected input is scanned again to find the offset.
public func firstInvalidUTF8Offset(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    guard let p = bytes.baseAddress else { return nil }
    let n = bytes.count
    var errors = SIMD16<UInt8>()
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { scratch in
        let t = scratch.baseAddress!
        var i = 0
        if n >= 32 {
            // The first block, with three zero bytes before it.
            memset(t, 0, 3)
            memcpy(t + 3, p, 16)
            errors |= Wide.utf8Errors(at: t + 3)
            i = 16
            while i &+ 16 <= n {
                if Wide.anyHigh(Wide.load(p + i) | Wide.load(p + i - 3)) {
                    errors |= Wide.utf8Errors(at: p + i)
                }
                i &+= 16
            }
        }
        // The rest (fewer than 32 bytes) after the 3 bytes before it, zero-padded: a sequence
        // cut off by the end is followed by zeros where continuations are needed.
        let r = n &- i
        memset(t, 0, 64)
        let context = Swift.min(i, 3)
        memcpy(t + 3 - context, p + i - context, context &+ r)
        errors |= Wide.utf8Errors(at: t + 3)
        if r >= 16 { errors |= Wide.utf8Errors(at: t + 19) }
    }
    return Wide.anyNonzero(errors) ? firstInvalidUTF8OffsetScan(bytes) : nil
}

/// The precise scan behind `firstInvalidUTF8Offset`: walks sequence by sequence and
/// names the first bad one. Branchy, so it runs only on input the DFA rejected.
func firstInvalidUTF8OffsetScan(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    guard let p = bytes.baseAddress else { return nil }
    let n = bytes.count
    var i = 0
    @inline(__always) func cont(_ j: Int) -> Bool { p[j] & 0xC0 == 0x80 }
    while i < n {
        // ASCII fast path, 16 bytes at a time.
        while i &+ 16 <= n {
            let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                | UnsafeRawPointer(p + i + 8).loadUnaligned(as: UInt64.self)
            if w & 0x8080_8080_8080_8080 != 0 { break }
            i &+= 16
        }
        guard i < n else { break }
        let c = p[i]
        if c < 0x80 {
            i &+= 1
        } else if c < 0xC2 {
            return i  // continuation byte or overlong 2-byte lead
        } else if c < 0xE0 {
            guard i &+ 1 < n, cont(i &+ 1) else { return i }
            i &+= 2
        } else if c < 0xF0 {
            guard i &+ 2 < n, cont(i &+ 2) else { return i }
            let c1 = p[i &+ 1]
            let lo: UInt8 = c == 0xE0 ? 0xA0 : 0x80  // E0: no overlong
            let hi: UInt8 = c == 0xED ? 0x9F : 0xBF  // ED: no surrogates
            guard c1 >= lo && c1 <= hi else { return i }
            i &+= 3
        } else if c < 0xF5 {
            guard i &+ 3 < n, cont(i &+ 2), cont(i &+ 3) else { return i }
            let c1 = p[i &+ 1]
            let lo: UInt8 = c == 0xF0 ? 0x90 : 0x80  // F0: no overlong
            let hi: UInt8 = c == 0xF4 ? 0x8F : 0xBF  // F4: not above U+10FFFF
            guard c1 >= lo && c1 <= hi else { return i }
            i &+= 4
        } else {
            return i
        }
    }
    return nil
}

extension String {
    /// Decodes UTF-8 bytes, or throws `.invalidUTF8` naming `what` and the offset.
    public init(validatingUTF8Bytes bytes: UnsafeBufferPointer<UInt8>, what: @autoclosure () -> String) throws {
        if let bad = firstInvalidUTF8Offset(bytes) { throw AFSError.invalidUTF8(what(), offset: bad) }
        try Memory.probe(bytes.count + 32, what())  // the string's storage (header included)
        self = String(decoding: bytes, as: UTF8.self)
    }
}
