// Version, memory, status names and the stateless helpers (header sections 1, 2 and 4).
import AFSerialization
import CAFSerialization

import Glibc  // Linux with glibc only, as the core (Sources/AFSerialization/Platform.swift)

/// Static strings lent to C for the life of the process (the header's "static storage").
private struct StaticCStrings: @unchecked Sendable {  // immutable after init
    let version: UnsafeMutablePointer<CChar>?
    let statusNames: [UnsafeMutablePointer<CChar>?]
    let unknownStatus: UnsafeMutablePointer<CChar>?
    init() {
        func make(_ s: String) -> UnsafeMutablePointer<CChar>? { try? ownedCString(s) }
        version = make(AFSVersion.string)
        statusNames = AFSStatus.allCases.map { make($0.name) }
        unknownStatus = make("AFS_E_UNKNOWN")
    }
}
private let staticStrings = StaticCStrings()
/// Used when the static strings could not be allocated at startup: never NULL.
private let emptyCString: StaticString = ""

private func lendStatic(_ p: UnsafeMutablePointer<CChar>?) -> UnsafePointer<CChar>? {
    if let p = p { return UnsafePointer(p) }
    return UnsafeRawPointer(emptyCString.utf8Start).assumingMemoryBound(to: CChar.self)
}

@c @implementation
public func afs_version() -> UnsafePointer<CChar>? { lendStatic(staticStrings.version) }

@c @implementation
public func afs_version_number() -> UInt32 { UInt32(AFSVersion.number) }

@c @implementation
public func afs_free(_ p: UnsafeMutableRawPointer?) { free(p) }

@c @implementation
public func afs_status_name(_ status: afs_status) -> UnsafePointer<CChar>? {
    guard let s = AFSStatus.allCases.first(where: { $0.c == status }),
          let i = AFSStatus.allCases.firstIndex(of: s) else {
        return lendStatic(staticStrings.unknownStatus)
    }
    return lendStatic(staticStrings.statusNames[i])
}

@c @implementation
public func afs_string_new(_ utf8: UnsafePointer<CChar>?, _ len: Int) -> UnsafeMutablePointer<CChar>? {
    guard let bytes = try? bytesArg(utf8, len, "utf8") else { return nil }
    return mallocCString(UnsafeRawBufferPointer(bytes))
}

@c @implementation
public func afs_url_resolve(_ base: UnsafePointer<CChar>?, _ reference: UnsafePointer<CChar>?,
                            _ err: UnsafeMutablePointer<afs_error>?) -> UnsafeMutablePointer<CChar>? {
    pointer(err) {
        try ownedCString(try URLResolve.resolve(try stringArg(reference, NTS, "reference"), base: try stringArg(base, NTS, "base")))
    }
}

@c @implementation
public func afs_percent_escape(_ utf8: UnsafePointer<CChar>?, _ len: Int, _ err: UnsafeMutablePointer<afs_error>?) -> UnsafeMutablePointer<CChar>? {
    pointer(err) {
        let bytes = try bytesArg(utf8, len, "utf8")
        var out = ByteWriter(capacity: 16)  // escape reserves the worst case once
        try PercentEscaping.escape(utf8: bytes, to: &out)
        return try out.takeCString()
    }
}

@c @implementation
public func afs_query_string(_ params: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> UnsafeMutablePointer<CChar>? {
    pointer(err) {
        let v = try valueArg(params, "params")
        var out = ByteWriter(capacity: 256)
        try QueryString.append(try v.value, style: .default, to: &out)
        return try out.takeCString()
    }
}
