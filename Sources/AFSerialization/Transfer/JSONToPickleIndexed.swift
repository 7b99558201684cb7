/// JSON-to-pickle from the structural index (issue 23): stage 1 as for the tape
/// (StructuralIndex.swift), then a walk of the index writing the opcodes
/// `JSONReader.transcodeTree` writes, byte for byte (the same memo of keys and short
/// strings, the same numbers, `exactIntegers` alike). Like the tape's stage 2 it only
/// decides: any text it rejects is transcoded again by the reader, which names the problem.
extension JSONToPickle {
    /// The pickle of `text`, or nil when the indexed walk rejects it (nothing is kept).
    static func transcodeIndexed(_ text: UnsafeBufferPointer<UInt8>, allowFragments: Bool, exactIntegers: Bool)
        throws(AFSError) -> (UnsafeMutablePointer<UInt8>, Int)?
    {
        guard let p = text.baseAddress, text.count > 0, text.count <= JSONStructuralIndex.maxInput else { return nil }
        let n = text.count
        var index = JSONStructuralIndex()
        let window = Swift.min(Stage1.window, n &+ 64)
        try index.reserve(window)
        var scanner = Stage1(p: p, n: n, path: Stage1.defaultPath, out: index.positions, window: window,
                             scratch: UnsafeMutableRawPointer(index.positions + (index.capacity &- Stage1.scratchEntries)))
        scanner.fill(keeping: 0)
        guard scanner.count > 0 else { return nil }
        let first = p[Int(index.positions[0])]
        if !allowFragments && first != UInt8(ascii: "{") && first != UInt8(ascii: "[") { return nil }
        // Unescaped strings are written to a scratch block one at a time; it starts small
        // and grows to the longest escaped string (not the whole input's size up front: a
        // 10 MB block allocated and freed per call also slowed the Python side's unpickling).
        let scratchSize = 4096
        guard let raw = afsMalloc(scratchSize) else { throw AFSError.noMemory("a JSON string", bytes: scratchSize) }
        var stage = Stage2(p: p, n: n, s1: scanner, text: raw.bindMemory(to: UInt8.self, capacity: scratchSize),
                           maxDepth: JSONParser.defaultMaxDepth)
        stage.scratchCapacity = scratchSize
        defer { free(stage.text) }
        var w = PickleWriter(capacity: n + n / 4 + 64)
        guard stage.pickle(&w, exactIntegers: exactIntegers) else {
            if stage.scratchFailed { throw AFSError.noMemory("a JSON string", bytes: stage.scratchCapacity) }
            return nil
        }
        return try w.take()
    }
}

extension Stage2 {
    /// `JSONReader.transcodeTree` over the index; false when the text is rejected.
    mutating func pickle(_ w: inout PickleWriter, exactIntegers: Bool) -> Bool {
        var open: [Bool] = []  // isObject, innermost last
        open.reserveCapacity(16)
        var memo = KeyMemo()
        outer: while true {
            guard has() else { return false }
            let q = at(k)
            k &+= 1
            let c = p[q]
            switch c {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = c == UInt8(ascii: "{")
                if open.count >= maxDepth { return false }
                w.out.append(isObject ? Pickle.EMPTY_DICT : Pickle.EMPTY_LIST)
                guard has() else { return false }
                if p[at(k)] == c &+ 2 {
                    k &+= 1
                } else {
                    w.out.append(Pickle.MARK)
                    open.append(isObject)
                    if isObject { guard pickleKey(&w, &memo) else { return false } }
                    continue outer
                }
            case 0x22:
                guard let (bytes, plain) = stringBytes() else { return false }
                if plain && bytes.count <= JSONToPickle.sharedStringLimit {
                    if let index = memo.find(bytes) {
                        w.memoGet(index)
                    } else {
                        w.stringBytes(bytes)
                        if memo.hasRoom, let index = w.memoize() { memo.insert(bytes, index) }
                    }
                } else {
                    w.stringBytes(bytes)
                }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard let (isInt, bits, end) = numberValue(q) else { return false }
                if isInt {
                    w.int(Int64(bitPattern: bits))
                } else if exactIntegers && end - q <= 4301 && isIntegerLiteral(q, end) && !(end - q == 2 && c == UInt8(ascii: "-")) {
                    w.bigInt(decimal: UnsafeBufferPointer(start: p + q, count: end - q))
                } else {
                    w.double(Double(bitPattern: bits))
                }
            case UInt8(ascii: "t"):
                guard literal(q, 0x6575_7274, 4) else { return false }
                w.bool(true)
            case UInt8(ascii: "f"):
                guard literal(q, 0x6573_6C61_66, 5) else { return false }
                w.bool(false)
            case UInt8(ascii: "n"):
                guard literal(q, 0x6C6C_756E, 4) else { return false }
                w.out.append(Pickle.NONE)
            default:
                return false
            }
            // A value is complete: close the containers that end here.
            while let isObject = open.last {
                guard has() else { return false }
                let d = p[at(k)]
                k &+= 1
                if d == UInt8(ascii: ",") {
                    if isObject { guard pickleKey(&w, &memo) else { return false } }
                    continue outer
                }
                guard d == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { return false }
                w.out.append(isObject ? Pickle.SETITEMS : Pickle.APPENDS)
                open.removeLast()
            }
            return !has() && s1.valid
        }
    }

    func isIntegerLiteral(_ start: Int, _ end: Int) -> Bool {
        var j = start
        if j < end && p[j] == UInt8(ascii: "-") { j &+= 1 }
        while j < end {
            if p[j] &- UInt8(ascii: "0") >= 10 { return false }
            j &+= 1
        }
        return true
    }

    /// The string whose opening quote was the entry before `k`: its bytes (in the input
    /// when it has no escapes, else unescaped into `text`) and whether it had none.
    mutating func stringBytes() -> (UnsafeBufferPointer<UInt8>, Bool)? {
        let q = at(k &- 1)
        guard has() else { return nil }
        let close = at(k)
        k &+= 1
        let start = q &+ 1
        let len = close &- start
        guard len > 0, let hit = memchr(p + start, 0x5C, len) else {
            return (UnsafeBufferPointer(start: p + start, count: len), true)
        }
        // The scratch holds the string and 8 bytes of room for unescape's stores.
        if len &+ 16 > scratchCapacity {
            let want = Swift.max(len &+ 16, scratchCapacity &* 2)
            guard let grown = afsRealloc(text, want) else {
                scratchFailed = true
                scratchCapacity = want
                return nil
            }
            text = grown.bindMemory(to: UInt8.self, capacity: want)
            scratchCapacity = want
        }
        // The bytes before the first backslash are copied as they are.
        let copied = UnsafeRawPointer(hit).assumingMemoryBound(to: UInt8.self) - (p + start)
        memcpy(text, p + start, copied)
        guard let written = unescape(start &+ copied, close, text + copied) else { return nil }
        return (UnsafeBufferPointer(start: text, count: copied &+ written), false)
    }

    /// A key (memoized by its bytes when it has no escapes) and the `:` after it.
    mutating func pickleKey(_ w: inout PickleWriter, _ memo: inout KeyMemo) -> Bool {
        guard has(), p[at(k)] == 0x22 else { return false }
        k &+= 1
        guard let (bytes, plain) = stringBytes() else { return false }
        if plain, let index = memo.find(bytes) {
            w.memoGet(index)
        } else {
            w.stringBytes(bytes)
            if plain && memo.hasRoom, let index = w.memoize() { memo.insert(bytes, index) }
        }
        guard has(), p[at(k)] == UInt8(ascii: ":") else { return false }
        k &+= 1
        return true
    }
}
