import Testing

@testable import RefreshFeed

@Suite struct MemoryFeedTests {
    /// Twelve items sharing four timestamps: paging must neither skip nor repeat.
    @Test func pagesThroughTiesWithoutSkippingOrRepeating() async throws {
        let all = (0..<12).map { FeedItem(id: "id-\($0)", title: "t", published: Timestamp(milliseconds: Int64($0 / 3) * 1000)) }
        let feed = MemoryFeed(items: all.shuffled())
        let seen = try await allIDsByPaging(feed, limit: 5)
        let expected = all.sorted { $0.dateOrder > $1.dateOrder }.map(\.id)
        #expect(seen == expected)
        #expect(Set(seen).count == 12)
    }

    @Test func addedAfterAPositionAndGaps() async throws {
        let feed = MemoryFeed(items: items(10))
        let position = try #require(try await feed.position(of: "item-5"))
        let page = try await feed.added(after: position, limit: 10)
        #expect(page.items.map(\.id) == (0..<5).map { "item-\($0)" })
        #expect(!page.hasMore)
        let gap = try await feed.added(after: position, limit: 3)
        #expect(gap.items.map(\.id) == ["item-0", "item-1", "item-2"])
        #expect(gap.hasMore)
    }

    /// A republished id is replaced where it stands: its new date does not move it.
    @Test func publishingTheSameIDReplacesInPlace() async throws {
        let feed = MemoryFeed(items: items(3))
        _ = try await feed.publish([FeedItem(id: "item-1", title: "edited", published: Timestamp(milliseconds: 1_900_000_000_000))])
        let page = try await feed.older(than: nil, limit: 10)
        #expect(page.items.map(\.id) == ["item-0", "item-1", "item-2"])
        #expect(page.items[1].title == "edited")
        #expect(page.items.map(\.position) == [3, 2, 1])
    }
}
