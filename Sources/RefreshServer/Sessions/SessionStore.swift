import RefreshEngine
import RefreshFeed
import RefreshHTTP
import Synchronization

/// All live sessions, by id, within the configured limits: in all, and per client address,
/// so one client cannot take every session the server allows.
public final class SessionStore: Sendable {
    private struct Registry {
        var sessions: [String: Session] = [:]
        var perClient: [String: Int] = [:]

        mutating func remove(_ id: String) -> Session? {
            guard let session = sessions.removeValue(forKey: id) else { return nil }
            let left = perClient[session.client, default: 1] - 1
            perClient[session.client] = left > 0 ? left : nil
            return session
        }
    }

    private let registry = Mutex(Registry())
    /// Where a session gets what its feed's sessions share; told when it ends.
    private let feeds: FeedRegistry
    private let limits: SessionSettings
    /// Where sessions count their pulls.
    private let insights: PullInsights

    init(feeds: FeedRegistry, limits: SessionSettings, insights: PullInsights = PullInsights(patterns: [])) {
        self.feeds = feeds
        self.limits = limits
        self.insights = insights
    }

    var count: Int { registry.withLock { $0.sessions.count } }

    /// A new session of `feed` for `client` (its address, see ``TrustedProxies``).
    func create(
        config: RefreshConfig, preset: Preset = .standard, feed: FeedName = .main, client: String, owner: SessionOwner? = nil
    ) throws(APIError) -> Session {
        let services = try feeds.join(feed)
        let session = Session(
            id: Self.newID(instance: limits.instanceName), config: config, client: client, owner: owner, services: services, limits: limits,
            pulls: insights.recorder(feed: feed, preset: config == preset.config ? preset : nil), now: .now)
        do {
            try admit(session)
        } catch {
            feeds.leave(feed)
            throw error
        }
        return session
    }

    private func admit(_ session: Session) throws(APIError) {
        let client = session.client
        try registry.withLock { (registry) throws(APIError) in
            guard registry.sessions.count < limits.maxSessions else {
                throw APIError(
                    .tooManySessions, "The server holds its maximum of \(limits.maxSessions) sessions; try again shortly.",
                    retryAfter: 5)
            }
            let mine = registry.perClient[client, default: 0]
            guard mine < limits.maxSessionsPerClient else {
                throw APIError(
                    .tooManySessionsForClient,
                    "This client holds its maximum of \(limits.maxSessionsPerClient) sessions; end one or wait for one to expire.",
                    retryAfter: 10)
            }
            registry.sessions[session.id] = session
            registry.perClient[client] = mine + 1
        }
    }

    func session(_ id: String) throws(APIError) -> Session {
        guard let session = registry.withLock({ $0.sessions[id] }) else { throw .sessionNotFound(id) }
        return session
    }

    /// Ends a session; `false` when there was none.
    func end(_ id: String) -> Bool {
        guard let session = registry.withLock({ $0.remove(id) }) else { return false }
        session.end()
        feeds.leave(session.feed)
        return true
    }

    /// Ends every session unused for longer than the idle timeout; answers how many.
    @discardableResult
    func expireIdle(now: ContinuousClock.Instant = .now) -> Int {
        let deadline = now - limits.sessionIdleTimeout
        let expired = registry.withLock { registry -> [Session] in
            let idle = registry.sessions.values.filter { $0.isIdle(since: deadline) }
            for session in idle { _ = registry.remove(session.id) }
            return idle
        }
        for session in expired {
            session.end()
            feeds.leave(session.feed)
        }
        return expired.count
    }

    /// The keepalive tick for every open stream.
    func tick() {
        for session in registry.withLock({ Array($0.sessions.values) }) { session.tick() }
    }

    /// 128 random bits, hex: unguessable, so a session id is its own capability. Behind a
    /// front shared by several instances, the instance's name comes first (`NAME.HEX`), so
    /// the front sends the session's requests to the instance that holds it.
    static func newID(instance: String?) -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        func pad(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        let random = pad(high) + pad(low)
        return instance.map { "\($0).\(random)" } ?? random
    }
}
