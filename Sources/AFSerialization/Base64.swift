/// RFC 4648 base64 with padding (Basic auth, XML property-list data).
public enum Base64 {
    static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    /// Appends the base64 form of `bytes` to `out`.
    public static func encode(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout ByteWriter) {
        let a = alphabet.utf8Start
        let n = bytes.count
        guard out.reserve((n + 2) / 3 * 4) else { return }
        var i = 0
        while i + 3 <= n {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.put(a[Int(v >> 18)]); out.put(a[Int(v >> 12 & 63)]); out.put(a[Int(v >> 6 & 63)]); out.put(a[Int(v & 63)])
            i += 3
        }
        if n - i == 1 {
            let v = UInt32(bytes[i]) << 16
            out.put(a[Int(v >> 18)]); out.put(a[Int(v >> 12 & 63)]); out.put(UInt8(ascii: "=")); out.put(UInt8(ascii: "="))
        } else if n - i == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.put(a[Int(v >> 18)]); out.put(a[Int(v >> 12 & 63)]); out.put(a[Int(v >> 6 & 63)]); out.put(UInt8(ascii: "="))
        }
    }

    /// The base64 form of a string's UTF-8 bytes.
    /// - Throws: `AFSError` `.noMemory`.
    public static func encode(_ s: String) throws(AFSError) -> String {
        var s = s
        var out = ByteWriter(capacity: s.utf8.count * 4 / 3 + 4)
        s.withUTF8 { encode($0, to: &out) }
        return try out.toString()
    }
}
