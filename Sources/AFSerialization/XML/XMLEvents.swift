// The events of the XML reader, as borrowed byte views (valid during the callback only).

/// A borrowed UTF-8 string: `count` bytes at `start`, followed by a NUL (so C callers may
/// read it as a C string). Valid only during the callback that receives it.
public struct XMLText {
    public let start: UnsafePointer<UInt8>
    public let count: Int
    public init(start: UnsafePointer<UInt8>, count: Int) { self.start = start; self.count = count }
    public var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: start, count: count) }
    public var string: String { String(decoding: bytes, as: UTF8.self) }
}

/// One attribute of a start tag (after normalization, XML 1.0 section 3.3.3).
public struct XMLAttribute {
    public let qname: XMLText
    /// "" when the attribute has no namespace.
    public let nsURI: XMLText
    public let localName: XMLText
    public let value: XMLText
    /// `xmlns` or `xmlns:p`: a namespace declaration (reported by the tree, not by the C
    /// events).
    public let isNamespaceDeclaration: Bool
}

/// What the reader reports. Each method returns false to stop the parse (the reader then
/// fails with `.state`, "stopped by the handler").
public protocol XMLEventSink: AnyObject {
    func startElement(qname: XMLText, nsURI: XMLText, localName: XMLText, attributes: UnsafeBufferPointer<XMLAttribute>) -> Bool
    func endElement(qname: XMLText, nsURI: XMLText, localName: XMLText) -> Bool
    /// Character data (CDATA sections included); adjacent runs may be split anywhere
    /// between characters.
    func characters(_ text: XMLText) -> Bool
    func comment(_ text: XMLText) -> Bool
    func processingInstruction(target: XMLText, data: XMLText) -> Bool
}

/// The reader's limits.
public struct XMLLimits: Sendable {
    /// Element nesting (entities included); beyond: `.limit`. Default 512 as the other readers.
    public var maxDepth = 512
    /// Bytes of entity replacement text expanded in total; nil: `DecodeBudget`'s default
    /// (64 × the decoded input so far + 1 MiB). Beyond: `.limit`.
    public var maxExpandedBytes: Int? = nil
    /// Nested entity references (an entity whose replacement text refers to another ...).
    public var maxEntityNesting = 64
    public init() {}
}

/// A growable buffer of trivial values in manually managed memory: the reader's scratch
/// space for events (no reference counting on the hot path). The owner calls `free()`.
struct XMLScratch<T> {
    private(set) var base: UnsafeMutablePointer<T>? = nil
    private(set) var capacity = 0
    var count = 0

    mutating func reserve(_ n: Int) throws(AFSError) {
        if n <= capacity { return }
        let newCap = Swift.max(n, capacity * 2, 64)
        try Memory.probe(newCap, of: T.self, "the XML reader's event buffer")
        let p = UnsafeMutablePointer<T>.allocate(capacity: newCap)
        if let b = base {
            p.moveInitialize(from: b, count: count)
            b.deallocate()
        }
        base = p
        capacity = newCap
    }

    @inline(__always) mutating func append(_ x: T) throws(AFSError) {
        if count == capacity { try reserve(count + 1) }
        (base! + count).initialize(to: x)
        count += 1
    }

    mutating func free() {
        base?.deallocate()
        base = nil
        capacity = 0
        count = 0
    }
}

extension XMLScratch where T == UInt8 {
    @inline(__always) mutating func append(_ b: UnsafeBufferPointer<UInt8>) throws(AFSError) {
        if count + b.count > capacity { try reserve(count + b.count) }
        if let s = b.baseAddress, b.count > 0 { (base! + count).update(from: s, count: b.count) }
        count += b.count
    }
}
