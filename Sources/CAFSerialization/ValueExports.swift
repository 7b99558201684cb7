// afs_value_*: building parameter trees.
import AFSerialization

@_cdecl("afs_value_new_dict")
public func afs_value_new_dict() -> OpaquePointer { box(ValueHandle(.dict(ValueDict()), depth: 1)) }

@_cdecl("afs_value_new_array")
public func afs_value_new_array() -> OpaquePointer { box(ValueHandle(.array([]), depth: 1)) }

@_cdecl("afs_value_new_set")
public func afs_value_new_set() -> OpaquePointer { box(ValueHandle(.set(ValueSet()), depth: 1)) }

@_cdecl("afs_value_new_string")
public func afs_value_new_string(_ utf8: UnsafePointer<CChar>?, _ len: Int, _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    pointer(err) { box(ValueHandle(.string(try stringArg(utf8, len, "the string")))) }
}

@_cdecl("afs_value_new_int")
public func afs_value_new_int(_ v: Int64) -> OpaquePointer { box(ValueHandle(.int(v))) }

@_cdecl("afs_value_new_double")
public func afs_value_new_double(_ v: Double) -> OpaquePointer { box(ValueHandle(.double(v))) }

@_cdecl("afs_value_new_bool")
public func afs_value_new_bool(_ v: Bool) -> OpaquePointer { box(ValueHandle(.bool(v))) }

@_cdecl("afs_value_new_null")
public func afs_value_new_null() -> OpaquePointer { box(ValueHandle(.null)) }

@_cdecl("afs_value_new_data")
public func afs_value_new_data(_ bytes: UnsafeRawPointer?, _ len: Int) -> OpaquePointer? {
    if len == 0 { return box(ValueHandle(.data([]))) }
    guard let b = bytes, len > 0 else { return nil }
    return box(ValueHandle(.data(Array(UnsafeRawBufferPointer(start: b, count: len)))))
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

@_cdecl("afs_value_dict_set")
public func afs_value_dict_set(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ keyLen: Int,
                               _ value: OpaquePointer?, _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) {
        // The container and the key are taken before the value is consumed: either may live
        // in the value's tree (a borrowed member as container, a key from
        // afs_value_get_string of the value), which consuming frees.
        let d = Result { try unbox(dict, ValueHandle.self, "dict") }
        let k = Result { try stringArg(key, keyLen, "key") }
        var v = try consume(value, into: dict, "value")
        defer { if v.depth >= LargeStack.hopDepth { Value.releaseDeep(&v.0) } }  // refused: freed here
        let container = try d.get()
        let keyString = try k.get()
        try insert(v, into: container) { try $0.dictSet(keyString, $1) }
    }
}

@_cdecl("afs_value_append")
public func afs_value_append(_ container: OpaquePointer?, _ value: OpaquePointer?, _ err: UnsafeMutableRawPointer?) -> Int32 {
    status(err) {
        // The container is taken first: a borrowed member of the value, consumed below, stays
        // alive through this reference until it is refused.
        let c = Result { try unbox(container, ValueHandle.self, "array_or_set") }
        var v = try consume(value, into: container, "value")
        defer { if v.depth >= LargeStack.hopDepth { Value.releaseDeep(&v.0) } }  // refused: freed here
        try insert(v, into: try c.get()) { try $0.append($1) }
    }
}

@_cdecl("afs_value_parse_json")
public func afs_value_parse_json(_ json: UnsafePointer<CChar>?, _ len: Int, _ err: UnsafeMutableRawPointer?) -> OpaquePointer? {
    pointer(err) { box(ValueHandle(try JSONParser.parse(try bytesArg(json, len, "json")))) }
}

@_cdecl("afs_value_kind_of")
public func afs_value_kind_of(_ v: OpaquePointer?) -> Int32 {
    peek(v, ValueHandle.self)?.value.kind.rawValue ?? Value.Kind.null.rawValue
}

@_cdecl("afs_value_free")
public func afs_value_free(_ v: OpaquePointer?) { release(v, ValueHandle.self) }
