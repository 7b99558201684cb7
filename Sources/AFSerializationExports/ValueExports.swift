// afs_value_*: building, walking and freeing parameter trees (header section 3).
import AFSerialization
import CAFSerialization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
    guard let b = try? dataArg(bytes, len, "bytes") else { return nil }
    return box(ValueHandle(.data(Array(b))))
}

/// Takes the value out of a consumed handle: it is released whatever happens next, except
/// when it is NULL, not a value, borrowed, or the container itself (which the caller still
/// owns).
private func consume(_ child: OpaquePointer?, into parent: OpaquePointer?, _ what: String) throws -> (Value, depth: Int) {
    guard let child = child else { throw AFSError(.invalidArgument, "\(what) is NULL") }
    if child == parent { throw AFSError(.invalidArgument, "\(what) is the container itself (it was not consumed)") }
    let h = try unbox(child, ValueHandle.self, what)  // a handle of another kind is not ours to free
    if h.isBorrowed {
        throw AFSError(.invalidArgument, "\(what) is borrowed from its parent (afs_value_at, afs_value_get) and cannot be consumed")
    }
    defer { release(child, ValueHandle.self) }
    return (h.value, h.depth)
}

/// Puts a member into `container` with `insert`, refusing trees deeper than Value.maxDepth
/// and borrowed containers (a borrowed handle holds a copy: changing it would not change its
/// parent, and chains of such handles bypassed the depth limit and overflowed the stack
/// when freed).
private func insert(_ member: (Value, depth: Int), into container: ValueHandle, _ insert: (inout Value, Value) throws -> Void) throws {
    if container.isBorrowed {
        throw AFSError(.invalidArgument, "the container is borrowed from its parent (afs_value_at, afs_value_get) and cannot be changed")
    }
    let depth = max(container.depth, member.depth + 1)
    guard depth <= Value.maxDepth else {
        throw AFSError(.invalidArgument, "nesting deeper than \(Value.maxDepth) levels")
    }
    try container.mutate { try insert(&$0, member.0) }
    container.depth = depth
}

@c @implementation
public func afs_value_dict_set(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ keyLen: Int,
                               _ value: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        // The container and the key are taken before the value is consumed: either may live
        // in the value's tree (a borrowed member as container, a key from
        // afs_value_get_string of the value), which consuming frees.
        let d = Result { try unbox(dict, ValueHandle.self, "dict") }
        let k = Result { try stringArg(key, keyLen, "key") }
        let v = try consume(value, into: dict, "value")
        let container = try d.get()
        let keyString = try k.get()
        try insert(v, into: container) { try $0.dictSet(keyString, $1) }
    }
}

@c @implementation
public func afs_value_append(_ container: OpaquePointer?, _ value: OpaquePointer?, _ err: UnsafeMutablePointer<afs_error>?) -> afs_status {
    status(err) {
        // The container is taken first: a borrowed member of the value, consumed below, stays
        // alive through this reference until it is refused.
        let c = Result { try unbox(container, ValueHandle.self, "array_or_set") }
        let v = try consume(value, into: container, "value")
        try insert(v, into: try c.get()) { try $0.append($1) }
    }
}

@c @implementation
public func afs_value_parse_json(_ json: UnsafePointer<CChar>?, _ len: Int, _ err: UnsafeMutablePointer<afs_error>?) -> OpaquePointer? {
    pointer(err) { box(ValueHandle(try JSONParser.parse(try bytesArg(json, len, "json")))) }
}

@c @implementation
public func afs_value_free(_ v: OpaquePointer?) { release(v, ValueHandle.self) }

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
        }
    }
}

@c @implementation
public func afs_value_kind_of(_ v: OpaquePointer?) -> afs_value_kind {
    peek(v, ValueHandle.self)?.value.kind.c ?? AFS_VALUE_NULL
}

@c @implementation
public func afs_value_count(_ v: OpaquePointer?) -> Int { peek(v, ValueHandle.self)?.value.count ?? 0 }

@c @implementation
public func afs_value_key_at(_ dict: OpaquePointer?, _ i: Int, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<CChar>? {
    let k = peek(dict, ValueHandle.self)?.key(at: i)
    len?.pointee = k?.count ?? 0
    return k.map { UnsafePointer($0.pointer) }
}

@c @implementation
public func afs_value_at(_ v: OpaquePointer?, _ i: Int) -> OpaquePointer? {
    peek(v, ValueHandle.self)?.child(at: i).map(lend)
}

@c @implementation
public func afs_value_get(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?) -> OpaquePointer? {
    guard let h = peek(dict, ValueHandle.self), let k = try? stringArg(key, NTS, "key"),
          let i = h.index(ofKey: k) else { return nil }
    return h.child(at: i).map(lend)
}

@c @implementation
public func afs_value_get_bool(_ v: OpaquePointer?) -> Bool {
    guard case .bool(let b)? = peek(v, ValueHandle.self)?.value else { return false }
    return b
}

@c @implementation
public func afs_value_get_int(_ v: OpaquePointer?) -> Int64 {
    guard case .int(let i)? = peek(v, ValueHandle.self)?.value else { return 0 }
    return i
}

@c @implementation
public func afs_value_get_double(_ v: OpaquePointer?) -> Double {
    switch peek(v, ValueHandle.self)?.value {
    case .double(let d)?: return d
    case .int(let i)?: return Double(i)
    default: return 0
    }
}

@c @implementation
public func afs_value_get_string(_ v: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<CChar>? {
    guard let h = peek(v, ValueHandle.self), case .string = h.value, let c = h.scalarBytes() else {
        len?.pointee = 0
        return nil
    }
    len?.pointee = c.count
    return UnsafePointer(c.pointer)
}

@c @implementation
public func afs_value_get_data(_ v: OpaquePointer?, _ len: UnsafeMutablePointer<Int>?) -> UnsafePointer<UInt8>? {
    guard let h = peek(v, ValueHandle.self), case .data = h.value, let c = h.scalarBytes() else {
        len?.pointee = 0
        return nil
    }
    len?.pointee = c.count
    return UnsafeRawPointer(c.pointer).assumingMemoryBound(to: UInt8.self)
}
