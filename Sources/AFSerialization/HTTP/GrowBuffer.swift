#if canImport(Glibc)
import Glibc
#endif

/// A growable malloc'd byte buffer whose allocation failures are `.noMemory`, and whose
/// bytes stay at one address until the next append that grows it (so a handle can lend
/// them to C). Used by the response reader for its head, trailers and body.
public final class GrowBuffer {
    public private(set) var base: UnsafeMutablePointer<UInt8>?
    public private(set) var count = 0
    private var capacity = 0

    public init() {}
    deinit { free(base) }

    public var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    @inline(__always)
    private func ensure(_ extra: Int, _ what: @autoclosure () -> String) throws(AFSError) {
        let (need, o) = count.addingReportingOverflow(extra)
        if !o && need <= capacity { return }
        try grow(o ? Int.max : need, what())
    }

    private func grow(_ need: Int, _ what: String) throws(AFSError) {
        guard need < Int.max / 2 else { throw AFSError.noMemory(what, bytes: Int.max) }
        let newCap = Swift.max(need, Swift.max(capacity * 2, 256))
        guard let p = afsRealloc(base, newCap) else { throw AFSError.noMemory(what, bytes: newCap) }
        base = p.assumingMemoryBound(to: UInt8.self)
        capacity = newCap
    }

    public func append(_ b: UnsafeBufferPointer<UInt8>, _ what: @autoclosure () -> String) throws(AFSError) {
        guard b.count > 0, let src = b.baseAddress else { return }
        try ensure(b.count, what())
        (base! + count).update(from: src, count: b.count)
        count += b.count
    }

    public func append(_ byte: UInt8, _ what: @autoclosure () -> String) throws(AFSError) {
        try ensure(1, what())
        base![count] = byte
        count += 1
    }

    /// Keeps the allocation.
    public func removeAll() { count = 0 }

    /// Frees the allocation when it grew beyond `keep` bytes.
    public func shrink(keeping keep: Int) {
        count = 0
        if capacity > keep {
            free(base)
            base = nil
            capacity = 0
        }
    }

    public func cString(at offset: Int) -> UnsafePointer<CChar>? {
        guard let b = base, offset < count else { return nil }
        return UnsafeRawPointer(b + offset).assumingMemoryBound(to: CChar.self)
    }
}
