import XCTest
@testable import AFSerialization

/// Bugs found by the fuzz targets (Fuzz/), each with its input in Fuzz/regressions/.
final class FuzzRegressionTests: XCTestCase {
    func chain(_ depth: Int, dict: Bool) -> Value {
        var v: Value = 1
        for _ in 0..<depth { v = dict ? .dict(ValueDict([("k", v)])) : .array([v]) }
        return v
    }

    /// plist_write (Fuzz/regressions/plist_write/tree-deeper-than-512): the writer accepted
    /// trees nested deeper than the reader's limit (and, much deeper, would have exhausted the
    /// stack); now it refuses them as the JSON writer does.
    func testThatThePlistWriterRefusesTreesDeeperThanTheReaderAccepts() throws {
        for format in [PropertyListFormat.xml, .binary] {
            for dict in [false, true] {
                let ok = chain(PropertyListWriter.maxDepth, dict: dict)
                let bytes = try PropertyListWriter.data(ok, format: format)
                XCTAssertEqual(try PropertyListReader.parse(bytes), ok)
                XCTAssertThrowsError(try PropertyListWriter.data(chain(PropertyListWriter.maxDepth + 1, dict: dict), format: format)) {
                    let e = $0 as! AFSError
                    XCTAssertEqual(e.status, .invalidPlist)
                    XCTAssertTrue(e.message.contains("nested deeper than 512 levels"), e.message)
                }
            }
        }
    }
}
