import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// What PostgreSQL adds to the feed contract (which `Store.postgres` checks with the other
/// stores): several instances on one database, news between them, one upstream refresh.
@Suite(.enabled(if: TestPostgres.isRequired, "PTR_TEST_POSTGRES names no PostgreSQL server"))
struct PostgresFeedTests {
    @Test func instancesStartingTogetherMigrateOnceAndShareWhatEachWrites() async throws {
        let url = try await TestPostgres.freshDatabase()
        let instances = try (0..<3).map { _ in try TestPostgres.feed(url: url) }
        let applied = try await withThrowingTaskGroup(of: [String].self) { group in
            for feed in instances { group.addTask { try await feed.appliedMigrations() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(applied == Array(repeating: PostgresFeed.migrations.map(\.name), count: 3))

        let item = FeedItem(
            id: "kept", title: "Kept", summary: "s", link: "https://example.com/kept", author: "a", published: Timestamp(milliseconds: 5))
        _ = try await instances[0].publish([item])
        #expect(try await instances[1].item(id: "kept") == item)
        #expect(try await instances[2].head() == FeedHead(position: 1, item: item, version: 1))
    }

    @Test func aCommitReachesAnotherInstanceAndALostConnectionCatchesUpOnReturn() async throws {
        let url = try await TestPostgres.freshDatabase()
        let writer = try TestPostgres.feed(url: url)
        let (reader, news, listener) = try listening(url: url, poll: .seconds(600))
        let running = Task { try await listener.run() }
        defer { running.cancel() }
        try await eventually("the listener connects") { listener.isListening }

        _ = try await writer.publish(items(2, prefix: "first"))
        try await eventually("the head reaches the other instance") { news.position == 2 }
        #expect(news.head?.item.id == "first-0")

        // Every LISTEN connection dropped, as a PostgreSQL restart or a network cut would.
        let terminated = try await terminateListeners(writer)
        #expect(terminated >= 1)
        _ = try await writer.publish(items(1, from: 1_900_000_000_000, prefix: "during"))
        try await eventually("the listener is back") { listener.reconnectCount >= 1 && listener.isListening }
        try await eventually("what came while it was away arrives") { news.position == 3 }
        _ = try await writer.publish(items(1, from: 1_950_000_000_000, prefix: "after"))
        try await eventually("and so does what comes after") { news.position == 4 }
        #expect(try await reader.head()?.item.id == "after-0")
    }

    @Test func theSlowPollFindsAHeadNobodyNotified() async throws {
        let url = try await TestPostgres.freshDatabase()
        let writer = try TestPostgres.feed(url: url)
        let (_, news, listener) = try listening(url: url, poll: .milliseconds(200))
        let running = Task { try await listener.run() }
        defer { running.cancel() }
        try await eventually("the listener connects") { listener.isListening }
        // A commit that moves the head without NOTIFY: only the poll can see it.
        try await writer.client.withTransaction(logger: TestPostgres.logger) { connection in
            try await connection.query(
                """
                INSERT INTO item (id, title, published, position) VALUES ('quiet', 'Quiet', 1, 1)
                """, logger: TestPostgres.logger)
            try await connection.query("UPDATE feed_head SET position = 1", logger: TestPostgres.logger)
        }
        try await eventually("the poll finds it") { news.position == 1 }
    }

    @Test func anUpstreamRefreshRunsOnceAcrossInstancesAndTheOthersJoinIt() async throws {
        let url = try await TestPostgres.freshDatabase()
        try await Upstream.run { port, log in
            // The download waits until the second instance waits for the lock, however slowly
            // a loaded machine gets it there.
            let upstreams = { try UpstreamSet(urls: ["http://127.0.0.1:\(port)/gated"]) }
            let first = try TestPostgres.feed(url: url, upstreams: [.main: try upstreams()])
            let second = try TestPostgres.feed(url: url, upstreams: [.main: try upstreams()])
            _ = try await first.appliedMigrations()
            let (connecting, started) = AsyncStream<Void>.makeStream()
            let stages = Stages()
            // The stream ends with the update, so a first update that fails before it connects
            // fails the test instead of leaving it waiting.
            let firstUpdate = Task {
                defer { started.finish() }
                return try await first.update { progress in
                    if progress.stage == "connecting" { started.yield() }
                }
            }
            _ = await connecting.first(where: { _ in true })
            let joined = try await second.update { progress in
                stages.append(progress.stage)
                if progress.stage == "waiting" { log.openGate() }
            }
            let update = try await firstUpdate.value
            #expect(update.added == 12)
            #expect(joined.added == 0, "the items came by the other instance")
            #expect(stages.all.first == "waiting")
            #expect(log.requests.withLock { $0.count } == 1, "one download for the cluster")
            #expect(try await second.added(after: 0, limit: 100).items.count == 12, "and they are in the shared feed")
        }
    }

    /// Each feed's upstream refresh takes its own lock: one feed's refresh running on one
    /// instance does not make another feed's wait on another.
    @Test func feedsRefreshTheirUpstreamsIndependently() async throws {
        let url = try await TestPostgres.freshDatabase()
        try await Upstream.run { port, log in
            let upstreams = {
                [
                    FeedName.main: try UpstreamSet(urls: ["http://127.0.0.1:\(port)/hang"], timeout: .seconds(10)),
                    FeedName("team")!: try UpstreamSet(urls: ["http://127.0.0.1:\(port)/feed"]),
                ]
            }
            let first = try TestPostgres.feed(url: url, upstreams: try upstreams())
            let second = try TestPostgres.feed(url: url, upstreams: try upstreams())
            _ = try await first.appliedMigrations()
            do {
                let (hanging, started) = AsyncStream<Void>.makeStream()
                let mainRefresh = Task { try await first.update { if $0.stage == "connecting" { started.yield() } } }
                _ = await hanging.first(where: { _ in true })
                let stages = Stages()
                let team = try await second.feed(FeedName("team")!).update { stages.append($0.stage) }
                #expect(team.added == 12)
                #expect(!stages.all.contains("waiting"), "\(stages.all)")
                mainRefresh.cancel()
                _ = try? await mainRefresh.value
                // The main refresh's lock was released when it ended: the next one takes it.
                let again = Stages()
                _ = try? await second.update { again.append($0.stage) }
                #expect(!again.all.contains("waiting"), "\(again.all)")
            }
            #expect(log.requests.withLock { $0.filter { $0.0 == "feed" }.count } == 1)
        }
    }

    /// A network that goes silent under the news connection, without a reset: the round trip
    /// on it goes unanswered, the instance says it is not listening within two heartbeats, and
    /// listens again once the network answers, having caught up what committed meanwhile.
    @Test func aSilentNewsConnectionIsNoticedAndMadeAgain() async throws {
        let url = try await TestPostgres.freshDatabase()
        let writer = try TestPostgres.feed(url: url)
        _ = try await writer.appliedMigrations()
        let (proxy, proxiedURL) = try await Self.proxy(to: url)
        defer { Task { await proxy.close() } }
        let (news, listener) = try Self.listening(through: proxiedURL)
        let running = Task { try await listener.run() }
        defer { running.cancel() }
        try await eventually("it listens") { listener.isListening }

        proxy.faults.silent = true
        let silenced = ContinuousClock.now
        try await eventually("the silence is noticed") { !listener.isListening }
        #expect(ContinuousClock.now - silenced < .seconds(15), "within two heartbeats (0.6 s), and room for a loaded machine")
        _ = try await writer.publish([FeedItem(id: "meanwhile", title: "Meanwhile", published: Timestamp(milliseconds: 1))])

        proxy.faults.silent = false
        try await eventually("it listens again") { listener.isListening }
        try await eventually("what committed meanwhile is told") { news.position == 1 }
        #expect(listener.reconnectCount >= 1)
    }

    /// An instance whose release of the upstream lock fails (the statement errs, the
    /// connection stays up) closes that connection, which releases the lock: the next refresh,
    /// on another instance, takes it at once instead of waiting behind a lock nobody holds.
    @Test func anUpstreamLockThatCannotBeReleasedIsReleasedByClosingItsConnection() async throws {
        let url = try await TestPostgres.freshDatabase()
        try await Upstream.run { port, _ in
            let upstreams = { [FeedName.main: try UpstreamSet(urls: ["http://127.0.0.1:\(port)/feed"])] }
            let (proxy, proxiedURL) = try await Self.proxy(to: url)
            defer { Task { await proxy.close() } }
            let first = try TestPostgres.feed(url: proxiedURL, upstreams: try upstreams())
            let second = try TestPostgres.feed(url: url, upstreams: try upstreams())
            _ = try await second.appliedMigrations()
            proxy.faults.failing = "pg_advisory_unlock"
            let update = try await first.update { _ in }
            #expect(update.added == 12, "the refresh stands: the lock went with its connection")
            // PostgreSQL lets the lock go once it sees the connection close (through the proxy,
            // a moment later); a lock returned to the pool instead would be held for ever.
            try await eventually("the lock goes with its connection") { try await Self.advisoryLocks(in: second) == 0 }
            // The next refresh takes the lock without waiting: it goes through to its end (a
            // refresh waiting for a lock nobody holds would report "waiting" and never end).
            let stages = Stages()
            let next = Task { try await second.update { stages.append($0.stage) } }
            let deadline = Task {
                try await Task.sleep(for: .seconds(60))
                next.cancel()
            }
            _ = try? await next.value
            deadline.cancel()
            #expect(!stages.all.contains("waiting"), "\(stages.all)")
            #expect(stages.all.last == "done", "\(stages.all)")
        }
    }

    /// However long PostgreSQL was gone, the news connection is made again within seconds of
    /// its return: the listener's own backoff stops at 2 s.
    @Test func theNewsConnectionComesBackWithinSecondsOfALongOutage() async throws {
        let url = try await TestPostgres.freshDatabase()
        _ = try await TestPostgres.feed(url: url).appliedMigrations()
        let (proxy, proxiedURL) = try await Self.proxy(to: url)
        defer { Task { await proxy.close() } }
        let (_, listener) = try Self.listening(through: proxiedURL)
        let running = Task { try await listener.run() }
        defer { running.cancel() }
        try await eventually("it listens") { listener.isListening }
        // Down: what was open goes quiet, and every new connection is refused.
        proxy.faults.refusing = true
        proxy.faults.silent = true
        try await eventually("the outage is noticed") { !listener.isListening }
        try await Task.sleep(for: .seconds(6))
        proxy.faults.silent = false
        proxy.faults.refusing = false
        let back = ContinuousClock.now
        try await eventually("it listens again") { listener.isListening }
        // Within the 2 s backoff and a connection's set-up, with room for a busy machine; that
        // the waits stop growing at 2 s is the backoff's own test's, below.
        #expect(ContinuousClock.now - back < .seconds(15), "within seconds of its return")
    }

    /// However many attempts fail, the listener waits at most 2 s before the next: the
    /// sequence of its waits, as values.
    @Test func theListenersWaitsDoubleUpToTwoSeconds() {
        var waits = [HeadListener.firstBackoff]
        for _ in 1..<12 { waits.append(HeadListener.backoff(after: waits.last!)) }
        #expect(
            waits.prefix(6) == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600), .seconds(2)])
        #expect(waits.dropFirst(5).allSatisfy { $0 == .seconds(2) })
    }

    /// The connection cut right after `COMMIT` was forwarded (it commits, its answer is lost)
    /// or right before (it rolls back): every write answered as stored is there, every one
    /// answered unavailable is not.
    @Test func aCommitWhoseAnswerIsLostIsAnsweredByWhatPostgreSQLDid() async throws {
        let url = try await TestPostgres.freshDatabase()
        let direct = try TestPostgres.feed(url: url)
        _ = try await direct.appliedMigrations()
        let location = try PostgresLocation(url: url)
        let proxy = try await CommitCuttingProxy.start(to: location.host, port: location.port)
        defer { Task { await proxy.close() } }
        var components = try #require(URLComponents(string: url))
        components.host = "127.0.0.1"
        components.port = proxy.port
        components.query = "sslmode=disable"
        let proxied = try TestPostgres.feed(url: try #require(components.string))
        _ = try await proxied.appliedMigrations()

        proxy.policy.set([.afterCommit, .beforeCommit, .pass])
        var answers: [(id: String, stored: Bool)] = []
        for index in 0..<12 {
            let id = "cut-\(index)"
            do {
                _ = try await proxied.publish([FeedItem(id: id, title: "first", published: Timestamp(milliseconds: Int64(index)))])
                answers.append((id, true))
            } catch is FeedStoreUnavailable {
                answers.append((id, false))
            }
        }
        #expect(proxy.policy.counts == [.afterCommit: 4, .beforeCommit: 4, .pass: 4])
        for (id, acknowledged) in answers {
            let stored = try await direct.item(id: id) != nil
            #expect(stored == acknowledged, "\(id): answered \(acknowledged ? "stored" : "unavailable"), \(stored ? "stored" : "not stored")")
        }
        #expect(answers.filter(\.stored).count == 8, "the commits whose answer was lost count as stored: \(answers)")

        // An upsert whose COMMIT's answer is lost: the new title is what it says.
        proxy.policy.set([.afterCommit])
        let replaced = try await proxied.publish([FeedItem(id: "cut-0", title: "second", published: Timestamp(milliseconds: 0))])
        #expect(replaced.first?.title == "second")
        #expect(try await direct.item(id: "cut-0")?.title == "second")
        #expect(try await direct.head()?.position == 8, "positions stay dense")

        // A new item whose COMMIT's answer is lost: the head it answers is the one stored.
        proxy.policy.set([.afterCommit])
        let added = try await proxied.publishing([FeedItem(id: "cut-new", title: "new", published: Timestamp(milliseconds: 99))])
        #expect(added.head?.position == 9 && added.head?.item.id == "cut-new")
        #expect(try await direct.head() == added.head)
    }

    /// Each notification names its feed: a subscriber is woken for the feeds it watches only,
    /// reads each of them, and after a lost connection catches up every one it watches.
    @Test func theListenerTellsEachWatchedFeedItsOwnHeadAndCatchesUpEveryOneOnReturn() async throws {
        let url = try await TestPostgres.freshDatabase()
        let writer = try TestPostgres.feed(url: url)
        let inbox = FeedName("user:42")!
        let team = FeedName("team.eng")!
        let other = FeedName("user:7")!
        let reader = try TestPostgres.feed(url: url)
        let subscriber = FeedHeads(watching: [.main, inbox, team], in: reader)
        let listener = HeadListener(feed: reader, news: subscriber, pollInterval: .seconds(600), logger: TestPostgres.logger)
        let running = Task { try await listener.run() }
        defer { running.cancel() }
        try await eventually("the listener connects") { listener.isListening }

        _ = try await writer.feed(inbox).publish(items(2, prefix: "inbox"))
        _ = try await writer.feed(other).publish(items(3, prefix: "other"))
        _ = try await writer.publish(items(1, prefix: "main"))
        try await eventually("each watched feed hears of its own head") { subscriber.known == [.main: 1, inbox: 2] }
        #expect(subscriber.heads[inbox]?.item.id == "inbox-0")
        #expect(!subscriber.woken.contains(other), "a feed nobody watches here is never read")
        #expect(subscriber.told == [.main, inbox] && subscriber.woken.isEmpty, "each notice carried its head: nothing was read")

        let terminated = try await terminateListeners(writer)
        #expect(terminated >= 1)
        _ = try await writer.feed(team).publish(items(4, prefix: "team"))
        _ = try await writer.feed(inbox).publish(items(1, from: 1_900_000_000_000, prefix: "later"))
        try await eventually("the listener is back") { listener.reconnectCount >= 1 && listener.isListening }
        try await eventually("every watched feed caught up") { subscriber.known == [.main: 1, inbox: 3, team: 4] }
        #expect(!subscriber.woken.contains(other))
    }

    /// A feed whose sessions take long to tell (a crowd on a busy instance) keeps only its
    /// newest head while it is being told, and holds up no other feed's news.
    @Test func aSlowFeedKeepsOnlyItsNewestHeadAndHoldsUpNoOther() async throws {
        let url = try await TestPostgres.freshDatabase()
        let writer = try TestPostgres.feed(url: url)
        let crowded = FeedName("crowded")!
        let quiet = FeedName("quiet")!
        let reader = try TestPostgres.feed(url: url)
        let subscriber = FeedHeads(watching: [crowded, quiet], in: reader)
        let listener = HeadListener(feed: reader, news: subscriber, pollInterval: .seconds(600), logger: TestPostgres.logger)
        let running = Task { try await listener.run() }
        defer { running.cancel() }
        try await eventually("the listener connects") { listener.isListening }

        subscriber.hold(crowded)
        for index in 0..<6 {
            _ = try await writer.feed(crowded).publish(items(1, from: 1_800_000_000_000 + Int64(index), prefix: "crowded-\(index)"))
        }
        _ = try await writer.feed(quiet).publish(items(1, prefix: "quiet"))
        try await eventually("the quiet feed hears of its head while the crowded one is still being told") {
            subscriber.known[quiet] == 1
        }
        #expect(subscriber.known[crowded] == nil && subscriber.tellings[crowded] == 1)
        subscriber.release(crowded)
        try await eventually("the crowded feed reaches its newest head") { subscriber.known[crowded] == 6 }
        // The head it was being told, then the newest (one telling when the hand-over started
        // late enough to find the newest already kept): never one per notice.
        #expect((1...2).contains(subscriber.tellings[crowded] ?? 0), "\(subscriber.tellings)")
        #expect(subscriber.woken.isEmpty)
    }

    @Test func aNoticeCarriesTheFeedAndItsHead() {
        let notice = HeadNotice(feed: FeedName("user:42@team.eng")!, head: 17)
        #expect(notice.payload == "user:42@team.eng 17")
        #expect(HeadNotice(payload: notice.payload) == notice)
        #expect(HeadNotice(payload: "17") == nil, "the payload of older versions")
        #expect(HeadNotice(payload: "main x") == nil)
        #expect(HeadNotice(payload: " 3") == nil)
    }

    /// The head's item, as the publish function writes it after the head (PostgreSQL's
    /// `jsonb` text: keys in its order, `null` for absent fields), comes out whole; an item
    /// that does not read as one is left out, so the listener reads the head instead.
    @Test func aNoticeCarriesTheHeadsItemWhenItReadsAsOne() throws {
        let payload =
            #"team.eng 9 {"id": "a b", "link": null, "title": "Ünïcode \"quoted\"", "author": "x", "summary": null, "published": 1800000000000}"#
        let notice = try #require(HeadNotice(payload: payload))
        #expect(notice.feed == FeedName("team.eng") && notice.head == 9)
        #expect(
            notice.item
                == FeedItem(id: "a b", title: "Ünïcode \"quoted\"", author: "x", published: Timestamp(milliseconds: 1_800_000_000_000)))
        for broken in [
            #"{"id": "a", "title": "t"}"#,  // no date
            #"{"id": "a", "title": "t", "published": 1.5}"#,
            #"{"id": 3, "title": "t", "published": 1}"#,
            #"{"id": "a", "title": "t", "published": 1, "link": 7}"#,
            #"{"id": "a", "title": "t", "published": 1"#,
            "[]", "",
        ] {
            let notice = HeadNotice(payload: "main 4 " + broken)
            #expect(notice == HeadNotice(feed: .main, head: 4), "\(broken)")
        }
    }

    /// A publish answers the head it made with the write, as committed, so its instance tells
    /// its sessions without reading it; the notice carries the same item to every other
    /// instance, except one too long to travel, which they read.
    @Test func aPublishAnswersAndNotifiesTheHeadItMade() async throws {
        let url = try await TestPostgres.freshDatabase()
        let writer = try TestPostgres.feed(url: url)
        let team = FeedName("team.eng")!
        let reader = try TestPostgres.feed(url: url)
        let subscriber = FeedHeads(watching: [team], in: reader)
        let listener = HeadListener(feed: reader, news: subscriber, pollInterval: .seconds(600), logger: TestPostgres.logger)
        let running = Task { try await listener.run() }
        defer { running.cancel() }
        try await eventually("the listener connects") { listener.isListening }

        let first = try await writer.feed(team).publishing(items(3, prefix: "team"))
        #expect(first.stored.count == 3)
        #expect(first.head == FeedHead(position: 3, item: items(3, prefix: "team")[0], version: 3))
        try await eventually("the notice's head arrives") { subscriber.known == [team: 3] }
        #expect(subscriber.heads[team] == first.head && subscriber.told == [team] && subscriber.woken.isEmpty)

        // Replacing an item adds nothing: no head is made (its edit is told, not a head).
        let replaced = try await writer.feed(team).publishing([
            FeedItem(id: "team-1", title: "again", published: Timestamp(milliseconds: 1))
        ])
        #expect(replaced.head == nil)

        // An item whose notice would pass PostgreSQL's 8000 bytes travels without it.
        let long = FeedItem(
            id: "long", title: "Long", summary: String(repeating: "é", count: 4_000), published: Timestamp(milliseconds: 1_900_000_000_000))
        let second = try await writer.feed(team).publishing([long])
        #expect(second.head == FeedHead(position: 4, item: long, version: 5))
        try await eventually("the long head is read") { subscriber.known == [team: 4] }
        #expect(subscriber.woken == [team] && subscriber.heads[team]?.item == long)
        #expect(try await reader.feed(team).head() == second.head)
    }

    // MARK: - Helpers

    /// A listener of a server with a session on `main`, reaching the database at `url` (a
    /// proxy's, for faults), with a heartbeat short enough for a test; and `main`'s news.
    private static func listening(through url: String) throws -> (FeedNews, HeadListener) {
        let reader = try TestPostgres.feed(url: url)
        let feeds = FeedRegistry(feed: reader, settings: ServerConfiguration().sessionSettings, metrics: ServerMetrics())
        let news = try feeds.join(.main).news
        let listener = HeadListener(
            feed: reader, news: feeds, pollInterval: .seconds(600), heartbeat: .milliseconds(300), logger: TestPostgres.logger)
        return (news, listener)
    }

    /// A proxy in front of the database at `url`, and the URL that reaches it through it.
    private static func proxy(to url: String) async throws -> (CommitCuttingProxy, String) {
        let location = try PostgresLocation(url: url)
        let proxy = try await CommitCuttingProxy.start(to: location.host, port: location.port)
        var components = try #require(URLComponents(string: url))
        components.host = "127.0.0.1"
        components.port = proxy.port
        components.query = "sslmode=disable"
        return (proxy, try #require(components.string))
    }

    /// A listener for a server with a session on `main`, and that feed's news.
    private func listening(url: String, poll: Duration) throws -> (PostgresFeed, FeedNews, HeadListener) {
        let feed = try TestPostgres.feed(url: url)
        let feeds = FeedRegistry(feed: feed, settings: ServerConfiguration().sessionSettings, metrics: ServerMetrics())
        let news = try feeds.join(.main).news
        return (feed, news, HeadListener(feed: feed, news: feeds, pollInterval: poll, logger: TestPostgres.logger))
    }

    /// The advisory locks held in `feed`'s database.
    private static func advisoryLocks(in feed: PostgresFeed) async throws -> Int {
        let rows = try await feed.client.query(
            """
            SELECT count(*) FROM pg_locks
            WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """, logger: TestPostgres.logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    private func terminateListeners(_ feed: PostgresFeed) async throws -> Int {
        let rows = try await feed.client.query(
            """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = 'refresh-server news'
            """, logger: TestPostgres.logger)
        var count = 0
        for try await terminated in rows.decode(Bool.self) where terminated { count += 1 }
        return count
    }
}

/// Progress stages as they came, from whichever thread.
private final class Stages: Sendable {
    private let stages = Mutex<[String]>([])
    func append(_ stage: String) { stages.withLock { $0.append(stage) } }
    var all: [String] { stages.withLock { $0 } }
}

/// Waits for `condition`, up to a minute: a bound on a wait that ends as soon as it holds,
/// not a measure of how fast this machine gets there.
func eventually(_ what: String, _ condition: @Sendable () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TestFailure("\(what): not within 60 s") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// A server whose PostgreSQL cannot be reached: alive, not ready, and a publish is refused
/// as unavailable rather than lost or failed with a 500.
@Suite struct UnreachablePostgresTests {
    @Test func theServerSaysItIsNotReadyAndRefusesPublishesWith503() async throws {
        let configuration = TestServer.configuration { $0.database = "postgres://ptr@127.0.0.1:1/ptr?sslmode=disable" }
        try await TestServer.run(configuration) { server in
            #expect(try await server.get("/healthz").status == 200)
            let ready = try await server.get("/readyz")
            #expect(ready.status == 503)
            #expect(ready.json["error"] as? String == "notifications_unavailable")
            #expect(ready.headers.first(name: "Retry-After") == "5")
            let publish = try await server.post("/api/items", #"{"title": "lost?"}"#)
            #expect(publish.status == 503)
            #expect(publish.json["error"] as? String == "store_unavailable")
        }
    }
}

/// A subscriber that watches some feeds and keeps each one's head, as a hub per feed would.
private final class FeedHeads: HeadSubscriber {
    private struct State {
        var heads: [FeedName: FeedHead] = [:]
        var woken: Set<FeedName> = []
        var told: Set<FeedName> = []
        /// How many heads each feed was told.
        var tellings: [FeedName: Int] = [:]
        /// Feeds whose telling waits until they leave this set.
        var held: Set<FeedName> = []
    }

    let watchedFeeds: [FeedName]
    private let store: any FeedStore
    private let state = Mutex(State())

    init(watching feeds: [FeedName], in store: any FeedStore) {
        watchedFeeds = feeds
        self.store = store
    }

    var heads: [FeedName: FeedHead] { state.withLock { $0.heads } }
    var known: [FeedName: FeedPosition] { heads.mapValues(\.position) }
    /// The feeds read after a notice (or a reconnection) said their head may have moved.
    var woken: Set<FeedName> { state.withLock { $0.woken } }
    /// The feeds whose notice carried the head, taken without a read.
    var told: Set<FeedName> { state.withLock { $0.told } }
    var tellings: [FeedName: Int] { state.withLock { $0.tellings } }

    /// Makes the next tellings of `feed` wait until ``release(_:)``, as a slow fan-out would.
    func hold(_ feed: FeedName) { state.withLock { _ = $0.held.insert(feed) } }
    func release(_ feed: FeedName) { state.withLock { _ = $0.held.remove(feed) } }

    func knownHead(of feed: FeedName) -> FeedPosition? {
        guard watchedFeeds.contains(feed) else { return nil }
        return state.withLock { $0.heads[feed]?.position ?? 0 }
    }

    func headMayHaveMoved(in name: FeedName) async {
        state.withLock { _ = $0.woken.insert(name) }
        guard let head = try? await store.feed(name).head() else { return }
        keep(head, of: name)
    }

    /// Versions are not this subscriber's concern: notices of edits are dropped unread.
    func knownVersion(of feed: FeedName) -> FeedVersion? { nil }
    func feedChanged(in feed: FeedName, from: FeedVersion?, to version: FeedVersion, changes: [FeedChange]?) async {}

    func headMoved(in name: FeedName, to head: FeedHead) async {
        state.withLock { state in
            state.told.insert(name)
            state.tellings[name, default: 0] += 1
        }
        while state.withLock({ $0.held.contains(name) }) { try? await Task.sleep(for: .milliseconds(10)) }
        keep(head, of: name)
    }

    private func keep(_ head: FeedHead, of name: FeedName) {
        state.withLock { state in
            if head.position > state.heads[name]?.position ?? 0 { state.heads[name] = head }
        }
    }
}
