// Fuzz target: the JSON reader (`afs_value_parse_json`, the JSON response serializer).
//
// The input is JSON text (any bytes). Properties:
// - no crash and no leak (LeakSanitizer checks every input), on any bytes, through the Swift
//   API and through the C API (`afs_value_parse_json`, `afs_value_free`), which agree: same
//   success and kind; on failure `AFS_E_INVALID_JSON` (6) and a message with the offset, on
//   success the `afs_error` left untouched;
// - a failure is `.invalidJSON` whose message ends "at byte offset N" with N within the input;
// - a document that is one number gives what Swift's `Int64(_:)` / `Double(_:)` give
//   (integers within Int64 stay integers; doubles correctly rounded, bit for bit);
// - a success has at most `JSONParser.defaultMaxDepth` nested containers, and strict mode
//   (no fragments) agrees: it accepts exactly the documents whose top level is a container,
//   with the same value;
// - round trip: the value written back by `JSONWriter` (fragmentsAllowed) parses again to
//   the same value, with doubles written as integers (`1.0` -> `1`) reading back as integers;
//   dictionary order is kept; writing that value again gives the same bytes (a fixed point);
//   pretty-printed, sorted, unescaped-slash output reads back to the same value with
//   sorted keys;
// - the tape (`JSONDocument`, what `afs_value_parse_json` returns) agrees with the tree: it
//   fails on the same inputs with the same message, stands for the same value, and writes
//   the same JSON bytes (compact, with and without escaped slashes).
@testable import AFSerialization
import CAFSerialization

func parseChecked(_ bytes: UnsafeBufferPointer<UInt8>, allowFragments: Bool) -> Value? {
    do {
        return try JSONParser.parse(bytes, allowFragments: allowFragments)
    } catch let e as AFSError {
        require(e.status == .invalidJSON, "parse failed with \(e), not .invalidJSON")
        guard let at = trailingOffset(e.message) else { fail("parse error without a byte offset: \(e.message)") }
        require(e.message.hasSuffix("at byte offset \(at)"), "parse error does not end with the offset: \(e.message)")
        require(at >= 0 && at <= bytes.count, "parse error offset \(at) is outside the \(bytes.count)-byte input: \(e.message)")
        return nil
    } catch {
        fail("parse threw a non-AFSError: \(error)")
    }
}

/// Parses through the C API; checks it agrees with the Swift parser's outcome.
func parseThroughC(_ data: UnsafePointer<UInt8>, _ size: Int, _ swift: Value?) {
    let box = ErrorBox()
    let err = box.reset()
    let handle = data.withMemoryRebound(to: CChar.self, capacity: size) { afs_value_parse_json($0, size, err) }
    let code = box.status
    if let handle {
        guard let v = swift else { fail("afs_value_parse_json accepted what JSONParser rejects") }
        require(box.untouched, "afs_value_parse_json succeeded but wrote into the afs_error (header: left untouched)")
        require(Int32(afs_value_kind_of(handle).rawValue) == v.kind.rawValue, "afs_value_kind_of says \(afs_value_kind_of(handle)), the value is \(v.kind)")
        afs_value_free(handle)
    } else {
        require(swift == nil, "afs_value_parse_json failed where JSONParser succeeds")
        require(code == AFSStatus.invalidJSON.rawValue, "afs_value_parse_json failed with status \(code), not AFS_E_INVALID_JSON")
        let message = box.message
        require(message.contains("at byte offset"), "the C error message has no offset: \(message)")
    }
}

/// Parses into a `JSONDocument`; checks it agrees with the tree parser.
func checkDocument(_ bytes: UnsafeBufferPointer<UInt8>, _ tree: Value?) {
    let treeMessage: String?
    do { _ = try JSONParser.parse(bytes); treeMessage = nil } catch { treeMessage = "\(error)" }
    let doc: JSONDocument
    do {
        doc = try JSONDocument.parse(bytes)
    } catch {
        require(treeMessage == "\(error)", "the document parser failed with \(error), the tree parser with \(treeMessage ?? "success"): \(show(bytes))")
        return
    }
    guard let tree else { fail("the document parser accepted what the tree parser rejects (\(treeMessage ?? "")): \(show(bytes))") }
    guard let built = try? doc.value() else { fail("cannot build the tree of a document: \(show(bytes))") }
    require(same(built, tree), "the document stands for another value\n  input \(show(bytes))\n  tree \(show(tree))\n  document \(show(built))")
    // A repeated key drops a value from the tree, perhaps the deepest one.
    require(doc.hasRepeatedKeys ? doc.depth >= tree.nestingDepth : doc.depth == tree.nestingDepth,
            "the document's depth is \(doc.depth), the tree's \(tree.nestingDepth)")
    for options: JSONWritingOptions in [[.fragmentsAllowed], [.fragmentsAllowed, .withoutEscapingSlashes]] {
        var a = ByteWriter(), b = ByteWriter()
        let fromTree = Result { try JSONWriter.write(tree, options: options, to: &a); return try a.toArray() }
        let fromTape = Result { try JSONWriter.write(doc, options: options, to: &b); return try b.toArray() }
        guard case .success(let x) = fromTree, case .success(let y) = fromTape else {
            fail("writing failed: tree \(fromTree), document \(fromTape): \(show(bytes))")
        }
        require(x == y, "the document writes other JSON than the tree\n  tree \(show(x))\n  document \(show(y))")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let loose = parseChecked(bytes, allowFragments: true)
    parseThroughC(data, size, loose)
    checkDocument(bytes, loose)
    let strict = parseChecked(bytes, allowFragments: false)
    guard let v1 = loose else {
        require(strict == nil, "strict parsing accepted what fragment parsing rejected: \(show(bytes))")
        return 0
    }
    require(v1.nestingDepth <= JSONParser.defaultMaxDepth, "parsed a value nested \(v1.nestingDepth) deep")
    if v1.isContainer {
        guard let s = strict else { fail("strict parsing rejected a container document: \(show(bytes))") }
        require(same(s, v1), "strict and fragment parsing disagree on \(show(bytes))")
    } else {
        require(strict == nil, "strict parsing accepted a scalar document \(show(bytes))")
    }

    // A document that is one number: the value Swift's own conversions give (correctly
    // rounded doubles; integers within Int64 stay integers, `-0` is a double).
    if !v1.isContainer {
        let ws: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        let text = String(decoding: bytes.drop(while: { ws.contains($0) }).reversed().drop(while: { ws.contains($0) }).reversed(), as: UTF8.self)
        switch v1 {
        case .int(let i):
            require(Int64(text) == i && !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }),
                    "\(text) parsed as the integer \(i)")
        case .double(let d):
            guard let ref = Double(text) else { fail("\(text) parsed as \(d), Swift cannot read it") }
            require(ref.bitPattern == d.bitPattern, "\(text) parsed as \(d) (bits \(d.bitPattern)), Swift reads \(ref) (bits \(ref.bitPattern))")
            if let i = Int64(text) { require(text == "-0", "\(text) is an Int64 (\(i)) but parsed as the double \(d)") }
        default: break
        }
    }

    // Compact round trip.
    let t1: [UInt8]
    do {
        t1 = try JSONWriter.data(v1, options: [.fragmentsAllowed])
    } catch {
        fail("cannot write back a parsed value: \(error)\n  input \(show(bytes))")
    }
    let v2: Value
    do {
        v2 = try JSONParser.parse(t1)
    } catch {
        fail("cannot parse what the writer wrote: \(error)\n  written \(show(t1))\n  input \(show(bytes))")
    }
    let expected = normalizedForJSON(v1)
    require(same(v2, expected), "round trip changed the value\n  input \(show(bytes))\n  written \(show(t1))\n  first \(show(v1))\n  again \(show(v2))")
    let t2 = (try? JSONWriter.data(v2, options: [.fragmentsAllowed])) ?? []
    require(t2 == t1, "writing the re-parsed value gives other bytes\n  first \(show(t1))\n  again \(show(t2))")

    // Pretty, sorted, slashes unescaped.
    let options: JSONWritingOptions = [.fragmentsAllowed, .prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    guard let t3 = try? JSONWriter.data(v1, options: options) else { fail("pretty writing failed for \(show(bytes))") }
    guard let v3 = try? JSONParser.parse(t3) else { fail("cannot parse pretty output \(show(t3))") }
    require(same(v3, sortedKeys(expected)), "pretty round trip changed the value\n  input \(show(bytes))\n  written \(show(t3))")
    return 0
}
