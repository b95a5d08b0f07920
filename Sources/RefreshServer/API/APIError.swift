import HTTPTypes
import Logging

/// A request the server refuses, with the status, a stable machine-readable code and a
/// sentence for people. Every error body is `{"error": CODE, "message": TEXT}`.
public struct APIError: Error, Sendable, Equatable {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    /// Seconds after which a refused request may succeed (`Retry-After`).
    public var retryAfter: Int?

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    /// One line per refused request, wherever it was answered.
    func logRefusal(method: HTTPRequest.Method, path: String, logger: Logger) {
        logger.notice("refused \(method) \(path): \(status.code) \(code): \(message)")
    }

    static func malformedJSON(_ reason: String) -> Self {
        Self(.badRequest, "malformed_json", "The body is not valid JSON: \(reason).")
    }

    static func wrongType(_ path: String, expected: String, got: JSONValue) -> Self {
        Self(.badRequest, "invalid_type", "\(path) must be \(expected), not \(got.typeName).")
    }

    static func missing(_ path: String, expected: String) -> Self {
        Self(.badRequest, "missing_field", "\(path) is required (\(expected)).")
    }

    static func invalid(_ path: String, _ reason: String) -> Self {
        Self(.badRequest, "invalid_value", "\(path) \(reason).")
    }

    static func outOfRange(_ message: String) -> Self {
        Self(.unprocessableContent, "out_of_range", message)
    }

    static func sessionNotFound(_ id: String) -> Self {
        Self(.notFound, "session_not_found", "No session \(id): it ended or expired. Create a new one.")
    }

    static func bodyTooLarge(limit: Int) -> Self {
        Self(.contentTooLarge, "body_too_large", "The body exceeds the limit of \(limit) bytes.")
    }
}
