// Adversarial complexity (issue 19): each parser and builder on inputs crafted against its
// data structures, at n and 8n. What is asserted is the ratio of the two times measured in
// the same run (the best of a few repetitions each), never an absolute time: linear work
// gives about 8, a quadratic one about 64; the bound is 16 (and 24 for the smallest inputs,
// where fixed costs and noise weigh more). Each case's input is checked for what it builds,
// so a case that skipped its work could not pass.
@testable import AFSerialization
import XCTest

final class ComplexityTests: XCTestCase {
    /// Seconds of the fastest of `repetitions` runs of `body`.
    private func best(_ repetitions: Int = 3, _ body: () throws -> Void) rethrows -> Double {
        var fastest = Double.infinity
        for _ in 0..<repetitions {
            let start = DispatchTime.now().uptimeNanoseconds
            try body()
            fastest = min(fastest, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        return fastest
    }

    /// Times `run` on `make(n)` and on `make(8n)` (inputs made outside the timing) and
    /// asserts the ratio stays near linear. A ratio above the bound is measured again (up
    /// to three rounds, the machine may be busy): quadratic work stays above it every time.
    private func assertLinear<Input>(_ what: String, n: Int, bound: Double = 16, make: (Int) throws -> Input,
                                     _ run: (Input) throws -> Void,
                                     file: StaticString = #filePath, line: UInt = #line) rethrows {
        let a = try make(n), b = try make(8 * n)
        try run(a)  // warm up (first-use costs of the runtime and the allocator)
        var ratio = Double.infinity
        for round in 0..<3 where ratio >= bound {
            let small = try best { try run(a) }
            // A quadratic regression makes the large input very slow: one run of it tells,
            // without repeating it.
            let once = try best(1) { try run(b) }
            let large = round == 0 && once / max(small, 1e-6) > 4 * bound ? once : min(once, try best(2) { try run(b) })
            ratio = min(ratio, large / max(small, 1e-6))
            print("complexity \(what): n=\(n) \(String(format: "%.2f", small * 1e3)) ms, 8n \(String(format: "%.2f", large * 1e3)) ms, ratio \(String(format: "%.1f", large / max(small, 1e-6)))")
        }
        XCTAssertLessThan(ratio, bound, "\(what): 8x the input took \(ratio)x the time", file: file, line: line)
    }

    /// `{"aaaaaaa00000000":0,"aaaaaaa00000001":1,...}`: keys of one length sharing their
    /// first 7 bytes (the repeated-key check's former 8-byte print).
    static func samePrefixKeys(_ n: Int) -> [UInt8] {
        var s = "{"
        s.reserveCapacity(n * 22)
        for i in 0..<n {
            let digits = String(i)
            s += (i == 0 ? "" : ",") + "\"aaaaaaa" + String(repeating: "0", count: 8 - digits.count) + digits + "\":\(i)"
        }
        return Array((s + "}").utf8)
    }

    func testJSONDocumentKeysSharingLengthAndPrefix() throws {
        try assertLinear("JSON object, keys sharing length and 7-byte prefix", n: 16000,
                         make: { ($0, ComplexityTests.samePrefixKeys($0)) }) { (n, text) in
            let doc = try JSONDocument.parse(text)
            XCTAssertEqual(doc.count(0), n)
            XCTAssertFalse(doc.hasRepeatedKeys)
        }
    }

    func testJSONTreeParserKeysSharingLengthAndPrefix() throws {
        try assertLinear("JSON tree parser, same-prefix keys", n: 16000,
                         make: { ($0, ComplexityTests.samePrefixKeys($0)) }) { (n, text) in
            XCTAssertEqual(try JSONParser.parse(text).count, n)
        }
    }

    func testRepeatedKeyIsStillFound() throws {
        var text = ComplexityTests.samePrefixKeys(100)
        text.removeLast()
        text += Array(",\"aaaaaaa00000042\":7}".utf8)
        let doc = try JSONDocument.parse(text)
        XCTAssertTrue(doc.hasRepeatedKeys)
        XCTAssertEqual(try doc.value().count, 100)
    }

    /// A set of n distinct one-member sets (`{frozenset({i}) for i in range(n)}`).
    static func setOfSets(_ n: Int) -> Value {
        var s = ValueSet()
        for i in 0..<n { s.insert(.set(ValueSet([.int(Int64(i))]))) }
        return .set(s)
    }

    func testSetOfContainerMembers() throws {
        assertLinear("Value set of distinct sets", n: 2000,
                     make: { n in (0..<n).map { Value.set(ValueSet([.int(Int64($0))])) } }) { members in
            var s = ValueSet()
            for m in members { s.insert(m) }
            XCTAssertEqual(s.count, members.count)
        }
        assertLinear("Value set of distinct one-key dictionaries", n: 2000,
                     make: { n in (0..<n).map { Value.dict(ValueDict([("k", .int(Int64($0)))])) } }) { members in
            var s = ValueSet()
            for m in members { s.insert(m) }
            XCTAssertEqual(s.count, members.count)
        }
        assertLinear("Value set of arrays differing in a nested member", n: 2000,
                     make: { n in (0..<n).map { Value.array([.array([.dict(ValueDict([("x", .int(Int64($0)))]))])]) } }) { members in
            var s = ValueSet()
            for m in members { s.insert(m) }
            XCTAssertEqual(s.count, members.count)
        }
    }

    func testStructuralHashOfEqualTrees() {
        let a: Value = .dict(ValueDict([("x", .set(ValueSet([1, "a", .array([2, 3])]))), ("y", .null)]))
        let b: Value = .dict(ValueDict([("y", .null), ("x", .set(ValueSet([.array([2, 3]), "a", 1])))]))
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.hashValue, b.hashValue)
        var s = ValueSet([a])
        XCTAssertFalse(s.insert(b))
        XCTAssertTrue(s.insert(.dict(ValueDict([("x", .set(ValueSet([1, "a", .array([3, 2])]))), ("y", .null)]))))
    }

    func testPickleReaderSetOfFrozensets() throws {
        try assertLinear("pickle reader, set of frozensets", n: 2000,
                         make: { ($0, try PickleWriter.pickle(.dict(ValueDict([("a", ComplexityTests.setOfSets($0))])))) }) { (n, bytes) in
            let v = try PickleReader.read(bytes)
            guard case .dict(let d) = v else { return XCTFail("not a dictionary") }
            XCTAssertEqual(d["a"]?.count, n)
        }
    }

    func testAcceptableContentTypesDedupe() throws {
        try assertLinear("acceptable content types", n: 2000,
                         make: { n in (n, (0..<n).map { "application/x-type\($0)" } + ["APPLICATION/X-TYPE0"]) }) { (n, types) in
            var r = ResponseSerializer(kind: .json)
            try r.setAcceptableContentTypes(types)
            XCTAssertEqual(r.acceptableContentTypes?.count, n)
        }
    }
}
