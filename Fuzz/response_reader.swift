// Fuzz target: the sans-I/O HTTP/1.1 response reader (`ResponseReader`, C:
// afs_response_reader).
//
// The input: one option byte (method HEAD or GET, content decoding on or off, small limits
// or the defaults, a fixed decoding limit or the default), one byte seeding the splits,
// then the response bytes (anything). Properties:
// - no crash, no sanitizer report, every error is .badResponse, .limit, .state (never
//   raised here) or .noMemory, with a message that names the line and byte offset for
//   framing errors;
// - the result (state, status, version, reason, headers, trailers, interim codes, decoded
//   body, error) of random splits (1..64 bytes, and one byte at a time for short inputs)
//   equals the result of one feed; the bytes consumed add up to the same total;
// - the limits hold: no header count above max_headers, no field longer than the head limit,
//   a decoded body never beyond the decoding limit (fixed, or 64 x encoded + 1 MiB);
// - after DONE, feeding consumes nothing; eof() after DONE succeeds.
@testable import AFSerialization

struct Result: Equatable {
    var state: ResponseReader.State
    var status: Int
    var version: Int
    var reason: [UInt8]
    var headers: [[UInt8]]
    var trailers: [[UInt8]]
    var interim: [Int]
    var body: [UInt8]
    var error: AFSError?
    var consumed: Int
    var encoded: UInt64
}

struct Options {
    var method: String
    var decode: Bool
    var limits: ReaderLimits
    var maxDecoded: UInt64?
}

func read(_ data: UnsafeBufferPointer<UInt8>, _ o: Options, splits: (inout Int) -> Int) -> Result {
    let r = try! ResponseReader(method: o.method)
    r.decodesContent = o.decode
    try! r.setLimits(o.limits)
    r.maxDecodedBytes = o.maxDecoded
    var pos = 0
    var consumed = 0
    while pos < data.count {
        let k = min(splits(&pos), data.count - pos)
        let piece = UnsafeBufferPointer(rebasing: data[pos..<(pos + k)])
        do {
            let n = try r.feed(piece)
            require(n <= k, "consumed \(n) of \(k)")
            consumed += n
            if r.state == .done {
                // Nothing more is consumed once done.
                let again = try r.feed(UnsafeBufferPointer(rebasing: data[(pos + n)...]))
                require(again == 0, "fed after DONE consumed \(again)")
                break
            }
            require(n == k, "not done but consumed \(n) of \(k)")
            pos += k
        } catch {
            break
        }
    }
    if r.error == nil && r.state != .done { try? r.eof() }
    if r.state == .done && r.error == nil {
        do { try r.eof() } catch { fail("eof after DONE failed: \(error)") }
    }
    func list(_ fs: [ResponseReader.Field], _ t: Bool) -> [[UInt8]] {
        fs.map { let (n, v) = r.bytes($0, trailer: t); return Array(n) + [0x3A] + Array(v) }
    }
    return Result(state: r.state, status: r.status, version: r.version, reason: Array(r.reason),
                  headers: r.headComplete ? list(r.fields, false) : [],
                  trailers: r.state == .done ? list(r.trailerFields, true) : [], interim: r.interim,
                  body: Array(r.body.bytes), error: r.error, consumed: r.error == nil ? consumed : -1,
                  encoded: r.encodedBodyBytes)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ p: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let opt = p[0], seed = p[1]
    var limits = ReaderLimits()
    if opt & 4 != 0 {
        limits.maxHeadBytes = 200
        limits.maxHeaders = 4
        limits.maxLineLength = 60
        limits.maxChunkExtension = 8
    }
    let o = Options(method: opt & 1 != 0 ? "HEAD" : "GET", decode: opt & 2 == 0, limits: limits,
                    maxDecoded: opt & 8 != 0 ? UInt64(opt >> 4) * 1000 : nil)
    let data = UnsafeBufferPointer(start: p + 2, count: size - 2)
    let one = read(data, o) { _ in Int.max }
    if let e = one.error {
        require([.badResponse, .limit, .noMemory].contains(e.status), "unexpected status \(e)")
        if e.status == .badResponse && !e.message.contains("coded body") {
            require(e.message.hasPrefix("line "), "a framing error without its line: \(e.message)")
            require(e.message.contains("byte offset"), "a framing error without its offset: \(e.message)")
        }
    }
    require(one.headers.count <= limits.maxHeaders, "\(one.headers.count) headers over the limit")
    require(one.trailers.count <= limits.maxHeaders, "\(one.trailers.count) trailers over the limit")
    for h in one.headers { require(h.count <= limits.maxHeadBytes, "a field longer than the head limit") }
    if o.decode {
        let bound = o.maxDecoded ?? (64 &* one.encoded &+ (1 << 20))
        require(UInt64(one.body.count) <= max(bound, one.encoded), "decoded \(one.body.count) bytes beyond the limit \(bound)")
    }
    // Random splits, from the seed.
    var state = UInt32(seed) &* 2654435761 | 1
    let random = read(data, o) { _ in
        state = state &* 1103515245 &+ 12345
        return Int(state >> 16) % 64 + 1
    }
    require(random == one, "random splits differ from one feed:\n  one    \(one.error.map { "\($0)" } ?? "ok") body \(one.body.count)\n  splits \(random.error.map { "\($0)" } ?? "ok") body \(random.body.count)")
    if data.count <= 4096 {
        let bytewise = read(data, o) { _ in 1 }
        require(bytewise == one, "one byte at a time differs from one feed: \(bytewise.error.map { "\($0)" } ?? "ok") vs \(one.error.map { "\($0)" } ?? "ok")")
    }
    return 0
}
