/// Dates (`Value.date`, seconds since 1970-01-01T00:00:00Z) as ISO 8601 text and back.
///
/// Writing: `YYYY-MM-DDTHH:MM:SSZ` in UTC, with `.ffffff` (trailing zeros dropped) when the
/// date has fractional microseconds (rounded to the microsecond); years 1 to 9999 only
/// (NaN, infinities and dates outside have no text). Property-list XML `<date>` drops the
/// fraction (CoreFoundation and plistlib write whole seconds).
public enum DateText {
    /// Seconds from 1970-01-01 to 2001-01-01 (the binary plist epoch).
    public static let epoch2001: Double = 978_307_200

    /// ISO 8601 text for `seconds` since 1970; nil outside the years 1 to 9999.
    public static func iso8601(_ seconds: Double, fraction: Bool = true) -> String? {
        guard seconds.isFinite else { return nil }
        let s = fraction ? seconds : seconds.rounded(.down)
        // isoDate counts from 2001; whole seconds shift exactly, fractions within a microsecond.
        let whole = s.rounded(.down)
        let shifted = (whole - epoch2001) + (s - whole)
        return isoDate(shifted)
    }

    /// A date from ISO 8601 text as property lists hold it: `YYYY[-MM[-DD[THH[:MM[:SS[.f…]]]]]]Z`
    /// (CoreFoundation writes the full form; plistlib reads the shorter ones too, missing
    /// parts being the first month, day, hour…). nil when it is not that form or a field is
    /// out of range.
    public static func parse(_ b: some Collection<UInt8>) -> Double? {
        let u = Array(b)
        var i = 0
        func num(_ n: Int) -> Int? {
            guard u.count - i >= n else { return nil }
            var v = 0
            for k in 0..<n {
                let c = u[i + k]
                guard c >= 0x30 && c <= 0x39 else { return nil }
                v = v * 10 + Int(c - 0x30)
            }
            i += n
            return v
        }
        func sep(_ c: UInt8) -> Bool {
            if i < u.count && u[i] == c { i += 1; return true }
            return false
        }
        guard let year = num(4) else { return nil }
        var month = 1, day = 1, hour = 0, minute = 0, second = 0
        var frac = 0.0
        if sep(0x2D) {
            guard let m = num(2) else { return nil }
            month = m
            if sep(0x2D) {
                guard let d = num(2) else { return nil }
                day = d
                if sep(0x54) {
                    guard let h = num(2) else { return nil }
                    hour = h
                    if sep(0x3A) {
                        guard let mi = num(2) else { return nil }
                        minute = mi
                        if sep(0x3A) {
                            guard let s = num(2) else { return nil }
                            second = s
                            if sep(0x2E) {
                                var scale = 0.1, any = false
                                while i < u.count, u[i] >= 0x30 && u[i] <= 0x39 {
                                    frac += Double(u[i] - 0x30) * scale
                                    scale /= 10
                                    i += 1
                                    any = true
                                }
                                guard any else { return nil }
                            }
                        }
                    }
                }
            }
        }
        guard sep(0x5A), i == u.count else { return nil }
        guard year >= 1, (1...12).contains(month), hour < 24, minute < 60, second < 60 else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day >= 1 && day <= lengths[month - 1] else { return nil }
        let days = daysFromCivil(year, month, day)
        return Double(days * 86_400 + Int64(hour * 3600 + minute * 60 + second)) + frac
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int64 {
        let y = Int64(m <= 2 ? y0 - 1 : y0)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = Int64(m > 2 ? m - 3 : m + 9)
        let doy = (153 * mp + 2) / 5 + Int64(d) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
