// afs_form_* and afs_serializer_multipart_form: building multipart/form-data requests.
import AFSerialization

/// `afs_form`: a form being built, plus the boundary string lent to C.
final class FormHandle: Handle {
    let form: MultipartForm
    private var lentBoundary: CStringBox?

    init(_ f: MultipartForm) { form = f }
    override class var cName: String { "afs_form" }

    /// The boundary as a C string, valid until the boundary changes or the form is freed.
    var boundary: UnsafePointer<CChar> {
        if let b = lentBoundary, String(cString: b.pointer) == form.boundary { return UnsafePointer(b.pointer) }
        let b = CStringBox.copy(form.boundary)
        lentBoundary = b
        return UnsafePointer(b.pointer)
    }
}

/// `int64_t (*)(void *ctx, uint8_t *buffer, size_t max_length)`
public typealias afs_read_fn = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int) -> Int64
/// `int (*)(void *ctx)`
public typealias afs_rewind_fn = @convention(c) (UnsafeMutableRawPointer?) -> Int32
/// `void (*)(void *ctx)`
public typealias afs_release_fn = @convention(c) (UnsafeMutableRawPointer?) -> Void

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

/// The form behind `f`, usable (not spent).
private func usableForm(_ f: OpaquePointer?) throws -> MultipartForm {
    let form = try unbox(f, FormHandle.self, "form").form
    if form.isSpent { throw AFSError(.state, "the form is spent: afs_form_finish was already called") }
    return form
}

/// Bytes argument that may be NULL only when `len` is 0.
private func dataArg(_ p: UnsafeRawPointer?, _ len: Int, _ what: String) throws -> UnsafeRawBufferPointer {
    if len == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
    guard let p = p else { throw AFSError(.invalidArgument, "\(what) is NULL but its length is \(len)") }
    return UnsafeRawBufferPointer(start: p, count: len)
}

@_cdecl("afs_serializer_multipart_form")
public func afs_serializer_multipart_form(_ s: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ url: UnsafePointer<CChar>?,
                                          _ params: OpaquePointer?, _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(s, SerializerHandle.self, "serializer")
        let m = try stringArg(method, NTS, "method"), u = try stringArg(url, NTS, "url")
        let p = try params.map { try unbox($0, ValueHandle.self, "params").value }
        return box(FormHandle(try h.snapshot.multipartForm(method: m, url: u, params: p)))
    }
}

@_cdecl("afs_form_append_file")
public func afs_form_append_file(_ f: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                                 _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) {
        let form = try usableForm(f)
        try form.appendFile(path: try stringArg(path, NTS, "path"), name: try stringArg(name, NTS, "name"))
    }
}

@_cdecl("afs_form_append_file_ex")
public func afs_form_append_file_ex(_ f: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                                    _ filename: UnsafePointer<CChar>?, _ mimeType: UnsafePointer<CChar>?,
                                    _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) {
        let form = try usableForm(f)
        try form.appendFile(path: try stringArg(path, NTS, "path"), name: try stringArg(name, NTS, "name"),
                            filename: try optionalStringArg(filename, "filename"),
                            mimeType: try optionalStringArg(mimeType, "mime_type"))
    }
}

@_cdecl("afs_form_append_file_data")
public func afs_form_append_file_data(_ f: OpaquePointer?, _ data: UnsafeRawPointer?, _ len: Int, _ name: UnsafePointer<CChar>?,
                                      _ filename: UnsafePointer<CChar>?, _ mimeType: UnsafePointer<CChar>?,
                                      _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) {
        let form = try usableForm(f)
        try form.appendFileData(try dataArg(data, len, "data"), name: try stringArg(name, NTS, "name"),
                                filename: try stringArg(filename, NTS, "filename"),
                                mimeType: try optionalStringArg(mimeType, "mime_type"))
    }
}

@_cdecl("afs_form_append_form_data")
public func afs_form_append_form_data(_ f: OpaquePointer?, _ data: UnsafeRawPointer?, _ len: Int, _ name: UnsafePointer<CChar>?,
                                      _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) {
        let form = try usableForm(f)
        try form.appendFormData(try dataArg(data, len, "data"), name: try stringArg(name, NTS, "name"))
    }
}

@_cdecl("afs_form_append_stream")
public func afs_form_append_stream(_ f: OpaquePointer?, _ read: afs_read_fn?, _ rewind: afs_rewind_fn?, _ release: afs_release_fn?,
                                   _ ctx: UnsafeMutableRawPointer?, _ length: UInt64, _ name: UnsafePointer<CChar>?,
                                   _ filename: UnsafePointer<CChar>?, _ mimeType: UnsafePointer<CChar>?,
                                   _ err: UnsafeMutableRawPointer?) -> Int32 {
    // Made first, so that every failure below releases ctx exactly once.
    let source = CallbackSource(read, rewind, release, ctx)
    return status(err) {
        let form = try usableForm(f)
        guard read != nil else { throw AFSError(.invalidArgument, "read is NULL") }
        try form.appendStream(source, length: length, name: try stringArg(name, NTS, "name"),
                              filename: try stringArg(filename, NTS, "filename"),
                              mimeType: try optionalStringArg(mimeType, "mime_type"))
    }
}

@_cdecl("afs_form_append_part")
public func afs_form_append_part(_ f: OpaquePointer?, _ names: UnsafePointer<UnsafePointer<CChar>?>?,
                                 _ values: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int,
                                 _ body: UnsafeRawPointer?, _ len: Int, _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) {
        let form = try usableForm(f)
        guard count == 0 || (names != nil && values != nil) else {
            throw AFSError(.invalidArgument, "header_names or header_values is NULL but header_count is \(count)")
        }
        var headers: [(name: String, value: String)] = []
        for i in 0..<count {
            let n = try stringArg(names![i], NTS, "header_names[\(i)]")
            headers.append((n, try stringArg(values![i], NTS, "the value of part header \"\(n)\"")))
        }
        try form.appendPart(headers: headers, body: try dataArg(body, len, "body"))
    }
}

@_cdecl("afs_form_throttle_bandwidth")
public func afs_form_throttle_bandwidth(_ f: OpaquePointer?, _ packetSize: Int, _ delay: Double) {
    peek(f, FormHandle.self)?.form.throttleBandwidth(packetSize: packetSize, delay: delay)
}

@_cdecl("afs_form_set_boundary")
public func afs_form_set_boundary(_ f: OpaquePointer?, _ boundary: UnsafePointer<CChar>?, _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) {
        let form = try usableForm(f)
        try form.setBoundary(try stringArg(boundary, NTS, "boundary"))
    }
}

@_cdecl("afs_form_boundary")
public func afs_form_boundary(_ f: OpaquePointer?) -> UnsafePointer<CChar>? {
    peek(f, FormHandle.self)?.boundary
}

@_cdecl("afs_form_finish")
public func afs_form_finish(_ f: OpaquePointer?, _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    pointer(err) { box(RequestHandle(try unbox(f, FormHandle.self, "form").form.finish())) }
}

@_cdecl("afs_form_free")
public func afs_form_free(_ f: OpaquePointer?) { release(f, FormHandle.self) }
