/// Writes values (and request snapshots) as the pickle subset of `Pickle`: `PROTO 4`, one
/// `FRAME` holding everything, the opcodes of the table, `STOP`. Values are written
/// without the memo (a `Value` shares nothing); `JSONToPickle` memoizes dictionary keys.
///
/// What Python's `pickle` loads (the mapping of every decoded document):
/// dictionary `dict` (keys in order), array `list`, string `str`, data `bytes`, integer
/// `int`, double `float`, bool `bool`, null `None`; a set `frozenset` when its members are
/// hashable in Python and stay distinct there (`1`, `1.0` and `true` are three members of
/// a set here but one in Python), otherwise a `list` in the set's order.
///
/// C: `afs_value_to_pickle`, `afs_response_object_pickle`, `afs_request_pickle`.
public struct PickleWriter: ~Copyable {
    var out: ByteWriter
    /// Entries stored with `MEMOIZE` so far (only `JSONToPickle` memoizes, its keys).
    var memoCount = 0

    /// A writer whose first bytes are `PROTO 4` and a `FRAME` header to be filled by
    /// `finish`.
    public init(capacity: Int = 256) {
        out = ByteWriter(capacity: capacity + 12)
        guard out.reserve(11) else { return }  // out of memory: take() reports it
        out.put(Pickle.PROTO)
        out.put(Pickle.writtenProtocol)
        out.put(Pickle.FRAME)
        for _ in 0..<8 { out.put(0) }
    }

    /// Appends `STOP` and fills in the frame length (everything after the frame header).
    mutating func finish() {
        out.append(Pickle.STOP)
        guard !out.failed else { return }  // take()/toArray() report it
        let frame = UInt64(out.count - 11)
        _ = try? out.withBytes { b in
            let p = UnsafeMutablePointer(mutating: b.baseAddress!)
            for i in 0..<8 { p[3 + i] = UInt8(truncatingIfNeeded: frame >> (8 * UInt64(i))) }
        }
    }

    // MARK: Whole pickles

    /// The pickle of `value` as a byte array.
    /// - Throws: `.invalidArgument` for a tree nested deeper than `Value.maxDepth`.
    public static func pickle(_ value: Value) throws -> [UInt8] {
        var w = PickleWriter(capacity: 64)
        try w.write(value, depth: 0)
        w.finish()
        return try w.out.toArray()
    }

    /// The pickle of `value` in `malloc` memory (free with `free`) and its length: the
    /// C functions hand it to their caller without a copy.
    public static func mallocPickle(_ value: Value) throws -> (UnsafeMutablePointer<UInt8>, Int) {
        var w = PickleWriter(capacity: 256)
        try w.write(value, depth: 0)
        return try w.take()
    }

    /// The snapshot of a request that the Python bindings read in one piece: the tuple
    /// `(method, url, [(name, value), ...], body or None, has_body_stream, timeout_interval,
    /// cache_policy, should_handle_cookies, should_use_pipelining, allows_cellular_access,
    /// network_service_type)`. C: `afs_request_pickle`.
    public static func mallocSnapshot(of r: Request) throws(AFSError) -> (UnsafeMutablePointer<UInt8>, Int) {
        var w = PickleWriter(capacity: 128 + (r.bodyCount ?? 0))
        w.out.append(Pickle.MARK)
        w.string(r.method)
        w.string(r.url)
        w.out.append(Pickle.EMPTY_LIST)
        if r.headers.count > 0 {
            w.out.append(Pickle.MARK)
            for (name, value) in r.headers {
                w.string(name)
                w.string(value)
                w.out.append(Pickle.TUPLE2)
            }
            w.out.append(Pickle.APPENDS)
        }
        if r.withBody({ w.bytes($0) }) == nil { w.out.append(Pickle.NONE) }
        w.bool(r.bodyStream != nil)
        w.double(r.properties.timeoutInterval)
        w.int(Int64(r.properties.cachePolicy))
        w.bool(r.properties.shouldHandleCookies)
        w.bool(r.properties.shouldUsePipelining)
        w.bool(r.properties.allowsCellularAccess)
        w.int(Int64(r.properties.networkServiceType))
        w.out.append(Pickle.TUPLE)
        return try w.take()
    }

    /// Finishes the pickle and hands over its `malloc` memory.
    consuming func take() throws(AFSError) -> (UnsafeMutablePointer<UInt8>, Int) {
        finish()
        let n = out.count
        let p = UnsafeMutableRawPointer(try out.takeCString()).assumingMemoryBound(to: UInt8.self)
        return (p, n)
    }

    // MARK: Values

    /// Writes `v` at nesting `depth` (0 for the root). Containers `LargeStack.hopDepth`
    /// levels down continue on a large stack, so that deep trees need little of the
    /// caller's thread stack.
    public mutating func write(_ v: Value, depth: Int) throws {
        if depth == LargeStack.hopDepth && v.isContainer {
            try LargeStack.run { try self.writeHere(v, depth: depth) }
            return
        }
        try writeHere(v, depth: depth)
    }

    private mutating func writeHere(_ v: Value, depth: Int) throws {
        switch v {
        case .null: out.append(Pickle.NONE)
        case .bool(let b): bool(b)
        case .int(let i): int(i)
        case .double(let d): double(d)
        case .string(let s): string(s)
        case .data(let d): bytes(d)
        case .date(let t):
            string(Pickle.dateModule)
            string(Pickle.dateName)
            out.append(Pickle.STACK_GLOBAL)
            double(t)
            out.append(Pickle.TUPLE1)
            out.append(Pickle.REDUCE)
        case .array(let a):
            try checkDepth(depth)
            out.append(Pickle.EMPTY_LIST)
            if a.isEmpty { return }
            out.append(Pickle.MARK)
            for m in a { try write(m, depth: depth + 1) }
            out.append(Pickle.APPENDS)
        case .dict(let d):
            try checkDepth(depth)
            out.append(Pickle.EMPTY_DICT)
            if d.isEmpty { return }
            out.append(Pickle.MARK)
            for (k, m) in d.pairs {
                string(k)
                try write(m, depth: depth + 1)
            }
            out.append(Pickle.SETITEMS)
        case .set(let s):
            try checkDepth(depth)
            // (the key of nested sets is built and dropped by recursion: on a large stack
            // when the set is deep)
            let hashable = v.isNested(atLeast: LargeStack.hopDepth)
                ? try LargeStack.run { PickleWriter.pythonKey(v) != nil }
                : PickleWriter.pythonKey(v) != nil
            if hashable {
                out.append(Pickle.MARK)
                for m in s.members { try write(m, depth: depth + 1) }
                out.append(Pickle.FROZENSET)
            } else {  // unhashable members, or members Python would merge: a list
                out.append(Pickle.EMPTY_LIST)
                if s.count == 0 { return }
                out.append(Pickle.MARK)
                for m in s.members { try write(m, depth: depth + 1) }
                out.append(Pickle.APPENDS)
            }
        }
    }

    private func checkDepth(_ depth: Int) throws {
        if depth >= Value.maxDepth {
            throw AFSError(.invalidArgument, "containers nested deeper than \(Value.maxDepth) levels cannot be pickled")
        }
    }

    mutating func bool(_ b: Bool) { out.append(b ? Pickle.NEWTRUE : Pickle.NEWFALSE) }

    mutating func int(_ i: Int64) {
        guard out.reserve(10) else { return }  // out of memory: take() reports it
        if i >= 0 && i < 256 {
            out.put(Pickle.BININT1)
            out.put(UInt8(i))
        } else if i >= 0 && i < 65536 {
            out.put(Pickle.BININT2)
            out.put(UInt8(i & 0xFF))
            out.put(UInt8(i >> 8))
        } else if i >= Int64(Int32.min) && i <= Int64(Int32.max) {
            out.put(Pickle.BININT)
            let u = UInt32(bitPattern: Int32(i))
            for k in 0..<4 { out.put(UInt8(truncatingIfNeeded: u >> (8 * UInt32(k)))) }
        } else {
            // LONG1: the shortest little-endian two's complement (5 to 8 bytes here).
            let u = UInt64(bitPattern: i)
            var n = 8
            while n > 1 {
                let top = UInt8(truncatingIfNeeded: u >> (8 * UInt64(n - 1)))
                let next = UInt8(truncatingIfNeeded: u >> (8 * UInt64(n - 2)))
                if (top == 0 && next & 0x80 == 0) || (top == 0xFF && next & 0x80 != 0) { n -= 1 } else { break }
            }
            out.put(Pickle.LONG1)
            out.put(UInt8(n))
            for k in 0..<n { out.put(UInt8(truncatingIfNeeded: u >> (8 * UInt64(k)))) }
        }
    }

    mutating func double(_ d: Double) {
        guard out.reserve(9) else { return }  // out of memory: take() reports it
        out.put(Pickle.BINFLOAT)
        let u = d.bitPattern
        for k in (0..<8).reversed() { out.put(UInt8(truncatingIfNeeded: u >> (8 * UInt64(k)))) }
    }

    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { u in
            header(u.count, short: Pickle.SHORT_BINUNICODE, long: Pickle.BINUNICODE, huge: Pickle.BINUNICODE8)
            out.append(u)
        }
    }

    mutating func bytes(_ b: [UInt8]) {
        b.withUnsafeBufferPointer { bytes($0) }
    }

    mutating func bytes(_ b: UnsafeBufferPointer<UInt8>) {
        header(b.count, short: Pickle.SHORT_BINBYTES, long: Pickle.BINBYTES, huge: Pickle.BINBYTES8)
        out.append(b)
    }

    mutating func header(_ n: Int, short: UInt8, long: UInt8, huge: UInt8) {
        guard out.reserve(9 + n) else { return }  // out of memory: take() reports it
        if n < 256 {
            out.put(short)
            out.put(UInt8(n))
        } else if n <= Int(UInt32.max) {
            out.put(long)
            for k in 0..<4 { out.put(UInt8(truncatingIfNeeded: n >> (8 * k))) }
        } else {
            out.put(huge)
            for k in 0..<8 { out.put(UInt8(truncatingIfNeeded: n >> (8 * k))) }
        }
    }

    // MARK: Python's view of set members

    /// What a value is as a member of a Python set: equal keys are equal Python objects
    /// (`1`, `1.0`, `true` alike; strings by code points). nil when Python cannot hash it
    /// (dict, list) or it is a set that stays a list.
    enum PyKey: Hashable {
        case none
        case number(Int64)      // bools, ints and integral doubles within int64
        case double(UInt64)     // other doubles, by bit pattern (-0.0 is .number(0))
        case string([UInt8])
        case bytes([UInt8])
        case frozen(Set<PyKey>)
        case date(UInt64)
    }

    static func pythonKey(_ v: Value) -> PyKey? {
        switch v {
        case .null: return PyKey.none
        case .bool(let b): return .number(b ? 1 : 0)
        case .int(let i): return .number(i)
        case .double(let d):
            if d == d.rounded(.towardZero) && d >= -9.2233720368547758e18 && d < 9.2233720368547758e18 {
                return .number(Int64(d))
            }
            return .double(d.isNaN ? Double.nan.bitPattern : d.bitPattern)
        case .string(let s): return .string(Array(s.utf8))
        case .data(let d): return .bytes(d)
        case .date(let t): return .date(t == 0 ? 0 : t.bitPattern)
        case .array, .dict: return nil
        case .set(let s):
            var keys = Set<PyKey>()
            keys.reserveCapacity(s.count)
            for m in s.members {
                guard let k = pythonKey(m), keys.insert(k).inserted else { return nil }
            }
            return .frozen(keys)
        }
    }
}
