import Foundation
import OpenAPIAsyncHTTPClient
import RefreshClient
import RefreshEngine
import RefreshServer
import Testing

/// Actions, publishing and a lost session, against the live server.
@Suite struct LiveActionTests {
    /// A publish the store failed (`503`) is sent again after the wait with the same ids, the
    /// client's own for items given without one, so each item is stored once.
    @Test func aFailedPublishIsSentAgainWithTheSameIds() async throws {
        try await LiveServer.run { server in
            try await LiveSessionTests.withProxy(to: server) { proxy in
                let client = LiveSessionTests.client(proxy)
                let head = try await client.head(of: "main")
                proxy.answer(times: 1, status: "503 Service Unavailable", retryAfter: 1, code: "store_unavailable") {
                    $0.hasPrefix("POST /api/feeds/main/items ")
                }
                let clock = ContinuousClock()
                let start = clock.now
                let stored = try await within(10, "the publish") {
                    try await client.publish([NewItem(title: "One"), NewItem(id: "mine", title: "Two")])
                }
                #expect(clock.now - start >= .seconds(1))
                #expect(proxy.cannedLeft == 0)
                let sent = proxy.exchanges.filter { $0.requestLine.hasPrefix("POST /api/feeds/main/items ") }
                #expect(sent.count == 2)
                let ids = sent.map { exchange in
                    String(decoding: exchange.request, as: UTF8.self).matches(of: /"id" *: *"([^"]+)"/).map { String($0.output.1) }
                }
                #expect(ids.count == 2 && ids.first == ids.last, "the ids of each attempt: \(ids)")
                #expect(ids.first?.count == 2 && ids.first?.last == "mine")
                #expect(stored.map(\.id) == ids.last && stored.map(\.title) == ["One", "Two"])
                #expect(try await client.head(of: "main") == head + 2)
                let page = try await client.items(feed: "main", limit: 3)
                #expect(Set(page.items.prefix(2).map(\.id)) == Set(ids.last ?? []), "each stored once, and newest")
            }
        }
    }

    /// A load-more brings the next page below the first; while a refresh runs it is refused
    /// (`nil`), since the refresh resets paging.
    @Test func loadMoreAppendsTheNextPageAndWaitsForARefresh() async throws {
        let configuration = LiveServer.configuration {
            $0.pageSize = 5
            $0.minimumActionDuration = .milliseconds(500)
        }
        try await LiveServer.run(configuration) { server in
            let session = try await server.client().session()
            let events = EventRecorder(session)
            let first = try await LiveSessionTests.firstPage(events)
            #expect(first.items.count == 5 && first.hasMore)

            let refresh = try #require(try await session.refresh())
            #expect(try await session.loadMore() == nil, "refused while the refresh runs")
            try await events.next("the refresh's end") { $0.done?.actionID == refresh }

            let more = try #require(try await session.loadMore())
            let done = try await events.next("the page's end") { $0.done?.actionID == more }.done!
            #expect(done.kind == .loadMore && done.outcome == .completed && done.added == 5)
            let pages = events.events.compactMap(\.items).filter { $0.actionID == more }
            #expect(pages.count == 1)
            let page = try #require(pages.first)
            #expect(page.operation == .append && page.items.count == 5)
            let below = Set(page.items.map(\.id))
            #expect(below.isDisjoint(with: first.items.map(\.id)))
            #expect(page.items.map(\.published).allSatisfy { $0 <= first.items.last!.published })
            events.cancel()
            await session.close()
        }
    }

    /// A session lost in a restart onto an empty store, found gone by its stream, a sample
    /// and a refresh at once, is replaced once; the list cannot continue on a store without
    /// it, so the replacement says so and its first page follows.
    @Test func aLossFoundByManyRequestsIsReplacedOnceAndAnUnknownListStartsOver() async throws {
        let configuration = LiveServer.configuration { $0.demo = false }
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
            let client = LiveSessionTests.client(proxy)
            try await client.publish((1...3).map { NewItem(id: "old-\($0)", title: "Old \($0)") })
            let session = try await client.session()
            let events = EventRecorder(session)
            let page = try await LiveSessionTests.firstPage(events)
            #expect(Set(page.items.map(\.id)) == ["old-1", "old-2", "old-3"])
            let oldID = await session.id
            try await eventually(30, "the stream to open") { try await first.openStreams(oldID) == 1 }

            try await first.stop()
            let restarted = try await LiveServer.start(configuration)
            second = restarted
            try await restarted.client().publish([NewItem(id: "new-1", title: "New")])
            try proxy.retarget(to: restarted.port)

            async let sampled: Int? = session.post(LiveSessionTests.drag(-30))
            async let refreshed = session.refresh()
            _ = await sampled
            _ = try await refreshed
            let replaced = try await events.next("the replacement") { $0 == .replaced(resumed: false) }
            #expect(replaced == .replaced(resumed: false))
            let index = events.events.firstIndex(of: .replaced(resumed: false))!
            let restart = try await events.next("the new first page", after: index) { $0.items != nil }.items!
            #expect(restart.actionID == nil && restart.operation == .append)
            #expect(restart.items.map(\.id).first == "new-1")
            let newID = await session.id
            try await eventually(30, "the new stream to open") { try await restarted.openStreams(newID) == 1 }
            #expect(events.events.filter { if case .replaced = $0 { true } else { false } }.count == 1)
            let sessions = try await restarted.json("/api/sessions/\(newID)")
            #expect(sessions.status == 200)
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

    /// A stream the server is too busy for (`200`, a `retry:` and the end) is asked again
    /// after that `retry:`, not the second a failure waits, and not sooner; the reader hears
    /// nothing of it, and gets in once a stream closes. Its first page, which the server had
    /// no room to answer with, comes through the stream then.
    @Test func anOverloadedStreamComesBackAfterTheServersRetry() async throws {
        let configuration = LiveServer.configuration { $0.maxStreamsPerClient = 1 }
        try await LiveServer.run(configuration) { server in
            try await LiveSessionTests.withProxy(to: server) { proxy in
                let holder = try await server.client().session()
                let holding = EventRecorder(holder)
                let holderID = await holder.id
                try await eventually(30, "the first stream to open") { try await server.openStreams(holderID) == 1 }

                let session = try await LiveSessionTests.client(proxy).session()
                let id = await session.id
                let events = EventRecorder(session)
                try await eventually(30, "a refused stream") { proxy.streams.count >= 1 }
                let clock = ContinuousClock()
                let start = clock.now
                let before = proxy.streams.count
                // Told to come back after 40 to 120 ms, six more asks take a second or so, and
                // at least five of those waits (0.2 s) however fast the machine: never a loop. A
                // failure's backoff (one second, then two, four, eight, sixteen) would need half
                // a minute, which no busy machine makes of six requests.
                try await eventually(60, "six more stream requests") { proxy.streams.count >= before + 6 }
                let elapsed = clock.now - start
                #expect(elapsed >= .milliseconds(200) && elapsed < .seconds(25), "six stream requests in \(elapsed)")
                #expect(try await server.openStreams(id) == 0)
                #expect(events.ended == nil, "the reader is not told of a busy server")
                #expect(events.events.isEmpty, "no first page without room for the stream")

                holding.cancel()
                try await eventually(30, "the stream to get in") { try await server.openStreams(id) == 1 }
                let page = try await events.next("the first page, through the stream") { $0.items != nil }.items!
                #expect(page.operation == .append && !page.items.isEmpty && page.head != nil)
                await session.post(LiveSessionTests.drag(-30))
                try await events.next("a state on the stream") { $0.gestureState?.phase == .pulling }
                events.cancel()
                await session.close()
                await holder.close()
            }
        }
    }
}
