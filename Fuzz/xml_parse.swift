// Fuzz target: the XML reader (afs_xml_parse, the push parser, AFS_RESPONSE_XML's tree).
//
// The input is an XML document (any bytes). Properties:
// - no crash, no leak, no hang, bounded memory (libFuzzer's -rss_limit_mb and -timeout;
//   the expansion bound keeps entity bombs small);
// - a failure is `.invalidXML` or `.limit` whose message names "at line L, column C (byte
//   offset N)" with N within the input;
// - push = one-shot: the document fed in pieces (sizes drawn from a hash of the input, down
//   to one byte) gives the same events (text runs joined) and the same error;
// - tree = events: the JsonML tree equals the tree built from the recorded events, and the
//   tree is refused when the events are (and otherwise only for the decoding limit that
//   bounds the tree itself);
// - tape = tree: the JsonML tree built into a JSONDocument (what afs_response_object
//   returns) reads back as the same tree with the same depth, or fails with the same error.
@testable import AFSerialization

final class Recorder: XMLEventSink {
    var events: [String] = []
    var text: [UInt8]? = nil
    func flush() {
        if let t = text { events.append("T" + String(decoding: t, as: UTF8.self)); text = nil }
    }
    func startElement(qname: XMLText, nsURI: XMLText, localName: XMLText, attributes: UnsafeBufferPointer<XMLAttribute>) -> Bool {
        flush()
        var s = "S" + qname.string + "\u{1}" + nsURI.string + "\u{1}" + localName.string
        for a in attributes {
            s += "\u{2}" + a.qname.string + "\u{1}" + a.nsURI.string + "\u{1}" + a.localName.string + "\u{1}" + a.value.string
                + (a.isNamespaceDeclaration ? "\u{1}ns" : "")
        }
        events.append(s)
        return true
    }
    func endElement(qname: XMLText, nsURI: XMLText, localName: XMLText) -> Bool {
        flush()
        events.append("E" + qname.string)
        return true
    }
    func characters(_ t: XMLText) -> Bool {
        if text == nil { text = [] }
        text!.append(contentsOf: t.bytes)
        return true
    }
    func comment(_ t: XMLText) -> Bool { flush(); events.append("C" + t.string); return true }
    func processingInstruction(target: XMLText, data: XMLText) -> Bool {
        flush(); events.append("P" + target.string + "\u{1}" + data.string); return true
    }
}

/// The JsonML tree the events describe (comments and PIs dropped, text joined).
func treeOf(_ events: [String]) -> Value? {
    var stack: [[Value]] = []
    var root: Value? = nil
    for e in events {
        // The kind is the first scalar: text may start with a combining mark, which makes
        // one Character of the kind letter and the text's first scalar.
        let body = String(e.unicodeScalars.dropFirst())
        switch e.unicodeScalars.first {
        case "S":
            let parts = body.split(separator: "\u{2}", omittingEmptySubsequences: false)
            let name = String(parts[0].split(separator: "\u{1}", omittingEmptySubsequences: false)[0])
            var attrs: [(String, Value)] = []
            for a in parts.dropFirst() {
                let f = a.split(separator: "\u{1}", omittingEmptySubsequences: false)
                attrs.append((String(f[0]), .string(String(f[3]))))
            }
            stack.append([.string(name), .dict(ValueDict(attrs))])
        case "E":
            guard let top = stack.popLast() else { return nil }
            if stack.isEmpty { root = .array(top) } else { stack[stack.count - 1].append(.array(top)) }
        case "T":
            if !stack.isEmpty {
                if case .string(let prev)? = stack[stack.count - 1].last, stack[stack.count - 1].count > 2 {
                    stack[stack.count - 1][stack[stack.count - 1].count - 1] = .string(prev + body)
                } else {
                    stack[stack.count - 1].append(.string(body))
                }
            }
        default: break
        }
    }
    return root
}

func run(_ bytes: UnsafeBufferPointer<UInt8>, sizes: [Int]?) -> ([String], AFSError?) {
    let r = Recorder()
    let p = XMLPushParser(sink: r)
    do {
        if let sizes = sizes {
            var i = 0, k = 0
            while i < bytes.count {
                let n = Swift.min(sizes[k % sizes.count], bytes.count - i)
                try p.feed(UnsafeBufferPointer(rebasing: bytes[i..<(i + n)]))
                i += n
                k += 1
            }
        } else {
            try p.feed(bytes)
        }
        try p.finish()
        r.flush()
        return (r.events, nil)
    } catch {
        r.flush()
        return (r.events, error)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let (events, failure) = run(bytes, sizes: nil)
    if let e = failure {
        trace("error: \(e)")
        require(e.status == .invalidXML || e.status == .limit, "the reader failed with \(e)")
        guard let r = e.message.firstRange(of: "(byte offset ") else { fail("error without a byte offset: \(e.message)") }
        let digits = e.message[r.upperBound...].prefix { $0.isNumber }
        guard let at = Int(digits) else { fail("unreadable offset: \(e.message)") }
        require(at >= 0 && at <= size, "error offset \(at) outside the \(size)-byte input: \(e.message)")
        require(e.message.contains("at line "), "error without a line: \(e.message)")
    }
    // Push = one-shot, in splits drawn from the input.
    var h: UInt64 = 1469598103934665603
    for b in bytes { h = (h ^ UInt64(b)) &* 1099511628211 }
    let splits: [[Int]] = [[1], [Int(h % 7) + 1, Int((h >> 8) % 3) + 1], [Int((h >> 16) % 64) + 1]]
    for s in splits {
        let (ev2, err2) = run(bytes, sizes: s)
        require(ev2 == events, "split \(s) changed the events\n  input \(show(bytes))\n  one-shot \(events)\n  split \(ev2)")
        require(err2 == failure, "split \(s) changed the outcome: \(String(describing: failure)) vs \(String(describing: err2))\n  input \(show(bytes))")
    }
    // Tree = events.
    do {
        let tree = try XMLTreeBuilder.parse(bytes)
        require(failure == nil, "the tree was built but the events failed with \(String(describing: failure))")
        guard let expected = treeOf(events) else { fail("no tree from the events\n  input \(show(bytes))") }
        require(same(tree, expected), "tree differs from the events\n  input \(show(bytes))\n  tree \(show(tree))\n  events \(show(expected))")
    } catch {
        // the tree may also meet the decoding limit that bounds it (entities can multiply
        // elements beyond what their expanded bytes count)
        let treeLimit = error.status == .limit && error.message.hasPrefix("the XML tree exceeds the decoding limit")
        require(failure != nil || treeLimit, "the tree failed (\(error)) but the events did not\n  input \(show(bytes))")
    }
    // Tape = tree: the document afs_response_object hands out (XMLTapeBuilder) reads back as
    // the tree, and fails where the tree fails with the same error.
    let tree = Result { () throws(AFSError) in try XMLTreeBuilder.parse(bytes) }
    let tape = Result { () throws(AFSError) in try XMLTapeBuilder.parse(bytes) }
    switch (tree, tape) {
    case (.success(let t), .success(let d)):
        guard let v = try? d.value() else { fail("the tape's tree could not be read\n  input \(show(bytes))") }
        require(same(v, t), "tape differs from the tree\n  input \(show(bytes))\n  tape \(show(v))\n  tree \(show(t))")
        require(d.depth == t.nestingDepth, "tape depth \(d.depth), tree depth \(t.nestingDepth)\n  input \(show(bytes))")
    case (.failure(let a), .failure(let b)):
        require(a == b, "tape error \(b) differs from the tree's \(a)\n  input \(show(bytes))")
    default:
        fail("tape and tree disagree: \(tree) vs \(tape)\n  input \(show(bytes))")
    }
    return 0
}
