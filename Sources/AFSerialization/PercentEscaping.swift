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
    public static func escape(_ s: String) -> String {
        var s = s
        return s.withUTF8 { src in
            var out = ByteWriter(capacity: src.count + 16)
            append(src, spaceAsPlus: false, to: &out)
            return out.toString()
        }
    }

    /// Percent-escapes UTF-8 bytes, rejecting invalid UTF-8.
    /// - Throws: `AFSError` `.invalidUTF8` naming the byte offset of the first bad sequence.
    public static func escape(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout ByteWriter) throws {
        if let bad = firstInvalidUTF8Offset(bytes) {
            throw AFSError.invalidUTF8("the string to escape", offset: bad)
        }
        append(bytes, spaceAsPlus: false, to: &out)
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
    ///
    /// Runs of 8 bytes written as is are found with 8 flag loads and copied in one store;
    /// other bytes take one table load and one 4-byte store each, advancing 1 or 3: no
    /// per-byte branches. (Swift's SIMD types are not used: they do not lower to vector
    /// instructions here.)
    public static func append(_ src: UnsafeBufferPointer<UInt8>, spaceAsPlus: Bool, to out: inout ByteWriter) {
        let n = src.count
        guard n > 0, let s = src.baseAddress else { return }
        out.reserve(n &* 3 &+ 1)  // +1: the 4-byte store of the last byte
        var d = UnsafeMutableRawPointer(out.base + out.count)
        (spaceAsPlus ? escapeTablePlus : escapeTable).withUnsafeBufferPointer { entries in
            keepFlags.withUnsafeBufferPointer { flags in
                let e = entries.baseAddress!, f = flags.baseAddress!
                var i = 0
                while i &+ 8 <= n {
                    let all = f[Int(s[i])] & f[Int(s[i &+ 1])] & f[Int(s[i &+ 2])] & f[Int(s[i &+ 3])]
                        & f[Int(s[i &+ 4])] & f[Int(s[i &+ 5])] & f[Int(s[i &+ 6])] & f[Int(s[i &+ 7])]
                    if all != 0 {
                        d.storeBytes(of: UnsafeRawPointer(s + i).loadUnaligned(as: UInt64.self), as: UInt64.self)
                        d += 8
                    } else {
                        for k in 0..<8 {
                            let w = e[Int(s[i &+ k])]
                            d.storeBytes(of: w, as: UInt32.self)
                            d += Int(w >> 24)
                        }
                    }
                    i &+= 8
                }
                while i < n {
                    let w = e[Int(s[i])]
                    d.storeBytes(of: w, as: UInt32.self)
                    d += Int(w >> 24)
                    i &+= 1
                }
            }
        }
        out.count = d.assumingMemoryBound(to: UInt8.self) - out.base
    }
}

/// The offset of the first byte that does not start a valid UTF-8 sequence, or nil.
/// Rejects overlong forms, surrogates (U+D800-U+DFFF) and values above U+10FFFF
/// (RFC 3629's table: the second byte's range depends on the lead byte).
public func firstInvalidUTF8Offset(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
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
