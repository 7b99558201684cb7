import XCTest

@testable import AFSerialization

/// The JsonML tree built into a `JSONDocument` (`XMLTapeBuilder`, what `afs_response_object`
/// returns for an XML body) against the `Value` tree of `XMLTreeBuilder`: the same tree
/// member by member (attribute order included), the same depth, the same errors.
final class XMLTapeTests: XCTestCase {
    static let documents: [String] = [
        "<r/>",
        "<r xmlns:p='u' a='1'>t<!--c-->u<p:c/><d>e</d>tail</r>",
        "<?xml version='1.0'?>\n<!-- before -->\n<r>\n  <a x='1' y='2' z='3'>one<![CDATA[<two>]]>three</a>\n  <b/>\n</r>\n<!-- after -->\n",
        "<r><?pi data?>a<?pi?>b<!--x-->c</r>",
        "<!DOCTYPE r [<!ENTITY e 'ent'><!ENTITY empty ''><!ENTITY el '<i k=\"v\">in</i>'>]><r>&e;&empty;&e;&el;&#x41;&lt;</r>",
        "<!DOCTYPE r [<!ENTITY empty ''>]><r>&empty;</r>",
        "<r a='&quot;q&quot; \\ \t tab'>\"quoted\" back\\slash \u{1}</r>".replacingOccurrences(of: "\u{1}", with: "&#x9;"),
        "<ns:r xmlns:ns='urn:a' xmlns='urn:d'><c ns:at='1' at='2'>ü € 😀</c></ns:r>",
        String(repeating: "<a>", count: 300) + "x" + String(repeating: "</a>", count: 300),
        "<r>" + String(repeating: "<i n='1'>v</i>\n", count: 2000) + "</r>",
        "<r>" + String(repeating: "long text ", count: 20000) + "</r>",
        // blocks beyond the builder's 1 MiB pre-fault chunk, grown several times
        "<r>" + String(repeating: "<i n='1'>v</i>\n", count: 80000) + "</r>",
        // errors
        "", "<r>", "<r></s>", "<r a='1' a='2'/>", "<r/><s/>", "text", "<r>&undefined;</r>",
        String(repeating: "<a>", count: 513) + String(repeating: "</a>", count: 513),
    ]

    func check(_ bytes: [UInt8], limit: Int? = nil, file: StaticString = #filePath, line: UInt = #line) throws {
        let tree = bytes.withUnsafeBufferPointer { b in Result { () throws(AFSError) in try XMLTreeBuilder.parse(b, maxExpandedBytes: limit) } }
        let tape = bytes.withUnsafeBufferPointer { b in Result { () throws(AFSError) in try XMLTapeBuilder.parse(b, maxExpandedBytes: limit) } }
        switch (tree, tape) {
        case (.success(let t), .success(let d)):
            let v = try d.value()
            XCTAssertTrue(same(v, t), "\(v) vs \(t)", file: file, line: line)
            XCTAssertEqual(d.depth, t.nestingDepth, file: file, line: line)
            XCTAssertFalse(d.hasRepeatedKeys, file: file, line: line)
        case (.failure(let a), .failure(let b)):
            XCTAssertEqual(a, b, file: file, line: line)
        default:
            XCTFail("tree \(tree) vs tape \(tape)", file: file, line: line)
        }
    }

    /// Value equality with dictionaries compared in order.
    func same(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.dict(let x), .dict(let y)):
            return x.keys.count == y.keys.count && zip(x.keys, y.keys).allSatisfy { Array($0.utf8) == Array($1.utf8) }
                && zip(x.values, y.values).allSatisfy { same($0, $1) }
        case (.string(let x), .string(let y)): return Array(x.utf8) == Array(y.utf8)
        default: return a == b
        }
    }

    func testThatTheTapeIsTheTree() throws {
        for d in XMLTapeTests.documents { try check(Array(d.utf8)) }
        // UTF-16 with a byte-order mark, and ISO-8859-1 as declared
        try check([0xFF, 0xFE] + "<r a='é'>ü</r>".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        try check(Array("<?xml version='1.0' encoding='ISO-8859-1'?><r>".utf8) + [0xE9] + Array("</r>".utf8))
    }

    func testThatTheTapeMeetsTheDecodingLimitAsTheTreeDoes() throws {
        let doc = Array(("<r>" + String(repeating: "<i n='1'>v</i>", count: 100) + "</r>").utf8)
        var failed = 0
        for limit in stride(from: 0, through: 40000, by: 397) {
            try check(doc, limit: limit)
            if (try? doc.withUnsafeBufferPointer { try XMLTreeBuilder.parse($0, maxExpandedBytes: limit) }) == nil { failed += 1 }
        }
        XCTAssertGreaterThan(failed, 10)  // the limit was met for some, not all
        XCTAssertLessThan(failed, 90)
    }

    func testThatTheResponseSerializerHandsOutTheTape() throws {
        let rs = ResponseSerializer(kind: .xml)
        let body = Array("<r a='1'>t</r>".utf8)
        let r = body.withUnsafeBufferPointer { rs.responseParameters(statusCode: 200, contentType: "application/xml", body: $0) }
        XCTAssertNil(r.error)
        guard case .document(let d, let node)? = r.parameters else { return XCTFail("not a document: \(String(describing: r.parameters))") }
        XCTAssertEqual(node, 0)
        XCTAssertEqual(try d.value(), ["r", ["a": "1"], "t"])
        XCTAssertEqual(d.textCount, 8)  // "r", "a", "1", "t", each with its NUL; nothing else kept
        let trailing = Array(("<r/>" + String(repeating: " ", count: 5000)).utf8)
        XCTAssertEqual(try trailing.withUnsafeBufferPointer { try XMLTapeBuilder.parse($0) }.textCount, 2)
        // a malformed body: the tree path's error
        let bad = Array("<r>".utf8)
        let e = bad.withUnsafeBufferPointer { rs.responseParameters(statusCode: 200, contentType: "application/xml", body: $0) }
        XCTAssertNil(e.parameters)
        XCTAssertEqual(e.error?.status, .invalidXML)
        let o = rs.responseObject(statusCode: 200, contentType: "application/xml", body: bad)
        XCTAssertEqual(e.error, o.error)
    }
}
