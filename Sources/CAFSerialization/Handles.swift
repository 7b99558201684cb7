// Handle boxing, argument decoding and error filling for the `@_cdecl` layer. Every C
// handle is a retained Swift object derived from `Handle`; unboxing checks the kind, so a
// handle of the wrong kind is an error status, never a crash.
import AFSerialization
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Base class of every object handed to C as an opaque pointer.
class Handle {
    /// The C type name, for wrong-kind messages.
    class var cName: String { "handle" }
}

/// `afs_value`: a parameters tree. What the walking functions lend to C (child handles,
/// NUL-terminated copies of keys, strings and data) is made on first access, kept here, and
/// dropped when the value changes: borrowed pointers live until the value is freed or
/// changed.
final class ValueHandle: Handle {
    /// The tree. Change it only through `mutate`, which drops what was lent out. (No
    /// `didSet` here: an observed property is copied out and written back on every in-place
    /// change, which would copy the whole container on each dict_set/append.)
    private(set) var value: Value

    /// Changes the value in place and then drops the borrowed handles and copies lent out.
    /// When `body` throws (a container of the wrong kind) nothing changed and what was lent
    /// out stays valid, as the header promises.
    func mutate<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        let r = try body(&value)
        children = nil
        keyCopies = nil
        scalarCopy = nil
        return r
    }
    /// Nesting depth of `value` (scalars 0, containers 1 + their deepest member), kept up
    /// to date by `afs_value_dict_set`/`afs_value_append` so that trees deeper than
    /// `Value.maxDepth` are refused when built, instead of overflowing the stack later.
    /// Computed on first use when not given (a decoded document may never need it).
    var depth: Int {
        get {
            if let d = knownDepth { return d }
            let d = value.nestingDepth
            knownDepth = d
            return d
        }
        set { knownDepth = newValue }
    }
    private var knownDepth: Int?
    /// Borrowed handles of members (dictionary values, array elements, set members in
    /// insertion order), created on first access.
    private var children: [ValueHandle?]?
    /// NUL-terminated copies of dictionary keys, created on first access.
    private var keyCopies: [CStringBox?]?
    /// The NUL-terminated copy of a string value, or the copy of a data value.
    private var scalarCopy: CStringBox?
    /// A member lent by `child(at:)`: owned by its parent's cache, so `afs_value_free`
    /// ignores it and consuming calls refuse it.
    private(set) var isBorrowed = false

    init(_ value: Value, depth: Int? = nil) {
        self.value = value
        self.knownDepth = depth
    }
    /// A deep tree is released on a large stack (the caller's may be small). A borrowed
    /// member shares its tree with its parent, which releases it.
    deinit {
        if isBorrowed { return }
        if let d = knownDepth, d < LargeStack.hopDepth { return }
        Value.releaseDeep(&value)
    }
    override class var cName: String { "afs_value" }

    /// The borrowed handle of member `i` (a dictionary's value, an array's element, a set's
    /// member in insertion order); nil when out of range or not a container.
    func child(at i: Int) -> ValueHandle? {
        let n = value.count
        guard i >= 0 && i < n else { return nil }
        if children == nil { children = Array(repeating: nil, count: n) }
        if let c = children![i] { return c }
        let member: Value
        switch value {
        case .dict(let d): member = d.values[i]
        case .array(let a): member = a[i]
        case .set(let s): member = s.members[i]
        default: return nil
        }
        let c = ValueHandle(member)
        c.isBorrowed = true
        children![i] = c
        return c
    }

    /// The NUL-terminated copy of key `i` of a dictionary; nil when out of range or not a
    /// dictionary.
    func key(at i: Int) -> CStringBox? {
        guard case .dict(let d) = value, i >= 0 && i < d.count else { return nil }
        if keyCopies == nil { keyCopies = Array(repeating: nil, count: d.count) }
        if let k = keyCopies![i] { return k }
        let k = CStringBox.copy(d.keys[i])
        keyCopies![i] = k
        return k
    }

    /// The position of `key` in a dictionary (byte comparison), or nil.
    func index(ofKey key: String) -> Int? {
        guard case .dict(let d) = value else { return nil }
        return d.index(forKey: key)
    }

    /// The NUL-terminated copy of a string value, or the bytes of a data value; nil for
    /// other kinds.
    func scalarBytes() -> CStringBox? {
        if let c = scalarCopy { return c }
        switch value {
        case .string(let s): scalarCopy = CStringBox.copy(s)
        case .data(let d): scalarCopy = CStringBox.copy(d)
        default: return nil
        }
        return scalarCopy
    }
}

/// `afs_serializer`: a request serializer behind a lock, so that configuration and request
/// building may run on many threads at once.
final class SerializerHandle: Handle {
    let state: Mutex<RequestSerializer>
    init(_ s: RequestSerializer) { state = Mutex(s) }
    override class var cName: String { "afs_serializer" }

    /// A snapshot of the configuration (a value copy: building runs outside the lock).
    var snapshot: RequestSerializer { state.withLock { $0 } }
}

/// A malloc'd NUL-terminated byte string owned by a handle and lent to C.
final class CStringBox: @unchecked Sendable {  // immutable after init
    let pointer: UnsafeMutablePointer<CChar>
    let count: Int
    init(_ bytes: UnsafeRawBufferPointer) {
        count = bytes.count
        pointer = malloc(bytes.count + 1)!.assumingMemoryBound(to: CChar.self)
        if let b = bytes.baseAddress { memcpy(pointer, b, bytes.count) }
        pointer[bytes.count] = 0
    }
    /// Copies the bytes of `s` (inside `withUTF8`: small strings live on the stack).
    static func copy(_ s: String) -> CStringBox {
        var s = s
        return s.withUTF8 { CStringBox(UnsafeRawBufferPointer($0)) }
    }
    static func copy(_ a: [UInt8]) -> CStringBox {
        a.withUnsafeBytes { CStringBox($0) }
    }
    deinit { free(pointer) }
}

// MARK: - Boxing

@inline(__always)
func box(_ h: Handle) -> OpaquePointer {
    OpaquePointer(Unmanaged.passRetained(h).toOpaque())
}

/// Releases the handle (the `_free` functions). NULL, handles of another kind and borrowed
/// value handles (owned by their parent) are ignored.
func release<T: Handle>(_ p: OpaquePointer?, _ t: T.Type) {
    guard let p = p, let h = peek(p, t) else { return }
    if let v = h as? ValueHandle, v.isBorrowed { return }
    Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(p)).release()
}

/// The handle object behind `p` if it is a `T`.
@inline(__always)
func peek<T: Handle>(_ p: OpaquePointer?, _: T.Type) -> T? {
    guard let p = p else { return nil }
    return Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(p)).takeUnretainedValue() as? T
}

/// The handle behind `p`, or `.invalidArgument` naming the parameter and the kind wanted.
func unbox<T: Handle>(_ p: OpaquePointer?, _ t: T.Type, _ what: String) throws -> T {
    guard let p = p else { throw AFSError(.invalidArgument, "\(what) is NULL") }
    guard let h = Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(p)).takeUnretainedValue() as? T else {
        throw AFSError(.invalidArgument, "\(what) is a handle of the wrong kind (expected \(t.cName))")
    }
    return h
}

// MARK: - Errors

/// Layout of the C `afs_error`: `afs_status code; int os_errno; char message[512];`.
let errorMessageCapacity = 512

/// Fills `*err` (when not NULL) and returns the status for the C caller.
@discardableResult
func fail(_ err: UnsafeMutableRawPointer?, _ e: AFSError) -> Int32 {
    if let err = err {
        err.storeBytes(of: e.status.rawValue, toByteOffset: 0, as: Int32.self)
        err.storeBytes(of: e.osErrno, toByteOffset: 4, as: Int32.self)
        let msg = err.advanced(by: 8).assumingMemoryBound(to: UInt8.self)
        var bytes = Array(e.message.utf8)
        if bytes.count > errorMessageCapacity - 1 {
            // Cut at a character boundary and mark the cut.
            var n = errorMessageCapacity - 4
            while n > 0 && bytes[n] & 0xC0 == 0x80 { n -= 1 }
            bytes = Array(bytes[..<n]) + Array("...".utf8)
        }
        bytes.withUnsafeBufferPointer { _ = memcpy(msg, $0.baseAddress!, $0.count) }
        msg[bytes.count] = 0
    }
    return e.status.rawValue
}

/// Any error as an `AFSError` (the core throws only `AFSError`).
func asAFSError(_ error: Error) -> AFSError {
    (error as? AFSError) ?? AFSError(.invalidArgument, "\(error)")
}

/// Runs `body`; a thrown error fills `err`. Returns the status.
@inline(__always)
func status(_ err: UnsafeMutableRawPointer?, _ body: () throws -> Void) -> Int32 {
    do {
        try body()
        return 0
    } catch {
        return fail(err, asAFSError(error))
    }
}

/// Runs `body` returning a pointer; a thrown error fills `err` and gives NULL.
@inline(__always)
func pointer<P>(_ err: UnsafeMutableRawPointer?, _ body: () throws -> P?) -> P? {
    do {
        return try body()
    } catch {
        fail(err, asAFSError(error))
        return nil
    }
}

// MARK: - Arguments

/// `AFS_NTS` as the Swift `Int` that `size_t` arrives as.
let NTS = -1

/// The bytes of a C string argument (`len` may be `AFS_NTS`), or `.invalidArgument` for NULL.
func bytesArg(_ p: UnsafePointer<CChar>?, _ len: Int = NTS, _ what: String) throws -> UnsafeBufferPointer<UInt8> {
    guard let p = p else {
        if len == 0 { return UnsafeBufferPointer(start: nil, count: 0) }
        throw AFSError(.invalidArgument, "\(what) is NULL")
    }
    let n = len == NTS ? strlen(p) : len
    return UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: n)
}

/// A UTF-8 string argument, validated.
func stringArg(_ p: UnsafePointer<CChar>?, _ len: Int = NTS, _ what: String) throws -> String {
    try String(validatingUTF8Bytes: bytesArg(p, len, what), what: what)
}

/// An optional UTF-8 string argument (NULL gives nil).
func optionalStringArg(_ p: UnsafePointer<CChar>?, _ what: String) throws -> String? {
    guard p != nil else { return nil }
    return try stringArg(p, NTS, what)
}

/// A NUL-terminated malloc'd copy of `s`, owned by the C caller (`afs_free`).
func ownedCString(_ s: String) -> UnsafeMutablePointer<CChar> {
    var s = s
    return s.withUTF8 { u in
        let p = malloc(u.count + 1)!.assumingMemoryBound(to: CChar.self)
        if let b = u.baseAddress { memcpy(p, b, u.count) }
        p[u.count] = 0
        return p
    }
}
