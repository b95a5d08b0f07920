import Foundation
import Testing

@testable import RefreshServer

/// Refreshes and load-mores asked for without a gesture, cancelled, shared and timed out.
@Suite struct ServerActionTests {
    @Test func aProgrammaticRefreshAndItsCancellation() async throws {
        let feed = ScriptedFeed(items: items(3), behaviour: .hang)
        try await TestServer.run(feed: feed) { server in
            let (id, stream) = try await server.watchedSession()
            let started = try await server.post("/api/sessions/\(id)/refresh")
            #expect(started.status == 202)
            let action = started.json["actionId"] as? String
            #expect(action != nil)
            let joined = try await server.post("/api/sessions/\(id)/refresh")
            #expect(joined.json["actionId"] as? String == action, "a second request joins the running refresh")
            let refreshing = try await stream.nextEvent()
            #expect(refreshing.json["phase"] as? String == "refreshing")
            #expect(refreshing.json["indicatorOffset"] as? Double == 50)
            let progress = try await stream.nextEvent()
            #expect(progress.event == "progress")

            let busy = try await server.post("/api/sessions/\(id)/load-more")
            #expect(busy.status == 409)

            let cancelled = try await server.request(.DELETE, "/api/sessions/\(id)/refresh")
            #expect(cancelled.status == 200)
            #expect(cancelled.json["cancelled"] as? Bool == true)
            let done = try await stream.nextEvent()
            #expect(done.event == "done")
            #expect(done.json["outcome"] as? String == "cancelled")
            #expect(done.json["actionId"] as? String == action)
            #expect(try await stream.nextEvent().json["phase"] as? String == "idle")

            let again = try await server.request(.DELETE, "/api/sessions/\(id)/refresh")
            #expect(again.json["cancelled"] as? Bool == false)
        }
    }

    @Test func concurrentRefreshesShareOneUpdate() async throws {
        // The update waits until all four refreshes have joined it: each session's stream
        // shows the update's progress (a joiner is given the latest) before the test lets it end.
        let gate = Gate()
        let feed = ScriptedFeed(items: items(3), behaviour: .gated(gate))
        try await TestServer.run(feed: feed) { server in
            var streams: [EventReader] = []
            var ids: [String] = []
            for _ in 0..<4 {
                let (id, stream) = try await server.watchedSession()
                ids.append(id)
                streams.append(stream)
            }
            for id in ids { #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202) }
            for stream in streams {
                var joined = false
                while !joined { joined = try await stream.nextEvent().json["stage"] as? String == "gated" }
            }
            gate.open()
            for stream in streams {
                let events = try await stream.events(until: "done")
                #expect(events.last?.json["outcome"] as? String == "completed")
                #expect((events.first { $0.event == "items" }?.json["items"] as? [Any])?.count == 3)
            }
            #expect(feed.updateCalls == 1)
        }
    }

    @Test func aFailingFeedEndsInDoneFailedWithItsMessage() async throws {
        let feed = ScriptedFeed(items: items(3), behaviour: .fail("The upstream answered 503 Service Unavailable."))
        try await TestServer.run(feed: feed) { server in
            let (id, stream) = try await server.watchedSession()
            _ = try await server.post("/api/sessions/\(id)/refresh")
            let done = try await stream.events(until: "done").last!.json
            #expect(done["outcome"] as? String == "failed")
            #expect(done["error"] as? String == "The upstream answered 503 Service Unavailable.")
            let list = try await server.get("/api/items").json["items"] as? [Any]
            #expect(list?.count == 3, "stored items are untouched")
        }
    }

    @Test func aRefreshThatTakesTooLongFails() async throws {
        let feed = ScriptedFeed(behaviour: .hang)
        var configuration = TestServer.configuration()
        configuration.actionTimeout = .milliseconds(300)
        try await TestServer.run(configuration, feed: feed) { server in
            let (id, stream) = try await server.watchedSession()
            _ = try await server.post("/api/sessions/\(id)/refresh")
            let done = try await stream.events(until: "done").last!.json
            #expect(done["outcome"] as? String == "failed")
            #expect((done["error"] as? String)?.contains("took longer than 0.3 s") == true)
        }
    }

    @Test func aPullDuringALoadMoreCancelsIt() async throws {
        // The load-more waits in its read until the test opens the gate, after the refresh.
        let gate = Gate()
        let feed = ScriptedFeed(items: items(3), behaviour: .steps(2, every: .milliseconds(50)), olderGate: gate)
        try await TestServer.run(feed: feed) { server in
            let (id, stream) = try await server.watchedSession()
            let load = try await server.post("/api/sessions/\(id)/load-more").json["actionId"] as? String
            let refresh = try await server.post("/api/sessions/\(id)/refresh").json["actionId"] as? String
            #expect(load != refresh)
            let events = try await stream.events(until: "done")
            gate.open()
            let firstDone = events.last!.json
            #expect(firstDone["actionId"] as? String == load)
            #expect(firstDone["outcome"] as? String == "cancelled")
            let refreshDone = try await stream.events(until: "done").last!.json
            #expect(refreshDone["actionId"] as? String == refresh)
            #expect(refreshDone["outcome"] as? String == "completed")
        }
    }
}
