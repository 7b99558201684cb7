/// AFNetworking's text form of a scalar (its `description`), shared by query strings,
/// multipart fields and the JSON writer's numbers.
extension Value {
    /// Appends the text form of a scalar: string as is; integer in decimal; double as
    /// `formatDouble`; bool `1`/`0` (or `true`/`false` with `literalBools`); data as its raw
    /// bytes; date as ISO 8601 text (`DateText`; a date
    /// outside the years 1 to 9999 as its seconds since 1970). Null and containers append nothing.
    public func appendText(to out: inout ByteWriter, literalBools: Bool = false) {
        switch self {
        case .string(let s): out.append(s)
        case .int(let i): out.appendDecimal(i)
        case .double(let d): out.append(formatDouble(d))
        case .bool(let b):
            if literalBools { out.append(b ? "true" : "false") } else { out.append(b ? UInt8(ascii: "1") : UInt8(ascii: "0")) }
        case .data(let d): out.append(d)
        case .date(let t): out.append(DateText.iso8601(t) ?? formatDouble(t))
        case .null, .array, .set, .dict: break
        }
    }

    /// The text form as bytes (see `appendText`).
    /// - Throws: `AFSError` `.noMemory`.
    public func textBytes(literalBools: Bool = false) throws(AFSError) -> [UInt8] {
        var w = ByteWriter(capacity: 32)
        appendText(to: &w, literalBools: literalBools)
        return try w.toArray()
    }
}

/// Formats a double as Foundation does: Swift's shortest round-trip digits without a
/// trailing `.0` (`1.0` -> `1`, `1e16` -> `1e+16`, `1e-7` -> `1e-07`, `-0.0` -> `-0`,
/// NaN `nan`, infinities `inf` / `-inf`).
public func formatDouble(_ d: Double) -> String {
    if d.isNaN { return "nan" }
    let s = d.description
    if s.hasSuffix(".0") { return String(s.dropLast(2)) }
    return s
}
