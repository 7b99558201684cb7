extension ByteWriter {
    /// Appends one header line, `Name: value\r\n` (multipart part headers,
    /// `afs_serializer_copy_headers`). Names are tokens and values hold no CR, LF or NUL
    /// (checked where headers are set), so the lines split unambiguously.
    public mutating func appendHeaderLine(_ name: String, _ value: String) {
        append(name)
        append(": " as StaticString)
        append(value)
        append("\r\n" as StaticString)
    }
}
