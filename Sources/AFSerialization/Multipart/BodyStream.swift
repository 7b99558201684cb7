/// The pull-based multipart body (AFNetworking's `AFMultipartBodyStream`): a cursor over the
/// parts' phases that copies boundaries and headers from memory and reads file and callback
/// bodies straight into the caller's buffer. No run loop, no thread hop, no allocation per
/// read.
///
/// Rules (docs/DESIGN.md, "Multipart"):
/// - `read` returns bytes (> 0), 0 at the end, -1 on error; the byte sequence is the same for
///   every sequence of buffer sizes. After a -1 every read returns -1 and `error` keeps the
///   same error until `rewind`/`seek`.
/// - A source yielding fewer or more bytes than declared fails with `.lengthMismatch`: the
///   stream never yields a body whose length differs from `contentLength`.
/// - Files are opened only while their body is read.
///
/// One thread at a time. C: `afs_body_stream`.
public final class MultipartBodyStream: @unchecked Sendable {
    /// The read phases of a part (AFNetworking's `AFHTTPBodyPartReadPhase`), plus the end.
    enum Phase: UInt8 {
        case boundary, headers, body, closing, end
    }

    /// What every reader of the same body shares: parts, boundary lines, part offsets.
    final class Layout: @unchecked Sendable {  // immutable (parts' `consumed` aside)
        let parts: [BodyPart]
        let boundary: String
        /// `--B\r\n`, `\r\n--B\r\n`, `\r\n--B--\r\n`.
        let initial: ByteBlock, encapsulation: ByteBlock, final: ByteBlock
        /// Offset of the first byte of each part's boundary line.
        /// (`BodyPart.unknownLength` after a part of unknown length.)
        let starts: [UInt64]
        /// The raw body's length, `BodyPart.unknownLength` when a part's length is unknown.
        let contentLength: UInt64
        /// What is done to the raw body on its way out (compression, trailer digests);
        /// see Transforms/TransformStream.swift.
        let transforms: BodyTransforms
        /// Kept alive with the body (a temporary file of an exactly compressed body).
        let keepAlive: AnyObject?

        convenience init(parts: [BodyPart], boundary: String) throws(AFSError) {
            try self.init(parts: parts, boundary: boundary, raw: false, transforms: BodyTransforms(), keepAlive: nil)
        }

        /// `raw`: no boundary lines (a whole-body source: one part whose header block is
        /// empty).
        /// No boundary lines: a whole body from one source.
        let isRaw: Bool

        init(parts: [BodyPart], boundary: String, raw: Bool, transforms: BodyTransforms, keepAlive: AnyObject?) throws(AFSError) {
            precondition(!parts.isEmpty, "a multipart body has at least one part")
            self.parts = parts
            isRaw = raw
            self.boundary = boundary
            self.transforms = transforms
            self.keepAlive = keepAlive
            initial = try ByteBlock(raw ? "" : "--" + boundary + "\r\n")
            encapsulation = try ByteBlock(raw ? "" : "\r\n--" + boundary + "\r\n")
            final = try ByteBlock(raw ? "" : "\r\n--" + boundary + "--\r\n")
            var s: [UInt64] = []
            try s.checkedReserve(parts.count, "the part offsets")
            var total: UInt64 = 0
            let unknown = BodyPart.unknownLength
            for (i, p) in parts.enumerated() {
                s.append(total)
                if total == unknown || p.length == unknown {
                    total = unknown
                    continue
                }
                total += UInt64(i == 0 ? initial.count : encapsulation.count)
                total += UInt64(p.headerBlock.count) + p.length
            }
            if total != unknown { total += UInt64(final.count) }
            starts = s
            contentLength = total
        }
    }

    let layout: Layout
    let parts: [BodyPart]

    /// The exact body length (the request's `Content-Length`); `BodyPart.unknownLength`
    /// (C: `AFS_LENGTH_UNKNOWN`) when a source's length is unknown or the body is compressed
    /// while it streams. C: `afs_body_stream_content_length`.
    public var contentLength: UInt64 { layout.transforms.encoding != nil ? BodyPart.unknownLength : layout.contentLength }
    /// The boundary between the parts.
    public var boundary: String { layout.boundary }

    /// At most this many bytes per `read` (AFNetworking's `numberOfBytesInPacket`).
    /// C: `afs_form_throttle_bandwidth`.
    @exclusivity(unchecked) public var packetSize: Int = Int.max
    /// Seconds to sleep after each chunk (AFNetworking's `delay`).
    @exclusivity(unchecked) public var delay: Double = 0
    /// Whether `write(to:written:)` returns to its caller when a signal interrupts it
    /// (`EINTR`, or a short write to a pipe or socket, which on a blocking descriptor only a
    /// signal causes) instead of writing on: it throws `.io` with errno `EINTR` and the
    /// stream is resumable exactly as after `EAGAIN`. Off by default (EINTR is retried).
    /// C: `afs_body_stream_set_interruptible`.
    @exclusivity(unchecked) public var returnsOnInterrupt = false
    /// Called after every successful read or write with (bytes delivered so far, total).
    /// C: `afs_body_stream_set_progress`.
    @exclusivity(unchecked) public var progress: ((UInt64, UInt64) -> Void)?
    /// Called like `progress` (after it); returning true cancels: `write(to:)` stops at
    /// once and a read's bytes are delivered but the next read fails, both with `.io`,
    /// `ECANCELED`, "cancelled by the progress callback …", sticky until `rewind`/`seek`.
    /// C: `afs_body_stream_set_progress_cancel`.
    @exclusivity(unchecked) public var shouldCancel: ((UInt64, UInt64) -> Bool)?

    /// Kernel copies and in-memory writes move at most this much per step, so progress (and
    /// a chance to cancel) comes at least every 1 MiB.
    public static let writeStep = 1 << 20

    /// Reports progress; true when the caller cancelled (the sticky error is then set).
    @inline(__always)
    func report() -> Bool {
        let total = contentLength
        progress?(position, total)
        guard let c = shouldCancel, c(position, total) else { return false }
        error = AFSError(.io, "cancelled by the progress callback at byte \(position) of \(total == BodyPart.unknownLength ? "a body of unknown length" : String(total))", osErrno: ECANCELED)
        closeFile()
        return true
    }

    @exclusivity(unchecked) public internal(set) var isOpen = false
    @exclusivity(unchecked) public private(set) var isClosed = false
    /// The sticky error of the last failed read (or failing source in `write(to:)`).
    /// C: `afs_body_stream_error`.
    @exclusivity(unchecked) public internal(set) var error: AFSError?
    /// Bytes delivered so far (returned by `read` or written by `write(to:)`).
    /// C: `afs_body_stream_position`.
    @exclusivity(unchecked) public internal(set) var position: UInt64 = 0

    // The cursor: part, phase, offset in the phase. It can run ahead of `position` only
    // inside a failing call; seek and rewind reset it from a position.
    // Hot state: one thread at a time by contract, so no dynamic exclusivity checks.
    @exclusivity(unchecked) var partIndex = 0
    @exclusivity(unchecked) var phase = Phase.boundary
    @exclusivity(unchecked) var offset: UInt64 = 0
    /// The open file of the current part (body phase of a file part), or -1.
    @exclusivity(unchecked) var fd: Int32 = -1
    /// Lazily allocated scratch space: skipping callback bytes, fallback copies.
    var scratch: UnsafeMutablePointer<UInt8>?
    static let scratchSize = 1 << 16
    var iov: UnsafeMutablePointer<iovec>?
    static let iovCount = 64
    /// Callback bytes read by `write(to:)` but not yet written (a short write): they belong
    /// at (carryPart, carryOffset) and live in `scratch[carryStart ..< carryStart+carryCount]`.
    @exclusivity(unchecked) var carryCount = 0, carryStart = 0, carryPart = -1
    @exclusivity(unchecked) var carryOffset: UInt64 = 0
    /// Transform and chunked-framing state (Transforms/TransformStream.swift), made on
    /// first use.
    var transformState: TransformState?
    /// Set by the chunked writer: `fill` stops before a file part's body (so that the
    /// writer can send it with `sendfile` in a chunk of its own).
    @exclusivity(unchecked) var fillStopsAtFiles = false

    /// A stream over `parts` separated by `boundary`. The first read opens it.
    /// - Throws: `AFSError` `.noMemory`.
    public init(parts: [BodyPart], boundary: String) throws(AFSError) {
        layout = try Layout(parts: parts, boundary: boundary)
        self.parts = layout.parts
    }

    init(layout: Layout) {
        self.layout = layout
        parts = layout.parts
    }

    deinit {
        if fd >= 0 { Platform.close(fd) }
        free(scratch)
        free(iov)
    }

    /// A new reader of the same body, at offset 0, sharing the parts (AFNetworking's
    /// `-copyWithZone:`). Callback parts are shared: a reader that finds a callback
    /// elsewhere rewinds it first.
    public func makeReader() -> MultipartBodyStream {
        MultipartBodyStream(layout: layout)
    }

    // MARK: - Open, close, state

    /// Opens the stream (reads open it implicitly). C: `afs_body_stream_open`.
    /// - Throws: `.state` when the stream is closed.
    public func open() throws {
        if isClosed { throw closedError() }
        isOpen = true
    }

    /// Closes the stream and any open file; later calls fail with `.state`.
    /// C: `afs_body_stream_close`.
    public func close() {
        closeFile()
        isClosed = true
        isOpen = false
    }

    /// True from open until the last byte has been read (or an error was returned).
    /// C: `afs_body_stream_has_bytes_available`.
    public var hasBytesAvailable: Bool {
        guard isOpen && !isClosed && error == nil else { return false }
        if hasTransforms || layout.contentLength == BodyPart.unknownLength { return !transformedAtEnd }
        return position < layout.contentLength
    }

    func closedError() -> AFSError { AFSError(.state, "the body stream is closed") }

    @inline(__always)
    func closeFile() {
        if fd >= 0 {
            Platform.close(fd)
            fd = -1
        }
    }

    // MARK: - Reading

    /// Reads up to `maxLength` bytes of the body into `buffer` (at most `packetSize`, then
    /// sleeps `delay`). Opens the stream if needed.
    /// - Returns: the number of bytes (> 0), 0 at the end, or -1 on error — then `error`
    ///   tells why, every later read returns -1 until `rewind`/`seek`, and `position` is
    ///   unchanged (nothing of the failing call counts as delivered).
    /// C: `afs_body_stream_read`.
    public func read(into buffer: UnsafeMutablePointer<UInt8>?, maxLength: Int) -> Int {
        if error != nil { return -1 }
        if isClosed {
            error = closedError()
            return -1
        }
        guard let buffer = buffer, maxLength > 0 else {
            error = AFSError(.invalidArgument, buffer == nil ? "the buffer is NULL" : "max_length is 0")
            return -1
        }
        isOpen = true
        if phase == .end && !hasTransforms { return 0 }
        let n: Int
        do {
            n = hasTransforms ? try produce(buffer, Swift.min(maxLength, packetSize)) : try fill(buffer, Swift.min(maxLength, packetSize))
        } catch {
            self.error = (error as? AFSError) ?? AFSError(.io, "\(error)")
            closeFile()
            return -1
        }
        if n > 0 {
            if hasTransforms { delivered(UnsafeRawBufferPointer(start: buffer, count: n)) }
            position += UInt64(n)
            if report() { return n }  // these bytes are delivered; the next read fails
            if delay > 0 { MultipartBodyStream.sleep(delay) }
        }
        return n
    }

    /// The phase machine: fills `buf` with up to `limit` bytes from the cursor on. Throws
    /// the sources' failures; returns less than `limit` only at the end.
    func fill(_ buf: UnsafeMutablePointer<UInt8>, _ limit: Int) throws -> Int {
        var n = 0
        while n < limit {
            let part = parts[partIndex]
            switch phase {
            case .end:
                return n
            case .boundary, .headers, .closing:
                n += copyMemory(segmentBlock(part), buf + n, limit - n)
            case .body:
                switch part.source {
                case .memory(let block):
                    n += copyMemory(block, buf + n, limit - n)
                case .file:
                    if fillStopsAtFiles && offset == 0 && part.length > 0 { return n }
                    if offset == part.length {
                        try verifyFileEnd(part)
                        advancePhase()
                        continue
                    }
                    if fd < 0 { try openFile(part) }
                    let want = Int(Swift.min(part.length - offset, UInt64(limit - n)))
                    let r = pread(fd, buf + n, want, off_t(offset))
                    if r < 0 {
                        if errno == EINTR { continue }
                        throw fileError(part, "reading", errno)
                    }
                    if r == 0 { throw shorterFile(part) }
                    n += r
                    offset += UInt64(r)
                case .stream(let source):
                    if carryCount > 0 {
                        if carryPart == partIndex && carryOffset == offset {
                            let k = Swift.min(carryCount, limit - n)
                            memcpy(buf + n, scratch! + carryStart, k)
                            takeCarry(k)
                            n += k
                            offset += UInt64(k)
                            continue
                        }
                        dropCarry()
                    }
                    if part.consumed != offset { try reposition(part, source, to: offset) }
                    if offset == part.length {
                        try probeStreamEnd(part, source)
                        advancePhase()
                        continue
                    }
                    let want = Int(Swift.min(part.length - offset, UInt64(limit - n)))
                    let r = try readCallback(part, source, buf + n, want)
                    if r == 0 {  // the end of a source of unknown length
                        advancePhase()
                        continue
                    }
                    n += r
                    offset += UInt64(r)
                }
            }
        }
        return n
    }

    /// The in-memory bytes of the current boundary, headers or closing phase.
    @inline(__always)
    func segmentBlock(_ part: BodyPart) -> ByteBlock {
        switch phase {
        case .boundary: return partIndex == 0 ? layout.initial : layout.encapsulation
        case .headers: return part.headerBlock
        case .body:
            if case .memory(let b) = part.source { return b }
            fatalError("not an in-memory phase")
        default: return layout.final
        }
    }

    /// Copies from an in-memory phase; moves to the next phase when it is done.
    @inline(__always)
    func copyMemory(_ block: ByteBlock, _ dst: UnsafeMutablePointer<UInt8>, _ room: Int) -> Int {
        let avail = block.count - Int(offset)
        let k = Swift.min(avail, room)
        if k > 0 {
            memcpy(dst, block.base + Int(offset), k)
            offset += UInt64(k)
        }
        if k == avail { advancePhase() }
        return k
    }

    func advancePhase() {
        switch phase {
        case .boundary: phase = .headers
        case .headers: phase = .body
        case .body:
            closeFile()
            if partIndex == parts.count - 1 { phase = .closing } else {
                partIndex += 1
                phase = .boundary
            }
        case .closing: phase = .end
        case .end: break
        }
        offset = 0
    }

    // MARK: - File parts

    func openFile(_ part: BodyPart) throws {
        guard case .file(let path) = part.source else { return }
        var fd: Int32
        // O_NONBLOCK: a path replaced by a FIFO since the append must fail below, not block
        // in open(2) waiting for a writer; it is cleared once the file is known regular.
        repeat { fd = Platform.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) } while fd < 0 && errno == EINTR
        if fd < 0 { throw fileError(part, "opening", errno) }
        var st = stat()
        if fstat(fd, &st) != 0 {
            let e = errno
            Platform.close(fd)
            throw fileError(part, "examining", e)
        }
        if (st.st_mode & S_IFMT) != S_IFREG {
            Platform.close(fd)
            throw AFSError(.io, "\(part.label): \"\(path)\" is no longer a regular file")
        }
        if UInt64(st.st_size) != part.length {
            Platform.close(fd)
            throw AFSError(.lengthMismatch, "\(part.label): the file \"\(path)\" now has \(st.st_size) bytes but had \(part.length) when it was appended")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        self.fd = fd
    }

    /// After the declared bytes: one more byte would mean the file grew.
    func verifyFileEnd(_ part: BodyPart) throws {
        if fd < 0 { try openFile(part) }
        var one: UInt8 = 0
        var r: Int
        repeat { r = pread(fd, &one, 1, off_t(part.length)) } while r < 0 && errno == EINTR
        if r < 0 { throw fileError(part, "reading", errno) }
        if r > 0 { throw longerFile(part) }
    }

    func fileError(_ part: BodyPart, _ doing: String, _ e: Int32) -> AFSError {
        guard case .file(let path) = part.source else { return AFSError(.io, part.label, osErrno: e) }
        return AFSError(.io, "\(part.label): \(doing) the file \"\(path)\" failed: \(errorText(e))", osErrno: e)
    }

    func shorterFile(_ part: BodyPart) -> AFSError {
        guard case .file(let path) = part.source else { return AFSError(.lengthMismatch, part.label) }
        return AFSError(.lengthMismatch, "\(part.label): the file \"\(path)\" ended after \(offset) of the \(part.length) bytes it had when it was appended")
    }

    func longerFile(_ part: BodyPart) -> AFSError {
        guard case .file(let path) = part.source else { return AFSError(.lengthMismatch, part.label) }
        return AFSError(.lengthMismatch, "\(part.label): the file \"\(path)\" has more than the \(part.length) bytes it had when it was appended")
    }

    // MARK: - Callback parts

    /// Reads at most `want` (> 0) bytes from the callback and checks the answer.
    /// A source of unknown length returns 0 at its end.
    func readCallback(_ part: BodyPart, _ source: PartStreamSource, _ dst: UnsafeMutablePointer<UInt8>, _ want: Int) throws -> Int {
        let r = source.read(into: dst, maxLength: want)
        if r > 0 && r <= want {
            part.consumed += UInt64(r)
            return r
        }
        if r == 0 && part.length == BodyPart.unknownLength { return 0 }
        let at = part.consumed
        part.consumed = BodyPart.unknownPosition
        if r == 0 {
            throw AFSError(.lengthMismatch, "\(part.label): the read callback ended after \(at) of the \(part.length) bytes declared")
        }
        if r > want {
            throw AFSError(.io, "\(part.label): the read callback returned \(r), more than the \(want) bytes asked for")
        }
        throw AFSError(.io, "\(part.label): the read callback failed (returned \(r)) after \(at) bytes")
    }

    /// After the declared bytes: the callback must be at its end.
    func probeStreamEnd(_ part: BodyPart, _ source: PartStreamSource) throws {
        var one: UInt8 = 0
        let r = source.read(into: &one, maxLength: 1)
        if r == 0 { return }
        part.consumed = BodyPart.unknownPosition
        if r > 0 {
            throw AFSError(.lengthMismatch, "\(part.label): the read callback yields more than the \(part.length) bytes declared")
        }
        throw AFSError(.io, "\(part.label): the read callback failed (returned \(r)) at the end of its \(part.length) bytes")
    }

    /// Brings the callback to `target`: rewinds when it is past it, then skips forward.
    func reposition(_ part: BodyPart, _ source: PartStreamSource, to target: UInt64) throws {
        if part.consumed > target {
            guard source.canRewind else { throw cannotRewind(part) }
            guard source.rewind() else {
                part.consumed = BodyPart.unknownPosition
                throw AFSError(.io, "\(part.label): the rewind callback failed")
            }
            part.consumed = 0
        }
        let tmp = try scratchBuffer()
        while part.consumed < target {
            let want = Int(Swift.min(target - part.consumed, UInt64(MultipartBodyStream.scratchSize)))
            if try readCallback(part, source, tmp, want) == 0 {
                throw AFSError(.lengthMismatch, "\(part.label): the read callback ended after \(part.consumed) bytes, before byte \(target) it had reached before")
            }
        }
    }

    func cannotRewind(_ part: BodyPart) -> AFSError {
        AFSError(.unsupported, "\(part.label): its stream has no rewind function and has already been read")
    }

    func scratchBuffer() throws(AFSError) -> UnsafeMutablePointer<UInt8> {
        if let s = scratch { return s }
        guard let raw = afsMalloc(MultipartBodyStream.scratchSize) else {
            throw AFSError.noMemory("the body stream's scratch buffer", bytes: MultipartBodyStream.scratchSize)
        }
        let s = raw.assumingMemoryBound(to: UInt8.self)
        scratch = s
        return s
    }

    @inline(__always) func takeCarry(_ k: Int) {
        carryStart += k
        carryCount -= k
        carryOffset += UInt64(k)
        if carryCount == 0 { dropCarry() }
    }

    @inline(__always) func dropCarry() {
        carryCount = 0
        carryStart = 0
        carryPart = -1
    }

    // MARK: - Rewind and seek

    /// Goes back to the first byte and clears a sticky error. C: `afs_body_stream_rewind`.
    /// - Throws: `.state` when closed; `.unsupported` when a callback part that was read
    ///   has no rewind function.
    public func rewind() throws { try seek(to: 0) }

    /// Moves to `target` (0 ... contentLength) and clears a sticky error; the next read
    /// starts there. Parts that end at or before `target` are skipped unread (see `locate`):
    /// a dishonest callback length is only found by reads that go through the part.
    /// C: `afs_body_stream_seek`.
    /// - Throws: `.state` when closed; `.invalidArgument` past the end; `.unsupported` when
    ///   a callback part at or after the target was already read past the target and has no
    ///   rewind function.
    public func seek(to target: UInt64) throws {
        if isClosed { throw closedError() }
        if try seekTransformed(to: target) { return }
        guard target <= layout.contentLength else {
            throw AFSError(.invalidArgument, "cannot seek to offset \(target): the body has \(layout.contentLength) bytes")
        }
        let (p, ph, off) = locate(target)
        // Callback bytes read ahead by a short write stay usable when we land on them.
        let keepCarry = carryCount > 0 && ph == .body && p == carryPart && off == carryOffset
        // Every callback part from the target on will be read from where the target needs it.
        for i in p..<parts.count {
            let part = parts[i]
            guard case .stream(let source) = part.source, !source.canRewind else { continue }
            // A target in the closing boundary or at the end reads nothing more of part p.
            if i == p && (ph == .closing || ph == .end) { continue }
            var need: UInt64 = i == p && ph == .body ? off : 0
            if i == p && keepCarry { need += UInt64(carryCount) }
            if part.consumed > need { throw cannotRewind(part) }
        }
        closeFile()
        if !keepCarry { dropCarry() }
        partIndex = p
        phase = ph
        offset = off
        position = target
        error = nil
    }

    /// The part, phase and offset of body offset `target`. A target just after a part's body
    /// (also at an empty body) lands after it, in the next part's boundary or the closing
    /// boundary, for every part alike: a seek there skips the part unread, so its source is
    /// neither called nor length-checked. Reads that go through a body always check its end.
    func locate(_ target: UInt64) -> (Int, Phase, UInt64) {
        if target >= layout.contentLength { return (parts.count - 1, .end, 0) }
        // The last part that starts at or before target.
        var lo = 0, hi = parts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if layout.starts[mid] <= target { lo = mid } else { hi = mid - 1 }
        }
        let part = parts[lo]
        var rel = target - layout.starts[lo]
        let b = UInt64(lo == 0 ? layout.initial.count : layout.encapsulation.count)
        if rel < b { return (lo, .boundary, rel) }
        rel -= b
        let h = UInt64(part.headerBlock.count)
        if rel < h { return (lo, .headers, rel) }
        rel -= h
        if rel < part.length { return (lo, .body, rel) }
        // Only the last part gets here (a target after any other body is in the next part).
        return (lo, .closing, rel - part.length)
    }

    // MARK: - Writing to a file descriptor

    /// Writes the rest of the body to a blocking `fd`: `copy_file_range` for file parts when
    /// `fd` is a regular file, `sendfile` otherwise, plain writes for memory parts; falls back
    /// to read/write when the kernel cannot copy. `written` gets the bytes written by this
    /// call, also when it fails; `position` then reflects exactly what was written, so the
    /// call can be repeated. A failing destination (EPIPE, ENOSPC) is returned but does not
    /// make the error sticky; a failing source does. C: `afs_body_stream_write_to_fd`.
    /// - Throws: `.state`, the sticky error, `.io` (destination or source, with errno),
    ///   `.lengthMismatch`, `.unsupported`.
    public func write(to out: Int32, written: inout UInt64) throws {
        try write(to: out, written: &written, interruptible: returnsOnInterrupt)
    }

    /// The start of every write to a descriptor (`write(to:…)`, `writeChunked`): the stream
    /// is usable and `out` can be stat'ed. Returns whether `out` is a regular file (no
    /// SIGPIPE guard, never interrupted).
    func beginWrite(to out: Int32) throws -> Bool {
        if isClosed { throw closedError() }
        if let e = error { throw e }
        var st = stat()
        if fstat(out, &st) != 0 {
            let e = errno
            throw AFSError(.io, "cannot write the body to file descriptor \(out): \(errorText(e))", osErrno: e)
        }
        isOpen = true
        return (st.st_mode & S_IFMT) == S_IFREG
    }

    /// One step of copying the open file part's body at `offset` to `out` (at most `want`
    /// bytes, the caller moves `offset`): by the kernel while `kernel` holds (cleared when it
    /// cannot copy here, or fails in a way the plain path will name), else by pread into the
    /// scratch buffer and a write. Returns the bytes written and the bytes asked for (fewer
    /// written is a signal when interruptible), or nil when the step is to be taken again.
    /// Shared by `write(to:…)` and `writeChunked`.
    func fileStep(_ part: BodyPart, to out: Int32, regular: Bool, _ want: Int, kernel: inout Bool,
                  _ sig: inout SigpipeGuard) throws -> (did: Int, wanted: Int)? {
        if kernel {
            let r = kernelCopy(to: out, regular: regular, want)
            if r > 0 { return (r, want) }
            if r < 0 && errno == EINTR {
                if stopsOnSignal { throw destinationError(out, EINTR, &sig) }
                return nil
            }
            if r < 0 && errno == EAGAIN { throw destinationError(out, errno, &sig) }
            kernel = false
            return nil
        }
        let tmp = try scratchBuffer()
        let r = try source { () throws -> Int in
            let k = Swift.min(want, MultipartBodyStream.scratchSize)
            var r: Int
            repeat { r = pread(self.fd, tmp, k, off_t(offset)) } while r < 0 && errno == EINTR
            if r < 0 { throw fileError(part, "reading", errno) }
            if r == 0 { throw shorterFile(part) }
            return r
        }
        return (try writeSome(out, tmp, r, &sig), r)
    }

    /// `write(to:written:)`, returning on a signal when `interruptible` (see
    /// `returnsOnInterrupt`).
    public func write(to out: Int32, written: inout UInt64, interruptible: Bool) throws {
        written = 0
        let regular = try beginWrite(to: out)
        var sig = SigpipeGuard(active: !regular)
        defer { sig.restore() }
        // Interruptible: an EINTR, or a short write to a pipe or socket, returns to the
        // caller (after the bytes written are counted).
        let stopsOnSignal = interruptible && !regular
        self.stopsOnSignal = stopsOnSignal
        defer { self.stopsOnSignal = false }
        if hasTransforms {
            try writeTransformed(to: out, written: &written, &sig)
            return
        }
        var kernel = true
        var kernelPart = -1
        while phase != .end {
            let part = parts[partIndex]
            let chunk = Swift.min(packetSize, MultipartBodyStream.writeStep)
            var did = 0
            var wanted = 0
            switch (phase, part.source) {
            case (.body, .file):
                if kernelPart != partIndex {
                    kernel = true
                    kernelPart = partIndex
                }
                if offset == part.length {
                    try source { try verifyFileEnd(part) }
                    advancePhase()
                    continue
                }
                if self.fd < 0 { try source { try openFile(part) } }
                let want = Int(Swift.min(part.length - offset, UInt64(chunk)))
                guard let step = try fileStep(part, to: out, regular: regular, want, kernel: &kernel, &sig) else { continue }
                (did, wanted) = step
                offset += UInt64(did)
            case (.body, .stream(let src)):
                if !(carryCount > 0 && carryPart == partIndex && carryOffset == offset) {
                    dropCarry()
                    if part.consumed != offset { try source { try reposition(part, src, to: offset) } }
                    if offset == part.length {
                        try source { try probeStreamEnd(part, src) }
                        advancePhase()
                        continue
                    }
                    let tmp = try scratchBuffer()
                    let want = Int(Swift.min(part.length - offset, UInt64(Swift.min(chunk, MultipartBodyStream.scratchSize))))
                    let r = try source { try readCallback(part, src, tmp, want) }
                    if r == 0 {  // the end of a source of unknown length
                        advancePhase()
                        continue
                    }
                    carryPart = partIndex
                    carryOffset = offset
                    carryStart = 0
                    carryCount = r
                }
                wanted = carryCount
                did = try writeSome(out, scratch! + carryStart, carryCount, &sig)
                offset += UInt64(did)
                takeCarry(did)
            default:
                did = try writeMemory(out, chunk, &sig, wanted: &wanted)
            }
            if did > 0 {
                position += UInt64(did)
                written += UInt64(did)
                if report(), let e = error { throw e }
                if delay > 0 { MultipartBodyStream.sleep(delay) }
                if stopsOnSignal && did < wanted { throw interruptedError(out) }
            }
        }
    }

    /// Runs a source-side step; its failure becomes the sticky error.
    @inline(__always)
    func source<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch {
            let e = (error as? AFSError) ?? AFSError(.io, "\(error)")
            self.error = e
            closeFile()
            dropCarry()
            throw e
        }
    }

    /// One `copy_file_range` or `sendfile` from the current file part: the count, or -1 with
    /// errno.
    func kernelCopy(to out: Int32, regular: Bool, _ want: Int) -> Int {
        if regular {
            guard let cfr = OSCalls.copyFileRange else {
                errno = ENOSYS
                return -1
            }
            var inOff = Int(offset)
            return cfr(self.fd, &inOff, out, nil, want, 0)
        }
        var inOff = off_t(offset)
        return sendfile(out, self.fd, &inOff, want)
    }

    /// Writes consecutive in-memory phases (boundaries, headers, memory bodies) with one
    /// `writev`, and moves the cursor by what was written.
    func writeMemory(_ out: Int32, _ chunk: Int, _ sig: inout SigpipeGuard, wanted: inout Int) throws -> Int {
        let iov = try iovecs()
        var count = 0, total = 0
        // Walk a copy of the cursor over the in-memory phases.
        var p = partIndex, ph = phase, off = offset
        while count < MultipartBodyStream.iovCount && total < chunk && ph != .end {
            let part = parts[p]
            var block: ByteBlock?
            switch ph {
            case .boundary: block = p == 0 ? layout.initial : layout.encapsulation
            case .headers: block = part.headerBlock
            case .body:
                if case .memory(let b) = part.source { block = b }
            case .closing: block = layout.final
            case .end: break
            }
            guard let b = block else { break }  // a file or callback body: stop here
            let k = Swift.min(b.count - Int(off), chunk - total)
            if k > 0 {
                iov[count] = iovec(iov_base: UnsafeMutableRawPointer(b.base + Int(off)), iov_len: k)
                count += 1
                total += k
            }
            if Int(off) + k < b.count { break }
            // next phase of the copy
            switch ph {
            case .boundary: ph = .headers
            case .headers: ph = .body
            case .body:
                if p == parts.count - 1 { ph = .closing } else { p += 1; ph = .boundary }
            case .closing: ph = .end
            case .end: break
            }
            off = 0
        }
        if count == 0 {
            // Only empty in-memory phases before a source body or the end: step over them.
            advanceMemory(0)
            return 0
        }
        var r: Int
        repeat { r = writev(out, iov, Int32(count)) } while r < 0 && errno == EINTR && !stopsOnSignal
        if r < 0 { throw destinationError(out, errno, &sig) }
        wanted = total
        advanceMemory(r)
        return r
    }

    /// Moves the cursor `n` bytes forward through in-memory phases, and past empty ones.
    func advanceMemory(_ n: Int) {
        var left = n
        while phase != .end {
            let part = parts[partIndex]
            let len: Int
            switch phase {
            case .boundary: len = partIndex == 0 ? layout.initial.count : layout.encapsulation.count
            case .headers: len = part.headerBlock.count
            case .body:
                guard case .memory(let b) = part.source else { return }
                len = b.count
            case .closing: len = layout.final.count
            case .end: return
            }
            let k = Swift.min(len - Int(offset), left)
            offset += UInt64(k)
            left -= k
            if Int(offset) < len { return }
            advancePhase()
        }
    }

    func iovecs() throws(AFSError) -> UnsafeMutablePointer<iovec> {
        if let v = iov { return v }
        let bytes = MultipartBodyStream.iovCount * MemoryLayout<iovec>.stride
        guard let raw = afsMalloc(bytes) else { throw AFSError.noMemory("the body stream's write vector", bytes: bytes) }
        let v = raw.bindMemory(to: iovec.self, capacity: MultipartBodyStream.iovCount)
        iov = v
        return v
    }

    /// One `write` of up to `count` bytes (retrying EINTR).
    func writeSome(_ out: Int32, _ p: UnsafeMutablePointer<UInt8>, _ count: Int, _ sig: inout SigpipeGuard) throws -> Int {
        var r: Int
        repeat { r = Platform.write(out, p, count) } while r < 0 && errno == EINTR && !stopsOnSignal
        if r < 0 { throw destinationError(out, errno, &sig) }
        return r
    }

    /// Set while an interruptible `write(to:)` runs on a pipe or socket.
    @exclusivity(unchecked) var stopsOnSignal = false

    /// A short write in an interruptible write: a signal came (resumable, errno EINTR).
    func interruptedError(_ out: Int32) -> AFSError {
        AFSError(.io, "writing the body to file descriptor \(out) was interrupted by a signal at body offset \(position) (call again to continue)", osErrno: EINTR)
    }

    func destinationError(_ out: Int32, _ e: Int32, _ sig: inout SigpipeGuard) -> AFSError {
        if e == EPIPE { sig.sawEPIPE = true }
        return AFSError(.io, "writing the body to file descriptor \(out) failed at body offset \(position): \(errorText(e))", osErrno: e)
    }

    // MARK: - Helpers

    static func sleep(_ seconds: Double) {
        guard seconds > 0, seconds.isFinite else { return }
        var ts = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var rest = timespec()
        while nanosleep(&ts, &rest) != 0 && errno == EINTR { ts = rest }
    }
}

/// `strerror` text for errno `e`.
func errorText(_ e: Int32) -> String {
    guard let s = strerror(e) else { return "errno \(e)" }
    return String(cString: s)
}

/// System calls the Glibc module does not declare, looked up once.
enum OSCalls {
    typealias CopyFileRange = @convention(c) (Int32, UnsafeMutablePointer<Int>?, Int32, UnsafeMutablePointer<Int>?, Int, UInt32) -> Int
    /// `copy_file_range(2)` (glibc 2.27+), or nil.
    static let copyFileRange: CopyFileRange? = {
        guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "copy_file_range") else { return nil }
        return unsafeBitCast(sym, to: CopyFileRange.self)
    }()
}

/// Blocks SIGPIPE in the calling thread while writing to a pipe or socket, so a closed
/// reader gives EPIPE instead of killing the process; a SIGPIPE raised by our own write is
/// consumed before the mask is restored.
struct SigpipeGuard {
    var active: Bool
    var sawEPIPE = false
    var set = sigset_t()
    var old = sigset_t()
    var wasPending = false
    var unblock = false

    init(active: Bool) {
        self.active = active
        guard active else { return }
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        var pending = sigset_t()
        sigemptyset(&pending)
        sigpending(&pending)
        wasPending = sigismember(&pending, SIGPIPE) == 1
        if pthread_sigmask(SIG_BLOCK, &set, &old) == 0 {
            unblock = sigismember(&old, SIGPIPE) == 0
        }
    }

    mutating func restore() {
        guard active else { return }
        if sawEPIPE && !wasPending {
            var zero = timespec(tv_sec: 0, tv_nsec: 0)
            while sigtimedwait(&set, nil, &zero) < 0 && errno == EINTR {}
        }
        if unblock { pthread_sigmask(SIG_SETMASK, &old, nil) }
        active = false
    }
}

// MARK: - Writing a whole body to a file

extension MultipartBodyStream {
    /// Writes the whole body, from its first byte, to `path` through a temporary file in the
    /// same directory that is renamed over `path` at the end: on failure no partial file is
    /// left. Uses its own reader, so this stream's position is untouched (callback parts are
    /// shared and rewound as needed). Synchronous. C: `afs_request_write_body_to_file`
    /// (through `Request.writingBody(toFile:)`).
    /// - Throws: `.io` (with errno) for the destination, and the sources' errors.
    public func writeBody(toFile path: String) throws {
        guard !path.isEmpty else { throw AFSError(.invalidArgument, "the path is empty") }
        let dir: String
        if let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) {
            let d = String(path[..<slash])
            dir = d.isEmpty ? "/" : d
        } else {
            dir = "."
        }
        let base = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[path.index(after: $0)...]) } ?? path
        var g = SystemRandomNumberGenerator()
        var fd: Int32 = -1
        var tmp = ""
        for _ in 0..<16 {
            let r = g.next() as UInt64
            tmp = (dir == "/" ? "/" : dir + "/") + "." + base + ".afs-" + String(r, radix: 16) + ".tmp"
            repeat { fd = Platform.open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666) } while fd < 0 && errno == EINTR
            if fd >= 0 || errno != EEXIST { break }
        }
        if fd < 0 {
            let e = errno
            throw AFSError(.io, "cannot create a temporary file in \"\(dir)\" to write \"\(path)\": \(errorText(e))", osErrno: e)
        }
        do {
            let reader = makeReader()
            var written: UInt64 = 0
            try reader.write(to: fd, written: &written)
            if Platform.close(fd) != 0 {
                fd = -1
                let e = errno
                throw AFSError(.io, "writing \"\(path)\" failed: \(errorText(e))", osErrno: e)
            }
            fd = -1
            if rename(tmp, path) != 0 {
                let e = errno
                throw AFSError(.io, "cannot rename the temporary file to \"\(path)\": \(errorText(e))", osErrno: e)
            }
        } catch {
            if fd >= 0 { Platform.close(fd) }
            unlink(tmp)
            if var e = error as? AFSError {
                if !e.message.contains(path) { e.message = "writing the body to \"\(path)\": " + e.message }
                throw e
            }
            throw error
        }
    }
}

extension Request {
    /// `requestWithMultipartFormRequest:writingStreamContentsToFile:completionHandler:`,
    /// synchronous: writes the whole multipart body to `path` (no partial file on failure)
    /// and returns a copy of the request without body stream, headers kept.
    /// C: `afs_request_write_body_to_file`.
    /// - Throws: `.invalidArgument` when the request has no body stream; the errors of
    ///   `MultipartBodyStream.writeBody(toFile:)`.
    public func writingBody(toFile path: String) throws -> Request {
        guard let s = bodyStream else {
            throw AFSError(.invalidArgument, "the request has no multipart body stream to write")
        }
        if s.isClosed { throw s.closedError() }
        try s.writeBody(toFile: path)
        var r = self
        r.bodyStream = nil
        return r
    }
}
