// Fuzz target: the pickle writers (`afs_value_to_pickle`, `afs_response_object_pickle`,
// `afs_request_pickle`).
//
// The input drives a random tree (FuzzSupport's `TreeGen`, every kind, occasionally a chain
// of 500-600 containers) and is also read as JSON text. Properties:
// - `PickleWriter` throws exactly for trees deeper than `Value.maxDepth`; otherwise its
//   output holds only the writer's opcodes of the subset (an independent scanner walks
//   every opcode and its argument; the FRAME length covers the rest), and reads back to the
//   tree (sets Python would merge or cannot hash as arrays);
// - `JSONToPickle` accepts exactly the texts `JSONParser` accepts, with and without
//   fragments, emits only the subset, and reads back to the parsed tree; on a refusal the
//   parser refuses too;
// - a request snapshot made from the tree's strings as headers and its data as the body
//   emits only the subset and reads back to the method, URL, headers and body.
@testable import AFSerialization
import CAFSerialization

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var inp = FuzzInput(data, size)
    var gen = TreeGen()
    gen.deepChains = true
    let tree = gen.value(&inp)
    trace("tree (depth \(tree.nestingDepth)) \(show(tree))")
    do {
        let bytes = try PickleWriter.pickle(tree)
        require(tree.nestingDepth <= Value.maxDepth, "wrote a tree \(tree.nestingDepth) levels deep")
        PickleSubset.checkWritten(bytes)
        let back = try PickleReader.read(bytes)
        require(back == PickleSubset.asPython(tree), "read back differs: \(show(tree)) -> \(show(back))")
    } catch let e as AFSError {
        require(tree.nestingDepth > Value.maxDepth, "writing or reading back failed: \(e) for \(show(tree))")
        require(e.status == .invalidArgument, "a too-deep tree failed with \(e)")
    } catch {
        fail("non-AFSError \(error)")
    }

    // JSON text straight to a pickle.
    let text = UnsafeBufferPointer(start: data, count: size)
    for fragments in [true, false] {
        let parsed = try? JSONParser.parse(text, allowFragments: fragments)
        do {
            let (p, n) = try JSONToPickle.transcode(text, allowFragments: fragments)
            defer { free(p) }
            let bytes = Array(UnsafeBufferPointer(start: p, count: n))
            guard let parsed else { fail("JSONToPickle accepted what JSONParser refuses (fragments \(fragments))") }
            PickleSubset.checkWritten(bytes)
            let back = try PickleReader.read(bytes)
            require(back == parsed, "the transcoded JSON reads back as \(show(back)), parsed \(show(parsed))")
        } catch let e as AFSError {
            require(parsed == nil, "JSONToPickle refused what JSONParser accepts: \(e)")
            require(e.status == .invalidJSON, "JSONToPickle failed with \(e)")
        } catch {
            fail("non-AFSError \(error)")
        }
    }

    // A request snapshot.
    if var request = try? Request(method: "POST", url: "http://example.com/p") {
        var strings: [String] = []
        collectStrings(tree, into: &strings)
        for (i, s) in strings.prefix(8).enumerated() { request.headers.set("X-\(i)", s) }
        if case .data(let d) = tree { request.body = d }
        guard let (p, n) = try? PickleWriter.mallocSnapshot(of: request) else {
            fail("a request snapshot failed (out of memory?)")
        }
        defer { free(p) }
        let bytes = Array(UnsafeBufferPointer(start: p, count: n))
        PickleSubset.checkWritten(bytes)
        do {
            let back = try PickleReader.read(bytes)
            guard case .array(let fields) = back, fields.count == 11 else { fail("snapshot is not an 11-tuple: \(show(back))") }
            require(fields[0] == .string("POST") && fields[1] == .string("http://example.com/p"), "method/url differ")
            let pairs = request.headers.fields.map { Value.array([.string($0.name), .string($0.value)]) }
            require(fields[2] == .array(pairs), "headers differ: \(show(fields[2]))")
            require(fields[3] == (request.body.map { .data($0) } ?? .null), "body differs")
        } catch {
            fail("the snapshot does not read back: \(error)")
        }
    }
    return 0
}

func collectStrings(_ v: Value, into out: inout [String]) {
    switch v {
    case .string(let s): out.append(s)
    case .array(let a): for m in a { collectStrings(m, into: &out) }
    case .dict(let d): for m in d.values { collectStrings(m, into: &out) }
    case .set(let s): for m in s.members { collectStrings(m, into: &out) }
    default: break
    }
}
