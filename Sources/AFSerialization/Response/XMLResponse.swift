// AFXMLParserResponseSerializer / AFXMLDocumentResponseSerializer: the XML body as a
// JsonML tree (jsonml.org).

/// Builds the JsonML tree of a document from the reader's events: an element is an array
/// `[qname, {attributes}, children...]` (the attribute dictionary always present, with the
/// namespace declarations as written), text children are strings (adjacent runs joined,
/// also across comments and PIs, which are not in the tree).
public final class XMLTreeBuilder: XMLEventSink {
    struct Frame {
        var items: [Value]
    }
    var stack: [Frame] = []
    var text: [UInt8] = []
    public private(set) var root: Value? = nil
    /// What the tree is charged as `DecodeBudget` counts it (32 per value plus the bytes
    /// of strings and keys), and the most it may be; beyond, the parse stops with `.limit`.
    var charged = 0
    let maxCharge: Int
    var overLimit: AFSError? = nil

    public init(maxCharge: Int = Int.max) { self.maxCharge = maxCharge }

    /// Charges `n`; false (and `overLimit` set) beyond the limit.
    func charge(_ n: Int) -> Bool {
        charged += n
        if charged <= maxCharge { return true }
        overLimit = AFSError(.limit, "the XML tree exceeds the decoding limit of \(maxCharge) bytes")
        return false
    }

    func flush() {
        if text.isEmpty || stack.isEmpty { text.removeAll(keepingCapacity: true); return }
        stack[stack.count - 1].items.append(.string(String(decoding: text, as: UTF8.self)))
        text.removeAll(keepingCapacity: true)
    }

    public func startElement(qname: XMLText, nsURI: XMLText, localName: XMLText, attributes: UnsafeBufferPointer<XMLAttribute>) -> Bool {
        flush()
        var cost = 3 * DecodeBudget.bytesPerValue + qname.count
        for a in attributes { cost += 2 * DecodeBudget.bytesPerValue + a.qname.count + a.value.count }
        guard charge(cost) else { return false }
        // (names are unique: the reader checked them)
        let attrs = attributes.isEmpty ? ValueDict()
            : ValueDict(count: attributes.count) { (attributes[$0].qname.string, Value.string(attributes[$0].value.string)) }
        stack.append(Frame(items: [.string(qname.string), .dict(attrs)]))
        return true
    }

    public func endElement(qname: XMLText, nsURI: XMLText, localName: XMLText) -> Bool {
        flush()
        guard let f = stack.popLast() else { return false }
        let v = Value.array(f.items)
        if stack.isEmpty { root = v } else { stack[stack.count - 1].items.append(v) }
        return true
    }

    public func characters(_ t: XMLText) -> Bool {
        guard charge(t.count + (text.isEmpty ? DecodeBudget.bytesPerValue : 0)) else { return false }
        text.append(contentsOf: t.bytes)
        return true
    }

    public func comment(_ text: XMLText) -> Bool { true }
    public func processingInstruction(target: XMLText, data: XMLText) -> Bool { true }

    /// The JsonML tree of a whole document.
    /// - Throws: `.invalidXML`, `.limit` (nesting beyond 512, entity expansion beyond
    ///   `maxExpandedBytes`), `.noMemory`.
    ///   `maxExpandedBytes` also bounds the tree as `DecodeBudget` charges it.
    public static func parse(_ body: UnsafeBufferPointer<UInt8>, maxExpandedBytes: Int? = nil) throws(AFSError) -> Value {
        let b = XMLTreeBuilder(maxCharge: maxExpandedBytes ?? DecodeBudget.defaultLimit(bodySize: body.count))
        var limits = XMLLimits()
        limits.maxExpandedBytes = maxExpandedBytes
        do {
            try XMLPushParser.parse(body, sink: b, limits: limits)
        } catch {
            throw b.overLimit ?? error
        }
        guard let r = b.root else { throw AFSError(.invalidXML, "not well-formed: no root element") }
        return r
    }
}
