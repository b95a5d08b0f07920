import HTTPTypes
import Hummingbird
import NIOHTTP1
import RefreshHTTP

/// Every route the server has, declared once: the connection matches the hot ones with it,
/// answers `405` with `Allow` and preflights from it, counts requests under its patterns, and
/// the router's registrations are made from it. A test holds it and `Public/openapi.yaml` to
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
        ])

    /// The parameter that names a session in every pattern that has one.
    static let sessionParameter = "id"

    typealias Pattern = APIPattern

    /// Which part of the server answers a request, decided from its method and target alone,
    /// before its body is read: the two requests on the gesture's path are answered on the
    /// connection's event loop (`samples` at once, `events` as a stream), everything else by
    /// the router. A method the path does not have is refused with `405` and the methods it
    /// does have, so the router never sees it.
    typealias Route = HTTPRoute

    static func route(_ method: HTTPMethod, uri: String) -> Route {
        matcher.route(method, uri: uri)
    }

    /// The table as admission asks it.
    static let routing = HTTPRouting(matcher)

    /// Whether the target is on the API, where the origin and content-type rules hold.
    static func isAPI(_ uri: String) -> Bool {
        matcher.isAPI(RouteMatcher<Kind>.path(of: uri))
    }

    /// The pattern a request is counted under in the metrics: patterns, never paths, so the
    /// set of labels stays bounded whatever clients ask for. A path outside the API is a
    /// static file until the answer says there is none (`status` 404): then it is `other`,
    /// like an unknown API path.
    static func pattern(_ uri: String, status: Int) -> String {
        let path = RouteMatcher<Kind>.path(of: uri)
        if let pattern = matcher.pattern(of: path) { return pattern.description }
        return matcher.isAPI(path) || status == 404 ? Pattern.other : Pattern.staticFile
    }

    /// The session a target names, for the log line of its refusal.
    static func session(in uri: String) -> String? {
        matcher.parameter(sessionParameter, in: RouteMatcher<Kind>.path(of: uri)).map(String.init)
    }

    /// Registers every routed route on `router`, and the files behind every other path
    /// outside the API.
    static func register(on router: Router<ServerRequestContext>, handlers: Handlers, files: @escaping Handler) {
        for route in matcher.routes {
            guard case .routed(let handler) = route.kind, let method = HTTPRequest.Method(route.method.rawValue) else { continue }
            router.on(RouterPath(route.pattern.path { ":" + $0 }), method: method, use: handler(handlers))
        }
        for method in matcher.files {
            guard let method = HTTPRequest.Method(method.rawValue) else { continue }
            router.on("/", method: method, use: files)
            router.on("**", method: method, use: files)
        }
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
