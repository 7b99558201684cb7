import XCTest
@testable import AFSerialization

/// Alamofire's response rules (empty-response codes, HEAD, structured suffixes, problem
/// documents, XSSI) and date values (text, JSON, property lists, pickles, uniquing).
final class ResponseRulesAndDatesTests: XCTestCase {
    func testEmptyResponseCodes() throws {
        var rs = ResponseSerializer(kind: .json)
        XCTAssertNil(rs.responseObject(statusCode: 200, contentType: "application/json", body: []).error)
        try rs.setEmptyResponseCodes([204, 205])
        XCTAssertNil(rs.responseObject(statusCode: 205, contentType: nil, body: []).error)
        XCTAssertNil(rs.responseObject(statusCode: 200, contentType: "application/json", body: [], method: "HEAD").error)
        let e = rs.responseObject(statusCode: 200, contentType: "application/json", body: []).error
        XCTAssertEqual(e?.status, .invalidJSON)
        // the error document path: an unacceptable status with an empty body names both
        let nf = rs.responseObject(statusCode: 404, contentType: "application/json", body: []).error
        XCTAssertEqual(nf?.status, .unacceptableStatus)
        XCTAssertTrue(nf?.message.contains("the body could not be decoded: no JSON value") ?? false, nf?.message ?? "")
        XCTAssertThrowsError(try rs.setEmptyResponseCodes([1000]))
        // compound: set on every member
        var c = try ResponseSerializer(compound: [ResponseSerializer(kind: .propertyList), ResponseSerializer(kind: .json)])
        try c.setEmptyResponseCodes([204])
        XCTAssertEqual(c.responseObject(statusCode: 200, contentType: "application/x-plist", body: []).error?.status, .invalidPlist)
        XCTAssertNil(c.responseParameters(statusCode: 200, contentType: "application/json", body: UnsafeBufferPointer(start: nil, count: 0), method: "HEAD").error)
    }

    func testStructuredSuffixesAndProblemDocuments() throws {
        var rs = ResponseSerializer(kind: .json)
        let body = Array(#"{"title":"Gone"}"#.utf8)
        XCTAssertEqual(rs.responseObject(statusCode: 200, contentType: "application/ld+json", body: body).error?.status, .unacceptableContentType)
        rs.setAcceptsStructuredSuffix(true)
        XCTAssertNil(rs.responseObject(statusCode: 200, contentType: "Application/LD+JSON", body: body).error)
        XCTAssertNotNil(rs.responseObject(statusCode: 200, contentType: "application/+json", body: body).error)
        XCTAssertNotNil(rs.responseObject(statusCode: 200, contentType: "application/json+xml", body: body).error)
        XCTAssertEqual(ResponseSerializer(kind: .propertyList).structuredSuffix, nil)
        rs.setAcceptsStructuredSuffix(false)
        let gone = rs.responseObject(statusCode: 410, contentType: "application/problem+json", body: body)
        XCTAssertEqual(gone.error?.message, "Request failed: gone (410)")
        XCTAssertEqual(gone.value, .dict(ValueDict([("title", "Gone")])))
        // a plist serializer does not take JSON problem documents
        let p = ResponseSerializer(kind: .propertyList).responseObject(statusCode: 410, contentType: "application/problem+json", body: body)
        XCTAssertNil(p.value)
    }

    func testXSSIPrefix() throws {
        var rs = ResponseSerializer(kind: .json)
        rs.setStripsXSSIPrefix(true)
        for prefix in [")]}'", ")]}',", ")]}'\n", ")]}',\n", ")]}'\r\n", ""] {
            let body = Array((prefix + "[1]").utf8)
            XCTAssertEqual(rs.responseObject(statusCode: 200, contentType: "application/json", body: body).value, [1], prefix)
            let p = rs.responseParameters(statusCode: 200, contentType: "application/json", body: body.withUnsafeBufferPointer { UnsafeBufferPointer(start: UnsafeMutablePointer(mutating: $0.baseAddress), count: $0.count) })
            XCTAssertNil(p.error, prefix)
        }
        let bad = rs.responseObject(statusCode: 200, contentType: "application/json", body: Array(")]}'\n[1,]".utf8)).error
        XCTAssertTrue(bad?.message.hasSuffix("byte offset 8") ?? false, bad?.message ?? "")
        // a plist serializer ignores the option
        var ps = ResponseSerializer(kind: .propertyList)
        ps.setStripsXSSIPrefix(true)
        XCTAssertEqual(ps.responseObject(statusCode: 200, contentType: "application/x-plist", body: Array(")]}'<plist/>".utf8)).error?.status, .invalidPlist)
    }

    func testDateText() {
        XCTAssertEqual(DateText.iso8601(0), "1970-01-01T00:00:00Z")
        XCTAssertEqual(DateText.iso8601(-0.5), "1969-12-31T23:59:59.5Z")
        XCTAssertEqual(DateText.iso8601(-0.5, fraction: false), "1969-12-31T23:59:59Z")
        XCTAssertEqual(DateText.iso8601(1_577_934_245.000001), "2020-01-02T03:04:05.000001Z")
        XCTAssertNil(DateText.iso8601(.nan))
        XCTAssertNil(DateText.iso8601(1e15))
        XCTAssertEqual(DateText.parse(Array("2020-01-02T03:04:05Z".utf8)), 1_577_934_245)
        XCTAssertEqual(DateText.parse(Array("2020Z".utf8)), 1_577_836_800)
        XCTAssertEqual(DateText.parse(Array("2020-02-29T00:00Z".utf8)), 1_582_934_400)
        XCTAssertEqual(DateText.parse(Array("0001-01-01T00:00:00Z".utf8)), -62_135_596_800)
        for bad in ["2019-02-29T00:00:00Z", "2020-01-02T24:00:00Z", "2020-01-02T03:04:05", "yesterday", "2020-1-2Z", "2020-01-02T03:04:05.Z"] {
            XCTAssertNil(DateText.parse(Array(bad.utf8)), bad)
        }
    }

    func testDatesThroughTheWriters() throws {
        let tree: Value = .dict(ValueDict([("when", .date(1_577_934_245.25)), ("list", .array([.date(0)]))]))
        XCTAssertEqual(String(decoding: try JSONWriter.data(tree), as: UTF8.self),
                       #"{"when":"2020-01-02T03:04:05.25Z","list":["1970-01-01T00:00:00Z"]}"#)
        XCTAssertThrowsError(try JSONWriter.data(.array([.date(-1e14)])))
        let xml = String(decoding: try PropertyListWriter.data(tree, format: .xml), as: UTF8.self)
        XCTAssertTrue(xml.contains("<date>2020-01-02T03:04:05Z</date>"), xml)
        let fromXML = try PropertyListReader.parse(try PropertyListWriter.data(tree, format: .xml))
        XCTAssertEqual(fromXML, .dict(ValueDict([("when", .date(1_577_934_245)), ("list", .array([.date(0)]))])))
        XCTAssertEqual(try PropertyListReader.parse(try PropertyListWriter.data(tree, format: .binary)), tree)
        XCTAssertEqual(try PickleReader.read(try PickleWriter.mallocPickleArray(tree)), tree)
        XCTAssertNotEqual(Value.date(1), Value.double(1))
        XCTAssertEqual(Set([Value.date(1), .date(1), .double(1)]).count, 2)
    }

    func testBinaryPlistsWriteEqualContainersOnce() throws {
        let pair: Value = .array([12, 345])
        let shared: Value = .array(Array(repeating: pair, count: 1000))
        let bin = try PropertyListWriter.data(shared, format: .binary)
        XCTAssertLessThan(bin.count, 1100)
        XCTAssertEqual(try PropertyListReader.parse(bin), shared)
        // dictionaries too, and nested duplicates; different containers stay apart
        let d: Value = .dict(ValueDict([("a", pair), ("b", .array([pair, pair])), ("c", .array([pair, pair])), ("e", .array([12]))]))
        let back = try PropertyListReader.parse(try PropertyListWriter.data(d, format: .binary))
        XCTAssertEqual(back, d)
        let twice: Value = .array([d, d, .dict(ValueDict())])
        XCTAssertEqual(try PropertyListReader.parse(try PropertyListWriter.data(twice, format: .binary)), twice)
        XCTAssertLessThan(try PropertyListWriter.data(twice, format: .binary).count,
                          2 * (try PropertyListWriter.data(d, format: .binary).count))
    }

    func testUTF16PropertyLists() throws {
        let text = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><plist><array><string>😀é</string><integer>7</integer></array></plist>"
        let le: [UInt8] = [0xFF, 0xFE] + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let be: [UInt8] = text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        XCTAssertEqual(try PropertyListReader.parse(le), ["😀é", 7])
        XCTAssertEqual(try PropertyListReader.parse(be), ["😀é", 7])
        var lone = le
        lone[lone.count - 2] = 0x00; lone[lone.count - 1] = 0xD8
        XCTAssertThrowsError(try PropertyListReader.parse(lone)) { e in
            XCTAssertTrue((e as! AFSError).message.contains("high surrogate"), "\(e)")
        }
        // offsets in messages are offsets in the UTF-16 input (found by the plist_read fuzzer)
        let bad: [UInt8] = [0xFF, 0xFE] + "<plist><string>中文中文</strin></plist>".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        XCTAssertThrowsError(try PropertyListReader.parse(bad)) { e in
            let m = (e as! AFSError).message
            XCTAssertTrue(m.hasSuffix("at byte offset 40") || m.hasSuffix("at byte offset 42"), m)
        }
        let utf8Declared16 = Array(text.utf8)
        XCTAssertThrowsError(try PropertyListReader.parse(utf8Declared16))  // UTF-8 bytes declared UTF-16
        let latin = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><plist/>"
        XCTAssertThrowsError(try PropertyListReader.parse([0xFF, 0xFE] + latin.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }))
    }
}

extension PickleWriter {
    /// The pickle of `v` as an array (test helper).
    static func mallocPickleArray(_ v: Value) throws -> [UInt8] {
        let (p, n) = try mallocPickle(v)
        defer { free(p) }
        return Array(UnsafeBufferPointer(start: p, count: n))
    }
}
