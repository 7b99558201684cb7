import Foundation
import XCTest

@testable import AFSerialization

/// The error a parse throws, or nil when it succeeds.
private func parseError(_ text: String, allowFragments: Bool = true) -> AFSError? {
    parseError(Array(text.utf8), allowFragments: allowFragments)
}

private func parseError(_ bytes: [UInt8], allowFragments: Bool = true, maxDepth: Int = JSONParser.defaultMaxDepth) -> AFSError? {
    do {
        _ = try bytes.withUnsafeBufferPointer { try JSONParser.parse($0, allowFragments: allowFragments, maxDepth: maxDepth) }
        return nil
    } catch let e as AFSError {
        return e
    } catch {
        return AFSError(.invalidArgument, "unexpected error type \(error)")
    }
}

/// The byte offset at the end of an error message ("… at byte offset N").
private func offset(of e: AFSError?) -> Int? {
    guard let m = e?.message, let r = m.range(of: " at byte offset ", options: .backwards) else { return nil }
    return Int(m[r.upperBound...])
}

final class JSONParserTests: XCTestCase {
    // MARK: AFNetworking's vectors (AFJSONSerializationTests)

    func testThatJSONResponseSerializerReturnsDictionaryForValidJSONDictionary() throws {
        XCTAssertEqual(try JSONParser.parse("{\"foo\": \"bar\"}"), ["foo": "bar"])
    }

    func testThatJSONResponseSerializerReturnsErrorForInvalidJSON() {
        let e = parseError("{invalid}")
        XCTAssertEqual(e?.status, .invalidJSON)
        XCTAssertEqual(e?.message, "expected a string key or '}', found 'i' at byte offset 1")
    }

    func testThatJSONRemovesKeysWithNullValuesInputParses() throws {
        let v = try JSONParser.parse(#"{"key":"value","nullkey":null,"array":[{"subnullkey":null}]}"#)
        XCTAssertEqual(v, ["key": "value", "nullkey": nil, "array": [["subnullkey": nil]]])
    }

    // MARK: Values

    func testThatScalarsParse() throws {
        XCTAssertEqual(try JSONParser.parse("true"), true)
        XCTAssertEqual(try JSONParser.parse(" false "), false)
        XCTAssertEqual(try JSONParser.parse("null"), nil)
        XCTAssertEqual(try JSONParser.parse("\"a\""), "a")
        XCTAssertEqual(try JSONParser.parse("[]"), [])
        XCTAssertEqual(try JSONParser.parse("{}"), [:])
        XCTAssertEqual(try JSONParser.parse(" \t\r\n[ 1 , { \"a\" : [ ] } ]\n"), [1, ["a": []]])
        XCTAssertEqual(try JSONParser.parse([UInt8]("[1]".utf8), allowFragments: false), [1])
    }

    func testThatIntegersWithinInt64StayIntegers() throws {
        let cases: [(String, Value)] = [
            ("0", .int(0)), ("-1", .int(-1)), ("42", .int(42)),
            ("9223372036854775807", .int(.max)), ("-9223372036854775808", .int(.min)),
            ("9223372036854775808", .double(9223372036854775808.0)),
            ("-9223372036854775809", .double(-9223372036854775809.0)),
            ("18446744073709551616", .double(18446744073709551616.0)),
            ("123456789012345678901234567890", .double(123456789012345678901234567890.0)),
            ("1.0", .double(1)), ("1e2", .double(100)), ("1E+2", .double(100)), ("-1e-2", .double(-0.01)),
            ("0.5", .double(0.5)), ("10000000000000000000000", .double(1e22)),
        ]
        for (text, expected) in cases {
            let v = try JSONParser.parse(text)
            XCTAssertEqual(v, expected, text)
            XCTAssertEqual(v.kind, expected.kind, text)
        }
    }

    func testThatNegativeZeroIsADoubleKeepingItsSign() throws {
        for text in ["-0", "-0.0", "-0e5", "-0E-5"] {
            guard case .double(let d) = try JSONParser.parse(text) else { return XCTFail(text) }
            XCTAssertTrue(d == 0 && d.sign == .minus, text)
        }
        XCTAssertEqual(try JSONParser.parse("0").kind, .int)
        guard case .double(let z) = try JSONParser.parse("0.0") else { return XCTFail() }
        XCTAssertEqual(z.sign, .plus)
        // And it is written back as `-0`.
        XCTAssertEqual(try jsonText(try JSONParser.parse("[-0]")), "[-0]")
    }

    func testThatDoublesAreCorrectlyRounded() throws {
        let cases: [(String, Double)] = [
            ("0.1", 0.1), ("0.30000000000000004", 0.30000000000000004), ("2.2250738585072011e-308", Double.leastNormalMagnitude.nextDown),
            ("2.2250738585072014e-308", 2.2250738585072014e-308), ("4.9406564584124654e-324", .leastNonzeroMagnitude),
            ("1.7976931348623157e308", .greatestFiniteMagnitude), ("9007199254740993.0", 9007199254740992),
            ("9007199254740993.000000000000000000001", 9007199254740994), ("1e-400", 0), ("123456789012345678e-10", 12345678.9012345678),
            ("0.000000000000000000000000000000000000000001", 1e-42), ("1" + String(repeating: "0", count: 400) + "e-400", 1),
        ]
        for (text, expected) in cases {
            guard case .double(let d) = try JSONParser.parse(text) else { return XCTFail(text) }
            XCTAssertEqual(d.bitPattern, expected.bitPattern, text)
        }
    }

    func testThatRandomNumbersParseLikeTheStandardLibrary() throws {
        // Exercises both the exact fast path and the strtod path against Double(String).
        var rng = SeededGenerator(seed: 3)
        func digits(_ n: Int) -> String {
            String((0..<n).map { _ in Character(String(Int.random(in: 0...9, using: &rng))) })
        }
        for _ in 0..<20000 {
            var text = Bool.random(using: &rng) ? "-" : ""
            let intDigits = Int.random(in: 0...20, using: &rng)
            text += intDigits == 0 ? "0" : String(Int.random(in: 1...9, using: &rng)) + digits(intDigits - 1)
            if Bool.random(using: &rng) { text += "." + digits(Int.random(in: 1...20, using: &rng)) }
            if Bool.random(using: &rng) {
                text += ["e", "E", "e+", "e-", "E-"].randomElement(using: &rng)! + String(Int.random(in: 0...330, using: &rng))
            }
            guard let expected = Double(text), expected.isFinite else { continue }
            let v = try JSONParser.parse(text)
            switch v {
            case .double(let d): XCTAssertEqual(d.bitPattern, expected.bitPattern, text)
            case .int(let i): XCTAssertEqual(Double(i), expected, text)
            default: XCTFail(text)
            }
        }
        // Shortest round-trip text of random doubles.
        for _ in 0..<20000 {
            let d = Double(bitPattern: rng.next())
            guard d.isFinite else { continue }
            let v = try JSONParser.parse(d.description)
            guard case .double(let back) = v else { return XCTFail(d.description) }
            XCTAssertEqual(back.bitPattern, d.bitPattern, d.description)
        }
    }

    func testThatNumbersTooLargeForADoubleAreRejected() {
        for text in ["1e400", "-1e400", "1" + String(repeating: "0", count: 400)] {
            let e = parseError(text)
            XCTAssertEqual(e?.status, .invalidJSON)
            XCTAssertTrue(e?.message.contains("too large") == true, e?.message ?? text)
            XCTAssertEqual(offset(of: e), 0)
        }
    }

    func testThatStringsAreUnescaped() throws {
        XCTAssertEqual(try JSONParser.parse(#""\"\\\/\b\f\n\r\t""#), "\"\\/\u{8}\u{C}\n\r\t")
        XCTAssertEqual(try JSONParser.parse(#""\u0041\u00e9\u20AC\u0000x""#), "Aé€\u{0}x")
        XCTAssertEqual(try JSONParser.parse(#""\uD83D\uDE00 \ud834\udd1e""#), "😀 𝄞")
        XCTAssertEqual(try JSONParser.parse("\"é😀\u{7F}\u{2028}\""), "é😀\u{7F}\u{2028}")
        let long = String(repeating: "abcdefgh", count: 1000)
        XCTAssertEqual(try JSONParser.parse("\"\(long)\\n\(long)\""), .string(long + "\n" + long))
    }

    func testThatRepeatedKeysKeepTheFirstPositionAndTheLastValue() throws {
        let v = try JSONParser.parse(#"{"a":1,"b":2,"a":3}"#)
        guard case .dict(let d) = v else { return XCTFail() }
        XCTAssertEqual(d.keys, ["a", "b"])
        XCTAssertEqual(d["a"], 3)
        XCTAssertEqual(try jsonText(v), #"{"a":3,"b":2}"#)
    }

    func testThatObjectsWithRecurringShapesAreBuiltCorrectly() throws {
        // The reader reuses the key list of the previous object at the same level.
        let text = """
            [{"a":1,"b":2},{"a":3,"b":4},{"b":5,"a":6},{"a":7},{"a":8,"b":9,"c":10},{"a":11,"b":12},
             {"a":13,"a":14},{"a":15,"b":16},{"a":{"a":1,"b":2},"b":{"a":3,"b":4}},{"a":[{"x":1}],"b":[{"x":2}]},
             {"e\\u0301":1,"\\u00e9":2},{"e\\u0301":3,"\\u00e9":4},{"é":5,"é":6}]
            """
        let v = try JSONParser.parse(text)
        XCTAssertEqual(
            try jsonText(v),
            #"[{"a":1,"b":2},{"a":3,"b":4},{"b":5,"a":6},{"a":7},{"a":8,"b":9,"c":10},{"a":11,"b":12},"#
                + #"{"a":14},{"a":15,"b":16},{"a":{"a":1,"b":2},"b":{"a":3,"b":4}},{"a":[{"x":1}],"b":[{"x":2}]},"#
                + "{\"e\u{301}\":1,\"\u{e9}\":2},{\"e\u{301}\":3,\"\u{e9}\":4},{\"\u{e9}\":6}]")
        guard case .array(let a) = v, case .dict(let first) = a[0], case .dict(let second) = a[1] else { return XCTFail() }
        XCTAssertEqual(first["a"], 1)
        XCTAssertEqual(second["a"], 3)
        XCTAssertEqual(second["b"], 4)
    }

    func testThatReusedKeysAreStillCheckedStrictly() {
        // An escaped key of one object must not let the same bytes through raw in the next.
        let cases: [([UInt8], Int)] = [
            (Array(#"[{"\u0001":1},{""#.utf8) + [0x01] + Array(#"":2}]"#.utf8), 16),
            (Array(#"[{"a\"b":1},{"a"b":2}]"#.utf8), 16),
            (Array(#"[{"a":1},{"a"#.utf8), 12),
            (Array("[{\"ab\":1},{\"ab".utf8) + [0xFF] + Array("\":1}]".utf8), 14),
        ]
        for (bytes, at) in cases {
            let e = parseError(bytes)
            XCTAssertEqual(e?.status, .invalidJSON, String(decoding: bytes, as: UTF8.self))
            XCTAssertEqual(offset(of: e), at, e?.message ?? "")
        }
    }

    func testThatTheThreeEntryPointsAgree() throws {
        let text = #"{"k":[1,2.5,"é",true,null]}"#
        let a = try JSONParser.parse(text)
        let b = try JSONParser.parse(Array(text.utf8))
        let c = try Array(text.utf8).withUnsafeBufferPointer { try JSONParser.parse($0) }
        XCTAssertEqual(a, b)
        XCTAssertEqual(b, c)
        XCTAssertEqual(try jsonText(a), #"{"k":[1,2.5,"é",true,null]}"#)
    }

    // MARK: Errors

    func testThatEmptyInputIsAnError() {
        for text in ["", " ", "\n\t\r "] {
            let e = parseError(text)
            XCTAssertEqual(e?.status, .invalidJSON)
            XCTAssertTrue(e?.message.hasPrefix("no JSON value") == true, e?.message ?? "")
            XCTAssertEqual(offset(of: e), text.utf8.count)
        }
        XCTAssertEqual(parseError([UInt8]())?.message, "no JSON value: the input is empty at byte offset 0")
    }

    func testThatFragmentsCanBeRefused() {
        for text in ["1", "\"a\"", "true", "null", " -1.5"] {
            XCTAssertNil(parseError(text))
            let e = parseError(text, allowFragments: false)
            XCTAssertEqual(e?.status, .invalidJSON)
            XCTAssertTrue(e?.message.contains("fragments") == true, e?.message ?? "")
        }
        XCTAssertNil(parseError(" [1]", allowFragments: false))
        XCTAssertNil(parseError("{}", allowFragments: false))
    }

    func testThatErrorsNameWhatAndWhere() {
        let cases: [(String, String)] = [
            ("[1,]", "expected a JSON value, found ']' at byte offset 3"),
            ("{\"a\":1,}", "expected a string key after ',' (trailing commas are not allowed), found '}' at byte offset 7"),
            ("{\"a\" 1}", "expected ':' after an object key, found '1' at byte offset 5"),
            ("[1 2]", "expected ',' or ']' after an array element, found '2' at byte offset 3"),
            ("{\"a\":1 \"b\"}", "expected ',' or '}' after an object member, found '\"' at byte offset 7"),
            ("[1", "expected ',' or ']' after an array element, found the end of the input at byte offset 2"),
            ("01", "invalid number: leading zeros are not allowed at byte offset 1"),
            ("-", "expected a digit after '-', found the end of the input at byte offset 1"),
            ("+1", "expected a JSON value, found '+' at byte offset 0"),
            ("1.", "expected a digit after '.', found the end of the input at byte offset 2"),
            ("1e+", "expected a digit in the exponent, found the end of the input at byte offset 3"),
            ("tru", "invalid literal: expected 'true' (starting at byte offset 0), found the end of the input at byte offset 3"),
            ("nulL", "invalid literal: expected 'null' (starting at byte offset 0), found 'L' at byte offset 3"),
            ("NaN", "expected a JSON value, found 'N' at byte offset 0"),
            ("[1] x", "unexpected 'x' after the JSON value at byte offset 4"),
            ("\"abc", "unterminated string (opened at byte offset 0): expected '\"', found the end of the input at byte offset 4"),
            ("\"a\u{1}\"", "unescaped control character 0x01 in a string at byte offset 2"),
            ("[\"a\tb\"]", "unescaped control character 0x09 in a string at byte offset 3"),
            (#""\x""#, #"invalid escape in a string: expected one of " \ / b f n r t u after '\', found 'x' at byte offset 1"#),
            (#""\u12G4""#, "expected 4 hex digits after \\u, found 'G' at byte offset 5"),
            (#""ab\uD800""#, "invalid \\u escape: a high surrogate not followed by a \\u low surrogate at byte offset 3"),
            (#""\uD800\u0041""#, "invalid \\u escape: a high surrogate followed by \\u0041, not a low surrogate at byte offset 1"),
            (#""\uDC00""#, "invalid \\u escape: a lone low surrogate at byte offset 1"),
            ("\u{FEFF}{}", "a byte order mark (U+FEFF) is not allowed at byte offset 0"),
            ("[\u{C}]", "expected a JSON value, found byte 0x0C at byte offset 1"),
            ("/* c */ 1", "expected a JSON value, found '/' at byte offset 0"),
            ("{'a':1}", "expected a string key or '}', found ''' at byte offset 1"),
        ]
        for (text, message) in cases {
            let e = parseError(text)
            XCTAssertEqual(e?.status, .invalidJSON, text)
            XCTAssertEqual(e?.message, message, text)
        }
    }

    func testThatInvalidUTF8IsRejectedWithItsOffset() {
        let cases: [([UInt8], Int)] = [
            ([0x22, 0x61, 0xFF, 0x22], 2),  // not a lead byte
            ([0x22, 0xC3, 0x22], 1),  // truncated by the quote
            ([0x22, 0x61, 0x62, 0xC0, 0xAF, 0x22], 3),  // overlong
            ([0x22, 0xED, 0xA0, 0x80, 0x22], 1),  // UTF-8 encoded surrogate
            ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),  // above U+10FFFF
            ([0x22, 0xE0, 0x80, 0x80, 0x22], 1),  // overlong 3-byte
            ([0x22, 0x5C, 0x6E, 0x80, 0x22], 3),  // after an escape
            ([0x22, 0xE2, 0x82], 1),  // truncated at the end
            ([0x5B, 0xC3, 0xA9, 0x5D], 1),  // outside a string
        ]
        for (bytes, at) in cases {
            let e = parseError(bytes)
            XCTAssertEqual(e?.status, .invalidJSON, "\(bytes)")
            XCTAssertEqual(offset(of: e), at, e?.message ?? "\(bytes)")
        }
    }

    func testThatDeepNestingIsACleanError() {
        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        let e = parseError(deep)
        XCTAssertEqual(e?.status, .invalidJSON)
        XCTAssertEqual(e?.message, "nesting deeper than 512 levels at byte offset 512")

        let objects = [UInt8](String(repeating: "{\"a\":", count: 100_000).utf8)
        XCTAssertEqual(offset(of: parseError(objects)), 512 * 5)

        // Exactly the limit is fine; one more is not.
        func nested(_ n: Int) -> [UInt8] { [UInt8](repeating: 0x5B, count: n) + [UInt8](repeating: 0x5D, count: n) }
        XCTAssertNil(parseError(nested(512)))
        XCTAssertNotNil(parseError(nested(513)))
        XCTAssertNil(parseError(nested(3), maxDepth: 3))
        XCTAssertNotNil(parseError(nested(4), maxDepth: 3))
        XCTAssertNotNil(parseError(nested(1), maxDepth: 0))
        XCTAssertNil(parseError([UInt8]("1".utf8), maxDepth: 0))
    }

    func testThatAVeryDeepTreeWithinALargeLimitDoesNotOverflowTheStack() throws {
        let n = 50_000
        let text = [UInt8](repeating: 0x5B, count: n) + [UInt8](repeating: 0x5D, count: n)
        var cur = try text.withUnsafeBufferPointer { try JSONParser.parse($0, maxDepth: n) }
        // Take the tree apart one level at a time: releasing 50,000 nested arrays at once
        // would recurse in the runtime, not in the parser.
        var levels = 1
        while case .array(let a) = cur, let first = a.first {
            cur = first
            levels += 1
        }
        XCTAssertEqual(levels, n)
    }

    // MARK: JSONTestSuite

    func testThatJSONTestSuiteIsHandled() throws {
        // <repo>/Tests/AFSerializationTests/JSONParserTests.swift -> <repo>/Tests/data/JSONTestSuite
        // (vendored with its LICENSE)
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let folder = tests.appendingPathComponent("data/JSONTestSuite/test_parsing")
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else {
            return XCTFail("JSONTestSuite not found at \(folder.path)")
        }
        let files = names.filter { $0.hasSuffix(".json") }.sorted()
        XCTAssertEqual(files.count, 318, "JSONTestSuite at \(folder.path) is incomplete")
        var counts = (y: 0, n: 0, i: 0, iAccepted: 0)
        for name in files {
            let bytes = [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
            let e = parseError(bytes)
            switch name.prefix(2) {
            case "y_":
                counts.y += 1
                XCTAssertNil(e, "\(name) should parse: \(e?.message ?? "")")
            case "n_":
                counts.n += 1
                XCTAssertEqual(e?.status, .invalidJSON, "\(name) should be rejected")
                XCTAssertNotNil(offset(of: e), "\(name): no offset in \(e?.message ?? "")")
            case "i_":
                counts.i += 1
                if e == nil { counts.iAccepted += 1 } else { XCTAssertNotNil(offset(of: e), name) }
            default:
                XCTFail("unexpected file \(name)")
            }
        }
        XCTAssertEqual(counts.y, 95)
        XCTAssertEqual(counts.n, 188)
        XCTAssertEqual(counts.i, 35)
        // Accepted: i_number_real_underflow and i_number_double_huge_neg_exp (-> 0), the
        // three too-big integers (-> doubles), i_structure_500_nested_arrays (limit 512).
        XCTAssertEqual(counts.iAccepted, 6)
    }

    // MARK: Round trips

    func testThatRandomTreesSurviveAWriterParserRoundTrip() throws {
        for seed in 0..<400 {
            var maker = TreeMaker(seed: UInt64(seed) + 7_000)
            maker.doublesParseBackAsDoubles = true
            let tree = maker.document(depth: 5)
            for options: JSONWritingOptions in [[], [.prettyPrinted, .sortedKeys], [.withoutEscapingSlashes]] {
                let bytes = try JSONWriter.data(tree, options: options)
                let back = try JSONParser.parse(bytes, allowFragments: false)
                guard back == tree else {
                    printDifferences(tree, back)
                    return XCTFail("seed \(seed), options \(options.rawValue): \(String(decoding: bytes, as: UTF8.self))")
                }
                if options.isEmpty {
                    XCTAssertEqual(try JSONWriter.data(back), bytes)  // order kept too
                }
            }
        }
    }

    func testThatFoundationReadsWhatWeWriteAndWeReadWhatFoundationWrites() throws {
        for seed in 0..<200 {
            var maker = TreeMaker(seed: UInt64(seed) + 9_000)
            maker.singleKeyDicts = true
            maker.doublesParseBackAsDoubles = true
            let tree = maker.document(depth: 4)
            let theirs = try JSONSerialization.data(withJSONObject: foundationObject(tree))
            XCTAssertEqual(try JSONParser.parse([UInt8](theirs)), tree, "seed \(seed)")
            let ours = try JSONWriter.data(tree)
            XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(ours)), "seed \(seed)")
        }
    }
}

/// Prints where two trees differ (to explain a failed round trip).
private func printDifferences(_ a: Value, _ b: Value, _ path: String = "") {
    switch (a, b) {
    case (.dict(let x), .dict(let y)):
        if x.keys.count != y.keys.count || !zip(x.keys, y.keys).allSatisfy({ $0.utf8.elementsEqual($1.utf8) }) {
            print("keys differ at \(path): \(x.keys.map { Array($0.utf8) }) vs \(y.keys.map { Array($0.utf8) })")
        }
        for (k, v) in x.pairs { if let w = y[k] { printDifferences(v, w, path + "[\(k.debugDescription)]") } else { print("missing \(k.debugDescription) at \(path)") } }
    case (.array(let x), .array(let y)):
        if x.count != y.count { print("count differs at \(path)") }
        for (i, (v, w)) in zip(x, y).enumerated() { printDifferences(v, w, path + "[\(i)]") }
    default:
        if a != b { print("differ at \(path): \(a) vs \(b)") }
    }
}
