internal import CAFSerialization  // the header: AFS_VERSION_* (the one place the version is written)

/// The headers every serializer starts with (AFHTTPRequestSerializer's `init`):
/// `Accept-Language` from the locale environment and `User-Agent` from the program and `uname`.
public enum DefaultHeaders {
    /// `Accept-Language` from `LANGUAGE` (a `:` list), else the first set of `LC_ALL`,
    /// `LC_MESSAGES`, `LANG`: encoding and modifier stripped, `_` -> `-`, `C`/`POSIX`/unset
    /// -> `en`; at most six, `fr-FR;q=1, de;q=0.9, …`.
    public static func acceptLanguage(environment get: (String) -> String? = environment) -> String {
        var raw: [String] = []
        if let list = get("LANGUAGE"), !list.isEmpty {
            raw = list.split(separator: ":").map(String.init)
        } else {
            for name in ["LC_ALL", "LC_MESSAGES", "LANG"] {
                if let v = get(name), !v.isEmpty { raw = [v]; break }
            }
        }
        var tags: [String] = []
        for r in raw {
            let tag = languageTag(r)
            if !tag.isEmpty && !tags.contains(tag) { tags.append(tag) }
            if tags.count == 6 { break }
        }
        if tags.isEmpty { tags = ["en"] }
        return tags.enumerated().map { i, t in "\(t);q=\(qValue(i))" }.joined(separator: ", ")
    }

    /// `fr_FR.UTF-8@euro` -> `fr-FR`; `C`, `POSIX` -> `en`; keeps printable ASCII only.
    static func languageTag(_ locale: String) -> String {
        var s = Substring(locale)
        if let cut = s.firstIndex(where: { $0 == "." || $0 == "@" }) { s = s[..<cut] }
        if s == "C" || s == "POSIX" { return "en" }
        return String(String.UnicodeScalarView(s.unicodeScalars.compactMap { u -> Unicode.Scalar? in
            if u == "_" { return "-" }
            return (u.isASCII && (u.properties.isAlphabetic || ("0"..."9").contains(u) || u == "-")) ? u : nil
        }))
    }

    /// AFNetworking's `%0.1g` of 1 - 0.1 i: "1", "0.9", …, "0.5".
    static func qValue(_ i: Int) -> String { i == 0 ? "1" : "0.\(10 - i)" }

    /// `<program> (<sysname> <release>; <machine>) AFSerialization/<version>`, printable ASCII.
    public static func userAgent() -> String {
        var u = utsname()
        var sys = "", rel = "", mach = ""
        if uname(&u) == 0 {
            sys = cString(&u.sysname); rel = cString(&u.release); mach = cString(&u.machine)
        }
        let ua = "\(programName()) (\(sys) \(rel); \(mach)) AFSerialization/\(AFSVersion.string)"
        return String(String.UnicodeScalarView(ua.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }))
    }

    /// The executable's file name (`/proc/self/exe`), else "unknown".
    static func programName() -> String {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        guard n > 0 else { return "unknown" }
        let path = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.split(separator: "/").last.map(String.init) ?? "unknown"
    }

    private static func cString<T>(_ field: inout T) -> String {
        withUnsafeBytes(of: &field) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    public static func environment(_ name: String) -> String? {
        guard let p = getenv(name) else { return nil }
        return String(cString: p)
    }
}

/// The library version, read from the header's `AFS_VERSION_*` macros (the one place it is
/// written). C: `afs_version`, `afs_version_number`.
public enum AFSVersion {
    public static let major = Int(AFS_VERSION_MAJOR), minor = Int(AFS_VERSION_MINOR), patch = Int(AFS_VERSION_PATCH)
    public static let number = major * 10000 + minor * 100 + patch
    public static let string = "\(major).\(minor).\(patch)"
}
