import Foundation
import XCTest

@testable import AFSerialization

/// The outcome of parsing `bytes` both ways: the tree or the error message.
private func bothWays(_ bytes: [UInt8], allowFragments: Bool = true, maxDepth: Int = JSONParser.defaultMaxDepth)
    -> (tree: Result<Value, AFSError>, doc: Result<JSONDocument, AFSError>)
{
    let tree = Result { try bytes.withUnsafeBufferPointer { try JSONParser.parse($0, allowFragments: allowFragments, maxDepth: maxDepth) } }
        .mapError { $0 as! AFSError }
    let doc = Result { try bytes.withUnsafeBufferPointer { try JSONDocument.parse($0, allowFragments: allowFragments, maxDepth: maxDepth) } }
        .mapError { $0 as! AFSError }
    return (tree, doc)
}

/// Checks that the document stands for the tree: same tree, same compact JSON, and every
/// node read through the document's accessors as the tree has it.
private func checkSame(_ bytes: [UInt8], _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
    let (tree, doc) = bothWays(bytes)
    switch (tree, doc) {
    case (.failure(let a), .failure(let b)):
        XCTAssertEqual(a.status, b.status, what, file: file, line: line)
        XCTAssertEqual(a.message, b.message, what, file: file, line: line)
    case (.success(let t), .success(let d)):
        XCTAssertEqual(try d.value(), t, what, file: file, line: line)
        if !d.hasRepeatedKeys { XCTAssertEqual(d.depth, t.nestingDepth, what, file: file, line: line) }
        for options: JSONWritingOptions in [[.fragmentsAllowed], [.fragmentsAllowed, .withoutEscapingSlashes], [.fragmentsAllowed, .prettyPrinted]] {
            var a = ByteWriter(), b = ByteWriter()
            try JSONWriter.write(t, options: options, to: &a)
            try JSONWriter.write(d, options: options, to: &b)
            XCTAssertEqual(try a.toArray(), try b.toArray(), "\(what), options \(options.rawValue)", file: file, line: line)
        }
        if !d.hasRepeatedKeys { try checkNode(d, 0, t, what, file: file, line: line) }
    default:
        XCTFail("\(what): the tree parser says \(tree), the document parser \(doc)", file: file, line: line)
    }
}

private func checkNode(_ d: JSONDocument, _ node: Int, _ v: Value, _ what: String, file: StaticString, line: UInt) throws {
    XCTAssertEqual(d.kind(node), v.kind, what, file: file, line: line)
    XCTAssertEqual(d.count(node), v.count, what, file: file, line: line)
    switch v {
    case .bool(let b): XCTAssertEqual(d.bool(node), b, what, file: file, line: line)
    case .int(let i): XCTAssertEqual(d.int(node), i, what, file: file, line: line)
    case .double(let x): XCTAssertEqual(d.double(node).bitPattern, x.bitPattern, what, file: file, line: line)
    case .string(let s):
        let text = d.string(node)
        XCTAssertEqual(Array(text), Array(s.utf8), what, file: file, line: line)
        XCTAssertEqual(text.baseAddress![text.count], 0, "\(what): no NUL after the text", file: file, line: line)
    case .array(let a):
        let m = try d.members(of: node)
        for (i, e) in a.enumerated() { try checkNode(d, m.value(i), e, what, file: file, line: line) }
    case .dict(let dict):
        let m = try d.members(of: node)
        for (i, (k, e)) in dict.pairs.enumerated() {
            XCTAssertEqual(Array(d.string(m.key(i))), Array(k.utf8), what, file: file, line: line)
            var key = k
            let found = key.withUTF8 { m.index(ofKey: $0) }
            XCTAssertEqual(found, i, "\(what): key \(k)", file: file, line: line)
            try checkNode(d, m.value(i), e, what, file: file, line: line)
        }
        var missing = "\u{1}not a key"
        XCTAssertNil(missing.withUTF8 { m.index(ofKey: $0) }, what, file: file, line: line)
    default: break
    }
}

final class JSONDocumentTests: XCTestCase {
    func testThatJSONTestSuiteGivesTheSameResultsBothWays() throws {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let folder = tests.appendingPathComponent("data/JSONTestSuite/test_parsing")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
        XCTAssertEqual(names.count, 318)
        for name in names {
            try checkSame([UInt8](try Data(contentsOf: folder.appendingPathComponent(name))), name)
        }
    }

    func testThatRandomTreesReadTheSameBothWays() throws {
        for seed in 0..<300 {
            var maker = TreeMaker(seed: UInt64(seed) + 31_000)
            maker.doublesParseBackAsDoubles = true
            let tree = maker.document(depth: 5)
            for options: JSONWritingOptions in [[], [.prettyPrinted]] {
                try checkSame(try JSONWriter.data(tree, options: options), "seed \(seed)")
            }
        }
    }

    func testThatTruncatedAndDamagedTextsFailTheSameBothWays() throws {
        let text = Array(#"{"a":[1,-2.5e3,"x\u00e9\n",true,false,null,{"b":{}},[]],"c\/":"long string with \"escapes\" and é"}"#.utf8)
        try checkSame(text, "whole")
        for cut in 0..<text.count { try checkSame(Array(text[..<cut]), "cut at \(cut)") }
        for at in 0..<text.count {
            for b: UInt8 in [0x00, 0x22, 0x2C, 0x5C, 0x7D, 0xC3, 0xFF] {
                var t = text
                t[at] = b
                try checkSame(t, "byte \(b) at \(at)")
            }
        }
    }

    func testThatRepeatedKeysAreFlaggedAndTheTreeKeepsTheFirstPositionAndTheLastValue() throws {
        let small = try JSONDocument.parse(Array(#"{"a":1,"b":2,"a":3}"#.utf8))
        XCTAssertTrue(small.hasRepeatedKeys)
        XCTAssertEqual(try small.value(), .dict(ValueDict([("a", .int(3)), ("b", .int(2))])))
        // An object of more than 16 members takes the hashed check.
        let keys = (0..<40).map { "\"k\($0)\":\($0)" } + ["\"k7\":0"]
        let large = try JSONDocument.parse(Array("{\(keys.joined(separator: ","))}".utf8))
        XCTAssertTrue(large.hasRepeatedKeys)
        let distinct = try JSONDocument.parse(Array("{\(keys.dropLast().joined(separator: ","))}".utf8))
        XCTAssertFalse(distinct.hasRepeatedKeys)
        // Long keys that share their first 7 bytes and their length are compared whole,
        // in small objects and large ones.
        for count in [5, 40] {
            let long = (0..<count).map { "\"prefix_\(1000 + $0)\":\($0)" }
            XCTAssertFalse(try JSONDocument.parse(Array("{\(long.joined(separator: ","))}".utf8)).hasRepeatedKeys, "\(count)")
            let again = long + ["\"prefix_\(1000 + count - 1)\":0"]
            XCTAssertTrue(try JSONDocument.parse(Array("{\(again.joined(separator: ","))}".utf8)).hasRepeatedKeys, "\(count)")
        }
        // Nested objects do not mix their keys.
        XCTAssertFalse(try JSONDocument.parse(Array(#"{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}"#.utf8)).hasRepeatedKeys)
        try checkSame(Array("{\(keys.joined(separator: ","))}".utf8), "large with a repeat")
        // The value a repeated key drops may be the deepest: the text's depth is then more
        // than the tree's (found by Fuzz/json_parse.swift).
        let dropped = try JSONDocument.parse(Array(#"{"a":{"b":{"c":[]}},"a":1}"#.utf8))
        XCTAssertEqual(dropped.depth, 4)
        XCTAssertEqual(try dropped.value().nestingDepth, 1)
    }

    func testThatDeepDocumentsAreReadAndWrittenOnAnyStack() throws {
        let deep = [UInt8](repeating: 0x5B, count: 512) + [UInt8](repeating: 0x5D, count: 512)
        try checkSame(deep, "512 levels")
        let tooDeep = [UInt8](repeating: 0x5B, count: 513) + [UInt8](repeating: 0x5D, count: 513)
        try checkSame(tooDeep, "513 levels")
        XCTAssertEqual(try JSONDocument.parse(deep).depth, 512)
    }

    func testThatTheTextBufferHoldsEveryStringOfTheWorstCase() throws {
        // Empty strings take the most room for their size: 2 bytes of JSON, 1 byte (NUL).
        let many = "[" + Array(repeating: "\"\"", count: 10_000).joined(separator: ",") + "]"
        let doc = try JSONDocument.parse(Array(many.utf8))
        XCTAssertEqual(doc.count(0), 10_000)
        XCTAssertEqual(doc.textCount, 10_000)
        XCTAssertLessThanOrEqual(doc.textCount, many.utf8.count + 1)
        XCTAssertEqual(try JSONDocument.parse(Array(#""""#.utf8)).textCount, 1)
    }
}
