// afs_request_*: requests built by hand and the getters of serialized requests.
import AFSerialization

@_cdecl("afs_request_new")
public func afs_request_new(_ method: UnsafePointer<CChar>?, _ url: UnsafePointer<CChar>?, _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    pointer(err) {
        box(RequestHandle(try Request(method: try stringArg(method, NTS, "method"), url: try stringArg(url, NTS, "url"))))
    }
}

@_cdecl("afs_request_set_header")
public func afs_request_set_header(_ r: OpaquePointer?, _ field: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?,
                                   _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        let name = try stringArg(field, NTS, "field")
        try h.request.setHeader(name, try optionalStringArg(value, "the value of header \"\(name)\""))
    }
}

@_cdecl("afs_request_free")
public func afs_request_free(_ r: OpaquePointer?) { release(r, RequestHandle.self) }

@_cdecl("afs_request_method")
public func afs_request_method(_ r: OpaquePointer?) -> UnsafePointer<CChar>? { peek(r, RequestHandle.self)?.method }

@_cdecl("afs_request_url")
public func afs_request_url(_ r: OpaquePointer?) -> UnsafePointer<CChar>? { peek(r, RequestHandle.self)?.url }

@_cdecl("afs_request_header_count")
public func afs_request_header_count(_ r: OpaquePointer?) -> Int { peek(r, RequestHandle.self)?.request.headers.count ?? 0 }

@_cdecl("afs_request_header_name")
public func afs_request_header_name(_ r: OpaquePointer?, _ i: Int) -> UnsafePointer<CChar>? {
    peek(r, RequestHandle.self)?.headerName(i)
}

@_cdecl("afs_request_header_value")
public func afs_request_header_value(_ r: OpaquePointer?, _ i: Int) -> UnsafePointer<CChar>? {
    peek(r, RequestHandle.self)?.headerValue(i)
}

@_cdecl("afs_request_header")
public func afs_request_header(_ r: OpaquePointer?, _ field: UnsafePointer<CChar>?) -> UnsafePointer<CChar>? {
    guard let h = peek(r, RequestHandle.self), let name = try? stringArg(field, NTS, "field"),
          let i = h.request.headers.index(of: name) else { return nil }
    return h.headerValue(i)
}

@_cdecl("afs_request_body")
public func afs_request_body(_ r: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<UInt8>? {
    guard let b = peek(r, RequestHandle.self)?.body() else {
        len?.pointee = 0
        return nil
    }
    len?.pointee = b.count
    return UnsafeRawPointer(b.pointer).assumingMemoryBound(to: UInt8.self)
}

@_cdecl("afs_request_timeout_interval")
public func afs_request_timeout_interval(_ r: OpaquePointer?) -> Double { peek(r, RequestHandle.self)?.request.properties.timeoutInterval ?? 0 }

@_cdecl("afs_request_cache_policy")
public func afs_request_cache_policy(_ r: OpaquePointer?) -> Int32 { peek(r, RequestHandle.self)?.request.properties.cachePolicy ?? 0 }

@_cdecl("afs_request_should_handle_cookies")
public func afs_request_should_handle_cookies(_ r: OpaquePointer?) -> Bool { peek(r, RequestHandle.self)?.request.properties.shouldHandleCookies ?? false }

@_cdecl("afs_request_should_use_pipelining")
public func afs_request_should_use_pipelining(_ r: OpaquePointer?) -> Bool { peek(r, RequestHandle.self)?.request.properties.shouldUsePipelining ?? false }

@_cdecl("afs_request_allows_cellular_access")
public func afs_request_allows_cellular_access(_ r: OpaquePointer?) -> Bool { peek(r, RequestHandle.self)?.request.properties.allowsCellularAccess ?? false }

@_cdecl("afs_request_network_service_type")
public func afs_request_network_service_type(_ r: OpaquePointer?) -> Int32 { peek(r, RequestHandle.self)?.request.properties.networkServiceType ?? 0 }

@_cdecl("afs_request_copy_head")
public func afs_request_copy_head(_ r: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?,
                                  _ err: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<CChar>? {
    len?.pointee = 0
    return pointer(err) {
        let head = try unbox(r, RequestHandle.self, "request").request.head()
        len?.pointee = head.count
        return ownedCString(String(decoding: head, as: UTF8.self))
    }
}

@_cdecl("afs_request_write_to_fd")
public func afs_request_write_to_fd(_ r: OpaquePointer?, _ fd: Int32, _ written: UnsafeMutablePointer<UInt64>?,
                                    _ err: UnsafeMutableRawPointer?) -> Int32 {
    written?.pointee = 0
    return status(err) {
        let h = try unbox(r, RequestHandle.self, "request")
        guard fd >= 0 else { throw AFSError(.invalidArgument, "fd \(fd) is not a file descriptor") }
        var n: UInt64 = 0
        defer { written?.pointee = n }
        try h.request.write(to: fd, offset: &h.wireOffset, written: &n)
    }
}
