/// Alamofire's response rules that AFNetworking users ask for: empty-response codes,
/// structured-syntax suffixes (RFC 6839), problem documents (RFC 9457) and the JSON XSSI
/// prefix. Each is off by default (AFNetworking's behaviour).
extension ResponseSerializer {
    /// Alamofire's `emptyResponseCodes`: with codes set, an empty body is no object (and no
    /// error) only for those status codes or a `HEAD` request; elsewhere an empty JSON, XML
    /// or property-list body is an error of that kind (`.invalidJSON`, `.invalidXML`,
    /// `.invalidPlist`) and an empty image body `.invalidImage`; an HTTP serializer still
    /// gives no object. nil or an empty list keeps AFNetworking's rule (every empty body is
    /// no object). On a compound serializer, sets them on every member.
    /// - Throws: `.invalidArgument` for a code outside 100...999.
    ///   C: `afs_response_serializer_set_empty_response_codes`.
    public mutating func setEmptyResponseCodes(_ codes: [Int]?) throws {
        var list: [Int]? = nil
        if let codes = codes, !codes.isEmpty {
            for (i, c) in codes.enumerated() where !(100...999).contains(c) {
                throw AFSError(.invalidArgument, "empty response code \(i) (\(c)) is not a status code (100 to 999)")
            }
            list = codes
        }
        emptyResponseCodes = list
        for i in members.indices { try members[i].setEmptyResponseCodes(list) }
    }

    /// RFC 6839 structured-syntax suffixes: with it on, a JSON serializer accepts any
    /// `type/name+json` and an XML serializer any `type/name+xml`, besides its acceptable
    /// types. On a compound serializer, sets it on every member.
    /// C: `afs_response_serializer_set_accepts_structured_suffix`.
    public mutating func setAcceptsStructuredSuffix(_ on: Bool) {
        acceptsStructuredSuffix = on
        for i in members.indices { members[i].setAcceptsStructuredSuffix(on) }
    }

    /// JSON: removes a leading XSSI prefix (`)]}'`, an optional `,`, then an optional
    /// newline, LF or CR LF) before decoding. Offsets in error messages count the prefix.
    /// On a compound serializer, sets it on every member.
    /// C: `afs_response_serializer_set_strips_xssi_prefix`.
    public mutating func setStripsXSSIPrefix(_ on: Bool) {
        stripsXSSIPrefix = on
        for i in members.indices { members[i].setStripsXSSIPrefix(on) }
    }

    /// The structured-syntax suffix of this kind ("+json" for JSON, "+xml" for XML: the
    /// XML kind is raw value 3), nil for the others.
    var structuredSuffix: String? {
        switch kind.rawValue {
        case 1: return "+json"
        case 3: return "+xml"
        default: return nil
        }
    }

    /// Whether `mime` (lowercase) is accepted by its structured-syntax suffix: the option is
    /// on, the type is `type/name+suffix` with a non-empty name.
    func acceptsBySuffix(_ mime: String?) -> Bool {
        guard acceptsStructuredSuffix, let m = mime, let suffix = structuredSuffix,
              ResponseSerializer.isMediaType(m) else { return false }
        let u = Array(m.utf8), s = Array(suffix.utf8)
        guard let slash = u.firstIndex(of: 0x2F), u.count - slash - 1 > s.count else { return false }
        return u.suffix(s.count).elementsEqual(s)
    }

    /// Whether `mime` (lowercase) is RFC 9457's problem document of this kind
    /// (`application/problem+json` for JSON, `application/problem+xml` for XML): accepted
    /// with an unacceptable status, so that the document is decoded and returned with the
    /// status error.
    func isProblemDocument(_ mime: String?) -> Bool {
        guard let m = mime, let suffix = structuredSuffix else { return false }
        return utf8Equal(m, "application/problem" + suffix)
    }

    /// Whether `statusCode` lies in the acceptable ranges.
    func statusAccepts(_ statusCode: Int) -> Bool {
        acceptableStatusCodes.map { $0.contains { $0.contains(statusCode) } } ?? true
    }

    /// The empty-body rule (see `setEmptyResponseCodes`): throws when an empty body is an
    /// error for this response.
    func checkEmptyBody(_ v: Validation, method: String?) throws {
        guard let codes = emptyResponseCodes else { return }
        if codes.contains(v.statusCode) { return }
        if let m = method, utf8Equal(asciiUppercased(m), "HEAD") { return }
        let why = "the body is empty: status \(v.statusCode) is not one of the empty-response codes (\(codes.map(String.init).joined(separator: ", "))) and the request is not HEAD"
        switch kind.rawValue {
        case 1: throw AFSError(.invalidJSON, "no JSON value: \(why)")
        case 2: throw AFSError(.invalidPlist, "no property list: \(why)")
        case 3: throw AFSError(.invalidXML, "no XML document: \(why)")
        case 4: throw AFSError(.invalidImage, "no image: \(why)")
        default: return
        }
    }

    /// `body` without its XSSI prefix when `stripsXSSIPrefix` is on and it has one.
    func withoutXSSIPrefix(_ body: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        guard stripsXSSIPrefix, kind == .json else { return body }
        let p: [UInt8] = [0x29, 0x5D, 0x7D, 0x27]  // )]}'
        guard body.count >= 4, body[0] == p[0], body[1] == p[1], body[2] == p[2], body[3] == p[3] else { return body }
        var i = 4
        if i < body.count && body[i] == 0x2C { i += 1 }
        if i < body.count && body[i] == 0x0D && i + 1 < body.count && body[i + 1] == 0x0A { i += 2 }
        else if i < body.count && body[i] == 0x0A { i += 1 }
        return UnsafeBufferPointer(rebasing: body[i...])
    }
}

/// ASCII letters uppercased, other characters kept.
func asciiUppercased(_ s: String) -> String {
    String(decoding: s.utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 & ~0x20 : $0 }, as: UTF8.self)
}
