import XCTest
@testable import AFSerialization

final class PercentEscapingTests: XCTestCase {
    func testThatPercentEscapingMatchesAFNetworkingVectors() {
        XCTAssertEqual(PercentEscaping.escape(":#[]@!$&'()*+,;=?/"), "%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D?/")
        XCTAssertEqual(PercentEscaping.escape("!#$&'()*+,/:;=?@[]"), "%21%23%24%26%27%28%29%2A%2B%2C/%3A%3B%3D?%40%5B%5D")
        XCTAssertEqual(PercentEscaping.escape(" "), "%20")
        XCTAssertEqual(PercentEscaping.escape("%20"), "%2520")
        XCTAssertEqual(PercentEscaping.escape("👴🏿"), "%F0%9F%91%B4%F0%9F%8F%BF")
        XCTAssertEqual(PercentEscaping.escape("🔟🤓😀"), "%F0%9F%94%9F%F0%9F%A4%93%F0%9F%98%80")
    }

    func testThatOnlyTheUnreservedSetIsLeftAlone() {
        for b in 0..<256 {
            let c = UInt8(b)
            let expected = (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39)
                || "-._~/?".utf8.contains(c)
            XCTAssertEqual(PercentEscaping.isUnreserved(c), expected, "byte \(b)")
        }
    }

    func testThatLongMixedInputMatchesAByteByByteReference() {
        var rng = SystemRandomNumberGenerator()
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000] {
            var s = ""
            for _ in 0..<length {
                switch Int.random(in: 0..<6, using: &rng) {
                case 0: s += " "
                case 1: s += "é"
                case 2: s += "%"
                default: s.unicodeScalars.append(Unicode.Scalar(UInt8.random(in: 0x21...0x7E, using: &rng)))
                }
            }
            var ref = ""
            for c in s.utf8 {
                ref += PercentEscaping.isUnreserved(c) ? String(UnicodeScalar(c)) : String(format: "%%%02X", c)
            }
            XCTAssertEqual(PercentEscaping.escape(s), ref)
        }
    }

    func testThatInvalidUTF8IsAnErrorWithItsOffset() {
        for (bytes, offset) in [([0x61, 0x80] as [UInt8], 1), ([0xC0, 0xAF], 0), ([0xED, 0xA0, 0x80], 0),
                                ([0x61, 0x62, 0xF4, 0x90, 0x80, 0x80], 2), ([0xE2, 0x82], 0)] {
            var out = ByteWriter()
            XCTAssertThrowsError(try bytes.withUnsafeBufferPointer { try PercentEscaping.escape(utf8: $0, to: &out) }) { e in
                XCTAssertEqual((e as? AFSError)?.status, .invalidUTF8)
                XCTAssertTrue((e as? AFSError)?.message.contains("offset \(offset)") ?? false, "\(e)")
            }
        }
    }
}
