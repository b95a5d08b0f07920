import Hummingbird
import Logging
import RefreshFeed

extension APIError {
    /// What any failure of a request is answered with, wherever it was decided (the
    /// connection, a hot route, a routed handler), logged on one line: an ``APIError`` as it
    /// is; the router's `HTTPError`, a store's refusal of an item and a store that cannot be
    /// reached as the API's codes for them; anything else is the server's fault, a `500`
    /// logged as an error with what failed.
    static func answering(
        _ error: any Error, method: some CustomStringConvertible, path: String, session: String?, requestID: String?, logger: Logger
    ) -> APIError {
        guard let refused = APIError(client: error, method: method, path: path) else {
            logger.error("\(method) \(path.escapedForLog) failed: \(String(describing: error).escapedForLog)")
            return APIError(.internalError, "The server failed; the error is logged.")
        }
        refused.logRefusal(method: method, path: path, session: session, requestID: requestID, logger: logger)
        return refused
    }

    /// The refusal a failure is, when it is the client's: `nil` when it is the server's.
    private init?(client error: any Error, method: some CustomStringConvertible, path: String) {
        switch error {
        case let error as APIError:
            self = error
        case let error as HTTPError:
            self =
                switch error.status {
                case .notFound: APIError(.notFound, "Nothing at \(path).")
                case .contentTooLarge: .bodyTooLarge(limit: 0)
                case .methodNotAllowed: APIError(.methodNotAllowed, "\(method) is not allowed on \(path).")
                default: APIError(.httpError, error.body ?? error.status.reasonPhrase, status: error.status)
                }
        case let error as InvalidFeedItem:
            // The routes check items before the store does; should one pass them, the store's
            // refusal is still the client's fault, not a 500.
            self = .invalid("item \(error.id.debugDescription): \(error.field.rawValue)", error.violation.reason)
        case let error as FeedStoreUnavailable:
            self = APIError(.storeUnavailable, "\(error).", retryAfter: 5)
        default:
            return nil
        }
    }
}
