/// NSPropertyListFormat's values for the two formats AFPropertyListRequestSerializer writes.
///
/// C: `AFS_PLIST_XML`, `AFS_PLIST_BINARY` (`afs_serializer_set_plist_format`).
public enum PropertyListFormat: Int32, Sendable {
    /// XML 1.0 in Apple's layout (NSPropertyListXMLFormat_v1_0).
    case xml = 100
    /// `bplist00` (NSPropertyListBinaryFormat_v1_0).
    case binary = 200
}

/// Writes a parameters tree as a property list: the body of AFPropertyListRequestSerializer.
///
/// **XML** is Apple's layout byte for byte where Foundation and this writer agree: the
/// `<?xml …?>` declaration, the Apple DOCTYPE, `<plist version="1.0">`, one element per line
/// indented by tabs, `<dict/>` and `<array/>` for empty containers, `<true/>`/`<false/>`,
/// `<integer>` in decimal, and `<data>` as base64 on its own lines, indented like the tag
/// but by at most 8 tabs, `76 - 8 × min(indent, 8)` characters per line (CoreFoundation's
/// layout; Foundation writes the same bytes for trees without reals). Text escapes `&` `<` `>`
/// and writes CR as `&#13;` so that it survives XML line-end normalisation (CoreFoundation
/// writes it raw; Python's plistlib turns it into LF). Reals use `formatDouble`
/// (`1e+16`, `0.1`, `-0`), and `nan`, `+infinity`, `-infinity`; CoreFoundation writes
/// `%.17g` digits (`0.10000000000000001`) and `0.0` for `-0.0` — both parse to the same
/// double, and ours keep the sign of zero.
///
/// Dictionary keys in XML are written in ascending Unicode-scalar order (`utf8Less`).
/// CoreFoundation sorts XML keys too, but by UTF-16 code units, and plistlib sorts by code
/// points: the three orders agree except for keys that differ first in a character in
/// U+E000–U+FFFF against one above U+FFFF, where we follow plistlib and the rest of this
/// library (JSON `SORTED_KEYS`, query strings). The XML is therefore the same for any two
/// equal trees, whatever their insertion order.
///
/// **Binary** is `bplist00`: header, objects, offset table, 32-byte trailer. Objects are
/// numbered depth first (a container, then all its keys, then its values) and equal
/// scalars (strings, keys, integers, doubles by bit pattern, bools, data) are written once
/// and shared, as plistlib does: for a tree whose keys were inserted in sorted order and
/// that has no NaN or -0.0 (plistlib never shares NaNs, and merges -0.0 into 0.0) the bytes
/// are plistlib's. Dictionary keys keep insertion order (CoreFoundation writes its hash
/// order, so there is no Apple byte layout to match). Integers take 1, 2, 4
/// or 8 bytes (negative ones 8); strings are ASCII (type 5) when they can be, else UTF-16BE
/// (type 6) with surrogate pairs; doubles are 8-byte reals. Offset and reference sizes are
/// the smallest of 1, 2, 4, 8 bytes that CoreFoundation accepts: references must hold the
/// object count and offsets the offset table's position.
///
/// Null and sets cannot be written (NSPropertyListSerialization rejects NSNull and NSSet),
/// nor, in XML, strings holding characters XML 1.0 cannot carry.
public enum PropertyListWriter {
    /// AFNetworking's message for parameters that cannot be written as a property list;
    /// every writer error message starts with it.
    public static let invalidParametersMessage = "The `parameters` argument is not valid Property List."

    /// The most containers that may be nested inside one another, as in `PropertyListReader`:
    /// what the writer accepts can be read back, and no caller's tree can exhaust the stack.
    public static let maxDepth = PropertyListReader.defaultMaxDepth

    /// `value` as a property list in `format`.
    /// - Parameters:
    ///   - value: the tree to write; any kind may be the top level.
    ///   - format: XML (100) or binary (200).
    /// - Returns: the bytes of the property list.
    /// - Throws: `AFSError` `.invalidPlist` for null, sets, and (XML only) strings or keys
    ///   containing U+0000–U+0008, U+000B, U+000C, U+000E–U+001F, U+FFFE or U+FFFF, and
    ///   nesting deeper than `maxDepth`. The
    ///   message is `invalidParametersMessage` followed by what was found and where, e.g.
    ///   ``The `parameters` argument is not valid Property List. (null at parameters["a"][2])``.
    ///   C: `afs_serializer_request` / `afs_serializer_serialize` with a plist serializer.
    public static func data(_ value: Value, format: PropertyListFormat) throws -> [UInt8] {
        var out = ByteWriter(capacity: 512)
        try write(value, format: format, to: &out)
        return try out.toArray()
    }

    /// Appends `value` as a property list to `out` (see `data(_:format:)`); on failure `out`
    /// is left as it was before the call.
    /// - Throws: `AFSError` `.invalidPlist` as `data(_:format:)`.
    public static func write(_ value: Value, format: PropertyListFormat, to out: inout ByteWriter) throws {
        let start = out.count
        do {
            switch format {
            case .xml: try XMLEmitter.document(value, to: &out)
            case .binary: try BinaryEmitter.document(value, to: &out)
            }
        } catch {
            out.recover(to: start)
            if let e = error.noMemory { throw e }
            throw AFSError(.invalidPlist, "\(invalidParametersMessage) (\(error.what) at \(error.pathText())\(error.hint))")
        }
        try out.check("the property list", recoveringTo: start)
    }
}

// MARK: - Errors with a path

/// What could not be written and where; the path is collected innermost first while the
/// recursion unwinds, so the success path never builds it.
struct PlistWriteFailure: Error {
    enum Step {
        case key(String)
        case index(Int)
    }
    var what: String
    var hint: String = ""
    var path: [Step] = []
    /// Set when the writer ran out of memory (reported as that, not as invalid input).
    var noMemory: AFSError? = nil

    init(what: String, hint: String = "") {
        self.what = what
        self.hint = hint
    }

    init(noMemory: AFSError) {
        self.what = "out of memory"
        self.noMemory = noMemory
    }

    static let null = PlistWriteFailure(what: "null")
    static let set = PlistWriteFailure(what: "a set", hint: ": use an array")
    static let tooDeep = PlistWriteFailure(what: "a container nested deeper than \(PropertyListWriter.maxDepth) levels")

    /// A character XML 1.0 cannot carry, found in a string (or a dictionary key).
    static func xmlCharacter(_ scalar: UInt32, inKey: Bool) -> PlistWriteFailure {
        PlistWriteFailure(
            what: "\(unicodeName(scalar)) in \(inKey ? "a dictionary key" : "a string")",
            hint: ": XML 1.0 cannot carry it; use the binary format")
    }

    /// `parameters["a"][2]`: keys are quoted with `"` and `\` escaped and control
    /// characters written `\u00XX`.
    func pathText() -> String {
        var out = ByteWriter(capacity: 64)
        out.append("parameters" as StaticString)
        for step in path.reversed() {
            out.append(UInt8(ascii: "["))
            switch step {
            case .key(var k):
                out.append(UInt8(ascii: "\""))
                k.withUTF8 { bytes in
                    for b in bytes {
                        if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
                            out.append(UInt8(ascii: "\\"))
                            out.append(b)
                        } else if b < 0x20 || b == 0x7F {
                            out.append("\\u00" as StaticString)
                            out.append(hexDigitsUpper[Int(b >> 4)])
                            out.append(hexDigitsUpper[Int(b & 0xF)])
                        } else {
                            out.append(b)
                        }
                    }
                }
                out.append(UInt8(ascii: "\""))
            case .index(let i):
                out.appendDecimal(Int64(i))
            }
            out.append(UInt8(ascii: "]"))
        }
        return out.messageText()
    }
}

private let hexDigitsUpper: [UInt8] = Array("0123456789ABCDEF".utf8)

/// `U+000B`, `U+FFFE`: at least four uppercase hex digits.
private func unicodeName(_ scalar: UInt32) -> String {
    var out = ByteWriter(capacity: 12)
    out.append("U+" as StaticString)
    var digits = 4
    while digits < 8 && (scalar >> (4 * UInt32(digits))) != 0 { digits += 1 }
    for i in stride(from: digits - 1, through: 0, by: -1) {
        out.append(hexDigitsUpper[Int((scalar >> (4 * UInt32(i))) & 0xF)])
    }
    return out.messageText()
}

// MARK: - XML

private enum XMLEmitter {
    static func document(_ value: Value, to out: inout ByteWriter) throws(PlistWriteFailure) {
        out.append(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n"
                as StaticString)
        try element(value, indent: 0, to: &out)
        out.append("</plist>\n" as StaticString)
    }

    @inline(__always)
    static func tabs(_ n: Int, to out: inout ByteWriter) {
        guard out.reserve(n) else { return }
        for _ in 0..<n { out.put(0x09) }
    }

    /// Writes `value` as one element whose tag starts at the current position (the caller
    /// wrote the indentation), ending with a newline; nested lines are indented by `indent`.
    static func element(_ value: Value, indent: Int, to out: inout ByteWriter) throws(PlistWriteFailure) {
        if indent == LargeStack.hopDepth && value.isContainer {  // deeper levels run on a large stack
            try LargeStack.run(&out) { (out) throws(PlistWriteFailure) in try elementHere(value, indent: indent, to: &out) }
            return
        }
        try elementHere(value, indent: indent, to: &out)
    }

    static func elementHere(_ value: Value, indent: Int, to out: inout ByteWriter) throws(PlistWriteFailure) {
        switch value {
        case .string(let s):
            out.append("<string>" as StaticString)
            try text(s, inKey: false, to: &out)
            out.append("</string>\n" as StaticString)
        case .int(let i):
            out.append("<integer>" as StaticString)
            out.appendDecimal(i)
            out.append("</integer>\n" as StaticString)
        case .double(let d):
            out.append("<real>" as StaticString)
            if d.isNaN {
                out.append("nan" as StaticString)
            } else if d.isInfinite {
                out.append(d < 0 ? "-infinity" as StaticString : "+infinity" as StaticString)
            } else {
                out.append(formatDouble(d))
            }
            out.append("</real>\n" as StaticString)
        case .bool(let b):
            out.append(b ? "<true/>\n" as StaticString : "<false/>\n" as StaticString)
        case .date(let t):
            // whole seconds, as CoreFoundation and plistlib write them
            guard let text = DateText.iso8601(t, fraction: false) else {
                throw PlistWriteFailure(what: "a date (\(t) s since 1970) outside the years 1 to 9999")
            }
            out.append("<date>" as StaticString)
            out.append(text)
            out.append("</date>\n" as StaticString)
        case .data(let bytes):
            out.append("<data>\n" as StaticString)
            base64Lines(bytes, indent: indent, to: &out)
            tabs(indent, to: &out)
            out.append("</data>\n" as StaticString)
        case .array(let items):
            guard indent < PropertyListWriter.maxDepth else { throw .tooDeep }
            if items.isEmpty {
                out.append("<array/>\n" as StaticString)
                return
            }
            out.append("<array>\n" as StaticString)
            for (i, item) in items.enumerated() {
                tabs(indent + 1, to: &out)
                do {
                    try element(item, indent: indent + 1, to: &out)
                } catch {
                    var e = error
                    e.path.append(.index(i))
                    throw e
                }
            }
            tabs(indent, to: &out)
            out.append("</array>\n" as StaticString)
        case .dict(let d):
            guard indent < PropertyListWriter.maxDepth else { throw .tooDeep }
            if d.isEmpty {
                out.append("<dict/>\n" as StaticString)
                return
            }
            out.append("<dict>\n" as StaticString)
            let keys = d.keys, values = d.values
            for i in sortedKeyOrder(keys) {
                do {
                    tabs(indent + 1, to: &out)
                    out.append("<key>" as StaticString)
                    try text(keys[i], inKey: true, to: &out)
                    out.append("</key>\n" as StaticString)
                    tabs(indent + 1, to: &out)
                    try element(values[i], indent: indent + 1, to: &out)
                } catch {
                    var e = error
                    e.path.append(.key(keys[i]))
                    throw e
                }
            }
            tabs(indent, to: &out)
            out.append("</dict>\n" as StaticString)
        case .null:
            throw .null
        case .set:
            throw .set
        }
    }

    /// Indices of `keys` in ascending Unicode-scalar order.
    static func sortedKeyOrder(_ keys: [String]) -> [Int] {
        if keys.count < 2 { return Array(keys.indices) }
        return keys.indices.sorted { utf8Less(keys[$0], keys[$1]) }
    }

    /// Byte classes for text: 0 copy, 1 escape (`&` `<` `>` CR), 2 forbidden control,
    /// 3 possible start of U+FFFE / U+FFFF (0xEF).
    static let textClass: [UInt8] = {
        var t = [UInt8](repeating: 0, count: 256)
        for b in 0..<0x20 where b != 0x09 && b != 0x0A && b != 0x0D { t[b] = 2 }
        t[0x0D] = 1
        t[Int(UInt8(ascii: "&"))] = 1
        t[Int(UInt8(ascii: "<"))] = 1
        t[Int(UInt8(ascii: ">"))] = 1
        t[0xEF] = 3
        return t
    }()

    /// Appends `s` escaped for XML character data, copying unescaped runs whole.
    static func text(_ s: String, inKey: Bool, to out: inout ByteWriter) throws(PlistWriteFailure) {
        var s = s
        let failure: PlistWriteFailure? = s.withUTF8 { bytes -> PlistWriteFailure? in
            let n = bytes.count
            guard let p = bytes.baseAddress, n > 0 else { return nil }
            var runStart = 0
            var i = 0
            return textClass.withUnsafeBufferPointer { cls -> PlistWriteFailure? in
                while i < n {
                    let b = p[i]
                    let c = cls[Int(b)]
                    if c == 0 {
                        i += 1
                        continue
                    }
                    if c == 3 {
                        // U+FFFE is EF BF BE, U+FFFF is EF BF BF.
                        if i + 2 < n, p[i + 1] == 0xBF, p[i + 2] == 0xBE || p[i + 2] == 0xBF {
                            return .xmlCharacter(p[i + 2] == 0xBE ? 0xFFFE : 0xFFFF, inKey: inKey)
                        }
                        i += 1
                        continue
                    }
                    if c == 2 { return .xmlCharacter(UInt32(b), inKey: inKey) }
                    out.append(UnsafeRawBufferPointer(start: p + runStart, count: i - runStart))
                    switch b {
                    case UInt8(ascii: "&"): out.append("&amp;" as StaticString)
                    case UInt8(ascii: "<"): out.append("&lt;" as StaticString)
                    case UInt8(ascii: ">"): out.append("&gt;" as StaticString)
                    default: out.append("&#13;" as StaticString)
                    }
                    i += 1
                    runStart = i
                }
                out.append(UnsafeRawBufferPointer(start: p + runStart, count: n - runStart))
                return nil
            }
        }
        if let failure { throw failure }
    }

    static let base64Alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// CoreFoundation's `<data>` body: lines of `76 - 8 × min(indent, 8)` base64 characters,
    /// each indented by `min(indent, 8)` tabs (CoreFoundation "refuses to indent more than
    /// 64 characters" here, while the closing `</data>` gets the full indentation) and ended
    /// by a newline; nothing for empty data.
    static func base64Lines(_ bytes: [UInt8], indent: Int, to out: inout ByteWriter) {
        let n = bytes.count
        if n == 0 { return }
        let indent = min(indent, 8)
        let lineChars = 76 - 8 * indent  // always a multiple of 4
        let bytesPerLine = lineChars / 4 * 3
        bytes.withUnsafeBufferPointer { src in
            base64Alphabet.withUnsafeBufferPointer { table in
                var i = 0
                while i < n {
                    let end = min(i + bytesPerLine, n)
                    guard out.reserve(indent + lineChars + 1) else { return }
                    for _ in 0..<indent { out.put(0x09) }
                    while i + 3 <= end {
                        let v = UInt32(src[i]) << 16 | UInt32(src[i + 1]) << 8 | UInt32(src[i + 2])
                        out.put(table[Int(v >> 18)])
                        out.put(table[Int(v >> 12 & 0x3F)])
                        out.put(table[Int(v >> 6 & 0x3F)])
                        out.put(table[Int(v & 0x3F)])
                        i += 3
                    }
                    if i < end {  // 1 or 2 bytes left: the last line
                        let b1 = end - i == 2 ? UInt32(src[i + 1]) : 0
                        let v = UInt32(src[i]) << 16 | b1 << 8
                        out.put(table[Int(v >> 18)])
                        out.put(table[Int(v >> 12 & 0x3F)])
                        out.put(end - i == 2 ? table[Int(v >> 6 & 0x3F)] : UInt8(ascii: "="))
                        out.put(UInt8(ascii: "="))
                        i = end
                    }
                    out.put(0x0A)
                }
            }
        }
    }
}

// MARK: - Binary

private struct BinaryEmitter {
    /// One object of the file. Containers point into `refs`: arrays hold `count` object
    /// numbers, dictionaries `count` key numbers followed by `count` value numbers.
    enum Object {
        case scalar(Value)
        case array(refsStart: Int, count: Int)
        case dict(refsStart: Int, count: Int)
    }

    var objects: [Object] = []
    var refs: [Int] = []
    var unique = ScalarTable()
    /// Containers by the hash of their kind and references (see `uniqued`).
    var containers: [UInt64: [Int]] = [:]

    static func document(_ value: Value, to out: inout ByteWriter) throws(PlistWriteFailure) {
        var e = BinaryEmitter()
        _ = try e.flatten(value)
        e.write(to: &out)
    }

    /// Numbers `value` and everything under it; returns its object number.
    mutating func flatten(_ value: Value, depth: Int = 0) throws(PlistWriteFailure) -> Int {
        if depth == LargeStack.hopDepth && value.isContainer {  // deeper levels run on a large stack
            var r: Result<Int, PlistWriteFailure> = .failure(PlistWriteFailure(noMemory: LargeStack.noStack()))
            _ = LargeStack.run {
                do throws(PlistWriteFailure) { r = .success(try flattenHere(value, depth: depth)) } catch { r = .failure(error) }
            }
            return try r.get()
        }
        return try flattenHere(value, depth: depth)
    }

    mutating func flattenHere(_ value: Value, depth: Int) throws(PlistWriteFailure) -> Int {
        switch value {
        case .array(let items):
            guard depth < PropertyListWriter.maxDepth else { throw .tooDeep }
            let me = objects.count
            let start = refs.count
            try grow(items.count)
            objects.append(.array(refsStart: start, count: items.count))
            refs.append(contentsOf: repeatElement(0, count: items.count))
            for (i, item) in items.enumerated() {
                do {
                    refs[start + i] = try flatten(item, depth: depth + 1)
                } catch {
                    var e = error
                    e.path.append(.index(i))
                    throw e
                }
            }
            return uniqued(me, refsStart: start, count: items.count, dict: false)
        case .dict(let d):
            guard depth < PropertyListWriter.maxDepth else { throw .tooDeep }
            let me = objects.count
            let start = refs.count
            let n = d.count
            try grow(2 * n)
            objects.append(.dict(refsStart: start, count: n))
            refs.append(contentsOf: repeatElement(0, count: 2 * n))
            let keys = d.keys
            for (i, k) in keys.enumerated() { refs[start + i] = try scalarObject(.string(k)) }
            for (i, v) in d.values.enumerated() {
                do {
                    refs[start + n + i] = try flatten(v, depth: depth + 1)
                } catch {
                    var e = error
                    e.path.append(.key(keys[i]))
                    throw e
                }
            }
            return uniqued(me, refsStart: start, count: 2 * n, dict: true)
        case .null: throw .null
        case .set: throw .set
        case .string, .int, .double, .bool, .data, .date:
            return try scalarObject(value)
        }
    }

    /// Containers are written once, as CoreFoundation uniques them: a container whose
    /// members are the same objects as an earlier container of its kind is that object.
    /// Members are numbered before the container is compared, and an equal container's
    /// members are all earlier objects, so a duplicate adds nothing after its own number:
    /// it is taken back off the end (`me` is the last object, its references the last).
    mutating func uniqued(_ me: Int, refsStart start: Int, count n: Int, dict: Bool) -> Int {
        guard objects.count == me + 1, refs.count == start + n else { return me }
        var h: UInt64 = dict ? 0x9E37_79B9_7F4A_7C15 : 0xC2B2_AE3D_27D4_EB4F
        for i in start..<(start + n) { h = ScalarTable.mix(h ^ UInt64(refs[i])) }
        h = ScalarTable.mix(h ^ UInt64(n))
        if let candidates = containers[h] {
            for k in candidates {
                let (ks, kn, kd): (Int, Int, Bool)
                switch objects[k] {
                case .array(let s0, let c0): (ks, kn, kd) = (s0, c0, false)
                case .dict(let s0, let c0): (ks, kn, kd) = (s0, 2 * c0, true)
                case .scalar: continue
                }
                if kd == dict && kn == n && refs[ks..<(ks + kn)].elementsEqual(refs[start..<(start + n)]) {
                    objects.removeLast()
                    refs.removeLast(n)
                    return k
                }
            }
        }
        containers[h, default: []].append(me)
        return me
    }

    /// Makes room for one more object and `n` more references, checked (`.noMemory`).
    mutating func grow(_ n: Int) throws(PlistWriteFailure) {
        do throws(AFSError) {
            if objects.count == objects.capacity { try objects.checkedReserve(Swift.max(16, 2 * objects.capacity) + n, "the property list's object table") }
            if refs.count + n > refs.capacity { try refs.checkedReserve(Swift.max(2 * refs.capacity, refs.count + n), "the property list's references") }
        } catch {
            throw PlistWriteFailure(noMemory: error)
        }
    }

    /// The object number of a scalar, shared with every equal scalar written before.
    mutating func scalarObject(_ v: Value) throws(PlistWriteFailure) -> Int {
        let h = unique.hash(v)
        if let n = unique.find(v, hash: h, in: objects) { return n }
        let n = objects.count
        try grow(0)
        objects.append(.scalar(v))
        unique.insert(n, hash: h)
        return n
    }

    /// 1, 2, 4 or 8: the fewest bytes for which `limit < 256^size`, as CoreFoundation
    /// requires of reference sizes (against the object count) and offset sizes (against the
    /// offset table's position).
    static func sizeFor(_ limit: Int) -> Int {
        if limit < 1 << 8 { return 1 }
        if limit < 1 << 16 { return 2 }
        if limit < 1 << 32 { return 4 }
        return 8
    }

    func write(to out: inout ByteWriter) {
        let base = out.count
        out.append("bplist00" as StaticString)
        let refSize = Self.sizeFor(objects.count)
        guard (try? Memory.probe(objects.count, of: Int.self, "")) != nil else {
            out.markFailed(objects.count * MemoryLayout<Int>.stride)
            return
        }
        var offsets = [Int](repeating: 0, count: objects.count)
        for (i, object) in objects.enumerated() {
            offsets[i] = out.count - base
            switch object {
            case .scalar(let v): Self.scalar(v, to: &out)
            case .array(let start, let count):
                Self.marker(0xA0, count: count, to: &out)
                Self.refList(refs, start, count, size: refSize, to: &out)
            case .dict(let start, let count):
                Self.marker(0xD0, count: count, to: &out)
                Self.refList(refs, start, 2 * count, size: refSize, to: &out)
            }
        }
        let tableOffset = out.count - base
        let offsetSize = Self.sizeFor(tableOffset)
        guard out.reserve(offsets.count * offsetSize + 32) else { return }
        for o in offsets { Self.bigEndian(UInt64(o), size: offsetSize, to: &out) }
        for _ in 0..<6 { out.put(0) }  // 5 unused bytes and the sort version
        out.put(UInt8(offsetSize))
        out.put(UInt8(refSize))
        Self.bigEndian(UInt64(objects.count), size: 8, to: &out)
        Self.bigEndian(0, size: 8, to: &out)  // the top object is always number 0
        Self.bigEndian(UInt64(tableOffset), size: 8, to: &out)
    }

    @inline(__always)
    static func bigEndian(_ v: UInt64, size: Int, to out: inout ByteWriter) {
        guard out.reserve(size) else { return }
        var shift = 8 * (size - 1)
        while shift >= 0 {
            out.put(UInt8(truncatingIfNeeded: v >> UInt64(shift)))
            shift -= 8
        }
    }

    static func refList(_ refs: [Int], _ start: Int, _ count: Int, size: Int, to out: inout ByteWriter) {
        guard out.reserve(count * size) else { return }
        for i in start..<(start + count) { bigEndian(UInt64(refs[i]), size: size, to: &out) }
    }

    /// An integer object: 1, 2 or 4 bytes unsigned when it fits, else 8 bytes signed.
    static func integer(_ i: Int64, to out: inout ByteWriter) {
        if i < 0 || i > 0xFFFF_FFFF {
            out.append(0x13)
            bigEndian(UInt64(bitPattern: i), size: 8, to: &out)
        } else if i > 0xFFFF {
            out.append(0x12)
            bigEndian(UInt64(i), size: 4, to: &out)
        } else if i > 0xFF {
            out.append(0x11)
            bigEndian(UInt64(i), size: 2, to: &out)
        } else {
            out.append(0x10)
            out.append(UInt8(i))
        }
    }

    /// A type marker with its count: in the low nibble below 15, else `0xF` and an integer.
    static func marker(_ type: UInt8, count: Int, to out: inout ByteWriter) {
        if count < 15 {
            out.append(type | UInt8(count))
        } else {
            out.append(type | 0x0F)
            integer(Int64(count), to: &out)
        }
    }

    static func scalar(_ v: Value, to out: inout ByteWriter) {
        switch v {
        case .string(let s): string(s, to: &out)
        case .int(let i): integer(i, to: &out)
        case .double(let d):
            out.append(0x23)
            bigEndian(d.bitPattern, size: 8, to: &out)
        case .bool(let b): out.append(b ? 0x09 : 0x08)
        case .data(let bytes):
            marker(0x40, count: bytes.count, to: &out)
            out.append(bytes)
        case .date(let t):
            out.append(0x33)
            bigEndian((t - DateText.epoch2001).bitPattern, size: 8, to: &out)
        case .null, .array, .set, .dict: break  // never a scalar object
        }
    }

    /// ASCII text as type 5; anything else as UTF-16BE (type 6), counted in UTF-16 units.
    static func string(_ s: String, to out: inout ByteWriter) {
        var s = s
        s.withUTF8 { bytes in
            var nonASCII = 0, fourByte = 0, continuation = 0
            for b in bytes where b >= 0x80 {
                nonASCII += 1
                if b < 0xC0 { continuation += 1 } else if b >= 0xF0 { fourByte += 1 }
            }
            if nonASCII == 0 {
                marker(0x50, count: bytes.count, to: &out)
                out.append(bytes)
                return
            }
            // Scalars (bytes that start one) plus one more unit for each surrogate pair.
            let units = bytes.count - continuation + fourByte
            marker(0x60, count: units, to: &out)
            guard out.reserve(2 * units) else { return }
            let n = bytes.count
            var i = 0
            while i < n {
                let b0 = UInt32(bytes[i])
                var scalar: UInt32
                if b0 < 0x80 {
                    scalar = b0
                    i += 1
                } else if b0 < 0xE0 {
                    scalar = (b0 & 0x1F) << 6 | UInt32(bytes[i + 1] & 0x3F)
                    i += 2
                } else if b0 < 0xF0 {
                    scalar = (b0 & 0x0F) << 12 | UInt32(bytes[i + 1] & 0x3F) << 6 | UInt32(bytes[i + 2] & 0x3F)
                    i += 3
                } else {
                    scalar = (b0 & 0x07) << 18 | UInt32(bytes[i + 1] & 0x3F) << 12
                        | UInt32(bytes[i + 2] & 0x3F) << 6 | UInt32(bytes[i + 3] & 0x3F)
                    i += 4
                }
                if scalar >= 0x10000 {
                    scalar -= 0x10000
                    let hi = 0xD800 + (scalar >> 10), lo = 0xDC00 + (scalar & 0x3FF)
                    out.put(UInt8(hi >> 8)); out.put(UInt8(hi & 0xFF))
                    out.put(UInt8(lo >> 8)); out.put(UInt8(lo & 0xFF))
                } else {
                    out.put(UInt8(scalar >> 8)); out.put(UInt8(scalar & 0xFF))
                }
            }
        }
    }
}

// MARK: - Uniquing scalars

/// An open-addressing set of scalar objects for the binary writer: equal scalars (same
/// kind and same bytes; doubles by bit pattern, so `-0.0` and `0.0` stay apart) map to one
/// object number. Hashes are seeded per process.
private struct ScalarTable {
    struct Entry {
        var hash: UInt64
        var object: Int  // -1: empty
    }

    static let seed = UInt64.random(in: .min ... .max)

    var entries = [Entry](repeating: Entry(hash: 0, object: -1), count: 64)
    var count = 0

    @inline(__always)
    static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static func hashBytes(_ b: UnsafeRawBufferPointer, kind: UInt64) -> UInt64 {
        let n = b.count
        var h = mix(seed ^ kind ^ UInt64(n) << 8)
        var i = 0
        while i + 8 <= n {
            h = mix(h ^ b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            i += 8
        }
        if i < n {
            var t: UInt64 = 0
            while i < n {
                t = t << 8 | UInt64(b[i])
                i += 1
            }
            h = mix(h ^ t)
        }
        return h
    }

    func hash(_ v: Value) -> UInt64 {
        switch v {
        case .int(let i): return Self.mix(Self.seed ^ 1 ^ Self.mix(UInt64(bitPattern: i)))
        case .double(let d): return Self.mix(Self.seed ^ 2 ^ Self.mix(d.bitPattern))
        case .bool(let b): return Self.mix(Self.seed ^ (b ? 3 : 4))
        case .string(var s): return s.withUTF8 { Self.hashBytes(UnsafeRawBufferPointer($0), kind: 5) }
        case .data(let d): return d.withUnsafeBytes { Self.hashBytes($0, kind: 6) }
        case .date(let t): return Self.mix(Self.seed ^ 7 ^ Self.mix(t.bitPattern))
        case .null, .array, .set, .dict: return 0
        }
    }

    static func same(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        case (.bool(let x), .bool(let y)): return x == y
        case (.string(var x), .string(var y)):
            return x.withUTF8 { p in
                y.withUTF8 { q in
                    p.count == q.count && (p.count == 0 || memcmp(p.baseAddress!, q.baseAddress!, p.count) == 0)
                }
            }
        case (.data(let x), .data(let y)): return x == y
        case (.date(let x), .date(let y)): return x.bitPattern == y.bitPattern
        default: return false
        }
    }

    func find(_ v: Value, hash h: UInt64, in objects: [BinaryEmitter.Object]) -> Int? {
        let mask = entries.count - 1
        var i = Int(truncatingIfNeeded: h) & mask
        while true {
            let e = entries[i]
            if e.object < 0 { return nil }
            if e.hash == h, case .scalar(let w) = objects[e.object], Self.same(v, w) { return e.object }
            i = (i + 1) & mask
        }
    }

    mutating func insert(_ object: Int, hash h: UInt64) {
        if 2 * (count + 1) > entries.count { grow() }
        let mask = entries.count - 1
        var i = Int(truncatingIfNeeded: h) & mask
        while entries[i].object >= 0 { i = (i + 1) & mask }
        entries[i] = Entry(hash: h, object: object)
        count += 1
    }

    mutating func grow() {
        let old = entries
        entries = [Entry](repeating: Entry(hash: 0, object: -1), count: old.count * 2)
        let mask = entries.count - 1
        for e in old where e.object >= 0 {
            var i = Int(truncatingIfNeeded: e.hash) & mask
            while entries[i].object >= 0 { i = (i + 1) & mask }
            entries[i] = e
        }
    }
}
