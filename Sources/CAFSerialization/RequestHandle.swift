import AFSerialization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `afs_request`: a request plus the C strings lent out by its getters. The copies are made
/// on first use and dropped whenever the request changes.
final class RequestHandle: Handle {
    var request: Request {
        didSet { lent = nil; lentBody = nil; lentPickle = nil }
    }
    /// method, url, then name and value of each header.
    private var lent: [CStringBox]?
    private var lentBody: CStringBox?
    /// The pickled snapshot lent by `afs_request_pickle`.
    private var lentPickle: PickleBox?
    /// The borrowed `afs_body_stream` of a multipart request (`afs_request_body_stream`),
    /// created on first use and owned by this handle.
    var bodyStreamHandle: BodyStreamHandle?

    init(_ r: Request) { request = r }
    override class var cName: String { "afs_request" }

    private func strings() -> [CStringBox] {
        if let l = lent { return l }
        var l = [CStringBox.copy(request.method), CStringBox.copy(request.url)]
        for (n, v) in request.headers {
            l.append(CStringBox.copy(n))
            l.append(CStringBox.copy(v))
        }
        lent = l
        return l
    }

    var method: UnsafePointer<CChar> { UnsafePointer(strings()[0].pointer) }
    var url: UnsafePointer<CChar> { UnsafePointer(strings()[1].pointer) }

    func headerName(_ i: Int) -> UnsafePointer<CChar>? {
        guard i >= 0 && i < request.headers.count else { return nil }
        return UnsafePointer(strings()[2 + 2 * i].pointer)
    }

    func headerValue(_ i: Int) -> UnsafePointer<CChar>? {
        guard i >= 0 && i < request.headers.count else { return nil }
        return UnsafePointer(strings()[3 + 2 * i].pointer)
    }

    /// The pickled snapshot of the request (`afs_request_pickle`), made on first use.
    func pickle() -> PickleBox {
        if let l = lentPickle { return l }
        let l = PickleBox(PickleWriter.mallocSnapshot(of: request))
        lentPickle = l
        return l
    }

    /// The body bytes lent to C; nil when there is no body.
    func body() -> CStringBox? {
        guard let b = request.body else { return nil }
        if let l = lentBody { return l }
        let l = CStringBox.copy(b)
        lentBody = l
        return l
    }
}

/// `malloc` memory holding a pickle, owned by a handle and lent to C.
final class PickleBox {
    let pointer: UnsafeMutablePointer<UInt8>
    let count: Int
    init(_ p: (UnsafeMutablePointer<UInt8>, Int)) { (pointer, count) = p }
    deinit { free(pointer) }
}
