// `afs_request`: a request and the C strings lent out by its getters.
import AFSerialization

/// `afs_request`: a request plus the C strings lent out by its getters, made on first use.
/// A change (afs_request_set_header, the only one) keeps the method, URL and body copies
/// (they do not change) and retires the header copies instead of freeing them: every
/// pointer a getter returned stays readable until afs_request_free.
final class RequestHandle: Handle {
    var request: Request {
        didSet {
            if let h = headerCopies { retired.append(h as AnyObject) }
            headerCopies = nil
            if let p = lentPickle { retired.append(p) }
            lentPickle = nil
        }
    }
    /// method, url.
    private var fixed: [CStringBox?]?
    /// name and value of each header.
    private var headerCopies: [CStringBox?]?
    private var lentBody: CStringBox?
    /// The pickled snapshot lent by `afs_request_pickle` (retired on a change, like the
    /// header copies).
    private var lentPickle: PickleBox?
    /// Header copies of earlier states, kept until the request is freed.
    private var retired: [AnyObject] = []
    /// The borrowed `afs_body_stream` of a multipart request (`afs_request_body_stream`),
    /// created on first use and owned by this handle.
    var bodyStreamHandle: BodyStreamHandle?
    /// Body stream handles lent before a body transform replaced the stream (section 15).
    var retiredStreamHandles: [BodyStreamHandle] = []
    /// Lent to a callback for the duration of the call (the query callback's request):
    /// afs_request_free ignores it.
    let isBorrowed: Bool
    /// Set while a call on this request or its body stream runs; afs_request_free from a
    /// callback of that call is deferred to its end (see `Reentrancy`).
    var busy = 0
    var freeDeferred = false
    /// Where `afs_request_write_to_fd` resumes (see `Request.write(to:offset:written:)`).
    var wireOffset: UInt64 = 0
    /// afs_request_set_interruptible: afs_request_write_to_fd returns on a signal.
    var interruptible = false

    init(_ r: Request, borrowed: Bool = false) {
        request = r
        isBorrowed = borrowed
    }
    override class var cName: String { "afs_request" }

    private func fixedStrings() -> [CStringBox?] {
        if let l = fixed { return l }
        let l = [CStringBox.copy(request.method), CStringBox.copy(request.url)]
        fixed = l
        return l
    }

    /// The copies; an entry is nil when it could not be allocated (its getter returns NULL).
    private func headerStrings() -> [CStringBox?] {
        if let l = headerCopies { return l }
        var l: [CStringBox?] = []
        for (n, v) in request.headers {
            l.append(CStringBox.copy(n))
            l.append(CStringBox.copy(v))
        }
        headerCopies = l
        return l
    }

    var method: UnsafePointer<CChar>? { fixedStrings()[0].map { UnsafePointer($0.pointer) } }
    var url: UnsafePointer<CChar>? { fixedStrings()[1].map { UnsafePointer($0.pointer) } }

    func headerName(_ i: Int) -> UnsafePointer<CChar>? {
        guard i >= 0 && i < request.headers.count else { return nil }
        return headerStrings()[2 * i].map { UnsafePointer($0.pointer) }
    }

    func headerValue(_ i: Int) -> UnsafePointer<CChar>? {
        guard i >= 0 && i < request.headers.count else { return nil }
        return headerStrings()[2 * i + 1].map { UnsafePointer($0.pointer) }
    }

    /// The pickled snapshot of the request (`afs_request_pickle`), made on first use; nil
    /// when it could not be allocated.
    func pickle() -> PickleBox? {
        if let l = lentPickle { return l }
        guard let l = try? PickleBox(PickleWriter.mallocSnapshot(of: request)) else { return nil }
        lentPickle = l
        return l
    }

    /// The body bytes lent to C: a serializer's buffer as is, else a copy made once; nil
    /// when there is no body (or no memory for the copy).
    func body() -> Lent? {
        if let b = request.bodyBuffer { return Lent(b.bytes) }
        if let l = lentBody { return Lent(l) }
        guard let b = request.body, let l = CStringBox.copy(b) else { return nil }
        lentBody = l
        return Lent(l)
    }
}

/// `malloc` memory holding a pickle, owned by a handle and lent to C.
final class PickleBox {
    let pointer: UnsafeMutablePointer<UInt8>
    let count: Int
    init(_ p: (UnsafeMutablePointer<UInt8>, Int)) { (pointer, count) = p }
    deinit { free(pointer) }
}
