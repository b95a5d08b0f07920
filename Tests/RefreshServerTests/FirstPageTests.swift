import Foundation
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// `POST /api/sessions {"firstPage": true}` over real HTTP: the answer brings the newest
/// items, so a page shows rows one round trip after it asked for its session, and the
/// session then goes on from that page exactly as if a load-more had brought it.
@Suite struct FirstPageTests {
    private func ids(_ items: Any?) -> [String] {
        (items as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    @Test func theAnswerCarriesTheNewestPageAndTheSessionPagesOnBelowIt() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(30))) { server in
            let reply = try await server.post("/api/sessions", #"{"firstPage":true}"#)
            #expect(reply.status == 201)
            let page = try #require(reply.json["firstPage"] as? [String: Any])
            #expect(ids(page["items"]) == Array(items(30).map(\.id)[..<20]))
            #expect(page["hasMore"] as? Bool == true)
            #expect(page["head"] as? Int == 30)
            let id = try #require(reply.json["id"] as? String)

            // Nothing of it comes again on the stream: a page that follows from event 0 gets
            // the snapshot of the log, no `items`.
            let stream = try await server.events(id, lastEventID: 0)
            // Near the end of what it shows, infinite scroll brings the next page, below it.
            let state = try await server.sample(id, seq: 1, y: 1000, phase: "scroll", content: 2000, viewport: 800)
            #expect(state["phase"] as? String == "loading")
            let events = try await stream.events(until: "done")
            let loaded = try #require(events.first { $0.event == "items" })
            #expect(events.filter { $0.event == "items" }.count == 1)
            #expect(ids(loaded.json["items"]) == Array(items(30).map(\.id)[20...]))
            #expect(loaded.json["head"] == nil, "the list was already up to date")
        }
    }

    @Test func whatTheFeedGainsAfterTheFirstPageIsNews() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let reply = try await server.post("/api/sessions", #"{"firstPage":true}"#)
            let id = try #require(reply.json["id"] as? String)
            let stream = try await server.events(id)
            _ = try await stream.nextEvent()  // the snapshot
            let item = #"{"id":"fresh","title":"Fresh","published":"2030-01-01T00:00:00Z"}"#
            #expect(try await server.post("/api/items", item).status == 201)
            let news = try await stream.nextEvent()
            #expect(news.event == "news")
            #expect(news.json["count"] as? Int == 1)
            #expect(news.json["head"] as? Int == 4)
        }
    }

    /// A feed with no more than a page has nothing to load: a list shorter than its
    /// viewport starts no load-more.
    @Test func aShortFeedsFirstPageLeavesNothingToLoad() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let reply = try await server.post("/api/sessions", #"{"firstPage":true}"#)
            let page = try #require(reply.json["firstPage"] as? [String: Any])
            #expect(ids(page["items"]).count == 3)
            #expect(page["hasMore"] as? Bool == false)
            let id = try #require(reply.json["id"] as? String)
            let state = try await server.sample(id, seq: 1, y: 0, phase: "scroll", content: 300, viewport: 800)
            #expect(state["phase"] as? String == "idle", "no load-more for a feed that has no more")
        }
    }

    @Test func anEmptyFeedsFirstPageIsEmpty() async throws {
        try await TestServer.run(feed: MemoryFeed(items: [])) { server in
            let reply = try await server.post("/api/sessions", #"{"firstPage":true}"#)
            #expect(reply.status == 201)
            let page = try #require(reply.json["firstPage"] as? [String: Any])
            #expect(ids(page["items"]) == [])
            #expect(page["hasMore"] as? Bool == false)
            #expect(page["head"] as? Int == 0)
        }
    }

    /// Without `firstPage` the answer is as it always was, and the first page comes by a
    /// load-more; a list that is continued needs none; one that cannot be continued starts
    /// over with one.
    @Test func onlyAListThatStartsOverAndAsksGetsAFirstPage() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(30))) { server in
            let plain = try await server.post("/api/sessions", "{}")
            #expect(plain.status == 201)
            #expect(plain.json["firstPage"] == nil)
            let declined = try await server.post("/api/sessions", #"{"firstPage":false}"#)
            #expect(declined.status == 201)
            #expect(declined.json["firstPage"] == nil)

            let resume = #"{"head":30,"oldest":"item-19"}"#
            let continued = try await server.post("/api/sessions", #"{"firstPage":true,"resume":\#(resume)}"#)
            #expect(continued.json["resumed"] as? Bool == true)
            #expect(continued.json["firstPage"] == nil)

            let lost = #"{"head":30,"oldest":"nowhere"}"#
            let restarted = try await server.post("/api/sessions", #"{"firstPage":true,"resume":\#(lost)}"#)
            #expect(restarted.json["resumed"] == nil)
            let page = try #require(restarted.json["firstPage"] as? [String: Any])
            #expect(ids(page["items"]).first == "item-0")
        }
    }

    /// A page the server would turn away from its stream gets no rows it could not keep up
    /// to date: its first page comes by a load-more, through the stream once it is taken up.
    @Test func aPageWithNoRoomForItsStreamGetsItsFirstPageThroughTheStream() async throws {
        let configuration = TestServer.configuration { $0.maxStreams = 1 }
        try await TestServer.run(configuration, feed: MemoryFeed(items: items(30))) { server in
            // The server's one stream, held open to the end.
            let (_, held) = try await server.watchedSession()
            let reply = try await server.post("/api/sessions", #"{"firstPage":true}"#)
            #expect(reply.status == 201)
            #expect(reply.json["firstPage"] == nil)
            let id = try #require(reply.json["id"] as? String)
            let state = try await server.sample(id, seq: 1, y: 0, phase: "scroll", content: 0, viewport: 800)
            #expect(state["phase"] as? String == "loading", "the first page is loaded as without `firstPage`")
            withExtendedLifetime(held) {}
        }
    }

    @Test(arguments: [#"{"firstPage":1}"#, #"{"firstPage":"yes"}"#])
    func aFirstPageThatIsNotABooleanIsRefused(body: String) async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let reply = try await server.post("/api/sessions", body)
            #expect(reply.status == 400)
            #expect((reply.json["message"] as? String)?.contains("firstPage") == true)
            let sessions = try await server.get("/metrics").text.split(separator: "\n").first { $0.hasPrefix("ptr_sessions ") }
            #expect(sessions.flatMap { Double($0.dropFirst("ptr_sessions ".count)) } == 0, "refused before a session was made")
        }
    }
}
