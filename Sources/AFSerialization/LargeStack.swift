/// Deep trees on small thread stacks.
///
/// The writers and walkers are recursive (one frame per nesting level), and so is releasing
/// a tree. A caller's thread may have a small stack (64 KiB is common for worker threads),
/// too small for 512 levels. So every recursive walk that reaches `hopDepth` levels runs
/// the rest of that subtree on a thread of its own with a `stackSize` stack, and waits
/// for it: the caller's stack holds at most `hopDepth` levels, whatever the tree. Trees
/// shallower than `hopDepth` (nearly all) never start a thread.
///
/// When the thread cannot be created (no memory for its stack, or the thread limit) the
/// walk fails with `AFSError` `.noMemory`; releasing a tree then falls back to an iterative
/// teardown (`Value.dismantle`).
public enum LargeStack {
    /// The nesting level at which a walk moves to a large stack.
    public static let hopDepth = 32
    /// The large stack: 512 levels of any walker fit with a wide margin.
    public static let stackSize = 8 << 20

    private final class Job {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Runs `body` on a new thread with a `stackSize` stack and waits for it. Returns false,
    /// without running `body`, when the thread cannot be created.
    public static func run(_ body: () -> Void) -> Bool {
        withoutActuallyEscaping(body) { escaping -> Bool in
            let job = Job(escaping)
            var attr = pthread_attr_t()
            guard pthread_attr_init(&attr) == 0 else { return false }
            defer { pthread_attr_destroy(&attr) }
            guard pthread_attr_setstacksize(&attr, stackSize) == 0 else { return false }
            var tid = pthread_t()
            let ctx = Unmanaged.passRetained(job).toOpaque()
            let rc = pthread_create(&tid, &attr, { ctx in
                let job = Unmanaged<Job>.fromOpaque(ctx!).takeRetainedValue()
                job.body()
                return nil
            }, ctx)
            guard rc == 0 else {
                Unmanaged<Job>.fromOpaque(ctx).release()
                return false
            }
            pthread_join(tid, nil)
            return true
        }
    }

    /// Runs a writer's `body` on a large stack; when no thread can be had, `out` is marked
    /// out of memory (so the writer's caller reports `.noMemory`) and `body` does not run.
    public static func run<E: Error>(_ out: inout ByteWriter, _ body: (inout ByteWriter) throws(E) -> Void) throws(E) {
        var failure: E?
        let ok = run {
            do throws(E) { try body(&out) } catch { failure = error }
        }
        if !ok { out.markFailed(stackSize) }
        if let failure { throw failure }
    }

    /// Runs a throwing `body` on a large stack; `.noMemory` when no thread can be had.
    public static func run<R>(_ body: () throws -> R) throws -> R {
        var result: Result<R, Error>?
        let ok = run { result = Result { try body() } }
        guard ok, let result else { throw noStack() }
        return try result.get()
    }

    /// The error of a walk whose large stack could not be had.
    public static func noStack() -> AFSError {
        AFSError.noMemory("a thread stack for a tree nested \(hopDepth) levels or more", bytes: stackSize)
    }
}

extension ByteWriter {
    /// Puts the buffer in the out-of-memory state (a walk could not get its large stack).
    public mutating func markFailed(_ bytes: Int) {
        _ = fail(bytes)
    }
}

extension Value {
    /// The members of a container (dictionary values, array elements, set members); empty
    /// for scalars. Shares storage, copies nothing.
    @inlinable
    var members: [Value] {
        switch self {
        case .array(let a): return a
        case .dict(let d): return d.values
        case .set(let s): return s.members
        default: return []
        }
    }

    /// Whether the nesting depth is at least `limit`, walking at most that deep (iterative).
    public func isNested(atLeast limit: Int) -> Bool {
        nestingDepth(cappedAt: limit) >= limit
    }

    /// The nesting depth, or `cap` when it is at least `cap`; iterative (an explicit stack
    /// of at most `cap` entries), so it needs no more thread stack for deep trees.
    public func nestingDepth(cappedAt cap: Int) -> Int {
        guard isContainer else { return 0 }
        var stack: [(members: [Value], next: Int)] = [(members, 0)]
        var best = 1
        while !stack.isEmpty {
            let top = stack.count - 1
            let i = stack[top].next
            if i == stack[top].members.count {
                stack.removeLast()
                continue
            }
            stack[top].next = i + 1
            let m = stack[top].members[i]
            if m.isContainer {
                let d = stack.count + 1
                if d > best { best = d }
                if best >= cap { return cap }
                stack.append((m.members, 0))
            }
        }
        return best
    }

    /// Releases `v` without deep recursion: a tree nested `LargeStack.hopDepth` levels or
    /// more is released on a large stack, or, when no thread can be had, taken apart level
    /// by level (`dismantle`). Leaves `.null` behind.
    public static func releaseDeep(_ v: inout Value) {
        guard v.isNested(atLeast: LargeStack.hopDepth) else {
            v = .null
            return
        }
        var held = v
        v = .null
        let ok = LargeStack.run { held = .null }
        if !ok { dismantle(&held) }
    }

    /// Takes a tree apart iteratively: containers are emptied into a work list, so that no
    /// release recurses more than one level. Members still shared elsewhere are released
    /// (not dismantled) when their last holder here goes: only what this tree owns alone is
    /// taken apart. The work list holds the container members of the containers along one path.
    public static func dismantle(_ v: inout Value) {
        var work: [Value] = []
        var cur = v
        v = .null
        while true {
            var next: [Value] = []
            switch cur {
            case .array(let a): next = a
            case .dict(let d): next = d.values
            case .set(let s): next = s.members
            default: break
            }
            cur = .null  // drops the container; its members are still held by `next`
            // A work list that cannot grow (no memory) leaves the member to Swift's own
            // release, which recurses: the last resort, after the large stack and the list.
            for m in next where m.isContainer {
                guard (try? work.checkedAppend(m, "the release work list")) != nil else { break }
            }
            next = []
            guard let last = work.popLast() else { return }
            cur = last
        }
    }
}
