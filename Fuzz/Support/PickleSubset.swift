// An independent scanner of the pickle subset for the pickle fuzz targets: walks opcodes
// and their arguments by the protocol's rules (not the library's reader) and says which
// opcodes a buffer holds.
@testable import AFSerialization

enum PickleSubset {
    /// Opcodes the writers may emit.
    static let written: Set<UInt8> = [
        0x80, 0x95, 0x28, 0x2E, 0x4E, 0x88, 0x89, 0x4B, 0x4D, 0x4A, 0x8A, 0x8B, 0x47, 0x8C, 0x58,
        0x8D, 0x43, 0x42, 0x8E, 0x7D, 0x5D, 0x65, 0x75, 0x91, 0x86, 0x74, 0x94, 0x68, 0x6A,
        0x93, 0x85, 0x52,  // dates: STACK_GLOBAL of afserialization._transfer._date, TUPLE1, REDUCE
    ]
    /// Opcodes the reader may accept.
    static let readable: Set<UInt8> = written.union([
        0x73, 0x61, 0x29, 0x85, 0x87, 0x8F, 0x90, 0x30, 0x31, 0x71, 0x72,
        0x63,  // GLOBAL, read for the date callable only (the reader checks the name)
    ])

    /// Argument bytes after an opcode: fixed, or a length prefix of `prefix` bytes then
    /// that many bytes. nil for an opcode outside the subset.
    static func argument(_ op: UInt8) -> (fixed: Int, prefix: Int)? {
        switch op {
        case 0x80, 0x4B, 0x68, 0x71: return (1, 0)
        case 0x4D: return (2, 0)
        case 0x4A, 0x6A, 0x72: return (4, 0)
        case 0x95, 0x47: return (8, 0)
        case 0x8A, 0x8C, 0x43: return (0, 1)
        case 0x8B, 0x58, 0x42: return (0, 4)
        case 0x8D, 0x8E: return (0, 8)
        case 0x28, 0x2E, 0x4E, 0x88, 0x89, 0x7D, 0x5D, 0x65, 0x75, 0x91, 0x86, 0x74, 0x94, 0x73,
             0x61, 0x29, 0x85, 0x87, 0x8F, 0x90, 0x30, 0x31, 0x93, 0x52:
            return (0, 0)
        case 0x63: return (-1, 0)  // two text lines, each ended by a newline
        default: return nil
        }
    }

    /// The opcodes of `b` in order, or nil when it is not a walkable subset pickle (an
    /// unknown opcode, a truncated argument, bytes after STOP).
    static func opcodes(_ b: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var ops: [UInt8] = []
        var i = 0
        while i < b.count {
            let op = b[i]
            ops.append(op)
            guard let (fixed, prefix) = argument(op) else { return nil }
            i += 1
            if fixed < 0 {  // GLOBAL: module and name lines
                for _ in 0..<2 {
                    guard let nl = b[i...].firstIndex(of: 0x0A) else { return nil }
                    i = nl + 1
                }
                continue
            }
            var n = fixed
            if prefix > 0 {
                guard i + prefix <= b.count else { return nil }
                var len: UInt64 = 0
                for k in 0..<prefix { len |= UInt64(b[i + k]) << (8 * UInt64(k)) }
                i += prefix
                guard len <= UInt64(b.count - i) else { return nil }
                n = Int(len)
            }
            guard i + n <= b.count else { return nil }
            i += n
            if op == 0x2E { return i == b.count ? ops : nil }
        }
        return nil
    }

    /// A writer's output: PROTO 4, a FRAME covering the rest, only written opcodes, STOP last.
    static func checkWritten(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { b in
            require(b.count >= 12 && b[0] == 0x80 && b[1] == 4 && b[2] == 0x95, "no PROTO 4 + FRAME header: \(show(bytes))")
            var frame: UInt64 = 0
            for k in 0..<8 { frame |= UInt64(b[3 + k]) << (8 * UInt64(k)) }
            require(frame == UInt64(b.count - 11), "FRAME says \(frame) bytes, \(b.count - 11) follow")
            guard let ops = opcodes(b) else { fail("the writer's output does not walk as the subset: \(show(bytes))") }
            for op in ops {
                require(written.contains(op), "the writer emitted opcode 0x\(String(op, radix: 16)) outside its subset")
            }
        }
    }

    /// What Python gets for `v` (and what reading the writer's output gives): sets Python
    /// cannot hash or would merge become arrays.
    static func asPython(_ v: Value) -> Value {
        switch v {
        case .array(let a): return .array(a.map(asPython))
        case .dict(let d): return .dict(ValueDict(count: d.count) { (d.keys[$0], asPython(d.values[$0])) })
        case .set(let s):
            let members = s.members.map(asPython)
            return PickleWriter.pythonKey(v) != nil ? .set(ValueSet(members)) : .array(members)
        default: return v
        }
    }
}
