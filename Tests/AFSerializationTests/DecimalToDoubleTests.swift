import Foundation
import XCTest

@testable import AFSerialization

/// The JSON reader's number, or the message of its error.
private func parsedNumber(_ text: String) -> Result<Double, AFSError> {
    do {
        switch try JSONParser.parse(text) {
        case .double(let d): return .success(d)
        case .int(let i): return .success(Double(i))
        default: return .failure(AFSError(.invalidArgument, "not a number: \(text)"))
        }
    } catch let e as AFSError {
        return .failure(e)
    } catch {
        return .failure(AFSError(.invalidArgument, "unexpected error type \(error)"))
    }
}

/// A random significand of 1...19 decimal digits (its first digit nonzero).
private func randomSignificand(_ g: inout SeededGenerator) -> (UInt64, Int) {
    let digits = Int.random(in: 1...19, using: &g)
    var w = UInt64.random(in: 1...9, using: &g)
    for _ in 1..<digits { w = w * 10 + UInt64.random(in: 0...9, using: &g) }
    return (w, digits)
}

final class DecimalToDoubleTests: XCTestCase {
    /// Checks one w × 10^q against the C library's conversion of the same text: equal bits,
    /// or nil where the value overflows; nil elsewhere only counted (the caller then uses
    /// strtod).
    private func check(_ w: UInt64, _ q: Int, undecided: inout Int, file: StaticString = #filePath, line: UInt = #line) {
        let text = "\(w)e\(q)"
        guard let expected = Double(text) else { return XCTFail("strtod rejects \(text)", file: file, line: line) }
        let got = decimalToDouble(significand: w, exponent: q)
        if expected.isInfinite {
            XCTAssertNil(got, "\(text) overflows but gave \(String(describing: got))", file: file, line: line)
        } else if let got = got {
            XCTAssertEqual(got.bitPattern, expected.bitPattern, "\(text): \(got) != \(expected)", file: file, line: line)
        } else {
            undecided += 1
        }
    }

    func testRandomSignificandsAndExponentsMatchStrtod() {
        var g = SeededGenerator(seed: 0x5EED_D0B1E)
        var undecided = 0
        let n = 200_000
        for k in 0..<n {
            let (w, digits) = randomSignificand(&g)
            // The decimal magnitude w × 10^q ≈ 10^(digits - 1 + q): over the whole range, or
            // near the subnormal and zero edges, or near the overflow edge.
            let magnitude: Int
            switch k % 4 {
            case 0, 1: magnitude = Int.random(in: -345...330, using: &g)
            case 2: magnitude = Int.random(in: -330 ... -300, using: &g)
            default: magnitude = Int.random(in: 300...312, using: &g)
            }
            check(w, magnitude - (digits - 1), undecided: &undecided)
        }
        // Undecided cases need the product within 2 units of a halfway point in 70-odd bits:
        // for random inputs practically never.
        XCTAssertLessThan(undecided, n / 1000, "too many undecided conversions")
    }

    func testEveryExponentOfTheTable() {
        var g = SeededGenerator(seed: 42)
        var undecided = 0
        for q in (PowersOfFive.minExponent - 5)...(PowersOfFive.maxExponent + 5) {
            for _ in 0..<40 {
                check(randomSignificand(&g).0, q, undecided: &undecided)
            }
            check(1, q, undecided: &undecided)
            check(UInt64.max, q, undecided: &undecided)
            check(9_999_999_999_999_999_999, q, undecided: &undecided)
        }
        XCTAssertLessThan(undecided, 100)
    }

    /// Doubles from random bit patterns, printed in their shortest form (up to 17 digits)
    /// and with 17 and 19 significant digits, read back through the JSON reader.
    func testRandomDoublesRoundTripThroughTheReader() {
        var g = SeededGenerator(seed: 7)
        var count = 0
        while count < 20_000 {
            let d = Double(bitPattern: g.next() & ~(1 << 63))
            guard d.isFinite else { continue }
            count += 1
            for text in ["\(d)", String(format: "%.16e", d), String(format: "%.18e", -d)] {
                guard case .success(let got) = parsedNumber(text) else {
                    XCTFail("\(text) not read")
                    continue
                }
                XCTAssertEqual(got.bitPattern, Double(text)!.bitPattern, text)
            }
        }
    }

    /// Halfway cases, edges of the subnormal and normal ranges, the largest doubles and just
    /// beyond: the reader (whichever path it takes) must agree bit for bit with strtod, and
    /// anything strtod makes infinite is an error.
    func testHardCasesThroughTheReader() {
        let cases = [
            "9007199254740993.0", "9007199254740993e0", "9007199254740995e0", "9007199254740994.999",
            "9007199254740993000e-3", "18014398509481985e0", "18014398509481986e0", "1.8014398509481987e16",
            "2.2250738585072011e-308", "2.2250738585072012e-308", "2.2250738585072014e-308",
            "2.225073858507201e-308", "4.4501477170144023e-308", "4.9406564584124654e-324",
            "4.9e-324", "5e-324", "3e-324", "2e-324", "2.4703282292062327e-324",
            "2.4703282292062328e-324", "1.5e-323", "7.4e-323", "1e-323", "1e-322", "1e-320",
            "1e-310", "1e-308", "1e-307", "1e-342", "1e-343", "1e-400", "18446744073709551615e-343",
            "18446744073709551615e-342", "18446744073709551615e-360", "1.7976931348623157e308",
            "1.7976931348623158e308", "1.79769313486231580793e308", "1.7976931348623159e308",
            "1.797693134862315807e308", "1.7976931348623157081e308", "1e308", "9e308", "1e309",
            "1e400", "18446744073709551615e290", "8.98846567431158e307", "8.988465674311579e307",
            "9.999999999999999e22", "1e23", "8.589973e9", "1.00000000000000011102230246251565e0",
            "1.0000000000000002", "1.0000000000000001", "0.8444218515250481", "0.7579544029403025",
            "0.420571580830845", "123456789012345678e-10", "3.0517578125e-5", "4.35679845e-171",
            "7.2057594037927933e16", "-7.2057594037927933e16", "-2.2250738585072011e-308",
            "-1e-400", "-0.0", "0e400", "0.0000000000000000000000000000000000001e37",
            "1e100000000", "1e-100000000", "1e99999999", "0.0001e99999999999", "1e-99999999999",
        ]
        for text in cases {
            let expected = Double(text)!
            switch parsedNumber(text) {
            case .success(let got):
                XCTAssertFalse(expected.isInfinite, "\(text) read as \(got), strtod says \(expected)")
                XCTAssertEqual(got.bitPattern, expected.bitPattern, "\(text): \(got) != \(expected)")
            case .failure(let e):
                XCTAssertTrue(expected.isInfinite, "\(text): \(e.message)")
                XCTAssertTrue(e.message.hasPrefix("number \(text) is too large for a double"), e.message)
            }
        }
    }

    /// Random numbers in JSON's syntax (integer, fraction, exponent parts), including
    /// 20 and more digits (the strtod path) and leading zeros in the fraction.
    func testRandomJSONNumbersMatchStrtod() {
        var g = SeededGenerator(seed: 99)
        for _ in 0..<30_000 {
            var text = Bool.random(using: &g) ? "-" : ""
            let intDigits = Int.random(in: 0...12, using: &g)
            if intDigits == 0 {
                text += "0"
            } else {
                text += String(Int.random(in: 1...9, using: &g))
                for _ in 1..<intDigits { text += String(Int.random(in: 0...9, using: &g)) }
            }
            let fracDigits = Int.random(in: 0...14, using: &g)
            if fracDigits > 0 || intDigits == 0 {
                text += "."
                for _ in 0..<max(fracDigits, 1) { text += String(Int.random(in: 0...9, using: &g)) }
            }
            text += "e\(Int.random(in: -340...320, using: &g))"
            let expected = Double(text)!
            switch parsedNumber(text) {
            case .success(let got):
                XCTAssertEqual(got.bitPattern, expected.bitPattern, "\(text): \(got) != \(expected)")
            case .failure(let e):
                XCTAssertTrue(expected.isInfinite, "\(text): \(e.message)")
            }
        }
    }

    /// The table against exact arithmetic where 5^|q| fits in 64 bits: for q >= 0 the top
    /// bits are 5^q itself; for q < 0, T = floor(2^-e / 5^-q).
    func testTableAgainstSmallPowers() {
        let table = powersOfFive
        var five: UInt64 = 1
        for n in 0...27 {
            let i = n - PowersOfFive.minExponent
            let hi = table.significands[2 * i], lo = table.significands[2 * i + 1]
            let e = Int(table.binaryExponents[i])
            let bits = 64 - five.leadingZeroBitCount
            XCTAssertEqual(e, bits - 128, "q = \(n)")
            XCTAssertEqual(lo, 0, "q = \(n)")
            XCTAssertEqual(hi, five << UInt64(64 - bits), "q = \(n)")
            if n > 0 {
                // T × 5^n <= 2^k < (T + 1) × 5^n with k = -e(-n): the product's three words.
                let j = -n - PowersOfFive.minExponent
                let th = table.significands[2 * j], tl = table.significands[2 * j + 1]
                let k = -Int(table.binaryExponents[j])
                XCTAssertEqual(th >> 63, 1, "q = -\(n)")
                let (l1, l0) = tl.multipliedFullWidth(by: five)
                let (h1, h0) = th.multipliedFullWidth(by: five)
                let (p1, c) = h0.addingReportingOverflow(l1)
                let p2 = h1 + (c ? 1 : 0)
                let p = [l0, p1, p2]
                // 2^k as three words.
                var power: [UInt64] = [0, 0, 0]
                power[k / 64] = 1 << UInt64(k % 64)
                XCTAssertTrue(BigNatural.isLess(p, power), "q = -\(n): T × 5^n >= 2^k")
                var next = p
                let (s0, o0) = next[0].addingReportingOverflow(five)
                next[0] = s0
                if o0 { next[1] &+= 1; if next[1] == 0 { next[2] &+= 1 } }
                XCTAssertFalse(BigNatural.isLess(next, power), "q = -\(n): (T + 1) × 5^n < 2^k")
            }
            if n < 27 { five *= 5 }
        }
        for i in 0..<(table.binaryExponents.count) {
            XCTAssertEqual(table.significands[2 * i] >> 63, 1, "q = \(i + PowersOfFive.minExponent) not normalised")
        }
    }

    /// Every entry for q < 0 against a second, independent computation: the quotient
    /// floor(2^k / 5^-q) by long division one bit at a time (the table divides 2^959 by 5
    /// repeatedly); and every entry for q >= 0 against 5^q's own top bits.
    func testWholeTableAgainstLongDivision() {
        let table = powersOfFive
        var power: [UInt64] = [1]
        for n in 0...(-PowersOfFive.minExponent) {
            if n > 0 { BigNatural.multiply(&power, by: 5) }
            let bits = BigNatural.bitLength(power)
            if n <= PowersOfFive.maxExponent {
                let i = n - PowersOfFive.minExponent
                XCTAssertEqual(Int(table.binaryExponents[i]), bits - 128, "q = \(n)")
                // The top 128 bits of 5^n, one bit at a time.
                var hi: UInt64 = 0, lo: UInt64 = 0
                for b in stride(from: bits - 1, through: bits - 128, by: -1) {
                    let bit: UInt64 = b >= 0 && (power[b / 64] >> UInt64(b % 64)) & 1 == 1 ? 1 : 0
                    hi = hi << 1 | lo >> 63
                    lo = lo << 1 | bit
                }
                XCTAssertEqual(table.significands[2 * i], hi, "q = \(n)")
                XCTAssertEqual(table.significands[2 * i + 1], lo, "q = \(n)")
            }
            guard n > 0 else { continue }
            let i = -n - PowersOfFive.minExponent
            XCTAssertEqual(Int(table.binaryExponents[i]), -(bits + 127), "q = -\(n)")
            // 2^(bits + 127) / 5^n: the first `bits` bits of the dividend leave the remainder
            // 2^(bits - 1) (below 5^n) and quotient bits 0; each of the remaining 128 zero bits
            // doubles the remainder and yields one quotient bit.
            var r = [UInt64](repeating: 0, count: power.count + 1)
            r[(bits - 1) / 64] = 1 << UInt64((bits - 1) % 64)
            var hi: UInt64 = 0, lo: UInt64 = 0
            for _ in 0..<128 {
                var carry: UInt64 = 0
                for j in r.indices {
                    let next = r[j] >> 63
                    r[j] = r[j] << 1 | carry
                    carry = next
                }
                var bit: UInt64 = 0
                if !BigNatural.isLess(r, power) {
                    var borrow = false
                    for j in r.indices {
                        let y = j < power.count ? power[j] : 0
                        let (d1, o1) = r[j].subtractingReportingOverflow(y)
                        let (d2, o2) = d1.subtractingReportingOverflow(borrow ? 1 : 0)
                        r[j] = d2
                        borrow = o1 || o2
                    }
                    bit = 1
                }
                hi = hi << 1 | lo >> 63
                lo = lo << 1 | bit
            }
            XCTAssertEqual(table.significands[2 * i], hi, "q = -\(n)")
            XCTAssertEqual(table.significands[2 * i + 1], lo, "q = -\(n)")
        }
    }
}
