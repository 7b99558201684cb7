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

/// The JsonML tree of `XMLTreeBuilder` built straight into a `JSONDocument` (a tape of
/// 16-byte nodes and one text buffer) instead of `Value` arrays: no allocation, reference
/// count or string object per element. `afs_response_object` hands the document to C as
/// it does a JSON body's; `document.value()` is the tree `XMLTreeBuilder` builds (same
/// shape, same text joining, same charges against the same limit).
final class XMLTapeBuilder: XMLEventSink {
    typealias Node = JSONDocument.Node
    var nodes: UnsafeMutablePointer<Node>
    var count = 0
    var capacity: Int
    /// Nodes below this were pre-faulted (or the block is small): `count <= ready <= capacity`.
    var ready: Int
    var text: UnsafeMutablePointer<UInt8>
    var textCount = 0
    var textCapacity: Int
    /// Text bytes below this were pre-faulted: `textCount <= textReady <= textCapacity`.
    var textReady: Int
    /// Where the pending character data starts in `text` (it runs to `textCount`), or -1.
    var pending = -1
    /// The open elements: node index of each element's array, and its member count.
    var open: XMLScratch<(node: Int, members: Int)> = XMLScratch()
    /// The deepest element nesting seen.
    var deepest = 0
    var finished = false
    var failure: AFSError? = nil
    /// As `XMLTreeBuilder`: charged bytes and the most they may be.
    var charged = 0
    let maxCharge: Int

    init(inputSize n: Int, maxCharge: Int) throws(AFSError) {
        self.maxCharge = maxCharge
        // Room for the tree of a markup-dense document (4 bytes of nodes per input byte;
        // `<a/>` is 12) and for text as long as the input, so that a large tree rarely
        // grows (each step a copy into fresh pages); pages never written are never
        // backed, and `finish` gives back what stayed unused.
        let c = Swift.max(64, n / 4)
        guard let p = afsMalloc(c &* MemoryLayout<Node>.stride) else {
            throw AFSError.noMemory("an XML tree's nodes", bytes: c &* MemoryLayout<Node>.stride)
        }
        nodes = p.bindMemory(to: Node.self, capacity: c)
        capacity = c
        ready = 0
        let t = Swift.max(64, n &+ 64)
        guard let q = afsMalloc(t) else {
            free(p)
            throw AFSError.noMemory("an XML tree's text", bytes: t)
        }
        text = q.bindMemory(to: UInt8.self, capacity: t)
        textCapacity = t
        textReady = 0
    }

    /// Pre-faults `bytes` at `p` in one system call (`MADV_POPULATE_WRITE`, Linux 5.14+;
    /// elsewhere, or when refused, the pages fault in one by one as they are written): the
    /// tree is written front to back into fresh memory, a page-fault trap per 4 KiB is most
    /// of what building it costs beyond the events.
    static func prefault(_ p: UnsafeMutableRawPointer, _ bytes: Int) {
        #if os(Linux)
        let page = 4096
        let start = (Int(bitPattern: p) + page - 1) & ~(page - 1)
        let end = (Int(bitPattern: p) + bytes) & ~(page - 1)
        if end > start, let a = UnsafeMutableRawPointer(bitPattern: start) {
            _ = madvise(a, end - start, 23 /* MADV_POPULATE_WRITE */)
        }
        #endif
    }

    /// Bytes pre-faulted at a time (nothing for blocks below it, which `malloc` mostly
    /// serves from memory already touched).
    static let prefaultChunk = 1 << 20

    deinit {
        open.free()
        if !finished { free(nodes); free(text) }
    }

    @inline(__always)
    func charge(_ n: Int) -> Bool {
        charged &+= n
        if charged <= maxCharge { return true }
        failure = AFSError(.limit, "the XML tree exceeds the decoding limit of \(maxCharge) bytes")
        return false
    }

    func growNodes() -> Bool {
        let c = capacity &* 2
        let (bytes, o) = c.multipliedReportingOverflow(by: MemoryLayout<Node>.stride)
        guard !o, let p = afsRealloc(nodes, bytes) else {
            failure = AFSError.noMemory("an XML tree's nodes", bytes: o ? Int.max : bytes)
            return false
        }
        nodes = p.bindMemory(to: Node.self, capacity: c)
        capacity = c
        return true
    }

    /// Room for a node at `count`: grows the block when full, then pre-faults the next chunk.
    func moreNodes() -> Bool {
        if count == capacity && !growNodes() { return false }
        let stride = MemoryLayout<Node>.stride
        let next = Swift.min(capacity, ready &+ XMLTapeBuilder.prefaultChunk / stride)
        if capacity &* stride >= XMLTapeBuilder.prefaultChunk {
            XMLTapeBuilder.prefault(UnsafeMutableRawPointer(nodes + ready), (next &- ready) &* stride)
        }
        ready = next
        return true
    }

    /// Room for `n` more text bytes.
    func reserveText(_ n: Int) -> Bool {
        let (need, o) = textCount.addingReportingOverflow(n)
        if !o && need <= textReady { return true }
        return moreText(need, o)
    }

    func moreText(_ need: Int, _ o: Bool) -> Bool {
        if !o && need <= textCapacity {
            let next = Swift.min(textCapacity, Swift.max(need, textReady &+ XMLTapeBuilder.prefaultChunk))
            if textCapacity >= XMLTapeBuilder.prefaultChunk {
                XMLTapeBuilder.prefault(UnsafeMutableRawPointer(text + textReady), next &- textReady)
            }
            textReady = next
            return true
        }
        var c = textCapacity &* 2
        if o || need > c { c = o ? Int.max : need }
        guard !o, let p = afsRealloc(text, c) else {
            failure = AFSError.noMemory("an XML tree's text", bytes: c)
            return false
        }
        text = p.bindMemory(to: UInt8.self, capacity: c)
        textCapacity = c
        return moreText(need, false)
    }

    @inline(__always)
    func push(_ tag: JSONDocument.Tag, _ head: Int, _ word: Int) -> Bool {
        if count == ready && !moreNodes() { return false }
        nodes[count] = Node(head: tag.rawValue | UInt64(truncatingIfNeeded: head) << 4, word: UInt64(truncatingIfNeeded: word))
        count &+= 1
        return true
    }

    /// A string node for `s`, its bytes (and a NUL) appended to the text.
    @inline(__always)
    func pushString(_ s: XMLText) -> Bool {
        guard reserveText(s.count &+ 1) else { return false }
        if s.count > 0 { (text + textCount).update(from: s.start, count: s.count) }
        text[textCount &+ s.count] = 0
        let ok = push(.string, s.count, textCount)
        textCount &+= s.count &+ 1
        return ok
    }

    /// Ends the pending character data: a string member of the open element (dropped
    /// outside the root element).
    @inline(__always)
    func flush() -> Bool {
        guard pending >= 0 else { return true }
        let start = pending
        pending = -1
        let n = textCount &- start
        if n == 0 || open.count == 0 { textCount = start; return true }
        guard reserveText(1) else { return false }
        text[textCount] = 0
        textCount &+= 1
        open.base![open.count &- 1].members &+= 1
        return push(.string, n, start)
    }

    func startElement(qname: XMLText, nsURI: XMLText, localName: XMLText, attributes: UnsafeBufferPointer<XMLAttribute>) -> Bool {
        guard flush() else { return false }
        var cost = 3 * DecodeBudget.bytesPerValue + qname.count
        for a in attributes { cost += 2 * DecodeBudget.bytesPerValue + a.qname.count + a.value.count }
        guard charge(cost) else { return false }
        if open.count > 0 { open.base![open.count &- 1].members &+= 1 }
        let at = count
        do { try open.append((node: at, members: 2)) } catch { failure = error; return false }
        if open.count > deepest { deepest = open.count }
        guard push(.array, 0, 0), pushString(qname) else { return false }
        // (names are unique: the reader checked them)
        let d = count
        guard push(.dict, attributes.count, 0) else { return false }
        for a in attributes {
            guard pushString(a.qname), pushString(a.value) else { return false }
        }
        nodes[d].word = UInt64(truncatingIfNeeded: count)
        return true
    }

    func endElement(qname: XMLText, nsURI: XMLText, localName: XMLText) -> Bool {
        guard flush() else { return false }
        guard open.count > 0 else { return false }
        open.count &-= 1
        let f = open.base![open.count]
        nodes[f.node] = Node(head: JSONDocument.Tag.array.rawValue | UInt64(truncatingIfNeeded: f.members) << 4,
                             word: UInt64(truncatingIfNeeded: count))
        return true
    }

    func characters(_ t: XMLText) -> Bool {
        let empty = pending < 0 || textCount == pending
        guard charge(t.count &+ (empty ? DecodeBudget.bytesPerValue : 0)) else { return false }
        if pending < 0 { pending = textCount }
        guard reserveText(t.count) else { return false }
        if t.count > 0 { (text + textCount).update(from: t.start, count: t.count) }
        textCount &+= t.count
        return true
    }

    func comment(_ text: XMLText) -> Bool { true }
    func processingInstruction(target: XMLText, data: XMLText) -> Bool { true }

    /// The JsonML tree of a whole document as a `JSONDocument` (the rules, limits and
    /// errors of `XMLTreeBuilder.parse`).
    static func parse(_ body: UnsafeBufferPointer<UInt8>, maxExpandedBytes: Int? = nil) throws(AFSError) -> JSONDocument {
        let b = try XMLTapeBuilder(inputSize: body.count,
                                   maxCharge: maxExpandedBytes ?? DecodeBudget.defaultLimit(bodySize: body.count))
        var limits = XMLLimits()
        limits.maxExpandedBytes = maxExpandedBytes
        do {
            try XMLPushParser.parse(body, sink: b, limits: limits)
        } catch {
            throw b.failure ?? error
        }
        guard b.count > 0, b.open.count == 0 else { throw AFSError(.invalidXML, "not well-formed: no root element") }
        if b.pending >= 0 { b.textCount = b.pending; b.pending = -1 }  // text after the root: not in the tree
        b.finished = true
        // Unused room of large blocks back (a shrinking realloc; kept as is if refused).
        let stride = MemoryLayout<Node>.stride
        if (b.capacity &- b.count) &* stride >= prefaultChunk, let p = afsRealloc(b.nodes, b.count &* stride) {
            b.nodes = p.bindMemory(to: Node.self, capacity: b.count)
        }
        if b.textCapacity &- b.textCount >= prefaultChunk, let p = afsRealloc(b.text, Swift.max(b.textCount, 1)) {
            b.text = p.bindMemory(to: UInt8.self, capacity: b.textCount)
        }
        // An element is an array holding a dictionary: nesting depth = elements + 1.
        return JSONDocument(nodes: b.nodes, nodeCount: b.count, text: b.text, textCount: b.textCount,
                            hasRepeatedKeys: false, depth: b.deepest &+ 1)
    }
}
