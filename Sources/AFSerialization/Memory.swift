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
public func afsMalloc(_ n: Int) -> UnsafeMutableRawPointer? {
    guard n >= 0 else { return nil }
    return checkedRealloc(nil, Swift.max(n, 1))
}

/// `realloc(p, n)`; nil when out of memory (`p` is then still valid).
public func afsRealloc(_ p: UnsafeMutableRawPointer?, _ n: Int) -> UnsafeMutableRawPointer? {
    guard n >= 0 else { return nil }
    return checkedRealloc(p, Swift.max(n, 1))
}

/// `realloc`, called through a variable so that the compiler keeps every call a call to
/// `realloc` (it would turn `realloc(NULL, n)` into `malloc(n)`, and drop a probe's
/// malloc/free pair): the fault shim counts exactly these calls. Public only so that the
/// optimizer cannot prove it constant; not API.
public nonisolated(unsafe) var checkedRealloc: @convention(c) (UnsafeMutableRawPointer?, Int) -> UnsafeMutableRawPointer? = { p, n in
    realloc(p, n)
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
        probeSink = p  // observable: the optimizer may not drop the malloc/free pair
        free(p)
    }

    /// The last probe's block (freed; never read): keeps the probe's allocation real.
    nonisolated(unsafe) static var probeSink: UnsafeMutableRawPointer?

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

    /// `append(x)`; when the storage is full it is doubled through `checkedReserve` (the
    /// probed size is the size allocated).
    @inlinable
    public mutating func checkedAppend(_ x: Element, _ what: @autoclosure () -> String) throws(AFSError) {
        if count == capacity { try checkedReserve(Swift.max(2 * capacity, 16), what()) }
        append(x)
    }
}

extension Array where Element == UInt8 {
    /// A copy of `bytes`, or `.noMemory` naming `what` (instead of a trap).
    @inlinable
    public init(checkedCopying bytes: UnsafeRawBufferPointer, _ what: @autoclosure () -> String) throws(AFSError) {
        try Memory.probe(bytes.count, of: UInt8.self, what())
        self.init(bytes)
    }
}

extension AFSError {
    /// `.noMemory`: "out of memory: could not allocate N bytes for WHAT".
    public static func noMemory(_ what: String, bytes: Int) -> AFSError {
        let size = bytes == Int.max ? "more than the address space" : "\(bytes) bytes"
        return AFSError(.noMemory, "out of memory: could not allocate \(size) for \(what)", osErrno: ENOMEM)
    }
}

/// The bound on what decoding a body may build (`ResponseSerializer.maxDecodedBytes`).
///
/// A decoded tree is charged `bytesPerValue` for every value (dictionary keys included)
/// plus the bytes of every string, key and data, with a shared binary-plist object charged
/// at every place it is referenced (what a caller walking or converting the tree pays).
/// The default limit is `factor` × the body size + `slack`; a caller may set a lower one.
/// JSON and XML bodies cannot reach the default (their smallest value takes 2 and 7 bytes
/// of text); a binary plist whose shared objects expand beyond it is refused.
public struct DecodeBudget: Sendable {
    /// What one value is charged (the size of a `Value` and its share of a container).
    public static let bytesPerValue = 32
    public static let factor = 64
    public static let slack = 1 << 20

    /// The default limit for a body of `bodySize` bytes.
    public static func defaultLimit(bodySize: Int) -> Int {
        let (m, o) = bodySize.multipliedReportingOverflow(by: factor)
        return o ? Int.max : m.addingReportingOverflow(slack).overflow ? Int.max : m + slack
    }

    /// The limit in force: the default for the body, or `max` when that is lower (0: none).
    public static func limit(bodySize: Int, max: Int) -> Int {
        let d = defaultLimit(bodySize: bodySize)
        return max > 0 && max < d ? max : d
    }

    public let limit: Int
    public var used = 0

    public init(limit: Int) { self.limit = limit }
    /// No limit.
    public static let unlimited = DecodeBudget(limit: Int.max)

    /// Charges `bytes`; false once the total passes the limit.
    @inlinable @inline(__always)
    public mutating func charge(_ bytes: Int) -> Bool {
        let (u, o) = used.addingReportingOverflow(bytes)
        used = o ? Int.max : u
        return used <= limit
    }

    /// "the decoded tree would take more than N bytes (…)".
    public func exceeded() -> String {
        "the decoded tree would take more than \(limit) bytes (each value counts \(DecodeBudget.bytesPerValue) bytes plus its text or data, a shared object at every place it is referenced; the limit is \(DecodeBudget.factor) x the body size + 1 MiB unless the response serializer's max_decoded_bytes is lower)"
    }
}
