/// RFC 4648 base64 with padding (Basic auth, XML property-list data, PEM, public-key pins).
public enum Base64 {
    static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    /// Appends the base64 form of `bytes` to `out`.
    public static func encode(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout ByteWriter) {
        let a = alphabet.utf8Start
        let n = bytes.count
        guard out.reserve((n + 2) / 3 * 4) else { return }
        var i = 0
        while i + 3 <= n {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.put(a[Int(v >> 18)]); out.put(a[Int(v >> 12 & 63)]); out.put(a[Int(v >> 6 & 63)]); out.put(a[Int(v & 63)])
            i += 3
        }
        if n - i == 1 {
            let v = UInt32(bytes[i]) << 16
            out.put(a[Int(v >> 18)]); out.put(a[Int(v >> 12 & 63)]); out.put(UInt8(ascii: "=")); out.put(UInt8(ascii: "="))
        } else if n - i == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.put(a[Int(v >> 18)]); out.put(a[Int(v >> 12 & 63)]); out.put(a[Int(v >> 6 & 63)]); out.put(UInt8(ascii: "="))
        }
    }

    /// The base64 form of a string's UTF-8 bytes.
    /// - Throws: `AFSError` `.noMemory`.
    public static func encode(_ s: String) throws(AFSError) -> String {
        var s = s
        var out = ByteWriter(capacity: s.utf8.count * 4 / 3 + 4)
        s.withUTF8 { encode($0, to: &out) }
        return try out.toString()
    }

    /// Decodes strict RFC 4648 base64: a multiple of 4 characters, `=` padding only at the
    /// end, the unused bits of the last character zero. nil when `text` is not that; `error`
    /// then receives the offset of the first wrong character.
    public static func decode<C: Collection>(_ text: C, errorOffset: inout Int) -> [UInt8]? where C.Element == UInt8 {
        let t = Array(text)
        guard t.count % 4 == 0 else { errorOffset = t.count; return nil }
        var out: [UInt8] = []
        out.reserveCapacity(t.count / 4 * 3)
        func value(_ c: UInt8) -> UInt32? {
            switch c {
            case 0x41...0x5A: return UInt32(c - 0x41)
            case 0x61...0x7A: return UInt32(c - 0x61 + 26)
            case 0x30...0x39: return UInt32(c - 0x30 + 52)
            case 0x2B: return 62
            case 0x2F: return 63
            default: return nil
            }
        }
        var i = 0
        while i < t.count {
            let last = i + 4 == t.count
            var pad = 0
            if last {
                if t[i + 3] == 0x3D { pad = 1 }
                if pad == 1 && t[i + 2] == 0x3D { pad = 2 }
            }
            var v: UInt32 = 0
            for k in 0..<4 {
                if k >= 4 - pad { v <<= 6; continue }
                guard let d = value(t[i + k]) else { errorOffset = i + k; return nil }
                v = v << 6 | d
            }
            if pad == 2 && v & 0xFFFF != 0 { errorOffset = i + 1; return nil }
            if pad == 1 && v & 0xFF != 0 { errorOffset = i + 2; return nil }
            out.append(UInt8(v >> 16))
            if pad < 2 { out.append(UInt8(v >> 8 & 0xFF)) }
            if pad < 1 { out.append(UInt8(v & 0xFF)) }
            i += 4
        }
        return out
    }
}
