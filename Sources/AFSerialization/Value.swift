/// A parameters tree: the property-list objects AFNetworking serializes (NSDictionary,
/// NSArray, NSSet, NSString, NSNumber, NSNull, NSData, NSDate).
///
/// Strings compare by their UTF-8 bytes (Unicode scalars), never by canonical equivalence:
/// `"é"` and `"e\u{301}"` are different keys, as they are different bytes on the wire.
///
/// C: `afs_value` and the `afs_value_*` functions.
public enum Value: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case data([UInt8])
    case array([Value])
    case set(ValueSet)
    case dict(ValueDict)
    /// A point in time: seconds since 1970-01-01T00:00:00Z (NSDate, a property list's
    /// `<date>`, Python's `datetime`). C: `AFS_VALUE_DATE`.
    case date(Double)

    /// The kind, in the order of the C `afs_value_kind` enum.
    public enum Kind: Int32, Sendable {
        case null = 0, bool, int, double, string, data, array, set, dict
        case date = 9
    }

    public var kind: Kind {
        switch self {
        case .null: return .null
        case .bool: return .bool
        case .int: return .int
        case .double: return .double
        case .string: return .string
        case .data: return .data
        case .array: return .array
        case .set: return .set
        case .dict: return .dict
        case .date: return .date
        }
    }

    /// True for dictionaries, arrays and sets.
    public var isContainer: Bool {
        switch self {
        case .array, .set, .dict: return true
        default: return false
        }
    }

    /// Number of members of a dictionary, array or set; 0 for scalars. C: `afs_value_count`.
    public var count: Int {
        switch self {
        case .array(let a): return a.count
        case .set(let s): return s.count
        case .dict(let d): return d.count
        default: return 0
        }
    }
}

// MARK: - Nesting

extension Value {
    /// The deepest nesting the C API builds and the readers accept (512, as the JSON and
    /// property-list readers): deeper trees would overflow a thread's stack in the recursive
    /// writers and in deallocation.
    public static let maxDepth = 512

    /// Scalars 0, a container 1 + the depth of its deepest member (an empty one 1).
    /// Iterative (see `nestingDepth(cappedAt:)`): any depth on any thread stack.
    public var nestingDepth: Int { nestingDepth(cappedAt: Int.max) }
}

// MARK: - Building trees in place

extension Value {
    /// Sets `key` in a dictionary; an existing key keeps its position and gets the new value.
    /// - Throws: `AFSError` `.invalidArgument` when `self` is not a dictionary.
    ///   C: `afs_value_dict_set`.
    public mutating func dictSet(_ key: String, _ value: Value) throws {
        guard case .dict(var d) = self else {
            throw AFSError.invalidArgument("cannot set key \"\(key)\": the value is \(kind.article), not a dictionary")
        }
        self = .null  // drop our reference so `d` is uniquely owned and grows in place
        d[key] = value
        self = .dict(d)
    }

    /// Appends to an array, or adds to a set (a member already there is a successful no-op).
    /// - Throws: `AFSError` `.invalidArgument` when `self` is neither. C: `afs_value_append`.
    public mutating func append(_ value: Value) throws {
        // `guard case` rather than `switch`: a switch keeps its subject (and so a second
        // reference to the buffer) alive to the end, and every append would copy the array.
        if case .array(var a) = self {
            self = .null  // drop our reference so `a` is uniquely owned and grows in place
            a.append(value)
            self = .array(a)
            return
        }
        guard case .set(var s) = self else {
            throw AFSError.invalidArgument("cannot append: the value is \(kind.article), not an array or a set")
        }
        self = .null
        s.insert(value)
        self = .set(s)
    }
}

extension Value.Kind {
    /// "a dictionary", "an integer", … for error messages.
    public var article: String {
        switch self {
        case .null: return "null"
        case .bool: return "a bool"
        case .int: return "an integer"
        case .double: return "a double"
        case .string: return "a string"
        case .data: return "data"
        case .array: return "an array"
        case .set: return "a set"
        case .dict: return "a dictionary"
        case .date: return "a date"
        }
    }
}

// MARK: - Equality: same kind and same value

extension Value: Hashable {
    /// Two values are equal when they have the same kind and the same value: `1`, `true`,
    /// `1.0` and `"1"` are four different values. Strings compare by bytes; doubles by value
    /// (NaN equals NaN, so a set holds at most one NaN); containers member by member
    /// (dictionaries and sets regardless of order).
    ///
    /// Comparing walks both trees; from 32 levels down it continues on a large stack (see
    /// `LargeStack`), so deep trees compare on any thread.
    public static func == (lhs: Value, rhs: Value) -> Bool {
        equal(lhs, rhs, depth: 0)
    }

    static func equal(_ lhs: Value, _ rhs: Value, depth: Int) -> Bool {
        if depth == LargeStack.hopDepth && lhs.isContainer {
            var r = false
            if LargeStack.run({ r = equalHere(lhs, rhs, depth: depth) }) { return r }
        }
        return equalHere(lhs, rhs, depth: depth)
    }

    static func equalHere(_ lhs: Value, _ rhs: Value, depth: Int) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b || (a.isNaN && b.isNaN)
        case (.string(let a), .string(let b)): return utf8Equal(a, b)
        case (.data(let a), .data(let b)): return a == b
        case (.date(let a), .date(let b)): return a == b || (a.isNaN && b.isNaN)
        case (.array(let a), .array(let b)):
            guard a.count == b.count else { return false }
            for i in a.indices where !equal(a[i], b[i], depth: depth + 1) { return false }
            return true
        case (.set(let a), .set(let b)): return a == b
        case (.dict(let a), .dict(let b)):
            guard a.count == b.count else { return false }
            for (k, v) in a.pairs {
                guard let w = b[k], equal(v, w, depth: depth + 1) else { return false }
            }
            return true
        default: return false
        }
    }

    /// Structural: equal trees hash equal, and containers hash by their whole content
    /// (arrays in order, dictionaries and sets regardless of order), so a set of containers
    /// that differ only deep inside stays linear to build. From 32 levels down hashing
    /// continues on a large stack, as comparing does.
    public func hash(into h: inout Hasher) {
        h.combine(Value.structuralHash(self, depth: 0))
    }

    static func structuralHash(_ v: Value, depth: Int) -> Int {
        if depth == LargeStack.hopDepth && v.isContainer {
            var r = 0
            if LargeStack.run({ r = v.structuralHashHere(depth: depth) }) { return r }
        }
        return v.structuralHashHere(depth: depth)
    }

    private func structuralHashHere(depth: Int) -> Int {
        var h = Hasher()
        h.combine(kind.rawValue)
        switch self {
        case .array(let a):
            h.combine(a.count)
            for m in a { h.combine(m.isContainer ? Value.structuralHash(m, depth: depth + 1) : m.scalarHash) }
        case .set(let s):
            h.combine(s.count)
            var sum = 0  // order-independent
            for m in s.members { sum &+= m.isContainer ? Value.structuralHash(m, depth: depth + 1) : m.scalarHash }
            h.combine(sum)
        case .dict(let d):
            h.combine(d.count)
            var sum = 0  // order-independent
            for (k, m) in d.pairs {
                var p = Hasher()
                hashUTF8(k, into: &p)
                p.combine(m.isContainer ? Value.structuralHash(m, depth: depth + 1) : m.scalarHash)
                sum &+= p.finalize()
            }
            h.combine(sum)
        default:
            scalarHash(into: &h)
        }
        return h.finalize()
    }

    private var scalarHash: Int {
        var h = Hasher()
        h.combine(kind.rawValue)
        scalarHash(into: &h)
        return h.finalize()
    }

    private func scalarHash(into h: inout Hasher) {
        switch self {
        case .null: break
        case .bool(let b): h.combine(b)
        case .int(let i): h.combine(i)
        case .double(let d), .date(let d): h.combine(d.isNaN ? Double.nan.bitPattern : (d == 0 ? 0 : d.bitPattern))
        case .string(let s): hashUTF8(s, into: &h)
        case .data(let d): h.combine(d.count); d.withUnsafeBytes { h.combine(bytes: $0) }
        case .array, .set, .dict: break  // structuralHashHere
        }
    }
}

/// Hashes a string by its UTF-8 bytes, consistent with byte equality.
@inline(__always)
func hashUTF8(_ s: String, into h: inout Hasher) {
    var s = s
    s.withUTF8 { h.combine(bytes: UnsafeRawBufferPointer($0)) }
    h.combine(0xFF as UInt8)  // terminator: "ab"+"c" and "a"+"bc" differ inside arrays
}

/// A string that hashes and compares by its UTF-8 bytes (used as a dictionary key).
@usableFromInline
struct ByteKey: Hashable, Sendable {
    @usableFromInline let string: String
    @inlinable init(_ s: String) { string = s }
    @usableFromInline static func == (a: ByteKey, b: ByteKey) -> Bool { utf8Equal(a.string, b.string) }
    @usableFromInline func hash(into h: inout Hasher) { hashUTF8(string, into: &h) }
}

/// Byte equality of two strings (memcmp over their contiguous UTF-8 where they have it).
@inline(__always)
func utf8Equal(_ a: String, _ b: String) -> Bool {
    let x = a.utf8, y = b.utf8
    let n = x.count
    guard n == y.count else { return false }
    if n == 0 { return true }
    let fast = x.withContiguousStorageIfAvailable { px in
        y.withContiguousStorageIfAvailable { py in memcmp(px.baseAddress!, py.baseAddress!, n) == 0 }
    }
    if let f = fast, let r = f { return r }
    return x.elementsEqual(y)
}

/// Orders two strings by Unicode scalars (equivalently, by their UTF-8 bytes).
public func utf8Less(_ a: String, _ b: String) -> Bool {
    var a = a, b = b
    return a.withUTF8 { pa in
        b.withUTF8 { pb in
            let n = min(pa.count, pb.count)
            if n > 0, let ba = pa.baseAddress, let bb = pb.baseAddress {
                let c = memcmpBytes(ba, bb, n)
                if c != 0 { return c < 0 }
            }
            return pa.count < pb.count
        }
    }
}

@inline(__always)
private func memcmpBytes(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ n: Int) -> Int {
    var i = 0
    while i < n {
        let x = a[i], y = b[i]
        if x != y { return x < y ? -1 : 1 }
        i += 1
    }
    return 0
}

// MARK: - Dictionary with insertion order

/// A dictionary with string keys that keeps insertion order; setting an existing key replaces
/// its value in place.
///
/// Up to `ValueDict.linearLimit` keys it has no hash index: a lookup compares the keys' bytes
/// one by one (cheaper than hashing for a few short keys, and no table to allocate: the many
/// small dictionaries of a decoded document cost two arrays each). Beyond, `index` maps every
/// key to its position. Invariant: `index` is empty or complete.
public struct ValueDict: Sendable, Equatable {
    public private(set) var keys: [String] = []
    public private(set) var values: [Value] = []
    private var index: [ByteKey: Int] = [:]

    /// The most keys looked up without an index.
    static let linearLimit = 8

    public init() {}

    public init(_ pairs: [(String, Value)]) {
        self.init(count: pairs.count) { pairs[$0] }
    }

    /// Builds a dictionary from `count` pairs produced in order by `pair(i)`, reserving room
    /// once; a repeated key keeps its first position and takes the last value (as JSON
    /// objects with duplicate keys do).
    public init(count: Int, _ pair: (Int) throws -> (String, Value)) rethrows {
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
        if count > ValueDict.linearLimit { index.reserveCapacity(count) }
        for i in 0..<count {
            let (k, v) = try pair(i)
            if let at = position(of: k) {
                values[at] = v
            } else {
                append(k, v)
            }
        }
    }

    /// The position of `key` (compared by bytes), or nil.
    @inline(__always)
    private func position(of key: String) -> Int? {
        if !index.isEmpty { return index[ByteKey(key)] }
        var i = 0
        while i < keys.count {
            if utf8Equal(keys[i], key) { return i }
            i += 1
        }
        return nil
    }

    /// Adds a key that is not there.
    @inline(__always)
    private mutating func append(_ key: String, _ v: Value) {
        keys.append(key)
        values.append(v)
        if !index.isEmpty {
            index[ByteKey(key)] = keys.count - 1
        } else if keys.count > ValueDict.linearLimit {
            index.reserveCapacity(keys.count)
            for (j, k) in keys.enumerated() { index[ByteKey(k)] = j }
        }
    }

    /// Room for `n` keys in all.
    public mutating func reserveCapacity(_ n: Int) {
        keys.reserveCapacity(n)
        values.reserveCapacity(n)
        if n > ValueDict.linearLimit { index.reserveCapacity(n) }
    }

    /// Replaces the value at position `i` (0..<count), keeping its key.
    public mutating func setValue(_ v: Value, at i: Int) { values[i] = v }

    public var count: Int { keys.count }
    public var isEmpty: Bool { keys.isEmpty }

    public subscript(key: String) -> Value? {
        get { position(of: key).map { values[$0] } }
        set {
            if let i = position(of: key) {
                if let v = newValue {
                    values[i] = v
                } else {
                    keys.remove(at: i)
                    values.remove(at: i)
                    if !index.isEmpty {
                        index[ByteKey(key)] = nil
                        for j in i..<keys.count { index[ByteKey(keys[j])] = j }
                    }
                }
            } else if let v = newValue {
                append(key, v)
            }
        }
    }

    /// The position of `key` (compared by bytes), or nil.
    public func index(forKey key: String) -> Int? { position(of: key) }

    /// (key, value) pairs in insertion order.
    public var pairs: Zip2Sequence<[String], [Value]> { zip(keys, values) }

    public static func == (a: ValueDict, b: ValueDict) -> Bool {
        guard a.count == b.count else { return false }
        for (k, v) in a.pairs {
            guard let w = b[k], v == w else { return false }
        }
        return true
    }
}

// MARK: - Set with insertion order

/// An unordered collection of distinct values (NSSet). Members are kept in insertion order
/// so that output that depends on it is reproducible; adding a member equal to one already
/// there (same kind, same value) does nothing.
public struct ValueSet: Sendable, Equatable {
    public private(set) var members: [Value] = []
    private var index: Set<Value> = []

    public init() {}
    public init<S: Sequence>(_ values: S) where S.Element == Value {
        for v in values { insert(v) }
    }

    public var count: Int { members.count }

    /// Adds `value` unless an equal member is there. Returns whether it was added.
    /// Hashing and comparing walk the member's tree: a member nested 32 levels or more is
    /// inserted on a large stack (see `LargeStack`).
    @discardableResult
    public mutating func insert(_ value: Value) -> Bool {
        if value.isContainer && value.isNested(atLeast: LargeStack.hopDepth) {
            var inserted = false
            let ok = LargeStack.run { inserted = index.insert(value).inserted }
            if !ok { inserted = index.insert(value).inserted }  // no thread: try on this stack
            guard inserted else { return false }
        } else {
            guard index.insert(value).inserted else { return false }
        }
        members.append(value)
        return true
    }

    public func contains(_ value: Value) -> Bool {
        if value.isContainer && value.isNested(atLeast: LargeStack.hopDepth) {
            var found = false
            if LargeStack.run({ found = index.contains(value) }) { return found }
        }
        return index.contains(value)
    }

    public static func == (a: ValueSet, b: ValueSet) -> Bool { a.index == b.index }
}

// MARK: - Literals for Swift callers

extension Value: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral,
    ExpressibleByNilLiteral
{
    public init(stringLiteral s: String) { self = .string(s) }
    public init(integerLiteral i: Int64) { self = .int(i) }
    public init(floatLiteral d: Double) { self = .double(d) }
    public init(booleanLiteral b: Bool) { self = .bool(b) }
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, Value)...) { self = .dict(ValueDict(elements)) }
    public init(nilLiteral: ()) { self = .null }
}
