import Testing

@testable import RefreshFeed

@Suite struct MemoryFeedTests {
    /// Twelve items sharing four timestamps: paging must neither skip nor repeat.
    @Test func pagesThroughTiesWithoutSkippingOrRepeating() async throws {
        let all = (0..<12).map { FeedItem(id: "id-\($0)", title: "t", published: Timestamp(milliseconds: Int64($0 / 3) * 1000)) }
        let feed = MemoryFeed(items: all.shuffled())
        let seen = try await allIDsByPaging(feed, limit: 5)
        let expected = all.sorted { $0.cursor > $1.cursor }.map(\.id)
        #expect(seen == expected)
        #expect(Set(seen).count == 12)
    }

    @Test func newerThanACursorAndGaps() async throws {
        let feed = MemoryFeed(items: items(10))
        let cursor = try #require(try await feed.item(id: "item-5")).cursor
        let page = try await feed.newer(than: cursor, limit: 10)
        #expect(page.items.map(\.id) == (0..<5).map { "item-\($0)" })
        #expect(!page.hasMore)
        let gap = try await feed.newer(than: cursor, limit: 3)
        #expect(gap.items.map(\.id) == ["item-0", "item-1", "item-2"])
        #expect(gap.hasMore)
    }

    @Test func publishingTheSameIDReplaces() async throws {
        let feed = MemoryFeed(items: items(3))
        _ = try await feed.publish([FeedItem(id: "item-1", title: "edited", published: Timestamp(milliseconds: 1_900_000_000_000))])
        let page = try await feed.older(than: nil, limit: 10)
        #expect(page.items.map(\.id) == ["item-1", "item-0", "item-2"])
        #expect(page.items.first?.title == "edited")
    }
}
