// Handle boxing, argument decoding and error filling for the `@c @implementation` layer.
//
// Every export is `@c @implementation`: the compiler checks its Swift signature against the
// declaration in include/afserialization.h (imported through the C target CAFSerialization),
// so the header is the one source of the ABI: `afs_error`, `afs_status`, the enums and the
// callback typedefs are the header's own types here.
//
// Every C handle is a retained Swift object derived from `Handle`; unboxing checks the kind,
// so a handle of the wrong kind is an error status, never a crash.
import AFSerialization
import CAFSerialization

import Glibc  // Linux with glibc only, as the core (Sources/AFSerialization/Platform.swift)

/// Base class of every object handed to C as an opaque pointer.
class Handle {
    /// The C type name, for wrong-kind messages.
    class var cName: String { "handle" }
}

// MARK: - Locks that survive fork()

/// A state behind a `cafs_lock` (a pthread mutex that a `pthread_atfork` handler takes
/// before `fork()` and releases after it, so a child forked while another thread used the
/// state finds it unlocked and consistent; Swift's `Mutex` aborts the child instead).
final class Locked<State>: @unchecked Sendable {  // every access goes through the lock
    private let lock: OpaquePointer
    private var state: State

    /// nil when the lock cannot be allocated.
    init?(_ state: State) {
        guard let l = cafs_lock_new() else { return nil }
        lock = l
        self.state = state
    }
    deinit { cafs_lock_free(lock) }

    func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        cafs_lock_acquire(lock)
        defer { cafs_lock_release(lock) }
        return try body(&state)
    }

    /// A copy of the state (a value copy: work on it runs outside the lock).
    var snapshot: State { withLock { $0 } }
}

/// A configuration shared between threads: a request or response serializer behind a
/// fork-safe lock. Configuration changes run under the lock; requests, validation and
/// decoding run on a snapshot, outside it.
protocol SharedConfiguration {
    static var cName: String { get }
}

final class ConfigHandle<Config: SharedConfiguration>: Handle {
    let state: Locked<Config>
    init?(_ c: Config) {
        guard let s = Locked(c) else { return nil }
        state = s
    }
    override class var cName: String { Config.cName }
    var snapshot: Config { state.snapshot }

    /// A new boxed handle, or `.noMemory`.
    static func boxed(_ c: Config) throws -> OpaquePointer {
        guard let h = ConfigHandle(c) else { throw AFSError(.noMemory, "out of memory creating \(Config.cName)") }
        return box(h)
    }
}

extension RequestSerializer: SharedConfiguration { static var cName: String { "afs_serializer" } }
extension ResponseSerializer: SharedConfiguration { static var cName: String { "afs_response_serializer" } }
typealias SerializerHandle = ConfigHandle<RequestSerializer>
typealias ResponseSerializerHandle = ConfigHandle<ResponseSerializer>

/// Runs `body` on a shared configuration under its lock (the setters that return a status).
func configure<C: SharedConfiguration>(_ p: OpaquePointer?, _ what: String, _ err: UnsafeMutablePointer<afs_error>?,
                  _ body: (inout C) throws -> Void) -> afs_status {
    status(err) {
        let h = try unbox(p, ConfigHandle<C>.self, what)
        try h.state.withLock { try body(&$0) }
    }
}

/// The same for the `void` setters: NULL or a wrong handle is ignored.
func configure<C: SharedConfiguration>(_ p: OpaquePointer?, _: C.Type, _ body: (inout C) -> Void) {
    peek(p, ConfigHandle<C>.self)?.state.withLock { body(&$0) }
}

// MARK: - Memory lent to C

/// A malloc'd NUL-terminated byte string owned by a handle and lent to C.
final class CStringBox: @unchecked Sendable {  // immutable after init
    let pointer: UnsafeMutablePointer<CChar>
    let count: Int
    /// nil when out of memory.
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let p = mallocCString(bytes) else { return nil }
        count = bytes.count
        pointer = p
    }
    /// Copies the bytes of `s` (inside `withUTF8`: small strings live on the stack).
    static func copy(_ s: String) -> CStringBox? {
        var s = s
        return s.withUTF8 { CStringBox(UnsafeRawBufferPointer($0)) }
    }
    static func copy(_ a: [UInt8]) -> CStringBox? {
        a.withUnsafeBytes { CStringBox($0) }
    }
    deinit { free(pointer) }
}

/// Bytes lent to C, and their length: a `CStringBox`'s, or bytes in place that their owner
/// (a parsed document's text, a request's body buffer) keeps as long as the handle.
struct Lent {
    let pointer: UnsafePointer<CChar>
    let count: Int
    init(_ box: CStringBox) {
        pointer = UnsafePointer(box.pointer)
        count = box.count
    }
    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        pointer = UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self)
        count = bytes.count
    }
}

/// A malloc'd copy of `bytes` plus a NUL; nil when out of memory.
func mallocCString(_ bytes: UnsafeRawBufferPointer) -> UnsafeMutablePointer<CChar>? {
    guard bytes.count < Int.max, let raw = malloc(bytes.count + 1) else { return nil }
    let p = raw.assumingMemoryBound(to: CChar.self)
    if let b = bytes.baseAddress { memcpy(p, b, bytes.count) }
    p[bytes.count] = 0
    return p
}

/// A NUL-terminated malloc'd copy of `s`, owned by the C caller (`afs_free`), or
/// `.noMemory`.
func ownedCString(_ s: String) throws -> UnsafeMutablePointer<CChar> {
    var s = s
    guard let p = s.withUTF8({ mallocCString(UnsafeRawBufferPointer($0)) }) else {
        throw AFSError(.noMemory, "out of memory copying a string of \(s.utf8.count) bytes")
    }
    return p
}

/// The header's `Name: value\r\n` lines of `headers` as an owned C string (afs_free), or nil
/// when out of memory.
func ownedHeaderLines(_ headers: HeaderList) -> UnsafeMutablePointer<CChar>? {
    var out = ByteWriter(capacity: 256)
    for (name, value) in headers { out.appendHeaderLine(name, value) }
    return try? out.takeCString()
}

// MARK: - Boxing

@inline(__always)
func box(_ h: Handle) -> OpaquePointer {
    OpaquePointer(Unmanaged.passRetained(h).toOpaque())
}

/// A borrowed handle (owned by another handle) as the pointer C sees.
@inline(__always)
func lend(_ h: Handle) -> OpaquePointer {
    OpaquePointer(Unmanaged.passUnretained(h).toOpaque())
}

/// Releases the handle (the `_free` functions). NULL and handles of another kind are
/// ignored.
func release<T: Handle>(_ p: OpaquePointer?, _ t: T.Type) {
    guard let p = p, peek(p, t) != nil else { return }
    Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(p)).release()
}

/// The handle object behind `p` if it is a `T`.
@inline(__always)
func peek<T: Handle>(_ p: OpaquePointer?, _: T.Type) -> T? {
    guard let p = p, !isViewPointer(p) else { return nil }  // a view is no object (ValueViews.swift)
    return Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(p)).takeUnretainedValue() as? T
}

/// The handle behind `p`, or `.invalidArgument` naming the parameter and the kind wanted.
func unbox<T: Handle>(_ p: OpaquePointer?, _ t: T.Type, _ what: String) throws -> T {
    guard let p = p else { throw AFSError(.invalidArgument, "\(what) is NULL") }
    if isViewPointer(p) {  // a parsed document's member: a read-only handle for this call
        if T.self == ValueHandle.self, let (v, n) = ViewRegistry.decode(p) { return ValueHandle(view: v, node: n) as! T }
        throw AFSError(.invalidArgument, "\(what) is a handle of the wrong kind (expected \(t.cName))")
    }
    guard let h = Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(p)).takeUnretainedValue() as? T else {
        throw AFSError(.invalidArgument, "\(what) is a handle of the wrong kind (expected \(t.cName))")
    }
    return h
}

// MARK: - Errors

extension AFSStatus {
    /// The header's enumerator (an exhaustive switch: a status the core adds without the
    /// header's enumerator does not compile).
    var c: afs_status {
        switch self {
        case .ok: return AFS_OK
        case .invalidArgument: return AFS_E_INVALID_ARGUMENT
        case .invalidUTF8: return AFS_E_INVALID_UTF8
        case .badURL: return AFS_E_BAD_URL
        case .invalidMethod: return AFS_E_INVALID_METHOD
        case .invalidHeader: return AFS_E_INVALID_HEADER
        case .invalidJSON: return AFS_E_INVALID_JSON
        case .invalidPlist: return AFS_E_INVALID_PLIST
        case .encoding: return AFS_E_ENCODING
        case .queryCallback: return AFS_E_QUERY_CALLBACK
        case .file: return AFS_E_FILE
        case .io: return AFS_E_IO
        case .lengthMismatch: return AFS_E_LENGTH_MISMATCH
        case .state: return AFS_E_STATE
        case .unsupported: return AFS_E_UNSUPPORTED
        case .noMemory: return AFS_E_NO_MEMORY
        case .unacceptableStatus: return AFS_E_UNACCEPTABLE_STATUS
        case .unacceptableContentType: return AFS_E_UNACCEPTABLE_CONTENT_TYPE
        case .invalidXML: return AFS_E_INVALID_XML
        case .invalidImage: return AFS_E_INVALID_IMAGE
        case .untrusted: return AFS_E_UNTRUSTED
        case .badResponse: return AFS_E_BAD_RESPONSE
        case .limit: return AFS_E_LIMIT
        case .invalidMultipart: return AFS_E_INVALID_MULTIPART
        }
    }
}

/// Writes `message` into an `afs_error`'s message array, NUL-terminated, cut at a character
/// boundary with "..." when it does not fit.
func store(_ message: String, into err: UnsafeMutablePointer<afs_error>) {
    withUnsafeMutableBytes(of: &err.pointee.message) { buffer in
        let capacity = buffer.count
        var bytes = Array(message.utf8)
        if bytes.count > capacity - 1 {
            var n = capacity - 4
            while n > 0 && bytes[n] & 0xC0 == 0x80 { n -= 1 }
            bytes = Array(bytes[..<n]) + Array("...".utf8)
        }
        buffer.copyBytes(from: bytes)
        buffer[bytes.count] = 0
    }
}

/// The message of an `afs_error` (up to its NUL).
func message(of err: UnsafePointer<afs_error>) -> String {
    withUnsafeBytes(of: err.pointee.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}

/// Fills `*err` (when not NULL) and returns the status for the C caller.
@discardableResult
func fail(_ err: UnsafeMutablePointer<afs_error>?, _ e: AFSError) -> afs_status {
    if let err = err {
        err.pointee.code = e.status.c
        err.pointee.os_errno = e.osErrno
        store(e.message, into: err)
    }
    return e.status.c
}

/// Any error as an `AFSError` (the core throws only `AFSError`).
func asAFSError(_ error: Error) -> AFSError {
    (error as? AFSError) ?? AFSError(.invalidArgument, "\(error)")
}

/// Runs `body`; a thrown error fills `err`. Returns the status.
@inline(__always)
func status(_ err: UnsafeMutablePointer<afs_error>?, _ body: () throws -> Void) -> afs_status {
    do {
        try body()
        return AFS_OK
    } catch {
        return fail(err, asAFSError(error))
    }
}

/// Runs `body` returning a pointer; a thrown error fills `err` and gives NULL.
@inline(__always)
func pointer<P>(_ err: UnsafeMutablePointer<afs_error>?, _ body: () throws -> P?) -> P? {
    do {
        return try body()
    } catch {
        fail(err, asAFSError(error))
        return nil
    }
}

// MARK: - Arguments

/// `AFS_NTS` (`SIZE_MAX`) as the Swift `Int` that `size_t` arrives as.
let NTS = -1

/// A byte count argument: `size_t` values above `INT64_MAX` arrive negative and are refused
/// (`AFS_NTS` is handled by the callers that allow it, before this).
func lengthArg(_ len: Int, _ what: String) throws -> Int {
    guard len >= 0 else {
        let note = len == NTS ? "; AFS_NTS is only for strings" : ""
        throw AFSError(.invalidArgument, "\(what) \(UInt(bitPattern: len)) is not a byte count (larger than INT64_MAX\(note))")
    }
    return len
}

/// The bytes of a C string argument (`len` may be `AFS_NTS`), or `.invalidArgument` for NULL
/// or a length above INT64_MAX.
func bytesArg(_ p: UnsafePointer<CChar>?, _ len: Int = NTS, _ what: String) throws -> UnsafeBufferPointer<UInt8> {
    let n = len == NTS ? NTS : try lengthArg(len, "the length of \(what)")
    guard let p = p else {
        if n == 0 { return UnsafeBufferPointer(start: nil, count: 0) }
        throw AFSError(.invalidArgument, "\(what) is NULL")
    }
    return UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self),
                               count: n == NTS ? strlen(p) : n)
}

/// Bytes argument that may be NULL only when `len` is 0; `AFS_NTS` is not a byte count.
func dataArg(_ p: UnsafeRawPointer?, _ len: Int, _ what: String, lenName: String = "its length") throws -> UnsafeRawBufferPointer {
    let n = try lengthArg(len, lenName == "its length" ? "the length of \(what)" : lenName)
    if n == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
    guard let p = p else { throw AFSError(.invalidArgument, "\(what) is NULL but \(lenName) is \(n)") }
    return UnsafeRawBufferPointer(start: p, count: n)
}

/// A C array argument of `count` elements that may be NULL only when count is 0.
func arrayArg<T>(_ p: UnsafePointer<T>?, _ count: Int, _ what: String, countName: String = "count") throws -> UnsafeBufferPointer<T> {
    let n = try lengthArg(count, countName)
    if n == 0 { return UnsafeBufferPointer(start: nil, count: 0) }
    guard let p = p else { throw AFSError(.invalidArgument, "\(what) is NULL but \(countName) is \(n)") }
    return UnsafeBufferPointer(start: p, count: n)
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

/// An array of `count` UTF-8 strings (`NULL` only when count is 0), each named `what[i]`.
func stringArrayArg(_ p: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int, _ what: String,
                    countName: String = "count") throws -> [String] {
    try arrayArg(p, count, what, countName: countName).enumerated().map { try stringArg($1, NTS, "\(what)[\($0)]") }
}
