/// Immutable bytes at a stable address (boundaries, header blocks, in-memory bodies), so the
/// body stream can copy from them without closures or uniqueness checks on the hot path.
public final class ByteBlock: @unchecked Sendable {  // immutable after init
    public let base: UnsafeMutablePointer<UInt8>
    public let count: Int

    /// A copy of `bytes` in `malloc` memory.
    /// - Throws: `AFSError` `.noMemory` (naming `what`) when the copy cannot be allocated.
    public init(_ bytes: UnsafeRawBufferPointer, what: @autoclosure () -> String = "a part body") throws(AFSError) {
        guard let p = afsMalloc(bytes.count) else { throw AFSError.noMemory(what(), bytes: bytes.count) }
        count = bytes.count
        base = p.assumingMemoryBound(to: UInt8.self)
        if let b = bytes.baseAddress, bytes.count > 0 { memcpy(base, b, bytes.count) }
    }

    public convenience init(_ bytes: [UInt8]) throws(AFSError) {
        try self.init(bytes: bytes)
    }

    private convenience init(bytes: [UInt8]) throws(AFSError) {
        var r: Result<Void, AFSError> = .success(())
        var block: ByteBlock?
        bytes.withUnsafeBytes { b in  // copy inside: the pointer is valid only here
            do throws(AFSError) { block = try ByteBlock(b) } catch { r = .failure(error) }
        }
        if case .failure(let e) = r { throw e }
        self.init(taking: block!)
    }

    private init(taking other: ByteBlock) {
        // Takes over the other block's memory (it must not free it).
        base = other.base
        count = other.count
        other.owned = false
    }

    public convenience init(_ s: String) throws(AFSError) {
        var s = s
        var block: ByteBlock?
        var failure: AFSError?
        s.withUTF8 { b in
            do throws(AFSError) { block = try ByteBlock(UnsafeRawBufferPointer(b)) } catch { failure = error }
        }
        if let failure { throw failure }
        self.init(taking: block!)
    }

    private var owned = true

    deinit { if owned { free(base) } }

    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Whether `needle` occurs in these bytes.
    public func contains(_ needle: [UInt8]) -> Bool {
        ByteBlock.search(bytes, needle)
    }

    static func search(_ hay: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool {
        let n = needle.count, h = hay.count
        guard n > 0, h >= n, let start = hay.baseAddress else { return n == 0 }
        return needle.withUnsafeBytes { nd -> Bool in
            let first = Int32(nd[0])
            var p = start
            let last = start + (h - n)  // last possible match start
            while p <= last {
                guard let hit = memchr(p, first, last - p + 1) else { return false }
                if memcmp(hit, nd.baseAddress!, n) == 0 { return true }
                p = UnsafeRawPointer(hit) + 1
            }
            return false
        }
    }
}

/// A part body produced by the caller: read, optional rewind, release when the part goes
/// away (C: the `afs_read_fn` / `afs_rewind_fn` / `afs_release_fn` triple of
/// `afs_form_append_stream`). The library reads at most the declared length plus one probe
/// byte, and calls `rewind` only when a reader has to go back.
public protocol PartStreamSource: AnyObject {
    /// Reads up to `maxLength` bytes into `buffer`: the count (> 0), 0 at the end, -1 on error.
    func read(into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int
    /// Whether `rewind()` is available.
    var canRewind: Bool { get }
    /// Goes back to the first byte; false on failure.
    func rewind() -> Bool
}

/// One part of a multipart body (AFNetworking's `AFHTTPBodyPart`): its header block and its
/// body source with the declared length. On the wire a part is read in four phases (see
/// `MultipartBodyStream.Phase`): the boundary line, the headers, the body, and — after the
/// last part only — the closing boundary.
public final class BodyPart: @unchecked Sendable {  // only `consumed` changes, under the stream's one-thread rule
    /// Where the body bytes come from.
    public enum Source {
        /// Bytes copied when the part was appended.
        case memory(ByteBlock)
        /// A regular file, opened only while the part's body is being read.
        case file(path: String)
        /// A caller's read callback with a declared length.
        case stream(PartStreamSource)
    }

    /// The headers in insertion order (already validated and escaped).
    public let headers: [(name: String, value: String)]
    /// `Name: value\r\n` for each header, then `\r\n`.
    public let headerBlock: ByteBlock
    public let source: Source
    /// The body length: the bytes, the file size at append, or the declared stream length
    /// (`unknownLength` for a stream of unknown length).
    public let length: UInt64
    /// "part 3 (name \"avatar\")", for error messages.
    public let label: String

    /// For a stream source: how many bytes the callback has yielded since its start or its
    /// last rewind; `BodyPart.unknownPosition` after a failure. Shared by every reader of
    /// the part, so a reader that finds the callback elsewhere rewinds it first.
    var consumed: UInt64 = 0
    static let unknownPosition = UInt64.max
    /// The length of a source whose length is not known (C: `AFS_LENGTH_UNKNOWN`): it is
    /// read until its callback returns 0.
    public static let unknownLength = UInt64.max

    /// - Throws: `AFSError` `.noMemory` when the header block cannot be allocated.
    init(headers: [(name: String, value: String)], source: Source, length: UInt64, label: String) throws(AFSError) {
        self.headers = headers
        var w = ByteWriter(capacity: 128)
        for (n, v) in headers { w.appendHeaderLine(n, v) }
        w.append("\r\n" as StaticString)
        if w.failed { throw AFSError.noMemory("the headers of \(label)", bytes: w.failedBytes) }
        headerBlock = try ByteBlock(UnsafeRawBufferPointer(start: w.base, count: w.count), what: "the headers of \(label)")
        self.source = source
        self.length = length
        self.label = label
    }

    /// A whole request body (no header block): a body source, or an in-memory body that
    /// is compressed or chunked while it streams.
    init(wholeBody source: Source, length: UInt64, label: String) throws(AFSError) {
        headers = []
        headerBlock = try ByteBlock("")
        self.source = source
        self.length = length
        self.label = label
    }

    /// Whether the body is in memory (and so can be checked for a boundary collision).
    public var isInMemory: Bool {
        if case .memory = source { return true }
        return false
    }

    // MARK: Header values

    /// A name or filename for a quoted `Content-Disposition` parameter: `"` CR LF become
    /// `%22` `%0D` `%0A`, as browsers do (AFNetworking wrote them raw), and a backslash
    /// becomes the quoted-pair `\\` (RFC 2045), as Go's multipart writer and httpx write it:
    /// readers that follow the quoted-string grammar (Go, Python's `email`) would otherwise
    /// end or merge names at a raw backslash.
    public static func escapeQuoted(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 == 0x22 || $0 == 0x0D || $0 == 0x0A || $0 == 0x5C }) else { return s }
        var out = [UInt8]()
        out.reserveCapacity(s.utf8.count + 8)
        for c in s.utf8 {
            switch c {
            case 0x22: out.append(contentsOf: "%22".utf8)
            case 0x0D: out.append(contentsOf: "%0D".utf8)
            case 0x0A: out.append(contentsOf: "%0A".utf8)
            case 0x5C: out.append(contentsOf: "\\\\".utf8)
            default: out.append(c)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `form-data; name="N"` or `form-data; name="N"; filename="F"`, escaped.
    public static func contentDisposition(name: String, filename: String?) -> String {
        var s = "form-data; name=\"" + escapeQuoted(name) + "\""
        if let f = filename { s += "; filename=\"" + escapeQuoted(f) + "\"" }
        return s
    }

    static func label(index: Int, name: String?) -> String {
        guard let n = name else { return "part \(index)" }
        return "part \(index) (name \"\(escapeQuoted(n))\")"
    }
}
