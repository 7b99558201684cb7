/// AFHTTPRequestSerializer, AFJSONRequestSerializer and AFPropertyListRequestSerializer in
/// one value type: the kind decides how parameters become a body.
///
/// A `RequestSerializer` is a value: copies are independent (C: `afs_serializer_copy`), and
/// one instance may be read from many threads. The C layer wraps it in a lock so that
/// configuration and request building can run concurrently on one handle.
/// C: `afs_serializer`.
public struct RequestSerializer: Sendable {
    public enum Kind: Int32, Sendable {
        case http = 0, json = 1, propertyList = 2
    }

    /// Builds the query from the parameters instead of the default algorithm; a thrown error
    /// fails the request with `.queryCallback`. C: `afs_query_fn`.
    public typealias QueryCallback = @Sendable (_ request: Request, _ params: Value) throws -> String

    public let kind: Kind
    /// Headers added to every request that lacks them. Starts with `Accept-Language` and
    /// `User-Agent` (see `DefaultHeaders`).
    public private(set) var headers = HeaderList()
    public var queryStyle = QueryStyle.default
    public var queryCallback: QueryCallback?
    /// Methods whose parameters go into the URL query (uppercase). Default GET HEAD DELETE.
    public private(set) var uriMethods: [String] = ["GET", "HEAD", "DELETE"]
    /// Encoding of form bodies and multipart field values.
    public var stringEncoding = StringEncoding.utf8
    /// Copied onto every request made by `request(method:url:params:)`.
    public var properties = RequestProperties()
    public var jsonOptions: JSONWritingOptions = []
    public var plistFormat = PropertyListFormat.xml
    /// Compression of every request body this serializer makes (multipart forms included);
    /// nil: none. C: `afs_serializer_set_content_encoding`.
    public var compression: SerializerCompression?
    /// AFHTTPSessionManager's `baseURL`: relative references given to `request` and
    /// `multipartForm` resolve against it (RFC 3986 section 5.2). Stored after intake and
    /// the slash rule (a non-empty path without a trailing `/` gets one). nil: none.
    /// C: `afs_serializer_set_base_url`.
    public private(set) var baseURL: String?
    var baseReference: URIReference?

    /// A serializer with AFNetworking's defaults. C: `afs_serializer_new`.
    public init(kind: Kind = .http) {
        self.kind = kind
        headers.set("Accept-Language", DefaultHeaders.acceptLanguage())
        headers.set("User-Agent", DefaultHeaders.userAgent())
    }

    // MARK: Headers

    /// Sets (or, with nil, removes) a default header. C: `afs_serializer_set_header`.
    /// - Throws: `.invalidHeader` for a name that is not a token, a value with CR, LF, NUL,
    ///   and for `Content-Length` and `Transfer-Encoding` (the library frames the body).
    public mutating func setHeader(_ name: String, _ value: String?) throws {
        try HTTPSyntax.validateHeaderName(name)
        try HTTPSyntax.refuseFramingHeader(name)
        if let v = value { try HTTPSyntax.validateHeaderValue(v, name: name) }
        headers.set(name, value.map(HTTPSyntax.trimmedHeaderValue))
    }

    /// The default header `name` (case-insensitive). C: `afs_serializer_copy_header`.
    public func header(_ name: String) -> String? { headers[name] }

    /// `Authorization: Basic base64(user:password)`. C: `afs_serializer_set_basic_auth`.
    public mutating func setBasicAuth(user: String, password: String) throws {
        try setHeader("Authorization", "Basic " + (try Base64.encode(user + ":" + password)))
    }

    /// Removes `Authorization`. C: `afs_serializer_clear_authorization`.
    public mutating func clearAuthorization() { headers.set("Authorization", nil) }

    /// Replaces the methods whose parameters go into the URL. Methods are stored uppercase
    /// (requests compare their uppercased method against them).
    /// - Throws: `.invalidMethod` for a method that is not a token.
    public mutating func setURIMethods(_ methods: [String]) throws {
        var out: [String] = []
        for m in methods {
            try HTTPSyntax.validateMethod(m)
            let u = m.uppercased()
            if !out.contains(u) { out.append(u) }
        }
        uriMethods = out
    }

    /// Whether `method` puts its parameters into the URL.
    public func encodesParametersInURI(_ method: String) -> Bool {
        uriMethods.contains(method.uppercased())
    }

    // MARK: Base URL

    /// Sets (nil clears) the base URL that relative references resolve against. As in
    /// AFHTTPSessionManager, a base whose path is not empty and does not end in `/` gets one
    /// (`https://api.example.com/v1` resolves `users` to `https://api.example.com/v1/users`).
    /// C: `afs_serializer_set_base_url`.
    /// - Throws: `.badURL` for a base that intake refuses or that is not absolute; the base
    ///   is then unchanged.
    public mutating func setBaseURL(_ base: String?) throws {
        guard let base = base else {
            baseURL = nil
            baseReference = nil
            return
        }
        let b = URLResolve.sessionBase(try URIReference.parseAbsolute(base, what: "base URL", baseHint: "the base URL must be absolute"))
        baseReference = b
        baseURL = try b.checkedText()
    }

    /// `url` after intake, resolved against the base URL when it is a relative reference
    /// (absolute URLs ignore the base).
    /// - Throws: `.badURL`; a relative reference without a base says a base URL is needed.
    public func resolveURL(_ url: String) throws -> String {
        let r = try URIReference.parse(url)
        if r.isAbsolute { return try r.checkedText() }
        guard let b = baseReference else {
            if url.utf8.allSatisfy({ $0 == 0x20 }) { throw AFSError(.badURL, "the URL is empty") }
            throw AFSError(.badURL, "\(HTTPSyntax.quote(url)) is a relative reference (no scheme): a base URL is needed to resolve it; set one with afs_serializer_set_base_url (Python: base_url=) or pass an absolute URL")
        }
        return try URLResolve.resolve(r, against: b).checkedText()
    }

    // MARK: Requests

    /// `requestWithMethod:URLString:parameters:error:`: a new request with the serializer's
    /// properties and headers and the parameters serialized. C: `afs_serializer_request`.
    /// `url` may be relative when a base URL is set (`setBaseURL`).
    /// - Throws: `.invalidMethod`, `.badURL`, `.invalidArgument` (parameters not a
    ///   dictionary where a query is needed), `.invalidJSON`, `.invalidPlist`, `.encoding`,
    ///   `.queryCallback`.
    public func request(method: String, url: String, params: Value?) throws -> Request {
        try request(method: method, url: url, parameters: params.map(Parameters.tree))
    }

    /// `request(method:url:params:)` with parameters given as a tree or as a parsed JSON
    /// document (whose JSON body is then written from the document's tape).
    public func request(method: String, url: String, parameters: Parameters?) throws -> Request {
        try HTTPSyntax.validateMethod(method)
        var r = Request(checkedMethod: method, intakenURL: try resolveURL(url))
        r.properties = properties
        return try serialize(r, parameters: parameters)
    }

    /// `requestBySerializingRequest:withParameters:error:` on a request the caller built:
    /// adds the serializer's headers the request lacks and serializes the parameters. The
    /// request's own properties are kept. C: `afs_serializer_serialize`.
    public func serialize(_ request: Request, params: Value?) throws -> Request {
        try serialize(request, parameters: params.map(Parameters.tree))
    }

    /// `serialize(_:params:)` with parameters given as a tree or as a parsed JSON document.
    /// The serializer's `compression` (if set) is applied to the result.
    public func serialize(_ request: Request, parameters: Parameters?) throws -> Request {
        let r = try serializeParameters(request, parameters: parameters)
        return try compression?.apply(to: r) ?? r
    }

    func serializeParameters(_ request: Request, parameters: Parameters?) throws -> Request {
        var r = request
        for (name, value) in headers where r.headers.index(of: name) == nil {
            r.headers.set(name, value)
        }
        if encodesParametersInURI(r.method) || kind == .http {
            return try serializeAsForm(r, params: try parameters?.tree())
        }
        guard let parameters else { return r }
        switch kind {
        case .json:
            if r.headers["Content-Type"] == nil { r.headers.set("Content-Type", "application/json") }
            r.bodyBuffer = try parameters.json(options: jsonOptions)
        case .propertyList:
            if r.headers["Content-Type"] == nil { r.headers.set("Content-Type", "application/x-plist") }
            var out = ByteWriter(capacity: 256)
            try PropertyListWriter.write(try parameters.tree(), format: plistFormat, to: &out)
            r.bodyBuffer = try out.takeBuffer("the property list body")
        case .http:
            break
        }
        return r
    }

    /// The query string for `params` by the callback if set, else by the default algorithm.
    public func query(for request: Request, params: Value) throws -> String {
        guard let callback = queryCallback else { return try QueryString.make(params, style: queryStyle) }
        do {
            return try callback(request, params)
        } catch let e as AFSError where e.status == .queryCallback {
            throw e
        } catch {
            throw AFSError(.queryCallback, "the query callback failed: \(error)")
        }
    }

    /// AFHTTPRequestSerializer's rule: URI methods get the query in the URL; the others get
    /// it as an `application/x-www-form-urlencoded` body (empty without parameters).
    private func serializeAsForm(_ request: Request, params: Value?) throws -> Request {
        var r = request
        let q = try params.map { try query(for: r, params: $0) }
        if encodesParametersInURI(r.method) {
            if let q = q, !q.isEmpty {
                do {
                    r.url = try HTTPSyntax.intakeURL(HTTPSyntax.appendingQuery(q, to: r.url))
                } catch var e as AFSError {
                    e.message = "the query made the URL invalid: " + e.message
                    throw e
                }
            }
        } else {
            if r.headers["Content-Type"] == nil {
                r.headers.set("Content-Type", "application/x-www-form-urlencoded")
            }
            r.body = try stringEncoding.encode(q ?? "", what: "the query string")
        }
        return r
    }
}

/// A serializer's parameters: a tree, or a node of a parsed JSON document.
public enum Parameters: Sendable {
    case tree(Value)
    case document(JSONDocument, node: Int)

    /// The tree (a document's is built).
    /// - Throws: `.noMemory`.
    public func tree() throws -> Value {
        switch self {
        case .tree(let v): return v
        case .document(let d, let node): return try d.value(at: node)
        }
    }

    /// The JSON body in the writer's buffer: a document's node is written from its tape.
    /// - Throws: as `JSONWriter.write(_:options:to:)`.
    func json(options: JSONWritingOptions) throws -> ByteBuffer {
        var out = ByteWriter(capacity: 256)
        switch self {
        case .tree(let v): try JSONWriter.write(v, options: options, to: &out)
        case .document(let d, let node): try JSONWriter.write(d, node: node, options: options, to: &out)
        }
        return try out.takeBuffer("the JSON body")
    }
}
