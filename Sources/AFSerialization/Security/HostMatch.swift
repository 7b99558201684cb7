// Matching a host against a certificate's names, RFC 9525 (which replaced RFC 6125):
// - only subjectAltName is used; the subject's Common Name never is (browsers dropped that
//   fallback; RFC 9525 section 6.3 forbids it when the certificate has DNS names and no
//   longer defines it at all);
// - an IP literal (IPv4 dotted quad, IPv6, with or without brackets) matches iPAddress
//   entries only, byte for byte; a DNS host never matches an iPAddress entry and an IP
//   literal never matches a dNSName entry (not even "127.0.0.1" written as a dNSName);
// - DNS names are compared label by label after ASCII case folding; the host first goes
//   through the library's IDNA (UTS #46 ToASCII), so a U-label host matches its A-label SAN;
//   one trailing dot on either side is ignored;
// - a wildcard is accepted only as the whole left-most label ("*.example.com"), matches
//   exactly one non-empty label, and needs at least two labels after it ("*.com" matches
//   nothing). Partial wildcards ("f*.example.com", "xn--*.example.com", "*x.example.com")
//   and wildcards elsewhere never match.

public enum HostMatch {
    /// The parsed reference identity.
    public enum Reference: Equatable, Sendable {
        case dns(String)        // A-labels, lower case, no trailing dot
        case ip([UInt8])        // 4 or 16 bytes
    }

    /// The host as the policy compares it.
    /// - Throws: `.invalidArgument` when the host is empty or IDNA refuses it.
    public static func reference(_ host: String) throws(AFSError) -> Reference {
        var h = host
        if h.hasPrefix("[") && h.hasSuffix("]") && h.count >= 2 { h = String(h.dropFirst().dropLast()) }
        if let ip = ipBytes(h) { return .ip(ip) }
        if h.hasSuffix(".") {
            h.removeLast()
            if let ip = ipBytes(h) { return .ip(ip) }
        }
        guard !h.isEmpty else { throw AFSError(.invalidArgument, "domain \"\(host)\" is empty") }
        let ascii: String
        do { ascii = try IDNA.toASCII(h) } catch {
            let why = (error as? AFSError)?.message ?? "\(error)"
            throw AFSError(.invalidArgument, "domain \"\(Certificate.printable(host))\" is not a valid host name: \(why)")
        }
        let labels = ascii.split(separator: ".", omittingEmptySubsequences: false)
        guard !labels.contains(where: { $0.isEmpty }) else {
            throw AFSError(.invalidArgument, "domain \"\(Certificate.printable(host))\" has an empty label")
        }
        if ascii.contains("*") {
            throw AFSError(.invalidArgument, "domain \"\(Certificate.printable(host))\" holds \"*\" (a host, not a pattern, is expected)")
        }
        if let last = labels.last, last.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            throw AFSError(.invalidArgument, "domain \"\(Certificate.printable(host))\" ends in a numeric label: an IPv4 address is accepted only as a dotted quad")
        }
        return .dns(ascii)
    }

    /// IPv4 (four decimal parts, no leading zeros) or IPv6 bytes, else nil.
    public static func ipBytes(_ s: String) -> [UInt8]? {
        guard !s.isEmpty, s.utf8.count < 64, !s.utf8.contains(0) else { return nil }
        var b4 = in_addr()
        if s.contains(":") {
            var b6 = in6_addr()
            guard inet_pton(AF_INET6, s, &b6) == 1 else { return nil }
            return withUnsafeBytes(of: &b6) { Array($0) }
        }
        guard inet_pton(AF_INET, s, &b4) == 1 else { return nil }
        return withUnsafeBytes(of: &b4) { Array($0) }
    }

    /// True when one of the certificate's subjectAltName entries matches.
    public static func matches(_ cert: Certificate, _ ref: Reference) -> Bool {
        switch ref {
        case .ip(let ip): return cert.ipAddresses.contains(ip)
        case .dns(let host): return cert.dnsNames.contains { matches(pattern: $0, host: host) }
        }
    }

    /// One dNSName against an A-label, lower-case host.
    public static func matches(pattern raw: String, host: String) -> Bool {
        var p = Array(raw.utf8).map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        if p.last == 0x2E { p.removeLast() }
        guard !p.isEmpty else { return false }
        let h = Array(host.utf8)
        let pl = p.split(separator: 0x2E, omittingEmptySubsequences: false)
        let hl = h.split(separator: 0x2E, omittingEmptySubsequences: false)
        guard pl.count == hl.count, !pl.contains(where: { $0.isEmpty }) else { return false }
        for (i, (a, b)) in zip(pl, hl).enumerated() {
            if i == 0 && a.elementsEqual([0x2A]) {
                if pl.count < 3 { return false }  // "*.com"
                if b.isEmpty { return false }
                continue
            }
            if a.contains(0x2A) { return false }  // partial or non-left-most wildcard
            if !a.elementsEqual(b) { return false }
        }
        return true
    }

    /// The certificate's names for messages: "DNS:a, DNS:b, IP:1.2.3.4".
    public static func describe(_ cert: Certificate) -> String {
        var parts = cert.dnsNames.prefix(8).map { "DNS:\(Certificate.printable($0))" }
        if cert.dnsNames.count > 8 { parts.append("(\(cert.dnsNames.count - 8) more DNS names)") }
        parts += cert.ipAddresses.prefix(8).map { "IP:\(ipText($0))" }
        return parts.isEmpty ? "no subjectAltName names" : parts.joined(separator: ", ")
    }

    static func ipText(_ b: [UInt8]) -> String {
        if b.count == 4 { return b.map { String($0) }.joined(separator: ".") }
        if b.count == 16 {
            return stride(from: 0, to: 16, by: 2).map { String(UInt16(b[$0]) << 8 | UInt16(b[$0 + 1]), radix: 16) }.joined(separator: ":")
        }
        return "(\(b.count) bytes)"
    }

    public static func describe(_ ref: Reference) -> String {
        switch ref {
        case .dns(let d): return d
        case .ip(let b): return ipText(b)
        }
    }
}
