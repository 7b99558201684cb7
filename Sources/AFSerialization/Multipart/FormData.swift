/// A multipart/form-data form being built (AFNetworking's `AFStreamingMultipartFormData`):
/// parts are appended in order, then `finish()` gives the request with its body stream,
/// exact `Content-Length` and `multipart/form-data; boundary=…`.
///
/// Made by `RequestSerializer.multipartForm(method:url:params:)`. One thread at a time.
/// C: `afs_form`.
public final class MultipartForm {
    /// The request the form finishes into (the serializer's plain request, no parameters).
    public let baseRequest: Request
    /// Encoding of the parameters' field values (the serializer's `stringEncoding`). Header
    /// blocks are UTF-8, as AFNetworking's form data wrote them.
    public let stringEncoding: StringEncoding
    /// The boundary: generated (`Boundary+` and 16 uppercase hex digits from the OS random
    /// source) or set by `setBoundary`. A generated boundary found inside an in-memory part
    /// is redrawn at `finish()`. C: `afs_form_boundary`.
    public private(set) var boundary: String
    public private(set) var hasCustomBoundary = false
    public private(set) var parts: [BodyPart] = []
    /// True after a successful `finish()`; every later change fails with `.state`.
    public private(set) var isSpent = false
    /// The serializer's compression, applied by `finish()`.
    var compression: SerializerCompression?
    var packetSize = Int.max
    var delay: Double = 0

    init(request: Request, stringEncoding: StringEncoding) {
        baseRequest = request
        self.stringEncoding = stringEncoding
        boundary = MultipartForm.generateBoundary()
    }

    /// `Boundary+` and 16 uppercase hex digits from the OS random source.
    public static func generateBoundary() -> String {
        var g = SystemRandomNumberGenerator()  // getrandom(2)
        let r: UInt64 = g.next()
        let hex = String(r, radix: 16, uppercase: true)
        return "Boundary+" + String(repeating: "0", count: 16 - hex.utf8.count) + hex
    }

    func checkUsable() throws {
        if isSpent { throw AFSError(.state, "the form is spent: afs_form_finish was already called") }
    }

    /// Appends a part. Every header value is checked (a NUL, CR or LF in a name or filename
    /// that reached `Content-Disposition` is refused here, as in any other part header).
    private func add(headers: [(name: String, value: String)], source: @autoclosure () throws(AFSError) -> BodyPart.Source,
                     length: UInt64, name: String?) throws {
        for (n, v) in headers { try HTTPSyntax.validateHeaderValue(v, name: n) }
        let label = BodyPart.label(index: parts.count, name: name)
        try parts.checkedReserve(parts.count + 1 > parts.capacity ? Swift.max(16, 2 * parts.capacity) : 0, "the list of parts")
        let part = try BodyPart(headers: headers, source: try source(), length: length, label: label)
        parts.append(part)
    }

    private func fileHeaders(name: String, filename: String, mimeType: String) throws -> [(name: String, value: String)] {
        try HTTPSyntax.validateHeaderValue(mimeType, name: "Content-Type")
        return [("Content-Disposition", BodyPart.contentDisposition(name: name, filename: filename)),
                ("Content-Type", HTTPSyntax.trimmedHeaderValue(mimeType))]
    }

    // MARK: - Appending

    /// `appendPartWithFileURL:name:fileName:mimeType:error:` — a file part streamed from
    /// disk. The file must be a regular, readable file; its size is taken now and it is
    /// opened only while its body is read. `filename` defaults to the last path component,
    /// `mimeType` to the type of the filename's extension (see `MIMETypes`).
    /// C: `afs_form_append_file`, `afs_form_append_file_ex`.
    /// - Throws: `.state` when spent; `.file` (with errno) when the file is missing, a
    ///   directory, not regular or unreadable; `.invalidHeader` for CR/LF/NUL in `mimeType`.
    public func appendFile(path: String, name: String, filename: String? = nil, mimeType: String? = nil) throws {
        try checkUsable()
        guard !path.isEmpty else { throw AFSError(.file, "the file path is empty", osErrno: ENOENT) }
        var st = stat()
        if stat(path, &st) != 0 {
            let e = errno
            throw AFSError(.file, "cannot append file \"\(path)\": \(errorText(e))", osErrno: e)
        }
        let kind = st.st_mode & S_IFMT
        if kind == S_IFDIR {
            throw AFSError(.file, "cannot append file \"\(path)\": it is a directory", osErrno: EISDIR)
        }
        if kind != S_IFREG {
            throw AFSError(.file, "cannot append file \"\(path)\": it is not a regular file")
        }
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) } while fd < 0 && errno == EINTR
        if fd < 0 {
            let e = errno
            throw AFSError(.file, "cannot append file \"\(path)\": \(errorText(e))", osErrno: e)
        }
        Platform.close(fd)
        let fname = filename ?? MultipartForm.lastPathComponent(path)
        let type = mimeType ?? MIMETypes.forFilename(fname)
        try add(headers: try fileHeaders(name: name, filename: fname, mimeType: type),
            source: .file(path: path), length: UInt64(st.st_size), name: name)
    }

    /// `appendPartWithFileData:name:fileName:mimeType:` — a file part whose bytes are
    /// copied now. `mimeType` nil: the type of the filename's extension.
    /// C: `afs_form_append_file_data`.
    /// - Throws: `.state`; `.invalidHeader` for CR/LF/NUL in `mimeType`.
    public func appendFileData(_ data: UnsafeRawBufferPointer, name: String, filename: String, mimeType: String? = nil) throws {
        try checkUsable()
        let type = mimeType ?? MIMETypes.forFilename(filename)
        try add(headers: try fileHeaders(name: name, filename: filename, mimeType: type),
            source: .memory(try ByteBlock(data, what: "the body of file part \"\(filename)\" (\(data.count) bytes)")), length: UInt64(data.count), name: name)
    }

    public func appendFileData(_ data: [UInt8], name: String, filename: String, mimeType: String? = nil) throws {
        try data.withUnsafeBytes { try appendFileData($0, name: name, filename: filename, mimeType: mimeType) }
    }

    /// `appendPartWithFormData:name:` — a field part (`Content-Disposition: form-data;
    /// name="N"`) with the bytes copied now. C: `afs_form_append_form_data`.
    /// - Throws: `.state`.
    public func appendFormData(_ data: UnsafeRawBufferPointer, name: String) throws {
        try checkUsable()
        try add(headers: [("Content-Disposition", BodyPart.contentDisposition(name: name, filename: nil))],
            source: .memory(try ByteBlock(data, what: "the body of field \"\(name)\" (\(data.count) bytes)")), length: UInt64(data.count), name: name)
    }

    public func appendFormData(_ data: [UInt8], name: String) throws {
        try data.withUnsafeBytes { try appendFormData($0, name: name) }
    }

    /// `appendPartWithInputStream:name:fileName:length:mimeType:` — a file part read from a
    /// callback that must yield exactly `length` bytes, or, with `BodyPart.unknownLength`,
    /// until it returns 0 (the request is then sent chunked). The source is released (dropped)
    /// when the part goes away, or at once when this call fails.
    /// C: `afs_form_append_stream`.
    /// - Throws: `.state`; `.invalidHeader` for CR/LF/NUL in `mimeType`.
    public func appendStream(_ source: PartStreamSource, length: UInt64, name: String, filename: String, mimeType: String? = nil) throws {
        try checkUsable()
        let type = mimeType ?? MIMETypes.forFilename(filename)
        try add(headers: try fileHeaders(name: name, filename: filename, mimeType: type),
            source: .stream(source), length: length, name: name)
    }

    /// `appendPartWithHeaders:body:` — a part with the caller's headers (in this order,
    /// checked like request headers) and a copy of `body`. C: `afs_form_append_part`.
    /// - Throws: `.state`; `.invalidHeader` for a name that is not a token or a value with
    ///   CR, LF or NUL.
    public func appendPart(headers: [(name: String, value: String)], body: UnsafeRawBufferPointer) throws {
        try checkUsable()
        for (n, v) in headers {
            try HTTPSyntax.validateHeaderName(n)
            try HTTPSyntax.validateHeaderValue(v, name: n)
        }
        let headers = headers.map { (name: $0.name, value: HTTPSyntax.trimmedHeaderValue($0.value)) }
        try add(headers: headers, source: .memory(try ByteBlock(body, what: "the body of a part (\(body.count) bytes)")), length: UInt64(body.count), name: nil)
    }

    public func appendPart(headers: [(name: String, value: String)], body: [UInt8]) throws {
        try body.withUnsafeBytes { try appendPart(headers: headers, body: $0) }
    }

    /// `throttleBandwidthWithPacketSize:delay:` — at most `packetSize` bytes per read and a
    /// sleep of `delay` seconds after each chunk. A packet size of 0 removes the limit;
    /// negative or non-finite delays count as 0. Ignored on a spent form.
    /// C: `afs_form_throttle_bandwidth`.
    public func throttleBandwidth(packetSize: Int, delay: Double) {
        guard !isSpent else { return }
        self.packetSize = packetSize <= 0 ? Int.max : packetSize
        self.delay = delay.isFinite && delay > 0 ? delay : 0
    }

    /// Sets the boundary: 1-70 characters of `A-Z a-z 0-9 ' + _ - .`. Whether it collides
    /// with in-memory content is checked at `finish()`. C: `afs_form_set_boundary`.
    /// - Throws: `.state` when spent; `.invalidArgument` for a bad boundary.
    public func setBoundary(_ b: String) throws {
        try checkUsable()
        try MultipartForm.validateBoundary(b)
        boundary = b
        hasCustomBoundary = true
    }

    /// - Throws: `.invalidArgument` unless `b` is 1-70 characters of `A-Z a-z 0-9 ' + _ - .`.
    public static func validateBoundary(_ b: String) throws {
        let n = b.utf8.count
        guard n >= 1 && n <= 70 else {
            throw AFSError(.invalidArgument, "invalid boundary: it must be 1 to 70 characters long, not \(n)")
        }
        for (i, c) in b.utf8.enumerated() {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "'"), UInt8(ascii: "+"),
                UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
                continue
            default:
                throw AFSError(.invalidArgument, "invalid boundary: character \(HTTPSyntax.describe(c)) at offset \(i) is not one of A-Z a-z 0-9 ' + _ - .")
            }
        }
    }

    // MARK: - Finishing

    /// `requestByFinalizingMultipartFormData`: the request with the body stream,
    /// `Content-Type: multipart/form-data; boundary=B` and the exact `Content-Length`
    /// (replacing any Content-Type). A form without parts gives the plain request of the
    /// serializer, as AFNetworking does. Afterwards the form is spent. C: `afs_form_finish`.
    /// - Throws: `.state` when spent; `.invalidArgument` when a boundary set with
    ///   `setBoundary` occurs (as `--` + boundary) in an in-memory part (the form stays
    ///   usable: set another boundary and finish again).
    public func finish() throws -> Request {
        try checkUsable()
        if parts.isEmpty {
            isSpent = true
            return baseRequest
        }
        if hasCustomBoundary {
            if let i = collision(Array(("--" + boundary).utf8)) {
                throw AFSError(.invalidArgument, "the boundary \"\(boundary)\" occurs (after \"--\") in \(parts[i].label): set another boundary")
            }
        } else {
            while collision(Array(boundary.utf8)) != nil { boundary = MultipartForm.generateBoundary() }
        }
        let stream = try MultipartBodyStream(parts: parts, boundary: boundary)
        stream.packetSize = packetSize
        stream.delay = delay
        var r = baseRequest
        r.headers.set("Content-Type", "multipart/form-data; boundary=" + boundary)
        // A part of unknown length: no Content-Length, the request is sent chunked.
        r.headers.set("Content-Length", stream.contentLength == BodyPart.unknownLength ? nil : String(stream.contentLength))
        r.body = nil
        r.bodyStream = stream
        isSpent = true
        return try compression?.apply(to: r) ?? r
    }

    /// The index of the first part whose headers or in-memory body contain `needle`.
    func collision(_ needle: [UInt8]) -> Int? {
        for (i, p) in parts.enumerated() {
            if p.headerBlock.contains(needle) { return i }
            if case .memory(let b) = p.source, b.contains(needle) { return i }
        }
        return nil
    }

    static func lastPathComponent(_ path: String) -> String {
        var bytes = Array(path.utf8)
        while bytes.count > 1 && bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        if let i = bytes.lastIndex(of: UInt8(ascii: "/")), bytes.count > 1 { bytes = Array(bytes[(i + 1)...]) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension RequestSerializer {
    /// `multipartFormRequestWithMethod:URLString:parameters:constructingBodyWithBlock:error:`
    /// up to the block: a form over the serializer's plain request for `method` and `url`
    /// (headers and request properties included), with the parameters as field parts in
    /// query-pair order (names with brackets; data values raw; null an empty part; other
    /// scalars their text in the serializer's string encoding). Append more parts, then
    /// `finish()`. C: `afs_serializer_multipart_form`.
    /// - Throws: `.invalidMethod` for GET and HEAD (any case) or a bad method; `.badURL`;
    ///   `.invalidArgument` when `params` is not a dictionary; `.encoding` for a value the
    ///   string encoding cannot represent (the field is named).
    public func multipartForm(method: String, url: String, params: Value?) throws -> MultipartForm {
        try HTTPSyntax.validateMethod(method)
        let upper = method.uppercased()
        if upper == "GET" || upper == "HEAD" {
            throw AFSError(.invalidMethod, "\(upper) requests cannot carry a multipart/form-data body")
        }
        let base = try request(method: method, url: url, params: nil)
        let form = MultipartForm(request: base, stringEncoding: stringEncoding)
        form.compression = compression
        guard let params = params else { return form }
        let literal = queryStyle.bools == .literal
        let encoding = stringEncoding
        try QueryString.forEachPair(params, style: queryStyle) { nameBytes, value in
            let name = String(decoding: nameBytes, as: UTF8.self)
            switch value {
            case .data(let d):
                try form.appendFormData(d, name: name)
            case .null:
                try form.appendFormData([UInt8](), name: name)
            case .string(let s):
                try form.appendFormData(try encoding.encode(s, what: "the value of field \"\(name)\""), name: name)
            default:
                var w = ByteWriter(capacity: 32)
                value.appendText(to: &w, literalBools: literal)
                try form.appendFormData(try encoding.encode(try w.toString(), what: "the value of field \"\(name)\""), name: name)
            }
        }
        return form
    }
}
