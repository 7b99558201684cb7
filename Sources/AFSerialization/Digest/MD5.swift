/// MD5 (RFC 1321), streaming. For `Content-MD5` only (S3 and friends ask for it); not a
/// security primitive.
///
/// `update` may be called any number of times with any split of the input; `finalize`
/// returns the 16-byte digest and resets the hasher to its initial state.
public struct MD5: Sendable {
    /// Digest size in bytes.
    public static let byteCount = 16
    static let blockSize = 64

    @usableFromInline var h: (UInt32, UInt32, UInt32, UInt32) = (0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476)
    @usableFromInline var pending = DigestPending()

    /// T[i] = floor(2^32 * |sin(i + 1)|) (RFC 1321, 3.4).
    static let t: [UInt32] = [
        0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
        0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
        0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
        0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
        0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
        0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
        0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
        0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,

    ]

    public init() {}

    /// Feeds bytes.
    public mutating func update(_ data: UnsafeRawBufferPointer) {
        var state = h
        pending.feed(data, blockSize: MD5.blockSize) { p, n in MD5.compress(&state, p, n) }
        h = state
    }

    /// Feeds bytes.
    public mutating func update(_ data: [UInt8]) {
        data.withUnsafeBytes { update($0) }
    }

    /// The digest of everything fed so far; the hasher starts over afterwards.
    public mutating func finalize() -> [UInt8] {
        let pad = pending.padding(blockSize: MD5.blockSize, lengthBytes: 8, bigEndian: false)
        pad.withUnsafeBytes { update($0) }
        let s = h
        var out = [UInt8]()
        out.reserveCapacity(16)
        for w in [s.0, s.1, s.2, s.3] {
            out.append(UInt8(truncatingIfNeeded: w)); out.append(UInt8(truncatingIfNeeded: w >> 8))
            out.append(UInt8(truncatingIfNeeded: w >> 16)); out.append(UInt8(truncatingIfNeeded: w >> 24))
        }
        self = MD5()
        return out
    }

    /// One-shot digest.
    public static func hash(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        var h = MD5(); h.update(data); return h.finalize()
    }

    /// One-shot digest.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { hash($0) }
    }

    static func compress(_ s: inout (UInt32, UInt32, UInt32, UInt32), _ p: UnsafeRawPointer, _ blocks: Int) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { x in
            t.withUnsafeBufferPointer { t in
                var (h0, h1, h2, h3) = s
                for blk in 0..<blocks {
                    let base = p + blk &* 64
                    for i in 0..<16 {
                        x[i] = base.loadUnaligned(fromByteOffset: i &* 4, as: UInt32.self).littleEndian
                    }
                    var a = h0, b = h1, c = h2, d = h3
                    // Round 1: F(b,c,d) = (b & c) | (~b & d), message word i, shifts 7 12 17 22.
                    var i = 0
                    while i < 16 {
                        a = b &+ rotl32(a &+ ((b & c) | (~b & d)) &+ x[i] &+ t[i], 7)
                        d = a &+ rotl32(d &+ ((a & b) | (~a & c)) &+ x[i &+ 1] &+ t[i &+ 1], 12)
                        c = d &+ rotl32(c &+ ((d & a) | (~d & b)) &+ x[i &+ 2] &+ t[i &+ 2], 17)
                        b = c &+ rotl32(b &+ ((c & d) | (~c & a)) &+ x[i &+ 3] &+ t[i &+ 3], 22)
                        i &+= 4
                    }
                    // Round 2: G(b,c,d) = (b & d) | (c & ~d), word (5i + 1) mod 16, shifts 5 9 14 20.
                    while i < 32 {
                        a = b &+ rotl32(a &+ ((b & d) | (c & ~d)) &+ x[(5 &* i &+ 1) & 15] &+ t[i], 5)
                        d = a &+ rotl32(d &+ ((a & c) | (b & ~c)) &+ x[(5 &* i &+ 6) & 15] &+ t[i &+ 1], 9)
                        c = d &+ rotl32(c &+ ((d & b) | (a & ~b)) &+ x[(5 &* i &+ 11) & 15] &+ t[i &+ 2], 14)
                        b = c &+ rotl32(b &+ ((c & a) | (d & ~a)) &+ x[(5 &* i &+ 16) & 15] &+ t[i &+ 3], 20)
                        i &+= 4
                    }
                    // Round 3: H(b,c,d) = b ^ c ^ d, word (3i + 5) mod 16, shifts 4 11 16 23.
                    while i < 48 {
                        a = b &+ rotl32(a &+ (b ^ c ^ d) &+ x[(3 &* i &+ 5) & 15] &+ t[i], 4)
                        d = a &+ rotl32(d &+ (a ^ b ^ c) &+ x[(3 &* i &+ 8) & 15] &+ t[i &+ 1], 11)
                        c = d &+ rotl32(c &+ (d ^ a ^ b) &+ x[(3 &* i &+ 11) & 15] &+ t[i &+ 2], 16)
                        b = c &+ rotl32(b &+ (c ^ d ^ a) &+ x[(3 &* i &+ 14) & 15] &+ t[i &+ 3], 23)
                        i &+= 4
                    }
                    // Round 4: I(b,c,d) = c ^ (b | ~d), word 7i mod 16, shifts 6 10 15 21.
                    while i < 64 {
                        a = b &+ rotl32(a &+ (c ^ (b | ~d)) &+ x[(7 &* i) & 15] &+ t[i], 6)
                        d = a &+ rotl32(d &+ (b ^ (a | ~c)) &+ x[(7 &* i &+ 7) & 15] &+ t[i &+ 1], 10)
                        c = d &+ rotl32(c &+ (a ^ (d | ~b)) &+ x[(7 &* i &+ 14) & 15] &+ t[i &+ 2], 15)
                        b = c &+ rotl32(b &+ (d ^ (c | ~a)) &+ x[(7 &* i &+ 21) & 15] &+ t[i &+ 3], 21)
                        i &+= 4
                    }
                    h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d
                }
                s = (h0, h1, h2, h3)
            }
        }
    }
}
