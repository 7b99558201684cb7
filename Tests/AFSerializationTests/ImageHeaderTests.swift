import XCTest
@testable import AFSerialization

/// The image header readers on files built here byte by byte, one structural rule per case
/// (the Pillow corpus is in Tests/python/test_images.py).
final class ImageHeaderTests: XCTestCase {
    // MARK: builders

    static let crcTable: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
    static func crc(_ b: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for x in b { c = crcTable[Int((c ^ UInt32(x)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
    static func le16(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    static func be16(_ v: UInt32) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let td = Array(type.utf8) + data
        return be32(UInt32(data.count)) + td + be32(crc(td))
    }
    static func ihdr(_ w: UInt32, _ h: UInt32, depth: UInt8 = 8, color: UInt8 = 2) -> [UInt8] {
        chunk("IHDR", be32(w) + be32(h) + [depth, color, 0, 0, 0])
    }
    static let sig: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    static func png(_ chunks: [[UInt8]]) -> [UInt8] { sig + chunks.flatMap { $0 } }
    static func fctl(_ seq: UInt32, _ w: UInt32, _ h: UInt32, x: UInt32 = 0, y: UInt32 = 0) -> [UInt8] {
        chunk("fcTL", be32(seq) + be32(w) + be32(h) + be32(x) + be32(y) + [0, 1, 0, 10, 0, 0])
    }

    func info(_ b: [UInt8], allowed: [ImageFormat]? = nil) throws -> ImageInfo { try ImageHeader.read(b, allowed: allowed) }

    func refused(_ b: [UInt8], _ needle: String, allowed: [ImageFormat]? = nil, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try info(b, allowed: allowed), file: file, line: line) { e in
            let e = e as! AFSError
            XCTAssertEqual(e.status, .invalidImage, file: file, line: line)
            XCTAssertTrue(e.message.contains(needle), "\(e.message) lacks \(needle)", file: file, line: line)
        }
    }

    // MARK: PNG

    func testPNG() throws {
        let idat = Self.chunk("IDAT", [1, 2, 3]), iend = Self.chunk("IEND", [])
        XCTAssertEqual(try info(Self.png([Self.ihdr(7, 3), idat, iend])), ImageInfo(format: .png, width: 7, height: 3, frames: 1))
        XCTAssertEqual(try info(Self.png([Self.ihdr(7, 3), idat, iend]) + [9, 9]).width, 7)  // after IEND: ignored
        refused(Self.png([idat, Self.ihdr(7, 3), iend]), "the first chunk is 'IDAT', not 'IHDR'")
        refused(Self.png([Self.ihdr(7, 3, depth: 4), idat, iend]), "bit depth 4 with color type 2")
        refused(Self.png([Self.ihdr(7, 3, color: 3), idat, iend]), "without PLTE")
        refused(Self.png([Self.ihdr(0, 3), idat, iend]), "width 0")
        refused(Self.png([Self.ihdr(7, 3), iend]), "IEND before any IDAT")
        refused(Self.png([Self.ihdr(7, 3), idat]), "the body ends inside the length and type of chunk 2")
        // APNG: acTL's count must match the fcTL chunks, frames inside the canvas
        let actl = Self.chunk("acTL", Self.be32(2) + Self.be32(0))
        let apng = Self.png([Self.ihdr(7, 3), actl, Self.fctl(0, 7, 3), idat, Self.fctl(1, 2, 2, x: 5, y: 1),
                             Self.chunk("fdAT", Self.be32(2) + [1]), iend])
        XCTAssertEqual(try info(apng).frames, 2)
        refused(Self.png([Self.ihdr(7, 3), actl, Self.fctl(0, 7, 3), idat, iend]), "acTL announces 2 frames but there are 1 fcTL chunks")
        refused(Self.png([Self.ihdr(7, 3), actl, Self.fctl(0, 7, 3), idat, Self.fctl(1, 3, 2, x: 5), iend]), "outside the 7x3 canvas")
        refused(Self.png([Self.ihdr(7, 3), idat, actl, iend]), "acTL after IDAT")
    }

    // MARK: JPEG

    static func jpeg(sof: [UInt8] = [0xFF, 0xC2], w: UInt32 = 5, h: UInt32 = 4, scans: [[UInt8]] = [[0x12, 0x34]],
                     extra: [UInt8] = []) -> [UInt8] {
        var b: [UInt8] = [0xFF, 0xD8]
        b += [0xFF, 0xE0] + be16(16) + Array("JFIF\0".utf8) + [1, 1, 0] + be16(1) + be16(1) + [0, 0]
        b += sof + be16(11) + [8] + be16(h) + be16(w) + [1, 1, 0x11, 0]
        b += extra
        for s in scans { b += [0xFF, 0xDA] + be16(8) + [1, 1, 0, 0, 63, 0] + s }
        return b + [0xFF, 0xD9]
    }

    func testJPEG() throws {
        XCTAssertEqual(try info(Self.jpeg()), ImageInfo(format: .jpeg, width: 5, height: 4, frames: 1))
        // entropy-coded data: stuffed 0xFF00, RSTn and fill bytes are data; several scans
        XCTAssertEqual(try info(Self.jpeg(scans: [[0xFF, 0x00, 0xFF, 0xD3, 0x01], [0xFF, 0xFF, 0xD0, 7]])).height, 4)
        // fill bytes before a marker, and baseline / lossless / arithmetic SOFs
        var filled = Self.jpeg(sof: [0xFF, 0xFF, 0xFF, 0xC0])
        XCTAssertEqual(try info(filled).width, 5)
        for code: UInt8 in [0xC1, 0xC3, 0xC9, 0xCF] { XCTAssertEqual(try info(Self.jpeg(sof: [0xFF, code])).width, 5) }
        refused(Self.jpeg(sof: [0xFF, 0xC0], h: 0), "height 0 (a DNL-defined height is not read)")
        refused(Self.jpeg(extra: [0xFF, 0xC0] + Self.be16(11) + [8, 0, 1, 0, 1, 1, 1, 0x11, 0]), "a second frame header (SOF)")
        filled.removeLast(2)
        refused(filled, "the body ends inside the entropy-coded data of scan 1")
        refused([0xFF, 0xD8, 0xFF, 0xDA] + Self.be16(8) + [1, 1, 0, 0, 63, 0, 0xFF, 0xD9], "SOS before any SOF")
        var broken = Self.jpeg()
        broken[20] = 0x00  // the SOF marker after APP0
        refused(broken, "0x0 where a marker (0xFF) was expected at byte offset 20")
        refused([0xFF, 0xD8, 0x00], "no known signature at byte offset 0")
    }

    // MARK: GIF

    func testGIF() throws {
        var b = Array("GIF89a".utf8) + Self.le16(10) + Self.le16(6) + [0x80, 0, 0] + [UInt8](repeating: 0, count: 6)
        b += [0x21, 0xFF, 3, 1, 2, 3, 0]  // an application extension with one sub-block
        for _ in 0..<3 { b += [0x2C] + Self.le16(0) + Self.le16(0) + Self.le16(10) + Self.le16(6) + [0x80] + [UInt8](repeating: 0, count: 6) + [2, 2, 0x4C, 0x01, 0] }
        XCTAssertEqual(try info(b + [0x3B]), ImageInfo(format: .gif, width: 10, height: 6, frames: 3))
        refused(Array("GIF87a".utf8) + Self.le16(1) + Self.le16(1) + [0, 0, 0, 0x3B], "the trailer before any image")
        refused(b, "the body ends inside a block introducer")
        refused(b + [0x2A], "block introducer 0x2A")
    }

    // MARK: BMP

    static func bmp(header: [UInt8], pixels: Int, offset: Int? = nil) -> [UInt8] {
        let off = offset ?? 14 + header.count
        let total = off + pixels
        return Array("BM".utf8) + le32(UInt32(total)) + [0, 0, 0, 0] + le32(UInt32(off)) + header
            + [UInt8](repeating: 0, count: off - 14 - header.count + pixels)
    }
    static func infoHeader(size: Int, w: Int32, h: Int32, bpp: UInt32, compression: UInt32 = 0, sizeImage: UInt32 = 0) -> [UInt8] {
        var b = le32(UInt32(size)) + le32(UInt32(bitPattern: w)) + le32(UInt32(bitPattern: h)) + le16(1) + le16(bpp)
        b += le32(compression) + le32(sizeImage) + [UInt8](repeating: 0, count: 16)
        return b + [UInt8](repeating: 0, count: size - b.count)
    }

    func testBMPHeaderVersions() throws {
        let core = Self.le32(12) + Self.le16(5) + Self.le16(3) + Self.le16(1) + Self.le16(24)
        XCTAssertEqual(try info(Self.bmp(header: core, pixels: 16 * 3)), ImageInfo(format: .bmp, width: 5, height: 3, frames: 1))
        for size in [40, 52, 56, 108, 124] {
            XCTAssertEqual(try info(Self.bmp(header: Self.infoHeader(size: size, w: 5, h: -3, bpp: 32), pixels: 60)).height, 3, "\(size)")
        }
        XCTAssertEqual(try info(Self.bmp(header: Self.infoHeader(size: 40, w: 5, h: 3, bpp: 8, compression: 1, sizeImage: 10), pixels: 1024 + 10)).width, 5)
        refused(Self.bmp(header: Self.infoHeader(size: 40, w: 5, h: 3, bpp: 24), pixels: 47), "the body ends inside the pixel data")
        refused(Self.bmp(header: Self.infoHeader(size: 40, w: 5, h: 3, bpp: 7), pixels: 60), "bit count 7")
        refused(Self.bmp(header: Self.infoHeader(size: 44, w: 5, h: 3, bpp: 8), pixels: 60), "DIB header size 44")
        refused(Self.bmp(header: Self.infoHeader(size: 40, w: 5, h: -3, bpp: 8, compression: 1, sizeImage: 4), pixels: 2000), "negative (top-down) height")
    }

    // MARK: TIFF

    static func tiff(bigEndian: Bool, pages: [(w: UInt32, h: UInt32)], loop: Bool = false, stripBeyond: Bool = false) -> [UInt8] {
        func u16(_ v: UInt32) -> [UInt8] { bigEndian ? be16(v) : le16(v) }
        func u32(_ v: UInt32) -> [UInt8] { bigEndian ? be32(v) : le32(v) }
        var out: [UInt8] = (bigEndian ? Array("MM".utf8) : Array("II".utf8)) + u16(42) + u32(8)
        for (i, p) in pages.enumerated() {
            let ifd = out.count
            let data = ifd + 2 + 12 * 4 + 4
            let next = i + 1 < pages.count ? UInt32(data + 4) : (loop ? 8 : 0)
            out += u16(4)
            out += u16(256) + u16(3) + u32(1) + u16(p.w) + u16(0)
            out += u16(257) + u16(4) + u32(1) + u32(p.h)
            out += u16(273) + u16(4) + u32(1) + u32(UInt32(data))
            out += u16(279) + u16(4) + u32(1) + u32(stripBeyond ? 5 : 4)
            out += u32(next) + [1, 2, 3, 4]
        }
        return out
    }

    func testTIFF() throws {
        XCTAssertEqual(try info(Self.tiff(bigEndian: false, pages: [(9, 4)])), ImageInfo(format: .tiff, width: 9, height: 4, frames: 1))
        XCTAssertEqual(try info(Self.tiff(bigEndian: true, pages: [(9, 4), (3, 2), (1, 1)])), ImageInfo(format: .tiff, width: 9, height: 4, frames: 3))
        refused(Self.tiff(bigEndian: true, pages: [(9, 4), (3, 2)], loop: true), "the IFD chain loops back to the IFD at 8")
        refused(Self.tiff(bigEndian: false, pages: [(9, 4)], stripBeyond: true), "strip 0 of IFD 0 (5 bytes from offset 62)")
        refused(Array("II".utf8) + [43, 0, 8, 0, 0, 0, 0, 0], "BigTIFF is not read")
        refused(Self.tiff(bigEndian: false, pages: [(0, 4)]), "IFD 0 has no ImageWidth (or it is 0)")
    }

    // MARK: ICO

    func testICOPicksTheLargestEntry() throws {
        let small = Self.png([Self.ihdr(16, 16), Self.chunk("IDAT", [0]), Self.chunk("IEND", [])])
        let big = Self.png([Self.ihdr(256, 256), Self.chunk("IDAT", [0]), Self.chunk("IEND", [])])
        func ico(_ entries: [(UInt8, UInt8, [UInt8])]) -> [UInt8] {
            var dir: [UInt8] = [0, 0, 1, 0] + Self.le16(UInt32(entries.count))
            var data: [UInt8] = []
            var off = 6 + 16 * entries.count
            for (w, h, b) in entries {
                dir += [w, h, 0, 0] + Self.le16(1) + Self.le16(32) + Self.le32(UInt32(b.count)) + Self.le32(UInt32(off))
                data += b
                off += b.count
            }
            return dir + data
        }
        XCTAssertEqual(try info(ico([(16, 16, small), (0, 0, big)])), ImageInfo(format: .ico, width: 256, height: 256, frames: 2))
        refused(ico([(32, 32, small)]), "entry 0 says 32x32 but its PNG is 16x16")
        var cut = ico([(16, 16, small)])
        cut.removeLast()
        refused(cut, "the body ends inside entry 0")
    }

    // MARK: WebP

    static func riff(_ chunks: [[UInt8]]) -> [UInt8] {
        let body = Array("WEBP".utf8) + chunks.flatMap { $0 }
        return Array("RIFF".utf8) + le32(UInt32(body.count)) + body
    }
    static func wchunk(_ cc: String, _ d: [UInt8]) -> [UInt8] { Array(cc.utf8) + le32(UInt32(d.count)) + d + (d.count % 2 == 1 ? [0] : []) }
    static func vp8l(_ w: UInt32, _ h: UInt32) -> [UInt8] { wchunk("VP8L", [0x2F] + le32((w - 1) | (h - 1) << 14) + [0]) }
    static func vp8x(_ w: UInt32, _ h: UInt32, flags: UInt8) -> [UInt8] {
        wchunk("VP8X", [flags, 0, 0, 0] + Array(le32(w - 1).prefix(3)) + Array(le32(h - 1).prefix(3)))
    }

    func testWebP() throws {
        XCTAssertEqual(try info(Self.riff([Self.vp8l(300, 2)])), ImageInfo(format: .webp, width: 300, height: 2, frames: 1))
        let vp8 = Self.wchunk("VP8 ", [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A] + Self.le16(12) + Self.le16(7) + [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(try info(Self.riff([vp8])).height, 7)
        XCTAssertEqual(try info(Self.riff([Self.vp8x(12, 7, flags: 0x10), Self.wchunk("ALPH", [0, 1]), vp8])).width, 12)
        refused(Self.riff([Self.vp8x(13, 7, flags: 0), vp8]), "the canvas is 13x7 but the bitstream is 12x7")
        func anmf(_ x: UInt32, _ w: UInt32, _ h: UInt32) -> [UInt8] {
            Self.wchunk("ANMF", Array(Self.le32(x / 2).prefix(3)) + [0, 0, 0] + Array(Self.le32(w - 1).prefix(3)) + Array(Self.le32(h - 1).prefix(3)) + [0, 0, 0, 0] + Self.vp8l(w, h))
        }
        let anim = Self.wchunk("ANIM", [0, 0, 0, 0, 0, 0])
        XCTAssertEqual(try info(Self.riff([Self.vp8x(20, 10, flags: 0x02), anim, anmf(0, 20, 10), anmf(4, 6, 6), anmf(0, 1, 1)])).frames, 3)
        refused(Self.riff([Self.vp8x(20, 10, flags: 0x02), anim, anmf(16, 6, 6)]), "frame 1 6x6 at (16, 0) outside the 20x10 canvas")
        refused(Self.riff([Self.vp8x(20, 10, flags: 0x02), anim]), "an animated WebP without any ANMF frame")
        var cut = Self.riff([Self.vp8l(3, 2)])
        cut.removeLast()
        refused(cut, "the body ends inside the RIFF data")
    }

    // MARK: XBM

    func testXBM() throws {
        let x11 = "/* a comment */\n#define a_width 10\n#define a_height 2\n#define a_x_hot 1\n#define a_y_hot 1\nstatic unsigned char a_bits[] = {\n 0x00, 0x01, /* row 2 */ 0xff, 0x03, };\n"
        XCTAssertEqual(try info(Array(x11.utf8), allowed: [.xbm]), ImageInfo(format: .xbm, width: 10, height: 2, frames: 1))
        let x10 = "#define b_width 17\n#define b_height 1\nstatic short b_bits[] = { 0x0001, 0x0000 };"
        XCTAssertEqual(try info(Array(x10.utf8), allowed: [.xbm]).width, 17)
        refused(Array("#define c_width 8\n#define c_height 2\nstatic char c_bits[] = { 0x00 };".utf8), "1 values in the bits array, 2 expected for 8x2", allowed: [.xbm])
        refused(Array("#define c_width 8\nstatic char c_bits[] = { 0x00 };".utf8), "no positive NAME_height define", allowed: [.xbm])
        refused(Array("#define c_width 8\n#define c_height 1\nstatic char c_bits[] = { 0x100 };".utf8), "value 256 does not fit a char", allowed: [.xbm])
    }

    // MARK: the serializer

    func testTheImageResult() throws {
        var rs = ResponseSerializer(kind: .image)
        try rs.setImageScale(2)
        let b = Self.png([Self.ihdr(7, 3), Self.chunk("IDAT", [1]), Self.chunk("IEND", [])])
        let r = rs.responseObject(statusCode: 200, contentType: "image/png", body: b)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.value, .dict(ValueDict([("format", "png"), ("width", 7), ("height", 3), ("scale", 2.0),
                                                 ("point_width", 3.5), ("point_height", 1.5), ("frames", 1), ("data", .data(b))])))
        rs.setMaxImagePixels(20)
        XCTAssertEqual(rs.responseObject(statusCode: 200, contentType: "image/png", body: b).error?.status, .limit)
        let mismatch = ResponseSerializer(kind: .image).responseObject(statusCode: 200, contentType: "image/gif", body: b)
        XCTAssertEqual(mismatch.error?.message, "content type image/gif says GIF but the body is a PNG image")
    }
}
