import XCTest

@testable import AFSerialization

/// AFJSONSerializationTests (the response part), re-expressed; then what a JSON response
/// serializer must get exactly right: Unicode, integers, nesting, null removal, errors.
final class ResponseJSONSerializerTests: XCTestCase {
    let serializer = ResponseSerializer(kind: .json)

    // MARK: AFNetworking's tests

    func testThatJSONResponseSerializerAcceptsApplicationJSONMimeType() {
        XCTAssertNil(validationError(serializer, 200, "application/json", jsonTestData))
    }

    func testThatJSONResponseSerializerAcceptsTextJSONMimeType() {
        XCTAssertNil(validationError(serializer, 200, "text/json", jsonTestData))
    }

    func testThatJSONResponseSerializerAcceptsTextJavaScriptMimeType() {
        XCTAssertNil(validationError(serializer, 200, "text/javascript", jsonTestData))
    }

    func testThatJSONResponseSerializerDoesNotAcceptNonStandardJSONMimeType() {
        let e = validationError(serializer, 200, "nonstandard/json", jsonTestData)
        XCTAssertEqual(e, AFSError(.unacceptableContentType, "Request failed: unacceptable content-type: nonstandard/json"))
    }

    func testThatJSONResponseSerializerReturnsDictionaryForValidJSONDictionary() {
        let r = respond(serializer, 200, "text/json", jsonTestData)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.value, ["foo": "bar"])
    }

    func testThatJSONResponseSerializerReturnsErrorForInvalidJSON() {
        let r = respond(serializer, 200, "text/json", "{invalid}")
        XCTAssertNil(r.value)
        XCTAssertEqual(r.error, AFSError(.invalidJSON, "expected a string key or '}', found 'i' at byte offset 1"))
    }

    func testThatJSONResponseSerializerReturnsNilObjectAndNilErrorForEmptyData() {
        let r = respond(serializer, 200, "text/json", "")
        XCTAssertNil(r.value)
        XCTAssertNil(r.error)
    }

    func testThatJSONResponseSerializerReturnsNilObjectAndNilErrorForSingleSpace() {
        let r = respond(serializer, 200, "text/json", " ")
        XCTAssertNil(r.value)
        XCTAssertNil(r.error)
        // Only exactly one space: two spaces are malformed JSON.
        XCTAssertEqual(respond(serializer, 200, "text/json", "  ").error?.status, .invalidJSON)
    }

    func testThatJSONRemovesKeysWithNullValues() {
        var s = serializer
        s.setRemovesKeysWithNullValues(true)
        let r = respond(s, 200, "text/json", #"{"key":"value","nullkey":null,"array":[{"subnullkey":null}]}"#)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.value, ["key": "value", "array": [[:]]])
    }

    func testThatJSONResponseSerializerCanBeCopied() throws {
        var s = serializer
        s.setRemovesKeysWithNullValues(true)
        try s.setJSONReadingOptions(.fragmentsAllowed)
        var copy = s
        copy.setRemovesKeysWithNullValues(false)
        XCTAssertTrue(s.removesKeysWithNullValues)
        XCTAssertEqual(copy.jsonReadingOptions, .fragmentsAllowed)
        XCTAssertEqual(copy.acceptableContentTypes, ["application/json", "text/json", "text/javascript"])
    }

    // MARK: Null removal

    func testThatNullsAreRemovedFromNestedArraysAndDictionaries() {
        var s = serializer
        s.setRemovesKeysWithNullValues(true)
        let text = #"""
            {"a":[null,1,[null,[null,{"b":null,"c":[null]}]],{"d":null}],"e":null,"f":{"g":{"h":null,"i":0}},"j":[null]}
            """#
        XCTAssertEqual(respond(s, 200, "application/json", text).value,
                       ["a": [1, [[["c": []]]], [:]], "f": ["g": ["i": 0]], "j": []])
    }

    func testThatNullRemovalKeepsOrderAndLeavesCleanSubtreesAlone() throws {
        let clean: Value = ["z": 1, "a": [1, 2, ["q": "r"]], "m": ["x": true]]
        XCTAssertNil(try ResponseSerializer.removingNulls(clean), "nothing to remove: nothing rebuilt")
        guard case .dict(let d)? = try ResponseSerializer.removingNulls(["z": 1, "n": nil, "a": 2, "m": [nil, 3]]) else {
            return XCTFail("expected a dictionary")
        }
        XCTAssertEqual(d.keys, ["z", "a", "m"])
        XCTAssertEqual(d["m"], [3])
    }

    func testThatATopLevelNullIsKeptWithFragments() throws {
        var s = serializer
        s.setRemovesKeysWithNullValues(true)
        try s.setJSONReadingOptions(.fragmentsAllowed)
        XCTAssertEqual(respond(s, 200, "application/json", "null").value, .null)
    }

    func testThatNullsStayWithoutTheOption() {
        XCTAssertEqual(respond(serializer, 200, "application/json", "[null,{\"a\":null}]").value, [nil, ["a": nil]])
    }

    // MARK: Reading options

    func testThatFragmentsNeedTheOption() throws {
        let r = respond(serializer, 200, "application/json", "\"text\"")
        XCTAssertEqual(r.error?.status, .invalidJSON)
        XCTAssertEqual(r.error?.message,
                       "expected '{' or '[' (a scalar top-level value is not allowed without fragments), found '\"' at byte offset 0")
        var s = serializer
        try s.setJSONReadingOptions([.fragmentsAllowed, .mutableContainers, .mutableLeaves])
        XCTAssertEqual(respond(s, 200, "application/json", "\"text\"").value, "text")
        XCTAssertEqual(respond(s, 200, "application/json", " 42 ").value, 42)
        XCTAssertEqual(respond(s, 200, "application/json", "true").value, true)
    }

    func testThatUnknownReadingOptionsAreRefused() {
        var s = serializer
        XCTAssertThrowsError(try s.setJSONReadingOptions(JSONReadingOptions(rawValue: 8 | 4))) { e in
            XCTAssertEqual((e as? AFSError)?.status, .invalidArgument)
            XCTAssertTrue((e as? AFSError)?.message.hasPrefix("unsupported JSON reading options 0x8 ") ?? false)
        }
        XCTAssertEqual(s.jsonReadingOptions, [])
    }

    // MARK: Validation and decoding together

    func testThatAnUnacceptableStatusStillDecodesTheErrorDocument() {
        let r = respond(serializer, 422, "application/json; charset=utf-8", #"{"error":"name is taken"}"#)
        XCTAssertEqual(r.error, AFSError(.unacceptableStatus, "Request failed: unprocessable content (422)"))
        XCTAssertEqual(r.value, ["error": "name is taken"])
    }

    func testThatAnUndecodableErrorDocumentIsNamedInTheStatusError() {
        let r = respond(serializer, 502, "application/json", "<html>")
        XCTAssertNil(r.value)
        XCTAssertEqual(r.error, AFSError(.unacceptableStatus,
            "Request failed: bad gateway (502); the body could not be decoded: expected '{' or '[' (a scalar top-level value is not allowed without fragments), found '<' at byte offset 0"))
        // An empty error body is no object and just the status error.
        let empty = respond(serializer, 404, "application/json", "")
        XCTAssertNil(empty.value)
        XCTAssertEqual(empty.error?.message, "Request failed: not found (404)")
    }

    func testThatNothingIsDecodedForAnUnacceptableContentType() {
        let r = respond(serializer, 200, "text/html", "{\"a\":1}")
        XCTAssertNil(r.value)
        XCTAssertEqual(r.error?.status, .unacceptableContentType)
        // Nor is a malformed body looked at.
        XCTAssertEqual(respond(serializer, 200, "text/html", "{").error?.status, .unacceptableContentType)
    }

    func testThatAnAbsentContentTypeWithABodyIsRefused() {
        XCTAssertEqual(respond(serializer, 200, nil, "{}").error?.message, "Request failed: unacceptable content-type: (none)")
        XCTAssertNil(respond(serializer, 204, nil, "").error)
    }

    // MARK: Exact decoding

    func testThatUnicodeEscapesAndSurrogatePairsDecode() {
        let r = respond(serializer, 200, "application/json",
                        #"["\u00e9","\u65e5\u672c","\ud83d\ude00","\uD834\uDD1E","\u0000","é😀","\/\b\f\n\r\t\"\\"]"#)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.value, ["é", "日本", "😀", "𝄞", "\u{0}", "é😀", "/\u{8}\u{C}\n\r\t\"\\"])
    }

    func testThatLoneSurrogatesAreErrors() {
        for (text, offset) in [(#"["\ud83d"]"#, 2), (#"["\ude00"]"#, 2), (#"["a\ud83d\u0041"]"#, 3)] {
            let e = respond(serializer, 200, "application/json", text).error
            XCTAssertEqual(e?.status, .invalidJSON, text)
            XCTAssertTrue(e?.message.hasSuffix("at byte offset \(offset)") ?? false, "\(text): \(e?.message ?? "")")
        }
    }

    func testThatIntegersWithinInt64StayIntegersAndOthersBecomeDoubles() {
        let text = "[9223372036854775807,-9223372036854775808,9223372036854775808,-9223372036854775809,18446744073709551616,0,-0,1.0,1e2,123456789012345678901234567890]"
        XCTAssertEqual(respond(serializer, 200, "application/json", text).value, [
            .int(Int64.max), .int(Int64.min), .double(9223372036854775808.0), .double(-9223372036854775809.0),
            .double(18446744073709551616.0), .int(0), .double(-0.0), .double(1), .double(100),
            .double(123456789012345678901234567890.0),
        ])
    }

    func testThatDeepNestingIsAnErrorNotACrash() {
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        XCTAssertNil(respond(serializer, 200, "application/json", ok).error)
        let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        XCTAssertEqual(respond(serializer, 200, "application/json", deep).error,
                       AFSError(.invalidJSON, "nesting deeper than 512 levels at byte offset 512"))
        let huge = String(repeating: "{\"a\":", count: 100_000)
        XCTAssertEqual(respond(serializer, 200, "application/json", huge).error?.status, .invalidJSON)
    }

    func testThatAByteOrderMarkIsSkippedAndOffsetsStillCountIt() {
        let bom = "\u{FEFF}"
        XCTAssertEqual(respond(serializer, 200, "application/json", bom + "{\"a\":1}").value, ["a": 1])
        XCTAssertEqual(respond(serializer, 200, "application/json", bom + "[1,]").error,
                       AFSError(.invalidJSON, "expected a JSON value, found ']' at byte offset 6"))
        XCTAssertEqual(respond(serializer, 200, "application/json", bom + "[\"abc").error?.message,
                       "unterminated string (opened at byte offset 4): expected '\"', found the end of the input at byte offset 8")
        XCTAssertEqual(respond(serializer, 200, "application/json", bom).error,
                       AFSError(.invalidJSON, "no JSON value: the input is only a byte order mark and whitespace at byte offset 3"))
    }

    func testThatInvalidUTF8IsAnErrorWithItsOffset() {
        let body: [UInt8] = Array("[\"ab".utf8) + [0xC3, 0x28] + Array("\"]".utf8)
        let r = serializer.responseObject(statusCode: 200, contentType: "application/json", body: body)
        XCTAssertEqual(r.error?.status, .invalidJSON)
        XCTAssertTrue(r.error?.message.hasSuffix("at byte offset 4") ?? false, r.error?.message ?? "")
    }

    func testThatWhatTheWriterWritesReadsBack() throws {
        let tree: Value = [
            "s": "a/b \"q\" \u{1} é 😀", "i": .int(Int64.min), "d": 0.1, "big": 1e300, "t": true, "f": false,
            "n": nil, "a": [1, [2, [3, [:]]], []], "o": ["nested": ["deeper": "x"]],
        ]
        for options: JSONWritingOptions in [[], [.prettyPrinted], [.sortedKeys, .withoutEscapingSlashes]] {
            var w = ByteWriter()
            try JSONWriter.write(tree, options: options, to: &w)
            let r = serializer.responseObject(statusCode: 200, contentType: "application/json", body: try w.toArray())
            XCTAssertNil(r.error)
            XCTAssertEqual(r.value, tree)
        }
    }
}
