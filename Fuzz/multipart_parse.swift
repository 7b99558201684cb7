// Fuzz target: the streaming multipart parser (MultipartParser).
//
// The first byte picks the boundary (`b`, `XyZ`, or a 70-byte one) and whether small limits
// apply; the second seeds the split sizes; the rest is the body. The body is parsed once in a
// single feed, then again in pieces of pseudo-random sizes (1 to 300 bytes) with a sink that
// pauses at random events (offering the rest again, as the pull reader does). Properties:
// - nothing crashes; failures are `.invalidMultipart` or `.limit` only;
// - any split = one feed: the same outcome (status and message) and, on success, the same
//   parts (heads, data concatenated, every begun part ended);
// - data never arrives outside a part, and never empty;
// - through the C API's records (afs_multipart_parser_feed_events, random pieces, 1 to 5
//   records a call, then len-0 calls until none is held back): the same status and
//   message, and on success the same parts (head blocks well formed, offsets in bounds).
@testable import AFSerialization
import CAFSerialization

#if canImport(Glibc)
import Glibc
#endif

final class Recorder: MultipartSink {
    var parts: [(head: MultipartPartHead, data: [UInt8], ended: Bool)] = []
    var pauseSeed: UInt32 = 0
    var pausing = false

    func flow() -> MultipartFlow {
        guard pausing else { return .proceed }
        pauseSeed = pauseSeed &* 1103515245 &+ 12345
        return (pauseSeed >> 16) % 3 == 0 ? .pause : .proceed
    }
    func partBegin(_ head: MultipartPartHead) -> MultipartFlow {
        require(parts.last?.ended ?? true, "a part began before the previous one ended")
        parts.append((head, [], false))
        return flow()
    }
    func partData(_ bytes: UnsafeBufferPointer<UInt8>) -> MultipartFlow {
        require(!bytes.isEmpty, "empty data")
        require(!(parts.last?.ended ?? true), "data outside a part")
        parts[parts.count - 1].data.append(contentsOf: bytes)
        return flow()
    }
    func partEnd() -> MultipartFlow {
        require(!(parts.last?.ended ?? true), "an end outside a part")
        parts[parts.count - 1].ended = true
        return flow()
    }
}

func runParse(_ body: UnsafeBufferPointer<UInt8>, boundary: String, limits: MultipartLimits, seed: UInt32?) -> (Recorder, AFSError?) {
    let r = Recorder()
    let p: MultipartParser
    do { p = try MultipartParser(contentTypeOrBoundary: boundary, limits: limits) } catch { fail("boundary refused: \(error)") }
    p.sink = r
    do {
        if var s = seed {
            r.pausing = true
            r.pauseSeed = s
            var i = 0
            var stalls = 0
            while i < body.count {
                s = s &* 1664525 &+ 1013904223
                let n = Swift.min(1 + Int((s >> 8) % 300), body.count - i)
                var off = 0
                while off < n {
                    let before = p.events
                    let c = try p.feed(UnsafeBufferPointer(rebasing: body[(i + off)..<(i + n)]))
                    off += c
                    if c == 0 && p.events == before {
                        stalls += 1
                        require(stalls < 1_000_000, "the parser makes no progress")
                    }
                }
                i += n
            }
            // Paused work left in the carry: feed nothing until it stops producing events.
            while true {
                let before = p.events
                try p.feed(UnsafeBufferPointer(start: nil, count: 0))
                if p.events == before { break }
            }
        } else {
            try p.feed(body)
        }
        try p.finish()
    } catch let e as AFSError {
        require(e.status == .invalidMultipart || e.status == .limit, "unexpected status \(e)")
        return (r, e)
    } catch {
        fail("a non-AFSError: \(error)")
    }
    require(r.parts.allSatisfy(\.ended), "a successful parse left a part open")
    return (r, nil)
}

// The same body through the C API's records (afs_multipart_parser_feed_events) in pieces of
// random sizes with 1 to 5 records a call: the same outcome (status, and the message where
// the records call reports it) and, on success, the same parts.
func runRecords(_ body: UnsafeBufferPointer<UInt8>, boundary: String, limits: MultipartLimits, seed: UInt32)
    -> (parts: [(name: [UInt8]?, filename: [UInt8]?, headers: [[UInt8]], data: [UInt8], ended: Bool)], status: Int, message: String) {
    var l = afs_multipart_limits()
    l.max_parts = limits.maxParts
    l.max_header_bytes = limits.maxHeaderBytes
    l.max_headers = limits.maxHeaders
    l.max_line_length = limits.maxLineLength
    l.max_total_bytes = limits.maxTotalBytes
    l.max_field_bytes = limits.maxFieldBytes
    let err = ErrorBox()
    guard let p = afs_multipart_parser_new(boundary, &l, nil, nil, err.reset()) else { fail("parser refused: \(err.message)") }
    defer { afs_multipart_parser_free(p) }
    var parts: [(name: [UInt8]?, filename: [UInt8]?, headers: [[UInt8]], data: [UInt8], ended: Bool)] = []
    var s = seed
    let events = UnsafeMutablePointer<afs_multipart_event>.allocate(capacity: 5)
    defer { events.deallocate() }
    var r = afs_multipart_feed_result()
    func take(_ bytes: UnsafePointer<UInt8>?, _ count: Int) {
        for k in 0..<r.event_count {
            let e = events[k]
            require(r.event_count <= 5, "too many records")
            if e.flags & AFS_MULTIPART_BEGIN != 0 {
                require(parts.last?.ended ?? true, "a part began before the previous one ended")
                require(Int(e.index) == parts.count, "part index \(e.index), expected \(parts.count)")
                require(e.head_offset + e.head_length <= UInt64(r.arena_length), "head block outside the arena")
                let block = Array(UnsafeBufferPointer(start: r.arena! + Int(e.head_offset), count: Int(e.head_length)))
                require(block.last == 0, "head block without its last NUL")
                let strings = block.dropLast().split(separator: 0, omittingEmptySubsequences: false).map { Array($0) }
                require(strings.count == 2 + 2 * Int(e.header_count), "head block has \(strings.count) strings")
                parts.append((e.flags & AFS_MULTIPART_HAS_NAME != 0 ? strings[0] : nil,
                              e.flags & AFS_MULTIPART_HAS_FILENAME != 0 ? strings[1] : nil,
                              Array(strings.dropFirst(2)), [], false))
            }
            require(!parts.isEmpty && !parts[parts.count - 1].ended && Int(e.index) == parts.count - 1, "a record outside its part")
            if e.data_length > 0 {
                if e.flags & AFS_MULTIPART_DATA_IN_ARENA != 0 {
                    require(e.data_offset + e.data_length <= UInt64(r.arena_length), "data outside the arena")
                    parts[parts.count - 1].data.append(contentsOf: UnsafeBufferPointer(start: r.arena! + Int(e.data_offset), count: Int(e.data_length)))
                } else {
                    require(e.data_offset + e.data_length <= UInt64(count), "data outside the fed bytes")
                    parts[parts.count - 1].data.append(contentsOf: UnsafeBufferPointer(start: bytes! + Int(e.data_offset), count: Int(e.data_length)))
                }
            }
            if e.flags & AFS_MULTIPART_END != 0 { parts[parts.count - 1].ended = true }
        }
    }
    var i = 0
    while i < body.count {
        s = s &* 1664525 &+ 1013904223
        let n = Swift.min(1 + Int((s >> 8) % 300), body.count - i)
        var off = 0
        repeat {
            let max = 1 + Int((s >> 20) % 5)
            s = s &* 1664525 &+ 1013904223
            let st = afs_multipart_parser_feed_events(p, body.baseAddress! + i + off, n - off, events, max, &r, err.reset())
            if st != AFS_OK { return (parts, Int(st.rawValue), err.message) }
            take(body.baseAddress! + i + off, n - off)
            off += r.consumed
        } while r.more != 0 || off < n
        i += n
    }
    repeat {
        let st = afs_multipart_parser_feed_events(p, nil, 0, events, 5, &r, err.reset())
        if st != AFS_OK { return (parts, Int(st.rawValue), err.message) }
        take(nil, 0)
    } while r.more != 0
    let st = afs_multipart_parser_finish(p, err.reset())
    return (parts, Int(st.rawValue), st == AFS_OK ? "" : err.message)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var inp = FuzzInput(data, size)
    let a = inp.byte(), seed = inp.byte()
    let boundary = ["b", "XyZ", String(repeating: "q", count: 69) + "Z", "b"][Int(a % 4)]
    var limits = MultipartLimits()
    if a & 4 != 0 {
        limits.maxParts = 3
        limits.maxHeaderBytes = 64
        limits.maxHeaders = 2
        limits.maxLineLength = 40
        limits.maxFieldBytes = 50
        limits.maxTotalBytes = a & 8 != 0 ? 400 : .max
    }
    let body = UnsafeBufferPointer(start: data + Swift.min(2, size), count: Swift.max(0, size - 2))
    let (one, e1) = runParse(body, boundary: boundary, limits: limits, seed: nil)
    let (split, e2) = runParse(body, boundary: boundary, limits: limits, seed: UInt32(seed) | 1)
    require(e1?.status == e2?.status && e1?.message == e2?.message, "one feed: \(String(describing: e1)); split: \(String(describing: e2))")
    if e1 == nil {
        require(one.parts.count == split.parts.count, "part counts differ")
        for (x, y) in zip(one.parts, split.parts) {
            require(x.head == y.head, "heads differ: \(x.head) vs \(y.head)")
            require(x.data == y.data, "data of part \(x.head.index) differs")
        }
    }
    let rec = runRecords(body, boundary: boundary, limits: limits, seed: UInt32(seed) &* 7 | 1)
    let want = e1.map { Int($0.status.rawValue) } ?? 0
    require(Int(rec.status) == want, "one feed: \(String(describing: e1)); records: status \(rec.status) \(rec.message)")
    if let e1, e1.message.utf8.count < 500 {
        require(rec.message == e1.message, "one feed: \(e1.message); records: \(rec.message)")
    }
    if e1 == nil {
        require(rec.parts.count == one.parts.count, "records: part counts differ")
        for (x, y) in zip(one.parts, rec.parts) {
            var headers: [[UInt8]] = []
            for (n, v) in zip(x.head.headerNames, x.head.headerValues) { headers.append(n); headers.append(v) }
            require(y.ended && x.head.name == y.name && x.head.filename == y.filename && headers == y.headers,
                    "records: head of part \(x.head.index) differs")
            require(x.data == y.data, "records: data of part \(x.head.index) differs")
        }
    }
    return 0
}
