import Foundation
import GRDB

/// The feeds in an SQLite file: published items survive restarts and crashes (a `201` means
/// the write is committed), refreshes pull the configured upstream feeds into `main`.
///
/// The instance `init` opens is the feed `main`; ``feed(_:)`` gives the others, sharing its
/// database. Every row is keyed by its feed, so a feed's reads and writes touch only its own
/// items, positions and head.
///
/// A `DatabasePool` runs in WAL mode: one writer, readers in parallel, so paging never waits
/// for a refresh that is storing items.
public final class SQLiteFeed: FeedSource, FeedStore, UpstreamStore {
    private let database: any DatabaseWriter
    /// Each feed's upstream sources, for every view of the store.
    private let upstreamsByFeed: [FeedName: UpstreamSet]
    private let lockWait: LockWait
    /// A file others may lock, rather than a database of this process alone.
    private let isShared: Bool
    /// Whether the last write failed for want of room or of the file: `/readyz` then says
    /// writes cannot be made (``checkReady()``).
    private let writeHealth: WriteHealth
    /// The database's file, to see whether its disk has room; `nil` in memory.
    private let path: String?
    /// The feed's name within the database.
    public let name: FeedName

    /// The longest a write waits for the database lock, from when it reaches the store, and
    /// so about the longest a publish waits before `503` while another process holds it.
    static let lockDeadline: Duration = .seconds(5)
    /// The longest `/readyz` waits for the lock before saying writes cannot get it.
    static let readinessLockWait: Duration = .seconds(1)

    /// - Parameters:
    ///   - path: a file (its folder is created), or `:memory:`.
    ///   - upstreams: what a refresh of each feed pulls from; a feed without any only changes
    ///     by publishing.
    public init(path: String, upstreams: [FeedName: UpstreamSet] = [:]) throws {
        let lockWait = LockWait(fallback: Self.lockDeadline)
        writeHealth = WriteHealth()
        if path == ":memory:" {
            database = try DatabaseQueue()
            isShared = false
            self.path = nil
        } else {
            self.path = path
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            var configuration = Configuration()
            configuration.busyMode = .callback { tries in lockWait.shouldRetry(tries: tries) }
            database = try DatabasePool(path: path, configuration: configuration)
            isShared = true
        }
        self.lockWait = lockWait
        upstreamsByFeed = upstreams
        name = .main
        try Self.migrator.migrate(database)
    }

    private init(sharing store: SQLiteFeed, name: FeedName) {
        database = store.database
        lockWait = store.lockWait
        isShared = store.isShared
        writeHealth = store.writeHealth
        path = store.path
        upstreamsByFeed = store.upstreamsByFeed
        self.name = name
    }

    public func feed(_ name: FeedName) -> any FeedSource {
        name == self.name ? self : SQLiteFeed(sharing: self, name: name)
    }

    /// Versioned schema changes, applied in order, each once.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: items") { db in
            try db.create(table: "item") { table in
                table.primaryKey("id", .text)
                table.column("title", .text).notNull()
                table.column("summary", .text)
                table.column("link", .text)
                table.column("author", .text)
                table.column("published", .integer).notNull()
            }
            // The feed's order: newest first, ties broken by id.
            try db.create(index: "item_order", on: "item", columns: ["published", "id"])
        }
        migrator.registerMigration("v2: upstream validators") { db in
            try db.create(table: "upstream") { table in
                table.primaryKey("url", .text)
                table.column("etag", .text)
                table.column("lastModified", .text)
                table.column("checked", .integer)
            }
        }
        migrator.registerMigration("v3: feed positions") { db in
            // Items stored before positions existed take them in feed order, oldest first.
            try db.alter(table: "item") { table in table.add(column: "position", .integer) }
            try db.execute(
                sql: """
                    WITH ranked AS (SELECT id, ROW_NUMBER() OVER (ORDER BY published, id) AS position FROM item)
                    UPDATE item SET position = (SELECT position FROM ranked WHERE ranked.id = item.id)
                    """)
            try db.create(index: "item_position", on: "item", columns: ["position"], unique: true)
        }
        migrator.registerMigration("v4: feeds") { db in
            // Every item so far is `main`'s, at the position it had (and a statement that names
            // no feed still means `main`). An id is unique within its feed, a position within its
            // feed: the table is rebuilt, as SQLite cannot change a primary key in place.
            try db.execute(
                sql: """
                    CREATE TABLE feed_item (
                        feed TEXT NOT NULL DEFAULT 'main',
                        id TEXT NOT NULL,
                        title TEXT NOT NULL,
                        summary TEXT,
                        link TEXT,
                        author TEXT,
                        published INTEGER NOT NULL,
                        position INTEGER NOT NULL,
                        PRIMARY KEY (feed, id)
                    );
                    INSERT INTO feed_item (feed, id, title, summary, link, author, published, position)
                        SELECT 'main', id, title, summary, link, author, published, position FROM item;
                    DROP TABLE item;
                    ALTER TABLE feed_item RENAME TO item;
                    CREATE INDEX item_order ON item (feed, published, id);
                    CREATE UNIQUE INDEX item_position ON item (feed, position);
                    """)
        }
        migrator.registerMigration("v5: readiness") { db in
            // One row a readiness check rewrites after a write failed, to see whether writes
            // can be made again.
            try db.create(table: "readiness") { table in
                table.primaryKey("id", .integer)
                table.column("checked", .integer)
            }
        }
        migrator.registerMigration("v6: the list by position") { db in
            // Pages are read by position, which the unique index on (feed, position) serves;
            // the order by date is no longer read.
            try db.execute(sql: "DROP INDEX IF EXISTS item_order")
        }
        return migrator
    }

    /// The migrations applied so far, oldest first.
    func appliedMigrations() throws -> [String] {
        try database.read { db in try Self.migrator.appliedMigrations(db) }
    }

    public var isEmpty: Bool {
        get throws {
            try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item WHERE feed = ?", arguments: [name.rawValue]) ?? 0 } == 0
        }
    }

    // MARK: - FeedSource

    public func update(progress: @escaping ProgressSink) async throws -> FeedUpdate {
        guard let upstreams = upstreamsByFeed[name] else {
            progress(FeedProgress(fraction: 1, stage: "checking", message: "Checked for new items"))
            return FeedUpdate(added: 0, message: "Up to date")
        }
        return try await upstreams.refresh(into: self, progress: progress)
    }

    public func added(after position: FeedPosition, limit: Int) async throws -> FeedPage {
        try await database.read { [name] db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT * FROM item WHERE feed = ? AND position > ? ORDER BY position DESC LIMIT ?",
                arguments: [name.rawValue, position, limit + 1])
            return try Self.page(rows, limit: limit, of: name, db)
        }
    }

    public func head() async throws -> FeedHead? {
        try await database.read { [name] db in
            try Row.fetchOne(db, sql: "SELECT * FROM item WHERE feed = ? ORDER BY position DESC LIMIT 1", arguments: [name.rawValue]).map { row in
                FeedHead(position: row["position"], item: Self.item(row))
            }
        }
    }

    public func older(than position: FeedPosition?, limit: Int) async throws -> FeedPage {
        try await database.read { [name] db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT * FROM item WHERE feed = ? AND position < ? ORDER BY position DESC LIMIT ?",
                arguments: [name.rawValue, position ?? .max, limit + 1])
            return try Self.page(rows, limit: limit, of: name, db)
        }
    }

    public func publish(_ items: [FeedItem]) async throws -> [FeedItem] {
        try await write(ItemKey.lastOfEachID(items)).stored
    }

    public func item(id: String) async throws -> FeedItem? {
        try await database.read { [name] db in
            try Row.fetchOne(db, sql: "SELECT * FROM item WHERE feed = ? AND id = ?", arguments: [name.rawValue, id]).map(Self.item)
        }
    }

    public func position(of id: String) async throws -> FeedPosition? {
        try await database.read { [name] db in
            try FeedPosition.fetchOne(db, sql: "SELECT position FROM item WHERE feed = ? AND id = ?", arguments: [name.rawValue, id])
        }
    }

    // MARK: - Storage

    /// Upserts by id in one transaction; answers how many ids were new.
    func store(_ items: [FeedItem], keepingDatesOf undated: Set<ItemKey> = []) async throws -> Int {
        try await write(items, keepingDatesOf: undated).added
    }

    /// Upserts by id in one transaction: the items as stored, with their positions, and how
    /// many ids were new. An item of `undated` that is stored already keeps its date (an
    /// upstream entry without one is dated when first seen).
    private func write(_ items: [FeedItem], keepingDatesOf undated: Set<ItemKey> = []) async throws -> (stored: [FeedItem], added: Int) {
        guard !items.isEmpty else { return ([], 0) }
        try ItemRules.check(items)
        let deadline = ContinuousClock.now + Self.lockDeadline
        do {
            let written = try await database.writeWithoutTransaction { [lockWait, name] db in
                try lockWait.waiting(until: deadline) {
                    var written: (stored: [FeedItem], added: Int) = ([], 0)
                    try db.inTransaction {
                        written = try Self.upsert(items, into: name, replacing: true, keepingDatesOf: undated, db)
                        return .commit
                    }
                    return written
                }
            }
            writeHealth.succeeded()
            return written
        } catch let error as DatabaseError where Self.transientFailures.contains(error.resultCode) {
            // The transaction rolled back, so nothing was stored: the client may retry later.
            if Self.lockFailures.contains(error.resultCode) { throw Self.locked }
            let reason = "SQLite could not store the items: \(error.message ?? "\(error.resultCode)")"
            writeHealth.failed(reason)
            throw FeedStoreUnavailable(reason)
        } catch is LockWait.Expired {
            throw Self.locked
        }
    }

    private static let lockFailures: [ResultCode] = [.SQLITE_BUSY, .SQLITE_LOCKED]

    private static let locked = FeedStoreUnavailable(
        "SQLite could not store the items: another process held the database's lock for \(lockDeadline.secondsText)")

    /// Reads the head, then sees that a write can be made: a feed whose disk is full, or
    /// whose last write failed for want of room until a small write succeeds again, or whose
    /// writes cannot get the lock (another process holds it), is not ready, although it reads.
    public func checkReady() async throws {
        _ = try await head()
        if let path, let free = Self.freeBytes(onDiskOf: path), free < Self.leastFreeBytes {
            throw FeedStoreUnavailable("the disk holding the SQLite database is full (\(free) bytes free): writes cannot be made")
        }
        if let failure = writeHealth.lastFailure {
            do {
                try await probeWrite()
                writeHealth.succeeded()
            } catch {
                throw FeedStoreUnavailable("\(failure); a trial write fails too")
            }
        }
        guard isShared else { return }
        do {
            try await database.writeWithoutTransaction { [lockWait] db in
                try lockWait.waiting(until: .now + Self.readinessLockWait) {
                    try db.execute(sql: "BEGIN IMMEDIATE")
                    try db.execute(sql: "ROLLBACK")
                }
            }
        } catch let error as DatabaseError where Self.lockFailures.contains(error.resultCode) {
            throw FeedStoreUnavailable("writes cannot get the SQLite database's lock: another process holds it")
        }
    }

    /// Below this much room on the database's disk a write may not fit: a transaction writes
    /// whole pages to the write-ahead log.
    static let leastFreeBytes: UInt64 = 256 * 1024

    /// The bytes this process may still write on the file system holding `path` (the root
    /// user may write into the blocks kept for it).
    static func freeBytes(onDiskOf path: String) -> UInt64? {
        var stats = statvfs()
        guard statvfs(URL(fileURLWithPath: path).deletingLastPathComponent().path, &stats) == 0 else { return nil }
        let blocks = geteuid() == 0 ? UInt64(stats.f_bfree) : UInt64(stats.f_bavail)
        return blocks * UInt64(stats.f_frsize)
    }

    /// A write of one small row, committed, to see whether writes can be made again.
    private func probeWrite() async throws {
        try await database.write { db in
            try db.execute(
                sql: "INSERT INTO readiness (id, checked) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET checked = excluded.checked",
                arguments: [Timestamp.now().milliseconds])
        }
    }

    /// Failures of the file rather than of the request: a full disk, an I/O error, a lock held
    /// past the busy timeout. Anything else (a constraint) is a defect and stays a 500.
    static let transientFailures: [ResultCode] = [
        .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_NOMEM,
    ]

    /// Stores items synchronously, at start-up, keeping any already there.
    public func seed(_ items: [FeedItem]) throws {
        try ItemRules.check(items)
        try database.write { [name] db in _ = try Self.upsert(items, into: name, replacing: false, db) }
    }

    /// New ids take the next positions, in the order of their dates. SQLite has one writer at
    /// a time, so transactions commit in the order they read the head: positions become
    /// visible in order. Answers the items as stored, in the order given, and how many were new.
    private static func upsert(
        _ items: [FeedItem], into feed: FeedName, replacing: Bool, keepingDatesOf undated: Set<ItemKey> = [], _ db: Database
    ) throws -> (stored: [FeedItem], added: Int) {
        var next = (try FeedPosition.fetchOne(db, sql: "SELECT MAX(position) FROM item WHERE feed = ?", arguments: [feed.rawValue]) ?? 0) + 1
        var added = 0
        // The last of a batch's items with one id wins, as if they were stored one by one.
        let batch = ItemKey.lastOfEachID(items)
        var stored: [ItemKey: FeedItem] = [:]
        for item in batch.sorted(by: { $0.dateOrder < $1.dateOrder }) {
            let key = ItemKey(item.id)
            var kept = item
            if let row = try Row.fetchOne(
                db, sql: "SELECT position, published FROM item WHERE feed = ? AND id = ?", arguments: [feed.rawValue, item.id])
            {
                kept.position = row["position"]
                if undated.contains(key) { kept.published = Timestamp(milliseconds: row["published"]) }
                guard replacing else {
                    stored[key] = kept
                    continue
                }
                try db.execute(
                    sql: """
                        UPDATE item SET title = ?, summary = ?, link = ?, author = ?, published = ? WHERE feed = ? AND id = ?
                        """,
                    arguments: [kept.title, kept.summary, kept.link, kept.author, kept.published.milliseconds, feed.rawValue, kept.id])
            } else {
                kept.position = next
                try db.execute(
                    sql: """
                        INSERT INTO item (feed, id, title, summary, link, author, published, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [feed.rawValue, kept.id, kept.title, kept.summary, kept.link, kept.author, kept.published.milliseconds, next])
                next += 1
                added += 1
            }
            stored[key] = kept
        }
        return (batch.compactMap { stored[ItemKey($0.id)] }, added)
    }

    func validators(for url: String) async throws -> UpstreamValidators {
        try await database.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT etag, lastModified FROM upstream WHERE url = ?", arguments: [url])
            return UpstreamValidators(etag: row?["etag"], lastModified: row?["lastModified"])
        }
    }

    func saveValidators(_ validators: UpstreamValidators, for url: String) async throws {
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO upstream (url, etag, lastModified, checked) VALUES (?, ?, ?, ?)
                    ON CONFLICT(url) DO UPDATE SET etag = excluded.etag, lastModified = excluded.lastModified, checked = excluded.checked
                    """, arguments: [url, validators.etag, validators.lastModified, Timestamp.now().milliseconds])
        }
    }

    private static func page(_ rows: [Row], limit: Int, of feed: FeedName, _ db: Database) throws -> FeedPage {
        let head = try FeedPosition.fetchOne(db, sql: "SELECT MAX(position) FROM item WHERE feed = ?", arguments: [feed.rawValue]) ?? 0
        return FeedPage(items: rows.prefix(limit).map(Self.item), hasMore: rows.count > limit, head: head)
    }

    private static func item(_ row: Row) -> FeedItem {
        FeedItem(
            id: row["id"], title: row["title"], summary: row["summary"], link: row["link"], author: row["author"],
            published: Timestamp(milliseconds: row["published"]), position: row["position"])
    }
}
