// Fuzz target: the property-list reader (AFPropertyListResponseSerializer), XML and binary.
//
// The input is a property list (any bytes; `bplist00…` is read as binary, anything else as
// XML). Properties:
// - no crash, no leak, no hang, bounded memory (libFuzzer's -rss_limit_mb and -timeout);
// - a failure is `.invalidPlist` whose message ends "at byte offset N" with N within the input;
// - a success has at most `PropertyListReader.defaultMaxDepth` nested containers;
// - what was read and can be written (no null, no set) survives a binary round trip, and an
//   XML round trip when no string holds a character XML 1.0 cannot carry (dates in whole
//   seconds: XML <date> keeps no fraction).
@testable import AFSerialization

func xmlForbidden(_ s: String) -> Bool {
    s.unicodeScalars.contains { c in
        let v = c.value
        return (v < 0x20 && v != 0x09 && v != 0x0A && v != 0x0D) || v == 0xFFFE || v == 0xFFFF
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let v: Value
    do {
        v = try PropertyListReader.parse(bytes)
    } catch let e as AFSError {
        trace("error: \(e)")
        require(e.status == .invalidPlist, "the reader failed with \(e), not .invalidPlist")
        guard let at = trailingOffset(e.message) else { fail("reader error without a byte offset: \(e.message)") }
        require(e.message.hasSuffix("at byte offset \(at)"), "reader error does not end with the offset: \(e.message)")
        require(at >= 0 && at <= size, "reader error offset \(at) is outside the \(size)-byte input: \(e.message)")
        return 0
    } catch {
        fail("the reader threw a non-AFSError: \(error)")
    }
    trace("read: \(show(v))")
    require(v.nestingDepth <= PropertyListReader.defaultMaxDepth, "read a value nested \(v.nestingDepth) deep")

    let writable = !anyNode(v) { n in
        if case .null = n { return true }
        if case .set = n { return true }
        return false
    }
    guard writable else { return 0 }
    for format in [PropertyListFormat.binary, .xml] {
        if format == .xml {
            let bad = anyNode(v) { n in
                if case .string(let s) = n { return xmlForbidden(s) }
                return false
            } || allKeys(v).contains(where: xmlForbidden)
            if bad { continue }
        }
        let out: [UInt8]
        do {
            out = try PropertyListWriter.data(v, format: format)
        } catch {
            fail("cannot write back (\(format)) what was read: \(error)\n  input \(show(bytes))")
        }
        guard let back = try? PropertyListReader.parse(out) else {
            fail("cannot read back the \(format) output\n  input \(show(bytes))\n  output \(show(out))")
        }
        let expected = format == .xml ? wholeSecondDates(sortedKeys(v)) : v
        require(same(back, expected), "\(format) round trip changed the value\n  input \(show(bytes))\n  first \(show(v))\n  again \(show(back))")
    }
    return 0
}
