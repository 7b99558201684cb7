// Fuzz target: query strings and form bodies parsed into trees (QueryDecoder).
//
// The first byte picks the array style, plus-as-space, keeping bad escapes and refusing deep
// names; the second the depth limit (0...7) and small parameter and length limits; the rest
// is the query. Properties:
// - the parse never crashes; it fails only with `.limit`, `.invalidArgument` or
//   `.invalidUTF8`, and `.invalidUTF8` never when bad escapes are kept;
// - what it accepts is a dictionary no deeper than the depth limit + 3 levels;
// - the pickle path (`QueryDecoder.pickle`, afs_query_parse_pickle) loads as the same tree
//   (same key order), or fails with the same status and message;
// - round trip on what it accepts: when no key holds `[` or `]`, writing the tree back with
//   QueryString in the same style and parsing that gives the same tree (indexed style: the
//   style that round trips whole, see include/afserialization.h section 16); for brackets
//   the written query parses without error (no_brackets writes an array's dictionaries under
//   the array's own name, which can collide with its strings: not checked).
@testable import AFSerialization

#if canImport(Glibc)
import Glibc
#endif

func keysAreBracketFree(_ v: Value) -> Bool {
    switch v {
    case .dict(let d):
        for (k, m) in d.pairs {
            if k.utf8.contains(UInt8(ascii: "[")) || k.utf8.contains(UInt8(ascii: "]")) { return false }
            if !keysAreBracketFree(m) { return false }
        }
        return true
    case .array(let a): return a.allSatisfy(keysAreBracketFree)
    default: return true
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var inp = FuzzInput(data, size)
    let a = inp.byte(), b = inp.byte()
    var o = QueryParseOptions()
    o.arrays = QueryStyle.ArrayStyle(rawValue: Int32(a % 3)) ?? .brackets
    o.plusAsSpace = a & 4 != 0
    o.keepBadEscapes = a & 8 != 0
    o.refuseDeep = a & 16 != 0
    o.maxDepth = Int(b % 8)
    if b & 8 != 0 { o.maxParams = 1 + Int(b >> 4) }
    if b & 128 != 0 { o.maxLength = 1 + Int(b & 15) }
    let text = UnsafeBufferPointer(start: data + Swift.min(2, size), count: Swift.max(0, size - 2))
    let tree: Value
    let pickled = Result { try QueryDecoder.pickle(text, options: o) }
    do {
        tree = try QueryDecoder.parse(text, options: o)
    } catch let e as AFSError {
        require([.limit, .invalidArgument, .invalidUTF8].contains(e.status), "unexpected status \(e)")
        require(!(e.status == .invalidUTF8 && o.keepBadEscapes), "invalidUTF8 with bad escapes kept: \(e)")
        guard case .failure(let f as AFSError) = pickled, f.status == e.status, f.message == e.message else {
            fail("the pickle path does not fail as the parse: \(pickled) vs \(e)")
        }
        return 0
    } catch {
        fail("a non-AFSError: \(error)")
    }
    require(tree.kind == .dict, "the parse is not a dictionary")
    guard case .success(let p) = pickled, let loaded = try? PickleReader.read(p),
          let a = try? PickleWriter.pickle(loaded), let b = try? PickleWriter.pickle(tree), a == b else {
        fail("the pickle path does not load as the tree \(show(tree)): \(pickled)")
    }
    // levels + the literal rest + an array of repeated keys (no_brackets)
    require(tree.nestingDepth <= o.maxDepth + 3, "depth \(tree.nestingDepth) with max_depth \(o.maxDepth)")
    guard keysAreBracketFree(tree), o.arrays != .noBrackets else { return 0 }
    let style = QueryStyle(arrays: o.arrays, spaces: o.plusAsSpace ? .plus : .percent)
    guard let written = try? QueryString.make(tree, style: style) else { fail("the parsed tree cannot be written: \(show(tree))") }
    var w = written
    var o2 = o
    o2.maxParams = Int.max / 2
    o2.maxLength = Int.max / 2
    o2.keepBadEscapes = false
    o2.refuseDeep = false
    o2.maxDepth = 64  // a literal rest key is a level of the tree: written back, it is a bracket group
    let back: Value
    do {
        back = try w.withUTF8 { try QueryDecoder.parse($0, options: o2) }
    } catch {
        fail("the written query \(written) of \(show(tree)) does not parse: \(error)")
    }
    if o.arrays == .indexed {
        require(back == tree, "round trip: \(show(tree)) -> \(written) -> \(show(back))")
    }
    return 0
}
