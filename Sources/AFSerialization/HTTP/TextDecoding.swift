// A response body as UTF-8 text, decoded as the WHATWG Encoding Standard says ("decode"):
// a BOM first (UTF-8, UTF-16BE, UTF-16LE; removed), else the charset parameter of the
// Content-Type, else the caller's fallback (default utf-8). Labels are WHATWG's (so
// `iso-8859-1`, `latin1` and `ascii` mean windows-1252); the single-byte encodings,
// UTF-16LE/BE, UTF-8, x-user-defined and replacement are decoded; the multi-byte CJK
// encodings are known labels that this library does not decode (`.encoding`). Invalid
// sequences become U+FFFD (for UTF-8 one per maximal subpart).

public enum TextDecoding {
    public enum Encoding: Equatable, Sendable {
        case utf8, utf16le, utf16be, replacement, xUserDefined
        case singleByte(Int)
        case unsupported(String)
    }

    /// The encoding a label names (ASCII whitespace trimmed, ASCII case-insensitive).
    public static func encoding(forLabel label: String) -> Encoding? {
        let trimmed = label.utf8.drop { isASCIIWhitespace($0) }.reversed().drop { isASCIIWhitespace($0) }.reversed()
        let key = String(decoding: trimmed.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
        // Binary search in the sorted label table.
        var lo = 0, hi = CharsetTables.labels.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if CharsetTables.labels[mid].0 < key { lo = mid + 1 } else { hi = mid }
        }
        guard lo < CharsetTables.labels.count, CharsetTables.labels[lo].0 == key else { return nil }
        let name = CharsetTables.labels[lo].1
        switch name {
        case "UTF-8": return .utf8
        case "UTF-16LE": return .utf16le
        case "UTF-16BE": return .utf16be
        case "replacement": return .replacement
        case "x-user-defined": return .xUserDefined
        default:
            if let i = CharsetTables.singleByteNames.firstIndex(of: name) { return .singleByte(i) }
            return .unsupported(name)
        }
    }

    static func isASCIIWhitespace(_ c: UInt8) -> Bool { c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x20 }

    /// application/json, text/json or a `+json` type.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let ct = contentType else { return false }
        let mime = ct.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first.map {
            String($0.trimmingASCIIWhitespace()).lowercased()
        } ?? ""
        return mime == "application/json" || mime == "text/json" || mime.hasSuffix("+json")
    }

    /// The `charset` parameter of a Content-Type value, unquoted; nil when absent.
    public static func charsetParameter(_ contentType: String?) -> String? {
        guard let ct = contentType else { return nil }
        let parts = ct.split(separator: ";", omittingEmptySubsequences: false).dropFirst()
        for p in parts {
            guard let eq = p.firstIndex(of: "=") else { continue }
            let name = p[..<eq].trimmingASCIIWhitespace().lowercased()
            guard name == "charset" else { continue }
            var v = Substring(p[p.index(after: eq)...].trimmingASCIIWhitespace())
            if v.hasPrefix("\"") {
                v = v.dropFirst()
                if let q = v.firstIndex(of: "\"") { v = v[..<q] }
                return String(v).replacingBackslashes()
            }
            return String(v)
        }
        return nil
    }

    /// The body as UTF-8. C: `afs_response_reader_text`.
    public static func decode(_ body: UnsafeBufferPointer<UInt8>, contentType: String?, fallback: String?) throws(AFSError) -> [UInt8] {
        var enc: Encoding
        var start = 0
        if isJSON(contentType) {
            // RFC 8259 8.1: JSON text is UTF-8; a UTF-8 BOM is tolerated (and removed). The
            // charset parameter and the fallback do not apply.
            let bom = body.count >= 3 && body[0] == 0xEF && body[1] == 0xBB && body[2] == 0xBF
            return try decode(UnsafeBufferPointer(rebasing: body[(bom ? 3 : 0)...]), as: .utf8)
        }
        if body.count >= 3 && body[0] == 0xEF && body[1] == 0xBB && body[2] == 0xBF {
            enc = .utf8
            start = 3
        } else if body.count >= 2 && body[0] == 0xFE && body[1] == 0xFF {
            enc = .utf16be
            start = 2
        } else if body.count >= 2 && body[0] == 0xFF && body[1] == 0xFE {
            enc = .utf16le
            start = 2
        } else if let label = charsetParameter(contentType) {
            guard let e = encoding(forLabel: label) else {
                throw AFSError(.encoding, "unknown charset label \(HTTPSyntax.quote(label)) in the Content-Type")
            }
            enc = e
        } else {
            let label = fallback ?? "utf-8"
            guard let e = encoding(forLabel: label) else {
                throw AFSError(.encoding, "unknown charset label \(HTTPSyntax.quote(label)) (the fallback)")
            }
            enc = e
        }
        return try decode(UnsafeBufferPointer(rebasing: body[start...]), as: enc)
    }

    public static func decode(_ b: UnsafeBufferPointer<UInt8>, as enc: Encoding) throws(AFSError) -> [UInt8] {
        var out: [UInt8] = []
        // Worst cases: 3 bytes per input byte (single-byte, UTF-8 errors), 3 per 2 (UTF-16).
        try out.checkedReserve(b.count &* 3 &+ 4, "the decoded text")
        switch enc {
        case .unsupported(let name):
            throw AFSError(.encoding, "the charset \(name) is known but not decoded by this library")
        case .replacement:
            if !b.isEmpty { appendScalar(0xFFFD, &out) }
        case .xUserDefined:
            for c in b { appendScalar(c < 0x80 ? UInt32(c) : 0xF780 + UInt32(c) - 0x80, &out) }
        case .singleByte(let t):
            let table = CharsetTables.singleByte[t]
            for c in b {
                if c < 0x80 {
                    out.append(c)
                } else {
                    let cp = table[Int(c) - 0x80]
                    appendScalar(cp == 0 ? 0xFFFD : UInt32(cp), &out)
                }
            }
        case .utf16le, .utf16be:
            let be = enc == .utf16be
            var i = 0
            var lead: UInt32?
            while i + 1 < b.count {
                let u = be ? UInt32(b[i]) << 8 | UInt32(b[i + 1]) : UInt32(b[i + 1]) << 8 | UInt32(b[i])
                i += 2
                if let l = lead {
                    lead = nil
                    if u >= 0xDC00 && u <= 0xDFFF {
                        appendScalar(0x10000 + ((l - 0xD800) << 10) + (u - 0xDC00), &out)
                        continue
                    }
                    appendScalar(0xFFFD, &out)
                }
                if u >= 0xD800 && u <= 0xDBFF {
                    lead = u
                } else if u >= 0xDC00 && u <= 0xDFFF {
                    appendScalar(0xFFFD, &out)
                } else {
                    appendScalar(u, &out)
                }
            }
            if lead != nil || i < b.count { appendScalar(0xFFFD, &out) }
        case .utf8:
            decodeUTF8(b, &out)
        }
        return out
    }

    /// WHATWG's UTF-8 decoder: one U+FFFD per maximal subpart of an ill-formed sequence.
    static func decodeUTF8(_ b: UnsafeBufferPointer<UInt8>, _ out: inout [UInt8]) {
        var i = 0
        let n = b.count
        while i < n {
            let c = b[i]
            if c < 0x80 {
                out.append(c)
                i += 1
                continue
            }
            var need = 0
            var lower: UInt8 = 0x80, upper: UInt8 = 0xBF
            switch c {
            case 0xC2...0xDF: need = 1
            case 0xE0: need = 2; lower = 0xA0
            case 0xE1...0xEC, 0xEE, 0xEF: need = 2
            case 0xED: need = 2; upper = 0x9F
            case 0xF0: need = 3; lower = 0x90
            case 0xF1...0xF3: need = 3
            case 0xF4: need = 3; upper = 0x8F
            default:
                appendScalar(0xFFFD, &out)
                i += 1
                continue
            }
            var j = i + 1
            var ok = true
            for k in 0..<need {
                guard j < n else { ok = false; break }
                let d = b[j]
                let lo: UInt8 = k == 0 ? lower : 0x80, hi: UInt8 = k == 0 ? upper : 0xBF
                guard d >= lo && d <= hi else { ok = false; break }
                j += 1
            }
            if ok {
                for k in i..<j { out.append(b[k]) }
            } else {
                appendScalar(0xFFFD, &out)
            }
            i = j
        }
    }

    @inline(__always)
    static func appendScalar(_ v: UInt32, _ out: inout [UInt8]) {
        switch v {
        case 0..<0x80: out.append(UInt8(v))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | v >> 6)); out.append(UInt8(0x80 | v & 0x3F))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | v >> 12)); out.append(UInt8(0x80 | v >> 6 & 0x3F)); out.append(UInt8(0x80 | v & 0x3F))
        default:
            out.append(UInt8(0xF0 | v >> 18)); out.append(UInt8(0x80 | v >> 12 & 0x3F))
            out.append(UInt8(0x80 | v >> 6 & 0x3F)); out.append(UInt8(0x80 | v & 0x3F))
        }
    }
}

extension StringProtocol {
    func trimmingASCIIWhitespace() -> Substring {
        var s = Substring(self)
        while let f = s.utf8.first, TextDecoding.isASCIIWhitespace(f) { s = s.dropFirst() }
        while let l = s.utf8.last, TextDecoding.isASCIIWhitespace(l) { s = s.dropLast() }
        return s
    }
}

extension String {
    func replacingBackslashes() -> String {
        var out = ""
        var esc = false
        for ch in self {
            if esc || ch != "\\" { out.append(ch); esc = false } else { esc = true }
        }
        return out
    }
}
