// afs_xml_*: the XML reader's events and push parser (header section 11).
import AFSerialization
import CAFSerialization

/// Calls a C `afs_xml_handler`.
final class CXMLSink: XMLEventSink {
    let h: afs_xml_handler
    let ctx: UnsafeMutableRawPointer?
    /// The C attributes of the start tag being reported (reused: no allocation per tag once
    /// it is large enough; the reader's own buffer of as many attributes is checked first).
    var attrs: UnsafeMutablePointer<afs_xml_attribute>? = nil
    var attrCapacity = 0

    init(_ h: afs_xml_handler?, _ ctx: UnsafeMutableRawPointer?) {
        self.h = h ?? afs_xml_handler()
        self.ctx = ctx
    }

    deinit { attrs?.deallocate() }

    @inline(__always) private func cs(_ t: XMLText) -> UnsafePointer<CChar> {
        UnsafeRawPointer(t.start).assumingMemoryBound(to: CChar.self)
    }

    func startElement(qname: XMLText, nsURI: XMLText, localName: XMLText, attributes: UnsafeBufferPointer<XMLAttribute>) -> Bool {
        guard let f = h.start_element else { return true }
        if attributes.count > attrCapacity || attrs == nil {
            attrs?.deallocate()
            attrCapacity = Swift.max(attributes.count, 2 * attrCapacity, 8)
            attrs = UnsafeMutablePointer<afs_xml_attribute>.allocate(capacity: attrCapacity)
        }
        var n = 0
        if let out = attrs {
            for a in attributes where !a.isNamespaceDeclaration {
                out[n] = afs_xml_attribute(qname: cs(a.qname), ns_uri: cs(a.nsURI), local_name: cs(a.localName), value: cs(a.value))
                n += 1
            }
        }
        return f(ctx, cs(qname), cs(nsURI), cs(localName), UnsafePointer(attrs), n) == 0
    }

    func endElement(qname: XMLText, nsURI: XMLText, localName: XMLText) -> Bool {
        guard let f = h.end_element else { return true }
        return f(ctx, cs(qname), cs(nsURI), cs(localName)) == 0
    }

    func characters(_ text: XMLText) -> Bool {
        guard let f = h.characters else { return true }
        return f(ctx, cs(text), text.count) == 0
    }

    func comment(_ text: XMLText) -> Bool {
        guard let f = h.comment else { return true }
        return f(ctx, cs(text), text.count) == 0
    }

    func processingInstruction(target: XMLText, data: XMLText) -> Bool {
        guard let f = h.processing_instruction else { return true }
        return f(ctx, cs(target), cs(data)) == 0
    }
}

/// `afs_xml_parser`.
final class XMLParserHandle: Handle {
    let parser: XMLPushParser
    var fed = false
    var busy = false
    /// afs_xml_parser_free was called from one of its callbacks: freed when the call returns.
    var freeDeferred = false
    init(_ p: XMLPushParser) { parser = p }
    override class var cName: String { "afs_xml_parser" }
}

private func xmlCall(_ p: OpaquePointer?, _ call: String, _ err: UnsafeMutablePointer<afs_error>?,
                     _ body: (XMLParserHandle) throws -> Void) -> afs_status {
    status(err) {
        let h = try unbox(p, XMLParserHandle.self, "p")
        guard !h.busy else { throw AFSError(.state, "\(call) was called from inside a callback of the same parser") }
        h.busy = true
        defer {
            h.busy = false
            if h.freeDeferred { Unmanaged.passUnretained(h).release() }  // the caller's reference ends here
        }
        try body(h)
    }
}

@c @implementation
public func afs_xml_parse(_ xml: UnsafePointer<UInt8>?, _ len: Int, _ handler: UnsafePointer<afs_xml_handler>?,
                          _ ctx: UnsafeMutableRawPointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let b = try dataArg(xml.map { UnsafeRawPointer($0) }, len, "xml", lenName: "len")
        try XMLPushParser.parse(b.bindMemory(to: UInt8.self), sink: CXMLSink(handler?.pointee, ctx))
    }
}

@c @implementation
public func afs_xml_parser_new(_ handler: UnsafePointer<afs_xml_handler>?, _ ctx: UnsafeMutableRawPointer?,
                               _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) { box(XMLParserHandle(XMLPushParser(sink: CXMLSink(handler?.pointee, ctx)))) }
}

@c @implementation
public func afs_xml_parser_set_limits(_ p: OpaquePointer?, _ maxDepth: Int, _ maxExpandedBytes: UInt64,
                                      _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    xmlCall(p, "afs_xml_parser_set_limits", err) { h in
        guard !h.fed else { throw AFSError(.state, "afs_xml_parser_set_limits was called after the first feed") }
        h.parser.limits.maxDepth = maxDepth == 0 ? 512 : maxDepth
        h.parser.limits.maxExpandedBytes = maxExpandedBytes == 0 ? nil : Int(clamping: maxExpandedBytes)
    }
}

@c @implementation
public func afs_xml_parser_feed(_ p: OpaquePointer?, _ bytes: UnsafePointer<UInt8>?, _ len: Int,
                                _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    xmlCall(p, "afs_xml_parser_feed", err) { h in
        let b = try dataArg(bytes.map { UnsafeRawPointer($0) }, len, "bytes", lenName: "len")
        h.fed = true
        try h.parser.feed(b.bindMemory(to: UInt8.self))
    }
}

@c @implementation
public func afs_xml_parser_finish(_ p: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    xmlCall(p, "afs_xml_parser_finish", err) { h in
        h.fed = true
        try h.parser.finish()
    }
}

@c @implementation
public func afs_xml_parser_free(_ p: OpaquePointer?) {
    if let h = peek(p, XMLParserHandle.self), h.busy {
        h.freeDeferred = true  // called from a callback: freed when the running call returns
        return
    }
    release(p, XMLParserHandle.self)
}
