/// The MIME type of a file from its extension, as AFNetworking's
/// `AFContentTypeForPathExtension` answers with Apple's UTType database: a built-in table
/// first (authoritative), then `/etc/mime.types` when present, then
/// `application/octet-stream`. Extensions compare case-insensitively.
public enum MIMETypes {
    /// The built-in table: what Apple's UTType answers for common extensions. `.cer` is
    /// `application/x-x509-ca-cert`, as AFNetworking's tests expect.
    public static let builtIn: [String: String] = [
        "png": "image/png",
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "gif": "image/gif",
        "webp": "image/webp",
        "heic": "image/heic",
        "heif": "image/heif",
        "svg": "image/svg+xml",
        "tif": "image/tiff",
        "tiff": "image/tiff",
        "bmp": "image/bmp",
        "ico": "image/vnd.microsoft.icon",
        "txt": "text/plain",
        "text": "text/plain",
        "html": "text/html",
        "htm": "text/html",
        "css": "text/css",
        "js": "text/javascript",
        "json": "application/json",
        "xml": "application/xml",
        "csv": "text/csv",
        "rtf": "text/rtf",
        "pdf": "application/pdf",
        "zip": "application/zip",
        "gz": "application/x-gzip",
        "tgz": "application/x-gzip",
        "tar": "application/x-tar",
        "mp3": "audio/mpeg",
        "m4a": "audio/x-m4a",
        "aac": "audio/aac",
        "wav": "audio/vnd.wave",
        "mp4": "video/mp4",
        "m4v": "video/x-m4v",
        "mov": "video/quicktime",
        "cer": "application/x-x509-ca-cert",
        "plist": "application/x-plist",
        // Microsoft Office
        "doc": "application/msword",
        "dot": "application/msword",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "dotx": "application/vnd.openxmlformats-officedocument.wordprocessingml.template",
        "docm": "application/vnd.ms-word.document.macroEnabled.12",
        "xls": "application/vnd.ms-excel",
        "xlt": "application/vnd.ms-excel",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "xltx": "application/vnd.openxmlformats-officedocument.spreadsheetml.template",
        "xlsm": "application/vnd.ms-excel.sheet.macroEnabled.12",
        "ppt": "application/vnd.ms-powerpoint",
        "pps": "application/vnd.ms-powerpoint",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "ppsx": "application/vnd.openxmlformats-officedocument.presentationml.slideshow",
        "potx": "application/vnd.openxmlformats-officedocument.presentationml.template",
        "pptm": "application/vnd.ms-powerpoint.presentation.macroEnabled.12",
    ]

    /// The fallback for unknown extensions.
    public static let octetStream = "application/octet-stream"

    /// The MIME type for a file name or path: by its extension (the text after the last `.`
    /// of the last path component), `application/octet-stream` when it has none or it is
    /// unknown.
    public static func forFilename(_ filename: String) -> String {
        let last = filename.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        guard let dot = last.lastIndex(of: "."), last.index(after: dot) != last.endIndex else {
            return octetStream
        }
        return forExtension(String(last[last.index(after: dot)...]))
    }

    /// The MIME type for an extension (without the dot), case-insensitively.
    public static func forExtension(_ ext: String) -> String {
        let e = asciiLowercased(ext)
        if let t = builtIn[e] { return t }
        if let t = SystemTable.shared.types[e] { return t }
        return octetStream
    }

    static func asciiLowercased(_ s: String) -> String {
        String(decoding: s.utf8.map { $0 >= 65 && $0 <= 90 ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// `/etc/mime.types`, read once on first use: lines `type ext ext …`, `#` comments.
    final class SystemTable: Sendable {
        static let shared = SystemTable(path: "/etc/mime.types")
        let types: [String: String]

        init(path: String) {
            var table: [String: String] = [:]
            if let bytes = SystemTable.readFile(path) {
                for line in bytes.split(separator: UInt8(ascii: "\n")) {
                    if line.first == UInt8(ascii: "#") { continue }
                    let words = line.split { $0 == 32 || $0 == 9 || $0 == 13 }
                    guard words.count >= 2 else { continue }
                    let type = String(decoding: words[0], as: UTF8.self)
                    for w in words.dropFirst() {
                        let ext = MIMETypes.asciiLowercased(String(decoding: w, as: UTF8.self))
                        if table[ext] == nil { table[ext] = type }
                    }
                }
            }
            types = table
        }

        static func readFile(_ path: String) -> [UInt8]? {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var out: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while out.count < 16 << 20 {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, 65536) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                out.append(contentsOf: chunk[0..<n])
            }
            return out
        }
    }
}
