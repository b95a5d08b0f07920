import Foundation
import NIOCore
import Synchronization
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// Live news over real HTTP: what each `config.news` mode sends when the feed gains items.
@Suite struct NewsTests {
    /// A session whose page shows the first page of the feed, with its stream past it.
    private func showingFirstPage(_ server: TestServer, news: String) async throws -> (id: String, stream: EventReader) {
        let (id, stream) = try await server.watchedSession(#"{"config":{"news":"\#(news)"}}"#)
        #expect(try await server.post("/api/sessions/\(id)/load-more").status == 202)
        _ = try await stream.events(until: "done")
        _ = try await stream.nextEvent()  // the state after it
        return (id, stream)
    }

    private func publish(_ server: TestServer, _ items: [(id: String, title: String, minute: Int)]) async throws {
        let body = items.map { #"{"id":"\#($0.id)","title":"\#($0.title)","published":"2030-01-01T00:\#(String(format: "%02d", $0.minute)):00Z"}"# }
        let reply = try await server.post("/api/items", #"{"items":[\#(body.joined(separator: ","))]}"#)
        #expect(reply.status == 201)
    }

    private func ids(_ event: SSE) -> [String] {
        (event.json["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    @Test func aBadgeSessionHearsOfTwoItemsAndItsRefreshBringsExactlyThose() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let (id, stream) = try await showingFirstPage(server, news: "badge")
            try await publish(server, [("a", "Older news", 1), ("b", "Newest news", 2)])
            let news = try await stream.nextEvent()
            #expect(news.event == "news")
            #expect(news.json["count"] as? Int == 2)
            #expect(news.json["head"] as? Int == 5)
            #expect((news.json["newest"] as? [String: Any])?["title"] as? String == "Newest news")
            #expect((news.json["newest"] as? [String: Any])?["id"] as? String == "b")

            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let refresh = try await stream.events(until: "done")
            #expect(refresh.filter { $0.event == "items" }.map(ids) == [["b", "a"]])
            #expect(refresh.last?.json["added"] as? Int == 2)
            _ = try await stream.nextEvent()
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let again = try await stream.events(until: "done")
            #expect(again.filter { $0.event == "items" }.map(ids) == [[]], "never the same items twice")
            #expect(!again.contains { $0.event == "news" })
        }
    }

    /// An item published late with an old date is new to the page: it comes once, on top,
    /// and paging down later does not bring it a second time.
    @Test func aLateItemWithAnOldDateComesOnceOnTop() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(30))) { server in
            let (id, stream) = try await showingFirstPage(server, news: "badge")
            let late = #"{"id":"late","title":"Late","published":"2001-01-01T00:00:00Z"}"#
            #expect(try await server.post("/api/items", late).status == 201)
            #expect(try await stream.nextEvent().event == "news")
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let refresh = try await stream.events(until: "done")
            #expect(refresh.filter { $0.event == "items" }.map(ids) == [["late"]])
            _ = try await stream.nextEvent()
            #expect(try await server.post("/api/sessions/\(id)/load-more").status == 202)
            let more = try await stream.events(until: "done")
            let paged = more.filter { $0.event == "items" }.flatMap(ids)
            #expect(paged.count == 10)
            #expect(!paged.contains("late"), "already on the page")
        }
    }

    /// A page whose session is gone (its instance died, or forgot it) starts one elsewhere
    /// that continues its list: told of exactly what came meanwhile, and paging on below
    /// its last item, with nothing twice.
    @Test func aResumedSessionContinuesThePagesListFromItsHead() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(30))) { server in
            let (lost, stream) = try await server.watchedSession(#"{"config":{"news":"badge"}}"#)
            #expect(try await server.post("/api/sessions/\(lost)/load-more").status == 202)
            let page = try #require(try await stream.events(until: "done").first { $0.event == "items" })
            let pagedThrough = try #require(page.json["head"] as? Int, "a first page says the head it brings the page up to")
            #expect(pagedThrough == 30)
            let oldest = try #require(ids(page).last)
            // An item with an old date, brought on top by a refresh: paging down must not bring
            // it again, on this session or the next.
            #expect(try await server.post("/api/items", #"{"id":"late","title":"Late","published":"2001-01-01T00:00:00Z"}"#).status == 201)
            _ = try await stream.events(until: "news")
            #expect(try await server.post("/api/sessions/\(lost)/refresh").status == 202)
            let late = try #require(try await stream.events(until: "done").first { $0.event == "items" })
            #expect(ids(late) == ["late"])
            let head = try #require(late.json["head"] as? Int)
            #expect(head == 31)
            try await publish(server, [("a", "While away", 1), ("b", "While away too", 2)])

            let resume = #"{"head":\#(head),"oldest":"\#(oldest)","pagedThrough":\#(pagedThrough)}"#
            let resumed = try await server.post("/api/sessions", #"{"config":{"news":"badge"},"resume":\#(resume)}"#)
            #expect(resumed.status == 201)
            #expect(resumed.json["resumed"] as? Bool == true)
            let id = try #require(resumed.json["id"] as? String)
            let events = try await server.events(id, lastEventID: 0)
            let news = try #require(try await events.events(until: "news").last)
            #expect(news.json["count"] as? Int == 2, "exactly what came while the page was away")
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let refresh = try await events.events(until: "done")
            let brought = try #require(refresh.first { $0.event == "items" })
            #expect(ids(brought) == ["b", "a"])
            #expect(brought.json["head"] as? Int == 33)
            #expect(try await server.post("/api/sessions/\(id)/load-more").status == 202)
            let more = try await events.events(until: "done").filter { $0.event == "items" }.flatMap(ids)
            #expect(more == Array(items(30).map(\.id)[20...]), "paging goes on below the page's last item")
        }
    }

    @Test(arguments: [
        (#"{"head": 99, "oldest": "item-9"}"#, "a head the feed has not reached"),
        (#"{"head": 30, "oldest": "nowhere"}"#, "an item the feed does not have"),
        (#"{"head": 5, "oldest": "item-9"}"#, "an item newer than the head"),
    ])
    func aListTheFeedCannotContinueStartsAfresh(resume: String, why: String) async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(30))) { server in
            let reply = try await server.post("/api/sessions", #"{"resume":\#(resume)}"#)
            #expect(reply.status == 201, "\(why)")
            #expect(reply.json["resumed"] == nil, "\(why)")
        }
    }

    @Test(arguments: [
        #"{"oldest": "item-1"}"#, #"{"head": -1, "oldest": "item-1"}"#, #"{"head": 3}"#, #"{"head": 3, "oldest": "x", "newest": "y"}"#,
        #"{"head": 3, "oldest": "item-1", "pagedThrough": 4}"#,
    ])
    func aMalformedResumeIsRefused(resume: String) async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let reply = try await server.post("/api/sessions", #"{"resume":\#(resume)}"#)
            #expect([400, 422].contains(reply.status))
            #expect((reply.json["message"] as? String)?.contains("resume.") == true)
        }
    }

    @Test func aRepublishedItemIsNoNews() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let (id, stream) = try await showingFirstPage(server, news: "badge")
            try await publish(server, [("item-1", "Edited title", 1)])
            _ = try await server.sample(id, seq: 1, y: 0, phase: "scroll")
            // An edit in place, which the page shows: told as a change, never as news.
            let edit = try await stream.nextEvent()
            #expect(edit.event == "changes")
            #expect(((edit.json["changes"] as? [[String: Any]])?.first?["item"] as? [String: Any])?["title"] as? String == "Edited title")
            #expect(try await stream.nextEvent().event == "state", "an upsert takes no position: nothing new")
        }
    }

    @Test func aLiveSessionAtRestGetsTheItemsPrependedAndMidGestureGetsNews() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let (id, stream) = try await showingFirstPage(server, news: "live")
            _ = try await server.sample(id, seq: 1, y: 0, phase: "scroll")
            _ = try await stream.nextEvent()
            try await publish(server, [("a", "Older news", 1), ("b", "Newest news", 2)])
            let prepended = try await stream.nextEvent()
            #expect(prepended.event == "items", "no refresh: no state, progress or done first")
            #expect(prepended.json["op"] as? String == "prepend")
            #expect(prepended.json["actionId"] is NSNull)
            #expect(ids(prepended) == ["b", "a"])

            // Pulled a little, not enough to refresh: the page is told, not changed.
            _ = try await server.sample(id, seq: 2, y: -30, phase: "drag")
            _ = try await stream.nextEvent()
            try await publish(server, [("c", "During the gesture", 3)])
            let news = try await stream.nextEvent()
            #expect(news.event == "news")
            #expect(news.json["count"] as? Int == 1)

            // Let go under the threshold: back at rest at the top, the item comes in.
            _ = try await server.sample(id, seq: 3, y: 0, phase: "release")
            let rest = try await stream.nextEvent()
            #expect(rest.event == "state")
            let late = try await stream.nextEvent()
            #expect(late.event == "items")
            #expect(ids(late) == ["c"])

            // Scrolled down the list: news again, and a refresh brings only what is new.
            _ = try await server.sample(id, seq: 4, y: 400, phase: "scroll", content: 2000, viewport: 600)
            _ = try await stream.nextEvent()
            try await publish(server, [("d", "While reading", 4)])
            #expect(try await stream.nextEvent().event == "news")
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let refresh = try await stream.events(until: "done")
            #expect(refresh.filter { $0.event == "items" }.map(ids) == [["d"]])
        }
    }

    /// A live read still running when a refresh starts and ends must not bring the same
    /// items a second time.
    @Test func aLiveReadOvertakenByARefreshIsDropped() async throws {
        let feed = GatedFeed(items: items(3))
        try await TestServer.run(feed: feed) { server in
            let (id, stream) = try await showingFirstPage(server, news: "live")
            _ = try await server.sample(id, seq: 1, y: 0, phase: "scroll")
            _ = try await stream.nextEvent()
            try await publish(server, [("a", "Raced", 1)])
            try await feed.firstReadStarted()
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let refresh = try await stream.events(until: "done")
            #expect(refresh.filter { $0.event == "items" }.map(ids) == [["a"]])
            _ = try await stream.nextEvent()
            feed.releaseFirstRead()
            try await feed.firstReadEnded()
            // Whenever the late read lands, the next item comes in after it.
            try await publish(server, [("b", "Next", 2)])
            var prepended: [[String]] = []
            while !prepended.joined().contains("b") {
                let event = try await stream.nextEvent()
                if event.event == "items" { prepended.append(ids(event)) }
            }
            #expect(prepended == [["b"]], "the late read brings nothing")
        }
    }

    @Test func offSendsNothing() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let (id, stream) = try await showingFirstPage(server, news: "off")
            try await publish(server, [("a", "Unannounced", 1)])
            // The publish is answered once every session has its news queued: had this one
            // been told, the `news` would come before this sample's state.
            _ = try await server.sample(id, seq: 1, y: 0, phase: "scroll")
            #expect(try await stream.nextEvent().event == "state")
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let refresh = try await stream.events(until: "done")
            #expect(refresh.filter { $0.event == "items" }.map(ids) == [["a"]])
        }
    }

    @Test func aSessionWithNothingShownYetHearsNothing() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let (id, stream) = try await server.watchedSession()
            try await publish(server, [("a", "Too early", 1)])
            _ = try await server.sample(id, seq: 1, y: 0, phase: "scroll")
            #expect(try await stream.nextEvent().event == "state", "its first page will bring the item anyway")
        }
    }

    @Test func aReplayCarriesOnlyTheLatestNews() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(3))) { server in
            let (id, stream) = try await showingFirstPage(server, news: "badge")
            let before = try #require(try await server.sample(id, seq: 1, y: 0, phase: "scroll")["seq"] as? Int)
            #expect(before == 1)
            let cursor = try #require(try await stream.nextEvent().id)
            for index in 0..<3 { try await publish(server, [("n\(index)", "News \(index)", index + 1)]) }
            let replay = try await server.events(id, lastEventID: cursor)
            let news = try await replay.nextEvent()
            #expect(news.event == "news")
            #expect(news.json["count"] as? Int == 3, "superseded news is coalesced")
            _ = try await server.sample(id, seq: 2, y: 0, phase: "scroll")
            #expect(try await replay.nextEvent().event == "state")
        }
    }

    @Test func aRefreshThatStoresUpstreamItemsTellsEveryOtherSession() async throws {
        let feed = UpstreamFeed(stored: items(3), upstream: [FeedItem(id: "upstream", title: "From upstream", published: .now())])
        try await TestServer.run(feed: feed) { server in
            let (_, watcher) = try await showingFirstPage(server, news: "badge")
            let (other, otherStream) = try await showingFirstPage(server, news: "badge")
            #expect(try await server.post("/api/sessions/\(other)/refresh").status == 202)
            let news = try await watcher.nextEvent()
            #expect(news.event == "news")
            #expect((news.json["newest"] as? [String: Any])?["id"] as? String == "upstream")
            let refresh = try await otherStream.events(until: "done")
            #expect(refresh.filter { $0.event == "items" }.map(ids) == [["upstream"]])
        }
    }
}

/// The hub's own decisions, without a server.
@Suite struct FeedNewsTests {
    /// A write that does not follow on from the log here (another instance's came between) is
    /// answered without waiting for the read of what changed meanwhile: while PostgreSQL loses
    /// connections that read can take as long as the write did. The read still brings the
    /// log to the store's version.
    @Test(.timeLimit(.minutes(2))) func aWriterIsAnsweredWithoutWaitingForTheReadOfChangesMadeElsewhere() async throws {
        let feed = ChangesGatedFeed(items: items(3), version: 6)
        let news = FeedNews(feed: feed, observer: ServerMetrics())
        await news.changed(from: nil, to: 3, changes: nil)
        #expect(news.changeLog?.version == 3)
        let edited = {
            var item = items(1, prefix: "edited")[0]
            item.version = 6
            return item
        }()
        let gateOpenedByTimer = await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                await news.written(FeedWrite(stored: [edited], changes: [.update(edited)], version: 6))
                return nil
            }
            group.addTask {
                // Only a writer that waits for the read needs this, and fails for it.
                guard (try? await Task.sleep(for: .seconds(30))) != nil else { return false }
                feed.open()
                return true
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? false
        }
        #expect(!gateOpenedByTimer, "the writer waited for the read of what changed elsewhere")
        // The read was started, and is still held at the gate: the writer did not wait for it.
        try await feed.readStarted()
        #expect(news.changeLog?.version == 3)
        feed.open()
        try await until { news.changeLog?.version == 6 }
    }

    private func until(_ condition: @Sendable () -> Bool) async throws {
        for _ in 0..<3000 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition())
    }
}

/// A memory feed whose reads of changes wait until the test opens it, then answer `version`
/// with no changes in it.
private final class ChangesGatedFeed: ForwardingFeed {
    let memory: MemoryFeed
    var forwarded: any FeedSource { memory }
    let version: FeedVersion
    private let started = AsyncStream<Void>.makeStream()
    private let gate = Mutex<[CheckedContinuation<Void, Never>]?>([])

    init(items: [FeedItem], version: FeedVersion) {
        memory = MemoryFeed(items: items)
        self.version = version
    }

    func readStarted() async throws {
        var iterator = started.stream.makeAsyncIterator()
        guard await iterator.next() != nil else { throw TestFailure("no read") }
    }

    func open() {
        let waiting = gate.withLock { waiting in
            defer { waiting = nil }
            return waiting ?? []
        }
        for continuation in waiting { continuation.resume() }
    }

    func changes(since version: FeedVersion, within positions: ClosedRange<FeedPosition>, limit: Int) async throws -> FeedChanges? {
        started.continuation.yield()
        await withCheckedContinuation { continuation in
            let waits = gate.withLock { waiting in
                guard waiting != nil else { return false }
                waiting?.append(continuation)
                return true
            }
            if !waits { continuation.resume() }
        }
        return FeedChanges(changes: [], version: self.version)
    }
}

/// A memory feed whose first read of new items waits until the test lets it go.
private final class GatedFeed: ForwardingFeed {
    let memory: MemoryFeed
    var forwarded: any FeedSource { memory }
    private let reads = Mutex(0)
    private let started = AsyncStream<Void>.makeStream()
    private let gate = AsyncStream<Void>.makeStream()
    private let ended = AsyncStream<Void>.makeStream()

    init(items: [FeedItem]) {
        memory = MemoryFeed(items: items)
    }

    func firstReadStarted() async throws { try await Self.wait(for: started.stream) }
    func releaseFirstRead() { gate.continuation.yield() }
    func firstReadEnded() async throws { try await Self.wait(for: ended.stream) }

    private static func wait(for stream: AsyncStream<Void>) async throws {
        var iterator = stream.makeAsyncIterator()
        guard await iterator.next() != nil else { throw TestFailure("no signal") }
    }

    func added(after position: FeedPosition, limit: Int) async throws -> FeedPage {
        let first = reads.withLock { reads in
            reads += 1
            return reads == 1
        }
        guard first else { return try await memory.added(after: position, limit: limit) }
        let page = try await memory.added(after: position, limit: limit)
        started.continuation.yield()
        try await Self.wait(for: gate.stream)
        defer { ended.continuation.yield() }
        return page
    }

}

/// A feed whose update stores what its upstream has, as `UpstreamSet` does.
private final class UpstreamFeed: ForwardingFeed {
    let memory: MemoryFeed
    var forwarded: any FeedSource { memory }
    let upstream: [FeedItem]

    init(stored: [FeedItem], upstream: [FeedItem]) {
        memory = MemoryFeed(items: stored)
        self.upstream = upstream
    }

    func update(progress: @escaping ProgressSink) async throws -> FeedUpdate {
        let before = try await memory.head()?.position ?? 0
        _ = try await memory.publish(upstream)
        let added = Int((try await memory.head()?.position ?? 0) - before)
        return FeedUpdate(added: added, message: "\(added) new")
    }

}

/// The log keeps the newest `state` and `news` outside its ring and puts them back in id
/// order among the ring's events.
@Suite struct EventLogCoalescingTests {
    @Test func aReplayHasOnlyTheLatestStateAndNewsInIDOrder() {
        var log = EventLog(capacity: 16)
        let data = ByteBuffer(string: "{}")
        for kind: ServerEvent.Kind in [.state, .items, .news, .state, .done, .news] { log.append(kind, data) }
        func replay(after cursor: UInt64) -> [String] {
            guard case .events(let events) = log.events(after: cursor) else { return ["gap"] }
            return events.map { "\($0.id) \($0.kind)" }
        }
        #expect(replay(after: 0) == ["2 items", "4 state", "5 done", "6 news"])
        #expect(replay(after: 4) == ["5 done", "6 news"])
        #expect(replay(after: 6) == [])
        log.append(.news, data)
        log.append(.state, data)
        #expect(replay(after: 6) == ["7 news", "8 state"])
        #expect(replay(after: 7) == ["8 state"])
        log.append(.items, data)
        #expect(replay(after: 5) == ["7 news", "8 state", "9 items"])
    }
}
