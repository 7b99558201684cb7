// Content-Encoding decoders for the response reader (RFC 9110 section 8.4.1): gzip,
// deflate (the zlib format of RFC 1950, or raw RFC 1951 data as some servers send it:
// detected from the first two bytes), br and zstd, stacked in any order, streaming, with the
// decoded size bounded while decoding.
//
// The codecs are the maintained C libraries (zlib, libbrotli, libzstd) reached through the C
// module CAFSerialization. Their allocation failures are `.noMemory`; corrupt or truncated
// data is `.badResponse`; output beyond the decoding limit is `.limit` (nothing beyond the
// limit is ever handed on).
//
// Split invariance: the stack is fed its encoded input in blocks aligned to `blockSize`
// bytes from the start of the encoded body (a partial block waits for more input or for
// `finish`), and the limit is checked after every output buffer against the encoded bytes
// fed so far, so the decoded bytes and every error are the same however the body arrived.
internal import CAFSerialization

#if canImport(Glibc)
import Glibc
#endif

/// One decoding stage: a codec's streaming state and its output buffer.
final class DecoderStage {
    let coding: ContentCoding
    private var z: UnsafeMutablePointer<z_stream>?
    private var zInitialized = false
    private var brotli: OpaquePointer?
    private var zstd: OpaquePointer?
    /// The codec reached the end of its stream (and nothing was fed since).
    private var ended = false
    /// zstd: the last return of ZSTD_decompressStream (0: a frame ended, flushed).
    private var zstdHint = 1
    /// deflate: the first byte, kept until the second one decides zlib or raw.
    private var deflateFirst: UInt8?
    private var started = false
    /// Bytes of input this stage took (for messages).
    private(set) var consumed: UInt64 = 0
    let out: UnsafeMutablePointer<UInt8>
    static let outSize = 1 << 16
    /// 2^23 = 8 MiB, RFC 9659's window limit for the zstd content coding.
    static let zstdWindowLog: Int32 = 23

    init(_ coding: ContentCoding) throws(AFSError) {
        self.coding = coding
        guard let o = afsMalloc(DecoderStage.outSize) else {
            throw AFSError.noMemory("a \(coding.rawValue) output buffer", bytes: DecoderStage.outSize)
        }
        out = o.assumingMemoryBound(to: UInt8.self)
        switch coding {
        case .gzip:
            try initZlib(windowBits: 15 + 16)
        case .deflate:
            break  // on the first two bytes
        case .br:
            guard let s = BrotliDecoderCreateInstance(nil, nil, nil) else {
                throw AFSError(.noMemory, "out of memory creating a brotli decoder")
            }
            brotli = s
        case .zstd:
            guard let s = ZSTD_createDStream() else { throw AFSError(.noMemory, "out of memory creating a zstd decoder") }
            zstd = s
            let r = ZSTD_initDStream(s)
            if ZSTD_isError(r) != 0 { throw zstdError(r) }
            // RFC 9659: a zstd Content-Encoding uses windows up to 8 MiB; larger frames are
            // refused instead of letting one response claim up to 128 MiB (zstd's default).
            let w = ZSTD_DCtx_setParameter(s, ZSTD_d_windowLogMax, DecoderStage.zstdWindowLog)
            if ZSTD_isError(w) != 0 { throw zstdError(w) }
        }
    }

    deinit {
        if let z = z {
            if zInitialized { inflateEnd(z) }
            z.deallocate()
        }
        if let b = brotli { BrotliDecoderDestroyInstance(b) }
        if let s = zstd { ZSTD_freeDStream(s) }
        free(out)
    }

    private func initZlib(windowBits: Int32) throws(AFSError) {
        let p = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        p.initialize(to: z_stream())
        z = p
        let r = inflateInit2_(p, windowBits, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        if r == Z_MEM_ERROR { throw AFSError(.noMemory, "out of memory creating a \(coding.rawValue) decoder") }
        guard r == Z_OK else { throw AFSError(.badResponse, "cannot start the \(coding.rawValue) decoder (zlib status \(r))") }
        zInitialized = true
    }

    private func corrupt(_ detail: String) -> AFSError {
        AFSError(.badResponse, "the \(coding.rawValue)-coded body is corrupt after \(consumed) encoded bytes: \(detail)")
    }

    private func zstdError(_ r: Int) -> AFSError {
        // zstd_errors.h is not in the module: its allocation error by name.
        let name = String(cString: ZSTD_getErrorName(r))
        if name.lowercased().contains("allocation") {
            return AFSError(.noMemory, "out of memory in the zstd decoder")
        }
        if name.lowercased().contains("too much memory") {
            return AFSError(.limit, "the zstd-coded body needs a window above 8 MiB (RFC 9659's limit for the zstd content coding): \(name)")
        }
        return corrupt(String(cString: ZSTD_getErrorName(r)))
    }

    /// Decodes `input`, handing each filled part of the output buffer to `emit`.
    func decode(_ input: UnsafeBufferPointer<UInt8>, _ emit: (UnsafeBufferPointer<UInt8>) throws(AFSError) -> Void) throws(AFSError) {
        guard input.count > 0, let base = input.baseAddress else { return }
        switch coding {
        case .gzip, .deflate:
            if coding == .deflate && !zInitialized {
                // zlib format: CMF says deflate (CM 8, window <= 32K) and CMF*256+FLG is a
                // multiple of 31; anything else is raw deflate.
                if deflateFirst == nil && input.count == 1 {
                    deflateFirst = input[0]
                    return
                }
                let b0 = deflateFirst ?? input[0]
                let b1 = deflateFirst == nil ? input[1] : input[0]
                let isZlib = b0 & 0x0F == 8 && b0 >> 4 <= 7 && (UInt16(b0) << 8 | UInt16(b1)) % 31 == 0
                try initZlib(windowBits: isZlib ? 15 : -15)
                if var first = deflateFirst {
                    deflateFirst = nil
                    try withUnsafeMutablePointer(to: &first) { (p) throws(AFSError) in
                        try inflateSome(UnsafeBufferPointer(start: p, count: 1), emit)
                    }
                }
            }
            try inflateSome(UnsafeBufferPointer(start: base, count: input.count), emit)
        case .br:
            guard let s = brotli else { return }
            var availIn = input.count
            var nextIn: UnsafePointer<UInt8>? = base
            while true {
                if ended {
                    throw corrupt("\(availIn) bytes follow the end of the brotli stream")
                }
                var availOut = DecoderStage.outSize
                var nextOut: UnsafeMutablePointer<UInt8>? = out
                let before = availIn
                let r = BrotliDecoderDecompressStream(s, &availIn, &nextIn, &availOut, &nextOut, nil)
                consumed &+= UInt64(before - availIn)
                let produced = DecoderStage.outSize - availOut
                if produced > 0 { try emit(UnsafeBufferPointer(start: out, count: produced)) }
                switch r {
                case BROTLI_DECODER_RESULT_SUCCESS:
                    ended = true
                    if availIn == 0 { return }
                case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
                    return
                case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
                    continue
                default:
                    let code = BrotliDecoderGetErrorCode(s)
                    if code.rawValue <= BROTLI_DECODER_ERROR_ALLOC_CONTEXT_MODES.rawValue
                        && code.rawValue >= BROTLI_DECODER_ERROR_ALLOC_BLOCK_TYPE_TREES.rawValue {
                        throw AFSError(.noMemory, "out of memory in the brotli decoder")
                    }
                    throw corrupt(String(cString: BrotliDecoderErrorString(code)))
                }
            }
        case .zstd:
            guard let s = zstd else { return }
            var inBuf = ZSTD_inBuffer(src: base, size: input.count, pos: 0)
            while inBuf.pos < inBuf.size || zstdHint != 0 {
                var outBuf = ZSTD_outBuffer(dst: out, size: DecoderStage.outSize, pos: 0)
                let r = ZSTD_decompressStream(s, &outBuf, &inBuf)
                if ZSTD_isError(r) != 0 { throw zstdError(r) }
                zstdHint = r
                if outBuf.pos > 0 { try emit(UnsafeBufferPointer(start: out, count: outBuf.pos)) }
                // No progress possible without more input: wait for it.
                if inBuf.pos == inBuf.size && outBuf.pos < outBuf.size { break }
            }
            consumed &+= UInt64(input.count)
        }
    }

    private func inflateSome(_ input: UnsafeBufferPointer<UInt8>, _ emit: (UnsafeBufferPointer<UInt8>) throws(AFSError) -> Void) throws(AFSError) {
        guard let z = z, let base = input.baseAddress else { return }
        z.pointee.next_in = UnsafeMutablePointer(mutating: base)
        z.pointee.avail_in = UInt32(input.count)
        defer { z.pointee.next_in = nil; z.pointee.avail_in = 0 }
        while z.pointee.avail_in > 0 || !ended {
            if ended {
                // A gzip body may hold several members (RFC 1952 2.2); zlib and raw deflate end once.
                guard coding == .gzip else {
                    throw corrupt("\(z.pointee.avail_in) bytes follow the end of the deflate stream")
                }
                let r = inflateReset(z)
                guard r == Z_OK else { throw corrupt("cannot restart for the next gzip member") }
                ended = false
            }
            let before = z.pointee.avail_in
            z.pointee.next_out = out
            z.pointee.avail_out = UInt32(DecoderStage.outSize)
            let r = inflate(z, Z_NO_FLUSH)
            consumed &+= UInt64(before - z.pointee.avail_in)
            let produced = DecoderStage.outSize - Int(z.pointee.avail_out)
            if produced > 0 { try emit(UnsafeBufferPointer(start: out, count: produced)) }
            switch r {
            case Z_STREAM_END:
                ended = true
            case Z_OK:
                break
            case Z_BUF_ERROR:
                if z.pointee.avail_in == 0 { return }  // needs more input
            case Z_MEM_ERROR:
                throw AFSError(.noMemory, "out of memory in the \(coding.rawValue) decoder")
            default:
                let msg = z.pointee.msg.map { String(cString: $0) } ?? "zlib status \(r)"
                throw corrupt(msg)
            }
            if z.pointee.avail_in == 0 && z.pointee.avail_out > 0 && !ended { return }
            if z.pointee.avail_in == 0 && ended { return }
        }
    }

    /// The end of the input: the stream must be complete.
    func finish(_ emit: (UnsafeBufferPointer<UInt8>) throws(AFSError) -> Void) throws(AFSError) {
        switch coding {
        case .gzip, .deflate:
            // Deflate that never saw two bytes is incomplete in either format.
            guard zInitialized && ended else { throw truncated() }
        case .br:
            guard ended else { throw truncated() }
        case .zstd:
            guard zstdHint == 0 && consumed > 0 else { throw truncated() }
        }
    }

    private func truncated() -> AFSError {
        AFSError(.badResponse, "the \(coding.rawValue)-coded body is truncated: it ends after \(consumed) encoded bytes before the end of its stream")
    }
}

/// A stack of decoding stages with the decoding limit: what `afs_response_reader` runs on a
/// body with a Content-Encoding (and transfer codings other than chunked).
public final class ContentDecoder {
    /// Stages in decoding order (the reverse of the order the codings were applied).
    private var stages: [DecoderStage] = []
    /// A fixed limit, or nil for the default (`factor` × encoded bytes fed + `slack`).
    public let maxDecodedBytes: UInt64?
    public static let factor: UInt64 = 64
    public static let slack: UInt64 = 1 << 20
    public static let blockSize = 1 << 14
    private var produced: [UInt64]
    private(set) public var encodedFed: UInt64 = 0
    private let pending: UnsafeMutablePointer<UInt8>
    private var pendingCount = 0

    /// - Parameter codings: in the order they were applied (as listed in Content-Encoding).
    public init(codings applied: [ContentCoding], maxDecodedBytes: UInt64?) throws(AFSError) {
        self.maxDecodedBytes = maxDecodedBytes
        guard let p = afsMalloc(ContentDecoder.blockSize) else {
            throw AFSError.noMemory("the content decoder's input block", bytes: ContentDecoder.blockSize)
        }
        pending = p.assumingMemoryBound(to: UInt8.self)
        produced = Array(repeating: 0, count: applied.count)
        do {
            for c in applied.reversed() { stages.append(try DecoderStage(c)) }
        } catch {
            free(pending)
            throw error
        }
    }

    deinit { free(pending) }

    /// The limit now: the fixed one, or the default for the encoded bytes fed so far.
    public var limit: UInt64 {
        if let m = maxDecodedBytes { return m }
        let (m, o) = encodedFed.multipliedReportingOverflow(by: ContentDecoder.factor)
        if o { return UInt64.max }
        let (s, o2) = m.addingReportingOverflow(ContentDecoder.slack)
        return o2 ? UInt64.max : s
    }

    /// Feeds encoded bytes; decoded bytes go to `sink` in order.
    public func feed(_ input: UnsafeBufferPointer<UInt8>, _ sink: (UnsafeBufferPointer<UInt8>) throws(AFSError) -> Void) throws(AFSError) {
        guard var base = input.baseAddress else { return }
        var n = input.count
        let bs = ContentDecoder.blockSize
        if pendingCount > 0 {
            let take = min(n, bs - pendingCount)
            (pending + pendingCount).update(from: base, count: take)
            pendingCount += take
            base += take
            n -= take
            if pendingCount < bs { return }
            pendingCount = 0
            try run(UnsafeBufferPointer(start: pending, count: bs), sink)
        }
        while n >= bs {
            try run(UnsafeBufferPointer(start: base, count: bs), sink)
            base += bs
            n -= bs
        }
        if n > 0 {
            pending.update(from: base, count: n)
            pendingCount = n
        }
    }

    /// The end of the encoded body: decodes what waits and checks every stream ended.
    public func finish(_ sink: (UnsafeBufferPointer<UInt8>) throws(AFSError) -> Void) throws(AFSError) {
        // An empty body stays empty (servers send `Content-Encoding: gzip` on empty bodies).
        if encodedFed == 0 && pendingCount == 0 { return }
        if pendingCount > 0 {
            let n = pendingCount
            pendingCount = 0
            try run(UnsafeBufferPointer(start: pending, count: n), sink)
        }
        for i in stages.indices {
            try stages[i].finish { (b) throws(AFSError) in try self.pass(b, from: i, sink) }
        }
    }

    private func run(_ block: UnsafeBufferPointer<UInt8>, _ sink: (UnsafeBufferPointer<UInt8>) throws(AFSError) -> Void) throws(AFSError) {
        encodedFed &+= UInt64(block.count)
        try feedStage(0, block, sink)
    }

    private func feedStage(_ i: Int, _ b: UnsafeBufferPointer<UInt8>, _ sink: (UnsafeBufferPointer<UInt8>) throws(AFSError) -> Void) throws(AFSError) {
        if i == stages.count { return try sink(b) }
        try stages[i].decode(b) { (o) throws(AFSError) in try self.pass(o, from: i, sink) }
    }

    /// Output of stage `i`: counted against the limit, then handed to the next stage.
    private func pass(_ o: UnsafeBufferPointer<UInt8>, from i: Int, _ sink: (UnsafeBufferPointer<UInt8>) throws(AFSError) -> Void) throws(AFSError) {
        produced[i] &+= UInt64(o.count)
        let lim = limit
        if produced[i] > lim {
            let how = maxDecodedBytes == nil ? "the default decoding limit of \(lim) bytes (64 x \(encodedFed) encoded bytes received + 1 MiB)" : "the decoding limit of \(lim) bytes"
            throw AFSError(.limit, "the decoded body exceeds \(how) while decoding \(stages[i].coding.rawValue)")
        }
        try feedStage(i + 1, o, sink)
    }
}
