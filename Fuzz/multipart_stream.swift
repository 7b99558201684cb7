// Fuzz target: multipart/form-data bodies (AFStreamingMultipartFormData,
// AFMultipartBodyStream) driven by a random script.
//
// The input is a script: optional parameters (field parts), then parts of every kind —
// field, file data, custom headers, file (temporary files written once per process), and
// callback streams whose declared length is honest or not (yielding fewer or more bytes, or
// failing, or returning more than asked, or failing to rewind, or unable to rewind) — some
// appends that must be refused (bad header names or values, CR/LF/NUL in a MIME type), a
// fixed boundary (a long one, or `x`, which collides easily), optional throttling; then
// `finish()` and a random sequence of reads (1..70000 bytes), seeks (sometimes past the end),
// rewinds, `write(to:)` into a file, on the stream and on a second reader of the same body.
//
// An independent builder makes the expected body from the script (docs/DESIGN.md, "Multipart":
// boundary lines, `Name: value` headers, escaped names, `\r\n--B--\r\n`). Properties:
// - refused appends fail with `.invalidHeader` and add no part; `finish()` refuses the
//   boundary (`.invalidArgument`) exactly when `--B` occurs in some part's headers or
//   in-memory body, and the form stays usable (the script retries with another boundary);
// - `Content-Length` and `contentLength` equal the expected body's length, `Content-Type` is
//   `multipart/form-data; boundary=B`;
// - a read at position p asked for k bytes either returns exactly min(k, packet size,
//   length - p) (a second reader from `makeReader()` is not throttled, as AFNetworking's
//   copy was not) bytes equal to the expected body at p (0 at the end), or fails; a successful
//   read never delivers a byte that a dishonest source could not have produced correctly
//   (for a source declaring L bytes at body offset S that yields A: [S+min(A,L), S+L], the
//   last one being the first byte after the body, which needs the end check, except in a
//   run of reads that starts there after a seek: that run skipped the part unread);
// - a failure (-1 or a thrown seek/write) has a status the script allows (`.lengthMismatch`
//   for a lying length, `.io` for a failing source, `.unsupported` for a source without
//   rewind, `.invalidArgument` for a seek past the end) and a source that could have caused
//   it within the bytes the call touched (a part skipped by a seek to just after its body
//   touches nothing); an honest script never fails; after a failed read
//   every read fails with the same error and the position does not move, until a seek;
// - `position`, `hasBytesAvailable` and the progress callback follow the delivered bytes;
// - `write(to:)` writes exactly the expected bytes from the position on;
// - finally a fresh reader reads the whole body: with a dishonest source it must fail (never
//   a body whose length differs from Content-Length); otherwise it gives the expected body,
//   which a reference multipart parser splits back into the script's parts.
@testable import AFSerialization

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Process-wide temporary files

struct TempFiles {
    var paths: [String] = []
    var contents: [[UInt8]] = []
    var outFD: Int32 = -1
    var dir = ""
}

let tempFiles: TempFiles = {
    var t = TempFiles()
    // A directory per process, files with fixed names (their names are in the bodies).
    var template = Array("/tmp/afs-fuzz-XXXXXX".utf8CString)
    let dir = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) }
    guard let dir else { fatalError("mkdtemp failed") }
    for (n, (name, size)) in [("empty.txt", 0), ("seven.bin", 7), ("page.html", 4099), ("big.png", 70003)].enumerated() {
        let path = dir + "/" + name
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        precondition(fd >= 0, "cannot create \(path)")
        let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ n &* 13 &+ ($0 >> 8)) }
        var off = 0
        while off < bytes.count {
            let r = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + off, bytes.count - off) }
            precondition(r > 0, "writing a temporary file failed")
            off += r
        }
        close(fd)
        t.paths.append(path)
        t.contents.append(bytes)
    }
    t.outFD = open(dir + "/out", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    precondition(t.outFD >= 0, "cannot create the output file")
    unlink(dir + "/out")  // only the descriptor is used
    t.dir = dir
    atexit {
        for p in tempFiles.paths { unlink(p) }
        rmdir(tempFiles.dir)
    }
    return t
}()

// MARK: - Callback sources

enum Honesty {
    case honest, short, long, failing, liar, rewindFails
}

final class ScriptSource: PartStreamSource {
    let data: [UInt8]
    let failAt: Int?
    let liar: Bool
    let rewindFails: Bool
    let chunk: Int
    let canRewind: Bool
    var pos = 0

    init(data: [UInt8], failAt: Int?, liar: Bool, rewindFails: Bool, chunk: Int, canRewind: Bool) {
        self.data = data
        self.failAt = failAt
        self.liar = liar
        self.rewindFails = rewindFails
        self.chunk = chunk
        self.canRewind = canRewind
    }

    func read(into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        if liar { return maxLength + 1 }  // claims more than asked (writes nothing)
        if let f = failAt, pos >= f { return -1 }
        var k = Swift.min(maxLength, chunk, data.count - pos)
        if let f = failAt { k = Swift.min(k, f - pos) }
        if k <= 0 { return 0 }
        _ = data.withUnsafeBufferPointer { memcpy(buffer, $0.baseAddress! + pos, k) }
        pos += k
        return k
    }

    func rewind() -> Bool {
        if rewindFails { return false }
        pos = 0
        return true
    }
}

// MARK: - The script's parts

struct ExpectedPart {
    var headers: [(String, String)]
    /// The body as it must appear (declared length; bytes no honest source gives are 0).
    var body: [UInt8]
    var inMemory: Bool
    /// Closed intervals relative to the body start that must never be delivered.
    var poison: (Int, Int)? = nil
    /// Statuses this part may cause, and where (relative closed interval).
    var trouble: [(lo: Int, hi: Int, status: AFSStatus)] = []
    /// A callback whose length differs from the declared one (or that fails or lies).
    var lying = false
}

func escapeQuotedRef(_ s: String) -> String {
    var out = ""
    for c in s.unicodeScalars {
        switch c {
        case "\"": out += "%22"
        case "\\": out += "\\\\"
        case "\r": out += "%0D"
        case "\n": out += "%0A"
        default: out.unicodeScalars.append(c)
        }
    }
    return out
}

func disposition(_ name: String, _ filename: String?) -> String {
    var s = "form-data; name=\"" + escapeQuotedRef(name) + "\""
    if let f = filename { s += "; filename=\"" + escapeQuotedRef(f) + "\"" }
    return s
}

/// A header value as the library writes it: without leading and trailing spaces and tabs.
func trimmedRef(_ v: [UInt8]) -> [UInt8] {
    var u = v[...]
    while let f = u.first, f == 0x20 || f == 0x09 { u.removeFirst() }
    while let l = u.last, l == 0x20 || l == 0x09 { u.removeLast() }
    return Array(u)
}

func headerBlock(_ headers: [(String, String)]) -> [UInt8] {
    var out: [UInt8] = []
    for (n, v) in headers { out += Array(n.utf8) + Array(": ".utf8) + trimmedRef(Array(v.utf8)) + [13, 10] }
    return out + [13, 10]
}

let tokenChars = Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)

func headerName(_ inp: inout FuzzInput, valid: Bool) -> String {
    if valid {
        if inp.oneIn(3) { return ["X-Custom", "Content-Type", "Content-Disposition", "Content-ID"][inp.below(4)] }
        let n = 1 + inp.below(12)
        return String(decoding: (0..<n).map { _ in tokenChars[inp.below(tokenChars.count)] }, as: UTF8.self)
    }
    return ["", "Bad Name", "X:Y", "Na\u{E9}me", "A\r\nB", "(x)", "a\"b"][inp.below(7)]
}

/// A string without CR, LF or NUL.
func headerValue(_ inp: inout FuzzInput, gen: inout TreeGen) -> String {
    let s = gen.string(&inp)
    return String(String.UnicodeScalarView(s.unicodeScalars.filter { $0 != "\r" && $0 != "\n" && $0 != "\0" }))
}

func badHeaderValue(_ inp: inout FuzzInput) -> String {
    ["a\rb", "a\nb", "a\0b", "\r\n", "x\r\nInjected: 1"][inp.below(5)]
}

func pattern(_ seed: UInt8, _ n: Int) -> [UInt8] {
    (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &+ ($0 >> 9)) }
}

// MARK: - Reference parser

/// Splits a multipart body on `--B`; nil when it is not well formed.
func parseMultipart(_ body: [UInt8], boundary: String) -> [(headers: [(String, String)], body: [UInt8])]? {
    let b = Array(boundary.utf8)
    let first = Array("--".utf8) + b + [13, 10]
    let delim = [13, 10] + Array("--".utf8) + b
    guard body.count >= first.count, Array(body[0..<first.count]) == first else { return nil }
    var parts: [(headers: [(String, String)], body: [UInt8])] = []
    var i = first.count
    while true {
        // Find the next delimiter.
        var j = i
        var found = -1
        while j + delim.count <= body.count {
            if body[j] == 13 && Array(body[j..<(j + delim.count)]) == delim { found = j; break }
            j += 1
        }
        guard found >= 0 else { return nil }
        let content = Array(body[i..<found])
        // Headers: lines up to an empty line.
        var headers: [(String, String)] = []
        var k = 0
        while true {
            guard let crlf = (k..<Swift.max(k, content.count - 1)).first(where: { content[$0] == 13 && content[$0 + 1] == 10 }) else { return nil }
            if crlf == k { k += 2; break }
            let line = Array(content[k..<crlf])
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon + 1 < line.count, line[colon + 1] == 0x20 else { return nil }
            headers.append((String(decoding: line[..<colon], as: UTF8.self), String(decoding: line[(colon + 2)...], as: UTF8.self)))
            k = crlf + 2
        }
        parts.append((headers, Array(content[k...])))
        let after = found + delim.count
        if after + 2 <= body.count, body[after] == 13, body[after + 1] == 10 {
            i = after + 2
            continue
        }
        if after + 4 == body.count, Array(body[after...]) == Array("--\r\n".utf8) { return parts }
        return nil
    }
}

// MARK: - The model of one reader

final class ReaderModel {
    let stream: MultipartBodyStream
    var position = 0
    var sticky: AFSError?
    var reported: UInt64 = 0
    /// Where the current run of contiguous reads began: 0, or the last seek's target.
    var runStart = 0
    init(_ s: MultipartBodyStream) { stream = s }
}

struct Script {
    var parts: [ExpectedPart] = []
    var expected: [UInt8] = []
    var poison: [(Int, Int)] = []
    var trouble: [(lo: Int, hi: Int, status: AFSStatus)] = []
    var hasLyingLength: Bool { parts.contains { $0.lying } }

    mutating func build(boundary: String) {
        let b = Array(boundary.utf8)
        expected = []
        poison = []
        trouble = []
        for (i, p) in parts.enumerated() {
            expected += (i == 0 ? [] : [13, 10]) + Array("--".utf8) + b + [13, 10]
            expected += headerBlock(p.headers)
            let s = expected.count
            expected += p.body
            if let (lo, hi) = p.poison { poison.append((s + lo, s + hi)) }
            for t in p.trouble { trouble.append((s + t.lo, s + t.hi, t.status)) }
        }
        expected += [13, 10] + Array("--".utf8) + b + Array("--\r\n".utf8)
    }

    /// `runStart`: where the reader's contiguous run began. A run that begins exactly at the
    /// byte after a dishonest body (a seek there) skipped that body and never asked its source,
    /// so that byte needs no end check in this run.
    func checkNoPoison(_ lo: Int, _ count: Int, runStart: Int, _ what: String) {
        guard count > 0 else { return }
        let hi = lo + count - 1
        for (a, b) in poison where lo <= b && hi >= a && runStart != b {
            fail("\(what): delivered bytes \(lo)...\(hi), which include \(a)...\(b) that a dishonest source cannot have given correctly")
        }
    }

    /// Whether a failure with `status` is explained by a source within [lo, hi]. A part whose
    /// body ends exactly at `runStart` (a run of reads or a seek that begins just after it)
    /// was skipped unread and explains nothing.
    func justified(_ status: AFSStatus, _ lo: Int, _ hi: Int, runStart: Int) -> Bool {
        trouble.contains { $0.status == status && lo <= $0.hi && hi >= $0.lo && $0.hi != runStart }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var inp = FuzzInput(data, size)
    var gen = TreeGen()
    gen.maxDepth = 3
    gen.maxCount = 4
    gen.budget = 30
    let files = tempFiles
    var script = Script()

    // Parameters: field parts in query-pair order.
    let serializer = RequestSerializer()
    var params: Value? = nil
    if inp.oneIn(4) {
        var d = ValueDict()
        for _ in 0..<inp.below(4) { d[gen.string(&inp)] = gen.value(&inp, depth: 1) }
        params = .dict(d)
    }
    // A NUL in a parameter's part name is refused (.invalidHeader) like in any part header.
    var nulInParams = false
    if let params {
        try? QueryString.forEachPair(params, style: serializer.queryStyle) { name, _ in
            if name.contains(0) { nulInParams = true }
        }
    }
    let form: MultipartForm
    do {
        form = try serializer.multipartForm(method: inp.bool() ? "POST" : "PUT", url: "http://example.com/upload", params: params)
        require(!nulInParams, "a parameter name with a NUL was accepted")
    } catch let e as AFSError where nulInParams && e.status == .invalidHeader {
        return 0
    } catch {
        fail("multipartForm failed: \(error)")
    }
    if let params {
        try? QueryString.forEachPair(params, style: serializer.queryStyle) { name, value in
            let n = String(decoding: name, as: UTF8.self)
            let body: [UInt8]
            switch value {
            case .string(let s): body = Array(s.utf8)
            case .data(let d): body = d
            case .null: body = []
            default: body = (try? value.textBytes()) ?? []
            }
            script.parts.append(ExpectedPart(headers: [("Content-Disposition", disposition(n, nil))], body: body, inMemory: true))
        }
    }
    require(form.parts.count == script.parts.count, "the parameters made \(form.parts.count) parts, expected \(script.parts.count)")

    // Parts.
    let partCount = inp.below(9)
    for _ in 0..<partCount {
        let before = form.parts.count
        let name = inp.oneIn(3) ? gen.string(&inp) : "f\(before)"
        var refused = false
        // A NUL in a name or filename is refused (.invalidHeader) like in any part header.
        var nul = name.utf8.contains(0)
        do {
            switch inp.below(6) {
            case 0:  // field
                let body = inp.bytes(max: 64)
                try form.appendFormData(body, name: name)
                script.parts.append(ExpectedPart(headers: [("Content-Disposition", disposition(name, nil))], body: body, inMemory: true))
            case 1:  // file data
                let body = inp.oneIn(4) ? pattern(inp.byte(), inp.below(20000)) : inp.bytes(max: 64)
                let filename = inp.oneIn(2) ? ["a.png", "b.txt", "c.JSON", "noext", "d.cer", "x\"y\r\n.bin", ""][inp.below(7)] : gen.string(&inp)
                let badType = inp.oneIn(8)
                let mime: String? = badType ? badHeaderValue(&inp) : (inp.bool() ? nil : headerValue(&inp, gen: &gen))
                refused = badType
                nul = nul || filename.utf8.contains(0)
                try form.appendFileData(body, name: name, filename: filename, mimeType: mime)
                let type = mime ?? MIMETypes.forFilename(filename)
                script.parts.append(ExpectedPart(headers: [("Content-Disposition", disposition(name, filename)), ("Content-Type", type)], body: body, inMemory: true))
            case 2:  // custom headers (the part has no name: a NUL in `name` is irrelevant)
                nul = false
                var headers: [(String, String)] = []
                var bad = false
                for _ in 0..<inp.below(4) {
                    let validName = !inp.oneIn(10)
                    let validValue = !inp.oneIn(10)
                    bad = bad || !validName || !validValue
                    headers.append((headerName(&inp, valid: validName), validValue ? headerValue(&inp, gen: &gen) : badHeaderValue(&inp)))
                }
                refused = bad
                let body = inp.bytes(max: 64)
                try form.appendPart(headers: headers, body: body)
                script.parts.append(ExpectedPart(headers: headers, body: body, inMemory: true))
            case 3:  // file
                let f = inp.below(files.paths.count)
                let filename: String? = inp.bool() ? nil : gen.string(&inp)
                nul = nul || (filename?.utf8.contains(0) ?? false)
                let mime: String? = inp.bool() ? nil : headerValue(&inp, gen: &gen)
                try form.appendFile(path: files.paths[f], name: name, filename: filename, mimeType: mime)
                let fname = filename ?? String(files.paths[f].split(separator: "/").last!)
                let type = mime ?? MIMETypes.forFilename(fname)
                script.parts.append(ExpectedPart(headers: [("Content-Disposition", disposition(name, fname)), ("Content-Type", type)], body: files.contents[f], inMemory: false))
            default:  // callback stream
                let declared = inp.oneIn(3) ? inp.below(200) : inp.below(100_001)
                let honesty: Honesty = inp.oneIn(3) ? [.short, .long, .failing, .liar, .rewindFails][inp.below(5)] : .honest
                let canRewind = !inp.oneIn(5)
                let chunk = inp.oneIn(3) ? 1 + inp.below(100) : Int.max
                let full = pattern(inp.byte(), declared + 50)
                var yielded = Array(full[0..<declared])
                var failAt: Int? = nil
                var part = ExpectedPart(headers: [], body: yielded, inMemory: false)
                switch honesty {
                case .honest, .rewindFails: break
                case .short:
                    let a = declared == 0 ? 0 : inp.below(declared)
                    yielded = Array(full[0..<a])
                    if a < declared {
                        part.poison = (a, declared)
                        part.trouble.append((a, declared, .lengthMismatch))
                        for i in a..<declared { part.body[i] = 0 }
                        part.lying = true
                    }
                case .long:
                    yielded = Array(full[0..<(declared + 1 + inp.below(50))])
                    part.poison = (declared, declared)
                    part.trouble.append((declared, declared, .lengthMismatch))
                    part.lying = true
                case .failing:
                    let f = inp.below(declared + 1)
                    failAt = f
                    part.poison = (f, declared)
                    part.trouble.append((f, declared, .io))
                    for i in f..<declared { part.body[i] = 0 }
                    part.lying = true
                case .liar:
                    part.poison = (0, declared)
                    part.trouble.append((0, declared, .io))
                    part.trouble.append((0, declared, .lengthMismatch))
                    for i in 0..<declared { part.body[i] = 0 }
                    part.lying = true
                }
                if honesty == .rewindFails { part.trouble.append((0, declared, .io)) }
                if !canRewind { part.trouble.append((0, declared, .unsupported)) }
                let source = ScriptSource(data: yielded, failAt: failAt, liar: honesty == .liar,
                                          rewindFails: honesty == .rewindFails, chunk: chunk, canRewind: canRewind)
                let filename = inp.bool() ? "cb.bin" : gen.string(&inp)
                nul = nul || filename.utf8.contains(0)
                let badType = inp.oneIn(10)
                let mime: String? = badType ? badHeaderValue(&inp) : (inp.bool() ? nil : "application/x-fuzz")
                refused = badType
                try form.appendStream(source, length: UInt64(declared), name: name, filename: filename, mimeType: mime)
                part.headers = [("Content-Disposition", disposition(name, filename)), ("Content-Type", mime ?? MIMETypes.forFilename(filename))]
                script.parts.append(part)
            }
            trace("part \(before): \(script.parts.last.map { "\($0.headers) body \($0.body.count) bytes, poison \(String(describing: $0.poison)), trouble \($0.trouble)" } ?? "")")
            require(!refused && !nul, "an append with a bad header name or value was accepted")
        } catch let e as AFSError {
            trace("append refused: \(e)")
            require(refused || nul, "an append failed: \(e)")
            require(e.status == .invalidHeader, "a refused append failed with \(e), not .invalidHeader")
            require(form.parts.count == before, "a refused append added a part")
        } catch {
            fail("an append threw a non-AFSError: \(error)")
        }
        require(form.parts.count == script.parts.count, "the form has \(form.parts.count) parts, the script \(script.parts.count)")
    }

    // Throttling and the boundary.
    var packet = Int.max
    if inp.below(4) == 3 {
        packet = 1 + inp.below(5000)
        form.throttleBandwidth(packetSize: packet, delay: 0)
    }
    var boundary = inp.below(4) == 3 ? "x" : "AFSFuzzBoundary.0123456789abcdef"
    do { try form.setBoundary(boundary) } catch { fail("setBoundary(\(boundary)) failed: \(error)") }
    func collides(_ b: String) -> Bool {
        let needle = Array(("--" + b).utf8)
        return script.parts.contains { contains(headerBlock($0.headers), needle) || ($0.inMemory && contains($0.body, needle)) }
    }
    var request: Request
    while true {
        do {
            request = try form.finish()
            require(script.parts.isEmpty || !collides(boundary), "finish() accepted boundary \(boundary) that occurs in a part")
            break
        } catch let e as AFSError {
            require(collides(boundary), "finish() failed without a collision: \(e)")
            require(e.status == .invalidArgument, "a colliding boundary failed with \(e), not .invalidArgument")
            require(!form.isSpent, "a failed finish() spent the form")
            guard boundary == "x" else { return 0 }  // both boundaries occur in the content
            boundary = "AFSFuzzBoundary.0123456789abcdef"
            do { try form.setBoundary(boundary) } catch { fail("setBoundary failed: \(error)") }
        } catch {
            fail("finish() threw a non-AFSError: \(error)")
        }
    }
    require(form.isSpent, "finish() did not spend the form")

    if script.parts.isEmpty {
        require(request.bodyStream == nil, "an empty form has a body stream")
        require((request.body ?? []).isEmpty, "an empty form has a non-empty body")
        return 0
    }
    script.build(boundary: boundary)
    let total = script.expected.count
    trace("boundary \(boundary), \(script.parts.count) parts, \(total) bytes, packet \(packet)")
    guard let stream = request.bodyStream else { fail("a form with parts has no body stream") }
    require(request.body == nil, "a multipart request has a plain body")
    require(request.header("Content-Length") == String(total), "Content-Length \(String(describing: request.header("Content-Length"))), expected \(total)")
    require(stream.contentLength == UInt64(total), "contentLength \(stream.contentLength), expected \(total)")
    require(request.header("Content-Type") == "multipart/form-data; boundary=" + boundary, "Content-Type \(String(describing: request.header("Content-Type")))")

    // The script of reads, seeks, rewinds and writes on two readers.
    let a = ReaderModel(stream)
    stream.progress = { [unowned a] done, all in
        require(all == UInt64(total), "progress total \(all), expected \(total)")
        a.reported = done
    }
    var b: ReaderModel? = nil
    var buffer = [UInt8](repeating: 0, count: 70000)
    let ops = inp.below(48)
    for _ in 0..<ops where !inp.isExhausted {
        var r = a
        if inp.oneIn(4) {
            if b == nil { b = ReaderModel(stream.makeReader()) }
            r = b!
        }
        let s = r.stream
        switch inp.below(16) {
        case 0..<10:  // read
            let sel = inp.byte()
            let k: Int
            switch sel {
            case 0..<128: k = 1 + inp.below(16)
            case 128..<200: k = 1 + inp.below(1024)
            case 200..<240: k = 1 + inp.below(70000)
            default: k = Swift.max(1, Swift.min(70000, total - r.position))
            }
            // A second reader (AFNetworking's -copyWithZone:) is not throttled.
            let want = Swift.min(k, r === a ? packet : Int.max, total - r.position)
            let n = buffer.withUnsafeMutableBufferPointer { s.read(into: $0.baseAddress, maxLength: k) }
            trace("reader \(r === a ? "a" : "b") at \(r.position): read(\(k)) -> \(n) \(n < 0 ? String(describing: s.error) : "")")
            if let e = r.sticky {
                require(n == -1, "a read after a failure returned \(n), not -1")
                require(s.error == e, "the sticky error changed from \(e) to \(String(describing: s.error))")
            } else if n >= 0 {
                require(n == want, "read(\(k)) at \(r.position) of \(total) returned \(n), expected \(want) (packet \(packet))")
                require(buffer[0..<n].elementsEqual(script.expected[r.position..<(r.position + n)]),
                        "read(\(k)) at \(r.position) returned other bytes: \(show(buffer[0..<n])) expected \(show(script.expected[r.position..<(r.position + n)]))")
                script.checkNoPoison(r.position, n, runStart: r.runStart, "read(\(k))")
                r.position += n
                if n > 0 && r === a { require(a.reported == UInt64(a.position), "progress reported \(a.reported), position \(a.position)") }
            } else {
                require(n == -1, "read returned \(n)")
                guard let e = s.error else { fail("a failed read left no error") }
                require(script.justified(e.status, r.position, r.position + want - 1, runStart: r.runStart),
                        "read(\(k)) at \(r.position) failed with \(e), which no source in \(r.position)...\(r.position + want - 1) explains")
                r.sticky = e
            }
            require(s.position == UInt64(r.position), "position \(s.position), expected \(r.position)")
            require(s.hasBytesAvailable == (r.sticky == nil && r.position < total), "hasBytesAvailable \(s.hasBytesAvailable) at \(r.position) of \(total), error \(String(describing: r.sticky))")
        case 10..<13:  // seek
            let past = inp.oneIn(16)
            let target = past ? total + 1 + inp.below(100) : inp.below(total + 1)
            trace("reader \(r === a ? "a" : "b") at \(r.position): seek(\(target))")
            do {
                try s.seek(to: UInt64(target))
                require(!past, "seek past the end (\(target) of \(total)) succeeded")
                r.position = target
                r.runStart = target
                r.sticky = nil
                require(s.error == nil, "seek did not clear the error")
            } catch let e as AFSError {
                if past {
                    require(e.status == .invalidArgument, "seek past the end failed with \(e), not .invalidArgument")
                } else {
                    require(e.status == .unsupported && script.justified(.unsupported, target, total, runStart: target),
                            "seek to \(target) of \(total) failed with \(e)")
                }
            } catch {
                fail("seek threw a non-AFSError: \(error)")
            }
            require(s.position == UInt64(r.position), "position \(s.position) after seek, expected \(r.position)")
        case 13:  // rewind
            trace("reader \(r === a ? "a" : "b") at \(r.position): rewind")
            do {
                try s.rewind()
                r.position = 0
                r.runStart = 0
                r.sticky = nil
            } catch let e as AFSError {
                require(e.status == .unsupported && script.justified(.unsupported, 0, total, runStart: 0), "rewind failed with \(e)")
            } catch {
                fail("rewind threw a non-AFSError: \(error)")
            }
            require(s.position == UInt64(r.position), "position \(s.position) after rewind, expected \(r.position)")
        default:  // write the rest to a file
            let fd = files.outFD
            require(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0, "ftruncate or lseek failed")
            var written: UInt64 = 0
            var failure: AFSError? = nil
            do {
                try s.write(to: fd, written: &written)
            } catch let e as AFSError {
                failure = e
            } catch {
                fail("write(to:) threw a non-AFSError: \(error)")
            }
            let w = Int(written)
            trace("reader \(r === a ? "a" : "b") at \(r.position): write(to:) -> \(w) bytes, \(String(describing: failure))")
            var got = [UInt8](repeating: 0, count: w)
            let rd = got.withUnsafeMutableBytes { pread(fd, $0.baseAddress, w, 0) }
            require(rd == w, "the file holds \(rd) bytes, write(to:) reported \(w)")
            if let e = r.sticky {
                require(failure == e && w == 0, "write(to:) after a failure: \(String(describing: failure)), \(w) bytes")
            } else {
                require(r.position + w <= total, "write(to:) wrote \(w) bytes from \(r.position) of \(total)")
                require(got.elementsEqual(script.expected[r.position..<(r.position + w)]), "write(to:) from \(r.position) wrote other bytes")
                script.checkNoPoison(r.position, w, runStart: r.runStart, "write(to:)")
                if let e = failure {
                    require(script.justified(e.status, r.position, total - 1, runStart: r.runStart), "write(to:) from \(r.position) failed with \(e), which no source explains")
                    require(s.error == e, "write(to:) failed with \(e) but the sticky error is \(String(describing: s.error))")
                    r.sticky = e
                } else {
                    require(r.position + w == total, "write(to:) stopped at \(r.position + w) of \(total) without an error")
                }
                r.position += w
            }
            require(s.position == UInt64(r.position), "position \(s.position) after write(to:), expected \(r.position)")
        }
    }

    // A fresh reader reads everything.
    let fresh = stream.makeReader()
    var body: [UInt8] = []
    var failure: AFSError? = nil
    while true {
        let k = inp.isExhausted ? 65536 : 1 + inp.below(70000)
        let n = buffer.withUnsafeMutableBufferPointer { fresh.read(into: $0.baseAddress, maxLength: k) }
        if n == 0 { break }
        if n < 0 {
            failure = fresh.error
            break
        }
        body += buffer[0..<n]
    }
    require(body.count <= total && body.elementsEqual(script.expected[0..<body.count]), "the fresh reader delivered other bytes")
    script.checkNoPoison(0, body.count, runStart: 0, "the fresh reader")
    if let e = failure {
        require(script.justified(e.status, body.count, total - 1, runStart: 0), "the fresh reader failed at \(body.count) with \(e), which no source explains")
        return 0
    }
    require(!script.hasLyingLength, "a body with a dishonest source was read to the end (\(body.count) of \(total) bytes)")
    require(body.count == total, "the fresh reader ended at \(body.count) of \(total)")

    // The body splits back into the parts (unless a file or callback body holds the delimiter).
    let delimiter = Array(("--" + boundary).utf8)
    if script.parts.contains(where: { contains($0.body, delimiter) }) { return 0 }
    guard let parsed = parseMultipart(body, boundary: boundary) else {
        fail("the reference parser cannot split the body: \(show(body))")
    }
    require(parsed.count == script.parts.count, "the body holds \(parsed.count) parts, expected \(script.parts.count)")
    for (i, (p, e)) in zip(parsed, script.parts).enumerated() {
        require(p.headers.count == e.headers.count && zip(p.headers, e.headers).allSatisfy { utf8Equal($0.0, $1.0) && utf8Equal($0.1, String(decoding: trimmedRef(Array($1.1.utf8)), as: UTF8.self)) },
                "part \(i) has headers \(p.headers), expected \(e.headers)")
        require(p.body == e.body, "part \(i) has another body")
    }
    return 0
}
