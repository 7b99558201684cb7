// A strict DER reader (ITU-T X.690 distinguished encoding): definite lengths in their
// shortest form, no bytes after the outermost element, every read bounds checked, a nesting
// limit. It reads what the X.509 reader needs and nothing more; every error is
// `.invalidArgument` with a message naming the field and the byte offset (from the start of
// the outermost element).

/// One DER element: its tag byte, where its header and contents are, and the contents.
public struct DERElement {
    /// The identifier octet (class, constructed bit, tag number 0...30).
    public let tag: UInt8
    /// Offset of the identifier octet in the outermost buffer.
    public let offset: Int
    /// Offset of the first contents byte.
    public let contentsOffset: Int
    /// The contents (a slice of the outermost buffer, with the outermost indices).
    public let contents: ArraySlice<UInt8>
    /// The whole element: identifier, length and contents.
    public let encoded: ArraySlice<UInt8>

    public var isConstructed: Bool { tag & 0x20 != 0 }
}

public enum DER {
    /// Elements may nest this deep by default (a certificate needs about 8 levels);
    /// `SecurityLimits.maxDERDepth` changes it, up to `depthCeiling`.
    public static let maxDepth = 32
    /// The deepest nesting a caller may allow (`validate` recurses once per level).
    public static let depthCeiling = 256

    /// An error naming the field and the offset.
    static func error(_ field: String, _ offset: Int, _ why: String) -> AFSError {
        AFSError(.invalidArgument, "\(field) at byte offset \(offset): \(why)")
    }

    /// Tag names for messages.
    static func tagName(_ t: UInt8) -> String {
        switch t {
        case 0x01: return "BOOLEAN"
        case 0x02: return "INTEGER"
        case 0x03: return "BIT STRING"
        case 0x04: return "OCTET STRING"
        case 0x05: return "NULL"
        case 0x06: return "OBJECT IDENTIFIER"
        case 0x0C: return "UTF8String"
        case 0x13: return "PrintableString"
        case 0x16: return "IA5String"
        case 0x17: return "UTCTime"
        case 0x18: return "GeneralizedTime"
        case 0x30: return "SEQUENCE"
        case 0x31: return "SET"
        default:
            let cls = ["universal", "application", "context", "private"][Int(t >> 6)]
            return "[\(cls) \(t & 0x1F)\(t & 0x20 != 0 ? ", constructed" : "")]"
        }
    }
}

/// Reads the elements of one contents range in order.
public struct DERReader {
    let bytes: ArraySlice<UInt8>
    /// The next element's offset.
    public private(set) var position: Int
    let end: Int
    let depth: Int
    /// The nesting limit (`DER.maxDepth` unless the caller's limits say otherwise).
    let maxDepth: Int

    /// A reader of the whole buffer (one element is expected: see `readOnly`).
    public init(_ bytes: ArraySlice<UInt8>, maxDepth: Int = DER.maxDepth) {
        self.bytes = bytes
        position = bytes.startIndex
        end = bytes.endIndex
        depth = 0
        self.maxDepth = min(maxDepth, DER.depthCeiling)
    }

    init(_ bytes: ArraySlice<UInt8>, range: Range<Int>, depth: Int, maxDepth: Int) {
        self.bytes = bytes
        position = range.lowerBound
        end = range.upperBound
        self.depth = depth
        self.maxDepth = maxDepth
    }

    public var isAtEnd: Bool { position >= end }

    /// The next element's tag, or nil at the end.
    public var peekTag: UInt8? { position < end ? bytes[position] : nil }

    /// Reads the next element, which must exist and (when `tag` is given) have that tag.
    public mutating func read(_ field: String, tag: UInt8? = nil) throws(AFSError) -> DERElement {
        let start = position
        guard start < end else { throw DER.error(field, start, "missing (the enclosing element ends here)") }
        let t = bytes[start]
        if let want = tag, t != want {
            throw DER.error(field, start, "expected \(DER.tagName(want)), found \(DER.tagName(t)) (tag 0x\(hex(t)))")
        }
        if t & 0x1F == 0x1F {
            throw DER.error(field, start, "a high tag number (0x\(hex(t)) followed by more identifier bytes) is not used by X.509")
        }
        var p = start + 1
        guard p < end else { throw DER.error(field, start, "truncated: no length byte") }
        let first = bytes[p]
        p += 1
        var length: Int
        if first < 0x80 {
            length = Int(first)
        } else if first == 0x80 {
            throw DER.error(field, start, "indefinite length (BER, not DER)")
        } else {
            let n = Int(first & 0x7F)
            guard n <= 4 else { throw DER.error(field, start, "a length of \(n) length bytes is too large") }
            guard p + n <= end else { throw DER.error(field, start, "truncated: \(n) length bytes announced, \(end - p) left") }
            if bytes[p] == 0 { throw DER.error(field, start, "non-minimal length (a leading zero length byte)") }
            length = 0
            for k in 0..<n { length = length << 8 | Int(bytes[p + k]) }
            p += n
            if length < 0x80 { throw DER.error(field, start, "non-minimal length (\(length) in the long form)") }
        }
        guard length <= end - p else {
            throw DER.error(field, start, "truncated: length \(length) but \(end - p) bytes left")
        }
        position = p + length
        return DERElement(tag: t, offset: start, contentsOffset: p, contents: bytes[p..<(p + length)],
                          encoded: bytes[start..<(p + length)])
    }

    /// Reads the next element if it has `tag`.
    public mutating func readOptional(_ field: String, tag: UInt8) throws(AFSError) -> DERElement? {
        guard peekTag == tag else { return nil }
        return try read(field, tag: tag)
    }

    /// A reader of a constructed element's contents, one level deeper.
    public func enter(_ e: DERElement, _ field: String) throws(AFSError) -> DERReader {
        guard e.isConstructed else { throw DER.error(field, e.offset, "expected a constructed element, found \(DER.tagName(e.tag))") }
        guard depth + 1 <= maxDepth else {
            throw DER.error(field, e.offset, "nested deeper than \(maxDepth) levels")
        }
        return DERReader(bytes, range: e.contents.startIndex..<e.contents.endIndex, depth: depth + 1, maxDepth: maxDepth)
    }

    /// Throws unless every element has been read.
    public func finish(_ field: String) throws(AFSError) {
        if position < end {
            throw DER.error(field, position, "\(end - position) unexpected bytes after its last element")
        }
    }

    /// Checks that every element inside `e` (recursively, constructed ones entered) is
    /// well-formed DER, within the nesting limit.
    public func validate(_ e: DERElement, _ field: String) throws(AFSError) {
        guard e.isConstructed else { return }
        var r = try enter(e, field)
        while !r.isAtEnd {
            let c = try r.read(field)
            try r.validate(c, field)
        }
    }

    func hex(_ b: UInt8) -> String {
        let d = Array("0123456789abcdef".utf8)
        return String(decoding: [d[Int(b >> 4)], d[Int(b & 15)]], as: UTF8.self)
    }
}

extension DERElement {
    /// A BOOLEAN's value (DER: 0x00 or 0xFF).
    public func boolean(_ field: String) throws(AFSError) -> Bool {
        guard contents.count == 1 else { throw DER.error(field, offset, "a BOOLEAN must hold one byte, not \(contents.count)") }
        switch contents[contents.startIndex] {
        case 0x00: return false
        case 0xFF: return true
        default: throw DER.error(field, offset, "a DER BOOLEAN is 0x00 or 0xFF")
        }
    }

    /// Checks an INTEGER's encoding (not empty, minimal) and returns its value when it fits
    /// an Int64 (nil for larger ones).
    @discardableResult
    public func integer(_ field: String) throws(AFSError) -> Int64? {
        let c = contents
        guard let f = c.first else { throw DER.error(field, offset, "an INTEGER must not be empty") }
        if c.count > 1 {
            let s = c[c.startIndex + 1]
            if (f == 0x00 && s & 0x80 == 0) || (f == 0xFF && s & 0x80 != 0) {
                throw DER.error(field, offset, "non-minimal INTEGER encoding")
            }
        }
        guard c.count <= 8 else { return nil }
        var v: Int64 = f & 0x80 != 0 ? -1 : 0
        for b in c { v = v << 8 | Int64(b) }
        return v
    }

    /// Checks an OBJECT IDENTIFIER's encoding (not empty, minimal arcs, last byte ends an arc).
    public func checkOID(_ field: String) throws(AFSError) {
        let c = contents
        guard !c.isEmpty else { throw DER.error(field, offset, "an OBJECT IDENTIFIER must not be empty") }
        var atArcStart = true
        for i in c.indices {
            if atArcStart && c[i] == 0x80 { throw DER.error(field, contentsOffset + (i - c.startIndex), "non-minimal OBJECT IDENTIFIER arc") }
            atArcStart = c[i] & 0x80 == 0
        }
        guard atArcStart else { throw DER.error(field, offset, "the OBJECT IDENTIFIER's last arc is cut off") }
    }

    /// The dotted form of an OBJECT IDENTIFIER (for messages); call `checkOID` first.
    public var oidText: String {
        var arcs: [UInt64] = []
        var v: UInt64 = 0
        for b in contents {
            v = v << 7 | UInt64(b & 0x7F)
            if b & 0x80 == 0 { arcs.append(v); v = 0 }
            if v > UInt64.max >> 8 { return "(a very long OID)" }
        }
        guard let first = arcs.first else { return "" }
        let head = first < 40 ? [0, first] : first < 80 ? [1, first - 40] : [2, first - 80]
        return (head + arcs.dropFirst()).map { String($0) }.joined(separator: ".")
    }
}
