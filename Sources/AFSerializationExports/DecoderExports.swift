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

/// The events of a push parser, as the caller's handler calls or (in
/// afs_multipart_parser_feed_events) as records. A separate object from the handle: the
/// parser holds its sink strongly, and the handle holds the parser.
final class MultipartCSink: MultipartSink {
    let handler: afs_multipart_handler?
    let ctx: UnsafeMutableRawPointer?

    init(_ h: afs_multipart_handler?, _ ctx: UnsafeMutableRawPointer?) {
        handler = h
        self.ctx = ctx
    }

    deinit {
        free(arena)
        free(lent)
    }

    /// The name and value pointer arrays lent to part_begin (names at 0, values at
    /// lentCap), reused from part to part; the strings are the parser's own NUL-terminated
    /// header block: no copy.
    private var lent: UnsafeMutablePointer<UnsafePointer<CChar>?>?
    private var lentCap = 0

    // Records (afs_multipart_parser_feed_events): set for the call.
    static let arenaBound = 64 << 10
    var records: UnsafeMutablePointer<afs_multipart_event>?
    var recordCap = 0
    var recordCount = 0
    var chunk: UnsafePointer<UInt8>?
    var chunkLen = 0
    var arena: UnsafeMutablePointer<UInt8>?
    var arenaCount = 0
    private var arenaCap = 0
    /// Set when this call paused the parser (records or arena full).
    var held = false
    /// Once fed with records, every event must be a record.
    var recordsMode = false
    /// An event came outside a feed_events call of a records-mode parser (finish).
    var late = false
    var failure: AFSError?
    private var part = 0

    private func arenaReserve(_ n: Int) -> Bool {
        if arenaCount + n <= arenaCap { return true }
        let c = Swift.max(arenaCount + n, arenaCap * 2, 4096)
        guard let q = afsRealloc(arena, c) else {
            failure = AFSError.noMemory("a multipart parser's event arena", bytes: c)
            return false
        }
        arena = q.assumingMemoryBound(to: UInt8.self)
        arenaCap = c
        return true
    }

    private func arenaPut(_ p: UnsafePointer<UInt8>, _ n: Int) {
        if n > 0 { (arena! + arenaCount).update(from: p, count: n) }
        arenaCount += n
    }

    /// After an event: pause when the records or the arena are full.
    private func flow() -> MultipartFlow {
        if recordCount == recordCap || arenaCount >= MultipartCSink.arenaBound {
            held = true
            return .pause
        }
        return .proceed
    }

    private func newRecord() -> UnsafeMutablePointer<afs_multipart_event> {
        let r = records! + recordCount
        recordCount += 1
        r.pointee = afs_multipart_event(flags: 0, header_count: 0, index: UInt64(part), head_offset: 0, head_length: 0,
                                        data_offset: 0, data_length: 0)
        return r
    }

    /// The last record when it is this part's and not ended (data and the end join it).
    private var openRecord: UnsafeMutablePointer<afs_multipart_event>? {
        guard recordCount > 0 else { return nil }
        let r = records! + (recordCount - 1)
        return r.pointee.index == UInt64(part) && r.pointee.flags & AFS_MULTIPART_END == 0 ? r : nil
    }

    /// Not called: the parser calls `partBegin(raw:)`, which this sink implements.
    func partBegin(_ head: MultipartPartHead) -> MultipartFlow { .proceed }

    func partBegin(raw head: MultipartRawHead) -> MultipartFlow {
        if records != nil {
            part = head.index
            let n = head.headerCount
            // name NUL filename NUL, then the headers as the parser holds them (contiguous,
            // each string with its NUL, from offset 0).
            let headers = n == 0 ? 0 : head.fields[4 * n - 2] + head.fields[4 * n - 1] + 1
            let total = head.nameLength + head.filenameLength + 2 + headers
            guard arenaReserve(total) else { return .stop }
            let at = arenaCount
            if head.nameOffset >= 0 { arenaPut(head.bytes + head.nameOffset, head.nameLength) }
            arena![arenaCount] = 0; arenaCount += 1
            if head.filenameOffset >= 0 { arenaPut(head.bytes + head.filenameOffset, head.filenameLength) }
            arena![arenaCount] = 0; arenaCount += 1
            arenaPut(head.bytes, headers)
            let r = newRecord()
            r.pointee.flags = AFS_MULTIPART_BEGIN | (head.nameOffset >= 0 ? AFS_MULTIPART_HAS_NAME : 0)
                | (head.filenameOffset >= 0 ? AFS_MULTIPART_HAS_FILENAME : 0)
            r.pointee.header_count = UInt32(truncatingIfNeeded: n)
            r.pointee.head_offset = UInt64(at)
            r.pointee.head_length = UInt64(total)
            return flow()
        }
        if recordsMode { late = true; return .stop }
        guard let f = handler?.part_begin else { return .proceed }
        let n = head.headerCount
        if n > lentCap || lent == nil {
            let c = Swift.max(n, 2 * lentCap, 16)
            let bytes = 2 * c * MemoryLayout<UnsafePointer<CChar>?>.stride
            guard let q = afsRealloc(lent, bytes) else {
                failure = AFSError.noMemory("a multipart parser's header pointers", bytes: bytes)
                return .stop
            }
            lent = q.assumingMemoryBound(to: UnsafePointer<CChar>?.self)
            lentCap = c
        }
        let base = UnsafeRawPointer(head.bytes).assumingMemoryBound(to: CChar.self)
        let names = lent, values = lent.map { $0 + lentCap }
        for i in 0..<n {
            names![i] = base + head.fields[4 * i]
            values![i] = base + head.fields[4 * i + 2]
        }
        let name = head.nameOffset < 0 ? nil : base + head.nameOffset
        let filename = head.filenameOffset < 0 ? nil : base + head.filenameOffset
        return f(ctx, head.index, name, filename, names.map { UnsafePointer($0) }, values.map { UnsafePointer($0) }, n) == 0 ? .proceed : .stop
    }

    func partData(_ bytes: UnsafeBufferPointer<UInt8>) -> MultipartFlow {
        if records != nil {
            let p = bytes.baseAddress!
            var offset: Int
            var inArena = false
            if let c = chunk, p >= c, p + bytes.count <= c + chunkLen {
                offset = p - c
            } else {
                guard arenaReserve(bytes.count) else { return .stop }
                offset = arenaCount
                arenaPut(p, bytes.count)
                inArena = true
            }
            let r: UnsafeMutablePointer<afs_multipart_event>
            if let o = openRecord, o.pointee.data_length == 0 { r = o } else { r = newRecord() }
            if inArena { r.pointee.flags |= AFS_MULTIPART_DATA_IN_ARENA }
            r.pointee.data_offset = UInt64(offset)
            r.pointee.data_length = UInt64(bytes.count)
            return flow()
        }
        if recordsMode { late = true; return .stop }
        guard let f = handler?.part_data else { return .proceed }
        return f(ctx, bytes.baseAddress, bytes.count) == 0 ? .proceed : .stop
    }

    func partEnd() -> MultipartFlow {
        if records != nil {
            let r = openRecord ?? newRecord()
            r.pointee.flags |= AFS_MULTIPART_END
            return flow()
        }
        if recordsMode { late = true; return .stop }
        guard let f = handler?.part_end else { return .proceed }
        return f(ctx) == 0 ? .proceed : .stop
    }
}

/// `afs_multipart_parser`: the core parser and its C sink.
final class MultipartParserHandle: Handle {
    let parser: MultipartParser
    let sink: MultipartCSink
    var busy = false
    var freeDeferred = false
    var finished = false

    init(_ p: MultipartParser, _ h: afs_multipart_handler?, _ ctx: UnsafeMutableRawPointer?) {
        parser = p
        sink = MultipartCSink(h, ctx)
        super.init()
        p.sink = sink
    }
    override class var cName: String { "afs_multipart_parser" }

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
            if h.sink.recordsMode {
                throw AFSError(.state, "afs_multipart_parser_feed on a parser fed with afs_multipart_parser_feed_events (its events are records)")
            }
            h.sink.failure = nil
            do {
                try h.parser.feed(d.assumingMemoryBound(to: UInt8.self))
            } catch let e as AFSError {
                if let f = h.sink.failure { throw f }  // the sink's own allocation failed
                throw e
            }
        }
    }
}

@c @implementation
public func afs_multipart_parser_feed_events(_ p: OpaquePointer?, _ bytes: UnsafePointer<UInt8>?, _ len: Int,
                                             _ events: UnsafeMutablePointer<afs_multipart_event>?, _ maxEvents: Int,
                                             _ result: UnsafeMutablePointer<afs_multipart_feed_result>?,
                                             _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    result?.pointee = afs_multipart_feed_result(consumed: 0, event_count: 0, arena: nil, arena_length: 0, more: 0)
    return status(err) {
        let h = try unbox(p, MultipartParserHandle.self, "parser")
        let d = try dataArg(UnsafeRawPointer(bytes), len, "the bytes")
        guard let events else { throw AFSError(.invalidArgument, "events is NULL") }
        guard maxEvents >= 1 else { throw AFSError(.invalidArgument, "max_events is 0 (at least 1 record is needed)") }
        guard let result else { throw AFSError(.invalidArgument, "result is NULL") }
        try h.call(p!) {
            if let f = h.parser.failure { throw f }
            if h.finished { throw AFSError(.state, "afs_multipart_parser_feed_events after afs_multipart_parser_finish") }
            let s = h.sink
            s.recordsMode = true
            s.records = events
            s.recordCap = maxEvents
            s.recordCount = 0
            s.chunk = d.baseAddress?.assumingMemoryBound(to: UInt8.self)
            s.chunkLen = d.count
            s.arenaCount = 0
            s.held = false
            s.failure = nil
            defer { s.records = nil; s.chunk = nil; s.chunkLen = 0 }
            let c: Int
            do {
                c = try h.parser.feed(d.assumingMemoryBound(to: UInt8.self))
            } catch let e as AFSError {
                if let f = s.failure { throw f }
                throw e
            }
            result.pointee = afs_multipart_feed_result(consumed: c, event_count: s.recordCount,
                                                       arena: s.arenaCount > 0 ? UnsafePointer(s.arena) : nil,
                                                       arena_length: s.arenaCount, more: s.held ? 1 : 0)
        }
    }
}

@c @implementation
public func afs_multipart_parser_finish(_ p: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let h = try unbox(p, MultipartParserHandle.self, "parser")
        try h.call(p!) {
            h.finished = true
            do {
                try h.parser.finish()
            } catch let e as AFSError where h.sink.late {
                _ = e
                throw AFSError(.state, "afs_multipart_parser_finish with events pending: call afs_multipart_parser_feed_events with len 0 until result.more is 0 first")
            }
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
