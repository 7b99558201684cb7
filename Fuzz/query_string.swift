// Fuzz target: query strings from random trees (AFQueryStringFromParameters and the
// Alamofire-style options), through `QueryString` and through a request serializer.
//
// The input chooses the style (3 array styles x 2 bool styles x 2 space styles) and drives a
// random tree (usually a dictionary at the top). Properties:
// - a top level that is not a dictionary is `.invalidArgument`;
// - the output is deterministic and uses only `A-Z a-z 0-9 - . _ ~ / ?`, `%XX` (uppercase),
//   `&`, `=` and (space style plus) `+`;
// - `QueryString.forEachPair` yields exactly the pairs of an independent reference walk of
//   the bracket convention (keys ascending by UTF-8 bytes, `parent[child]`, `key[]` /
//   `key` / `key[i]`, set members under `key` with scalars ascending by text then containers);
// - a reference decoder (split on `&`, then on the first `=`, percent-decode, `+` as space
//   with the plus style) gives back those pairs: the name, and the value's text form
//   (`1`/`0` or `true`/`false` for bools), or no `=` at all for null;
// - a GET request carries the query after `?`, a POST request as its form body.
@testable import AFSerialization

typealias Pair = (name: [UInt8], value: Value)

/// The reference walk of the bracket convention (docs/DESIGN.md, "Query strings").
func referencePairs(_ v: Value, name: [UInt8], style: QueryStyle, top: Bool, into out: inout [Pair]) {
    switch v {
    case .dict(let d):
        let order = d.keys.indices.sorted { Array(d.keys[$0].utf8).lexicographicallyPrecedes(Array(d.keys[$1].utf8)) }
        for i in order {
            let key = Array(d.keys[i].utf8)
            let child = top ? key : name + [UInt8(ascii: "[")] + key + [UInt8(ascii: "]")]
            referencePairs(d.values[i], name: child, style: style, top: false, into: &out)
        }
    case .array(let a):
        for (i, e) in a.enumerated() {
            let child: [UInt8]
            switch style.arrays {
            case .brackets: child = name + Array("[]".utf8)
            case .noBrackets: child = name
            case .indexed: child = name + Array("[\(i)]".utf8)
            }
            referencePairs(e, name: child, style: style, top: false, into: &out)
        }
    case .set(let s):
        let literal = style.bools == .literal
        let scalars = s.members.enumerated().filter { !$0.element.isContainer }
            .map { (text: textForm($0.element, literal: literal), seq: $0.offset, value: $0.element) }
            .sorted { $0.text.lexicographicallyPrecedes($1.text) || ($0.text == $1.text && $0.seq < $1.seq) }
        for m in scalars { referencePairs(m.value, name: name, style: style, top: false, into: &out) }
        for m in s.members where m.isContainer { referencePairs(m, name: name, style: style, top: false, into: &out) }
    default:
        out.append((name, v))
    }
}

/// The text form of a scalar (docs/DESIGN.md, "Values").
func textForm(_ v: Value, literal: Bool) -> [UInt8] {
    switch v {
    case .string(let s): return Array(s.utf8)
    case .int(let i): return Array(String(i).utf8)
    case .double(let d): return Array(formatDouble(d).utf8)
    case .bool(let b): return Array((literal ? (b ? "true" : "false") : (b ? "1" : "0")).utf8)
    case .data(let d): return d
    default: return []
    }
}

func isQueryByte(_ c: UInt8, plus: Bool) -> Bool {
    PercentEscaping.isUnreserved(c) || c == UInt8(ascii: "&") || c == UInt8(ascii: "=") || c == UInt8(ascii: "%")
        || (plus && c == UInt8(ascii: "+"))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var inp = FuzzInput(data, size)
    let s = inp.byte()
    let style = QueryStyle(
        arrays: QueryStyle.ArrayStyle(rawValue: Int32(s % 3))!,
        bools: s & 4 == 0 ? .numeric : .literal,
        spaces: s & 8 == 0 ? .percent : .plus)
    let plus = style.spaces == .plus
    var gen = TreeGen()
    var tree = gen.value(&inp)
    if s & 0x30 != 0x30, !(tree.kind == .dict) {
        // Usually a dictionary at the top: wrap what was generated.
        tree = .dict(ValueDict([(gen.string(&inp), tree)]))
    }

    let query: String
    trace("style \(style), tree \(show(tree))")
    do {
        query = try QueryString.make(tree, style: style)
    } catch let e as AFSError {
        require(tree.kind != .dict, "a dictionary was rejected: \(e)\n  tree \(show(tree))")
        require(e.status == .invalidArgument, "a non-dictionary top level failed with \(e), not .invalidArgument")
        return 0
    } catch {
        fail("QueryString.make threw a non-AFSError: \(error)")
    }
    require(tree.kind == .dict, "a \(tree.kind) top level was accepted")
    let again = (try? QueryString.make(tree, style: style)) ?? ""
    require(utf8Equal(again, query), "the query string is not deterministic")
    let q = Array(query.utf8)
    for c in q { require(isQueryByte(c, plus: plus), "byte \(c) appears in the query \(show(q))") }

    // forEachPair against the reference walk.
    var expected: [Pair] = []
    referencePairs(tree, name: [], style: style, top: true, into: &expected)
    var got: [Pair] = []
    do {
        try QueryString.forEachPair(tree, style: style) { name, value in got.append((Array(name), value)) }
    } catch {
        fail("forEachPair failed: \(error)")
    }
    require(got.count == expected.count, "forEachPair gave \(got.count) pairs, the reference \(expected.count)\n  tree \(show(tree))")
    for (g, e) in zip(got, expected) {
        require(g.name == e.name, "pair name \(show(g.name)), the reference says \(show(e.name))\n  tree \(show(tree))")
        require(same(g.value, e.value), "pair \(show(g.name)) has value \(show(g.value)), the reference says \(show(e.value))")
    }

    // The reference decoder.
    // An empty query is no pair, or one pair with an empty name and a null value.
    var pieces = q.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false)
    if q.isEmpty && expected.isEmpty { pieces = [] }
    require(pieces.count == expected.count, "the query has \(pieces.count) pairs, expected \(expected.count): \(show(q))")
    let literal = style.bools == .literal
    for (piece, e) in zip(pieces, expected) {
        let parts = piece.split(separator: UInt8(ascii: "="), maxSplits: 2, omittingEmptySubsequences: false)
        guard let name = percentDecode(parts[0], plus: plus) else { fail("pair name does not decode: \(show(piece))") }
        require(name == e.name, "decoded name \(show(name)), expected \(show(e.name)) in \(show(q))")
        if case .null = e.value {
            require(parts.count == 1, "a null value must be written as the name alone: \(show(piece))")
        } else {
            require(parts.count == 2, "a pair needs exactly one '=': \(show(piece))")
            guard let value = percentDecode(parts[1], plus: plus) else { fail("pair value does not decode: \(show(piece))") }
            let text = textForm(e.value, literal: literal)
            require(value == text, "decoded value \(show(value)), expected \(show(text)) for \(show(e.name))")
        }
    }

    // Through a serializer: GET puts it in the URL, POST in the form body.
    var serializer = RequestSerializer()
    serializer.queryStyle = style
    do {
        let get = try serializer.request(method: "GET", url: "http://example.com/p", params: tree)
        let url = "http://example.com/p" + (q.isEmpty ? "" : "?" + query)
        require(utf8Equal(get.url, url), "GET URL \(get.url), expected \(url)")
        let post = try serializer.request(method: "POST", url: "http://example.com/p", params: tree)
        require((post.body ?? []) == q, "POST body \(show(post.body ?? [])), expected the query \(show(q))")
        require(post.header("Content-Type") == "application/x-www-form-urlencoded", "POST Content-Type \(String(describing: post.header("Content-Type")))")
    } catch {
        fail("the serializer failed: \(error)\n  tree \(show(tree))")
    }
    return 0
}
