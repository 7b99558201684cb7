#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Checked allocation. Every allocation whose size grows with the input goes through here,
// so that running out of memory is `AFSError` `.noMemory`, never a trap:
//
// - buffers the library manages itself (`ByteWriter`, body parts, parser stacks) are
//   `afsMalloc`/`afsRealloc` memory whose failure is handled;
// - before the Swift runtime allocates a large array or string (which traps when `malloc`
//   fails), `Memory.probe` asks `malloc` for the same size and gives it back: when that
//   fails the operation stops with `.noMemory` before anything changed.
//
// Both go through `realloc` (a fresh block is `realloc(NULL, n)`): the fault-injection
// shim (Tests/fault/shim.c, `op=realloc`) fails exactly these calls, one site at a time.
//
// Allocations below `Memory.probeThreshold` that the Swift runtime makes (objects, small
// arrays and strings, metadata) are not checked: when one of those fails the process stops,
// as with any Swift or C++ program. The decoding budget (`DecodeBudget`) bounds how many of
// them a response can cause.

/// `malloc(n)` through `realloc`, so that fault injection can fail it. nil when out of memory.
@inlinable
public func afsMalloc(_ n: Int) -> UnsafeMutableRawPointer? {
    guard n >= 0 else { return nil }
    return realloc(nil, Swift.max(n, 1))
}

/// `realloc(p, n)`; nil when out of memory (`p` is then still valid).
@inlinable
public func afsRealloc(_ p: UnsafeMutableRawPointer?, _ n: Int) -> UnsafeMutableRawPointer? {
    guard n >= 0 else { return nil }
    return realloc(p, Swift.max(n, 1))
}

public enum Memory {
    /// Runtime allocations below this many bytes are not probed (see above).
    public static let probeThreshold = 16 << 10

    /// Throws `.noMemory` naming `what` unless `bytes` could be allocated now. Sizes below
    /// `probeThreshold` pass without a call.
    @inlinable
    public static func probe(_ bytes: Int, _ what: @autoclosure () -> String) throws(AFSError) {
        if bytes < probeThreshold && bytes >= 0 { return }
        try probeSlow(bytes, what())
    }

    @usableFromInline
    static func probeSlow(_ bytes: Int, _ what: String) throws(AFSError) {
        guard let p = afsMalloc(bytes) else { throw AFSError.noMemory(what, bytes: bytes) }
        free(p)
    }

    /// `probe` for `count` elements of `T` (an overflowing size fails).
    @inlinable
    public static func probe<T>(_ count: Int, of _: T.Type, _ what: @autoclosure () -> String) throws(AFSError) {
        let (bytes, o) = count.multipliedReportingOverflow(by: MemoryLayout<T>.stride)
        if o || count < 0 { throw AFSError.noMemory(what(), bytes: Int.max) }
        try probe(bytes, what())
    }
}

extension Array {
    /// `reserveCapacity(n)` after `Memory.probe`: `.noMemory` instead of a trap.
    @inlinable
    public mutating func checkedReserve(_ n: Int, _ what: @autoclosure () -> String) throws(AFSError) {
        if n <= capacity { return }
        try Memory.probe(n, of: Element.self, what())
        reserveCapacity(n)
    }

    /// `append(x)`, probing first when the array is about to grow its storage (which doubles).
    @inlinable
    public mutating func checkedAppend(_ x: Element, _ what: @autoclosure () -> String) throws(AFSError) {
        if count == capacity { try Memory.probe(Swift.max(2 * capacity, 16), of: Element.self, what()) }
        append(x)
    }
}

extension AFSError {
    /// `.noMemory`: "out of memory: could not allocate N bytes for WHAT".
    public static func noMemory(_ what: String, bytes: Int) -> AFSError {
        let size = bytes == Int.max ? "more than the address space" : "\(bytes) bytes"
        return AFSError(.noMemory, "out of memory: could not allocate \(size) for \(what)", osErrno: ENOMEM)
    }
}
