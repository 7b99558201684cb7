// The content codings the library encodes (request bodies) and decodes (responses), with
// zlib, libzstd and libbrotli.
internal import CAFSerialization

/// A content coding (RFC 9110, 8.4.1): what the library applies to a request body
/// (Encoders.swift; C: the `coding` of `afs_request_set_content_encoding`) and decodes in a
/// response, as a content or a transfer coding (Decoders.swift, the response reader).
public enum ContentCoding: String, Sendable, CaseIterable {
    /// gzip (RFC 1952), zlib's deflate with a gzip wrapper.
    case gzip
    /// "deflate" as HTTP means it: the zlib format (RFC 1950), not raw deflate.
    case deflate
    /// Zstandard (RFC 8878).
    case zstd
    /// Brotli (RFC 7932).
    case br

    /// Parses a coding name (ASCII case-insensitive).
    public init?(name: String) {
        switch name.lowercased() {
        case "gzip": self = .gzip
        case "deflate": self = .deflate
        case "zstd": self = .zstd
        case "br": self = .br
        default: return nil
        }
    }

    /// The coding a header names by `token` (ASCII case-insensitive; `x-gzip` is gzip, RFC
    /// 9110 8.4.1.3). nil for an unknown one; `identity` is the caller's business.
    public init?(token: String) {
        if token.lowercased() == "x-gzip" { self = .gzip; return }
        self.init(name: token)
    }

    /// The level used for `level` 0: the library's own default (zlib 6, zstd 3, brotli 11).
    public var defaultLevel: Int32 {
        switch self {
        case .gzip, .deflate: return 6
        case .zstd: return 3
        case .br: return 11
        }
    }

    /// The accepted levels besides 0: zlib 1...9, zstd its negative fast levels to
    /// `ZSTD_maxCLevel()`, brotli qualities 1...11.
    public var levels: ClosedRange<Int32> {
        switch self {
        case .gzip, .deflate: return 1...9
        case .zstd: return Int32(ZSTD_minCLevel())...Int32(ZSTD_maxCLevel())
        case .br: return 1...11
        }
    }

    /// Checks `level` (0 = default) and returns the effective level.
    /// - Throws: `.invalidArgument` naming the accepted range.
    public func checkedLevel(_ level: Int32) throws(AFSError) -> Int32 {
        if level == 0 { return defaultLevel }
        guard levels.contains(level) else {
            throw AFSError(.invalidArgument, "level \(level) is not a \(rawValue) level (0 for the default \(defaultLevel), or \(levels.lowerBound)...\(levels.upperBound))")
        }
        return level
    }
}
