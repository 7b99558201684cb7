/// How the default query algorithm writes arrays, bools and spaces. The default is
/// AFNetworking's; the others are Alamofire's options. C: `afs_serializer_set_query_style`.
public struct QueryStyle: Sendable, Equatable {
    public enum ArrayStyle: Int32, Sendable { case brackets = 0, noBrackets = 1, indexed = 2 }
    public enum BoolStyle: Int32, Sendable { case numeric = 0, literal = 1 }
    public enum SpaceStyle: Int32, Sendable { case percent = 0, plus = 1 }

    public var arrays: ArrayStyle
    public var bools: BoolStyle
    public var spaces: SpaceStyle

    public init(arrays: ArrayStyle = .brackets, bools: BoolStyle = .numeric, spaces: SpaceStyle = .percent) {
        self.arrays = arrays
        self.bools = bools
        self.spaces = spaces
    }

    /// AFNetworking's: `a[]=1`, bools `1`/`0`, spaces `%20`.
    public static let `default` = QueryStyle()
}

/// AFNetworking's `AFQueryStringPairsFromKeyAndValue` and `AFQueryStringFromParameters`.
public enum QueryString {
    /// The default query string of a parameters dictionary. C: `afs_query_string`.
    /// - Throws: `.invalidArgument` when `params` is not a dictionary.
    public static func make(_ params: Value, style: QueryStyle = .default) throws -> String {
        var out = ByteWriter(capacity: 256)
        try append(params, style: style, to: &out)
        return try out.toString()
    }

    /// Appends the query string of `params` to `out`.
    public static func append(_ params: Value, style: QueryStyle, to out: inout ByteWriter) throws {
        let plus = style.spaces == .plus
        let start = out.count
        defer { if out.failed { out.recover(to: start) } }
        var first = true
        try forEachPair(params, style: style) { name, value in
            if !first { out.append(UInt8(ascii: "&")) }
            first = false
            PercentEscaping.append(name, spaceAsPlus: plus, to: &out)
            switch value {
            case .null:
                break
            case .string(var s):
                out.append(UInt8(ascii: "="))
                s.withUTF8 { PercentEscaping.append($0, spaceAsPlus: plus, to: &out) }
            case .data(let d):
                out.append(UInt8(ascii: "="))
                d.withUnsafeBufferPointer { PercentEscaping.append($0, spaceAsPlus: plus, to: &out) }
            default:
                // Numbers and bools: their text is ASCII digits, signs, `.`, `e`, `+`, letters.
                out.append(UInt8(ascii: "="))
                var t = ByteWriter(capacity: 32)
                value.appendText(to: &t, literalBools: style.bools == .literal)
                try t.withBytes { PercentEscaping.append($0, spaceAsPlus: plus, to: &out) }
            }
            try out.check("the query string", recoveringTo: start)
        }
    }

    /// Calls `body` with each (name, leaf) pair in AFNetworking's order. Names are raw
    /// (unescaped) UTF-8 with brackets: `user[name]`, `ids[]`. Leaves are scalars or null.
    ///
    /// - Dictionary keys ascend by Unicode scalars; a nested key is `parent[child]`.
    /// - Array elements go under `key[]` (`key` with `.noBrackets`, `key[i]` with `.indexed`).
    /// - Set members go under `key`: scalars ascending by text form, then containers in
    ///   insertion order.
    /// - Throws: `.invalidArgument` when `params` is not a dictionary.
    public static func forEachPair(
        _ params: Value, style: QueryStyle,
        _ body: (UnsafeBufferPointer<UInt8>, Value) throws -> Void
    ) throws {
        guard case .dict(let top) = params else {
            throw AFSError.invalidArgument("the parameters must be a dictionary to make a query string, not \(params.kind.article)")
        }
        var name = ByteWriter(capacity: 128)
        try walkDict(top, name: &name, nested: false, style: style, depth: 1, body)
    }

    private static func walkDict(
        _ d: ValueDict, name: inout ByteWriter, nested: Bool, style: QueryStyle, depth: Int,
        _ body: (UnsafeBufferPointer<UInt8>, Value) throws -> Void
    ) throws {
        let mark = name.count
        for i in try sortedKeyOrder(d) {
            if nested { name.append(UInt8(ascii: "[")) }
            name.append(d.keys[i])
            if nested { name.append(UInt8(ascii: "]")) }
            try walk(d.values[i], name: &name, style: style, depth: depth + 1, body)
            name.truncate(to: mark)
        }
    }

    private static func walk(
        _ v: Value, name: inout ByteWriter, style: QueryStyle, depth: Int,
        _ body: (UnsafeBufferPointer<UInt8>, Value) throws -> Void
    ) throws {
        if depth == LargeStack.hopDepth && v.isContainer {  // deeper levels run on a large stack
            try LargeStack.run { try walkHere(v, name: &name, style: style, depth: depth, body) }
            return
        }
        try walkHere(v, name: &name, style: style, depth: depth, body)
    }

    private static func walkHere(
        _ v: Value, name: inout ByteWriter, style: QueryStyle, depth: Int,
        _ body: (UnsafeBufferPointer<UInt8>, Value) throws -> Void
    ) throws {
        switch v {
        case .dict(let d):
            try walkDict(d, name: &name, nested: true, style: style, depth: depth, body)
        case .array(let a):
            let mark = name.count
            for (i, e) in a.enumerated() {
                switch style.arrays {
                case .brackets: name.append("[]" as StaticString)
                case .noBrackets: break
                case .indexed:
                    name.append(UInt8(ascii: "["))
                    name.appendDecimal(Int64(i))
                    name.append(UInt8(ascii: "]"))
                }
                try walk(e, name: &name, style: style, depth: depth + 1, body)
                name.truncate(to: mark)
            }
        case .set(let s):
            for m in try setOrder(s, style: style) { try walk(m, name: &name, style: style, depth: depth + 1, body) }
        default:
            try name.withBytes { try body($0, v) }
        }
    }

    /// Indices of `d.keys` in ascending Unicode-scalar order.
    static func sortedKeyOrder(_ d: ValueDict) throws(AFSError) -> [Int] {
        try Memory.probe(d.count, of: Int.self, "the key order of a dictionary of \(d.count) keys")
        var order = Array(d.keys.indices)
        let keys = d.keys
        order.sort { utf8Less(keys[$0], keys[$1]) }
        return order
    }

    /// Set members in query order: scalars ascending by text form (stable), then containers.
    static func setOrder(_ s: ValueSet, style: QueryStyle) throws(AFSError) -> [Value] {
        var scalars: [(text: [UInt8], value: Value, seq: Int)] = []
        var containers: [Value] = []
        for (i, m) in s.members.enumerated() {
            if m.isContainer { containers.append(m) } else {
                scalars.append((try m.textBytes(literalBools: style.bools == .literal), m, i))
            }
        }
        scalars.sort { a, b in
            a.text.lexicographicallyPrecedes(b.text) || (a.text == b.text && a.seq < b.seq)
        }
        return scalars.map(\.value) + containers
    }
}
