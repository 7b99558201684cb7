// afs_query_parse, afs_form_body_parse, afs_multipart_parser_*, afs_multipart_reader_*:
// the decoders (Sources/AFSerialization/Decoders).
import AFSerialization
import CAFSerialization

import Glibc  // Linux with glibc only, as the core (Sources/AFSerialization/Platform.swift)

private func queryOptions(_ o: UnsafePointer<afs_query_parse_options>?, plus: Bool) throws -> QueryParseOptions {
    var q = QueryParseOptions()
    q.plusAsSpace = plus
    guard let o = o?.pointee else { return q }
    guard let a = QueryStyle.ArrayStyle(rawValue: o.array_style) else {
        throw AFSError(.invalidArgument, "array_style \(o.array_style) is not an afs_array_style (0, 1 or 2)")
    }
    let known: UInt32 = 1 | 2 | 4
    guard o.flags & ~known == 0 else { throw AFSError(.invalidArgument, "unknown afs_query_parse_options flags 0x\(String(o.flags, radix: 16))") }
    q.arrays = a
    if o.max_depth != 0 {
        guard o.max_depth <= QueryParseOptions.depthCeiling else {
            throw AFSError(.invalidArgument, "max_depth \(o.max_depth) is above \(QueryParseOptions.depthCeiling)")
        }
        q.maxDepth = Int(o.max_depth)
    }
    if o.max_params != 0 { q.maxParams = Int(clamping: o.max_params) }
    if o.max_length != 0 { q.maxLength = Int(clamping: o.max_length) }
    q.keepBadEscapes = o.flags & 1 != 0
    q.refuseDeep = o.flags & 2 != 0
    q.plusAsSpace = plus || o.flags & 4 != 0
    return q
}

@c @implementation
public func afs_query_parse(_ text: UnsafePointer<CChar>?, _ len: Int, _ opts: UnsafePointer<afs_query_parse_options>?,
                            _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let o = try queryOptions(opts, plus: false)
        let bytes: UnsafeBufferPointer<UInt8> = (text == nil && (len == 0 || len == NTS)) ? UnsafeBufferPointer(start: nil, count: 0) : try bytesArg(text, len, "the query")
        return box(ValueHandle(try QueryDecoder.parse(bytes, options: o)))
    }
}

@c @implementation
public func afs_form_body_parse(_ body: UnsafePointer<UInt8>?, _ len: Int, _ opts: UnsafePointer<afs_query_parse_options>?,
                                _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let o = try queryOptions(opts, plus: true)
        let d = try dataArg(UnsafeRawPointer(body), len, "the body")
        return box(ValueHandle(try QueryDecoder.parse(d.assumingMemoryBound(to: UInt8.self), options: o)))
    }
}

@c @implementation
public func afs_query_parse_pickle(_ text: UnsafePointer<CChar>?, _ len: Int, _ opts: UnsafePointer<afs_query_parse_options>?,
                                   _ pickleLen: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<afs_error>?) -> UnsafeMutablePointer<UInt8>? {
    pickleLen?.pointee = 0
    return pointer(err) {
        let o = try queryOptions(opts, plus: false)
        let bytes: UnsafeBufferPointer<UInt8> = (text == nil && (len == 0 || len == NTS)) ? UnsafeBufferPointer(start: nil, count: 0) : try bytesArg(text, len, "the query")
        guard let pickleLen else { throw AFSError(.invalidArgument, "pickle_len is NULL") }
        let (p, n) = try QueryDecoder.mallocPickle(bytes, options: o)
        pickleLen.pointee = n
        return p
    }
}

private func limits(_ l: UnsafePointer<afs_multipart_limits>?) -> MultipartLimits {
    var m = MultipartLimits()
    guard let l = l?.pointee else { return m }
    if l.max_parts != 0 { m.maxParts = Int(clamping: l.max_parts) }
    if l.max_header_bytes != 0 { m.maxHeaderBytes = Int(clamping: l.max_header_bytes) }
    if l.max_headers != 0 { m.maxHeaders = Int(clamping: l.max_headers) }
    if l.max_line_length != 0 { m.maxLineLength = Int(clamping: l.max_line_length) }
    if l.max_total_bytes != 0 { m.maxTotalBytes = l.max_total_bytes }
    if l.max_field_bytes != 0 { m.maxFieldBytes = l.max_field_bytes }
    return m
}

// MARK: - Push parser

/// `afs_multipart_parser`: the core parser and the caller's handler as its sink.
final class MultipartParserHandle: Handle, MultipartSink {
    let parser: MultipartParser
    let handler: afs_multipart_handler?
    let ctx: UnsafeMutableRawPointer?
    var busy = false
    var freeDeferred = false
    var finished = false

    init(_ p: MultipartParser, _ h: afs_multipart_handler?, _ ctx: UnsafeMutableRawPointer?) {
        parser = p
        handler = h
        self.ctx = ctx
        super.init()
        p.sink = self
    }
    override class var cName: String { "afs_multipart_parser" }

    /// NUL-terminated copies of the name, filename and headers, and the pointer arrays,
    /// reused from part to part (they are lent for the part_begin call only).
    private var block: [CChar] = []
    private var names: [UnsafePointer<CChar>?] = []
    private var values: [UnsafePointer<CChar>?] = []

    func partBegin(_ head: MultipartPartHead) -> MultipartFlow {
        guard let f = handler?.part_begin else { return .proceed }
        let n = head.headerNames.count
        var total = (head.name?.count ?? 0) + (head.filename?.count ?? 0) + 2
        for i in 0..<n { total += head.headerNames[i].count + head.headerValues[i].count + 2 }
        block.removeAll(keepingCapacity: true)
        block.reserveCapacity(total)
        var offsets: [Int] = []
        offsets.reserveCapacity(2 + 2 * n)
        func put(_ s: [UInt8]?) {
            offsets.append(block.count)
            if let s { for c in s { block.append(CChar(bitPattern: c)) } }
            block.append(0)
        }
        put(head.name)
        put(head.filename)
        for i in 0..<n {
            put(head.headerNames[i])
            put(head.headerValues[i])
        }
        return block.withUnsafeBufferPointer { b -> MultipartFlow in
            let base = b.baseAddress!
            names.removeAll(keepingCapacity: true)
            values.removeAll(keepingCapacity: true)
            for i in 0..<n {
                names.append(base + offsets[2 + 2 * i])
                values.append(base + offsets[3 + 2 * i])
            }
            let r = names.withUnsafeBufferPointer { np in
                values.withUnsafeBufferPointer { vp in
                    f(ctx, head.index, head.name == nil ? nil : base + offsets[0], head.filename == nil ? nil : base + offsets[1],
                      np.baseAddress, vp.baseAddress, n)
                }
            }
            return r == 0 ? .proceed : .stop
        }
    }

    func partData(_ bytes: UnsafeBufferPointer<UInt8>) -> MultipartFlow {
        guard let f = handler?.part_data else { return .proceed }
        return f(ctx, bytes.baseAddress, bytes.count) == 0 ? .proceed : .stop
    }

    func partEnd() -> MultipartFlow {
        guard let f = handler?.part_end else { return .proceed }
        return f(ctx) == 0 ? .proceed : .stop
    }

    func call(_ p: OpaquePointer, _ body: () throws -> Void) throws {
        guard !busy else { throw AFSError(.state, "the multipart parser was called from inside one of its own callbacks") }
        busy = true
        defer {
            busy = false
            if freeDeferred { Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(p)).release() }
        }
        try body()
    }
}

@c @implementation
public func afs_multipart_parser_new(_ contentType: UnsafePointer<CChar>?, _ limitsArg: UnsafePointer<afs_multipart_limits>?,
                                     _ handler: UnsafePointer<afs_multipart_handler>?, _ ctx: UnsafeMutableRawPointer?,
                                     _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let ct = try stringArg(contentType, NTS, "the content type or boundary")
        let p = try MultipartParser(contentTypeOrBoundary: ct, limits: limits(limitsArg))
        return box(MultipartParserHandle(p, handler?.pointee, ctx))
    }
}

@c @implementation
public func afs_multipart_parser_feed(_ p: OpaquePointer?, _ bytes: UnsafePointer<UInt8>?, _ len: Int,
                                      _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let h = try unbox(p, MultipartParserHandle.self, "parser")
        let d = try dataArg(UnsafeRawPointer(bytes), len, "the bytes")
        try h.call(p!) {
            if let f = h.parser.failure { throw f }
            if h.finished { throw AFSError(.state, "afs_multipart_parser_feed after afs_multipart_parser_finish") }
            try h.parser.feed(d.assumingMemoryBound(to: UInt8.self))
        }
    }
}

@c @implementation
public func afs_multipart_parser_finish(_ p: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let h = try unbox(p, MultipartParserHandle.self, "parser")
        try h.call(p!) {
            h.finished = true
            try h.parser.finish()
        }
    }
}

@c @implementation
public func afs_multipart_parser_free(_ p: OpaquePointer?) {
    guard let h = peek(p, MultipartParserHandle.self) else { return }
    if h.busy {
        h.freeDeferred = true
        return
    }
    release(p, MultipartParserHandle.self)
}

// MARK: - Pull reader

/// `afs_multipart_reader`: the core reader and the C strings it lends for the current part.
final class MultipartReaderHandle: Handle {
    let reader: MultipartReader
    private var lentFor = -1
    private var lent: [CStringBox?] = []

    init(_ r: MultipartReader) { reader = r }
    override class var cName: String { "afs_multipart_reader" }

    /// 0 name, 1 filename, 2 + 2i header name i, 3 + 2i header value i.
    func string(_ slot: Int) -> UnsafePointer<CChar>? {
        guard let head = reader.current else { return nil }
        if lentFor != head.index {
            lentFor = head.index
            lent = Array(repeating: nil, count: 2 + 2 * head.headerNames.count)
            var all: [[UInt8]?] = [head.name, head.filename]
            for i in 0..<head.headerNames.count {
                all.append(head.headerNames[i])
                all.append(head.headerValues[i])
            }
            for (i, s) in all.enumerated() { lent[i] = s.flatMap { CStringBox.copy($0) } }
        }
        guard slot >= 0, slot < lent.count, let b = lent[slot] else { return nil }
        return UnsafePointer(b.pointer)
    }
}

@c @implementation
public func afs_multipart_reader_new(_ fd: Int32, _ contentType: UnsafePointer<CChar>?, _ limitsArg: UnsafePointer<afs_multipart_limits>?,
                                     _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let ct = try stringArg(contentType, NTS, "the content type or boundary")
        return box(MultipartReaderHandle(try MultipartReader(fd: fd, contentTypeOrBoundary: ct, limits: limits(limitsArg))))
    }
}

@c @implementation
public func afs_multipart_reader_next_part(_ rd: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> Int32 {
    var more = false
    let s = status(err) { more = try unbox(rd, MultipartReaderHandle.self, "reader").reader.nextPart() }
    return s != AFS_OK ? -1 : (more ? 1 : 0)
}

@c @implementation
public func afs_multipart_reader_name(_ rd: OpaquePointer?) -> UnsafePointer<CChar>? {
    peek(rd, MultipartReaderHandle.self)?.string(0)
}

@c @implementation
public func afs_multipart_reader_filename(_ rd: OpaquePointer?) -> UnsafePointer<CChar>? {
    peek(rd, MultipartReaderHandle.self)?.string(1)
}

@c @implementation
public func afs_multipart_reader_header_count(_ rd: OpaquePointer?) -> Int {
    peek(rd, MultipartReaderHandle.self)?.reader.current?.headerNames.count ?? 0
}

@c @implementation
public func afs_multipart_reader_header_name(_ rd: OpaquePointer?, _ i: Int) -> UnsafePointer<CChar>? {
    guard i >= 0, i < Int.max / 2 - 2 else { return nil }
    return peek(rd, MultipartReaderHandle.self)?.string(2 + 2 * i)
}

@c @implementation
public func afs_multipart_reader_header_value(_ rd: OpaquePointer?, _ i: Int) -> UnsafePointer<CChar>? {
    guard i >= 0, i < Int.max / 2 - 2 else { return nil }
    return peek(rd, MultipartReaderHandle.self)?.string(3 + 2 * i)
}

@c @implementation
public func afs_multipart_reader_read(_ rd: OpaquePointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ max: Int,
                                      _ err: UnsafeMutablePointer<afs_error>?) -> Int64 {
    var n = 0
    let s = status(err) {
        let h = try unbox(rd, MultipartReaderHandle.self, "reader")
        if max == 0 { return }
        guard let buffer else { throw AFSError(.invalidArgument, "the buffer is NULL and max is \(max)") }
        n = try h.reader.read(into: buffer, max: Swift.min(max, Int(Int32.max)))
    }
    return s != AFS_OK ? -1 : Int64(n)
}

@c @implementation
public func afs_multipart_reader_part_to_fd(_ rd: OpaquePointer?, _ fd: Int32, _ written: UnsafeMutablePointer<UInt64>?,
                                            _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    written?.pointee = 0
    return status(err) {
        let h = try unbox(rd, MultipartReaderHandle.self, "reader")
        guard fd >= 0 else { throw AFSError(.invalidArgument, "the file descriptor \(fd) is not valid") }
        let w = try h.reader.writePart(to: fd)
        written?.pointee = w
    }
}

@c @implementation
public func afs_multipart_reader_free(_ rd: OpaquePointer?) {
    release(rd, MultipartReaderHandle.self)
}
