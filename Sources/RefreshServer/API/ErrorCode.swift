import HTTPTypes

/// Every code an error body's `error` holds (`{"error": CODE, "message": TEXT}`), with the
/// status it is sent with. Clients branch on these, so they never change once published;
/// `Public/openapi.yaml` lists them as the `enum` of `Error.error`, and a test holds the two
/// to each other.
public enum ErrorCode: String, CaseIterable, Sendable, CustomStringConvertible {
    // The request as bytes, refused by the connection layer.
    /// The request is not HTTP/1.1 a server may read.
    case malformedRequest = "malformed_request"
    /// `Content-Length` and `Transfer-Encoding` both, or several lengths.
    case conflictingFraming = "conflicting_framing"
    /// No `Host`, or more than one.
    case badHost = "bad_host"
    /// More than one `Origin`.
    case badOrigin = "bad_origin"
    /// A `Host` this server does not answer to (`--public-host` adds names).
    case unknownHost = "unknown_host"
    /// A page of another origin trying to change state (`--cors-origin` allows origins).
    case crossOrigin = "cross_origin"
    /// The request head is larger than the server reads.
    case headTooLarge = "head_too_large"
    /// The body is larger than the route takes.
    case bodyTooLarge = "body_too_large"
    /// The request did not arrive whole in time.
    case requestTimeout = "request_timeout"
    /// A body that is not `application/json`.
    case unsupportedMediaType = "unsupported_media_type"
    /// A transfer coding other than `chunked`.
    case unsupportedTransferEncoding = "unsupported_transfer_encoding"
    /// An `Expect` other than `100-continue`.
    case unsupportedExpectation = "unsupported_expectation"
    /// An event stream asked for over HTTP/1.0.
    case httpVersionNotSupported = "http_version_not_supported"
    /// The path does not have the method.
    case methodNotAllowed = "method_not_allowed"

    // The body, read as the route's JSON.
    /// Not JSON at all.
    case malformedJSON = "malformed_json"
    /// A field of the wrong JSON type.
    case invalidType = "invalid_type"
    /// A required field left out.
    case missingField = "missing_field"
    /// A field whose value the route does not take.
    case invalidValue = "invalid_value"
    /// A number outside what the field takes.
    case outOfRange = "out_of_range"
    /// A feed name that is not one.
    case invalidFeed = "invalid_feed"
    /// A static file's path that could escape the folder.
    case invalidPath = "invalid_path"
    /// An `If-Match` that is not an item's version.
    case invalidPrecondition = "invalid_precondition"

    // Who may ask.
    /// Publishing needs the publish token.
    case unauthorized
    /// The bearer token is not valid here (signature, time, issuer, audience, feed).
    case invalidToken = "invalid_token"
    /// A valid token without the right this request needs.
    case insufficientScope = "insufficient_scope"
    /// The server takes no publishes, or not from where this one came.
    case publishingDisabled = "publishing_disabled"

    // What is not there, or not now.
    /// Nothing at the path.
    case notFound = "not_found"
    /// The session ended, expired, or is not the requester's to follow.
    case sessionNotFound = "session_not_found"
    /// The store holds no such feed.
    case feedNotFound = "feed_not_found"
    /// The feed holds no item of that id.
    case itemNotFound = "item_not_found"
    /// A refresh runs; it resets paging, so a load-more waits for it.
    case refreshRunning = "refresh_running"
    /// An edit met another edit of the same item; read it and try again.
    case editConflict = "edit_conflict"
    /// The item is not at the version `If-Match` names: nothing was changed.
    case preconditionFailed = "precondition_failed"

    // Limits and load.
    /// The session's sample budget is spent for now (`Retry-After`).
    case rateLimited = "rate_limited"
    /// More samples in one request than a request carries.
    case tooManySamples = "too_many_samples"
    /// The client holds as many sessions as one client may.
    case tooManySessionsForClient = "too_many_sessions_for_client"
    /// The server holds as many sessions as it may.
    case tooManySessions = "too_many_sessions"

    // The server's side.
    /// The feed store cannot be reached or failed; the same request may succeed shortly.
    case storeUnavailable = "store_unavailable"
    /// The other instances' news cannot be heard (`/readyz`).
    case notificationsUnavailable = "notifications_unavailable"
    /// Another HTTP error of the framework, with its own status.
    case httpError = "http_error"
    /// The server failed; the error is logged.
    case internalError = "internal_error"

    // Sent by the front in `deploy/nginx.conf`, never by an instance.
    /// The front serves this only to its own host (the metrics).
    case forbidden
    /// No instance behind the front answers.
    case unavailable

    /// The code as it is written on the wire and in the logs.
    public var description: String { rawValue }

    /// The status the code is sent with (`http_error` takes the status of the error it
    /// stands for; this is its default).
    public var status: HTTPResponse.Status {
        switch self {
        case .malformedRequest, .conflictingFraming, .badHost, .badOrigin, .malformedJSON, .invalidType, .missingField, .invalidValue,
            .invalidFeed, .invalidPath, .invalidPrecondition, .httpError:
            .badRequest
        case .unknownHost: .misdirectedRequest
        case .crossOrigin, .insufficientScope, .publishingDisabled, .forbidden: .forbidden
        case .headTooLarge: .requestHeaderFieldsTooLarge
        case .bodyTooLarge: .contentTooLarge
        case .requestTimeout: .requestTimeout
        case .unsupportedMediaType: .unsupportedMediaType
        case .unsupportedTransferEncoding: .notImplemented
        case .unsupportedExpectation: .expectationFailed
        case .httpVersionNotSupported: .httpVersionNotSupported
        case .methodNotAllowed: .methodNotAllowed
        case .outOfRange: .unprocessableContent
        case .unauthorized, .invalidToken: .unauthorized
        case .notFound, .sessionNotFound, .feedNotFound, .itemNotFound: .notFound
        case .refreshRunning, .editConflict: .conflict
        case .preconditionFailed: .preconditionFailed
        case .rateLimited, .tooManySamples, .tooManySessionsForClient: .tooManyRequests
        case .tooManySessions, .storeUnavailable, .notificationsUnavailable, .unavailable: .serviceUnavailable
        case .internalError: .internalServerError
        }
    }
}
