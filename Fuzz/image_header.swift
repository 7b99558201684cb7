// Fuzz target: the image header readers (AFImageResponseSerializer's decoding step).
//
// The input's first byte picks the declared Content-Type (none, or one of the image types),
// the rest is the body. Properties:
// - no crash, no hang, bounded memory;
// - a failure is `.invalidImage` (or `.limit` for the pixel limit) and names where: a byte
//   offset within the body, or the signature / the declared type that disagrees;
// - a success has positive sizes and at least one frame, its format agrees with the
//   declared type and with the signature the bytes start with (XBM only when declared),
//   reading the body again as that format gives the same header, and bytes appended after
//   the file change nothing (every reader stops at its format's end);
// - the response serializer's dictionary says the same (and holds the body as sent).
@testable import AFSerialization

let declaredTypes: [String?] = [nil, "image/png", "image/jpeg", "image/gif", "image/bmp", "image/tiff",
                                "image/x-icon", "image/webp", "image/x-xbitmap", "image/x-win-bitmap",
                                "application/octet-stream"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let declared = declaredTypes[Int(data[0]) % declaredTypes.count]
    let body = UnsafeBufferPointer(start: data + 1, count: size - 1)
    let allowed = declared.flatMap(ImageFormat.formats(forMIMEType:))
    let info: ImageInfo
    do {
        info = try ImageHeader.read(body, allowed: allowed, declaredType: declared)
    } catch let e as AFSError {
        trace("error: \(e)")
        require(e.status == .invalidImage, "the reader failed with \(e), not .invalidImage")
        if let at = trailingOffset(e.message) {
            require(e.message.hasSuffix("at byte offset \(at)"), "error does not end with the offset: \(e.message)")
            require(at >= 0 && at <= body.count, "error offset \(at) is outside the \(body.count)-byte body: \(e.message)")
        } else {
            require(e.message.contains("but the body is") || e.message == "the image body is empty",
                    "an error naming neither an offset nor a type: \(e.message)")
        }
        return 0
    } catch {
        fail("the reader threw a non-AFSError: \(error)")
    }
    trace("read: \(info)")
    require(info.width > 0 && info.height > 0 && info.frames >= 1, "a header with nothing in it: \(info)")
    if let a = allowed { require(a.contains(info.format), "read \(info.format) under \(declared ?? "-")") }
    if let s = ImageHeader.sniff(body) { require(s == info.format, "read \(info.format) from a \(s) signature") }
    else { require(info.format == .xbm, "read \(info.format) without its signature") }
    guard let again = try? ImageHeader.read(body, as: info.format) else { fail("the same body read as \(info.format) failed") }
    require(again == info, "reading as \(info.format) gave \(again), not \(info)")
    let longer = Array(body) + [0xAB, 0x00, 0x3B, 0xFF, 0xD9]
    guard let tail = try? ImageHeader.read(longer, allowed: allowed) else { fail("bytes after the file made it unreadable") }
    require(tail == info, "bytes after the file changed the header: \(tail) vs \(info)")

    let rs = ResponseSerializer(kind: .image)
    let canonical: [ImageFormat: String] = [.png: "image/png", .jpeg: "image/jpeg", .gif: "image/gif", .bmp: "image/bmp",
                                            .tiff: "image/tiff", .ico: "image/x-icon", .webp: "image/webp", .xbm: "image/x-xbitmap"]
    let ct = declared.flatMap { ResponseSerializer.imageContentTypes.contains($0) ? $0 : nil } ?? canonical[info.format]!
    let r = rs.responseObject(statusCode: 200, contentType: ct, body: body)
    if UInt64(info.width) * UInt64(info.height) > ResponseSerializer.defaultMaxImagePixels {
        require(r.error?.status == .limit, "a \(info.width)x\(info.height) image passed the pixel limit")
        return 0
    }
    guard case .dict(let d)? = r.value, r.error == nil else { fail("the serializer failed: \(String(describing: r.error))") }
    require(d["format"] == .string(info.format.rawValue) && d["width"] == .int(Int64(info.width))
            && d["height"] == .int(Int64(info.height)) && d["frames"] == .int(Int64(info.frames))
            && d["data"] == .data(Array(body)), "the serializer's dictionary differs from the header")
    return 0
}
