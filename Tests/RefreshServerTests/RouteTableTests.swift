import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import RefreshHTTP
@testable import RefreshServer

/// The route table against what it must agree with: the API's description, and the
/// matcher's reading of patterns.
@Suite struct RouteTableTests {
    /// `METHOD pattern` for every operation `Public/openapi.yaml` describes: the `paths:` block
    /// read line by line (a path at two spaces of indent, its operations at four), which is
    /// all of YAML this file uses there.
    static func describedOperations() throws -> Set<String> {
        let text = try APIDocument.text()
        let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
        var operations = Set<String>()
        var inPaths = false
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" "), !line.isEmpty {
                inPaths = line == "paths:"
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), !line.hasPrefix("   "), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":"), let path {
                let key = String(line.dropFirst(4).dropLast())
                if methods.contains(key) { operations.insert("\(key.uppercased()) \(path)") }
            }
        }
        return operations
    }

    @Test func theTableAndTheAPIDescriptionHaveTheSameOperations() throws {
        let described = try Self.describedOperations()
        #expect(described.count >= 13)
        let declared = Set(RouteTable.matcher.routes.map { "\($0.method.rawValue) \($0.pattern)" })
        #expect(declared.count == RouteTable.matcher.routes.count, "a route is declared twice")
        #expect(declared.subtracting(described).isEmpty, "declared but not described: \(declared.subtracting(described).sorted())")
        #expect(described.subtracting(declared).isEmpty, "described but not declared: \(described.subtracting(declared).sorted())")
    }

    @Test func everyRoutedRouteIsRegisteredAtItsPatternWithTheRoutersSyntax() {
        let paths = RouteTable.matcher.routes.map { $0.pattern.path { ":" + $0 } }
        #expect(paths.contains("/api/sessions/:id/load-more"))
        #expect(paths.contains("/api/items"))
        #expect(!paths.contains { $0.contains("{") })
    }

    @Test func aRefusalNamesTheSessionOfAnySessionPath() {
        #expect(RouteTable.session(in: "/api/sessions/abc/samples") == "abc")
        #expect(RouteTable.session(in: "/api/sessions/0000/nothing") == "0000")
        #expect(RouteTable.session(in: "/api/sessions/abc?x=1") == "abc")
        #expect(RouteTable.session(in: "/api/items") == nil)
        #expect(RouteTable.session(in: "/api/sessions") == nil)
    }

    @Test func theOriginRulesHoldOnTheAPIOnly() {
        #expect(RouteTable.isAPI("/api/items?x"))
        #expect(RouteTable.isAPI("/api"))
        #expect(!RouteTable.isAPI("/apis/x"))
        #expect(!RouteTable.isAPI("/index.html"))
        #expect(RequestPolicy.changesState(.POST, onAPI: true))
        #expect(!RequestPolicy.changesState(.GET, onAPI: true))
        #expect(!RequestPolicy.changesState(.POST, onAPI: false))
    }

    /// Admission's match names the route by its place in the table, and the pattern of a
    /// path whatever the method: what metrics, logs and dispatch read instead of the path.
    @Test func aMatchNamesItsRouteByItsPlaceInTheTable() throws {
        let item = RouteTable.match(.PATCH, uri: "/api/feeds/news/items/7?x=1")
        let index = try #require(item.routeIndex, "no route for a declared PATCH")
        #expect(RouteTable.matcher.routes[index].pattern == "/api/feeds/{feed}/items/{item}")
        #expect(RouteTable.matcher.routes[index].method == .PATCH)
        #expect(item.patternIndex == index)
        #expect(item.isAPI)
        let lacking = RouteTable.match(.POST, uri: "/api/feeds/news/items/7")
        #expect(lacking.routeIndex == nil, "a method the path lacks has no route")
        #expect(RouteTable.label(lacking, head: nil, status: 405) == "/api/feeds/{feed}/items/{item}")
        let head = RouteTable.match(.HEAD, uri: "/api/items")
        #expect(head.routeIndex.map { RouteTable.matcher.routes[$0].method } == .GET, "HEAD is not answered by GET's route")
        let unknown = RouteTable.match(.GET, uri: "/api/nothing")
        #expect(unknown.routeIndex == nil && unknown.patternIndex == nil && unknown.isAPI)
        #expect(RouteTable.label(unknown, head: nil, status: 404) == "other")
        let file = RouteTable.match(.GET, uri: "/app.js")
        #expect(!file.isAPI && file.routeIndex == nil)
        #expect(RouteTable.label(file, head: nil, status: 200) == "static")
        // A path with an empty segment is the routed route its segments spell, named by no
        // pattern, on the API when that route is; the connection's own routes never take it.
        let slash = RouteTable.match(.POST, uri: "/api/items/")
        #expect(slash.routeIndex.map { RouteTable.matcher.routes[$0].pattern } == "/api/items")
        #expect(slash.patternIndex == nil && slash.isAPI)
        #expect(RouteTable.match(.GET, uri: "//api/items").isAPI, "a path spelled //api/… is not on the API")
        #expect(RouteTable.label(RouteTable.match(.GET, uri: "/healthz/"), head: nil, status: 200) == "other", "a spelled route counted as a file")
        #expect(RouteTable.match(.POST, uri: "//api/items").route == .methodNotAllowed(allow: "GET, HEAD"), "a file was posted to")
        #expect(RouteTable.match(.POST, uri: "/api/sessions/abc//samples") == RouteMatch(.router, isAPI: true))
        #expect(RouteTable.match(.GET, uri: "/api/sessions//abc/events") == RouteMatch(.router, isAPI: true))
        let refresh = RouteTable.match(.POST, uri: "/api/sessions/abc/refresh")
        #expect(RouteTable.session(in: "/api/sessions/abc/refresh", match: refresh) == "abc")
        #expect(RouteTable.session(in: "/api/feeds/abc", match: RouteTable.match(.GET, uri: "/api/feeds/abc")) == nil, "a feed read as a session")
    }

    /// A routed request is answered by the route its match names, with that route's
    /// parameters, and the path is not matched again: a match that names another route than
    /// the path's is answered by that route.
    @Test func theResponderAnswersByTheMatchItIsGiven() async throws {
        let echo: RouteTable.Handler = { _, context in
            Response(status: .ok, body: .init(byteBuffer: .init(string: "id=\(context.parameters.get("id") ?? "-")")))
        }
        let other: RouteTable.Handler = { _, _ in Response(status: .accepted) }
        let files: RouteTable.Handler = { _, _ in Response(status: .noContent) }
        let responder = RoutedResponder(handlers: [(echo, "/api/sessions/{id}"), (other, "/api/items"), nil], files: files)
        let channel = EmbeddedChannel()
        let context = ServerRequestContext(source: .init(channel: channel, logger: Logger(label: "test"), client: "127.0.0.1"))
        func request(_ path: String) -> Request {
            Request(head: HTTPRequest(method: .get, scheme: nil, authority: "localhost", path: path), body: RequestBody(buffer: .init()))
        }
        func body(_ response: Response) async throws -> String {
            var collected = ByteBuffer()
            let writer = CollectingWriter { collected.writeImmutableBuffer($0) }
            try await response.body.write(writer)
            return String(buffer: collected)
        }
        let session = try await responder.respond(
            to: request("/api/sessions/abc"), context: context, match: RouteMatch(.router, routeIndex: 0, patternIndex: 0, isAPI: true))
        #expect(session.status == .ok)
        #expect(try await body(session) == "id=abc")
        let named = try await responder.respond(
            to: request("/api/sessions/abc"), context: context, match: RouteMatch(.router, routeIndex: 1, patternIndex: 1, isAPI: true))
        #expect(named.status == .accepted, "the path was matched again")
        // Parameters come from the path admission matched, which ends at a fragment too.
        let fragment = try await responder.respond(
            to: request("/api/sessions/abc#/x"), context: context, match: RouteMatch(.router, routeIndex: 0, patternIndex: 0, isAPI: true))
        #expect(try await body(fragment) == "id=abc")
        // A route whose parameter the path cannot give is the server's fault, never a default.
        let unread = try await responder.respond(
            to: request("/api/items"), context: context, match: RouteMatch(.router, routeIndex: 0, patternIndex: 0, isAPI: true))
        #expect(unread.status == .internalServerError)
        let file = try await responder.respond(to: request("/app.js"), context: context, match: RouteMatch(.router, isAPI: false))
        #expect(file.status == .noContent)
        let unknown = try await responder.respond(to: request("/api/nothing"), context: context, match: RouteMatch(.router, isAPI: true))
        #expect(unknown.status == .notFound)
    }
}

/// A response body's bytes, as they are written.
private final class CollectingWriter: ResponseBodyWriter {
    let collect: (ByteBuffer) -> Void

    init(_ collect: @escaping (ByteBuffer) -> Void) {
        self.collect = collect
    }

    func write(_ buffer: ByteBuffer) async throws {
        collect(buffer)
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
