import Foundation
import GRDB
import PostgresNIO
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// The feed contract with several feeds in one store: each feed keeps its own items, ids,
/// positions and head, whatever the others do at the same moment.
@Suite struct ManyFeedsTests {
    private static let inbox = FeedName("user:42")!
    private static let team = FeedName("team.eng")!

    @Test(arguments: Store.allCases)
    func feedsKeepTheirOwnListsIDsPositionsAndHeads(store: Store) async throws {
        let feeds = try await store.makeStore()
        let main = feeds.feed(.main)
        let inbox = feeds.feed(Self.inbox)
        _ = try await main.publish(items(3))
        _ = try await inbox.publish([FeedItem(id: "item-0", title: "Inbox's own", published: Timestamp(milliseconds: 7))])

        #expect(try await main.head()?.position == 3)
        #expect(
            try await inbox.head()
                == FeedHead(position: 1, item: FeedItem(id: "item-0", title: "Inbox's own", published: Timestamp(milliseconds: 7)), version: 1)
        )
        #expect(try await main.item(id: "item-0")?.title == "item 0", "the same id in two feeds is two items")
        #expect(try await inbox.item(id: "item-1") == nil)
        #expect(try await main.position(of: "item-0") == 3)
        #expect(try await inbox.position(of: "item-0") == 1)
        #expect(try await allIDsByPaging(inbox, limit: 2) == ["item-0"])
        #expect(try await allIDsByPaging(main, limit: 2) == ["item-0", "item-1", "item-2"])

        var edited = items(1)[0]
        edited.title = "edited in main"
        _ = try await main.publish([edited])
        #expect(try await inbox.item(id: "item-0")?.title == "Inbox's own", "an upsert touches only its feed")
        #expect(
            try await inbox.added(after: 0, limit: 10)
                == FeedPage(items: [try #require(try await inbox.item(id: "item-0"))], hasMore: false, head: 1, version: 1))
        #expect(try await main.head()?.version == 4, "an edit takes its own feed's next version")
        #expect(try await main.added(after: 2, limit: 10).items.map(\.id) == ["item-0"])
        #expect(try await main.older(than: nil, limit: 10).head == 3)
        #expect(try await feeds.feed(Self.inbox).head()?.position == 1, "a view made again reads the same feed")
    }

    @Test(arguments: Store.allCases)
    func aFeedWithNoItemsReadsAsAnEmptyPageAtHeadZero(store: Store) async throws {
        let feeds = try await store.makeStore()
        _ = try await feeds.feed(.main).publish(items(2))
        let empty = feeds.feed(Self.team)
        let page = FeedPage(items: [], hasMore: false, head: 0)
        #expect(try await empty.head() == nil)
        #expect(try await empty.older(than: nil, limit: 10) == page)
        #expect(try await empty.older(than: 5, limit: 10) == page)
        #expect(try await empty.added(after: 0, limit: 10) == page)
        #expect(try await empty.added(after: 3, limit: 10) == page)
        #expect(try await empty.item(id: "item-0") == nil)
        #expect(try await empty.position(of: "item-0") == nil)
        try await empty.checkReady()
    }

    /// Writers race on several feeds at once while a reader per feed follows its positions:
    /// every feed ends dense (its head is its count), no reader misses or repeats an item,
    /// and no item lands in another writer's feed.
    @Test(arguments: Store.durable)
    func racingWritersOnSeveralFeedsLeaveEveryFeedDense(store: Store) async throws {
        let feeds = try await store.makeStore()
        let names = [FeedName.main, Self.inbox, Self.team, FeedName("z")!]
        let writersPerFeed = 2
        let perWriter = 60
        let expected = writersPerFeed * perWriter
        try await withThrowingTaskGroup(of: (FeedName, [String]).self) { group in
            for name in names {
                let feed = feeds.feed(name)
                for writer in 0..<writersPerFeed {
                    group.addTask {
                        for index in 0..<perWriter {
                            // The same ids in every feed: each feed must still count them all.
                            let item = FeedItem(
                                id: "w\(writer)-\(index)", title: name.rawValue, published: Timestamp(milliseconds: Int64.random(in: 0...1_000_000)))
                            _ = try await feed.publish([item])
                        }
                        return (name, [])
                    }
                }
                group.addTask {
                    var seen: [String] = []
                    var position: FeedPosition = 0
                    let deadline = ContinuousClock.now + .seconds(60)
                    while seen.count < expected {
                        guard ContinuousClock.now < deadline else { throw TestFailure("\(name) saw \(seen.count) items: one stayed hidden") }
                        let page = try await feed.added(after: position, limit: 10_000)
                        #expect(page.items.count == Int(page.head - position), "\(name) dense: \(page.head) − \(position)")
                        #expect(page.items.allSatisfy { $0.title == name.rawValue }, "\(name) reads only its own items")
                        seen += page.items.map(\.id)
                        position = page.head
                        await Task.yield()
                    }
                    return (name, seen)
                }
            }
            var reads: [FeedName: [String]] = [:]
            for try await (name, seen) in group { reads[name, default: []] += seen }
            for name in names {
                let seen = reads[name, default: []]
                #expect(seen.count == expected, "\(name)")
                #expect(Set(seen).count == seen.count, "\(name): no item seen twice")
                #expect(try await feeds.feed(name).head()?.position == FeedPosition(expected))
            }
        }
    }

    /// A file made before feeds existed opens with every item in `main`, at its position.
    @Test func anSQLiteFileFromBeforeFeedsOpensWithItsItemsInMain() async throws {
        let path = temporaryDatabase()
        try FileManager.default.createDirectory(at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteFeed.migrator.migrate(queue, upTo: "v3: feed positions")
            try await queue.write { db in
                for (index, item) in items(5).reversed().enumerated() {
                    try db.execute(
                        sql: "INSERT INTO item (id, title, published, position) VALUES (?, ?, ?, ?)",
                        arguments: [item.id, item.title, item.published.milliseconds, index + 1])
                }
            }
        }
        let store = try SQLiteFeed(path: path)
        try await expectOldItemsInMain(store)
    }

    /// A database made before feeds existed opens with every item in `main`, at its position.
    @Test(.enabled(if: TestPostgres.isRequired, "PTR_TEST_POSTGRES names no PostgreSQL server"))
    func aPostgreSQLDatabaseFromBeforeFeedsOpensWithItsItemsInMain() async throws {
        let url = try await TestPostgres.freshDatabase()
        let old = try TestPostgres.feed(url: url)
        let logger = TestPostgres.logger
        try await old.client.withTransaction(logger: logger) { connection in
            let first = PostgresFeed.migrations[0]
            for statement in first.sql { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            try await connection.query(
                "CREATE TABLE schema_migration (name text PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())", logger: logger)
            try await connection.query("INSERT INTO schema_migration (name) VALUES (\(first.name))", logger: logger)
            for (index, item) in items(5).reversed().enumerated() {
                try await connection.query(
                    "INSERT INTO item (id, title, published, position) VALUES (\(item.id), \(item.title), \(item.published.milliseconds), \(index + 1))",
                    logger: logger)
            }
            try await connection.query("UPDATE feed_head SET position = 5", logger: logger)
        }
        let store = try TestPostgres.feed(url: url)
        #expect(try await store.appliedMigrations() == PostgresFeed.migrations.map(\.name))
        try await expectOldItemsInMain(store)
    }

    private func expectOldItemsInMain(_ store: some FeedStore) async throws {
        let main = store.feed(.main)
        #expect(try await main.head()?.position == 5)
        #expect(try await main.head()?.item.id == "item-0")
        #expect(try await main.position(of: "item-4") == 1)
        #expect(try await main.added(after: 3, limit: 10).items.map(\.id) == ["item-0", "item-1"])
        #expect(try await store.feed(Self.inbox).head() == nil)
        _ = try await store.feed(Self.inbox).publish(items(1))
        _ = try await main.publish([FeedItem(id: "next", title: "Next", published: .now())])
        #expect(try await main.head()?.position == 6)
        #expect(try await store.feed(Self.inbox).head()?.position == 1)
        #expect(try await main.item(id: "item-0")?.title == "item 0")
    }
}
