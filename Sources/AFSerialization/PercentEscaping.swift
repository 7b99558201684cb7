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
        // One pass escapes and runs the UTF-8 DFA; rejected input is scanned for the offset.
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
    /// 1 for bytes written as is, else 0 (a space is 0: as `+` it is not a copy).
    static let keepFlags: [UInt8] = (0..<256).map { isUnreserved(UInt8($0)) ? 1 : 0 }

    private static func entry(_ c: UInt8, spaceAsPlus: Bool) -> UInt32 {
        if isUnreserved(c) { return UInt32(c) | 1 << 24 }
        if spaceAsPlus && c == 0x20 { return UInt32(UInt8(ascii: "+")) | 1 << 24 }
        let hex = Array("0123456789ABCDEF".utf8)
        return UInt32(UInt8(ascii: "%")) | UInt32(hex[Int(c >> 4)]) << 8 | UInt32(hex[Int(c & 15)]) << 16 | 3 << 24
    }

    /// Appends `src` escaped byte by byte (no UTF-8 check: callers validated it, or it is data).
    /// With `spaceAsPlus` a space becomes `+` (a literal `+` is `%2B` either way).
    public static func append(_ src: UnsafeBufferPointer<UInt8>, spaceAsPlus: Bool, to out: inout ByteWriter) {
        _ = run(src, spaceAsPlus: spaceAsPlus, validate: false, to: &out)
    }

    /// Appends `src` escaped and checks that it is valid UTF-8 in the same pass. Returns
    /// false for invalid input (the bytes appended are then meaningless).
    public static func escapeValidating(_ src: UnsafeBufferPointer<UInt8>, spaceAsPlus: Bool, to out: inout ByteWriter) -> Bool {
        run(src, spaceAsPlus: spaceAsPlus, validate: true, to: &out)
    }

    /// The escaping loop.
    ///
    /// Runs of 8 bytes written as is are found with 8 flag loads and copied in one store;
    /// other bytes take one table load and one 4-byte store each, advancing 1 or 3: no
    /// per-byte branches. After a block that needed escaping the next block skips the flag
    /// test (on mixed text it almost never passes) unless that block turned out clean.
    /// With `validate`, each byte also steps the UTF-8 DFA (see `UTF8DFA`); a copied block is
    /// ASCII, valid only between sequences. (Swift's SIMD types are not used: they do not
    /// lower to vector instructions here.)
    @inline(__always)
    private static func run(_ src: UnsafeBufferPointer<UInt8>, spaceAsPlus: Bool, validate: Bool, to out: inout ByteWriter) -> Bool {
        let n = src.count
        guard n > 0, let s = src.baseAddress else { return true }
        guard out.reserve(n &* 3 &+ 1) else { return true }  // out of memory: `failed` tells; +1: the 4-byte store of the last byte
        out.prefault(n)  // at least n bytes will be written
        var d = UnsafeMutableRawPointer(out.base + out.count)
        var state: UInt64 = 0
        (spaceAsPlus ? escapeTablePlus : escapeTable).withUnsafeBufferPointer { entries in
            keepFlags.withUnsafeBufferPointer { flags in
                UTF8DFA.rows.withUnsafeBufferPointer { dfa in
                    let e = entries.baseAddress!, f = flags.baseAddress!, rows = dfa.baseAddress!
                    var i = 0
                    var tryCopy = true
                    while i &+ 8 <= n {
                        if tryCopy {
                            let all = f[Int(s[i])] & f[Int(s[i &+ 1])] & f[Int(s[i &+ 2])] & f[Int(s[i &+ 3])]
                                & f[Int(s[i &+ 4])] & f[Int(s[i &+ 5])] & f[Int(s[i &+ 6])] & f[Int(s[i &+ 7])]
                            if all != 0 {
                                d.storeBytes(of: UnsafeRawPointer(s + i).loadUnaligned(as: UInt64.self), as: UInt64.self)
                                d += 8
                                i &+= 8
                                if validate && state != 0 { state = UTF8DFA.reject }
                                continue
                            }
                        }
                        let before = d
                        for k in 0..<8 {
                            let c = s[i &+ k]
                            let w = e[Int(c)]
                            d.storeBytes(of: w, as: UInt32.self)
                            d += Int(w >> 24)
                            if validate { state = (rows[Int(c)] >> state) & 63 }
                        }
                        tryCopy = d - before == 8
                        i &+= 8
                    }
                    while i < n {
                        let c = s[i]
                        let w = e[Int(c)]
                        d.storeBytes(of: w, as: UInt32.self)
                        d += Int(w >> 24)
                        if validate { state = (rows[Int(c)] >> state) & 63 }
                        i &+= 1
                    }
                }
            }
        }
        out.count = d.assumingMemoryBound(to: UInt8.self) - out.base
        return state == 0
    }
}

/// The offset of the first byte that does not start a valid UTF-8 sequence, or nil.
/// Rejects overlong forms, surrogates (U+D800-U+DFFF) and values above U+10FFFF
/// (RFC 3629's table: the second byte's range depends on the lead byte).
///
/// Valid input (the common case) is checked by a shift-based DFA: per byte one table load
/// that does not depend on the state, then a shift and a mask, with no branches to
/// mispredict on mixed text. Only rejected input is scanned again to find the offset.
public func firstInvalidUTF8Offset(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    guard let p = bytes.baseAddress else { return nil }
    let n = bytes.count
    let ok = UTF8DFA.rows.withUnsafeBufferPointer { rowsBuffer -> Bool in
        let rows = rowsBuffer.baseAddress!
        var state: UInt64 = 0
        var i = 0
        while i < n {
            // Between sequences, skip ASCII 16 bytes at a time.
            if state == 0 {
                while i &+ 16 <= n {
                    let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                        | UnsafeRawPointer(p + i + 8).loadUnaligned(as: UInt64.self)
                    if w & 0x8080_8080_8080_8080 != 0 { break }
                    i &+= 16
                }
            }
            let end = Swift.min(i &+ 64, n)
            while i < end {
                state = (rows[Int(p[i])] >> state) & 63
                i &+= 1
            }
            if state == UTF8DFA.reject { return false }
        }
        return state == 0
    }
    return ok ? nil : firstInvalidUTF8OffsetScan(bytes)
}

/// The UTF-8 automaton of RFC 3629 as a shift-based DFA: state k is stored as the shift
/// 6k, and `rows[b]` holds, at bits 6k..6k+5, the shift of the state after byte b in
/// state k. The next state is `(rows[b] >> state) & 63`.
enum UTF8DFA {
    // States: accept, reject, need 1/2/3 more continuation bytes, and the four leads whose
    // second byte has a narrower range.
    static let accept = 0, rejectState = 1, need1 = 2, need2 = 3, need3 = 4
    static let afterE0 = 5, afterED = 6, afterF0 = 7, afterF4 = 8
    static let reject = UInt64(rejectState * 6)

    static let rows: [UInt64] = (0..<256).map { b -> UInt64 in
        func next(_ state: Int) -> Int {
            let cont = (0x80...0xBF).contains(b)
            switch state {
            case accept:
                switch b {
                case 0x00...0x7F: return accept
                case 0xC2...0xDF: return need1
                case 0xE0: return afterE0
                case 0xED: return afterED
                case 0xE1...0xEF: return need2
                case 0xF0: return afterF0
                case 0xF1...0xF3: return need3
                case 0xF4: return afterF4
                default: return rejectState
                }
            case need1: return cont ? accept : rejectState
            case need2: return cont ? need1 : rejectState
            case need3: return cont ? need2 : rejectState
            case afterE0: return (0xA0...0xBF).contains(b) ? need1 : rejectState
            case afterED: return (0x80...0x9F).contains(b) ? need1 : rejectState
            case afterF0: return (0x90...0xBF).contains(b) ? need2 : rejectState
            case afterF4: return (0x80...0x8F).contains(b) ? need2 : rejectState
            default: return rejectState
            }
        }
        var row: UInt64 = 0
        for state in 0...afterF4 { row |= UInt64(next(state) * 6) << UInt64(state * 6) }
        return row
    }
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
        self = String(decoding: bytes, as: UTF8.self)
    }
}
