/// A parsed JSON document held in two flat blocks: a tape of 16-byte nodes in document
/// order and one buffer with the text of every string. Building it allocates per block, not
/// per node; reading it touches no reference counts; freeing it is two `free` calls.
///
/// It accepts exactly what `JSONParser.parse` accepts and fails with the same messages at
/// the same offsets: it is built from a structural index (`JSONTapeParser`,
/// StructuralIndex.swift), and a text the index or the walk rejects is read again by the
/// same reader (`JSONReader`) with the same rules, which names the problem. The tree
/// it stands for is `value()`, the `Value` that `JSONParser.parse` returns for the text.
///
/// Node indices (`Int`) name nodes; the root is 0, the others come from `members(of:)` and
/// `next(_:)` (an index that is not a node of this document is a programming error, as an
/// array index out of range is). A string's text is NUL-terminated in
/// the text buffer, so C can borrow it as is. A dictionary lays out its members as key
/// node, value node, key node, … and records a flag when one of its objects repeats a key
/// (`hasRepeatedKeys`): the tape keeps every pair as written, while the tree keeps the
/// first position with the last value, so callers that need dictionary semantics take
/// `value()` for such a document.
///
/// Immutable once built: any number of threads may read one document.
///
/// C: `afs_value_parse_json` returns a value handle backed by a document; the handle reads
/// from the tape until it is changed.
public final class JSONDocument: @unchecked Sendable {
    /// One node. `head`: the tag in the low 3 bits, `plainFlag` (bit 3) on a string that
    /// JSON writes as is but for `/`, above them a container's member count or a string's
    /// length. `word`: an integer's or double's bits, a string's offset in
    /// the text buffer, a container's end (the index of the node after its last member).
    struct Node {
        var head: UInt64
        var word: UInt64
    }
    enum Tag: UInt64 {
        case null = 0, `false`, `true`, int, double, string, array, dict
    }
    /// A string read without escapes: no `"`, `\` or control characters in its text.
    static let plainFlag: UInt64 = 8

    let nodes: UnsafeMutablePointer<Node>
    public let nodeCount: Int
    let text: UnsafeMutablePointer<UInt8>
    /// Bytes used in the text buffer (the strings and a NUL after each).
    public let textCount: Int
    /// Whether an object of the text repeats a key.
    public let hasRepeatedKeys: Bool
    /// The root's nesting depth in the text: `Value.nestingDepth` of `value()`, or more when
    /// a repeated key dropped a deeper value from the tree.
    public let depth: Int

    init(nodes: UnsafeMutablePointer<Node>, nodeCount: Int, text: UnsafeMutablePointer<UInt8>,
                     textCount: Int, hasRepeatedKeys: Bool, depth: Int) {
        self.nodes = nodes
        self.nodeCount = nodeCount
        self.text = text
        self.textCount = textCount
        self.hasRepeatedKeys = hasRepeatedKeys
        self.depth = depth
    }
    /// A reused parser's spare (StructuralIndex.swift) that takes the blocks back when the
    /// document is freed, with their sizes in bytes; nil: they are freed.
    var spare: JSONBlockSpare?
    var blockBytes = (nodes: 0, text: 0)

    deinit {
        if let s = spare, s.give(nodes, blockBytes.nodes, text, blockBytes.text) { return }
        free(nodes)
        free(text)
    }

    /// Parses one JSON document (the rules, limits and errors of
    /// `JSONParser.parse(_:allowFragments:maxDepth:)`).
    /// - Throws: `AFSError` `.invalidJSON` with the byte offset of the problem; `.noMemory`.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, allowFragments: Bool = true,
                             maxDepth: Int = JSONParser.defaultMaxDepth) throws -> JSONDocument {
        // Stage 1 and 2 (StructuralIndex.swift); the reader below names any problem.
        try JSONTapeParser().parse(bytes, allowFragments: allowFragments, maxDepth: maxDepth)
    }

    /// `parse` by `JSONReader`, value by value: the reference, and the path that names the
    /// problem when the indexed parse rejects a document.
    static func parseWithReader(_ bytes: UnsafeBufferPointer<UInt8>, allowFragments: Bool,
                                maxDepth: Int) throws -> JSONDocument {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw AFSError(.invalidJSON, "no JSON value: the input is empty at byte offset 0")
        }
        var reader = JSONReader(base, bytes.count, maxDepth: maxDepth)
        var b = try TapeBuilder(inputSize: bytes.count)
        // The text of every string goes into the reader's scratch buffer, which becomes the
        // document's: unescaped text is never longer than its JSON (with its quotes, which
        // leaves a byte for each NUL), so the buffer never grows.
        reader.scratch = ByteWriter(capacity: bytes.count &+ 1)
        if reader.scratch.failed { throw AFSError.noMemory("a JSON document's text", bytes: bytes.count &+ 1) }
        try reader.startDocument(allowFragments: allowFragments)
        try reader.tape(into: &b)
        reader.skipWhitespace()
        if reader.i < reader.n {
            throw reader.error("unexpected \(reader.found(reader.i)) after the JSON value", at: reader.i)
        }
        guard let (text, textCount) = reader.scratch.takeStorage() else {
            throw AFSError.noMemory("a JSON document's text", bytes: reader.scratch.failedBytes)
        }
        return b.finish(text: text, textCount: textCount)
    }

    /// Parses one JSON document from bytes (see `parse(_:allowFragments:maxDepth:)`).
    public static func parse(_ bytes: [UInt8], allowFragments: Bool = true) throws -> JSONDocument {
        try bytes.withUnsafeBufferPointer { try parse($0, allowFragments: allowFragments) }
    }

    // MARK: Reading

    @inline(__always)
    func tag(_ node: Int) -> Tag { Tag(rawValue: nodes[node].head & 7)! }

    /// Whether a string node's text needs no escaping but for `/`.
    @inline(__always)
    func isPlain(_ node: Int) -> Bool { nodes[node].head & JSONDocument.plainFlag != 0 }

    /// The kind of a node, as `Value.kind` of the tree.
    public func kind(_ node: Int) -> Value.Kind {
        switch tag(node) {
        case .null: return .null
        case .false, .true: return .bool
        case .int: return .int
        case .double: return .double
        case .string: return .string
        case .array: return .array
        case .dict: return .dict
        }
    }

    /// Members of a container (pairs for a dictionary); 0 for scalars.
    public func count(_ node: Int) -> Int {
        switch tag(node) {
        case .array, .dict: return Int(truncatingIfNeeded: nodes[node].head >> 4)
        default: return 0
        }
    }

    public func bool(_ node: Int) -> Bool { tag(node) == .true }
    public func int(_ node: Int) -> Int64 { Int64(bitPattern: nodes[node].word) }
    public func double(_ node: Int) -> Double { Double(bitPattern: nodes[node].word) }

    /// A string node's UTF-8 text (NUL follows it in memory).
    public func string(_ node: Int) -> UnsafeBufferPointer<UInt8> {
        let n = nodes[node]
        return UnsafeBufferPointer(start: text + Int(truncatingIfNeeded: n.word), count: Int(truncatingIfNeeded: n.head >> 4))
    }

    /// The nesting depth of a node in the text (`Value.nestingDepth` of its tree without
    /// repeated keys; see `depth`), by one pass over its nodes.
    public func depth(of node: Int) -> Int {
        if node == 0 { return depth }
        let end = next(node)
        guard end > node &+ 1 else { return tag(node) == .array || tag(node) == .dict ? 1 : 0 }
        // Ends of the open containers, innermost last; at most `depth` of them.
        var ends: [Int] = []
        var deepest = 0
        var at = node
        while at < end {
            while let e = ends.last, e <= at { ends.removeLast() }
            if tag(at) == .array || tag(at) == .dict {
                ends.append(next(at))
                deepest = Swift.max(deepest, ends.count)
            }
            at &+= 1
        }
        return deepest
    }

    /// The node after `node` and everything inside it.
    @inline(__always)
    public func next(_ node: Int) -> Int {
        switch tag(node) {
        case .array, .dict: return Int(truncatingIfNeeded: nodes[node].word)
        default: return node &+ 1
        }
    }

    /// The members of a container by position (for random access; walking them in order
    /// needs only `next`).
    /// - Throws: `.noMemory` for the index of a large container.
    public func members(of node: Int) throws -> Members {
        try Members(self, node)
    }

    /// Positions of a container's members, for random access: where each member starts
    /// (an array's element; a dictionary's key, its value in the node after it). A
    /// dictionary of more than 16 members also gets a hash index of its keys.
    public final class Members: @unchecked Sendable {  // immutable after init
        private let starts: [Int]
        private let isDict: Bool
        private let table: [Int]
        private let doc: JSONDocument

        init(_ doc: JSONDocument, _ node: Int) throws {
            self.doc = doc
            let n = doc.count(node)
            isDict = doc.tag(node) == .dict
            try Memory.probe(n &* (isDict ? 24 : 8), "the member index of a container of \(n) members")
            var starts = [Int]()
            starts.reserveCapacity(n)
            var at = node &+ 1
            for _ in 0..<n {
                starts.append(at)
                at = doc.next(isDict ? at &+ 1 : at)
            }
            self.starts = starts
            var t = [Int]()
            if isDict && n > 16 {
                var size = 32
                while size < 2 &* n { size &<<= 1 }
                t = [Int](repeating: -1, count: size)
                for j in 0..<n {
                    var s = byteHash(doc.string(starts[j])) & (size &- 1)
                    while t[s] >= 0 { s = (s &+ 1) & (size &- 1) }
                    t[s] = j
                }
            }
            table = t
        }

        /// Number of members.
        public var count: Int { starts.count }
        /// The node of member `i`: an array's element, a dictionary's value.
        public func value(_ i: Int) -> Int { isDict ? starts[i] &+ 1 : starts[i] }
        /// The member whose subtree (a dictionary's key and value) holds `node`, or nil when
        /// `node` is not inside the container.
        public func slot(containing node: Int) -> Int? {
            guard let first = starts.first, node >= first else { return nil }
            var lo = 0, hi = starts.count  // the last start <= node is in lo..<hi
            while hi &- lo > 1 {
                let mid = (lo &+ hi) >> 1
                if starts[mid] <= node { lo = mid } else { hi = mid }
            }
            let end = doc.next(isDict ? starts[lo] &+ 1 : starts[lo])
            return node < end ? lo : nil
        }
        /// The key node of member `i` of a dictionary.
        public func key(_ i: Int) -> Int { starts[i] }

        /// The position of `key` in a dictionary (byte comparison); the last pair with it
        /// if repeated; nil in an array.
        public func index(ofKey key: UnsafeBufferPointer<UInt8>) -> Int? {
            guard isDict else { return nil }
            var found: Int?
            if table.isEmpty {
                for j in starts.indices where JSONDocument.same(doc.string(starts[j]), key) { found = j }
                return found
            }
            let mask = table.count &- 1
            var s = byteHash(key) & mask
            while table[s] >= 0 {
                let j = table[s]
                if JSONDocument.same(doc.string(starts[j]), key) && j > (found ?? -1) { found = j }
                s = (s &+ 1) & mask
            }
            return found
        }
    }

    @inline(__always)
    public static func same(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }

    // MARK: The tree

    /// The tree of the whole document: what `JSONParser.parse` returns for its text.
    /// - Throws: `.noMemory`.
    public func value() throws -> Value { try value(at: 0) }

    /// The tree of one node.
    public func value(at node: Int) throws -> Value {
        try value(node, depth: 0)
    }

    private func value(_ node: Int, depth: Int) throws -> Value {
        switch tag(node) {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .int: return .int(int(node))
        case .double: return .double(double(node))
        case .string:
            let s = string(node)
            try Memory.probe(s.count, "a string of \(s.count) bytes")
            return .string(String(decoding: s, as: UTF8.self))
        case .array, .dict:
            if depth == LargeStack.hopDepth {  // deeper levels on a large stack
                var r: Result<Value, Error>?
                if LargeStack.run({ r = Result { try container(node, depth: depth) } }), let r { return try r.get() }
                throw LargeStack.noStack()
            }
            return try container(node, depth: depth)
        }
    }

    private func container(_ node: Int, depth: Int) throws -> Value {
        let n = count(node)
        var at = node &+ 1
        if tag(node) == .array {
            try Memory.probe(n, of: Value.self, "an array of \(n) values")
            var a = [Value]()
            a.reserveCapacity(n)
            for _ in 0..<n {
                a.append(try value(at, depth: depth &+ 1))
                at = next(at)
            }
            return .array(a)
        }
        try Memory.probe(n, of: (String, Value, Int, Int).self, "a dictionary of \(n) members")
        let d = try ValueDict(count: n) { _ in
            let k = string(at)
            try Memory.probe(k.count, "a string of \(k.count) bytes")
            let key = String(decoding: k, as: UTF8.self)
            let v = try value(at &+ 1, depth: depth &+ 1)
            at = next(at &+ 1)
            return (key, v)
        }
        return .dict(d)
    }
}

// MARK: - Building

/// The growing tape of a document being parsed (the text of its strings goes into the
/// reader's `scratch`).
struct TapeBuilder: ~Copyable {
    var nodes: UnsafeMutablePointer<JSONDocument.Node>
    var count = 0
    var capacity: Int
    var repeatedKeys = false
    var depth = 0
    /// Key nodes of the open objects, innermost last (for the repeated-key check).
    var keys: MoveStack<Int>
    /// `keyPrint` of each key in `keys`.
    var prints: MoveStack<UInt64>
    /// Open-addressing scratch for the repeated-key check of large objects.
    var table: [Int] = []
    /// False once `finish` handed the tape to a document.
    var owns = true

    init(inputSize n: Int) throws(AFSError) {
        let c = Swift.max(64, n / 8)
        guard let p = afsMalloc(c &* MemoryLayout<JSONDocument.Node>.stride) else {
            throw AFSError.noMemory("a JSON document's nodes", bytes: c &* MemoryLayout<JSONDocument.Node>.stride)
        }
        nodes = p.bindMemory(to: JSONDocument.Node.self, capacity: c)
        capacity = c
        keys = MoveStack<Int>(capacity: 64)
        prints = MoveStack<UInt64>(capacity: 64)
    }

    /// A tape in a block of `capacity` nodes the caller allocated (a reused parser's spare).
    init(nodes block: UnsafeMutableRawPointer, capacity c: Int) {
        nodes = block.bindMemory(to: JSONDocument.Node.self, capacity: c)
        capacity = c
        keys = MoveStack<Int>(capacity: 64)
        prints = MoveStack<UInt64>(capacity: 64)
    }

    deinit {
        if owns { free(nodes) }
    }

    /// Hands the tape and the text (`malloc` memory) to a document.
    mutating func finish(text: UnsafeMutablePointer<UInt8>, textCount: Int) -> JSONDocument {
        let doc = JSONDocument(nodes: nodes, nodeCount: count, text: text, textCount: textCount,
                               hasRepeatedKeys: repeatedKeys, depth: depth)
        owns = false
        return doc
    }

    @inline(__always)
    mutating func push(_ tag: JSONDocument.Tag, _ head: UInt64 = 0, _ word: UInt64 = 0) throws(AFSError) -> Int {
        if count == capacity { try grow() }
        nodes[count] = JSONDocument.Node(head: tag.rawValue | head << 4, word: word)
        count &+= 1
        return count &- 1
    }

    mutating func grow() throws(AFSError) {
        let c = capacity &* 2
        let (bytes, o) = c.multipliedReportingOverflow(by: MemoryLayout<JSONDocument.Node>.stride)
        guard !o, let p = afsRealloc(nodes, bytes) else {
            throw AFSError.noMemory("a JSON document's nodes", bytes: o ? Int.max : bytes)
        }
        nodes = p.bindMemory(to: JSONDocument.Node.self, capacity: c)
        capacity = c
    }

    /// The object whose key nodes are `keys[from...]` is complete: notes whether a key
    /// repeats, and drops its keys. `text`: the text buffer.
    mutating func closeObject(keysFrom start: Int, text: UnsafePointer<UInt8>) throws(AFSError) {
        defer {
            keys.count = start
            prints.count = start
        }
        let n = keys.count &- start
        if n < 2 || repeatedKeys { return }
        let k = keys.base + start, f = prints.base + start
        // Keys differ where their prints (a hash of the whole key) differ; equal prints are
        // compared byte by byte.
        @inline(__always)
        func equal(_ a: Int, _ b: Int) -> Bool {
            f[a] == f[b] && JSONDocument.same(string(k[a], text), string(k[b], text))
        }
        if n <= 16 {
            for a in 1..<n {
                for b in 0..<a where equal(a, b) {
                    repeatedKeys = true
                    return
                }
            }
            return
        }
        var size = 32
        while size < 2 &* n { size &<<= 1 }
        if table.count < size {
            try Memory.probe(size, of: Int.self, "the key check of an object of \(n) members")
            table = [Int](repeating: -1, count: size)
        } else {
            for s in 0..<size { table[s] = -1 }
        }
        let mask = size &- 1
        for j in 0..<n {
            var s = Int(truncatingIfNeeded: (f[j] &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
            while table[s] >= 0 {
                if equal(j, table[s]) {
                    repeatedKeys = true
                    return
                }
                s = (s &+ 1) & mask
            }
            table[s] = j
        }
    }

    /// A hash of the whole key, 8 bytes at a time (keys that share a prefix and a length
    /// still spread over the table: the check stays linear for any keys).
    @inline(__always)
    static func keyPrint(_ key: UnsafePointer<UInt8>, _ length: Int) -> UInt64 {
        let m: UInt64 = 0x9E37_79B9_7F4A_7C15
        var h = UInt64(truncatingIfNeeded: length) &* m
        let raw = UnsafeRawPointer(key)
        var j = 0
        while j &+ 8 <= length {
            h = (h ^ raw.loadUnaligned(fromByteOffset: j, as: UInt64.self)) &* m
            h ^= h >> 29
            j &+= 8
        }
        if j < length {
            var tail: UInt64 = 0
            for t in j..<length { tail |= UInt64(key[t]) << (8 &* UInt64(t &- j)) }
            h = (h ^ tail) &* m
            h ^= h >> 29
        }
        return h
    }

    /// `keyPrint` of a key followed by at least 7 readable bytes (the tape's text: the
    /// key's NUL, then the room `parseIndexed` leaves): the tail is one 8-byte load,
    /// masked to the key's bytes, instead of a byte loop. Same value as `keyPrint`.
    @inline(__always)
    static func keyPrintPadded(_ key: UnsafePointer<UInt8>, _ length: Int) -> UInt64 {
        let m: UInt64 = 0x9E37_79B9_7F4A_7C15
        var h = UInt64(truncatingIfNeeded: length) &* m
        let raw = UnsafeRawPointer(key)
        var j = 0
        while j &+ 8 <= length {
            h = (h ^ raw.loadUnaligned(fromByteOffset: j, as: UInt64.self)) &* m
            h ^= h >> 29
            j &+= 8
        }
        let r = length &- j
        if r > 0 {
            let tail = raw.loadUnaligned(fromByteOffset: j, as: UInt64.self) & ((1 << (UInt64(r) &* 8)) &- 1)
            h = (h ^ tail) &* m
            h ^= h >> 29
        }
        return h
    }

    /// The text of string node `i`.
    @inline(__always)
    func string(_ i: Int, _ text: UnsafePointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        let node = nodes[i]
        return UnsafeBufferPointer(start: text + Int(truncatingIfNeeded: node.word), count: Int(truncatingIfNeeded: node.head >> 4))
    }
}

extension JSONReader {
    /// `tree()` writing nodes to a tape instead of building values: the same structure
    /// rules, checks and messages, in the same order.
    mutating func tape(into b: inout TapeBuilder) throws {
        outer: while true {
            guard i < n else { throw unexpected("a JSON value") }
            switch p[i] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = p[i] == UInt8(ascii: "{")
                try checkDepth()
                i &+= 1
                skipWhitespace()
                b.depth = Swift.max(b.depth, frames.count &+ 1)
                let at = try b.push(isObject ? .dict : .array)
                if i < n && p[i] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    i &+= 1
                    b.nodes[at].word = UInt64(b.count)
                } else {
                    try frames.push(Frame(isObject: isObject, matchesShape: false, valueStart: at, keyStart: b.keys.count))
                    if isObject { try tapeKey(&b, afterComma: false) }
                    continue outer
                }
            case 0x22:
                _ = try tapeString(&b)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                switch try number() {
                case .int(let x): _ = try b.push(.int, 0, UInt64(bitPattern: x))
                case .double(let d): _ = try b.push(.double, 0, d.bitPattern)
                default: break  // number() makes integers and doubles only
                }
            case UInt8(ascii: "t"):
                try literal("true")
                _ = try b.push(.true)
            case UInt8(ascii: "f"):
                try literal("false")
                _ = try b.push(.false)
            case UInt8(ascii: "n"):
                try literal("null")
                _ = try b.push(.null)
            default:
                throw unexpected("a JSON value")
            }

            // A value is complete: count it in its container, closing containers as they end.
            while frames.count > 0 {
                let top = frames.base[frames.count &- 1]
                b.nodes[top.valueStart].head &+= 16
                if try nextMember(inObject: top.isObject) {
                    if top.isObject { try tapeKey(&b, afterComma: true) }
                    continue outer
                }
                if top.isObject { try b.closeObject(keysFrom: top.keyStart, text: scratch.base) }
                b.nodes[top.valueStart].word = UInt64(b.count)
                frames.count &-= 1
            }
            return
        }
    }

    /// Reads the string at `i` into a string node: its text appended to `scratch` (as is,
    /// or unescaped there by `scanString`) with a NUL after it. Returns the node.
    @inline(__always)
    mutating func tapeString(_ b: inout TapeBuilder) throws -> Int {
        let start = try scanString()
        if start >= 0 {
            scratch.append(UnsafeBufferPointer(start: p + start, count: i &- start))
            i &+= 1
        }
        let length = scratch.count &- scratchStart
        let at = try b.push(.string, UInt64(length), UInt64(scratchStart))
        if start >= 0 { b.nodes[at].head |= JSONDocument.plainFlag }
        scratch.append(0)
        if scratch.failed { throw AFSError.noMemory("a JSON document's text", bytes: scratch.failedBytes) }
        scratchStart = scratch.count
        return at
    }

    /// `key(afterComma:)` writing the key node.
    @inline(__always)
    mutating func tapeKey(_ b: inout TapeBuilder, afterComma: Bool) throws {
        guard i < n && p[i] == 0x22 else {
            throw unexpected(afterComma ? "a string key after ',' (trailing commas are not allowed)" : "a string key or '}'")
        }
        let start = scratchStart
        try b.keys.push(try tapeString(&b))
        try b.prints.push(TapeBuilder.keyPrint(scratch.base + start, scratchStart &- 1 &- start))
        skipWhitespace()
        guard i < n && p[i] == UInt8(ascii: ":") else { throw unexpected("':' after an object key") }
        i &+= 1
        skipWhitespace()
    }
}

// MARK: - Writing

extension JSONWriter {
    /// Appends the subtree at `node` of a document as JSON: the bytes `write(_:options:to:)`
    /// writes for its tree. Compact output is one pass over the tape (strings copied in
    /// runs, no tree); `prettyPrinted` and `sortedKeys`, and documents with repeated keys,
    /// go through the tree.
    /// - Throws: as `write(_:options:to:)`.
    public static func write(_ doc: JSONDocument, node: Int = 0, options: JSONWritingOptions,
                             to out: inout ByteWriter) throws {
        if doc.hasRepeatedKeys || options.contains(.prettyPrinted) || options.contains(.sortedKeys) {
            try write(try doc.value(at: node), options: options, to: &out)
            return
        }
        if !options.contains(.fragmentsAllowed) && doc.kind(node) != .array && doc.kind(node) != .dict {
            throw AFSError(
                .invalidJSON,
                "\(invalidParametersMessage) (\(doc.kind(node).article) at the top level: only a dictionary or an array is allowed without fragmentsAllowed)")
        }
        let start = out.count
        let escapeSlashes = !options.contains(.withoutEscapingSlashes)
        // The open containers: whether a dictionary, and how many nodes of theirs are left
        // (a dictionary's keys and values both count).
        var open: [(isDict: Bool, done: Int, total: Int)] = []
        open.reserveCapacity(Swift.min(doc.depth, 64))
        let end = doc.next(node)
        var at = node
        while at < end {
            if let top = open.last {
                if top.done > 0 { out.append(top.isDict && top.done & 1 == 1 ? UInt8(ascii: ":") : UInt8(ascii: ",")) }
                open[open.count &- 1].done &+= 1
            }
            switch doc.tag(at) {
            case .null: out.append("null" as StaticString)
            case .false: out.append("false" as StaticString)
            case .true: out.append("true" as StaticString)
            case .int: out.appendDecimal(doc.int(at))
            case .double:
                do { try appendDouble(doc.double(at), to: &out) } catch {
                    out.recover(to: start)
                    throw AFSError(.invalidJSON, "\(invalidParametersMessage) (\(error.what))")
                }
            case .string:
                let text = doc.string(at)
                if doc.isPlain(at) && !(escapeSlashes && text.count > 0 && memchr(text.baseAddress!, 0x2F, text.count) != nil) {
                    // Nothing to escape: the text as is, between quotes.
                    guard out.reserve(text.count &+ 2) else { break }  // out of memory: checked below
                    out.put(0x22)
                    if text.count > 0 { memcpy(out.base + out.count, text.baseAddress!, text.count) }
                    out.count &+= text.count
                    out.put(0x22)
                } else {
                    appendString(utf8: text, escapeSlashes: escapeSlashes, to: &out)
                }
            case .array, .dict:
                let isDict = doc.tag(at) == .dict
                let n = doc.count(at)
                if n == 0 {
                    out.append(isDict ? "{}" as StaticString : "[]" as StaticString)
                } else {
                    out.append(isDict ? UInt8(ascii: "{") : UInt8(ascii: "["))
                    open.append((isDict, 0, isDict ? 2 &* n : n))
                    at &+= 1
                    continue
                }
            }
            at &+= 1
            while let top = open.last, top.done == top.total {
                out.append(top.isDict ? UInt8(ascii: "}") : UInt8(ascii: "]"))
                open.removeLast()
            }
        }
        try out.check("the JSON body", recoveringTo: start)
    }
}
