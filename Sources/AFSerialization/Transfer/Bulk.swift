/// One call in each direction for bindings whose every foreign call is expensive (Python's
/// ctypes, cffi, Go's cgo): parameters arrive as one pickle, a request goes back as one
/// snapshot, a response as one pickle of the decoded document.

extension RequestSerializer {
    /// `request(method:url:params:)` with the parameters as a pickle (`PickleReader`);
    /// an empty `pickledParams` means no parameters.
    /// C: `afs_serializer_request_pickle`.
    public func request(method: String, url: String, pickledParams: UnsafeBufferPointer<UInt8>) throws -> Request {
        // Not `nil` in a conditional: `Value` is ExpressibleByNilLiteral (it would be .null).
        var params: Value? = Optional.none
        if !pickledParams.isEmpty { params = try PickleReader.read(pickledParams) }
        // The parameters go once the request is made: released without deep recursion.
        defer {
            if var p = params {
                params = Optional.none
                Value.releaseDeep(&p)
            }
        }
        return try request(method: method, url: url, params: params)
    }
}

extension ResponseSerializer {
    /// The outcome of `responseObject` with the document written as a pickle
    /// (`PickleWriter`, `malloc` memory the caller frees): nil for no object.
    public struct PickledOutcome {
        public var pickle: (UnsafeMutablePointer<UInt8>, Int)?
        public var error: AFSError?
    }

    /// `responseObject(statusCode:contentType:body:)` with the decoded document (also the
    /// error document of an unacceptable status) written as a pickle.
    /// C: `afs_response_object_pickle`.
    ///
    /// A JSON serializer without `removesKeysWithNullValues` writes the pickle straight
    /// from the text (`JSONToPickle`: same acceptance and errors, integers beyond int64
    /// exact); the others decode the tree and write it (`PickleWriter`).
    public func responseObjectPickle(statusCode: Int, contentType: String?, body: UnsafeBufferPointer<UInt8>,
                                     method: String? = nil) -> PickledOutcome {
        let (leaf, v) = decodingLeaf(statusCode, contentType, body.count)
        let text = leaf.withoutXSSIPrefix(body)
        let bom = text.count >= 3 && text[0] == 0xEF && text[1] == 0xBB && text[2] == 0xBF
        if leaf.readsJSONAsIs(v) && !bom && !body.isEmpty {
            if text.count == 1 && text[0] == 0x20 { return PickledOutcome(pickle: nil, error: v.error) }
            let fragments = leaf.jsonReadingOptions.contains(.fragmentsAllowed)
            if let p = try? JSONToPickle.transcode(text, allowFragments: fragments) {
                return PickledOutcome(pickle: p, error: v.error)
            }
            // Malformed: the tree path below reports it (the same error, message for message).
        }
        var r = leaf.decode(v, body, method: method)
        guard var value = r.value else { return PickledOutcome(pickle: nil, error: r.error) }
        r.value = Optional.none  // the tree is held once, by `value`
        // The tree goes once it is written: released without deep recursion.
        defer { Value.releaseDeep(&value) }
        do {
            return PickledOutcome(pickle: try PickleWriter.mallocPickle(value), error: r.error)
        } catch {
            return PickledOutcome(pickle: nil, error: (error as? AFSError) ?? AFSError(.invalidArgument, "\(error)"))
        }
    }
}
