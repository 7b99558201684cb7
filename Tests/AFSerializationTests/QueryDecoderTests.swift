import XCTest
@testable import AFSerialization

private func parse(_ s: String, _ configure: (inout QueryParseOptions) -> Void = { _ in }) throws -> Value {
    var o = QueryParseOptions()
    configure(&o)
    var s = s
    return try s.withUTF8 { try QueryDecoder.parse($0, options: o) }
}

private func status(_ s: String, _ configure: (inout QueryParseOptions) -> Void = { _ in }) -> AFSStatus? {
    do { _ = try parse(s, configure); return nil } catch { return (error as? AFSError)?.status }
}

final class QueryDecoderTests: XCTestCase {
    func testThatNamesNestAsAFNetworkingWritesThem() throws {
        XCTAssertEqual(try parse("a%5Bb%5D=1"), ["a": ["b": "1"]])
        XCTAssertEqual(try parse("a[0]=1"), ["a": ["0": "1"]])  // brackets: numeric keys are keys
        XCTAssertEqual(try parse("a[]=1&a[]=2"), ["a": ["1", "2"]])
        XCTAssertEqual(try parse("a=1&a=2"), ["a": "2"])  // brackets: the last value
        XCTAssertEqual(try parse("key"), ["key": nil])
        XCTAssertEqual(try parse("x=1&&y="), ["x": "1", "y": ""])
        XCTAssertEqual(try parse("?x=1"), ["?x": "1"])  // `?` is part of the name: the writer leaves it unescaped
        XCTAssertEqual(try parse("a+b=c+d"), ["a+b": "c+d"])
        XCTAssertEqual(try parse("a+b=c+d") { $0.plusAsSpace = true }, ["a b": "c d"])
        XCTAssertEqual(try parse("u[l][]=1&u[n]=x"), ["u": ["l": ["1"], "n": "x"]])
        XCTAssertEqual(try parse("a[b=1&c]=2&[d]=3"), ["a[b": "1", "c]": "2", "[d]": "3"])
        XCTAssertEqual(try parse("a[b]x=1"), ["a": ["b": ["x": "1"]]])
    }

    func testThatStylesReadTheirArrays() throws {
        XCTAssertEqual(try parse("a=1&a=2&b=3") { $0.arrays = .noBrackets }, ["a": ["1", "2"], "b": "3"])
        XCTAssertEqual(try parse("a[1]=y&a[0]=x") { $0.arrays = .indexed }, ["a": ["x", "y"]])
        XCTAssertEqual(try parse("a[0]=x&a[2]=y") { $0.arrays = .indexed }, ["a": ["0": "x", "2": "y"]])
        XCTAssertEqual(try parse("a[0][k]=1&a[1][k]=2") { $0.arrays = .indexed }, ["a": [["k": "1"], ["k": "2"]]])
        // The one ambiguity of indexed: a dictionary keyed "0" … "n-1" is an array.
        XCTAssertEqual(try parse(QueryString.make(["a": ["1": "y", "0": "x"]], style: QueryStyle(arrays: .indexed))) { $0.arrays = .indexed }, ["a": ["x", "y"]])
        XCTAssertEqual(try parse("a[][k]=1&a[][j]=2&a[][k]=3"), ["a": [["k": "1", "j": "2"], ["k": "3"]]])
    }

    func testThatDepthIsCutOrRefused() throws {
        XCTAssertEqual(try parse("a[b][c][d][e][f][g][h]=1"),
                       ["a": ["b": ["c": ["d": ["e": ["f": ["[g][h]": "1"]]]]]]])
        XCTAssertEqual(try parse("a[b][c]=1") { $0.maxDepth = 1 }, ["a": ["b": ["[c]": "1"]]])
        XCTAssertEqual(status("a[b][c][d][e][f][g]=1") { $0.refuseDeep = true }, .limit)
        XCTAssertNil(status("a[b][c][d][e][f]=1") { $0.refuseDeep = true })
    }

    func testThatLimitsAndBadEscapesAreRefusedNamingTheParameter() throws {
        let many = (0..<1001).map { "k\($0)=v" }.joined(separator: "&")
        XCTAssertEqual(status(many), .limit)
        XCTAssertNil(status((0..<1000).map { "k\($0)=v" }.joined(separator: "&")))
        XCTAssertEqual(status("a=" + String(repeating: "x", count: 65537)), .limit)
        XCTAssertNil(status("a=" + String(repeating: "x", count: 65536)))
        XCTAssertEqual(status(String(repeating: "n", count: 11) + "=1") { $0.maxLength = 10 }, .limit)
        XCTAssertEqual(status("a=%zz"), .invalidArgument)
        XCTAssertEqual(status("a=%E9"), .invalidUTF8)
        XCTAssertEqual(status("%E9=1"), .invalidUTF8)
        XCTAssertEqual(status("a=%4"), .invalidArgument)
        XCTAssertEqual(try parse("a=%zz%E9%4") { $0.keepBadEscapes = true }, ["a": "%zz\u{FFFD}%4"])
        XCTAssertEqual(status("a[]=1&a[x]=2"), .invalidArgument)
        XCTAssertEqual(status("a=1&a[x]=2"), .invalidArgument)
        do {
            _ = try parse("x=1&a[]=1&a[x]=2")
        } catch let e as AFSError {
            XCTAssertTrue(e.message.contains("parameter 2"), e.message)
            XCTAssertTrue(e.message.contains("a[x]"), e.message)
        }
    }

    // MARK: Round trip on random trees

    private func randomKey(_ g: inout SeededGenerator) -> String {
        let pool = ["a", "b", "k", "name", "é", "x y", "&=", "%", "+", "0", "1", "日本", "a.b", "-"]
        return pool[Int(g.next() % UInt64(pool.count))] + (g.next() % 3 == 0 ? "\(g.next() % 10)" : "")
    }

    private func randomLeaf(_ g: inout SeededGenerator) -> Value {
        if g.next() % 5 == 0 { return .null }
        let pool = ["", "v", "a&b=c", "100%", "x+y z", "é", "[]", "\u{1F600}", "line\nbreak"]
        return .string(pool[Int(g.next() % UInt64(pool.count))])
    }

    /// Trees the style round-trips whole (see the header's ROUND TRIP rules).
    private func randomTree(_ g: inout SeededGenerator, style: QueryStyle.ArrayStyle, depth: Int) -> Value {
        var d = ValueDict()
        for _ in 0..<(1 + Int(g.next() % 4)) {
            d[randomKey(&g)] = randomMember(&g, style: style, depth: depth + 1)
        }
        // indexed: a dictionary keyed exactly "0" … "n-1" comes back as an array (tested apart).
        if style == .indexed && depth > 0 && Set(d.keys).isSubset(of: ["0", "1"]) && (d.keys.contains("0")) { d["z"] = "z" }
        return .dict(d)
    }

    private func randomMember(_ g: inout SeededGenerator, style: QueryStyle.ArrayStyle, depth: Int) -> Value {
        let r = g.next() % 6
        if depth >= 5 || r < 3 { return randomLeaf(&g) }
        if r == 3 { return randomTree(&g, style: style, depth: depth) }
        switch style {
        case .indexed:
            return .array((0..<(1 + Int(g.next() % 3))).map { _ in randomMember(&g, style: style, depth: depth + 1) })
        case .brackets:
            return .array((0..<(1 + Int(g.next() % 3))).map { _ in randomLeaf(&g) })
        case .noBrackets:
            return .array((0..<(2 + Int(g.next() % 3))).map { _ in randomLeaf(&g) })
        }
    }

    func testThatEveryWrittenTreeOfStringsAndNullsComesBack() throws {
        var g = SeededGenerator(seed: 26)
        for style in [QueryStyle.ArrayStyle.brackets, .noBrackets, .indexed] {
            for round in 0..<400 {
                let tree = randomTree(&g, style: style, depth: 0)
                let q = try QueryString.make(tree, style: QueryStyle(arrays: style))
                let back = try parse(q) { $0.arrays = style; $0.maxDepth = 12 }
                XCTAssertEqual(back, tree, "style \(style) round \(round): \(q)")
                // Plus as space: the writer's plus style and the form parser agree too.
                let qp = try QueryString.make(tree, style: QueryStyle(arrays: style, spaces: .plus))
                XCTAssertEqual(try parse(qp) { $0.arrays = style; $0.plusAsSpace = true; $0.maxDepth = 12 }, tree, qp)
            }
        }
    }

    /// What comes back where the format is ambiguous, as the header states it.
    private func expected(_ v: Value, style: QueryStyle.ArrayStyle) -> Value? {
        switch v {
        case .null, .string: return v
        case .int, .double, .bool, .date: return .string(try! v.textBytes(literalBools: false).withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) })
        case .data: return nil
        case .dict(let d):
            var out = ValueDict()
            for (k, m) in d.pairs { if let e = expected(m, style: style) { out[k] = e } }
            return out.isEmpty ? nil : .dict(out)
        case .set(let s):
            // Members go under the plain key: brackets and indexed keep the last one.
            let members = ((try? QueryString.setOrder(s, style: QueryStyle(arrays: style))) ?? []).compactMap { expected($0, style: style) }
            if style != .noBrackets { return members.last }
            return expected(.array(members), style: style)
        case .array(let a):
            let items = a.compactMap { expected($0, style: style) }
            if items.isEmpty { return nil }
            if style == .noBrackets && items.count == 1 { return items[0] }
            return .array(items)
        }
    }

    func testThatAmbiguousTreesComeBackAsTheHeaderSays() throws {
        var g = SeededGenerator(seed: 2026)
        for style in [QueryStyle.ArrayStyle.brackets, .noBrackets, .indexed] {
            for _ in 0..<300 {
                var d = ValueDict()
                for _ in 0..<(1 + Int(g.next() % 4)) {
                    let k = randomKey(&g)
                    switch g.next() % 7 {
                    case 0: d[k] = .int(Int64(g.next() % 1000) - 500)
                    case 1: d[k] = .bool(g.next() % 2 == 0)
                    case 2: d[k] = .double(Double(g.next() % 1000) / 8)
                    case 3: d[k] = .array([])
                    case 4: d[k] = .dict(ValueDict())
                    case 5: d[k] = .set(ValueSet([.string("s\(g.next() % 3)"), .int(Int64(g.next() % 3))]))
                    default: d[k] = .array([randomLeaf(&g)])
                    }
                }
                let tree = Value.dict(d)
                let q = try QueryString.make(tree, style: QueryStyle(arrays: style))
                XCTAssertEqual(try parse(q) { $0.arrays = style }, expected(tree, style: style) ?? .dict(ValueDict()), "\(style): \(q)")
            }
        }
        // Arrays of dictionaries (brackets): dictionaries with the same keys come back apart,
        // dictionaries with different keys merge; arrays of arrays merge into one.
        let same: Value = ["a": [["k": "1", "j": "2"], ["k": "3", "j": "4"]]]
        XCTAssertEqual(try parse(QueryString.make(same)), same)
        XCTAssertEqual(try parse(QueryString.make(["a": [["k": "1"], ["j": "2"]]])), ["a": [["k": "1", "j": "2"]]])
        XCTAssertEqual(try parse(QueryString.make(["a": [["1", "2"], ["3"]]])), ["a": [["1", "2", "3"]]])
        // no_brackets: arrays of arrays flatten.
        XCTAssertEqual(try parse(QueryString.make(["a": [["1", "2"], ["3"]]], style: QueryStyle(arrays: .noBrackets))) { $0.arrays = .noBrackets },
                       ["a": ["1", "2", "3"]])
    }
}
