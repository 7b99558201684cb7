/// Reads a property list, XML or binary, into a `Value` tree: the decoding step of
/// AFPropertyListResponseSerializer.
///
/// The format is detected from the bytes: `bplist00` is binary, anything else is XML.
/// What each plist type becomes:
///
/// | plist | Value |
/// | --- | --- |
/// | dict, array | `.dict` (file order; a repeated key keeps its first position and last value), `.array` |
/// | string, key | `.string` |
/// | integer | `.int` when it fits in Int64, else `.double` (plistlib writes 2^63…2^64−1 as 16-byte binary integers and as decimal XML) |
/// | real | `.double` (`nan`, `inf`, `+infinity`, `-infinity`, … in XML) |
/// | true, false | `.bool` |
/// | data | `.data` |
/// | date | `.date` (seconds since 1970): XML `YYYY-MM-DDTHH:MM:SSZ` (plistlib's shorter forms `YYYY[-MM[-DD[THH[:MM]]]]Z` and a `.fff` fraction read too; whitespace trimmed), binary type 0x33 within the years 1 to 9999 |
/// | UID (binary, NSKeyedArchiver) | `.dict(["CF$UID": .int(n)])`: the form CoreFoundation writes for a UID in XML, so a keyed archive reads the same in both formats |
/// | set (binary type 0xC, CoreFoundation only) | `.set` |
/// | null (binary 0x00, plistlib only) | `.null` |
///
/// XML: UTF-8 (a byte-order mark is skipped; a declared encoding other than UTF-8 or
/// ASCII is an error) and UTF-16 (LE or BE, with a byte-order mark or starting `<?`;
/// read as its UTF-8 transcoding; offsets in messages are mapped back to the UTF-16 input), with the XML declaration, DOCTYPE, comments,
/// processing instructions, the five named entities, `&#N;`/`&#xN;` references to any
/// Unicode scalar, and CDATA sections (entities declared in a DOCTYPE are not expanded: a
/// reference to one is an error, so there is no entity expansion to bomb). The root is `<plist>` holding one value, or a bare
/// value element. Whitespace around `<integer>`, `<real>`, `<date>` and `<data>` content
/// is ignored; integers may be decimal or `0x` hex, with a sign. Line ends in text are kept
/// as they are, CR included, as CoreFoundation reads them: XML 1.0 would turn CR LF and a
/// lone CR into LF (plistlib does), but CoreFoundation writes a CR in a string raw, so
/// normalising would change its data, and plistlib never writes a raw CR. Anything else
/// is an error.
///
/// Binary: every trailer field, offset, count and reference is checked before it is used.
/// Objects may be shared (each offset is decoded once), but decoding may not read more
/// bytes than the object area holds (only overlapping objects could make it), so work and
/// memory stay proportional to the file. A reference cycle is an error, and so is a file
/// whose tree, with shared objects counted at every place they are referenced, would hold
/// more than the decoding budget allows (`DecodeBudget`: by default 64 × the file size +
/// 1 MiB, with every value counted as 32 bytes plus its text or data; a "billion laughs"
/// guard: the decoded `Value` shares storage, but code walking or converting it would not).
///
/// Nesting deeper than `maxDepth` containers is an error in both formats. Both parsers
/// keep their own stack, so no input can overflow the thread's stack while parsing; a very
/// large `maxDepth` still lets through trees that recursive code (including releasing a
/// `Value`) may not survive, which is why the default is 512.
public enum PropertyListReader {
    /// The default limit on container nesting.
    public static let defaultMaxDepth = 512

    /// Parses a property list.
    /// - Parameters:
    ///   - bytes: the whole document.
    ///   - maxDepth: the deepest container nesting accepted (the top-level container is
    ///     depth 1; 0 accepts only a scalar).
    /// - Returns: the tree.
    /// - Throws: `AFSError` `.invalidPlist` with a message that ends "at byte offset N", for
    ///   empty input, malformed XML or binary structure, values out of range, and nesting
    ///   deeper than `maxDepth`. C: `afs_response_serialize` with a plist response serializer.
    ///   - maxDecodedBytes: a `DecodeBudget` limit lower than the default (0: the default,
    ///     64 × the size + 1 MiB).
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = defaultMaxDepth,
                             maxDecodedBytes: Int = 0) throws -> Value {
        guard let p = bytes.baseAddress, bytes.count > 0 else {
            throw AFSError(.invalidPlist, "empty property list at byte offset 0")
        }
        let n = bytes.count
        let budget = DecodeBudget(limit: DecodeBudget.limit(bodySize: n, max: maxDecodedBytes))
        if n >= 6, p[0] == 0x62, p[1] == 0x70, p[2] == 0x6C, p[3] == 0x69, p[4] == 0x73, p[5] == 0x74 {  // "bplist"
            var r = BinaryPlistReader(p: p, n: n, maxDepth: maxDepth)
            r.budget = budget
            return try r.read()
        }
        if let bigEndian = utf16Order(p, n) {
            // UTF-16 (a byte-order mark, or `<?` as UTF-16 code units): read as its UTF-8
            // transcoding; offsets in messages are mapped back to the input.
            let utf8 = try transcodeUTF16(p, n, bigEndian: bigEndian)
            return try utf8.withUnsafeBufferPointer { b in
                guard let q = b.baseAddress, b.count > 0 else {
                    throw AFSError(.invalidPlist, "empty property list (UTF-16 byte order mark only) at byte offset 0")
                }
                var r = XMLPlistReader(p: q, n: b.count, maxDepth: maxDepth)
                r.budget = budget
                r.fromUTF16 = true
                do {
                    return try r.read()
                } catch var e as AFSError {
                    // offsets in the transcoding become offsets in the UTF-16 input
                    e.message = mappingOffsets(in: e.message) { utf16Offset(ofUTF8Offset: $0, p, n, bigEndian: bigEndian) }
                    throw e
                }
            }
        }
        var r = XMLPlistReader(p: p, n: n, maxDepth: maxDepth)
        r.budget = budget
        return try r.read()
    }

    /// The offset in UTF-16 input of the character whose UTF-8 transcoding starts at (or
    /// holds) `target` (the input end when it is past the text).
    static func utf16Offset(ofUTF8Offset target: Int, _ p: UnsafePointer<UInt8>, _ n: Int, bigEndian: Bool) -> Int {
        var i = (p[0] == 0xFE && p[1] == 0xFF) || (p[0] == 0xFF && p[1] == 0xFE) ? 2 : 0
        var o = 0
        func unit(_ k: Int) -> UInt32 { bigEndian ? UInt32(p[k]) << 8 | UInt32(p[k + 1]) : UInt32(p[k + 1]) << 8 | UInt32(p[k]) }
        while i + 1 < n {
            let c = unit(i)
            let (len, units) = c < 0x80 ? (1, 1) : c < 0x800 ? (2, 1) : (c >= 0xD800 && c < 0xDC00) ? (4, 2) : (3, 1)
            if o + len > target { return i }
            o += len
            i += 2 * units
        }
        return Swift.min(i, n)
    }

    /// Whether the text is UTF-16: true big-endian, false little-endian, nil not UTF-16.
    static func utf16Order(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool? {
        guard n >= 2 else { return nil }
        if p[0] == 0xFE && p[1] == 0xFF { return true }
        if p[0] == 0xFF && p[1] == 0xFE { return false }
        if n >= 4 && p[0] == 0x00 && p[1] == 0x3C && p[2] == 0x00 && p[3] == 0x3F { return true }
        if n >= 4 && p[0] == 0x3C && p[1] == 0x00 && p[2] == 0x3F && p[3] == 0x00 { return false }
        return nil
    }

    /// UTF-16 text (a leading byte-order mark dropped) as UTF-8.
    /// - Throws: `.invalidPlist` for an odd byte count or an unpaired surrogate (offset in
    ///   the input); `.noMemory`.
    static func transcodeUTF16(_ p: UnsafePointer<UInt8>, _ n: Int, bigEndian: Bool) throws -> [UInt8] {
        guard n % 2 == 0 else {
            throw AFSError(.invalidPlist, "XML property list: UTF-16 text of an odd number of bytes (\(n)) at byte offset \(n - 1)")
        }
        var i = (p[0] == 0xFE && p[1] == 0xFF) || (p[0] == 0xFF && p[1] == 0xFE) ? 2 : 0
        let (cap, over) = (n / 2).multipliedReportingOverflow(by: 3)
        try Memory.probe(over ? Int.max : cap, "the UTF-8 transcoding of a \(n)-byte UTF-16 property list")
        var out: [UInt8] = []
        out.reserveCapacity(cap)
        func unit(_ k: Int) -> UInt32 { bigEndian ? UInt32(p[k]) << 8 | UInt32(p[k + 1]) : UInt32(p[k + 1]) << 8 | UInt32(p[k]) }
        while i < n {
            var c = unit(i)
            let at = i
            i += 2
            if c >= 0xD800 && c < 0xDC00 {
                guard i < n else { throw AFSError(.invalidPlist, "XML property list: a UTF-16 high surrogate at the end of the text at byte offset \(at)") }
                let d = unit(i)
                guard d >= 0xDC00 && d < 0xE000 else {
                    throw AFSError(.invalidPlist, "XML property list: an unpaired UTF-16 high surrogate at byte offset \(at)")
                }
                i += 2
                c = 0x10000 + ((c - 0xD800) << 10) + (d - 0xDC00)
            } else if c >= 0xDC00 && c < 0xE000 {
                throw AFSError(.invalidPlist, "XML property list: an unpaired UTF-16 low surrogate at byte offset \(at)")
            }
            if c < 0x80 {
                out.append(UInt8(c))
            } else if c < 0x800 {
                out.append(UInt8(0xC0 | c >> 6)); out.append(UInt8(0x80 | c & 0x3F))
            } else if c < 0x10000 {
                out.append(UInt8(0xE0 | c >> 12)); out.append(UInt8(0x80 | c >> 6 & 0x3F)); out.append(UInt8(0x80 | c & 0x3F))
            } else {
                out.append(UInt8(0xF0 | c >> 18)); out.append(UInt8(0x80 | c >> 12 & 0x3F))
                out.append(UInt8(0x80 | c >> 6 & 0x3F)); out.append(UInt8(0x80 | c & 0x3F))
            }
        }
        return out
    }

    /// Parses a property list (see `parse(_:maxDepth:)` on a buffer).
    /// - Throws: `AFSError` `.invalidPlist`.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth, maxDecodedBytes: Int = 0) throws -> Value {
        try bytes.withUnsafeBufferPointer { try parse($0, maxDepth: maxDepth, maxDecodedBytes: maxDecodedBytes) }
    }
}

// MARK: - Binary

private struct BinaryPlistReader {
    let p: UnsafePointer<UInt8>
    let n: Int
    let maxDepth: Int

    var offsetSize = 0
    var refSize = 0
    var objectCount = 0
    var topObject = 0
    /// Where the offset table starts; objects live in `8..<tableOffset`.
    var tableOffset = 0
    var offsets: [Int] = []
    /// When two objects share an offset: the first object number with each one's offset.
    var alias: [Int]? = nil
    /// Object-area bytes not yet decoded; objects that overlap would drive it below zero.
    var areaLeft = 0
    /// The decoded tree's limit (sizes below are charged against it).
    var budget = DecodeBudget.unlimited

    enum ContainerKind { case array, set, dict }

    /// An object as found in the file: a finished scalar, or a container still to fill.
    enum Object {
        case scalar(Value)
        case container(ContainerKind, refsAt: Int, count: Int)
    }

    struct Frame {
        let object: Int
        let kind: ContainerKind
        let refsAt: Int
        let count: Int
        var next = 0
        var items: [Value] = []
        var keys: [String] = []
        var size = 1
    }

    init(p: UnsafePointer<UInt8>, n: Int, maxDepth: Int) {
        self.p = p
        self.n = n
        self.maxDepth = maxDepth
    }

    func fail(_ what: String, _ offset: Int) -> AFSError {
        AFSError(.invalidPlist, "binary property list: \(what) at byte offset \(offset)")
    }

    /// A big-endian unsigned integer of `size` (1...8) bytes; bounds already checked.
    @inline(__always)
    func uint(_ at: Int, _ size: Int) -> UInt64 {
        var v: UInt64 = 0
        for k in 0..<size { v = v << 8 | UInt64(p[at + k]) }
        return v
    }

    mutating func readTrailer() throws {
        if n < 8 || p[6] != UInt8(ascii: "0") || p[7] != UInt8(ascii: "0") {
            let version = n >= 8 ? printable(p + 6, 2) : "(truncated)"
            throw fail("unsupported version \(version) (only bplist00 is read)", 6)
        }
        // Smallest possible file: header, one 1-byte object, one 1-byte offset, trailer.
        guard n >= 8 + 1 + 1 + 32 else {
            throw fail("\(n) bytes are too few for a header, an object, an offset table and a trailer", n)
        }
        let t = n - 32
        offsetSize = Int(p[t + 6])
        refSize = Int(p[t + 7])
        guard (1...8).contains(offsetSize) else { throw fail("offset size \(offsetSize) in the trailer (must be 1 to 8)", t + 6) }
        guard (1...8).contains(refSize) else { throw fail("object reference size \(refSize) in the trailer (must be 1 to 8)", t + 7) }
        let count = uint(t + 8, 8), top = uint(t + 16, 8), table = uint(t + 24, 8)
        guard table >= 9, table <= UInt64(t) else {
            throw fail("offset table position \(table) outside the file (objects span bytes 8 to \(t))", t + 24)
        }
        tableOffset = Int(table)
        guard count >= 1, count <= UInt64((t - tableOffset) / offsetSize) else {
            throw fail("\(count) objects do not fit in the offset table of \(t - tableOffset) bytes", t + 8)
        }
        objectCount = Int(count)
        guard top < count else { throw fail("top object \(top) does not exist (\(count) objects)", t + 16) }
        topObject = Int(top)
        offsets = [Int](repeating: 0, count: objectCount)
        var increasing = true
        for i in 0..<objectCount {
            let at = tableOffset + i * offsetSize
            let o = uint(at, offsetSize)
            guard o >= 8, o < table else {
                throw fail("object \(i) has offset \(o), outside the objects (8 to \(tableOffset - 1))", at)
            }
            offsets[i] = Int(o)
            if i > 0 && offsets[i] <= offsets[i - 1] { increasing = false }
        }
        if !increasing {  // writers lay objects out in order; only then can offsets repeat
            var first: [Int: Int] = [:]
            alias = (0..<objectCount).map { i in
                if let f = first[offsets[i]] { return f }
                first[offsets[i]] = i
                return i
            }
            topObject = alias![topObject]
        }
        areaLeft = tableOffset - 8
    }

    /// Checks that `length` bytes from `start` lie inside the object area.
    @inline(__always)
    func need(_ start: Int, _ length: Int, object: Int) throws {
        guard start <= tableOffset, length <= tableOffset - start else {
            throw fail("object \(object) runs past the end of the objects", offsets[object])
        }
    }

    /// A count: the marker's low nibble, or after `0xF` an integer object of 1, 2, 4 or 8
    /// bytes. Returns the count and where the object's payload starts.
    func count(_ off: Int, _ low: Int, object: Int) throws -> (Int, Int) {
        if low != 0x0F { return (low, off + 1) }
        try need(off + 1, 1, object: object)
        let m = p[off + 1]
        guard m >> 4 == 0x1, m & 0x0F <= 3 else {
            throw fail("object \(object) has a count marker \(hexByte(m)), not an integer of 1 to 8 bytes", off + 1)
        }
        let size = 1 << Int(m & 0x0F)
        try need(off + 2, size, object: object)
        let v = uint(off + 2, size)
        guard v <= UInt64(Int.max) else { throw fail("object \(object) has a count of \(v)", off + 2) }
        return (Int(v), off + 2 + size)
    }

    /// `count × unit` bytes from `start`, checked without overflow.
    func needArray(_ start: Int, _ count: Int, _ unit: Int, object: Int) throws {
        let (bytes, overflow) = count.multipliedReportingOverflow(by: unit)
        guard !overflow else { throw fail("object \(object) has a count of \(count)", offsets[object]) }
        try need(start, bytes, object: object)
    }

    /// Decodes object `obj` (a scalar whole, a container's header) and charges the bytes it
    /// spans to `budget`.
    mutating func object(_ obj: Int) throws -> Object {
        let (o, end) = try decode(obj)
        areaLeft -= end - offsets[obj]
        guard areaLeft >= 0 else {
            throw fail("objects overlap: decoding them needs more than the \(tableOffset - 8) bytes they occupy", offsets[obj])
        }
        return o
    }

    /// Object `obj` and the offset just past it.
    func decode(_ obj: Int) throws -> (Object, Int) {
        let off = offsets[obj]
        let m = p[off]
        let low = Int(m & 0x0F)
        switch m >> 4 {
        case 0x0:
            switch m {
            case 0x00: return (.scalar(.null), off + 1)
            case 0x08: return (.scalar(.bool(false)), off + 1)
            case 0x09: return (.scalar(.bool(true)), off + 1)
            default: throw fail("object \(obj) has the unknown type \(hexByte(m))", off)
            }
        case 0x1:
            guard low <= 4 else { throw fail("object \(obj) is an integer of \(1 << low) bytes", off) }
            let size = 1 << low
            try need(off + 1, size, object: obj)
            let v: Value
            switch size {
            case 1, 2, 4: v = .int(Int64(uint(off + 1, size)))
            case 8: v = .int(Int64(bitPattern: uint(off + 1, 8)))
            default:
                // A signed 128-bit integer; plistlib writes 2^63...2^64-1 this way.
                let hi = Int64(bitPattern: uint(off + 1, 8)), lo = uint(off + 9, 8)
                if hi == 0 && lo <= UInt64(Int64.max) {
                    v = .int(Int64(lo))
                } else if hi == -1 && lo > UInt64(Int64.max) {
                    v = .int(Int64(bitPattern: lo))
                } else {
                    v = .double(Double(hi) * 18446744073709551616.0 + Double(lo))
                }
            }
            return (.scalar(v), off + 1 + size)
        case 0x2:
            if low == 2 {
                try need(off + 1, 4, object: obj)
                return (.scalar(.double(Double(Float(bitPattern: UInt32(uint(off + 1, 4)))))), off + 5)
            }
            guard low == 3 else { throw fail("object \(obj) is a real of \(1 << low) bytes", off) }
            try need(off + 1, 8, object: obj)
            return (.scalar(.double(Double(bitPattern: uint(off + 1, 8)))), off + 9)
        case 0x3:
            guard m == 0x33 else { throw fail("object \(obj) has the unknown type \(hexByte(m))", off) }
            try need(off + 1, 8, object: obj)
            let seconds = Double(bitPattern: uint(off + 1, 8))
            guard isoDate(seconds) != nil else {
                throw fail("object \(obj) is a date (\(seconds) s after 2001) outside the years 1 to 9999", off)
            }
            return (.scalar(.date(seconds + DateText.epoch2001)), off + 9)
        case 0x4:
            let (c, start) = try count(off, low, object: obj)
            try need(start, c, object: obj)
            return (.scalar(.data(Array(UnsafeBufferPointer(start: p + start, count: c)))), start + c)
        case 0x5:
            let (c, start) = try count(off, low, object: obj)
            try need(start, c, object: obj)
            for k in start..<(start + c) where p[k] >= 0x80 {
                throw fail("object \(obj) is an ASCII string holding the byte \(hexByte(p[k]))", k)
            }
            return (.scalar(.string(String(decoding: UnsafeBufferPointer(start: p + start, count: c), as: UTF8.self))), start + c)
        case 0x6:
            let (c, start) = try count(off, low, object: obj)
            try needArray(start, c, 2, object: obj)
            return (.scalar(.string(try utf16String(start, c, object: obj))), start + 2 * c)
        case 0x8:
            let size = low + 1
            guard size <= 8 else { throw fail("object \(obj) is a UID of \(size) bytes", off) }
            try need(off + 1, size, object: obj)
            let v = uint(off + 1, size)
            guard v <= UInt64(Int64.max) else { throw fail("object \(obj) is the UID \(v), beyond Int64", off) }
            return (.scalar(.dict(ValueDict([("CF$UID", .int(Int64(v)))]))), off + 1 + size)
        case 0xA, 0xC, 0xD:
            let (c, start) = try count(off, low, object: obj)
            let kind: ContainerKind = m >> 4 == 0xA ? .array : m >> 4 == 0xC ? .set : .dict
            let unit = kind == .dict ? 2 * refSize : refSize
            try needArray(start, c, unit, object: obj)
            return (.container(kind, refsAt: start, count: c), start + c * unit)
        default:
            throw fail("object \(obj) has the unknown type \(hexByte(m))", off)
        }
    }

    /// Decodes `count` UTF-16BE units; an unpaired surrogate is an error.
    func utf16String(_ start: Int, _ count: Int, object: Int) throws -> String {
        var out = ByteWriter(capacity: count * 3)
        var k = 0
        while k < count {
            let at = start + 2 * k
            var scalar = UInt32(p[at]) << 8 | UInt32(p[at + 1])
            k += 1
            if scalar & 0xFC00 == 0xD800 {
                guard k < count else { throw fail("object \(object) ends in an unpaired surrogate", at) }
                let lo = UInt32(p[at + 2]) << 8 | UInt32(p[at + 3])
                guard lo & 0xFC00 == 0xDC00 else { throw fail("object \(object) has an unpaired surrogate", at) }
                scalar = 0x10000 + ((scalar & 0x3FF) << 10 | (lo & 0x3FF))
                k += 1
            } else if scalar & 0xFC00 == 0xDC00 {
                throw fail("object \(object) has an unpaired surrogate", at)
            }
            appendUTF8(scalar, to: &out)
        }
        return try out.toString()
    }

    func reference(_ at: Int) throws -> Int {
        let r = uint(at, refSize)
        guard r < UInt64(objectCount) else { throw fail("reference to object \(r) (there are \(objectCount))", at) }
        return alias?[Int(r)] ?? Int(r)
    }

    mutating func read() throws -> Value {
        try readTrailer()
        let limit = budget.limit
        let unit = DecodeBudget.bytesPerValue
        try Memory.probe(objectCount, of: (Value, Int, UInt8).self, "the table of \(objectCount) objects")
        /// What a decoded scalar is charged: one value plus its text or data.
        func cost(_ v: Value) -> Int {
            switch v {
            case .string(let s): return unit + s.utf8.count
            case .data(let d): return unit + d.count
            default: return unit
            }
        }
        // 0: not seen, 1: being filled (on the stack), 2: decoded (in `cache`).
        var state = [UInt8](repeating: 0, count: objectCount)
        var cache = [Value](repeating: .null, count: objectCount)
        var sizes = [Int](repeating: 0, count: objectCount)
        var frames: [Frame] = []
        // The decoded objects are shared with the result; after a failure they may be the
        // last holders of deep subtrees: release those without deep recursion.
        var succeeded = false
        defer {
            if !succeeded {
                while var f = frames.popLast() {
                    var items = Value.array(f.items)
                    f.items = []
                    Value.releaseDeep(&items)
                }
                for i in cache.indices where cache[i].isContainer { Value.releaseDeep(&cache[i]) }
            }
        }

        /// The value of object `r` when it is done or a scalar; nil when a frame was pushed.
        func begin(_ r: Int) throws -> (Value, Int)? {
            switch state[r] {
            case 2: return (cache[r], sizes[r])
            case 1: throw fail("reference cycle: object \(r) contains itself", offsets[r])
            default:
                switch try object(r) {
                case .scalar(let v):
                    state[r] = 2
                    cache[r] = v
                    sizes[r] = cost(v)
                    return (v, sizes[r])
                case .container(let kind, let refsAt, let count):
                    guard frames.count < maxDepth else {
                        throw fail("containers nested deeper than \(maxDepth) levels", offsets[r])
                    }
                    state[r] = 1
                    var f = Frame(object: r, kind: kind, refsAt: refsAt, count: count)
                    f.size = unit
                    try f.items.checkedReserve(count, "a container of \(count) members")
                    if kind == .dict { try f.keys.checkedReserve(count, "a dictionary of \(count) keys") }
                    frames.append(f)
                    return nil
                }
            }
        }

        /// Dictionary key: object `r` must be a string.
        func key(_ r: Int, at: Int) throws -> String {
            if state[r] == 2, case .string(let s) = cache[r] { return s }
            if state[r] == 0, case .scalar(let v) = try object(r), case .string(let s) = v {
                state[r] = 2
                cache[r] = v
                sizes[r] = cost(v)
                return s
            }
            throw fail("dictionary key (object \(r)) is not a string", at)
        }

        func add(_ v: Value, size: Int) throws {
            let f = frames.count - 1
            frames[f].items.append(v)
            frames[f].size += size
            if frames[f].size > limit {
                throw fail(budget.exceeded(), offsets[frames[f].object])
            }
        }

        if let (v, _) = try begin(topObject) {
            succeeded = true
            return v
        }
        while true {
            let f = frames.count - 1
            let total = frames[f].kind == .dict ? 2 * frames[f].count : frames[f].count
            if frames[f].next < total {
                let idx = frames[f].next
                frames[f].next += 1
                let at = frames[f].refsAt + idx * refSize
                let r = try reference(at)
                if frames[f].kind == .dict && idx < frames[f].count {
                    let k = try key(r, at: at)
                    frames[f].keys.append(k)
                    frames[f].size += unit + k.utf8.count
                    continue
                }
                if let (v, size) = try begin(r) { try add(v, size: size) }
            } else {
                let done = frames.removeLast()
                let v: Value
                switch done.kind {
                case .array: v = .array(done.items)
                case .set: v = .set(ValueSet(done.items))
                case .dict:
                    var d = ValueDict()
                    for (k, item) in zip(done.keys, done.items) { d[k] = item }
                    v = .dict(d)
                }
                state[done.object] = 2
                cache[done.object] = v
                sizes[done.object] = done.size
                if frames.isEmpty {
                    succeeded = true
                    return v
                }
                try add(v, size: done.size)
            }
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.ffffff]Z` for a date stored as seconds since 2001-01-01 00:00 UTC,
/// rounded to the microsecond (as plistlib does); nil outside the years 1 to 9999.
func isoDate(_ seconds: Double) -> String? {
    guard seconds.isFinite else { return nil }
    let micros = (seconds * 1_000_000).rounded(.toNearestOrEven)
    // 0001-01-01 is 63113904000 s before 2001-01-01; 10000-01-01 is 252423993600 s after.
    guard micros >= -63_113_904_000e6, micros < 252_423_993_600e6 else { return nil }
    let m = Int64(micros)
    var secs = m / 1_000_000, frac = m % 1_000_000
    if frac < 0 { frac += 1_000_000; secs -= 1 }
    var days = secs / 86_400, sod = secs % 86_400
    if sod < 0 { sod += 86_400; days -= 1 }
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 11_323 + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yoe + era * 400 + (month <= 2 ? 1 : 0)

    var out = ByteWriter(capacity: 32)
    func digits(_ v: Int64, _ width: Int) {
        var d = [UInt8](repeating: 0x30, count: width)
        var x = v
        for i in stride(from: width - 1, through: 0, by: -1) {
            d[i] = 0x30 + UInt8(x % 10)
            x /= 10
        }
        out.append(d)
    }
    digits(year, 4); out.append(UInt8(ascii: "-"))
    digits(month, 2); out.append(UInt8(ascii: "-"))
    digits(day, 2); out.append(UInt8(ascii: "T"))
    digits(sod / 3600, 2); out.append(UInt8(ascii: ":"))
    digits(sod / 60 % 60, 2); out.append(UInt8(ascii: ":"))
    digits(sod % 60, 2)
    if frac != 0 {
        var f = frac, width = 6
        while f % 10 == 0 { f /= 10; width -= 1 }
        out.append(UInt8(ascii: "."))
        digits(f, width)
    }
    out.append(UInt8(ascii: "Z"))
    return out.messageText()
}

@inline(__always)
private func appendUTF8(_ scalar: UInt32, to out: inout ByteWriter) {
    guard out.reserve(4) else { return }
    if scalar < 0x80 {
        out.put(UInt8(scalar))
    } else if scalar < 0x800 {
        out.put(UInt8(0xC0 | scalar >> 6))
        out.put(UInt8(0x80 | scalar & 0x3F))
    } else if scalar < 0x10000 {
        out.put(UInt8(0xE0 | scalar >> 12))
        out.put(UInt8(0x80 | scalar >> 6 & 0x3F))
        out.put(UInt8(0x80 | scalar & 0x3F))
    } else {
        out.put(UInt8(0xF0 | scalar >> 18))
        out.put(UInt8(0x80 | scalar >> 12 & 0x3F))
        out.put(UInt8(0x80 | scalar >> 6 & 0x3F))
        out.put(UInt8(0x80 | scalar & 0x3F))
    }
}

private let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

/// `0x5A`: a byte named in a message.
private func hexByte(_ b: UInt8) -> String {
    var out = ByteWriter(capacity: 4)
    out.append("0x" as StaticString)
    out.append(hexDigits[Int(b >> 4)])
    out.append(hexDigits[Int(b & 0xF)])
    return out.messageText()
}

/// `"ab"` for printable ASCII, else `0xHHHH…`: bytes from the input named in messages.
private func printable(_ p: UnsafePointer<UInt8>, _ count: Int) -> String {
    var out = ByteWriter(capacity: 2 * count + 4)
    if (0..<count).allSatisfy({ p[$0] >= 0x20 && p[$0] < 0x7F && p[$0] != UInt8(ascii: "\"") }) {
        out.append(UInt8(ascii: "\""))
        out.append(UnsafeRawBufferPointer(start: p, count: count))
        out.append(UInt8(ascii: "\""))
    } else {
        out.append("0x" as StaticString)
        for k in 0..<count {
            out.append(hexDigits[Int(p[k] >> 4)])
            out.append(hexDigits[Int(p[k] & 0xF)])
        }
    }
    return out.messageText()
}

// MARK: - XML

private struct XMLPlistReader: ~Copyable {
    let p: UnsafePointer<UInt8>
    let n: Int
    let maxDepth: Int
    var i = 0
    /// Text of the current element when it needed decoding (entities, CDATA, comments).
    var scratch = ByteWriter(capacity: 256)
    /// The decoded tree's limit.
    var budget = DecodeBudget.unlimited
    /// The text is the UTF-8 transcoding of UTF-16 input: a declared UTF-16 is right.
    var fromUTF16 = false

    enum Tag: Equatable {
        case plist, dict, array, key, string, integer, real, date, data, `true`, `false`

        var name: String {
            switch self {
            case .plist: return "plist"
            case .dict: return "dict"
            case .array: return "array"
            case .key: return "key"
            case .string: return "string"
            case .integer: return "integer"
            case .real: return "real"
            case .date: return "date"
            case .data: return "data"
            case .true: return "true"
            case .false: return "false"
            }
        }
    }

    struct StartTag {
        let tag: Tag
        let selfClosing: Bool
        /// Offset of its `<`.
        let at: Int
    }

    /// An open `<dict>` or `<array>`.
    struct Frame {
        let isDict: Bool
        let at: Int
        var items: [Value] = []
        var dict = ValueDict()
        var key: String? = nil
    }

    init(p: UnsafePointer<UInt8>, n: Int, maxDepth: Int) {
        self.p = p
        self.n = n
        self.maxDepth = maxDepth
    }

    func fail(_ what: String, _ offset: Int) -> AFSError { Self.fail(what, offset) }

    static func fail(_ what: String, _ offset: Int) -> AFSError {
        AFSError(.invalidPlist, "XML property list: \(what) at byte offset \(offset)")
    }

    // MARK: Scanning

    @inline(__always)
    func isSpace(_ b: UInt8) -> Bool { Self.isSpace(b) }

    @inline(__always)
    static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    @inline(__always)
    func at(_ s: StaticString, _ k: Int) -> Bool {
        let c = s.utf8CodeUnitCount
        guard k + c <= n else { return false }
        let q = s.utf8Start
        for j in 0..<c where p[k + j] != q[j] { return false }
        return true
    }

    mutating func skipSpace() {
        while i < n && isSpace(p[i]) { i += 1 }
    }

    /// Moves past the next `terminator` (searching from `i`); fails naming `what` at `start`.
    mutating func skip(past terminator: StaticString, what: String, start: Int) throws {
        let first = terminator.utf8Start[0]
        while i < n {
            if p[i] == first && at(terminator, i) {
                i += terminator.utf8CodeUnitCount
                return
            }
            i += 1
        }
        throw fail("unterminated \(what)", start)
    }

    /// Skips one comment or processing instruction at `i`; false when there is none.
    mutating func skipCommentOrPI() throws -> Bool {
        let s = i
        if at("<!--", i) {
            i += 4
            try skip(past: "-->", what: "comment", start: s)
            return true
        }
        if at("<?", i) {
            i += 2
            try skip(past: "?>", what: "processing instruction", start: s)
            return true
        }
        return false
    }

    /// Skips whitespace, comments and processing instructions.
    mutating func skipMisc() throws {
        repeat { skipSpace() } while try skipCommentOrPI()
    }

    /// The XML declaration: only UTF-8 (or its ASCII subset) may be declared.
    mutating func xmlDeclaration() throws {
        let s = i
        i += 5
        try skip(past: "?>", what: "XML declaration", start: s)
        var k = s + 5
        while k + 8 <= i - 2 {
            if at("encoding", k) {
                var j = k + 8
                while j < i && (isSpace(p[j]) || p[j] == UInt8(ascii: "=")) { j += 1 }
                guard j < i, p[j] == UInt8(ascii: "\"") || p[j] == UInt8(ascii: "'") else { break }
                let quote = p[j]
                let vs = j + 1
                var ve = vs
                while ve < i && p[ve] != quote { ve += 1 }
                var name = ByteWriter(capacity: 16)
                for b in UnsafeBufferPointer(start: p + vs, count: ve - vs) {
                    name.append(b >= 0x41 && b <= 0x5A ? b + 0x20 : b)
                }
                let enc = try name.toString()
                let utf16 = enc == "utf-16" || enc == "utf-16le" || enc == "utf-16be"
                if fromUTF16 && !utf16 && enc != "utf-8" {
                    throw fail("the declared encoding \"\(enc)\" disagrees with the UTF-16 text", vs)
                }
                if !fromUTF16 && enc != "utf-8" && enc != "utf8" && enc != "us-ascii" && enc != "ascii" {
                    throw fail("the declared encoding \"\(String(decoding: UnsafeBufferPointer(start: p + vs, count: ve - vs), as: UTF8.self))\" is not supported (only UTF-8)", vs)
                }
                return
            }
            k += 1
        }
    }

    /// `<!DOCTYPE …>` with quoted strings, an internal subset and comments in it.
    mutating func skipDoctype() throws {
        let s = i
        i += 9
        var depth = 0
        while i < n {
            let b = p[i]
            if b == UInt8(ascii: "\"") || b == UInt8(ascii: "'") {
                i += 1
                while i < n && p[i] != b { i += 1 }
                guard i < n else { break }
            } else if b == UInt8(ascii: "[") {
                depth += 1
            } else if b == UInt8(ascii: "]") {
                depth -= 1
            } else if at("<!--", i) {
                _ = try skipCommentOrPI()
                continue
            } else if b == UInt8(ascii: ">") && depth <= 0 {
                i += 1
                return
            }
            i += 1
        }
        throw fail("unterminated DOCTYPE", s)
    }

    /// The element name starting at `k` and the offset just after it.
    func name(_ k: Int) -> (Int, Int) {
        var e = k
        while e < n && !isSpace(p[e]) && p[e] != UInt8(ascii: ">") && p[e] != UInt8(ascii: "/") { e += 1 }
        return (k, e)
    }

    func tag(_ s: Int, _ e: Int) -> Tag? {
        let len = e - s
        func eq(_ name: StaticString) -> Bool { name.utf8CodeUnitCount == len && at(name, s) }
        switch len {
        case 3: return eq("key") ? .key : nil
        case 4:
            if eq("dict") { return .dict }
            if eq("real") { return .real }
            if eq("date") { return .date }
            if eq("data") { return .data }
            if eq("true") { return .true }
            return nil
        case 5:
            if eq("plist") { return .plist }
            if eq("array") { return .array }
            if eq("false") { return .false }
            return nil
        case 6: return eq("string") ? .string : nil
        case 7: return eq("integer") ? .integer : nil
        default: return nil
        }
    }

    func text(_ s: Int, _ e: Int) throws(AFSError) -> String {
        try Memory.probe(e - s, "a string of \(e - s) bytes")
        return String(decoding: UnsafeBufferPointer(start: p + s, count: e - s), as: UTF8.self)
    }

    /// A start tag at `i` (which is `<`): its element, whether it is empty (`<x/>`), and
    /// any attributes skipped.
    mutating func startTag() throws -> StartTag {
        let start = i
        let (s, e) = name(i + 1)
        guard let t = tag(s, e) else {
            if s == e { throw fail("malformed tag", start) }
            throw fail("unknown element <\((try? text(s, e)) ?? "")>", start)
        }
        i = e
        while true {
            skipSpace()
            guard i < n else { throw fail("unterminated <\(t.name)> tag", start) }
            let b = p[i]
            if b == UInt8(ascii: ">") {
                i += 1
                return StartTag(tag: t, selfClosing: false, at: start)
            }
            if b == UInt8(ascii: "/") {
                guard i + 1 < n, p[i + 1] == UInt8(ascii: ">") else { throw fail("malformed <\(t.name)> tag", i) }
                i += 2
                return StartTag(tag: t, selfClosing: true, at: start)
            }
            // An attribute: name = "value" or 'value'.
            while i < n && !isSpace(p[i]) && p[i] != UInt8(ascii: "=") && p[i] != UInt8(ascii: ">") && p[i] != UInt8(ascii: "/") { i += 1 }
            skipSpace()
            guard i < n, p[i] == UInt8(ascii: "=") else { throw fail("malformed attribute in <\(t.name)>", i) }
            i += 1
            skipSpace()
            guard i < n, p[i] == UInt8(ascii: "\"") || p[i] == UInt8(ascii: "'") else {
                throw fail("unquoted attribute value in <\(t.name)>", i)
            }
            let q = p[i]
            let vs = i
            i += 1
            while i < n && p[i] != q { i += 1 }
            guard i < n else { throw fail("unterminated attribute value", vs) }
            i += 1
        }
    }

    /// An end tag at `i` (which is `</`); it must close `expected`.
    mutating func endTag(_ expected: Tag, openedAt: Int) throws {
        let start = i
        let (s, e) = name(i + 2)
        guard tag(s, e) == expected else {
            throw fail("</\((try? text(s, e)) ?? "")> where </\(expected.name)> (for the <\(expected.name)> at byte offset \(openedAt)) was expected", start)
        }
        i = e
        skipSpace()
        guard i < n, p[i] == UInt8(ascii: ">") else { throw fail("malformed </\(expected.name)> tag", start) }
        i += 1
    }

    // MARK: Text content

    /// Reads the character data of `t` up to and including its end tag. The bytes are
    /// either `p[range]` (returned) or, when they needed decoding, in `scratch` (nil).
    mutating func content(_ t: StartTag) throws -> Range<Int>? {
        let start = i
        var k = i
        while k < n && p[k] != UInt8(ascii: "<") && p[k] != UInt8(ascii: "&") { k += 1 }
        if k + 1 < n && p[k] == UInt8(ascii: "<") && p[k + 1] == UInt8(ascii: "/") {
            i = k
            try endTag(t.tag, openedAt: t.at)
            return start..<k
        }
        scratch.truncate(to: 0)
        scratch.append(UnsafeRawBufferPointer(start: p + start, count: k - start))
        i = k
        while true {
            guard i < n else { throw fail("unterminated <\(t.tag.name)>", t.at) }
            let b = p[i]
            if b == UInt8(ascii: "<") {
                if at("</", i) {
                    try endTag(t.tag, openedAt: t.at)
                    return nil
                } else if at("<![CDATA[", i) {
                    let s = i
                    i += 9
                    let from = i
                    try skip(past: "]]>", what: "CDATA section", start: s)
                    scratch.append(UnsafeRawBufferPointer(start: p + from, count: i - 3 - from))
                } else if try !skipCommentOrPI() {
                    throw fail("element inside <\(t.tag.name)>", i)
                }
            } else if b == UInt8(ascii: "&") {
                try entity()
            } else {
                var e = i
                while e < n && p[e] != UInt8(ascii: "<") && p[e] != UInt8(ascii: "&") { e += 1 }
                scratch.append(UnsafeRawBufferPointer(start: p + i, count: e - i))
                i = e
            }
        }
    }

    /// `&amp; &lt; &gt; &quot; &apos; &#N; &#xN;` at `i`, appended to `scratch`.
    mutating func entity() throws {
        let s = i
        var e = i + 1
        while e < n && e - s < 16 && p[e] != UInt8(ascii: ";") { e += 1 }
        guard e < n, p[e] == UInt8(ascii: ";") else { throw fail("malformed entity reference", s) }
        let body = s + 1
        i = e + 1
        func eq(_ name: StaticString) -> Bool { name.utf8CodeUnitCount == e - body && at(name, body) }
        if eq("amp") { scratch.append(UInt8(ascii: "&")); return }
        if eq("lt") { scratch.append(UInt8(ascii: "<")); return }
        if eq("gt") { scratch.append(UInt8(ascii: ">")); return }
        if eq("quot") { scratch.append(UInt8(ascii: "\"")); return }
        if eq("apos") { scratch.append(UInt8(ascii: "'")); return }
        guard p[body] == UInt8(ascii: "#"), e - body >= 2 else {
            throw fail("unknown entity &\((try? text(body, e)) ?? "");", s)
        }
        var k = body + 1
        let hex = p[k] == UInt8(ascii: "x")
        if hex { k += 1 }
        guard k < e else { throw fail("malformed character reference", s) }
        var v: UInt32 = 0
        while k < e {
            guard let d = Self.digitValue(p[k], hex: hex) else { throw fail("malformed character reference", s) }
            v = v &* (hex ? 16 : 10) &+ d
            if v > 0x10FFFF { throw fail("character reference beyond U+10FFFF", s) }
            k += 1
        }
        if v & 0xFFFF_F800 == 0xD800 { throw fail("character reference to a surrogate", s) }
        guard Self.isXMLCharacter(v) else {
            throw fail("character reference to \(Self.scalarName(v)), which XML 1.0 does not allow", s)
        }
        appendUTF8(v, to: &scratch)
    }

    /// XML 1.0's `Char`: tab, LF, CR, U+0020–U+D7FF, U+E000–U+FFFD, U+10000–U+10FFFF.
    static func isXMLCharacter(_ v: UInt32) -> Bool {
        v == 0x9 || v == 0xA || v == 0xD || (v >= 0x20 && v <= 0xD7FF) || (v >= 0xE000 && v <= 0xFFFD) || v >= 0x10000
    }

    /// `U+0001`.
    static func scalarName(_ v: UInt32) -> String {
        let h = String(v, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: Swift.max(0, 4 - h.utf8.count)) + h
    }

    /// The offset and scalar of the first raw character XML 1.0 does not allow (control
    /// characters other than tab, LF and CR; U+FFFE; U+FFFF) in valid UTF-8, or nil.
    static func firstNonXMLCharacter(_ p: UnsafePointer<UInt8>, _ n: Int, from: Int) -> (Int, UInt32)? {
        var k = from
        while k < n {
            let b = p[k]
            if b < 0x20 {
                if b != 0x9 && b != 0xA && b != 0xD { return (k, UInt32(b)) }
            } else if b == 0xEF && k + 2 < n && p[k + 1] == 0xBF && (p[k + 2] == 0xBE || p[k + 2] == 0xBF) {
                return (k, p[k + 2] == 0xBE ? 0xFFFE : 0xFFFF)
            }
            k += 1
        }
        return nil
    }

    @inline(__always)
    static func digitValue(_ b: UInt8, hex: Bool) -> UInt32? {
        if b >= 0x30 && b <= 0x39 { return UInt32(b - 0x30) }
        guard hex else { return nil }
        let l = b | 0x20
        if l >= 0x61 && l <= 0x66 { return UInt32(l - 0x61 + 10) }
        return nil
    }

    /// The element's text as a String.
    mutating func string(_ t: StartTag) throws -> String {
        if t.selfClosing { return "" }
        if let r = try content(t) { return try text(r.lowerBound, r.upperBound) }
        return try scratch.toString()
    }

    /// Runs `body` on the element's text with surrounding whitespace removed.
    mutating func trimmed<R>(_ t: StartTag, _ body: (UnsafeBufferPointer<UInt8>, Int) throws -> R) throws -> R {
        let contentStart = i
        let r = try content(t)
        func run(_ buf: UnsafeBufferPointer<UInt8>) throws -> R {
            var s = 0, e = buf.count
            while s < e && Self.isSpace(buf[s]) { s += 1 }
            while e > s && Self.isSpace(buf[e - 1]) { e -= 1 }
            return try body(UnsafeBufferPointer(rebasing: buf[s..<e]), contentStart)
        }
        if let r { return try run(UnsafeBufferPointer(start: p + r.lowerBound, count: r.count)) }
        return try scratch.withBytes { try run($0) }
    }

    static func integer(_ b: UnsafeBufferPointer<UInt8>, at: Int) throws -> Value {
        var k = 0
        var negative = false
        if k < b.count && (b[k] == UInt8(ascii: "-") || b[k] == UInt8(ascii: "+")) {
            negative = b[k] == UInt8(ascii: "-")
            k += 1
        }
        var hex = false
        if k + 1 < b.count && b[k] == UInt8(ascii: "0") && (b[k + 1] | 0x20) == UInt8(ascii: "x") {
            hex = true
            k += 2
        }
        guard k < b.count else { throw fail("malformed <integer> \"\(String(decoding: b, as: UTF8.self))\"", at) }
        var m: UInt64 = 0
        while k < b.count {
            guard let d = Self.digitValue(b[k], hex: hex) else {
                throw fail("malformed <integer> \"\(String(decoding: b, as: UTF8.self))\"", at)
            }
            let (x, o1) = m.multipliedReportingOverflow(by: hex ? 16 : 10)
            let (y, o2) = x.addingReportingOverflow(UInt64(d))
            if o1 || o2 { throw fail("<integer> \(String(decoding: b, as: UTF8.self)) is out of range", at) }
            m = y
            k += 1
        }
        if negative {
            guard m <= UInt64(Int64.max) + 1 else {
                throw fail("<integer> \(String(decoding: b, as: UTF8.self)) is out of range", at)
            }
            return .int(m == UInt64(Int64.max) + 1 ? .min : -Int64(m))
        }
        return m <= UInt64(Int64.max) ? .int(Int64(m)) : .double(Double(m))
    }

    static func real(_ b: UnsafeBufferPointer<UInt8>, at: Int) throws -> Value {
        var lower = ByteWriter(capacity: b.count + 1)
        var numeric = b.count > 0
        for c in b {
            let l = c >= 0x41 && c <= 0x5A ? c + 0x20 : c
            lower.append(l)
            switch c {
            case 0x30...0x39, UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): break
            default: numeric = false
            }
        }
        let s = try lower.toString()
        switch s {
        case "nan", "+nan", "-nan": return .double(.nan)
        case "inf", "+inf", "infinity", "+infinity": return .double(.infinity)
        case "-inf", "-infinity": return .double(-.infinity)
        default:
            guard numeric, let d = Double(s) else { throw fail("malformed <real> \"\(String(decoding: b, as: UTF8.self))\"", at) }
            return .double(d)
        }
    }

    static func base64(_ b: UnsafeBufferPointer<UInt8>, at: Int) throws -> Value {
        var out = [UInt8]()
        out.reserveCapacity(b.count / 4 * 3 + 3)
        var acc: UInt32 = 0, sextets = 0, padding = 0
        for c in b {
            let v: UInt32
            switch c {
            case 0x41...0x5A: v = UInt32(c - 0x41)
            case 0x61...0x7A: v = UInt32(c - 0x61 + 26)
            case 0x30...0x39: v = UInt32(c - 0x30 + 52)
            case UInt8(ascii: "+"): v = 62
            case UInt8(ascii: "/"): v = 63
            case 0x20, 0x09, 0x0A, 0x0D: continue
            case UInt8(ascii: "="):
                padding += 1
                continue
            default: throw fail("invalid base64 in <data>", at)
            }
            guard padding == 0 else { throw fail("invalid base64 in <data> (data after '=')", at) }
            acc = acc << 6 | v
            sextets += 1
            if sextets == 4 {
                out.append(UInt8(acc >> 16))
                out.append(UInt8(acc >> 8 & 0xFF))
                out.append(UInt8(acc & 0xFF))
                acc = 0
                sextets = 0
            }
        }
        switch sextets {
        case 0: guard padding == 0 else { throw fail("invalid base64 in <data> (stray '=')", at) }
        case 2:
            guard padding == 0 || padding == 2 else { throw fail("invalid base64 in <data> (bad padding)", at) }
            out.append(UInt8(acc >> 4))
        case 3:
            guard padding <= 1 else { throw fail("invalid base64 in <data> (bad padding)", at) }
            out.append(UInt8(acc >> 10))
            out.append(UInt8(acc >> 2 & 0xFF))
        default: throw fail("invalid base64 in <data> (truncated)", at)
        }
        return .data(out)
    }

    // MARK: Document

    mutating func read() throws -> Value {
        if n >= 2 && ((p[0] == 0xFE && p[1] == 0xFF) || (p[0] == 0xFF && p[1] == 0xFE)) {
            throw fail("UTF-16 text is not supported (only UTF-8)", 0)
        }
        if n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF { i = 3 }
        if let bad = firstInvalidUTF8(p, n, from: i) { throw fail("invalid UTF-8", bad) }
        if let (bad, scalar) = Self.firstNonXMLCharacter(p, n, from: i) {
            throw fail("\(Self.scalarName(scalar)) is not a character XML 1.0 allows (the writer and plistlib refuse it too)", bad)
        }
        // Prolog.
        var first = true
        while true {
            skipSpace()
            guard i < n else { throw fail("no property list found", i) }
            if first && at("<?xml", i) && i + 5 < n && (isSpace(p[i + 5]) || p[i + 5] == UInt8(ascii: "?")) {
                try xmlDeclaration()
            } else if at("<?", i) || at("<!--", i) {
                try skipMisc()
            } else if at("<!DOCTYPE", i) {
                try skipDoctype()
            } else if p[i] == UInt8(ascii: "<") {
                break
            } else {
                throw fail("not a property list (text before the root element)", i)
            }
            first = false
        }
        var root = try startTag()
        let value: Value
        if root.tag == .plist {
            guard !root.selfClosing else { throw fail("empty <plist>", root.at) }
            let plistAt = root.at
            try skipMisc()
            guard i < n else { throw fail("unterminated <plist>", plistAt) }
            guard p[i] == UInt8(ascii: "<"), !at("</", i) else {
                throw fail(at("</", i) ? "empty <plist>" : "text in <plist>", i)
            }
            root = try startTag()
            value = try tree(root)
            try skipMisc()
            guard i < n else { throw fail("unterminated <plist>", plistAt) }
            guard at("</", i) else {
                throw fail(p[i] == UInt8(ascii: "<") ? "more than one value in <plist>" : "text in <plist>", i)
            }
            try endTag(.plist, openedAt: plistAt)
        } else {
            value = try tree(root)
        }
        try skipMisc()
        guard i == n else { throw fail("content after the property list", i) }
        return value
    }

    /// Parses the value whose start tag is `first` and everything inside it, with an
    /// explicit stack of open containers.
    mutating func tree(_ first: StartTag) throws -> Value {
        var stack: [Frame] = []
        // After a failure the finished subtrees in the open containers are released
        // without deep recursion on this stack.
        defer {
            while var f = stack.popLast() {
                var items = Value.array(f.items), dict = Value.dict(f.dict)
                f = Frame(isDict: false, at: 0)
                Value.releaseDeep(&items)
                Value.releaseDeep(&dict)
            }
        }
        var t = first
        while true {
            if t.tag != .key, let last = stack.indices.last, stack[last].isDict, stack[last].key == nil {
                throw fail("<\(t.tag.name)> where a <key> was expected", t.at)
            }
            var produced: Value?
            switch t.tag {
            case .dict, .array:
                if t.selfClosing {
                    produced = t.tag == .dict ? .dict(ValueDict()) : .array([])
                } else {
                    guard stack.count < maxDepth else { throw fail("containers nested deeper than \(maxDepth) levels", t.at) }
                    stack.append(Frame(isDict: t.tag == .dict, at: t.at))
                }
            case .key:
                guard let last = stack.indices.last, stack[last].isDict else { throw fail("<key> outside a dictionary", t.at) }
                guard stack[last].key == nil else { throw fail("two <key>s in a row", t.at) }
                let k = try string(t)
                if !budget.charge(DecodeBudget.bytesPerValue + k.utf8.count) { throw fail(budget.exceeded(), t.at) }
                stack[last].key = k
            case .string:
                produced = .string(try string(t))
            case .integer:
                guard !t.selfClosing else { throw fail("empty <integer>", t.at) }
                produced = try trimmed(t) { try Self.integer($0, at: $1) }
            case .real:
                guard !t.selfClosing else { throw fail("empty <real>", t.at) }
                produced = try trimmed(t) { try Self.real($0, at: $1) }
            case .date:
                guard !t.selfClosing else { throw fail("empty <date>", t.at) }
                produced = try trimmed(t) { b, at -> Value in
                    guard b.count > 0 else { throw Self.fail("empty <date>", at) }
                    guard let t = DateText.parse(b) else {
                        throw Self.fail("<date> text is not YYYY-MM-DDTHH:MM:SSZ (or a shorter form of it) with valid fields", at)
                    }
                    return .date(t)
                }
            case .data:
                produced = t.selfClosing ? .data([]) : try trimmed(t) { try Self.base64($0, at: $1) }
            case .true, .false:
                if !t.selfClosing {
                    skipSpace()
                    guard at("</", i) else { throw fail("content in <\(t.tag.name)>", i) }
                    try endTag(t.tag, openedAt: t.at)
                }
                produced = .bool(t.tag == .true)
            case .plist:
                throw fail("<plist> inside a property list", t.at)
            }
            // Deliver finished values upward and close containers until a start tag.
            while true {
                if let v = produced {
                    produced = nil
                    var c = DecodeBudget.bytesPerValue
                    if case .string(let s) = v { c += s.utf8.count } else if case .data(let d) = v { c += d.count }
                    if !budget.charge(c) { throw fail(budget.exceeded(), i) }
                    guard !stack.isEmpty else { return v }
                    let top = stack.count - 1
                    if stack[top].isDict {
                        stack[top].dict[stack[top].key!] = v
                        stack[top].key = nil
                    } else {
                        try stack[top].items.checkedAppend(v, "an array")
                    }
                }
                try skipMisc()
                // Read the open container's fields one by one: a copy of the frame would
                // keep its arrays shared and make the next append copy them.
                let last = stack.count - 1
                let isDict = stack[last].isDict, openedAt = stack[last].at
                let kind: Tag = isDict ? .dict : .array
                guard i < n else { throw fail("unterminated <\(kind.name)>", openedAt) }
                if at("</", i) {
                    if isDict && stack[last].key != nil { throw fail("<key> without a value", i) }
                    try endTag(kind, openedAt: openedAt)
                    let done = stack.removeLast()
                    produced = done.isDict ? .dict(done.dict) : .array(done.items)
                    continue
                }
                guard p[i] == UInt8(ascii: "<") else { throw fail("text in <\(kind.name)>", i) }
                if at("<![CDATA[", i) { throw fail("CDATA in <\(kind.name)>", i) }
                t = try startTag()
                break
            }
        }
    }
}

/// The offset of the first byte that does not belong to well-formed UTF-8 (overlong
/// forms, surrogates and values beyond U+10FFFF are ill-formed), or nil.
private func firstInvalidUTF8(_ p: UnsafePointer<UInt8>, _ n: Int, from: Int) -> Int? {
    var k = from
    while k < n {
        let b = p[k]
        if b < 0x80 {
            k += 1
            continue
        }
        var need = 0
        var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
        switch b {
        case 0xC2...0xDF: need = 1
        case 0xE0: need = 2; lo = 0xA0
        case 0xE1...0xEC, 0xEE, 0xEF: need = 2
        case 0xED: need = 2; hi = 0x9F
        case 0xF0: need = 3; lo = 0x90
        case 0xF1...0xF3: need = 3
        case 0xF4: need = 3; hi = 0x8F
        default: return k
        }
        guard k + need < n else { return k }
        let c1 = p[k + 1]
        if c1 < lo || c1 > hi { return k }
        for j in 2...max(2, need) where j <= need {
            if p[k + j] & 0xC0 != 0x80 { return k }
        }
        k += need + 1
    }
    return nil
}
