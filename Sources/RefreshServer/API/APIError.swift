import HTTPTypes
import Logging
import NIOHTTP1
import RefreshJSON

/// A request the server refuses, with the status, a stable machine-readable code and a
/// sentence for people. Every error body is `{"error": CODE, "message": TEXT}`.
public struct APIError: Error, Sendable, Equatable {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    /// Seconds after which a refused request may succeed (`Retry-After`).
    public var retryAfter: Int?
    /// The methods the path has, for a `405` (`Allow`).
    public var allow: String?
    /// The challenge of a refused token (`WWW-Authenticate`, RFC 6750 §3).
    public var wwwAuthenticate: String?

    public init(
        _ status: HTTPResponse.Status, _ code: String, _ message: String, retryAfter: Int? = nil, allow: String? = nil,
        wwwAuthenticate: String? = nil
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.allow = allow
        self.wwwAuthenticate = wwwAuthenticate
    }

    /// One line per refused request, wherever it was answered, with the session's id as
    /// metadata when the path names one.
    /// `requestID` is the request's `X-Request-ID` (a front such as nginx sets one, so its
    /// access log and this line can be matched); without one, a fresh id still tells this
    /// refusal's line from the others.
    func logRefusal(method: some CustomStringConvertible, path: String, requestID: String?, logger: Logger) {
        var metadata: Logger.Metadata = ["request": .string(RequestID.valid(requestID) ?? RequestID.make())]
        if let session = RouteTable.session(in: path) {
            metadata["session"] = .string(session.escapedForLog)
        }
        // The path and the message may hold what the client sent (a decoded `%0A`, an id from
        // the query): escaped, they stay on this one line.
        logger.notice("refused \(method) \(path.escapedForLog): \(status.code) \(code): \(message.escapedForLog)", metadata: metadata)
    }

    static func malformedJSON(_ reason: String) -> Self {
        Self(.badRequest, "malformed_json", "The body is not valid JSON: \(reason).")
    }

    public static func wrongType(_ path: String, expected: String, got: JSONValue) -> Self {
        Self(.badRequest, "invalid_type", "\(path) must be \(expected), not \(got.typeName).")
    }

    public static func missing(_ path: String, expected: String) -> Self {
        Self(.badRequest, "missing_field", "\(path) is required (\(expected)).")
    }

    public static func invalid(_ path: String, _ reason: String) -> Self {
        Self(.badRequest, "invalid_value", "\(path) \(reason).")
    }

    static func outOfRange(_ message: String) -> Self {
        Self(.unprocessableContent, "out_of_range", message)
    }

    /// A whole number beyond what a JSON number carries exactly.
    public static func inexactInteger(_ path: String) -> Self {
        outOfRange("\(path) must be from -9007199254740991 to 9007199254740991 (2^53 − 1): a JSON number beyond is not exact.")
    }

    static func sessionNotFound(_ id: String) -> Self {
        Self(.notFound, "session_not_found", "No session \(id): it ended or expired. Create a new one.")
    }

    /// A session a shared stream may not carry: it does not exist, or the request may not
    /// read it; the same answer for both, so that it tells nothing of another client's.
    static func sharedSessionNotFound(_ id: String) -> Self {
        Self(.notFound, "session_not_found", "No session \(id) that this request may follow: it ended, expired or is not yours.")
    }

    static func bodyTooLarge(limit: Int) -> Self {
        Self(.contentTooLarge, "body_too_large", "The body exceeds the limit of \(limit) bytes.")
    }

    // MARK: - Refusals of the connection layer

    static let streamNeedsHTTP11 = Self(
        .httpVersionNotSupported, "http_version_not_supported", "An event stream needs HTTP/1.1 (its body is chunked).")

    static let requestTimeout = Self(.requestTimeout, "request_timeout", "The request did not arrive in time.")

    static func malformed(_ error: HTTPParserError) -> Self {
        if case .headerOverflow = error {
            return Self(.requestHeaderFieldsTooLarge, "head_too_large", "The request head is too large.")
        }
        let detail: String? =
            switch error {
            case .invalidHeaderToken: "a header field is malformed"
            // The parser names the first thing it could not read, not why: a request line
            // ending in a bare LF reads as a bad version, a Content-Length beside
            // `Transfer-Encoding: identity` as a bad length, two of them as an unexpected one.
            case .invalidVersion: "its request line does not end in HTTP/1.0 or HTTP/1.1 and CRLF"
            case .invalidMethod: "its method is malformed"
            case .invalidURL: "its target is malformed"
            case .invalidContentLength, .unexpectedContentLength:
                "its Content-Length is not one length, or comes with Transfer-Encoding"
            case .invalidChunkSize: "a chunk size is malformed"
            case .invalidEOFState: "the connection closed in the middle of it"
            case .invalidConstant, .lfExpected, .strictModeAssertion, .invalidCharactersUsed: "its framing is malformed"
            default: nil
            }
        return Self(.badRequest, "malformed_request", "The request is not valid HTTP/1.1" + (detail.map { ": \($0)." } ?? "."))
    }

    static func headTooLarge(limit: Int) -> Self {
        Self(.requestHeaderFieldsTooLarge, "head_too_large", "The request head exceeds the limit of \(limit) bytes.")
    }

    static func badHost(count: Int) -> Self {
        Self(.badRequest, "bad_host", count == 0 ? "An HTTP/1.1 request needs a Host header." : "A request has one Host header, not \(count).")
    }

    static let repeatedOrigin = Self(.badRequest, "bad_origin", "A request has at most one Origin header.")

    /// No `Allow`: an authority-form target names no resource of this server to list methods for.
    static let notAProxy = Self(.methodNotAllowed, "method_not_allowed", "CONNECT is not served: this server is not a proxy.")

    static let unknownHost = Self(
        .misdirectedRequest, "unknown_host",
        "This server does not answer to that Host name; an operator adds names with --public-host.")

    static let crossOrigin = Self(
        .forbidden, "cross_origin",
        "A page of another origin may not change this server's state; an operator allows origins with --cors-origin.")

    static func unsupportedMediaType(_ given: String?) -> Self {
        Self(
            .unsupportedMediaType, "unsupported_media_type",
            "The body must be sent as Content-Type: application/json" + (given == nil ? "; none was given." : "."))
    }

    static let conflictingFraming = Self(
        .badRequest, "conflicting_framing", "The request's length is ambiguous: send one Content-Length, or Transfer-Encoding: chunked, not both.")

    static func unsupportedTransferCoding(_ codings: String) -> Self {
        Self(.notImplemented, "unsupported_transfer_encoding", "Transfer-Encoding \(codings) is not supported; only chunked is.")
    }

    static func unsupportedExpectation(_ expectation: String) -> Self {
        Self(.expectationFailed, "unsupported_expectation", "Expect: \(expectation) is not supported; only 100-continue is.")
    }

    static func methodNotAllowed(_ method: String, allow: String) -> Self {
        Self(.methodNotAllowed, "method_not_allowed", "\(method) is not allowed here; allowed: \(allow).", allow: allow)
    }
}

/// The id a request is known by in the logs.
enum RequestID {
    /// A client's id when it is a plain token of at most 64 characters: anything else could
    /// forge or break log lines.
    static func valid(_ given: String?) -> String? {
        guard let given, !given.isEmpty, given.utf8.count <= 64,
            given.utf8.allSatisfy({
                $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || (48...57).contains($0) || (65...90).contains($0)
                    || (97...122).contains($0)
            })
        else { return nil }
        return given
    }

    /// 64 random bits, hex.
    static func make() -> String {
        let digits = String(UInt64.random(in: .min ... .max), radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
