// AFNetworking's AFSecurityPolicy for any TLS stack. The library verifies no signature,
// builds no chain and keeps no trust store: the caller's TLS stack does that and passes its
// verdict (`chainTrusted`) with the chain it verified, leaf first. The policy then decides
// with AFNetworking's rules, in its order (docs/security-policy.md has the table):
//   1. invalid certificates allowed + domain validated + a domain given + no pin the mode
//      uses (or mode none): refused;
//   2. domain validated + a domain given: the leaf's subjectAltName must match (also when
//      invalid certificates are allowed; AFNetworking skips it then);
//   3. mode none: accepted when the stack trusted the chain or invalid certificates are
//      allowed;
//   4. pinning modes: a certificate of the chain matches a pin (certificate mode: DER
//      equality; public-key mode: SubjectPublicKeyInfo equality, or its SHA-256 equals a
//      `sha256//` pin). When the stack did not trust the chain only the leaf counts, and in
//      certificate mode that leaf must be within its validity at the policy's time; public-key
//      mode without invalid certificates allowed refuses an untrusted chain.

public struct SecurityPolicy: Sendable {
    public enum PinningMode: Int32, Sendable {
        case none = 0
        case publicKey = 1
        case certificate = 2

        var name: String {
            switch self {
            case .none: return "none"
            case .publicKey: return "public key"
            case .certificate: return "certificate"
            }
        }
    }

    /// Default limits: pins per policy and certificates per evaluated chain
    /// (`limits` changes them).
    public static let maxPins = 4096
    public static let maxChain = 64

    /// The certificate reader's and the policy's limits (defaults: `SecurityLimits()`).
    public var limits = SecurityLimits()

    public var mode: PinningMode
    /// Pinned certificates (used by both modes: public-key mode uses their SPKI).
    public private(set) var pinnedCertificates: [Certificate] = []
    /// SHA-256 of pinned SubjectPublicKeyInfo (from `sha256//` pins; public-key mode only).
    public private(set) var pinnedPublicKeyHashes: [[UInt8]] = []
    public var allowsInvalidCertificates = false
    public var validatesDomainName = true
    /// The time validity is checked at, Unix seconds; nil: the clock at each evaluation.
    public var time: Int64?

    public init(mode: PinningMode) { self.mode = mode }

    /// Adds a pinned certificate: DER, or PEM text (each CERTIFICATE block is added; one bad
    /// block adds none).
    /// - Throws: `.invalidArgument` naming the field and offset (or the PEM line), `.limit`.
    public mutating func addPinnedCertificate(_ bytes: [UInt8]) throws(AFSError) {
        let list = try Certificate.read(bytes, limits: limits)
        guard pinnedCertificates.count + pinnedPublicKeyHashes.count + list.count <= limits.maxPins else {
            throw AFSError(.limit, "a policy holds at most \(limits.maxPins) pins")
        }
        for c in list where !pinnedCertificates.contains(c) { pinnedCertificates.append(c) }
    }

    /// Adds libcurl-format public-key pins: "sha256//BASE64[;sha256//BASE64...]". One
    /// malformed entry refuses the whole call and adds none.
    public mutating func addPinnedPublicKeySHA256(_ pins: String) throws(AFSError) {
        let entries = Array(pins.utf8).split(separator: 0x3B, omittingEmptySubsequences: false)
        var add: [[UInt8]] = []
        var offset = 0
        let prefix = Array("sha256//".utf8)
        for (i, raw) in entries.enumerated() {
            defer { offset += raw.count + 1 }
            // libcurl allows spaces around entries? It does not; neither do we, but say so.
            guard raw.starts(with: prefix) else {
                throw AFSError(.invalidArgument, "pins: entry \(i + 1) at byte offset \(offset) does not start with \"sha256//\"")
            }
            var bad = 0
            let b64 = raw.dropFirst(prefix.count)
            guard let hash = Base64.decode(b64, errorOffset: &bad) else {
                throw AFSError(.invalidArgument, "pins: entry \(i + 1) is not valid base64 (at byte offset \(offset + prefix.count + bad))")
            }
            guard hash.count == 32 else {
                throw AFSError(.invalidArgument, "pins: entry \(i + 1) at byte offset \(offset) decodes to \(hash.count) bytes, not a SHA-256 (32)")
            }
            add.append(hash)
        }
        guard pinnedCertificates.count + pinnedPublicKeyHashes.count + add.count <= limits.maxPins else {
            throw AFSError(.limit, "a policy holds at most \(limits.maxPins) pins")
        }
        for h in add where !pinnedPublicKeyHashes.contains(h) { pinnedPublicKeyHashes.append(h) }
    }

    /// True when the mode has a pin it can use.
    var hasUsablePins: Bool {
        switch mode {
        case .none: return false
        case .certificate: return !pinnedCertificates.isEmpty
        case .publicKey: return !pinnedCertificates.isEmpty || !pinnedPublicKeyHashes.isEmpty
        }
    }

    /// The clock, Unix seconds.
    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec)
    }

    /// Decides whether a server may be trusted.
    /// - Parameters:
    ///   - chain: DER certificates, leaf first, as the TLS stack verified them (or received
    ///     them, when it did not).
    ///   - domain: the host the client connected to; nil skips the domain check.
    ///   - chainTrusted: the TLS stack's verdict on the chain.
    /// - Throws: `.untrusted` naming the rule, the host and the certificates;
    ///   `.invalidArgument` for an empty or malformed chain or a malformed domain.
    public func evaluate(chain raw: [[UInt8]], domain: String?, chainTrusted: Bool) throws(AFSError) {
        guard !raw.isEmpty else { throw AFSError(.invalidArgument, "the chain is empty (the leaf certificate is required)") }
        guard raw.count <= limits.maxChain else {
            throw AFSError(.invalidArgument, "the chain holds \(raw.count) certificates, more than the limit of \(limits.maxChain)")
        }
        var chain: [Certificate] = []
        for (i, der) in raw.enumerated() {
            do { chain.append(try Certificate(der: der, limits: limits)) } catch {
                throw AFSError(.invalidArgument, "chain[\(i)]: \(error.message)")
            }
        }
        let leaf = chain[0]
        let host = validatesDomainName ? domain : nil
        let ref = try host.map { (h: String) throws(AFSError) in try HostMatch.reference(h) }
        let hostText = host.map { "host \"\(Certificate.printable($0))\"" } ?? "no host checked"
        let leafText = "leaf \(leaf.displayName)"

        // Rule 1.
        if allowsInvalidCertificates && ref != nil && !hasUsablePins {
            throw AFSError(.untrusted, "rule 1 (invalid certificates allowed and the domain validated need a pin): \(hostText), "
                + (mode == .none ? "pinning mode none" : "no \(mode.name) pins") + "; \(leafText)")
        }
        // Rule 2.
        if let ref = ref, !HostMatch.matches(leaf, ref) {
            let kind: String
            switch ref { case .ip: kind = "the IP address"; case .dns: kind = "the DNS name" }
            throw AFSError(.untrusted, "rule 2 (domain name): \(kind) \(HostMatch.describe(ref)) (\(hostText)) matches none of the names of the \(leafText) "
                + "(\(HostMatch.describe(leaf)); the Common Name is never used)")
        }
        // Rule 3.
        if mode == .none {
            if chainTrusted || allowsInvalidCertificates { return }
            throw AFSError(.untrusted, "rule 3 (pinning mode none): the TLS stack did not trust the chain and invalid certificates are not allowed; \(hostText), \(leafText)")
        }
        // Rule 4.
        guard hasUsablePins else {
            throw AFSError(.untrusted, "rule 4 (\(mode.name) pinning): the policy has no \(mode.name) pins; \(hostText), \(leafText)")
        }
        let candidates = chainTrusted ? chain[...] : chain[..<1]
        switch mode {
        case .none:
            return
        case .certificate:
            guard let match = candidates.firstIndex(where: { pinnedCertificates.contains($0) }) else {
                throw AFSError(.untrusted, "rule 4 (certificate pinning): "
                    + (chainTrusted ? "no certificate of the chain (\(names(chain))) is pinned" : "the TLS stack did not trust the chain and the \(leafText) is not pinned (only a pinned leaf counts then)")
                    + "; \(hostText)")
            }
            if !chainTrusted {
                let t = time ?? SecurityPolicy.now()
                if t < leaf.notBefore || t > leaf.notAfter {
                    throw AFSError(.untrusted, "rule 4 (certificate pinning): the TLS stack did not trust the chain and the pinned \(leafText) is outside its validity "
                        + "(not before \(leaf.notBefore), not after \(leaf.notAfter), time \(t), Unix seconds); \(hostText)")
                }
            }
            _ = match
        case .publicKey:
            if !chainTrusted && !allowsInvalidCertificates {
                throw AFSError(.untrusted, "rule 4 (public key pinning): the TLS stack did not trust the chain and invalid certificates are not allowed; \(hostText), \(leafText)")
            }
            let ok = candidates.contains { c in
                if pinnedCertificates.contains(where: { $0.subjectPublicKeyInfo == c.subjectPublicKeyInfo }) { return true }
                if pinnedPublicKeyHashes.isEmpty { return false }
                let h = SHA256.hash(c.subjectPublicKeyInfo)
                return pinnedPublicKeyHashes.contains(h)
            }
            if !ok {
                throw AFSError(.untrusted, "rule 4 (public key pinning): "
                    + (chainTrusted ? "no public key of the chain (\(names(chain))) is pinned" : "the TLS stack did not trust the chain and the \(leafText)'s public key is not pinned (only the leaf counts then)")
                    + "; \(hostText)")
            }
        }
    }

    func names(_ chain: [Certificate]) -> String {
        chain.prefix(6).map { $0.displayName }.joined(separator: ", ") + (chain.count > 6 ? ", ..." : "")
    }
}
