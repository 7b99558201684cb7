// Bulk calls for bindings that pay for every foreign call (one crossing each way): values
// as pickles, requests built from pickled parameters and read back as one snapshot, and
// responses decoded into one pickle. The format is the pickle subset of
// `AFSerialization.Pickle`.
import AFSerialization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A byte-buffer argument: NULL only with len 0.
private func bufferArg(_ data: UnsafeRawPointer?, _ len: Int, _ what: String) throws -> UnsafeBufferPointer<UInt8> {
    guard len >= 0 else { throw AFSError(.invalidArgument, "\(what) length \(UInt(bitPattern: len)) is not a byte count") }
    guard let d = data else {
        if len == 0 { return UnsafeBufferPointer(start: nil, count: 0) }
        throw AFSError(.invalidArgument, "\(what) is NULL but its length is \(len)")
    }
    return UnsafeBufferPointer(start: d.assumingMemoryBound(to: UInt8.self), count: len)
}

@_cdecl("afs_value_from_pickle")
public func afs_value_from_pickle(_ data: UnsafeRawPointer?, _ len: Int, _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    pointer(err) {
        let bytes = try bufferArg(data, len, "data")
        guard !bytes.isEmpty else { throw AFSError(.invalidArgument, "pickle: the input is empty") }
        return box(ValueHandle(try PickleReader.read(bytes)))
    }
}

@_cdecl("afs_value_to_pickle")
public func afs_value_to_pickle(_ v: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?, _ err: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<UInt8>? {
    len?.pointee = 0
    return pointer(err) {
        let h = try unbox(v, ValueHandle.self, "value")
        guard let len = len else { throw AFSError(.invalidArgument, "len is NULL") }
        let (p, n) = try PickleWriter.mallocPickle(h.value)
        len.pointee = n
        return p
    }
}

@_cdecl("afs_serializer_request_pickle")
public func afs_serializer_request_pickle(_ s: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ url: UnsafePointer<CChar>?,
                                          _ params: UnsafeRawPointer?, _ paramsLen: Int,
                                          _ snapshot: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
                                          _ snapshotLen: UnsafeMutablePointer<Int>?,
                                          _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    snapshot?.pointee = nil
    snapshotLen?.pointee = 0
    return pointer(err) {
        let h = try unbox(s, SerializerHandle.self, "serializer")
        let m = try stringArg(method, NTS, "method"), u = try stringArg(url, NTS, "url")
        let p = try bufferArg(params, paramsLen, "params")
        let r = RequestHandle(try h.snapshot.request(method: m, url: u, pickledParams: p))
        if let snapshot = snapshot {
            let l = r.pickle()
            snapshot.pointee = UnsafePointer(l.pointer)
            snapshotLen?.pointee = l.count
        }
        return box(r)
    }
}

@_cdecl("afs_request_pickle")
public func afs_request_pickle(_ r: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<UInt8>? {
    guard let h = peek(r, RequestHandle.self) else {
        len?.pointee = 0
        return nil
    }
    let l = h.pickle()
    len?.pointee = l.count
    return UnsafePointer(l.pointer)
}

@_cdecl("afs_request_copy")
public func afs_request_copy(_ r: OpaquePointer?, _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    pointer(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        guard h.request.bodyStream == nil else {
            throw AFSError(.unsupported, "a request with a multipart body stream cannot be copied (the stream has one read position); build the form again")
        }
        return box(RequestHandle(h.request))
    }
}

@_cdecl("afs_response_object_pickle")
public func afs_response_object_pickle(_ rs: OpaquePointer?, _ statusCode: Int32, _ contentType: UnsafePointer<CChar>?,
                                       _ data: UnsafeRawPointer?, _ len: Int,
                                       _ out: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                                       _ outLen: UnsafeMutablePointer<Int>?,
                                       _ err: UnsafeMutableRawPointer?) -> Int32 {
    out?.pointee = nil
    outLen?.pointee = 0
    return status(err) {
        let h = try unbox(rs, ResponseSerializerHandle.self, "response serializer")
        guard let out = out, let outLen = outLen else { throw AFSError(.invalidArgument, "\(out == nil ? "out" : "out_len") is NULL") }
        let ct = contentType.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) }
        let r = h.snapshot.responseObjectPickle(statusCode: Int(statusCode), contentType: ct,
                                                body: try bufferArg(data, len, "data"))
        if let (p, n) = r.pickle {
            out.pointee = p
            outLen.pointee = n
        }
        if let e = r.error { throw e }
    }
}

@_cdecl("afs_value_copy")
public func afs_value_copy(_ v: OpaquePointer?) -> OpaquePointer? {
    guard let h = peek(v, ValueHandle.self) else { return nil }
    return box(ValueHandle(h.value))
}
