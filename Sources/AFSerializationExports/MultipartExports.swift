// afs_form_* and afs_serializer_multipart_form: building multipart/form-data requests.
import AFSerialization
import CAFSerialization

/// `afs_form`: a form being built, plus the boundary string lent to C.
final class FormHandle: Handle {
    /// nil once afs_form_free began (its parts' release functions may call back).
    private(set) var formRef: MultipartForm?
    private var lentBoundary: CStringBox?
    /// Set while a call on this form runs: a call from inside one of its callbacks (a
    /// part's release function) is refused with AFS_E_STATE, afs_form_free is deferred.
    var busy = 0
    var freeDeferred = false

    init(_ f: MultipartForm) { formRef = f }
    override class var cName: String { "afs_form" }

    /// Frees the form's parts (running their release functions) while the handle is alive
    /// and busy, then releases the handle.
    func free(_ p: OpaquePointer) {
        if busy > 0 {
            freeDeferred = true
            return
        }
        busy += 1
        let doomed = formRef
        formRef = nil          // the write ends here: calls from release functions may read it
        FormHandle.dispose(consume doomed)
        busy -= 1
        Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(p)).release()
    }

    /// Drops the last reference to a form inside this call, so that its parts' release
    /// functions run here (while the handle is busy), not at some later point.
    @inline(never)
    private static func dispose(_ form: consuming MultipartForm?) {}

    /// The boundary as a C string, valid until the boundary changes or the form is freed.
    var boundary: UnsafePointer<CChar>? {
        guard let form = formRef else { return nil }
        if let b = lentBoundary, String(cString: b.pointer) == form.boundary { return UnsafePointer(b.pointer) }
        guard let b = CStringBox.copy(form.boundary) else { return nil }
        lentBoundary = b
        return UnsafePointer(b.pointer)
    }
}

/// A caller's read/rewind/release triple. `release` runs exactly once, when this object
/// goes away: with its part, or at once when the append fails.
final class CallbackSource: PartStreamSource {
    let readFn: afs_read_fn?
    let rewindFn: afs_rewind_fn?
    let releaseFn: afs_release_fn?
    let ctx: UnsafeMutableRawPointer?

    init(_ read: afs_read_fn?, _ rewind: afs_rewind_fn?, _ release: afs_release_fn?, _ ctx: UnsafeMutableRawPointer?) {
        readFn = read
        rewindFn = rewind
        releaseFn = release
        self.ctx = ctx
    }

    deinit { releaseFn?(ctx) }

    func read(into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        Int(truncatingIfNeeded: readFn?(ctx, buffer, maxLength) ?? -1)
    }

    var canRewind: Bool { rewindFn != nil }

    func rewind() -> Bool { rewindFn?(ctx) == 0 }
}

/// Runs `body` on the form behind `f` as its one running call: AFS_E_STATE from inside one
/// of its callbacks, on a spent form (unless `spentOK`) or one being freed. A free
/// requested meanwhile happens at the end.
private func formCall<R>(_ f: OpaquePointer?, _ call: String, spentOK: Bool = false,
                         _ body: (MultipartForm) throws -> R) throws -> R {
    let h = try unbox(f, FormHandle.self, "form")
    guard let form = h.formRef else { throw AFSError(.state, "\(call): the form is being freed (afs_form_free)") }
    if h.busy > 0 {
        throw AFSError(.state, "\(call) was called from inside a callback of the same form (re-entrant calls are refused; afs_form_free is deferred)")
    }
    if !spentOK && form.isSpent { throw AFSError(.state, "the form is spent: afs_form_finish was already called") }
    h.busy += 1
    defer {
        h.busy -= 1
        if h.busy == 0 && h.freeDeferred {
            h.freeDeferred = false
            h.free(f!)
        }
    }
    return try body(form)
}

@c @implementation
public func afs_serializer_multipart_form(_ s: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ url: UnsafePointer<CChar>?,
                                          _ params: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(s, SerializerHandle.self, "serializer")
        let m = try stringArg(method, NTS, "method"), u = try stringArg(url, NTS, "url")
        let p = try params.map { try valueArg($0, "params").value }
        return box(FormHandle(try h.snapshot.multipartForm(method: m, url: u, params: p)))
    }
}

@c @implementation
public func afs_form_append_file(_ f: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                                 _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let p = try stringArg(path, NTS, "path"), n = try stringArg(name, NTS, "name")
        try formCall(f, "afs_form_append_file") { try $0.appendFile(path: p, name: n) }
    }
}

@c @implementation
public func afs_form_append_file_ex(_ f: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                                    _ filename: UnsafePointer<CChar>?, _ mimeType: UnsafePointer<CChar>?,
                                    _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let p = try stringArg(path, NTS, "path"), n = try stringArg(name, NTS, "name")
        let fn = try optionalStringArg(filename, "filename"), m = try optionalStringArg(mimeType, "mime_type")
        try formCall(f, "afs_form_append_file_ex") { try $0.appendFile(path: p, name: n, filename: fn, mimeType: m) }
    }
}

@c @implementation
public func afs_form_append_file_data(_ f: OpaquePointer?, _ data: UnsafeRawPointer?, _ len: Int, _ name: UnsafePointer<CChar>?,
                                      _ filename: UnsafePointer<CChar>?, _ mimeType: UnsafePointer<CChar>?,
                                      _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let d = try dataArg(data, len, "data"), n = try stringArg(name, NTS, "name")
        let fn = try stringArg(filename, NTS, "filename"), m = try optionalStringArg(mimeType, "mime_type")
        try formCall(f, "afs_form_append_file_data") { try $0.appendFileData(d, name: n, filename: fn, mimeType: m) }
    }
}

@c @implementation
public func afs_form_append_form_data(_ f: OpaquePointer?, _ data: UnsafeRawPointer?, _ len: Int, _ name: UnsafePointer<CChar>?,
                                      _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let d = try dataArg(data, len, "data"), n = try stringArg(name, NTS, "name")
        try formCall(f, "afs_form_append_form_data") { try $0.appendFormData(d, name: n) }
    }
}

@c @implementation
public func afs_form_append_stream(_ f: OpaquePointer?, _ read: afs_read_fn?, _ rewind: afs_rewind_fn?, _ release: afs_release_fn?,
                                   _ ctx: UnsafeMutableRawPointer?, _ length: UInt64, _ name: UnsafePointer<CChar>?,
                                   _ filename: UnsafePointer<CChar>?, _ mimeType: UnsafePointer<CChar>?,
                                   _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    // Made first, so that every failure below releases ctx exactly once.
    let source = CallbackSource(read, rewind, release, ctx)
    return status(err) {
        guard read != nil else { throw AFSError(.invalidArgument, "read is NULL") }
        guard length <= UInt64(Int64.max) || length == BodyPart.unknownLength else {
            throw AFSError(.invalidArgument, "length \(length) is not a byte count (larger than INT64_MAX) nor AFS_LENGTH_UNKNOWN")
        }
        let n = try stringArg(name, NTS, "name"), fn = try stringArg(filename, NTS, "filename")
        let m = try optionalStringArg(mimeType, "mime_type")
        try formCall(f, "afs_form_append_stream") { try $0.appendStream(source, length: length, name: n, filename: fn, mimeType: m) }
    }
}

@c @implementation
public func afs_form_append_part(_ f: OpaquePointer?, _ names: UnsafePointer<UnsafePointer<CChar>?>?,
                                 _ values: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int,
                                 _ body: UnsafeRawPointer?, _ len: Int, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let n = try arrayArg(names, count, "header_names", countName: "header_count")
        let v = try arrayArg(values, count, "header_values", countName: "header_count")
        let headers = try zip(n, v).enumerated().map { i, nv in
            let name = try stringArg(nv.0, NTS, "header_names[\(i)]")
            return (name: name, value: try stringArg(nv.1, NTS, "the value of part header \"\(name)\""))
        }
        let b = try dataArg(body, len, "body")
        try formCall(f, "afs_form_append_part") { try $0.appendPart(headers: headers, body: b) }
    }
}

@c @implementation
public func afs_form_throttle_bandwidth(_ f: OpaquePointer?, _ packetSize: Int, _ delay: Double) {
    // Ignored for NULL, a spent form and calls from inside the form's callbacks.
    _ = try? formCall(f, "afs_form_throttle_bandwidth") { $0.throttleBandwidth(packetSize: packetSize, delay: delay) }
}

@c @implementation
public func afs_form_set_boundary(_ f: OpaquePointer?, _ boundary: UnsafePointer<CChar>?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let b = try stringArg(boundary, NTS, "boundary")
        try formCall(f, "afs_form_set_boundary") { try $0.setBoundary(b) }
    }
}

@c @implementation
public func afs_form_boundary(_ f: OpaquePointer?) -> UnsafePointer<CChar>? {
    peek(f, FormHandle.self)?.boundary
}

@c @implementation
public func afs_form_finish(_ f: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) { box(RequestHandle(try formCall(f, "afs_form_finish", spentOK: true) { try $0.finish() })) }
}

@c @implementation
public func afs_form_free(_ f: OpaquePointer?) {
    guard let f = f, let h = peek(f, FormHandle.self) else { return }
    h.free(f)
}
