import Foundation
import XCTest

@testable import AFSerialization

/// Records the reader's events as strings (text runs joined), for comparisons.
final class XMLRecorder: XMLEventSink {
    private var list: [String] = []
    private var text: [UInt8]? = nil
    var stopAfter = Int.max
    var events: [String] { flush(); return list }

    private func flush() {
        if let t = text { list.append("T " + String(decoding: t, as: UTF8.self)); text = nil }
    }

    private func add(_ s: String) -> Bool {
        flush()
        list.append(s)
        return list.count < stopAfter
    }

    func startElement(qname: XMLText, nsURI: XMLText, localName: XMLText, attributes: UnsafeBufferPointer<XMLAttribute>) -> Bool {
        let a = attributes.map { "\($0.isNamespaceDeclaration ? "ns " : "")\($0.qname.string){\($0.nsURI.string)}\($0.localName.string)=\($0.value.string)" }
        return add("S \(qname.string) {\(nsURI.string)}\(localName.string) [\(a.joined(separator: ", "))]")
    }
    func endElement(qname: XMLText, nsURI: XMLText, localName: XMLText) -> Bool {
        add("E \(qname.string) {\(nsURI.string)}\(localName.string)")
    }
    func characters(_ t: XMLText) -> Bool {
        if text == nil { text = [] }
        text!.append(contentsOf: t.bytes)
        return true
    }
    func comment(_ text: XMLText) -> Bool { add("C " + text.string) }
    func processingInstruction(target: XMLText, data: XMLText) -> Bool { add("P \(target.string) \(data.string)") }
}

final class XMLReaderTests: XCTestCase {
    /// The events, or the error as "ERROR status: message".
    func events(_ doc: [UInt8], split: [Int] = []) -> [String] {
        let r = XMLRecorder()
        let p = XMLPushParser(sink: r)
        do {
            if split.isEmpty {
                try doc.withUnsafeBufferPointer { try p.feed($0) }
            } else {
                var i = 0, k = 0
                while i < doc.count {
                    let n = Swift.min(split[k % split.count], doc.count - i)
                    try doc[i..<(i + n)].withUnsafeBufferPointer { try p.feed($0) }
                    i += n
                    k += 1
                }
            }
            try p.finish()
            return r.events
        } catch {
            return r.events + ["ERROR \(error)"]
        }
    }

    func events(_ s: String, split: [Int] = []) -> [String] { events(Array(s.utf8), split: split) }

    func error(_ s: String) -> String { events(s).last ?? "" }

    // MARK: Well-formedness table

    func testThatEachConstraintIsChecked() {
        let table: [(String, String)] = [
            ("<r><a></r>", "end tag </r> does not match the start tag <a>"),
            ("<r a='1' a='2'/>", "duplicate attribute 'a'"),
            ("<r a='<'/>", "'<' is not allowed in an attribute value"),
            ("<r>]]></r>", "']]>' is not allowed in character data"),
            ("<r>&#0;</r>", "not an XML character"),
            ("<r>&#xD800;</r>", "not an XML character"),
            ("<r>&e;</r>", "undeclared entity 'e'"),
            ("<!DOCTYPE r [<!ENTITY a '&b;'><!ENTITY b '&a;'>]><r>&a;</r>", "recursive reference to entity 'a'"),
            ("<!DOCTYPE r [<!ENTITY e '<a>'>]><r>&e;</a></r>", "an element started in the entity is not ended in it"),
            ("<!DOCTYPE r [<!ENTITY e SYSTEM 'x'>]><r a='&e;'/>", "external entity 'e' in an attribute value"),
            ("<!DOCTYPE r [<!ENTITY % p 'x'><!ENTITY e '%p;'>]><r/>", "parameter entity reference inside a declaration"),
            ("<p:r/>", "undeclared namespace prefix 'p'"),
            ("<r xmlns:a='u' xmlns:b='u' a:x='1' b:x='2'/>", "duplicate attribute 'b:x'"),
            ("<r xmlns:p=''/>", "may not be undeclared"),
            ("<r xmlns:xml='urn:x'/>", "the prefix 'xml' may be bound only"),
            ("<a:b:c/>", "more than one ':'"),
            ("<1r/>", "expected an element name"),
            ("<r><?xml version='1.0'?></r>", "an XML declaration is allowed only at the start"),
            ("<r><!-- a -- b --></r>", "'--' inside a comment"),
            ("<r/><r/>", "junk after the root element"),
            ("", "no root element"),
            ("<?xml version='2.0'?><r/>", "unsupported XML version '2.0'"),
            ("<?xml version='1.0' encoding='EUC-JP'?><r/>", "unsupported encoding 'EUC-JP'"),
            ("<r>\u{1}</r>", "character U+0001 is not allowed"),
        ]
        for (doc, needle) in table {
            let e = error(doc)
            XCTAssertTrue(e.hasPrefix("ERROR AFS_E_INVALID_XML: not well-formed: ") && e.contains(needle), "\(doc): \(e)")
            XCTAssertTrue(e.contains("at line ") && e.contains("byte offset"), e)
        }
    }

    func testThatPositionsAreLineColumnAndByteOffset() {
        XCTAssertEqual(error("<r>\n  <é></x></r>"),
                       "ERROR AFS_E_INVALID_XML: not well-formed: end tag </x> does not match the start tag <é> at line 2, column 6 (byte offset 10)")
        // UTF-16: the offset counts the input's bytes (BOM included)
        let u16: [UInt8] = [0xFF, 0xFE] + "<r>\n</x>".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        XCTAssertEqual(events(u16).last, "ERROR AFS_E_INVALID_XML: not well-formed: end tag </x> does not match the start tag <r> at line 2, column 1 (byte offset 10)")
    }

    // MARK: Events

    func testThatEventsCarryNamespacesAndNormalizedValues() {
        let doc = "<?xml version='1.0'?><!DOCTYPE r [<!ENTITY e 'E'><!ATTLIST p:r d NMTOKENS ' a  b '>]>"
            + "<p:r xmlns:p='urn:p' a='x\r\ny\tz&e;&#10;'>t\r\nu<![CDATA[<&>]]><!--c--><?pi d?></p:r>"
        XCTAssertEqual(events(doc), [
            "S p:r {urn:p}r [ns xmlns:p{http://www.w3.org/2000/xmlns/}p=urn:p, a{}a=x y zE\n, d{}d=a b]",
            "T t\nu<&>", "C c", "P pi d", "E p:r {urn:p}r",
        ])
    }

    func testThatEncodingsAreDeliveredAsUTF8() {
        let want = ["S r {}r [a{}a=é]", "T 中😀", "E r {}r"]
        let s = "<r a='é'>中😀</r>"
        XCTAssertEqual(events(Array(s.utf8)), want)
        XCTAssertEqual(events([0xEF, 0xBB, 0xBF] + Array(s.utf8)), want)
        XCTAssertEqual(events([0xFF, 0xFE] + s.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }), want)
        XCTAssertEqual(events([0xFE, 0xFF] + s.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }), want)
        XCTAssertEqual(events(Array("<?xml version='1.0' encoding='ISO-8859-1'?><r>".utf8) + [0xE9] + Array("</r>".utf8)),
                       ["S r {}r []", "T é", "E r {}r"])
        XCTAssertTrue(events(Array("<?xml version='1.0' encoding='us-ascii'?><r>".utf8) + [0xE9] + Array("</r>".utf8)).last!
            .contains("byte 0xE9 is not US-ASCII"))
    }

    func testThatEveryCorpusDocumentGivesTheSameResultInEverySplit() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("data/xml")
        var n = 0
        for sub in ["wf", "nwf"] {
            let files = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent(sub).path).sorted()
            for f in files where f.hasSuffix(".xml") {
                let doc = Array(try Data(contentsOf: dir.appendingPathComponent(sub).appendingPathComponent(f)))
                let one = events(doc)
                XCTAssertEqual(sub == "wf", !(one.last ?? "").hasPrefix("ERROR"), "\(sub)/\(f): \(one.last ?? "")")
                for split in [[1], [2], [3, 1], [13]] {
                    XCTAssertEqual(events(doc, split: split), one, "\(sub)/\(f) split \(split)")
                }
                n += 1
            }
        }
        XCTAssertGreaterThan(n, 200)
    }

    func testThatTheTreeIsJsonMLOfTheEvents() throws {
        let doc = Array("<r xmlns:p='u' a='1'>t<!--c-->u<p:c/><d>e</d>tail</r>".utf8)
        let v = try doc.withUnsafeBufferPointer { try XMLTreeBuilder.parse($0) }
        XCTAssertEqual(v, ["r", ["xmlns:p": "u", "a": "1"], "tu", ["p:c", [:]], ["d", [:], "e"], "tail"])
    }

    // MARK: Limits and safety

    func testThatBombsAndDepthAreRefusedWithLimit() {
        var dtd = "<!ENTITY a0 'lol'>"
        for i in 1..<10 { dtd += "<!ENTITY a\(i) '" + String(repeating: "&a\(i - 1);", count: 10) + "'>" }
        XCTAssertTrue(error("<!DOCTYPE r [\(dtd)]><r>&a9;</r>").hasPrefix("ERROR AFS_E_LIMIT: entity expansion exceeds the limit"))
        let big = String(repeating: "x", count: 100_000)
        XCTAssertTrue(error("<!DOCTYPE r [<!ENTITY a '\(big)'>]><r>" + String(repeating: "&a;", count: 1000) + "</r>")
            .hasPrefix("ERROR AFS_E_LIMIT"))
        XCTAssertEqual(events(String(repeating: "<a>", count: 512) + String(repeating: "</a>", count: 512)).count, 1024)
        XCTAssertTrue(error(String(repeating: "<a>", count: 513)).hasPrefix("ERROR AFS_E_LIMIT: elements nested more than 512 deep"))
        // a caller's expansion bound
        var limits = XMLLimits()
        limits.maxExpandedBytes = 10
        let r = XMLRecorder()
        let doc = Array("<!DOCTYPE r [<!ENTITY e '12345678'>]><r>&e;&e;</r>".utf8)
        XCTAssertThrowsError(try doc.withUnsafeBufferPointer { try XMLPushParser.parse($0, sink: r, limits: limits) }) {
            XCTAssertEqual(($0 as? AFSError)?.status, .limit)
        }
    }

    func testThatExternalEntitiesAreNeverRead() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("afs-xml-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let secret = dir.appendingPathComponent("secret.txt")
        try Data("SECRET".utf8).write(to: secret)
        let ev = events("<!DOCTYPE r [<!ENTITY e SYSTEM '\(secret.absoluteString)'>]><r>&e;</r>")
        XCTAssertEqual(ev, ["S r {}r []", "E r {}r"])
        // after an unread external subset, an undeclared entity is skipped (not standalone)
        XCTAssertEqual(events("<!DOCTYPE r SYSTEM '\(secret.absoluteString)'><r>&x;</r>"), ["S r {}r []", "E r {}r"])
    }

    func testThatTheHandlerStops() {
        let r = XMLRecorder()
        r.stopAfter = 2
        let doc = Array("<r><a/><b/></r>".utf8)
        XCTAssertThrowsError(try doc.withUnsafeBufferPointer { try XMLPushParser.parse($0, sink: r) }) {
            XCTAssertEqual($0 as? AFSError, AFSError(.state, "stopped by the handler"))
        }
        XCTAssertEqual(r.events.count, 2)
    }

    func testThatTheResponseSerializerValidatesLikeAFNetworking() {
        let rs = ResponseSerializer(kind: .xml)
        XCTAssertEqual(rs.acceptableContentTypes, ["application/xml", "text/xml"])
        let ok = rs.responseObject(statusCode: 200, contentType: "text/xml; charset=utf-8", body: Array("<r/>".utf8))
        XCTAssertNil(ok.error)
        XCTAssertEqual(ok.value, ["r", [:]])
        XCTAssertEqual(rs.responseObject(statusCode: 200, contentType: "text/html", body: Array("<r/>".utf8)).error?.status,
                       .unacceptableContentType)
        let bad = rs.responseObject(statusCode: 404, contentType: "application/xml", body: Array("<e>gone</e>".utf8))
        XCTAssertEqual(bad.error?.status, .unacceptableStatus)
        XCTAssertEqual(bad.value, ["e", [:], "gone"])
        var low = rs
        low.setMaxDecodedBytes(100)
        XCTAssertEqual(low.responseObject(statusCode: 200, contentType: "application/xml",
                                          body: Array("<!DOCTYPE r [<!ENTITY e '\(String(repeating: "y", count: 60))'>]><r>&e;&e;</r>".utf8)).error?.status,
                       .limit)
    }
}

extension XMLReaderTests {
    func testThatTheTreeIsBoundedByTheDecodingLimit() {
        // entities multiplying elements: few expanded bytes, many values
        let doc = "<!DOCTYPE r [<!ENTITY a '<x/><x/><x/><x/><x/><x/><x/><x/>'><!ENTITY b '"
            + String(repeating: "&a;", count: 8) + "'><!ENTITY c '" + String(repeating: "&b;", count: 8) + "'>]><r>"
            + String(repeating: "&c;", count: 200) + "</r>"
        let bytes = Array(doc.utf8)
        XCTAssertEqual(events(bytes).count, 2 * (200 * 512) + 2)  // the events pass
        XCTAssertThrowsError(try bytes.withUnsafeBufferPointer { try XMLTreeBuilder.parse($0) }) {
            XCTAssertEqual(($0 as? AFSError)?.status, .limit)
            XCTAssertTrue(($0 as? AFSError)?.message.hasPrefix("the XML tree exceeds the decoding limit") ?? false)
        }
    }
}
