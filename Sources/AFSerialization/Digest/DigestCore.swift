/// Shared block buffering for the Merkle–Damgård hashes (SHA-256, SHA-512, MD5).
///
/// The input is processed in whole blocks straight from the caller's memory; only a partial
/// block (less than one block) is copied into a fixed 128-byte buffer kept inline in the
/// hasher, so hashing never allocates per byte or per call.
@usableFromInline
struct DigestPending: Sendable {
    // 128 bytes inline (the largest block size, SHA-512's).
    var bytes: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    /// Bytes of `bytes` in use (always < the block size between calls).
    var count = 0
    /// Total bytes fed since the start.
    var total: UInt64 = 0

    /// Feeds `data`, calling `compress(pointer, blockCount)` for every run of whole blocks.
    @inline(__always)
    mutating func feed(_ data: UnsafeRawBufferPointer, blockSize: Int,
                       _ compress: (UnsafeRawPointer, Int) -> Void) {
        guard var p = data.baseAddress, data.count > 0 else { return }
        var n = data.count
        total &+= UInt64(n)
        if count > 0 {
            let take = min(blockSize - count, n)
            let filled = count
            withUnsafeMutableBytes(of: &bytes) { b in
                (b.baseAddress! + filled).copyMemory(from: p, byteCount: take)
            }
            count += take
            p += take
            n -= take
            if count < blockSize { return }
            withUnsafeBytes(of: &bytes) { b in compress(b.baseAddress!, 1) }
            count = 0
        }
        let blocks = n / blockSize
        if blocks > 0 {
            compress(p, blocks)
            p += blocks * blockSize
            n -= blocks * blockSize
        }
        if n > 0 {
            withUnsafeMutableBytes(of: &bytes) { b in
                b.baseAddress!.copyMemory(from: p, byteCount: n)
            }
            count = n
        }
    }

    /// The final padding: 0x80, zeros, then the message length in bits in `lengthBytes`
    /// bytes (big-endian for SHA-2, little-endian for MD5).
    func padding(blockSize: Int, lengthBytes: Int, bigEndian: Bool) -> [UInt8] {
        let used = count + 1 + lengthBytes
        let padLength = 1 + (used <= blockSize ? blockSize - used : 2 * blockSize - used) + lengthBytes
        var pad = [UInt8](repeating: 0, count: padLength)
        pad[0] = 0x80
        let bits = total &<< 3
        let high = total &>> 61  // bits beyond 64 (only SHA-512 has room for them)
        for i in 0..<8 {
            let byte = UInt8(truncatingIfNeeded: bits &>> UInt64(8 * i))
            if bigEndian { pad[padLength - 1 - i] = byte } else { pad[padLength - lengthBytes + i] = byte }
        }
        if lengthBytes > 8 {
            pad[padLength - 9] = UInt8(truncatingIfNeeded: high)
        }
        return pad
    }
}

@inline(__always) func rotr32(_ x: UInt32, _ n: UInt32) -> UInt32 { (x &>> n) | (x &<< (32 &- n)) }
@inline(__always) func rotl32(_ x: UInt32, _ n: UInt32) -> UInt32 { (x &<< n) | (x &>> (32 &- n)) }
@inline(__always) func rotr64(_ x: UInt64, _ n: UInt64) -> UInt64 { (x &>> n) | (x &<< (64 &- n)) }

/// The digests the library computes (`afs_request_add_digest`).
public enum DigestAlgorithm: Sendable, Equatable {
    case sha256, sha512, md5

    /// Parses the RFC 9530 algorithm key ("sha-256", "sha-512") or "md5" (ASCII case-insensitive).
    public init?(name: String) {
        switch name.lowercased() {
        case "sha-256": self = .sha256
        case "sha-512": self = .sha512
        case "md5": self = .md5
        default: return nil
        }
    }

    /// The RFC 9530 key (`sha-256`, `sha-512`) or `md5`.
    public var name: String {
        switch self {
        case .sha256: return "sha-256"
        case .sha512: return "sha-512"
        case .md5: return "md5"
        }
    }

    /// Digest size in bytes.
    public var size: Int {
        switch self {
        case .sha256: return 32
        case .sha512: return 64
        case .md5: return 16
        }
    }
}

/// Any of the three hashers behind one value (used by the body transforms).
public struct AnyDigest: Sendable {
    enum Impl: Sendable { case sha256(SHA256), sha512(SHA512), md5(MD5) }
    var impl: Impl
    public let algorithm: DigestAlgorithm

    public init(_ algorithm: DigestAlgorithm) {
        self.algorithm = algorithm
        switch algorithm {
        case .sha256: impl = .sha256(SHA256())
        case .sha512: impl = .sha512(SHA512())
        case .md5: impl = .md5(MD5())
        }
    }

    public mutating func update(_ data: UnsafeRawBufferPointer) {
        switch impl {
        case .sha256(var h): h.update(data); impl = .sha256(h)
        case .sha512(var h): h.update(data); impl = .sha512(h)
        case .md5(var h): h.update(data); impl = .md5(h)
        }
    }

    public mutating func finalize() -> [UInt8] {
        switch impl {
        case .sha256(var h): let d = h.finalize(); impl = .sha256(h); return d
        case .sha512(var h): let d = h.finalize(); impl = .sha512(h); return d
        case .md5(var h): let d = h.finalize(); impl = .md5(h); return d
        }
    }
}
