// afs_value_*: building, walking and freeing parameter trees (header section 3).
import AFSerialization
import CAFSerialization

import Glibc  // Linux with glibc only, as the core (Sources/AFSerialization/Platform.swift)

// MARK: - Building

@c @implementation
public func afs_value_new_dict() -> OpaquePointer? { box(ValueHandle(.dict(ValueDict()), depth: 1)) }

@c @implementation
public func afs_value_new_array() -> OpaquePointer? { box(ValueHandle(.array([]), depth: 1)) }

@c @implementation
public func afs_value_new_set() -> OpaquePointer? { box(ValueHandle(.set(ValueSet()), depth: 1)) }

@c @implementation
public func afs_value_new_string(_ utf8: UnsafePointer<CChar>?, _ len: Int, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) { box(ValueHandle(.string(try stringArg(utf8, len, "the string")))) }
}

@c @implementation
public func afs_value_new_int(_ v: Int64) -> OpaquePointer? { box(ValueHandle(.int(v))) }

@c @implementation
public func afs_value_new_double(_ v: Double) -> OpaquePointer? { box(ValueHandle(.double(v))) }

@c @implementation
public func afs_value_new_bool(_ v: Bool) -> OpaquePointer? { box(ValueHandle(.bool(v))) }

@c @implementation
public func afs_value_new_null() -> OpaquePointer? { box(ValueHandle(.null)) }

@c @implementation
public func afs_value_new_data(_ bytes: UnsafeRawPointer?, _ len: Int) -> OpaquePointer? {
    guard let b = try? dataArg(bytes, len, "bytes"),
          let copy = try? [UInt8](checkedCopying: b, "a data value of \(b.count) bytes") else { return nil }
    return box(ValueHandle(.data(copy)))
}

@c @implementation
public func afs_value_new_date(_ secondsSince1970: Double) -> OpaquePointer? { box(ValueHandle(.date(secondsSince1970))) }

/// A value argument that is usable: not NULL, a value, not a tombstone (AFS_E_STATE naming
/// the call that ended it).
func valueArg(_ p: OpaquePointer?, _ what: String) throws -> ValueHandle {
    let h = try unbox(p, ValueHandle.self, what)
    if let why = h.deathReason { throw AFSError(.state, "\(what) is no longer usable: \(why)") }
    return h
}

/// The container argument of a change: an owned root or a builder.
private func containerArg(_ p: OpaquePointer?, _ what: String) throws -> ValueHandle {
    let h = try unbox(p, ValueHandle.self, what)
    try h.checkChangeable(what)
    return h
}

/// Takes the value out of a consumed handle (`call` consumes it): it is consumed whatever
/// happens next, except when it is NULL, not a value, not owned (borrowed, a builder, a
/// tombstone), the container itself or the root of the container's tree (the caller still
/// owns it then). With a usable container it becomes a tombstone kept by the container's
/// tree; without one there is no tree to keep it, and it is freed.
private func consume(_ child: OpaquePointer?, into container: Result<ValueHandle, Error>, _ parent: OpaquePointer?,
                     by call: StaticString) throws -> (Value, depth: Int) {
    guard let child = child else { throw AFSError(.invalidArgument, "value is NULL") }
    if child == parent { throw AFSError(.invalidArgument, "value is the container itself (it was not consumed)") }
    let h = try unbox(child, ValueHandle.self, "value")  // a handle of another kind is not ours to free
    switch h.role {
    case .owned: break
    case .member:
        throw AFSError(.invalidArgument, "value is borrowed from its parent (afs_value_at, afs_value_get) and cannot be consumed")
    case .builder:
        throw AFSError(.invalidArgument, "value was made inside its parent (afs_value_*_new_dict, _new_array) and belongs to that tree: it cannot be consumed")
    case .dead(let why):
        throw AFSError(.state, "value is no longer usable: \(why.text) (it was not consumed again)")
    }
    guard case .success(let c) = container else {
        defer { release(child, ValueHandle.self) }  // no tree to keep a tombstone: freed
        return (try h.value, h.depth)
    }
    if c.root === h {
        throw AFSError(.invalidArgument, "value is the root of the container's own tree (it was not consumed)")
    }
    let taken: (Value, depth: Int)
    do {
        taken = try h.consume(into: c, by: call)
    } catch {  // its tree could not be built (out of memory): consumed all the same
        release(child, ValueHandle.self)
        throw error
    }
    release(child, ValueHandle.self)  // the container's tree keeps the tombstone
    return taken
}

@c @implementation
public func afs_value_dict_set(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ keyLen: Int,
                               _ value: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        // The container and the key are taken before the value is consumed: the key may be
        // the value's own text (afs_value_get_string of it), which consuming ends.
        let d = Result { try containerArg(dict, "dict") }
        let k = Result { try stringArg(key, keyLen, "key") }
        var v = try consume(value, into: d, dict, by: "afs_value_dict_set")
        defer { if v.depth >= LargeStack.hopDepth { Value.releaseDeep(&v.0) } }  // refused: freed here
        try d.get().set(try k.get(), v.0, depth: v.depth, by: "afs_value_dict_set")
    }
}

@c @implementation
public func afs_value_append(_ container: OpaquePointer?, _ value: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        let c = Result { try containerArg(container, "array_or_set") }
        var v = try consume(value, into: c, container, by: "afs_value_append")
        defer { if v.depth >= LargeStack.hopDepth { Value.releaseDeep(&v.0) } }  // refused: freed here
        try c.get().add(v.0, depth: v.depth)
    }
}

/// The top-down builders: a new empty container inside `parent`, lent back to be filled.
private func newInside(_ parent: OpaquePointer?, _ what: String, key: (UnsafePointer<CChar>?, Int)?, _ empty: Value,
                       by call: StaticString, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) {
        let p = try containerArg(parent, what)
        let k = try key.map { try stringArg($0.0, $0.1, "key") }
        return lend(try p.newBuilder(empty, key: k, by: call))
    }
}

@c @implementation
public func afs_value_dict_set_new_dict(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ keyLen: Int,
                                        _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    newInside(dict, "dict", key: (key, keyLen), .dict(ValueDict()), by: "afs_value_dict_set_new_dict", err)
}

@c @implementation
public func afs_value_dict_set_new_array(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ keyLen: Int,
                                         _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    newInside(dict, "dict", key: (key, keyLen), .array([]), by: "afs_value_dict_set_new_array", err)
}

@c @implementation
public func afs_value_append_new_dict(_ array: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    newInside(array, "array", key: nil, .dict(ValueDict()), by: "afs_value_append_new_dict", err)
}

@c @implementation
public func afs_value_append_new_array(_ array: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    newInside(array, "array", key: nil, .array([]), by: "afs_value_append_new_array", err)
}

@c @implementation
public func afs_value_parse_json(_ json: UnsafePointer<CChar>?, _ len: Int, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) { box(try ValueHandle.owning(try JSONDocument.parse(try bytesArg(json, len, "json")))) }
}

@c @implementation
public func afs_value_free(_ v: OpaquePointer?) {
    // Only owned roots: builders, members and tombstones belong to their tree.
    guard let h = peek(v, ValueHandle.self), h.isOwned else { return }
    release(v, ValueHandle.self)
}

// MARK: - Walking

extension Value.Kind {
    var c: afs_value_kind {
        switch self {
        case .null: return AFS_VALUE_NULL
        case .bool: return AFS_VALUE_BOOL
        case .int: return AFS_VALUE_INT
        case .double: return AFS_VALUE_DOUBLE
        case .string: return AFS_VALUE_STRING
        case .data: return AFS_VALUE_DATA
        case .array: return AFS_VALUE_ARRAY
        case .set: return AFS_VALUE_SET
        case .dict: return AFS_VALUE_DICT
        case .date: return AFS_VALUE_DATE
        }
    }
}

@c @implementation
public func afs_value_kind_of(_ v: OpaquePointer?) -> afs_value_kind {
    ValueRef(v)?.kind.c ?? AFS_VALUE_NULL
}

@c @implementation
public func afs_value_count(_ v: OpaquePointer?) -> Int { ValueRef(v)?.count ?? 0 }

@c @implementation
public func afs_value_key_at(_ dict: OpaquePointer?, _ i: Int, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<CChar>? {
    let k = ValueRef(dict)?.key(at: i)
    len?.pointee = k?.count ?? 0
    return k?.pointer
}

@c @implementation
public func afs_value_at(_ v: OpaquePointer?, _ i: Int) -> OpaquePointer? {
    ValueRef(v)?.child(at: i)
}

@c @implementation
public func afs_value_get(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?) -> OpaquePointer? {
    guard let r = ValueRef(dict), let k = try? stringArg(key, NTS, "key") else { return nil }
    return r.child(forKey: k)
}

@c @implementation
public func afs_value_get_bool(_ v: OpaquePointer?) -> Bool {
    ValueRef(v)?.bool ?? false
}

@c @implementation
public func afs_value_get_int(_ v: OpaquePointer?) -> Int64 {
    ValueRef(v)?.int ?? 0
}

@c @implementation
public func afs_value_get_double(_ v: OpaquePointer?) -> Double {
    guard let r = ValueRef(v) else { return 0 }
    return r.double ?? r.int.map(Double.init) ?? 0
}

@c @implementation
public func afs_value_get_string(_ v: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<CChar>? {
    guard let r = ValueRef(v), r.kind == .string, let c = r.scalarBytes() else {
        len?.pointee = 0
        return nil
    }
    len?.pointee = c.count
    return c.pointer
}

@c @implementation
public func afs_value_get_data(_ v: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<UInt8>? {
    guard let r = ValueRef(v), r.kind == .data, let c = r.scalarBytes() else {
        len?.pointee = 0
        return nil
    }
    len?.pointee = c.count
    return UnsafeRawPointer(c.pointer).assumingMemoryBound(to: UInt8.self)
}

@c @implementation
public func afs_value_get_date(_ v: OpaquePointer?) -> Double {
    guard let h = peek(v, ValueHandle.self), h.kind == .date, case .date(let t)? = try? h.value else { return 0 }
    return t
}
