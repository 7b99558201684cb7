internal import CAFSerialization

/// PNG (ISO/IEC 15948) and APNG: the signature, IHDR first, every chunk's length and CRC,
/// to IEND. See `ImageInfo`.
enum PNGReader {
    static let maxDimension: UInt32 = 0x7FFF_FFFF

    static func read(_ r: inout ImageBytes) throws -> ImageInfo {
        try r.need(0, 8, "the signature")
        let sig: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        for k in 0..<8 where r.b[k] != sig[k] { throw r.fail("wrong signature byte", at: k) }
        var o = 8
        var width: UInt32 = 0, height: UInt32 = 0
        var colorType: UInt32 = 0
        var sawIHDR = false, sawIDAT = false, sawPLTE = false
        var animFrames: UInt32? = nil
        var fcTL = 0
        var index = 0
        while true {
            try r.need(o, 8, "the length and type of chunk \(index)")
            let len = r.be32(o)
            let type = r.fourCC(o + 4)
            guard len <= maxDimension else { throw r.fail("chunk '\(type)' declares \(len) bytes (at most 2^31-1)", at: o) }
            for k in 4..<8 {
                let c = r.b[o + k] | 0x20
                guard c >= 0x61 && c <= 0x7A else { throw r.fail("chunk type bytes are not letters", at: o + 4) }
            }
            try r.need(o + 8, Int(len) + 4, "chunk '\(type)' (\(len) data bytes and its CRC)")
            let data = o + 8
            let stored = r.be32(data + Int(len))
            let crc = r.b.baseAddress.map { UInt32(truncatingIfNeeded: crc32(0, $0 + o + 4, UInt32(len) + 4)) } ?? 0
            guard crc == stored else { throw r.fail("chunk '\(type)' has a wrong CRC", at: data + Int(len)) }
            if index == 0 && type != "IHDR" { throw r.fail("the first chunk is '\(type)', not 'IHDR'", at: o) }
            switch type {
            case "IHDR":
                guard index == 0 else { throw r.fail("a second IHDR chunk", at: o) }
                guard len == 13 else { throw r.fail("IHDR has \(len) bytes (13 expected)", at: o) }
                width = r.be32(data); height = r.be32(data + 4)
                guard width > 0 && width <= maxDimension else { throw r.fail("width \(width) (1 to 2^31-1)", at: data) }
                guard height > 0 && height <= maxDimension else { throw r.fail("height \(height) (1 to 2^31-1)", at: data + 4) }
                let depth = r.u8(data + 8)
                colorType = r.u8(data + 9)
                let ok: [UInt32]
                switch colorType {
                case 0: ok = [1, 2, 4, 8, 16]
                case 3: ok = [1, 2, 4, 8]
                case 2, 4, 6: ok = [8, 16]
                default: throw r.fail("color type \(colorType) (0, 2, 3, 4 or 6)", at: data + 9)
                }
                guard ok.contains(depth) else { throw r.fail("bit depth \(depth) with color type \(colorType)", at: data + 8) }
                guard r.u8(data + 10) == 0 else { throw r.fail("compression method \(r.u8(data + 10)) (0)", at: data + 10) }
                guard r.u8(data + 11) == 0 else { throw r.fail("filter method \(r.u8(data + 11)) (0)", at: data + 11) }
                guard r.u8(data + 12) <= 1 else { throw r.fail("interlace method \(r.u8(data + 12)) (0 or 1)", at: data + 12) }
                sawIHDR = true
            case "PLTE":
                guard !sawIDAT else { throw r.fail("PLTE after IDAT", at: o) }
                guard len > 0 && len % 3 == 0 && len <= 768 else { throw r.fail("PLTE of \(len) bytes", at: o) }
                sawPLTE = true
            case "IDAT":
                sawIDAT = true
            case "acTL":
                guard !sawIDAT else { throw r.fail("acTL after IDAT", at: o) }
                guard animFrames == nil else { throw r.fail("a second acTL chunk", at: o) }
                guard len == 8 else { throw r.fail("acTL has \(len) bytes (8 expected)", at: o) }
                let n = r.be32(data)
                guard n > 0 && n <= maxDimension else { throw r.fail("acTL frame count \(n)", at: data) }
                animFrames = n
            case "fcTL":
                guard len == 26 else { throw r.fail("fcTL has \(len) bytes (26 expected)", at: o) }
                let fw = r.be32(data + 4), fh = r.be32(data + 8), fx = r.be32(data + 12), fy = r.be32(data + 16)
                guard fw > 0, fh > 0, UInt64(fx) + UInt64(fw) <= UInt64(width), UInt64(fy) + UInt64(fh) <= UInt64(height) else {
                    throw r.fail("fcTL frame \(fw)x\(fh) at (\(fx), \(fy)) outside the \(width)x\(height) canvas", at: data + 4)
                }
                fcTL += 1
            case "IEND":
                guard len == 0 else { throw r.fail("IEND has \(len) bytes (0 expected)", at: o) }
                guard sawIHDR, sawIDAT else { throw r.fail("IEND before any IDAT chunk", at: o) }
                if colorType == 3 && !sawPLTE { throw r.fail("a palette image (color type 3) without PLTE", at: o) }
                var frames = 1
                if let n = animFrames {
                    guard Int(n) == fcTL else {
                        throw r.fail("acTL announces \(n) frames but there are \(fcTL) fcTL chunks", at: o)
                    }
                    frames = Int(n)
                }
                return ImageInfo(format: .png, width: Int(width), height: Int(height), frames: frames)
            default:
                break
            }
            o = data + Int(len) + 4
            index += 1
        }
    }
}

/// JPEG (ITU T.81, JFIF, Exif): marker segments from SOI to EOI. See `ImageInfo`.
enum JPEGReader {
    static func read(_ r: inout ImageBytes) throws -> ImageInfo {
        try r.need(0, 2, "SOI")
        guard r.b[0] == 0xFF && r.b[1] == 0xD8 else { throw r.fail("no SOI marker", at: 0) }
        var o = 2
        var size: (Int, Int)? = nil
        var scans = 0
        while true {
            // a marker: 0xFF, any fill 0xFF bytes, the code
            try r.need(o, 2, "a marker")
            guard r.b[o] == 0xFF else { throw r.fail("0x\(String(r.b[o], radix: 16)) where a marker (0xFF) was expected", at: o) }
            var m = o + 1
            while m < r.count && r.b[m] == 0xFF { m += 1 }
            try r.need(m, 1, "a marker")
            let code = r.b[m]
            let at = o
            o = m + 1
            switch code {
            case 0xD9:  // EOI
                guard let (w, h) = size else { throw r.fail("EOI before any SOF (frame header)", at: at) }
                guard scans > 0 else { throw r.fail("EOI before any SOS (scan)", at: at) }
                return ImageInfo(format: .jpeg, width: w, height: h, frames: 1)
            case 0x00, 0xD8:
                throw r.fail("marker 0xFF\(String(format2: code)) out of place", at: at)
            case 0xD0...0xD7, 0x01:
                continue  // no length
            default:
                break
            }
            try r.need(o, 2, "the length of marker 0xFF\(String(format2: code))")
            let len = Int(r.be16(o))
            guard len >= 2 else { throw r.fail("marker 0xFF\(String(format2: code)) with length \(len)", at: o) }
            try r.need(o, len, "the segment of marker 0xFF\(String(format2: code))")
            let seg = o + 2
            switch code {
            case 0xC0...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:  // SOFn
                guard len >= 8 else { throw r.fail("a frame header (SOF) of \(len) bytes", at: o) }
                let precision = r.u8(seg)
                guard [2, 8, 12, 16].contains(precision) else { throw r.fail("sample precision \(precision)", at: seg) }
                let h = Int(r.be16(seg + 1)), w = Int(r.be16(seg + 3)), n = Int(r.u8(seg + 5))
                guard h > 0 else { throw r.fail("height 0 (a DNL-defined height is not read)", at: seg + 1) }
                guard w > 0 else { throw r.fail("width 0", at: seg + 3) }
                guard n >= 1 && n <= 4, len == 8 + 3 * n else { throw r.fail("\(n) components in a frame header of \(len) bytes", at: seg + 5) }
                // one image has one frame header (hierarchical files, with several, are not read)
                guard size == nil else { throw r.fail("a second frame header (SOF)", at: at) }
                size = (w, h)
            case 0xDA:  // SOS, then entropy-coded data up to the next marker other than RSTn
                guard size != nil else { throw r.fail("SOS before any SOF (frame header)", at: at) }
                guard len >= 6 else { throw r.fail("a scan header (SOS) of \(len) bytes", at: o) }
                scans += 1
                var i = o + len
                while true {
                    guard i < r.count, let base = r.b.baseAddress, let hit = memchr(base + i, 0xFF, r.count - i) else {
                        throw r.fail("the body ends inside the entropy-coded data of scan \(scans) (no EOI; truncated?)", at: r.count)
                    }
                    let p = i + UnsafeRawPointer(base + i).distance(to: UnsafeRawPointer(hit))
                    var j = p + 1
                    while j < r.count && r.b[j] == 0xFF { j += 1 }
                    guard j < r.count else {
                        throw r.fail("the body ends inside the entropy-coded data of scan \(scans) (no EOI; truncated?)", at: r.count)
                    }
                    let c = r.b[j]
                    if c == 0x00 || (c >= 0xD0 && c <= 0xD7) { i = j + 1; continue }
                    i = p
                    break
                }
                o = i
                continue
            default:
                break
            }
            o += len
        }
    }
}

extension String {
    /// A byte as two uppercase hex digits.
    init(format2 b: UInt8) {
        let s = String(b, radix: 16, uppercase: true)
        self = b < 16 ? "0" + s : s
    }
}

/// GIF87a/GIF89a: the header, the logical screen, blocks to the trailer. See `ImageInfo`.
enum GIFReader {
    static func read(_ r: inout ImageBytes) throws -> ImageInfo {
        try r.need(0, 13, "the header and logical screen descriptor")
        let w = Int(r.le16(6)), h = Int(r.le16(8))
        guard w > 0 else { throw r.fail("logical screen width 0", at: 6) }
        guard h > 0 else { throw r.fail("logical screen height 0", at: 8) }
        var o = 13
        let packed = r.u8(10)
        if packed & 0x80 != 0 {
            let n = 3 << (Int(packed & 7) + 1)
            try r.need(o, n, "the global color table")
            o += n
        }
        var frames = 0
        while true {
            try r.need(o, 1, "a block introducer")
            let at = o
            switch r.b[o] {
            case 0x3B:  // trailer
                guard frames > 0 else { throw r.fail("the trailer before any image", at: at) }
                return ImageInfo(format: .gif, width: w, height: h, frames: frames)
            case 0x21:  // extension: label, sub-blocks
                try r.need(o + 1, 1, "an extension label")
                o = try subBlocks(&r, o + 2, "extension 0x\(String(format2: r.b[o + 1]))")
            case 0x2C:  // image descriptor
                try r.need(o, 10, "image descriptor \(frames + 1)")
                let iw = r.le16(o + 5), ih = r.le16(o + 7)
                guard iw > 0 && ih > 0 else { throw r.fail("image \(frames + 1) is \(iw)x\(ih)", at: o + 5) }
                let p = r.u8(o + 9)
                o += 10
                if p & 0x80 != 0 {
                    let n = 3 << (Int(p & 7) + 1)
                    try r.need(o, n, "the local color table of image \(frames + 1)")
                    o += n
                }
                try r.need(o, 1, "the LZW minimum code size of image \(frames + 1)")
                let cs = r.u8(o)
                guard cs >= 1 && cs <= 11 else { throw r.fail("LZW minimum code size \(cs)", at: o) }
                o = try subBlocks(&r, o + 1, "the image data of image \(frames + 1)")
                frames += 1
            default:
                throw r.fail("block introducer 0x\(String(format2: r.b[o])) (0x21, 0x2C or the trailer 0x3B expected)", at: at)
            }
        }
    }

    /// Skips data sub-blocks up to and including the terminator; the offset after it.
    static func subBlocks(_ r: inout ImageBytes, _ start: Int, _ what: String) throws -> Int {
        var o = start
        while true {
            try r.need(o, 1, "a sub-block of \(what)")
            let n = Int(r.b[o])
            if n == 0 { return o + 1 }
            try r.need(o + 1, n, "a sub-block of \(what)")
            o += 1 + n
        }
    }
}
