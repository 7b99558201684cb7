// Fuzz target: the JSON writer (AFJSONRequestSerializer bodies).
//
// The input drives a random tree (FuzzSupport's `TreeGen`, every kind, occasionally a chain
// of 500-600 containers) and the writing options. Properties:
// - the writer throws `.invalidJSON` exactly when the tree holds what JSON cannot carry:
//   a set, data, NaN or an infinity, more than `JSONWriter.maxDepth` nested containers, or a
//   scalar top level without `fragmentsAllowed`; on failure the output buffer is left as
//   it was;
// - otherwise the output is valid UTF-8, parses back (JSONParser) to the tree (doubles
//   written as integers read back as integers, `sortedKeys` sorts by UTF-8 bytes, else
//   insertion order), and writing is deterministic;
// - the pretty output is the compact output plus whitespace outside strings;
// - unless `withoutEscapingSlashes`, no `/` appears unescaped.
@testable import AFSerialization

/// Removes the whitespace outside strings.
func stripWhitespace(_ json: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(json.count)
    var inString = false, escaped = false
    for c in json {
        if inString {
            out.append(c)
            if escaped { escaped = false } else if c == UInt8(ascii: "\\") { escaped = true } else if c == UInt8(ascii: "\"") { inString = false }
        } else if c == UInt8(ascii: "\"") {
            inString = true
            out.append(c)
        } else if c != 0x20 && c != 0x0A && c != 0x09 && c != 0x0D {
            out.append(c)
        }
    }
    return out
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var inp = FuzzInput(data, size)
    let optionBits = inp.byte()
    var gen = TreeGen()
    gen.deepChains = true
    let tree = gen.value(&inp)
    var options = JSONWritingOptions(rawValue: UInt32(optionBits & 0x0F))
    trace("options \(optionBits & 0x0F), tree (depth \(tree.nestingDepth)) \(show(tree))")
    let fragments = options.contains(.fragmentsAllowed)

    let unwritable = anyNode(tree) { v in
        switch v {
        case .set, .data: return true
        case .double(let d): return !d.isFinite
        default: return false
        }
    }
    let tooDeep = tree.nestingDepth > JSONWriter.maxDepth
    let scalarTop = !tree.isContainer && !fragments && tree.kind != .data
    let expectFailure = unwritable || tooDeep || scalarTop

    var out = ByteWriter(capacity: 16)
    out.append("[prefix]" as StaticString)
    do {
        try JSONWriter.write(tree, options: options, to: &out)
    } catch let e as AFSError {
        require(expectFailure, "the writer rejected a writable tree (options \(options.rawValue)): \(e)\n  tree \(show(tree))")
        require(e.status == .invalidJSON, "the writer failed with \(e), not .invalidJSON")
        require(e.message.hasPrefix(JSONWriter.invalidParametersMessage), "writer message does not start with AFNetworking's: \(e.message)")
        require(out.count == 8, "a failed write left \(out.count - 8) bytes in the buffer")
        return 0
    } catch {
        fail("the writer threw a non-AFSError: \(error)")
    }
    require(!expectFailure, "the writer accepted a tree JSON cannot carry (unwritable \(unwritable), too deep \(tooDeep), scalar top \(scalarTop))\n  tree \(show(tree))")
    let all = out.bytes
    require(all.prefix(8).elementsEqual("[prefix]".utf8), "the writer changed the bytes before its output")
    let text = Array(all.dropFirst(8))
    require(String(validating: text, as: UTF8.self) != nil, "the output is not valid UTF-8: \(show(text))")
    if !options.contains(.withoutEscapingSlashes) {
        var prev: UInt8 = 0, backslashes = 0
        for c in text {
            if c == UInt8(ascii: "/") { require(prev == UInt8(ascii: "\\") && backslashes % 2 == 1, "an unescaped '/' in \(show(text))") }
            backslashes = c == UInt8(ascii: "\\") ? backslashes + 1 : 0
            prev = c
        }
    }
    let again = (try? JSONWriter.data(tree, options: options)) ?? []
    require(again == text, "writing the same tree twice gave different bytes")

    let back: Value
    do {
        back = try JSONParser.parse(text, allowFragments: fragments)
    } catch {
        fail("cannot parse the writer's output: \(error)\n  output \(show(text))\n  tree \(show(tree))")
    }
    var expected = normalizedForJSON(tree)
    if options.contains(.sortedKeys) { expected = sortedKeys(expected) }
    require(same(back, expected), "the output reads back to another tree\n  output \(show(text))\n  tree \(show(tree))\n  back \(show(back))")

    // Pretty vs compact: the same tokens.
    if options.contains(.prettyPrinted) {
        options.remove(.prettyPrinted)
        let compact = (try? JSONWriter.data(tree, options: options)) ?? []
        require(stripWhitespace(text) == compact, "pretty output is not the compact output plus whitespace\n  pretty \(show(text))\n  compact \(show(compact))")
    } else {
        require(stripWhitespace(text) == text, "compact output holds whitespace outside strings: \(show(text))")
    }
    return 0
}
