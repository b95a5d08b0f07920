import Foundation
import NIOCore
import NIOPosix
import RefreshEngine
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// Publishes racing refreshes and live prepends, checked the way a page keeps its list:
/// every item the feed gained must end up on every page exactly once.
@Suite struct NewsRaceTests {
    /// One page as it renders its session's events: prepends go on top, appends at the
    /// bottom, a reset empties the list.
    private struct Page {
        let session: Session
        var cursor: UInt64 = 0
        var list: [String] = []
        var shown: Set<String> = []
        var doubled: [String] = []
        var resets = 0
        var finished: Set<String> = []

        mutating func read() throws {
            let (events, next) = session.events(after: cursor)
            cursor = next
            for event in events {
                let data = try JSONSerialization.jsonObject(with: Data(event.data.readableBytesView)) as? [String: Any] ?? [:]
                switch event.kind {
                case .items:
                    let ids = (data["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                    for id in ids where !shown.insert(id).inserted { doubled.append(id) }
                    list = data["op"] as? String == "prepend" ? ids + list : list + ids
                case .reset:
                    resets += 1
                    list = []
                    shown = []
                case .done:
                    if let action = data["actionId"] as? String { finished.insert(action) }
                default:
                    break
                }
            }
        }

        /// Reads until `action` is done; bounded, as every wait here is.
        mutating func wait(for action: ActionID) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while !finished.contains(action.description) {
                guard ContinuousClock.now < deadline else { throw TestFailure("action \(action) never finished") }
                try await Task.sleep(for: .milliseconds(1))
                try read()
            }
        }
    }

    @Test func tenThousandPublishesRacingFiftyRefreshesLeaveNoItemMissingOrDoubled() async throws {
        let publishes = 10_000
        let publishers = 4
        let configuration = TestServer.configuration {
            $0.replayBufferLength = 100_000
            $0.replayBufferBytes = .max
            $0.pageSize = publishes
        }
        // In memory: the race under test is between sessions; racing writers on a file are
        // `FeedPositionTests`' subject, and a disk sync per publish would only slow this down.
        let feed = JitteredReads(try SQLiteFeed(path: ":memory:"))
        let parts = ServerParts.forTest(feed: feed, configuration: configuration)
        let store = parts.sessions
        // Half badge, half live: live pages at rest at the top take items without refreshing.
        let sessions = try (0..<50).map { index in
            let config = try Preset.standard.config.applying(.init(news: index.isMultiple(of: 2) ? .badge : .live))
            return try store.create(config: config, client: "page-\(index)")
        }
        // An open stream on one of two event loops each: news reaches sessions through them.
        let loops = MultiThreadedEventLoopGroup.singleton
        let streams = sessions.map { session in
            let stream = SilentStream(eventLoop: loops.next())
            _ = session.subscribe(stream, lastEventID: nil, now: .now)
            return stream
        }
        let published = try await withThrowingTaskGroup(of: [String].self) { group in
            for writer in 0..<publishers {
                group.addTask {
                    var ids: [String] = []
                    for index in 0..<(publishes / publishers) {
                        // Published at random times: an item can be new to a page and still old.
                        let item = FeedItem(
                            id: "w\(writer)-\(index)", title: "Item \(index)",
                            published: Timestamp(milliseconds: 1_800_000_000_000 + Int64.random(in: 0...10_000_000)))
                        _ = try await feed.publish([item])
                        await parts.feeds.news(of: .main)?.catchUp()
                        ids.append(item.id)
                    }
                    return ids
                }
            }
            for session in sessions {
                group.addTask {
                    var page = Page(session: session)
                    try await page.wait(for: try session.requestLoadMore(now: .now))
                    var round = 0
                    while store.count > 0, parts.feeds.news(of: .main)?.position ?? 0 < FeedPosition(publishes) {
                        try await page.wait(for: session.requestRefresh(now: .now))
                        // Paging down must not bring what came on top.
                        round += 1
                        if round.isMultiple(of: 5) { try await page.wait(for: try session.requestLoadMore(now: .now)) }
                    }
                    return []
                }
            }
            var published: [String] = []
            for try await ids in group { published += ids }
            return published
        }
        #expect(published.count == publishes)
        for session in sessions {
            var page = Page(session: session)
            try page.read()
            try await page.wait(for: session.requestRefresh(now: .now))
            #expect(page.resets == 0, "a reset would start the list over and hide what this test checks")
            #expect(page.doubled.isEmpty, "doubled on \(session.config.news): \(page.doubled.prefix(5))")
            #expect(page.list.count == publishes, "\(session.config.news) page shows \(page.list.count) of \(publishes)")
            #expect(Set(page.list) == Set(published))
        }
        for (session, stream) in zip(sessions, streams) { session.unsubscribe(stream, now: .now) }
    }
}

/// A store whose reads of new items take a random while, so that live reads and refreshes
/// overlap in every order.
private struct JitteredReads: ForwardingFeed {
    let store: SQLiteFeed
    var forwarded: any FeedSource { store }

    init(_ store: SQLiteFeed) {
        self.store = store
    }

    func added(after position: FeedPosition, limit: Int) async throws -> FeedPage {
        try await Task.sleep(for: .microseconds(Int.random(in: 0...3_000)))
        return try await store.added(after: position, limit: limit)
    }
}

/// A stream that keeps its place in the session but writes nothing: the test reads the
/// session's log itself.
private final class SilentStream: EventListener {
    let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {}
}
