/// AFHTTPResponseSerializer, AFJSONResponseSerializer, AFPropertyListResponseSerializer and
/// AFCompoundResponseSerializer in one value type: validation of the status code and the
/// MIME type, then decoding of the body by kind.
///
/// - HTTP: validates; the body is returned as `.data` (AFNetworking returns the `NSData`).
/// - JSON: accepts `application/json`, `text/json`, `text/javascript`; decodes with
///   `JSONParser` (UTF-8; a leading UTF-8 byte-order mark is skipped, as
///   NSJSONSerialization and Python's `json.loads` on bytes do).
/// - Property list: accepts `application/x-plist`; decodes XML and binary property lists
///   with `PropertyListReader`.
/// - XML: accepts `application/xml`, `text/xml`; decodes to a JsonML tree with
///   `XMLTreeBuilder` (XMLResponse.swift).
/// - Compound: an ordered list of the others; the first member whose validation passes
///   decodes the response; when none passes, the first member's outcome is the outcome.
///
/// A `ResponseSerializer` is a value: copies are independent, and one instance may be read
/// from many threads at once. C: `afs_response_serializer`.
public struct ResponseSerializer: Sendable {
    /// The kinds, as the C `afs_response_kind` enum. A compound serializer reports `.http`
    /// (AFCompoundResponseSerializer is an AFHTTPResponseSerializer) and `isCompound`.
    public enum Kind: Int32, Sendable {
        case http = 0, json = 1, propertyList = 2, xml = 3
        /// Images (`ImageResponse.swift`): the header read, the body handed back.
        case image = 4
    }

    public let kind: Kind
    /// The members of a compound serializer, in order; empty for the other kinds. Nested
    /// compound serializers are flattened into their members when combined (trying a
    /// compound member tries its members in order, and its outcome when none accepts is its
    /// first member's, so the flat list behaves the same).
    public internal(set) var members: [ResponseSerializer] = []
    /// Inclusive ranges of acceptable status codes; nil accepts any. Default `200...299`.
    public private(set) var acceptableStatusCodes: [ClosedRange<Int>]? = [200...299]
    /// Acceptable MIME types, lowercase; nil accepts any. Defaults by kind (see the type).
    public private(set) var acceptableContentTypes: [String]?
    /// JSON: drop null dictionary values and null array elements, recursively.
    public private(set) var removesKeysWithNullValues = false
    /// JSON: NSJSONReadingOptions; only `.fragmentsAllowed` changes anything.
    public private(set) var jsonReadingOptions: JSONReadingOptions = []
    /// JSON and property lists: the most a decoded tree may be charged (`DecodeBudget`); 0
    /// keeps the default, 64 × the body size + 1 MiB, and a larger value cannot raise it.
    public private(set) var maxDecodedBytes = 0
    /// Images: AFImageResponseSerializer's `imageScale` (default 1).
    public internal(set) var imageScale = 1.0
    /// Images: the most pixels an image may have (default 2^31).
    public internal(set) var maxImagePixels: UInt64 = 1 << 31
    /// Alamofire's empty-response codes; nil keeps AFNetworking's rule (see `ResponseRules.swift`).
    public internal(set) var emptyResponseCodes: [Int]? = nil
    /// RFC 6839: `*/*+json` accepted by JSON serializers, `*/*+xml` by XML ones.
    public internal(set) var acceptsStructuredSuffix = false
    /// JSON: a leading XSSI prefix `)]}'` (optional `,`, then a newline) is removed.
    public internal(set) var stripsXSSIPrefix = false

    /// Whether this is a compound serializer (AFCompoundResponseSerializer).
    public var isCompound: Bool { !members.isEmpty }

    /// A serializer of `kind` with AFNetworking's defaults. C: `afs_response_serializer_new`.
    public init(kind: Kind) {
        self.kind = kind
        switch kind {
        case .http: acceptableContentTypes = nil
        case .json: acceptableContentTypes = ["application/json", "text/json", "text/javascript"]
        case .propertyList: acceptableContentTypes = ["application/x-plist"]
        case .xml: acceptableContentTypes = ["application/xml", "text/xml"]
        case .image: acceptableContentTypes = ResponseSerializer.imageContentTypes
        }
    }

    /// AFCompoundResponseSerializer: tries `members` in order (each is copied; compound
    /// members are flattened).
    /// - Throws: `.invalidArgument` when `members` is empty.
    ///   C: `afs_response_serializer_new_compound`.
    public init(compound members: [ResponseSerializer]) throws {
        var flat: [ResponseSerializer] = []
        for m in members {
            if m.isCompound { flat.append(contentsOf: m.members) } else { flat.append(m) }
        }
        guard !flat.isEmpty else {
            throw AFSError(.invalidArgument, "a compound response serializer needs at least one member")
        }
        self.init(kind: .http)
        self.members = flat
    }

    // MARK: Configuration

    /// Sets the acceptable status codes (inclusive ranges); nil or an empty list accepts any
    /// status. On a compound serializer, sets them on every member.
    /// C: `afs_response_serializer_set_acceptable_status_codes`.
    public mutating func setAcceptableStatusCodes(_ ranges: [ClosedRange<Int>]?) {
        let r = (ranges?.isEmpty ?? true) ? nil : ranges
        acceptableStatusCodes = r
        for i in members.indices { members[i].setAcceptableStatusCodes(r) }
    }

    /// Sets the acceptable status codes from `(first, last)` pairs (see the other overload).
    /// - Throws: `.invalidArgument` naming the first pair whose `first` exceeds its `last`.
    public mutating func setAcceptableStatusCodes(_ pairs: [(first: Int, last: Int)]) throws {
        var ranges: [ClosedRange<Int>] = []
        for (i, p) in pairs.enumerated() {
            guard p.first <= p.last else {
                throw AFSError(.invalidArgument,
                               "acceptable status code range \(i) is empty: first \(p.first) is greater than last \(p.last)")
            }
            ranges.append(p.first...p.last)
        }
        setAcceptableStatusCodes(ranges)
    }

    /// Sets the acceptable MIME types (compared case-insensitively, without parameters); nil
    /// or an empty list accepts any type. On a compound serializer, sets them on every
    /// member.
    /// - Throws: `.invalidArgument` for an entry that is not `type/subtype` (two RFC 9110
    ///   tokens, no parameters, no spaces). C: `afs_response_serializer_set_acceptable_content_types`.
    public mutating func setAcceptableContentTypes(_ types: [String]?) throws {
        var list: [String]? = nil
        if let types = types, !types.isEmpty {
            var out: [String] = []
            var seen = Set<ByteKey>()  // deduped through a set: linear in the list
            for (i, t) in types.enumerated() {
                guard ResponseSerializer.isMediaType(t) else {
                    throw AFSError(.invalidArgument,
                                   "acceptable content type \(i) \(HTTPSyntax.quote(t)) is not a MIME type of the form type/subtype without parameters")
                }
                let lower = asciiLowercased(t)
                if seen.insert(ByteKey(lower)).inserted { out.append(lower) }
            }
            list = out
        }
        acceptableContentTypes = list
        for i in members.indices { try members[i].setAcceptableContentTypes(list) }
    }

    /// AFJSONResponseSerializer's `removesKeysWithNullValues` (default off). On a compound
    /// serializer, sets it on every member.
    /// C: `afs_response_serializer_set_removes_keys_with_null_values`.
    public mutating func setRemovesKeysWithNullValues(_ on: Bool) {
        removesKeysWithNullValues = on
        for i in members.indices { members[i].setRemovesKeysWithNullValues(on) }
    }

    /// AFJSONResponseSerializer's `readingOptions` (default none: the top level must be an
    /// object or an array). On a compound serializer, sets them on every member.
    /// - Throws: `.invalidArgument` for option bits other than mutable containers (1),
    ///   mutable leaves (2) — accepted, meaningless here — and fragments allowed (4).
    ///   C: `afs_response_serializer_set_json_reading_options`.
    public mutating func setJSONReadingOptions(_ options: JSONReadingOptions) throws {
        let unknown = options.rawValue & ~JSONReadingOptions.known.rawValue
        guard unknown == 0 else {
            throw AFSError(.invalidArgument,
                           "unsupported JSON reading options 0x\(String(unknown, radix: 16)) (supported: 1 mutable containers, 2 mutable leaves, 4 fragments allowed)")
        }
        jsonReadingOptions = options
        for i in members.indices { try members[i].setJSONReadingOptions(options) }
    }

    /// Lowers the decoding limit (see `maxDecodedBytes`; 0 restores the default). On a
    /// compound serializer, sets it on every member.
    /// C: `afs_response_serializer_set_max_decoded_bytes`.
    public mutating func setMaxDecodedBytes(_ n: Int) {
        maxDecodedBytes = Swift.max(n, 0)
        for i in members.indices { members[i].setMaxDecodedBytes(n) }
    }

    // MARK: Validation

    /// `validateResponse:data:error:`: checks the MIME type (when acceptable types are set;
    /// an absent Content-Type with an empty body passes) and the status code.
    /// - Parameters:
    ///   - statusCode: the response's status code.
    ///   - contentType: the Content-Type header value (parameters are ignored), nil when
    ///     absent.
    ///   - body: the response body.
    /// - Throws: `.unacceptableStatus` ("Request failed: not found (404)"; when the MIME type
    ///   is unacceptable too, the message says so after a `;`) or `.unacceptableContentType`
    ///   ("Request failed: unacceptable content-type: text/html"). A compound serializer
    ///   passes when one member passes; otherwise it throws the error of its first member
    ///   that accepts the MIME type, or else of its first member.
    ///   C: `afs_response_validate`.
    public func validate(statusCode: Int, contentType: String?, body: UnsafeBufferPointer<UInt8>) throws {
        let mime = ResponseSerializer.mimeType(of: contentType)
        if let e = validation(statusCode, mime, body.count).error { throw e }
    }

    /// `validate(statusCode:contentType:body:)` on an array.
    public func validate(statusCode: Int, contentType: String?, body: [UInt8]) throws {
        try body.withUnsafeBufferPointer { try validate(statusCode: statusCode, contentType: contentType, body: $0) }
    }

    /// The outcome of `validation`: which checks failed.
    struct Validation {
        var error: AFSError?
        /// The MIME type was refused: nothing is decoded.
        var contentTypeRefused = false
        /// The response's MIME type and status code (for the decoders and the empty rule).
        var mime: String? = nil
        var statusCode = 0
    }

    func validation(_ statusCode: Int, _ mime: String?, _ bodyCount: Int) -> Validation {
        if isCompound {
            return members[fallbackMember(statusCode, mime, bodyCount)].validation(statusCode, mime, bodyCount)
        }
        var typeMessage: String? = nil
        if let types = acceptableContentTypes, !(mime == nil && bodyCount == 0) {
            let lower = mime.map(asciiLowercased)
            if !types.contains(where: { t in lower.map { utf8Equal($0, t) } ?? false }),
               !acceptsBySuffix(lower), !(isProblemDocument(lower) && !statusAccepts(statusCode)) {
                typeMessage = "unacceptable content-type: " + (mime.map(ResponseSerializer.printable) ?? "(none)")
            }
        }
        if !statusAccepts(statusCode) {
            var m = "Request failed: \(HTTPStatus.reasonPhrase(statusCode)) (\(statusCode))"
            if let t = typeMessage { m += "; " + t }
            return Validation(error: AFSError(.unacceptableStatus, m), contentTypeRefused: typeMessage != nil,
                              mime: mime, statusCode: statusCode)
        }
        if let t = typeMessage {
            return Validation(error: AFSError(.unacceptableContentType, "Request failed: " + t), contentTypeRefused: true,
                              mime: mime, statusCode: statusCode)
        }
        return Validation(mime: mime, statusCode: statusCode)
    }

    /// The member of a compound serializer that handles a response: the first whose
    /// validation passes; when none passes, the first that accepts the MIME type (so that
    /// an error document with an unacceptable status is decoded by the member that
    /// understands it, as AFNetworking's first non-nil response object would be); when none
    /// does, the first member.
    func fallbackMember(_ statusCode: Int, _ mime: String?, _ bodyCount: Int) -> Int {
        var firstTypeAccepted: Int? = nil
        for (i, m) in members.enumerated() {
            let v = m.validation(statusCode, mime, bodyCount)
            if v.error == nil { return i }
            if firstTypeAccepted == nil && !v.contentTypeRefused { firstTypeAccepted = i }
        }
        return firstTypeAccepted ?? 0
    }

    // MARK: Decoding

    /// What `responseObject(statusCode:contentType:body:)` gives: a value, an error, or both
    /// (on an unacceptable status the body is still decoded: the server's error document).
    public struct Outcome: Sendable {
        public var value: Value?
        public var error: AFSError?
    }

    /// `responseObjectForResponse:data:error:`: validates, then decodes the body.
    ///
    /// - An unacceptable MIME type: nothing is decoded (`value` nil).
    /// - An unacceptable status: the body is decoded as if it were acceptable and returned
    ///   with the `.unacceptableStatus` error; when it cannot be decoded, the decoding error
    ///   is added to the message after a `;` and `value` is nil.
    /// - An empty body gives no value and no error; so does a body of a single space for
    ///   JSON and property lists (AFNetworking's rule for `head :ok` responses).
    /// - HTTP: the body as `.data`. JSON: `JSONParser` with the reading options (errors
    ///   `.invalidJSON` naming the byte offset), then null removal when enabled. Property
    ///   list: `PropertyListReader` (errors `.invalidPlist` naming the byte offset).
    ///
    /// C: `afs_response_object`.
    /// - Parameter method: the request's method (a `HEAD` request's empty body is no
    ///   object under the empty-response codes rule); nil for unknown.
    public func responseObject(statusCode: Int, contentType: String?, body: UnsafeBufferPointer<UInt8>,
                               method: String? = nil) -> Outcome {
        let (leaf, v) = decodingLeaf(statusCode, contentType, body.count)
        return leaf.decode(v, body, method: method)
    }

    /// The serializer that decodes a response (a compound's chosen member, else this one)
    /// and its validation of the response.
    func decodingLeaf(_ statusCode: Int, _ contentType: String?, _ bodyCount: Int) -> (ResponseSerializer, Validation) {
        let mime = ResponseSerializer.mimeType(of: contentType)
        let leaf = isCompound ? members[fallbackMember(statusCode, mime, bodyCount)] : self
        return (leaf, leaf.validation(statusCode, mime, bodyCount))
    }

    /// Whether this leaf decodes JSON as the text is, so that the result can be made
    /// straight from the text (a `JSONDocument`, a pickle): a JSON serializer without
    /// `removesKeysWithNullValues`, with the default decoding limit (which JSON text cannot
    /// reach: a caller-lowered one takes the tree path, which charges it), for a body whose
    /// content type was accepted.
    func readsJSONAsIs(_ v: Validation) -> Bool {
        kind == .json && !removesKeysWithNullValues && maxDecodedBytes == 0 && !v.contentTypeRefused
    }

    /// `responseObject(statusCode:contentType:body:)` with a JSON body kept as the parsed
    /// `JSONDocument` wherever its tree would be the document as it is: a JSON serializer
    /// without `removesKeysWithNullValues` and with the default decoding limit (which JSON
    /// text cannot reach), and an XML body as its JsonML tree built straight into a document
    /// (`XMLTapeBuilder`). Other bodies come as trees, and so do the errors: a malformed
    /// text is read again on the tree path, which words them. C: `afs_response_object`.
    public func responseParameters(statusCode: Int, contentType: String?, body: UnsafeBufferPointer<UInt8>,
                                   method: String? = nil) -> (parameters: Parameters?, error: AFSError?)
    {
        let (leaf, v) = decodingLeaf(statusCode, contentType, body.count)
        if leaf.readsJSONAsIs(v) && !body.isEmpty {
            let unprefixed = leaf.withoutXSSIPrefix(body)
            if unprefixed.count == 1 && unprefixed[0] == 0x20 { return (nil, v.error) }
            let bom = unprefixed.count >= 3 && unprefixed[0] == 0xEF && unprefixed[1] == 0xBB && unprefixed[2] == 0xBF
            let text = bom ? UnsafeBufferPointer(rebasing: unprefixed[3...]) : unprefixed
            if let d = try? JSONDocument.parse(text, allowFragments: leaf.jsonReadingOptions.contains(.fragmentsAllowed)) {
                return (.document(d, node: 0), v.error)
            }
        }
        if leaf.kind == .xml && !body.isEmpty && !v.contentTypeRefused,
           let d = try? XMLTapeBuilder.parse(body, maxExpandedBytes: DecodeBudget.limit(bodySize: body.count, max: leaf.maxDecodedBytes)) {
            return (.document(d, node: 0), v.error)
        }
        let r = leaf.decode(v, body, method: method)
        return (r.value.map(Parameters.tree), r.error)
    }

    /// `responseObject(statusCode:contentType:body:)` on an array.
    public func responseObject(statusCode: Int, contentType: String?, body: [UInt8], method: String? = nil) -> Outcome {
        body.withUnsafeBufferPointer { responseObject(statusCode: statusCode, contentType: contentType, body: $0, method: method) }
    }

    /// Decodes the body of a leaf serializer after `validation`.
    func decode(_ v: Validation, _ body: UnsafeBufferPointer<UInt8>, method: String? = nil) -> Outcome {
        if v.contentTypeRefused { return Outcome(value: nil, error: v.error) }
        do {
            if body.isEmpty { try checkEmptyBody(v, method: method) }
            let value = try decodeBody(body, mime: v.mime)
            return Outcome(value: value, error: v.error)
        } catch {
            let e = (error as? AFSError) ?? AFSError(.invalidArgument, "\(error)")
            guard var outer = v.error else { return Outcome(value: nil, error: e) }
            outer.message += "; the body could not be decoded: \(e.message)"
            return Outcome(value: nil, error: outer)
        }
    }

    /// The body decoded by kind, without validation. nil for no object.
    func decodeBody(_ body: UnsafeBufferPointer<UInt8>, mime: String? = nil) throws -> Value? {
        if body.isEmpty { return nil }
        switch kind {
        case .http:
            try Memory.probe(body.count, "a copy of the \(body.count)-byte body")
            return .data(Array(body))
        case .json:
            let prefixed = body
            let body = withoutXSSIPrefix(prefixed)
            if body.count == 1 && body[0] == 0x20 { return nil }
            var v = try ResponseSerializer.parseJSON(body, prefix: prefixed.count - body.count, allowFragments: jsonReadingOptions.contains(.fragmentsAllowed),
                                                     maxDecodedBytes: DecodeBudget.limit(bodySize: body.count, max: maxDecodedBytes))
            if removesKeysWithNullValues, let stripped = try ResponseSerializer.removingNulls(v) { v = stripped }
            return v
        case .propertyList:
            if body.count == 1 && body[0] == 0x20 { return nil }
            return try PropertyListReader.parse(body, maxDecodedBytes: maxDecodedBytes)
        case .xml:
            // The decoding limit bounds expanded entity text and the tree (XMLResponse.swift).
            return try XMLTreeBuilder.parse(body, maxExpandedBytes: DecodeBudget.limit(bodySize: body.count, max: maxDecodedBytes))
        case .image:
            return try decodeImage(body, mime: mime)
        }
    }

    /// JSON text to a value; a leading UTF-8 byte-order mark is skipped (offsets in error
    /// messages still count it).
    static func parseJSON(_ body: UnsafeBufferPointer<UInt8>, prefix: Int, allowFragments: Bool, maxDecodedBytes: Int = Int.max) throws -> Value {
        guard prefix > 0 else { return try parseJSON(body, allowFragments: allowFragments, maxDecodedBytes: maxDecodedBytes) }
        do {
            return try parseJSON(body, allowFragments: allowFragments, maxDecodedBytes: maxDecodedBytes)
        } catch var e as AFSError {
            e.message = shiftingOffsets(in: e.message, by: prefix)
            throw e
        }
    }

    static func parseJSON(_ body: UnsafeBufferPointer<UInt8>, allowFragments: Bool, maxDecodedBytes: Int = Int.max) throws -> Value {
        let bom = body.count >= 3 && body[0] == 0xEF && body[1] == 0xBB && body[2] == 0xBF
        guard bom else { return try JSONParser.parse(body, allowFragments: allowFragments, maxDecodedBytes: maxDecodedBytes) }
        let rest = UnsafeBufferPointer(rebasing: body[3...])
        if rest.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            throw AFSError(.invalidJSON, "no JSON value: the input is only a byte order mark and whitespace at byte offset \(body.count)")
        }
        do {
            return try JSONParser.parse(rest, allowFragments: allowFragments, maxDecodedBytes: maxDecodedBytes)
        } catch var e as AFSError {
            e.message = shiftingOffsets(in: e.message, by: 3)
            throw e
        }
    }

    /// `removesKeysWithNullValues`: null dictionary values and null array elements removed,
    /// recursively (sets and scalars are kept as they are). nil when nothing changes, so an
    /// untouched subtree is shared, not rebuilt. The readers limit nesting to 512 levels,
    /// which bounds the recursion.
    /// - Throws: `AFSError` `.noMemory` when a tree nested 32 levels or more cannot get its
    ///   large stack (see `LargeStack`).
    public static func removingNulls(_ v: Value, depth: Int = 0) throws -> Value? {
        if depth == LargeStack.hopDepth && v.isContainer {
            return try LargeStack.run { try removingNullsHere(v, depth: depth) }
        }
        return try removingNullsHere(v, depth: depth)
    }

    static func removingNullsHere(_ v: Value, depth: Int) throws -> Value? {
        switch v {
        case .array(let a):
            var out: [Value]? = nil
            for (i, x) in a.enumerated() {
                if case .null = x {
                    if out == nil { out = Array(a[..<i]) }
                    continue
                }
                if let y = try removingNulls(x, depth: depth + 1) {
                    if out == nil { out = Array(a[..<i]) }
                    out!.append(y)
                } else {
                    out?.append(x)
                }
            }
            return out.map { .array($0) }
        case .dict(let d):
            var changed = false
            var pairs: [(String, Value)] = []
            for (i, (k, x)) in d.pairs.enumerated() {
                if case .null = x {
                    if !changed { changed = true; pairs = Array(zip(d.keys[..<i], d.values[..<i])) }
                    continue
                }
                if let y = try removingNulls(x, depth: depth + 1) {
                    if !changed { changed = true; pairs = Array(zip(d.keys[..<i], d.values[..<i])) }
                    pairs.append((k, y))
                } else if changed {
                    pairs.append((k, x))
                }
            }
            return changed ? .dict(ValueDict(pairs)) : nil
        default:
            return nil
        }
    }

    // MARK: MIME types

    /// The MIME type of a Content-Type header value: the text before the first `;`, without
    /// surrounding spaces and tabs; nil when the header is absent or that text is empty.
    public static func mimeType(of contentType: String?) -> String? {
        guard let ct = contentType else { return nil }
        var u = Substring(ct).utf8
        if let semi = u.firstIndex(of: UInt8(ascii: ";")) { u = u[..<semi] }
        while let f = u.first, f == 0x20 || f == 0x09 { u = u.dropFirst() }
        while let l = u.last, l == 0x20 || l == 0x09 { u = u.dropLast() }
        return u.isEmpty ? nil : String(Substring(u))
    }

    /// `type/subtype`: two non-empty RFC 9110 tokens.
    static func isMediaType(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard let slash = u.firstIndex(of: UInt8(ascii: "/")), slash > 0, slash < u.count - 1 else { return false }
        return u[..<slash].allSatisfy(HTTPSyntax.isTokenChar) && u[(slash + 1)...].allSatisfy(HTTPSyntax.isTokenChar)
    }

    /// `s` with control characters shown as `\xNN`, for messages.
    static func printable(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return s }
        var out = ""
        for c in s.unicodeScalars {
            if c.value < 0x20 || c.value == 0x7F {
                let h = String(c.value, radix: 16, uppercase: true)
                out += "\\x" + (c.value < 16 ? "0" : "") + h
            } else {
                out.unicodeScalars.append(c)
            }
        }
        return out
    }
}

/// NSJSONReadingOptions. C: `AFS_JSON_READING_FRAGMENTS_ALLOWED` and
/// `afs_response_serializer_set_json_reading_options`.
public struct JSONReadingOptions: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Accepted for compatibility; values are always new trees here.
    public static let mutableContainers = JSONReadingOptions(rawValue: 1)
    /// Accepted for compatibility; values are always new trees here.
    public static let mutableLeaves = JSONReadingOptions(rawValue: 2)
    /// A scalar (string, number, true, false, null) may be the top-level value.
    public static let fragmentsAllowed = JSONReadingOptions(rawValue: 4)

    static let known: JSONReadingOptions = [.mutableContainers, .mutableLeaves, .fragmentsAllowed]
}

/// ASCII letters lowercased, other characters kept.
func asciiLowercased(_ s: String) -> String {
    guard s.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return s }
    return String(decoding: s.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
}

/// Every "byte offset N" in `message` with N increased by `delta`.
func shiftingOffsets(in message: String, by delta: Int) -> String {
    mappingOffsets(in: message) { $0 + delta }
}

/// Every "byte offset N" in `message` with N replaced by `map(N)`.
func mappingOffsets(in message: String, _ map: (Int) -> Int) -> String {
    let marker = Array("byte offset ".utf8)
    let m = Array(message.utf8)
    var out: [UInt8] = []
    var i = 0
    while i < m.count {
        if m.count - i >= marker.count && m[i..<(i + marker.count)].elementsEqual(marker) {
            out.append(contentsOf: marker)
            i += marker.count
            var j = i, n = 0
            while j < m.count, m[j] >= 0x30, m[j] <= 0x39 { n = n * 10 + Int(m[j] - 0x30); j += 1 }
            if j > i { out.append(contentsOf: String(map(n)).utf8); i = j }
        } else {
            out.append(m[i])
            i += 1
        }
    }
    return String(decoding: out, as: UTF8.self)
}
