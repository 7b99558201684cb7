import XCTest

@testable import AFSerialization

/// What a response serializer gives for a response: shared by the Response*Tests.
func respond(_ s: ResponseSerializer, _ status: Int = 200, _ contentType: String?, _ body: String)
    -> ResponseSerializer.Outcome
{
    s.responseObject(statusCode: status, contentType: contentType, body: Array(body.utf8))
}

/// The validation error for a response, or nil when it passes.
func validationError(_ s: ResponseSerializer, _ status: Int = 200, _ contentType: String?, _ body: String) -> AFSError? {
    do {
        try s.validate(statusCode: status, contentType: contentType, body: Array(body.utf8))
        return nil
    } catch {
        return error as? AFSError
    }
}

/// The JSON text AFNetworking's tests use (`AFJSONTestData`).
let jsonTestData = "{\"foo\":\"bar\"}"
