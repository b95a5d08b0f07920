import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import RefreshEngine
import RefreshJSON
import Testing

@testable import RefreshFeed
@testable import RefreshServer

@Suite struct JSONTests {
    @Test(arguments: [
        (#"{"a":[1,-2.5e3,true,false,null,"x\"\\\/\n\u00e9\ud83d\ude00"]}"#, true),
        ("  {}  ", true),
        ("{\"a\":01}", false),
        ("{\"a\":1,}", false),
        ("{'a':1}", false),
        ("{\"a\":\"\u{01}\"}", false),
        (#"{"a":"\ud800"}"#, false),
        ("[1] x", false),
        ("-", false),
        ("1.", false),
    ])
    func parsesOnlyValidJSON(text: String, valid: Bool) {
        let parsed = try? JSONParser.parse(Array(text.utf8))
        #expect((parsed != nil) == valid, "\(text)")
    }

    @Test func decodesStringsAndNumbers() throws {
        let value = try JSONParser.parse(Array(#"{"s":"é\u00e9\ud83d\ude00","n":-0.5,"big":1e400}"#.utf8))
        guard case .object(let members) = value else { throw TestFailure("not an object") }
        #expect(members["s"] == .string("éé😀"))
        #expect(members["n"] == .number(-0.5))
        #expect(members["big"] == .number(.infinity))
    }

    @Test func refusesDeepNesting() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Array(deep.utf8)) }
    }

    @Test func writesEscapedStringsAndCompactNumbers() {
        var json = JSONWriter()
        json.beginObject()
        json.field("text", "a\"b\\c\n<script>&\u{2028}\u{1}")
        json.field("whole", 80.0)
        json.field("fraction", 0.5)
        json.field("nan", Double.nan)
        json.field("none", nil as String?)
        json.endObject()
        #expect(
            String(buffer: json.buffer)
                == #"{"text":"a\"b\\c\n\u003cscript\u003e\u0026\u2028\u0001","whole":80,"fraction":0.5,"nan":null,"none":null}"#)
        let roundTrip = try? JSONSerialization.jsonObject(with: Data(json.buffer.readableBytesView)) as? [String: Any]
        #expect(roundTrip?["text"] as? String == "a\"b\\c\n<script>&\u{2028}\u{1}")
    }
}

@Suite struct TimestampTests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", Int64(0)),
        ("2026-11-22T08:00:00Z", Int64(1_795_334_400_000)),
        ("2026-11-22T09:00:00+01:00", Int64(1_795_334_400_000)),
        ("2026-11-22t08:00:00.250z", Int64(1_795_334_400_250)),
        ("2000-02-29T12:00:00-05:30", Int64(951_845_400_000)),
        ("1969-12-31T23:59:59.5Z", Int64(-500)),
    ])
    func parsesRFC3339(text: String, milliseconds: Int64) {
        #expect(Timestamp(rfc3339: text)?.milliseconds == milliseconds)
    }

    @Test(arguments: ["2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-22", "2026-11-22T08:00:00", "yesterday", "2026-11-22T25:00:00Z", ""])
    func refusesOthers(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test func formatsRoundTrip() {
        for milliseconds: Int64 in [0, 1_795_334_400_000, 1_795_334_400_250, -500, 951_845_400_000] {
            let text = Timestamp(milliseconds: milliseconds).rfc3339
            #expect(Timestamp(rfc3339: text)?.milliseconds == milliseconds, "\(text)")
        }
        #expect(Timestamp(milliseconds: 1_795_334_400_000).rfc3339 == "2026-11-22T08:00:00Z")
        #expect(Timestamp(milliseconds: 1_795_334_400_250).rfc3339 == "2026-11-22T08:00:00.250Z")
    }
}

@Suite struct MemoryFeedTests {
    /// Twelve items sharing four timestamps: paging must neither skip nor repeat.
    @Test func pagesThroughTiesWithoutSkippingOrRepeating() async throws {
        let all = (0..<12).map { FeedItem(id: "id-\($0)", title: "t", published: Timestamp(milliseconds: Int64($0 / 3) * 1000)) }
        let feed = MemoryFeed(items: all.shuffled())
        let seen = try await allIDsByPaging(feed, limit: 5)
        let expected = all.sorted { $0.cursor > $1.cursor }.map(\.id)
        #expect(seen == expected)
        #expect(Set(seen).count == 12)
    }

    @Test func newerThanACursorAndGaps() async throws {
        let feed = MemoryFeed(items: items(10))
        let cursor = try #require(try await feed.item(id: "item-5")).cursor
        let page = try await feed.newer(than: cursor, limit: 10)
        #expect(page.items.map(\.id) == (0..<5).map { "item-\($0)" })
        #expect(!page.hasMore)
        let gap = try await feed.newer(than: cursor, limit: 3)
        #expect(gap.items.map(\.id) == ["item-0", "item-1", "item-2"])
        #expect(gap.hasMore)
    }

    @Test func publishingTheSameIDReplaces() async throws {
        let feed = MemoryFeed(items: items(3))
        _ = try await feed.publish([FeedItem(id: "item-1", title: "edited", published: Timestamp(milliseconds: 1_900_000_000_000))])
        let page = try await feed.older(than: nil, limit: 10)
        #expect(page.items.map(\.id) == ["item-1", "item-0", "item-2"])
        #expect(page.items.first?.title == "edited")
    }
}

/// A stream that is open but never woken in the test.
private final class SilentListener: EventListener {
    let eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {}
}

@Suite struct SessionStoreTests {
    @Test func idleSessionsExpireButOnesWithStreamsStay() throws {
        var configuration = ServerConfiguration()
        configuration.sessionIdleTimeout = .seconds(60)
        let runner = ActionRunner(feed: MemoryFeed(), news: NewsHub(), configuration: configuration)
        let store = SessionStore(runner: runner, limits: configuration)
        let idle = try store.create(
            config: .init(top: Preset.standard.config.top, bottom: Preset.standard.config.bottom, rotation: true, prefetch: false), client: "test")
        let watched = try store.create(config: Preset.standard.config, client: "test")
        _ = watched.subscribe(SilentListener(), lastEventID: nil, now: .now)
        #expect(store.expireIdle(now: .now) == 0)
        #expect(store.expireIdle(now: .now + .seconds(61)) == 1)
        #expect(throws: APIError.self) { try store.session(idle.id) }
        #expect(try store.session(watched.id) === watched)
    }
}

@Suite struct HotRouteTests {
    let routes: HotRoutes = {
        let configuration = ServerConfiguration()
        let sessions = SessionStore(runner: ActionRunner(feed: MemoryFeed(), news: NewsHub(), configuration: configuration), limits: configuration)
        return HotRoutes(
            sessions: sessions, streams: StreamGate(maxStreams: 10, maxPerClient: 10), proxies: TrustedProxies(),
            configuration: configuration, logger: Logger(label: "test")
        ) { _, _ in Response(status: .ok) }
    }()

    func head(_ method: HTTPMethod, _ path: String) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: ["Host": "localhost"])
    }

    @Test func onlySamplesPostsAndEventStreamsAreHot() {
        #expect(RouteTable.route(.POST, uri: "/api/sessions/abc/samples") == .samples(session: "abc"))
        #expect(RouteTable.route(.POST, uri: "/api/sessions/abc/samples?debug=1") == .samples(session: "abc"))
        #expect(RouteTable.route(.GET, uri: "/api/sessions/abc/events?lastEventId=4") == .events(session: "abc"))
        #expect(RouteTable.route(.POST, uri: "/api/sessions/abc") == .methodNotAllowed(allow: "GET, HEAD, DELETE"))
        #expect(RouteTable.route(.POST, uri: "/api/sessions/abc/samples/more") == .router)
        #expect(RouteTable.route(.POST, uri: "/api/sessions") == .router)
        #expect(RouteTable.route(.GET, uri: "/static/api/sessions/abc/events") == .router)
        #expect(RouteTable.route(.DELETE, uri: "/api/sessions/abc/refresh") == .router)
    }

    @Test func aMethodAPathDoesNotHaveIsRefusedWithTheOnesItHas() {
        #expect(RouteTable.route(.GET, uri: "/api/sessions/abc/samples") == .methodNotAllowed(allow: "POST"))
        #expect(RouteTable.route(.POST, uri: "/api/sessions/abc/events") == .methodNotAllowed(allow: "GET, HEAD"))
        // HEAD wherever GET is: the stream's head, answered where the stream would be.
        #expect(RouteTable.route(.HEAD, uri: "/api/sessions/abc/events") == .events(session: "abc"))
        #expect(RouteTable.route(.PUT, uri: "/api/items") == .methodNotAllowed(allow: "GET, HEAD, POST"))
        #expect(RouteTable.route(.GET, uri: "/api/sessions") == .methodNotAllowed(allow: "POST"))
        #expect(RouteTable.route(.PATCH, uri: "/api/sessions/abc/refresh") == .methodNotAllowed(allow: "POST, DELETE"))
        #expect(RouteTable.route(.DELETE, uri: "/index.html") == .methodNotAllowed(allow: "GET, HEAD"))
        #expect(RouteTable.route(.POST, uri: "/healthz") == .methodNotAllowed(allow: "GET, HEAD"))
        // An API path that does not exist is the router's 404, whatever the method.
        #expect(RouteTable.route(.PUT, uri: "/api/nothing") == .router)
    }

    @Test func aResumePointComesFromTheHeaderOrTheQuery() throws {
        let session = try routes.sessions.create(config: Preset.standard.config, client: "test")
        var request = head(.GET, "/api/sessions/\(session.id)/events?lastEventId=7")
        #expect(try routes.eventStreamRequest(request, session: session.id).lastEventID == 7)
        request.headers.replaceOrAdd(name: "Last-Event-ID", value: " 9 ")
        #expect(try routes.eventStreamRequest(request, session: session.id).lastEventID == 9)
        request.headers.replaceOrAdd(name: "Last-Event-ID", value: "nine")
        #expect(throws: APIError.self) { try routes.eventStreamRequest(request, session: session.id) }
        #expect(throws: APIError.sessionNotFound("gone")) { try routes.eventStreamRequest(head(.GET, "/"), session: "gone") }
    }

    @Test func theDateHeaderIsAnIMFFixdate() {
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(1_795_356_000) == "Sun, 22 Nov 2026 14:00:00 GMT")
    }
}

@Suite struct TrustedProxiesTests {
    func client(_ peer: String, _ forwarded: [String], trusting trusted: [String]) throws -> String {
        let proxies = TrustedProxies(trusted.compactMap(TrustedProxies.Network.init))
        return proxies.client(peer: try SocketAddress(ipAddress: peer, port: 1), forwardedFor: forwarded)
    }

    @Test func theHeaderIsIgnoredFromAnUntrustedPeer() throws {
        #expect(try client("203.0.113.9", ["198.51.100.1"], trusting: []) == "203.0.113.9")
        #expect(try client("203.0.113.9", ["198.51.100.1"], trusting: ["10.0.0.0/8"]) == "203.0.113.9")
    }

    @Test func aTrustedProxyNamesTheNearestUntrustedHop() throws {
        #expect(try client("10.0.0.2", ["198.51.100.1, 10.0.0.7"], trusting: ["10.0.0.0/8"]) == "198.51.100.1")
        // A client cannot push itself out of view by adding hops of its own on the left.
        #expect(try client("10.0.0.2", ["1.2.3.4, 198.51.100.1"], trusting: ["10.0.0.0/8"]) == "198.51.100.1")
    }

    @Test(arguments: ["198.51.100.1:4711", "[2001:db8::1]:443", " 2001:db8::1 "])
    func hopsWithPortsOrBracketsAreUnderstood(hop: String) throws {
        let expected = hop.contains("198.51") ? "198.51.100.1" : "2001:db8:0:0::/64"
        #expect(try client("10.0.0.2", [hop], trusting: ["10.0.0.0/8"]) == expected)
    }

    @Test func anIPv6ClientCountsByItsSlash64() throws {
        let one = try client("2001:db8:1:2::1", [], trusting: [])
        let other = try client("2001:db8:1:2:ffff::9", [], trusting: [])
        #expect(one == other)
        #expect(try client("2001:db8:1:3::1", [], trusting: []) != one)
    }

    @Test func aNetworkIsParsedOrRefused() {
        #expect(TrustedProxies.Network("10.0.0.0/8") != nil)
        #expect(TrustedProxies.Network("::1") != nil)
        #expect(TrustedProxies.Network("10.0.0.0/33") == nil)
        #expect(TrustedProxies.Network("proxy.example") == nil)
    }
}
