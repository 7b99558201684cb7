// afs_request_*: requests built by hand and the getters of serialized requests.
import AFSerialization
import CAFSerialization

@c @implementation
public func afs_request_new(_ method: UnsafePointer<CChar>?, _ url: UnsafePointer<CChar>?, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        box(RequestHandle(try Request(method: try stringArg(method, NTS, "method"), url: try stringArg(url, NTS, "url"))))
    }
}

@c @implementation
public func afs_request_set_header(_ r: OpaquePointer?, _ field: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?,
                                   _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        let name = try stringArg(field, NTS, "field")
        let v = try optionalStringArg(value, "the value of header \"\(name)\"")
        if h.busy > 0 { throw reentrancyError("afs_request_set_header") }
        try h.request.setHeader(name, v)
    }
}

@c @implementation
public func afs_request_free(_ r: OpaquePointer?) {
    guard let h = peek(r, RequestHandle.self), !h.isBorrowed else { return }  // a callback's request: not the caller's
    if h.busy > 0 {
        h.freeDeferred = true  // from inside one of its callbacks: freed when the running call ends
        return
    }
    release(r, RequestHandle.self)
}

@c @implementation
public func afs_request_method(_ r: OpaquePointer?) -> UnsafePointer<CChar>? { peek(r, RequestHandle.self)?.method }

@c @implementation
public func afs_request_url(_ r: OpaquePointer?) -> UnsafePointer<CChar>? { peek(r, RequestHandle.self)?.url }

@c @implementation
public func afs_request_header_count(_ r: OpaquePointer?) -> Int { peek(r, RequestHandle.self)?.request.headers.count ?? 0 }

@c @implementation
public func afs_request_header_name(_ r: OpaquePointer?, _ i: Int) -> UnsafePointer<CChar>? {
    peek(r, RequestHandle.self)?.headerName(i)
}

@c @implementation
public func afs_request_header_value(_ r: OpaquePointer?, _ i: Int) -> UnsafePointer<CChar>? {
    peek(r, RequestHandle.self)?.headerValue(i)
}

@c @implementation
public func afs_request_header(_ r: OpaquePointer?, _ field: UnsafePointer<CChar>?) -> UnsafePointer<CChar>? {
    guard let h = peek(r, RequestHandle.self), let name = try? stringArg(field, NTS, "field"),
          let i = h.request.headers.index(of: name) else { return nil }
    return h.headerValue(i)
}

@c @implementation
public func afs_request_body(_ r: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<UInt8>? {
    guard let b = peek(r, RequestHandle.self)?.body() else {
        len?.pointee = 0
        return nil
    }
    len?.pointee = b.count
    return UnsafeRawPointer(b.pointer).assumingMemoryBound(to: UInt8.self)
}

@c @implementation
public func afs_request_timeout_interval(_ r: OpaquePointer?) -> Double { peek(r, RequestHandle.self)?.request.properties.timeoutInterval ?? 0 }

@c @implementation
public func afs_request_cache_policy(_ r: OpaquePointer?) -> Int32 { peek(r, RequestHandle.self)?.request.properties.cachePolicy ?? 0 }

@c @implementation
public func afs_request_should_handle_cookies(_ r: OpaquePointer?) -> Bool { peek(r, RequestHandle.self)?.request.properties.shouldHandleCookies ?? false }

@c @implementation
public func afs_request_should_use_pipelining(_ r: OpaquePointer?) -> Bool { peek(r, RequestHandle.self)?.request.properties.shouldUsePipelining ?? false }

@c @implementation
public func afs_request_allows_cellular_access(_ r: OpaquePointer?) -> Bool { peek(r, RequestHandle.self)?.request.properties.allowsCellularAccess ?? false }

@c @implementation
public func afs_request_network_service_type(_ r: OpaquePointer?) -> Int32 { peek(r, RequestHandle.self)?.request.properties.networkServiceType ?? 0 }

@c @implementation
public func afs_request_copy_head(_ r: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?,
                                  _ err: UnsafeMutablePointer<afs_error>?) -> UnsafeMutablePointer<CChar>? {
    len?.pointee = 0
    return pointer(err) {
        let head = try unbox(r, RequestHandle.self, "request").request.head()
        guard let p = head.withUnsafeBytes({ mallocCString($0) }) else {
            throw AFSError(.noMemory, "out of memory copying a request head of \(head.count) bytes")
        }
        len?.pointee = head.count
        return p
    }
}

@c @implementation
public func afs_request_write_to_fd(_ r: OpaquePointer?, _ fd: Int32, _ written: UnsafeMutablePointer<UInt64>?,
                                    _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    written?.pointee = 0
    return status(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        guard fd >= 0 else { throw AFSError(.invalidArgument, "fd \(fd) is not a file descriptor") }
        var n: UInt64 = 0
        defer { written?.pointee = n }
        // The body's callbacks run inside this call: a call on this request from one of them
        // is refused (AFS_E_STATE), as for every other call that streams the body.
        guard try exclusive(h, { try h.request.write(to: fd, offset: &h.wireOffset, written: &n, interruptible: h.interruptible) }) != nil else {
            throw reentrancyError("afs_request_write_to_fd")
        }
    }
}

@c @implementation
public func afs_request_set_interruptible(_ r: OpaquePointer?, _ interruptible: Bool) {
    guard let h = peek(r, RequestHandle.self) else { return }
    _ = exclusive(h) { h.interruptible = interruptible }  // from inside a callback: ignored
}
