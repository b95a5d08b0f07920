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
        migrator.registerMigration("v7: versions and removals") { db in
            // Every stored change takes the feed's next version. Items stored before versions
            // existed take their positions as theirs (one change each, in the order the feed
            // gained them). A feed's head and version live in `feed_state`, so a removed item's
            // position is never taken again. A removal leaves a tombstone, kept until
            // `--change-retention` passes; `horizon` is the newest version whose tombstone was
            // forgotten, below which changes can no longer be told.
            try db.execute(
                sql: """
                    ALTER TABLE item ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
                    UPDATE item SET version = position;
                    CREATE INDEX item_version ON item (feed, version);
                    CREATE TABLE feed_state (
                        feed TEXT NOT NULL PRIMARY KEY,
                        head INTEGER NOT NULL,
                        version INTEGER NOT NULL,
                        horizon INTEGER NOT NULL DEFAULT 0
                    );
                    INSERT INTO feed_state (feed, head, version) SELECT feed, MAX(position), MAX(position) FROM item GROUP BY feed;
                    CREATE TABLE removal (
                        feed TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        id TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        removed INTEGER NOT NULL,
                        PRIMARY KEY (feed, position)
                    );
                    CREATE INDEX removal_version ON removal (feed, version);
                    CREATE INDEX removal_id ON removal (feed, id);
                    CREATE INDEX removal_removed ON removal (removed);
                    """)
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
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM item WHERE feed = ? ORDER BY position DESC LIMIT 1", arguments: [name.rawValue])
            else { return nil }
            let state = try Self.state(of: name, db)
            return FeedHead(position: state.head, item: Self.item(row), version: state.version)
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

    public func publishing(_ items: [FeedItem]) async throws -> FeedWrite {
        try await write(ItemKey.lastOfEachID(items))
    }

    public func replace(_ item: FeedItem, ifVersion version: FeedVersion?) async throws -> FeedWrite {
        try ItemRules.check([item])
        return try await transaction { [name] db in try Self.replace(item, ifVersion: version, in: name, db) }
    }

    public func remove(id: String, ifVersion version: FeedVersion?) async throws -> FeedWrite {
        try await transaction { [name] db in try Self.remove(id: id, ifVersion: version, in: name, at: .now(), db) }
    }

    public func changes(
        since version: FeedVersion, within positions: ClosedRange<FeedPosition>, limit: Int
    ) async throws
        -> FeedChanges?
    {
        try await database.read { [name] db in
            let state = try Self.state(of: name, db)
            guard version >= state.horizon else { return nil }
            let arguments: StatementArguments = [name.rawValue, version, positions.lowerBound, positions.upperBound, limit + 1]
            let items = try Row.fetchAll(
                db, sql: "SELECT * FROM item WHERE feed = ? AND version > ? AND position BETWEEN ? AND ? ORDER BY version LIMIT ?",
                arguments: arguments)
            let removals = try Row.fetchAll(
                db,
                sql: "SELECT id, position, version FROM removal WHERE feed = ? AND version > ? AND position BETWEEN ? AND ? ORDER BY version LIMIT ?",
                arguments: arguments)
            guard items.count + removals.count <= limit else { return nil }
            let changes =
                items.map { FeedChange.update(Self.item($0)) }
                + removals.map { FeedChange.remove(id: $0["id"], position: $0["position"], version: $0["version"]) }
            return FeedChanges(changes: changes.sorted { $0.version < $1.version }, version: state.version)
        }
    }

    public func forgetRemovals(before time: Timestamp) async throws -> Int {
        try await transaction { db in
            try db.execute(
                sql: """
                    UPDATE feed_state SET horizon = MAX(horizon, (SELECT MAX(version) FROM removal WHERE removal.feed = feed_state.feed AND removed < ?))
                    WHERE feed IN (SELECT feed FROM removal WHERE removed < ?)
                    """, arguments: [time.milliseconds, time.milliseconds])
            try db.execute(sql: "DELETE FROM removal WHERE removed < ?", arguments: [time.milliseconds])
            return db.changesCount
        }
    }

    public func item(id: String) async throws -> FeedItem? {
        try await database.read { [name] db in
            try Row.fetchOne(db, sql: "SELECT * FROM item WHERE feed = ? AND id = ?", arguments: [name.rawValue, id]).map(Self.item)
        }
    }

    public func position(of id: String) async throws -> FeedPosition? {
        try await database.read { [name] db in
            try FeedPosition.fetchOne(db, sql: "SELECT position FROM item WHERE feed = ? AND id = ?", arguments: [name.rawValue, id])
                ?? FeedPosition.fetchOne(
                    db, sql: "SELECT position FROM removal WHERE feed = ? AND id = ? ORDER BY version DESC LIMIT 1", arguments: [name.rawValue, id])
        }
    }

    // MARK: - Storage

    /// Upserts by id in one transaction; answers how many ids were new.
    func store(_ items: [FeedItem], keepingDatesOf undated: Set<ItemKey> = []) async throws -> FeedWrite {
        try await write(items, keepingDatesOf: undated)
    }

    /// Upserts by id in one transaction. An item of `undated` that is stored already keeps its
    /// date (an upstream entry without one is dated when first seen).
    private func write(_ items: [FeedItem], keepingDatesOf undated: Set<ItemKey> = []) async throws -> FeedWrite {
        guard !items.isEmpty else { return FeedWrite(stored: []) }
        try ItemRules.check(items)
        return try await transaction { [name] db in try Self.upsert(items, into: name, replacing: true, keepingDatesOf: undated, db) }
    }

    /// Runs `body` in one write transaction within the lock deadline; a failure of the file
    /// is answered unavailable and remembered for readiness.
    private func transaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + Self.lockDeadline
        do {
            let result = try await database.writeWithoutTransaction { [lockWait] db in
                try lockWait.waiting(until: deadline) {
                    var result: T?
                    try db.inTransaction {
                        result = try body(db)
                        return .commit
                    }
                    return result!
                }
            }
            writeHealth.succeeded()
            return result
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

    /// A feed's head, version and horizon (all 0 for a feed that never held an item).
    private static func state(of feed: FeedName, _ db: Database) throws -> (head: FeedPosition, version: FeedVersion, horizon: FeedVersion) {
        guard let row = try Row.fetchOne(db, sql: "SELECT head, version, horizon FROM feed_state WHERE feed = ?", arguments: [feed.rawValue])
        else { return (0, 0, 0) }
        return (row["head"], row["version"], row["horizon"])
    }

    private static func saveState(_ feed: FeedName, head: FeedPosition, version: FeedVersion, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO feed_state (feed, head, version) VALUES (?, ?, ?)
                ON CONFLICT(feed) DO UPDATE SET head = excluded.head, version = excluded.version
                """, arguments: [feed.rawValue, head, version])
    }

    /// New ids take the next positions, in the order of their dates; a known id whose fields
    /// differ is edited where it stands. Each takes the feed's next version. SQLite has one
    /// writer at a time, so transactions commit in the order they read the head: positions
    /// and versions become visible in order.
    private static func upsert(
        _ items: [FeedItem], into feed: FeedName, replacing: Bool, keepingDatesOf undated: Set<ItemKey> = [], _ db: Database
    ) throws -> FeedWrite {
        let state = try state(of: feed, db)
        var head = state.head
        var version = state.version
        var changes: [FeedChange] = []
        var newest: FeedItem?
        var added = 0
        // The last of a batch's items with one id wins, as if they were stored one by one.
        let batch = ItemKey.lastOfEachID(items)
        var stored: [ItemKey: FeedItem] = [:]
        for item in batch.sorted(by: { $0.dateOrder < $1.dateOrder }) {
            let key = ItemKey(item.id)
            var kept = item
            if let row = try Row.fetchOne(db, sql: "SELECT * FROM item WHERE feed = ? AND id = ?", arguments: [feed.rawValue, item.id]) {
                let current = Self.item(row)
                if undated.contains(key) { kept.published = current.published }
                guard replacing, kept != current else {
                    stored[key] = current
                    continue
                }
                version += 1
                kept.position = current.position
                kept.version = version
                try db.execute(
                    sql: """
                        UPDATE item SET title = ?, summary = ?, link = ?, author = ?, published = ?, version = ? WHERE feed = ? AND id = ?
                        """,
                    arguments: [kept.title, kept.summary, kept.link, kept.author, kept.published.milliseconds, version, feed.rawValue, kept.id])
                changes.append(.update(kept))
            } else {
                head += 1
                version += 1
                kept.position = head
                kept.version = version
                try db.execute(
                    sql: """
                        INSERT INTO item (feed, id, title, summary, link, author, published, position, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        feed.rawValue, kept.id, kept.title, kept.summary, kept.link, kept.author, kept.published.milliseconds, head, version,
                    ])
                newest = kept
                added += 1
            }
            stored[key] = kept
        }
        if version != state.version { try saveState(feed, head: head, version: version, db) }
        return FeedWrite(
            stored: batch.compactMap { stored[ItemKey($0.id)] }, head: newest.map { FeedHead(position: head, item: $0, version: version) },
            added: added, changes: changes, version: version)
    }

    private static func current(_ id: String, in feed: FeedName, ifVersion expected: FeedVersion?, _ db: Database) throws -> FeedItem {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM item WHERE feed = ? AND id = ?", arguments: [feed.rawValue, id]) else {
            throw FeedItemNotFound(id: id)
        }
        let current = Self.item(row)
        if let expected, expected != current.version { throw FeedVersionMismatch(current: current.version ?? 0) }
        return current
    }

    private static func replace(_ item: FeedItem, ifVersion expected: FeedVersion?, in feed: FeedName, _ db: Database) throws -> FeedWrite {
        let current = try current(item.id, in: feed, ifVersion: expected, db)
        let state = try state(of: feed, db)
        guard item != current else { return FeedWrite(stored: [current], version: state.version) }
        let version = state.version + 1
        var kept = item
        kept.position = current.position
        kept.version = version
        try db.execute(
            sql: "UPDATE item SET title = ?, summary = ?, link = ?, author = ?, published = ?, version = ? WHERE feed = ? AND id = ?",
            arguments: [kept.title, kept.summary, kept.link, kept.author, kept.published.milliseconds, version, feed.rawValue, kept.id])
        try saveState(feed, head: state.head, version: version, db)
        return FeedWrite(stored: [kept], changes: [.update(kept)], version: version)
    }

    private static func remove(
        id: String, ifVersion expected: FeedVersion?, in feed: FeedName, at now: Timestamp, _ db: Database
    ) throws
        -> FeedWrite
    {
        let current = try current(id, in: feed, ifVersion: expected, db)
        let state = try state(of: feed, db)
        let version = state.version + 1
        let position = current.position ?? 0
        try db.execute(sql: "DELETE FROM item WHERE feed = ? AND id = ?", arguments: [feed.rawValue, id])
        try db.execute(
            sql: "INSERT OR REPLACE INTO removal (feed, position, id, version, removed) VALUES (?, ?, ?, ?, ?)",
            arguments: [feed.rawValue, position, current.id, version, now.milliseconds])
        try saveState(feed, head: state.head, version: version, db)
        return FeedWrite(stored: [], changes: [.remove(id: current.id, position: position, version: version)], version: version)
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
        let state = try state(of: feed, db)
        return FeedPage(items: rows.prefix(limit).map(Self.item), hasMore: rows.count > limit, head: state.head, version: state.version)
    }

    private static func item(_ row: Row) -> FeedItem {
        FeedItem(
            id: row["id"], title: row["title"], summary: row["summary"], link: row["link"], author: row["author"],
            published: Timestamp(milliseconds: row["published"]), position: row["position"], version: row["version"])
    }
}
