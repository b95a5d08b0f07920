import NIOHTTP1

/// Which part of the server answers a request, decided from its method and path alone, before
/// its body is read: the two requests on the gesture's path are answered on the connection's
/// event loop, everything else by the router. A method the path does not have is refused
/// here with `405` and the methods it does have, so the router never sees it.
enum RouteTable {
    enum Route: Equatable, Sendable {
        /// `POST /api/sessions/{id}/samples`
        case samples(session: String)
        /// `GET /api/sessions/{id}/events`, and `HEAD` on it (answered with the stream's head).
        case events(session: String)
        /// Anything the router answers.
        case router
        /// The path exists, but not with this method; `allow` lists the methods it has.
        case methodNotAllowed(allow: String)
        /// `OPTIONS` on an API path: a CORS preflight, answered for a `--cors-origin` only
        /// (otherwise it is `methodNotAllowed`); `allow` lists the methods the path has.
        case preflight(allow: String)
    }

    static func route(_ method: HTTPMethod, uri: String) -> Route {
        var path = uri.utf8[...]
        if let query = path.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            path = path[..<query]
        }
        // The two requests every frame of a gesture makes are matched first, without
        // splitting the path.
        if let hot = hotRoute(method, path) { return hot }
        if let allowed = methods(path), !allowed.contains(method) {
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            if method == .OPTIONS, path.starts(with: "/api/".utf8) { return .preflight(allow: allow) }
            return .methodNotAllowed(allow: allow)
        }
        return .router
    }

    private static func hotRoute(_ method: HTTPMethod, _ path: Substring.UTF8View) -> Route? {
        guard method == .POST || method == .GET || method == .HEAD, path.count > sessionsPrefix.count, path.starts(with: sessionsPrefix) else {
            return nil
        }
        let rest = path.dropFirst(sessionsPrefix.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")), slash != rest.startIndex else { return nil }
        let action = rest[rest.index(after: slash)...]
        let id = String(Substring(rest[..<slash]))
        switch method {
        case .POST where action.elementsEqual("samples".utf8): return .samples(session: id)
        case .GET where action.elementsEqual("events".utf8), .HEAD where action.elementsEqual("events".utf8): return .events(session: id)
        default: return nil
        }
    }

    private static let sessionsPrefix = "/api/sessions/".utf8
    private static let files: [HTTPMethod] = [.GET, .HEAD]

    /// The routes requests are counted under in the metrics: patterns, never paths, so the
    /// set of labels stays bounded whatever clients ask for.
    enum Pattern {
        static let samples = "/api/sessions/{id}/samples"
        static let events = "/api/sessions/{id}/events"
        static let session = "/api/sessions/{id}"
        static let refresh = "/api/sessions/{id}/refresh"
        static let loadMore = "/api/sessions/{id}/load-more"
        static let sessions = "/api/sessions"
        static let items = "/api/items"
        static let healthz = "/healthz"
        static let readyz = "/readyz"
        static let metrics = "/metrics"
        /// A file of `Public/` that exists.
        static let staticFile = "static"
        /// Any path the server has nothing at.
        static let other = "other"
    }

    /// The pattern of the route a request is counted under. A path outside the API is a
    /// static file until the answer says there is none (`status` 404): then it is `other`,
    /// like an unknown API path.
    static func pattern(_ uri: String, status: Int) -> String {
        var path = uri.utf8[...]
        if let query = path.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            path = path[..<query]
        }
        let segments = path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst().map { Substring($0) }
        guard segments.first == "api" else {
            switch segments {
            case ["healthz"]: return Pattern.healthz
            case ["readyz"]: return Pattern.readyz
            case ["metrics"]: return Pattern.metrics
            default: return status == 404 ? Pattern.other : Pattern.staticFile
            }
        }
        let api = segments.dropFirst()
        switch (api.count, api.first) {
        case (1, "items"): return Pattern.items
        case (1, "sessions"): return Pattern.sessions
        case (2, "sessions") where !api[api.startIndex + 1].isEmpty: return Pattern.session
        case (3, "sessions") where !api[api.startIndex + 1].isEmpty:
            switch api[api.startIndex + 2] {
            case "samples": return Pattern.samples
            case "events": return Pattern.events
            case "refresh": return Pattern.refresh
            case "load-more": return Pattern.loadMore
            default: return Pattern.other
            }
        default: return Pattern.other
        }
    }

    /// The methods a path has; `nil` for an unknown API path, which the router answers with
    /// 404 whatever the method. Every path outside the API is a static file (`GET`, `HEAD`).
    private static func methods(_ path: Substring.UTF8View) -> [HTTPMethod]? {
        let segments = path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
        guard segments.first.map({ Substring($0) == "api" }) == true else { return files }
        let api = segments.dropFirst().map { Substring($0) }
        switch api.count {
        case 1 where api[0] == "items": return [.GET, .HEAD, .POST]
        case 1 where api[0] == "sessions": return [.POST]
        case 2 where api[0] == "sessions" && !api[1].isEmpty: return [.GET, .HEAD, .DELETE]
        case 3 where api[0] == "sessions" && !api[1].isEmpty:
            switch api[2] {
            case "events": return [.GET, .HEAD]
            case "samples", "load-more": return [.POST]
            case "refresh": return [.POST, .DELETE]
            default: return nil
            }
        default: return nil
        }
    }
}
