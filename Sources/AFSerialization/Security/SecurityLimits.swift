// The limits of the certificate reader (DER, PEM, X.509) and of a security policy, with the
// defaults the header documents (section 13, afs_security_limits). A certificate of 1 MiB
// is already 200 times a large real one; the limits are there so that hostile input costs a
// bounded amount of memory and time, and can be set lower (or higher) per policy.

/// Size and count limits; every field is positive.
public struct SecurityLimits: Sendable, Equatable {
    /// The largest DER certificate read (larger: `.invalidArgument` before reading).
    public var maxCertificateBytes = Certificate.maxBytes
    /// The largest PEM text read.
    public var maxPEMBytes = PEM.maxBytes
    /// The deepest DER nesting (at most `DER.depthCeiling`).
    public var maxDERDepth = DER.maxDepth
    /// Pins per policy (more: `.limit`).
    public var maxPins = SecurityPolicy.maxPins
    /// Certificates per evaluated chain.
    public var maxChain = SecurityPolicy.maxChain

    public init() {}

    /// Checks the fields (all positive, the DER depth within its ceiling).
    /// - Throws: `.invalidArgument` naming the field.
    public func validated() throws(AFSError) -> SecurityLimits {
        for (name, v) in [("max_certificate_bytes", maxCertificateBytes), ("max_pem_bytes", maxPEMBytes),
                          ("max_der_depth", maxDERDepth), ("max_pins", maxPins), ("max_chain", maxChain)] where v <= 0 {
            throw AFSError(.invalidArgument, "\(name) must be positive")
        }
        guard maxDERDepth <= DER.depthCeiling else {
            throw AFSError(.invalidArgument, "max_der_depth \(maxDERDepth) is more than \(DER.depthCeiling)")
        }
        return self
    }
}
