// afs_form_* and afs_serializer_multipart_form: building multipart/form-data requests.
import AFSerialization
import CAFSerialization

/// `afs_form`: a form being built, plus the boundary string lent to C.
final class FormHandle: Handle {
    let form: MultipartForm
    private var lentBoundary: CStringBox?

    init(_ f: MultipartForm) { form = f }
    override class var cName: String { "afs_form" }

    /// The boundary as a C string, valid until the boundary changes or the form is freed.
    var boundary: UnsafePointer<CChar>? {
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

/// The form behind `f`, usable (not spent).
private func usableForm(_ f: OpaquePointer?) throws -> MultipartForm {
    let form = try unbox(f, FormHandle.self, "form").form
    if form.isSpent { throw AFSError(.state, "the form is spent: afs_form_finish was already called") }
    return form
}

@c @implementation
public func afs_serializer_multipart_form(_ s: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ url: UnsafePointer<CChar>?,
                                          _ params: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(s, SerializerHandle.self, "serializer")
        let m = try stringArg(method, NTS, "method"), u = try stringArg(url, NTS, "url")
        let p = try params.map { try unbox($0, ValueHandle.self, "params").value }
        return box(FormHandle(try h.snapshot.multipartForm(method: m, url: u, params: p)))
    }
}

@c @implementation
public func afs_form_append_file(_ f: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                                 _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let form = try usableForm(f)
        try form.appendFile(path: try stringArg(path, NTS, "path"), name: try stringArg(name, NTS, "name"))
    }
}

@c @implementation
public func afs_form_append_file_ex(_ f: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                                    _ filename: UnsafePointer<CChar>?, _ mimeType: UnsafePointer<CChar>?,
                                    _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let form = try usableForm(f)
        try form.appendFile(path: try stringArg(path, NTS, "path"), name: try stringArg(name, NTS, "name"),
                            filename: try optionalStringArg(filename, "filename"),
                            mimeType: try optionalStringArg(mimeType, "mime_type"))
    }
}

@c @implementation
public func afs_form_append_file_data(_ f: OpaquePointer?, _ data: UnsafeRawPointer?, _ len: Int, _ name: UnsafePointer<CChar>?,
                                      _ filename: UnsafePointer<CChar>?, _ mimeType: UnsafePointer<CChar>?,
                                      _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let form = try usableForm(f)
        try form.appendFileData(try dataArg(data, len, "data"), name: try stringArg(name, NTS, "name"),
                                filename: try stringArg(filename, NTS, "filename"),
                                mimeType: try optionalStringArg(mimeType, "mime_type"))
    }
}

@c @implementation
public func afs_form_append_form_data(_ f: OpaquePointer?, _ data: UnsafeRawPointer?, _ len: Int, _ name: UnsafePointer<CChar>?,
                                      _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let form = try usableForm(f)
        try form.appendFormData(try dataArg(data, len, "data"), name: try stringArg(name, NTS, "name"))
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
        let form = try usableForm(f)
        guard read != nil else { throw AFSError(.invalidArgument, "read is NULL") }
        try form.appendStream(source, length: length, name: try stringArg(name, NTS, "name"),
                              filename: try stringArg(filename, NTS, "filename"),
                              mimeType: try optionalStringArg(mimeType, "mime_type"))
    }
}

@c @implementation
public func afs_form_append_part(_ f: OpaquePointer?, _ names: UnsafePointer<UnsafePointer<CChar>?>?,
                                 _ values: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int,
                                 _ body: UnsafeRawPointer?, _ len: Int, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let form = try usableForm(f)
        let n = try arrayArg(names, count, "header_names", countName: "header_count")
        let v = try arrayArg(values, count, "header_values", countName: "header_count")
        let headers = try zip(n, v).enumerated().map { i, nv in
            let name = try stringArg(nv.0, NTS, "header_names[\(i)]")
            return (name: name, value: try stringArg(nv.1, NTS, "the value of part header \"\(name)\""))
        }
        try form.appendPart(headers: headers, body: try dataArg(body, len, "body"))
    }
}

@c @implementation
public func afs_form_throttle_bandwidth(_ f: OpaquePointer?, _ packetSize: Int, _ delay: Double) {
    peek(f, FormHandle.self)?.form.throttleBandwidth(packetSize: packetSize, delay: delay)
}

@c @implementation
public func afs_form_set_boundary(_ f: OpaquePointer?, _ boundary: UnsafePointer<CChar>?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let form = try usableForm(f)
        try form.setBoundary(try stringArg(boundary, NTS, "boundary"))
    }
}

@c @implementation
public func afs_form_boundary(_ f: OpaquePointer?) -> UnsafePointer<CChar>? {
    peek(f, FormHandle.self)?.boundary
}

@c @implementation
public func afs_form_finish(_ f: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) { box(RequestHandle(try unbox(f, FormHandle.self, "form").form.finish())) }
}

@c @implementation
public func afs_form_free(_ f: OpaquePointer?) { release(f, FormHandle.self) }
