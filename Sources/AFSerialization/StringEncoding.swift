/// The character encoding of form bodies and multipart field values (AFNetworking's
/// `stringEncoding`). C: `afs_string_encoding`.
public enum StringEncoding: Int32, Sendable {
    case utf8 = 0, ascii = 1, isoLatin1 = 2

    public var name: String {
        switch self {
        case .utf8: return "UTF-8"
        case .ascii: return "ASCII"
        case .isoLatin1: return "ISO-8859-1"
        }
    }

    /// Encodes `s`. Text the encoding cannot represent is an error, never dropped.
    /// - Throws: `.encoding` naming `what`, the character and its offset.
    public func encode(_ s: String, what: @autoclosure () -> String) throws -> [UInt8] {
        switch self {
        case .utf8:
            return Array(s.utf8)
        case .ascii, .isoLatin1:
            let limit: UInt32 = self == .ascii ? 0x7F : 0xFF
            var out = [UInt8]()
            out.reserveCapacity(s.utf8.count)
            var offset = 0
            for scalar in s.unicodeScalars {
                guard scalar.value <= limit else {
                    throw AFSError(.encoding, "\(what()) cannot be encoded as \(name): U+\(String(scalar.value, radix: 16, uppercase: true)) at byte offset \(offset)")
                }
                out.append(UInt8(scalar.value))
                offset += scalar.utf8.count
            }
            return out
        }
    }
}
