import Foundation
import Logging
import RefreshServerTesting
import Testing

@testable import RefreshFeed
@testable import RefreshServer

func temporaryDatabase() -> String {
    Scratch.path("feed").appendingPathComponent("refresh.sqlite").path
}

@Suite struct FeedStoreTests {
    let logger = Logger(label: "test")

    @Test func migrationsRunOnceInOrderAndSurviveReopening() throws {
        let path = temporaryDatabase()
        let first = try SQLiteFeed(path: path)
        #expect(
            try first.appliedMigrations() == [
                "v1: items", "v2: upstream validators", "v3: feed positions", "v4: feeds", "v5: readiness", "v6: the list by position",
                "v7: versions and removals",
            ])
        let again = try SQLiteFeed(path: path)
        #expect(
            try again.appliedMigrations() == [
                "v1: items", "v2: upstream validators", "v3: feed positions", "v4: feeds", "v5: readiness", "v6: the list by position",
                "v7: versions and removals",
            ])
    }

    @Test(arguments: Store.allCases)
    func pagesThroughTiesWithoutSkippingOrRepeating(store: Store) async throws {
        let feed = try await store.make()
        let all = (0..<23).map { FeedItem(id: "id-\($0 % 7)-\($0)", title: "t\($0)", published: Timestamp(milliseconds: Int64($0 / 4) * 1000)) }
        _ = try await feed.publish(all.shuffled())
        let seen = try await allIDsByPaging(feed, limit: 5)
        // One batch takes its positions in the order of its dates.
        #expect(seen == all.sorted { $0.dateOrder > $1.dateOrder }.map(\.id))
        #expect(Set(seen).count == all.count)
        let middle = try #require(try await feed.item(id: seen[10])?.position)
        let newer = try await feed.added(after: middle, limit: 100)
        #expect(newer.items.map(\.id) == Array(seen[..<10]))
        #expect(!newer.hasMore)
        let gap = try await feed.added(after: middle, limit: 4)
        #expect(gap.items.map(\.id) == Array(seen[..<4]))
        #expect(gap.hasMore)
    }

    @Test(arguments: Store.allCases.filter { $0 != .memory })
    func upsertReplacesByIDAndCountsOnlyNewOnes(store: Store) async throws {
        let feed = try #require(try await store.make() as? any FeedSource & UpstreamStore)
        #expect(try await feed.store(items(3), keepingDatesOf: []).added == 3)
        var edited = items(4)
        edited[0].title = "edited"
        #expect(try await feed.store(edited, keepingDatesOf: []).added == 1)
        let page = try await feed.older(than: nil, limit: 10)
        #expect(page.items.count == 4)
        #expect(page.items.map(\.id) == ["item-3", "item-0", "item-1", "item-2"])
        #expect(page.items[1].title == "edited")
    }

    /// An upstream item without a date keeps the date it was first stored with, whatever
    /// date a later download gives it; one with a date takes the new one.
    @Test(arguments: Store.allCases.filter { $0 != .memory })
    func anUndatedItemKeepsItsFirstDate(store: Store) async throws {
        let feed = try #require(try await store.make() as? any FeedSource & UpstreamStore)
        let first = Timestamp(milliseconds: 1_000)
        let later = Timestamp(milliseconds: 9_000)
        let undated = [ItemKey("a"), ItemKey("b")]
        _ = try await feed.store(
            [FeedItem(id: "a", title: "A", published: first), FeedItem(id: "c", title: "C", published: first)], keepingDatesOf: Set(undated))
        #expect(
            try await feed.store(
                [
                    FeedItem(id: "a", title: "A again", published: later), FeedItem(id: "b", title: "B", published: later),
                    FeedItem(id: "c", title: "C again", published: later),
                ], keepingDatesOf: Set(undated)
            ).added == 1)
        #expect(try await feed.item(id: "a").map { [$0.title, $0.published.rfc3339] } == ["A again", first.rfc3339])
        #expect(try await feed.item(id: "b")?.published == later, "a new undated item takes the date it is first seen with")
        #expect(try await feed.item(id: "c")?.published == later, "a dated item takes its new date")
        #expect(try await feed.older(than: nil, limit: 10).items.map(\.id) == ["b", "c", "a"])
    }

    @Test func publishedItemsSurviveReopening() async throws {
        let path = temporaryDatabase()
        do {
            let feed = try SQLiteFeed(path: path)
            _ = try await feed.publish([
                FeedItem(
                    id: "kept", title: "Kept", summary: "s", link: "https://example.com/kept", author: "a", published: Timestamp(milliseconds: 5))
            ])
        }
        let reopened = try SQLiteFeed(path: path)
        let item = try await reopened.item(id: "kept")
        #expect(
            item
                == FeedItem(
                    id: "kept", title: "Kept", summary: "s", link: "https://example.com/kept", author: "a", published: Timestamp(milliseconds: 5)))
    }

    @Test(arguments: Store.durable)
    func readersGoOnWhileTheWriterWrites(store: Store) async throws {
        let feed = try await store.make()
        _ = try await feed.publish(items(10, prefix: "base"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for batch in 0..<20 {
                    _ = try await feed.publish(items(50, from: 1_900_000_000_000 + Int64(batch) * 10_000_000, prefix: "batch\(batch)"))
                }
            }
            for _ in 0..<4 {
                group.addTask {
                    var last = 0
                    for _ in 0..<50 {
                        let count = try await feed.older(than: nil, limit: 2000).items.count
                        #expect(count >= last, "a reader saw the feed shrink")
                        #expect(count >= 10)
                        last = count
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await feed.older(than: nil, limit: 5000).items.count == 1010)
    }

    @Test func theDemoSeedsOnlyAnEmptyStore() async throws {
        let path = temporaryDatabase()
        var configuration = ServerConfiguration()
        configuration.database = path
        let first = try RefreshApplication.defaultStore(configuration, metrics: ServerMetrics(), logger: logger).feed
        let seeded = try await first.older(than: nil, limit: 1000).items.count
        #expect(seeded == DemoItems.make().count)
        _ = try await first.publish([FeedItem(id: "mine", title: "mine", published: .now())])
        let second = try RefreshApplication.defaultStore(configuration, metrics: ServerMetrics(), logger: logger).feed
        #expect(try await second.older(than: nil, limit: 1000).items.count == seeded + 1)
        configuration.database = ":memory:"
        configuration.feeds = ["http://127.0.0.1:9/feed"]
        let upstreamOnly = try RefreshApplication.defaultStore(configuration, metrics: ServerMetrics(), logger: logger).feed
        #expect(try await upstreamOnly.head() == nil, "no demo when upstream feeds are given")
    }
}
