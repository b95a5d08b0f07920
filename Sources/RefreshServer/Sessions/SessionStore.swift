import RefreshEngine
import Synchronization

/// All live sessions, by id, within the configured limits.
public final class SessionStore: Sendable {
    private let sessions = Mutex<[String: Session]>([:])
    private let runner: ActionRunner
    private let limits: ServerConfiguration

    init(runner: ActionRunner, limits: ServerConfiguration) {
        self.runner = runner
        self.limits = limits
    }

    var count: Int { sessions.withLock { $0.count } }

    func create(config: RefreshConfig) throws(APIError) -> Session {
        let session = Session(id: Self.newID(), config: config, runner: runner, limits: limits, now: .now)
        try sessions.withLock { (sessions) throws(APIError) in
            guard sessions.count < limits.maxSessions else {
                throw APIError(
                    .serviceUnavailable, "too_many_sessions",
                    "The server holds its maximum of \(limits.maxSessions) sessions; try again shortly.",
                    retryAfter: 5)
            }
            sessions[session.id] = session
        }
        return session
    }

    func session(_ id: String) throws(APIError) -> Session {
        guard let session = sessions.withLock({ $0[id] }) else { throw .sessionNotFound(id) }
        return session
    }

    /// Ends a session; `false` when there was none.
    func end(_ id: String) -> Bool {
        guard let session = sessions.withLock({ $0.removeValue(forKey: id) }) else { return false }
        session.end()
        return true
    }

    /// Ends every session unused for longer than the idle timeout; answers how many.
    @discardableResult
    func expireIdle(now: ContinuousClock.Instant = .now) -> Int {
        let deadline = now - limits.sessionIdleTimeout
        let expired = sessions.withLock { sessions -> [Session] in
            let idle = sessions.values.filter { $0.isIdle(since: deadline) }
            for session in idle { sessions.removeValue(forKey: session.id) }
            return idle
        }
        for session in expired { session.end() }
        return expired.count
    }

    /// The keepalive tick for every open stream.
    func tick() {
        for session in sessions.withLock({ Array($0.values) }) { session.tick() }
    }

    /// 128 random bits, hex: unguessable, so a session id is its own capability.
    private static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        func pad(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return pad(high) + pad(low)
    }
}
