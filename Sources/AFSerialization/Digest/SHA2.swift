internal import CAFSerialization

@inline(__always)
func sha256Round(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: inout UInt32, _ e: UInt32, _ f: UInt32, _ g: UInt32,
                 _ h: inout UInt32, _ kw: UInt32) {
    let t1 = h &+ (rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25)) &+ (g ^ (e & (f ^ g))) &+ kw
    d = d &+ t1
    h = t1 &+ (rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22)) &+ ((a & b) | (c & (a | b)))
}

/// SHA-256 (FIPS 180-4), streaming.
///
/// `update` may be called any number of times with any split of the input; `finalize`
/// returns the 32-byte digest and resets the hasher to its initial state.
public struct SHA256: Sendable {
    /// Digest size in bytes.
    public static let byteCount = 32
    static let blockSize = 64

    @usableFromInline var h: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)
    @usableFromInline var pending = DigestPending()

    static let initial: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    )

    static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    public init() { h = SHA256.initial }

    /// Feeds bytes.
    public mutating func update(_ data: UnsafeRawBufferPointer) {
        var state = h
        pending.feed(data, blockSize: SHA256.blockSize) { p, n in SHA256.compress(&state, p, n) }
        h = state
    }

    /// Feeds bytes.
    public mutating func update(_ data: [UInt8]) {
        data.withUnsafeBytes { update($0) }
    }

    /// The digest of everything fed so far; the hasher starts over afterwards.
    public mutating func finalize() -> [UInt8] {
        let pad = pending.padding(blockSize: SHA256.blockSize, lengthBytes: 8, bigEndian: true)
        pad.withUnsafeBytes { update($0) }
        let s = h
        var out = [UInt8]()
        out.reserveCapacity(32)
        for w in [s.0, s.1, s.2, s.3, s.4, s.5, s.6, s.7] {
            out.append(UInt8(truncatingIfNeeded: w >> 24)); out.append(UInt8(truncatingIfNeeded: w >> 16))
            out.append(UInt8(truncatingIfNeeded: w >> 8)); out.append(UInt8(truncatingIfNeeded: w))
        }
        self = SHA256()
        return out
    }

    /// One-shot digest.
    public static func hash(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        var h = SHA256(); h.update(data); return h.finalize()
    }

    /// One-shot digest.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { hash($0) }
    }

    /// The CPU has the x86 SHA extensions: blocks go through them (Sources/CAFSerialization/
    /// sha256_x86.c); else the portable rounds below. Tests switch it off to check both.
    nonisolated(unsafe) static var useHardware = cafs_sha256_hw_available() != 0

    static func compress(_ s: inout (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32),
                         _ p: UnsafeRawPointer, _ blocks: Int) {
        if useHardware {
            withUnsafeMutableBytes(of: &s) { st in
                cafs_sha256_hw_blocks(st.baseAddress!.assumingMemoryBound(to: UInt32.self),
                                      p.assumingMemoryBound(to: UInt8.self), blocks)
            }
            return
        }
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            k.withUnsafeBufferPointer { k in
                var (h0, h1, h2, h3, h4, h5, h6, h7) = s
                for blk in 0..<blocks {
                    let base = p + blk &* 64
                    for i in 0..<16 {
                        w[i] = base.loadUnaligned(fromByteOffset: i &* 4, as: UInt32.self).bigEndian
                    }
                    for i in 16..<64 {
                        let x = w[i &- 15], y = w[i &- 2]
                        let s0 = rotr32(x, 7) ^ rotr32(x, 18) ^ (x &>> 3)
                        let s1 = rotr32(y, 17) ^ rotr32(y, 19) ^ (y &>> 10)
                        w[i] = w[i &- 16] &+ s0 &+ w[i &- 7] &+ s1
                    }
                    var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7
                    // Eight rounds per step with the roles of the variables rotated instead
                    // of moving values between them.
                    var i = 0
                    while i < 64 {
                        sha256Round(a, b, c, &d, e, f, g, &h, k[i] &+ w[i])
                        sha256Round(h, a, b, &c, d, e, f, &g, k[i &+ 1] &+ w[i &+ 1])
                        sha256Round(g, h, a, &b, c, d, e, &f, k[i &+ 2] &+ w[i &+ 2])
                        sha256Round(f, g, h, &a, b, c, d, &e, k[i &+ 3] &+ w[i &+ 3])
                        sha256Round(e, f, g, &h, a, b, c, &d, k[i &+ 4] &+ w[i &+ 4])
                        sha256Round(d, e, f, &g, h, a, b, &c, k[i &+ 5] &+ w[i &+ 5])
                        sha256Round(c, d, e, &f, g, h, a, &b, k[i &+ 6] &+ w[i &+ 6])
                        sha256Round(b, c, d, &e, f, g, h, &a, k[i &+ 7] &+ w[i &+ 7])
                        i &+= 8
                    }
                    h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d; h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= h
                }
                s = (h0, h1, h2, h3, h4, h5, h6, h7)
            }
        }
    }
}

/// SHA-512 (FIPS 180-4), streaming.
///
/// `update` may be called any number of times with any split of the input; `finalize`
/// returns the 64-byte digest and resets the hasher to its initial state.
public struct SHA512: Sendable {
    /// Digest size in bytes.
    public static let byteCount = 64
    static let blockSize = 128

    @usableFromInline var h: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
    @usableFromInline var pending = DigestPending()

    static let initial: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (
        0x6a09e667f3bcc908, 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b, 0xa54ff53a5f1d36f1,
        0x510e527fade682d1, 0x9b05688c2b3e6c1f, 0x1f83d9abfb41bd6b, 0x5be0cd19137e2179,
    )

    static let k: [UInt64] = [
        0x428a2f98d728ae22, 0x7137449123ef65cd, 0xb5c0fbcfec4d3b2f, 0xe9b5dba58189dbbc,
        0x3956c25bf348b538, 0x59f111f1b605d019, 0x923f82a4af194f9b, 0xab1c5ed5da6d8118,
        0xd807aa98a3030242, 0x12835b0145706fbe, 0x243185be4ee4b28c, 0x550c7dc3d5ffb4e2,
        0x72be5d74f27b896f, 0x80deb1fe3b1696b1, 0x9bdc06a725c71235, 0xc19bf174cf692694,
        0xe49b69c19ef14ad2, 0xefbe4786384f25e3, 0x0fc19dc68b8cd5b5, 0x240ca1cc77ac9c65,
        0x2de92c6f592b0275, 0x4a7484aa6ea6e483, 0x5cb0a9dcbd41fbd4, 0x76f988da831153b5,
        0x983e5152ee66dfab, 0xa831c66d2db43210, 0xb00327c898fb213f, 0xbf597fc7beef0ee4,
        0xc6e00bf33da88fc2, 0xd5a79147930aa725, 0x06ca6351e003826f, 0x142929670a0e6e70,
        0x27b70a8546d22ffc, 0x2e1b21385c26c926, 0x4d2c6dfc5ac42aed, 0x53380d139d95b3df,
        0x650a73548baf63de, 0x766a0abb3c77b2a8, 0x81c2c92e47edaee6, 0x92722c851482353b,
        0xa2bfe8a14cf10364, 0xa81a664bbc423001, 0xc24b8b70d0f89791, 0xc76c51a30654be30,
        0xd192e819d6ef5218, 0xd69906245565a910, 0xf40e35855771202a, 0x106aa07032bbd1b8,
        0x19a4c116b8d2d0c8, 0x1e376c085141ab53, 0x2748774cdf8eeb99, 0x34b0bcb5e19b48a8,
        0x391c0cb3c5c95a63, 0x4ed8aa4ae3418acb, 0x5b9cca4f7763e373, 0x682e6ff3d6b2b8a3,
        0x748f82ee5defb2fc, 0x78a5636f43172f60, 0x84c87814a1f0ab72, 0x8cc702081a6439ec,
        0x90befffa23631e28, 0xa4506cebde82bde9, 0xbef9a3f7b2c67915, 0xc67178f2e372532b,
        0xca273eceea26619c, 0xd186b8c721c0c207, 0xeada7dd6cde0eb1e, 0xf57d4f7fee6ed178,
        0x06f067aa72176fba, 0x0a637dc5a2c898a6, 0x113f9804bef90dae, 0x1b710b35131c471b,
        0x28db77f523047d84, 0x32caab7b40c72493, 0x3c9ebe0a15c9bebc, 0x431d67c49c100d4c,
        0x4cc5d4becb3e42b6, 0x597f299cfc657e2a, 0x5fcb6fab3ad6faec, 0x6c44198c4a475817,
    ]

    public init() { h = SHA512.initial }

    /// Feeds bytes.
    public mutating func update(_ data: UnsafeRawBufferPointer) {
        var state = h
        pending.feed(data, blockSize: SHA512.blockSize) { p, n in SHA512.compress(&state, p, n) }
        h = state
    }

    /// Feeds bytes.
    public mutating func update(_ data: [UInt8]) {
        data.withUnsafeBytes { update($0) }
    }

    /// The digest of everything fed so far; the hasher starts over afterwards.
    public mutating func finalize() -> [UInt8] {
        let pad = pending.padding(blockSize: SHA512.blockSize, lengthBytes: 16, bigEndian: true)
        pad.withUnsafeBytes { update($0) }
        let s = h
        var out = [UInt8]()
        out.reserveCapacity(64)
        for w in [s.0, s.1, s.2, s.3, s.4, s.5, s.6, s.7] {
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: w >> UInt64(shift)))
            }
        }
        self = SHA512()
        return out
    }

    /// One-shot digest.
    public static func hash(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        var h = SHA512(); h.update(data); return h.finalize()
    }

    /// One-shot digest.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { hash($0) }
    }

    static func compress(_ s: inout (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64),
                         _ p: UnsafeRawPointer, _ blocks: Int) {
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 80) { w in
            k.withUnsafeBufferPointer { k in
                var (h0, h1, h2, h3, h4, h5, h6, h7) = s
                for blk in 0..<blocks {
                    let base = p + blk &* 128
                    for i in 0..<16 {
                        w[i] = base.loadUnaligned(fromByteOffset: i &* 8, as: UInt64.self).bigEndian
                    }
                    for i in 16..<80 {
                        let x = w[i &- 15], y = w[i &- 2]
                        let s0 = rotr64(x, 1) ^ rotr64(x, 8) ^ (x &>> 7)
                        let s1 = rotr64(y, 19) ^ rotr64(y, 61) ^ (y &>> 6)
                        w[i] = w[i &- 16] &+ s0 &+ w[i &- 7] &+ s1
                    }
                    var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7
                    for i in 0..<80 {
                        let S1 = rotr64(e, 14) ^ rotr64(e, 18) ^ rotr64(e, 41)
                        let ch = (e & f) ^ (~e & g)
                        let t1 = h &+ S1 &+ ch &+ k[i] &+ w[i]
                        let S0 = rotr64(a, 28) ^ rotr64(a, 34) ^ rotr64(a, 39)
                        let maj = (a & b) ^ (a & c) ^ (b & c)
                        h = g; g = f; f = e; e = d &+ t1
                        d = c; c = b; b = a; a = t1 &+ S0 &+ maj
                    }
                    h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d; h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= h
                }
                s = (h0, h1, h2, h3, h4, h5, h6, h7)
            }
        }
    }
}
