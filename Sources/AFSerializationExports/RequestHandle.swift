// `afs_request`: a request and the C strings lent out by its getters.
import AFSerialization

/// `afs_request`: a request plus the C strings lent out by its getters. The copies are made
/// on first use and dropped whenever the request changes.
final class RequestHandle: Handle {
    var request: Request {
        didSet { lent = nil; lentBody = nil }
    }
    /// method, url, then name and value of each header.
    private var lent: [CStringBox?]?
    private var lentBody: CStringBox?
    /// The borrowed `afs_body_stream` of a multipart request (`afs_request_body_stream`),
    /// created on first use and owned by this handle.
    var bodyStreamHandle: BodyStreamHandle?
    /// Where `afs_request_write_to_fd` resumes (see `Request.write(to:offset:written:)`).
    var wireOffset: UInt64 = 0

    init(_ r: Request) { request = r }
    override class var cName: String { "afs_request" }

    /// The copies; an entry is nil when it could not be allocated (its getter returns NULL).
    private func strings() -> [CStringBox?] {
        if let l = lent { return l }
        var l = [CStringBox.copy(request.method), CStringBox.copy(request.url)]
        for (n, v) in request.headers {
            l.append(CStringBox.copy(n))
            l.append(CStringBox.copy(v))
        }
        lent = l
        return l
    }

    var method: UnsafePointer<CChar>? { strings()[0].map { UnsafePointer($0.pointer) } }
    var url: UnsafePointer<CChar>? { strings()[1].map { UnsafePointer($0.pointer) } }

    func headerName(_ i: Int) -> UnsafePointer<CChar>? {
        guard i >= 0 && i < request.headers.count else { return nil }
        return strings()[2 + 2 * i].map { UnsafePointer($0.pointer) }
    }

    func headerValue(_ i: Int) -> UnsafePointer<CChar>? {
        guard i >= 0 && i < request.headers.count else { return nil }
        return strings()[3 + 2 * i].map { UnsafePointer($0.pointer) }
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
