// Streaming encoders for request bodies (`Content-Encoding`): gzip and deflate with zlib,
// zstd with libzstd, br with libbrotli. Decoding is Decoders.swift's business.
internal import CAFSerialization

/// zlib allocates through `afsMalloc`, so its allocations are checked ones (fault injection
/// reaches them) and a failure is its own out-of-memory status, which becomes `.noMemory`;
/// brotli too, with the fallback below.
private func zlibAlloc(_ opaque: UnsafeMutableRawPointer?, _ items: UInt32, _ size: UInt32) -> UnsafeMutableRawPointer? {
    let (n, o) = Int(items).multipliedReportingOverflow(by: Int(size))
    return o ? nil : afsMalloc(n)
}
private func zlibFree(_ opaque: UnsafeMutableRawPointer?, _ p: UnsafeMutableRawPointer?) { free(p) }
/// libbrotli's encoder (1.0.x as Debian ships it) ends the process (`exit(1)`) when its
/// allocator returns NULL, so this one never does while plain `malloc` can still give the
/// block: a failed checked allocation falls back to `malloc`. Before each encoder call the
/// encoder's peak memory (`ContentEncoder.brotliPeak`) is probed, so a process
/// short of memory gets `.noMemory` from the library instead; an allocation failing inside
/// libbrotli after a successful probe still ends the process there (upstream behaviour,
/// stated in the header).
private func brotliAlloc(_ opaque: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
    afsMalloc(size) ?? malloc(Swift.max(size, 1))
}
private func brotliFree(_ opaque: UnsafeMutableRawPointer?, _ p: UnsafeMutableRawPointer?) { free(p) }

/// One streaming compressor. `compress` is called with all the input there is (and
/// `finish` once the input has ended) and an output buffer; the output is a pure function of
/// the sequence of calls, so a body encoded twice the same way gives the same bytes (the
/// body stream always drives it with full 64 KiB input blocks and an empty output buffer).
///
/// One thread at a time; `reset()` starts a new body with the same settings.
public final class ContentEncoder {
    public let coding: ContentCoding
    public let level: Int32
    private var z: UnsafeMutablePointer<z_stream>?
    private var zstd: OpaquePointer?
    private var brotli: OpaquePointer?
    /// True once the coding's end has been written completely.
    public private(set) var isFinished = false

    /// - Throws: `.invalidArgument` for a level out of range, `.noMemory` when the library
    ///   cannot allocate its state.
    public init(_ coding: ContentCoding, level: Int32) throws(AFSError) {
        self.coding = coding
        self.level = try coding.checkedLevel(level)
        try start()
    }

    deinit { end() }

    private func start() throws(AFSError) {
        isFinished = false
        switch coding {
        case .gzip, .deflate:
            guard let raw = afsMalloc(MemoryLayout<z_stream>.size) else {
                throw AFSError.noMemory("the \(coding.rawValue) encoder", bytes: MemoryLayout<z_stream>.size)
            }
            let s = raw.bindMemory(to: z_stream.self, capacity: 1)
            s.initialize(to: z_stream())
            s.pointee.zalloc = zlibAlloc
            s.pointee.zfree = zlibFree
            let bits: Int32 = coding == .gzip ? 15 + 16 : 15
            let r = deflateInit2_(s, level, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
            if r != Z_OK {
                free(raw)
                throw zlibError(r, "initializing")
            }
            z = s
        case .zstd:
            guard let c = ZSTD_createCCtx() else { throw AFSError.noMemory("the zstd encoder", bytes: 0) }
            let r = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)
            if ZSTD_isError(r) != 0 {
                ZSTD_freeCCtx(c)
                throw zstdError(r)
            }
            zstd = c
        case .br:
            guard let b = BrotliEncoderCreateInstance(brotliAlloc, brotliFree, nil) else {
                throw AFSError.noMemory("the br encoder", bytes: 0)
            }
            _ = BrotliEncoderSetParameter(b, BROTLI_PARAM_QUALITY, UInt32(level))
            brotli = b
        }
    }

    /// An upper estimate of libbrotli's working memory with its default 4 MiB window: the
    /// ring buffer and the hashers (up to 2 x the window below quality 10, 6 x the window for
    /// the Zopfli qualities 10 and 11), plus command and block buffers (libbrotli 1.0 has no
    /// estimating function).
    static func brotliPeak(_ quality: Int32) -> Int {
        let window = 1 << Int(BROTLI_DEFAULT_WINDOW)
        return window * (quality >= 10 ? 8 : 4)
    }

    private func end() {
        if let s = z {
            deflateEnd(s)
            free(s)
            z = nil
        }
        if let c = zstd {
            ZSTD_freeCCtx(c)
            zstd = nil
        }
        if let b = brotli {
            BrotliEncoderDestroyInstance(b)
            brotli = nil
        }
    }

    /// Starts a new body with the same coding and level.
    /// - Throws: `.noMemory`.
    public func reset() throws(AFSError) {
        switch coding {
        case .gzip, .deflate:
            if let s = z, deflateReset(s) == Z_OK {
                isFinished = false
                return
            }
        case .zstd:
            if let c = zstd, ZSTD_isError(ZSTD_CCtx_reset(c, ZSTD_reset_session_only)) == 0 {
                isFinished = false
                return
            }
        case .br:
            break  // brotli has no reset: a new instance
        }
        end()
        try start()
    }

    /// Compresses from `input` into `output`.
    /// - Parameter finish: true when `input` holds the last bytes of the body.
    /// - Returns: bytes of `input` consumed and bytes written to `output`; `isFinished`
    ///   tells when the coding's end has been written.
    /// - Throws: `.noMemory` when the library runs out of memory, `.state` for anything else
    ///   it reports (with its message).
    public func compress(_ input: UnsafeRawBufferPointer, finish: Bool,
                         into output: UnsafeMutableRawPointer, capacity: Int) throws(AFSError) -> (consumed: Int, produced: Int) {
        if isFinished { return (0, 0) }
        let inBase = input.baseAddress ?? UnsafeRawPointer(output)  // never read when count is 0
        switch coding {
        case .gzip, .deflate:
            guard let s = z else { throw AFSError(.state, "the \(coding.rawValue) encoder is not initialized") }
            s.pointee.next_in = UnsafeMutablePointer(mutating: inBase.assumingMemoryBound(to: UInt8.self))
            s.pointee.avail_in = UInt32(clamping: input.count)
            s.pointee.next_out = output.assumingMemoryBound(to: UInt8.self)
            s.pointee.avail_out = UInt32(clamping: capacity)
            let availIn = s.pointee.avail_in, availOut = s.pointee.avail_out
            let lastInput = finish && Int(availIn) == input.count
            let r = deflate(s, lastInput ? Z_FINISH : Z_NO_FLUSH)
            if r == Z_STREAM_END { isFinished = true } else if r != Z_OK && r != Z_BUF_ERROR { throw zlibError(r, "compressing") }
            return (Int(availIn - s.pointee.avail_in), Int(availOut - s.pointee.avail_out))
        case .zstd:
            guard let c = zstd else { throw AFSError(.state, "the zstd encoder is not initialized") }
            var inb = ZSTD_inBuffer(src: inBase, size: input.count, pos: 0)
            var outb = ZSTD_outBuffer(dst: output, size: capacity, pos: 0)
            let r = ZSTD_compressStream2(c, &outb, &inb, finish ? ZSTD_e_end : ZSTD_e_continue)
            if ZSTD_isError(r) != 0 { throw zstdError(r) }
            if finish && r == 0 && inb.pos == input.count { isFinished = true }
            return (inb.pos, outb.pos)
        case .br:
            guard let b = brotli else { throw AFSError(.state, "the br encoder is not initialized") }
            // libbrotli exits on a failed allocation (brotliAlloc): make sure its working
            // memory can be had before it runs.
            try Memory.probe(ContentEncoder.brotliPeak(level), "the br encoder's working memory")
            var availIn = input.count
            var nextIn: UnsafePointer<UInt8>? = inBase.assumingMemoryBound(to: UInt8.self)
            var availOut = capacity
            var nextOut: UnsafeMutablePointer<UInt8>? = output.assumingMemoryBound(to: UInt8.self)
            let ok = BrotliEncoderCompressStream(b, finish ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_PROCESS,
                                                 &availIn, &nextIn, &availOut, &nextOut, nil)
            if ok == 0 {
                // The encoder fails only when an allocation fails (or on misuse, which this
                // driver does not do).
                throw AFSError(.noMemory, "the br encoder ran out of memory")
            }
            if finish && BrotliEncoderIsFinished(b) != 0 { isFinished = true }
            return (input.count - availIn, capacity - availOut)
        }
    }

    private func zlibError(_ r: Int32, _ doing: String) -> AFSError {
        if r == Z_MEM_ERROR { return AFSError(.noMemory, "the \(coding.rawValue) encoder ran out of memory \(doing)") }
        var text = "zlib error \(r)"
        if let s = z, let m = s.pointee.msg { text += ": " + String(cString: m) }
        return AFSError(.state, "the \(coding.rawValue) encoder failed \(doing): \(text)")
    }

    private func zstdError(_ r: Int) -> AFSError {
        // ZSTD_error_memory_allocation (zstd_errors.h): error codes are returned negated.
        if 0 &- r == 64 { return AFSError(.noMemory, "the zstd encoder ran out of memory") }
        return AFSError(.state, "the zstd encoder failed: " + String(cString: ZSTD_getErrorName(r)))
    }

    // MARK: - One shot

    /// The input block size the body stream feeds encoders with (also used here, so that a
    /// one-shot encoding equals the streamed one byte for byte).
    public static let blockSize = 1 << 16

    /// Encodes `data` in memory, in `blockSize` input blocks, into checked memory.
    /// - Throws: `.noMemory`, `.invalidArgument` (level).
    public static func encode(_ data: UnsafeRawBufferPointer, coding: ContentCoding, level: Int32) throws(AFSError) -> ByteBuffer {
        let enc = try ContentEncoder(coding, level: level)
        var out = ByteWriter(capacity: Swift.max(64, data.count / 2))
        let room = blockSize
        var at = 0
        while true {
            // As the body stream feeds it: full blocks; the first short one (maybe empty) is
            // the last.
            let n = Swift.min(room, data.count - at)
            let block = UnsafeRawBufferPointer(start: data.baseAddress.map { $0 + at }, count: n)
            let last = n < room
            var used = 0
            repeat {
                guard out.reserve(room) else { throw AFSError.noMemory("the \(coding.rawValue) body", bytes: out.failedBytes) }
                let rest = UnsafeRawBufferPointer(start: block.baseAddress.map { $0 + used }, count: n - used)
                let (c, p) = try enc.compress(rest, finish: last, into: out.base + out.count, capacity: room)
                used += c
                out.count += p
            } while used < n || (last && !enc.isFinished)
            at += n
            if last { break }
        }
        return try out.takeBuffer()
    }
}
