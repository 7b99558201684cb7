import Foundation
import XCTest

@testable import AFSerialization

// What Linux Foundation (swift-corelibs-foundation 6.x) can and cannot tell apart when it
// reads a property list, and how these tests compare with it:
// - bools come back as Swift `Bool` (`type(of:) == Bool.self`), integers and reals as
//   `NSNumber`; an NSNumber's `objCType` is "d" for reals and "i"/"q"/"Q" for integers, so
//   every kind is recoverable. (`x is Bool` is useless: an integer NSNumber passes it.)
// - Dictionaries bridge to `[String: Any]`, whose keys compare by canonical equivalence:
//   "é" and "e\u{301}" would collide, so keys in the Foundation trees avoid combining marks
//   (values may have them).
// - CoreFoundation reads `&#13;` as CR but does not normalise raw CR LF in text (XML
//   says it should; plistlib and our reader do). Our writer only ever writes `&#13;`.
// - CoreFoundation sorts XML keys by UTF-16 units (U+10000 before U+E000); we sort by
//   Unicode scalars, so byte-for-byte comparisons keep keys in the BMP below U+D800.
final class PropertyListTests: XCTestCase {

    // MARK: - Golden XML

    static let xmlHead =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n"

    func xml(_ v: Value) throws -> String {
        String(decoding: try PropertyListWriter.data(v, format: .xml), as: UTF8.self)
    }

    func testThatXMLOfKeyValueIsApplesLayout() throws {
        XCTAssertEqual(
            try xml(["key": "value"]),
            Self.xmlHead + "<dict>\n\t<key>key</key>\n\t<string>value</string>\n</dict>\n</plist>\n")
    }

    func testThatXMLWritesEveryKindInApplesLayout() throws {
        let v: Value = [
            "z": [1, -2, 9223372036854775807, true, false, 0.5, 1e16, 1e-7, -0.0, .double(.nan), .double(.infinity), .double(-.infinity)],
            "a": ["nested": [:], "empty": []],
            "m": .data([0, 1, 2, 255]),
            "e": .data([]),
            "s": "a & b < c > d \"q\" 'a' \r\n\ttab é 😀",
        ]
        let expected = Self.xmlHead + """
            <dict>
            \t<key>a</key>
            \t<dict>
            \t\t<key>empty</key>
            \t\t<array/>
            \t\t<key>nested</key>
            \t\t<dict/>
            \t</dict>
            \t<key>e</key>
            \t<data>
            \t</data>
            \t<key>m</key>
            \t<data>
            \tAAEC/w==
            \t</data>
            \t<key>s</key>
            \t<string>a &amp; b &lt; c &gt; d "q" 'a' &#13;
            \ttab é 😀</string>
            \t<key>z</key>
            \t<array>
            \t\t<integer>1</integer>
            \t\t<integer>-2</integer>
            \t\t<integer>9223372036854775807</integer>
            \t\t<true/>
            \t\t<false/>
            \t\t<real>0.5</real>
            \t\t<real>1e+16</real>
            \t\t<real>1e-07</real>
            \t\t<real>-0</real>
            \t\t<real>nan</real>
            \t\t<real>+infinity</real>
            \t\t<real>-infinity</real>
            \t</array>
            </dict>
            </plist>

            """
        XCTAssertEqual(try xml(v), expected)
    }

    func testThatXMLScalarsAndEmptyContainersStandAtTheTop() throws {
        XCTAssertEqual(try xml("x"), Self.xmlHead + "<string>x</string>\n</plist>\n")
        XCTAssertEqual(try xml(42), Self.xmlHead + "<integer>42</integer>\n</plist>\n")
        XCTAssertEqual(try xml([:]), Self.xmlHead + "<dict/>\n</plist>\n")
        XCTAssertEqual(try xml([]), Self.xmlHead + "<array/>\n</plist>\n")
        XCTAssertEqual(try xml(""), Self.xmlHead + "<string></string>\n</plist>\n")
    }

    func testThatXMLDataLinesFollowCoreFoundation() throws {
        // 76 characters at indent 0, 68 at indent 1, 12 (and 8 tabs) from indent 8 on.
        let bytes = (0..<100).map { UInt8($0) }
        let top = try xml(.data(bytes))
        XCTAssertTrue(top.contains("<data>\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4\nOTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiYw==\n</data>\n"), top)
        var deep: Value = .data(Array(bytes[0..<20]))
        for _ in 0..<10 { deep = [deep] }
        let text = try xml(deep)
        let tabs8 = String(repeating: "\t", count: 8), tabs10 = String(repeating: "\t", count: 10)
        XCTAssertTrue(text.contains("\(tabs10)<data>\n\(tabs8)AAECAwQFBgcI\n\(tabs8)CQoLDA0ODxAR\n\(tabs8)EhM=\n\(tabs10)</data>\n"), text)
    }

    func testThatXMLKeysAreSortedByUnicodeScalars() throws {
        let v: Value = .dict(ValueDict([("b", 1), ("\u{10000}", 2), ("\u{E000}", 3), ("B", 4), ("a", 5), ("é", 6)]))
        let keys = try xml(v).split(separator: "\n").filter { $0.hasPrefix("\t<key>") }
        XCTAssertEqual(keys, ["\t<key>B</key>", "\t<key>a</key>", "\t<key>b</key>", "\t<key>é</key>", "\t<key>\u{E000}</key>", "\t<key>\u{10000}</key>"])
    }

    func testThatXMLIsByteForByteFoundationsForTreesWithoutReals() throws {
        var rng = SeededGenerator(seed: 0xF00D)
        for n in 0..<40 {
            let tree = randomTree(&rng, depth: 0, options: [.noReals, .bmpKeys, .noCR])
            let ours = try PropertyListWriter.data(tree, format: .xml)
            let theirs = try PropertyListSerialization.data(fromPropertyList: plistFoundationObject(tree), format: .xml, options: 0)
            XCTAssertEqual(String(decoding: ours, as: UTF8.self), String(decoding: theirs, as: UTF8.self), "tree \(n)")
        }
    }

    // MARK: - AFNetworking's AFPropertyListRequestSerializerTests, re-expressed

    func testThatPropertyListRequestSerializerAcceptsPlist() throws {
        for format in [PropertyListFormat.xml, .binary] {
            let body = try PropertyListWriter.data(["key": "value"], format: format)
            XCTAssertFalse(body.isEmpty)
            XCTAssertEqual(try PropertyListReader.parse(body), ["key": "value"])
            let decoded = try PropertyListSerialization.propertyList(from: Data(body), options: [], format: nil)
            XCTAssertEqual(decoded as? [String: String], ["key": "value"])
        }
    }

    func testThatPropertyListRequestSerializerHandlesInvalidPropertyListObjects() {
        // AFNetworking uses @{@42: @"value"}; our keys are always strings, so the objects
        // NSPropertyListSerialization rejects here are NSNull and NSSet.
        let cases: [(Value, String)] = [
            (["a": [1, 2, nil]], "(null at parameters[\"a\"][2])"),
            (["tags": .set(ValueSet(["x"]))], "(a set at parameters[\"tags\"]: use an array)"),
            (nil, "(null at parameters)"),
            ([["k\"\\\u{7F}": [.set(ValueSet())]]], "(a set at parameters[0][\"k\\\"\\\\\\u007F\"][0]: use an array)"),
        ]
        for format in [PropertyListFormat.xml, .binary] {
            for (v, tail) in cases {
                XCTAssertThrowsError(try PropertyListWriter.data(v, format: format)) { e in
                    let e = e as! AFSError
                    XCTAssertEqual(e.status, .invalidPlist)
                    XCTAssertEqual(e.message, PropertyListWriter.invalidParametersMessage + " " + tail)
                }
            }
        }
    }

    func testThatXMLRejectsCharactersXMLCannotCarryButBinaryTakesThem() throws {
        let bad: [(String, String)] = [
            ("\u{0}", "U+0000"), ("a\u{8}", "U+0008"), ("\u{B}", "U+000B"), ("\u{C}", "U+000C"),
            ("\u{E}", "U+000E"), ("x\u{1F}y", "U+001F"), ("\u{FFFE}", "U+FFFE"), ("\u{FFFF}", "U+FFFF"),
        ]
        for (s, name) in bad {
            XCTAssertThrowsError(try PropertyListWriter.data(["k": [.string(s)]], format: .xml)) { e in
                XCTAssertEqual(
                    (e as? AFSError)?.message,
                    PropertyListWriter.invalidParametersMessage + " (\(name) in a string at parameters[\"k\"][0]: XML 1.0 cannot carry it; use the binary format)")
            }
            XCTAssertThrowsError(try PropertyListWriter.data(.dict(ValueDict([(s, 1)])), format: .xml)) { e in
                XCTAssertTrue((e as? AFSError)?.message.contains("\(name) in a dictionary key at parameters[") ?? false, "\(e)")
            }
            let tree: Value = .dict(ValueDict([("k", [.string(s)]), (s, 1)]))
            XCTAssertEqual(try PropertyListReader.parse(PropertyListWriter.data(tree, format: .binary)), tree)
        }
        // Tab, LF, CR and the characters around the forbidden ones are fine.
        for s in ["\t\n\r", "\u{FFFD}", "\u{FFFC}", "\u{F000}", "\u{10FFFF}", "\u{7F}"] {
            XCTAssertEqual(try PropertyListReader.parse(PropertyListWriter.data([.string(s)], format: .xml)), [.string(s)])
        }
    }

    func testThatAFailedWriteLeavesTheBufferAsItWas() {
        var out = ByteWriter()
        out.append("prefix" as StaticString)
        XCTAssertThrowsError(try PropertyListWriter.write(["a": 1, "b": nil], format: .xml, to: &out))
        XCTAssertThrowsError(try PropertyListWriter.write(["a": 1, "b": nil], format: .binary, to: &out))
        XCTAssertEqual(try out.toString(), "prefix")
    }

    // MARK: - Binary layout

    func testThatBinaryOfKeyValueIsWhatFoundationAndPlistlibWrite() throws {
        // Both write exactly these bytes for @{@"key": @"value"}.
        let expected = hex("62706c6973743030d10102536b65795576616c7565080b0f00000000000001010000000000000003000000000000000000000000000000" + "15")
        XCTAssertEqual(try PropertyListWriter.data(["key": "value"], format: .binary), expected)
        let foundation = try PropertyListSerialization.data(fromPropertyList: ["key": "value"], format: .binary, options: 0)
        XCTAssertEqual([UInt8](foundation), expected)
    }

    func testThatBinaryUsesMinimalWidthsAndUniquesScalars() throws {
        let v: Value = [0, 255, 256, 65535, 65536, 4294967295, 4294967296, -1, "é😀", "a", "a", 1.5, true, .data([7])]
        let b = try PropertyListWriter.data(v, format: .binary)
        let objects = hex(
            "ae 0102030405060708090a0a0b0c0d"  // 14 elements, "a" shared
                + "1000 10ff 110100 11ffff 1200010000 12ffffffff 130000000100000000 13ffffffffffffffff"
                + "63 00e9 d83d de00" + "5161" + "233ff8000000000000" + "09" + "4107")
        XCTAssertEqual(Array(b[8..<(8 + objects.count)]), objects)
        XCTAssertEqual(try PropertyListReader.parse(b), v)
        // Counts of 15 and more take the 0xF marker and an integer.
        let long = try PropertyListWriter.data(.array((0..<15).map { .int(Int64($0)) }), format: .binary)
        XCTAssertEqual(Array(long[8..<11]), [0xAF, 0x10, 0x0F])
        let longString = try PropertyListWriter.data(.string(String(repeating: "x", count: 300)), format: .binary)
        XCTAssertEqual(Array(longString[8..<12]), [0x5F, 0x11, 0x01, 0x2C])
    }

    func testThatBinaryReferenceAndOffsetSizesAreTheOnesCoreFoundationAccepts() throws {
        // 256 objects need 2-byte references (CF requires count < 256^size); an offset
        // table at 256 or beyond needs 2-byte offsets.
        for count in [254, 255, 256, 300, 70_000] {
            let v: Value = .array((0..<count).map { .int(Int64($0)) })
            let b = try PropertyListWriter.data(v, format: .binary)
            let trailer = Array(b.suffix(32))
            XCTAssertEqual(Int(trailer[7]), count + 1 < 256 ? 1 : count + 1 < 65536 ? 2 : 4, "ref size for \(count + 1) objects")
            let table = trailer[24..<32].reduce(0) { $0 << 8 | Int($1) }
            XCTAssertEqual(Int(trailer[6]), table < 256 ? 1 : table < 65536 ? 2 : 4)
            XCTAssertEqual(try PropertyListReader.parse(b), v)
            let decoded = try PropertyListSerialization.propertyList(from: Data(b), options: [], format: nil)
            XCTAssertEqual((decoded as? [Any])?.count, count)
        }
    }

    func testThatNegativeZeroAndNaNSurviveBothFormats() throws {
        let v: Value = [-0.0, 0.0, .double(.nan), .double(-.infinity), .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude)]
        for format in [PropertyListFormat.xml, .binary] {
            let back = try PropertyListReader.parse(PropertyListWriter.data(v, format: format))
            XCTAssertTrue(sameTree(back, v), "\(format): \(back)")
        }
    }

    // MARK: - Round trips through our own reader

    func testThatRandomTreesRoundTripThroughOurReader() throws {
        var rng = SeededGenerator(seed: 7)
        for n in 0..<150 {
            let tree = randomTree(&rng, depth: 0, options: [])
            for format in [PropertyListFormat.xml, .binary] {
                let back = try PropertyListReader.parse(PropertyListWriter.data(tree, format: format))
                XCTAssertTrue(sameTree(back, tree), "tree \(n) \(format)")
            }
        }
    }

    // MARK: - Foundation reads what we write

    func testThatFoundationDecodesOurOutputToTheSameTree() throws {
        var rng = SeededGenerator(seed: 2024)
        var trees: [Value] = [
            ["key": "value"], [], [:], .data([]), 0, -1, .int(.min), .int(.max), "", "😀",
            .array((0..<40).map { .int(Int64($0) * 1_000_003) }),
            .dict(ValueDict((0..<20).map { ("k\($0)", .string("v\($0)")) })),
            deepArray(100, leaf: "bottom"),
        ]
        for _ in 0..<80 { trees.append(randomTree(&rng, depth: 0, options: [])) }
        for (n, tree) in trees.enumerated() {
            for format in [PropertyListFormat.xml, .binary] {
                let bytes = try PropertyListWriter.data(tree, format: format)
                var seen = PropertyListSerialization.PropertyListFormat.openStep
                let object = try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: &seen)
                XCTAssertEqual(seen, format == .xml ? .xml : .binary)
                let back = try valueFromFoundation(object)
                XCTAssertTrue(sameTree(back, tree), "tree \(n) \(format):\n\(back)\n\(tree)")
            }
        }
    }

    func testThatWeDecodeFoundationsOutput() throws {
        var rng = SeededGenerator(seed: 99)
        for n in 0..<40 {
            let tree = randomTree(&rng, depth: 0, options: [])
            for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
                let data = try PropertyListSerialization.data(fromPropertyList: plistFoundationObject(tree), format: format, options: 0)
                let back = try PropertyListReader.parse([UInt8](data))
                // CoreFoundation writes -0.0 as <real>0.0</real> in XML.
                XCTAssertNil(treeDiff(back, tree, zeroSign: format == .binary), "tree \(n) \(format)")
            }
        }
    }

    // MARK: - Python's plistlib, both ways

    func testThatPlistlibAgreesWithUsBothWays() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("afs-plist-\(UUID().uuidString)")
        let ours = dir.appendingPathComponent("ours"), theirs = dir.appendingPathComponent("theirs")
        try FileManager.default.createDirectory(at: ours, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: theirs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }

        // Our trees, in both formats. "canon" trees have keys inserted in sorted order and
        // no NaN or -0.0 (plistlib merges 0.0 with -0.0 and never merges NaNs), so
        // plistlib's own binary for them must be byte-identical to ours.
        var rng = SeededGenerator(seed: 31337)
        var trees: [String: Value] = [:]
        for n in 0..<50 {
            let canon = n % 2 == 0
            var tree = randomTree(&rng, depth: 0, options: canon ? [.sortedKeys, .noNaNOrNegativeZero] : [])
            if n == 0 { tree = deepArray(120, leaf: ["deep": .data([1, 2, 3])]) }
            if n == 1 { tree = .array((0..<300).map { .string("s\($0 % 260)") }) }
            let name = (canon ? "canon_" : "tree_") + String(n)
            trees[name] = tree
            try Data(PropertyListWriter.data(tree, format: .xml)).write(to: ours.appendingPathComponent(name + ".xml"))
            try Data(PropertyListWriter.data(tree, format: .binary)).write(to: ours.appendingPathComponent(name + ".bin"))
        }

        let script = dir.appendingPathComponent("check.py")
        try Self.plistlibScript.write(to: script, atomically: true, encoding: .utf8)
        let started = Date()
        let output = try runPython([script.path, dir.path])
        let report = try JSONSerialization.jsonObject(with: output) as! [String: Any]
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)

        // 1. plistlib read each of our files back to the same tree.
        let read = report["read"] as! [String: Any]
        XCTAssertEqual(read.count, 2 * trees.count)
        for (file, result) in read {
            let name = String(file.split(separator: ".")[0])
            guard let tree = trees[name] else { XCTFail("unknown \(file)"); continue }
            if let err = (result as? [String: Any])?["error"] { XCTFail("plistlib failed on \(file): \(err)"); continue }
            let back = try valueFromTagged(result)
            XCTAssertTrue(sameTree(back, tree), "\(file):\n\(back)\n\(tree)")
        }
        // 2. For canonical trees plistlib's binary is ours, byte for byte.
        let identical = report["identical"] as! [String: Bool]
        XCTAssertEqual(identical.count, 25)
        for (file, same) in identical { XCTAssertTrue(same, "plistlib writes \(file) differently") }

        // 3. We read what plistlib wrote, in both formats.
        let written = report["written"] as! [String: Any]
        XCTAssertGreaterThanOrEqual(written.count, 60)
        for (file, expected) in written {
            let bytes = try [UInt8](Data(contentsOf: theirs.appendingPathComponent(file)))
            let back: Value
            do {
                back = try PropertyListReader.parse(bytes)
            } catch {
                XCTFail("\(file): \(error)")
                continue
            }
            let want = try valueFromTagged(expected)
            XCTAssertNil(treeDiff(back, want), file)
        }
    }

    /// Reads `ours/*` with plistlib and writes trees of its own to `theirs/`; prints one
    /// JSON report. Values are tagged `[kind, payload]` so nothing is lost in JSON.
    static let plistlibScript = #"""
        import datetime, json, os, plistlib, random, struct, sys

        top = sys.argv[1]

        def iso(d, binary):
            s = '%04d-%02d-%02dT%02d:%02d:%02d' % (d.year, d.month, d.day, d.hour, d.minute, d.second)
            if binary and d.microsecond:
                s += ('.%06d' % d.microsecond).rstrip('0')
            return s + 'Z'

        def tag(o, binary):
            if isinstance(o, bool): return ['b', o]
            if isinstance(o, int): return ['i', str(o)]
            if isinstance(o, float):
                return ['r', 'nan' if o != o else struct.pack('>d', o).hex()]
            if isinstance(o, str): return ['s', o]
            if isinstance(o, (bytes, bytearray)): return ['x', bytes(o).hex()]
            if isinstance(o, list): return ['a', [tag(v, binary) for v in o]]
            if isinstance(o, dict): return ['d', [[k, tag(v, binary)] for k, v in o.items()]]
            if isinstance(o, datetime.datetime): return ['t', iso(o, binary)]
            if isinstance(o, plistlib.UID): return ['u', o.data]
            raise TypeError(type(o))

        report = {'read': {}, 'identical': {}, 'written': {}}
        ours = os.path.join(top, 'ours')
        for name in sorted(os.listdir(ours)):
            data = open(os.path.join(ours, name), 'rb').read()
            try:
                obj = plistlib.loads(data)
                report['read'][name] = tag(obj, name.endswith('.bin'))
                if name.startswith('canon_') and name.endswith('.bin'):
                    report['identical'][name] = plistlib.dumps(obj, fmt=plistlib.FMT_BINARY) == data
            except Exception as e:
                report['read'][name] = {'error': repr(e)}

        r = random.Random(4242)
        PIECES = ['a', 'Zz', ' ', 'key', 'é', 'ü', '日本語', '😀', '👴🏿', '&', '<', '>', '"', "'",
                  '\n', '\t', ']]>', '\u2028', '\U0010ffff', '\ufffd', '\u0301', 'x' * 20]

        def text():
            return ''.join(r.choice(PIECES) for _ in range(r.randrange(0, 6)))

        def scalar(binary):
            k = r.randrange(7 if binary else 6)
            if k == 0:
                return r.choice([0, 1, -1, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, -2**63,
                                 2**63, 2**64 - 1, r.randrange(-2**63, 2**64), r.randrange(-1000, 1000)])
            if k == 1:
                return r.choice([0.0, -0.0, 0.1, 1.5, 1e16, 1e-7, 5e-324, 1.7976931348623157e308,
                                 float('inf'), float('-inf'), float('nan'), r.uniform(-1e6, 1e6),
                                 struct.unpack('>d', r.getrandbits(64).to_bytes(8, 'big'))[0]])
            if k == 2: return r.random() < 0.5
            if k == 3: return r.randbytes(r.choice([0, 1, 2, 3, 16, 57, 200]))
            if k == 4: return text()
            if k == 5:
                d = datetime.datetime(1900, 1, 1) + datetime.timedelta(seconds=r.randrange(0, 200 * 365 * 86400))
                if r.random() < 0.5: d = d.replace(microsecond=r.choice([500000, 250000, 123456, 1]))
                return d
            return plistlib.UID(r.choice([0, 1, 255, 256, 70000, 2**32 + 5]))

        def tree(depth, binary, shared):
            if depth < 5 and r.random() < 0.35:
                n = r.choice([0, 1, 2, 3, 5, 14, 15, 16, 33])
                if r.random() < 0.5:
                    if shared and r.random() < 0.3: return r.choice(shared)
                    v = [tree(depth + 1, binary, shared) for _ in range(n)]
                    shared.append(v)
                    return v
                return {text(): tree(depth + 1, binary, shared) for _ in range(n)}
            return scalar(binary)

        theirs = os.path.join(top, 'theirs')
        special = [2**64 - 1, 2**63, -2**63, [[[[[[[[[[[[[[[[[[[[['deep']]]]]]]]]]]]]]]]]]]]],
                   {'big': bytes(range(256)) * 300}, list(range(300)),
                   datetime.datetime(2001, 1, 1), datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59)]
        for i in range(36):
            for binary in (False, True):
                obj = special[i] if i < len(special) else tree(0, binary, [])
                name = '%d.%s' % (i, 'bin' if binary else 'xml')
                fmt = plistlib.FMT_BINARY if binary else plistlib.FMT_XML
                with open(os.path.join(theirs, name), 'wb') as f:
                    f.write(plistlib.dumps(obj, fmt=fmt, sort_keys=(i % 2 == 0)))
                # What plistlib itself reads back: its binary writer merges 0.0 and -0.0
                # (it uniques floats by ==), so the file may not hold `obj` exactly.
                with open(os.path.join(theirs, name), 'rb') as f:
                    report['written'][name] = tag(plistlib.loads(f.read()), binary)

        json.dump(report, sys.stdout, ensure_ascii=True)
        """#

    // MARK: - XML reader vocabulary

    func parseXML(_ s: String) throws -> Value { try PropertyListReader.parse(Array(s.utf8)) }

    func testThatTheXMLReaderTakesThePlistVocabulary() throws {
        let doc = """
            \u{FEFF}<?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment -->
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd" [
              <!ENTITY x "y>"> <!-- ] > -->
            ]>
            <?pi something?>
            <plist version="1.0">
            <dict>
              <key>s</key> <string>a &amp; &lt;b&gt; &quot;c&quot; &apos;d&apos; &#65;&#x42;&#x1F600; <![CDATA[<raw> & ]] >]]><!-- gone -->!</string>
              <key>empty</key><string/>
              <key>e2</key><string></string>
              <key></key><string/>
              <key>ints</key>
              <array>
                <integer>0</integer><integer> 42 </integer><integer>-7</integer><integer>+8</integer>
                <integer>0x1F</integer><integer>-0XfF</integer><integer>9223372036854775807</integer>
                <integer>-9223372036854775808</integer><integer>18446744073709551615</integer>
              </array>
              <key>reals</key>
              <array>
                <real>1.5</real><real>-0</real><real>1e+16</real><real>.5</real><real>NaN</real><real>inf</real>
                <real>+infinity</real><real>-Infinity</real><real>-inf</real><real>5e-324</real>
              </array>
              <key>bools</key><array><true/><false/><true></true><false> </false></array>
              <key>data</key><data>
                AAEC
                /w==
              </data>
              <key>nodata</key><data/>
              <key>date</key><date> 2020-01-02T03:04:05Z </date>
              <key>nested</key><dict><key>a</key><array><dict/><array/></array></dict>
            </dict>
            </plist>
            <!-- trailing comment -->

            """
        let expected: Value = [
            "s": "a & <b> \"c\" 'd' AB😀 <raw> & ]] >!",
            "empty": "", "e2": "", "": "",
            "ints": [0, 42, -7, 8, 31, -255, .int(.max), .int(.min), .double(18446744073709551615.0)],
            "reals": [1.5, -0.0, 1e16, 0.5, .double(.nan), .double(.infinity), .double(.infinity), .double(-.infinity), .double(-.infinity), .double(.leastNonzeroMagnitude)],
            "bools": [true, false, true, false],
            "data": .data([0, 1, 2, 255]), "nodata": .data([]),
            "date": .date(1_577_934_245),
            "nested": ["a": [[:], []]],
        ]
        let got = try parseXML(doc)
        XCTAssertTrue(sameTree(got, expected), "\(got)")
    }

    func testThatTheXMLReaderKeepsRawCRAsCoreFoundationDoes() throws {
        // CoreFoundation writes CR raw and reads it back; XML would normalise it to LF.
        XCTAssertEqual(try parseXML("<plist><string>a\r\nb\rc&#13;d&#xD;&#10;</string></plist>"), "a\r\nb\rc\rd\r\n")
        XCTAssertEqual(try parseXML("<plist><string><![CDATA[a\r\nb]]></string></plist>"), "a\r\nb")
        let cf = try PropertyListSerialization.data(fromPropertyList: ["a\r\nb\r"], format: .xml, options: 0)
        XCTAssertTrue(String(decoding: cf, as: UTF8.self).contains("<string>a\r\nb\r</string>"))
        XCTAssertEqual(try PropertyListReader.parse([UInt8](cf)), ["a\r\nb\r"])
    }

    func testThatABareValueIsAPropertyList() throws {
        XCTAssertEqual(try parseXML("<array><integer>1</integer></array>"), [1])
        XCTAssertEqual(try parseXML("  <string>x</string>\n"), "x")
        XCTAssertEqual(try parseXML("<?xml version='1.0' encoding='us-ascii'?><true/>"), true)
    }

    func testThatMalformedXMLIsAnErrorWithItsOffset() {
        let cases: [(String, String)] = [
            ("", "empty property list at byte offset 0"),
            ("   ", "no property list found at byte offset 3"),
            ("hello", "text before the root element) at byte offset 0"),
            ("<plist><strin>x</strin></plist>", "unknown element <strin> at byte offset 7"),
            ("<plist><string>x</str></plist>", "</str> where </string> (for the <string> at byte offset 7) was expected at byte offset 16"),
            ("<plist><dict><string>x</string></dict></plist>", "<string> where a <key> was expected at byte offset 13"),
            ("<plist><dict><key>a</key></dict></plist>", "<key> without a value at byte offset 25"),
            ("<plist><dict><key>a</key><key>b</key></dict></plist>", "two <key>s in a row at byte offset 25"),
            ("<plist><array><key>a</key></array></plist>", "<key> outside a dictionary at byte offset 14"),
            ("<plist><array>x</array></plist>", "text in <array> at byte offset 14"),
            ("<plist><array>", "unterminated <array> at byte offset 7"),
            ("<plist><string>abc", "unterminated <string> at byte offset 7"),
            ("<plist><string>&bogus;</string></plist>", "unknown entity &bogus; at byte offset 15"),
            ("<plist><string>&#xD800;</string></plist>", "character reference to a surrogate at byte offset 15"),
            ("<plist><string>&#x110000;</string></plist>", "character reference beyond U+10FFFF at byte offset 15"),
            ("<plist><string>a & b</string></plist>", "malformed entity reference at byte offset 17"),
            ("<plist><string>a<b/></string></plist>", "element inside <string> at byte offset 16"),
            ("<plist><integer>12a</integer></plist>", "malformed <integer> \"12a\" at byte offset 16"),
            ("<plist><integer>18446744073709551616</integer></plist>", "out of range at byte offset 16"),
            ("<plist><integer>-9223372036854775809</integer></plist>", "out of range at byte offset 16"),
            ("<plist><integer/></plist>", "empty <integer> at byte offset 7"),
            ("<plist><real>1.2.3</real></plist>", "malformed <real> \"1.2.3\" at byte offset 13"),
            ("<plist><real>0x10</real></plist>", "malformed <real> \"0x10\" at byte offset 13"),
            ("<plist><data>AB$C</data></plist>", "invalid base64 in <data> at byte offset 13"),
            ("<plist><data>A</data></plist>", "invalid base64 in <data> (truncated) at byte offset 13"),
            ("<plist><data>AA=A</data></plist>", "data after '='"),
            ("<plist><true>x</true></plist>", "content in <true> at byte offset 13"),
            ("<plist/>", "empty <plist> at byte offset 0"),
            ("<plist></plist>", "empty <plist> at byte offset 7"),
            ("<plist><true/><false/></plist>", "more than one value in <plist> at byte offset 14"),
            ("<plist><true/></plist>junk", "content after the property list at byte offset 22"),
            ("<true/><true/>", "content after the property list at byte offset 7"),
            ("<plist><plist><true/></plist></plist>", "<plist> inside a property list at byte offset 7"),
            ("<plist><!-- x </plist>", "unterminated comment at byte offset 7"),
            ("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><plist/>", "the declared encoding \"ISO-8859-1\" is not supported (only UTF-8) at byte offset 30"),
            ("\u{FE}\u{FF}", "UTF-16 text of an odd number of bytes (5) at byte offset 4"),
            ("<plist><string>\u{C3}(</string></plist>", "invalid UTF-8 at byte offset 15"),
        ]
        for (doc, tail) in cases {
            var bytes = Array(doc.utf8)
            if doc == "<plist><string>\u{C3}(</string></plist>" { bytes = Array("<plist><string>".utf8) + [0xC3, 0x28] + Array("</string></plist>".utf8) }
            if doc == "\u{FE}\u{FF}" { bytes = [0xFE, 0xFF, 0, 0x3C, 0] }
            XCTAssertThrowsError(try PropertyListReader.parse(bytes), doc) { e in
                let e = e as! AFSError
                XCTAssertEqual(e.status, .invalidPlist, doc)
                if tail.hasPrefix("empty property list") {
                    XCTAssertEqual(e.message, tail)
                } else {
                    XCTAssertTrue(e.message.hasPrefix("XML property list: "), e.message)
                    XCTAssertTrue(e.message.contains(tail), "\(doc): \(e.message)")
                }
                XCTAssertNotNil(e.message.range(of: #"at byte offset \d+$"#, options: .regularExpression), e.message)
            }
        }
    }

    func testThatDeepXMLIsAnErrorNotAStackOverflow() throws {
        let depth = 200_000
        let bomb = "<plist>" + String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth) + "</plist>"
        XCTAssertThrowsError(try parseXML(bomb)) { e in
            XCTAssertEqual((e as? AFSError)?.message, "XML property list: containers nested deeper than 512 levels at byte offset \(7 + 512 * 7)")
        }
        let ok = String(repeating: "<array>", count: 512) + String(repeating: "</array>", count: 512)
        XCTAssertEqual(try parseXML(ok), deepArray(511, leaf: []))
        XCTAssertThrowsError(try PropertyListReader.parse(Array(ok.utf8), maxDepth: 511))
        XCTAssertEqual(try PropertyListReader.parse(Array("<integer>1</integer>".utf8), maxDepth: 0), 1)
        // A caller may allow far more nesting: the parser's stack is its own.
        let deeper = String(repeating: "<array>", count: 3000) + String(repeating: "</array>", count: 3000)
        XCTAssertEqual(try PropertyListReader.parse(Array(deeper.utf8), maxDepth: 3000).count, 1)
    }

    // MARK: - Binary reader

    func testThatTheBinaryReaderDecodesPlistlibsExtras() throws {
        // 16-byte integers, dates, UIDs, sets, null, float32.
        func file(_ objects: [[UInt8]], top: Int = 0) -> [UInt8] {
            var out = Array("bplist00".utf8)
            var offsets: [Int] = []
            for o in objects { offsets.append(out.count); out += o }
            let table = out.count
            for o in offsets { out += [UInt8(o >> 8), UInt8(o & 0xFF)] }
            out += [0, 0, 0, 0, 0, 0, 2, 1]
            out += be(UInt64(objects.count)) + be(UInt64(top)) + be(UInt64(table))
            return out
        }
        let objects: [[UInt8]] = [
            [0xA9, 1, 2, 3, 4, 5, 6, 7, 8, 9],
            [0x14] + [UInt8](repeating: 0, count: 8) + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],  // 2^64-1
            [0x14] + [UInt8](repeating: 0, count: 15) + [5],  // 5
            [0x14] + [UInt8](repeating: 0xFF, count: 16),  // -1
            [0x33] + be((41.5).bitPattern),  // 2001-01-01T00:00:41.5Z
            [0x80, 0x2A],  // UID 42
            [0xC2, 7, 7],  // set {"x"}
            [0x00],  // null
            [0x22] + be32(Float(1.5).bitPattern),
            [0x33] + be((-978307200.0).bitPattern),  // 1970-01-01
        ]
        var all = objects
        all.append([0x51, 0x78])  // object 10: "x"; the set refers to it twice
        all[6] = [0xC2, 10, 10]
        let v = try PropertyListReader.parse(file(all))
        XCTAssertTrue(sameTree(v, [
            .double(18446744073709551615.0), 5, -1, .date(978_307_241.5), ["CF$UID": 42],
            .set(ValueSet(["x"])), nil, 1.5, .date(0),
        ]), "\(v)")
    }

    func testThatDatesFormatAsISO8601() {
        XCTAssertEqual(isoDate(0), "2001-01-01T00:00:00Z")
        XCTAssertEqual(isoDate(-1), "2000-12-31T23:59:59Z")
        XCTAssertEqual(isoDate(-0.5), "2000-12-31T23:59:59.5Z")
        XCTAssertEqual(isoDate(0.000001), "2001-01-01T00:00:00.000001Z")
        XCTAssertEqual(isoDate(599_529_600), "2020-01-01T00:00:00Z")
        XCTAssertEqual(isoDate(86_400 * 107), "2001-04-18T00:00:00Z")
        XCTAssertEqual(isoDate(-63_113_904_000), "0001-01-01T00:00:00Z")
        XCTAssertEqual(isoDate(252_423_993_599), "9999-12-31T23:59:59Z")
        XCTAssertNil(isoDate(252_423_993_600))
        XCTAssertNil(isoDate(-63_113_904_001))
        XCTAssertNil(isoDate(.nan))
        XCTAssertEqual(isoDate(4_102_444_800 - 978_307_200 + 86_400 * 59), "2100-03-01T00:00:00Z")  // 2100 is not a leap year
        XCTAssertEqual(isoDate(4_102_444_800 - 978_307_200 + 86_400 * 58), "2100-02-28T00:00:00Z")
        XCTAssertEqual(isoDate(951_782_400 - 978_307_200), "2000-02-29T00:00:00Z")
    }

    func testThatTruncatedBinaryPlistsAreErrors() throws {
        var rng = SeededGenerator(seed: 5)
        let sample = try PropertyListWriter.data(
            ["a": [1, 2.5, "é😀", .data([1, 2, 3]), true], "b": randomTree(&rng, depth: 1, options: []), "c": .array((0..<20).map { .int($0) })],
            format: .binary)
        for length in 0..<sample.count {
            XCTAssertThrowsError(try PropertyListReader.parse(Array(sample[0..<length])), "length \(length)") { e in
                XCTAssertEqual((e as? AFSError)?.status, .invalidPlist)
            }
        }
        let xml = try PropertyListWriter.data(["a": [1, 2.5, "é😀", .data([1, 2, 3]), true]], format: .xml)
        let end = xml.count - "</plist>\n".count + "</plist>".count
        for length in 0..<end {
            XCTAssertThrowsError(try PropertyListReader.parse(Array(xml[0..<length])), "length \(length)")
        }
    }

    func testThatCorruptedBinaryPlistsNeverCrash() throws {
        var rng = SeededGenerator(seed: 0xBAD)
        var samples: [[UInt8]] = []
        for _ in 0..<8 { samples.append(try PropertyListWriter.data(randomTree(&rng, depth: 1, options: []), format: .binary)) }
        samples.append(try PropertyListWriter.data(.array((0..<300).map { .string("s\($0)") }), format: .binary))
        var failures = 0, successes = 0
        for _ in 0..<6000 {
            var bytes = samples[Int(rng.next() % UInt64(samples.count))]
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let at: Int
                // Aim half the flips at the trailer and offset table, where they hurt most.
                // The header stays: a broken magic number makes it an (invalid) XML document.
                if rng.next() % 2 == 0 { at = max(8, bytes.count - 1 - Int(rng.next() % 48)) } else { at = 8 + Int(rng.next() % UInt64(bytes.count - 8)) }
                bytes[at] ^= UInt8(truncatingIfNeeded: 1 << (rng.next() % 8)) | (rng.next() % 5 == 0 ? 0xFF : 0)
            }
            do {
                _ = try PropertyListReader.parse(bytes)
                successes += 1
            } catch let e as AFSError {
                XCTAssertEqual(e.status, .invalidPlist)
                XCTAssertTrue(e.message.hasPrefix("binary property list: ") && e.message.contains(" at byte offset "), e.message)
                failures += 1
            }
        }
        XCTAssertGreaterThan(failures, 1000)
        XCTAssertGreaterThan(successes, 100)
    }

    func testThatCorruptedXMLNeverCrashes() throws {
        var rng = SeededGenerator(seed: 0x5EED)
        let sample = try PropertyListWriter.data(
            ["a": [1, -2.5, "é😀 &amp; <x>", .data(Array(0..<40)), true, [:], []], "b": ["c": ["d": "e"]]], format: .xml)
        let alphabet = Array("<>/&;#x[]!-?=\"' \tplistdickeyarraystringintegerrealtruefalsedata0123456789".utf8) + [0xC3, 0xA9, 0xFF, 0x0D]
        var successes = 0
        for round in 0..<4000 {
            var bytes = sample
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                let at = Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 3 {
                case 0: bytes[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: at)
                default: bytes.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
                }
            }
            if round % 10 == 0 { bytes = Array(bytes[0..<Int(rng.next() % UInt64(bytes.count))]) }
            do {
                _ = try PropertyListReader.parse(bytes)
                successes += 1
            } catch let e as AFSError {
                XCTAssertEqual(e.status, .invalidPlist)
                XCTAssertNotNil(e.message.range(of: #" at byte offset \d+$"#, options: .regularExpression), e.message)
            }
        }
        XCTAssertGreaterThan(successes, 50)
    }

    /// A hand-made bplist00: `objects` in order, 8-byte offsets and references of `refSize`.
    func handMade(_ objects: [[UInt8]], refSize: UInt8 = 1, top: UInt64 = 0, count: UInt64? = nil, table: UInt64? = nil, offsetSize: UInt8 = 8) -> [UInt8] {
        var out = Array("bplist00".utf8)
        var offsets: [UInt64] = []
        for o in objects { offsets.append(UInt64(out.count)); out += o }
        let t = UInt64(out.count)
        for o in offsets { out += Array(be(o).suffix(Int(offsetSize))) }
        out += [0, 0, 0, 0, 0, 0, offsetSize, refSize]
        out += be(count ?? UInt64(objects.count)) + be(top) + be(table ?? t)
        return out
    }

    func expectBinaryError(_ bytes: [UInt8], _ fragment: String, maxDepth: Int = PropertyListReader.defaultMaxDepth, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try PropertyListReader.parse(bytes, maxDepth: maxDepth), file: file, line: line) { e in
            let e = e as! AFSError
            XCTAssertEqual(e.status, .invalidPlist, file: file, line: line)
            XCTAssertTrue(e.message.contains(fragment), e.message, file: file, line: line)
            XCTAssertNotNil(e.message.range(of: #" at byte offset \d+$"#, options: .regularExpression), e.message, file: file, line: line)
        }
    }

    func testThatHostileBinaryStructuresAreErrors() {
        XCTAssertEqual(try PropertyListReader.parse(handMade([[0xA1, 1], [0x09]])), [true])
        // Cycles.
        expectBinaryError(handMade([[0xA1, 0]]), "reference cycle: object 0 contains itself at byte offset 8")
        expectBinaryError(handMade([[0xA1, 1], [0xA1, 0]]), "reference cycle")
        expectBinaryError(handMade([[0xD1, 1, 0], [0x51, 0x6B]]), "reference cycle")
        // References, offsets and the trailer.
        expectBinaryError(handMade([[0xA1, 5]]), "reference to object 5 (there are 1) at byte offset 9")
        expectBinaryError(handMade([[0x09]], top: 1), "top object 1 does not exist")
        expectBinaryError(handMade([[0x09]], count: 1 << 40), "objects do not fit in the offset table")
        expectBinaryError(handMade([[0x09]], count: 0), "objects do not fit")
        expectBinaryError(handMade([[0x09]], table: 1 << 62), "offset table position")
        expectBinaryError(handMade([[0x09]], table: 3), "offset table position")
        expectBinaryError(handMade([[0x09]], refSize: 0), "object reference size 0")
        expectBinaryError(handMade([[0x09]], refSize: 9), "object reference size 9")
        expectBinaryError(handMade([[0x09, 0x09]], offsetSize: 0), "offset size 0")
        var badOffset = handMade([[0x09]])
        badOffset[9 + 7] = 200
        expectBinaryError(badOffset, "object 0 has offset 200, outside the objects")
        expectBinaryError(Array("bplist15".utf8) + [UInt8](repeating: 0, count: 40), "unsupported version \"15\"")
        expectBinaryError(Array("bplist".utf8), "unsupported version (truncated)")
        expectBinaryError(Array("bplist00".utf8) + [0x09], "too few")
        // Huge or impossible counts and sizes.
        expectBinaryError(handMade([[0xAF, 0x13] + be(1 << 62)], refSize: 8), "object 0 has a count of")
        expectBinaryError(handMade([[0xAF, 0x13] + be(1 << 62)]), "object 0 runs past the end")
        expectBinaryError(handMade([[0xAF, 0x13] + be(UInt64.max)]), "object 0 has a count of")
        expectBinaryError(handMade([[0x4F, 0x13] + be(1 << 40)]), "object 0 runs past the end of the objects")
        expectBinaryError(handMade([[0x6F, 0x13] + be(1 << 62)]), "object 0 has a count of")
        expectBinaryError(handMade([[0xDF, 0x12, 0xFF, 0xFF, 0xFF, 0xFF]]), "runs past the end")
        expectBinaryError(handMade([[0x4F, 0x51]]), "count marker 0x51")
        expectBinaryError(handMade([[0x4F]]), "runs past the end")
        expectBinaryError(handMade([[0x15] + [UInt8](repeating: 0, count: 32)]), "integer of 32 bytes")
        expectBinaryError(handMade([[0x13, 0, 0]]), "runs past the end")
        expectBinaryError(handMade([[0x24] + [UInt8](repeating: 0, count: 16)]), "real of 16 bytes")
        expectBinaryError(handMade([[0x8F] + [UInt8](repeating: 0, count: 16)]), "UID of 16 bytes")
        expectBinaryError(handMade([[0x87, 0xFF, 0, 0, 0, 0, 0, 0, 0]]), "beyond Int64")
        expectBinaryError(handMade([[0x33] + be(Double.nan.bitPattern)]), "outside the years 1 to 9999")
        expectBinaryError(handMade([[0x33] + be((1e20).bitPattern)]), "outside the years")
        for marker: UInt8 in [0x0F, 0x01, 0x34, 0x70, 0x90, 0xB0, 0xE0, 0xF0] {
            expectBinaryError(handMade([[marker, 0, 0, 0, 0, 0, 0, 0, 0]]), "unknown type")
        }
        // Strings.
        expectBinaryError(handMade([[0x52, 0x61, 0xE9]]), "ASCII string holding the byte 0xE9 at byte offset 10")
        expectBinaryError(handMade([[0x61, 0xD8, 0x3D]]), "ends in an unpaired surrogate")
        expectBinaryError(handMade([[0x62, 0xD8, 0x3D, 0x00, 0x41]]), "unpaired surrogate")
        expectBinaryError(handMade([[0x61, 0xDE, 0x00]]), "unpaired surrogate")
        XCTAssertEqual(try PropertyListReader.parse(handMade([[0x62, 0xD8, 0x3D, 0xDE, 0x00]])), "😀")
        // Keys must be strings.
        expectBinaryError(handMade([[0xD1, 1, 1], [0x10, 1]]), "dictionary key (object 1) is not a string at byte offset 9")
        expectBinaryError(handMade([[0xD1, 0, 0]]), "dictionary key (object 0) is not a string")
        expectBinaryError(handMade([[0xD1, 1, 2], [0xA0], [0x09]]), "dictionary key (object 1) is not a string")
    }

    func testThatBinaryDepthAndExpansionBombsAreErrors() throws {
        // A chain of 5000 nested arrays.
        let chain = (0..<5000).map { i -> [UInt8] in i == 4999 ? [0xA0] : [0xA1] + be16(UInt16(i + 1)) }
        expectBinaryError(handMade(chain, refSize: 2), "containers nested deeper than 512 levels")
        XCTAssertEqual(try PropertyListReader.parse(handMade(chain, refSize: 2), maxDepth: 5000).count, 1)
        // Billion laughs: object i is [i+1, i+1]; 64 levels expand to 2^64 values.
        let laughs: [[UInt8]] = (0..<64).map { i -> [UInt8] in [0xA2, UInt8(i + 1), UInt8(i + 1)] } + [[0x51, 0x78]]
        expectBinaryError(handMade(laughs), "the decoded tree would take more than 1096832 bytes")
        // Moderate sharing is fine and shares storage.
        let shared: [[UInt8]] = (0..<10).map { i -> [UInt8] in [0xA2, UInt8(i + 1), UInt8(i + 1)] } + [[0x51, 0x78]]
        var v = try PropertyListReader.parse(handMade(shared))
        for _ in 0..<10 {
            guard case .array(let a) = v, a.count == 2 else { return XCTFail() }
            v = a[1]
        }
        XCTAssertEqual(v, "x")
    }

    /// A bplist00 with an object area laid out by hand and any offsets into it (absolute,
    /// 4 bytes each); references of `refSize` bytes.
    func rawPlist(_ area: [UInt8], offsets: [Int], refSize: UInt8) -> [UInt8] {
        var out = Array("bplist00".utf8) + area
        let table = out.count
        for o in offsets { out += be32(UInt32(o)) }
        out += [0, 0, 0, 0, 0, 0, 4, refSize]
        out += be(UInt64(offsets.count)) + be(0) + be(UInt64(table))
        return out
    }

    func testThatOverlappingObjectsCannotMultiplyTheWork() throws {
        // Object 0 is an array of 1000 data objects; data object k starts 4k bytes into a
        // run of headers `4F 11 0F A0` (4000 bytes each), so each one's bytes cover the
        // next ones: 12 KB of file would decode to 4 MB (and scaled up, to gigabytes).
        let n = 1000
        let arrayHeader: [UInt8] = [0xAF, 0x11] + be16(UInt16(n)) + (1...n).flatMap { be16(UInt16($0)) }
        let run = (0..<n).flatMap { _ in [0x4F, 0x11, 0x0F, 0xA0] as [UInt8] } + [UInt8](repeating: 0x41, count: 4000)
        let start = 8 + arrayHeader.count
        let overlapping = rawPlist(arrayHeader + run, offsets: [8] + (0..<n).map { start + 4 * $0 }, refSize: 2)
        expectBinaryError(overlapping, "objects overlap: decoding them needs more than the")
        // Many object numbers at one offset are one object, decoded once.
        let data: [UInt8] = [0x4F, 0x10, 100] + [UInt8](repeating: 7, count: 100)
        let aliased = rawPlist(arrayHeader + data, offsets: [8] + Array(repeating: start, count: n), refSize: 2)
        let v = try PropertyListReader.parse(aliased)
        XCTAssertEqual(v, .array(Array(repeating: .data(Array(repeating: 7, count: 100)), count: n)))
        // With 10,000 bytes of data the thousand references expand to 10 MB from 14 KB:
        // beyond the decoding budget (64 x the size + 1 MiB), counted as what they expand to.
        let big: [UInt8] = [0x4F, 0x11, 0x27, 0x10] + [UInt8](repeating: 7, count: 10_000)
        expectBinaryError(rawPlist(arrayHeader + big, offsets: [8] + Array(repeating: start, count: n), refSize: 2),
                          "the decoded tree would take more than")
        // Two objects at one offset that is also the array's: a cycle, found through the alias.
        expectBinaryError(rawPlist([0xA1, 0x01], offsets: [8, 8], refSize: 1), "reference cycle")
    }

    func testThatEmptyInputIsAnError() {
        XCTAssertThrowsError(try PropertyListReader.parse([])) { e in
            XCTAssertEqual((e as? AFSError)?.message, "empty property list at byte offset 0")
        }
        XCTAssertThrowsError(try PropertyListReader.parse(UnsafeBufferPointer(start: nil, count: 0)))
    }
}

// MARK: - Random trees

private struct TreeOptions: OptionSet {
    let rawValue: Int
    /// No doubles (CoreFoundation writes them differently).
    static let noReals = TreeOptions(rawValue: 1)
    /// Keys in the BMP below U+D800 and without combining marks.
    static let bmpKeys = TreeOptions(rawValue: 2)
    /// No CR in strings (CoreFoundation writes it raw).
    static let noCR = TreeOptions(rawValue: 4)
    /// Keys inserted in ascending order.
    static let sortedKeys = TreeOptions(rawValue: 8)
    static let noNaNOrNegativeZero = TreeOptions(rawValue: 16)
}

private let valuePieces = [
    "a", "Zz", " ", "key", "é", "e\u{301}", "ü", "日本語", "😀", "👴🏿", "&", "<", ">", "\"", "'", "\r", "\n",
    "\t", "\r\n", "]]>", "\u{2028}", "\u{10FFFF}", "\u{FFFD}", "\u{E000}", "\u{FF61}", String(repeating: "x", count: 30),
]
// Keys never hold combining marks: Foundation bridges dictionaries to [String: Any], which
// merges canonically equal keys ("é" and "e\u{301}").
private let keyPieces = ["a", "b", "Key", "z", "é", "日本", "&", "<", " ", "_", "1", "\u{FF61}", "😀", "\u{E000}", "\u{10000}"]
private let bmpKeyPieces = ["a", "b", "Key", "z", "é", "日本", "&", "<", " ", "_", "1", "Ω"]

private func randomTree(_ rng: inout SeededGenerator, depth: Int, options: TreeOptions) -> Value {
    func pick<T>(_ a: [T]) -> T { a[Int(rng.next() % UInt64(a.count))] }
    func text(_ pieces: [String], max: Int) -> String {
        var s = ""
        for _ in 0..<Int(rng.next() % UInt64(max + 1)) { s += pick(pieces) }
        return s
    }
    let r = rng.next() % 100
    if depth < 5 && r < 30 {
        let n = pick([0, 1, 2, 3, 4, 5, 14, 15, 16, 40])
        if r < 15 {
            return .array((0..<n).map { _ in randomTree(&rng, depth: depth + 1, options: options) })
        }
        let pieces = options.contains(.bmpKeys) ? bmpKeyPieces : keyPieces
        var pairs: [(String, Value)] = []
        for _ in 0..<n { pairs.append((text(pieces, max: 4), randomTree(&rng, depth: depth + 1, options: options))) }
        if options.contains(.sortedKeys) { pairs.sort { utf8Less($0.0, $1.0) } }
        return .dict(ValueDict(pairs))
    }
    if depth == 0 && r == 30 { return deepArray(Int(rng.next() % 60) + 20, leaf: "deep") }
    switch rng.next() % (options.contains(.noReals) ? 5 : 6) {
    case 0:
        return .int(pick([0, 1, -1, 14, 15, 255, 256, 65535, 65536, 4294967295, 4294967296, .max, .min, Int64(bitPattern: rng.next()), Int64(bitPattern: rng.next()) >> 40]))
    case 1: return .bool(rng.next() % 2 == 0)
    case 2: return .data((0..<pick([0, 1, 2, 3, 4, 57, 100, 300])).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
    case 3, 4:
        var pieces = valuePieces
        if options.contains(.noCR) { pieces.removeAll { $0.contains("\r") } }
        return .string(text(pieces, max: 6))
    default:
        var d = pick([0.0, -0.0, 0.1, 1.5, -2.25, 1e16, 1e-7, .leastNonzeroMagnitude, .greatestFiniteMagnitude, .infinity, -.infinity, .nan, 123456789012345.0, 0.1 + 0.2])
        if rng.next() % 3 == 0 { d = Double(bitPattern: rng.next()) }
        if rng.next() % 3 == 0 { d = Double(Int64(bitPattern: rng.next()) >> 20) / 1024 }
        if options.contains(.noNaNOrNegativeZero) && (d.isNaN || (d == 0 && d.sign == .minus)) { d = 2.5 }
        return .double(d)
    }
}

private func deepArray(_ depth: Int, leaf: Value) -> Value {
    var v = leaf
    for _ in 0..<depth { v = [v] }
    return v
}

/// Equal trees, with doubles compared by bits (any NaN equals any NaN; with
/// `zeroSign: false`, 0.0 equals -0.0) and dictionaries regardless of order.
private func sameTree(_ a: Value, _ b: Value, zeroSign: Bool = true) -> Bool {
    switch (a, b) {
    case (.double(let x), .double(let y)):
        if x.isNaN || y.isNaN { return x.isNaN && y.isNaN }
        return zeroSign ? x.bitPattern == y.bitPattern : x == y
    case (.date(let x), .date(let y)):
        return abs(x - y) < 5e-7  // plistlib's datetimes hold microseconds
    case (.array(let x), .array(let y)):
        return x.count == y.count && zip(x, y).allSatisfy { sameTree($0, $1, zeroSign: zeroSign) }
    case (.dict(let x), .dict(let y)):
        return x.count == y.count && x.pairs.allSatisfy { k, v in y[k].map { sameTree(v, $0, zeroSign: zeroSign) } ?? false }
    default:
        return a == b
    }
}

// MARK: - Foundation and tagged-JSON converters

private func plistFoundationObject(_ v: Value) -> Any {
    switch v {
    case .bool(let b): return b
    case .int(let i): return NSNumber(value: i)
    case .double(let d): return NSNumber(value: d)
    case .string(let s): return s
    case .data(let d): return Data(d)
    case .date(let t): return Date(timeIntervalSince1970: t)
    case .array(let a): return a.map(plistFoundationObject)
    case .dict(let d):
        var out: [String: Any] = [:]
        for (k, v) in d.pairs { out[k] = plistFoundationObject(v) }
        return out
    case .null, .set: fatalError("not a property list value")
    }
}

private struct ConversionError: Error { let what: String }

/// Linux Foundation's plist objects as a Value: `Bool` is a bool; an NSNumber is a real when
/// its objCType is "d" or "f", else an integer ("Q" beyond Int64 becomes a double, as in
/// our reader).
private func valueFromFoundation(_ x: Any) throws -> Value {
    if type(of: x) == Bool.self { return .bool(x as! Bool) }
    if let s = x as? String { return .string(s) }
    if let d = x as? Data { return .data([UInt8](d)) }
    if let a = x as? [Any] { return .array(try a.map(valueFromFoundation)) }
    if let d = x as? [String: Any] {
        var out = ValueDict()
        for (k, v) in d { out[k] = try valueFromFoundation(v) }
        return .dict(out)
    }
    if let n = x as? NSNumber {
        let t = String(cString: n.objCType)
        if t == "d" || t == "f" { return .double(n.doubleValue) }
        if t == "Q" && n.uint64Value > UInt64(Int64.max) { return .double(Double(n.uint64Value)) }
        return .int(n.int64Value)
    }
    throw ConversionError(what: "\(type(of: x)): \(x)")
}

/// The plistlib script's `[kind, payload]` tags as a Value, decoded as our reader decodes.
private func valueFromTagged(_ x: Any) throws -> Value {
    guard let pair = x as? [Any], pair.count == 2, let kind = pair[0] as? String else { throw ConversionError(what: "\(x)") }
    let payload = pair[1]
    switch kind {
    case "b": return .bool((payload as! NSNumber).boolValue)
    case "i":
        let s = payload as! String
        if let i = Int64(s) { return .int(i) }
        return .double(Double(UInt64(s)!))
    case "r":
        let s = payload as! String
        return s == "nan" ? .double(.nan) : .double(Double(bitPattern: UInt64(s, radix: 16)!))
    case "s": return .string(payload as! String)
    case "t":
        guard let t = DateText.parse(Array((payload as! String).utf8)) else { throw AFSError(.invalidArgument, "bad date") }
        return .date(t)
    case "x": return .data(hex(payload as! String))
    case "u": return ["CF$UID": .int((payload as! NSNumber).int64Value)]
    case "a": return .array(try (payload as! [Any]).map(valueFromTagged))
    case "d":
        var d = ValueDict()
        for entry in payload as! [[Any]] { d[entry[0] as! String] = try valueFromTagged(entry[1]) }
        return .dict(d)
    default: throw ConversionError(what: kind)
    }
}

private func hex(_ s: String) -> [UInt8] {
    let digits = Array(s.utf8.filter { $0 != UInt8(ascii: " ") })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
}

private func be(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * UInt64($0))) } }
private func be32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32($0))) } }
private func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }

/// Where two trees first differ (for failure messages), or nil when `sameTree` holds.
private func treeDiff(_ a: Value, _ b: Value, zeroSign: Bool = true, _ path: String = "$") -> String? {
    switch (a, b) {
    case (.array(let x), .array(let y)):
        if x.count != y.count { return "\(path): \(x.count) vs \(y.count) elements" }
        for (i, (p, q)) in zip(x, y).enumerated() {
            if let d = treeDiff(p, q, zeroSign: zeroSign, "\(path)[\(i)]") { return d }
        }
        return nil
    case (.dict(let x), .dict(let y)):
        if x.count != y.count { return "\(path): keys \(x.keys.map { Array($0.unicodeScalars) }) vs \(y.keys.map { Array($0.unicodeScalars) })" }
        for (k, v) in x.pairs {
            guard let w = y[k] else { return "\(path): key \(Array(k.unicodeScalars)) missing" }
            if let d = treeDiff(v, w, zeroSign: zeroSign, "\(path)[\(k.debugDescription)]") { return d }
        }
        return nil
    default:
        return sameTree(a, b, zeroSign: zeroSign) ? nil : "\(path): \(a) vs \(b)"
    }
}
