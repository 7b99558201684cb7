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

    public init() {}

    func flush() {
        if text.isEmpty || stack.isEmpty { text.removeAll(keepingCapacity: true); return }
        stack[stack.count - 1].items.append(.string(String(decoding: text, as: UTF8.self)))
        text.removeAll(keepingCapacity: true)
    }

    public func startElement(qname: XMLText, nsURI: XMLText, localName: XMLText, attributes: UnsafeBufferPointer<XMLAttribute>) -> Bool {
        flush()
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
        text.append(contentsOf: t.bytes)
        return true
    }

    public func comment(_ text: XMLText) -> Bool { true }
    public func processingInstruction(target: XMLText, data: XMLText) -> Bool { true }

    /// The JsonML tree of a whole document.
    /// - Throws: `.invalidXML`, `.limit` (nesting beyond 512, entity expansion beyond
    ///   `maxExpandedBytes`), `.noMemory`.
    public static func parse(_ body: UnsafeBufferPointer<UInt8>, maxExpandedBytes: Int? = nil) throws(AFSError) -> Value {
        let b = XMLTreeBuilder()
        var limits = XMLLimits()
        limits.maxExpandedBytes = maxExpandedBytes
        try XMLPushParser.parse(body, sink: b, limits: limits)
        guard let r = b.root else { throw AFSError(.invalidXML, "not well-formed: no root element") }
        return r
    }
}
