// The pickle reader's two paths: the one-pass reader takes what pickle.dumps writes for
// plain parameters and builds what the general reader builds; everything else (a shared
// container, a set, an int beyond int64) is left to the general reader. The inputs are
// pickle.dumps(obj, 5) of the objects in the comments (CPython 3.11).
@testable import AFSerialization
import XCTest

final class PickleReaderTests: XCTestCase {
    /// {"name": "Zoë", "admin": False, "age": 42, "tags": ["a", "b"], "score": 1.5,
    ///  "none": None, "blob": b"\x00\x01", "t": (1, [2], {"x": 3})}
    let small: [UInt8] = [0x80, 0x05, 0x95, 0x72, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7d, 0x94, 0x28, 0x8c, 0x04, 0x6e, 0x61, 0x6d, 0x65, 0x94, 0x8c, 0x04, 0x5a, 0x6f, 0xc3, 0xab, 0x94, 0x8c, 0x05, 0x61, 0x64, 0x6d, 0x69, 0x6e, 0x94, 0x89, 0x8c, 0x03, 0x61, 0x67, 0x65, 0x94, 0x4b, 0x2a, 0x8c, 0x04, 0x74, 0x61, 0x67, 0x73, 0x94, 0x5d, 0x94, 0x28, 0x8c, 0x01, 0x61, 0x94, 0x8c, 0x01, 0x62, 0x94, 0x65, 0x8c, 0x05, 0x73, 0x63, 0x6f, 0x72, 0x65, 0x94, 0x47, 0x3f, 0xf8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x8c, 0x04, 0x6e, 0x6f, 0x6e, 0x65, 0x94, 0x4e, 0x8c, 0x04, 0x62, 0x6c, 0x6f, 0x62, 0x94, 0x43, 0x02, 0x00, 0x01, 0x94, 0x8c, 0x01, 0x74, 0x94, 0x4b, 0x01, 0x5d, 0x94, 0x4b, 0x02, 0x61, 0x7d, 0x94, 0x8c, 0x01, 0x78, 0x94, 0x4b, 0x03, 0x73, 0x87, 0x94, 0x75, 0x2e]
    /// [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}] (the keys are memo references)
    let repeatedKeys: [UInt8] = [0x80, 0x05, 0x95, 0x29, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x5d, 0x94, 0x28, 0x7d, 0x94, 0x28, 0x8c, 0x02, 0x69, 0x64, 0x94, 0x4b, 0x01, 0x8c, 0x04, 0x6e, 0x61, 0x6d, 0x65, 0x94, 0x8c, 0x01, 0x61, 0x94, 0x75, 0x7d, 0x94, 0x28, 0x68, 0x02, 0x4b, 0x02, 0x68, 0x03, 0x8c, 0x01, 0x62, 0x94, 0x75, 0x65, 0x2e]
    /// {"a": l, "b": l} with one list l = [1, 2]
    let sharedList: [UInt8] = [0x80, 0x05, 0x95, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7d, 0x94, 0x28, 0x8c, 0x01, 0x61, 0x94, 0x5d, 0x94, 0x28, 0x4b, 0x01, 0x4b, 0x02, 0x65, 0x8c, 0x01, 0x62, 0x94, 0x68, 0x02, 0x75, 0x2e]
    /// {"s": {1, 2}}
    let set: [UInt8] = [0x80, 0x05, 0x95, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7d, 0x94, 0x8c, 0x01, 0x73, 0x94, 0x8f, 0x94, 0x28, 0x4b, 0x01, 0x4b, 0x02, 0x90, 0x73, 0x2e]
    /// {"k": 2**64}
    let bigInt: [UInt8] = [0x80, 0x05, 0x95, 0x13, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7d, 0x94, 0x8c, 0x01, 0x6b, 0x94, 0x8a, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x73, 0x2e]

    func direct(_ b: [UInt8]) -> Value? { b.withUnsafeBufferPointer { PickleReader.readDirect($0) } }
    func general(_ b: [UInt8]) throws -> Value { try b.withUnsafeBufferPointer { try PickleReader.readGeneral($0) } }

    func testTheCommonShapeTakesOnePassAndAgrees() throws {
        for b in [small, repeatedKeys] {
            let d = try XCTUnwrap(direct(b))
            XCTAssertEqual(try PickleWriter.pickle(d), try PickleWriter.pickle(try general(b)))
        }
        let d = try XCTUnwrap(direct(small))
        guard case .dict(let dict) = d else { return XCTFail("not a dict: \(d)") }
        XCTAssertEqual(dict.keys, ["name", "admin", "age", "tags", "score", "none", "blob", "t"])
        XCTAssertEqual(dict["name"], .string("Zoë"))
        XCTAssertEqual(dict["blob"], .data([0, 1]))
        XCTAssertEqual(dict["t"], .array([.int(1), .array([.int(2)]), .dict(ValueDict([("x", .int(3))]))]))
    }

    func testOtherShapesGoToTheGeneralReader() throws {
        XCTAssertNil(direct(sharedList))
        XCTAssertNil(direct(set))
        XCTAssertNil(direct(bigInt))
        // shared members are copied
        XCTAssertEqual(try PickleReader.read(sharedList),
                       .dict(ValueDict([("a", .array([.int(1), .int(2)])), ("b", .array([.int(1), .int(2)]))])))
        XCTAssertThrowsError(try PickleReader.read(bigInt)) { e in
            XCTAssertTrue("\(e)".contains("outside int64"), "\(e)")
        }
    }

    func testErrorsComeFromTheGeneralReader() {
        var truncated = small
        truncated.removeLast(3)
        XCTAssertNil(direct(truncated))
        XCTAssertThrowsError(try PickleReader.read(truncated)) { e in
            XCTAssertTrue("\(e)".contains("pickle: "), "\(e)")
        }
    }

    func testDepthLimitHoldsOnBothPaths() throws {
        // [[[...[1]...]]]: protocol 2 without a frame, EMPTY_LIST MARK ... APPENDS
        func nested(_ levels: Int) -> [UInt8] {
            var b: [UInt8] = [0x80, 0x02]
            for _ in 0..<levels { b += [0x5d] }           // EMPTY_LIST
            b += [0x4b, 0x01]                              // BININT1 1
            for _ in 0..<levels { b += [0x61] }           // APPEND
            return b + [0x2e]                              // STOP
        }
        XCTAssertNotNil(direct(nested(Value.maxDepth)))
        XCTAssertEqual(try PickleReader.read(nested(Value.maxDepth)).nestingDepth, Value.maxDepth)
        XCTAssertNil(direct(nested(Value.maxDepth + 1)))
        XCTAssertThrowsError(try PickleReader.read(nested(Value.maxDepth + 1)))
    }

    func testVeryDeepNestingIsRefusedWithoutDeepRecursion() {
        // 200,000 nested lists: the one-pass reader stops at the limit and releases what it
        // built without recursing 200,000 levels (that would overflow the stack); the
        // general reader's message keeps the path short.
        var b: [UInt8] = [0x80, 0x02]
        b += [UInt8](repeating: 0x5d, count: 200_000)
        b += [0x4b, 0x01]
        b += [UInt8](repeating: 0x61, count: 200_000)
        b.append(0x2e)
        XCTAssertNil(direct(b))
        XCTAssertThrowsError(try PickleReader.read(b)) { e in
            let m = "\(e)"
            XCTAssertTrue(m.contains("deeper than \(Value.maxDepth) levels"), m)
            XCTAssertTrue(m.contains("[0][0][0]…[0][0], \(Value.maxDepth) levels"), m)
            XCTAssertLessThan(m.utf8.count, 300, m)
        }
    }
}
