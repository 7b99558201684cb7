import Foundation
import XCTest

@testable import AFSerialization

/// Random parameter trees for the cross-checks and round trips.
struct TreeMaker {
    var rng: SeededGenerator
    /// Dictionaries have one key (so Foundation's order is defined), unless `lowercaseKeys`.
    var singleKeyDicts = false
    /// Keys of multi-key dictionaries are lowercase ASCII (Foundation's sorted order and
    /// ours agree on them).
    var lowercaseKeys = false
    /// Doubles are written with a `.` or an exponent, so they parse back as doubles.
    var doublesParseBackAsDoubles = false

    static let pieces: [String] = [
        "a", "Z", "key", "value", "/", "\\", "\"", " ", "\u{0}", "\u{1}", "\u{8}", "\u{9}", "\u{A}", "\u{B}",
        "\u{C}", "\u{D}", "\u{1F}", "\u{7F}", "é", "€", "😀", "\u{2028}", "\u{2029}", "\u{FEFF}", "http://x.y/z?q=1&r=2",
        "0", "-", "{", "}", "[", "]", ":", ",", "ü", "中文", "\u{10FFFF}",
    ]

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    mutating func string() -> String {
        var s = ""
        for _ in 0..<Int.random(in: 0...6, using: &rng) { s += TreeMaker.pieces.randomElement(using: &rng)! }
        return s
    }

    mutating func key() -> String {
        if lowercaseKeys {
            let letters = Array("abcdefghijklmnopqrstuvwxyz")
            return String((0..<Int.random(in: 1...5, using: &rng)).map { _ in letters.randomElement(using: &rng)! })
        }
        return string()
    }

    mutating func double() -> Double {
        var d: Double
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: d = Double(bitPattern: rng.next())
        case 1: d = Double(Int.random(in: -1_000_000...1_000_000, using: &rng)) / 1000
        case 2: d = Double.random(in: -1...1, using: &rng) * pow(10, Double(Int.random(in: -30...30, using: &rng)))
        default: d = [0.1, 1e16, 1e-7, -0.0, 123456789012345.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.5, 1e21, 1e22, 2.5e-5]
            .randomElement(using: &rng)!
        }
        if !d.isFinite { d = 1.5 }
        if doublesParseBackAsDoubles {
            let text = formatDouble(d)
            if !text.contains(".") && !text.contains("e") && text != "-0" {
                d = Double(Int.random(in: -1000...1000, using: &rng)) + 0.5
            }
        }
        return d
    }

    mutating func scalar() -> Value {
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2:
            let i = Int64.random(in: .min ... .max, using: &rng)
            return .int(Bool.random(using: &rng) ? i : i >> Int.random(in: 0...63, using: &rng))
        case 3: return .double(double())
        default: return .string(string())
        }
    }

    mutating func tree(depth: Int) -> Value {
        if depth == 0 || Int.random(in: 0..<3, using: &rng) == 0 { return scalar() }
        if Bool.random(using: &rng) {
            return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in tree(depth: depth - 1) })
        }
        var d = ValueDict()
        let n = singleKeyDicts ? Int.random(in: 0...1, using: &rng) : Int.random(in: 0...4, using: &rng)
        for _ in 0..<n { d[key()] = tree(depth: depth - 1) }
        return .dict(d)
    }

    /// A tree whose top level is a container.
    mutating func document(depth: Int) -> Value {
        while true {
            let t = tree(depth: depth)
            if t.isContainer { return t }
        }
    }
}

/// The value as Foundation objects, for `JSONSerialization`.
func foundationObject(_ v: Value) -> Any {
    switch v {
    case .null: return NSNull()
    case .bool(let b): return b
    case .int(let i): return NSNumber(value: i)
    case .double(let d): return NSNumber(value: d)
    case .string(let s): return s
    case .data(let d): return Data(d)
    case .date(let t): return Date(timeIntervalSince1970: t)
    case .array(let a): return a.map(foundationObject)
    case .set(let s): return NSSet(array: s.members.map(foundationObject))
    case .dict(let d):
        var out: [String: Any] = [:]
        for (k, x) in d.pairs { out[k] = foundationObject(x) }
        return out
    }
}

func jsonText(_ v: Value, _ options: JSONWritingOptions = []) throws -> String {
    String(decoding: try JSONWriter.data(v, options: options), as: UTF8.self)
}

final class JSONWriterTests: XCTestCase {
    // MARK: AFNetworking's golden vectors (AFJSONSerializationTests)

    func testThatJSONRequestSerializationHandlesParametersDictionary() throws {
        XCTAssertEqual(try jsonText(["key": "value"]), "{\"key\":\"value\"}")
    }

    func testThatJSONRequestSerializationHandlesParametersArray() throws {
        XCTAssertEqual(try jsonText([["key": "value"]]), "[{\"key\":\"value\"}]")
    }

    func testThatJSONRequestSerializationHandlesInvalidJSON() {
        let parameters: Value = ["key": .set(ValueSet(["value"]))]
        XCTAssertThrowsError(try JSONWriter.data(parameters)) { error in
            let e = error as? AFSError
            XCTAssertEqual(e?.status, .invalidJSON)
            XCTAssertEqual(e?.message, "The `parameters` argument is not valid JSON. (a set at parameters[\"key\"])")
        }
    }

    // MARK: Format

    func testThatScalarsAreWrittenAsFoundationWritesThem() throws {
        let v: Value = [true, false, nil, 0, -7, .int(.max), .int(.min), 1.0, 0.1, 1e16, 1e-7, -0.0, 123456789012345.0, 2.5]
        XCTAssertEqual(
            try jsonText(v),
            "[true,false,null,0,-7,9223372036854775807,-9223372036854775808,1,0.1,1e+16,1e-07,-0,123456789012345,2.5]")
    }

    func testThatDoublesAreWrittenAsFormatDoubleWritesThem() throws {
        var rng = SeededGenerator(seed: 7)
        var specials: [Double] = [
            0, -0.0, 1, -1, 0.5, 1e15, 1e16, 9007199254740992, 9007199254740992.0.nextUp, 9007199254740991, 4503599627370495.5,
            -9007199254740991, 1e21, 1e22, 1e23, .leastNonzeroMagnitude, 2.2250738585072014e-308, .greatestFiniteMagnitude,
            -.greatestFiniteMagnitude, .ulpOfOne, 0.1 + 0.2, 100, 1e-4, 1e-5, 123456.789,
        ]
        for _ in 0..<20000 {
            let d = Double(bitPattern: rng.next())
            if d.isFinite { specials.append(d) }
            specials.append(Double(Int64.random(in: -(1 << 54)...(1 << 54), using: &rng)))
            specials.append(Double(Int.random(in: -100000...100000, using: &rng)) / 64)
            // Decimal fractions of every length and magnitude (the writer's short path).
            let digits = Double(Int64.random(in: 1...999_999_999_999_999, using: &rng))
            specials.append(digits / pow(10, Double(Int.random(in: 1...20, using: &rng))))
            specials.append(Double(Int.random(in: -10_000_000...10_000_000, using: &rng)) / 1000)
            specials.append(Double(Int.random(in: 1...1_000_000, using: &rng)) / 3)
        }
        specials += [0.001, 0.00099999, 0.0015, 999999999999999.9, 0.30000000000000004, 2.5e-3, 0.125]
        for d in specials {
            XCTAssertEqual(try jsonText([.double(d)]), "[\(formatDouble(d))]", "\(d.bitPattern)")
        }
    }

    func testThatSlashesAreEscapedUnlessWithoutEscapingSlashes() throws {
        let v: Value = ["a/b": "http://example.com/x"]
        XCTAssertEqual(try jsonText(v), #"{"a\/b":"http:\/\/example.com\/x"}"#)
        XCTAssertEqual(try jsonText(v, .withoutEscapingSlashes), #"{"a/b":"http://example.com/x"}"#)
    }

    func testThatControlCharactersQuotesAndBackslashesAreEscaped() throws {
        var s = ""
        for c in 0..<0x20 { s.unicodeScalars.append(Unicode.Scalar(UInt8(c))) }
        s += "\"\\\u{7F}\u{2028}\u{2029}é😀"
        let expected =
            #"["\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f"#
            + #"\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f"#
            + "\\\"\\\\\u{7F}\u{2028}\u{2029}é😀\"]"
        XCTAssertEqual(try jsonText([.string(s)]), expected)
    }

    func testThatEscapesAreFoundAtEveryPositionOfShortStrings() throws {
        // The writer tests 16, 8 and 4 bytes at a time; put one special character at every
        // offset of every length up to 40.
        let specials: [(String, String)] = [
            ("\"", "\\\""), ("\\", "\\\\"), ("/", "\\/"), ("\n", "\\n"), ("\u{1}", "\\u0001"), ("\u{1F}", "\\u001f"),
            ("é", "é"), ("\u{7F}", "\u{7F}"),
        ]
        for length in 1...40 {
            for position in 0..<length {
                for (raw, escaped) in specials {
                    let s = String(repeating: "a", count: position) + raw + String(repeating: "b", count: length - position - 1)
                    let expected = "\"" + String(repeating: "a", count: position) + escaped
                        + String(repeating: "b", count: length - position - 1) + "\""
                    XCTAssertEqual(try jsonText(.string(s), .fragmentsAllowed), expected)
                    let unescapedSlash = expected.replacingOccurrences(of: "\\/", with: "/")
                    XCTAssertEqual(try jsonText(.string(s), [.fragmentsAllowed, .withoutEscapingSlashes]), unescapedSlash)
                }
            }
        }
        XCTAssertEqual(try jsonText(.string(""), .fragmentsAllowed), "\"\"")
    }

    func testThatLongStringsAreEscapedAcrossChunks() throws {
        // Longer than the writer's 8192-byte chunks, with escapes at every alignment.
        var s = ""
        var expected = "\""
        for i in 0..<30000 {
            switch i % 37 {
            case 0: s += "\n"; expected += "\\n"
            case 5: s += "/"; expected += "\\/"
            case 11: s += "\u{1}"; expected += "\\u0001"
            case 17: s += "é"; expected += "é"
            default: s += "x"; expected += "x"
            }
        }
        expected += "\""
        XCTAssertEqual(try jsonText(.string(s), .fragmentsAllowed), expected)
    }

    func testThatPrettyPrintingIndentsLikeFoundation() throws {
        let v: Value = .dict(ValueDict([
            ("a", [1, [2, 3], [:]]),
            ("b", .dict(ValueDict([("c", "d"), ("e", [])]))),
            ("f", nil),
        ]))
        XCTAssertEqual(
            try jsonText(v, .prettyPrinted),
            """
            {
              "a" : [
                1,
                [
                  2,
                  3
                ],
                {

                }
              ],
              "b" : {
                "c" : "d",
                "e" : [

                ]
              },
              "f" : null
            }
            """)
    }

    func testThatEmptyContainersArePrettyPrintedWithABlankLine() throws {
        XCTAssertEqual(try jsonText([:], .prettyPrinted), "{\n\n}")
        XCTAssertEqual(try jsonText([], .prettyPrinted), "[\n\n]")
        XCTAssertEqual(try jsonText(["a": []], .prettyPrinted), "{\n  \"a\" : [\n\n  ]\n}")
        XCTAssertEqual(try jsonText([[[:]]], .prettyPrinted), "[\n  [\n    {\n\n    }\n  ]\n]")
        XCTAssertEqual(try jsonText([:]), "{}")
        XCTAssertEqual(try jsonText([]), "[]")
    }

    func testThatDictionariesKeepInsertionOrderUnlessSorted() throws {
        var d = ValueDict()
        for k in ["z", "b", "a", "é", "B", "_", "1"] { d[k] = .int(Int64(d.count)) }
        d["b"] = 99  // replaced in place
        XCTAssertEqual(try jsonText(.dict(d)), #"{"z":0,"b":99,"a":2,"é":3,"B":4,"_":5,"1":6}"#)
        // Unicode-scalar order. Foundation on Linux sorts these as a, b, B, é, z (locale
        // order); docs/DESIGN.md deliberately does not.
        XCTAssertEqual(try jsonText(.dict(d), .sortedKeys), #"{"1":6,"B":4,"_":5,"a":2,"b":99,"z":0,"é":3}"#)
        XCTAssertEqual(
            try jsonText(["b": ["d": 1, "c": 2], "a": [["y": 1, "x": 2]]], [.sortedKeys, .prettyPrinted]),
            """
            {
              "a" : [
                {
                  "x" : 2,
                  "y" : 1
                }
              ],
              "b" : {
                "c" : 2,
                "d" : 1
              }
            }
            """)
    }

    func testThatSortedKeysCompareByBytesNotCanonicalEquivalence() throws {
        var d = ValueDict()
        d["\u{e9}"] = 1  // C3 A9
        d["e\u{301}"] = 2  // 65 CC 81
        d["ea"] = 3
        XCTAssertEqual(try jsonText(.dict(d), .sortedKeys), "{\"ea\":3,\"e\u{301}\":2,\"\u{e9}\":1}")
    }

    // MARK: Fragments and errors

    func testThatScalarTopLevelNeedsFragmentsAllowed() throws {
        for v: Value in ["s", 1, 1.5, true, nil] {
            XCTAssertThrowsError(try JSONWriter.data(v)) { error in
                let e = error as? AFSError
                XCTAssertEqual(e?.status, .invalidJSON)
                XCTAssertTrue(e?.message.hasPrefix(JSONWriter.invalidParametersMessage) == true, e?.message ?? "")
                XCTAssertTrue(e?.message.contains("top level") == true, e?.message ?? "")
            }
        }
        XCTAssertEqual(try jsonText("a/b", .fragmentsAllowed), #""a\/b""#)
        XCTAssertEqual(try jsonText(42, .fragmentsAllowed), "42")
        XCTAssertEqual(try jsonText(nil, [.fragmentsAllowed, .prettyPrinted]), "null")
    }

    func testThatInvalidValuesAreRejectedWithTheirPath() {
        let cases: [(Value, String)] = [
            (["tags": .set(ValueSet(["a"]))], "(a set at parameters[\"tags\"])"),
            (["a": [1, ["b": .data([1, 2, 3])]]], "(data (3 bytes) at parameters[\"a\"][1][\"b\"])"),
            ([1, 2, .double(.nan)], "(a double nan at parameters[2])"),
            (["x": .double(.infinity)], "(a double inf at parameters[\"x\"])"),
            (["q\"/": [.double(-.infinity)]], "(a double -inf at parameters[\"q\\\"/\"][0])"),
            (.set(ValueSet()), "(a set at parameters)"),
            (.data([]), "(data (0 bytes) at parameters)"),
        ]
        for (v, tail) in cases {
            for options: JSONWritingOptions in [[], [.prettyPrinted, .sortedKeys, .fragmentsAllowed]] {
                XCTAssertThrowsError(try JSONWriter.data(v, options: options)) { error in
                    let e = error as? AFSError
                    XCTAssertEqual(e?.status, .invalidJSON)
                    XCTAssertEqual(e?.message, JSONWriter.invalidParametersMessage + " " + tail)
                }
            }
        }
    }

    func testThatNestingIsLimitedLikeTheParser() throws {
        func nested(_ n: Int, _ inner: Value = 1) -> Value {
            var v = inner
            for i in 0..<n { v = i % 2 == 0 ? .array([v]) : .dict(ValueDict([("k", v)])) }
            return v
        }
        let ok = try JSONWriter.data(nested(JSONWriter.maxDepth))
        XCTAssertNotNil(try? JSONParser.parse(ok))
        XCTAssertThrowsError(try JSONWriter.data(nested(JSONWriter.maxDepth + 1))) { error in
            let e = error as? AFSError
            XCTAssertEqual(e?.status, .invalidJSON)
            // 513 containers: the path of the innermost one is long, so its middle is elided.
            let steps = String(repeating: "[0][\"k\"]", count: 6)
            XCTAssertEqual(
                e?.message,
                JSONWriter.invalidParametersMessage
                    + " (a container nested deeper than 512 levels at parameters\(steps)[…]\(steps))")
        }
    }

    func testThatAFailedWriteLeavesTheBufferAsItWas() throws {
        var out = ByteWriter()
        out.append("prefix" as StaticString)
        XCTAssertThrowsError(try JSONWriter.write(["a": ["long string value", .double(.nan)]], options: [], to: &out))
        XCTAssertEqual(try out.toString(), "prefix")
        try JSONWriter.write(["a": 1], options: [], to: &out)
        XCTAssertEqual(try out.toString(), "prefix{\"a\":1}")
    }

    func testThatOptionsHaveFoundationsRawValues() {
        let pairs: [(JSONWritingOptions, JSONSerialization.WritingOptions)] = [
            (.prettyPrinted, .prettyPrinted), (.sortedKeys, .sortedKeys), (.fragmentsAllowed, .fragmentsAllowed),
            (.withoutEscapingSlashes, .withoutEscapingSlashes),
        ]
        for (ours, theirs) in pairs { XCTAssertEqual(UInt(ours.rawValue), theirs.rawValue) }
    }

    // MARK: Byte-for-byte against Foundation

    func testThatOutputMatchesFoundationByteForByte() throws {
        let optionSets: [JSONWritingOptions] = [[], [.prettyPrinted], [.withoutEscapingSlashes], [.prettyPrinted, .withoutEscapingSlashes]]
        var compared = 0
        for seed in 0..<300 {
            var maker = TreeMaker(seed: UInt64(seed))
            maker.singleKeyDicts = true
            let tree = maker.document(depth: 4)
            for options in optionSets {
                try assertSameAsFoundation(tree, options)
                compared += 1
            }
            // Sorted keys: lowercase ASCII keys, where locale order and byte order agree.
            var sortedMaker = TreeMaker(seed: UInt64(seed) + 100_000)
            sortedMaker.lowercaseKeys = true
            let sortedTree = sortedMaker.document(depth: 4)
            for options in optionSets {
                try assertSameAsFoundation(sortedTree, options.union(.sortedKeys))
                compared += 1
            }
        }
        XCTAssertEqual(compared, 2400)
    }

    func testThatFragmentsMatchFoundation() throws {
        var maker = TreeMaker(seed: 99)
        for _ in 0..<300 {
            let v = maker.scalar()
            try assertSameAsFoundation(v, .fragmentsAllowed)
            try assertSameAsFoundation(v, [.fragmentsAllowed, .withoutEscapingSlashes])
        }
    }

    private func assertSameAsFoundation(_ v: Value, _ options: JSONWritingOptions, file: StaticString = #filePath, line: UInt = #line) throws {
        let ours = try JSONWriter.data(v, options: options)
        let theirs = try JSONSerialization.data(
            withJSONObject: foundationObject(v), options: JSONSerialization.WritingOptions(rawValue: UInt(options.rawValue)))
        if ours != [UInt8](theirs) {
            XCTFail(
                "options \(options.rawValue)\nours:   \(String(decoding: ours, as: UTF8.self).debugDescription)\n"
                    + "theirs: \(String(decoding: theirs, as: UTF8.self).debugDescription)", file: file, line: line)
        }
    }
}
