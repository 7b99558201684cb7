import Foundation
import XCTest

@testable import AFSerialization

/// Out of memory as a state, the decoding budget, and deep trees on small thread stacks.
final class ReliabilityTests: XCTestCase {
    func testThatAByteWriterThatCannotGrowFailsWithoutWritingAndRecovers() throws {
        var w = ByteWriter(capacity: 16)
        w.append("keep" as StaticString)
        XCTAssertFalse(w.reserve(Int.max / 2), "no allocation of that size can succeed")
        XCTAssertTrue(w.failed)
        w.append("more" as StaticString)  // meaningless once failed, but never out of bounds
        XCTAssertLessThanOrEqual(w.count, 8)
        XCTAssertTrue(w.failed, "the failure stays until recover")
        XCTAssertThrowsError(try w.toString()) { XCTAssertEqual(($0 as? AFSError)?.status, .noMemory) }
        XCTAssertThrowsError(try w.check("a test buffer", recoveringTo: 0)) {
            let e = $0 as? AFSError
            XCTAssertEqual(e?.status, .noMemory)
            XCTAssertTrue(e?.message.contains("a test buffer") ?? false, e?.message ?? "")
        }
        XCTAssertFalse(w.failed)
        XCTAssertEqual(w.count, 0, "recovered to the start")
        w.append("again" as StaticString)
        XCTAssertEqual(try w.toString(), "again")
    }

    func testThatAFailedWriterLeavesTheCallersBufferAsItWas() throws {
        var out = ByteWriter(capacity: 16)
        out.append("prefix" as StaticString)
        out.markFailed(1 << 40)  // as if the JSON writer's buffer could not grow
        XCTAssertThrowsError(try JSONWriter.write(["a": 1], options: [], to: &out)) {
            XCTAssertEqual(($0 as? AFSError)?.status, .noMemory)
        }
        XCTAssertEqual(try out.toString(), "prefix")
    }

    func testThatAProbeOfAnImpossibleSizeIsNoMemory() {
        XCTAssertThrowsError(try Memory.probe(Int.max / 2, "a test")) {
            XCTAssertEqual(($0 as? AFSError)?.status, .noMemory)
        }
        var a: [Value] = []
        XCTAssertThrowsError(try a.checkedReserve(Int.max / 64, "a test array"))
        XCTAssertEqual(a.capacity, 0)
    }

    func testThatTheDecodingBudgetRefusesWhatALowerLimitCannotHold() throws {
        let body = Array("[1,2,3,4,5,6,7,8]".utf8)
        var rs = ResponseSerializer(kind: .json)
        XCTAssertNotNil(rs.responseObject(statusCode: 200, contentType: "application/json", body: body).value)
        rs.setMaxDecodedBytes(7 * DecodeBudget.bytesPerValue)  // 8 members are charged
        let o = rs.responseObject(statusCode: 200, contentType: "application/json", body: body)
        XCTAssertNil(o.value)
        XCTAssertEqual(o.error?.status, .invalidJSON)
        XCTAssertTrue(o.error?.message.contains("decoded tree") ?? false)
        rs.setMaxDecodedBytes(8 * DecodeBudget.bytesPerValue)
        XCTAssertNotNil(rs.responseObject(statusCode: 200, contentType: "application/json", body: body).value)
    }

    func testThatSharedBinaryPlistObjectsCountAtEveryReference() throws {
        // 2,000 arrays of 100 references to one integer: 202,001 values, 6.4 MB charged. The
        // arrays differ in their last member, so that the writer (which writes equal
        // containers once, as CoreFoundation does) writes each of them.
        let outer: Value = .array((0..<2000).map { .array(Array(repeating: 1, count: 99) + [.int(Int64($0) + 2)]) })
        let bytes = try PropertyListWriter.data(outer, format: .binary)
        XCTAssertNotNil(try? PropertyListReader.parse(bytes), "within the default limit")
        XCTAssertThrowsError(try PropertyListReader.parse(bytes, maxDecodedBytes: 100_000)) {
            XCTAssertTrue((($0 as? AFSError)?.message ?? "").contains("decoded tree"))
        }
    }

    func testThatNestingDepthIsIterativeAndCapped() {
        var v: Value = 1
        for _ in 0..<600 { v = .array([v]) }
        XCTAssertEqual(v.nestingDepth, 600)
        XCTAssertEqual(v.nestingDepth(cappedAt: 32), 32)
        XCTAssertTrue(v.isNested(atLeast: 32))
        Value.releaseDeep(&v)
        XCTAssertEqual(v.kind, .null)
    }

    func testThatDismantleTakesADeepTreeApartWithoutRecursion() {
        var v: Value = 1
        for i in 0..<100_000 { v = i % 2 == 0 ? .array([v, "x"]) : .dict(ValueDict([("k", v)])) }
        Value.dismantle(&v)  // recursion here would need megabytes of stack
        XCTAssertEqual(v.kind, .null)
    }

    /// Writers, readers and release of 512-level trees on a thread with a 64 KiB stack (the
    /// shipped, optimized library; Tests/fault/limits.c runs it through the C API). An
    /// unoptimized debug build has frames several times larger, so there the thread gets
    /// 512 KiB: still far too small for 512 recursive levels.
    func testThatDeepTreesWorkOnA64KiBStack() throws {
        var failures: [String] = []
        runOnSmallStack {
            var v: Value = ["leaf": 1]
            for _ in 0..<(Value.maxDepth - 1) { v = .array([v]) }
            do {
                let json = try JSONWriter.data(v)
                let back = try JSONParser.parse(json)
                if back != v { failures.append("JSON round trip") }
                for format in [PropertyListFormat.xml, .binary] {
                    let plist = try PropertyListWriter.data(v, format: format)
                    if try PropertyListReader.parse(plist) != v { failures.append("plist \(format) round trip") }
                }
                _ = try QueryString.make(["q": v])
                _ = try ResponseSerializer.removingNulls(v)
                var set = ValueSet()
                set.insert(v)
                set.insert(v)
                if set.count != 1 { failures.append("set of two equal deep trees") }
            } catch {
                failures.append("\(error)")
            }
            Value.releaseDeep(&v)
        }
        XCTAssertEqual(failures, [])
    }

    private func runOnSmallStack(_ body: @escaping () -> Void) {
        final class Box { let body: () -> Void; init(_ b: @escaping () -> Void) { body = b } }
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        #if DEBUG
        pthread_attr_setstacksize(&attr, 512 << 10)
        #else
        pthread_attr_setstacksize(&attr, 64 << 10)
        #endif
        var tid = pthread_t()
        let ctx = Unmanaged.passRetained(Box(body)).toOpaque()
        let rc = pthread_create(&tid, &attr, { ctx in
            Unmanaged<Box>.fromOpaque(ctx!).takeRetainedValue().body()
            return nil
        }, ctx)
        XCTAssertEqual(rc, 0)
        pthread_join(tid, nil)
        pthread_attr_destroy(&attr)
    }
}
