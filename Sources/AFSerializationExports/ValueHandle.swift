// `afs_value`: the handle of a parameters tree.
import AFSerialization

/// `afs_value`: a parameters tree. What the walking functions lend to C (child handles,
/// NUL-terminated copies of keys, strings and data) is made on first access, kept here, and
/// dropped when the value changes: borrowed pointers live until the value is freed or
/// changed.
final class ValueHandle: Handle {
    /// The tree. Change it only through `mutate`, which drops what was lent out. (No
    /// `didSet` here: an observed property is copied out and written back on every in-place
    /// change, which would copy the whole container on each dict_set/append.)
    private(set) var value: Value

    /// Changes the value in place and then drops the borrowed handles and copies lent out.
    /// When `body` throws (a container of the wrong kind) nothing changed and what was lent
    /// out stays valid, as the header promises.
    func mutate<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        let r = try body(&value)
        children = nil
        keyCopies = nil
        scalarCopy = nil
        return r
    }
    /// Nesting depth of `value` (scalars 0, containers 1 + their deepest member), kept up
    /// to date by `afs_value_dict_set`/`afs_value_append` so that trees deeper than
    /// `Value.maxDepth` are refused when built, instead of overflowing the stack later.
    /// Computed on first use when not given (a decoded document may never need it).
    var depth: Int {
        get {
            if let d = knownDepth { return d }
            let d = value.nestingDepth
            knownDepth = d
            return d
        }
        set { knownDepth = newValue }
    }
    private var knownDepth: Int?
    /// Borrowed handles of members (dictionary values, array elements, set members in
    /// insertion order), created on first access.
    private var children: [ValueHandle?]?
    /// NUL-terminated copies of dictionary keys, created on first access.
    private var keyCopies: [CStringBox?]?
    /// The NUL-terminated copy of a string value, or the copy of a data value.
    private var scalarCopy: CStringBox?
    /// A member lent by `child(at:)`: owned by its parent's cache, so `afs_value_free`
    /// ignores it and consuming calls refuse it.
    private(set) var isBorrowed = false

    init(_ value: Value, depth: Int? = nil) {
        self.value = value
        self.knownDepth = depth
    }
    override class var cName: String { "afs_value" }

    /// The borrowed handle of member `i` (a dictionary's value, an array's element, a set's
    /// member in insertion order); nil when out of range or not a container.
    func child(at i: Int) -> ValueHandle? {
        let n = value.count
        guard i >= 0 && i < n else { return nil }
        if children == nil { children = Array(repeating: nil, count: n) }
        if let c = children![i] { return c }
        let member: Value
        switch value {
        case .dict(let d): member = d.values[i]
        case .array(let a): member = a[i]
        case .set(let s): member = s.members[i]
        default: return nil
        }
        let c = ValueHandle(member)
        c.isBorrowed = true
        children![i] = c
        return c
    }

    /// The NUL-terminated copy of key `i` of a dictionary; nil when out of range, not a
    /// dictionary, or out of memory.
    func key(at i: Int) -> CStringBox? {
        guard case .dict(let d) = value, i >= 0 && i < d.count else { return nil }
        if keyCopies == nil { keyCopies = Array(repeating: nil, count: d.count) }
        if let k = keyCopies![i] { return k }
        let k = CStringBox.copy(d.keys[i])
        keyCopies![i] = k
        return k
    }

    /// The position of `key` in a dictionary (byte comparison), or nil.
    func index(ofKey key: String) -> Int? {
        guard case .dict(let d) = value else { return nil }
        return d.index(forKey: key)
    }

    /// The NUL-terminated copy of a string value, or the bytes of a data value; nil for
    /// other kinds or out of memory.
    func scalarBytes() -> CStringBox? {
        if let c = scalarCopy { return c }
        switch value {
        case .string(let s): scalarCopy = CStringBox.copy(s)
        case .data(let d): scalarCopy = CStringBox.copy(d)
        default: return nil
        }
        return scalarCopy
    }
}
