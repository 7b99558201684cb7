// Fuzz target: the pickle reader (`afs_value_from_pickle`, the parameters of
// `afs_serializer_request_pickle`).
//
// The input is a pickle (any bytes). Properties:
// - no crash, no leak, no blow-up (shared members are bounded), on any bytes, through the
//   Swift API and the C API (`afs_value_from_pickle`, `afs_value_free`), which agree;
// - a failure is `.invalidArgument` with a message starting "pickle: ", or `.invalidUTF8`
//   naming the str's offset; every opcode outside the subset is refused (a reader that
//   accepted one would let the input name code in Python terms);
// - the one-pass reader (the common shape) and the general reader build the same tree;
// - a success has at most `Value.maxDepth` nested containers, and writing it back with
//   `PickleWriter` emits only the subset and reads back to the same tree (sets that Python
//   would merge or cannot hash come back as arrays, as documented).
@testable import AFSerialization
import AFSerializationExports
import CAFSerialization

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var value: Value?
    do {
        value = try PickleReader.read(bytes)
    } catch let e as AFSError {
        if e.status == .invalidUTF8 {
            require(e.message.hasPrefix("the str at pickle byte offset "), "UTF-8 error without the str's offset: \(e.message)")
        } else {
            require(e.status == .invalidArgument, "read failed with \(e), not .invalidArgument")
            require(e.message.hasPrefix("pickle: "), "reader error without its prefix: \(e.message)")
        }
    } catch {
        fail("read threw a non-AFSError: \(error)")
    }
    // The one-pass reader, when it takes the input, builds what the general reader does,
    // in the same order (compared as written pickles: dictionary order counts).
    if let direct = PickleReader.readDirect(bytes) {
        let general = try? PickleReader.readGeneral(bytes)
        require(general != nil, "the one-pass reader accepted what the general reader refuses")
        if let general {
            require((try? PickleWriter.pickle(direct)) == (try? PickleWriter.pickle(general)),
                    "the one-pass and the general reader built different trees")
        }
    }
    // Every opcode the reader accepted is in the subset.
    if value != nil {
        for op in PickleSubset.opcodes(bytes) ?? [] {
            require(PickleSubset.readable.contains(op), "the reader accepted opcode 0x\(String(op, radix: 16)) outside the subset")
        }
    }

    // The C API agrees.
    let box = ErrorBox()
    let err = box.reset()
    let handle = afs_value_from_pickle(data, size, err)
    if let handle {
        require(value != nil, "afs_value_from_pickle accepted what PickleReader refuses")
        require(box.untouched, "afs_value_from_pickle succeeded but wrote into the afs_error")
        afs_value_free(handle)
    } else {
        require(value == nil || size == 0, "afs_value_from_pickle failed where PickleReader succeeds: \(box.message)")
        require(box.status == AFSStatus.invalidArgument.rawValue || box.status == AFSStatus.invalidUTF8.rawValue,
                "afs_value_from_pickle failed with status \(box.status)")
    }

    guard let v = value else { return 0 }
    require(v.nestingDepth <= Value.maxDepth, "read a tree \(v.nestingDepth) levels deep")
    let written: [UInt8]
    do {
        written = try PickleWriter.pickle(v)
    } catch {
        fail("writing a tree the reader accepted failed: \(error)")
    }
    PickleSubset.checkWritten(written)
    do {
        let again = try PickleReader.read(written)
        require(again == PickleSubset.asPython(v), "write + read changed the tree: \(show(v)) -> \(show(again))")
    } catch {
        fail("the writer's output does not read back: \(error); \(show(written))")
    }
    return 0
}
