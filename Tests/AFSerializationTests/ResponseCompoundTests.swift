import XCTest

@testable import AFSerialization

/// AFCompoundResponseSerializerTests, re-expressed; and the order in which members are tried.
final class ResponseCompoundSerializerTests: XCTestCase {
    let json = ResponseSerializer(kind: .json)
    let plist = ResponseSerializer(kind: .propertyList)
    let http = ResponseSerializer(kind: .http)

    // MARK: AFNetworking's tests (the image serializer is not ours: plist stands in for it)

    func testCompoundSerializerProperlySerializesResponse() throws {
        let compound = try ResponseSerializer(compound: [plist, json])
        let r = respond(compound, 200, "application/json", "{\"key\":\"value\"}")
        XCTAssertNil(r.error)
        XCTAssertEqual(r.value, ["key": "value"])
    }

    func testCompoundSerializerCanBeCopied() throws {
        let compound = try ResponseSerializer(compound: [plist, json])
        let copy = compound
        XCTAssertEqual(copy.members.count, 2)
        XCTAssertEqual(copy.members.map(\.kind), [.propertyList, .json])
        XCTAssertTrue(copy.isCompound)
        XCTAssertEqual(copy.kind, .http)
    }

    // MARK: Order

    func testThatTheFirstMemberThatAcceptsDecodes() throws {
        let jsonFirst = try ResponseSerializer(compound: [json, http])
        XCTAssertEqual(respond(jsonFirst, 200, "application/json", "[1]").value, [1])
        XCTAssertEqual(respond(jsonFirst, 200, "text/html", "<p>").value, .data(Array("<p>".utf8)))
        // The HTTP serializer accepts every type: first, it takes everything.
        let httpFirst = try ResponseSerializer(compound: [http, json])
        XCTAssertEqual(respond(httpFirst, 200, "application/json", "[1]").value, .data(Array("[1]".utf8)))
    }

    func testThatTheAcceptingMembersDecodingErrorIsTheOutcome() throws {
        // JSON accepts the response (validation passes), so its decoding decides: no fallback.
        let compound = try ResponseSerializer(compound: [json, http])
        let r = respond(compound, 200, "application/json", "{")
        XCTAssertNil(r.value)
        XCTAssertEqual(r.error?.status, .invalidJSON)
    }

    func testThatWhenNoneAcceptsTheFirstMembersErrorIsTheOutcome() throws {
        let compound = try ResponseSerializer(compound: [json, plist])
        let r = respond(compound, 200, "text/html", "<html>")
        XCTAssertNil(r.value)
        XCTAssertEqual(r.error, AFSError(.unacceptableContentType, "Request failed: unacceptable content-type: text/html"))
        XCTAssertEqual(validationError(compound, 200, "text/html", "<html>"), r.error)
        let reversed = try ResponseSerializer(compound: [plist, json])
        XCTAssertEqual(validationError(reversed, 200, "text/html", "<html>")?.message,
                       "Request failed: unacceptable content-type: text/html")
    }

    func testThatAnUnacceptableStatusGivesTheFirstMembersDecodedErrorDocument() throws {
        let compound = try ResponseSerializer(compound: [json, plist])
        let r = respond(compound, 500, "application/json", "{\"error\":\"boom\"}")
        XCTAssertEqual(r.error?.message, "Request failed: internal server error (500)")
        XCTAssertEqual(r.value, ["error": "boom"])
        // A member that accepts the status wins over the first member.
        var lenient = plist
        lenient.setAcceptableStatusCodes([200...599])
        let second = try ResponseSerializer(compound: [json, lenient])
        let p = respond(second, 500, "application/x-plist", "<plist><true/></plist>")
        XCTAssertNil(p.error)
        XCTAssertEqual(p.value, true)
    }

    func testThatWithAnUnacceptableStatusTheMemberThatTakesTheTypeDecodesTheErrorDocument() throws {
        // plist refuses the type, JSON only the status: JSON's outcome, as AFNetworking's
        // first non-nil response object would be.
        let compound = try ResponseSerializer(compound: [plist, json])
        let r = respond(compound, 500, "application/json", "{\"error\":\"boom\"}")
        XCTAssertEqual(r.error, AFSError(.unacceptableStatus, "Request failed: internal server error (500)"))
        XCTAssertEqual(r.value, ["error": "boom"])
        XCTAssertEqual(validationError(compound, 500, "application/json", "{}"), r.error)
        // Nobody takes the type: the first member's outcome, both failures named.
        let none = respond(compound, 500, "text/html", "<html>")
        XCTAssertNil(none.value)
        XCTAssertEqual(none.error?.message, "Request failed: internal server error (500); unacceptable content-type: text/html")
    }

    func testThatValidationPassesWhenAnyMemberPasses() throws {
        let compound = try ResponseSerializer(compound: [json, plist])
        XCTAssertNil(validationError(compound, 200, "application/x-plist", "x"))
        XCTAssertNil(validationError(compound, 200, "text/json", "x"))
    }

    // MARK: Construction and configuration

    func testThatACompoundNeedsMembers() {
        XCTAssertThrowsError(try ResponseSerializer(compound: [])) { e in
            XCTAssertEqual(e as? AFSError, AFSError(.invalidArgument, "a compound response serializer needs at least one member"))
        }
    }

    func testThatNestedCompoundsAreFlattenedInOrder() throws {
        let inner = try ResponseSerializer(compound: [plist, json])
        let outer = try ResponseSerializer(compound: [inner, http])
        XCTAssertEqual(outer.members.map(\.kind), [.propertyList, .json, .http])
        XCTAssertFalse(outer.members.contains { $0.isCompound })
    }

    func testThatSettingsOnACompoundReachEveryMember() throws {
        var compound = try ResponseSerializer(compound: [json, plist])
        compound.setAcceptableStatusCodes([200...499])
        compound.setRemovesKeysWithNullValues(true)
        try compound.setJSONReadingOptions(.fragmentsAllowed)
        try compound.setAcceptableContentTypes(["application/json", "application/x-plist"])
        for m in compound.members {
            XCTAssertEqual(m.acceptableStatusCodes, [200...499])
            XCTAssertTrue(m.removesKeysWithNullValues)
            XCTAssertEqual(m.jsonReadingOptions, .fragmentsAllowed)
            XCTAssertEqual(m.acceptableContentTypes, ["application/json", "application/x-plist"])
        }
        let r = respond(compound, 404, "application/json", "[null, 1]")
        XCTAssertNil(r.error)
        XCTAssertEqual(r.value, [1])
    }
}
