// `afs_value`: the handle of a parameters tree, and what it lends to C.
//
// Roles of a handle (one object per handle, whatever C does with it):
// - owned: a root made by afs_value_new_* / parse / decode; the caller frees it.
// - builder: a container made inside a parent by afs_value_*_new_dict / _new_array,
//   borrowed from the tree and filled in place; its value is written into the parent before
//   the parent is read (`value` materialises the tree).
// - member: a read-only snapshot lent by afs_value_at / afs_value_get (and the parameters
//   lent to a query callback).
// - dead: a tombstone. A consumed handle, the builders and members of a consumed tree, and a
//   member whose slot was replaced stay allocated, owned by the tree that took them (freed
//   with its root), so that a later call on one is AFS_E_STATE naming what ended it, never
//   a use of freed memory.
//
// A handle made by afs_value_parse_json (or copied from one) reads from a `JSONDocument`:
// kinds, counts, scalars and members come from the tape, keys and strings are lent straight
// from its text buffer, and JSON is written from it. Anything that needs the tree (another
// serializer, a pickle, an equality) builds it once and keeps it; the first change builds
// it and the handle is a tree from then on (the document stays alive with the handle, so
// what it lent stays valid until the root is freed).
//
// Lent objects (member handles, NUL-terminated copies of keys, strings and data) are
// published once into slots with atomic compare-and-swap, so the const getters may run on
// many threads at once over one tree; they are never freed before the root.
import AFSerialization
import CAFSerialization
import Synchronization

import Glibc  // Linux with glibc only, as the core (Sources/AFSerialization/Platform.swift)

final class ValueHandle: Handle {
    enum Role {
        case owned, builder, member
        /// A tombstone, with the call that ended it (no text is made until a call on it
        /// asks: a tree built by consuming keeps one small object per consumed handle).
        case dead(Death)
    }
    enum Death {
        case consumed(StaticString), treeConsumed(StaticString), replaced(StaticString)
        var text: String {
            switch self {
            case .consumed(let call): return "it was consumed by \(call) (it belongs to the tree it went into)"
            case .treeConsumed(let call): return "its tree was consumed by \(call) (it belongs to the tree that went into)"
            case .replaced(let call): return "its slot was replaced by \(call)"
            }
        }
        var inherited: Death {
            switch self {
            case .consumed(let call), .treeConsumed(let call): return .treeConsumed(call)
            case .replaced(let call): return .replaced(call)
            }
        }
    }
    private(set) var role: Role

    /// The value as last written; for a builder tree, `value` first writes the builders in.
    private var stored: Value
    /// Builders inside this container by slot (dictionary index or array index), strong.
    private var builders: [Int: ValueHandle] = [:]
    /// A builder's parent (which owns it) and its slot there.
    private unowned(unsafe) var parent: ValueHandle?
    private var slot = 0
    /// Set when a builder below changed and `stored` lags behind.
    private let dirty = Atomic<Bool>(false)
    /// Objects kept alive until the root is freed (tombstones, replaced members). Only
    /// roots hold some; moved along when a root is consumed.
    private var kept: [AnyObject] = []
    /// What was lent to C (see `LentCache`), published once.
    private let lentCache = Atomic<Int>(0)

    /// Nesting depth of the subtree (scalars 0, containers 1 + their deepest member).
    private var knownDepth: Int?

    /// The parsed document and node this handle stands for (never changed once set, so
    /// the text it lent outlives any change).
    private let doc: JSONDocument?
    private let node: Int
    /// Whether the handle still answers from `doc` (until its first change or its death).
    private var reading: Bool
    /// Set once `stored` holds the tree of `doc`'s node.
    private let treeReady = Atomic<Bool>(false)
    /// An owned root's registration for lending views of `doc`'s nodes (ValueViews.swift);
    /// nil for other handles and when the view table is full.
    let view: DocView?

    init(_ value: Value, role: Role = .owned, depth: Int? = nil) {
        stored = value
        self.role = role
        knownDepth = depth
        doc = nil
        node = 0
        reading = false
        view = nil
    }

    /// A handle reading node `node` of a parsed document without repeated keys.
    init(reading doc: JSONDocument, node: Int, role: Role) {
        self.role = role
        self.node = node
        stored = .null
        self.doc = doc
        reading = true
        knownDepth = node == 0 ? doc.depth : nil
        if case .owned = role { view = DocView.register(doc, node: node) } else { view = nil }
    }

    /// A read-only handle for a view (`unbox` makes one for a call that takes a status; it
    /// lives for that call): it reads the view's node, or is spent as the view is.
    init(view v: DocView, node: Int) {
        self.node = node
        doc = v.doc
        view = nil
        stored = .null
        if let why = v.death(of: node) {
            role = .dead(why)
            reading = false
            knownDepth = 0
        } else {
            role = .member
            reading = true
            knownDepth = node == 0 ? v.doc.depth : nil
        }
    }

    /// An owned handle for node `node` of a parsed document. A document whose objects
    /// repeat keys is read as its tree (the tape keeps every pair, the tree the last value).
    /// - Throws: `.noMemory` when that tree cannot be built.
    static func owning(_ doc: JSONDocument, node: Int = 0) throws -> ValueHandle {
        if doc.hasRepeatedKeys { return ValueHandle(try doc.value(at: node)) }  // depth: of the tree
        return ValueHandle(reading: doc, node: node, role: .owned)
    }

    deinit {
        if let c = LentCache.at(lentCache.load(ordering: .acquiring)) { Unmanaged.passUnretained(c).release() }
        // Nothing was built for a document that was only read.
        if doc != nil && !treeReady.load(ordering: .acquiring) { return }
        // A deep tree is released on a large stack (the caller's may be small); a member
        // snapshot shares its tree with its root, which releases it (unless it built its
        // own from a document).
        if case .member = role, doc == nil { return }
        if let d = knownDepth, d < LargeStack.hopDepth { return }
        Value.releaseDeep(&stored)
    }
    override class var cName: String { "afs_value" }

    // MARK: Roles

    var isDead: Bool { if case .dead = role { return true } else { return false } }
    var deathReason: String? { if case .dead(let d) = role { return d.text } else { return nil } }
    var isOwned: Bool { if case .owned = role { return true } else { return false } }
    var isBuilder: Bool { if case .builder = role { return true } else { return false } }

    /// The root of the tree this handle is in (itself for a root or a detached handle).
    var root: ValueHandle {
        var h = self
        while let p = h.parent { h = p }
        return h
    }

    /// How many containers are above this one (0 for a root).
    private var level: Int {
        var n = 0, h = self
        while let p = h.parent { n += 1; h = p }
        return n
    }

    // MARK: The value

    /// The tree, with every builder written in (the whole tree's, from its root). Safe from
    /// many threads at once when no thread changes the tree (the header's rule): the
    /// write-in, and the building of a document's tree, run under a global lock.
    /// - Throws: `.noMemory` when a document's tree cannot be built.
    var value: Value {
        get throws {
            if reading, let d = doc {
                if !treeReady.load(ordering: .acquiring) {
                    cafs_global_acquire()
                    defer { cafs_global_release() }
                    if !treeReady.load(ordering: .acquiring) {
                        stored = try d.value(at: node)
                        treeReady.store(true, ordering: .releasing)
                    }
                }
                return stored
            }
            return treeValue
        }
    }

    /// An owned copy: a handle reading the same document node (documents are immutable),
    /// or a handle with the tree.
    func copy() -> ValueHandle {
        if reading, let d = doc { return ValueHandle(reading: d, node: node, role: .owned) }
        return ValueHandle(treeValue)
    }

    /// The parameters for a serializer: the document's node while the handle reads one
    /// (JSON is then written from the tape), else the tree.
    func parameters() -> Parameters {
        if reading, let d = doc { return .document(d, node: node) }
        return .tree(treeValue)
    }

    /// `value` of a handle that does not read a document.
    private var treeValue: Value {
        let r = root
        if r.dirty.load(ordering: .acquiring) {
            cafs_global_acquire()
            if r.dirty.load(ordering: .acquiring) { r.materialise() }
            cafs_global_release()
        }
        return stored
    }

    /// Writes changed builders into `stored`, depth first, and clears the flags. Caller
    /// holds the global lock or is the only thread on the tree.
    private func materialise() {
        for (s, b) in builders where b.dirty.load(ordering: .acquiring) {
            b.materialise()
            replaceMember(at: s, with: b.stored)
        }
        dirty.store(false, ordering: .releasing)
    }

    private func replaceMember(at i: Int, with v: Value) {
        switch stored {
        case .dict(var d):
            stored = .null  // drop our reference so `d` stays uniquely owned
            d.setValue(v, at: i)
            stored = .dict(d)
        case .array(var a):
            stored = .null
            a[i] = v
            stored = .array(a)
        default:
            break
        }
    }

    /// Marks this builder and every container above it as lagging (a builder's `stored` is
    /// ahead of its parent's copy).
    private func markChanged() {
        guard parent != nil else { return }
        dirty.store(true, ordering: .releasing)
        var h: ValueHandle? = parent
        while let p = h {
            p.dirty.store(true, ordering: .releasing)
            h = p.parent
        }
    }

    var depth: Int {
        if let d = knownDepth { return d }
        let d = reading ? doc!.depth(of: node) : treeValue.nestingDepth
        knownDepth = d
        return d
    }

    /// Records that the subtree now nests `d` deep and updates the containers above.
    private func raiseDepth(to d: Int) {
        guard d > depth else { return }
        knownDepth = d
        var child = self
        while let p = child.parent {
            guard child.depth + 1 > p.depth else { break }
            p.knownDepth = child.depth + 1
            child = p
        }
    }

    // MARK: Changing (one thread; the exports check roles first)

    /// Refuses a change to anything but an owned root or a builder.
    func checkChangeable(_ what: String) throws {
        switch role {
        case .owned, .builder: return
        case .member:
            throw AFSError(.invalidArgument, "\(what) is borrowed from its parent (afs_value_at, afs_value_get) and cannot be changed")
        case .dead(let why):
            throw AFSError(.state, "\(what) is no longer usable: \(why.text)")
        }
    }

    /// The depth check for putting a member of nesting depth `memberDepth` in here.
    func checkDepth(adding memberDepth: Int) throws {
        guard level + max(depth, memberDepth + 1) <= Value.maxDepth else {
            throw AFSError(.invalidArgument, "nesting deeper than \(Value.maxDepth) levels")
        }
    }

    /// Sets `key` (dictionary) to `member`; returns the slot. A builder or a lent member in
    /// that slot dies ("replaced").
    @discardableResult
    func set(_ key: String, _ member: Value, depth memberDepth: Int, by call: StaticString) throws -> Int {
        try detach()
        _ = treeValue  // write lagging builders in first: a replaced slot must stay replaced
        let existing: Int?
        if case .dict(let d) = stored {
            existing = d.index(forKey: key)
        } else {
            var probe = stored  // the core's message for the wrong kind
            try probe.dictSet(key, member)
            existing = nil
        }
        try checkDepth(adding: memberDepth)
        if let i = existing { try retire(slot: i, .replaced(call)) }
        try stored.dictSet(key, member)
        cacheGrew()
        raiseDepth(to: memberDepth + 1)
        markChanged()
        return existing ?? (stored.count - 1)
    }

    /// Appends `member` (array or set); returns its slot, or nil when a set already had it.
    @discardableResult
    func add(_ member: Value, depth memberDepth: Int) throws -> Int? {
        try detach()
        _ = treeValue
        guard stored.kind == .array || stored.kind == .set else {
            var probe = stored  // the core's message for the wrong kind
            try probe.append(member)
            return nil
        }
        try checkDepth(adding: memberDepth)
        let before = stored.count
        try stored.append(member)
        guard stored.count > before else { return nil }
        cacheGrew()
        raiseDepth(to: memberDepth + 1)
        markChanged()
        return before
    }

    /// A new empty container (`.dict` or `.array`) put into this one under `key` (a
    /// dictionary) or at the end (an array), returned as a builder handle owned by this tree.
    func newBuilder(_ empty: Value, key: String?, by call: StaticString) throws -> ValueHandle {
        let s: Int
        if let key = key {
            s = try set(key, empty, depth: 1, by: call)
        } else {
            guard case .array = stored else {
                if case .set = stored {
                    throw AFSError(.invalidArgument, "cannot add a container to fill later to a set (a set's members are compared when added: add a finished value with afs_value_append)")
                }
                throw AFSError(.invalidArgument, "cannot append: the value is \(stored.kind.article), not an array")
            }
            s = try add(empty, depth: 1)!
        }
        let b = ValueHandle(empty, role: .builder, depth: 1)
        b.parent = self
        b.slot = s
        builders[s] = b
        return b
    }

    /// Takes the value out of an owned root that `call` consumes into `into`'s tree: the
    /// handle (and every builder and member of its tree) becomes a tombstone kept by `into`'s
    /// root.
    func consume(into container: ValueHandle, by call: StaticString) throws -> (Value, depth: Int) {
        let v = try value, d = depth
        die(.consumed(call))
        let keeper = container.root
        keeper.kept.append(self)
        keeper.kept.append(contentsOf: kept)
        kept = []
        return (v, d)
    }

    /// Turns this handle, its builders and the members it lent into tombstones.
    private func die(_ why: Death) {
        if isDead { return }
        role = .dead(why)
        reading = false
        stored = .null
        knownDepth = 0
        let inherited = why.inherited
        view?.death = inherited
        for b in builders.values { b.die(inherited) }
        LentCache.at(lentCache.load(ordering: .acquiring))?.forEachMember { $0.die(inherited) }
    }

    /// The member in slot `i` is replaced: its builder and lent member handle die and are
    /// kept by the root.
    private func retire(slot i: Int, _ why: Death) throws {
        if let v = view, let d = doc, i < d.count(node) { try v.replace(slot: i, why) }
        let keeper = root
        if let b = builders.removeValue(forKey: i) {
            b.die(why)
            keeper.kept.append(b)
        }
        if let c = LentCache.at(lentCache.load(ordering: .acquiring)), let m = c.takeMember(at: i) {
            m.die(why)
            keeper.kept.append(m)
        }
    }

    /// The lent slots follow the member count (appends only add slots).
    private func cacheGrew() {
        LentCache.at(lentCache.load(ordering: .acquiring))?.grow(to: stored.count)
    }

    /// Before the first change of a handle reading a document: its tree is built and it
    /// is a tree from then on.
    private func detach() throws {
        guard reading else { return }
        _ = try value
        reading = false
    }

    // MARK: Reading (any number of threads, when none changes the tree)

    /// What the handle stands for: its document node while it reads one, else its tree.
    private enum Source {
        case document(JSONDocument, Int)
        case tree(Value)
    }
    private var source: Source {
        if reading, let d = doc { return .document(d, node) }
        return .tree(treeValue)
    }

    var kind: Value.Kind {
        switch source {
        case .document(let d, let n): return d.kind(n)
        case .tree(let v): return v.kind
        }
    }
    var count: Int {
        switch source {
        case .document(let d, let n): return d.count(n)
        case .tree(let v): return v.count
        }
    }
    /// A bool's value; nil for other kinds.
    var bool: Bool? {
        switch source {
        case .document(let d, let n): return d.kind(n) == .bool ? d.bool(n) : nil
        case .tree(.bool(let b)): return b
        default: return nil
        }
    }
    var int: Int64? {
        switch source {
        case .document(let d, let n): return d.kind(n) == .int ? d.int(n) : nil
        case .tree(.int(let i)): return i
        default: return nil
        }
    }
    var double: Double? {
        switch source {
        case .document(let d, let n): return d.kind(n) == .double ? d.double(n) : nil
        case .tree(.double(let x)): return x
        default: return nil
        }
    }

    // MARK: Lending (any number of threads, when none changes the tree)

    private func cache() -> LentCache {
        if let c = LentCache.at(lentCache.load(ordering: .acquiring)) { return c }
        let fresh = LentCache(count: count)
        let bits = Int(bitPattern: Unmanaged.passRetained(fresh).toOpaque())
        let (won, current) = lentCache.compareExchange(expected: 0, desired: bits, ordering: .acquiringAndReleasing)
        if won { return fresh }
        Unmanaged.passUnretained(fresh).release()
        return LentCache.at(current)!
    }

    /// What `afs_value_at` lends for member `i`: a view of the document's node while the
    /// member is the document's (also after the root changed, for the slots not replaced),
    /// else the member's handle (`child(at:)`).
    func lentChild(at i: Int) -> OpaquePointer? {
        if let v = view, let d = doc, !isDead {
            if reading { return v.member(node, i).map(v.pointer) }
            if builders[i] == nil && i >= 0 && i < d.count(node) && !v.isReplaced(slot: i) {
                return v.member(node, i).map(v.pointer)
            }
        }
        return child(at: i).map(lend)
    }

    /// The handle of member `i` (a dictionary's value, an array's element, a set's member in
    /// insertion order): the builder there, or a read-only snapshot; nil when out of range or
    /// not a container.
    func child(at i: Int) -> ValueHandle? {
        if reading, let d = doc {
            guard i >= 0 && i < d.count(node), let m = members() else { return nil }
            return cache().member(at: i) { ValueHandle(reading: d, node: m.value(i), role: .member) }
        }
        let v = treeValue
        guard i >= 0 && i < v.count else { return nil }
        if let b = builders[i] { return b }
        return cache().member(at: i) {
            let m: Value
            switch v {
            case .dict(let d): m = d.values[i]
            case .array(let a): m = a[i]
            case .set(let s): m = s.members[i]
            default: m = .null
            }
            return ValueHandle(m, role: .member)
        }
    }

    /// The member index of a document's container, made once (nil when out of memory).
    private func members() -> JSONDocument.Members? {
        cache().index { try? doc!.members(of: node) }
    }

    /// Key `i` of a dictionary, NUL-terminated: in the document's text, or a copy lent
    /// from the tree; nil when out of range, not a dictionary, or out of memory.
    func key(at i: Int) -> Lent? {
        if reading, let v = view { return v.key(node, i).map { Lent(v.doc.string($0)) } }
        if reading, let d = doc {
            guard d.kind(node) == .dict, i >= 0 && i < d.count(node), let m = members() else { return nil }
            return Lent(d.string(m.key(i)))
        }
        guard case .dict(let d) = treeValue, i >= 0 && i < d.count else { return nil }
        return cache().key(at: i) { CStringBox.copy(d.keys[i]) }.map(Lent.init)
    }

    /// The position of `key` in a dictionary (byte comparison), or nil.
    func index(ofKey key: String) -> Int? {
        if reading, let v = view {
            var k = key
            return k.withUTF8 { v.index(node, ofKey: $0) }
        }
        if reading, let d = doc {
            guard d.kind(node) == .dict, let m = members() else { return nil }
            var k = key
            return k.withUTF8 { m.index(ofKey: $0) }
        }
        guard case .dict(let d) = treeValue else { return nil }
        return d.index(forKey: key)
    }

    /// A string's text, NUL-terminated, or a data value's bytes; nil for other kinds or
    /// out of memory.
    func scalarBytes() -> Lent? {
        switch source {
        case .document(let d, let n): return d.kind(n) == .string ? Lent(d.string(n)) : nil
        case .tree(.string(let s)): return cache().scalar { CStringBox.copy(s) }.map(Lent.init)
        case .tree(.data(let b)): return cache().scalar { CStringBox.copy(b) }.map(Lent.init)
        default: return nil
        }
    }
}


/// The objects a value handle lent to C: member handles and key copies by index, and the
/// scalar copy. Slots are published once (compare-and-swap) and read with acquire loads, so
/// readers on many threads need no lock; growing happens only while the tree is changed,
/// which the header allows on one thread with no reader.
final class LentCache {
    private var capacity: Int
    private var count: Int
    /// 2 * capacity + 2 slots: members, then keys, then the scalar copy, then a document
    /// container's member index. Each holds a retained object or NULL.
    private var slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>

    init(count n: Int) {
        capacity = max(n, 1)
        count = n
        slots = .allocate(capacity: 2 * capacity + 2)
        slots.initialize(repeating: nil, count: 2 * capacity + 2)
    }
    deinit {
        for i in 0..<(2 * capacity + 2) {
            if let p = slots[i] { Unmanaged<AnyObject>.fromOpaque(p).release() }
        }
        slots.deallocate()
    }

    static func at(_ bits: Int) -> LentCache? {
        guard let p = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<LentCache>.fromOpaque(p).takeUnretainedValue()
    }

    private func published<T: AnyObject>(_ i: Int, _ make: () -> T?) -> T? {
        if let p = cafs_slot_load(slots + i) { return Unmanaged<T>.fromOpaque(p).takeUnretainedValue() }
        guard let fresh = make() else { return nil }
        let mine = Unmanaged.passRetained(fresh).toOpaque()
        let now = cafs_slot_publish(slots + i, mine)!
        if now != mine { Unmanaged<T>.fromOpaque(mine).release() }
        return Unmanaged<T>.fromOpaque(now).takeUnretainedValue()
    }

    func member(at i: Int, _ make: () -> ValueHandle) -> ValueHandle? {
        guard i < count else { return nil }
        return published(i, make)
    }
    func key(at i: Int, _ make: () -> CStringBox?) -> CStringBox? {
        guard i < count else { return nil }
        return published(capacity + i, make)
    }
    func scalar(_ make: () -> CStringBox?) -> CStringBox? { published(2 * capacity, make) }
    func index(_ make: () -> JSONDocument.Members?) -> JSONDocument.Members? { published(2 * capacity + 1, make) }

    /// Takes member `i` out (its slot is replaced); the caller keeps it alive.
    func takeMember(at i: Int) -> ValueHandle? {
        guard i < count, let p = slots[i] else { return nil }
        slots[i] = nil
        return Unmanaged<ValueHandle>.fromOpaque(p).takeRetainedValue()
    }

    func forEachMember(_ body: (ValueHandle) -> Void) {
        for i in 0..<count {
            if let p = slots[i] { body(Unmanaged<ValueHandle>.fromOpaque(p).takeUnretainedValue()) }
        }
    }

    /// More members (one thread, no readers): geometric growth, slots moved over.
    func grow(to n: Int) {
        guard n > count else { return }
        if n > capacity {
            let c = max(n, 2 * capacity)
            let s = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 2 * c + 2)
            s.initialize(repeating: nil, count: 2 * c + 2)
            (s).moveInitialize(from: slots, count: capacity)                    // members
            (s + c).moveInitialize(from: slots + capacity, count: capacity)     // keys
            (s + 2 * c).moveInitialize(from: slots + 2 * capacity, count: 2)    // scalar, index
            slots.deallocate()
            slots = s
            capacity = c
        }
        count = n
    }
}
