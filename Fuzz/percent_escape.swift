// Fuzz target: percent escaping (AFPercentEscapedStringFromString) and UTF-8 validation.
//
// The input is the text to escape, as raw bytes. Properties:
// - validity agrees with Swift's own decoder (`String(validating:as:)`), and the offset of
//   the first bad sequence agrees with `firstInvalidUTF8OffsetScan`, with the DFA path
//   `firstInvalidUTF8Offset`, and with Swift's decoder (length of the longest valid prefix);
// - valid UTF-8: `escape(utf8:to:)` succeeds, its output uses only `A-Z a-z 0-9 - . _ ~ / ?`
//   and `%XX` (uppercase hex), every unreserved byte is written as is, the output
//   percent-decodes back to the input, and it equals `escape(_: String)`;
// - invalid UTF-8: `.invalidUTF8` naming that offset, and the writer is left as it was;
// - data escaping (`append`, no UTF-8 check) with `spaceAsPlus` false and true: the same
//   alphabet (plus `+` for spaces), decodes back; `escapeValidating` agrees with `append`
//   and reports validity.
// - the C API (`afs_percent_escape`, `afs_free`) gives the same text, or NULL with
//   `AFS_E_INVALID_UTF8` (2) and the same offset; on success the `afs_error` is untouched.
// The input is also escaped from an odd offset so the 8-byte block path sees every
// alignment and block split.
@testable import AFSerialization
import CAFSerialization

#if canImport(Glibc)
import Glibc
#endif

/// The offset just after the longest valid prefix, by Swift's decoder; nil when all valid.
func swiftInvalidOffset(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    var it = bytes.makeIterator()
    var parser = Unicode.UTF8.ForwardParser()
    var offset = 0
    while true {
        switch parser.parseScalar(from: &it) {
        case .valid(let e): offset += e.count
        case .emptyInput: return nil
        case .error: return offset
        }
    }
}

/// Checks escaped `out` against `input`: alphabet, escapes, round trip.
func checkEscaped(_ out: [UInt8], _ input: UnsafeBufferPointer<UInt8>, plus: Bool, what: String) {
    var i = 0
    var expectedLength = 0
    for b in input {
        expectedLength += PercentEscaping.isUnreserved(b) || (plus && b == 0x20) ? 1 : 3
    }
    require(out.count == expectedLength, "\(what): output has \(out.count) bytes, expected \(expectedLength): \(show(out))")
    while i < out.count {
        let c = out[i]
        if c == UInt8(ascii: "%") {
            require(i + 2 < out.count, "\(what): truncated %XX at \(i): \(show(out))")
            let h = out[i + 1], l = out[i + 2]
            let isHex = { (x: UInt8) in (x >= 0x30 && x <= 0x39) || (x >= 0x41 && x <= 0x46) }
            require(isHex(h) && isHex(l), "\(what): %XX must be uppercase hex at \(i): \(show(out))")
            let v = (h <= 0x39 ? h - 0x30 : h - 0x41 + 10) << 4 | (l <= 0x39 ? l - 0x30 : l - 0x41 + 10)
            require(!PercentEscaping.isUnreserved(v), "\(what): unreserved byte \(v) was escaped: \(show(out))")
            require(!(plus && v == 0x20), "\(what): a space must be '+' with spaceAsPlus: \(show(out))")
            i += 3
        } else {
            let ok = PercentEscaping.isUnreserved(c) || (plus && c == UInt8(ascii: "+"))
            require(ok, "\(what): byte \(c) appears unescaped at \(i): \(show(out))")
            i += 1
        }
    }
    guard let decoded = percentDecode(out, plus: plus) else { fail("\(what): output does not percent-decode: \(show(out))") }
    require(decoded.elementsEqual(input), "\(what): output decodes to \(show(decoded)), not the input \(show(input))")
}

/// The unreserved set, spelled out independently of the library's masks (checked once).
let unreservedSetChecked: Bool = {
    for b in UInt8(0)...UInt8(255) {
        let expected = (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39)
            || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "~")
            || b == UInt8(ascii: "/") || b == UInt8(ascii: "?")
        require(PercentEscaping.isUnreserved(b) == expected, "isUnreserved(\(b)) is wrong")
    }
    return true
}()

func escapeAll(_ bytes: UnsafeBufferPointer<UInt8>) {
    _ = unreservedSetChecked
    let refValid = String(validating: bytes, as: UTF8.self) != nil
    let refOffset = swiftInvalidOffset(bytes)
    require((refOffset == nil) == refValid, "Swift's decoder disagrees with String(validating:as:) on \(show(bytes))")
    let scan = firstInvalidUTF8OffsetScan(bytes)
    require(scan == refOffset, "firstInvalidUTF8OffsetScan = \(String(describing: scan)), Swift's decoder says \(String(describing: refOffset)) for \(show(bytes))")
    let dfa = firstInvalidUTF8Offset(bytes)
    require(dfa == refOffset, "firstInvalidUTF8Offset = \(String(describing: dfa)), Swift's decoder says \(String(describing: refOffset)) for \(show(bytes))")

    // Validating escape, into a writer that already holds bytes.
    var out = ByteWriter(capacity: 16)
    out.append("prefix" as StaticString)
    do {
        try PercentEscaping.escape(utf8: bytes, to: &out)
        require(refValid, "escape(utf8:) accepted invalid UTF-8 \(show(bytes))")
        let all = out.bytes
        require(all.prefix(6).elementsEqual("prefix".utf8), "escape(utf8:) changed the bytes before it")
        let escaped = Array(all.dropFirst(6))
        checkEscaped(escaped, bytes, plus: false, what: "escape(utf8:)")
        let viaString = try PercentEscaping.escape(String(decoding: bytes, as: UTF8.self))
        require(viaString.utf8.elementsEqual(escaped), "escape(String) differs from escape(utf8:)")
        escapeThroughC(bytes, escaped, nil)
    } catch let e as AFSError {
        require(!refValid, "escape(utf8:) rejected valid UTF-8 \(show(bytes)): \(e)")
        require(e.status == .invalidUTF8, "escape(utf8:) failed with \(e), not .invalidUTF8")
        require(trailingOffset(e.message) == refOffset, "escape(utf8:) names offset \(String(describing: trailingOffset(e.message))), expected \(String(describing: refOffset)): \(e.message)")
        require(out.count == 6 && out.bytes.elementsEqual("prefix".utf8), "escape(utf8:) left \(out.count) bytes in the writer after failing")
        escapeThroughC(bytes, nil, refOffset)
    } catch {
        fail("escape(utf8:) threw a non-AFSError: \(error)")
    }

    // Data escaping (no UTF-8 check), both space styles; the validating variant agrees.
    for plus in [false, true] {
        var w = ByteWriter(capacity: 16)
        PercentEscaping.append(bytes, spaceAsPlus: plus, to: &w)
        let escaped = w.bytes
        checkEscaped(escaped, bytes, plus: plus, what: "append(spaceAsPlus: \(plus))")
        var v = ByteWriter(capacity: 16)
        let ok = PercentEscaping.escapeValidating(bytes, spaceAsPlus: plus, to: &v)
        require(ok == refValid, "escapeValidating(spaceAsPlus: \(plus)) says \(ok) for \(show(bytes))")
        if ok { require(v.bytes == escaped, "escapeValidating(spaceAsPlus: \(plus)) output differs from append") }
    }
}

/// `afs_percent_escape` against the Swift result (nil for invalid input).
func escapeThroughC(_ bytes: UnsafeBufferPointer<UInt8>, _ expected: [UInt8]?, _ offset: Int?) {
    let box = ErrorBox()
    let err = box.reset()
    // A copy, so that a NULL base address (empty input) is passed as libFuzzer would not.
    let copy = UnsafeMutablePointer<CChar>.allocate(capacity: Swift.max(bytes.count, 1))
    defer { copy.deallocate() }
    if bytes.count > 0 { UnsafeMutableRawPointer(copy).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
    let out = afs_percent_escape(copy, bytes.count, err)
    if let out {
        defer { afs_free(out) }
        guard let expected else { fail("afs_percent_escape accepted invalid UTF-8 \(show(bytes))") }
        let got = Array(UnsafeBufferPointer(start: UnsafeRawPointer(out).assumingMemoryBound(to: UInt8.self), count: strlen(out)))
        require(got == expected, "afs_percent_escape gave \(show(got)), the core \(show(expected))")
        require(box.untouched, "afs_percent_escape succeeded but wrote into the afs_error")
    } else {
        require(expected == nil, "afs_percent_escape failed on valid UTF-8 \(show(bytes))")
        require(box.status == AFSStatus.invalidUTF8.rawValue, "afs_percent_escape failed with status \(box.status)")
        let message = box.message
        require(trailingOffset(message) == offset, "afs_percent_escape names offset \(String(describing: trailingOffset(message))), expected \(String(describing: offset)): \(message)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    escapeAll(bytes)
    // The same bytes from offsets 1 and 3: other alignments and 8-byte block splits.
    if size > 1 { escapeAll(UnsafeBufferPointer(rebasing: bytes[1...])) }
    if size > 3 { escapeAll(UnsafeBufferPointer(rebasing: bytes[3...])) }
    return 0
}
