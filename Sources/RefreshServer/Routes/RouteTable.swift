import HTTPTypes
import Hummingbird
import NIOHTTP1
import RefreshHTTP

/// Every route the server has, declared once: the connection matches the hot ones with it,
/// answers `405` with `Allow` and preflights from it, counts requests under its patterns, and
/// the routed responder answers by its places. A test holds it and `Public/openapi.yaml` to
/// the same operations. A route is one line here (and its handler).
enum RouteTable {
    typealias Handler = @Sendable (Request, ServerRequestContext) async throws -> Response

    /// Who answers a route.
    enum Kind: Sendable {
        /// The samples POST, on the connection's event loop.
        case samples
        /// The event stream, on the connection's event loop.
        case events
        /// The router, with the handler one of the route groups has.
        case routed(@Sendable (Handlers) -> Handler)
    }

    /// The route groups the router's handlers come from.
    struct Handlers: Sendable {
        var sessions: SessionRoutes
        var items: ItemRoutes
        var health: HealthRoutes<ServerRequestContext>
        var metrics: MetricsRoutes<ServerRequestContext>
        var insights: InsightsRoutes
    }

    static let matcher = RouteMatcher<Kind>(
        api: "api", files: [.GET, .HEAD],
        routes: [
            .init(.POST, Pattern.samples, .samples),
            .init(.GET, Pattern.events, .events),
            .init(.GET, Pattern.sharedEvents, .events),
            .init(.POST, "/api/sessions", .routed { $0.sessions.create }),
            .init(.GET, "/api/sessions/{id}", .routed { $0.sessions.show }),
            .init(.DELETE, "/api/sessions/{id}", .routed { $0.sessions.end }),
            .init(.POST, "/api/sessions/{id}/refresh", .routed { $0.sessions.refresh }),
            .init(.DELETE, "/api/sessions/{id}/refresh", .routed { $0.sessions.cancelRefresh }),
            .init(.POST, "/api/sessions/{id}/load-more", .routed { $0.sessions.loadMore }),
            .init(.GET, "/api/items", .routed { $0.items.list }),
            .init(.POST, "/api/items", .routed { $0.items.publish }),
            .init(.GET, "/api/feeds/{feed}", .routed { $0.items.show }),
            .init(.GET, "/api/feeds/{feed}/items", .routed { $0.items.list }),
            .init(.POST, "/api/feeds/{feed}/items", .routed { $0.items.publish }),
            .init(.GET, "/api/feeds/{feed}/items/{item}", .routed { $0.items.showItem }),
            .init(.PUT, "/api/feeds/{feed}/items/{item}", .routed { $0.items.replaceItem }),
            .init(.PATCH, "/api/feeds/{feed}/items/{item}", .routed { $0.items.patchItem }),
            .init(.DELETE, "/api/feeds/{feed}/items/{item}", .routed { $0.items.removeItem }),
            .init(.GET, "/api/items/{item}", .routed { $0.items.showItem }),
            .init(.PUT, "/api/items/{item}", .routed { $0.items.replaceItem }),
            .init(.PATCH, "/api/items/{item}", .routed { $0.items.patchItem }),
            .init(.DELETE, "/api/items/{item}", .routed { $0.items.removeItem }),
            .init(.GET, "/healthz", .routed { $0.health.live }),
            .init(.GET, "/readyz", .routed { $0.health.ready }),
            .init(.GET, "/metrics", .routed { $0.metrics.scrape }),
            .init(.GET, "/api/insights", .routed { $0.insights.show }),
        ])

    /// The parameter that names a session in every pattern that has one.
    static let sessionParameter = "id"

    typealias Pattern = APIPattern

    /// Which part of the server answers a request, decided from its method and target alone,
    /// before its body is read: the two requests on the gesture's path are answered on the
    /// connection's event loop (`samples` at once, `events` as a stream), everything else by
    /// the router. A method the path does not have is refused with `405` and the methods it
    /// does have, so the router never sees it. The match travels with the request: dispatch,
    /// metrics and logs read it, and nothing matches the path again.
    static func match(_ method: HTTPMethod, uri: String) -> RouteMatch {
        routing.route(method, uri)
    }

    /// Who answers a request (``match(_:uri:)``'s ``RouteMatch/route``).
    static func route(_ method: HTTPMethod, uri: String) -> HTTPRoute {
        match(method, uri: uri).route
    }

    /// The table as admission asks it.
    static let routing = HTTPRouting(matcher)

    /// Whether the target is on the API, where the origin and content-type rules hold.
    static func isAPI(_ uri: String) -> Bool {
        matcher.isAPI(RouteMatcher<Kind>.path(of: uri))
    }

    /// The name a request is counted under in the metrics: its pattern, never its path, so
    /// the set of labels stays bounded whatever clients ask for. A path outside the API is
    /// a static file until the answer says there is none (`status` 404): then it is `other`,
    /// like an unknown API path. A request refused before its route was found is found now,
    /// once.
    static func label(_ match: RouteMatch?, head: HTTPRequestHead?, status: Int) -> String {
        guard let match = match ?? head.map({ self.match($0.method, uri: $0.uri) }) else { return Pattern.other }
        if let index = match.patternIndex { return matcher.routes[index].pattern.description }
        // A route spelled with an empty segment is named by no pattern.
        return match.isAPI || match.routeIndex != nil || status == 404 ? Pattern.other : Pattern.staticFile
    }

    /// ``label(_:head:status:)`` of a `GET` of `uri`.
    static func pattern(_ uri: String, status: Int) -> String {
        label(match(.GET, uri: uri), head: nil, status: status)
    }

    /// The session a request names, for the log line of its refusal: its route's parameter,
    /// or, for a path no route is (`/api/sessions/{id}/nothing`), the longest pattern it
    /// starts with.
    static func session(in uri: String, match: RouteMatch? = nil) -> String? {
        let path = RouteMatcher<Kind>.path(of: uri)
        if let index = match?.patternIndex {
            let pattern = matcher.routes[index].pattern
            guard pattern.segments.contains(.parameter(sessionParameter)) else { return nil }
            return pattern.parameter(sessionParameter, in: path.utf8).map(String.init)
        }
        return matcher.parameter(sessionParameter, in: path).map(String.init)
    }

    /// What answers the routed routes: each one's handler by its place in the table, the
    /// files behind every other path outside the API, and `404` for any other API path.
    static func responder(handlers: Handlers, files: @escaping Handler) -> RoutedResponder {
        RoutedResponder(
            handlers: matcher.routes.map { route in
                guard case .routed(let handler) = route.kind else { return nil }
                return (handler(handlers), route.pattern)
            }, files: files)
    }
}

/// Answers a routed request by the route admission found: the handler at its place in the
/// table, with the pattern's parameters read from the path, inside the one error path every
/// failure takes (``ErrorMiddleware``). The path is not matched again.
struct RoutedResponder: Sendable {
    /// By place in ``RouteTable/matcher``: the handler of a routed route and its pattern.
    let handlers: [(RouteTable.Handler, RoutePattern)?]
    let files: RouteTable.Handler

    func respond(to request: Request, context: ServerRequestContext, match: RouteMatch) async throws -> Response {
        try await ErrorMiddleware(match: match).handle(request, context: context) { request, context in
            // The path admission matched: the target up to its query or its fragment.
            let path = RouteMatcher<RouteTable.Kind>.path(of: request.uri.string)
            if let index = match.routeIndex, handlers.indices.contains(index), let (handler, pattern) = handlers[index] {
                // A path with an empty segment was matched as its segments spell it.
                let spelled = RouteMatcher<RouteTable.Kind>.spelled(path) ?? String(path)
                var context = context
                for case .parameter(let name) in pattern.segments {
                    // The route was matched on this path: a parameter it cannot give is the
                    // server's fault, never an absent one a handler would take a default for.
                    guard let value = pattern.parameter(name, in: spelled[...].utf8) else { throw UnreadParameter(name: name, path: spelled) }
                    context.coreContext.parameters.append(key: Substring(name), value: value)
                }
                return try await handler(request, context)
            }
            if !match.isAPI { return try await files(request, context) }
            throw APIError(.notFound, "Nothing at \(path).")
        }
    }

    /// A parameter of the matched route that its path does not give.
    struct UnreadParameter: Error, CustomStringConvertible {
        let name: String
        let path: String

        var description: String { "the parameter \(name) of the route matched is not in \(path)" }
    }
}

extension RouteTable.Kind: ConnectionRouteKind {
    var disposition: RouteDisposition {
        switch self {
        case .samples: .answer(parameter: RouteTable.sessionParameter)
        case .events: .stream(parameter: RouteTable.sessionParameter)
        case .routed: .router
        }
    }
}

extension HTTPRoute {
    /// `POST /api/sessions/{id}/samples`
    static func samples(session: String) -> Self { .answer(parameter: session) }
    /// `GET /api/sessions/{id}/events`, and `HEAD` on it (answered with the stream's head).
    static func events(session: String) -> Self { .stream(parameter: session) }
}
