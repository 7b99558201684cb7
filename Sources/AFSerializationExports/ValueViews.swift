// Views: the borrowed member handles of a parsed JSON document, lent without an object.
//
// A root that reads a `JSONDocument` (afs_value_parse_json, afs_response_object,
// afs_value_copy of one) registers a `DocView` in a global table. The handles it lends for
// the document's nodes (afs_value_at, afs_value_get, and members of those) are not objects:
// the opaque pointer C receives encodes the registration and the node (yyjson's
// `yyjson_val *` points into its document; this is the same idea behind the opaque type):
//
//     bit 0       1 (a Swift object is 16-byte aligned: its pointer has bit 0 clear)
//     bits 1-20   the registration's slot in the table (2^20 at once)
//     bits 21-63  the node index on the tape
//
// Nothing is allocated per visited node: a walk allocates only the member index of a
// container whose members are not all scalars (8 bytes a member, made once per container
// on first random access and kept with the registration; see `DocView.members`), so a
// decode plus a full walk stays within the tape, the text and those indexes. The pointer
// is the same on every call (the header's "repeated calls return the same pointers") and
// valid until the root is freed, when the slot is cleared (a stale pointer is a use after
// free, as for any handle).
//
// Every entry point that takes an `afs_value` recognises the tag: the getters read the
// document directly (`ValueRef`), the calls that take a status get a short-lived read-only
// handle for the node (`unbox`), and every other kind of handle refuses the pointer as the
// wrong kind without touching it. Spent views: when the root is consumed, every view of it
// is spent; when a member slot of the root is replaced, the views inside that member are
// spent (the getters answer as for NULL, the status calls give AFS_E_STATE naming the call).
//
// When the table is full (more than 2^20 roots reading documents at once) a root lends
// member objects, as before views existed.
import AFSerialization
import CAFSerialization

import Glibc  // Linux with glibc only, as the core (Sources/AFSerialization/Platform.swift)

/// One root's registration: its document, what is spent, and the member indexes made.
final class DocView: @unchecked Sendable {  // changed only by the root's changes (one thread, no readers)
    let doc: JSONDocument
    let slot: Int
    /// The node of the registering root (its members are the slots that can be replaced).
    let root: Int
    /// Set when the root is consumed: every view is spent.
    var death: ValueHandle.Death?
    /// The root's member slots replaced since the root changed, with why.
    private var spentSlots: [Int: ValueHandle.Death] = [:]
    /// Member indexes of containers that are not flat, by node.
    private let indexes: Locked<[Int: JSONDocument.Members]>

    private init(_ doc: JSONDocument, root: Int, slot: Int, indexes: Locked<[Int: JSONDocument.Members]>) {
        self.doc = doc
        self.root = root
        self.slot = slot
        self.indexes = indexes
    }
    deinit { ViewRegistry.release(slot) }

    /// A registration for a root reading `node` of `doc`; nil when the table is full or out
    /// of memory (the root then lends objects).
    static func register(_ doc: JSONDocument, node: Int) -> DocView? {
        guard doc.nodeCount < 1 << 42, let locked = Locked<[Int: JSONDocument.Members]>([:]),
              let slot = ViewRegistry.claim() else { return nil }
        let v = DocView(doc, root: node, slot: slot, indexes: locked)
        ViewRegistry.publish(v, at: slot)
        return v
    }

    /// The pointer C sees for `node`.
    @inline(__always)
    func pointer(_ node: Int) -> OpaquePointer {
        OpaquePointer(bitPattern: node << 21 | slot << 1 | 1)!
    }

    // MARK: Spent views

    /// Why the view of `node` is spent, or nil while it is usable.
    func death(of node: Int) -> ValueHandle.Death? {
        if let d = death { return d }
        if spentSlots.isEmpty || node <= root || node >= doc.next(root) { return nil }
        guard let m = members(root), let s = m.slot(containing: node) else { return nil }
        return spentSlots[s]
    }

    /// Member slot `i` of the root was replaced: the views inside it are spent.
    /// - Throws: `.noMemory` when the root's member index cannot be made.
    func replace(slot i: Int, _ why: ValueHandle.Death) throws {
        guard i < doc.count(root) else { return }
        guard members(root) != nil else {
            throw AFSError(.noMemory, "out of memory indexing the members of a parsed document")
        }
        spentSlots[i] = why
    }

    /// Whether member slot `i` of the root was replaced.
    func isReplaced(slot i: Int) -> Bool { !spentSlots.isEmpty && spentSlots[i] != nil }

    // MARK: Members

    /// Whether a container's members are all scalars (member `i` is then at a fixed place).
    @inline(__always)
    private func isFlat(_ c: Int, _ n: Int, dict: Bool) -> Bool {
        doc.next(c) == c &+ 1 &+ (dict ? n &* 2 : n)
    }

    /// Containers of up to this many members are not indexed: member `i` is found by
    /// skipping the ones before it (at most 32 steps), so walking the many small containers
    /// of a document allocates nothing.
    static let scanned = 32

    /// Where member `i` of a container starts (a dictionary's key), by skipping.
    @inline(__always)
    private func scan(_ c: Int, _ i: Int, dict: Bool) -> Int {
        var at = c &+ 1
        for _ in 0..<i { at = doc.next(dict ? at &+ 1 : at) }
        return at
    }

    /// The member index of a container, made once; nil when out of memory.
    func members(_ c: Int) -> JSONDocument.Members? {
        if let m = indexes.withLock({ $0[c] }) { return m }
        guard let made = try? doc.members(of: c) else { return nil }
        return indexes.withLock { table in
            if let m = table[c] { return m }
            table[c] = made
            return made
        }
    }

    /// The node of member `i` of container `c` (a dictionary's value); nil when out of range,
    /// not a container, or out of memory.
    func member(_ c: Int, _ i: Int) -> Int? {
        let kind = doc.kind(c)
        guard kind == .array || kind == .dict else { return nil }
        let n = doc.count(c), dict = kind == .dict
        guard i >= 0 && i < n else { return nil }
        if isFlat(c, n, dict: dict) { return dict ? c &+ 2 &+ 2 &* i : c &+ 1 &+ i }
        if n <= DocView.scanned { return scan(c, i, dict: dict) &+ (dict ? 1 : 0) }
        return members(c)?.value(i)
    }

    /// The key node of member `i` of dictionary `c`; nil as `member`.
    func key(_ c: Int, _ i: Int) -> Int? {
        guard doc.kind(c) == .dict else { return nil }
        let n = doc.count(c)
        guard i >= 0 && i < n else { return nil }
        if isFlat(c, n, dict: true) { return c &+ 1 &+ 2 &* i }
        if n <= DocView.scanned { return scan(c, i, dict: true) }
        return members(c)?.key(i)
    }

    /// The position of `key` in dictionary `c` (byte comparison), or nil.
    func index(_ c: Int, ofKey key: UnsafeBufferPointer<UInt8>) -> Int? {
        guard doc.kind(c) == .dict else { return nil }
        let n = doc.count(c)
        if n <= DocView.scanned {  // small: a scan, no index
            var found: Int?
            var at = c &+ 1
            for j in 0..<n {
                if JSONDocument.same(doc.string(at), key) { found = j }
                at = doc.next(at &+ 1)
            }
            return found
        }
        return members(c)?.index(ofKey: key)
    }
}

/// The table of registrations: 256 chunks of 4096 slots, a chunk allocated when first
/// needed and kept. Slots are claimed and freed under the global lock; readers load them
/// with acquire order and no lock.
enum ViewRegistry {
    static let chunkCount = 256, chunkSize = 4096
    nonisolated(unsafe) private static let chunks: UnsafeMutablePointer<UnsafeMutableRawPointer?> = {
        let p = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: chunkCount)
        p.initialize(repeating: nil, count: chunkCount)
        return p
    }()
    nonisolated(unsafe) private static var freeSlots: [Int] = []  // under the global lock
    nonisolated(unsafe) private static var nextSlot = 0             // under the global lock

    /// A free slot, or nil when the table is full or out of memory.
    static func claim() -> Int? {
        let table = chunks
        cafs_global_acquire()
        defer { cafs_global_release() }
        if let s = freeSlots.popLast() { return s }
        guard nextSlot < chunkCount * chunkSize else { return nil }
        let c = nextSlot / chunkSize
        if cafs_slot_load(table + c) == nil {
            guard let raw = calloc(chunkSize, MemoryLayout<UnsafeMutableRawPointer?>.stride) else { return nil }
            _ = cafs_slot_publish(table + c, raw)
        }
        nextSlot += 1
        return nextSlot - 1
    }

    private static func entry(_ slot: Int) -> UnsafeMutablePointer<UnsafeMutableRawPointer?>? {
        guard slot >= 0 && slot < chunkCount * chunkSize, let c = cafs_slot_load(chunks + slot / chunkSize) else { return nil }
        return c.assumingMemoryBound(to: UnsafeMutableRawPointer?.self) + slot % chunkSize
    }

    static func publish(_ v: DocView, at slot: Int) {
        if let e = entry(slot) { cafs_slot_store(e, Unmanaged.passUnretained(v).toOpaque()) }
    }

    static func release(_ slot: Int) {
        guard let e = entry(slot) else { return }
        cafs_slot_store(e, nil)
        cafs_global_acquire()
        freeSlots.append(slot)
        cafs_global_release()
    }

    /// The registration and node a view pointer stands for; nil when `p` is not a view
    /// or its slot is empty.
    @inline(__always)
    static func decode(_ p: OpaquePointer) -> (DocView, Int)? {
        let bits = Int(bitPattern: UnsafeRawPointer(p))
        guard bits & 1 == 1, let e = entry((bits >> 1) & (1 << 20 - 1)), let v = cafs_slot_load(e) else { return nil }
        let view = Unmanaged<DocView>.fromOpaque(v).takeUnretainedValue()
        let node = Int(bitPattern: UInt(bitPattern: bits) >> 21)
        // A node beyond the tape (a stale pointer whose slot was reused) is no view.
        return node < view.doc.nodeCount ? (view, node) : nil
    }
}

/// Whether `p` has the tag of a view (whatever its slot holds).
@inline(__always)
func isViewPointer(_ p: OpaquePointer) -> Bool { Int(bitPattern: UnsafeRawPointer(p)) & 1 == 1 }

/// What a value pointer stands for: a handle object, or a view of a document node.
enum ValueRef {
    case handle(ValueHandle)
    case view(DocView, Int)

    /// nil for NULL, another kind of handle, or a view whose slot is empty.
    @inline(__always)
    init?(_ p: OpaquePointer?) {
        guard let p = p else { return nil }
        if isViewPointer(p) {
            guard let (v, n) = ViewRegistry.decode(p) else { return nil }
            self = .view(v, n)
        } else {
            guard let h = peek(p, ValueHandle.self) else { return nil }
            self = .handle(h)
        }
    }

    /// The view's registration and node when it is usable (not spent); nil for a handle.
    @inline(__always)
    var usableView: (DocView, Int)? {
        if case .view(let v, let n) = self, v.death(of: n) == nil { return (v, n) }
        return nil
    }
    var isSpentView: Bool {
        if case .view(let v, let n) = self { return v.death(of: n) != nil }
        return false
    }

    var kind: Value.Kind {
        switch self {
        case .handle(let h): return h.kind
        case .view(let v, let n): return v.death(of: n) == nil ? v.doc.kind(n) : .null
        }
    }
    var count: Int {
        switch self {
        case .handle(let h): return h.count
        case .view(let v, let n): return v.death(of: n) == nil ? v.doc.count(n) : 0
        }
    }
    var bool: Bool? {
        switch self {
        case .handle(let h): return h.bool
        case .view(let v, let n): return v.death(of: n) == nil && v.doc.kind(n) == .bool ? v.doc.bool(n) : nil
        }
    }
    var int: Int64? {
        switch self {
        case .handle(let h): return h.int
        case .view(let v, let n): return v.death(of: n) == nil && v.doc.kind(n) == .int ? v.doc.int(n) : nil
        }
    }
    var double: Double? {
        switch self {
        case .handle(let h): return h.double
        case .view(let v, let n): return v.death(of: n) == nil && v.doc.kind(n) == .double ? v.doc.double(n) : nil
        }
    }
    func child(at i: Int) -> OpaquePointer? {
        switch self {
        case .handle(let h): return h.lentChild(at: i)
        case .view(let v, let n):
            guard v.death(of: n) == nil, let m = v.member(n, i) else { return nil }
            return v.pointer(m)
        }
    }
    func key(at i: Int) -> Lent? {
        switch self {
        case .handle(let h): return h.key(at: i)
        case .view(let v, let n):
            guard v.death(of: n) == nil, let k = v.key(n, i) else { return nil }
            return Lent(v.doc.string(k))
        }
    }
    func child(forKey key: String) -> OpaquePointer? {
        switch self {
        case .handle(let h):
            guard let i = h.index(ofKey: key) else { return nil }
            return h.lentChild(at: i)
        case .view(let v, let n):
            guard v.death(of: n) == nil else { return nil }
            var k = key
            guard let i = k.withUTF8({ v.index(n, ofKey: $0) }), let m = v.member(n, i) else { return nil }
            return v.pointer(m)
        }
    }
    /// A string's text (data never comes from a document).
    func scalarBytes() -> Lent? {
        switch self {
        case .handle(let h): return h.scalarBytes()
        case .view(let v, let n): return v.death(of: n) == nil && v.doc.kind(n) == .string ? Lent(v.doc.string(n)) : nil
        }
    }
}
