import Foundation
import Logging
import NIOSSL
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The feed in PostgreSQL, shared by every instance of the server: the same items, feed
/// positions and upstream state, whichever instance wrote them.
///
/// Positions are visible in order across instances because a writer that adds items first
/// locks the one row holding the head (`SELECT … FOR UPDATE`) and keeps it until it commits:
/// writers take positions one after another, and each commits before the next can read the
/// head. A sequence alone would not do, as transactions commit out of sequence order. The
/// commit also `NOTIFY`s the new head on ``notificationChannel``; ``HeadListener`` turns
/// that into news on every instance.
///
/// The client's connection pool runs as a service of the server (``run()``); every call
/// first waits for the schema to be migrated, which is retried until PostgreSQL answers.
public final class PostgresFeed: FeedSource, Sendable {
    /// The channel every commit that moves the head notifies, with the head as payload.
    static let notificationChannel = "ptr_feed_head"

    let client: PostgresClient
    /// For a connection outside the pool, to learn the fate of a commit (``UncertainCommit``).
    private let direct: PostgresConnection.Configuration
    private let upstreams: UpstreamSet?
    private let logger: Logger
    private let migration = Mutex<Task<Void, any Error>?>(nil)
    /// Set once the schema is known to be up to date, so calls after that go straight on.
    private let isMigrated = Atomic<Bool>(false)

    /// - Parameters:
    ///   - url: `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, optionally `?sslmode=disable|prefer|require`.
    ///   - upstreams: feeds a refresh pulls from, once across every instance sharing the database.
    public init(url: String, upstreams: UpstreamSet? = nil, logger: Logger = Logger(label: "refresh-server.postgres")) throws {
        let location = try PostgresLocation(url: url)
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: location.tls.client)
        configuration.options.maximumConnections = 20
        configuration.options.connectTimeout = .seconds(5)
        // The pool reports every failed connection attempt; the listener and the requests
        // already say when PostgreSQL is away, once per attempt of their own.
        var background = logger
        background.logLevel = max(logger.logLevel, .warning)
        client = PostgresClient(configuration: configuration, backgroundLogger: background)
        var direct = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password, database: location.database,
            tls: try location.tls.connection)
        direct.options.connectTimeout = .seconds(5)
        self.direct = direct
        self.upstreams = upstreams
        self.logger = logger
    }

    /// Runs the connection pool until the server stops (nothing reaches PostgreSQL without
    /// it), and meanwhile migrates the schema and seeds an empty feed, trying again until
    /// PostgreSQL answers.
    public struct Runner: Service {
        let feed: PostgresFeed
        let seed: [FeedItem]?
        let logger: Logger

        /// - Parameter seed: stored when the feed is found empty, once PostgreSQL answers.
        public init(feed: PostgresFeed, seed: [FeedItem]?, logger: Logger) {
            self.feed = feed
            self.seed = seed
            self.logger = logger
        }

        public func run() async throws {
            await cancelWhenGracefulShutdown {
                await withDiscardingTaskGroup { group in
                    group.addTask { await feed.client.run() }
                    group.addTask { await prepare() }
                }
            }
        }

        private func prepare() async {
            var wait: Duration = .milliseconds(200)
            while !Task.isCancelled {
                do {
                    try await feed.migrated()
                    if let seed, try await feed.isEmpty { try await feed.seed(seed) }
                    return
                } catch {
                    logger.warning(
                        "PostgreSQL is not ready; trying again", metadata: ["error": "\(String(reflecting: error))", "retryIn": "\(wait)"])
                    try? await Task.sleep(for: wait)
                    wait = min(wait * 2, .seconds(5))
                }
            }
        }
    }

    // MARK: - Schema

    /// Versioned schema changes, applied in order, each once, by whichever instance comes
    /// first (the others wait on the lock and then find them applied).
    static let migrations: [(name: String, sql: [String])] = [
        (
            "v1: items, positions, upstream validators",
            [
                // Ids compare byte by byte, as in SQLite and in the cursors pages carry.
                """
                CREATE TABLE item (
                    id text COLLATE "C" PRIMARY KEY,
                    title text NOT NULL,
                    summary text,
                    link text,
                    author text,
                    published bigint NOT NULL,
                    position bigint NOT NULL UNIQUE
                )
                """,
                "CREATE INDEX item_order ON item (published, id)",
                // One row: the newest position. Writers lock it until they commit.
                "CREATE TABLE feed_head (one boolean PRIMARY KEY DEFAULT true CHECK (one), position bigint NOT NULL)",
                "INSERT INTO feed_head (position) VALUES (0)",
                "CREATE TABLE upstream (url text PRIMARY KEY, etag text, last_modified text, checked bigint)",
            ]
        )
    ]

    /// Advisory lock keys: the schema's migration, and the upstream refresh.
    enum LockKey: Int64 {
        case migration = 0x7074_7201
        case upstreamRefresh = 0x7074_7202
    }

    /// Waits until the schema is up to date; a failed attempt is tried again by the next call.
    func migrated() async throws {
        if isMigrated.load(ordering: .acquiring) { return }
        let task = migration.withLock { migration in
            if let migration { return migration }
            let task = Task { try await self.migrate() }
            migration = task
            return task
        }
        do {
            // The migration is shared: a caller that gives up leaves it running for the others.
            let answer = FirstAnswer<Void>()
            try await withTaskCancellationHandler {
                Task {
                    do { answer.give(.success(try await task.value)) } catch { answer.give(.failure(error)) }
                }
                try await answer.value
            } onCancel: {
                answer.give(.failure(CancellationError()))
            }
            isMigrated.store(true, ordering: .releasing)
        } catch let error as CancellationError {
            throw error
        } catch {
            migration.withLock { if $0 == task { $0 = nil } }
            throw error
        }
    }

    private func migrate() async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(LockKey.migration.rawValue))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS schema_migration (name text PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())",
                logger: logger)
            var applied = Set<String>()
            for try await name in try await connection.query("SELECT name FROM schema_migration", logger: logger).decode(String.self) {
                applied.insert(name)
            }
            for migration in Self.migrations where !applied.contains(migration.name) {
                for statement in migration.sql {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO schema_migration (name) VALUES (\(migration.name))", logger: logger)
                logger.notice("Applied migration", metadata: ["migration": "\(migration.name)"])
            }
        }
    }

    /// The migrations applied so far, oldest first.
    func appliedMigrations() async throws -> [String] {
        try await migrated()
        var names: [String] = []
        for try await name in try await client.query("SELECT name FROM schema_migration ORDER BY applied, name", logger: logger).decode(String.self) {
            names.append(name)
        }
        return names
    }

    public var isEmpty: Bool {
        get async throws { try await head() == nil }
    }

    // MARK: - FeedSource

    public func update(progress: @escaping ProgressSink) async throws -> FeedUpdate {
        guard let upstreams else {
            progress(FeedProgress(fraction: 1, stage: "checking", message: "Checked for new items"))
            return FeedUpdate(added: 0, message: "Up to date")
        }
        try await migrated()
        return try await onceAcrossInstances(progress: progress) {
            try await upstreams.refresh(into: self, progress: progress)
        }
    }

    /// Runs `refresh` while holding the cluster's upstream lock. When another instance holds
    /// it, this waits for that refresh to end instead of fetching the same feeds again: its
    /// items are then in the feed, where the caller reads them.
    private func onceAcrossInstances(progress: @escaping ProgressSink, _ refresh: () async throws -> FeedUpdate) async throws -> FeedUpdate {
        let key = LockKey.upstreamRefresh.rawValue
        // A session-level lock lives on one connection: the refresh holds it meanwhile, and a
        // connection that dies releases it.
        return try await client.withConnection { connection in
            var waited = false
            while true {
                let rows = try await connection.query("SELECT pg_try_advisory_lock(\(key))", logger: logger)
                if try await rows.decode(Bool.self).first(where: { _ in true }) == true { break }
                if !waited {
                    progress(FeedProgress(fraction: 0, stage: "waiting", message: "Another instance is refreshing…"))
                    waited = true
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            if waited {
                // The other instance's refresh has ended: what it stored is in the feed.
                try await connection.query("SELECT pg_advisory_unlock(\(key))", logger: logger)
                progress(FeedProgress(fraction: 1, stage: "done", message: "Refreshed by another instance"))
                return FeedUpdate(added: 0, message: "Up to date")
            }
            do {
                let update = try await refresh()
                try await connection.query("SELECT pg_advisory_unlock(\(key))", logger: logger)
                return update
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(key))", logger: logger)
                throw error
            }
        }
    }

    public func newer(than cursor: FeedCursor, limit: Int) async throws -> FeedPage {
        try await page(
            limit: limit,
            """
            SELECT * FROM item WHERE (published, id) > (\(cursor.published.milliseconds), \(cursor.id))
            ORDER BY published DESC, id DESC LIMIT \(limit + 1)
            """)
    }

    public func added(after position: FeedPosition, limit: Int) async throws -> FeedPage {
        try await page(
            limit: limit,
            """
            SELECT * FROM item WHERE position > \(position) ORDER BY published DESC, id DESC LIMIT \(limit + 1)
            """)
    }

    public func older(than cursor: FeedCursor?, through position: FeedPosition?, limit: Int) async throws -> FeedPage {
        let through = position ?? .max
        if let cursor {
            return try await page(
                limit: limit,
                """
                SELECT * FROM item WHERE (published, id) < (\(cursor.published.milliseconds), \(cursor.id)) AND position <= \(through)
                ORDER BY published DESC, id DESC LIMIT \(limit + 1)
                """)
        }
        return try await page(
            limit: limit,
            """
            SELECT * FROM item WHERE position <= \(through) ORDER BY published DESC, id DESC LIMIT \(limit + 1)
            """)
    }

    public func head() async throws -> FeedHead? {
        try await answered("reading the head") { _ in try await self.readHead() }
    }

    private func readHead() async throws -> FeedHead? {
        try await migrated()
        // The head's position as an init plan, so the item is one index lookup whatever the
        // planner's statistics say; an empty feed (head 0) has no such row.
        let rows = try await client.query(
            """
            SELECT position, id, title, summary, link, author, published FROM item
            WHERE position = (SELECT position FROM feed_head)
            """, logger: logger)
        for try await row in rows.decode(ItemRow.self) {
            guard let item = Self.item(row) else { return nil }
            return FeedHead(position: row.0, item: item)
        }
        return nil
    }

    public func publish(_ items: [FeedItem]) async throws -> [FeedItem] {
        let stored = ItemKey.lastOfEachID(items)
        _ = try await store(stored)
        return stored
    }

    public func item(id: String) async throws -> FeedItem? {
        try await answered("reading an item") { _ in try await self.readItem(id: id) }
    }

    public func position(of id: String) async throws -> FeedPosition? {
        try await answered("reading an item's position") { _ in
            try await self.migrated()
            let rows = try await self.client.query("SELECT position FROM item WHERE id = \(id)", logger: self.logger)
            for try await position in rows.decode(Int64.self) { return position }
            return nil
        }
    }

    private func readItem(id: String) async throws -> FeedItem? {
        try await migrated()
        let rows = try await client.query(
            """
            SELECT position, id, title, summary, link, author, published FROM item WHERE id = \(id)
            """, logger: logger)
        for try await row in rows.decode(ItemRow.self) { return Self.item(row) }
        return nil
    }

    // MARK: - Storage

    /// Upserts by id in one transaction; answers how many ids were new.
    func store(_ items: [FeedItem]) async throws -> Int {
        guard !items.isEmpty else { return 0 }
        try ItemRules.check(items)
        return try await answered("storing items") { attempt in
            try await self.migrated()
            return try await self.upsert(items, replacing: true, attempt)
        }
    }

    /// Stores items at start-up, keeping any already there.
    func seed(_ items: [FeedItem]) async throws {
        try ItemRules.check(items)
        _ = try await answered("storing the first items") { attempt in
            try await self.migrated()
            return try await self.upsert(items, replacing: false, attempt)
        }
    }

    /// New ids take the next positions in feed order while the head row is locked; the
    /// commit notifies every instance of the new head.
    ///
    /// When the connection drops after `COMMIT` was sent, the answer is what PostgreSQL says
    /// became of the transaction (``UncertainCommit``), not a guess either way.
    private func upsert(_ items: [FeedItem], replacing: Bool, _ attempt: Attempt) async throws -> Int {
        // The last of a batch's items with one id wins, as if they were stored one by one.
        let batch = ItemKey.lastOfEachID(items).sorted { $0.cursor < $1.cursor }
        let ids = batch.map(\.id)
        var sent: (commit: UncertainCommit, added: Int)?
        do {
            return try await client.withTransaction(logger: logger) { connection in
                try attempt.mayGoOn()
                // A writer stuck holding the head would stop every instance's writes: waiting for
                // it ends within the deadline.
                try await connection.query(
                    PostgresQuery(unsafeSQL: "SET LOCAL lock_timeout = '\(Self.operationDeadline.components.seconds)s'"), logger: logger)
                var head: FeedPosition = 0
                var commit: UncertainCommit?
                let locked = try await connection.query(
                    "SELECT position, txid_current(), pg_backend_pid() FROM feed_head FOR UPDATE", logger: logger)
                for try await (position, transaction, backend) in locked.decode((Int64, Int64, Int32).self) {
                    head = position
                    commit = UncertainCommit(transaction: transaction, backend: backend)
                }
                try attempt.mayGoOn()
                var existing = Set<ItemKey>()
                for try await id in try await connection.query("SELECT id FROM item WHERE id = ANY(\(ids))", logger: logger).decode(String.self) {
                    existing.insert(ItemKey(id))
                }
                var added = 0
                for item in batch {
                    let published = item.published.milliseconds
                    if existing.contains(ItemKey(item.id)) {
                        guard replacing else { continue }
                        try await connection.query(
                            """
                            UPDATE item SET title = \(item.title), summary = \(item.summary), link = \(item.link),
                            author = \(item.author), published = \(published) WHERE id = \(item.id)
                            """, logger: logger)
                    } else {
                        head += 1
                        added += 1
                        try await connection.query(
                            """
                            INSERT INTO item (id, title, summary, link, author, published, position)
                            VALUES (\(item.id), \(item.title), \(item.summary), \(item.link), \(item.author), \(published), \(head))
                            """, logger: logger)
                    }
                }
                if added > 0 {
                    try await connection.query("UPDATE feed_head SET position = \(head)", logger: logger)
                    try await connection.query("SELECT pg_notify(\(Self.notificationChannel), \(String(head)))", logger: logger)
                }
                try attempt.commit()
                sent = commit.map { ($0, added) }
                return added
            }
        } catch let error as PostgresTransactionError where error.commitError != nil {
            guard let sent else { throw error }
            logger.warning(
                "PostgreSQL's answer to a COMMIT was lost; asking it what became of the write",
                metadata: ["error": "\(String(reflecting: error.commitError!))"])
            let direct = direct
            let logger = logger
            let connect = { @Sendable in try await PostgresConnection.connect(configuration: direct, id: 0, logger: logger) }
            switch try await sent.commit.outcome(connect: connect, logger: logger, within: Self.commitCheckDeadline) {
            case .committed:
                logger.notice("The write whose COMMIT's answer was lost did commit")
                return sent.added
            case .rolledBack:
                throw error
            }
        }
    }

    /// How long a write whose `COMMIT` answer was lost keeps asking PostgreSQL what became of it.
    static let commitCheckDeadline: Duration = .seconds(10)

    // MARK: - Reading

    /// How long one operation may wait for PostgreSQL: while it is unreachable, requests are
    /// answered `503` within this, instead of waiting for the pool's own verdict.
    static let operationDeadline: Duration = .seconds(5)

    /// Runs `operation` within ``operationDeadline``; every failure becomes a
    /// ``FeedStoreUnavailable`` naming what was being done.
    ///
    /// A query already sent cannot be taken back, so at its deadline the answer does not
    /// wait for the operation: it is cancelled and left to end by itself. A write is never
    /// answered `503` once it has started to commit (``Attempt/commit()``), and one abandoned
    /// before that stores nothing: a `503` is never stored behind the client's back.
    private func answered<T: Sendable>(_ doing: String, _ operation: @escaping @Sendable (Attempt) async throws -> T) async throws -> T {
        let attempt = Attempt()
        let answer = FirstAnswer<T>()
        let work = Task {
            do { answer.give(.success(try await operation(attempt))) } catch { answer.give(.failure(error)) }
        }
        let timer = Task {
            try await Task.sleep(for: Self.operationDeadline)
            // Too late to say no to a write that is committing: its outcome is the answer.
            guard attempt.abandon() else { return }
            work.cancel()
            answer.give(
                .failure(
                    FeedStoreUnavailable("PostgreSQL did not answer within \(Self.operationDeadline.secondsText) while \(doing)")))
        }
        defer { timer.cancel() }
        let outcome = await withTaskCancellationHandler {
            await answer.result
        } onCancel: {
            answer.give(.failure(CancellationError()))
        }
        switch outcome {
        case .success(let value):
            return value
        case .failure(let error as CancellationError):
            throw error
        case .failure(let error as FeedStoreUnavailable):
            logger.warning("PostgreSQL is not answering", metadata: ["while": "\(doing)"])
            throw error
        case .failure(let error):
            logger.warning("PostgreSQL failed", metadata: ["while": "\(doing)", "error": "\(String(reflecting: error))"])
            throw FeedStoreUnavailable("PostgreSQL failed while \(doing)")
        }
    }

    /// The first of several answers to one question, for a caller that must not wait for the
    /// others: the operation, a deadline, the caller's own cancellation.
    private final class FirstAnswer<T: Sendable>: Sendable {
        private enum State {
            case waiting(CheckedContinuation<Result<T, any Error>, Never>?)
            case answered(Result<T, any Error>)
        }

        private let state = Mutex(State.waiting(nil))

        func give(_ result: Result<T, any Error>) {
            let waiter = state.withLock { state -> CheckedContinuation<Result<T, any Error>, Never>? in
                guard case .waiting(let waiter) = state else { return nil }
                state = .answered(result)
                return waiter
            }
            waiter?.resume(returning: result)
        }

        var result: Result<T, any Error> {
            get async {
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state -> Result<T, any Error>? in
                        switch state {
                        case .answered(let result): return result
                        case .waiting:
                            state = .waiting(continuation)
                            return nil
                        }
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            }
        }

        var value: T {
            get async throws { try await result.get() }
        }
    }

    /// One operation under a deadline: once abandoned, it must not write.
    final class Attempt: Sendable {
        private static let running = 0
        private static let committing = 1
        private static let abandoned = 2
        private let state = Atomic<Int>(Attempt.running)

        /// Gives the operation up; `false` when it is already committing.
        func abandon() -> Bool {
            state.compareExchange(expected: Self.running, desired: Self.abandoned, ordering: .acquiringAndReleasing).exchanged
        }

        /// The write's last step before its commit: from here its outcome is the answer,
        /// however long the commit takes. Throws when the caller was already answered.
        func commit() throws {
            guard state.compareExchange(expected: Self.running, desired: Self.committing, ordering: .acquiringAndReleasing).exchanged else {
                throw CancellationError()
            }
        }

        /// Throws once the caller has been answered without this operation.
        func mayGoOn() throws {
            if state.load(ordering: .acquiring) == Self.abandoned { throw CancellationError() }
        }
    }

    /// (position, id, title, summary, link, author, published); the item's columns are
    /// `nil` where a head row has no item.
    private typealias ItemRow = (Int64, String?, String?, String?, String?, String?, Int64?)

    /// Runs `query` (a `SELECT * FROM item …` of at most `limit + 1` rows) joined to the head
    /// in one statement, so the page and its head come from one snapshot.
    private func page(limit: Int, _ query: PostgresQuery) async throws -> FeedPage {
        try await answered("reading items") { _ in try await self.readPage(limit: limit, query) }
    }

    private func readPage(limit: Int, _ query: PostgresQuery) async throws -> FeedPage {
        try await migrated()
        var sql = "SELECT h.position, i.id, i.title, i.summary, i.link, i.author, i.published FROM feed_head h LEFT JOIN LATERAL ("
        sql += query.sql
        sql += ") i ON true ORDER BY i.published DESC, i.id DESC"
        let joined = PostgresQuery(unsafeSQL: sql, binds: query.binds)
        var head: FeedPosition = 0
        var items: [FeedItem] = []
        for try await row in try await client.query(joined, logger: logger).decode(ItemRow.self) {
            head = row.0
            if let item = Self.item(row) { items.append(item) }
        }
        return FeedPage(items: Array(items.prefix(limit)), hasMore: items.count > limit, head: head)
    }

    private static func item(_ row: ItemRow) -> FeedItem? {
        guard let id = row.1, let title = row.2, let published = row.6 else { return nil }
        return FeedItem(id: id, title: title, summary: row.3, link: row.4, author: row.5, published: Timestamp(milliseconds: published))
    }
}

extension PostgresFeed: UpstreamStore {
    func validators(for url: String) async throws -> UpstreamValidators {
        try await answered("reading an upstream's validators") { _ in
            let rows = try await self.client.query("SELECT etag, last_modified FROM upstream WHERE url = \(url)", logger: self.logger)
            for try await (etag, lastModified) in rows.decode((String?, String?).self) {
                return UpstreamValidators(etag: etag, lastModified: lastModified)
            }
            return UpstreamValidators()
        }
    }

    func saveValidators(_ validators: UpstreamValidators, for url: String) async throws {
        try await answered("saving an upstream's validators") { _ in try await self.writeValidators(validators, for: url) }
    }

    private func writeValidators(_ validators: UpstreamValidators, for url: String) async throws {
        try await client.query(
            """
            INSERT INTO upstream (url, etag, last_modified, checked) VALUES (\(url), \(validators.etag), \(validators.lastModified), \(Timestamp.now().milliseconds))
            ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, last_modified = excluded.last_modified, checked = excluded.checked
            """, logger: logger)
    }
}

/// A `postgres://` URL taken apart; errors say what is wrong with it, never echo a password.
public struct PostgresLocation: Equatable {
    /// As libpq reads `sslmode`: `prefer` and `require` encrypt without checking the
    /// server's certificate (Debian's PostgreSQL ships a self-signed one), `verify-full`
    /// checks it and the host name.
    enum TLSMode: String {
        case disable, prefer, require
        case verifyFull = "verify-full"
    }

    var user: String
    var password: String?
    var host: String
    var port: Int
    var database: String
    var tls: TLSMode

    public static func isPostgresURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    public init(url text: String) throws {
        guard Self.isPostgresURL(text), let url = URLComponents(string: text) else {
            throw DatabaseLocationError(problem: "database URL must look like postgres://USER[:PASSWORD]@HOST[:PORT]/DB")
        }
        guard let user = url.percentEncodedUser, !user.isEmpty else {
            throw DatabaseLocationError(problem: "database URL names no user (postgres://USER@HOST/DB)")
        }
        guard let host = url.host, !host.isEmpty else { throw DatabaseLocationError(problem: "database URL names no host (postgres://USER@HOST/DB)") }
        let database = String(url.percentEncodedPath.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw DatabaseLocationError(problem: "database URL names no database (postgres://USER@HOST/DB)")
        }
        let port = url.port ?? 5432
        guard (1...65535).contains(port) else { throw DatabaseLocationError(problem: "database URL port \(port) is not 1…65535") }
        var tls = TLSMode.prefer
        for item in url.queryItems ?? [] {
            guard item.name == "sslmode" else {
                throw DatabaseLocationError(problem: "database URL option '\(item.name)' is not known (only sslmode is)")
            }
            guard let mode = item.value.flatMap(TLSMode.init(rawValue:)) else {
                throw DatabaseLocationError(problem: "database URL sslmode must be disable, prefer, require or verify-full")
            }
            tls = mode
        }
        self.user = user.removingPercentEncoding ?? user
        self.password = url.percentEncodedPassword.map { $0.removingPercentEncoding ?? $0 }
        self.host = host
        self.port = port
        self.database = database.removingPercentEncoding ?? database
        self.tls = tls
    }
}

extension PostgresLocation.TLSMode {
    /// The same for a single connection outside the pool.
    var connection: PostgresConnection.Configuration.TLS {
        get throws {
            var unverified = TLSConfiguration.makeClientConfiguration()
            unverified.certificateVerification = .none
            return switch self {
            case .disable: .disable
            case .prefer: .prefer(try NIOSSLContext(configuration: unverified))
            case .require: .require(try NIOSSLContext(configuration: unverified))
            case .verifyFull: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        }
    }

    var client: PostgresClient.Configuration.TLS {
        var unverified = TLSConfiguration.makeClientConfiguration()
        unverified.certificateVerification = .none
        return switch self {
        case .disable: .disable
        case .prefer: .prefer(unverified)
        case .require: .require(unverified)
        case .verifyFull: .require(.makeClientConfiguration())
        }
    }
}
