import HTTPTypes
import Logging
import NIOHTTP1
import RefreshJSON

/// A request the server refuses, with a stable machine-readable code (``ErrorCode``), its
/// status and a sentence for people. Every error body is `{"error": CODE, "message": TEXT}`.
public struct APIError: Error, Sendable, Equatable {
    public var status: HTTPResponse.Status
    public var code: ErrorCode
    public var message: String
    /// Seconds after which a refused request may succeed (`Retry-After`).
    public var retryAfter: Int?
    /// The methods the path has, for a `405` (`Allow`).
    public var allow: String?
    /// The challenge of a refused token (`WWW-Authenticate`, RFC 6750 §3).
    public var wwwAuthenticate: String?

    /// A refusal with `code`, sent with the code's status unless `status` says otherwise
    /// (only ``ErrorCode/httpError`` does).
    public init(
        _ code: ErrorCode, _ message: String, status: HTTPResponse.Status? = nil, retryAfter: Int? = nil, allow: String? = nil,
        wwwAuthenticate: String? = nil
    ) {
        self.status = status ?? code.status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.allow = allow
        self.wwwAuthenticate = wwwAuthenticate
    }

    /// One line per refused request, wherever it was answered, with the session's id as
    /// metadata when the route named one (`session`).
    /// `requestID` is the request's `X-Request-ID` (a front such as nginx sets one, so its
    /// access log and this line can be matched); without one, a fresh id still tells this
    /// refusal's line from the others.
    func logRefusal(method: some CustomStringConvertible, path: String, session: String?, requestID: String?, logger: Logger) {
        var metadata: Logger.Metadata = ["request": .string(RequestID.valid(requestID) ?? RequestID.make())]
        if let session {
            metadata["session"] = .string(session.escapedForLog)
        }
        // The path and the message may hold what the client sent (a decoded `%0A`, an id from
        // the query): escaped, they stay on this one line.
        logger.notice("refused \(method) \(path.escapedForLog): \(status.code) \(code): \(message.escapedForLog)", metadata: metadata)
    }

    static func malformedJSON(_ reason: String) -> Self {
        Self(.malformedJSON, "The body is not valid JSON: \(reason).")
    }

    public static func wrongType(_ path: String, expected: String, got: JSONValue) -> Self {
        Self(.invalidType, "\(path) must be \(expected), not \(got.typeName).")
    }

    public static func missing(_ path: String, expected: String) -> Self {
        Self(.missingField, "\(path) is required (\(expected)).")
    }

    public static func invalid(_ path: String, _ reason: String) -> Self {
        Self(.invalidValue, "\(path) \(reason).")
    }

    static func outOfRange(_ message: String) -> Self {
        Self(.outOfRange, message)
    }

    /// A whole number beyond what a JSON number carries exactly.
    public static func inexactInteger(_ path: String) -> Self {
        outOfRange("\(path) must be from -9007199254740991 to 9007199254740991 (2^53 − 1): a JSON number beyond is not exact.")
    }

    static func sessionNotFound(_ id: String) -> Self {
        Self(.sessionNotFound, "No session \(id): it ended or expired. Create a new one.")
    }

    /// A session a shared stream may not carry: it does not exist, or the request may not
    /// read it; the same answer for both, so that it tells nothing of another client's.
    static func sharedSessionNotFound(_ id: String) -> Self {
        Self(.sessionNotFound, "No session \(id) that this request may follow: it ended, expired or is not yours.")
    }

    static func bodyTooLarge(limit: Int) -> Self {
        Self(.bodyTooLarge, "The body exceeds the limit of \(limit) bytes.")
    }

    // MARK: - Refusals of the connection layer

    static let streamNeedsHTTP11 = Self(.httpVersionNotSupported, "An event stream needs HTTP/1.1 (its body is chunked).")

    static let requestTimeout = Self(.requestTimeout, "The request did not arrive in time.")

    static func malformed(_ error: HTTPParserError) -> Self {
        if case .headerOverflow = error {
            return Self(.headTooLarge, "The request head is too large.")
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
        return Self(.malformedRequest, "The request is not valid HTTP/1.1" + (detail.map { ": \($0)." } ?? "."))
    }

    static func headTooLarge(limit: Int) -> Self {
        Self(.headTooLarge, "The request head exceeds the limit of \(limit) bytes.")
    }

    static func badHost(count: Int) -> Self {
        Self(.badHost, count == 0 ? "An HTTP/1.1 request needs a Host header." : "A request has one Host header, not \(count).")
    }

    static let repeatedOrigin = Self(.badOrigin, "A request has at most one Origin header.")

    /// No `Allow`: an authority-form target names no resource of this server to list methods for.
    static let notAProxy = Self(.methodNotAllowed, "CONNECT is not served: this server is not a proxy.")

    static let unknownHost = Self(.unknownHost, "This server does not answer to that Host name; an operator adds names with --public-host.")

    static let crossOrigin = Self(
        .crossOrigin, "A page of another origin may not change this server's state; an operator allows origins with --cors-origin.")

    static func unsupportedMediaType(_ given: String?) -> Self {
        Self(.unsupportedMediaType, "The body must be sent as Content-Type: application/json" + (given == nil ? "; none was given." : "."))
    }

    static let conflictingFraming = Self(
        .conflictingFraming, "The request's length is ambiguous: send one Content-Length, or Transfer-Encoding: chunked, not both.")

    static func unsupportedTransferCoding(_ codings: String) -> Self {
        Self(.unsupportedTransferEncoding, "Transfer-Encoding \(codings) is not supported; only chunked is.")
    }

    static func unsupportedExpectation(_ expectation: String) -> Self {
        Self(.unsupportedExpectation, "Expect: \(expectation) is not supported; only 100-continue is.")
    }

    static func methodNotAllowed(_ method: String, allow: String) -> Self {
        Self(.methodNotAllowed, "\(method) is not allowed here; allowed: \(allow).", allow: allow)
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
