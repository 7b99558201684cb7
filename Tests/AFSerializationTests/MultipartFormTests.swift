import XCTest
@testable import AFSerialization

#if canImport(Glibc)
import Glibc
#endif

/// Reads a whole body with reads of `chunk` bytes (0: sizes cycling 1...16).
func drainBody(_ s: MultipartBodyStream, chunk: Int = 65536) throws -> [UInt8] {
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: Swift.max(chunk, 16))
    var i = 0
    while true {
        let want = chunk == 0 ? 1 + i % 16 : chunk
        i += 1
        let n = buf.withUnsafeMutableBufferPointer { s.read(into: $0.baseAddress, maxLength: want) }
        if n < 0 { throw s.error ?? AFSError(.io, "read failed without an error") }
        if n == 0 { return out }
        out.append(contentsOf: buf[0..<n])
    }
}

func scratchPath(_ name: String) -> String {
    let dir = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    return dir + "/afs-swift-tests-\(getpid())-" + name
}

func writeFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

final class MultipartFormTests: XCTestCase {
    var serializer: RequestSerializer = {
        var s = RequestSerializer()
        try! s.setHeader("Accept-Language", nil)
        try! s.setHeader("User-Agent", nil)
        return s
    }()

    func testThatFieldsAndDataPartsHaveTheExactWireBytes() throws {
        let form = try serializer.multipartForm(method: "POST", url: "http://example.com/upload",
                                                params: ["b": ["x", 2], "a": "1 2", "n": .null, "d": .data([0, 255])])
        try form.setBoundary("XyZ")
        try form.appendFormData(Array("hello".utf8), name: "c")
        try form.appendFileData(Array("DATA".utf8), name: "up", filename: "a.txt", mimeType: "text/plain")
        let r = try form.finish()
        var expected = Array("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1 2".utf8)
        expected += Array("\r\n--XyZ\r\nContent-Disposition: form-data; name=\"b[]\"\r\n\r\nx".utf8)
        expected += Array("\r\n--XyZ\r\nContent-Disposition: form-data; name=\"b[]\"\r\n\r\n2".utf8)
        expected += Array("\r\n--XyZ\r\nContent-Disposition: form-data; name=\"d\"\r\n\r\n".utf8) + [0, 255]
        expected += Array("\r\n--XyZ\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\n".utf8)
        expected += Array("\r\n--XyZ\r\nContent-Disposition: form-data; name=\"c\"\r\n\r\nhello".utf8)
        expected += Array("\r\n--XyZ\r\nContent-Disposition: form-data; name=\"up\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nDATA".utf8)
        expected += Array("\r\n--XyZ--\r\n".utf8)
        let stream = try XCTUnwrap(r.bodyStream)
        XCTAssertEqual(try drainBody(stream), expected)
        XCTAssertEqual(stream.contentLength, UInt64(expected.count))
        XCTAssertEqual(r.header("Content-Length"), String(expected.count))
        XCTAssertEqual(r.header("Content-Type"), "multipart/form-data; boundary=XyZ")
        XCTAssertNil(r.body)
        XCTAssertThrowsError(try form.appendFormData([1], name: "late")) { XCTAssertEqual(($0 as? AFSError)?.status, .state) }
    }

    func testThatTheBodyIsTheSameForEveryReadSize() throws {
        let path = scratchPath("chunks.bin")
        defer { unlink(path) }
        let bytes = (0..<70000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        writeFile(path, bytes)
        let form = try serializer.multipartForm(method: "POST", url: "http://h/", params: ["f": "v"])
        try form.appendFile(path: path, name: "file")
        try form.appendFormData(Array(bytes[0..<333]), name: "m")
        let r = try form.finish()
        let s = try XCTUnwrap(r.bodyStream)
        let reference = try drainBody(s)
        for chunk in [1, 0, 4096, 65536, 4095, 100000] {
            try s.rewind()
            XCTAssertEqual(try drainBody(s, chunk: chunk), reference, "chunk \(chunk)")
        }
    }

    func testThatAFNetworkingsMIMETypesAreFound() {
        XCTAssertEqual(MIMETypes.forFilename("adn_0.cer"), "application/x-x509-ca-cert")
        XCTAssertEqual(MIMETypes.forFilename("/tmp/Photo.JPG"), "image/jpeg")
        XCTAssertEqual(MIMETypes.forFilename("a.docx"), "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
        XCTAssertEqual(MIMETypes.forFilename("a.plist"), "application/x-plist")
        XCTAssertEqual(MIMETypes.forFilename("noext"), "application/octet-stream")
        XCTAssertEqual(MIMETypes.forFilename("x.definitely-not-a-type"), "application/octet-stream")
        XCTAssertEqual(MIMETypes.forFilename("dir.d/file"), "application/octet-stream")
    }

    func testThatFileAppendsUseTheLastPathComponentAndItsType() throws {
        let path = scratchPath("adn_0.cer")
        defer { unlink(path) }
        writeFile(path, [0x30, 0x82])
        let form = try serializer.multipartForm(method: "POST", url: "http://h/", params: nil)
        try form.setBoundary("B")
        try form.appendFile(path: path, name: "cert")
        let body = try drainBody(try XCTUnwrap(form.finish().bodyStream))
        let name = String(path.split(separator: "/").last!)
        let expected = Array("--B\r\nContent-Disposition: form-data; name=\"cert\"; filename=\"\(name)\"\r\nContent-Type: application/x-x509-ca-cert\r\n\r\n".utf8)
            + [0x30, 0x82] + Array("\r\n--B--\r\n".utf8)
        XCTAssertEqual(body, expected)
    }

    func testThatBadFilesAreRefusedAtAppend() throws {
        let form = try serializer.multipartForm(method: "POST", url: "http://h/", params: nil)
        XCTAssertThrowsError(try form.appendFile(path: "/definitely/missing.bin", name: "f")) { e in
            let e = e as! AFSError
            XCTAssertEqual(e.status, .file)
            XCTAssertEqual(e.osErrno, ENOENT)
            XCTAssertTrue(e.message.contains("/definitely/missing.bin"))
        }
        XCTAssertThrowsError(try form.appendFile(path: "/tmp", name: "f")) { e in
            XCTAssertEqual((e as! AFSError).osErrno, EISDIR)
        }
        XCTAssertThrowsError(try form.appendFile(path: "/dev/null", name: "f")) { e in
            XCTAssertEqual((e as! AFSError).status, .file)
        }
        XCTAssertTrue(form.parts.isEmpty)
    }

    func testThatNamesAndFilenamesEscapeQuotesAndLineBreaks() {
        XCTAssertEqual(BodyPart.contentDisposition(name: "a\"b\r\nc", filename: "x\".txt"),
                       "form-data; name=\"a%22b%0D%0Ac\"; filename=\"x%22.txt\"")
        XCTAssertEqual(BodyPart.escapeQuoted("plain é"), "plain é")
    }

    func testThatCustomPartHeadersAreValidated() throws {
        let form = try serializer.multipartForm(method: "POST", url: "http://h/", params: nil)
        XCTAssertThrowsError(try form.appendPart(headers: [("X-Bad", "a\r\nInjected: 1")], body: [])) {
            XCTAssertEqual(($0 as! AFSError).status, .invalidHeader)
        }
        XCTAssertThrowsError(try form.appendPart(headers: [("Bad Name", "v")], body: [])) {
            XCTAssertEqual(($0 as! AFSError).status, .invalidHeader)
        }
        XCTAssertThrowsError(try form.appendFileData([], name: "n", filename: "f", mimeType: "a\nb")) {
            XCTAssertEqual(($0 as! AFSError).status, .invalidHeader)
        }
    }

    func testThatBoundariesAreCheckedAndCollisionsRefused() throws {
        XCTAssertThrowsError(try MultipartForm.validateBoundary(""))
        XCTAssertThrowsError(try MultipartForm.validateBoundary(String(repeating: "a", count: 71)))
        XCTAssertThrowsError(try MultipartForm.validateBoundary("a b"))
        XCTAssertNoThrow(try MultipartForm.validateBoundary("AZaz09'+_-."))
        let generated = MultipartForm.generateBoundary()
        XCTAssertTrue(generated.hasPrefix("Boundary+"))
        XCTAssertEqual(generated.utf8.count, 25)
        XCTAssertTrue(generated.dropFirst(9).allSatisfy { "0123456789ABCDEF".contains($0) })

        let form = try serializer.multipartForm(method: "POST", url: "http://h/", params: nil)
        try form.setBoundary("sep")
        try form.appendFormData(Array("x--sep".utf8), name: "n")
        XCTAssertThrowsError(try form.finish()) { XCTAssertEqual(($0 as! AFSError).status, .invalidArgument) }
        try form.setBoundary("other")
        XCTAssertNoThrow(try form.finish())

        let form2 = try serializer.multipartForm(method: "POST", url: "http://h/", params: nil)
        let first = form2.boundary
        try form2.appendFormData(Array(first.utf8), name: "n")
        _ = try form2.finish()
        XCTAssertNotEqual(form2.boundary, first)
    }

    func testThatGETAndHEADAreRefusedAndEmptyFormsArePlainRequests() throws {
        XCTAssertThrowsError(try serializer.multipartForm(method: "GET", url: "http://h/", params: nil)) {
            XCTAssertEqual(($0 as! AFSError).status, .invalidMethod)
        }
        XCTAssertThrowsError(try serializer.multipartForm(method: "head", url: "http://h/", params: nil)) {
            XCTAssertEqual(($0 as! AFSError).status, .invalidMethod)
        }
        let r = try serializer.multipartForm(method: "POST", url: "http://h/", params: nil).finish()
        XCTAssertNil(r.bodyStream)
        XCTAssertEqual(r.body, [])
        XCTAssertEqual(r.header("Content-Type"), "application/x-www-form-urlencoded")
    }

    func testThatUnencodableValuesNameTheField() throws {
        var s = serializer
        s.stringEncoding = .ascii
        XCTAssertThrowsError(try s.multipartForm(method: "POST", url: "http://h/", params: ["user": ["name": "Jürgen"]])) { e in
            let e = e as! AFSError
            XCTAssertEqual(e.status, .encoding)
            XCTAssertTrue(e.message.contains("user[name]"), e.message)
        }
    }
}
