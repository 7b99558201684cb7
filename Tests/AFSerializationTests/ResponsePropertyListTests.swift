import Foundation
import XCTest

@testable import AFSerialization

/// AFPropertyListResponseSerializerTests, re-expressed; and the property-list response
/// serializer decoding what Python's plistlib writes, in XML and binary.
final class ResponsePropertyListSerializerTests: XCTestCase {
    let serializer = ResponseSerializer(kind: .propertyList)

    // MARK: AFNetworking's tests

    func testThatPropertyListResponseSerializerHandles204() {
        let r = respond(serializer, 204, "application/x-plist", "")
        XCTAssertNil(r.value)
        XCTAssertNil(r.error)
    }

    func testResponseSerializerCanBeCopied() throws {
        var s = serializer
        try s.setAcceptableContentTypes(["application/x-plist", "application/octet-stream"])
        var copy = s
        try copy.setAcceptableContentTypes(nil)
        XCTAssertEqual(s.acceptableContentTypes, ["application/x-plist", "application/octet-stream"])
        XCTAssertNil(copy.acceptableContentTypes)
        XCTAssertEqual(copy.kind, .propertyList)
    }

    // MARK: Validation and decoding

    func testThatPropertyListResponseSerializerAcceptsOnlyItsMIMEType() {
        XCTAssertEqual(serializer.acceptableContentTypes, ["application/x-plist"])
        XCTAssertNil(validationError(serializer, 200, "application/x-plist", "<plist/>"))
        XCTAssertEqual(validationError(serializer, 200, "application/xml", "<plist/>"),
                       AFSError(.unacceptableContentType, "Request failed: unacceptable content-type: application/xml"))
    }

    func testThatXMLAndBinaryPropertyListsDecode() {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>foo</key>
            \t<string>bar</string>
            </dict>
            </plist>
            """
        let r = respond(serializer, 200, "application/x-plist", xml)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.value, ["foo": "bar"])
        // {"foo": "bar"} as bplist00 (what plistlib and Foundation write).
        let binary: [UInt8] = Array("bplist00".utf8) + [0xD1, 0x01, 0x02, 0x53] + Array("foo".utf8) + [0x53] + Array("bar".utf8)
            + [0x08, 0x0B, 0x0F] + [UInt8](repeating: 0, count: 6) + [1, 1] + [0, 0, 0, 0, 0, 0, 0, 3]
            + [0, 0, 0, 0, 0, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, 0x13]
        let b = serializer.responseObject(statusCode: 200, contentType: "application/x-plist", body: binary)
        XCTAssertNil(b.error)
        XCTAssertEqual(b.value, ["foo": "bar"])
    }

    func testThatASingleSpaceIsNoObject() {
        let r = respond(serializer, 200, "application/x-plist", " ")
        XCTAssertNil(r.value)
        XCTAssertNil(r.error)
    }

    func testThatMalformedPropertyListsAreErrorsWithTheirOffset() {
        let r = respond(serializer, 200, "application/x-plist", "<plist><dict><key>a</key></dict></plist>")
        XCTAssertNil(r.value)
        XCTAssertEqual(r.error?.status, .invalidPlist)
        XCTAssertTrue(r.error?.message.contains("at byte offset") ?? false, r.error?.message ?? "")
        let truncated = respond(serializer, 200, "application/x-plist", "bplist00\u{D1}")
        XCTAssertEqual(truncated.error?.status, .invalidPlist)
    }

    func testThatAnUnacceptableStatusStillDecodesThePropertyList() {
        let r = respond(serializer, 409, "application/x-plist", "<plist><array><integer>7</integer></array></plist>")
        XCTAssertEqual(r.error, AFSError(.unacceptableStatus, "Request failed: conflict (409)"))
        XCTAssertEqual(r.value, [7])
    }

    func testThatDeepPropertyListsAreErrorsNotCrashes() {
        let deep = "<plist>" + String(repeating: "<array>", count: 100_000) + "</plist>"
        XCTAssertEqual(respond(serializer, 200, "application/x-plist", deep).error?.status, .invalidPlist)
    }

    // MARK: plistlib

    /// One Python run writes every case in both formats, with the expected tree in tagged JSON.
    func testThatWhatPlistlibWritesDecodesInBothFormats() throws {
        let out = try runPython(["-c", plistlibCases])
        var cases = 0
        for line in String(decoding: out, as: UTF8.self).split(separator: "\n") {
            let record = try JSONParser.parse(String(line))
            guard case .dict(let d) = record, case .string(let name)? = d["name"], let tagged = d["expect"] else {
                return XCTFail("bad record \(line.prefix(200))")
            }
            let expected = try untag(tagged)
            for format in ["xml", "bin"] {
                guard case .string(let b64)? = d[format], let data = Data(base64Encoded: b64) else {
                    return XCTFail("\(name): no \(format)")
                }
                let r = serializer.responseObject(statusCode: 200, contentType: "application/x-plist", body: [UInt8](data))
                XCTAssertNil(r.error, "\(name) \(format): \(r.error?.message ?? "")")
                XCTAssertEqual(r.value, expected, "\(name) \(format)")
            }
            cases += 1
        }
        XCTAssertGreaterThanOrEqual(cases, 60)
    }

    // MARK: Helpers

    /// The tagged JSON the script writes (`{"t": kind, "v": ...}`) as the expected value.
    private func untag(_ v: Value) throws -> Value {
        guard case .dict(let d) = v, case .string(let t)? = d["t"], let x = d["v"] else { throw AFSError(.invalidArgument, "bad tag") }
        switch (t, x) {
        case ("bool", .bool(let b)): return .bool(b)
        case ("int", .string(let s)): return Int64(s).map(Value.int) ?? .double(Double(s)!)
        case ("real", .string(let s)): return .double(Double(s)!)
        case ("str", .string(let s)): return .string(s)
        case ("date", .string(let s)): return DateText.parse(Array(s.utf8)).map(Value.date) ?? .null
        case ("data", .string(let s)): return .data([UInt8](Data(base64Encoded: s)!))
        case ("array", .array(let a)): return .array(try a.map(untag))
        case ("dict", .array(let pairs)):
            var out = ValueDict()
            for p in pairs {
                guard case .array(let kv) = p, kv.count == 2, case .string(let k) = kv[0] else { throw AFSError(.invalidArgument, "bad pair") }
                out[k] = try untag(kv[1])
            }
            return .dict(out)
        default: throw AFSError(.invalidArgument, "bad tag \(t)")
        }
    }
}

/// Writes each case as one JSON line: name, base64 XML, base64 binary, expected tree tagged
/// by kind (ints as text, so that 2^63..2^64-1 survive; dates as ISO text, read as dates).
private let plistlibCases = #"""
import base64, datetime, json, plistlib, random

def tag(v):
    if isinstance(v, bool): return {"t": "bool", "v": v}
    if isinstance(v, int): return {"t": "int", "v": str(v)}
    if isinstance(v, float): return {"t": "real", "v": repr(v)}
    if isinstance(v, str): return {"t": "str", "v": v}
    if isinstance(v, bytes): return {"t": "data", "v": base64.b64encode(v).decode()}
    if isinstance(v, datetime.datetime): return {"t": "date", "v": v.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if isinstance(v, list): return {"t": "array", "v": [tag(x) for x in v]}
    if isinstance(v, dict): return {"t": "dict", "v": [[k, tag(x)] for k, x in v.items()]}
    raise TypeError(type(v))

pieces = ["a", "Zz", " ", "key", "\u00e9", "e\u0301", "\u65e5\u672c\u8a9e", "\U0001F600", "&", "<", ">", '"', "'",
          "\n", "\t", "]]>", "\u2028", "\U0010FFFF", "\uFFFD", "\uE000", "x" * 40]
rng = random.Random(20261121)

def text():
    return "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 6)))

def scalar():
    k = rng.randrange(8)
    if k == 0: return text()
    if k == 1: return rng.randrange(-2**63, 2**64)
    if k == 2: return rng.choice([0, 1, -1, 255, 256, 65535, 65536, 2**31, 2**32, 2**63 - 1, -2**63, 2**63, 2**64 - 1])
    if k == 3: return rng.choice([0.0, -0.0, 0.1, 1.5, -2.25, 1e300, 5e-324, float("inf"), float("-inf"), rng.random() * 1e6])
    if k == 4: return rng.random() < 0.5
    if k == 5: return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 70)))
    if k == 6: return datetime.datetime(rng.randrange(1900, 2100), rng.randrange(1, 13), rng.randrange(1, 29),
                                       rng.randrange(24), rng.randrange(60), rng.randrange(60))
    return ""

def tree(depth):
    k = rng.randrange(4) if depth > 0 else 3
    if k == 0: return [tree(depth - 1) for _ in range(rng.randrange(0, 6))]
    if k == 1: return {text() + str(i): tree(depth - 1) for i in range(rng.randrange(0, 6))}
    return scalar()

cases = [
    ("foo bar", {"foo": "bar"}),
    ("empty dict", {}), ("empty array", []), ("empty string", ""), ("empty data", b""),
    ("scalars", [True, False, 0, -1, 2**63 - 1, -2**63, 2**63, 2**64 - 1, 0.5, float("nan"), "x", b"\x00\xff"]),
    ("unicode keys", {"\u00e9": 1, "e\u0301": 2, "\U0001F600": 3, "\u65e5": 4, "": 5}),
    ("date", datetime.datetime(2001, 1, 1, 0, 0, 0)),
    ("deep", [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["bottom"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]),
    ("wide", list(range(5000))),
    ("big data", bytes(range(256)) * 400),
    ("many strings", {str(i): "v" * (i % 50) for i in range(2000)}),
]
for i in range(60):
    cases.append(("random %d" % i, tree(4)))
for name, v in cases:
    print(json.dumps({"name": name,
                      "xml": base64.b64encode(plistlib.dumps(v, fmt=plistlib.FMT_XML)).decode(),
                      "bin": base64.b64encode(plistlib.dumps(v, fmt=plistlib.FMT_BINARY)).decode(),
                      "expect": tag(v)}))
"""#
