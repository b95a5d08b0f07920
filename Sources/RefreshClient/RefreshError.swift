/// Why a request did not succeed, in the server's own words when it answered.
///
/// `status` is the HTTP status, or `0` when the server could not be reached (or the answer
/// was cut short). `code` is the stable code of the server's JSON error (`not_found`,
/// `invalid_token`, `insufficient_scope`…) and `message` its sentence for people.
public struct RefreshError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var message: String
    /// What the server asked for in `Retry-After`, when it did.
    public var retryAfter: Duration?
    /// A failed publish's item ids, as the server names them in its `503`: a retry with them
    /// stores each item once.
    public var ids: [String]

    public init(status: Int, code: String, message: String, retryAfter: Duration? = nil, ids: [String] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.ids = ids
    }

    /// The same request may succeed later: the server was busy, unavailable or out of reach.
    /// (`501` and `505` say the server will never take it.)
    public var isTransient: Bool { status == 0 || status == 408 || status == 429 || (status >= 500 && status != 501 && status != 505) }

    /// The server does not know the session (it restarted, or the session ended or expired).
    var isSessionGone: Bool { status == 404 }

    /// A token is missing, invalid or without the right: asking again will not help until
    /// the token changes.
    public var isAccessRefused: Bool { status == 401 || (status == 403 && code == "insufficient_scope") }

    public var description: String {
        status == 0 ? message : "\(status) \(code): \(message)"
    }

    /// An operation on a session after ``RemoteSession/close()``.
    static let closed = Self(status: 0, code: "closed", message: "the session was closed")

    static func unreachable(_ error: any Error) -> Self {
        Self(status: 0, code: "unreachable", message: "the server cannot be reached: \(error)")
    }
}
