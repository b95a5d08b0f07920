import NIOHTTP1

/// Which part of the server answers a request, decided from its method and path alone, before
/// its body is read: the two requests on the gesture's path are answered on the connection's
/// event loop, everything else by the router. A method the path does not have is refused
/// here with `405` and the methods it does have, so the router never sees it.
enum RouteTable {
    enum Route: Equatable, Sendable {
        /// `POST /api/sessions/{id}/samples`
        case samples(session: String)
        /// `GET /api/sessions/{id}/events`
        case events(session: String)
        /// Anything the router answers.
        case router
        /// The path exists, but not with this method; `allow` lists the methods it has.
        case methodNotAllowed(allow: String)
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
            return .methodNotAllowed(allow: allowed.map(\.rawValue).joined(separator: ", "))
        }
        return .router
    }

    private static func hotRoute(_ method: HTTPMethod, _ path: Substring.UTF8View) -> Route? {
        guard method == .POST || method == .GET, path.count > sessionsPrefix.count, path.starts(with: sessionsPrefix) else {
            return nil
        }
        let rest = path.dropFirst(sessionsPrefix.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")), slash != rest.startIndex else { return nil }
        let action = rest[rest.index(after: slash)...]
        let id = String(Substring(rest[..<slash]))
        switch method {
        case .POST where action.elementsEqual("samples".utf8): return .samples(session: id)
        case .GET where action.elementsEqual("events".utf8): return .events(session: id)
        default: return nil
        }
    }

    private static let sessionsPrefix = "/api/sessions/".utf8
    private static let files: [HTTPMethod] = [.GET, .HEAD]

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
            case "events": return [.GET]
            case "samples", "load-more": return [.POST]
            case "refresh": return [.POST, .DELETE]
            default: return nil
            }
        default: return nil
        }
    }
}
