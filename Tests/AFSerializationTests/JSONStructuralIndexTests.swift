import Foundation
import XCTest

@testable import AFSerialization

/// The index a byte-by-byte state machine computes: structural characters outside strings,
/// every unescaped quote, and the first byte of every other run outside strings; nil when a
/// string is unterminated or holds a control byte.
private func referenceIndex(_ t: [UInt8]) -> [UInt32]? {
    var out: [UInt32] = []
    var inString = false, escaped = false, previousOther = false
    for (j, c) in t.enumerated() {
        if inString {
            if escaped { escaped = false } else if c == 0x5C { escaped = true } else if c == 0x22 {
                inString = false
                out.append(UInt32(j))
            }
            if c < 0x20 { return nil }
            previousOther = false
            continue
        }
        switch c {
        case 0x22:
            out.append(UInt32(j))
            inString = true
            previousOther = false
        case 0x7B, 0x7D, 0x5B, 0x5D, 0x3A, 0x2C:
            out.append(UInt32(j))
            previousOther = false
        case 0x20, 0x0A, 0x0D, 0x09:
            previousOther = false
        default:
            if !previousOther { out.append(UInt32(j)) }
            previousOther = true
            // A backslash outside strings escapes nothing in the reference, but stage 1
            // treats it as escaping the next byte: only inputs without one are compared.
        }
    }
    return inString ? nil : out
}

/// Stage 1's index of `t` by `path` (portable, SSE2, AVX2: `Stage1.paths`), or nil when stage 1 rejects it.
private func stage1(_ t: [UInt8], path: Int32) throws -> [UInt32]? {
    var index = JSONStructuralIndex()
    return try t.withUnsafeBufferPointer { buf -> [UInt32]? in
        guard try index.build(buf.baseAddress!, buf.count, path: path) else { return nil }
        return Array(UnsafeBufferPointer(start: index.positions, count: index.count))
    }
}

/// The document by the two stages and by the reader: same tape, or the same error.
private func checkBothParsers(_ t: [UInt8], _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
    let reader = Result { try t.withUnsafeBufferPointer { try JSONDocument.parseWithReader($0, allowFragments: true, maxDepth: 512) } }
    // Every stage 1 path the CPU has, each with the full window and a small one.
    for (path, window) in Stage1.paths.flatMap({ [($0, Stage1.window), ($0, $0 == Stage1.portable ? 200 : 64)] }) {
        let parser = JSONTapeParser()
        parser.stage1Path = path
        parser.window = window
        let indexed = try t.withUnsafeBufferPointer { try parser.parseIndexed($0, allowFragments: true, maxDepth: 512) }
        switch reader {
        case .success(let r):
            guard let d = indexed else {
                XCTFail("\(what): the reader accepts it, the indexed parse does not (window \(window))", file: file, line: line)
                continue
            }
            XCTAssertEqual(d.nodeCount, r.nodeCount, what, file: file, line: line)
            XCTAssertEqual(d.textCount, r.textCount, what, file: file, line: line)
            XCTAssertEqual(d.hasRepeatedKeys, r.hasRepeatedKeys, what, file: file, line: line)
            XCTAssertEqual(d.depth, r.depth, what, file: file, line: line)
            for j in 0..<d.nodeCount {
                XCTAssertEqual(d.nodes[j].head, r.nodes[j].head, "\(what): node \(j)", file: file, line: line)
                XCTAssertEqual(d.nodes[j].word, r.nodes[j].word, "\(what): node \(j)", file: file, line: line)
            }
            XCTAssertEqual(memcmp(d.text, r.text, d.textCount), 0, what, file: file, line: line)
        case .failure(let e):
            XCTAssertNil(indexed, "\(what): the reader says \(e)", file: file, line: line)
            let viaPublic = Result { try t.withUnsafeBufferPointer { try parser.parse($0) } }
            guard case .failure(let e2) = viaPublic else {
                XCTFail("\(what): accepted", file: file, line: line)
                continue
            }
            XCTAssertEqual((e2 as! AFSError).message, (e as! AFSError).message, what, file: file, line: line)
        }
    }
}

final class JSONStructuralIndexTests: XCTestCase {
    func testThatTheVectorAndScalarClassifiersGiveTheReferenceIndexOfRandomTexts() throws {
        var rng = SeededGenerator(seed: 23)
        let alphabet: [UInt8] = Array(#"{}[]:,"\\ \n\t\r0123456789-.eEtrufalsn"#.utf8) + [0x01, 0x1F, 0x7F, 0xC3, 0xA9]
        for round in 0..<400 {
            let length = Int(rng.next() % 300)
            var t = [UInt8]()
            for _ in 0..<length { t.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
            // Backslashes outside strings: the reference does not model them.
            let ref = referenceIndex(t)
            let scalar = try stage1(t, path: Stage1.portable)
            for path in Stage1.paths {
                XCTAssertEqual(try stage1(t, path: path), scalar, "round \(round), path \(path)")
            }
            let vector = try stage1(t, path: Stage1.defaultPath)
            if !t.contains(0x5C), !t.contains(0xC3), !t.contains(0xA9) {
                XCTAssertEqual(vector, ref, "round \(round): \(t)")
            }
        }
    }

    func testThatEveryStage1PathIsOfferedAndTheEnvironmentChoosesOne() {
        // The portable and SSE2 paths run everywhere; AVX2 and AVX-512 where the CPU has them (the other
        // tests run every path in `Stage1.paths`).
        XCTAssertTrue(Stage1.paths.contains(Stage1.portable))
        XCTAssertTrue(Stage1.paths.contains(Stage1.sse2))
        XCTAssertTrue(Stage1.paths.contains(Stage1.defaultPath))
        let names = ["portable": Stage1.portable, "sse2": Stage1.sse2, "avx2": Stage1.avx2, "avx512": Stage1.avx512]
        if let forced = ProcessInfo.processInfo.environment["AFS_JSON_STAGE1"], let path = names[forced],
           Stage1.paths.contains(path) {
            XCTAssertEqual(Stage1.defaultPath, path)
        } else {
            XCTAssertEqual(Stage1.defaultPath, Stage1.paths.max())
        }
    }

    func testThatNumbersOfEveryLengthAndDenseEscapesGiveTheReadersTape() throws {
        // Stage 2 reads 8 digits at a time while the mantissa has room and copies the runs
        // between close escapes 8 bytes at a time: numbers of 1-25 digits in each part, with
        // signs, exponents and non-digits right after a group of 8, and strings whose
        // escapes are 0-40 bytes apart, all compared with the reader's tape.
        var rng = SeededGenerator(seed: 2323)
        func digits(_ n: Int) -> String { String((0..<n).map { _ in Character(String(rng.next() % 10)) }) }
        var numbers: [String] = []
        for intLength in 1...25 {
            for fracLength in [0, 1, 7, 8, 9, 11, 16, 17, 25] {
                var t = (rng.next() % 2 == 0 ? "-" : "") + String(1 + rng.next() % 9) + digits(intLength - 1)
                if fracLength > 0 { t += "." + digits(fracLength) }
                if rng.next() % 3 == 0 { t += "e" + (rng.next() % 2 == 0 ? "-" : "+") + String(rng.next() % 30) }
                numbers.append(t)
            }
        }
        numbers += ["0.12345678", "0.1234567890123456789", "12345678.9", "1234567812345678", "12345678123456781",
                    "9999999999999999999", "18446744073709551615", "-9223372036854775808", "12345678a", "1234567:",
                    "0.00000000000000000001", "123456789012345678901234567890"]
        for (j, t) in numbers.enumerated() {
            try checkBothParsers(Array("[\(t)]".utf8), t)
            try checkBothParsers(Array("{\"k\":\(t),\"x\":[\(t),1]}".utf8), "number \(j) in an object")
        }
        // The table of one-byte escapes: 128 bytes, the 8 escapes and nothing else.
        XCTAssertEqual(Stage2.escapes.utf8CodeUnitCount, 128)
        let expected: [UInt8: UInt8] = [0x22: 0x22, 0x5C: 0x5C, 0x2F: 0x2F, 0x62: 0x08, 0x66: 0x0C, 0x6E: 0x0A, 0x72: 0x0D, 0x74: 0x09]
        for b in 0..<128 { XCTAssertEqual(Stage2.escapes.utf8Start[b], expected[UInt8(b)] ?? 0, "escape byte \(b)") }
        for gap in 0...40 {
            let run = String(repeating: "a", count: gap)
            let s = "\"" + (0..<6).map { _ in run + ["\\n", "\\\"", "\\\\", "\\u00e9", "\\t"][Int(rng.next() % 5)] }.joined() + run + "\""
            try checkBothParsers(Array("[\(s),{\(s):\(s)}]".utf8), "escapes \(gap) apart")
            try checkBothParsers(Array("[\(s.dropLast())\\x\"]".utf8), "a bad escape after runs of \(gap)")
        }
    }

    func testThatTheBranchFreeEscapeMasksMatchTheLoop() {
        var rng = SeededGenerator(seed: 2323)
        for round in 0..<20_000 {
            // Sparse, dense and run-heavy backslash masks, with and without a carry in.
            var b = rng.next()
            switch round % 4 {
            case 0: b &= rng.next() & rng.next()
            case 1: b |= rng.next()
            case 2: b = b & 0xFFFF_0000_FFFF_0000 | (b >> 1)
            default: break
            }
            if round % 50 == 0 { b = ~0 }
            for carryIn: UInt64 in [0, 1] {
                var c1 = carryIn, c2 = carryIn
                let fast = JSONStructuralIndex.escaped(b, &c1)
                let slow = JSONStructuralIndex.escapedByLoop(b, &c2)
                XCTAssertEqual(fast, slow, "mask \(String(b, radix: 16)) carry \(carryIn)")
                XCTAssertEqual(c1, c2, "mask \(String(b, radix: 16)) carry \(carryIn)")
            }
        }
    }

    func testThatRandomDocumentsGiveTheReferenceIndexAndTheReadersTape() throws {
        for seed in 0..<200 {
            var maker = TreeMaker(seed: UInt64(seed) + 23_000)
            maker.doublesParseBackAsDoubles = true
            let tree = maker.document(depth: 5)
            for options: JSONWritingOptions in [[], [.prettyPrinted]] {
                let t = try JSONWriter.data(tree, options: options)
                let ref = referenceIndex(t)
                if !t.contains(0x5C) || ref != nil {
                    let v = try stage1(t, path: Stage1.defaultPath)
                    if !t.contains(where: { $0 >= 0x80 }) { XCTAssertEqual(v, ref, "seed \(seed)") }
                    for path in Stage1.paths {
                        XCTAssertEqual(v, try stage1(t, path: path), "seed \(seed), path \(path)")
                    }
                }
                try checkBothParsers(t, "seed \(seed)")
            }
        }
    }

    func testThatBackslashRunsAndQuotesAcrossBlockBoundariesAreIndexed() throws {
        // A string whose backslash run (1-6 long, then a quote or a letter) ends at every
        // offset around the 64- and 128-byte boundaries.
        for run in 1...6 {
            for end in 56..<136 {
                for after in [UInt8(ascii: "\""), UInt8(ascii: "n")] {
                    var body = [UInt8](repeating: UInt8(ascii: "a"), count: Swift.max(0, end - run - 2))
                    body += [UInt8](repeating: 0x5C, count: run)
                    body.append(after)
                    let t = [UInt8(ascii: "[")] + [0x22] + body + [0x22, UInt8(ascii: ","), UInt8(ascii: "1"), UInt8(ascii: "]")]
                    try checkBothParsers(t, "run \(run) ending at \(end), then \(after)")
                    if run % 2 == 0 || after == UInt8(ascii: "n") {
                        for path in Stage1.paths {
                            XCTAssertEqual(try stage1(t, path: path), referenceIndex(t), "run \(run) at \(end), path \(path)")
                        }
                    }
                }
            }
        }
        // Quotes right at each side of a boundary.
        for at in 60..<70 {
            let t = Array(("[" + String(repeating: " ", count: at - 1) + "\"x\"" + String(repeating: " ", count: 70) + "]").utf8)
            for path in Stage1.paths { XCTAssertEqual(try stage1(t, path: path), referenceIndex(t), "path \(path)") }
            try checkBothParsers(t, "quote at \(at)")
        }
    }

    func testThatUTF8AcrossBlockBoundariesIsAcceptedAndInvalidUTF8IsRejectedAtTheReadersOffset() throws {
        for char in ["é", "日", "😀"] {
            for at in 58..<70 {
                let text = "[\"" + String(repeating: "a", count: at - 2) + char + "\"]"
                let t = Array(text.utf8)
                try checkBothParsers(t, "\(char) at \(at)")
                // Cut the character: invalid UTF-8, the reader's message and offset.
                let bytes = Array(char.utf8)
                for keep in 1..<bytes.count {
                    var bad = Array(("[\"" + String(repeating: "a", count: at - 2)).utf8) + bytes[..<keep]
                    bad += Array("\"]".utf8)
                    try checkBothParsers(bad, "\(char) cut to \(keep) at \(at)")
                }
                var lone = t
                lone[at] = 0xFF
                try checkBothParsers(lone, "0xFF at \(at)")
            }
        }
    }

    func testThatBlocksWhollyInsideLongStringsAreCheckedToo() throws {
        // Blocks inside a string with no quote, backslash or control byte take a shortcut in
        // stage 1: their UTF-8 and what follows them must still be checked.
        let filler = Array(String(repeating: "é-日本-😀-plain text ", count: 30).utf8)
        for at in stride(from: 100, to: 400, by: 7) {
            var t = Array("[\"".utf8) + filler + Array("\",1]".utf8)
            try checkBothParsers(t, "long string")
            let saved = t[at]
            for bad: UInt8 in [0xFF, 0x01, 0x80, 0xC3] {
                t[at] = bad
                try checkBothParsers(t, "byte \(bad) at \(at) of a long string")
            }
            t[at] = saved
        }
        // A string ending right after a skipped block, and one cut at the end of the input.
        for len in [126, 127, 128, 129, 190, 191, 192, 193] {
            let body = [UInt8](repeating: UInt8(ascii: "x"), count: len)
            try checkBothParsers(Array("[\"".utf8) + body + Array("\"]".utf8), "string of \(len)")
            try checkBothParsers(Array("[\"".utf8) + body, "unterminated string of \(len)")
            try checkBothParsers(Array("[\"".utf8) + body + [0xE6, 0x97], "string of \(len) cut in a character")
        }
    }

    func testThatEveryRejectionGivesTheReadersMessage() throws {
        let samples = [
            "", " ", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "[1 2]", "[tru]", "[truex]", "[1.]", "[01]", "[-]", "[1e]",
            "[1e400]", "[\"\\x\"]", "[\"\\ud800\"]", "[\"\\udc00\"]", "[\"\\ud800\\u0041\"]", "[\"a\u{1}\"]", "[\"abc",
            "[1]x", "[1] [2]", "\u{FEFF}[1]", "{\"a\":1}}", "{1:2}", "[\"\\u12\"]", "[\\n]", "{\"a\":}", "[,1]",
            "[1,2", "{\"a\"", "nul", "[1]\u{0}",
        ]
        for s in samples { try checkBothParsers(Array(s.utf8), s.debugDescription) }
        let deep = Array((String(repeating: "[", count: 600) + String(repeating: "]", count: 600)).utf8)
        try checkBothParsers(deep, "600 levels")
    }

    func testThatTheJSONTestSuiteAndTheFuzzRegressionsGiveTheReadersResults() throws {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let folder = tests.appendingPathComponent("data/JSONTestSuite/test_parsing")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }
        XCTAssertEqual(names.count, 318)
        for name in names { try checkBothParsers([UInt8](try Data(contentsOf: folder.appendingPathComponent(name))), name) }
        let corpus = tests.deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/json_parse")
        let seeds = try FileManager.default.contentsOfDirectory(atPath: corpus.path)
        XCTAssertGreaterThan(seeds.count, 0)
        for name in seeds { try checkBothParsers([UInt8](try Data(contentsOf: corpus.appendingPathComponent(name))), name) }
    }

    func testThatAParserReusedForManyDocumentsGivesEachItsOwnTape() throws {
        let parser = JSONTapeParser(reused: true)
        let docs = ["[1,2,3]", "[1,2,3]", "[\"a\",\"bb\"]", "[[1],{\"k\":[]}]", "{\"a\":\"b\"}", String(repeating: "[", count: 40) + String(repeating: "]", count: 40), "\"x\"", "[1,"]
        for _ in 0..<3 {
            for s in docs {
                let t = Array(s.utf8)
                let a = Result { try t.withUnsafeBufferPointer { try parser.parse($0) } }
                let b = Result { try t.withUnsafeBufferPointer { try JSONDocument.parseWithReader($0, allowFragments: true, maxDepth: 512) } }
                switch (a, b) {
                case (.success(let x), .success(let y)): XCTAssertEqual(try x.value(), try y.value(), s)
                case (.failure(let x), .failure(let y)): XCTAssertEqual("\(x)", "\(y)", s)
                default: XCTFail(s)
                }
            }
        }
    }
}

/// JSON-to-pickle through the index and through the reader: the same bytes, or the same error.
private func checkPickleBothWays(_ t: [UInt8], _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
    for (fragments, exact) in [(true, false), (true, true), (false, false)] {
        let reader = Result { try t.withUnsafeBufferPointer { buf -> [UInt8] in
            let (p, n) = try JSONToPickle.transcodeWithReader(buf, allowFragments: fragments, exactIntegers: exact)
            defer { free(p) }
            return Array(UnsafeBufferPointer(start: p, count: n))
        } }
        let indexed = try t.withUnsafeBufferPointer { buf -> [UInt8]? in
            guard let (p, n) = try JSONToPickle.transcodeIndexed(buf, allowFragments: fragments, exactIntegers: exact) else { return nil }
            defer { free(p) }
            return Array(UnsafeBufferPointer(start: p, count: n))
        }
        switch reader {
        case .success(let bytes):
            XCTAssertEqual(indexed, bytes, "\(what) (fragments \(fragments), exact \(exact))", file: file, line: line)
        case .failure(let e):
            XCTAssertNil(indexed, "\(what): the reader says \(e)", file: file, line: line)
            let viaPublic = Result { try t.withUnsafeBufferPointer { try JSONToPickle.transcode($0, allowFragments: fragments, exactIntegers: exact) } }
            if case .success(let (p, _)) = viaPublic { free(p); XCTFail("\(what): accepted", file: file, line: line) }
            if case .failure(let e2) = viaPublic { XCTAssertEqual("\(e2)", "\(e)", what, file: file, line: line) }
        }
    }
}

final class JSONToPickleIndexedTests: XCTestCase {
    func testThatTheIndexedTranscoderWritesTheReadersBytes() throws {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let folder = tests.appendingPathComponent("data/JSONTestSuite/test_parsing")
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".json") {
            try checkPickleBothWays([UInt8](try Data(contentsOf: folder.appendingPathComponent(name))), name)
        }
        for seed in 0..<150 {
            var maker = TreeMaker(seed: UInt64(seed) + 2300)
            maker.doublesParseBackAsDoubles = true
            try checkPickleBothWays(try JSONWriter.data(maker.document(depth: 5), options: []), "seed \(seed)")
        }
        for s in ["[9223372036854775808, -9223372036854775809, 123456789012345678901234567890, -0, 1e2, -0.0]",
                  "{\"k\":\"v\",\"k\":\"w\",\"e\\u00e9\":[\"short\",\"short\",\"a\\nb\"]}", "[1,]", "\"x\"", "1", "[\"\\q\"]"] {
            try checkPickleBothWays(Array(s.utf8), s)
        }
        // Escaped strings longer than the scratch block's first size (4 KiB), growing one
        // after another, then shorter ones again; and a bad escape at the end of a long one.
        var doc = "["
        for length in [10, 5000, 4090, 20_000, 100, 70_000, 3] {
            doc += "\"" + String(repeating: "ab\\n\\\"c\\u00e9 ", count: length / 12 + 1) + "\","
        }
        try checkPickleBothWays(Array((doc + "{\"k\\t\":1}]").utf8), "long escaped strings")
        try checkPickleBothWays(Array((doc + "\"" + String(repeating: "x", count: 9000) + "\\q\"]").utf8), "a bad escape after 9000 bytes")
    }
}
