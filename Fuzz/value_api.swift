// Fuzz target: the C API's value handles (`afs_value_*`, `afs_query_string`), driven by a
// random script over a pool of live handles, the way a C program builds and walks trees.
//
// The input is a script of operations: create values of every kind (strings valid or not,
// with a length or AFS_NTS, NULL pointers; parsed JSON), `afs_value_dict_set` and
// `afs_value_append` with any pair of handles (NULL, the container itself, borrowed members,
// scalars as containers, bad keys, chains of up to 600 arrays to cross the 512-level limit),
// borrow members (`afs_value_at`, `afs_value_get`, also from borrowed handles), free owned
// and borrowed handles, walk a handle, build its query string. A model keeps every handle's
// expected tree (changed with the core's own `dictSet`/`append`). Properties:
// - each call succeeds exactly when the header says it must, and fails with one of the
//   statuses that apply (`AFS_E_INVALID_ARGUMENT`, `AFS_E_INVALID_UTF8`) and a message;
//   on success the `afs_error` is untouched;
// - ownership is as documented: a consumed value is gone also on failure, except when it is
//   NULL, borrowed or the container itself; freeing a borrowed handle does nothing;
// - a failed call changes nothing, so members borrowed before it stay valid and unchanged;
//   a successful change (or freeing or consuming the root) ends them (the target stops
//   using them: AddressSanitizer reports any use of freed memory);
// - walking any live handle (kind, count, keys with lengths, members, the same pointer on
//   repeated calls, scalar getters with their documented defaults) shows the model's tree;
// - `afs_query_string` equals `QueryString.make` on the model, or fails for a non-dictionary;
// - no leak (LeakSanitizer checks each input after every owned handle was freed).
@testable import AFSerialization
import CAFSerialization

#if canImport(Glibc)
import Glibc
#endif

let errorBox = ErrorBox()
let invalidArgument = AFSStatus.invalidArgument.rawValue
let invalidUTF8 = AFSStatus.invalidUTF8.rawValue

// MARK: - Live handles and their model

final class Slot {
    let handle: OpaquePointer
    /// The tree the handle must show.
    var model: Value
    /// For a borrowed member: the owned handle whose tree it belongs to, and that handle's
    /// generation when it was borrowed.
    let root: Slot?
    let rootGeneration: Int
    /// For an owned handle: bumped on every successful change.
    var generation = 0
    /// For an owned handle: false once freed or consumed.
    var alive = true
    /// The nesting depth of `model` (scalars 0), kept with it.
    var depth: Int

    init(owned handle: OpaquePointer, _ model: Value) {
        self.handle = handle
        self.model = model
        root = nil
        rootGeneration = 0
        depth = model.nestingDepth
    }

    init(borrowed handle: OpaquePointer, _ model: Value, from parent: Slot) {
        self.handle = handle
        self.model = model
        let r = parent.root ?? parent
        root = r
        rootGeneration = r.generation
        depth = model.nestingDepth
    }

    var isBorrowed: Bool { root != nil }
    /// Whether the header still lets the program use this handle.
    var isValid: Bool {
        guard let r = root else { return alive }
        return r.alive && r.generation == rootGeneration
    }
    var name: String { "\(isBorrowed ? "borrowed" : "owned") \(model.kind) handle" }
}

struct Pool {
    var slots: [Slot] = []
    static let capacity = 24

    mutating func add(_ s: Slot) {
        slots.append(s)
        if slots.count > Pool.capacity {
            // Make room: free the oldest owned handle; its borrowed members go with it (also
            // `s`, when it was borrowed from that one).
            if let i = slots.firstIndex(where: { !$0.isBorrowed }) { free(slots[i]) } else { slots.removeFirst() }
        }
    }

    mutating func free(_ s: Slot) {
        afs_value_free(s.handle)
        if !s.isBorrowed { s.alive = false }
        prune()
    }

    /// Drops the handles the program may no longer use.
    mutating func prune() { slots.removeAll { !$0.isValid } }

    /// A live handle, or nil (NULL) about one time in eight.
    func pick(_ inp: inout FuzzInput) -> Slot? {
        if slots.isEmpty || inp.oneIn(8) { return nil }
        return slots[inp.below(slots.count)]
    }
}

// MARK: - Arguments

/// A string argument: its bytes (nil for a NULL pointer), the length passed (or AFS_NTS),
/// and the string the library must see (nil when it must refuse it).
struct TextArgument {
    var bytes: [UInt8]?
    var length: Int
    var expected: String?
    var refusal: Int32?
    /// A string handle whose own bytes are passed (afs_value_get_string), e.g. to use a
    /// value's text as its key in the same call that consumes it.
    var lentBy: OpaquePointer? = nil

    func withPointer<R>(_ body: (UnsafePointer<CChar>?, Int) -> R) -> R {
        if let h = lentBy {
            var n = 0
            let p = afs_value_get_string(h, &n)
            return body(p, n)
        }
        guard let bytes else { return body(nil, length) }
        // A copy with a NUL after it (AFS_NTS reads up to the first NUL).
        var copy = bytes.map { CChar(bitPattern: $0) }
        copy.append(0)
        return copy.withUnsafeBufferPointer { body($0.baseAddress, length) }
    }
}

func textArgument(_ inp: inout FuzzInput, gen: inout TreeGen, allowNull: Bool) -> TextArgument {
    let sel = inp.below(16)
    if allowNull && sel == 0 {
        // NULL with length 0 is the empty string; NULL with any other length is refused.
        let n = inp.bool() ? 0 : [1, 2, -1][inp.below(3)]
        return TextArgument(bytes: nil, length: n, expected: n == 0 ? "" : nil, refusal: n == 0 ? nil : invalidArgument)
    }
    let bytes: [UInt8] = sel < 11 ? Array(gen.string(&inp).utf8) : inp.bytes(max: 12)
    let nts = inp.oneIn(3)
    let seen = nts ? Array(bytes.prefix { $0 != 0 }) : bytes
    let text = String(validating: seen, as: UTF8.self)
    return TextArgument(bytes: bytes, length: nts ? -1 : bytes.count, expected: text, refusal: text == nil ? invalidUTF8 : nil)
}

// MARK: - Checks

/// A failed call: the status is one of those that apply, and it names something.
func requireFailure(_ allowed: Set<Int32>, _ what: String) {
    require(!allowed.isEmpty, "\(what) failed (status \(errorBox.status): \(errorBox.message)) where it must succeed")
    require(allowed.contains(errorBox.status), "\(what) failed with status \(errorBox.status) (\(errorBox.message)), expected one of \(allowed.sorted())")
    require(!errorBox.message.isEmpty, "\(what) failed with an empty message")
}

func requireSuccess(_ refusals: Set<Int32>, _ what: String) {
    require(refusals.isEmpty, "\(what) succeeded where it must fail with one of \(refusals.sorted())")
    require(errorBox.untouched, "\(what) succeeded but wrote into the afs_error")
}

func bytesAt(_ p: UnsafeRawPointer?, _ n: Int) -> [UInt8] {
    guard let p else { return [] }
    return Array(UnsafeRawBufferPointer(start: p, count: n))
}

/// Walks `h` through the C API and compares it with `v` (at most `budget` nodes).
func checkWalk(_ h: OpaquePointer, _ v: Value, _ path: String, budget: inout Int) {
    budget -= 1
    if budget < 0 { return }
    require(Int32(afs_value_kind_of(h).rawValue) == v.kind.rawValue, "\(path): afs_value_kind_of \(afs_value_kind_of(h)), the model is \(v.kind)")
    var len = -7
    let s = afs_value_get_string(h, &len)
    var dlen = -7
    let d = afs_value_get_data(h, &dlen)
    switch v {
    case .string(let text):
        let want = Array(text.utf8)
        require(s != nil && len == want.count && bytesAt(s, len) == want && s![len] == 0,
                "\(path): afs_value_get_string gave \(show(bytesAt(s, max(len, 0)))) (\(len)), expected \(show(want))")
        require(afs_value_get_string(h, nil) == s, "\(path): afs_value_get_string returned another pointer the second time")
    default:
        require(s == nil && len == 0, "\(path): afs_value_get_string on \(v.kind) gave a pointer or length \(len)")
    }
    switch v {
    case .data(let bytes):
        require(d != nil && dlen == bytes.count && bytesAt(d, dlen) == bytes, "\(path): afs_value_get_data differs (\(dlen) bytes, expected \(bytes.count))")
    default:
        require(d == nil && dlen == 0, "\(path): afs_value_get_data on \(v.kind) gave a pointer or length \(dlen)")
    }
    let b = afs_value_get_bool(h), i = afs_value_get_int(h), x = afs_value_get_double(h)
    switch v {
    case .bool(let want): require(b == want && i == 0 && x == 0, "\(path): bool getters \(b) \(i) \(x), expected \(want)")
    case .int(let want): require(!b && i == want && x == Double(want), "\(path): int getters \(b) \(i) \(x), expected \(want)")
    case .double(let want):
        require(!b && i == 0 && (x.bitPattern == want.bitPattern || (x.isNaN && want.isNaN)), "\(path): double getters \(b) \(i) \(x), expected \(want)")
    default: require(!b && i == 0 && x == 0, "\(path): scalar getters on \(v.kind) gave \(b) \(i) \(x)")
    }

    let members: [Value]
    var keys: [String]? = nil
    switch v {
    case .array(let a): members = a
    case .set(let set): members = set.members
    case .dict(let dict):
        members = dict.values
        keys = dict.keys
    default: members = []
    }
    require(afs_value_count(h) == members.count, "\(path): afs_value_count \(afs_value_count(h)), expected \(members.count)")
    require(afs_value_at(h, members.count) == nil && afs_value_at(h, -1) == nil, "\(path): afs_value_at out of range gave a handle")
    var klen = -7
    require(afs_value_key_at(h, members.count, &klen) == nil && klen == 0, "\(path): afs_value_key_at out of range gave a key")
    for (n, member) in members.enumerated() where budget > 0 {
        guard let c = afs_value_at(h, n) else { fail("\(path): afs_value_at(\(n)) is NULL of \(members.count)") }
        require(afs_value_at(h, n) == c, "\(path): afs_value_at(\(n)) returned another handle the second time")
        var childPath = "\(path)[\(n)]"
        if let keys {
            let key = Array(keys[n].utf8)
            var kl = -7
            let k = afs_value_key_at(h, n, &kl)
            require(k != nil && kl == key.count && bytesAt(k, kl) == key && k![kl] == 0,
                    "\(path): afs_value_key_at(\(n)) gave \(show(bytesAt(k, max(kl, 0)))), expected \(show(key))")
            if !key.contains(0) {
                let byKey = (key.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer { afs_value_get(h, $0.baseAddress) }
                require(byKey == c, "\(path): afs_value_get(\(show(key))) is not afs_value_at(\(n))")
            }
            childPath = "\(path)[\(show(key, max: 24))]"
        } else {
            require(afs_value_key_at(h, n, nil) == nil, "\(path): afs_value_key_at on \(v.kind) gave a key")
        }
        checkWalk(c, member, childPath, budget: &budget)
    }
}

// MARK: - Consuming calls

/// `afs_value_dict_set` (key != nil) or `afs_value_append` with the model's expectations.
func insert(_ pool: inout Pool, into container: Slot?, key: TextArgument?, value: Slot?, useContainerAsValue: Bool) {
    let valueHandle = useContainerAsValue ? container?.handle : value?.handle
    let what = key == nil ? "afs_value_append" : "afs_value_dict_set"
    // Whether the value is consumed (header: not when NULL, borrowed, or the container).
    let notConsumed = valueHandle == nil || (valueHandle == container?.handle && container != nil) || (!useContainerAsValue && value?.isBorrowed == true)
    var refusals = Set<Int32>()
    if valueHandle == nil || notConsumed { refusals.insert(invalidArgument) }
    if let c = container {
        if c.isBorrowed { refusals.insert(invalidArgument) }
        if let key, let r = key.refusal { refusals.insert(r) }
        let kindOK: Bool
        switch c.model {
        case .dict: kindOK = key != nil
        case .array, .set: kindOK = key == nil
        default: kindOK = false
        }
        if !kindOK { refusals.insert(invalidArgument) }
        let memberDepth = useContainerAsValue ? c.depth : (value?.depth ?? 0)
        if Swift.max(c.depth, memberDepth + 1) > Value.maxDepth { refusals.insert(invalidArgument) }
    } else {
        refusals.insert(invalidArgument)
    }

    let err = errorBox.reset()
    let status: Int32
    if let key {
        status = Int32(key.withPointer { afs_value_dict_set(container?.handle, $0, $1, valueHandle, err) }.rawValue)
    } else {
        status = Int32(afs_value_append(container?.handle, valueHandle, err).rawValue)
    }
    trace("\(what)(\(container?.name ?? "NULL"), \(key.map { show($0.bytes ?? []) } ?? "-"), \(useContainerAsValue ? "itself" : value?.name ?? "NULL")) -> \(status)")
    if status == 0 {
        requireSuccess(refusals, what)
    } else {
        require(status == errorBox.status, "\(what) returned \(status) but the afs_error says \(errorBox.status)")
        requireFailure(refusals, what)
    }
    // A consumed value is gone whatever happened.
    if !notConsumed, let v = value, !useContainerAsValue {
        v.alive = false
    }
    if status == 0, let c = container, let v = value {
        do {
            if let key { try c.model.dictSet(key.expected!, v.model) } else { try c.model.append(v.model) }
        } catch {
            fail("the model refused what the library accepted: \(error)")
        }
        c.depth = Swift.max(c.depth, v.depth + 1)
        c.generation += 1
    }
    pool.prune()
}

// MARK: - The target

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var inp = FuzzInput(data, size)
    var gen = TreeGen()
    gen.maxDepth = 3
    gen.maxCount = 4
    gen.budget = 24
    var pool = Pool()

    while !inp.isExhausted {
        switch inp.below(16) {
        case 0:  // a new container
            let (h, model): (OpaquePointer, Value)
            switch inp.below(3) {
            case 0: (h, model) = (afs_value_new_dict(), .dict(ValueDict()))
            case 1: (h, model) = (afs_value_new_array(), .array([]))
            default: (h, model) = (afs_value_new_set(), .set(ValueSet()))
            }
            pool.add(Slot(owned: h, model))
        case 1:  // a string
            let t = textArgument(&inp, gen: &gen, allowNull: true)
            let err = errorBox.reset()
            let h = t.withPointer { afs_value_new_string($0, $1, err) }
            let expected = t.expected
            trace("afs_value_new_string(\(show(t.bytes ?? [])), \(t.length)) -> \(h == nil ? "NULL" : "ok")")
            if let h {
                guard let e = expected else { fail("afs_value_new_string accepted \(t.bytes.map { show($0) } ?? "NULL") (length \(t.length))") }
                requireSuccess([], "afs_value_new_string")
                pool.add(Slot(owned: h, .string(e)))
            } else {
                requireFailure(t.refusal.map { [$0] } ?? [], "afs_value_new_string")
            }
        case 2:  // a scalar
            let (h, model): (OpaquePointer, Value)
            switch inp.below(4) {
            case 0: let i = gen.int(&inp); (h, model) = (afs_value_new_int(i), .int(i))
            case 1: let d = gen.double(&inp); (h, model) = (afs_value_new_double(d), .double(d))
            case 2: let b = inp.bool(); (h, model) = (afs_value_new_bool(b), .bool(b))
            default: (h, model) = (afs_value_new_null(), .null)
            }
            pool.add(Slot(owned: h, model))
        case 3:  // data
            if inp.oneIn(4) {
                let n = inp.below(3)
                let h = afs_value_new_data(nil, n)
                if n == 0 {
                    guard let h else { fail("afs_value_new_data(NULL, 0) is NULL") }
                    pool.add(Slot(owned: h, .data([])))
                } else {
                    require(h == nil, "afs_value_new_data(NULL, \(n)) gave a handle")
                }
            } else {
                let bytes = inp.bytes(max: 24)
                let h = bytes.withUnsafeBytes { afs_value_new_data($0.baseAddress ?? UnsafeRawPointer(bitPattern: 8), bytes.count) }
                guard let h else { fail("afs_value_new_data of \(bytes.count) bytes is NULL") }
                pool.add(Slot(owned: h, .data(bytes)))
            }
        case 4:  // parsed JSON, or JSON text cut short
            let tree = gen.value(&inp, depth: 1)
            guard var text = try? JSONWriter.data(tree, options: .fragmentsAllowed) else { break }
            if inp.oneIn(4) && !text.isEmpty { text.removeLast(1 + inp.below(text.count)) }
            let expected = try? JSONParser.parse(text)
            let err = errorBox.reset()
            let h = text.withUnsafeBufferPointer { b in
                b.baseAddress.map { p in p.withMemoryRebound(to: CChar.self, capacity: b.count) { afs_value_parse_json($0, b.count, err) } }
                    ?? afs_value_parse_json("", 0, err)
            }
            if let h {
                guard let e = expected else { fail("afs_value_parse_json accepted \(show(text)) which JSONParser refuses") }
                requireSuccess([], "afs_value_parse_json")
                pool.add(Slot(owned: h, e))
            } else {
                requireFailure(expected == nil ? [AFSStatus.invalidJSON.rawValue] : [], "afs_value_parse_json")
            }
        case 5, 6:  // dict_set
            let container = pool.pick(&inp)
            var key = textArgument(&inp, gen: &gen, allowNull: true)
            let itself = inp.oneIn(16)
            let value = itself ? nil : pool.pick(&inp)
            if let v = value, case .string(let text) = v.model, inp.oneIn(3) {
                // The value's own text as the key: the library reads it before it consumes
                // (and frees) the value.
                key = TextArgument(bytes: Array(text.utf8), length: text.utf8.count, expected: text, refusal: nil, lentBy: v.handle)
            }
            insert(&pool, into: container, key: key, value: value, useContainerAsValue: itself)
        case 7, 8:  // append
            let container = pool.pick(&inp)
            let itself = inp.oneIn(16)
            let value = itself ? nil : pool.pick(&inp)
            insert(&pool, into: container, key: nil, value: value, useContainerAsValue: itself)
        case 9:  // a chain of arrays around a handle (crosses 512 levels)
            guard let start = pool.pick(&inp) else { break }
            let n = inp.oneIn(2) ? 500 + inp.below(30) : inp.below(20)
            trace("wrapping a \(start.name) of depth \(start.depth) in \(n) arrays")
            var inner = start
            for _ in 0..<n {
                let outer = Slot(owned: afs_value_new_array(), .array([]))
                let consumed = !inner.isBorrowed
                insert(&pool, into: outer, key: nil, value: inner, useContainerAsValue: false)
                pool.add(outer)
                if !consumed { break }  // a borrowed handle is not consumed: stop there
                // Once the limit is crossed the chain is refused and `inner` consumed.
                if outer.generation == 0 { break }
                inner = outer
            }
        case 10, 11:  // borrow a member
            guard let parent = pool.pick(&inp) else {
                require(afs_value_at(nil, 0) == nil && afs_value_get(nil, "a") == nil && afs_value_count(nil) == 0, "NULL gave a member")
                break
            }
            let members: [Value]
            var keys: [String] = []
            switch parent.model {
            case .array(let a): members = a
            case .set(let s): members = s.members
            case .dict(let d): members = d.values; keys = d.keys
            default: members = []
            }
            let i = inp.below(members.count + 2) - (inp.oneIn(8) ? 1 : 0)
            var byKey = false
            var h: OpaquePointer?
            if !keys.isEmpty && inp.bool() {
                byKey = true
                let key = i >= 0 && i < keys.count ? keys[i] : gen.string(&inp)
                // The C string ends at the first NUL.
                let seen = String(decoding: key.utf8.prefix { $0 != 0 }, as: UTF8.self)
                h = afs_value_get(parent.handle, key)
                let found = keys.firstIndex { utf8Equal($0, seen) }
                if let f = found {
                    require(h != nil && h == afs_value_at(parent.handle, f), "afs_value_get(\(show(Array(seen.utf8)))) is not afs_value_at(\(f))")
                    pool.add(Slot(borrowed: h!, members[f], from: parent))
                } else {
                    require(h == nil, "afs_value_get(\(show(Array(seen.utf8)))) gave a handle for an absent key")
                }
            } else {
                h = afs_value_at(parent.handle, i)
                if i >= 0 && i < members.count {
                    guard let h else { fail("afs_value_at(\(i)) of \(members.count) is NULL") }
                    pool.add(Slot(borrowed: h, members[i], from: parent))
                } else {
                    require(h == nil, "afs_value_at(\(i)) of \(members.count) gave a handle")
                }
            }
            trace("borrow \(byKey ? "by key" : "at") \(i) of a \(parent.name) -> \(h == nil ? "NULL" : "ok")")
        case 12:  // free (a borrowed handle is ignored and stays valid)
            guard let s = pool.pick(&inp) else { afs_value_free(nil); break }
            trace("free a \(s.name)")
            pool.free(s)
        case 13, 14:  // walk
            guard let s = pool.pick(&inp) else {
                require(Int32(afs_value_kind_of(nil).rawValue) == Value.Kind.null.rawValue, "afs_value_kind_of(NULL) is not AFS_VALUE_NULL")
                break
            }
            var budget = 3000
            checkWalk(s.handle, s.model, "a \(s.name)", budget: &budget)
        default:  // the query string
            let s = pool.pick(&inp)
            let err = errorBox.reset()
            let q = afs_query_string(s?.handle, err)
            var expected: String? = nil
            var refusal: Int32? = nil
            if let s {
                do { expected = try QueryString.make(s.model) } catch let e as AFSError { refusal = e.status.rawValue } catch { fail("QueryString.make threw \(error)") }
            } else {
                refusal = invalidArgument
            }
            if let q {
                defer { afs_free(q) }
                guard let expected else { fail("afs_query_string succeeded on a \(s?.name ?? "NULL")") }
                requireSuccess([], "afs_query_string")
                require(String(cString: q) == expected, "afs_query_string gave \(String(cString: q)), QueryString.make \(expected)")
            } else {
                requireFailure(refusal.map { [$0] } ?? [], "afs_query_string")
            }
        }
    }

    // Every handle still valid shows its tree; then the owned ones are freed (LeakSanitizer
    // reports what is left).
    for s in pool.slots {
        var budget = 3000
        checkWalk(s.handle, s.model, "at the end, a \(s.name)", budget: &budget)
    }
    for s in pool.slots where !s.isBorrowed && s.alive {
        afs_value_free(s.handle)
        s.alive = false
    }
    return 0
}
