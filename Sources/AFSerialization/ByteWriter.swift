/// A growable byte buffer for the hot paths (escaping, query strings, JSON and plist
/// writers): raw stores into `malloc` memory, no per-byte bounds or uniqueness checks.
///
/// Writers call `reserve(n)` once for a run of at most `n` bytes and then `put`/`copy`.
/// The bytes can be handed to C without a copy (`takeCString`), which is how `afs_*`
/// functions return owned strings.
public struct ByteWriter: ~Copyable {
    @usableFromInline var base: UnsafeMutablePointer<UInt8>
    @usableFromInline var capacity: Int
    /// Bytes written so far.
    public var count: Int

    public init(capacity: Int = 256) {
        let c = Swift.max(capacity, 16)
        guard let p = malloc(c) else { fatalError("AFSerialization: out of memory (\(c) bytes)") }
        base = p.assumingMemoryBound(to: UInt8.self)
        self.capacity = c
        count = 0
    }

    deinit { free(base) }

    /// Makes room for `n` more bytes.
    @inlinable @inline(__always)
    public mutating func reserve(_ n: Int) {
        if count + n > capacity { grow(count + n) }
    }

    @usableFromInline
    mutating func grow(_ needed: Int) {
        var c = capacity
        while c < needed { c = c &* 2 }
        guard let p = realloc(base, c) else { fatalError("AFSerialization: out of memory (\(c) bytes)") }
        base = p.assumingMemoryBound(to: UInt8.self)
        capacity = c
    }

    /// Pre-faults the next `n` bytes in one system call when they span many pages
    /// (`MADV_POPULATE_WRITE`, Linux 5.14+; elsewhere a no-op): a writer that will fill a
    /// large fresh buffer front to back then avoids one page-fault trap per 4 KiB.
    public func prefault(_ n: Int) {
        #if os(Linux)
        guard n >= 4 << 20 else { return }
        let page = 4096
        let start = (Int(bitPattern: base + count) + page - 1) & ~(page - 1)
        let end = (Int(bitPattern: base + count) + Swift.min(n, capacity - count)) & ~(page - 1)
        if end > start, let p = UnsafeMutableRawPointer(bitPattern: start) {
            _ = madvise(p, end - start, 23 /* MADV_POPULATE_WRITE */)
        }
        #endif
    }

    /// Writes one byte; room must have been reserved.
    @inlinable @inline(__always)
    public mutating func put(_ b: UInt8) {
        base[count] = b
        count &+= 1
    }

    /// Appends one byte, growing when needed.
    @inlinable @inline(__always)
    public mutating func append(_ b: UInt8) {
        if count == capacity { grow(count + 1) }
        base[count] = b
        count &+= 1
    }

    @inlinable
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let src = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
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
        reserve(20)
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
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    public func toArray() -> [UInt8] {
        Array(UnsafeBufferPointer(start: base, count: count))
    }

    /// The bytes as a String; they must be valid UTF-8 (every writer here produces it).
    public func toString() -> String {
        String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self)
    }

    /// Hands the bytes, NUL-terminated, to the caller as `malloc` memory (free with `free`).
    public consuming func takeCString() -> UnsafeMutablePointer<CChar> {
        append(0)
        var p = base
        if capacity - count > 4096 && capacity > count + count / 4, let q = realloc(base, count) {
            p = q.assumingMemoryBound(to: UInt8.self)  // give back what worst-case reserving took
        }
        discard self
        return UnsafeMutableRawPointer(p).assumingMemoryBound(to: CChar.self)
    }
}
