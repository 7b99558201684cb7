/// AFImageResponseSerializer without the pixel decoding: an image body is identified from
/// its bytes, its header read strictly (`ImageHeader`), and returned as a dictionary
/// `{"format", "width", "height", "scale", "point_width", "point_height", "frames", "data"}`
/// with `data` the body as sent, for the caller's image codec.
extension ResponseSerializer {
    /// AFImageResponseSerializer's acceptable content types, plus image/webp.
    public static let imageContentTypes = [
        "image/tiff", "image/jpeg", "image/gif", "image/png", "image/ico", "image/x-icon", "image/bmp",
        "image/x-bmp", "image/x-xbitmap", "image/x-win-bitmap", "image/webp",
    ]

    /// The default most pixels (width × height) an image may have: 2^31.
    public static let defaultMaxImagePixels: UInt64 = 1 << 31

    /// AFImageResponseSerializer's `imageScale` (default 1): the point sizes are the pixel
    /// sizes divided by it. On a compound serializer, sets it on every member.
    /// - Throws: `.invalidArgument` for a scale that is not a finite number above 0.
    ///   C: `afs_response_serializer_set_image_scale`.
    public mutating func setImageScale(_ scale: Double) throws {
        guard scale.isFinite && scale > 0 else {
            throw AFSError(.invalidArgument, "image scale \(scale) is not a finite number above 0")
        }
        imageScale = scale
        for i in members.indices { try members[i].setImageScale(scale) }
    }

    /// The most pixels (width × height) an image may have (default 2^31; 0 restores the
    /// default); beyond it decoding is `.limit`. On a compound serializer, sets it on every
    /// member. C: `afs_response_serializer_set_max_image_pixels`.
    public mutating func setMaxImagePixels(_ n: UInt64) {
        maxImagePixels = n == 0 ? ResponseSerializer.defaultMaxImagePixels : n
        for i in members.indices { members[i].setMaxImagePixels(n) }
    }

    /// An image body as the result dictionary.
    /// - Parameters:
    ///   - mime: the response's MIME type (lowercase or not); a type that names image
    ///     formats (`ImageFormat.formats(forMIMEType:)`) must agree with the bytes.
    func decodeImage(_ body: UnsafeBufferPointer<UInt8>, mime: String?) throws -> Value {
        let lower = mime.map(asciiLowercased)
        let allowed = lower.flatMap(ImageFormat.formats(forMIMEType:))
        let info = try ImageHeader.read(body, allowed: allowed, declaredType: lower.map(ResponseSerializer.printable))
        let pixels = UInt64(info.width).multipliedReportingOverflow(by: UInt64(info.height))
        if pixels.overflow || pixels.partialValue > maxImagePixels {
            throw AFSError(.limit, "the \(info.format.title) image is \(info.width)x\(info.height) pixels, more than the limit of \(maxImagePixels) pixels")
        }
        try Memory.probe(body.count, "a copy of the \(body.count)-byte image body")
        return .dict(ValueDict([
            ("format", .string(info.format.rawValue)),
            ("width", .int(Int64(info.width))),
            ("height", .int(Int64(info.height))),
            ("scale", .double(imageScale)),
            ("point_width", .double(Double(info.width) / imageScale)),
            ("point_height", .double(Double(info.height) / imageScale)),
            ("frames", .int(Int64(info.frames))),
            ("data", .data(Array(body))),
        ]))
    }
}
