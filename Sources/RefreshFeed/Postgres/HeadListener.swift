import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Brings the heads other instances moved to this one: a connection of its own `LISTEN`s on
/// the store's channel, and each notification (a wake-up carrying a feed and its new head,
/// never the items) of a feed the subscriber watches makes it read that feed's head and tell
/// its sessions.
///
/// Nothing is lost between notifications: after every (re)connection the listener reads the
/// heads of every watched feed before waiting, so whatever committed while it was away is
/// told then; the hub moves only forward, so nothing is told twice. A slow poll of the same
/// heads runs beside it, as a safety net for a notification that never came. While the
/// connection is down, the instance says it is not ready (``isListening``).
///
/// The connection is its own, not the pool's: it is made again on the listener's backoff,
/// at most ``longestBackoff`` apart, so an instance listens again within seconds of
/// PostgreSQL's return however long it was away (the pool's own backoff grows far longer). A
/// round trip on it every `heartbeat` must be answered within another `heartbeat`: a network
/// that went silent without a reset (a half-open connection, which would otherwise wait for
/// notifications forever) is noticed within two, and the connection closed and made again.
public final class HeadListener: Service, Sendable {
    private let feed: PostgresFeed
    private let news: any HeadSubscriber
    /// Heads notices carried, waiting to be handed to ``news``.
    private let carried = CarriedHeads()
    /// What notices said changed, waiting to be handed to ``news`` in commit order.
    private let carriedChanges = CarriedChanges()
    private let pollInterval: Duration
    private let heartbeat: Duration
    private let logger: Logger
    private let listening = Atomic<Bool>(false)
    /// Whether a connection ever listened, so that the next one counts as a reconnection.
    private let listenedBefore = Atomic<Bool>(false)
    /// Round trips answered on the current connection: one that answered none (dropped as
    /// soon as it was made, by a proxy or a failover) does not start the backoff afresh.
    private let beatsAnswered = Atomic<Int>(0)
    private let reconnects = Atomic<Int>(0)
    /// Called after each reconnection (not the first connection).
    private let onReconnect: @Sendable () -> Void

    public init(
        feed: PostgresFeed, news: any HeadSubscriber, pollInterval: Duration, heartbeat: Duration = .seconds(5), logger: Logger,
        onReconnect: @escaping @Sendable () -> Void = {}
    ) {
        self.feed = feed
        self.news = news
        self.pollInterval = pollInterval
        self.heartbeat = heartbeat
        self.logger = logger
        self.onReconnect = onReconnect
    }

    /// The notification connection is up and listening.
    public var isListening: Bool { listening.load(ordering: .relaxed) }

    /// Times the connection was lost and made again.
    public var reconnectCount: Int { reconnects.load(ordering: .relaxed) }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.listen() }
                group.addTask { await self.poll() }
            }
        }
    }

    private func listen() async {
        var backoff = Self.firstBackoff
        var attempt = 0
        while !Task.isCancelled {
            do {
                try await feed.migrated()
                attempt += 1
                var configuration = feed.direct
                // How an operator (and a fault test) tells it apart in `pg_stat_activity`.
                configuration.options.additionalStartupParameters.append(("application_name", Self.applicationName))
                let connection = try await PostgresConnection.connect(configuration: configuration, id: attempt, logger: logger)
                beatsAnswered.store(0, ordering: .relaxed)
                let ended: Result<Void, any Error>
                do {
                    try await listen(on: connection)
                    ended = .success(())
                } catch {
                    ended = .failure(error)
                }
                try? await connection.close()
                if listening.exchange(false, ordering: .relaxed), beatsAnswered.load(ordering: .relaxed) > 0 { backoff = Self.firstBackoff }
                try ended.get()
            } catch {
                listening.store(false, ordering: .relaxed)
                if Task.isCancelled { return }
                logger.warning(
                    "The news connection to PostgreSQL failed; trying again",
                    metadata: ["error": "\(String(reflecting: error))", "retryIn": "\(backoff)"])
            }
            try? await Task.sleep(for: backoff)
            backoff = Self.backoff(after: backoff)
        }
    }

    /// Listens on `connection` until it fails or its heartbeat goes unanswered.
    private func listen(on connection: PostgresConnection) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.beat(connection) }
            group.addTask {
                try await connection.listen(on: PostgresFeed.notificationChannel) { notifications in
                    if self.listenedBefore.exchange(true, ordering: .relaxed) {
                        self.reconnects.add(1, ordering: .relaxed)
                        self.onReconnect()
                        self.logger.notice("Listening for news again")
                    }
                    // Whatever committed while nobody listened, read on this connection (which
                    // just proved itself, where the pool may still be waiting to reconnect);
                    // only then is the instance ready.
                    try await self.catchUpWatchedFeeds(on: connection)
                    self.listening.store(true, ordering: .relaxed)
                    try await withThrowingDiscardingTaskGroup { handOvers in
                        for try await notification in notifications {
                            guard let notice = HeadNotice(payload: notification.payload) else {
                                // Not a notice this version sends: whatever moved, the heads say.
                                try await self.catchUpWatchedFeeds(on: connection)
                                continue
                            }
                            if let version = notice.version, let known = self.news.knownVersion(of: notice.feed), version > known {
                                // In commit order, beside the notices that follow.
                                let news = CarriedChanges.Notice(from: notice.from, version: version, changes: notice.changes)
                                if self.carriedChanges.offer(news, in: notice.feed) {
                                    handOvers.addTask { await self.handOverChanges(notice.feed) }
                                }
                            }
                            guard let known = self.news.knownHead(of: notice.feed), notice.head > known else { continue }
                            guard let item = notice.item else {
                                // A burst of commits: the first read reaches the newest head.
                                await self.news.headMayHaveMoved(in: notice.feed)
                                continue
                            }
                            // Handed over beside the notices that follow, coalesced per feed.
                            if self.carried.offer(FeedHead(position: notice.head, item: item, version: notice.version ?? 0), in: notice.feed) {
                                handOvers.addTask { await self.handOver(notice.feed) }
                            }
                        }
                    }
                }
            }
            // Whichever ends first, the heartbeat failing or the notifications, ends both.
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Tells the subscriber `feed`'s newest carried head, and again while newer ones came
    /// meanwhile.
    private func handOver(_ feed: FeedName) async {
        var delivered: FeedPosition?
        while let head = carried.next(in: feed, after: delivered) {
            await news.headMoved(in: feed, to: head)
            delivered = head.position
        }
    }

    /// Tells the subscriber what changed in `feed`, notice after notice, in commit order.
    private func handOverChanges(_ feed: FeedName) async {
        while let notice = carriedChanges.next(in: feed) {
            await news.feedChanged(in: feed, from: notice.from, to: notice.version, changes: notice.changes)
        }
    }

    /// A round trip on `connection` every `heartbeat`, each answered within another; throws
    /// when one is not, having closed the connection (which ends its notifications too).
    private func beat(_ connection: PostgresConnection) async throws {
        struct Silent: Error, CustomStringConvertible {
            var description: String { "PostgreSQL did not answer a round trip on the news connection" }
        }
        while true {
            try await Task.sleep(for: heartbeat)
            let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await connection.query("SELECT 1", logger: self.logger)
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: self.heartbeat)
                    // A query sent on a silent network waits for ever: closing is what ends it.
                    try? await connection.close()
                    return false
                }
                defer { group.cancelAll() }
                return try await group.next() ?? false
            }
            guard answered else { throw Silent() }
            beatsAnswered.add(1, ordering: .relaxed)
        }
    }

    /// Reads the heads now and then, whatever the notifications say, through the pool; a
    /// read that fails is made again at the next turn.
    private func poll() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: pollInterval)
            if Task.isCancelled { return }
            let watched = news.watchedFeeds
            guard !watched.isEmpty, let heads = try? await feed.heads(of: watched) else { continue }
            await tell(heads, of: watched)
        }
    }

    /// Reads every watched feed's head on `connection` in one query, and wakes the subscriber
    /// for each that is past what it knows.
    private func catchUpWatchedFeeds(on connection: PostgresConnection) async throws {
        let watched = news.watchedFeeds
        guard !watched.isEmpty else { return }
        await tell(try await feed.heads(of: watched, on: connection), of: watched)
    }

    private func tell(_ heads: [FeedName: (head: FeedPosition, version: FeedVersion)], of watched: [FeedName]) async {
        for name in watched where !Task.isCancelled {
            let now = heads[name] ?? (0, 0)
            if let known = news.knownVersion(of: name), now.version > known {
                await news.feedChanged(in: name, from: nil, to: now.version, changes: nil)
            }
            if let known = news.knownHead(of: name), now.head <= known { continue }
            await news.headMayHaveMoved(in: name)
        }
    }

    /// The news connection's `application_name`.
    public static let applicationName = "refresh-server news"

    static let firstBackoff: Duration = .milliseconds(100)
    static let longestBackoff: Duration = .seconds(2)

    /// The wait after a failed attempt that came `wait` after the one before: twice as long,
    /// up to ``longestBackoff``.
    static func backoff(after wait: Duration) -> Duration {
        min(wait * 2, longestBackoff)
    }
}
