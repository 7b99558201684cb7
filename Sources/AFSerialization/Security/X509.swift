// An X.509 certificate reader (RFC 5280 structure, strict DER) for what a security policy
// needs: the SubjectPublicKeyInfo bytes, the subjectAltName dNSName and iPAddress entries,
// the validity period, and the subject's Common Name for messages. It verifies no signature
// and checks no RFC 5280 profile rule beyond the structure (real roots have serial 0, some
// have v1 without extensions): every element is well-formed DER, the fields it reads have
// the types RFC 5280 gives them, and nothing follows the certificate.

/// A parsed certificate. Immutable.
public struct Certificate: Sendable, Equatable {
    /// The default limit: a larger certificate is refused before it is read
    /// (`SecurityLimits.maxCertificateBytes` changes it).
    public static let maxBytes = 1 << 20

    /// The certificate's DER bytes.
    public let der: [UInt8]
    /// The DER SubjectPublicKeyInfo element (as public-key pins compare it).
    public let subjectPublicKeyInfo: [UInt8]
    /// subjectAltName dNSName entries, as written (ASCII).
    public let dnsNames: [String]
    /// subjectAltName iPAddress entries: 4 or 16 bytes (other lengths are kept, never match).
    public let ipAddresses: [[UInt8]]
    /// Validity, in seconds since 1970-01-01 UTC.
    public let notBefore: Int64
    public let notAfter: Int64
    /// The subject's first Common Name (for messages only; never matched against a host).
    public let commonName: String?
    /// The version field (0 for v1, 2 for v3).
    public let version: Int

    static let oidSubjectAltName: [UInt8] = [0x55, 0x1D, 0x11]
    static let oidCommonName: [UInt8] = [0x55, 0x04, 0x03]

    /// Reads a DER certificate.
    /// - Throws: `.invalidArgument` naming the field and byte offset.
    public init(der bytes: [UInt8], limits: SecurityLimits = SecurityLimits()) throws(AFSError) {
        guard bytes.count <= limits.maxCertificateBytes else {
            throw AFSError(.invalidArgument, "certificate: \(bytes.count) bytes is more than the limit of \(limits.maxCertificateBytes)")
        }
        guard !bytes.isEmpty else { throw AFSError(.invalidArgument, "certificate: empty (0 bytes)") }
        der = bytes
        var top = DERReader(bytes[...], maxDepth: limits.maxDERDepth)
        let cert = try top.read("Certificate", tag: 0x30)
        try top.finish("Certificate (trailing bytes)")
        try top.validate(cert, "Certificate")

        var c = try top.enter(cert, "Certificate")
        let tbsElement = try c.read("tbsCertificate", tag: 0x30)
        _ = try c.read("signatureAlgorithm", tag: 0x30)
        _ = try c.read("signatureValue", tag: 0x03)
        try c.finish("Certificate")

        var tbs = try c.enter(tbsElement, "tbsCertificate")
        var version = 0
        if let v = try tbs.readOptional("version", tag: 0xA0) {
            var vr = try tbs.enter(v, "version")
            let n = try vr.read("version", tag: 0x02)
            try vr.finish("version")
            guard let value = try n.integer("version"), (0...2).contains(value) else {
                throw DER.error("version", n.offset, "not v1, v2 or v3")
            }
            if value == 0 { throw DER.error("version", v.offset, "v1 written out (DER omits a DEFAULT value)") }
            version = Int(value)
        }
        self.version = version
        try tbs.read("serialNumber", tag: 0x02).integer("serialNumber")
        _ = try tbs.read("signature", tag: 0x30)
        _ = try tbs.read("issuer", tag: 0x30)
        let validity = try tbs.read("validity", tag: 0x30)
        var vr = try tbs.enter(validity, "validity")
        notBefore = try Certificate.time(vr.read("validity.notBefore"), "validity.notBefore")
        notAfter = try Certificate.time(vr.read("validity.notAfter"), "validity.notAfter")
        try vr.finish("validity")
        let subject = try tbs.read("subject", tag: 0x30)
        commonName = try Certificate.commonName(subject, tbs)
        let spki = try tbs.read("subjectPublicKeyInfo", tag: 0x30)
        var sr = try tbs.enter(spki, "subjectPublicKeyInfo")
        _ = try sr.read("subjectPublicKeyInfo.algorithm", tag: 0x30)
        _ = try sr.read("subjectPublicKeyInfo.subjectPublicKey", tag: 0x03)
        try sr.finish("subjectPublicKeyInfo")
        try Memory.probe(spki.encoded.count, "a copy of the SubjectPublicKeyInfo")
        subjectPublicKeyInfo = Array(spki.encoded)
        _ = try tbs.readOptional("issuerUniqueID", tag: 0x81)
        _ = try tbs.readOptional("subjectUniqueID", tag: 0x82)
        var dns: [String] = [], ips: [[UInt8]] = []
        if let ext = try tbs.readOptional("extensions", tag: 0xA3) {
            var er = try tbs.enter(ext, "extensions")
            let list = try er.read("extensions", tag: 0x30)
            try er.finish("extensions")
            var lr = try er.enter(list, "extensions")
            var seen: [ArraySlice<UInt8>] = []
            var sawSAN = false
            while !lr.isAtEnd {
                let e = try lr.read("extension", tag: 0x30)
                var xr = try lr.enter(e, "extension")
                let oid = try xr.read("extension.extnID", tag: 0x06)
                try oid.checkOID("extension.extnID")
                if seen.contains(oid.contents) {
                    throw DER.error("extension \(oid.oidText)", e.offset, "appears twice")
                }
                seen.append(oid.contents)
                if let crit = try xr.readOptional("extension.critical", tag: 0x01), try !crit.boolean("extension.critical") {
                    throw DER.error("extension.critical", crit.offset, "FALSE written out (DER omits a DEFAULT value)")
                }
                let value = try xr.read("extension.extnValue", tag: 0x04)
                try xr.finish("extension")
                if oid.contents.elementsEqual(Certificate.oidSubjectAltName) {
                    sawSAN = true
                    try Certificate.subjectAltNames(value, &dns, &ips)
                }
            }
            _ = sawSAN
        }
        try tbs.finish("tbsCertificate")
        dnsNames = dns
        ipAddresses = ips
    }

    public static func == (a: Certificate, b: Certificate) -> Bool { a.der == b.der }

    /// Reads the GeneralNames inside a subjectAltName extension's OCTET STRING.
    static func subjectAltNames(_ value: DERElement, _ dns: inout [String], _ ips: inout [[UInt8]]) throws(AFSError) {
        // The OCTET STRING holds its own DER element; offsets stay the certificate's.
        var inner = DERReader(value.contents)
        let seq = try inner.read("subjectAltName", tag: 0x30)
        try inner.finish("subjectAltName")
        try inner.validate(seq, "subjectAltName")
        var r = try inner.enter(seq, "subjectAltName")
        if r.isAtEnd { throw DER.error("subjectAltName", seq.offset, "an empty GeneralNames (RFC 5280 requires at least one)") }
        while !r.isAtEnd {
            let n = try r.read("subjectAltName entry")
            switch n.tag {
            case 0x82:
                for (k, b) in n.contents.enumerated() where b >= 0x80 {
                    throw DER.error("subjectAltName dNSName", n.contentsOffset + k, "byte 0x\(r.hex(b)) is not IA5 (ASCII)")
                }
                dns.append(String(decoding: n.contents, as: UTF8.self))
            case 0x87:
                ips.append(Array(n.contents))
            case 0x81, 0x86:
                for (k, b) in n.contents.enumerated() where b >= 0x80 {
                    throw DER.error("subjectAltName \(n.tag == 0x81 ? "rfc822Name" : "uniformResourceIdentifier")",
                                    n.contentsOffset + k, "byte 0x\(r.hex(b)) is not IA5 (ASCII)")
                }
            case 0x88:
                try n.checkOID("subjectAltName registeredID")
            case 0xA0:  // otherName ::= SEQUENCE { type-id OID, value [0] EXPLICIT ANY }: not used, shape checked
                var o = try r.enter(n, "subjectAltName otherName")
                try o.read("subjectAltName otherName type-id", tag: 0x06).checkOID("subjectAltName otherName type-id")
                _ = try o.read("subjectAltName otherName value", tag: 0xA0)
                try o.finish("subjectAltName otherName")
            case 0xA3, 0xA4, 0xA5:
                break  // x400Address, directoryName, ediPartyName: not used
            default:
                throw DER.error("subjectAltName entry", n.offset, "\(DER.tagName(n.tag)) is not a GeneralName")
            }
        }
    }

    /// The first Common Name of a Name (a string for messages), checking the Name's shape.
    static func commonName(_ name: DERElement, _ parent: DERReader) throws(AFSError) -> String? {
        var found: String?
        var r = try parent.enter(name, "subject")
        while !r.isAtEnd {
            let rdn = try r.read("subject RelativeDistinguishedName", tag: 0x31)
            var sr = try r.enter(rdn, "subject RelativeDistinguishedName")
            while !sr.isAtEnd {
                let atv = try sr.read("subject AttributeTypeAndValue", tag: 0x30)
                var ar = try sr.enter(atv, "subject AttributeTypeAndValue")
                let type = try ar.read("subject attribute type", tag: 0x06)
                try type.checkOID("subject attribute type")
                let value = try ar.read("subject attribute value")
                try ar.finish("subject AttributeTypeAndValue")
                if found == nil && type.contents.elementsEqual(oidCommonName) {
                    found = directoryString(value)
                }
            }
        }
        return found
    }

    /// A DirectoryString's text for messages (invalid bytes become U+FFFD).
    static func directoryString(_ e: DERElement) -> String {
        switch e.tag {
        case 0x1E:  // BMPString: UTF-16BE
            var units: [UInt16] = []
            var i = e.contents.startIndex
            while i + 1 < e.contents.endIndex { units.append(UInt16(e.contents[i]) << 8 | UInt16(e.contents[i + 1])); i += 2 }
            return String(decoding: units, as: UTF16.self)
        case 0x1C:  // UniversalString: UTF-32BE
            var s = ""
            var i = e.contents.startIndex
            while i + 3 < e.contents.endIndex {
                let v = e.contents[i...(i + 3)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                s.unicodeScalars.append(Unicode.Scalar(v) ?? "\u{FFFD}")
                i += 4
            }
            return s
        case 0x14:  // TeletexString: read as Latin-1
            return String(String.UnicodeScalarView(e.contents.map { Unicode.Scalar($0) }))
        default:
            return String(decoding: e.contents, as: UTF8.self)
        }
    }

    /// A UTCTime or GeneralizedTime as Unix seconds. DER forms only: `YYMMDDHHMMSSZ` and
    /// `YYYYMMDDHHMMSSZ` (RFC 5280 4.1.2.5; UTCTime years 50-99 are 19xx).
    static func time(_ e: DERElement, _ field: String) throws(AFSError) -> Int64 {
        let c = Array(e.contents)
        let digits: Int
        switch e.tag {
        case 0x17: digits = 12
        case 0x18: digits = 14
        default: throw DER.error(field, e.offset, "expected UTCTime or GeneralizedTime, found \(DER.tagName(e.tag))")
        }
        guard c.count == digits + 1, c[digits] == 0x5A, c[..<digits].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw DER.error(field, e.offset, "\"\(printable(String(decoding: c.prefix(40), as: UTF8.self)))\" is not in the DER form \(digits == 12 ? "YYMMDDHHMMSSZ" : "YYYYMMDDHHMMSSZ")")
        }
        func num(_ i: Int, _ n: Int) -> Int { c[i..<(i + n)].reduce(0) { $0 * 10 + Int($1 - 0x30) } }
        var year: Int, k: Int
        if digits == 12 {
            year = num(0, 2)
            year += year >= 50 ? 1900 : 2000
            k = 2
        } else {
            year = num(0, 4)
            k = 4
        }
        let month = num(k, 2), day = num(k + 2, 2), hour = num(k + 4, 2), minute = num(k + 6, 2), second = num(k + 8, 2)
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...12).contains(month), day >= 1, day <= monthDays[month - 1], hour < 24, minute < 60, second < 60 else {
            throw DER.error(field, e.offset, "\"\(printable(String(decoding: c, as: UTF8.self)))\" is not a valid date and time")
        }
        return daysFromCivil(year, month, day) * 86400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int64 {
        let y = Int64(m <= 2 ? y0 - 1 : y0)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = Int64((m + 9) % 12)
        let doy = (153 * mp + 2) / 5 + Int64(d) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    /// A short name for messages: the Common Name, else the first DNS name, else "(no name)".
    public var displayName: String {
        if let cn = commonName { return "CN=\"\(Certificate.printable(cn))\"" }
        if let d = dnsNames.first { return "DNS:\(Certificate.printable(d))" }
        return "(no subject Common Name)"
    }

    /// `s` with control characters escaped and cut at 80 characters, for messages.
    static func printable(_ s: String) -> String {
        var out = ""
        for (i, u) in s.unicodeScalars.enumerated() {
            if i == 80 { out += "..."; break }
            if u.value < 0x20 || u.value == 0x7F { out += "\\x\(String(u.value, radix: 16))" } else { out.unicodeScalars.append(u) }
        }
        return out
    }
}

extension Certificate {
    /// The certificates of DER bytes (one) or PEM text (each CERTIFICATE block).
    /// - Throws: `.invalidArgument` naming the block, field and offset.
    public static func read(_ bytes: [UInt8], limits: SecurityLimits = SecurityLimits()) throws(AFSError) -> [Certificate] {
        guard PEM.isPEM(bytes) else { return [try Certificate(der: bytes, limits: limits)] }
        var list: [Certificate] = []
        for (i, der) in try PEM.certificates(bytes, maxBytes: limits.maxPEMBytes).enumerated() {
            do { list.append(try Certificate(der: der, limits: limits)) } catch {
                throw AFSError(.invalidArgument, "PEM certificate \(i + 1): \(error.message)")
            }
        }
        return list
    }

    /// What the reader found, as a value: spki (data), spki_sha256 (data), dns_names,
    /// ip_addresses (data), not_before, not_after (Unix seconds), common_name (or null),
    /// version (0 for v1).
    public var summary: Value {
        .dict(ValueDict([
            ("spki", .data(subjectPublicKeyInfo)),
            ("spki_sha256", .data(SHA256.hash(subjectPublicKeyInfo))),
            ("dns_names", .array(dnsNames.map { .string($0) })),
            ("ip_addresses", .array(ipAddresses.map { .data($0) })),
            ("not_before", .int(notBefore)),
            ("not_after", .int(notAfter)),
            ("common_name", commonName.map { .string($0) } ?? .null),
            ("version", .int(Int64(version))),
        ]))
    }
}
