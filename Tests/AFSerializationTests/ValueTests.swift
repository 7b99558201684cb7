import XCTest
@testable import AFSerialization

final class ValueTests: XCTestCase {
    func testThatSettingAnExistingKeyReplacesInPlace() throws {
        var v: Value = .dict(ValueDict())
        try v.dictSet("b", 1)
        try v.dictSet("a", 2)
        try v.dictSet("b", 3)
        guard case .dict(let d) = v else { return XCTFail() }
        XCTAssertEqual(d.keys, ["b", "a"])
        XCTAssertEqual(d["b"], 3)
    }

    func testThatKeysCompareByBytesNotCanonicalEquivalence() throws {
        var v: Value = .dict(ValueDict())
        try v.dictSet("\u{e9}", 1)
        try v.dictSet("e\u{301}", 2)
        XCTAssertEqual(v.count, 2)
    }

    func testThatSetMembersOfDifferentKindsAreDistinct() throws {
        var s: Value = .set(ValueSet())
        for m: Value in [1, true, "1", 1.0, 1, "1", .double(.nan), .double(.nan)] { try s.append(m) }
        XCTAssertEqual(s.count, 5)
    }

    func testThatAppendingToADictionaryFails() {
        var v: Value = [:]
        XCTAssertThrowsError(try v.append(1)) { e in
            XCTAssertEqual((e as? AFSError)?.status, .invalidArgument)
        }
        var a: Value = []
        XCTAssertThrowsError(try a.dictSet("k", 1))
    }

    func testThatDoublesFormatLikeFoundation() {
        let cases: [(Double, String)] = [
            (1.0, "1"), (0.1, "0.1"), (1e16, "1e+16"), (1e-7, "1e-07"), (-0.0, "-0"),
            (123456789012345.0, "123456789012345"), (.nan, "nan"), (.infinity, "inf"), (-.infinity, "-inf"),
        ]
        for (d, s) in cases { XCTAssertEqual(formatDouble(d), s, "\(d)") }
    }

    func testThatByteWriterWritesDecimals() {
        for i: Int64 in [0, 7, -7, 1234567890, .max, .min] {
            var w = ByteWriter(capacity: 1)
            w.appendDecimal(i)
            XCTAssertEqual(try w.toString(), String(i))
        }
    }
}
