// afs_json_parser: a JSON parser that keeps its buffers from one document to the next
// (issue 23; the core is Sources/AFSerialization/JSON/StructuralIndex.swift).
import AFSerialization
import CAFSerialization

final class JSONParserHandle: Handle {
    override class var cName: String { "afs_json_parser" }
    /// Calls from several threads take turns (the index is one buffer).
    let parser: Locked<JSONTapeParser>
    init?(_ p: JSONTapeParser) {
        guard let l = Locked(p) else { return nil }
        parser = l
    }
}

@c @implementation
public func afs_json_parser_new(_ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        guard let h = JSONParserHandle(JSONTapeParser(reused: true)) else { throw AFSError.noMemory("a JSON parser", bytes: 64) }
        return box(h)
    }
}

@c @implementation
public func afs_json_parser_parse(_ parser: OpaquePointer?, _ json: UnsafePointer<CChar>?, _ len: Int,
                                  _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(parser, JSONParserHandle.self, "parser")
        let text = try bytesArg(json, len, "json")
        let doc = try h.parser.withLock { try $0.parse(text) }
        return box(try ValueHandle.owning(doc))
    }
}

@c @implementation
public func afs_json_parser_free(_ parser: OpaquePointer?) { release(parser, JSONParserHandle.self) }
