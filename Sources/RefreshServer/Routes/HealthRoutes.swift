import Hummingbird
import RefreshFeed

/// `/healthz` says the process answers; `/readyz` says it can serve, which a load balancer
/// asks before sending it pages: the store answers within a deadline (with SQLite, writes
/// can also get the database's lock) and, with PostgreSQL, the connection that brings other
/// instances' news is up.
struct HealthRoutes<Context: RequestContext>: Sendable {
    let feed: any FeedSource
    /// With PostgreSQL: whether the connection that brings other instances' news is up.
    let notificationsUp: (@Sendable () -> Bool)?
    /// How long the store may take to answer before the server counts as not ready.
    let deadline: Duration

    @Sendable func live(_ request: Request, context: Context) async throws -> Response {
        Self.status("ok", request)
    }

    @Sendable func ready(_ request: Request, context: Context) async throws -> Response {
        if let notificationsUp, !notificationsUp() {
            throw APIError(.notificationsUnavailable, "The connection that brings news from other instances is down.", retryAfter: 5)
        }
        do {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask { [feed] in
                    try await feed.checkReady()
                    return true
                }
                group.addTask { [deadline] in
                    try await Task.sleep(for: deadline)
                    return false
                }
                defer { group.cancelAll() }
                guard try await group.next() == true else {
                    throw APIError(
                        .storeUnavailable, "The feed store did not answer within \(deadline.secondsText).",
                        retryAfter: 5)
                }
            }
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(.storeUnavailable, "The feed store failed: \(ActionRunner.describe(error))", retryAfter: 5)
        }
        return Self.status("ready", request)
    }

    private static func status(_ status: String, _ request: Request) -> Response {
        JSONResponse.make(.ok, request: request) { json in
            json.beginObject()
            json.field("status", status)
            json.endObject()
        }
    }
}
