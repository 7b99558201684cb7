/// Reference resolution (RFC 3986 section 5.2) and AFHTTPSessionManager's base URL.
public enum URLResolve {
    /// RFC 3986 section 5.2.2 (strict: a reference with a scheme is taken as absolute even
    /// when it equals the base's) with section 5.2.3 merge and 5.2.4 `remove_dot_segments`.
    /// `base` must be absolute; its fragment is ignored.
    /// - Throws: `.noMemory` when the merged path cannot be allocated.
    public static func resolve(_ r: URIReference, against base: URIReference) throws(AFSError) -> URIReference {
        // remove_dot_segments holds the merged path three times (input, output, string)
        try Memory.probe(3 * (base.path.utf8.count + r.path.utf8.count) + 64, "the resolved URL's path")
        var t = URIReference()
        if r.scheme != nil {
            t.scheme = r.scheme
            t.userinfo = r.userinfo; t.host = r.host; t.port = r.port
            t.path = removeDotSegments(r.path)
            t.query = r.query
        } else {
            if r.hasAuthority {
                t.userinfo = r.userinfo; t.host = r.host; t.port = r.port
                t.path = removeDotSegments(r.path)
                t.query = r.query
            } else {
                if r.path.isEmpty {
                    t.path = base.path
                    t.query = r.query ?? base.query
                } else {
                    if r.path.utf8.first == UInt8(ascii: "/") {
                        t.path = removeDotSegments(r.path)
                    } else {
                        t.path = removeDotSegments(merge(base, r.path))
                    }
                    t.query = r.query
                }
                t.userinfo = base.userinfo; t.host = base.host; t.port = base.port
            }
            t.scheme = base.scheme
        }
        t.fragment = r.fragment
        return t
    }

    /// Section 5.2.3.
    static func merge(_ base: URIReference, _ path: String) -> String {
        if base.hasAuthority && base.path.isEmpty { return "/" + path }
        let b = Array(base.path.utf8)
        guard let slash = b.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(decoding: b[...slash], as: UTF8.self) + path
    }

    /// Section 5.2.4, on bytes.
    public static func removeDotSegments(_ path: String) -> String {
        var input = Array(path.utf8)[...]
        var output: [UInt8] = []
        let dot = UInt8(ascii: "."), slash = UInt8(ascii: "/")
        func starts(_ p: String) -> Bool { input.starts(with: p.utf8) }
        func removeLastSegment() {
            if let k = output.lastIndex(of: slash) { output.removeSubrange(k...) } else { output.removeAll() }
        }
        while !input.isEmpty {
            if starts("../") {
                input = input.dropFirst(3)
            } else if starts("./") {
                input = input.dropFirst(2)
            } else if starts("/./") {
                input = input.dropFirst(2)
            } else if input.elementsEqual([slash, dot]) {
                input = [slash][...]
            } else if starts("/../") {
                input = input.dropFirst(3)
                removeLastSegment()
            } else if input.elementsEqual([slash, dot, dot]) {
                input = [slash][...]
                removeLastSegment()
            } else if input.elementsEqual([dot]) || input.elementsEqual([dot, dot]) {
                input = []
            } else {
                var k = input.startIndex
                if input[k] == slash { k += 1 }
                while k < input.endIndex && input[k] != slash { k += 1 }
                output.append(contentsOf: input[..<k])
                input = input[k...]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `afs_url_resolve`: intake of both strings, then section 5.2 strictly.
    /// - Throws: `.badURL` for a base that is not absolute or either string refused by intake.
    public static func resolve(_ reference: String, base: String) throws -> String {
        let b = try URIReference.parseAbsolute(base, what: "base URL", baseHint: "the base URL must be absolute")
        let r = try URIReference.parse(reference, what: "reference")
        return try resolve(r, against: b).checkedText()
    }

    /// AFHTTPSessionManager's `initWithBaseURL:` rule: a base whose path is not empty and does
    /// not end in `/` gets one, so that `users` resolves below it.
    public static func sessionBase(_ base: URIReference) -> URIReference {
        var b = base
        if !b.path.isEmpty && b.path.utf8.last != UInt8(ascii: "/") { b.path += "/" }
        return b
    }
}
