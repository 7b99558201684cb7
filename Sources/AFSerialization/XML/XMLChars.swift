// Character classes of XML 1.0 (fifth edition) and Namespaces in XML 1.0, on UTF-8.

enum XMLChars {
    /// ASCII class bits: 1 NameStartChar, 2 NameChar, 4 whitespace (S), 8 PubidChar.
    static let ascii: [UInt8] = {
        var t = [UInt8](repeating: 0, count: 128)
        for c in UInt8(ascii: "a")...UInt8(ascii: "z") { t[Int(c)] |= 1 | 2 | 8 }
        for c in UInt8(ascii: "A")...UInt8(ascii: "Z") { t[Int(c)] |= 1 | 2 | 8 }
        for c in UInt8(ascii: "0")...UInt8(ascii: "9") { t[Int(c)] |= 2 | 8 }
        t[Int(UInt8(ascii: "_"))] |= 1 | 2 | 8
        t[Int(UInt8(ascii: ":"))] |= 1 | 2 | 8
        t[Int(UInt8(ascii: "-"))] |= 2 | 8
        t[Int(UInt8(ascii: "."))] |= 2 | 8
        for c in [0x20, 0x09, 0x0A, 0x0D] { t[c] |= 4 }
        for c in [0x20, 0x0D, 0x0A] { t[c] |= 8 }
        for c in "'()+,/=?;!*#@$%".utf8 { t[Int(c)] |= 8 }
        return t
    }()

    @inline(__always) static func isSpace(_ b: UInt8) -> Bool {
        b == 0x20 || b == 0x0A || b == 0x09 || b == 0x0D
    }

    static func isNameStart(_ c: UInt32) -> Bool {
        if c < 0x80 { return ascii[Int(c)] & 1 != 0 }
        switch c {
        case 0xC0...0xD6, 0xD8...0xF6, 0xF8...0x2FF, 0x370...0x37D, 0x37F...0x1FFF, 0x200C...0x200D,
             0x2070...0x218F, 0x2C00...0x2FEF, 0x3001...0xD7FF, 0xF900...0xFDCF, 0xFDF0...0xFFFD,
             0x10000...0xEFFFF:
            return true
        default: return false
        }
    }

    static func isNameChar(_ c: UInt32) -> Bool {
        if c < 0x80 { return ascii[Int(c)] & 2 != 0 }
        if isNameStart(c) { return true }
        return c == 0xB7 || (0x300...0x36F).contains(c) || (0x203F...0x2040).contains(c)
    }

    /// The Char production.
    static func isChar(_ c: UInt32) -> Bool {
        switch c {
        case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: return true
        default: return false
        }
    }

    /// Decodes one scalar of valid UTF-8 at `p[i]` (the buffer is validated on entry);
    /// returns the scalar and its length.
    @inline(__always)
    static func decode(_ p: UnsafePointer<UInt8>, _ i: Int) -> (UInt32, Int) {
        let b0 = UInt32(p[i])
        if b0 < 0x80 { return (b0, 1) }
        if b0 < 0xE0 { return ((b0 & 0x1F) << 6 | UInt32(p[i + 1] & 0x3F), 2) }
        if b0 < 0xF0 { return ((b0 & 0x0F) << 12 | UInt32(p[i + 1] & 0x3F) << 6 | UInt32(p[i + 2] & 0x3F), 3) }
        return ((b0 & 0x07) << 18 | UInt32(p[i + 1] & 0x3F) << 12 | UInt32(p[i + 2] & 0x3F) << 6 | UInt32(p[i + 3] & 0x3F), 4)
    }

    /// The UTF-8 length of the sequence led by `b`.
    @inline(__always) static func seqLength(_ b: UInt8) -> Int {
        b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4
    }

    /// Writes the UTF-8 of `c` at `out` (room for 4 bytes); returns its length.
    @inline(__always)
    static func encodeUTF8(_ c: UInt32, into out: UnsafeMutablePointer<UInt8>) -> Int {
        if c < 0x80 {
            out[0] = UInt8(c); return 1
        } else if c < 0x800 {
            out[0] = UInt8(0xC0 | c >> 6); out[1] = UInt8(0x80 | c & 0x3F); return 2
        } else if c < 0x10000 {
            out[0] = UInt8(0xE0 | c >> 12); out[1] = UInt8(0x80 | (c >> 6) & 0x3F); out[2] = UInt8(0x80 | c & 0x3F); return 3
        }
        out[0] = UInt8(0xF0 | c >> 18); out[1] = UInt8(0x80 | (c >> 12) & 0x3F)
        out[2] = UInt8(0x80 | (c >> 6) & 0x3F); out[3] = UInt8(0x80 | c & 0x3F); return 4
    }

    static func appendUTF8(_ c: UInt32, to out: inout [UInt8]) {
        if c < 0x80 {
            out.append(UInt8(c))
        } else if c < 0x800 {
            out.append(UInt8(0xC0 | c >> 6)); out.append(UInt8(0x80 | c & 0x3F))
        } else if c < 0x10000 {
            out.append(UInt8(0xE0 | c >> 12)); out.append(UInt8(0x80 | (c >> 6) & 0x3F)); out.append(UInt8(0x80 | c & 0x3F))
        } else {
            out.append(UInt8(0xF0 | c >> 18)); out.append(UInt8(0x80 | (c >> 12) & 0x3F))
            out.append(UInt8(0x80 | (c >> 6) & 0x3F)); out.append(UInt8(0x80 | c & 0x3F))
        }
    }

    /// Whether `name` (valid UTF-8) is a Name.
    static func isName<C: Collection>(_ name: C) -> Bool where C.Element == UInt8 {
        let a = Array(name)
        if a.isEmpty { return false }
        return a.withUnsafeBufferPointer { b -> Bool in
            guard let p = b.baseAddress else { return false }
            var i = 0, first = true
            while i < b.count {
                let (c, n) = decode(p, i)
                if first ? !isNameStart(c) : !isNameChar(c) { return false }
                first = false
                i += n
            }
            return true
        }
    }
}
