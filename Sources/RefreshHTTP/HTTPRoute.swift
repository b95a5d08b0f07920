import NIOHTTP1

/// Who answers a request, as admission decides it from its method and target alone, before
/// its body is read. The connection knows three ways to answer and nothing of what the
/// application's routes mean: at once on its event loop, with a stream that does not end,
/// or through the application's router on a task.
package enum HTTPRoute: Equatable, Sendable {
    /// Answered at once on the connection's event loop; `parameter` is what the route's
    /// pattern captured (the one parameter the application named for it).
    case answer(parameter: String)
    /// An endless answer the application feeds (an event stream), and `HEAD` on it.
    case stream(parameter: String)
    /// Anything the router answers.
    case router
    /// The path exists, but not with this method; `allow` lists the methods it has.
    case methodNotAllowed(allow: String)
    /// `OPTIONS` on an API path: a CORS preflight, answered for a `--cors-origin` only
    /// (otherwise it is `methodNotAllowed`); `allow` lists the methods the path has.
    case preflight(allow: String)
}

/// What a route of the application's table is to the connection.
package enum RouteDisposition: Sendable {
    /// ``HTTPRoute/answer(parameter:)``, with the pattern's parameter of this name.
    case answer(parameter: String)
    /// ``HTTPRoute/stream(parameter:)``, with the pattern's parameter of this name.
    case stream(parameter: String)
    case router
}

/// A route kind the connection can tell how to answer.
package protocol ConnectionRouteKind: Sendable {
    var disposition: RouteDisposition { get }
}

extension RouteMatcher where Kind: ConnectionRouteKind {
    /// The route of a request: a declared route by its kind's disposition, `405` and
    /// preflights from the methods the path has, anything undeclared to the router.
    package func route(_ method: HTTPMethod, uri: String) -> HTTPRoute {
        switch match(method, uri: uri) {
        case .route(let route, let path):
            let parameter = { (name: String) in String(route.pattern.parameter(name, in: path.utf8) ?? "") }
            switch route.kind.disposition {
            case .answer(let name): return .answer(parameter: parameter(name))
            case .stream(let name): return .stream(parameter: parameter(name))
            case .router: return .router
            }
        case .methodNotAllowed(let allow): return .methodNotAllowed(allow: allow)
        case .preflight(let allow): return .preflight(allow: allow)
        case .undeclared: return .router
        }
    }

    /// Whether the target is on the API, where the origin and content-type rules hold.
    package func isAPI(uri: String) -> Bool {
        isAPI(Self.path(of: uri))
    }
}

/// How admission finds a head's route: the application's route table, seen only as the
/// two questions the connection asks of it.
package struct HTTPRouting: Sendable {
    package var route: @Sendable (HTTPMethod, String) -> HTTPRoute
    package var isAPI: @Sendable (String) -> Bool

    package init(route: @escaping @Sendable (HTTPMethod, String) -> HTTPRoute, isAPI: @escaping @Sendable (String) -> Bool) {
        self.route = route
        self.isAPI = isAPI
    }

    /// Admission asks every request head, so it asks a copy of the table whose kinds are
    /// already dispositions: a matcher of a type this module knows, whose walk is compiled
    /// for it here. Asked through `Kind`, a type of the application's module, it ran as
    /// unspecialized generic code, looking up metadata and copying routes through witnesses.
    package init<Kind: ConnectionRouteKind>(_ matcher: RouteMatcher<Kind>) {
        let dispositions = RouteMatcher<RouteDisposition>(
            api: matcher.api, files: matcher.files, routes: matcher.routes.map { .init($0.method, $0.pattern, $0.kind.disposition) })
        self.init(route: { dispositions.route($0, uri: $1) }, isAPI: { dispositions.isAPI(uri: $0) })
    }
}

extension RouteDisposition: ConnectionRouteKind {
    package var disposition: RouteDisposition { self }
}
