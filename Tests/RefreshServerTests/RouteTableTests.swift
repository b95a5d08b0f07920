import Foundation
import NIOHTTP1
import Testing

@testable import RefreshServer

/// The route table against what it must agree with: the API's description, and the
/// matcher's reading of patterns.
@Suite struct RouteTableTests {
    /// `METHOD pattern` for every operation `Public/openapi.yaml` describes: the `paths:` block
    /// read line by line (a path at two spaces of indent, its operations at four), which is
    /// all of YAML this file uses there.
    static func describedOperations() throws -> Set<String> {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Public/openapi.yaml")
        let text = try String(contentsOf: url, encoding: .utf8)
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

    @Test func aPatternMatchesWholeNonEmptySegments() {
        let pattern: RoutePattern = "/api/feeds/{feed}/items"
        #expect(pattern.matches("/api/feeds/news/items"[...].utf8))
        #expect(!pattern.matches("/api/feeds//items"[...].utf8))
        #expect(!pattern.matches("/api/feeds/news/items/"[...].utf8))
        #expect(!pattern.matches("/api/feeds/news/itemsx"[...].utf8))
        #expect(pattern.matches("/api/feeds/news/items/more"[...].utf8, prefix: true))
        #expect(pattern.parameter("feed", in: "/api/feeds/news/items"[...].utf8) == "news")
        #expect(pattern.parameter("feed", in: "/api/feeds/news"[...].utf8) == nil)
    }

    /// A route added to a table is matched, allowed, preflighted and labelled with no other
    /// change: the one line is the whole declaration.
    @Test func aRouteAddedIsOneLine() {
        let matcher = RouteMatcher<String>(
            api: "api", files: [.GET, .HEAD],
            routes: [.init(.GET, "/api/feeds/{feed}", "feed"), .init(.GET, "/api/feeds/{feed}/items", "items")])
        guard case .route(let route, let path) = matcher.match(.GET, uri: "/api/feeds/news/items?limit=3") else {
            Issue.record("not matched")
            return
        }
        #expect(route.kind == "items")
        #expect(route.pattern.parameter("feed", in: path.utf8) == "news")
        guard case .methodNotAllowed(let allow) = matcher.match(.POST, uri: "/api/feeds/news") else {
            Issue.record("not refused")
            return
        }
        #expect(allow == "GET, HEAD")
        guard case .preflight(let allowed) = matcher.match(.OPTIONS, uri: "/api/feeds/news/items") else {
            Issue.record("no preflight")
            return
        }
        #expect(allowed == "GET, HEAD")
        #expect(matcher.pattern(of: "/api/feeds/news/items")?.description == "/api/feeds/{feed}/items")
        #expect(matcher.parameter("feed", in: "/api/feeds/news/nothing") == "news")
        guard case .undeclared = matcher.match(.PUT, uri: "/api/nothing") else {
            Issue.record("an unknown API path is the application's")
            return
        }
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
}
