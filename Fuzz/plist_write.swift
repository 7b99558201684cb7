// Fuzz target: the property-list writer (AFPropertyListRequestSerializer bodies), both
// formats, read back by PropertyListReader.
//
// The input drives a random tree (every kind, occasionally a chain of 500-600 containers).
// Properties, for XML and for binary:
// - the writer throws `.invalidPlist` exactly when the tree holds null or a set, or more
//   than `PropertyListWriter.maxDepth` nested containers (the reader's limit), or (XML only)
//   a string or key with a character XML 1.0 cannot carry (U+0000-U+0008, U+000B, U+000C,
//   U+000E-U+001F, U+FFFE, U+FFFF); a failed write leaves the buffer as it was;
// - otherwise writing is deterministic and the reader gives the tree back: doubles bit for
//   bit (NaN as NaN), XML dictionaries in ascending UTF-8 key order (which is what the XML
//   holds), binary dictionaries in insertion order.
@testable import AFSerialization

/// Whether `s` holds a character XML 1.0 cannot carry.
func xmlForbidden(_ s: String) -> Bool {
    s.unicodeScalars.contains { c in
        let v = c.value
        return (v < 0x20 && v != 0x09 && v != 0x0A && v != 0x0D) || v == 0xFFFE || v == 0xFFFF
    }
}

func roundTrip(_ tree: Value, format: PropertyListFormat) {
    let hasNullOrSet = anyNode(tree) { v in
        if case .null = v { return true }
        if case .set = v { return true }
        return false
    }
    let xmlBad = format == .xml && (anyNode(tree) { v in
        if case .string(let s) = v { return xmlForbidden(s) }
        return false
    } || allKeys(tree).contains(where: xmlForbidden))
    let tooDeep = tree.nestingDepth > PropertyListWriter.maxDepth
    let expectFailure = hasNullOrSet || xmlBad || tooDeep

    var out = ByteWriter(capacity: 16)
    out.append("prefix" as StaticString)
    do {
        try PropertyListWriter.write(tree, format: format, to: &out)
    } catch let e as AFSError {
        require(expectFailure, "the \(format) writer rejected a writable tree: \(e)\n  tree \(show(tree))")
        require(e.status == .invalidPlist, "the \(format) writer failed with \(e), not .invalidPlist")
        require(e.message.hasPrefix(PropertyListWriter.invalidParametersMessage), "writer message does not start with AFNetworking's: \(e.message)")
        require(out.count == 6, "a failed \(format) write left \(out.count - 6) bytes in the buffer")
        return
    } catch {
        fail("the \(format) writer threw a non-AFSError: \(error)")
    }
    require(!expectFailure, "the \(format) writer accepted a tree it cannot carry (null or set: \(hasNullOrSet), XML character: \(xmlBad), too deep: \(tooDeep))\n  tree \(show(tree))")
    let bytes = Array(out.bytes.dropFirst(6))
    let again = (try? PropertyListWriter.data(tree, format: format)) ?? []
    require(again == bytes, "writing the same tree twice gave different \(format) bytes")

    let back: Value
    do {
        back = try PropertyListReader.parse(bytes)
    } catch {
        fail("cannot read the \(format) writer's output: \(error)\n  tree depth \(tree.nestingDepth) \(show(tree))\n  output \(show(bytes))")
    }
    let expected = format == .xml ? sortedKeys(tree) : tree
    require(same(back, expected), "the \(format) output reads back to another tree\n  tree \(show(tree))\n  back \(show(back))\n  output \(show(bytes))")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var inp = FuzzInput(data, size)
    var gen = TreeGen()
    gen.deepChains = true
    // Mostly trees the writers accept: null and sets only when the first byte says so.
    let flags = inp.byte()
    gen.null = flags & 1 == 1
    gen.sets = flags & 2 == 2
    let tree = gen.value(&inp)
    trace("tree (depth \(tree.nestingDepth)) \(show(tree))")
    roundTrip(tree, format: .xml)
    roundTrip(tree, format: .binary)
    return 0
}
