/// A growable byte buffer for the hot paths (escaping, query strings, JSON and plist
/// writers): raw stores into `malloc` memory, no per-byte bounds or uniqueness checks.
///
/// Writers call `reserve(n)` once for a run of at most `n` bytes and then `put`/`copy`.
/// The bytes can be handed to C without a copy (`takeCString`), which is how `afs_*`
/// functions return owned strings.
///
/// Out of memory is a state, not a trap: when the buffer cannot grow, `failed` is set and
/// stays set, that `reserve` returns false (the caller must then skip its raw stores), and
/// every write that would need more room is dropped (writes that fit in the capacity
/// still land: after a failure the contents are meaningless, never out of bounds). The
/// bytes written before the failing writer started stay intact, so it can `recover(to:)`
/// the count it started at; `toArray`, `toString`, `withBytes` and `takeCString` of a
/// failed buffer throw `AFSError` `.noMemory`.
/// Bytes in `malloc` memory with one owner, kept as a writer made them: a request body
/// lent to C as is (`afs_request_body`). Immutable.
public final class ByteBuffer: @unchecked Sendable {
    public let base: UnsafeMutablePointer<UInt8>
    public let count: Int

    init(taking base: UnsafeMutablePointer<UInt8>, count: Int) {
        self.base = base
        self.count = count
    }
    deinit { free(base) }

    public var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }
}

public struct ByteWriter: ~Copyable {
    @usableFromInline var base: UnsafeMutablePointer<UInt8>
    @usableFromInline var capacity: Int
    /// Bytes written so far.
    public var count: Int
    /// True once an allocation failed (see the type's comment); only `recover(to:)` clears it.
    public private(set) var failed = false
    /// The size of the allocation that failed.
    public private(set) var failedBytes = 0

    public init(capacity: Int = 256) {
        let c = Swift.max(capacity, 16)
        if let p = afsMalloc(c) {
            base = p.assumingMemoryBound(to: UInt8.self)
            self.capacity = c
        } else {
            base = ByteWriter.noStorage
            self.capacity = 0
            failed = true
            failedBytes = c
        }
        count = 0
    }

    /// Stands in for storage when not even the first allocation succeeded (never written:
    /// the capacity is 0, so every `reserve` fails first).
    @usableFromInline nonisolated(unsafe) static let noStorage = UnsafeMutablePointer<UInt8>.allocate(capacity: 16)

    deinit { if capacity > 0 { free(base) } }

    /// Makes room for `n` more bytes; false (and `failed` set) when the memory is not there,
    /// in which case the caller must not `put` or store through `base`.
    @inlinable @inline(__always)
    public mutating func reserve(_ n: Int) -> Bool {
        if count &+ n > capacity || n < 0 { return grow(count &+ n, n) }
        return true
    }

    @usableFromInline
    mutating func grow(_ needed: Int, _ n: Int) -> Bool {
        guard !failed else { return false }
        guard n >= 0, needed >= count else { return fail(Int.max) }
        var c = Swift.max(capacity, 16)
        while c < needed { c = c > Int.max / 2 ? needed : c &* 2 }
        let p = capacity > 0 ? afsRealloc(base, c) : afsMalloc(c)
        guard let p else { return fail(c) }
        base = p.assumingMemoryBound(to: UInt8.self)
        capacity = c
        return true
    }

    @usableFromInline
    mutating func fail(_ bytes: Int) -> Bool {
        failed = true
        failedBytes = bytes
        return false
    }

    /// Clears the out-of-memory state and drops everything after the first `n` bytes (the
    /// count a writer started at), so the buffer holds what it held before that writer.
    public mutating func recover(to n: Int) {
        failed = false
        failedBytes = 0
        if n <= count { count = n }
    }

    /// Throws `.noMemory` naming `what` when an allocation failed since the last `recover`,
    /// first recovering to `start` (nothing half-done stays in the buffer).
    public mutating func check(_ what: @autoclosure () -> String, recoveringTo start: Int) throws(AFSError) {
        guard failed else { return }
        let bytes = failedBytes
        recover(to: start)
        throw AFSError.noMemory(what(), bytes: bytes)
    }

    /// Pre-faults the next `n` bytes in one system call when they span many pages
    /// (`MADV_POPULATE_WRITE`, Linux 5.14+; elsewhere a no-op): a writer that will fill a
    /// large fresh buffer front to back then avoids one page-fault trap per 4 KiB.
    public func prefault(_ n: Int) {
        #if os(Linux)
        guard n >= 4 << 20, !failed else { return }
        let page = 4096
        let start = (Int(bitPattern: base + count) + page - 1) & ~(page - 1)
        let end = (Int(bitPattern: base + count) + Swift.min(n, capacity - count)) & ~(page - 1)
        if end > start, let p = UnsafeMutableRawPointer(bitPattern: start) {
            // Transparent huge pages where the system allows them on request (the
            // "madvise" setting): one fault and one clear per 2 MiB instead of per 4 KiB.
            _ = madvise(p, end - start, 14 /* MADV_HUGEPAGE */)
            _ = madvise(p, end - start, 23 /* MADV_POPULATE_WRITE */)
        }
        #endif
    }

    /// Writes one byte; room must have been reserved (and `reserve` returned true).
    @inlinable @inline(__always)
    public mutating func put(_ b: UInt8) {
        base[count] = b
        count &+= 1
    }

    /// Appends one byte, growing when needed (nothing when out of memory).
    @inlinable @inline(__always)
    public mutating func append(_ b: UInt8) {
        if count == capacity { guard grow(count &+ 1, 1) else { return } }
        base[count] = b
        count &+= 1
    }

    @inlinable
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let src = bytes.baseAddress, bytes.count > 0 else { return }
        guard reserve(bytes.count) else { return }
        memcpy(base + count, src, bytes.count)
        count += bytes.count
    }

    @inlinable
    public mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        append(UnsafeRawBufferPointer(bytes))
    }

    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    public mutating func append(_ s: StaticString) {
        append(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    public mutating func append(_ s: String) {
        var s = s
        s.withUTF8 { append($0) }
    }

    /// Appends `v` in decimal.
    public mutating func appendDecimal(_ v: Int64) {
        guard reserve(20) else { return }
        var m = v.magnitude
        if v < 0 { put(UInt8(ascii: "-")) }
        var tmp: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch
        let n = withUnsafeMutableBytes(of: &tmp) { raw -> Int in
            var i = 24
            repeat {
                i -= 1
                raw[i] = UInt8(truncatingIfNeeded: m % 10) &+ 48
                m /= 10
            } while m != 0
            memcpy(base + count, raw.baseAddress! + i, 24 - i)
            return 24 - i
        }
        count += n
    }

    /// Drops everything after the first `n` bytes.
    @inlinable
    public mutating func truncate(to n: Int) { count = n }

    /// The bytes written so far.
    /// - Throws: `AFSError` `.noMemory` when an allocation failed, or what `body` throws.
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) throws -> R {
        if failed { throw AFSError.noMemory("an output buffer", bytes: failedBytes) }
        return try body(UnsafeBufferPointer(start: base, count: count))
    }

    /// The bytes as an array. - Throws: `AFSError` `.noMemory`.
    public func toArray() throws(AFSError) -> [UInt8] {
        if failed { throw AFSError.noMemory("an output buffer", bytes: failedBytes) }
        try Memory.probe(count, "an output buffer")
        return Array(UnsafeBufferPointer(start: base, count: count))
    }

    /// The bytes as a String; they must be valid UTF-8 (every writer here produces it).
    /// - Throws: `AFSError` `.noMemory`.
    public func toString() throws(AFSError) -> String {
        if failed { throw AFSError.noMemory("an output buffer", bytes: failedBytes) }
        try Memory.probe(count, "a string")
        return String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self)
    }

    /// The bytes as a String for an error message (short text): "" when out of memory.
    public func messageText() -> String {
        (try? toString()) ?? ""
    }

    /// Hands the storage and the byte count over to the caller (who frees it with `free`)
    /// and leaves the writer empty, without storage; nil after a failed allocation.
    public mutating func takeStorage() -> (UnsafeMutablePointer<UInt8>, Int)? {
        guard !failed, capacity > 0 else { return nil }
        let taken = (base, count)
        base = ByteWriter.noStorage
        capacity = 0
        count = 0
        return taken
    }

    /// Hands the bytes to a `ByteBuffer` as they are (no copy).
    /// - Throws: `AFSError` `.noMemory` when an allocation failed (the buffer is freed).
    public consuming func takeBuffer(_ what: @autoclosure () -> String = "an output buffer") throws(AFSError) -> ByteBuffer {
        let ok = !failed, bytes = failedBytes, cap = capacity, n = count
        var p = base
        discard self
        guard ok else {
            if cap > 0 { free(p) }
            throw AFSError.noMemory(what(), bytes: bytes)
        }
        // (A writer that holds storage has not failed: `cap` is above 0 here.)
        if cap - n > 4096 && cap > n + n / 4, let q = realloc(p, Swift.max(n, 1)) {
            p = q.assumingMemoryBound(to: UInt8.self)  // give back what growing reserved
        }
        return ByteBuffer(taking: p, count: n)
    }

    /// Hands the bytes, NUL-terminated, to the caller as `malloc` memory (free with `free`).
    /// - Throws: `AFSError` `.noMemory` when an allocation failed (the buffer is freed).
    public consuming func takeCString() throws(AFSError) -> UnsafeMutablePointer<CChar> {
        append(0)
        let ok = !failed, bytes = failedBytes, cap = capacity, n = count
        var p = base
        discard self
        guard ok else {
            if cap > 0 { free(p) }
            throw AFSError.noMemory("an output string", bytes: bytes)
        }
        if cap - n > 4096 && cap > n + n / 4, let q = realloc(p, n) {
            p = q.assumingMemoryBound(to: UInt8.self)  // give back what worst-case reserving took
        }
        return UnsafeMutableRawPointer(p).assumingMemoryBound(to: CChar.self)
    }
}
