import XCTest
@testable import AFSerialization

final class PercentEscapingTests: XCTestCase {
    func testThatPercentEscapingMatchesAFNetworkingVectors() {
        XCTAssertEqual(try PercentEscaping.escape(":#[]@!$&'()*+,;=?/"), "%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D?/")
        XCTAssertEqual(try PercentEscaping.escape("!#$&'()*+,/:;=?@[]"), "%21%23%24%26%27%28%29%2A%2B%2C/%3A%3B%3D?%40%5B%5D")
        XCTAssertEqual(try PercentEscaping.escape(" "), "%20")
        XCTAssertEqual(try PercentEscaping.escape("%20"), "%2520")
        XCTAssertEqual(try PercentEscaping.escape("👴🏿"), "%F0%9F%91%B4%F0%9F%8F%BF")
        XCTAssertEqual(try PercentEscaping.escape("🔟🤓😀"), "%F0%9F%94%9F%F0%9F%A4%93%F0%9F%98%80")
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
            XCTAssertEqual(try PercentEscaping.escape(s), ref)
        }
    }

    /// The DFA, the precise scan and Swift's own validation agree on every 1- and 2-byte
    /// input, every 3-byte input with an E0-EF or F0-F4 lead, and random 4-byte inputs
    /// placed after ASCII runs of every length around the 16-byte fast path.
    func testThatTheUTF8DFAAgreesWithTheScanAndTheStandardLibrary() {
        func check(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
            bytes.withUnsafeBufferPointer { b in
                let dfa = firstInvalidUTF8Offset(b)
                let scan = firstInvalidUTF8OffsetScan(b)
                XCTAssertEqual(dfa, scan, "\(bytes)", file: file, line: line)
                XCTAssertEqual(dfa == nil, String(validating: b, as: UTF8.self) != nil, "\(bytes)", file: file, line: line)
            }
        }
        for a in 0..<256 { check([UInt8(a)]) }
        for a in 0..<256 { for b in 0..<256 { check([UInt8(a), UInt8(b)]) } }
        for a in 0xE0...0xF4 { for b in stride(from: 0x70, through: 0xC0, by: 1) { for c in [0x41, 0x80, 0xBF, 0xC0] {
            check([UInt8(a), UInt8(b), UInt8(c)])
        } } }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let prefix = [UInt8](repeating: 0x61, count: Int.random(in: 0...40, using: &rng))
            let tail = (0..<4).map { _ in UInt8.random(in: 0x70...0xFF, using: &rng) }
            check(prefix + tail + prefix)
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
