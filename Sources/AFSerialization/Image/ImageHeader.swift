
/// What an image's header says: its format, pixel size and frame count. No pixel is
/// decoded; the readers walk the file's structure (chunks, markers, blocks, directories) to
/// its end marker, so a truncated or corrupt structure is refused, not just a bad header.
///
/// Formats (the names are those of the C result dictionary's "format"):
/// - "png": IHDR first (its CRC and every chunk's checked), chunks walked to IEND; an
///   animated PNG (acTL before IDAT) has acTL's frame count, which must equal its fcTL
///   chunks.
/// - "jpeg": SOI, marker segments walked (entropy-coded data skipped: stuffed 0xFF00 and
///   RSTn are data), the first SOFn (baseline, extended, progressive, lossless; Huffman or
///   arithmetic) gives the size, to EOI.
/// - "gif": 87a/89a, the logical screen's size, blocks walked to the trailer; frames are
///   the image descriptors.
/// - "bmp": BITMAPFILEHEADER and every DIB header version (OS/2 core 12, OS/2 2.x 16/64,
///   INFO 40, V2 52, V3 56, V4 108, V5 124); the pixel array must lie in the body.
/// - "tiff": both byte orders; the first IFD's ImageWidth/ImageLength; frames are the IFDs
///   (a loop in the IFD chain is an error); every IFD, entry value and strip/tile must lie
///   in the body. BigTIFF is refused.
/// - "ico": the largest entry (by pixels, then bit count); frames are the entries; each
///   entry (PNG or BMP) is read as above and must lie in the body.
/// - "webp": RIFF, VP8 (lossy), VP8L (lossless) or VP8X (extended; animated: frames are
///   the ANMF chunks); every chunk walked to the RIFF size.
/// - "xbm": X11 (and X10) bitmap C source: width and height defines, the bits array with
///   exactly the bytes the size needs.
///
/// Bytes after a format's end marker (IEND, EOI, the GIF trailer, the RIFF size) are
/// ignored, as decoders ignore them.
public struct ImageInfo: Sendable, Equatable {
    public var format: ImageFormat
    public var width: Int
    public var height: Int
    public var frames: Int

    public init(format: ImageFormat, width: Int, height: Int, frames: Int) {
        self.format = format
        self.width = width
        self.height = height
        self.frames = frames
    }
}

/// The formats the image reader knows.
public enum ImageFormat: String, Sendable, CaseIterable {
    case png, jpeg, gif, bmp, tiff, ico, webp, xbm

    /// "PNG", "JPEG", … for messages.
    var title: String {
        switch self {
        case .png: return "PNG"
        case .jpeg: return "JPEG"
        case .gif: return "GIF"
        case .bmp: return "BMP"
        case .tiff: return "TIFF"
        case .ico: return "ICO"
        case .webp: return "WebP"
        case .xbm: return "XBM"
        }
    }

    /// The formats a MIME type (lowercase, no parameters) stands for; nil for a type that
    /// names none of them (then the bytes decide alone).
    public static func formats(forMIMEType mime: String) -> [ImageFormat]? {
        switch mime {
        case "image/png", "image/apng", "image/x-png": return [.png]
        case "image/jpeg", "image/jpg", "image/pjpeg": return [.jpeg]
        case "image/gif": return [.gif]
        case "image/bmp", "image/x-bmp", "image/x-ms-bmp": return [.bmp]
        case "image/x-win-bitmap": return [.bmp, .ico]
        case "image/tiff", "image/tiff-fx": return [.tiff]
        case "image/ico", "image/x-icon", "image/vnd.microsoft.icon": return [.ico]
        case "image/webp": return [.webp]
        case "image/x-xbitmap", "image/x-xbm": return [.xbm]
        default: return nil
        }
    }
}

public enum ImageHeader {
    /// The format the first bytes announce (XBM is text and is only read when declared).
    public static func sniff(_ b: UnsafeBufferPointer<UInt8>) -> ImageFormat? {
        func starts(_ s: [UInt8]) -> Bool { b.count >= s.count && zip(b, s).allSatisfy { $0 == $1 } }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
        if starts(Array("BM".utf8)) { return .bmp }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A])
            || starts([0x49, 0x49, 0x2B, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2B]) { return .tiff }
        if b.count >= 12 && starts(Array("RIFF".utf8)) && b[8] == 0x57 && b[9] == 0x45 && b[10] == 0x42 && b[11] == 0x50 { return .webp }
        if starts([0, 0, 1, 0]) || starts([0, 0, 2, 0]) { return .ico }
        return nil
    }

    /// The format whose signature `body` is a proper prefix of (a body cut inside its
    /// signature), among `allowed` when given.
    static func partialSignature(_ b: UnsafeBufferPointer<UInt8>, _ allowed: [ImageFormat]?) -> ImageFormat? {
        let signatures: [(ImageFormat, [UInt8])] = [
            (.png, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), (.jpeg, [0xFF, 0xD8, 0xFF]),
            (.gif, Array("GIF8".utf8)), (.bmp, Array("BM".utf8)), (.tiff, [0x49, 0x49, 0x2A, 0x00]),
            (.tiff, [0x4D, 0x4D, 0x00, 0x2A]), (.webp, Array("RIFF".utf8)), (.ico, [0, 0, 1, 0]),
        ]
        for (f, sig) in signatures where b.count < sig.count && (allowed?.contains(f) ?? true) {
            if zip(b, sig).allSatisfy({ $0 == $1 }) { return f }
        }
        return nil
    }

    /// Reads the header of `body`, which must be one of `allowed` (nil: any format the
    /// bytes announce; XBM is tried when it is the only one allowed or the bytes are text
    /// starting with `#define`).
    /// - Throws: `.invalidImage` naming the format, what is wrong and the byte offset (a
    ///   type that disagrees with the bytes names both).
    public static func read(_ body: UnsafeBufferPointer<UInt8>, allowed: [ImageFormat]? = nil,
                            declaredType: String? = nil) throws -> ImageInfo {
        if body.isEmpty { throw AFSError(.invalidImage, "the image body is empty") }
        var format = sniff(body) ?? partialSignature(body, allowed)
        if format == nil, allowed?.contains(.xbm) ?? XBMReader.looksLikeXBM(body) { format = .xbm }
        if let allowed = allowed, let f = format, !allowed.contains(f) {
            let t = declaredType.map { "content type \($0)" } ?? "the declared type"
            throw AFSError(.invalidImage, "\(t) says \(allowed.map(\.title).joined(separator: " or ")) but the body is a \(f.title) image")
        }
        guard let f = format else {
            let what = allowed.map { "a " + $0.map(\.title).joined(separator: " or ") + " image" } ?? "an image the reader knows (PNG, JPEG, GIF, BMP, TIFF, ICO, WebP)"
            throw AFSError(.invalidImage, "the body is not \(what) (first bytes \(hexPrefix(body))): no known signature at byte offset 0")
        }
        return try read(body, as: f)
    }

    /// Reads `body` as `format`.
    public static func read(_ body: UnsafeBufferPointer<UInt8>, as format: ImageFormat) throws -> ImageInfo {
        var r = ImageBytes(body, format)
        switch format {
        case .png: return try PNGReader.read(&r)
        case .jpeg: return try JPEGReader.read(&r)
        case .gif: return try GIFReader.read(&r)
        case .bmp: return try BMPReader.read(&r)
        case .tiff: return try TIFFReader.read(&r)
        case .ico: return try ICOReader.read(&r)
        case .webp: return try WebPReader.read(&r)
        case .xbm: return try XBMReader.read(&r)
        }
    }

    /// `read` on an array.
    public static func read(_ body: [UInt8], allowed: [ImageFormat]? = nil) throws -> ImageInfo {
        try body.withUnsafeBufferPointer { try read($0, allowed: allowed) }
    }

    static func hexPrefix(_ b: UnsafeBufferPointer<UInt8>) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var s: [UInt8] = []
        for x in b.prefix(8) {
            if !s.isEmpty { s.append(0x20) }
            s.append(hex[Int(x >> 4)]); s.append(hex[Int(x & 15)])
        }
        return String(decoding: s, as: UTF8.self)
    }
}

/// A bounds-checked view of an image body; every read names the format and the offset
/// when it fails. `base` is the offset of this view in the whole body (ICO entries).
struct ImageBytes {
    let b: UnsafeBufferPointer<UInt8>
    let format: ImageFormat
    var base = 0

    init(_ b: UnsafeBufferPointer<UInt8>, _ format: ImageFormat, base: Int = 0) {
        self.b = b
        self.format = format
        self.base = base
    }

    var count: Int { b.count }

    func fail(_ message: String, at offset: Int) -> AFSError {
        AFSError(.invalidImage, "not a valid \(format.title) image: \(message) at byte offset \(base + offset)")
    }

    /// Throws unless `n` bytes are there at `offset`.
    func need(_ offset: Int, _ n: Int, _ what: String) throws {
        guard offset >= 0, n >= 0, offset <= b.count, n <= b.count - offset else {
            let left = Swift.max(0, b.count - Swift.max(0, offset))
            throw fail("the body ends inside \(what) (\(n) bytes needed, \(left) left; truncated?)", at: Swift.min(Swift.max(offset, 0), b.count))
        }
    }

    func u8(_ o: Int) -> UInt32 { UInt32(b[o]) }
    func be16(_ o: Int) -> UInt32 { UInt32(b[o]) << 8 | UInt32(b[o + 1]) }
    func le16(_ o: Int) -> UInt32 { UInt32(b[o]) | UInt32(b[o + 1]) << 8 }
    func be32(_ o: Int) -> UInt32 { be16(o) << 16 | be16(o + 2) }
    func le32(_ o: Int) -> UInt32 { le16(o) | le16(o + 2) << 16 }
    func le24(_ o: Int) -> UInt32 { le16(o) | UInt32(b[o + 2]) << 16 }

    func slice(_ o: Int, _ n: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: b[o..<(o + n)]) }

    /// A four-character code for messages (non-printable bytes as `?`).
    func fourCC(_ o: Int) -> String {
        String(decoding: (0..<4).map { b[o + $0] >= 0x20 && b[o + $0] < 0x7F ? b[o + $0] : 0x3F }, as: UTF8.self)
    }
}
