// Fuzz target: the streaming multipart parser (MultipartParser).
//
// The first byte picks the boundary (`b`, `XyZ`, or a 70-byte one) and whether small limits
// apply; the second seeds the split sizes; the rest is the body. The body is parsed once in a
// single feed, then again in pieces of pseudo-random sizes (1 to 300 bytes) with a sink that
// pauses at random events (offering the rest again, as the pull reader does). Properties:
// - nothing crashes; failures are `.invalidMultipart` or `.limit` only;
// - any split = one feed: the same outcome (status and message) and, on success, the same
//   parts (heads, data concatenated, every begun part ended);
// - data never arrives outside a part, and never empty.
@testable import AFSerialization

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
    return 0
}
