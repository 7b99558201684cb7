import Foundation
import XCTest

// Helpers shared by the test files.

/// A small seeded generator (SplitMix64) so random trees are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

struct PythonFailed: Error, CustomStringConvertible {
    let status: Int32
    var description: String { "python3 exited with \(status) (its error output is above in the log)" }
}

/// Runs `python3 ARGS…` and returns its standard output; its standard error goes to the test
/// log. A failing run throws (the test fails): a cross-check that python3 rejects must
/// never turn into a skip.
func runPython(_ args: [String]) throws -> Data {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3"] + args
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.standardError
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { throw PythonFailed(status: p.terminationStatus) }
    return data
}
