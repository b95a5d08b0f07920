import Foundation
import GRDB
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// The stores a `FeedSource` promise is checked against: each test of the contract runs on
/// every one of them.
enum Store: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqliteInMemory
    case sqliteFile
    case postgres

    /// Every store this run can check: PostgreSQL when a test server is given (or required).
    static var allCases: [Store] { [.memory, .sqliteInMemory, .sqliteFile] + (TestPostgres.isRequired ? [.postgres] : []) }

    /// The stores that persist, and so can be shared by writers that race.
    static var durable: [Store] { allCases.filter { $0 != .sqliteInMemory } }

    func make(items: [FeedItem] = []) async throws -> any FeedSource {
        let feed: any FeedSource =
            switch self {
            case .memory: MemoryFeed()
            case .sqliteInMemory: try SQLiteFeed(path: ":memory:")
            case .sqliteFile: try SQLiteFeed(path: temporaryDatabase())
            case .postgres: try await TestPostgres.freshFeed()
            }
        if !items.isEmpty { _ = try await feed.publish(items) }
        return feed
    }

    /// A store of several feeds; the feed `make` gives is its `main`.
    func makeStore() async throws -> any FeedStore {
        switch self {
        case .memory: MemoryFeed()
        case .sqliteInMemory: try SQLiteFeed(path: ":memory:")
        case .sqliteFile: try SQLiteFeed(path: temporaryDatabase())
        case .postgres: try await TestPostgres.freshFeed()
        }
    }

    var testDescription: String { rawValue }
}

/// Feed positions: dense, strictly increasing, visible in order, untouched by upserts.
@Suite struct FeedPositionTests {
    @Test(arguments: Store.allCases)
    func newItemsTakeTheNextPositionsAndUpsertsTakeNone(store: Store) async throws {
        let feed = try await store.make()
        #expect(try await feed.head() == nil)
        #expect(try await feed.added(after: 0, limit: 10) == FeedPage(items: [], hasMore: false, head: 0))

        let first = items(3)
        _ = try await feed.publish(first.shuffled())
        let head = try #require(try await feed.head())
        #expect(head.position == 3)
        #expect(head.item.id == "item-0", "the newest of a batch takes the highest position")

        var edited = first[2]
        edited.title = "edited"
        let fresh = FeedItem(id: "fresh", title: "Fresh", published: Timestamp(milliseconds: 1))
        _ = try await feed.publish([edited, fresh])
        #expect(try await feed.head()?.position == 4, "an upsert takes no position, a new id takes the next")
        #expect(try await feed.head()?.item.id == "fresh")

        let since3 = try await feed.added(after: 3, limit: 10)
        #expect(since3.items.map(\.id) == ["fresh"], "an old item published late is new to readers")
        #expect(since3.head == 4)
        let capped = try await feed.added(after: 0, limit: 2)
        #expect(capped.items.map(\.id) == ["fresh", "item-0"], "the newest in feed order")
        #expect(capped.hasMore)
        #expect(try await feed.added(after: 9, limit: 10).items.isEmpty)
        #expect(try await feed.older(than: nil, limit: 1).head == 4, "every page says the head it was read at")
        let all = try await feed.older(than: nil, limit: 10)
        #expect(all.items.map(\.id) == ["fresh", "item-0", "item-1", "item-2"], "the list is in the order the feed gained its items")
        #expect(all.items.map(\.position) == [4, 3, 2, 1])
        #expect(all.items[3].title == "edited", "an upsert stays where its item stands")
        #expect(!all.hasMore)
        let rest = try await feed.older(than: try #require(try await feed.position(of: "item-1")), limit: 10)
        #expect(rest.items.map(\.id) == ["item-2"])
    }

    @Test(arguments: Store.allCases)
    func aBatchRepeatingAnIDKeepsItsLastVersionAtOnePosition(store: Store) async throws {
        let feed = try await store.make()
        let stamp = Timestamp(milliseconds: 1_000)
        _ = try await feed.publish([
            FeedItem(id: "a", title: "first", published: stamp), FeedItem(id: "b", title: "b", published: stamp),
            FeedItem(id: "a", title: "second", published: stamp),
        ])
        #expect(try await feed.head()?.position == 2)
        #expect(try await feed.item(id: "a")?.title == "second")
    }

    /// Writers race; a reader that has seen position p asks what came after it, again and
    /// again. Visible in order means it never misses an item and never sees one twice, and
    /// dense means every answer holds exactly `head − p` items.
    @Test(arguments: Store.durable)
    func concurrentWritersNeverHideAnItemBelowAPositionSeen(store: Store) async throws {
        let feed = try await store.make()
        let writers = 4
        let perWriter = 150
        try await withThrowingTaskGroup(of: [String].self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for index in 0..<perWriter {
                        let item = FeedItem(
                            id: "w\(writer)-\(index)", title: "t", published: Timestamp(milliseconds: Int64.random(in: 0...1_000_000)))
                        _ = try await feed.publish([item])
                    }
                    return []
                }
            }
            group.addTask {
                var seen: [String] = []
                var position: FeedPosition = 0
                let deadline = ContinuousClock.now + .seconds(60)
                while seen.count < writers * perWriter {
                    guard ContinuousClock.now < deadline else { throw TestFailure("saw \(seen.count) items: one stayed hidden") }
                    let page = try await feed.added(after: position, limit: 10_000)
                    #expect(page.items.count == Int(page.head - position), "dense: \(page.head) − \(position)")
                    seen += page.items.map(\.id)
                    position = page.head
                    await Task.yield()
                }
                return seen
            }
            var reads: [String] = []
            for try await seen in group { reads += seen }
            #expect(reads.count == writers * perWriter)
            #expect(Set(reads).count == reads.count, "no item seen twice")
        }
    }

    @Test func theMigrationGivesItemsStoredBeforePositionsTheirsInFeedOrder() async throws {
        let path = temporaryDatabase()
        try FileManager.default.createDirectory(at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteFeed.migrator.migrate(queue, upTo: "v2: upstream validators")
            try await queue.write { db in
                for item in items(5).shuffled() {
                    try db.execute(
                        sql: "INSERT INTO item (id, title, published) VALUES (?, ?, ?)",
                        arguments: [item.id, item.title, item.published.milliseconds])
                }
            }
        }
        let feed = try SQLiteFeed(path: path)
        #expect(
            try feed.appliedMigrations().suffix(5) == [
                "v3: feed positions", "v4: feeds", "v5: readiness", "v6: the list by position", "v7: versions and removals",
            ])
        #expect(try await feed.head()?.position == 5)
        #expect(try await feed.head()?.item.id == "item-0")
        #expect(try await feed.added(after: 3, limit: 10).items.map(\.id) == ["item-0", "item-1"])
        _ = try await feed.publish([FeedItem(id: "next", title: "Next", published: .now())])
        #expect(try await feed.head()?.position == 6)
    }
}
