import XCTest
@testable import AFSerialization

// The DER reader, the X.509 reader, host matching and the policy's rules.
//
// Certificates are built here with a small DER writer: the library verifies no signature, so
// a certificate with a dummy signature is read exactly like a signed one, and each test
// states the fields it needs (names, validity, keys) instead of reading fixture files.

/// A DER writer for test certificates.
enum CertBuilder {
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let n = content.count
        var out: [UInt8] = [tag]
        if n < 0x80 {
            out.append(UInt8(n))
        } else {
            var lenBytes: [UInt8] = []
            var v = n
            while v > 0 { lenBytes.insert(UInt8(v & 0xFF), at: 0); v >>= 8 }
            out.append(0x80 | UInt8(lenBytes.count))
            out += lenBytes
        }
        return out + content
    }
    static func seq(_ parts: [UInt8]...) -> [UInt8] { tlv(0x30, parts.flatMap { $0 }) }
    static let oidEC: [UInt8] = [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
    static let oidP256: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
    static let sigAlg: [UInt8] = seq([0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02])

    /// A P-256-shaped SubjectPublicKeyInfo whose point bytes come from `seed`.
    static func spki(_ seed: UInt64) -> [UInt8] {
        var g = SeededGenerator(seed: seed)
        let point: [UInt8] = [0x04] + (0..<64).map { _ in UInt8.random(in: 0...255, using: &g) }
        return seq(seq(oidEC, oidP256), tlv(0x03, [0x00] + point))
    }

    static func name(_ cn: String?) -> [UInt8] {
        guard let cn = cn else { return seq() }
        return seq(tlv(0x31, seq([0x06, 0x03, 0x55, 0x04, 0x03], tlv(0x0C, Array(cn.utf8)))))
    }

    /// A certificate. `key` seeds the public key; times are UTCTime or GeneralizedTime text.
    static func make(cn: String?, issuer: String? = "Test CA", dns: [String] = [], ips: [[UInt8]] = [], key: UInt64,
                     notBefore: String = "200101000000Z", notAfter: String = "20491231235959Z",
                     serial: [UInt8] = [0x01], extensions: [[UInt8]] = []) -> [UInt8] {
        func time(_ t: String) -> [UInt8] { tlv(t.count == 13 ? 0x17 : 0x18, Array(t.utf8)) }
        var exts = extensions
        if !dns.isEmpty || !ips.isEmpty {
            let names = dns.map { tlv(0x82, Array($0.utf8)) } + ips.map { tlv(0x87, $0) }
            exts.append(seq([0x06, 0x03, 0x55, 0x1D, 0x11], tlv(0x04, seq(names.flatMap { $0 }))))
        }
        var tbs = tlv(0xA0, tlv(0x02, [0x02])) + tlv(0x02, serial) + sigAlg + name(issuer)
            + seq(time(notBefore), time(notAfter)) + name(cn) + spki(key)
        if !exts.isEmpty { tbs += tlv(0xA3, seq(exts.flatMap { $0 })) }
        return seq(seq(tbs), sigAlg, tlv(0x03, [0x00, 0x01, 0x02]))
    }
}

final class DERAndX509Tests: XCTestCase {
    func testReadsTheFieldsThePolicyNeeds() throws {
        let der = CertBuilder.make(cn: "httpbin.org", dns: ["httpbin.org", "*.httpbin.org"], ips: [[127, 0, 0, 1]], key: 7,
                                   notBefore: "491231235959Z", notAfter: "20500101000000Z")
        let c = try Certificate(der: der)
        XCTAssertEqual(c.dnsNames, ["httpbin.org", "*.httpbin.org"])
        XCTAssertEqual(c.ipAddresses, [[127, 0, 0, 1]])
        XCTAssertEqual(c.commonName, "httpbin.org")
        XCTAssertEqual(c.subjectPublicKeyInfo, CertBuilder.spki(7))
        XCTAssertEqual(c.notBefore, 2524607999)   // 2049-12-31T23:59:59Z
        XCTAssertEqual(c.notAfter, 2524608000)    // 2050-01-01T00:00:00Z
        XCTAssertEqual(c.version, 2)
    }

    func testUTCTimeCentury() throws {
        let c = try Certificate(der: CertBuilder.make(cn: "x", key: 1, notBefore: "500101000000Z", notAfter: "491231235959Z"))
        XCTAssertEqual(c.notBefore, -631152000)   // 1950-01-01
        XCTAssertEqual(c.notAfter, 2524607999)    // 2049-12-31T23:59:59
    }

    /// Malformed certificates: each error names the field and a byte offset.
    func testMalformedCertificatesAreRefusedWithFieldAndOffset() {
        let good = CertBuilder.make(cn: "a.example", dns: ["a.example"], key: 3)
        func refused(_ bytes: [UInt8], _ expect: String, file: StaticString = #filePath, line: UInt = #line) {
            do {
                _ = try Certificate(der: bytes)
                XCTFail("accepted", file: file, line: line)
            } catch {
                XCTAssertEqual(error.status, .invalidArgument, file: file, line: line)
                XCTAssertTrue(error.message.contains(expect), "\(error.message) lacks \(expect)", file: file, line: line)
                XCTAssertTrue(error.message.contains("byte offset") || error.message.contains("bytes"), error.message, file: file, line: line)
            }
        }
        refused([], "empty")
        refused(Array(good.dropLast()), "truncated")
        refused(good + [0x00], "unexpected bytes after")
        var indefinite = good
        indefinite[1] = 0x80
        refused(indefinite, "indefinite length")
        // A non-minimal long-form length: 0x82 00 xx.
        var nonMinimal = good
        XCTAssertEqual(nonMinimal[1] & 0x80, 0x80)
        let n = Int(nonMinimal[1] & 0x7F)
        nonMinimal.replaceSubrange(1...1, with: [0x80 | UInt8(n + 1), 0x00])
        refused(nonMinimal, "non-minimal length")
        // A short length written in the long form.
        refused([0x30, 0x81, 0x03, 0x02, 0x01, 0x00], "non-minimal length")
        // Deep nesting.
        var deep: [UInt8] = [0x05, 0x00]
        for _ in 0..<40 { deep = CertBuilder.tlv(0x30, deep) }
        refused(deep, "nested deeper than 32")
        // Wrong types.
        refused(CertBuilder.seq(CertBuilder.tlv(0x02, [1])), "tbsCertificate")
        refused(CertBuilder.make(cn: "x", key: 1, notBefore: "2001010000Z"), "validity.notBefore")
        refused(CertBuilder.make(cn: "x", key: 1, notAfter: "20491331235959Z"), "not a valid date")
        refused(CertBuilder.make(cn: "x", key: 1, serial: [0x00, 0x01]), "non-minimal INTEGER")
        refused(CertBuilder.make(cn: "x", dns: ["caf\u{E9}.example"], key: 1), "not IA5")
        let dupExt = CertBuilder.seq([0x06, 0x03, 0x55, 0x1D, 0x13], CertBuilder.tlv(0x04, CertBuilder.seq()))
        refused(CertBuilder.make(cn: "x", key: 1, extensions: [dupExt, dupExt]), "appears twice")
        let critFalse = CertBuilder.seq([0x06, 0x03, 0x55, 0x1D, 0x13], [0x01, 0x01, 0x00], CertBuilder.tlv(0x04, CertBuilder.seq()))
        refused(CertBuilder.make(cn: "x", key: 1, extensions: [critFalse]), "FALSE written out")
        refused(Array(repeating: 0x30, count: Certificate.maxBytes + 1), "limit")
    }

    func testSerialZeroAndVersion1AreRead() throws {
        // Real roots (Debian's bundle) have serial 0; v1 certificates have no version field.
        let c = try Certificate(der: CertBuilder.make(cn: "root", key: 1, serial: [0x00]))
        XCTAssertEqual(c.commonName, "root")
    }

    func testPEMWithSeveralCertificates() throws {
        let a = CertBuilder.make(cn: "a", key: 1), b = CertBuilder.make(cn: "b", key: 2)
        func pem(_ d: [UInt8]) -> String {
            var w = ByteWriter(capacity: 64)
            d.withUnsafeBufferPointer { Base64.encode($0, to: &w) }
            let s = try! w.toString()
            var lines: [String] = []
            var i = s.startIndex
            while i < s.endIndex { let j = s.index(i, offsetBy: 64, limitedBy: s.endIndex) ?? s.endIndex; lines.append(String(s[i..<j])); i = j }
            return "-----BEGIN CERTIFICATE-----\n" + lines.joined(separator: "\n") + "\n-----END CERTIFICATE-----\n"
        }
        let text = "explanatory text\n" + pem(a) + pem(b)
        XCTAssertTrue(PEM.isPEM(Array(text.utf8)))
        XCTAssertFalse(PEM.isPEM(a))
        XCTAssertEqual(try Certificate.read(Array(text.utf8)).map { $0.commonName }, ["a", "b"])
        XCTAssertThrowsError(try Certificate.read(Array("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8))) {
            XCTAssertTrue(($0 as! AFSError).message.contains("not CERTIFICATE"))
        }
        XCTAssertThrowsError(try Certificate.read(Array("-----BEGIN CERTIFICATE-----\nAA!A\n-----END CERTIFICATE-----\n".utf8))) {
            XCTAssertTrue(($0 as! AFSError).message.contains("line 2"), ($0 as! AFSError).message)
        }
        XCTAssertThrowsError(try Certificate.read(Array("-----BEGIN CERTIFICATE-----\nAAAA\n".utf8)))
    }

    /// x509_parse (Fuzz/regressions/x509_parse/nul-in-a-pem-label): a PEM label's bytes went
    /// into the message as they were, so a NUL cut the C message short.
    func testMessagesShowInputBytesEscaped() {
        let text = Array("-----BEGIN PR\u{0}KEY-----\nAAAA\n-----END PR\u{0}KEY-----\n".utf8)
        XCTAssertThrowsError(try Certificate.read(text)) {
            let m = ($0 as! AFSError).message
            XCTAssertFalse(m.utf8.contains(0), m)
            XCTAssertTrue(m.contains("PR\\x0KEY"), m)
        }
    }

    func testBase64DecodeIsStrict() {
        var off = 0
        XCTAssertEqual(Base64.decode(Array("aGVsbG8=".utf8), errorOffset: &off), Array("hello".utf8))
        XCTAssertEqual(Base64.decode(Array("aGk=".utf8), errorOffset: &off), Array("hi".utf8))
        XCTAssertNil(Base64.decode(Array("aGVsbG8".utf8), errorOffset: &off))
        XCTAssertNil(Base64.decode(Array("aGVsbG9=".utf8), errorOffset: &off))  // non-zero unused bits
        XCTAssertNil(Base64.decode(Array("aG=sbG8=".utf8), errorOffset: &off))
        XCTAssertEqual(off, 2)
    }
}

final class HostMatchTests: XCTestCase {
    func match(_ names: [String], ips: [[UInt8]] = [], _ host: String) -> Bool {
        let c = try! Certificate(der: CertBuilder.make(cn: host, dns: names, ips: ips, key: 1))
        guard let ref = try? HostMatch.reference(host) else { return false }
        return HostMatch.matches(c, ref)
    }

    /// RFC 9525 cases.
    func testDNSNamesAndWildcards() {
        XCTAssertTrue(match(["example.com"], "example.com"))
        XCTAssertTrue(match(["Example.COM"], "eXample.com"))
        XCTAssertTrue(match(["example.com."], "example.com"))
        XCTAssertTrue(match(["example.com"], "example.com."))
        XCTAssertFalse(match(["example.com"], "www.example.com"))
        XCTAssertTrue(match(["*.example.com"], "www.example.com"))
        XCTAssertTrue(match(["*.example.com"], "WWW.Example.Com"))
        XCTAssertFalse(match(["*.example.com"], "example.com"))          // one label, not zero
        XCTAssertFalse(match(["*.example.com"], "a.b.example.com"))      // not two
        XCTAssertFalse(match(["*.com"], "example.com"))                  // two labels needed after *
        XCTAssertFalse(match(["w*.example.com"], "www.example.com"))     // partial wildcards never
        XCTAssertFalse(match(["*w.example.com"], "www.example.com"))
        XCTAssertFalse(match(["xn--*.example.com"], "xn--caf-dma.example.com"))
        XCTAssertFalse(match(["www.*.com"], "www.example.com"))          // not left-most
        XCTAssertFalse(match(["*"], "localhost"))
        XCTAssertFalse(match([], "example.com"))                          // CN is never used
    }

    func testIDNA() {
        XCTAssertTrue(match(["xn--caf-dma.example"], "café.example"))
        XCTAssertTrue(match(["xn--caf-dma.example"], "CAFÉ.example"))
        XCTAssertTrue(match(["*.shop.example"], "café.shop.example"))    // a whole-label wildcard
        XCTAssertTrue(match(["xn--caf-dma.example"], "xn--caf-dma.example"))
        XCTAssertFalse(match(["cafe.example"], "café.example"))
    }

    func testIPAddresses() {
        XCTAssertTrue(match([], ips: [[127, 0, 0, 1]], "127.0.0.1"))
        XCTAssertFalse(match(["127.0.0.1"], "127.0.0.1"))                 // never a dNSName
        XCTAssertFalse(match([], ips: [[127, 0, 0, 1]], "localhost"))
        var v6 = [UInt8](repeating: 0, count: 16)
        v6[15] = 1
        XCTAssertTrue(match([], ips: [v6], "::1"))
        XCTAssertTrue(match([], ips: [v6], "[::1]"))
        XCTAssertTrue(match([], ips: [v6], "0:0:0:0:0:0:0:1"))
        XCTAssertFalse(match([], ips: [[127, 0, 0, 1]], "::1"))
        XCTAssertFalse(match(["*.0.0.1"], "127.0.0.1"))
        XCTAssertThrowsError(try HostMatch.reference("127.1"))               // not a dotted quad
        XCTAssertThrowsError(try HostMatch.reference(""))
        XCTAssertThrowsError(try HostMatch.reference("*.example.com"))
        XCTAssertThrowsError(try HostMatch.reference("a..example"))
    }
}

/// AFNetworking's AFSecurityPolicyTests (AFNetworking commit d9f589cc), ported case by case
/// as a table. The upstream file was not available here: the case names and outcomes are
/// reconstructed from the published test file's behaviour (httpbin.org chain: leaf,
/// intermediate, root; the api.app.net (ADN) chain; self-signed "foobar.com" certificates)
/// and checked against AFSecurityPolicy's code. Our chains are built with the same shape and
/// names; "trusted" stands for what Apple's trust evaluation concluded upstream.
/// Not ported (Apple trust APIs, not the policy's rules): the NSBundle certificate loading
/// tests (certificatesInBundle:, defaultPolicy's bundled certificates) and NSSecureCoding.
final class SecurityPolicyTests: XCTestCase {
    // The httpbin.org chain (leaf, intermediate, root) and the ADN chain.
    static let httpbinLeaf = CertBuilder.make(cn: "httpbin.org", issuer: "COMODO RSA Domain Validation Secure Server CA",
                                              dns: ["httpbin.org", "www.httpbin.org"], key: 11)
    static let httpbinIntermediate = CertBuilder.make(cn: "COMODO RSA Domain Validation Secure Server CA", issuer: "COMODO RSA Certification Authority", key: 12)
    static let httpbinRoot = CertBuilder.make(cn: "COMODO RSA Certification Authority", issuer: "AddTrust External CA Root", key: 13)
    static let httpbin = [httpbinLeaf, httpbinIntermediate, httpbinRoot]
    static let adnLeaf = CertBuilder.make(cn: "*.app.net", issuer: "DigiCert SHA2 Secure Server CA", dns: ["*.app.net", "app.net"], key: 21)
    static let adnIntermediate = CertBuilder.make(cn: "DigiCert SHA2 Secure Server CA", issuer: "DigiCert Global Root CA", key: 22)
    static let adn = [adnLeaf, adnIntermediate]
    // Self-signed certificates (AFNetworking's "AFUTSelfSigned..." / foobar.com fixtures).
    static let foobar = CertBuilder.make(cn: "foobar.com", issuer: "foobar.com", dns: ["foobar.com"], key: 31, notAfter: "20380101000000Z")
    static let foobarCNOnly = CertBuilder.make(cn: "foobar.com", issuer: "foobar.com", key: 32)
    static let noDomain = CertBuilder.make(cn: nil, issuer: "AFNetworking", key: 33)
    static let wildcard = CertBuilder.make(cn: "*.foobar.com", issuer: "*.foobar.com", dns: ["*.foobar.com"], key: 34)
    static let expired = CertBuilder.make(cn: "foobar.com", issuer: "foobar.com", dns: ["foobar.com"], key: 35,
                                          notBefore: "100101000000Z", notAfter: "110101000000Z")

    struct Case {
        let name: String
        var mode: SecurityPolicy.PinningMode = .none
        var pins: [[UInt8]] = []
        var allowInvalid = false
        var validatesDomain = true
        let chain: [[UInt8]]
        let domain: String?
        let trusted: Bool
        /// nil: accepted; otherwise the rule number that refuses.
        let refusedBy: Int?
        /// What AFNetworking decides when it differs (nil: the same).
        var afnetworking: String? = nil
    }

    static let cases: [Case] = [
        // Public-key pinning, httpbin chain trusted.
        Case(name: "testLeafPublicKeyPinningIsEnforcedForHTTPBinOrgPinnedCertificateAgainstHTTPBinOrgServerTrust",
             mode: .publicKey, pins: [httpbinLeaf], validatesDomain: false, chain: httpbin, domain: nil, trusted: true, refusedBy: nil),
        Case(name: "testPublicKeyChainPinningIsEnforcedForHTTPBinOrgPinnedCertificateAgainstHTTPBinOrgServerTrust",
             mode: .publicKey, pins: httpbin, validatesDomain: false, chain: httpbin, domain: nil, trusted: true, refusedBy: nil),
        Case(name: "testIntermediatePublicKeyPinningIsEnforcedForHTTPBinOrgPinnedCertificateAgainstHTTPBinOrgServerTrust",
             mode: .publicKey, pins: [httpbinIntermediate], validatesDomain: false, chain: httpbin, domain: nil, trusted: true, refusedBy: nil),
        Case(name: "testRootPublicKeyPinningIsEnforcedForHTTPBinOrgPinnedCertificateAgainstHTTPBinOrgServerTrust",
             mode: .publicKey, pins: [httpbinRoot], validatesDomain: false, chain: httpbin, domain: nil, trusted: true, refusedBy: nil),
        Case(name: "testPublicKeyPinningFailsForHTTPBinOrgIfNoCertificateIsPinned",
             mode: .publicKey, pins: [], validatesDomain: false, chain: httpbin, domain: nil, trusted: true, refusedBy: 4),
        Case(name: "testPublicKeyPinningForHTTPBinOrgFailsWhenPinnedAgainstADNServerTrust",
             mode: .publicKey, pins: httpbin, validatesDomain: false, chain: adn, domain: nil, trusted: true, refusedBy: 4),
        Case(name: "testPublicKeyPinningIsEnforcedForHTTPBinOrgPinnedPublicKeyWithDomainNameValidationAgainstHTTPBinOrgServerTrust",
             mode: .publicKey, pins: [httpbinLeaf], chain: httpbin, domain: "httpbin.org", trusted: true, refusedBy: nil),
        Case(name: "testPublicKeyPinningFailsForHTTPBinOrgIfDomainNameDoesntMatch",
             mode: .publicKey, pins: [httpbinLeaf], chain: httpbin, domain: "www.httpbin.com", trusted: true, refusedBy: 2),
        // Certificate pinning, httpbin chain trusted.
        Case(name: "testLeafCertificatePinningIsEnforcedForHTTPBinOrgPinnedCertificateAgainstHTTPBinOrgServerTrust",
             mode: .certificate, pins: [httpbinLeaf], validatesDomain: false, chain: httpbin, domain: nil, trusted: true, refusedBy: nil),
        Case(name: "testIntermediateCertificatePinningIsEnforcedForHTTPBinOrgPinnedCertificateAgainstHTTPBinOrgServerTrust",
             mode: .certificate, pins: [httpbinIntermediate], validatesDomain: false, chain: httpbin, domain: nil, trusted: true, refusedBy: nil),
        Case(name: "testRootCertificatePinningIsEnforcedForHTTPBinOrgPinnedCertificateAgainstHTTPBinOrgServerTrust",
             mode: .certificate, pins: [httpbinRoot], validatesDomain: false, chain: httpbin, domain: nil, trusted: true, refusedBy: nil),
        Case(name: "testCertificateChainPinningIsEnforcedForHTTPBinOrgPinnedCertificateAgainstHTTPBinOrgServerTrust",
             mode: .certificate, pins: httpbin, validatesDomain: false, chain: httpbin, domain: nil, trusted: true, refusedBy: nil),
        Case(name: "testCertificatePinningFailsForHTTPBinOrgIfNoCertificateIsPinned",
             mode: .certificate, pins: [], validatesDomain: false, chain: httpbin, domain: nil, trusted: true, refusedBy: 4),
        Case(name: "testCertificatePinningForHTTPBinOrgFailsWhenPinnedAgainstADNServerTrust",
             mode: .certificate, pins: httpbin, validatesDomain: false, chain: adn, domain: nil, trusted: true, refusedBy: 4),
        Case(name: "testCertificatePinningIsEnforcedForHTTPBinOrgPinnedCertificateWithDomainNameValidationAgainstHTTPBinOrgServerTrust",
             mode: .certificate, pins: [httpbinLeaf], chain: httpbin, domain: "httpbin.org", trusted: true, refusedBy: nil),
        Case(name: "testCertificatePinningIsEnforcedForHTTPBinOrgPinnedCertificateWithCaseInsensitiveDomainNameValidationAgainstHTTPBinOrgServerTrust",
             mode: .certificate, pins: [httpbinLeaf], chain: httpbin, domain: "httpBin.org", trusted: true, refusedBy: nil),
        Case(name: "testCertificatePinningFailsForHTTPBinOrgIfDomainNameDoesntMatch",
             mode: .certificate, pins: [httpbinLeaf], chain: httpbin, domain: "www.httpbin.com", trusted: true, refusedBy: 2),
        // No pinning.
        Case(name: "testNoPinningIsEnforcedForHTTPBinOrgPinnedCertificateAgainstHTTPBinOrgServerTrust",
             mode: .none, pins: [httpbinLeaf], chain: httpbin, domain: "httpbin.org", trusted: true, refusedBy: nil),
        Case(name: "testNoPinningFailsForHTTPBinOrgIfDomainNameDoesntMatch",
             mode: .none, chain: httpbin, domain: "www.httpbin.com", trusted: true, refusedBy: 2),
        Case(name: "testNoPinningIsEnforcedForADNServerTrustWithWildcardDomain",
             mode: .none, chain: adn, domain: "api.app.net", trusted: true, refusedBy: nil),
        // Domain validation switched off; invalid certificates allowed.
        Case(name: "testThatPolicyWithoutDomainNameValidationAcceptsServerTrustWithWrongDomainName",
             mode: .none, validatesDomain: false, chain: httpbin, domain: "apple.com", trusted: true, refusedBy: nil),
        Case(name: "testThatPolicyWithInvalidCertificatesAllowedAndValidDomainNameRejectsServerTrustWithoutPinnedCertificates",
             mode: .none, allowInvalid: true, chain: [foobar], domain: "foobar.com", trusted: false, refusedBy: 1),
        Case(name: "testThatPolicyWithInvalidCertificatesAllowedAndCertificatePinningAndNoPinsRejects",
             mode: .certificate, allowInvalid: true, chain: [foobar], domain: "foobar.com", trusted: false, refusedBy: 1),
        Case(name: "testThatPolicyWithInvalidCertificatesAllowedAndDomainValidationDisabledAcceptsSelfSignedCertificate",
             mode: .none, allowInvalid: true, validatesDomain: false, chain: [noDomain], domain: "foobar.com", trusted: false, refusedBy: nil),
        Case(name: "testThatPolicyWithInvalidCertificatesAllowedAndNoDomainAcceptsSelfSignedCertificate",
             mode: .none, allowInvalid: true, chain: [noDomain], domain: nil, trusted: false, refusedBy: nil),
        Case(name: "testThatPolicyWithoutInvalidCertificatesAllowedRejectsSelfSignedCertificate",
             mode: .none, chain: [foobar], domain: "foobar.com", trusted: false, refusedBy: 3),
        // Self-signed certificates pinned (AFNetworking makes the pins anchors).
        Case(name: "testThatPinnedSelfSignedCertificateWithDNSNameDomainIsAccepted",
             mode: .certificate, pins: [foobar], chain: [foobar], domain: "foobar.com", trusted: false, refusedBy: nil),
        Case(name: "testThatPinnedSelfSignedCertificateWithDNSNameDomainAndInvalidCertificatesAllowedIsAccepted",
             mode: .certificate, pins: [foobar], allowInvalid: true, chain: [foobar], domain: "foobar.com", trusted: false, refusedBy: nil),
        Case(name: "testThatPinnedSelfSignedCertificateWithCommonNameDomainIsAccepted",
             mode: .certificate, pins: [foobarCNOnly], chain: [foobarCNOnly], domain: "foobar.com", trusted: false, refusedBy: 2,
             afnetworking: "accepted (Apple's SSL policy fell back to the Common Name); RFC 9525: no Common Name fallback"),
        Case(name: "testThatPinnedSelfSignedCertificateWithoutDomainIsRejectedWithDomainValidation",
             mode: .certificate, pins: [noDomain], chain: [noDomain], domain: "foobar.com", trusted: false, refusedBy: 2),
        Case(name: "testThatPinnedSelfSignedCertificateWithoutDomainIsAcceptedWithoutDomainValidation",
             mode: .certificate, pins: [noDomain], validatesDomain: false, chain: [noDomain], domain: "foobar.com", trusted: false, refusedBy: nil),
        Case(name: "testThatPinnedSelfSignedCertificateWithWrongDomainIsRejected",
             mode: .certificate, pins: [foobar], chain: [foobar], domain: "apple.com", trusted: false, refusedBy: 2),
        Case(name: "testThatPinnedPublicKeyOfSelfSignedCertificateWithInvalidCertificatesAllowedIsAccepted",
             mode: .publicKey, pins: [foobar], allowInvalid: true, chain: [foobar], domain: "foobar.com", trusted: false, refusedBy: nil),
        Case(name: "testThatPinnedPublicKeyOfSelfSignedCertificateWithoutInvalidCertificatesAllowedIsRejected",
             mode: .publicKey, pins: [foobar], chain: [foobar], domain: "foobar.com", trusted: false, refusedBy: 4),
        // Wildcards.
        Case(name: "testThatPinnedWildcardCertificateAcceptsSubdomain",
             mode: .certificate, pins: [wildcard], chain: [wildcard], domain: "www.foobar.com", trusted: false, refusedBy: nil),
        Case(name: "testThatPinnedWildcardCertificateRejectsBareDomain",
             mode: .certificate, pins: [wildcard], chain: [wildcard], domain: "foobar.com", trusted: false, refusedBy: 2),
        Case(name: "testThatPinnedWildcardCertificateRejectsTwoLevelSubdomain",
             mode: .certificate, pins: [wildcard], chain: [wildcard], domain: "a.www.foobar.com", trusted: false, refusedBy: 2),
        // Where we differ on purpose (docs/security-policy.md).
        Case(name: "deviation: invalid certificates allowed still validate the domain (public-key mode)",
             mode: .publicKey, pins: [foobar], allowInvalid: true, chain: [foobar], domain: "apple.com", trusted: false, refusedBy: 2,
             afnetworking: "accepted: with allowInvalidCertificates the public-key mode ignores the trust result, domain included"),
        Case(name: "deviation: an untrusted chain needs the pin on the leaf (public-key mode)",
             mode: .publicKey, pins: [httpbinIntermediate], allowInvalid: true, validatesDomain: false,
             chain: [foobar, httpbinIntermediate], domain: nil, trusted: false, refusedBy: 4,
             afnetworking: "accepted: any public key of the presented chain counts, also beside a forged leaf"),
        Case(name: "deviation: an untrusted chain needs the pin on the leaf (certificate mode)",
             mode: .certificate, pins: [httpbinRoot], validatesDomain: false,
             chain: [foobar, httpbinIntermediate, httpbinRoot], domain: nil, trusted: false, refusedBy: 4,
             afnetworking: "decided by Apple's chain building with the pin as anchor (signatures checked there); we verify no signature"),
        Case(name: "an expired pinned leaf on an untrusted chain is refused",
             mode: .certificate, pins: [expired], chain: [expired], domain: "foobar.com", trusted: false, refusedBy: 4),
        Case(name: "an expired certificate on a trusted chain is the stack's business",
             mode: .certificate, pins: [expired], chain: [expired], domain: "foobar.com", trusted: true, refusedBy: nil),
    ]

    func policy(_ c: Case) throws -> SecurityPolicy {
        var p = SecurityPolicy(mode: c.mode)
        for pin in c.pins { try p.addPinnedCertificate(pin) }
        p.allowsInvalidCertificates = c.allowInvalid
        p.validatesDomainName = c.validatesDomain
        p.time = 1_700_000_000  // 2023-11-14
        return p
    }

    func testAFNetworkingCases() throws {
        XCTAssertGreaterThan(SecurityPolicyTests.cases.count, 30)
        for c in SecurityPolicyTests.cases {
            let p = try policy(c)
            do {
                try p.evaluate(chain: c.chain, domain: c.domain, chainTrusted: c.trusted)
                XCTAssertNil(c.refusedBy, "\(c.name): accepted, expected rule \(c.refusedBy ?? 0)")
            } catch {
                guard let rule = c.refusedBy else { XCTFail("\(c.name): refused: \(error.message)"); continue }
                XCTAssertEqual(error.status, .untrusted, "\(c.name): \(error)")
                XCTAssertTrue(error.message.hasPrefix("rule \(rule) "), "\(c.name): \(error.message)")
                if let d = c.domain, c.validatesDomain { XCTAssertTrue(error.message.contains(d), "\(c.name): \(error.message)") }
            }
        }
    }

    func testDefaultsAndCopy() throws {
        var p = SecurityPolicy(mode: .certificate)
        XCTAssertFalse(p.allowsInvalidCertificates)
        XCTAssertTrue(p.validatesDomainName)
        XCTAssertNil(p.time)
        try p.addPinnedCertificate(SecurityPolicyTests.httpbinLeaf)
        try p.addPinnedCertificate(SecurityPolicyTests.httpbinLeaf)
        XCTAssertEqual(p.pinnedCertificates.count, 1)   // a set, as AFNetworking's NSSet
        let copy = p
        p.allowsInvalidCertificates = true
        XCTAssertFalse(copy.allowsInvalidCertificates)
        XCTAssertEqual(copy.pinnedCertificates.count, 1)
    }

    func testSHA256Pins() throws {
        let spki = try Certificate(der: SecurityPolicyTests.httpbinLeaf).subjectPublicKeyInfo
        var w = ByteWriter(capacity: 64)
        SHA256.hash(spki).withUnsafeBufferPointer { Base64.encode($0, to: &w) }
        let pin = "sha256//" + (try w.toString())
        var p = SecurityPolicy(mode: .publicKey)
        p.validatesDomainName = false
        try p.addPinnedPublicKeySHA256("sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=;" + pin)
        XCTAssertNoThrow(try p.evaluate(chain: SecurityPolicyTests.httpbin, domain: nil, chainTrusted: true))
        XCTAssertThrowsError(try p.evaluate(chain: SecurityPolicyTests.adn, domain: nil, chainTrusted: true))
        // Certificate mode does not use SPKI pins.
        var c = p
        c.mode = .certificate
        XCTAssertThrowsError(try c.evaluate(chain: SecurityPolicyTests.httpbin, domain: nil, chainTrusted: true))
        // One malformed entry adds none.
        var q = SecurityPolicy(mode: .publicKey)
        for bad in [pin + ";sha256//abc", pin + ";", "sha1//" + pin.dropFirst(8), pin + "; " + pin,
                    "sha256//" + String(repeating: "A", count: 40) + "AA==", "sha256//" + pin.dropFirst(8).dropLast() + "!"] {
            XCTAssertThrowsError(try q.addPinnedPublicKeySHA256(bad), bad) {
                XCTAssertEqual(($0 as! AFSError).status, .invalidArgument)
                XCTAssertTrue(($0 as! AFSError).message.contains("entry"), ($0 as! AFSError).message)
            }
        }
        XCTAssertTrue(q.pinnedPublicKeyHashes.isEmpty)
        try q.addPinnedPublicKeySHA256(pin)
        XCTAssertEqual(q.pinnedPublicKeyHashes.count, 1)
    }

    func testValidityBoundsAtThePolicyTime() throws {
        var p = SecurityPolicy(mode: .certificate)
        try p.addPinnedCertificate(SecurityPolicyTests.expired)
        let c = try Certificate(der: SecurityPolicyTests.expired)
        for (t, ok) in [(c.notBefore - 1, false), (c.notBefore, true), (c.notAfter, true), (c.notAfter + 1, false)] {
            p.time = t
            if ok {
                XCTAssertNoThrow(try p.evaluate(chain: [SecurityPolicyTests.expired], domain: "foobar.com", chainTrusted: false))
            } else {
                XCTAssertThrowsError(try p.evaluate(chain: [SecurityPolicyTests.expired], domain: "foobar.com", chainTrusted: false))
            }
        }
    }

    func testMessagesNameHostAndCertificates() {
        let p = SecurityPolicy(mode: .none)
        XCTAssertThrowsError(try p.evaluate(chain: SecurityPolicyTests.httpbin, domain: "evil.example", chainTrusted: true)) {
            let m = ($0 as! AFSError).message
            XCTAssertTrue(m.contains("evil.example") && m.contains("DNS:httpbin.org") && m.contains("CN=\"httpbin.org\""), m)
        }
        XCTAssertThrowsError(try p.evaluate(chain: [], domain: nil, chainTrusted: true)) {
            XCTAssertEqual(($0 as! AFSError).status, .invalidArgument)
        }
        XCTAssertThrowsError(try p.evaluate(chain: [SecurityPolicyTests.httpbinLeaf, [0x30, 0x00]], domain: nil, chainTrusted: true)) {
            XCTAssertTrue(($0 as! AFSError).message.hasPrefix("chain[1]: "), ($0 as! AFSError).message)
        }
    }
}
