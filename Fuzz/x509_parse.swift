// Fuzz target: the X.509 reader, PEM, the security policy's pins and host matching.
//
// The input is a certificate (DER or PEM, any bytes). Properties:
// - no crash, no leak, on any bytes, through `Certificate.read` and the C API
//   (`afs_certificate_read`, `afs_security_policy_add_pinned_certificate`), which agree;
// - a refusal is `.invalidArgument` whose message names a byte offset, a PEM line, the
//   size limit or the empty input;
// - a certificate read is consistent: its SPKI is a DER SEQUENCE found inside its bytes;
//   reading its DER again gives the same certificate; its dNSName entries are ASCII;
// - the policy over a chain made of the input never crashes and answers OK, `.untrusted`
//   (message starting "rule N") or `.invalidArgument`; a certificate pinned in certificate
//   mode is accepted for its own DNS names when the stack trusted it;
// - the same bytes as a libcurl pin list: accepted exactly when every `;` entry is
//   "sha256//" + strict base64 of 32 bytes, and then nothing else changes; as a host name:
//   `HostMatch.reference` refuses or gives a lower-case A-label name or an IP address.
@testable import AFSerialization
import AFSerializationExports
import CAFSerialization

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var certs: [Certificate] = []
    var refusal: AFSError?
    do {
        certs = try Certificate.read(bytes)
        require(!certs.isEmpty, "read returned no certificate without an error")
    } catch {
        refusal = error
        require(error.status == .invalidArgument, "read failed with \(error), not .invalidArgument")
        let m = error.message
        require(m.contains("byte offset") || m.contains("PEM") || m.contains("limit") || m.contains("empty"),
                "an error without a place: \(m)")
    }
    for c in certs {
        require(c.subjectPublicKeyInfo.first == 0x30, "the SPKI is not a SEQUENCE")
        require(contains(c.der, c.subjectPublicKeyInfo), "the SPKI is not inside the certificate")
        require(c.dnsNames.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } }, "a non-ASCII dNSName was kept")
        let again = try? Certificate(der: c.der)
        require(again == c && again?.dnsNames == c.dnsNames && again?.notAfter == c.notAfter, "reading the DER again differs")
    }

    // The C API agrees.
    let box = ErrorBox()
    var out: OpaquePointer?
    let st = afs_certificate_read(data, size, &out, box.reset())
    require((st == AFS_OK) == (refusal == nil), "afs_certificate_read and Certificate.read disagree: \(box.message)")
    if st == AFS_OK {
        require(out != nil && afs_value_count(out) == certs.count, "afs_certificate_read gave the wrong count")
        afs_value_free(out)
    } else {
        require(out == nil, "a failed afs_certificate_read left a value")
        // The C message is the same, cut with "..." when it does not fit afs_error.
        let m = refusal?.message ?? ""
        require(box.message == m || (m.utf8.count > 500 && box.message.hasSuffix("...")), "the C message differs: \(box.message)")
        require(!m.utf8.contains(0), "a message holds a NUL byte: \(m)")
    }

    // The policy over a chain made of the input.
    for mode in [SecurityPolicy.PinningMode.none, .certificate, .publicKey] {
        var p = SecurityPolicy(mode: mode)
        p.time = 1_700_000_000
        if !certs.isEmpty { try? p.addPinnedCertificate(bytes) }
        let domain = certs.first?.dnsNames.first.map { $0.hasPrefix("*.") ? "a" + $0.dropFirst() : $0 } ?? "example.com"
        for trusted in [true, false] {
            do {
                try p.evaluate(chain: [bytes], domain: domain, chainTrusted: trusted)
            } catch {
                require(error.status == .untrusted || error.status == .invalidArgument, "evaluate failed with \(error)")
                if error.status == .untrusted { require(error.message.hasPrefix("rule "), "an untrusted message without its rule: \(error.message)") }
                // A pinned certificate, trusted by the stack, matching its own DNS name, is
                // accepted (when that name is a host name: IDNA may refuse what a SAN holds).
                if mode == .certificate && trusted && certs.count == 1, let name = certs[0].dnsNames.first,
                   error.status == .untrusted, let ref = try? HostMatch.reference(domain), HostMatch.matches(certs[0], ref) {
                    fail("a pinned, trusted certificate was refused for its own name \(name): \(error.message)")
                }
            }
        }
    }

    // The same bytes as a pin list.
    let text = String(decoding: bytes, as: UTF8.self)
    var q = SecurityPolicy(mode: .publicKey)
    let expectOK = text.utf8.split(separator: 0x3B, omittingEmptySubsequences: false).allSatisfy { e in
        guard e.starts(with: Array("sha256//".utf8)) else { return false }
        var off = 0
        return Base64.decode(e.dropFirst(8), errorOffset: &off)?.count == 32
    }
    do {
        try q.addPinnedPublicKeySHA256(text)
        require(expectOK, "a malformed pin list was accepted: \(show(bytes))")
    } catch {
        require(!expectOK, "a valid pin list was refused: \(error.message)")
        require(q.pinnedPublicKeyHashes.isEmpty, "a refused pin list added pins")
        require(error.status == .invalidArgument || error.status == .limit, "pins failed with \(error)")
    }
    // Strict base64 round-trips.
    var off = 0
    if let decoded = Base64.decode(bytes, errorOffset: &off) {
        var w = ByteWriter(capacity: 16)
        decoded.withUnsafeBufferPointer { Base64.encode($0, to: &w) }
        require((try? w.toString()) == String(decoding: bytes, as: UTF8.self), "base64 does not round-trip")
    }
    // As a host name.
    if size < 300, let ref = try? HostMatch.reference(text) {
        switch ref {
        case .dns(let d): require(d == d.lowercased() && !d.isEmpty && !d.contains("*"), "a host reference not folded: \(d)")
        case .ip(let ip): require(ip.count == 4 || ip.count == 16, "an IP reference of \(ip.count) bytes")
        }
    }
    return 0
}

func contains(_ hay: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, needle.count <= hay.count else { return needle.isEmpty }
    for i in 0...(hay.count - needle.count) where hay[i] == needle[0] && hay[i..<(i + needle.count)].elementsEqual(needle) {
        return true
    }
    return false
}
