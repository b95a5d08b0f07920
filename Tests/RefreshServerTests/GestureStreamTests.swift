import Foundation
import Testing

@testable import RefreshServer

/// A gesture posted as samples reaches the event stream as it happens, in order.
@Suite struct GestureStreamTests {
    @Test func healthz() async throws {
        try await TestServer.run { server in
            let reply = try await server.get("/healthz")
            #expect(reply.status == 200)
            #expect(reply.json["status"] as? String == "ok")
        }
    }

    @Test func readyzSaysWhetherTheStoreAnswers() async throws {
        try await TestServer.run { server in
            let reply = try await server.get("/readyz")
            #expect(reply.status == 200)
            #expect(reply.json["status"] as? String == "ready")
        }
        try await TestServer.run(feed: ScriptedFeed(behaviour: .fail("the disk is gone"), headFails: true)) { server in
            let reply = try await server.get("/readyz")
            #expect(reply.status == 503)
            #expect(reply.json["error"] as? String == "store_unavailable")
            #expect((reply.json["message"] as? String)?.contains("the disk is gone") == true)
            #expect(reply.headers.first(name: "Retry-After") == "5")
            #expect(try await server.get("/healthz").status == 200, "alive all the same")
        }
    }

    @Test func aStreamOpensWithRetryAndAStateSnapshot() async throws {
        try await TestServer.run { server in
            let id = try await server.session()
            let stream = try await server.events(id)
            #expect(stream.status == 200)
            #expect(stream.header("Content-Type")?.hasPrefix("text/event-stream") == true)
            #expect(stream.header("Cache-Control") == "no-store")
            #expect(stream.header("X-Accel-Buffering") == "no")
            // Jittered between the reconnect delay and twice it, so pages come back spread out.
            let retry = try await stream.next()
            #expect((1000...2000).contains(retry.retry ?? 0))
            let snapshot = try await stream.next()
            #expect(snapshot.event == "state")
            #expect(snapshot.json["phase"] as? String == "idle")
            #expect(snapshot.id != nil)
        }
    }

    @Test func aPullAndReleaseRefreshesWithProgressItemsAndDoneInOrder() async throws {
        let feed = ScriptedFeed(items: items(5), behaviour: .steps(4, every: .milliseconds(20)))
        try await TestServer.run(feed: feed) { server in
            let (id, stream) = try await server.watchedSession()
            #expect(try await server.sample(id, seq: 1, y: -40)["phase"] as? String == "pulling")
            #expect(try await server.sample(id, seq: 2, y: -90)["phase"] as? String == "armed")
            #expect(try await server.sample(id, seq: 3, y: -90, phase: "release")["phase"] as? String == "refreshing")

            let events = try await stream.events(until: "done")
            let names = events.map { $0.event ?? "" }
            #expect(Array(names.prefix(3)) == ["state", "state", "state"])
            #expect(events[0].json["phase"] as? String == "pulling")
            #expect(events[1].json["phase"] as? String == "armed")
            #expect(events[2].json["phase"] as? String == "refreshing")
            #expect(events[2].json["indicatorOffset"] as? Double == 90)
            let progress = events.filter { $0.event == "progress" }.compactMap { $0.json["fraction"] as? Double }
            #expect(progress.count >= 6, "start, four feed steps, collecting, done: \(progress)")
            #expect(progress == progress.sorted(), "fractions never go back: \(progress)")
            #expect(progress.last == 1)
            #expect(Array(names.suffix(2)) == ["items", "done"])
            let itemsEvent = events[events.count - 2].json
            #expect(itemsEvent["op"] as? String == "prepend")
            #expect((itemsEvent["items"] as? [[String: Any]])?.count == 5)
            let done = events.last!.json
            #expect(done["outcome"] as? String == "completed")
            #expect(done["kind"] as? String == "refresh")
            #expect(done["added"] as? Int == 5)
            let ids = events.compactMap(\.id)
            #expect(ids == ids.sorted() && Set(ids).count == ids.count, "ids increase: \(ids)")
            let after = try await stream.nextEvent()
            #expect(after.event == "state")
            #expect(after.json["phase"] as? String == "idle")
        }
    }

    @Test func aPublishedItemArrivesAtTheTopOnTheNextRefresh() async throws {
        try await TestServer.run { server in
            let id = try await server.session(#"{"preset":"swiftui-lab"}"#)
            let stream = try await server.events(id)
            try await server.sample(id, seq: 1, y: -85)
            _ = try await stream.events(until: "done")
            try await server.sample(id, seq: 2, y: 0)
            let published = try await server.post("/api/items", #"{"title":"Fresh <b>news</b>","summary":"plain text"}"#)
            #expect(published.status == 201)
            try await server.sample(id, seq: 3, y: -85)
            let events = try await stream.events(until: "done")
            let items = events.first { $0.event == "items" }!
            #expect(items.data.contains("Fresh \\u003cb\\u003enews\\u003c/b\\u003e"), "markup is escaped: \(items.data)")
            let list = items.json["items"] as? [[String: Any]]
            #expect(list?.count == 1)
            #expect(list?.first?["title"] as? String == "Fresh <b>news</b>")
            #expect(events.last?.json["added"] as? Int == 1)
        }
    }

    @Test func aBottomPullLoadsOlderItems() async throws {
        let feed = ScriptedFeed(items: items(50), behaviour: .steps(1, every: .milliseconds(1)))
        var configuration = TestServer.configuration()
        configuration.pageSize = 10
        try await TestServer.run(configuration, feed: feed) { server in
            let (id, stream) = try await server.watchedSession(#"{"preset":"uikit-bottom"}"#)
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let first = try await stream.events(until: "done")
            #expect((first.first { $0.event == "items" }?.json["items"] as? [[String: Any]])?.first?["id"] as? String == "item-0")
            try await server.sample(id, seq: 1, y: 0, phase: "scroll", content: 1000, viewport: 800)
            #expect(try await server.sample(id, seq: 2, y: 319)["phase"] as? String == "pulling")
            #expect(try await server.sample(id, seq: 3, y: 320)["phase"] as? String == "loading")
            let events = try await stream.events(until: "done")
            let items = events.first { $0.event == "items" }!.json
            #expect(items["op"] as? String == "append")
            #expect(items["hasMore"] as? Bool == true)
            let ids = (items["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(ids == (10..<20).map { "item-\($0)" })
            #expect(events.last?.json["kind"] as? String == "loadMore")
        }
    }

    @Test func infiniteScrollFillsTheViewportThenStops() async throws {
        let feed = ScriptedFeed(items: items(25), behaviour: .steps(1, every: .milliseconds(1)))
        var configuration = TestServer.configuration()
        configuration.pageSize = 10
        try await TestServer.run(configuration, feed: feed) { server in
            let (id, stream) = try await server.watchedSession()
            var seq = 0
            var loaded = 0
            var content = 0.0
            for _ in 0..<3 {
                seq += 1
                #expect(
                    try await server.sample(id, seq: seq, y: 0, phase: "scroll", content: content, viewport: 800)["phase"] as? String == "loading")
                let items = try await stream.events(until: "done").first { $0.event == "items" }!.json
                loaded += (items["items"] as? [Any])?.count ?? 0
                content = Double(loaded) * 40
            }
            #expect(loaded == 25)
            seq += 1
            #expect(
                try await server.sample(id, seq: seq, y: 0, phase: "scroll", content: content, viewport: 800)["phase"] as? String == "idle",
                "the feed ended: no more loads")
        }
    }
}
