import Testing

@testable import RefreshHTTP

/// The generic matcher alone; the server's own table is held in RouteTableTests.
@Suite struct RouteMatcherTests {
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

    /// The walk is over bytes: a parameter is read back at its place in the path it was
    /// given, a slice of a longer string or one with characters of several bytes.
    @Test func aParameterIsReadWhereItStands() {
        let pattern: RoutePattern = "/api/{kind}/{feed}/items"
        let target = "GET /api/zoë/Über:ålle/items?x=1"
        let path = target.dropFirst(4).prefix { $0 != "?" }
        #expect(pattern.parameter("kind", in: path.utf8) == "zoë")
        #expect(pattern.parameter("feed", in: path.utf8) == "Über:ålle")
        #expect(pattern.parameter("other", in: path.utf8) == nil)
        #expect(pattern.matches(path.utf8))
        #expect(!pattern.matches(path.dropLast().utf8))
        #expect(!RoutePattern("/api/zoe").matches("/api/zoë"[...].utf8))
        #expect(RoutePattern("/api/zoë").matches("/api/zoë/more"[...].utf8, prefix: true))
    }

    /// A path is walked from its first `/`: a target in another form is no route, and a
    /// name a pattern uses twice reads its last segment.
    @Test func aPathStartsAtItsSlash() {
        let pattern: RoutePattern = "/api/feeds/{feed}/items"
        #expect(!pattern.matches("xapi/feeds/news/items"[...].utf8))
        #expect(!pattern.matches("http://host/api/feeds/news/items"[...].utf8))
        #expect(!pattern.matches(""[...].utf8, prefix: true))
        #expect(RoutePattern("/a/{x}/b/{x}").parameter("x", in: "/a/1/b/2"[...].utf8) == "2")
        let matcher = RouteMatcher<String>(api: "api", files: [.GET], routes: [])
        #expect(matcher.isAPI("/api") && matcher.isAPI("/api/x") && !matcher.isAPI("/apis") && !matcher.isAPI("api/x") && !matcher.isAPI(""))
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
}
