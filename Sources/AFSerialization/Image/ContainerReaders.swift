/// BMP, TIFF, ICO, WebP and XBM header readers. See `ImageInfo`.

enum BMPReader {
    static func read(_ r: inout ImageBytes) throws -> ImageInfo {
        try r.need(0, 18, "the file header")
        guard r.b[0] == 0x42 && r.b[1] == 0x4D else { throw r.fail("no 'BM' signature", at: 0) }
        let fileSize = Int(r.le32(2))
        if fileSize != 0 && fileSize > r.count {
            throw r.fail("the file header declares \(fileSize) bytes but the body has \(r.count) (truncated?)", at: 2)
        }
        let offBits = Int(r.le32(10))
        let (info, _) = try dib(&r, at: 14, icoHeight: false)
        guard offBits >= 14 + info.headerSize else {
            throw r.fail("pixel data offset \(offBits) inside the headers (at least \(14 + info.headerSize))", at: 10)
        }
        try r.need(offBits, info.pixelBytes, "the pixel data (\(info.pixelBytes) bytes from offset \(offBits))")
        return ImageInfo(format: .bmp, width: info.width, height: info.height, frames: 1)
    }

    struct DIB {
        var headerSize: Int
        var width: Int
        var height: Int
        var bitCount: Int
        /// Bytes of pixel data the header implies (the stored size for compressed data).
        var pixelBytes: Int
        /// Palette bytes after the header (bit counts up to 8).
        var paletteBytes: Int
    }

    /// A DIB header at `o`. In an ICO entry (`icoHeight`) the height counts the XOR and
    /// AND masks (twice the image's) and only the XOR mask is counted in `pixelBytes`.
    static func dib(_ r: inout ImageBytes, at o: Int, icoHeight: Bool) throws -> (DIB, compression: UInt32) {
        try r.need(o, 4, "the DIB header size")
        let size = Int(r.le32(o))
        let w: Int64, h: Int64, planes: UInt32, bpp: UInt32
        var compression: UInt32 = 0, sizeImage: UInt32 = 0, colorsUsed: UInt32 = 0
        let entry = 3
        var paletteEntry = 4
        switch size {
        case 12:
            try r.need(o, 12, "the BITMAPCOREHEADER")
            w = Int64(r.le16(o + 4)); h = Int64(Int16(bitPattern: UInt16(r.le16(o + 6))))
            planes = r.le16(o + 8); bpp = r.le16(o + 10)
            paletteEntry = entry
            guard [1, 4, 8, 24].contains(bpp) else { throw r.fail("bit count \(bpp) in a core header (1, 4, 8 or 24)", at: o + 10) }
        case 16, 40, 52, 56, 64, 108, 124:
            try r.need(o, size, "the \(size)-byte DIB header")
            w = Int64(Int32(bitPattern: r.le32(o + 4))); h = Int64(Int32(bitPattern: r.le32(o + 8)))
            planes = r.le16(o + 12); bpp = r.le16(o + 14)
            if size >= 20 { compression = r.le32(o + 16) }
            if size >= 24 { sizeImage = r.le32(o + 20) }
            if size >= 36 { colorsUsed = r.le32(o + 32) }
        default:
            throw r.fail("DIB header size \(size) (12, 16, 40, 52, 56, 64, 108 or 124)", at: o)
        }
        guard planes == 1 else { throw r.fail("\(planes) planes (1)", at: o + (size == 12 ? 8 : 12)) }
        guard w > 0 else { throw r.fail("width \(w)", at: o + 4) }
        guard h != 0 && h != Int64(Int32.min) else { throw r.fail("height \(h)", at: o + (size == 12 ? 6 : 8)) }
        let os2 = size == 16 || size == 64
        switch compression {
        case 0:
            guard [1, 2, 4, 8, 16, 24, 32].contains(bpp) else { throw r.fail("bit count \(bpp)", at: o + 14) }
        case 1, 2:
            guard bpp == (compression == 1 ? 8 : 4) else { throw r.fail("RLE\(compression == 1 ? 8 : 4) with bit count \(bpp)", at: o + 14) }
            guard h > 0 else { throw r.fail("a compressed bitmap with a negative (top-down) height", at: o + 8) }
        case 3, 6:
            guard !os2 else { throw r.fail("OS/2 compression \(compression) is not read", at: o + 16) }
            guard bpp == 16 || bpp == 32 else { throw r.fail("bit fields with bit count \(bpp) (16 or 32)", at: o + 14) }
        case 4, 5:
            guard !os2 else { throw r.fail("OS/2 compression \(compression) is not read", at: o + 16) }
            guard !icoHeight else { throw r.fail("an embedded JPEG or PNG bitmap in an icon entry", at: o + 16) }
        default:
            throw r.fail("compression \(compression) (0 to 6)", at: o + 16)
        }
        let absH = h < 0 ? -h : h
        var imageH = absH
        if icoHeight {
            guard absH % 2 == 0 else { throw r.fail("icon bitmap height \(h) is not twice the image's", at: o + 8) }
            imageH = absH / 2
        }
        var pixels: Int64
        if compression == 0 || compression == 3 || compression == 6 {
            let row = (Int64(bpp) * w + 31) / 32 * 4
            let (p, over) = row.multipliedReportingOverflow(by: imageH)
            pixels = over ? Int64.max : p
        } else {
            guard sizeImage > 0 else { throw r.fail("a compressed bitmap without its data size", at: o + 20) }
            pixels = Int64(sizeImage)
        }
        var palette = 0
        if bpp <= 8 {
            let n = colorsUsed == 0 ? UInt32(1) << bpp : colorsUsed
            guard n <= UInt32(1) << bpp else { throw r.fail("\(colorsUsed) palette colors for bit count \(bpp)", at: o + 32) }
            palette = Int(n) * paletteEntry
        }
        if size == 40 && (compression == 3 || compression == 6) { palette = compression == 3 ? 12 : 16 }
        return (DIB(headerSize: size, width: Int(w), height: Int(imageH), bitCount: Int(bpp),
                    pixelBytes: Int(clamping: pixels), paletteBytes: palette), compression)
    }
}

enum TIFFReader {
    static func read(_ r: inout ImageBytes) throws -> ImageInfo {
        try r.need(0, 8, "the header")
        let le = r.b[0] == 0x49
        func u16(_ o: Int) -> UInt32 { le ? r.le16(o) : r.be16(o) }
        func u32(_ o: Int) -> UInt32 { le ? r.le32(o) : r.be32(o) }
        let magic = u16(2)
        if magic == 43 { throw r.fail("BigTIFF is not read", at: 2) }
        guard magic == 42 else { throw r.fail("magic \(magic) (42)", at: 2) }
        var next = Int(u32(4))
        var visited = Set<Int>()
        var pages = 0
        var first: (Int, Int)? = nil
        while next != 0 {
            let ifd = next
            guard ifd >= 8 else { throw r.fail("IFD offset \(ifd) inside the header", at: 4) }
            guard visited.insert(ifd).inserted else { throw r.fail("the IFD chain loops back to the IFD at \(ifd)", at: ifd) }
            try r.need(ifd, 2, "IFD \(pages)")
            let n = Int(u16(ifd))
            guard n > 0 else { throw r.fail("IFD \(pages) has no entries", at: ifd) }
            try r.need(ifd + 2, 12 * n + 4, "IFD \(pages) (\(n) entries)")
            var width: UInt32? = nil, height: UInt32? = nil
            var offsets: (type: UInt32, count: Int, at: Int)? = nil, counts: (type: UInt32, count: Int, at: Int)? = nil
            var tiled = false
            for k in 0..<n {
                let e = ifd + 2 + 12 * k
                let tag = u16(e), type = u16(e + 2), count = Int(u32(e + 4))
                let unit: Int
                switch type {
                case 1, 2, 6, 7: unit = 1
                case 3, 8: unit = 2
                case 4, 9, 11, 13: unit = 4
                case 5, 10, 12: unit = 8
                default: unit = 0  // unknown types are skipped, as TIFF 6.0 says
                }
                let (bytes, over) = count.multipliedReportingOverflow(by: unit)
                guard !over else { throw r.fail("tag \(tag) declares \(count) values", at: e + 4) }
                var at = e + 8
                if bytes > 4 {
                    at = Int(u32(e + 8))
                    try r.need(at, bytes, "the \(bytes) bytes of tag \(tag) in IFD \(pages)")
                }
                func scalar() throws -> UInt32 {
                    guard count == 1, type == 3 || type == 4 else { throw r.fail("tag \(tag) is not one SHORT or LONG", at: e) }
                    return type == 3 ? u16(at) : u32(at)
                }
                switch tag {
                case 256: width = try scalar()
                case 257: height = try scalar()
                case 273, 324, 279, 325:
                    guard type == 3 || type == 4, count > 0 else { throw r.fail("tag \(tag) is not a list of SHORT or LONG", at: e) }
                    if tag == 273 || tag == 324 { offsets = (type, count, at) } else { counts = (type, count, at) }
                    if tag == 324 || tag == 325 { tiled = true }
                default: break
                }
            }
            guard let w = width, w > 0 else { throw r.fail("IFD \(pages) has no ImageWidth (or it is 0)", at: ifd) }
            guard let h = height, h > 0 else { throw r.fail("IFD \(pages) has no ImageLength (or it is 0)", at: ifd) }
            let what = tiled ? "tile" : "strip"
            guard let so = offsets, let sc = counts else { throw r.fail("IFD \(pages) has no \(what) offsets and byte counts", at: ifd) }
            guard so.count == sc.count else { throw r.fail("IFD \(pages) has \(so.count) \(what) offsets but \(sc.count) byte counts", at: ifd) }
            for s in 0..<so.count {
                let off = Int(so.type == 3 ? u16(so.at + 2 * s) : u32(so.at + 4 * s))
                let len = Int(sc.type == 3 ? u16(sc.at + 2 * s) : u32(sc.at + 4 * s))
                try r.need(off, len, "\(what) \(s) of IFD \(pages) (\(len) bytes from offset \(off))")
            }
            if first == nil { first = (Int(w), Int(h)) }
            pages += 1
            next = Int(u32(ifd + 2 + 12 * n))
        }
        guard let (w, h) = first else { throw r.fail("no IFD (first IFD offset 0)", at: 4) }
        return ImageInfo(format: .tiff, width: w, height: h, frames: pages)
    }
}

enum ICOReader {
    static func read(_ r: inout ImageBytes) throws -> ImageInfo {
        try r.need(0, 6, "the icon directory")
        guard r.le16(0) == 0 else { throw r.fail("reserved field \(r.le16(0)) (0)", at: 0) }
        let type = r.le16(2)
        guard type == 1 || type == 2 else { throw r.fail("type \(type) (1 icon, 2 cursor)", at: 2) }
        let n = Int(r.le16(4))
        guard n > 0 else { throw r.fail("no entries", at: 4) }
        try r.need(6, 16 * n, "the \(n) directory entries")
        var best: (w: Int, h: Int, bpp: Int)? = nil
        for k in 0..<n {
            let e = 6 + 16 * k
            let dw = r.b[e] == 0 ? 256 : Int(r.b[e]), dh = r.b[e + 1] == 0 ? 256 : Int(r.b[e + 1])
            let size = Int(r.le32(e + 8)), off = Int(r.le32(e + 12))
            guard off >= 6 + 16 * n else { throw r.fail("entry \(k)'s data offset \(off) inside the directory", at: e + 12) }
            guard size > 0 else { throw r.fail("entry \(k) has 0 bytes", at: e + 8) }
            try r.need(off, size, "entry \(k) (\(size) bytes from offset \(off))")
            let data = r.slice(off, size)
            var w: Int, h: Int, bpp: Int
            if size >= 8 && data[0] == 0x89 && data[1] == 0x50 {
                var sub = ImageBytes(data, .png, base: r.base + off)
                let info = try PNGReader.read(&sub)
                w = info.width; h = info.height
                bpp = 32
                let dirOK = (dw == w || (dw == 256 && w >= 256)) && (dh == h || (dh == 256 && h >= 256))
                guard dirOK else { throw r.fail("entry \(k) says \(dw)x\(dh) but its PNG is \(w)x\(h)", at: e) }
            } else {
                var sub = ImageBytes(data, .ico, base: r.base + off)
                let (d, _) = try BMPReader.dib(&sub, at: 0, icoHeight: true)
                guard d.width == dw && d.height == dh else {
                    throw r.fail("entry \(k) says \(dw)x\(dh) but its bitmap is \(d.width)x\(d.height)", at: e)
                }
                let need = d.headerSize + d.paletteBytes
                try sub.need(need, d.pixelBytes, "the pixels of entry \(k)")
                w = d.width; h = d.height; bpp = d.bitCount
            }
            if let b = best {
                if w * h > b.w * b.h || (w * h == b.w * b.h && bpp > b.bpp) { best = (w, h, bpp) }
            } else {
                best = (w, h, bpp)
            }
        }
        guard let b = best else { throw r.fail("no entries", at: 4) }
        return ImageInfo(format: .ico, width: b.w, height: b.h, frames: n)
    }
}

enum WebPReader {
    static func read(_ r: inout ImageBytes) throws -> ImageInfo {
        try r.need(0, 12, "the RIFF header")
        let riff = Int(r.le32(4))
        guard riff >= 4 + 8 else { throw r.fail("RIFF size \(riff)", at: 4) }
        try r.need(0, 8 + riff, "the RIFF data (RIFF size \(riff))")
        let end = 8 + riff
        var o = 12
        var chunks: [(cc: String, data: Int, size: Int, at: Int)] = []
        while o < end {
            guard end - o >= 8 else { throw r.fail("\(end - o) stray bytes where a chunk header was expected", at: o) }
            let size = Int(r.le32(o + 4))
            guard size <= end - o - 8 else {
                throw r.fail("chunk '\(r.fourCC(o))' of \(size) bytes runs past the RIFF data (truncated?)", at: o)
            }
            chunks.append((r.fourCC(o), o + 8, size, o))
            o += 8 + size
            if size & 1 == 1 && o < end { o += 1 }  // the pad byte
        }
        guard let c0 = chunks.first else { throw r.fail("no chunk", at: 12) }
        switch c0.cc {
        case "VP8 ", "VP8L":
            let (w, h) = try bitstream(&r, c0)
            return ImageInfo(format: .webp, width: w, height: h, frames: 1)
        case "VP8X":
            guard c0.size >= 10 else { throw r.fail("a VP8X chunk of \(c0.size) bytes", at: c0.at) }
            let flags = r.b[c0.data]
            let cw = Int(r.le24(c0.data + 4)) + 1, ch = Int(r.le24(c0.data + 7)) + 1
            guard UInt64(cw) * UInt64(ch) <= UInt64(UInt32.max) else {
                throw r.fail("canvas \(cw)x\(ch) beyond 2^32-1 pixels", at: c0.data + 4)
            }
            if flags & 0x02 != 0 {
                var sawANIM = false, frames = 0
                for c in chunks.dropFirst() {
                    if c.cc == "ANIM" {
                        guard c.size >= 6 else { throw r.fail("an ANIM chunk of \(c.size) bytes", at: c.at) }
                        sawANIM = true
                    } else if c.cc == "ANMF" {
                        guard sawANIM else { throw r.fail("ANMF before ANIM", at: c.at) }
                        guard c.size >= 16 + 8 else { throw r.fail("an ANMF chunk of \(c.size) bytes", at: c.at) }
                        let fx = Int(r.le24(c.data)) * 2, fy = Int(r.le24(c.data + 3)) * 2
                        let fw = Int(r.le24(c.data + 6)) + 1, fh = Int(r.le24(c.data + 9)) + 1
                        guard fx + fw <= cw, fy + fh <= ch else {
                            throw r.fail("frame \(frames + 1) \(fw)x\(fh) at (\(fx), \(fy)) outside the \(cw)x\(ch) canvas", at: c.data)
                        }
                        // the frame's own chunks: optional ALPH, then VP8 or VP8L of the frame's size
                        var p = c.data + 16
                        let fend = c.data + c.size
                        var found = false
                        while p < fend {
                            guard fend - p >= 8 else { throw r.fail("\(fend - p) stray bytes in frame \(frames + 1)", at: p) }
                            let s = Int(r.le32(p + 4))
                            guard s <= fend - p - 8 else { throw r.fail("chunk '\(r.fourCC(p))' of \(s) bytes runs past frame \(frames + 1)", at: p) }
                            let cc = r.fourCC(p)
                            if cc == "VP8 " || cc == "VP8L" {
                                let (w, h) = try bitstream(&r, (cc, p + 8, s, p))
                                guard w == fw && h == fh else {
                                    throw r.fail("frame \(frames + 1) says \(fw)x\(fh) but its bitstream is \(w)x\(h)", at: p)
                                }
                                found = true
                            }
                            p += 8 + s + (s & 1)
                        }
                        guard found else { throw r.fail("frame \(frames + 1) has no VP8 or VP8L bitstream", at: c.at) }
                        frames += 1
                    }
                }
                guard frames > 0 else { throw r.fail("an animated WebP without any ANMF frame", at: c0.at) }
                return ImageInfo(format: .webp, width: cw, height: ch, frames: frames)
            }
            guard let c = chunks.first(where: { $0.cc == "VP8 " || $0.cc == "VP8L" }) else {
                throw r.fail("an extended WebP without a VP8 or VP8L bitstream", at: c0.at)
            }
            let (w, h) = try bitstream(&r, c)
            guard w == cw && h == ch else { throw r.fail("the canvas is \(cw)x\(ch) but the bitstream is \(w)x\(h)", at: c.at) }
            return ImageInfo(format: .webp, width: cw, height: ch, frames: 1)
        default:
            throw r.fail("first chunk '\(c0.cc)' (VP8, VP8L or VP8X expected)", at: c0.at)
        }
    }

    /// The size in a VP8 key frame or a VP8L header.
    static func bitstream(_ r: inout ImageBytes, _ c: (cc: String, data: Int, size: Int, at: Int)) throws -> (Int, Int) {
        let d = c.data
        if c.cc == "VP8 " {
            guard c.size >= 10 else { throw r.fail("a VP8 chunk of \(c.size) bytes", at: c.at) }
            guard r.b[d] & 1 == 0 else { throw r.fail("the VP8 frame is not a key frame", at: d) }
            guard r.b[d + 3] == 0x9D && r.b[d + 4] == 0x01 && r.b[d + 5] == 0x2A else { throw r.fail("no VP8 start code", at: d + 3) }
            let w = Int(r.le16(d + 6) & 0x3FFF), h = Int(r.le16(d + 8) & 0x3FFF)
            guard w > 0 && h > 0 else { throw r.fail("VP8 size \(w)x\(h)", at: d + 6) }
            let part = Int(r.le24(d) >> 5)
            guard part <= c.size - 10 else { throw r.fail("the VP8 first partition (\(part) bytes) runs past the chunk", at: d) }
            return (w, h)
        }
        guard c.size >= 5 else { throw r.fail("a VP8L chunk of \(c.size) bytes", at: c.at) }
        guard r.b[d] == 0x2F else { throw r.fail("VP8L signature 0x\(String(format2: r.b[d])) (0x2F)", at: d) }
        let bits = r.le32(d + 1)
        guard bits >> 29 == 0 else { throw r.fail("VP8L version \(bits >> 29) (0)", at: d + 4) }
        return (Int(bits & 0x3FFF) + 1, Int((bits >> 14) & 0x3FFF) + 1)
    }
}

/// X BitMap: `#define NAME_width W`, `#define NAME_height H`, optional hot spot defines,
/// then `static [unsigned] char NAME_bits[] = { 0x.., ... };` with exactly ((W+7)/8)*H
/// values (X10's `short` arrays: ((W+15)/16)*H). C comments and whitespace anywhere.
enum XBMReader {
    static func looksLikeXBM(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
        let d = Array("#define".utf8)
        return b.count - i >= d.count && zip(b[i...], d).allSatisfy { $0 == $1 }
    }

    static func read(_ r: inout ImageBytes) throws -> ImageInfo {
        var i = 0
        let b = r.b
        func skip() throws {
            while i < b.count {
                let c = b[i]
                if c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D || c == 0x0C { i += 1; continue }
                if c == 0x2F && i + 1 < b.count && b[i + 1] == 0x2A {
                    var j = i + 2
                    while j + 1 < b.count && !(b[j] == 0x2A && b[j + 1] == 0x2F) { j += 1 }
                    guard j + 1 < b.count else { throw r.fail("an unclosed comment", at: i) }
                    i = j + 2
                    continue
                }
                break
            }
        }
        func isIdent(_ c: UInt8) -> Bool { (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || (c >= 0x30 && c <= 0x39) || c == 0x5F }
        func word() throws -> (String, Int) {
            try skip()
            let s = i
            if i < b.count && b[i] == 0x23 { i += 1 }
            while i < b.count && isIdent(b[i]) { i += 1 }
            guard i > s else { throw r.fail("'\(i < b.count ? String(decoding: [b[i]], as: UTF8.self) : "end of body")' where a word was expected", at: s) }
            return (String(decoding: b[s..<i], as: UTF8.self), s)
        }
        func number() throws -> Int {
            let (w, at) = try word()
            var v = 0, digits = Substring(w), radix = 10
            if w.hasPrefix("0x") || w.hasPrefix("0X") { digits = w.dropFirst(2); radix = 16 }
            guard !digits.isEmpty, digits.count <= 9 else { throw r.fail("'\(w)' is not a number", at: at) }
            for c in digits {
                guard let d = c.hexDigitValue, d < radix else { throw r.fail("'\(w)' is not a number", at: at) }
                v = v * radix + d
            }
            return v
        }
        func punct(_ c: UInt8) throws {
            try skip()
            guard i < b.count, b[i] == c else {
                throw r.fail("'\(String(decoding: [c], as: UTF8.self))' expected", at: i)
            }
            i += 1
        }
        var width: Int? = nil, height: Int? = nil
        while true {
            try skip()
            guard i < b.count, b[i] == 0x23 else { break }
            let (d, at) = try word()
            guard d == "#define" else { throw r.fail("'\(d)' (only #define lines come before the bits)", at: at) }
            let (name, nat) = try word()
            let v = try number()
            if name.hasSuffix("_width") { width = v } else if name.hasSuffix("_height") { height = v }
            else if name.hasSuffix("_x_hot") || name.hasSuffix("_y_hot") {} else {
                throw r.fail("'#define \(name)' (NAME_width, NAME_height, NAME_x_hot or NAME_y_hot expected)", at: nat)
            }
        }
        guard let w = width, w > 0 else { throw r.fail("no positive NAME_width define", at: 0) }
        guard let h = height, h > 0 else { throw r.fail("no positive NAME_height define", at: 0) }
        var (kw, kat) = try word()
        if kw == "static" { (kw, kat) = try word() }
        if kw == "unsigned" { (kw, kat) = try word() }
        guard kw == "char" || kw == "short" else { throw r.fail("'\(kw)' (char or short expected)", at: kat) }
        let unit = kw == "char" ? 8 : 16
        let (name, nat) = try word()
        guard name.hasSuffix("_bits") else { throw r.fail("array '\(name)' (NAME_bits expected)", at: nat) }
        try punct(0x5B); try punct(0x5D); try punct(0x3D); try punct(0x7B)
        let rowUnits = (w + unit - 1) / unit
        let (expected, over) = rowUnits.multipliedReportingOverflow(by: h)
        guard !over else { throw r.fail("size \(w)x\(h)", at: 0) }
        var n = 0
        while true {
            try skip()
            if i < b.count && b[i] == 0x7D { i += 1; break }
            let at = i
            let v = try number()
            guard v < 1 << unit else { throw r.fail("value \(v) does not fit a \(kw)", at: at) }
            n += 1
            try skip()
            if i < b.count && b[i] == 0x2C { i += 1; continue }
            try punct(0x7D)
            break
        }
        guard n == expected else { throw r.fail("\(n) values in the bits array, \(expected) expected for \(w)x\(h) (truncated?)", at: i) }
        try punct(0x3B)
        return ImageInfo(format: .xbm, width: w, height: h, frames: 1)
    }
}
