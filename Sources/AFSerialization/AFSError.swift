/// The outcome of an operation, one-to-one with the C `afs_status` enum.
///
/// Raw values are pinned forever: new statuses are appended, never renumbered.
/// C: `afs_status`, `afs_status_name`.
public enum AFSStatus: Int32, Sendable, CaseIterable {
    case ok = 0
    case invalidArgument = 1
    case invalidUTF8 = 2
    case badURL = 3
    case invalidMethod = 4
    case invalidHeader = 5
    case invalidJSON = 6
    case invalidPlist = 7
    case encoding = 8
    case queryCallback = 9
    case file = 10
    case io = 11
    case lengthMismatch = 12
    case state = 13
    case unsupported = 14
    case noMemory = 15
    case unacceptableStatus = 16
    case unacceptableContentType = 17
    case invalidXML = 18
    case invalidImage = 19
    case untrusted = 20
    case badResponse = 21
    case limit = 22
    case invalidMultipart = 23

    /// The C enumerator's name, e.g. `"AFS_E_BAD_URL"`. C: `afs_status_name`.
    public var name: String {
        switch self {
        case .ok: return "AFS_OK"
        case .invalidArgument: return "AFS_E_INVALID_ARGUMENT"
        case .invalidUTF8: return "AFS_E_INVALID_UTF8"
        case .badURL: return "AFS_E_BAD_URL"
        case .invalidMethod: return "AFS_E_INVALID_METHOD"
        case .invalidHeader: return "AFS_E_INVALID_HEADER"
        case .invalidJSON: return "AFS_E_INVALID_JSON"
        case .invalidPlist: return "AFS_E_INVALID_PLIST"
        case .encoding: return "AFS_E_ENCODING"
        case .queryCallback: return "AFS_E_QUERY_CALLBACK"
        case .file: return "AFS_E_FILE"
        case .io: return "AFS_E_IO"
        case .lengthMismatch: return "AFS_E_LENGTH_MISMATCH"
        case .state: return "AFS_E_STATE"
        case .unsupported: return "AFS_E_UNSUPPORTED"
        case .noMemory: return "AFS_E_NO_MEMORY"
        case .unacceptableStatus: return "AFS_E_UNACCEPTABLE_STATUS"
        case .unacceptableContentType: return "AFS_E_UNACCEPTABLE_CONTENT_TYPE"
        case .invalidXML: return "AFS_E_INVALID_XML"
        case .invalidImage: return "AFS_E_INVALID_IMAGE"
        case .untrusted: return "AFS_E_UNTRUSTED"
        case .badResponse: return "AFS_E_BAD_RESPONSE"
        case .limit: return "AFS_E_LIMIT"
        case .invalidMultipart: return "AFS_E_INVALID_MULTIPART"
        }
    }
}

/// The one error type the core throws: a status, a message that names what was wrong and
/// where, and the OS `errno` when the OS reported one.
///
/// C: `afs_error` (filled by every fallible `afs_*` function).
public struct AFSError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: AFSStatus
    public var message: String
    /// `errno` as the OS reported it, or 0.
    public var osErrno: Int32

    public init(_ status: AFSStatus, _ message: String, osErrno: Int32 = 0) {
        self.status = status
        self.message = message
        self.osErrno = osErrno
    }

    public var description: String { "\(status.name): \(message)" }
}

extension AFSError {
    static func invalidArgument(_ message: String) -> AFSError { AFSError(.invalidArgument, message) }
    static func invalidUTF8(_ what: String, offset: Int) -> AFSError {
        AFSError(.invalidUTF8, "\(what) is not valid UTF-8 (at byte offset \(offset))")
    }
}
