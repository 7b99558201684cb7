// afs_security_policy_*: pinning and host-name validation for any TLS stack (header
// section 13). The policy is a shared configuration: setters run under its lock, each
// evaluation on a snapshot, so evaluations from many threads run at once.
import AFSerialization
import CAFSerialization

import Glibc  // Linux with glibc only, as the core (Sources/AFSerialization/Platform.swift)

extension SecurityPolicy: SharedConfiguration { static var cName: String { "afs_security_policy" } }
typealias SecurityPolicyHandle = ConfigHandle<SecurityPolicy>

@c @implementation
public func afs_security_policy_new(_ mode: afs_pinning_mode, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        guard let m = SecurityPolicy.PinningMode(rawValue: Int32(bitPattern: mode.rawValue)) else {
            throw AFSError(.invalidArgument, "mode \(mode.rawValue) is not an afs_pinning_mode (0, 1 or 2)")
        }
        return try SecurityPolicyHandle.boxed(SecurityPolicy(mode: m))
    }
}

@c @implementation
public func afs_security_policy_add_pinned_certificate(_ p: OpaquePointer?, _ derOrPem: UnsafePointer<UInt8>?, _ len: Int,
                                                       _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(p, "policy", err) { (c: inout SecurityPolicy) in
        let b = try dataArg(derOrPem.map { UnsafeRawPointer($0) }, len, "der_or_pem", lenName: "len")
        try Memory.probe(b.count, "a copy of der_or_pem")
        try c.addPinnedCertificate(Array(b))
    }
}

@c @implementation
public func afs_security_policy_add_pinned_public_key_sha256(_ p: OpaquePointer?, _ pins: UnsafePointer<CChar>?,
                                                             _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(p, "policy", err) { (c: inout SecurityPolicy) in
        try c.addPinnedPublicKeySHA256(try stringArg(pins, NTS, "pins"))
    }
}

@c @implementation
public func afs_security_policy_set_allows_invalid_certificates(_ p: OpaquePointer?, _ on: Bool) {
    configure(p, SecurityPolicy.self) { $0.allowsInvalidCertificates = on }
}

@c @implementation
public func afs_security_policy_set_validates_domain_name(_ p: OpaquePointer?, _ on: Bool) {
    configure(p, SecurityPolicy.self) { $0.validatesDomainName = on }
}

@c @implementation
public func afs_security_policy_set_time(_ p: OpaquePointer?, _ unixSeconds: Int64) {
    configure(p, SecurityPolicy.self) { $0.time = unixSeconds }
}

/// The limits a C struct asks for: 0 fields keep the default, values above Int.max mean no
/// practical limit (the DER depth is still checked against its ceiling).
func securityLimits(_ limits: UnsafePointer<afs_security_limits>?) throws(AFSError) -> SecurityLimits {
    var l = SecurityLimits()
    guard let c = limits?.pointee else { return l }
    func v(_ x: Int, _ d: Int) -> Int { x == 0 ? d : (x < 0 ? Int.max / 4 : x) }
    l.maxCertificateBytes = v(c.max_certificate_bytes, l.maxCertificateBytes)
    l.maxPEMBytes = v(c.max_pem_bytes, l.maxPEMBytes)
    l.maxDERDepth = v(c.max_der_depth, l.maxDERDepth)
    l.maxPins = v(c.max_pins, l.maxPins)
    l.maxChain = v(c.max_chain, l.maxChain)
    return try l.validated()
}

@c @implementation
public func afs_security_policy_set_limits(_ p: OpaquePointer?, _ limits: UnsafePointer<afs_security_limits>?,
                                          _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    configure(p, "policy", err) { (c: inout SecurityPolicy) in
        c.limits = try securityLimits(limits)
    }
}

@c @implementation
public func afs_security_policy_copy(_ p: OpaquePointer?) -> OpaquePointer? {
    guard let h = peek(p, SecurityPolicyHandle.self) else { return nil }
    return try? SecurityPolicyHandle.boxed(h.snapshot)
}

@c @implementation
public func afs_security_policy_free(_ p: OpaquePointer?) { release(p, SecurityPolicyHandle.self) }

@c @implementation
public func afs_security_policy_evaluate(_ p: OpaquePointer?, _ chainDer: UnsafePointer<UnsafePointer<UInt8>?>?,
                                         _ chainLen: UnsafePointer<Int>?, _ count: Int, _ domain: UnsafePointer<CChar>?,
                                         _ chainTrusted: Bool, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let policy = try unbox(p, SecurityPolicyHandle.self, "policy").snapshot
        let limits = policy.limits
        guard count != 0 else { throw AFSError(.invalidArgument, "count is 0 (the leaf certificate is required)") }
        guard count <= limits.maxChain && count > 0 else {
            throw AFSError(.invalidArgument, "count \(UInt(bitPattern: count)) is more than the limit of \(limits.maxChain) certificates")
        }
        let ders = try arrayArg(chainDer, count, "chain_der")
        let lens = try arrayArg(chainLen, count, "chain_len")
        var chain: [[UInt8]] = []
        for i in 0..<count {
            let b = try dataArg(ders[i].map { UnsafeRawPointer($0) }, lens[i], "chain_der[\(i)]", lenName: "chain_len[\(i)]")
            guard b.count <= limits.maxCertificateBytes else {
                throw AFSError(.invalidArgument, "chain[\(i)]: \(b.count) bytes is more than the limit of \(limits.maxCertificateBytes)")
            }
            try Memory.probe(b.count, "a copy of chain_der[\(i)]")
            chain.append(Array(b))
        }
        let host = try optionalStringArg(domain, "domain")
        try policy.evaluate(chain: chain, domain: host, chainTrusted: chainTrusted)
    }
}

@c @implementation
public func afs_certificate_read(_ derOrPem: UnsafePointer<UInt8>?, _ len: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                 _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    afs_certificate_read_with_limits(derOrPem, len, nil, out, err)
}

@c @implementation
public func afs_certificate_read_with_limits(_ derOrPem: UnsafePointer<UInt8>?, _ len: Int,
                                             _ limits: UnsafePointer<afs_security_limits>?,
                                             _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                             _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    out?.pointee = nil
    return status(err) {
        guard let out = out else { throw AFSError(.invalidArgument, "out is NULL") }
        let b = try dataArg(derOrPem.map { UnsafeRawPointer($0) }, len, "der_or_pem", lenName: "len")
        try Memory.probe(b.count, "a copy of der_or_pem")
        let list = try Certificate.read(Array(b), limits: try securityLimits(limits))
        out.pointee = box(ValueHandle(.array(list.map { $0.summary })))
    }
}
