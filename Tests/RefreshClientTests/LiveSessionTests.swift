import Foundation
import OpenAPIAsyncHTTPClient
import RefreshClient
import RefreshEngine
import RefreshServer
import RefreshServerTesting
import Testing

/// The client against the real server on an ephemeral port, through a proxy that can cut,
/// refuse and answer for it.
@Suite struct LiveSessionTests {
    static func drag(_ y: Double) -> Sample {
        Sample(seq: 0, y: y, phase: .drag, contentHeight: 4000, viewportHeight: 800)
    }

    static func release(_ y: Double) -> Sample {
        Sample(seq: 0, y: y, phase: .release, contentHeight: 4000, viewportHeight: 800)
    }

    /// Runs `body` with a proxy to `server`, closed after it.
    static func withProxy(to server: LiveServer, _ body: @Sendable (TestProxy) async throws -> Void) async throws {
        let proxy = try await TestProxy.start(to: server.port)
        do {
            try await body(proxy)
        } catch {
            await proxy.close()
            throw error
        }
        await proxy.close()
    }

    static func client(_ proxy: TestProxy) -> RefreshClient {
        RefreshClient(serverURL: proxy.url, transport: AsyncHTTPClientTransport())
    }

    static func firstPage(_ events: EventRecorder) async throws -> ItemsUpdate {
        let first = try await events.next("the first page") { $0.items != nil }.items!
        #expect(first.actionID == nil && first.operation == .append)
        #expect(first.head != nil)
        return first
    }

    /// Each kind of event the server sends arrives typed: the first page, a state, news of a
    /// publish, a refresh's progress, items and end, and a reset after too much was missed.
    @Test func everyEventTypeDecodes() async throws {
        let configuration = LiveServer.configuration { $0.replayBufferLength = 8 }
        try await LiveServer.run(configuration) { server in
            try await Self.withProxy(to: server) { proxy in
                let client = Self.client(proxy)
                let session = try await client.session(feed: "main")
                let events = EventRecorder(session)
                let first = try await Self.firstPage(events)
                #expect(!first.items.isEmpty, "the demo items")
                #expect(session.feed == "main")
                #expect(await session.config.top.threshold == Preset.standard.config.top.threshold)

                let seq = try #require(await session.post(Self.drag(-30)))
                let pulling = try await events.next("a pulling state") { $0.gestureState?.phase == .pulling }.gestureState!
                #expect(pulling.seq == seq && pulling.edge == .top && pulling.pull > 0)
                let pulled = events.events.count
                await session.post(Self.release(0))
                try await events.next("the idle state", after: pulled) { $0.gestureState?.phase == .idle }
                #expect(await session.state.phase == .idle)

                let published = try await client.publish([NewItem(id: "fresh-1", title: "Fresh")])
                #expect(published.map(\.id) == ["fresh-1"])
                let news = try await events.next("news of the publish") { $0.news != nil }.news!
                #expect(news.count == 1 && news.newestID == "fresh-1" && news.newestTitle == "Fresh")
                #expect(news.head == first.head! + 1)

                let action = try #require(try await session.refresh())
                let done = try await events.next("the refresh's end") { $0.done?.actionID == action }.done!
                #expect(done.kind == .refresh && done.outcome == .completed && done.added == 1 && done.error == nil)
                let progress = events.events.compactMap(\.progress).filter { $0.actionID == action }
                #expect(progress.first?.fraction == 0 && progress.last?.fraction == 1)
                #expect(progress.allSatisfy { $0.kind == .refresh && !$0.stage.isEmpty && !$0.message.isEmpty })
                let items = events.events.compactMap(\.items).filter { $0.actionID == action }
                #expect(items.count == 1)
                #expect(items.first?.operation == .prepend && items.first?.items.map(\.id) == ["fresh-1"])
                #expect(items.first?.head == news.head)

                // Too much missed while away: the stream is cut and kept away while three
                // refreshes (about seven events each) overflow the eight the server keeps, each
                // bringing a new item (missed rows, which no `changes` can make up for).
                // Every connection goes, or the stream would come back on an idle pooled one.
                proxy.refusing = true
                #expect(proxy.cutStreams() == 1)
                proxy.cutAll()
                let id = await session.id
                for round in 0..<3 {
                    #expect(try await server.json("/api/items", post: true, body: #"{"id":"missed-\#(round)","title":"Missed"}"#).status == 201)
                    #expect(try await server.json("/api/sessions/\(id)/refresh", post: true).status == 202)
                    try await eventually(30, "the refresh to end") {
                        let state = try await server.session(id)["state"] as? [String: Any]
                        return state?["phase"] as? String == "idle"
                    }
                }
                proxy.refusing = false
                let count = events.events.count
                // Within the backoff the refused reconnects grew to (1, 2, 4, 8, 16 s, each a
                // fifth more at most), however long the refreshes took on a busy machine.
                let reason = try await events.next("a reset", within: 40, after: count) { $0.resetReason != nil }.resetReason
                #expect(reason?.isEmpty == false)
                // The stream carries on after it.
                await session.post(Self.drag(-20))
                try await events.next("a state after the reset", after: count) { $0.gestureState?.phase == .pulling }
                events.cancel()
                await session.close()
            }
        }
    }

    /// A stream cut while a refresh runs comes back with `Last-Event-ID`: every event of the
    /// refresh arrives once, and the ids on the wire go on from where the cut left them.
    @Test func aStreamCutMidRefreshResumesWithNothingLostOrTwice() async throws {
        // The refresh lasts ten seconds at least, so the cut comes before its end whatever the
        // machine's speed.
        let configuration = LiveServer.configuration { $0.minimumActionDuration = .seconds(10) }
        try await LiveServer.run(configuration) { server in
            try await Self.withProxy(to: server) { proxy in
                let client = Self.client(proxy)
                let session = try await client.session()
                let events = EventRecorder(session)
                _ = try await Self.firstPage(events)
                let id = await session.id
                try await eventually(30, "the stream to open") { try await server.openStreams(id) == 1 }
                try await client.publish([NewItem(id: "cut-1", title: "Across the cut")])

                let action = try #require(try await session.refresh())
                try await events.next("the refresh's start") { $0.progress?.actionID == action }
                #expect(proxy.cutStreams() == 1)
                let done = try await events.next("the refresh's end", within: 60) { $0.done?.actionID == action }.done!
                #expect(done.outcome == .completed && done.added == 1)

                let streams = proxy.streams
                #expect(streams.count >= 2, "the stream was opened again")
                #expect(streams.first?.lastEventID == "0")
                #expect(!(streams.first?.events.contains { $0.name == "done" } ?? true), "the cut came before the end")
                for stream in streams {
                    let ids = stream.events.map(\.id)
                    #expect(ids == ids.sorted() && Set(ids).count == ids.count, "ids within a stream: \(ids)")
                }
                for (before, after) in zip(streams, streams.dropFirst()) {
                    guard let last = before.events.last?.id else { continue }
                    // The client asks for what follows the last event it got, and gets only that.
                    #expect(after.lastEventID == String(last))
                    if let next = after.events.first?.id { #expect(next > last) }
                }
                // A reader that keeps up has nothing coalesced: the ids it got, across the cut,
                // are every id from its first to its last.
                let ids = streams.flatMap(\.events).map(\.id)
                #expect(ids.count >= 5, "the events on the wire: \(ids)")
                if let low = ids.first, let high = ids.last { #expect(ids == Array(low...high), "a gap or a repeat: \(ids)") }

                let progress = events.events.compactMap(\.progress).filter { $0.actionID == action }
                let steps = progress.map { "\($0.stage) \($0.fraction)" }
                #expect(Set(steps).count == steps.count, "no progress twice: \(steps)")
                #expect(progress.map(\.fraction) == progress.map(\.fraction).sorted())
                #expect(progress.first?.stage == "starting" && progress.last?.stage == "done")
                let items = events.events.compactMap(\.items).filter { $0.actionID == action }
                #expect(items.count == 1 && items.first?.items.map(\.id) == ["cut-1"])
                #expect(events.events.compactMap(\.done).count == 1)
                events.cancel()
                await session.close()
            }
        }
    }

    /// A session the server lost in a restart (same SQLite file, another port behind the same
    /// address) is replaced by one that continues the list: what is published afterwards
    /// arrives once, and no item comes twice.
    @Test func aSessionLostInARestartIsReplacedAndTheListContinues() async throws {
        let directory = Scratch.path("client-restart")
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = LiveServer.configuration { $0.database = directory.appendingPathComponent("feed.sqlite").path }
        let first = try await LiveServer.start(configuration)
        let proxy: TestProxy
        do {
            proxy = try await TestProxy.start(to: first.port)
        } catch {
            try? await first.stop()
            throw error
        }
        var second: LiveServer?
        do {
            let client = Self.client(proxy)
            let session = try await client.session()
            let events = EventRecorder(session)
            let page = try await Self.firstPage(events)
            #expect(!page.items.isEmpty)
            let oldID = await session.id
            try await eventually(30, "the stream to open") { try await first.openStreams(oldID) == 1 }

            try await first.stop()
            let restarted = try await LiveServer.start(configuration)
            second = restarted
            try proxy.retarget(to: restarted.port)

            try await events.next("the replacement", within: 15) { $0 == .replaced(resumed: true) }
            let newID = await session.id
            #expect(newID != oldID)
            try await eventually(30, "the new stream to open") { try await restarted.openStreams(newID) == 1 }

            try await client.publish([NewItem(id: "after-restart", title: "After the restart")])
            let news = try await events.next("news of the publish") { $0.news?.newestID == "after-restart" }.news!
            #expect(news.count == 1 && news.head == page.head! + 1)
            let action = try #require(try await session.refresh())
            let done = try await events.next("the refresh") { $0.done?.actionID == action }.done!
            #expect(done.outcome == .completed && done.added == 1)

            let shown = events.events.compactMap(\.items).flatMap(\.items).map(\.id)
            #expect(Set(shown).count == shown.count, "an item twice: \(shown)")
            #expect(shown.filter { $0 == "after-restart" }.count == 1)
            #expect(events.events.filter { $0 == .replaced(resumed: true) }.count == 1)
            events.cancel()
            await session.close()
        } catch {
            await proxy.close()
            try? await second?.stop()
            throw error
        }
        await proxy.close()
        try await second?.stop()
    }

    /// A busy server is asked again after the `Retry-After` it gave (a `503`, then a `429`),
    /// and the session then works.
    @Test func busyAnswersAreWaitedForAsAsked() async throws {
        try await LiveServer.run { server in
            try await Self.withProxy(to: server) { proxy in
                let creating: @Sendable (String) -> Bool = { $0.hasPrefix("POST /api/sessions ") }
                proxy.answer(times: 1, status: "503 Service Unavailable", retryAfter: 1, code: "too_many_sessions", where: creating)
                proxy.answer(times: 1, status: "429 Too Many Requests", retryAfter: 1, code: "too_many_sessions", where: creating)
                let clock = ContinuousClock()
                let start = clock.now
                let session = try await within(15, "the session") { try await Self.client(proxy).session() }
                #expect(clock.now - start >= .seconds(2), "waited \(clock.now - start)")
                #expect(proxy.cannedLeft == 0)
                let events = EventRecorder(session)
                _ = try await Self.firstPage(events)
                events.cancel()
                await session.close()

                // Out of attempts: the last refusal comes out, with what the server asked.
                proxy.answer(times: 2, status: "503 Service Unavailable", retryAfter: 1, code: "too_many_sessions", where: creating)
                let error = await #expect(throws: RefreshError.self) {
                    _ = try await within(15, "the refusal") { try await Self.client(proxy).session(attempts: 2) }
                }
                #expect(error?.status == 503, "\(String(describing: error))")
                #expect(error?.retryAfter == .seconds(1) && error?.isTransient == true, "\(String(describing: error))")
                #expect(proxy.cannedLeft == 0)
            }
        }
    }

    /// Under a flood of drags that the server's sample rate turns away (`429`), the release
    /// that follows is still delivered, and its refresh runs.
    @Test func aReleaseIsNeverDroppedUnderAFloodOfDrags() async throws {
        // One sample a second: a 429 needs two requests within a second, which the client
        // sends however slow a loaded machine makes each round trip (even one at a time).
        let configuration = LiveServer.configuration { $0.maxSamplesPerSecond = 1 }
        try await LiveServer.run(configuration) { server in
            try await Self.withProxy(to: server) { proxy in
                let session = try await Self.client(proxy).session()
                let events = EventRecorder(session)
                _ = try await Self.firstPage(events)
                try await within(30, "a 429 from the flood") {
                    for index in 1...2_000 {
                        await session.post(Self.drag(-Double(index % 120)))
                        if proxy.answers(status: "429") > 0 { return }
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    throw TestFailure("no 429 for 2,000 drags at one sample a second")
                }
                // More drags queue behind the refused one; the release replaces them.
                for index in 1...20 { await session.post(Self.drag(-Double(index))) }
                let seq = try #require(await session.post(Self.release(-150)))
                try await within(20, "the queue to drain") { await session.flush() }
                let done = try await events.next("the refresh the release started", within: 10) { $0.done?.kind == .refresh }.done!
                #expect(done.outcome == .completed)
                #expect(proxy.answers(status: "429") >= 1)
                let applied = try #require(try await server.stateSeq(await session.id))
                #expect(applied >= seq)
                events.cancel()
                await session.close()
            }
        }
    }

    /// A release and where the list rests, posted in one call, leave in one request.
    @Test func aReleaseAndWhereTheListRestsLeaveInOneRequest() async throws {
        try await LiveServer.run { server in
            try await Self.withProxy(to: server) { proxy in
                let session = try await Self.client(proxy).session()
                let events = EventRecorder(session)
                _ = try await Self.firstPage(events)
                let samples: @Sendable () -> [String] = {
                    proxy.exchanges.map(\.requestLine).filter { $0.hasPrefix("POST ") && $0.contains("/samples ") }
                }
                let before = samples().count
                let seqs = await session.post([Self.release(-150), Sample(seq: 0, y: 0, phase: .scroll)])
                #expect(seqs.count == 2)
                try await within(20, "the queue to drain") { await session.flush() }
                #expect(samples().count - before == 1, "\(samples())")
                let done = try await events.next("the refresh the release started", within: 10) { $0.done?.kind == .refresh }.done!
                #expect(done.outcome == .completed)
                events.cancel()
                await session.close()
            }
        }
    }

    /// A release the server turns away twice is put back both times, sent after each wait,
    /// and starts its refresh.
    @Test func aRefusedReleaseIsSentAgainAfterTheWait() async throws {
        try await LiveServer.run { server in
            try await Self.withProxy(to: server) { proxy in
                let session = try await Self.client(proxy).session()
                let events = EventRecorder(session)
                _ = try await Self.firstPage(events)
                proxy.answer(times: 2, status: "429 Too Many Requests", retryAfter: 1, code: "rate_limited") { $0.contains("/samples ") }
                let clock = ContinuousClock()
                let start = clock.now
                await session.post(Self.release(-150))
                let done = try await events.next("the refresh the release started", within: 10) { $0.done?.kind == .refresh }.done!
                #expect(done.outcome == .completed)
                #expect(proxy.cannedLeft == 0)
                #expect(clock.now - start >= .seconds(2), "waited \(clock.now - start)")
                events.cancel()
                await session.close()
            }
        }
    }

    /// Cancelling the task that reads the events closes the stream on the server.
    @Test func cancellingTheReaderClosesTheStream() async throws {
        try await LiveServer.run { server in
            let session = try await server.client().session()
            let id = await session.id
            let events = EventRecorder(session)
            _ = try await Self.firstPage(events)
            try await eventually(30, "the stream to open") { try await server.openStreams(id) == 1 }
            events.cancel()
            try await eventually(30, "the stream to close") { try await server.openStreams(id) == 0 }
            try await events.waitUntilEnded()

            // Reading again opens it again; closing the session ends the read and the session.
            let again = EventRecorder(session)
            try await eventually(30, "the stream to open again") { try await server.openStreams(id) == 1 }
            await session.close()
            try await again.waitUntilEnded()
            #expect(try await server.json("/api/sessions/\(id)").status == 404)
        }
    }

    /// One reader at a time: a second ends the first, the server holds one stream for them,
    /// and what happens next reaches the second reader alone, once.
    @Test func aSecondReaderEndsTheFirst() async throws {
        try await LiveServer.run { server in
            let session = try await server.client().session()
            let id = await session.id
            let first = EventRecorder(session)
            _ = try await Self.firstPage(first)
            try await eventually(30, "the stream to open") { try await server.openStreams(id) == 1 }

            let second = EventRecorder(session)
            try await first.waitUntilEnded()
            try await eventually(30, "the second stream to open") { try await server.openStreams(id) == 1 }
            let seen = first.events.count
            let seq = try #require(await session.post(Self.drag(-30)))
            let state = try await second.next("the state") { $0.gestureState?.seq == seq }.gestureState!
            #expect(state.phase == .pulling)
            try await Task.sleep(for: .milliseconds(100))
            #expect(first.events.count == seen, "the first reader got nothing after it ended")
            #expect(second.events.filter { $0.gestureState?.seq == seq }.count == 1)
            #expect(try await server.openStreams(id) == 1)
            second.cancel()
            await session.close()
        }
    }
}
