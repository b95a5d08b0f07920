import RefreshHTTP

/// The patterns the hot requests are counted under (the metrics keep a counter of each
/// without a lookup), and the names of what no route is: wire facts the route table and
/// the metrics both name.
enum APIPattern {
    static let samples: RoutePattern = "/api/sessions/{id}/samples"
    static let events: RoutePattern = "/api/sessions/{id}/events"
    /// The stream several sessions share; its sessions are in the query.
    static let sharedEvents: RoutePattern = "/api/events"
    /// A file of `Public/` that exists.
    static let staticFile = "static"
    /// Any path the server has nothing at.
    static let other = "other"
}
