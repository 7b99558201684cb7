// The input stage of the XML reader: detects the encoding (XML 1.0 appendix F), converts
// the bytes to UTF-8 and checks every character against the Char production, so that the
// tokenizer works on valid UTF-8 made of XML characters only.

internal import CAFSerialization

/// The encodings the reader accepts.
enum XMLEncoding: Sendable, Equatable {
    case utf8, utf16le, utf16be, latin1, ascii

    var name: String {
        switch self {
        case .utf8: return "UTF-8"
        case .utf16le: return "UTF-16LE"
        case .utf16be: return "UTF-16BE"
        case .latin1: return "ISO-8859-1"
        case .ascii: return "US-ASCII"
        }
    }

    /// The encoding an `encoding="…"` name means; nil when unsupported.
    static func named(_ name: [UInt8]) -> XMLEncoding?? {
        let n = String(decoding: name.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 32 : $0 }, as: UTF8.self)
        switch n {
        case "utf-8", "utf8": return .some(.utf8)
        case "utf-16", "utf-16le", "utf-16be", "utf16": return .some(nil)  // UTF-16 family: by the bytes
        case "iso-8859-1", "iso_8859-1", "latin1", "latin-1", "l1", "iso8859-1", "iso-latin-1": return .some(.latin1)
        case "us-ascii", "ascii", "iso646-us": return .some(.ascii)
        default: return nil
        }
    }
}

struct XMLInput {
    var encoding: XMLEncoding? = nil
    /// 3 (UTF-8) or 2 (UTF-16) when the input began with a byte order mark.
    var bomLength = 0
    /// Raw bytes not yet converted: the start of the input while the encoding is unknown,
    /// or the incomplete last character.
    var pending: [UInt8] = []
    /// The first encoding error: the decoded offset where the bad character would be.
    var error: (offset: Int, message: String)? = nil
    /// Raw bytes converted so far (for error offsets).
    var rawConverted = 0

    /// The most raw bytes held while looking for the end of the XML declaration.
    static let maxDeclarationBytes = 4096

    /// Converts `bytes` (and any pending ones) and appends the UTF-8 to `out`; `outBase` is
    /// the decoded offset of `out[0]` (for error positions). After an error, converts
    /// nothing more.
    mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>, final: Bool, into out: inout [UInt8], outBase: Int) throws(AFSError) {
        if error != nil { return }
        if encoding == nil && pending.isEmpty && bytes.count > 0 {
            // Sniff on a prefix of the first bytes, then convert them in place (no copy).
            pending = Array(UnsafeBufferPointer(rebasing: bytes[0..<Swift.min(bytes.count, XMLInput.maxDeclarationBytes)]))
            guard let e = sniff(final: final) else {
                pending = Array(bytes)  // undecided: the input is shorter than the prefix
                return
            }
            encoding = e
            pending = []
            if error != nil { return }
            let start = Swift.min(bomLength, bytes.count)
            rawConverted = start
            try convert(UnsafeBufferPointer(rebasing: bytes[start...]), final: final, into: &out, outBase: outBase)
            return
        }
        if encoding == nil || !pending.isEmpty {
            try pending.checkedReserve(pending.count + bytes.count, "the XML input buffer")
            pending.append(contentsOf: bytes)
            if encoding == nil {
                guard let e = sniff(final: final) else { return }
                encoding = e
                if error != nil { return }
            }
            let p = pending
            pending = []
            let start = bomLength > 0 && rawConverted == 0 ? bomLength : 0
            if start > 0 { rawConverted = start }
            try p.withUnsafeBufferPointer { (b) throws(AFSError) in
                try convert(UnsafeBufferPointer(rebasing: b[start...]), final: final, into: &out, outBase: outBase)
            }
        } else {
            try convert(bytes, final: final, into: &out, outBase: outBase)
        }
    }

    /// Decides the encoding from the first bytes (and the XML declaration); nil: wait.
    mutating func sniff(final: Bool) -> XMLEncoding? {
        let b = pending
        func has(_ s: [UInt8]) -> Bool { b.count >= s.count && Array(b[0..<s.count]) == s }
        if b.count < 4 && !final {
            // Decide early only when the first byte cannot start a signature.
            if let f = b.first, ![0xEF, 0xFE, 0xFF, 0x00, 0x3C, 0x4C].contains(f) { return .utf8 }
            return nil
        }
        if has([0xEF, 0xBB, 0xBF]) { bomLength = 3; return .utf8 }
        if has([0xFE, 0xFF]) { bomLength = 2; return .utf16be }
        if has([0xFF, 0xFE]) { bomLength = 2; return .utf16le }
        if has([0, 0, 0, 0x3C]) || has([0x3C, 0, 0, 0]) || has([0, 0, 0x3C, 0]) || has([0, 0x3C, 0, 0]) {
            error = (0, "unsupported encoding: the input looks like UCS-4 (32-bit units); supported: UTF-8, UTF-16, ISO-8859-1, US-ASCII")
            return .utf8
        }
        if has([0, 0x3C, 0, 0x3F]) { return .utf16be }
        if has([0x3C, 0, 0x3F, 0]) { return .utf16le }
        if has([0x4C, 0x6F, 0xA7, 0x94]) {
            error = (0, "unsupported encoding: the input looks like EBCDIC; supported: UTF-8, UTF-16, ISO-8859-1, US-ASCII")
            return .utf8
        }
        if has(Array("<?xm".utf8)) {
            if b.count < 6 && !final { return nil }
            // Wait for the end of the declaration, then read its encoding name.
            var end: Int? = nil
            var i = 5
            while i + 1 < b.count { if b[i] == 0x3F && b[i + 1] == 0x3E { end = i; break }; i += 1 }
            if end == nil && !final && b.count < XMLInput.maxDeclarationBytes { return nil }
            let decl = Array(b[0..<(end ?? Swift.min(b.count, XMLInput.maxDeclarationBytes))])
            if has(Array("<?xml".utf8)), let name = XMLInput.encodingName(in: decl), let e = XMLEncoding.named(name), let enc = e {
                return enc
            }
        }
        return .utf8
    }

    /// The value of `encoding="…"` in an XML declaration's bytes (loosely: the tokenizer
    /// checks the syntax).
    static func encodingName(in decl: [UInt8]) -> [UInt8]? {
        let key = Array("encoding".utf8)
        guard decl.count > key.count else { return nil }
        var i = 0
        while i + key.count <= decl.count {
            if Array(decl[i..<(i + key.count)]) == key {
                var j = i + key.count
                while j < decl.count && XMLChars.isSpace(decl[j]) { j += 1 }
                guard j < decl.count, decl[j] == 0x3D else { return nil }
                j += 1
                while j < decl.count && XMLChars.isSpace(decl[j]) { j += 1 }
                guard j < decl.count, decl[j] == 0x22 || decl[j] == 0x27 else { return nil }
                let q = decl[j]
                var k = j + 1
                while k < decl.count && decl[k] != q { k += 1 }
                return Array(decl[(j + 1)..<k])
            }
            i += 1
        }
        return nil
    }

    private mutating func fail(_ msg: String, _ out: [UInt8], _ outBase: Int) {
        error = (outBase + out.count, msg)
    }

    mutating func convert(_ b: UnsafeBufferPointer<UInt8>, final: Bool, into out: inout [UInt8], outBase: Int) throws(AFSError) {
        guard let p = b.baseAddress, b.count > 0 else {
            return
        }
        let n = b.count
        try out.checkedReserve(out.count + (encoding == .utf8 || encoding == .ascii ? n : 2 * n), "the XML input buffer")
        switch encoding ?? .utf8 {
        case .utf8:
            var i = 0, runStart = 0
            while i < n {
                i = cafs_xml_scan_ascii(p, i, n)  // printable ASCII at once
                if i >= n { break }
                let c = p[i]
                if c >= 0x20 && c < 0x80 { i += 1; continue }
                if c < 0x80 {
                    if c == 0x09 || c == 0x0A || c == 0x0D { i += 1; continue }
                    out.append(contentsOf: UnsafeBufferPointer(start: p + runStart, count: i - runStart))
                    rawConverted += i
                    return fail("character U+\(hex(UInt32(c))) is not allowed in XML", out, outBase)
                }
                let len: Int
                var ok = true
                if c >= 0xC2 && c <= 0xDF { len = 2 } else if c >= 0xE0 && c <= 0xEF { len = 3 } else if c >= 0xF0 && c <= 0xF4 { len = 4 } else { len = 1; ok = false }
                if ok && i + len > n {
                    // Incomplete at the end: check what is there, keep it for later.
                    var valid = true
                    for k in 1..<(n - i) where p[i + k] & 0xC0 != 0x80 { valid = false }
                    if k2valid(p, i, n - i) && valid && !final {
                        out.append(contentsOf: UnsafeBufferPointer(start: p + runStart, count: i - runStart))
                        rawConverted += i
                        pending = Array(UnsafeBufferPointer(start: p + i, count: n - i))
                        return
                    }
                    ok = false
                }
                if ok {
                    for k in 1..<len where p[i + k] & 0xC0 != 0x80 { ok = false }
                    if ok && len == 3 && ((c == 0xE0 && p[i + 1] < 0xA0) || (c == 0xED && p[i + 1] >= 0xA0)) { ok = false }
                    if ok && len == 4 && ((c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] >= 0x90)) { ok = false }
                    if ok && len == 3 && c == 0xEF && p[i + 1] == 0xBF && (p[i + 2] == 0xBE || p[i + 2] == 0xBF) {
                        out.append(contentsOf: UnsafeBufferPointer(start: p + runStart, count: i - runStart))
                        rawConverted += i
                        return fail("character U+\(p[i + 2] == 0xBE ? "FFFE" : "FFFF") is not allowed in XML", out, outBase)
                    }
                }
                if !ok {
                    out.append(contentsOf: UnsafeBufferPointer(start: p + runStart, count: i - runStart))
                    rawConverted += i
                    return fail("invalid UTF-8 byte 0x\(String(c, radix: 16, uppercase: true))", out, outBase)
                }
                i += len
            }
            out.append(contentsOf: UnsafeBufferPointer(start: p + runStart, count: n - runStart))
            rawConverted += n
        case .latin1, .ascii:
            for i in 0..<n {
                let c = p[i]
                if c < 0x20 && c != 0x09 && c != 0x0A && c != 0x0D {
                    rawConverted += i
                    return fail("character U+\(hex(UInt32(c))) is not allowed in XML", out, outBase)
                }
                if c >= 0x80 {
                    if encoding == .ascii {
                        rawConverted += i
                        return fail("byte 0x\(String(c, radix: 16, uppercase: true)) is not US-ASCII", out, outBase)
                    }
                    out.append(0xC0 | c >> 6); out.append(0x80 | c & 0x3F)
                } else {
                    out.append(c)
                }
            }
            rawConverted += n
        case .utf16le, .utf16be:
            let le = encoding == .utf16le
            var i = 0
            func unit(_ k: Int) -> UInt32 { le ? UInt32(p[k]) | UInt32(p[k + 1]) << 8 : UInt32(p[k]) << 8 | UInt32(p[k + 1]) }
            while i + 1 < n {
                var c = unit(i)
                var len = 2
                if c >= 0xD800 && c <= 0xDBFF {
                    if i + 3 >= n {
                        if !final { break }
                        rawConverted += i
                        return fail("UTF-16 high surrogate at the end of the input", out, outBase)
                    }
                    let d = unit(i + 2)
                    guard d >= 0xDC00 && d <= 0xDFFF else {
                        rawConverted += i
                        return fail("unpaired UTF-16 surrogate 0x\(hex(c))", out, outBase)
                    }
                    c = 0x10000 + ((c - 0xD800) << 10) + (d - 0xDC00)
                    len = 4
                } else if c >= 0xDC00 && c <= 0xDFFF {
                    rawConverted += i
                    return fail("unpaired UTF-16 surrogate 0x\(hex(c))", out, outBase)
                }
                if !XMLChars.isChar(c) {
                    rawConverted += i
                    return fail("character U+\(hex(c)) is not allowed in XML", out, outBase)
                }
                XMLChars.appendUTF8(c, to: &out)
                i += len
            }
            rawConverted += i
            if i < n {
                if final {
                    return fail("the UTF-16 input ends in the middle of a character", out, outBase)
                }
                pending = Array(UnsafeBufferPointer(start: p + i, count: n - i))
            }
        }
    }

    /// Whether the `count` bytes at `p[i]` can begin a valid UTF-8 sequence.
    private func k2valid(_ p: UnsafePointer<UInt8>, _ i: Int, _ count: Int) -> Bool {
        let c = p[i]
        if count >= 2 {
            let d = p[i + 1]
            if c == 0xE0 && d < 0xA0 { return false }
            if c == 0xED && d >= 0xA0 { return false }
            if c == 0xF0 && d < 0x90 { return false }
            if c == 0xF4 && d >= 0x90 { return false }
        }
        return true
    }
}

func hex(_ v: UInt32) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return s.count < 4 ? String(repeating: "0", count: 4 - s.count) + s : s
}
