import Foundation
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
}
