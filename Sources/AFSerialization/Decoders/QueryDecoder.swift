// Query strings and application/x-www-form-urlencoded bodies back into parameter trees:
// the reverse of `QueryString` (AFNetworking's `AFQueryStringPairsFromKeyAndValue`).
//
// A parameter is `name[=value]`, pieces separated by `&`. The name and the value are
// percent-decoded first (and `+` is a space where asked), then the name is split as the
// `qs` package splits it: the parent is everything before the first complete bracket group
// (`[` then bytes that are not brackets then `]`); then contiguous bracket groups are the
// levels (`[]` appends to an array, `[k]` is a dictionary key); whatever follows (an
// unclosed `[`, text after a `]`, or the groups past the depth limit) is one literal key.
//
// What comes back for each style, and where AFNetworking's format is ambiguous, is stated in
// include/afserialization.h, section 16 ("ROUND TRIP"); QueryDecoderTests checks those rules
// on random trees.

/// Options of `QueryDecoder.parse`. C: `afs_query_parse_options`.
public struct QueryParseOptions: Sendable, Equatable {
    public var arrays: QueryStyle.ArrayStyle = .brackets
    /// Bracket levels kept; deeper names keep the rest as one literal key (or are refused).
    public var maxDepth: Int = 5
    public var maxParams: Int = 1000
    /// The longest name or value after decoding, in bytes.
    public var maxLength: Int = 65536
    /// `%zz` and escapes that decode to bytes that are not UTF-8 are kept (U+FFFD for the
    /// bytes) instead of refused.
    public var keepBadEscapes = false
    /// A name deeper than `maxDepth` is `.limit` instead of a literal rest.
    public var refuseDeep = false
    public var plusAsSpace = false

    /// The deepest `maxDepth` accepted: a tree one deeper than this is `Value.maxDepth`.
    public static let depthCeiling = Value.maxDepth - 2

    public init() {}
}

public enum QueryDecoder {
    /// Parses a query string into a dictionary (a leading `?` is part of the first name, as
    /// the writer leaves `?` unescaped: strip the URL's `?` before).
    /// - Throws: `.limit` (parameter count, name or value length, depth with `refuseDeep`),
    ///   `.invalidArgument` (a malformed escape, a name that conflicts with an earlier one),
    ///   `.invalidUTF8`, `.noMemory`. C: `afs_query_parse`, `afs_form_body_parse`.
    public static func parse(_ text: UnsafeBufferPointer<UInt8>, options: QueryParseOptions = QueryParseOptions()) throws -> Value {
        guard options.maxDepth >= 0, options.maxDepth <= QueryParseOptions.depthCeiling else {
            throw AFSError.invalidArgument("max_depth \(options.maxDepth) is above \(QueryParseOptions.depthCeiling)")
        }
        guard options.maxParams > 0, options.maxLength > 0 else {
            throw AFSError.invalidArgument("max_params and max_length must be positive")
        }
        var builder = TreeBuilder(options: options)
        guard let base = text.baseAddress, text.count > 0 else { return .dict(ValueDict()) }
        // Room for every parameter at the top (the common flat query) in one allocation.
        var pieces = 1
        for i in 0..<text.count where base[i] == UInt8(ascii: "&") { pieces += 1 }
        builder.root.map.reserveCapacity(Swift.min(pieces, options.maxParams))
        var i = 0
        let n = text.count
        var index = 0
        var name = [UInt8](), value = [UInt8]()
        while i < n {
            var end = i
            var eq = -1
            while end < n {
                let c = base[end]
                if c == UInt8(ascii: "&") { break }
                if c == UInt8(ascii: "=") && eq < 0 { eq = end }
                end += 1
            }
            defer { i = end + 1 }
            if end == i { continue }  // `&&`
            if index >= options.maxParams {
                throw AFSError(.limit, "the query has more than \(options.maxParams) parameters (max_params; parameter \(index) starts at byte offset \(i))")
            }
            let nameEnd = eq < 0 ? end : eq
            try decode(base + i, nameEnd - i, into: &name, what: "the name", index: index, offset: i, options: options)
            if name.isEmpty { index += 1; continue }  // `=v`: no name
            if !isASCII(name) && String(validating: name, as: UTF8.self) == nil {
                name = Array(try validText(name, what: "the name", index: index, options: options).utf8)
            }
            var leaf = Value.null
            if eq >= 0 {
                try decode(base + eq + 1, end - eq - 1, into: &value, what: "the value", index: index, offset: eq + 1, options: options)
                leaf = .string(try validText(value, what: "the value", index: index, options: options))
            }
            try builder.add(name: name, leaf: leaf, index: index)
            index += 1
        }
        return try builder.finish()
    }

    static func describe(_ name: [UInt8]) -> String {
        let s = String(decoding: name.prefix(64), as: UTF8.self)
        return name.count > 64 ? "\"\(s)…\"" : "\"\(s)\""
    }

    /// True when every byte is ASCII (then the bytes are UTF-8 without a closer look).
    @inline(__always)
    static func isASCII(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { b in
            var i = 0
            let n = b.count
            var acc: UInt64 = 0
            while i + 8 <= n {
                acc |= b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                i += 8
            }
            while i < n {
                acc |= UInt64(b[i])
                i += 1
            }
            return acc & 0x8080_8080_8080_8080 == 0
        }
    }

    private static func validText(_ bytes: [UInt8], what: String, index: Int, options: QueryParseOptions) throws -> String {
        if isASCII(bytes) { return String(decoding: bytes, as: UTF8.self) }
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        if options.keepBadEscapes { return String(decoding: bytes, as: UTF8.self) }
        var off = 0
        // The first invalid byte, for the message.
        var it = bytes.makeIterator()
        var dec = UTF8()
        loop: while true {
            switch dec.decode(&it) {
            case .scalarValue(let u): off += UTF8.width(u)
            case .emptyInput, .error: break loop
            }
        }
        throw AFSError(.invalidUTF8, "\(what) of parameter \(index) is not UTF-8 after percent-decoding (at decoded byte \(off))")
    }

    @inline(__always) static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c &- 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c &- 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c &- 55
        default: return nil
        }
    }

    /// Percent-decodes `count` bytes at `p` into `out` (cleared first).
    private static func decode(_ p: UnsafePointer<UInt8>, _ count: Int, into out: inout [UInt8], what: String,
                               index: Int, offset: Int, options: QueryParseOptions) throws {
        // Decoded length is at most `count`: refuse early when even the escapes cannot bring it under.
        if count / 3 > options.maxLength {
            throw AFSError(.limit, "\(what) of parameter \(index) is longer than \(options.maxLength) bytes (max_length; at byte offset \(offset))")
        }
        try Memory.probe(count, "a query parameter of \(count) bytes")
        let escaped = memchr(p, Int32(UInt8(ascii: "%")), count) != nil
            || (options.plusAsSpace && memchr(p, Int32(UInt8(ascii: "+")), count) != nil)
        if !escaped {  // the bytes as they are: one copy
            if count > options.maxLength {
                throw AFSError(.limit, "\(what) of parameter \(index) is longer than \(options.maxLength) bytes (max_length; \(count) decoded, at byte offset \(offset))")
            }
            out = Array(UnsafeBufferPointer(start: p, count: count))
            return
        }
        out = []
        out.reserveCapacity(count)
        var j = 0
        while j < count {
            let c = p[j]
            if c == UInt8(ascii: "%") {
                if j + 2 < count + 0, let h = hexValue(p[j + 1]), let l = hexValue(p[j + 2]) {
                    out.append(h << 4 | l)
                    j += 3
                    continue
                }
                if !options.keepBadEscapes {
                    throw AFSError.invalidArgument("\(what) of parameter \(index) has a malformed escape at byte offset \(offset + j) (\"%\" needs two hex digits)")
                }
                out.append(c)
            } else if c == UInt8(ascii: "+") && options.plusAsSpace {
                out.append(UInt8(ascii: " "))
            } else {
                out.append(c)
            }
            j += 1
        }
        if out.count > options.maxLength {
            throw AFSError(.limit, "\(what) of parameter \(index) is longer than \(options.maxLength) bytes (max_length; \(out.count) decoded, at byte offset \(offset))")
        }
    }
}

/// One level of a name: a dictionary key, or `[]` (append).
enum QuerySegment: Equatable {
    case key([UInt8])
    case append
}

/// A name part as a dictionary key: a String (stored inline up to 15 bytes, so a probe
/// touches no other memory), hashed and compared by its bytes as `ValueDict` does.
struct QueryKey: Hashable {
    let text: String
    init(_ b: [UInt8]) { text = String(decoding: b, as: UTF8.self) }
    func hash(into h: inout Hasher) { hashUTF8(text, into: &h) }
    static func == (a: QueryKey, b: QueryKey) -> Bool { utf8Equal(a.text, b.text) }
}

/// A member under construction: a leaf in place (most members: no object per parameter),
/// or a container object changed in place.
enum QueryChild {
    case leaf(Value)
    case node(QueryNode)
}

/// A container under construction. A dictionary's members are `keys`/`children` in
/// insertion order, `map` gives a key's position; an array's are `items`.
final class QueryNode {
    enum Kind { case dict, array }
    let kind: Kind
    var keys: [String] = []
    var children: [QueryChild] = []
    var map: [QueryKey: Int] = [:]
    var items: [QueryChild] = []
    /// no_brackets: an array made by repeating a plain key.
    var repeated = false

    init(_ kind: Kind) { self.kind = kind }

    func child(_ k: QueryKey) -> QueryChild? { map[k].map { children[$0] } }

    func add(_ k: QueryKey, _ c: QueryChild) {
        map[k] = children.count
        keys.append(k.text)
        children.append(c)
    }
}

struct TreeBuilder {
    let options: QueryParseOptions
    let root = QueryNode(.dict)
    var segments: [QuerySegment] = []

    init(options: QueryParseOptions) { self.options = options }

    /// Splits `name` into levels (see the file comment).
    mutating func split(_ name: [UInt8], index: Int) throws {
        segments.removeAll(keepingCapacity: true)
        let n = name.count
        // The parent: up to the first complete bracket group.
        var first = -1
        var i = 0
        var open = -1
        while i < n {
            let c = name[i]
            if c == UInt8(ascii: "[") { open = i } else if c == UInt8(ascii: "]") && open >= 0 { first = open; break }
            i += 1
        }
        if first <= 0 {  // no group, or the name starts with one: one literal key
            segments.append(.key(name))
            return
        }
        segments.append(.key(Array(name[0..<first])))
        i = first
        var depth = 0
        while i < n && name[i] == UInt8(ascii: "[") {
            var j = i + 1
            while j < n && name[j] != UInt8(ascii: "]") && name[j] != UInt8(ascii: "[") { j += 1 }
            guard j < n && name[j] == UInt8(ascii: "]") else { break }
            if depth == options.maxDepth {
                if options.refuseDeep {
                    throw AFSError(.limit, "parameter \(index) (\(QueryDecoder.describe(name))) nests deeper than \(options.maxDepth) levels (max_depth)")
                }
                break
            }
            segments.append(j == i + 1 ? .append : .key(Array(name[(i + 1)..<j])))
            depth += 1
            i = j + 1
        }
        if i < n { segments.append(.key(Array(name[i..<n]))) }
    }

    private func conflict(_ name: [UInt8], _ index: Int, _ why: String) -> AFSError {
        AFSError.invalidArgument("parameter \(index) (\(QueryDecoder.describe(name))) conflicts with an earlier one: \(why)")
    }

    /// True when `path` already leads to something under `node` (Rails' rule for starting a
    /// new dictionary in an array).
    private func exists(_ path: ArraySlice<QuerySegment>, in node: QueryNode) -> Bool {
        var cur = node
        var left = path.count
        for s in path {
            left -= 1
            guard case .key(let k) = s, cur.kind == .dict, let next = cur.child(QueryKey(k)) else { return false }
            switch next {
            case .node(let n): cur = n
            case .leaf: return left == 0
            }
        }
        return true
    }

    private func describe(_ c: QueryChild) -> String {
        switch c {
        case .leaf: return "a value"
        case .node(let n): return n.kind == .dict ? "a dictionary" : "an array"
        }
    }

    /// A repeated key's last segment: no_brackets makes an array, the others keep the last value.
    private func setLeaf(_ cur: QueryNode, _ at: Int, _ existing: QueryChild, _ leaf: Value,
                         _ k: [UInt8], _ name: [UInt8], _ index: Int) throws {
        switch existing {
        case .leaf(let old) where options.arrays == .noBrackets:
            let a = QueryNode(.array)
            a.repeated = true
            a.items = [.leaf(old), .leaf(leaf)]
            cur.children[at] = .node(a)
        case .node(let e) where options.arrays == .noBrackets && e.kind == .array && e.repeated:
            e.items.append(.leaf(leaf))
        case .leaf:
            cur.children[at] = .leaf(leaf)  // a repeated plain key keeps the last value
        case .node:
            throw conflict(name, index, "\(QueryDecoder.describe(k)) is already a container")
        }
    }

    mutating func add(name: [UInt8], leaf: Value, index: Int) throws {
        // A flat name (the common case): one level, no split.
        if name.withUnsafeBytes({ memchr($0.baseAddress!, Int32(UInt8(ascii: "[")), $0.count) == nil }) {
            let qk = QueryKey(name)
            if let at = root.map[qk] {
                try setLeaf(root, at, root.children[at], leaf, name, name, index)
            } else {
                root.add(qk, .leaf(leaf))
            }
            return
        }
        try split(name, index: index)
        var cur = root
        let last = segments.count - 1
        for (si, seg) in segments.enumerated() {
            let isLast = si == last
            let want: QueryNode.Kind = !isLast && segments[si + 1] == .append ? .array : .dict
            switch seg {
            case .key(let k):
                guard cur.kind == .dict else { throw conflict(name, index, "an array cannot take the key \(QueryDecoder.describe(k))") }
                let qk = QueryKey(k)
                guard let at = cur.map[qk] else {
                    if isLast {
                        cur.add(qk, .leaf(leaf))
                        return
                    }
                    let c = QueryNode(want)
                    cur.add(qk, .node(c))
                    cur = c
                    continue
                }
                let existing = cur.children[at]
                if isLast {
                    try setLeaf(cur, at, existing, leaf, k, name, index)
                    return
                }
                guard case .node(let e) = existing, e.kind == want else {
                    throw conflict(name, index, "\(QueryDecoder.describe(k)) is already \(describe(existing))")
                }
                cur = e
            case .append:
                guard cur.kind == .array, !cur.repeated else { throw conflict(name, index, "`[]` on a name that is not an array") }
                if isLast {
                    cur.items.append(.leaf(leaf))
                    return
                }
                if case .node(let tail)? = cur.items.last, tail.kind == want,
                   want == .array || !exists(segments[(si + 1)...], in: tail) {
                    cur = tail
                } else {
                    let c = QueryNode(want)
                    cur.items.append(.node(c))
                    cur = c
                }
            }
        }
    }

    func finish() throws -> Value {
        try value(of: root)
    }

    private func value(of child: QueryChild) throws -> Value {
        switch child {
        case .leaf(let v): return v
        case .node(let n): return try value(of: n)
        }
    }

    private func value(of node: QueryNode) throws -> Value {
        switch node.kind {
        case .array:
            var a: [Value] = []
            try a.checkedReserve(node.items.count, "an array of \(node.items.count) parameters")
            for c in node.items { a.append(try value(of: c)) }
            return .array(a)
        case .dict:
            if options.arrays == .indexed, let order = indexOrder(node) {
                var a: [Value] = []
                try a.checkedReserve(order.count, "an array of \(order.count) parameters")
                for i in order { a.append(try value(of: node.children[i])) }
                return .array(a)
            }
            // Keys are distinct here: one hash per key.
            return .dict(try ValueDict(count: node.keys.count) { i in (node.keys[i], try value(of: node.children[i])) })
        }
    }

    /// indexed: the children's positions in index order when the keys are exactly "0" …
    /// "n-1" (no leading zeros).
    private func indexOrder(_ node: QueryNode) -> [Int]? {
        let n = node.keys.count
        guard n > 0, node !== root else { return nil }
        var slots = [Int](repeating: -1, count: n)
        for (i, key) in node.keys.enumerated() {
            let k = Array(key.utf8)
            guard !k.isEmpty, k.count <= 19, k[0] != UInt8(ascii: "0") || k.count == 1 else { return nil }
            var v = 0
            for c in k {
                guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
                v = v * 10 + Int(c - 48)
            }
            guard v < n, slots[v] < 0 else { return nil }
            slots[v] = i
        }
        return slots
    }
}
