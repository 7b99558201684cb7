// Version, memory, status names and the stateless helpers.
import AFSerialization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

private let versionString = CStringBox.copy(AFSVersion.string)
private let statusNames: [CStringBox] = AFSStatus.allCases.map { CStringBox.copy($0.name) }
private let unknownStatusName = CStringBox.copy("AFS_E_UNKNOWN")

@_cdecl("afs_version")
public func afs_version() -> UnsafePointer<CChar> {
    UnsafePointer(versionString.pointer)
}

@_cdecl("afs_free")
public func afs_free(_ p: UnsafeMutableRawPointer?) {
    free(p)
}

@_cdecl("afs_status_name")
public func afs_status_name(_ status: Int32) -> UnsafePointer<CChar> {
    guard let s = AFSStatus(rawValue: status), let i = AFSStatus.allCases.firstIndex(of: s) else {
        return UnsafePointer(unknownStatusName.pointer)
    }
    return UnsafePointer(statusNames[i].pointer)
}

@_cdecl("afs_string_new")
public func afs_string_new(_ utf8: UnsafePointer<CChar>?, _ len: Int) -> UnsafeMutablePointer<CChar>? {
    guard let bytes = try? bytesArg(utf8, len, "utf8") else { return nil }
    let p = malloc(bytes.count + 1)!.assumingMemoryBound(to: CChar.self)
    if let b = bytes.baseAddress { memcpy(p, b, bytes.count) }
    p[bytes.count] = 0
    return p
}

@_cdecl("afs_percent_escape")
public func afs_percent_escape(_ utf8: UnsafePointer<CChar>?, _ len: Int, _ err: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<CChar>? {
    pointer(err) {
        let bytes = try bytesArg(utf8, len, "utf8")
        var out = ByteWriter(capacity: 16)  // escape reserves the worst case once
        try PercentEscaping.escape(utf8: bytes, to: &out)
        return try out.takeCString()
    }
}

@_cdecl("afs_query_string")
public func afs_query_string(_ params: OpaquePointer?, _ err: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<CChar>? {
    pointer(err) {
        let v = try unbox(params, ValueHandle.self, "params")
        var out = ByteWriter(capacity: 256)
        try QueryString.append(v.value, style: .default, to: &out)
        return try out.takeCString()
    }
}
