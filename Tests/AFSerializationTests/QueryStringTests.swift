import XCTest
@testable import AFSerialization

final class QueryStringTests: XCTestCase {
    func testThatAFNetworkingQueryExpectationsHold() throws {
        XCTAssertEqual(try QueryString.make(["key": "value"]), "key=value")
        XCTAssertEqual(try QueryString.make([:]), "")
        XCTAssertEqual(try QueryString.make(["key": " :#[]@!$&'()*+,;=/?"]),
                       "key=%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D/?")
        XCTAssertEqual(try QueryString.make(["key": "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F"]),
                       "key=%2520%2521%2522%2523%2524%2525%2526%2527%2528%2529%252A%252B%252C%252F")
        XCTAssertEqual(try QueryString.make(["key": ["nested": "value"]]), "key%5Bnested%5D=value")
        XCTAssertEqual(try QueryString.make(["key": ["v1", "v2"]]), "key%5B%5D=v1&key%5B%5D=v2")
        XCTAssertEqual(try QueryString.make(["key": .set(ValueSet(["b", "a"]))]), "key=a&key=b")
        XCTAssertEqual(try QueryString.make(["key": nil]), "key")
    }

    func testThatKeysSortByUnicodeScalarsNotLocale() throws {
        let q = try QueryString.make(["b": 1, "B": 2, "a": 3, "é": 4, "z": 5, "e\u{301}": 6])
        XCTAssertEqual(q, "B=2&a=3&b=1&e%CC%81=6&z=5&%C3%A9=4")
    }

    func testThatSetsPutScalarsInTextOrderAndContainersLast() throws {
        let s = ValueSet([["x": 1], "10", 9, true, .double(1.5), ["y"]])
        XCTAssertEqual(try QueryString.make(["s": .set(s)]), "s=1&s=1.5&s=10&s=9&s%5Bx%5D=1&s%5B%5D=y")
    }

    func testThatStylesApply() throws {
        let p: Value = ["a": ["x y", true], "b": ["c": [1, 2]]]
        XCTAssertEqual(try QueryString.make(p, style: QueryStyle(arrays: .indexed, bools: .literal, spaces: .plus)),
                       "a%5B0%5D=x+y&a%5B1%5D=true&b%5Bc%5D%5B0%5D=1&b%5Bc%5D%5B1%5D=2")
        XCTAssertEqual(try QueryString.make(p, style: QueryStyle(arrays: .noBrackets)), "a=x%20y&a=1&b%5Bc%5D=1&b%5Bc%5D=2")
        XCTAssertEqual(try QueryString.make(["p": "1+1 = 2"], style: QueryStyle(spaces: .plus)), "p=1%2B1+%3D+2")
    }

    func testThatNumbersUseFoundationText() throws {
        XCTAssertEqual(try QueryString.make(["a": 1.0, "b": 0.1, "c": 1e16, "d": 1e-7, "e": -0.0, "f": .int(.min)]),
                       "a=1&b=0.1&c=1e%2B16&d=1e-07&e=-0&f=-9223372036854775808")
    }

    func testThatPairsCarryRawNamesForMultipart() throws {
        var names: [String] = []
        try QueryString.forEachPair(["u": ["n": "x", "l": [1]]], style: .default) { name, _ in
            names.append(String(decoding: name, as: UTF8.self))
        }
        XCTAssertEqual(names, ["u[l][]", "u[n]"])
    }

    func testThatTheTopLevelMustBeADictionary() {
        XCTAssertThrowsError(try QueryString.make(["a"])) { e in
            XCTAssertEqual((e as? AFSError)?.status, .invalidArgument)
        }
    }

    func testThatALargeFlatDictionaryIsFastEnoughToBuild() throws {
        var d = ValueDict()
        for i in 0..<20_000 { d["key\(i)"] = .string("value \(i)") }
        let q = try QueryString.make(.dict(d))
        XCTAssertEqual(q.split(separator: "&").count, 20_000)
        XCTAssertTrue(q.hasPrefix("key0=value%200&key1=value%201&key10=value%2010"))
    }
}
