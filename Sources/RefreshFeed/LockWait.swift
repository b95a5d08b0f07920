import Foundation
import Synchronization

/// How long SQLite waits for a database lock that another process holds: each write until its
/// own deadline, counted from when it reached the store, so that writes queued behind one
/// that waits do not each wait the whole time again (five publishes behind a held lock are
/// all answered within one deadline, not one after another).
///
/// SQLite calls ``shouldRetry(tries:)`` from its busy handler on the connection that found
/// the lock taken; the writer sets the deadline around each write (``waiting(until:_:)``).
/// Writes run one at a time on the writer, so there is one deadline at a time. A connection
/// no write covers (a reader, a migration at start-up) waits ``fallback`` per lock.
final class LockWait: Sendable {
    /// How long a wait no write covers may last.
    let fallback: Duration
    private let deadline = Mutex<ContinuousClock.Instant?>(nil)
    /// Between two tries: SQLite tries again as soon as the handler returns.
    private static let pause: Duration = .milliseconds(5)

    init(fallback: Duration) {
        self.fallback = fallback
    }

    /// The lock's time is up before the write has started: it is answered at once.
    struct Expired: Error {}

    /// Runs `body` with `deadline` as the end of any wait for a lock; throws ``Expired``
    /// without running it when the deadline has passed already.
    func waiting<T>(until deadline: ContinuousClock.Instant, _ body: () throws -> T) throws -> T {
        guard ContinuousClock.now < deadline else { throw Expired() }
        self.deadline.withLock { $0 = deadline }
        defer { self.deadline.withLock { $0 = nil } }
        return try body()
    }

    /// Whether SQLite should try again for the lock: sleeps a little first when it may.
    func shouldRetry(tries: Int) -> Bool {
        let now = ContinuousClock.now
        let end = deadline.withLock { $0 }
        let remaining = end.map { $0 - now } ?? (fallback - Self.pause * tries)
        guard remaining > .zero else { return false }
        let pause = min(remaining, Self.pause)
        Thread.sleep(forTimeInterval: Double(pause.components.attoseconds) / 1e18 + Double(pause.components.seconds))
        return true
    }
}
