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

    @usableFromInline static let hexDigits: StaticString = "0123456789ABCDEF"

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

    /// Appends `src` escaped byte by byte (no UTF-8 check: callers validated it, or it is data).
    /// With `spaceAsPlus` a space becomes `+` (a literal `+` is `%2B` either way).
    @inlinable
    public static func append(_ src: UnsafeBufferPointer<UInt8>, spaceAsPlus: Bool, to out: inout ByteWriter) {
        let n = src.count
        guard n > 0, let s = src.baseAddress else { return }
        out.reserve(n &* 3)
        let hex = hexDigits.utf8Start
        var d = out.base + out.count
        var i = 0
        // Runs of unreserved bytes are the common case: test 8 at a time, copy words.
        while i &+ 8 <= n {
            let c0 = s[i], c1 = s[i &+ 1], c2 = s[i &+ 2], c3 = s[i &+ 3]
            let c4 = s[i &+ 4], c5 = s[i &+ 5], c6 = s[i &+ 6], c7 = s[i &+ 7]
            if isUnreserved(c0) && isUnreserved(c1) && isUnreserved(c2) && isUnreserved(c3)
                && isUnreserved(c4) && isUnreserved(c5) && isUnreserved(c6) && isUnreserved(c7)
            {
                UnsafeMutableRawPointer(d).storeBytes(
                    of: UnsafeRawPointer(s + i).loadUnaligned(as: UInt64.self), as: UInt64.self)
                d += 8
                i &+= 8
                continue
            }
            for _ in 0..<8 {
                let c = s[i]
                if isUnreserved(c) {
                    d.pointee = c; d += 1
                } else if spaceAsPlus && c == 0x20 {
                    d.pointee = UInt8(ascii: "+"); d += 1
                } else {
                    d[0] = UInt8(ascii: "%"); d[1] = hex[Int(c >> 4)]; d[2] = hex[Int(c & 15)]; d += 3
                }
                i &+= 1
            }
        }
        while i < n {
            let c = s[i]
            if isUnreserved(c) {
                d.pointee = c; d += 1
            } else if spaceAsPlus && c == 0x20 {
                d.pointee = UInt8(ascii: "+"); d += 1
            } else {
                d[0] = UInt8(ascii: "%"); d[1] = hex[Int(c >> 4)]; d[2] = hex[Int(c & 15)]; d += 3
            }
            i &+= 1
        }
        out.count = d - out.base
    }
}

/// The offset of the first byte that does not start a valid UTF-8 sequence, or nil.
public func firstInvalidUTF8Offset(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    guard let p = bytes.baseAddress else { return nil }
    let n = bytes.count
    var i = 0
    while i < n {
        // ASCII fast path, 8 bytes at a time.
        while i &+ 8 <= n, UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
            i &+= 8
        }
        if i >= n { break }
        let c = p[i]
        if c < 0x80 { i &+= 1; continue }
        var len = 0
        var minScalar: UInt32 = 0
        var scalar: UInt32 = 0
        switch c {
        case 0xC2...0xDF: len = 2; scalar = UInt32(c & 0x1F); minScalar = 0x80
        case 0xE0...0xEF: len = 3; scalar = UInt32(c & 0x0F); minScalar = 0x800
        case 0xF0...0xF4: len = 4; scalar = UInt32(c & 0x07); minScalar = 0x10000
        default: return i
        }
        if i + len > n { return i }
        for k in 1..<len {
            let cc = p[i + k]
            if cc & 0xC0 != 0x80 { return i }
            scalar = (scalar << 6) | UInt32(cc & 0x3F)
        }
        if scalar < minScalar || scalar > 0x10FFFF || (0xD800...0xDFFF).contains(scalar) { return i }
        i += len
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
