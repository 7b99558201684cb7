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
        let tree = try QueryTree.parse(text, options: options)
        return try tree.value()
    }

    /// `parse` written straight as the pickle subset of `Pickle`, without building the
    /// tree; it loads as the tree (`PickleWriter`'s pickle of it): a repeated flat name of
    /// a query whose names are all flat (brackets and indexed styles) is written each time
    /// it comes (Python's `dict`, as `ValueDict`, keeps a repeated key at its first
    /// position with the last value), and below the top level repeated short keys and
    /// values go through the pickle memo. In `malloc` memory (free with `free`), with its
    /// length. Throws as `parse`. C: `afs_query_parse_pickle`.
    public static func mallocPickle(_ text: UnsafeBufferPointer<UInt8>, options: QueryParseOptions = QueryParseOptions()) throws -> (UnsafeMutablePointer<UInt8>, Int) {
        try check(options)
        if let flat = try flatPickle(text, options: options) { return flat }
        let tree = try QueryTree.parse(text, options: options)
        var w = PickleWriter(capacity: tree.bytes.count + 4 * tree.entries.count + 64)
        try tree.write(&w)
        return try w.take()
    }

    /// The parameter starting at `i`: where it ends (its `&`, or `n`) and its first `=`
    /// (-1 when it has none). Shared by the flat pickle and the tree.
    @inline(__always)
    static func parameter(_ base: UnsafePointer<UInt8>, _ n: Int, at i: Int) -> (end: Int, eq: Int) {
        var end = i
        var eq = -1
        while end < n {
            let c = base[end]
            if c == UInt8(ascii: "&") { break }
            if c == UInt8(ascii: "=") && eq < 0 { eq = end }
            end += 1
        }
        return (end, eq)
    }

    /// Refuses parameter number `index` (from 0, starting at byte `offset`) beyond max_params.
    @inline(__always)
    static func count(_ index: Int, at offset: Int, _ options: QueryParseOptions) throws {
        if index >= options.maxParams {
            throw AFSError(.limit, "the query has more than \(options.maxParams) parameters (max_params; parameter \(index) starts at byte offset \(offset))")
        }
    }

    static func check(_ options: QueryParseOptions) throws {
        guard options.maxDepth >= 0, options.maxDepth <= QueryParseOptions.depthCeiling else {
            throw AFSError.invalidArgument("max_depth \(options.maxDepth) is above \(QueryParseOptions.depthCeiling)")
        }
        guard options.maxParams > 0, options.maxLength > 0 else {
            throw AFSError.invalidArgument("max_params and max_length must be positive")
        }
    }

    /// The pickle of a query whose names are all flat (brackets and indexed styles),
    /// written as the query is read: each name and value is decoded straight into the
    /// pickle, no tree, no table (a repeated name is written again: see `mallocPickle`).
    /// nil as soon as a name holds `[` (or for no_brackets): the caller then parses the
    /// whole query again into a tree, which meets every error of the part read here at
    /// the same place (decoding, validation and limits come in the same order, and flat
    /// names cannot conflict).
    static func flatPickle(_ text: UnsafeBufferPointer<UInt8>, options: QueryParseOptions) throws -> (UnsafeMutablePointer<UInt8>, Int)? {
        guard options.arrays != .noBrackets else { return nil }
        let n = text.count
        // The text and a 2-byte header for each name and value (each parameter takes 2
        // bytes of text at least; longer headers, of texts of 256 bytes and more, grow it).
        let (room, o) = n.addingReportingOverflow(Swift.min(n / 2 + 1, options.maxParams) &* 4 &+ 64)
        var w = PickleWriter(capacity: o ? n : room)
        w.out.append(Pickle.EMPTY_DICT)
        w.out.append(Pickle.MARK)
        try w.out.check("the pickle of a query of \(n) bytes", recoveringTo: 0)
        let markEnd = w.out.count
        if let base = text.baseAddress, n > 0 {
            var i = 0
            var index = 0
            while i < n {
                let (end, eq) = QueryDecoder.parameter(base, n, at: i)
                defer { i = end + 1 }
                if end == i { continue }  // `&&`
                try QueryDecoder.count(index, at: i, options)
                let nameEnd = eq < 0 ? end : eq
                let nameAt = w.out.count
                if nameEnd - i < 256 && nameEnd - i <= options.maxLength && w.out.reserve(2 + nameEnd - i),
                   let flags = copyPlain(base + i, nameEnd - i, to: w.out.base + nameAt + 2, options) {
                    // Short, no escape, no bad byte: copied, as decode and validate would leave it.
                    if flags & QueryDecoder.hasBracket != 0 { return nil }
                    w.out.base[nameAt] = Pickle.SHORT_BINUNICODE
                    w.out.base[nameAt + 1] = UInt8(nameEnd - i)
                    w.out.count = nameAt + 2 + nameEnd - i
                } else {
                    let nameStart = try openString(&w.out, rawCount: nameEnd - i)
                    try decode(base + i, nameEnd - i, into: &w.out, options: options, what: "the name", index: index, offset: i)
                    if w.out.count == nameStart { w.out.count = nameAt; index += 1; continue }  // `=v`: no name
                    try validate(&w.out, from: nameStart, options: options, what: "the name", index: index)
                    if memchr(w.out.base + nameStart, Int32(UInt8(ascii: "[")), w.out.count - nameStart) != nil { return nil }
                    try closeString(&w.out, header: nameAt, start: nameStart)
                }
                if eq >= 0 {
                    let valueAt = w.out.count
                    let vn = end - eq - 1
                    if vn < 256 && vn <= options.maxLength && w.out.reserve(2 + vn),
                       copyPlain(base + eq + 1, vn, to: w.out.base + valueAt + 2, options) != nil {
                        w.out.base[valueAt] = Pickle.SHORT_BINUNICODE
                        w.out.base[valueAt + 1] = UInt8(vn)
                        w.out.count = valueAt + 2 + vn
                    } else {
                        let valueStart = try openString(&w.out, rawCount: vn)
                        try decode(base + eq + 1, vn, into: &w.out, options: options, what: "the value", index: index, offset: eq + 1)
                        try validate(&w.out, from: valueStart, options: options, what: "the value", index: index)
                        try closeString(&w.out, header: valueAt, start: valueStart)
                    }
                } else {
                    w.out.append(Pickle.NONE)
                }
                index += 1
            }
        }
        if w.out.count == markEnd {
            w.out.count = markEnd - 1  // no member: `EMPTY_DICT` alone
        } else {
            w.out.append(Pickle.SETITEMS)
        }
        return try w.take()
    }

    static let hasBracket = 1

    /// Copies `count` bytes to `out` when they decode to themselves and are ASCII (no `%`,
    /// no `+` that is a space, no byte >= 0x80): then nil is never returned and the result
    /// tells whether a `[` was among them (`hasBracket`). nil: the general path must decode
    /// them (what was copied is to be overwritten). The name `=v` (count 0) is nil too.
    @inline(__always)
    private static func copyPlain(_ p: UnsafePointer<UInt8>, _ count: Int, to out: UnsafeMutablePointer<UInt8>,
                                  _ options: QueryParseOptions) -> Int? {
        if count == 0 { return nil }
        var bracket = false
        let plus = options.plusAsSpace
        for j in 0..<count {
            let c = p[j]
            if c >= 0x80 || c == UInt8(ascii: "%") || (plus && c == UInt8(ascii: "+")) { return nil }
            if c == UInt8(ascii: "[") { bracket = true }
            out[j] = c
        }
        return bracket ? hasBracket : 0
    }

    /// Room for the header of a `str` whose text (decoded from `rawCount` bytes, so at most
    /// as long unless U+FFFD replaces bad bytes) follows; the text's start.
    private static func openString(_ out: inout ByteWriter, rawCount: Int) throws -> Int {
        let h = rawCount < 256 ? 2 : rawCount <= Int(UInt32.max) ? 5 : 9
        guard out.reserve(h) else {
            try out.check("a query parameter of \(rawCount) bytes", recoveringTo: out.count)
            return out.count
        }
        out.count += h
        return out.count
    }

    /// Writes the header of the `str` from `start` to the end at `header`, as
    /// `PickleWriter` does (`SHORT_BINUNICODE`, `BINUNICODE`, `BINUNICODE8` by length),
    /// moving the text when its header is shorter or longer than the room left for it.
    private static func closeString(_ out: inout ByteWriter, header: Int, start: Int) throws {
        let n = out.count - start
        let h = n < 256 ? 2 : n <= Int(UInt32.max) ? 5 : 9
        if header + h != start {
            if header + h > start {
                guard out.reserve(header + h - start) else {
                    try out.check("a query parameter of \(n) bytes", recoveringTo: header)
                    return
                }
            }
            memmove(out.base + header + h, out.base + start, n)
            out.count = header + h + n
        }
        let p = out.base + header
        if h == 2 {
            p[0] = Pickle.SHORT_BINUNICODE
            p[1] = UInt8(n)
        } else {
            p[0] = h == 5 ? Pickle.BINUNICODE : Pickle.BINUNICODE8
            for k in 0..<(h - 1) { p[1 + k] = UInt8(truncatingIfNeeded: n >> (8 * k)) }
        }
    }

    /// `mallocPickle` as a byte array (tests, fuzzing).
    public static func pickle(_ text: UnsafeBufferPointer<UInt8>, options: QueryParseOptions = QueryParseOptions()) throws -> [UInt8] {
        let (p, n) = try mallocPickle(text, options: options)
        defer { free(p) }
        return Array(UnsafeBufferPointer(start: p, count: n))
    }

    /// Percent-decodes `count` bytes at `p` onto the end of `bytes`.
    static func decode(_ p: UnsafePointer<UInt8>, _ count: Int, into bytes: inout ByteWriter, options: QueryParseOptions,
                       what: String, index: Int, offset: Int) throws {
        // Decoded length is at most `count`: refuse early when even the escapes cannot bring it under.
        if count / 3 > options.maxLength {
            throw AFSError(.limit, "\(what) of parameter \(index) is longer than \(options.maxLength) bytes (max_length; at byte offset \(offset))")
        }
        let start = bytes.count
        guard bytes.reserve(count) else {
            try bytes.check("a query parameter of \(count) bytes", recoveringTo: start)
            return
        }
        let escaped = memchr(p, Int32(UInt8(ascii: "%")), count) != nil
            || (options.plusAsSpace && memchr(p, Int32(UInt8(ascii: "+")), count) != nil)
        if !escaped {  // the bytes as they are
            if count > options.maxLength {
                throw AFSError(.limit, "\(what) of parameter \(index) is longer than \(options.maxLength) bytes (max_length; \(count) decoded, at byte offset \(offset))")
            }
            if count > 0 { (bytes.base + start).update(from: p, count: count) }
            bytes.count = start + count
            return
        }
        let out = bytes.base + start
        var o = 0
        var j = 0
        while j < count {
            let c = p[j]
            if c == UInt8(ascii: "%") {
                if j + 2 < count + 0, let h = hexValue(p[j + 1]), let l = hexValue(p[j + 2]) {
                    out[o] = h << 4 | l
                    o += 1
                    j += 3
                    continue
                }
                if !options.keepBadEscapes {
                    throw AFSError.invalidArgument("\(what) of parameter \(index) has a malformed escape at byte offset \(offset + j) (\"%\" needs two hex digits)")
                }
                out[o] = c
            } else if c == UInt8(ascii: "+") && options.plusAsSpace {
                out[o] = UInt8(ascii: " ")
            } else {
                out[o] = c
            }
            o += 1
            j += 1
        }
        if o > options.maxLength {
            throw AFSError(.limit, "\(what) of parameter \(index) is longer than \(options.maxLength) bytes (max_length; \(o) decoded, at byte offset \(offset))")
        }
        bytes.count = start + o
    }

    /// Checks that the bytes from `start` to the end are UTF-8; with `keepBadEscapes` the
    /// bytes that are not become U+FFFD in place.
    static func validate(_ bytes: inout ByteWriter, from start: Int, options: QueryParseOptions, what: String, index: Int) throws {
        let b = UnsafeBufferPointer(start: bytes.base + start, count: bytes.count - start)
        if QueryDecoder.isASCII(b) || String(validating: b, as: UTF8.self) != nil { return }
        if options.keepBadEscapes {
            var s = String(decoding: b, as: UTF8.self)
            bytes.count = start
            try s.withUTF8 { u in
                bytes.append(UnsafeRawBufferPointer(u))
                try bytes.check("a query parameter of \(u.count) bytes", recoveringTo: start)
            }
            return
        }
        var off = 0
        // The first invalid byte, for the message.
        var it = b.makeIterator()
        var dec = UTF8()
        loop: while true {
            switch dec.decode(&it) {
            case .scalarValue(let u): off += UTF8.width(u)
            case .emptyInput, .error: break loop
            }
        }
        throw AFSError(.invalidUTF8, "\(what) of parameter \(index) is not UTF-8 after percent-decoding (at decoded byte \(off))")
    }

    static func describe(_ name: UnsafeBufferPointer<UInt8>) -> String {
        let s = String(decoding: name.prefix(64), as: UTF8.self)
        return name.count > 64 ? "\"\(s)…\"" : "\"\(s)\""
    }

    /// True when every byte is ASCII (then the bytes are UTF-8 without a closer look).
    @inline(__always)
    static func isASCII(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let p = b.baseAddress else { return true }
        let raw = UnsafeRawPointer(p)
        var i = 0
        let n = b.count
        var acc: UInt64 = 0
        while i + 8 <= n {
            acc |= raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < n {
            acc |= UInt64(p[i])
            i += 1
        }
        return acc & 0x8080_8080_8080_8080 == 0
    }

    @inline(__always) static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c &- 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c &- 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c &- 55
        default: return nil
        }
    }
}

/// A dictionary member or an array item of the tree under construction. Dictionary members
/// are also in the tree's hash table, by (parent, key bytes).
struct QueryEntry {
    /// The key: offset and length in `QueryTree.bytes` (dictionary members only).
    var key: Int
    var keyCount: Int
    /// The container holding the entry (an index in `QueryTree.nodes`).
    var parent: Int
    var hash: Int
    /// >= 0: a container (an index in `QueryTree.nodes`); `nullLeaf` or `stringLeaf`.
    var child: Int
    /// A string leaf: offset and length in `QueryTree.bytes`.
    var value: Int
    var valueCount: Int
    /// The next member of the same container, or -1.
    var next: Int

    static let nullLeaf = -1, stringLeaf = -2
}

/// A container under construction: its members are a chain of entries in insertion order.
struct QueryContainer {
    var isArray: Bool
    /// no_brackets: an array made by repeating a plain key.
    var repeated = false
    var first = -1, last = -1, count = 0
}

/// Short texts written lately to a pickle, for its memo: one per slot, the slot picked by
/// an unseeded mix of the bytes (a collision only writes the text again). Python then
/// shares one `str` per repeated key or short value instead of making one each time.
struct QueryTextMemo {
    static let longest = 24
    var start = [Int](repeating: -1, count: 1024)
    var count = [Int](repeating: 0, count: 1024)
    var index = [UInt32](repeating: 0, count: 1024)
}

/// One level of a name: a dictionary key (offset and length in `QueryTree.bytes`), or `[]`.
enum QuerySegment: Equatable {
    case key(Int, Int)
    case append
}

/// A parsed query: every decoded name and value in one byte arena, the tree as flat arrays
/// of containers and entries, and one open-addressing table (hashed by Swift's seeded
/// `Hasher`, so crafted keys cannot collide on purpose) finding a dictionary member by its
/// parent and key bytes. Nothing is allocated per parameter; the result (`value()` or
/// `write(_:)`) is built from it in one walk.
struct QueryTree: ~Copyable {
    let options: QueryParseOptions
    var bytes: ByteWriter
    var nodes: [QueryContainer] = []
    var entries: [QueryEntry] = []
    /// The table: 0 free, else the hash's high 32 bits over the entry index + 1 (a probe
    /// reads an entry only when those bits match); a power of two at most half full,
    /// allocated when first needed.
    var slots: [UInt64] = []
    var used = 0
    /// The size the table starts at (room for every parameter at the top).
    var initialSlots = 16
    /// True while every name so far was flat (brackets and indexed): the top's members are
    /// then only appended, a repeated name included, and not yet in the table. A repeated
    /// flat name's only effect (the last value at the first position) is what a
    /// `ValueDict` and Python's `dict` do with repeated keys, so a query of flat names never
    /// needs the table; the first nested name replays them into it (`indexTop`).
    var topDeferred = true
    /// Dictionary members found or added lately by names with brackets, by `recentSlot`:
    /// consecutive parameters mostly share their first levels (`user[name]`, `user[mail]`),
    /// which are then found without hashing.
    var recent = [Int](repeating: -1, count: 512)
    var segments: [QuerySegment] = []

    /// Parses `text` (see `QueryDecoder.parse`).
    static func parse(_ text: UnsafeBufferPointer<UInt8>, options: QueryParseOptions) throws -> QueryTree {
        try QueryDecoder.check(options)
        // Decoded bytes are at most the input's (more only where U+FFFD replaces kept bad bytes).
        try Memory.probe(text.count, "the decoded names and values of a query of \(text.count) bytes")
        var tree = QueryTree(options: options, capacity: text.count)
        try tree.bytes.check("the decoded names and values of a query of \(text.count) bytes", recoveringTo: 0)
        try tree.build(text)
        return tree
    }

    private init(options: QueryParseOptions, capacity: Int) {
        self.options = options
        bytes = ByteWriter(capacity: capacity)
    }

    private mutating func build(_ text: UnsafeBufferPointer<UInt8>) throws {
        let n = text.count
        try nodes.checkedReserve(16, "the query's containers")
        nodes.append(QueryContainer(isArray: false))
        guard let base = text.baseAddress, n > 0 else { return }
        // Room for every parameter at the top (the common flat query) in one allocation.
        var pieces = 1
        var at = 0
        while let q = memchr(base + at, Int32(UInt8(ascii: "&")), n - at) {
            pieces += 1
            at = UnsafePointer<UInt8>(q.assumingMemoryBound(to: UInt8.self)) - base + 1
        }
        let expected = Swift.min(pieces, options.maxParams)
        try entries.checkedReserve(expected, "\(expected) query parameters")
        while initialSlots < 2 * expected { initialSlots *= 2 }
        topDeferred = options.arrays != .noBrackets

        var i = 0
        var index = 0
        while i < n {
            let (end, eq) = QueryDecoder.parameter(base, n, at: i)
            defer { i = end + 1 }
            if end == i { continue }  // `&&`
            try QueryDecoder.count(index, at: i, options)
            let nameEnd = eq < 0 ? end : eq
            let nameStart = bytes.count
            try decode(base + i, nameEnd - i, what: "the name", index: index, offset: i)
            if bytes.count == nameStart { index += 1; continue }  // `=v`: no name
            try validate(from: nameStart, what: "the name", index: index)
            let nameCount = bytes.count - nameStart
            var leaf = QueryEntry.nullLeaf, valueStart = 0, valueCount = 0
            if eq >= 0 {
                valueStart = bytes.count
                try decode(base + eq + 1, end - eq - 1, what: "the value", index: index, offset: eq + 1)
                try validate(from: valueStart, what: "the value", index: index)
                leaf = QueryEntry.stringLeaf
                valueCount = bytes.count - valueStart
            }
            try add(name: nameStart, nameCount, leaf: leaf, valueStart, valueCount, index: index)
            index += 1
        }
    }

    @inline(__always)
    func buffer(_ start: Int, _ count: Int) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: bytes.base + start, count: count)
    }

    private mutating func decode(_ p: UnsafePointer<UInt8>, _ count: Int, what: String, index: Int, offset: Int) throws {
        try QueryDecoder.decode(p, count, into: &bytes, options: options, what: what, index: index, offset: offset)
    }

    private mutating func validate(from start: Int, what: String, index: Int) throws {
        try QueryDecoder.validate(&bytes, from: start, options: options, what: what, index: index)
    }

    // MARK: Members

    @inline(__always)
    private func hash(_ parent: Int, _ key: Int, _ count: Int) -> Int {
        var h = Hasher()
        h.combine(parent)
        h.combine(bytes: UnsafeRawBufferPointer(start: bytes.base + key, count: count))
        return h.finalize()
    }

    /// The entry of dictionary `parent` with the key at `key`, and the key's hash.
    private func find(_ parent: Int, _ key: Int, _ count: Int) -> (Int, Int) {
        let h = hash(parent, key, count)
        guard !slots.isEmpty else { return (-1, h) }
        let mask = slots.count - 1
        let tag = UInt64(UInt(bitPattern: h) >> 32) << 32
        var s = h & mask
        while true {
            let slot = slots[s]
            if slot == 0 { return (-1, h) }
            if slot & 0xFFFF_FFFF_0000_0000 == tag {
                let e = Int(slot & 0xFFFF_FFFF) - 1
                let m = entries[e]
                if m.hash == h && m.parent == parent && m.keyCount == count
                    && (count == 0 || memcmp(bytes.base + m.key, bytes.base + key, count) == 0) {
                    return (e, h)
                }
            }
            s = (s &+ 1) & mask
        }
    }

    /// Appends an entry to container `parent` (and to the table when it has a key).
    private mutating func append(_ e: QueryEntry) throws {
        let at = entries.count
        guard at < Int(UInt32.max) - 1 else { throw AFSError.noMemory("the members of a query", bytes: Int.max) }
        try entries.checkedAppend(e, "the members of a query")
        var c = nodes[e.parent]
        if c.last >= 0 { entries[c.last].next = at } else { c.first = at }
        c.last = at
        c.count += 1
        nodes[e.parent] = c
        guard !c.isArray, !(topDeferred && e.parent == 0) else { return }
        try index(at)
    }

    /// Puts dictionary member `entry` (its hash set) in the table, growing it first when
    /// it would be more than half full.
    private mutating func index(_ entry: Int) throws {
        try reserveSlots(used + 1, except: entry)
        place(entry, entries[entry].hash)
        used += 1
    }

    /// Makes the table at least twice `n` slots, putting back the members already in it
    /// (all but `except`).
    private mutating func reserveSlots(_ n: Int, except: Int) throws {
        guard n * 2 > slots.count else { return }
        var size = Swift.max(slots.count * 2, initialSlots)
        while size < 2 * n { size *= 2 }
        try Memory.probe(size, of: UInt64.self, "a table of \(size) query keys")
        slots = [UInt64](repeating: 0, count: size)
        for k in 0..<entries.count where k != except && isIndexed(k) { place(k, entries[k].hash) }
    }

    /// Whether entry `k` is in the table (a dictionary member, not a deferred top member).
    private func isIndexed(_ k: Int) -> Bool {
        let p = entries[k].parent
        return !nodes[p].isArray && !(topDeferred && p == 0)
    }

    private mutating func place(_ entry: Int, _ h: Int) {
        let mask = slots.count - 1
        var s = h & mask
        while slots[s] != 0 { s = (s &+ 1) & mask }
        slots[s] = UInt64(UInt(bitPattern: h) >> 32) << 32 | UInt64(entry + 1)
    }

    /// Ends `topDeferred`: replays the top's members in order into the table, a repeated
    /// name giving its value to the first one and leaving the chain (as `setLeaf` would
    /// have done when it came).
    private mutating func indexTop() throws {
        guard topDeferred else { return }
        try reserveSlots(used + nodes[0].count, except: -1)  // (the top is still left out)
        var prev = -1
        var e = nodes[0].first
        topDeferred = false
        while e >= 0 {
            let m = entries[e]
            let (at, h) = find(0, m.key, m.keyCount)
            if at >= 0 {
                entries[at].child = m.child
                entries[at].value = m.value
                entries[at].valueCount = m.valueCount
                entries[prev].next = m.next  // prev >= 0: the first member is never a repeat
                if nodes[0].last == e { nodes[0].last = prev }
                nodes[0].count -= 1
            } else {
                entries[e].hash = h
                place(e, h)
                used += 1
                prev = e
            }
            e = m.next
        }
    }

    /// The slot of `recent` for the key at `key` in dictionary `parent`: an unseeded mix of
    /// the parent, the length and the first and last 8 bytes. A collision only costs a
    /// lookup in the table (`recent` holds one entry per slot, checked by `isMember`).
    @inline(__always)
    private func recentSlot(_ parent: Int, _ key: Int, _ count: Int) -> Int {
        var x = UInt64(truncatingIfNeeded: parent) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(truncatingIfNeeded: count)
        let p = UnsafeRawPointer(bytes.base + key)
        if count >= 8 {
            x ^= p.loadUnaligned(as: UInt64.self)
            x = x &* 0xFF51_AFD7_ED55_8CCD
            x ^= p.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        } else {
            for j in 0..<count { x = x &* 0x100_0000_01B3 ^ UInt64(p.load(fromByteOffset: j, as: UInt8.self)) }
        }
        x = x &* 0xC4CE_B9FE_1A85_EC53
        return Int(truncatingIfNeeded: x >> 55)  // 0..<512
    }

    /// `find` through `recent`: the entry (or -1), the key's hash when the table was asked
    /// (else 0), and the key's `recent` slot.
    @inline(__always)
    private mutating func lookup(_ parent: Int, _ key: Int, _ count: Int) -> (Int, Int, Int) {
        let q = recentSlot(parent, key, count)
        let e = recent[q]
        if e >= 0 && isMember(e, parent, key, count) { return (e, 0, q) }
        let (at, h) = find(parent, key, count)
        if at >= 0 { recent[q] = at }
        return (at, h, q)
    }

    /// Whether entry `e` is the member of dictionary `parent` with the key at `key`.
    @inline(__always)
    private func isMember(_ e: Int, _ parent: Int, _ key: Int, _ count: Int) -> Bool {
        let m = entries[e]
        return m.parent == parent && m.keyCount == count && !nodes[parent].isArray
            && (count == 0 || memcmp(bytes.base + m.key, bytes.base + key, count) == 0)
    }

    private mutating func newContainer(array: Bool) throws -> Int {
        try nodes.checkedAppend(QueryContainer(isArray: array), "the containers of a query")
        return nodes.count - 1
    }

    private mutating func addKey(_ parent: Int, _ key: Int, _ count: Int, _ h: Int, child: Int, _ value: Int, _ valueCount: Int) throws {
        try append(QueryEntry(key: key, keyCount: count, parent: parent, hash: h, child: child, value: value, valueCount: valueCount, next: -1))
    }

    private mutating func addItem(_ parent: Int, child: Int, _ value: Int, _ valueCount: Int) throws {
        try append(QueryEntry(key: 0, keyCount: 0, parent: parent, hash: 0, child: child, value: value, valueCount: valueCount, next: -1))
    }

    /// Splits the name into `segments` (see the file comment).
    private mutating func split(_ name: Int, _ n: Int, index: Int) throws {
        segments.removeAll(keepingCapacity: true)
        let p = bytes.base + name
        // The parent: up to the first complete bracket group.
        var first = -1
        var i = 0
        var open = -1
        while i < n {
            let c = p[i]
            if c == UInt8(ascii: "[") { open = i } else if c == UInt8(ascii: "]") && open >= 0 { first = open; break }
            i += 1
        }
        if first <= 0 {  // no group, or the name starts with one: one literal key
            segments.append(.key(name, n))
            return
        }
        segments.append(.key(name, first))
        i = first
        var depth = 0
        while i < n && p[i] == UInt8(ascii: "[") {
            var j = i + 1
            while j < n && p[j] != UInt8(ascii: "]") && p[j] != UInt8(ascii: "[") { j += 1 }
            guard j < n && p[j] == UInt8(ascii: "]") else { break }
            if depth == options.maxDepth {
                if options.refuseDeep {
                    throw AFSError(.limit, "parameter \(index) (\(QueryDecoder.describe(buffer(name, n)))) nests deeper than \(options.maxDepth) levels (max_depth)")
                }
                break
            }
            segments.append(j == i + 1 ? .append : .key(name + i + 1, j - i - 1))
            depth += 1
            i = j + 1
        }
        if i < n { segments.append(.key(name + i, n - i)) }
    }

    private func conflict(_ name: Int, _ n: Int, _ index: Int, _ why: String) -> AFSError {
        AFSError.invalidArgument("parameter \(index) (\(QueryDecoder.describe(buffer(name, n)))) conflicts with an earlier one: \(why)")
    }

    /// True when the segments from `from` on already lead to something under `node`
    /// (Rails' rule for starting a new dictionary in an array).
    private mutating func exists(from: Int, in node: Int) -> Bool {
        var cur = node
        var left = segments.count - from
        for s in segments[from...] {
            left -= 1
            guard case .key(let k, let kn) = s, !nodes[cur].isArray else { return false }
            let (e, _, _) = lookup(cur, k, kn)
            guard e >= 0 else { return false }
            let c = entries[e].child
            if c >= 0 { cur = c } else { return left == 0 }
        }
        return true
    }

    private func describe(child c: Int) -> String {
        c < 0 ? "a value" : nodes[c].isArray ? "an array" : "a dictionary"
    }

    /// A repeated key's last segment: no_brackets makes an array, the others keep the last value.
    private mutating func setLeaf(_ at: Int, _ leaf: Int, _ value: Int, _ valueCount: Int,
                                  _ k: Int, _ kn: Int, _ name: Int, _ nameCount: Int, _ index: Int) throws {
        let existing = entries[at]
        let noBrackets = options.arrays == .noBrackets
        if existing.child < 0 {
            if noBrackets {
                let a = try newContainer(array: true)
                nodes[a].repeated = true
                try addItem(a, child: existing.child, existing.value, existing.valueCount)
                try addItem(a, child: leaf, value, valueCount)
                entries[at].child = a
            } else {  // a repeated plain key keeps the last value
                entries[at].child = leaf
                entries[at].value = value
                entries[at].valueCount = valueCount
            }
        } else if noBrackets && nodes[existing.child].isArray && nodes[existing.child].repeated {
            try addItem(existing.child, child: leaf, value, valueCount)
        } else {
            throw conflict(name, nameCount, index, "\(QueryDecoder.describe(buffer(k, kn))) is already a container")
        }
    }

    private mutating func add(name: Int, _ nameCount: Int, leaf: Int, _ value: Int, _ valueCount: Int, index: Int) throws {
        // A flat name (the common case): one level, no split.
        if memchr(bytes.base + name, Int32(UInt8(ascii: "[")), nameCount) == nil {
            if topDeferred {
                try addKey(0, name, nameCount, 0, child: leaf, value, valueCount)
                return
            }
            let (at, h) = find(0, name, nameCount)
            if at >= 0 {
                try setLeaf(at, leaf, value, valueCount, name, nameCount, name, nameCount, index)
            } else {
                try addKey(0, name, nameCount, h, child: leaf, value, valueCount)
            }
            return
        }
        try indexTop()
        try split(name, nameCount, index: index)
        var cur = 0
        let last = segments.count - 1
        for si in 0...last {
            let isLast = si == last
            let wantArray = !isLast && segments[si + 1] == .append
            switch segments[si] {
            case .key(let k, let kn):
                guard !nodes[cur].isArray else {
                    throw conflict(name, nameCount, index, "an array cannot take the key \(QueryDecoder.describe(buffer(k, kn)))")
                }
                let (at, h, q) = lookup(cur, k, kn)
                guard at >= 0 else {
                    recent[q] = entries.count
                    if isLast {
                        try addKey(cur, k, kn, h, child: leaf, value, valueCount)
                        return
                    }
                    let c = try newContainer(array: wantArray)
                    try addKey(cur, k, kn, h, child: c, 0, 0)
                    cur = c
                    continue
                }
                if isLast {
                    try setLeaf(at, leaf, value, valueCount, k, kn, name, nameCount, index)
                    return
                }
                let e = entries[at].child
                guard e >= 0, nodes[e].isArray == wantArray else {
                    throw conflict(name, nameCount, index, "\(QueryDecoder.describe(buffer(k, kn))) is already \(describe(child: e))")
                }
                cur = e
            case .append:
                guard nodes[cur].isArray, !nodes[cur].repeated else {
                    throw conflict(name, nameCount, index, "`[]` on a name that is not an array")
                }
                if isLast {
                    try addItem(cur, child: leaf, value, valueCount)
                    return
                }
                let lastItem = nodes[cur].last
                if lastItem >= 0, case let tail = entries[lastItem].child, tail >= 0, nodes[tail].isArray == wantArray,
                   wantArray || !exists(from: si + 1, in: tail) {
                    cur = tail
                } else {
                    let c = try newContainer(array: wantArray)
                    try addItem(cur, child: c, 0, 0)
                    cur = c
                }
            }
        }
    }

    // MARK: Results

    /// The tree as a `Value`.
    func value() throws -> Value {
        try value(of: 0)
    }

    private func leaf(_ e: QueryEntry) throws -> Value {
        if e.child >= 0 { return try value(of: e.child) }
        if e.child == QueryEntry.nullLeaf { return .null }
        return .string(String(decoding: buffer(e.value, e.valueCount), as: UTF8.self))
    }

    private func value(of node: Int) throws -> Value {
        let c = nodes[node]
        var e = c.first
        if c.isArray {
            var a: [Value] = []
            try a.checkedReserve(c.count, "an array of \(c.count) parameters")
            while e >= 0 {
                a.append(try leaf(entries[e]))
                e = entries[e].next
            }
            return .array(a)
        }
        if options.arrays == .indexed, let order = try indexOrder(node) {
            var a: [Value] = []
            try a.checkedReserve(order.count, "an array of \(order.count) parameters")
            for i in order { a.append(try leaf(entries[i])) }
            return .array(a)
        }
        // One hash per key; a repeated name at the top (`topDeferred`) keeps its first
        // position and takes the last value, as `ValueDict` does.
        return .dict(try ValueDict(count: c.count) { _ in
            let m = entries[e]
            e = m.next
            return (String(decoding: buffer(m.key, m.keyCount), as: UTF8.self), try leaf(m))
        })
    }

    /// indexed: the members' entries in index order when the keys are exactly "0" … "n-1"
    /// (no leading zeros).
    private func indexOrder(_ node: Int) throws -> [Int]? {
        let c = nodes[node]
        let n = c.count
        guard n > 0, node != 0 else { return nil }
        var slots: [Int] = []
        try slots.checkedReserve(n, "an array of \(n) parameters")
        slots.append(contentsOf: repeatElement(-1, count: n))
        var e = c.first
        while e >= 0 {
            let m = entries[e]
            let k = buffer(m.key, m.keyCount)
            guard !k.isEmpty, k.count <= 19, k[0] != UInt8(ascii: "0") || k.count == 1 else { return nil }
            var v = 0
            for ch in k {
                guard ch >= UInt8(ascii: "0"), ch <= UInt8(ascii: "9") else { return nil }
                v = v * 10 + Int(ch - 48)
            }
            guard v < n, slots[v] < 0 else { return nil }
            slots[v] = e
            e = m.next
        }
        return slots
    }

    /// Writes the tree so that it loads as `value()`: a dictionary `EMPTY_DICT`, an array
    /// `EMPTY_LIST`, then (when not empty) `MARK`, the members, `SETITEMS`/`APPENDS` (the
    /// top's repeated names too while `topDeferred`); below the top, keys and values of up
    /// to 24 bytes written lately are `MEMOIZE`d and referred to (`BINGET`).
    /// Out of memory is reported by the writer's `take()`.
    func write(_ w: inout PickleWriter) throws {
        var memo = QueryTextMemo()
        try write(&w, &memo, node: 0)
    }

    private func write(_ w: inout PickleWriter, _ memo: inout QueryTextMemo, leaf e: QueryEntry, shared: Bool) throws {
        if e.child >= 0 {
            try write(&w, &memo, node: e.child)
        } else if e.child == QueryEntry.nullLeaf {
            w.out.append(Pickle.NONE)
        } else if shared {
            text(&w, &memo, e.value, e.valueCount)
        } else {
            w.stringBytes(buffer(e.value, e.valueCount))
        }
    }

    private func write(_ w: inout PickleWriter, _ memo: inout QueryTextMemo, node: Int) throws {
        let c = nodes[node]
        let order = c.isArray || options.arrays != .indexed ? nil : try indexOrder(node)
        w.out.append(c.isArray || order != nil ? Pickle.EMPTY_LIST : Pickle.EMPTY_DICT)
        if c.count == 0 { return }
        w.out.append(Pickle.MARK)
        // Below the top, keys and short values repeat (`users[0][name]`, `users[1][name]`):
        // they go through the memo.
        let shared = node != 0
        if let order {
            for i in order { try write(&w, &memo, leaf: entries[i], shared: shared) }
            w.out.append(Pickle.APPENDS)
            return
        }
        var e = c.first
        while e >= 0 {
            let m = entries[e]
            if !c.isArray {
                if shared { text(&w, &memo, m.key, m.keyCount) } else { w.stringBytes(buffer(m.key, m.keyCount)) }
            }
            try write(&w, &memo, leaf: m, shared: shared)
            e = m.next
        }
        w.out.append(c.isArray ? Pickle.APPENDS : Pickle.SETITEMS)
    }

    /// A `str` of the text at `start`: a `BINGET` of the same text written lately (see
    /// `QueryTextMemo`), else the text, memoized when it is short.
    private func text(_ w: inout PickleWriter, _ memo: inout QueryTextMemo, _ start: Int, _ n: Int) {
        guard n <= QueryTextMemo.longest else {
            w.stringBytes(buffer(start, n))
            return
        }
        let p = UnsafeRawPointer(bytes.base + start)
        var x = UInt64(truncatingIfNeeded: n) &* 0x9E37_79B9_7F4A_7C15
        if n >= 8 {
            x ^= p.loadUnaligned(as: UInt64.self)
            x = x &* 0xFF51_AFD7_ED55_8CCD
            x ^= p.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
        } else {
            for j in 0..<n { x = x &* 0x100_0000_01B3 ^ UInt64(p.load(fromByteOffset: j, as: UInt8.self)) }
        }
        let q = Int(truncatingIfNeeded: (x &* 0xC4CE_B9FE_1A85_EC53) >> 54)  // 0..<1024
        let s = memo.start[q]
        if s >= 0 && memo.count[q] == n && (n == 0 || memcmp(bytes.base + s, p, n) == 0) {
            w.memoGet(memo.index[q])
            return
        }
        w.stringBytes(buffer(start, n))
        if let i = w.memoize() {
            memo.start[q] = start
            memo.count[q] = n
            memo.index[q] = i
        }
    }
}
