import NIOHTTP1

/// A path as an API description writes it: `/`-separated segments, each a literal or a
/// `{name}` parameter that matches one non-empty segment. The text is also the route's name
/// wherever a bounded set of names is wanted (metric labels): a pattern, never a path.
package struct RoutePattern: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    package enum Segment: Sendable, Hashable {
        case literal(String)
        case parameter(String)
    }

    package let description: String
    package let segments: [Segment]
    /// The segments as the walk compares them: a literal as its bytes, so a path is compared
    /// byte by byte, with no `String` work per request.
    private let steps: [Step]

    private enum Step {
        case literal([UInt8])
        case parameter(String)
    }

    package init(_ text: String) {
        description = text
        segments = text.split(separator: "/").map { part in
            part.hasPrefix("{") && part.hasSuffix("}") ? .parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
        steps = segments.map {
            switch $0 {
            case .literal(let text): .literal(Array(text.utf8))
            case .parameter(let name): .parameter(name)
            }
        }
    }

    package init(stringLiteral text: String) {
        self.init(text)
    }

    /// A pattern is its text: the rest is derived from it.
    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.description == rhs.description
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(description)
    }

    /// The pattern with each parameter written as `rename` writes its name (a router's own
    /// syntax, `:id`).
    package func path(parameter rename: (String) -> String) -> String {
        "/"
            + segments.map {
                switch $0 {
                case .literal(let text): text
                case .parameter(let name): rename(name)
                }
            }.joined(separator: "/")
    }

    /// Whether `path` (without query) is this pattern; `prefix`: whether it starts with it.
    package func matches(_ path: Substring.UTF8View, prefix: Bool = false) -> Bool {
        Self.withBytes(of: path) { matches($0, prefix: prefix) }
    }

    /// ``matches(_:prefix:)`` on the path's bytes: the hot requests come through here at
    /// every frame, so it walks them with no allocation.
    fileprivate func matches(_ path: UnsafeBufferPointer<UInt8>, prefix: Bool = false) -> Bool {
        walk(path, prefix: prefix, capturing: nil) != nil
    }

    /// The value of the parameter `name` in `path`, if `path` is (or, with `prefix`, starts
    /// with) this pattern.
    package func parameter(_ name: String, in path: Substring.UTF8View, prefix: Bool = false) -> Substring? {
        guard let range = Self.withBytes(of: path, { walk($0, prefix: prefix, capturing: name) })?.captured else { return nil }
        let start = path.index(path.startIndex, offsetBy: range.lowerBound)
        return Substring(path[start..<path.index(start, offsetBy: range.count)])
    }

    /// A path's bytes, in place when its string stores them contiguously (one read off the
    /// wire does), else copied.
    fileprivate static func withBytes<Result>(of path: Substring.UTF8View, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = path.withContiguousStorageIfAvailable(body) { return result }
        return Array(path).withUnsafeBufferPointer(body)
    }

    /// A path that matched, and where the parameter asked for is in it.
    private struct Walk {
        var captured: Range<Int>?
    }

    private func walk(_ path: UnsafeBufferPointer<UInt8>, prefix: Bool, capturing name: String?) -> Walk? {
        let slash = UInt8(ascii: "/")
        var walk = Walk()
        var start = 0
        for step in steps {
            guard start < path.count, path[start] == slash else { return nil }
            start += 1
            var end = start
            while end < path.count, path[end] != slash { end += 1 }
            switch step {
            case .literal(let literal):
                guard end - start == literal.count else { return nil }
                for offset in literal.indices where path[start + offset] != literal[offset] { return nil }
            case .parameter(let parameter):
                guard end > start else { return nil }
                // A name used twice reads its last segment.
                if parameter == name { walk.captured = start..<end }
            }
            start = end
        }
        return prefix || start == path.count ? walk : nil
    }
}

/// The routes of an application, declared once as (method, pattern, kind), and what a request
/// head is from its method and target alone, before its body is read: one of them, a method
/// its path lacks (`405` and `Allow`), a CORS preflight, or nothing declared. `Kind` is the
/// application's word for who answers.
///
/// Paths under the API's first segment (`/api/…`) are the application's: an undeclared one
/// is answered by it (404) whatever the method, and only they take preflights. Every other
/// undeclared path is a file, with the methods `files` lists.
package struct RouteMatcher<Kind: Sendable>: Sendable {
    package struct Route: Sendable {
        package var method: HTTPMethod
        package var pattern: RoutePattern
        package var kind: Kind
        /// Its place in the matcher's table: what a match names it by
        /// (``RouteMatch/routeIndex``).
        package fileprivate(set) var index = 0

        package init(_ method: HTTPMethod, _ pattern: RoutePattern, _ kind: Kind) {
            self.method = method
            self.pattern = pattern
            self.kind = kind
        }

        /// `GET` is answered for `HEAD` too (RFC 9110 §9.3.2).
        package func answers(_ method: HTTPMethod) -> Bool {
            self.method == method || (self.method == .GET && method == .HEAD)
        }
    }

    package enum Match {
        /// A declared route; `path` is the target without its query, to read parameters from.
        case route(Route, path: Substring)
        /// The path is declared, or a file, but not with this method; `allow` lists the ones it has.
        case methodNotAllowed(allow: String)
        /// `OPTIONS` on a declared API path; `allow` lists the methods it has.
        case preflight(allow: String)
        /// Not declared, and the method is one the path may have: an API path the application
        /// answers as unknown, or a file.
        case undeclared
    }

    package let routes: [Route]
    /// The first segment of every API path.
    package let api: String
    /// The methods a file has.
    package let files: [HTTPMethod]

    /// `/` and ``api``: a path is on the API when it starts with it.
    private let apiPrefix: RoutePattern

    /// `api` is one segment's text: no `/`, not empty, not a parameter.
    package init(api: String, files: [HTTPMethod], routes: [Route]) {
        self.api = api
        self.files = files
        self.routes = routes.enumerated().map { index, route in
            var route = route
            route.index = index
            return route
        }
        apiPrefix = RoutePattern("/" + api)
        precondition(apiPrefix.segments == [.literal(api)], "the API's first segment '\(api)' is not one literal segment")
    }

    /// `uri` without its query or fragment.
    package static func path(of uri: String) -> Substring {
        func ends(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") }
        // A target read off the wire is stored contiguously: its bytes are searched as bytes.
        if let length = uri.utf8.withContiguousStorageIfAvailable({ $0.firstIndex(where: ends) ?? $0.count }) {
            return uri[..<uri.utf8.index(uri.utf8.startIndex, offsetBy: length)]
        }
        return uri.utf8.firstIndex(where: ends).map { uri[..<$0] } ?? uri[...]
    }

    /// `path` as its segments spell it, when it has an empty one (`//`, a trailing `/`): the
    /// segments joined again, as routers read a path. `nil` when it has none.
    package static func spelled(_ path: Substring) -> String? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard segments.contains(where: \.isEmpty) else { return nil }
        return "/" + segments.filter { !$0.isEmpty }.joined(separator: "/")
    }

    /// Whether `path` is an API path: its first segment is ``api``.
    package func isAPI(_ path: Substring) -> Bool {
        apiPrefix.matches(path.utf8, prefix: true)
    }

    package func match(_ method: HTTPMethod, uri: String) -> Match {
        let path = Self.path(of: uri)
        // Routes are tried in the order declared: the ones every frame asks for come first.
        let found = RoutePattern.withBytes(of: path.utf8) { bytes in
            routes.first { $0.answers(method) && $0.pattern.matches(bytes) }
        }
        if let found { return .route(found, path: path) }
        let declared = routes.filter { $0.pattern.matches(path.utf8) }
        let api = isAPI(path)
        let allowed: [HTTPMethod]
        if !declared.isEmpty {
            allowed = declared.flatMap { $0.method == .GET ? [.GET, .HEAD] : [$0.method] }
        } else if api {
            return .undeclared
        } else {
            allowed = files
        }
        if allowed.contains(method) { return .undeclared }
        let allow = allowed.map(\.rawValue).joined(separator: ", ")
        if method == .OPTIONS, api { return .preflight(allow: allow) }
        return .methodNotAllowed(allow: allow)
    }

    /// The pattern of the declared route `path` is, whatever the method.
    package func pattern(of path: Substring) -> RoutePattern? {
        patternIndex(of: path).map { routes[$0].pattern }
    }

    /// The place in the table of the first route whose pattern `path` is, whatever the method.
    package func patternIndex(of path: Substring) -> Int? {
        routes.firstIndex { $0.pattern.matches(path.utf8) }
    }

    /// The value of the parameter `name` of the longest declared pattern `path` starts with:
    /// a refusal of `/api/sessions/{id}/nothing` still names its session.
    package func parameter(_ name: String, in path: Substring) -> Substring? {
        routes.lazy.map(\.pattern).filter { $0.segments.contains(.parameter(name)) }.sorted { $0.segments.count > $1.segments.count }
            .lazy.compactMap { $0.parameter(name, in: path.utf8, prefix: true) }.first
    }
}
