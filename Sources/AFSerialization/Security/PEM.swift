// PEM (RFC 7468, strict "textual encoding" of certificates): detection and decoding of
// `-----BEGIN CERTIFICATE-----` blocks. Text outside blocks is ignored (RFC 7468 allows
// explanatory text); inside a block only base64 lines (and whitespace) are allowed.

public enum PEM {
    /// The default limit: a larger PEM text is refused before it is read
    /// (`SecurityLimits.maxPEMBytes` changes it).
    public static let maxBytes = 16 << 20

    static let begin = Array("-----BEGIN ".utf8)
    static let end = Array("-----END ".utf8)
    static let dashes = Array("-----".utf8)

    /// True when `bytes` look like PEM text: after optional whitespace, "-----BEGIN ", or a
    /// text line before it (explanatory text) and no byte of DER's first SEQUENCE tag.
    public static func isPEM(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first(where: { !isSpace($0) }) else { return false }
        if first == 0x30 { return false }  // DER starts with a SEQUENCE
        return find(begin, in: bytes, from: 0) != nil
    }

    /// The DER bytes of every CERTIFICATE block, in order.
    /// - Throws: `.invalidArgument` naming the block's line and what is wrong (an other label,
    ///   a missing END line, bad base64, no block at all).
    public static func certificates(_ text: [UInt8], maxBytes: Int = PEM.maxBytes) throws(AFSError) -> [[UInt8]] {
        guard text.count <= maxBytes else {
            throw AFSError(.invalidArgument, "PEM: \(text.count) bytes is more than the limit of \(maxBytes)")
        }
        var out: [[UInt8]] = []
        var pos = 0
        while let b = find(begin, in: text, from: pos) {
            let line = lineNumber(text, b)
            guard let labelEnd = find(dashes, in: text, from: b + begin.count) else {
                throw AFSError(.invalidArgument, "PEM: the BEGIN line at line \(line) does not end with \"-----\"")
            }
            let label = text[(b + begin.count)..<labelEnd]
            // "X509 CERTIFICATE": the label of old OpenSSL versions (RFC 7468 section 5.3).
            guard label.elementsEqual("CERTIFICATE".utf8) || label.elementsEqual("X509 CERTIFICATE".utf8) else {
                throw AFSError(.invalidArgument, "PEM: the block at line \(line) is \"\(Certificate.printable(String(decoding: label.prefix(40), as: UTF8.self)))\", not CERTIFICATE")
            }
            let bodyStart = labelEnd + dashes.count
            let endLine = end + Array(label) + dashes
            guard let e = find(endLine, in: text, from: bodyStart) else {
                throw AFSError(.invalidArgument, "PEM: the CERTIFICATE block at line \(line) has no \"-----END CERTIFICATE-----\" line")
            }
            try Memory.probe(e - bodyStart, "the base64 text of a PEM block")
            var b64: [UInt8] = []
            b64.reserveCapacity(e - bodyStart)
            for i in bodyStart..<e where !isSpace(text[i]) { b64.append(text[i]) }
            var bad = 0
            try Memory.probe(b64.count / 4 * 3, "a certificate decoded from PEM")
            guard let der = Base64.decode(b64, errorOffset: &bad), !der.isEmpty else {
                // The offset in the text of the bad-th base64 character.
                var at = e, k = 0
                for i in bodyStart..<e where !isSpace(text[i]) {
                    if k == bad { at = i; break }
                    k += 1
                }
                throw AFSError(.invalidArgument, "PEM: the CERTIFICATE block at line \(line) is not valid base64 (at line \(lineNumber(text, at)), byte offset \(at))")
            }
            out.append(der)
            pos = e + endLine.count
        }
        if out.isEmpty { throw AFSError(.invalidArgument, "PEM: no \"-----BEGIN CERTIFICATE-----\" block") }
        return out
    }

    static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D || c == 0x0B || c == 0x0C }

    static func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard needle.count <= hay.count else { return nil }
        var i = from
        while i + needle.count <= hay.count {
            if hay[i] == needle[0] && hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    static func lineNumber(_ text: [UInt8], _ offset: Int) -> Int {
        1 + text[..<min(offset, text.count)].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
    }
}
