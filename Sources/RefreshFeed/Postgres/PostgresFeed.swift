import Logging
import PostgresNIO
import Synchronization

/// The feeds in PostgreSQL, shared by every instance of the server: the same items, feed
/// positions and upstream state, whichever instance wrote them. The instance `init` makes is
/// the feed `main`; ``feed(_:)`` gives the others, sharing its connection pool.
///
/// Positions are visible in order across instances because a writer that adds items first
/// locks its feed's row of `feed_head` (taking it, for a feed's first write) and keeps it
/// until it commits: a feed's writers take positions one after another, and each commits
/// before the next can read the head. Writers to different feeds lock different rows and do
/// not wait for each other. A sequence alone would not do, as transactions commit out of
/// sequence order. The commit also `NOTIFY`s the feed and its new head on
/// ``notificationChannel``; ``HeadListener`` turns that into news on every instance.
///
/// The client's connection pool runs as a service of the server (``Runner``); every call
/// first waits for the schema to be migrated, which is retried until PostgreSQL answers.
/// The rest of it, by concern: the runner, the migrations, the reads, the upsert and the
/// deadline every operation runs under, each in a file of this folder.
public final class PostgresFeed: FeedSource, FeedStore, Sendable {
    /// The channel every commit that moves a head notifies, with ``HeadNotice`` as payload.
    static let notificationChannel = "ptr_feed_head"

    /// The feed's name within the database.
    public let name: FeedName

    let client: PostgresClient
    /// For a connection outside the pool, to learn the fate of a commit (``UncertainCommit``).
    let direct: PostgresConnection.Configuration
    /// Each feed's upstream sources, for every view of the store.
    let upstreamsByFeed: [FeedName: UpstreamSet]
    let logger: Logger
    /// Shared by every feed of the store, so the schema is migrated once.
    let schema: Schema
    /// How long one operation may wait for PostgreSQL before it is answered unavailable
    /// (``answered(_:_:)``), and a write for its feed's lock.
    let operationDeadline: Duration

    /// Whether the schema is up to date, for every view of one store.
    final class Schema: Sendable {
        let migration = Mutex<Task<Void, any Error>?>(nil)
        /// Set once the schema is known to be up to date, so calls after that go straight on.
        let isMigrated = Atomic<Bool>(false)
    }

    /// - Parameters:
    ///   - url: `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, optionally `?sslmode=disable|prefer|require`.
    ///   - upstreams: what a refresh of each feed pulls from, once across every instance
    ///     sharing the database.
    ///   - operationDeadline: how long one operation may wait for PostgreSQL.
    public init(
        url: String, upstreams: [FeedName: UpstreamSet] = [:], operationDeadline: Duration = defaultOperationDeadline,
        logger: Logger = Logger(label: "refresh-server.postgres")
    ) throws {
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
        upstreamsByFeed = upstreams
        self.logger = logger
        name = .main
        schema = Schema()
        self.operationDeadline = operationDeadline
    }

    private init(sharing store: PostgresFeed, name: FeedName) {
        client = store.client
        direct = store.direct
        upstreamsByFeed = store.upstreamsByFeed
        logger = store.logger
        schema = store.schema
        operationDeadline = store.operationDeadline
        self.name = name
    }

    public func feed(_ name: FeedName) -> any FeedSource {
        view(name)
    }

    /// The feed `name`, as its concrete type (the listener's reads).
    func view(_ name: FeedName) -> PostgresFeed {
        name == self.name ? self : PostgresFeed(sharing: self, name: name)
    }

    public var isEmpty: Bool {
        get async throws { try await head() == nil }
    }

    // MARK: - FeedSource

    public func update(progress: @escaping ProgressSink) async throws -> FeedUpdate {
        guard let upstreams = upstreamsByFeed[name] else {
            progress(FeedProgress(fraction: 1, stage: "checking", message: "Checked for new items"))
            return FeedUpdate(added: 0, message: "Up to date")
        }
        try await migrated()
        return try await onceAcrossInstances(progress: progress) {
            try await upstreams.refresh(into: self, progress: progress)
        }
    }

    /// Runs `refresh` while holding the cluster's upstream lock of this feed. When another
    /// instance holds it, this waits for that refresh to end instead of fetching the same
    /// upstreams again: its items are then in the feed, where the caller reads them. Feeds
    /// refresh independently: the lock is keyed by the upstream-refresh class and the feed's
    /// name (the two-key form, whose keys never meet the one-key locks; two names of one hash
    /// only wait for each other).
    private func onceAcrossInstances(progress: @escaping ProgressSink, _ refresh: () async throws -> FeedUpdate) async throws -> FeedUpdate {
        let lockClass = Int32(LockKey.upstreamRefresh.rawValue)
        let feed = name.rawValue
        // A session-level lock lives on one connection: the refresh holds it meanwhile, and a
        // connection that dies releases it.
        return try await client.withConnection { connection in
            // A lock left held on a pooled connection would stop every later refresh of the
            // feed, on every instance: a connection that cannot release it is closed, which
            // releases it too. Either way the lock is gone, so the refresh's outcome stands.
            func unlock() async {
                do {
                    try await connection.query("SELECT pg_advisory_unlock(\(lockClass), hashtext(\(feed)))", logger: logger)
                } catch {
                    logger.warning(
                        "The upstream lock could not be released; closing its connection",
                        metadata: ["feed": "\(feed)", "error": "\(String(reflecting: error))"])
                    try? await connection.close()
                }
            }
            var waited = false
            while true {
                let rows = try await connection.query("SELECT pg_try_advisory_lock(\(lockClass), hashtext(\(feed)))", logger: logger)
                if try await rows.decode(Bool.self).first(where: { _ in true }) == true { break }
                if !waited {
                    progress(FeedProgress(fraction: 0, stage: "waiting", message: "Another instance is refreshing…"))
                    waited = true
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            if waited {
                // The other instance's refresh has ended: what it stored is in the feed.
                await unlock()
                progress(FeedProgress(fraction: 1, stage: "done", message: "Refreshed by another instance"))
                return FeedUpdate(added: 0, message: "Up to date")
            }
            let update: Result<FeedUpdate, any Error>
            do {
                update = .success(try await refresh())
            } catch {
                update = .failure(error)
            }
            await unlock()
            return try update.get()
        }
    }
}
