import Foundation
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// Many feeds over real HTTP: each named feed reads and publishes on its own, a session reads
/// the feed it was created for, and news reaches only that feed's sessions.
@Suite struct FeedRoutesTests {
    private func publish(_ server: TestServer, to feed: String, _ id: String, minute: Int = 0) async throws -> TestServer.Reply {
        try await server.post(
            "/api/feeds/\(feed)/items",
            #"{"id":"\#(id)","title":"\#(id) in \#(feed)","published":"2030-01-01T00:\#(String(format: "%02d", minute)):00Z"}"#)
    }

    private func gauge(_ name: String, _ server: TestServer) async throws -> Double? {
        let line = try await server.get("/metrics").text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.dropFirst(name.count + 1)) }
    }

    private func ids(_ reply: TestServer.Reply) -> [String] {
        (reply.json["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    @Test func aFeedNothingWasPublishedToIsEmptyWithHeadZero() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let page = try await server.get("/api/feeds/team.eng/items")
            #expect(page.status == 200)
            #expect(ids(page) == [])
            #expect(page.json["hasMore"] as? Bool == false)
            let feed = try await server.get("/api/feeds/team.eng")
            #expect(feed.status == 200)
            #expect(feed.json["name"] as? String == "team.eng")
            #expect(feed.json["head"] as? Int == 0)
        }
    }

    @Test func theSameIDInTwoFeedsIsTwoItemsAndPositionsAreDensePerFeed() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            #expect(try await publish(server, to: "user:42", "a", minute: 1).status == 201)
            #expect(try await publish(server, to: "user:42", "b", minute: 2).status == 201)
            let other = try await publish(server, to: "user:43", "a", minute: 3)
            #expect(other.status == 201)
            #expect(ids(other) == ["a"])
            #expect(ids(try await server.get("/api/feeds/user:42/items")) == ["b", "a"])
            #expect(ids(try await server.get("/api/feeds/user:43/items")) == ["a"])
            #expect(try await server.get("/api/feeds/user:42").json["head"] as? Int == 2)
            #expect(try await server.get("/api/feeds/user:43").json["head"] as? Int == 1)
            // `main` is untouched, and `/api/items` is `main`.
            let main = ids(try await server.get("/api/items"))
            #expect(main.count == 3)
            #expect(ids(try await server.get("/api/feeds/main/items")) == main)
            #expect(try await server.get("/api/feeds/main").json["head"] as? Int == 3)
            // A name percent-encoded in the path, as encodeURIComponent writes it, is the name.
            #expect(ids(try await server.get("/api/feeds/user%3A42/items")) == ["b", "a"])
            #expect(try await server.get("/api/feeds/user%3a42").json["head"] as? Int == 2)
            // A cursor names an item of the feed read, not of another.
            #expect(ids(try await server.get("/api/feeds/user:42/items?before=b")) == ["a"])
            #expect(try await server.get("/api/feeds/user:43/items?before=b").status == 404)
        }
    }

    @Test(arguments: ["-lead", "a%20b", "caf%C3%A9", String(repeating: "x", count: 129), "a%2Fb", "%00"])
    func aBadNameIsRefusedByEveryRouteInTheSameWords(name: String) async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let replies = [
                try await server.get("/api/feeds/\(name)/items"),
                try await server.get("/api/feeds/\(name)"),
                try await server.post("/api/feeds/\(name)/items", #"{"title":"x"}"#),
            ]
            for reply in replies {
                #expect(reply.status == 400, "\(reply.text)")
                #expect(reply.json["error"] as? String == "invalid_feed")
            }
            let body = try JSONSerialization.data(withJSONObject: ["feed": name.removingPercentEncoding ?? name])
            let session = try await server.post("/api/sessions", String(decoding: body, as: UTF8.self))
            #expect(session.status == 400)
            #expect(session.json["error"] as? String == "invalid_feed")
            #expect(try await server.get("/api/feeds/main").json["head"] as? Int == 3, "nothing was stored")
        }
    }

    /// An empty name: the router reads `//` as `/`, which must not name the feed `items`.
    @Test func anEmptyNameIsNoFeed() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            #expect(try await publish(server, to: "items", "x").status == 201)
            let page = try await server.get("/api/feeds//items")
            #expect(page.status == 400)
            #expect(page.json["error"] as? String == "invalid_feed")
            #expect(try await server.post("/api/feeds//items", #"{"title":"y"}"#).status == 404)
            #expect(try await server.get("/api/feeds/").status == 404)
            let session = try await server.post("/api/sessions", #"{"feed":""}"#)
            #expect(session.json["error"] as? String == "invalid_feed")
            #expect(try await server.get("/api/feeds/items").json["head"] as? Int == 1, "nothing was stored")
        }
    }

    @Test func theLongestNameIsAFeed() async throws {
        let name = "A" + String(repeating: "z", count: 127)
        try await TestServer.run(feed: MemoryFeed()) { server in
            let published = try await publish(server, to: name, "a")
            #expect(published.status == 201)
            #expect(try await server.get("/api/feeds/\(name)").json["head"] as? Int == 1)
            #expect(try await server.get("/api/feeds/\(name.lowercased())").json["head"] as? Int == 0, "names are case-sensitive")
        }
    }

    @Test func aSessionReadsItsFeedAndSaysWhich() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            #expect(try await publish(server, to: "team", "t1").status == 201)
            let created = try await server.post("/api/sessions", #"{"feed":"team","firstPage":true}"#)
            #expect(created.status == 201)
            #expect(created.json["feed"] as? String == "team")
            let firstPage = created.json["firstPage"] as? [String: Any]
            #expect((firstPage?["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["t1"])
            let id = try #require(created.json["id"] as? String)
            #expect(try await server.get("/api/sessions/\(id)").json["feed"] as? String == "team")
            let main = try await server.post("/api/sessions", "{}")
            #expect(main.json["feed"] as? String == "main")
        }
    }

    /// A publish tells its feed's sessions, once, and no session of another feed.
    @Test func newsReachesOnlyTheFeedPublishedTo() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            #expect(try await publish(server, to: "team", "t1", minute: 1).status == 201)
            let (_, team) = try await server.watchedSession(#"{"feed":"team","firstPage":true}"#)
            let (_, main) = try await server.watchedSession(#"{"firstPage":true}"#)
            // Past the head `team` shows: news of it there would come first.
            #expect(try await publish(server, to: "other", "o1", minute: 2).status == 201)
            #expect(try await publish(server, to: "other", "o2", minute: 2).status == 201)
            #expect(try await publish(server, to: "team", "t2", minute: 3).status == 201)
            let news = try await team.nextEvent()
            #expect(news.event == "news")
            #expect(news.json["count"] as? Int == 1)
            #expect(news.json["head"] as? Int == 2)
            #expect((news.json["newest"] as? [String: Any])?["id"] as? String == "t2")
            // `main` heard of neither: its first news is its own.
            #expect(try await server.post("/api/items", #"{"id":"m1","title":"m1","published":"2030-01-01T00:04:00Z"}"#).status == 201)
            let mainNews = try await main.nextEvent()
            #expect(mainNews.event == "news")
            #expect(mainNews.json["count"] as? Int == 1)
            #expect(mainNews.json["head"] as? Int == 4)
        }
    }

    /// A refresh brings its own feed's items, never another's.
    @Test func aRefreshReadsOnlyItsFeed() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let (id, stream) = try await server.watchedSession(#"{"feed":"team"}"#)
            #expect(try await publish(server, to: "team", "t1", minute: 1).status == 201)
            #expect(try await publish(server, to: "elsewhere", "e1", minute: 2).status == 201)
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let events = try await stream.events(until: "done")
            let brought = events.filter { $0.event == "items" }.flatMap {
                ($0.json["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            }
            #expect(brought == ["t1"])
        }
    }

    @Test func activeFeedsAreCountedBySessionsHere() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            func active() async throws -> Double? {
                try await gauge("ptr_feeds_active", server)
            }
            #expect(try await active() == 0)
            let first = try await server.session(#"{"feed":"a"}"#)
            _ = try await server.session(#"{"feed":"a"}"#)
            let main = try await server.session("{}")
            #expect(try await active() == 2)
            #expect(try await server.request(.DELETE, "/api/sessions/\(main)").status == 204)
            #expect(try await server.request(.DELETE, "/api/sessions/\(first)").status == 204)
            #expect(try await active() == 1, "a feed stays while a session reads it")
        }
    }

    /// A server built over a single source (not a store of feeds) holds `main` alone, and
    /// says so rather than inventing the others.
    @Test func aServerOverOneSourceRefusesOtherFeeds() async throws {
        try await TestServer.run(feed: ScriptedFeed(items: items(3), behaviour: .steps(1, every: .zero))) { server in
            #expect(try await server.get("/api/feeds/main/items").status == 200)
            let other = try await server.get("/api/feeds/other/items")
            #expect(other.status == 404)
            #expect(other.json["error"] as? String == "feed_not_found")
            let session = try await server.post("/api/sessions", #"{"feed":"other"}"#)
            #expect(session.status == 404)
            #expect(try await gauge("ptr_sessions", server) == 0)
        }
    }
}
