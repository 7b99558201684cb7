/// HTTP header fields in insertion order; names compare ASCII case-insensitively.
public struct HeaderList: Sendable, Equatable, Sequence {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public func index(of name: String) -> Int? {
        fields.firstIndex { HTTPSyntax.equalsIgnoringCase($0.name, name) }
    }

    /// The value of `name` (case-insensitive), or nil.
    public subscript(name: String) -> String? {
        index(of: name).map { fields[$0].value }
    }

    /// Sets a field: an existing one (any case) gets the new name and value in place; nil
    /// removes it. Names and values are not checked here (see `HTTPSyntax`).
    public mutating func set(_ name: String, _ value: String?) {
        if let i = index(of: name) {
            if let v = value { fields[i] = (name, v) } else { fields.remove(at: i) }
        } else if let v = value {
            fields.append((name, v))
        }
    }

    public static func == (a: HeaderList, b: HeaderList) -> Bool {
        a.fields.count == b.fields.count && zip(a.fields, b.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}

/// NSURLRequest's properties that AFHTTPRequestSerializer observes and copies onto each
/// request. Defaults are NSURLRequest's.
public struct RequestProperties: Sendable, Equatable {
    public var timeoutInterval: Double = 60
    public var cachePolicy: Int32 = 0
    public var shouldHandleCookies = true
    public var shouldUsePipelining = false
    public var allowsCellularAccess = true
    public var networkServiceType: Int32 = 0

    public init() {}
}

/// A serialized HTTP request: what goes on the wire, plus NSURLRequest's properties.
/// C: `afs_request`.
public struct Request: Sendable {
    public var method: String
    public var url: String
    public var headers = HeaderList()
    /// The body; nil means no body. An empty array is an empty body (a form POST without
    /// parameters has one, as in AFNetworking). Setting a body drops any `bodyStream`, as
    /// NSMutableURLRequest's `setHTTPBody:` does. Reading it copies a body a serializer
    /// wrote (`bodyBuffer`); `withBody` reads any body in place.
    public var body: [UInt8]? {
        get {
            switch storedBody {
            case nil: return nil
            case .array(let a)?: return a
            case .buffer(let b)?: return Array(b.bytes)
            }
        }
        set { storedBody = newValue.map(Body.array) }
    }

    /// A body as a serializer wrote it (JSON, property list): kept in the writer's buffer
    /// and lent to C as is. Setting one drops any `bodyStream`.
    public var bodyBuffer: ByteBuffer? {
        get { if case .buffer(let b)? = storedBody { return b } else { return nil } }
        set { storedBody = newValue.map(Body.buffer) }
    }

    /// The body's length; nil without a body.
    public var bodyCount: Int? {
        switch storedBody {
        case nil: return nil
        case .array(let a)?: return a.count
        case .buffer(let b)?: return b.count
        }
    }

    /// Calls `f` with the body's bytes in place; nil without a body.
    public func withBody<R>(_ f: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        switch storedBody {
        case nil: return nil
        case .array(let a)?: return try a.withUnsafeBufferPointer(f)
        case .buffer(let b)?: return try f(b.bytes)
        }
    }

    private enum Body: Sendable {
        case array([UInt8])
        case buffer(ByteBuffer)
    }
    private var storedBody: Body? {
        didSet { if storedBody != nil { bodyStream = nil } }
    }
    /// The body of a multipart/form-data request (`afs_form_finish`), pulled through
    /// `read`. A multipart request has no plain body: setting a stream drops `body`.
    /// C: `afs_request_body_stream`.
    public var bodyStream: MultipartBodyStream? {
        didSet { if bodyStream != nil { body = nil } }
    }
    public var properties = RequestProperties()
    /// Header digests to keep up to date and the directory for temporary files
    /// (Transforms/RequestTransforms.swift).
    public var transformSettings = RequestTransformSettings()

    /// A request with a checked method, the URL after intake (`URIReference`: kept when it
    /// is a valid URI, else percent-encoded, IDNA for the host) and default properties.
    /// C: `afs_request_new`.
    /// - Throws: `.invalidMethod`, `.badURL` (also for a relative reference).
    public init(method: String, url: String) throws {
        try HTTPSyntax.validateMethod(method)
        self.url = try URIReference.parseAbsolute(url, baseHint: "a request built by hand needs an absolute URL").checkedText()
        self.method = method
    }

    /// A request whose method was checked and whose URL went through intake already.
    init(checkedMethod method: String, intakenURL url: String) {
        self.method = method
        self.url = url
    }

    /// Sets a header after checking it; nil removes it. C: `afs_request_set_header`.
    /// - Throws: `.invalidHeader` for a name that is not a token, a value with CR, LF, NUL,
    ///   and for `Content-Length` and `Transfer-Encoding` (the library frames the body).
    public mutating func setHeader(_ name: String, _ value: String?) throws {
        try HTTPSyntax.validateHeaderName(name)
        try HTTPSyntax.refuseFramingHeader(name)
        if let v = value { try HTTPSyntax.validateHeaderValue(v, name: name) }
        headers.set(name, value.map(HTTPSyntax.trimmedHeaderValue))
    }

    /// The value of header `name` (case-insensitive). C: `afs_request_header`.
    public func header(_ name: String) -> String? { headers[name] }
}
