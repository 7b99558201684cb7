// Exact conversion of a decimal number w × 10^q (w a 64-bit integer) to the nearest binary64
// double, ties to even: the method of Eisel and Lemire (Lemire, "Number Parsing at a Gigabyte
// per Second", 2021). The product w × 5^q is formed from a 128-bit truncated approximation of
// 5^q; the error bound of that product says whether the rounding is already decided. When it
// is not (the value lies within the error bound of a halfway point between two doubles) the
// function gives up with nil and the caller takes the exact, slower `strtod` path.

/// 128-bit truncated approximations of the powers of five 5^q for q in
/// `minExponent...maxExponent`: 5^q = (T + δ) × 2^e with 2^127 <= T < 2^128 and 0 <= δ < 1
/// (δ = 0 where 5^q has at most 128 significant bits). Computed once, at first use, with exact
/// big-integer arithmetic; a global `let` is initialised lazily and exactly once, also when
/// several threads reach it together.
struct PowersOfFive {
    static let minExponent = -342
    static let maxExponent = 308

    /// T's high and low 64-bit words for q at `2 * (q - minExponent)` and the one after.
    let significands: [UInt64]
    /// e for q at `q - minExponent`.
    let binaryExponents: [Int16]

    init() {
        let count = PowersOfFive.maxExponent - PowersOfFive.minExponent + 1
        var significands = [UInt64](repeating: 0, count: 2 * count)
        var binaryExponents = [Int16](repeating: 0, count: count)
        var power: [UInt64] = [1]  // 5^n, little-endian 64-bit limbs
        // floor(2^reciprocalBits / 5^n): dividing by 5 once per step keeps it exact, as
        // floor(floor(a / b) / c) = floor(a / (b × c)). 2^959 leaves at least 128 bits of
        // quotient for 5^342 (795 bits).
        let reciprocalBits = 959
        var reciprocal = [UInt64](repeating: 0, count: reciprocalBits / 64 + 1)
        reciprocal[reciprocalBits / 64] = 1 << UInt64(reciprocalBits % 64)
        for n in 0...(-PowersOfFive.minExponent) {
            if n > 0 {
                BigNatural.multiply(&power, by: 5)
                BigNatural.divide(&reciprocal, by: 5)
            }
            let bits = BigNatural.bitLength(power)
            if n <= PowersOfFive.maxExponent {
                // 5^n itself: its top 128 bits (shifted up when it has fewer).
                let index = n - PowersOfFive.minExponent
                significands[2 * index] = BigNatural.word(power, at: bits - 64)
                significands[2 * index + 1] = BigNatural.word(power, at: bits - 128)
                binaryExponents[index] = Int16(bits - 128)
            }
            if n > 0 {
                // 5^-n = 2^-(bits + 127) × 2^(bits + 127) / 5^n, whose quotient has exactly
                // 128 bits since 2^(bits - 1) < 5^n < 2^bits; it is
                // floor(floor(2^959 / 5^n) / 2^(959 - bits - 127)).
                let index = -n - PowersOfFive.minExponent
                let shift = reciprocalBits - bits - 127
                significands[2 * index] = BigNatural.word(reciprocal, at: shift + 64)
                significands[2 * index + 1] = BigNatural.word(reciprocal, at: shift)
                binaryExponents[index] = Int16(-(bits + 127))
            }
        }
        self.significands = significands
        self.binaryExponents = binaryExponents
    }
}

let powersOfFive = PowersOfFive()

/// The few operations on unsigned big integers (little-endian 64-bit limbs) that the table
/// needs (it runs once, without allocating beyond the two numbers).
enum BigNatural {
    static func multiply(_ x: inout [UInt64], by k: UInt64) {
        var carry: UInt64 = 0
        for j in x.indices {
            let (hi, lo) = x[j].multipliedFullWidth(by: k)
            let (sum, overflow) = lo.addingReportingOverflow(carry)
            x[j] = sum
            carry = hi &+ (overflow ? 1 : 0)
        }
        if carry != 0 { x.append(carry) }
    }

    static func bitLength(_ x: [UInt64]) -> Int {
        var j = x.count - 1
        while j > 0 && x[j] == 0 { j -= 1 }
        return j * 64 + (64 - x[j].leadingZeroBitCount)
    }

    /// Bits b ..< b + 64 of x, as floor(x / 2^b) mod 2^64 (b may be negative: bits below
    /// bit 0 are zeros).
    static func word(_ x: [UInt64], at b: Int) -> UInt64 {
        func limb(_ j: Int) -> UInt64 { j < x.count ? x[j] : 0 }
        if b <= -64 { return 0 }
        if b < 0 { return limb(0) << UInt64(-b) }
        let j = b / 64, r = b % 64
        return r == 0 ? limb(j) : limb(j) >> UInt64(r) | limb(j + 1) << UInt64(64 - r)
    }

    /// x = floor(x / k).
    static func divide(_ x: inout [UInt64], by k: UInt64) {
        var remainder: UInt64 = 0
        for j in x.indices.reversed() {
            (x[j], remainder) = k.dividingFullWidth((remainder, x[j]))
        }
    }

    /// a < b (the tests compare with it).
    static func isLess(_ a: [UInt64], _ b: [UInt64]) -> Bool {
        var j = max(a.count, b.count) - 1
        while j >= 0 {
            let x = j < a.count ? a[j] : 0
            let y = j < b.count ? b[j] : 0
            if x != y { return x < y }
            j -= 1
        }
        return false
    }
}

/// The double nearest to w × 10^q (ties to even), or nil when this method cannot decide the
/// rounding or the result would be infinite: the caller then converts the text with `strtod`
/// (which also reports the overflow). Exact for every w and q it answers; subnormal results
/// and underflow to zero included.
@inline(__always)
func decimalToDouble(significand w: UInt64, exponent q: Int) -> Double? {
    if w == 0 { return 0 }
    // Below 10^-342 even w = 2^64 - 1 stays under half the least subnormal (2^-1075).
    if q < PowersOfFive.minExponent { return 0 }
    // At and above 10^309 every nonzero w overflows.
    if q > PowersOfFive.maxExponent { return nil }
    return eiselLemire(w, q)
}

func eiselLemire(_ w: UInt64, _ q: Int) -> Double? {
    let table = powersOfFive
    let index = q &- PowersOfFive.minExponent
    let tHi = table.significands[2 &* index]
    let tLo = table.significands[2 &* index &+ 1]
    let e5 = Int(table.binaryExponents[index])

    // wn = w × 2^lz in [2^63, 2^64); the product wn × T has 192 bits, of which Z = (hi, mid)
    // keeps the top 128 (Z >= 2^126). With 5^q = (T + δ) × 2^e5, the exact
    // X = wn × (T + δ) / 2^64 lies in [Z, Z + 2): the dropped low word adds less than 1,
    // wn × δ / 2^64 less than 1 more. The value is w × 10^q = X × 2^e.
    let lz = w.leadingZeroBitCount
    let wn = w << UInt64(lz)
    let (aHi, _) = wn.multipliedFullWidth(by: tLo)
    let (bHi, bLo) = wn.multipliedFullWidth(by: tHi)
    let (mid, carry) = bLo.addingReportingOverflow(aHi)
    let hi = bHi &+ (carry ? 1 : 0)  // bHi <= 2^64 - 2: no overflow
    let e = 64 &+ e5 &+ q &- lz

    // Keep 53 bits (Z has 127 or 128): drop s low bits of X and round X / 2^s; the result is
    // m × 2^(s + e). Subnormal results keep fewer bits, the exponent pinned at -1074.
    var s = 74 &+ Int(hi >> 63)
    if s &+ e < -1074 {
        s = -1074 &- e
        if s >= 129 {
            // X < Z + 2 <= 2^128 + 1 <= half of 2^s: zero, unless Z + 2 passes 2^128.
            if s > 129 || hi != .max || mid != .max { return 0 }
            return nil
        }
    }
    let sh = s &- 64  // 10...64: everything dropped from `mid`, and sh bits of `hi`
    let m0: UInt64 = sh == 64 ? 0 : hi >> UInt64(sh)
    let remHi: UInt64 = sh == 64 ? hi : hi & ((1 << UInt64(sh)) &- 1)
    let halfHi: UInt64 = 1 << UInt64(sh &- 1)
    // The dropped part R = Z mod 2^s against the halfway point H = 2^(s-1): X - m0 × 2^s lies
    // in [R, R + 2). R > H: above halfway, round up. R <= H - 2: below, round down.
    // R = H - 1 or R = H: undecided (X may be exactly halfway or on either side).
    var m: UInt64
    if remHi > halfHi || (remHi == halfHi && mid != 0) {
        m = m0 &+ 1
    } else if remHi == halfHi || (remHi == halfHi &- 1 && mid == .max) {
        return nil
    } else {
        m = m0
    }
    var e2 = s &+ e
    if m == 1 << 53 {
        m = 1 << 52
        e2 &+= 1
    }
    if m < 1 << 52 { return Double(bitPattern: m) }  // subnormal (e2 = -1074) or zero
    let biased = e2 &+ 1075
    if biased >= 2047 { return nil }  // infinite
    return Double(bitPattern: UInt64(biased) << 52 | (m & ((1 << 52) &- 1)))
}
