// The pull form of the multipart parser: part after part from a file descriptor, in
// constant memory (a 64 KiB read buffer, the parser's carry, one part's headers, and at most
// one read buffer's worth of decoded bytes waiting for `read`).
//
// The parser runs as a `MultipartSink` that pauses after every event, so that the reader
// never has more than one event's bytes in hand. Part bytes must pass through this process
// for the boundary search, so `writePart(to:)` writes them from the read buffer with
// write(2): splice/copy_file_range would move bytes before they were searched.

/// The reader's sink: the parser holds its sink strongly, and the reader owns the parser.
private final class ReaderSink: MultipartSink {
    unowned let reader: MultipartReader
    init(_ r: MultipartReader) { reader = r }
    func partBegin(_ head: MultipartPartHead) -> MultipartFlow { reader.partBegin(head) }
    func partData(_ bytes: UnsafeBufferPointer<UInt8>) -> MultipartFlow { reader.partData(bytes) }
    func partEnd() -> MultipartFlow { reader.partEnd() }
}

public final class MultipartReader: MultipartSink {
    public let fd: Int32
    public static let bufferSize = 64 << 10

    private var parser: MultipartParser!
    private let input: UnsafeMutablePointer<UInt8>
    private var start = 0, end = 0
    private var eof = false
    private var pending: [UInt8] = []
    private var pendingStart = 0
    private var queuedBegin: MultipartPartHead?
    private var partEnded = false
    private var failure: AFSError?
    private var finished = false
    /// The current part, nil before the first `nextPart` and after the last.
    public private(set) var current: MultipartPartHead?

    /// - Throws: `.invalidArgument` (no boundary, a negative fd), `.noMemory`.
    public init(fd: Int32, contentTypeOrBoundary: String, limits: MultipartLimits = MultipartLimits()) throws {
        guard fd >= 0 else { throw AFSError.invalidArgument("the file descriptor \(fd) is not valid") }
        self.fd = fd
        guard let b = afsMalloc(MultipartReader.bufferSize) else {
            throw AFSError.noMemory("a multipart reader's buffer", bytes: MultipartReader.bufferSize)
        }
        input = b.assumingMemoryBound(to: UInt8.self)
        do {
            parser = try MultipartParser(contentTypeOrBoundary: contentTypeOrBoundary, limits: limits)
        } catch {
            free(b)
            throw error
        }
        parser.sink = ReaderSink(self)
    }

    deinit { free(input) }

    // MARK: Sink (pauses after every event)

    public func partBegin(_ head: MultipartPartHead) -> MultipartFlow {
        queuedBegin = head
        return .pause
    }

    public func partData(_ bytes: UnsafeBufferPointer<UInt8>) -> MultipartFlow {
        if pendingStart == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
        }
        pending.append(contentsOf: bytes)
        return .pause
    }

    public func partEnd() -> MultipartFlow {
        partEnded = true
        return .pause
    }

    // MARK: Pulling

    private func sticky<R>(_ body: () throws -> R) throws -> R {
        if let f = failure { throw f }
        do { return try body() } catch let e as AFSError {
            failure = e
            throw e
        }
    }

    /// Makes the parser deliver one event; false when the body is over.
    private func pump() throws -> Bool {
        while true {
            if finished { return false }
            let before = parser.events
            if start < end || parser.buffered > 0 {
                let c = try parser.feed(UnsafeBufferPointer(start: input + start, count: end - start))
                start += c
                if parser.events != before { return true }
            }
            if parser.isDone { finished = true; return false }
            if start < end { continue }
            if eof {
                try parser.finish()
                finished = true
                return false
            }
            var r: Int
            repeat { r = Platform.read(fd, input, MultipartReader.bufferSize) } while r < 0 && errno == EINTR
            if r < 0 {
                let e = errno
                throw AFSError(.io, "reading the multipart body from file descriptor \(fd) failed: \(String(cString: strerror(e)))", osErrno: e)
            }
            start = 0
            end = r
            if r == 0 { eof = true }
        }
    }

    /// Moves to the next part (skipping the rest of the current one): true when there is one.
    /// C: `afs_multipart_reader_next_part`.
    public func nextPart() throws -> Bool {
        try sticky {
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
            current = nil
            while true {
                if let h = queuedBegin {
                    queuedBegin = nil
                    current = h
                    partEnded = false
                    return true
                }
                pending.removeAll(keepingCapacity: true)
                pendingStart = 0
                if try !pump() { return false }
            }
        }
    }

    /// Waits for bytes of the current part: false at its end.
    private func fill() throws -> Bool {
        while pendingStart == pending.count {
            if current == nil || partEnded || queuedBegin != nil { return false }
            if try !pump() { return false }
        }
        return true
    }

    /// Reads up to `max` bytes of the current part; 0 at its end. C: `afs_multipart_reader_read`.
    public func read(into buffer: UnsafeMutablePointer<UInt8>, max: Int) throws -> Int {
        try sticky {
            guard max > 0, try fill() else { return 0 }
            let n = Swift.min(max, pending.count - pendingStart)
            pending.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + pendingStart, count: n) }
            pendingStart += n
            return n
        }
    }

    /// Writes the rest of the current part to `out`; returns the bytes written.
    /// C: `afs_multipart_reader_part_to_fd`.
    public func writePart(to out: Int32) throws -> UInt64 {
        try sticky {
            var written: UInt64 = 0
            while try fill() {
                try pending.withUnsafeBufferPointer { b in
                    while pendingStart < b.count {
                        let r = Platform.write(out, b.baseAddress! + pendingStart, b.count - pendingStart)
                        if r < 0 {
                            if errno == EINTR { continue }
                            let e = errno
                            throw AFSError(.io, "writing part \(current?.index ?? 0) to file descriptor \(out) failed: \(String(cString: strerror(e)))", osErrno: e)
                        }
                        pendingStart += r
                        written += UInt64(r)
                    }
                }
            }
            return written
        }
    }
}
