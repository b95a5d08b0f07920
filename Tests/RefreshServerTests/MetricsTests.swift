import Foundation
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// `GET /metrics` over real HTTP: each counter moves by exactly what the requests did.
@Suite struct MetricsTests {
    /// One scrape: every series by its rendered name and labels, as the exposition writes it.
    struct Scrape {
        let values: [String: Double]

        init(_ text: String) {
            var values: [String: Double] = [:]
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
                values[String(line[..<space])] = value
            }
            self.values = values
        }

        /// A series' value; one not written yet is 0.
        subscript(_ series: String) -> Double { values[series] ?? 0 }

        static func requests(_ route: String, _ status: Int) -> String {
            #"ptr_http_requests_total{route="\#(route)",status="\#(status)"}"#
        }
    }

    func scrape(_ server: TestServer) async throws -> Scrape {
        let reply = try await server.get("/metrics")
        #expect(reply.status == 200)
        #expect(reply.headers.first(name: "Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        return Scrape(reply.text)
    }

    /// The events after `cursor` that a stream never got: ids are dense per session, so every
    /// id missing between the cursor and the last event received was a superseded one.
    func skipped(after cursor: UInt64, _ received: [SSE]) -> Double {
        guard let last = received.last?.id else { return 0 }
        return Double(Int(last - cursor) - received.count)
    }

    @Test func aDragARefreshAReplayAndRefusalsMoveTheirCountersExactly() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let before = try await scrape(server)

            // A drag of five samples, each written to the stream before the next, and one
            // sample sent again (an old seq).
            let id = try await server.session()
            let stream = try await server.events(id)
            let snapshot = try #require(try await stream.nextEvent().id)
            var received: [SSE] = []
            let drag = 5
            for seq in 1...drag {
                try await server.sample(id, seq: seq, y: Double(-10 * seq))
                received.append(try await stream.nextEvent())
            }
            try await server.sample(id, seq: 3, y: -30)
            // A refresh, to its `done` and the state after it.
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            received += try await stream.events(until: "done")
            received.append(try await stream.nextEvent())
            let afterRefresh = try await scrape(server)

            let moved = { (series: String) in afterRefresh[series] - before[series] }
            #expect(moved(Scrape.requests("/api/sessions", 201)) == 1)
            #expect(moved(Scrape.requests("/api/sessions/{id}/events", 200)) == 1)
            #expect(moved(Scrape.requests("/api/sessions/{id}/samples", 200)) == Double(drag + 1))
            #expect(moved(Scrape.requests("/api/sessions/{id}/refresh", 202)) == 1)
            #expect(moved(Scrape.requests("/metrics", 200)) == 1, "the first scrape, counted once answered")
            #expect(moved("ptr_samples_applied_total") == Double(drag))
            #expect(moved("ptr_samples_ignored_total") == 1)
            #expect(moved("ptr_sample_write_seconds_count") == Double(drag), "one per state a sample caused")
            #expect(moved(#"ptr_sample_write_seconds_bucket{le="+Inf"}"#) == Double(drag))
            #expect(moved("ptr_sample_write_seconds_sum") > 0)
            #expect(moved(#"ptr_actions_total{kind="refresh",outcome="completed"}"#) == 1)
            #expect(moved(#"ptr_feed_updates_total{outcome="completed"}"#) == 1)
            #expect(moved("ptr_feed_update_duration_seconds_count") == 1)
            #expect(moved("ptr_events_coalesced_total") == skipped(after: snapshot, received))
            #expect(afterRefresh["ptr_sessions"] == 1)
            #expect(afterRefresh["ptr_open_streams"] == 1)

            // News: one head move, told on every loop with a stream.
            let publish = try await server.post("/api/items", #"{"id":"fresh","title":"Fresh"}"#)
            #expect(publish.status == 201)
            let news = try await stream.nextEvent()
            #expect(news.event == "news")
            let lastID = try #require(news.id)
            let afterNews = try await scrape(server)
            #expect(afterNews["ptr_news_fanout_seconds_count"] - afterRefresh["ptr_news_fanout_seconds_count"] == 1)
            #expect(afterNews[Scrape.requests("/api/items", 201)] - afterRefresh[Scrape.requests("/api/items", 201)] == 1)

            // A reconnect from before the drag is served from the log, superseded states left
            // out; one from an id the log never had is a miss, answered with a reset.
            let replay = try await server.events(id, lastEventID: snapshot)
            var replayed: [SSE] = []
            while replayed.last?.id != lastID { replayed.append(try await replay.nextEvent()) }
            let lost = try await server.events(id, lastEventID: 999_999)
            #expect(try await lost.nextEvent().event == "reset")
            // Refusals: malformed, unknown session, out of range, a path that is not there.
            #expect(try await server.post("/api/sessions/\(id)/samples", #"{"seq":"#).status == 400)
            #expect(try await server.post("/api/sessions/nope/samples", #"{"seq":9,"y":0,"phase":"drag"}"#).status == 404)
            #expect(try await server.post("/api/sessions/\(id)/samples", #"{"seq":9,"y":1e12,"phase":"drag"}"#).status == 422)
            #expect(try await server.get("/api/nothing/here").status == 404)
            #expect(try await server.get("/no/such/file.txt").status == 404)
            let after = try await scrape(server)

            let since = { (series: String) in after[series] - afterNews[series] }
            #expect(since("ptr_replay_hits_total") == 1)
            #expect(since("ptr_replay_misses_total") == 1)
            #expect(since(#"ptr_resets_total{cause="gap"}"#) == 1)
            #expect(since(#"ptr_resets_total{cause="list_replaced"}"#) == 0)
            #expect(since("ptr_events_coalesced_total") == skipped(after: snapshot, replayed))
            #expect(since("ptr_events_coalesced_total") > 0, "the drag's states were coalesced in the replay")
            #expect(since(Scrape.requests("/api/sessions/{id}/events", 200)) == 2)
            #expect(since(Scrape.requests("/api/sessions/{id}/samples", 400)) == 1)
            #expect(since(Scrape.requests("/api/sessions/{id}/samples", 404)) == 1)
            #expect(since(Scrape.requests("/api/sessions/{id}/samples", 422)) == 1)
            #expect(since(Scrape.requests("other", 404)) == 2, "unknown paths share one label")
            #expect(since(#"ptr_sample_requests_refused_total{reason="bad_input"}"#) == 1)
            #expect(since(#"ptr_sample_requests_refused_total{reason="unknown_session"}"#) == 1)
            #expect(since(#"ptr_sample_requests_refused_total{reason="out_of_range"}"#) == 1)
            #expect(since("ptr_samples_applied_total") == 0, "a refused request changes nothing")
            #expect(after["ptr_sessions"] == 1)
            #expect(after["ptr_open_streams"] == 3)
            #expect(!after.values.keys.contains { $0.contains(id) || $0.contains("nope") }, "no raw path is a label")
        }
    }

    @Test func aFailingStoreAndAFailingUpdateAreCounted() async throws {
        let feed = ScriptedFeed(items: items(3), behaviour: .fail("the upstream is gone"), headFails: true)
        try await TestServer.run(feed: feed) { server in
            let before = try await scrape(server)
            #expect(try await server.get("/readyz").status == 503)
            let (id, stream) = try await server.watchedSession()
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let done = try await stream.events(until: "done").last
            #expect(done?.json["outcome"] as? String == "failed")
            let after = try await scrape(server)
            // The readiness check, and the refresh's look at the head after its update failed.
            #expect(after[#"ptr_store_errors_total{operation="read"}"#] - before[#"ptr_store_errors_total{operation="read"}"#] == 2)
            #expect(after[#"ptr_feed_updates_total{outcome="failed"}"#] - before[#"ptr_feed_updates_total{outcome="failed"}"#] == 1)
            #expect(
                after[#"ptr_actions_total{kind="refresh",outcome="failed"}"#] - before[#"ptr_actions_total{kind="refresh",outcome="failed"}"#] == 1)
            #expect(after[Scrape.requests("/readyz", 503)] - before[Scrape.requests("/readyz", 503)] == 1)
        }
    }

    @Test func eachServerCountsInItsOwnRegistry() {
        let first = ServerMetrics()
        let second = ServerMetrics()
        first.samplesTaken(applied: 3, ignored: 0)
        first.notificationReconnected()
        let one = Scrape(String(buffer: first.exposition(sessions: 2, openStreams: 1, feedsActive: 1)))
        let other = Scrape(String(buffer: second.exposition(sessions: 0, openStreams: 0, feedsActive: 0)))
        #expect(one["ptr_samples_applied_total"] == 3)
        #expect(one["ptr_notification_reconnects_total"] == 1)
        #expect(one["ptr_sessions"] == 2)
        #expect(other["ptr_samples_applied_total"] == 0)
        #expect(other["ptr_notification_reconnects_total"] == 0)
    }

    @Test func routesAreCountedByPatternNeverByPath() {
        #expect(RouteTable.pattern("/api/sessions/abc.0123/samples?x=1", status: 200) == "/api/sessions/{id}/samples")
        #expect(RouteTable.pattern("/api/sessions/abc/events", status: 200) == "/api/sessions/{id}/events")
        #expect(RouteTable.pattern("/api/sessions/abc/refresh", status: 202) == "/api/sessions/{id}/refresh")
        #expect(RouteTable.pattern("/api/sessions/abc/load-more", status: 202) == "/api/sessions/{id}/load-more")
        #expect(RouteTable.pattern("/api/sessions/abc", status: 204) == "/api/sessions/{id}")
        #expect(RouteTable.pattern("/api/sessions", status: 201) == "/api/sessions")
        #expect(RouteTable.pattern("/api/items?limit=3", status: 200) == "/api/items")
        #expect(RouteTable.pattern("/metrics", status: 200) == "/metrics")
        #expect(RouteTable.pattern("/app.js", status: 200) == "static")
        #expect(RouteTable.pattern("/app.js", status: 404) == "other")
        #expect(RouteTable.pattern("/api/sessions//samples", status: 404) == "other")
        #expect(RouteTable.pattern("/api/sessions/abc/whatever", status: 404) == "other")
        #expect(RouteTable.pattern("/api/../etc", status: 404) == "other")
    }

    @Test func theLockFreeHistogramIsCumulativeWhenScraped() {
        let histogram = LatencyHistogram(name: "h_seconds", help: "h", bounds: [.milliseconds(1), .milliseconds(10)])
        histogram.record(.microseconds(500))
        histogram.record(.milliseconds(1))
        histogram.record(.milliseconds(5))
        histogram.record(.seconds(2))
        var bytes: [UInt8] = []
        histogram.emit(into: &bytes)
        let scrape = Scrape(String(decoding: bytes, as: UTF8.self))
        #expect(scrape[#"h_seconds_bucket{le="0.001"}"#] == 2, "a value on a bound is in its bucket")
        #expect(scrape[#"h_seconds_bucket{le="0.01"}"#] == 3)
        #expect(scrape[#"h_seconds_bucket{le="+Inf"}"#] == 4)
        #expect(scrape["h_seconds_count"] == 4)
        #expect(abs(scrape["h_seconds_sum"] - 2.0065) < 1e-9)
    }
}
