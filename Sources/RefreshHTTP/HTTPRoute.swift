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

/// What admission found for a request's target, once: who answers it, which route of the
/// application's table it is, and the pattern its path is. It travels with the request, so
/// dispatch, metrics, logs and refusals read it instead of matching the path again.
package struct RouteMatch: Equatable, Sendable {
    /// Who answers.
    package var route: HTTPRoute
    /// The place in the table of the route that answers this method on this path: `nil` when
    /// none does (an undeclared path, a method the path lacks, a preflight).
    package var routeIndex: Int?
    /// The place in the table of a route whose pattern the path is, whatever the method (a
    /// `405`'s too; the answering route when there is one): the pattern is the request's name
    /// in metrics and logs. `nil`: the path is no route's.
    package var patternIndex: Int?
    /// Whether the path is on the API (its first segment is the API's), where the origin and
    /// content-type rules hold and an undeclared path is the application's to answer.
    package var isAPI: Bool

    package init(_ route: HTTPRoute, routeIndex: Int? = nil, patternIndex: Int? = nil, isAPI: Bool) {
        self.route = route
        self.routeIndex = routeIndex
        self.patternIndex = patternIndex
        self.isAPI = isAPI
    }
}

extension RouteMatcher where Kind: ConnectionRouteKind {
    /// The route of a request: a declared route by its kind's disposition, `405` and
    /// preflights from the methods the path has, anything undeclared to the router.
    package func route(_ method: HTTPMethod, uri: String) -> RouteMatch {
        let matched = match(method, uri: uri)
        if case .route(let route, let path) = matched {
            let parameter = { (name: String) in String(route.pattern.parameter(name, in: path.utf8) ?? "") }
            let answer: HTTPRoute =
                switch route.kind.disposition {
                case .answer(let name): .answer(parameter: parameter(name))
                case .stream(let name): .stream(parameter: parameter(name))
                case .router: .router
                }
            return RouteMatch(answer, routeIndex: route.index, patternIndex: route.index, isAPI: isAPI(path))
        }
        let path = Self.path(of: uri)
        let found = RouteMatch(.router, patternIndex: patternIndex(of: path), isAPI: isAPI(path))
        switch matched {
        case .methodNotAllowed(let allow): return RouteMatch(.methodNotAllowed(allow: allow), patternIndex: found.patternIndex, isAPI: found.isAPI)
        case .preflight(let allow): return RouteMatch(.preflight(allow: allow), patternIndex: found.patternIndex, isAPI: found.isAPI)
        case .route: return found
        case .undeclared: return spelledMatch(method, path: path) ?? found
        }
    }

    /// A path with an empty segment (`/api/items/`, `/api//items`) is answered as the routed
    /// route its segments spell, as routers read paths, and is on the API when that path is
    /// (so the origin rules hold for it); it is named by no pattern (counted as `other`), and
    /// the connection's own routes never take it.
    private func spelledMatch(_ method: HTTPMethod, path: Substring) -> RouteMatch? {
        guard let spelled = Self.spelled(path), case .route(let route, _) = match(method, uri: spelled),
            case .router = route.kind.disposition
        else { return nil }
        return RouteMatch(.router, routeIndex: route.index, isAPI: isAPI(path) || isAPI(spelled[...]))
    }
}

/// How admission finds a head's route: the application's route table, seen only as the
/// one question the connection asks of it.
package struct HTTPRouting: Sendable {
    package var route: @Sendable (HTTPMethod, String) -> RouteMatch

    package init(route: @escaping @Sendable (HTTPMethod, String) -> RouteMatch) {
        self.route = route
    }

    /// Admission asks every request head, so it asks a copy of the table whose kinds are
    /// already dispositions: a matcher of a type this module knows, whose walk is compiled
    /// for it here. Asked through `Kind`, a type of the application's module, it ran as
    /// unspecialized generic code, looking up metadata and copying routes through witnesses.
    /// The copy keeps the table's order, so a match's places are the table's.
    package init<Kind: ConnectionRouteKind>(_ matcher: RouteMatcher<Kind>) {
        let dispositions = RouteMatcher<RouteDisposition>(
            api: matcher.api, files: matcher.files, routes: matcher.routes.map { .init($0.method, $0.pattern, $0.kind.disposition) })
        self.init { dispositions.route($0, uri: $1) }
    }
}

extension RouteDisposition: ConnectionRouteKind {
    package var disposition: RouteDisposition { self }
}
