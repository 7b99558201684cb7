/// Reads the pickle subset of `Pickle` into a `Value`: what `pickle.dumps(obj, 4 or 5)`
/// writes for trees of `dict` (str keys), `list`, `tuple`, `str`, `bytes`, `int` within
/// int64, `float`, `bool`, `None`, `set` and `frozenset`.
///
/// Tuples become arrays, sets and frozensets become sets. Shared members (Python's memo:
/// the same object twice) are copied; a container that contains itself is an error naming
/// the cycle. Every other opcode is refused with an error naming the opcode, its byte
/// offset and the Python type it stands for; nothing in the input can name a class or a
/// function. Lengths are checked against the input before anything is allocated.
///
/// Errors (`AFSError`): `.invalidArgument` for opcodes outside the subset, truncated or
/// malformed input, dictionary keys that are not `str`, integers outside int64, nesting
/// deeper than `Value.maxDepth`, cycles, and trees whose shared members would expand to
/// more than `maxExpandedValues(for:)` values; `.invalidUTF8` for a `str` that is not
/// UTF-8 (a lone surrogate). Messages name the byte offset or the path (`['a'][2]`).
///
/// C: `afs_value_from_pickle`, `afs_serializer_request_pickle`.
public enum PickleReader {
    /// The most values a tree may hold once shared members are copied: 1,048,576 or 16 per
    /// input byte, whichever is more (a few shared members are fine; a pickle that refers
    /// to one list a million times is refused rather than expanded).
    public static func maxExpandedValues(for inputCount: Int) -> Int {
        Swift.max(1 << 20, inputCount.multipliedReportingOverflow(by: 16).overflow ? Int.max : inputCount * 16)
    }

    /// The tree in `bytes` (one pickle, nothing after its `STOP`).
    public static func read(_ bytes: UnsafeBufferPointer<UInt8>) throws -> Value {
        // What pickle.dumps writes for plain parameters (no container referenced twice, no
        // set, ints within int64) is built in one pass. Anything else, and every error, goes
        // through the general reader below, which also words the message.
        if let v = readDirect(bytes) { return v }
        return try readGeneral(bytes)
    }

    /// The one-pass reader alone: the tree, or nil (see `read`).
    static func readDirect(_ bytes: UnsafeBufferPointer<UInt8>) -> Value? {
        var r = Reader(bytes)
        return r.runDirect()
    }

    /// The general reader alone: containers as nodes first (the memo may share them), then
    /// converted, with shared members copied and counted.
    static func readGeneral(_ bytes: UnsafeBufferPointer<UInt8>) throws -> Value {
        var r = Reader(bytes)
        // A container that holds itself (a cycle through the memo) is a reference cycle of
        // nodes: emptied at the end, whatever happened, so that nothing leaks.
        defer { for n in r.nodes { n.items = [] } }
        let root = try r.run()
        var c = Converter(limit: maxExpandedValues(for: bytes.count))
        return try c.convert(root, depth: 0)
    }

    /// `read` on an array.
    public static func read(_ bytes: [UInt8]) throws -> Value {
        try bytes.withUnsafeBufferPointer { try read($0) }
    }
}

/// A container under construction (containers are filled after they are pushed, and the
/// memo may refer to them while they are).
final class PickleNode {
    enum Kind {
        case list, tuple, dict, set, frozenset
        /// The Python type's name, for messages.
        var name: String {
            switch self {
            case .list: return "list"
            case .tuple: return "tuple"
            case .dict: return "dict"
            case .set: return "set"
            case .frozenset: return "frozenset"
            }
        }
    }
    let kind: Kind
    var items: [PickleRef]
    /// Set once converted: later references reuse it (shared members).
    var converted: Value?
    var expanded = 0
    var height = 0
    var visiting = false
    init(_ kind: Kind, _ items: [PickleRef] = []) {
        self.kind = kind
        self.items = items
    }
}

enum PickleRef {
    /// A scalar, or a flat tuple/frozenset of scalars (nesting at most 1).
    case value(Value)
    case node(PickleNode)
    /// An int outside int64: little-endian two's complement, kept for the message.
    case bigInt([UInt8])
    /// `afserialization._transfer._date`, the one callable read: `REDUCE` with a 1-tuple
    /// of a float (seconds since 1970) makes a date (see `Pickle`).
    case dateFactory
}

private struct Reader {
    let b: UnsafeBufferPointer<UInt8>
    var i = 0
    var stack: [PickleRef] = []
    var marks: [Int] = []
    var memo: [PickleRef] = []
    /// Every container node made, to break reference cycles at the end.
    var nodes: [PickleNode] = []
    /// Offset of the opcode being read, for messages.
    var at = 0

    init(_ b: UnsafeBufferPointer<UInt8>) { self.b = b }

    func fail(_ message: String) -> AFSError {
        AFSError(.invalidArgument, "pickle: \(message) (opcode at byte offset \(at))")
    }

    mutating func take(_ n: Int, _ what: String) throws -> UnsafeBufferPointer<UInt8> {
        guard n >= 0, n <= b.count - i else {
            throw fail("\(what) needs \(n) bytes but \(b.count - i) are left")
        }
        // Every caller copies what it takes (a str, bytes): a copy too large for the memory
        // left is AFS_E_NO_MEMORY here, before the Swift runtime would trap on it.
        try Memory.probe(n, "\(what) of \(n) bytes")
        let r = UnsafeBufferPointer(rebasing: b[i..<(i + n)])
        i += n
        return r
    }

    mutating func byte(_ what: String) throws -> UInt8 { try take(1, what)[0] }

    mutating func le(_ n: Int, _ what: String) throws -> UInt64 {
        let p = try take(n, what)
        var v: UInt64 = 0
        for k in 0..<n { v |= UInt64(p[k]) << (8 * UInt64(k)) }
        return v
    }

    mutating func length(_ n: Int, _ what: String) throws -> Int {
        let v = try le(n, what)
        guard v <= UInt64(b.count - i) else {
            throw fail("\(what) declares \(v) bytes but \(b.count - i) are left")
        }
        return Int(v)
    }

    /// The first stack index above the innermost mark.
    var floor: Int { marks.last ?? 0 }

    mutating func pop(_ what: String) throws -> PickleRef {
        guard stack.count > floor else { throw fail("\(what) finds the stack empty") }
        return stack.removeLast()
    }

    mutating func popMark(_ what: String) throws -> [PickleRef] {
        guard let m = marks.popLast() else { throw fail("\(what) without a MARK") }
        let items = Array(stack[m...])
        stack.removeSubrange(m...)
        return items
    }

    /// The container below the items of the innermost mark, or the stack top.
    func target(at index: Int, _ kinds: [PickleNode.Kind], _ what: String) throws -> PickleNode {
        guard index >= floor, index >= 0, index < stack.count,
              case .node(let n) = stack[index], kinds.contains(n.kind) else {
            throw fail("\(what) has no \(kinds.map(\.name).joined(separator: " or ")) to add to")
        }
        return n
    }

    func isScalar(_ r: PickleRef) -> Bool {
        if case .value(let v) = r, !v.isContainer { return true }
        return false
    }

    mutating func text(_ n: Int) throws -> Value {
        let start = i
        let p = try take(n, "a str")
        return .string(try String(validatingUTF8Bytes: p, what: "the str at pickle byte offset \(start)"))
    }

    mutating func run() throws -> PickleRef {
        while i < b.count {
            at = i
            let op = b[i]
            i += 1
            switch op {
            case Pickle.PROTO:
                let v = try byte("PROTO")
                guard v >= 2 && v <= 5 else { throw fail("protocol \(v) is not read (2 to 5 are)") }
            case Pickle.FRAME:
                _ = try length(8, "FRAME")
            case Pickle.STOP:
                guard marks.isEmpty else { throw fail("STOP inside an unclosed MARK") }
                guard stack.count == 1 else { throw fail("STOP with \(stack.count) objects on the stack (1 expected)") }
                guard i == b.count else { throw fail("\(b.count - i) bytes after STOP") }
                return stack[0]
            case Pickle.MARK:
                marks.append(stack.count)
            case Pickle.POP:
                if stack.count == floor, let m = marks.last, m == stack.count {
                    marks.removeLast()
                } else {
                    _ = try pop("POP")
                }
            case Pickle.POP_MARK:
                _ = try popMark("POP_MARK")
            case Pickle.NONE: stack.append(.value(.null))
            case Pickle.NEWTRUE: stack.append(.value(.bool(true)))
            case Pickle.NEWFALSE: stack.append(.value(.bool(false)))
            case Pickle.BININT1: stack.append(.value(.int(Int64(try le(1, "BININT1")))))
            case Pickle.BININT2: stack.append(.value(.int(Int64(try le(2, "BININT2")))))
            case Pickle.BININT: stack.append(.value(.int(Int64(Int32(bitPattern: UInt32(try le(4, "BININT")))))))
            case Pickle.LONG1, Pickle.LONG4:
                let n: Int
                if op == Pickle.LONG1 {
                    n = Int(try byte("LONG1"))
                } else {
                    let raw = Int32(bitPattern: UInt32(try le(4, "LONG4")))
                    guard raw >= 0 else { throw fail("LONG4 with a negative length") }
                    n = Int(raw)
                }
                stack.append(try long(try take(n, "an int")))
            case Pickle.BINFLOAT:
                let p = try take(8, "BINFLOAT")
                var u: UInt64 = 0
                for k in 0..<8 { u = (u << 8) | UInt64(p[k]) }
                stack.append(.value(.double(Double(bitPattern: u))))
            case Pickle.SHORT_BINUNICODE: stack.append(.value(try text(try length(1, "SHORT_BINUNICODE"))))
            case Pickle.BINUNICODE: stack.append(.value(try text(try length(4, "BINUNICODE"))))
            case Pickle.BINUNICODE8: stack.append(.value(try text(try length(8, "BINUNICODE8"))))
            case Pickle.SHORT_BINBYTES: stack.append(.value(.data(Array(try take(try length(1, "SHORT_BINBYTES"), "bytes")))))
            case Pickle.BINBYTES: stack.append(.value(.data(Array(try take(try length(4, "BINBYTES"), "bytes")))))
            case Pickle.BINBYTES8: stack.append(.value(.data(Array(try take(try length(8, "BINBYTES8"), "bytes")))))
            case Pickle.EMPTY_DICT: stack.append(.node(node(.dict)))
            case Pickle.EMPTY_LIST: stack.append(.node(node(.list)))
            case Pickle.EMPTY_SET: stack.append(.node(node(.set)))
            case Pickle.EMPTY_TUPLE: stack.append(.value(.array([])))
            case Pickle.TUPLE1, Pickle.TUPLE2, Pickle.TUPLE3:
                let n = Int(op - Pickle.TUPLE1) + 1
                guard stack.count - floor >= n else { throw fail("TUPLE\(n) finds fewer than \(n) objects") }
                let items = Array(stack[(stack.count - n)...])
                stack.removeLast(n)
                stack.append(tuple(items))
            case Pickle.TUPLE:
                stack.append(tuple(try popMark("TUPLE")))
            case Pickle.FROZENSET:
                let items = try popMark("FROZENSET")
                if items.allSatisfy(isScalar) {
                    stack.append(.value(.set(ValueSet(items.map { if case .value(let v) = $0 { return v }; return .null }))))
                } else {
                    stack.append(.node(node(.frozenset, items)))
                }
            case Pickle.APPEND:
                let v = try pop("APPEND")
                try target(at: stack.count - 1, [.list], "APPEND").items.append(v)
            case Pickle.APPENDS:
                let items = try popMark("APPENDS")
                try target(at: stack.count - 1, [.list], "APPENDS").items.append(contentsOf: items)
            case Pickle.SETITEM:
                let v = try pop("SETITEM")
                let k = try pop("SETITEM")
                let d = try target(at: stack.count - 1, [.dict], "SETITEM")
                d.items.append(k)
                d.items.append(v)
            case Pickle.SETITEMS:
                let items = try popMark("SETITEMS")
                guard items.count % 2 == 0 else { throw fail("SETITEMS with an odd number of objects (\(items.count))") }
                try target(at: stack.count - 1, [.dict], "SETITEMS").items.append(contentsOf: items)
            case Pickle.ADDITEMS:
                let items = try popMark("ADDITEMS")
                try target(at: stack.count - 1, [.set], "ADDITEMS").items.append(contentsOf: items)
            case Pickle.MEMOIZE:
                guard stack.count > floor else { throw fail("MEMOIZE finds the stack empty") }
                memo.append(stack[stack.count - 1])
            case Pickle.BINPUT, Pickle.LONG_BINPUT:
                let index = Int(try le(op == Pickle.BINPUT ? 1 : 4, "BINPUT"))
                guard stack.count > floor else { throw fail("BINPUT finds the stack empty") }
                guard index <= memo.count else { throw fail("memo index \(index) skips entries (the memo holds \(memo.count))") }
                if index == memo.count { memo.append(stack[stack.count - 1]) } else { memo[index] = stack[stack.count - 1] }
            case Pickle.BINGET, Pickle.LONG_BINGET:
                let index = Int(try le(op == Pickle.BINGET ? 1 : 4, "BINGET"))
                guard index < memo.count else { throw fail("memo index \(index) was never stored (the memo holds \(memo.count))") }
                stack.append(memo[index])
            case Pickle.GLOBAL:
                // The module and name are two text lines; named in the message, never looked up.
                var lines: [String] = []
                var j = i
                while lines.count < 2, j < b.count, j - i < 200 {
                    if let nl = b[j...].prefix(200).firstIndex(of: 0x0A) {
                        lines.append(String(decoding: b[j..<nl], as: UTF8.self))
                        j = nl + 1
                    } else { break }
                }
                if lines.count == 2 && lines[0] == Pickle.dateModule && lines[1] == Pickle.dateName {
                    i = j
                    stack.append(.dateFactory)
                    continue
                }
                throw refused(op, named: lines.count == 2 ? "\(lines[0]).\(lines[1])" : nil)
            case Pickle.STACK_GLOBAL:
                var named: String?
                if stack.count >= 2, case .value(.string(let m)) = stack[stack.count - 2],
                   case .value(.string(let n)) = stack[stack.count - 1] {
                    named = "\(m).\(n)"
                    if m == Pickle.dateModule && n == Pickle.dateName && stack.count - floor >= 2 {
                        stack.removeLast(2)
                        stack.append(.dateFactory)
                        continue
                    }
                }
                throw refused(op, named: named)
            case Pickle.REDUCE:
                guard stack.count - floor >= 2, case .dateFactory = stack[stack.count - 2] else {
                    throw refused(op, named: nil)
                }
                let args = stack.removeLast()
                stack.removeLast()
                let t: Double
                switch args {
                case .value(.array(let a)) where a.count == 1:
                    switch a[0] {
                    case .double(let d): t = d
                    case .int(let k): t = Double(k)
                    default: throw fail("a date made from \(a[0].kind.article) (a float of seconds since 1970 expected)")
                    }
                default:
                    throw fail("a date made from something other than a 1-tuple of a float")
                }
                stack.append(.value(.date(t)))
            default:
                throw refused(op, named: nil)
            }
        }
        throw fail("the input ends before STOP")
    }

    // MARK: one pass

    /// An object on the one-pass stack: its value, the height of its tree (0 for a scalar)
    /// and whether it is a list or dict still open to APPEND(S)/SETITEM(S).
    struct Item {
        var value: Value
        var height: Int
        var open: PickleNode.Kind?
    }

    /// The tree in one pass, or nil: for input outside the common shape (a memo reference
    /// to a container, a set or frozenset, an int beyond int64, an unusual opcode) and for
    /// every error, so that the general reader can take it and name what is wrong.
    mutating func runDirect() -> Value? {
        var items: [Item] = []
        // Whatever was built when the one-pass reader gives up (at most `Value.maxDepth`
        // levels deep: deeper nesting stops it) is released without deep recursion.
        defer { for k in items.indices { Value.releaseDeep(&items[k].value) } }
        do { return try direct(&items) } catch { return nil }
    }

    private mutating func direct(_ items: inout [Item]) throws -> Value? {
        var memo: [Value?] = []  // nil: a container (references to it take the general path)
        items.reserveCapacity(16)
        memo.reserveCapacity(32)
        marks.reserveCapacity(8)
        func top(_ n: Int, _ floor: Int) -> Bool { items.count - floor >= n }
        while i < b.count {
            at = i
            let op = b[i]
            i += 1
            let floor = marks.last ?? 0
            switch op {
            case Pickle.PROTO:
                let v = try byte("PROTO")
                guard v >= 2 && v <= 5 else { return nil }
            case Pickle.FRAME:
                _ = try length(8, "FRAME")
            case Pickle.STOP:
                guard marks.isEmpty, items.count == 1, i == b.count else { return nil }
                return items.removeLast().value
            case Pickle.MARK:
                marks.append(items.count)
            case Pickle.NONE: items.append(Item(value: .null, height: 0, open: nil))
            case Pickle.NEWTRUE: items.append(Item(value: .bool(true), height: 0, open: nil))
            case Pickle.NEWFALSE: items.append(Item(value: .bool(false), height: 0, open: nil))
            case Pickle.BININT1: items.append(Item(value: .int(Int64(try le(1, "BININT1"))), height: 0, open: nil))
            case Pickle.BININT2: items.append(Item(value: .int(Int64(try le(2, "BININT2"))), height: 0, open: nil))
            case Pickle.BININT:
                items.append(Item(value: .int(Int64(Int32(bitPattern: UInt32(try le(4, "BININT"))))), height: 0, open: nil))
            case Pickle.LONG1:
                guard case .value(let v) = try long(try take(Int(try byte("LONG1")), "an int")) else { return nil }
                items.append(Item(value: v, height: 0, open: nil))
            case Pickle.BINFLOAT:
                let p = try take(8, "BINFLOAT")
                var u: UInt64 = 0
                for k in 0..<8 { u = (u << 8) | UInt64(p[k]) }
                items.append(Item(value: .double(Double(bitPattern: u)), height: 0, open: nil))
            case Pickle.SHORT_BINUNICODE: items.append(Item(value: try text(try length(1, "SHORT_BINUNICODE")), height: 0, open: nil))
            case Pickle.BINUNICODE: items.append(Item(value: try text(try length(4, "BINUNICODE")), height: 0, open: nil))
            case Pickle.BINUNICODE8: items.append(Item(value: try text(try length(8, "BINUNICODE8")), height: 0, open: nil))
            case Pickle.SHORT_BINBYTES, Pickle.BINBYTES, Pickle.BINBYTES8:
                let n = try length(op == Pickle.SHORT_BINBYTES ? 1 : op == Pickle.BINBYTES ? 4 : 8, "BINBYTES")
                items.append(Item(value: .data(Array(try take(n, "bytes"))), height: 0, open: nil))
            case Pickle.EMPTY_DICT: items.append(Item(value: .dict(ValueDict()), height: 1, open: .dict))
            case Pickle.EMPTY_LIST: items.append(Item(value: .array([]), height: 1, open: .list))
            case Pickle.EMPTY_TUPLE: items.append(Item(value: .array([]), height: 1, open: nil))
            case Pickle.TUPLE1, Pickle.TUPLE2, Pickle.TUPLE3, Pickle.TUPLE:
                let start: Int
                if op == Pickle.TUPLE {
                    guard let m = marks.popLast() else { return nil }
                    start = m
                } else {
                    let n = Int(op - Pickle.TUPLE1) + 1
                    guard top(n, floor) else { return nil }
                    start = items.count - n
                }
                var height = 0
                let members = items[start...].map { height = Swift.max(height, $0.height); return $0.value }
                items.removeSubrange(start...)
                guard height < Value.maxDepth else { return nil }
                items.append(Item(value: .array(members), height: height + 1, open: nil))
            case Pickle.APPEND, Pickle.APPENDS, Pickle.SETITEM, Pickle.SETITEMS:
                // the members: the top one (APPEND), two (SETITEM), or those above the mark
                let start: Int
                if op == Pickle.APPENDS || op == Pickle.SETITEMS {
                    guard let m = marks.popLast() else { return nil }
                    start = m
                } else {
                    let n = op == Pickle.APPEND ? 1 : 2
                    guard top(n, floor) else { return nil }
                    start = items.count - n
                }
                let t = start - 1
                guard t >= (marks.last ?? 0), t >= 0 else { return nil }
                let isDict = op == Pickle.SETITEM || op == Pickle.SETITEMS
                guard items[t].open == (isDict ? .dict : .list) else { return nil }
                var height = items[t].height
                let n = items.count - start
                if isDict {
                    guard n % 2 == 0, case .dict(var d) = items[t].value else { return nil }
                    items[t].value = .null  // `d` is then the only reference: no copy
                    try Memory.probe(d.count + n / 2, of: (String, Value, Int).self, "a dict")
                    d.reserveCapacity(d.count + n / 2)
                    var k = start
                    while k < items.count {
                        guard case .string(let key) = items[k].value else { return nil }
                        height = Swift.max(height, items[k + 1].height + 1)
                        d[key] = items[k + 1].value
                        k += 2
                    }
                    items[t].value = .dict(d)
                } else {
                    guard case .array(var a) = items[t].value else { return nil }
                    items[t].value = .null
                    try a.checkedReserve(a.count + n, "a list")
                    for k in start..<items.count {
                        height = Swift.max(height, items[k].height + 1)
                        a.append(items[k].value)
                    }
                    items[t].value = .array(a)
                }
                items[t].height = height
                items.removeSubrange(start...)
                // deeper than the limit: the general reader names the path
                guard height <= Value.maxDepth else { return nil }
            case Pickle.MEMOIZE, Pickle.BINPUT, Pickle.LONG_BINPUT:
                let index = op == Pickle.MEMOIZE ? memo.count : Int(try le(op == Pickle.BINPUT ? 1 : 4, "BINPUT"))
                guard items.count > floor, index <= memo.count else { return nil }
                let last = items[items.count - 1]
                // (spelled out: `Value` is nil-literal convertible, so a bare `nil` here
                // would be `.null`)
                let entry: Value? = last.height == 0 ? Optional.some(last.value) : Optional.none
                if index == memo.count { memo.append(entry) } else { memo[index] = entry }
            case Pickle.BINGET, Pickle.LONG_BINGET:
                let index = Int(try le(op == Pickle.BINGET ? 1 : 4, "BINGET"))
                guard index < memo.count, let v = memo[index] else { return nil }
                items.append(Item(value: v, height: 0, open: nil))
            default:
                return nil
            }
        }
        return nil
    }

    func refused(_ op: UInt8, named: String?) -> AFSError {
        let (name, meaning) = Pickle.describe(op)
        let what = named.map { "\(meaning): \(String($0.prefix(120)))" } ?? meaning
        return fail("opcode \(name) (\(what)) is outside the accepted subset: only dict, list, tuple, str, bytes, int, float, bool, None, set and frozenset are read")
    }

    mutating func node(_ kind: PickleNode.Kind, _ items: [PickleRef] = []) -> PickleNode {
        let n = PickleNode(kind, items)
        nodes.append(n)
        return n
    }

    mutating func tuple(_ items: [PickleRef]) -> PickleRef {
        if items.allSatisfy(isScalar) {
            return .value(.array(items.map { if case .value(let v) = $0 { return v }; return .null }))
        }
        return .node(node(.tuple, items))
    }

    /// A LONG1/LONG4 payload: little-endian two's complement, any length.
    func long(_ p: UnsafeBufferPointer<UInt8>) throws -> PickleRef {
        var n = p.count
        if n == 0 { return .value(.int(0)) }
        let negative = p[n - 1] & 0x80 != 0
        let fill: UInt8 = negative ? 0xFF : 0x00
        // Drop redundant sign bytes.
        while n > 1 && p[n - 1] == fill && (p[n - 2] & 0x80 != 0) == negative { n -= 1 }
        guard n <= 8 else { return .bigInt(Array(p)) }
        var u: UInt64 = negative ? ~0 : 0
        for k in 0..<n {
            u &= ~(UInt64(0xFF) << (8 * UInt64(k)))
            u |= UInt64(p[k]) << (8 * UInt64(k))
        }
        return .value(.int(Int64(bitPattern: u)))
    }
}

private struct Converter {
    let limit: Int
    var total = 0
    /// Where the conversion is: a dictionary key, or an index (negative: a set member).
    enum Step { case key(String), index(Int), member(Int) }
    var path: [Step] = []

    init(limit: Int) { self.limit = limit }

    /// `['a'][2]`, rendered only for a message; a long path keeps its first three and last
    /// two steps (`[0][0][0]…[0][0], 513 levels`).
    func where_() -> String {
        if path.isEmpty { return "at the top level" }
        func text(_ step: Step) -> String {
            switch step {
            case .key(let k): return "[" + quoted(k) + "]"
            case .index(let j): return "[\(j)]"
            case .member(let j): return "[set member \(j)]"
            }
        }
        if path.count > 8 {
            return "at " + path.prefix(3).map(text).joined() + "…" + path.suffix(2).map(text).joined()
                + ", \(path.count) levels"
        }
        return "at " + path.map(text).joined()
    }

    func fail(_ message: String) -> AFSError {
        AFSError(.invalidArgument, "pickle: \(message) (\(where_()))")
    }

    mutating func count(_ n: Int) throws {
        total += n
        if total > limit {
            throw fail("shared members expand to more than \(limit) values")
        }
    }

    /// The value of `r` at nesting `depth`; containers `LargeStack.hopDepth` levels down
    /// continue on a large stack (see `PickleWriter.write`).
    mutating func convert(_ r: PickleRef, depth: Int) throws -> Value {
        if depth == LargeStack.hopDepth, case .node = r {
            return try LargeStack.run { try self.convertHere(r, depth: depth) }
        }
        return try convertHere(r, depth: depth)
    }

    private mutating func convertHere(_ r: PickleRef, depth: Int) throws -> Value {
        switch r {
        case .value(let v):
            if v.isContainer {
                if depth >= Value.maxDepth { throw depthError() }
                try count(1 + v.count)
            } else {
                try count(1)
            }
            return v
        case .dateFactory:
            throw fail("the date constructor afserialization._transfer._date used as a value (only REDUCE may call it)")
        case .bigInt(let bytes):
            throw fail("the int \(decimal(bytes)) is outside int64 (-9223372036854775808..9223372036854775807)")
        case .node(let n):
            if let v = n.converted {
                if depth + n.height > Value.maxDepth { throw depthError() }
                try count(n.expanded)
                return v
            }
            if n.visiting { throw fail("the \(n.kind.name) contains itself (a cycle)") }
            if depth >= Value.maxDepth { throw depthError() }
            n.visiting = true
            defer { n.visiting = false }
            let before = total
            try count(1)
            var height = 0
            var members: [Value] = []
            var value: Value
            switch n.kind {
            case .dict:
                var d = ValueDict()
                var k = 0
                while k + 1 < n.items.count {
                    guard case .value(.string(let key)) = n.items[k] else {
                        throw fail("dict keys must be str, not \(typeName(n.items[k]))")
                    }
                    path.append(.key(key))
                    let m = try convert(n.items[k + 1], depth: depth + 1)
                    path.removeLast()
                    height = Swift.max(height, heightOf(n.items[k + 1], m))
                    d[key] = m
                    k += 2
                }
                value = .dict(d)
            case .list, .tuple, .set, .frozenset:
                members.reserveCapacity(n.items.count)
                let isSet = n.kind == .set || n.kind == .frozenset
                for (j, item) in n.items.enumerated() {
                    path.append(isSet ? .member(j) : .index(j))
                    let m = try convert(item, depth: depth + 1)
                    path.removeLast()
                    height = Swift.max(height, heightOf(item, m))
                    members.append(m)
                }
                value = isSet ? .set(ValueSet(members)) : .array(members)
            }
            n.height = height + 1
            n.expanded = total - before
            n.converted = value
            return value
        }
    }

    func heightOf(_ r: PickleRef, _ v: Value) -> Int {
        switch r {
        case .node(let n): return n.height
        default: return v.isContainer ? 1 : 0
        }
    }

    func depthError() -> AFSError {
        fail("containers nested deeper than \(Value.maxDepth) levels")
    }

    func typeName(_ r: PickleRef) -> String {
        switch r {
        case .bigInt: return "int"
        case .dateFactory: return "function"
        case .node(let n): return n.kind.name
        case .value(let v):
            switch v {
            case .null: return "NoneType"
            case .bool: return "bool"
            case .int: return "int"
            case .double: return "float"
            case .string: return "str"
            case .data: return "bytes"
            case .array: return "tuple"
            case .set: return "frozenset"
            case .dict: return "dict"
            case .date: return "datetime"
            }
        }
    }

    /// A key as Python's repr writes it (single quotes), cut at 60 characters.
    func quoted(_ s: String) -> String {
        var out = "'"
        for (n, c) in s.unicodeScalars.enumerated() {
            if n == 60 { out += "..."; break }
            switch c {
            case "\\": out += "\\\\"
            case "'": out += "\\'"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if c.value < 0x20 || c.value == 0x7F {
                    out += "\\x" + Pickle.hex2(UInt8(c.value))
                } else {
                    out.unicodeScalars.append(c)
                }
            }
        }
        return out + "'"
    }

    /// The decimal digits of a little-endian two's complement integer (at most 64 bytes;
    /// longer ones are described by their size).
    func decimal(_ bytes: [UInt8]) -> String {
        guard bytes.count <= 64 else { return "of \(bytes.count) bytes" }
        let negative = (bytes.last ?? 0) & 0x80 != 0
        var mag = bytes
        if negative {  // two's complement negation
            var carry = 1
            for k in mag.indices {
                let v = Int(~mag[k]) + carry
                mag[k] = UInt8(truncatingIfNeeded: v)
                carry = v >> 8
            }
        }
        var digits: [UInt8] = []
        var words = mag.reversed().map { Int($0) }  // big-endian base-256
        while words.contains(where: { $0 != 0 }) {
            var rem = 0
            for k in words.indices {
                let cur = rem * 256 + words[k]
                words[k] = cur / 10
                rem = cur % 10
            }
            digits.append(UInt8(rem) + 48)
        }
        if digits.isEmpty { digits = [48] }
        return (negative ? "-" : "") + String(decoding: digits.reversed(), as: UTF8.self)
    }
}
