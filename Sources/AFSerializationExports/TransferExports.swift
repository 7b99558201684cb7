// afs_value_from_pickle, afs_value_to_pickle, afs_value_copy, afs_serializer_request_pickle,
// afs_request_pickle, afs_request_copy, afs_response_object_pickle: one call each way for
// bindings that pay for every foreign call. The format is the pickle subset of
// `AFSerialization.Pickle`; the work is the core's (`PickleReader`, `PickleWriter`,
// `JSONToPickle`, `Transfer/Bulk.swift`).
import AFSerialization
import CAFSerialization

@c @implementation
public func afs_value_from_pickle(_ data: UnsafeRawPointer?, _ len: Int, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let bytes = try dataArg(data, len, "data")
        guard bytes.count > 0 else { throw AFSError(.invalidArgument, "pickle: the input is empty") }
        return box(ValueHandle(try PickleReader.read(bytes.assumingMemoryBound(to: UInt8.self))))
    }
}

@c @implementation
public func afs_value_to_pickle(_ v: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?,
                                _ err: UnsafeMutablePointer<afs_error>?) -> UnsafeMutablePointer<UInt8>? {
    len?.pointee = 0
    return pointer(err) {
        let h = try valueArg(v, "value")
        guard let len = len else { throw AFSError(.invalidArgument, "len is NULL") }
        let (p, n) = try PickleWriter.mallocPickle(try h.value)
        len.pointee = n
        return p
    }
}

@c @implementation
public func afs_value_copy(_ v: OpaquePointer?) -> OpaquePointer? {
    guard let h = try? valueArg(v, "value") else { return nil }
    return box(h.copy())
}

@c @implementation
public func afs_serializer_request_pickle(_ s: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ url: UnsafePointer<CChar>?,
                                          _ params: UnsafeRawPointer?, _ paramsLen: Int,
                                          _ snapshot: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
                                          _ snapshotLen: UnsafeMutablePointer<Int>?,
                                          _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    snapshot?.pointee = nil
    snapshotLen?.pointee = 0
    return pointer(err) {
        let h = try unbox(s, SerializerHandle.self, "serializer")
        let m = try stringArg(method, NTS, "method"), u = try stringArg(url, NTS, "url")
        let p = try dataArg(params, paramsLen, "params", lenName: "params_len")
        let r = RequestHandle(try h.snapshot.request(method: m, url: u, pickledParams: p.assumingMemoryBound(to: UInt8.self)))
        if let snapshot = snapshot {
            guard let l = r.pickle() else {
                throw AFSError(.noMemory, "out of memory making the request's snapshot")
            }
            snapshot.pointee = UnsafePointer(l.pointer)
            snapshotLen?.pointee = l.count
        }
        return box(r)
    }
}

@c @implementation
public func afs_request_pickle(_ r: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<UInt8>? {
    guard let h = peek(r, RequestHandle.self) else {
        len?.pointee = 0
        return nil
    }
    guard let l = h.pickle() else {
        len?.pointee = 0
        return nil
    }
    len?.pointee = l.count
    return UnsafePointer(l.pointer)
}

@c @implementation
public func afs_request_copy(_ r: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        guard h.request.bodyStream == nil else {
            throw AFSError(.unsupported, "a request with a multipart body stream cannot be copied (the stream has one read position); build the form again")
        }
        return box(RequestHandle(h.request))
    }
}

@c @implementation
public func afs_response_object_pickle(_ rs: OpaquePointer?, _ statusCode: Int32, _ contentType: UnsafePointer<CChar>?,
                                       _ data: UnsafeRawPointer?, _ len: Int,
                                       _ out: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                                       _ outLen: UnsafeMutablePointer<Int>?,
                                       _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    out?.pointee = nil
    outLen?.pointee = 0
    return status(err) {
        let h = try unbox(rs, ResponseSerializerHandle.self, "response serializer")
        guard let out = out, let outLen = outLen else { throw AFSError(.invalidArgument, "\(out == nil ? "out" : "out_len") is NULL") }
        let ct = contentType.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) }
        let body = try dataArg(data, len, "data", lenName: "len")
        let r = h.snapshot.responseObjectPickle(statusCode: Int(statusCode), contentType: ct,
                                                body: body.assumingMemoryBound(to: UInt8.self))
        if let (p, n) = r.pickle {
            out.pointee = p
            outLen.pointee = n
        }
        if let e = r.error { throw e }
    }
}
