import Foundation
import XCTest
@testable import AFSerialization

/// SHA-256 / SHA-512 against the FIPS 180 examples (NIST CSRC "Examples with intermediate
/// values": "abc", the 448-bit and 896-bit messages, one million 'a'), MD5 against the test
/// suite of RFC 1321 appendix A.5, every split of the input equal to one feed, and random
/// bodies checked against Python's hashlib.
final class DigestTests: XCTestCase {
    static let abc448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
    static let abc896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"

    func hex(_ d: [UInt8]) -> String { d.map { String(format: "%02x", $0) }.joined() }

    /// Both SHA-256 paths (the x86 SHA extensions when the CPU has them, the portable rounds)
    /// give the FIPS values and agree on random inputs.
    func testSHA256PortableAndHardwarePathsAgree() {
        let saved = SHA256.useHardware
        defer { SHA256.useHardware = saved }
        var rng = SeededGenerator(seed: 256)
        let data = (0..<100_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        var results: [[UInt8]] = []
        for hw in saved ? [true, false] : [false] {
            SHA256.useHardware = hw
            XCTAssertEqual(hex(SHA256.hash(Array("abc".utf8))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "hardware \(hw)")
            XCTAssertEqual(hex(SHA256.hash(Array(Self.abc448.utf8))), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "hardware \(hw)")
            results.append(SHA256.hash(data))
        }
        XCTAssertEqual(Set(results.map { hex($0) }).count, 1)
    }

    func testSHA256FIPSExamples() {
        XCTAssertEqual(hex(SHA256.hash(Array("".utf8))), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(hex(SHA256.hash(Array("abc".utf8))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hex(SHA256.hash(Array(Self.abc448.utf8))), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(hex(SHA256.hash(Array(Self.abc896.utf8))), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    func testSHA512FIPSExamples() {
        XCTAssertEqual(hex(SHA512.hash(Array("".utf8))), "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e")
        XCTAssertEqual(hex(SHA512.hash(Array("abc".utf8))), "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        XCTAssertEqual(hex(SHA512.hash(Array(Self.abc448.utf8))), "204a8fc6dda82f0a0ced7beb8e08a41657c16ef468b228a8279be331a703c33596fd15c13b1b07f9aa1d3bea57789ca031ad85c7a71dd70354ec631238ca3445")
        XCTAssertEqual(hex(SHA512.hash(Array(Self.abc896.utf8))), "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909")
    }

    func testMillionA() {
        let a = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        XCTAssertEqual(hex(SHA256.hash(a)), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        XCTAssertEqual(hex(SHA512.hash(a)), "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973ebde0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b")
        XCTAssertEqual(hex(MD5.hash(a)), "7707d6ae4e027c70eea2a935c2296f21")
        // The same million fed in odd pieces.
        var s2 = SHA256(), s5 = SHA512(), m = MD5()
        var i = 0, step = 1
        while i < a.count {
            let n = min(step, a.count - i)
            a[i..<(i + n)].withUnsafeBytes { s2.update($0); s5.update($0); m.update($0) }
            i += n
            step = step * 7 % 1009 + 1
        }
        XCTAssertEqual(hex(s2.finalize()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        XCTAssertEqual(hex(s5.finalize()), "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973ebde0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b")
        XCTAssertEqual(hex(m.finalize()), "7707d6ae4e027c70eea2a935c2296f21")
    }

    func testMD5RFC1321Suite() {
        let suite: [(String, String)] = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
            (String(repeating: "1234567890", count: 8), "57edf4a22be3c955ac49da2e2107b67a"),
        ]
        for (input, expected) in suite {
            XCTAssertEqual(hex(MD5.hash(Array(input.utf8))), expected, "MD5(\"\(input)\")")
        }
    }

    /// Every split point of inputs around the block and padding boundaries gives the one-shot digest.
    func testEverySplitEqualsOneFeed() {
        var rng = SeededGenerator(seed: 22)
        for length in [0, 1, 55, 56, 63, 64, 65, 111, 112, 119, 127, 128, 129, 200, 257] {
            let data = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let w2 = SHA256.hash(data), w5 = SHA512.hash(data), wm = MD5.hash(data)
            for cut in 0...length {
                var s2 = SHA256(), s5 = SHA512(), m = MD5()
                for part in [data[0..<cut], data[cut...]] {
                    part.withUnsafeBytes { s2.update($0); s5.update($0); m.update($0) }
                }
                XCTAssertEqual(s2.finalize(), w2, "SHA-256 length \(length) cut \(cut)")
                XCTAssertEqual(s5.finalize(), w5, "SHA-512 length \(length) cut \(cut)")
                XCTAssertEqual(m.finalize(), wm, "MD5 length \(length) cut \(cut)")
            }
        }
    }

    /// finalize() starts the hasher over, and AnyDigest follows the algorithm it names.
    func testFinalizeResetsAndAnyDigest() {
        var s = SHA256()
        s.update(Array("junk".utf8))
        _ = s.finalize()
        s.update(Array("abc".utf8))
        XCTAssertEqual(hex(s.finalize()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        for (name, expected) in [("sha-256", SHA256.hash(Array("abc".utf8))), ("SHA-512", SHA512.hash(Array("abc".utf8))), ("md5", MD5.hash(Array("abc".utf8)))] {
            guard let alg = DigestAlgorithm(name: name) else { return XCTFail(name) }
            var d = AnyDigest(alg)
            Array("abc".utf8).withUnsafeBytes { d.update($0) }
            XCTAssertEqual(d.finalize(), expected, name)
            XCTAssertEqual(expected.count, alg.size)
        }
        XCTAssertNil(DigestAlgorithm(name: "sha-1"))
    }

    /// Random bodies of random lengths against Python's hashlib.
    func testRandomBodiesAgainstHashlib() throws {
        var rng = SeededGenerator(seed: 9530)
        var lines: [String] = []
        var bodies: [[UInt8]] = []
        for _ in 0..<40 {
            let n = Int.random(in: 0...5000, using: &rng)
            bodies.append((0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
        for b in bodies { lines.append(hex(b)) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("afs-digest-\(getpid()).txt")
        try lines.joined(separator: ",").write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
        import sys, hashlib
        for line in open(sys.argv[1]).read().split(','):
            b = bytes.fromhex(line)
            print(hashlib.sha256(b).hexdigest(), hashlib.sha512(b).hexdigest(), hashlib.md5(b).hexdigest())
        """
        let out = String(decoding: try runPython(["-c", script, file.path]), as: UTF8.self)
        let rows = out.split(separator: "\n")
        XCTAssertEqual(rows.count, bodies.count)
        for (b, row) in zip(bodies, rows) {
            let f = row.split(separator: " ").map(String.init)
            XCTAssertEqual(f, [hex(SHA256.hash(b)), hex(SHA512.hash(b)), hex(MD5.hash(b))], "length \(b.count)")
        }
    }
}
