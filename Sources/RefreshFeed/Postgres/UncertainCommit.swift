import Logging
import PostgresNIO

/// A PostgreSQL transaction whose `COMMIT` was sent and whose answer was lost (the connection
/// dropped in between): it may have committed or not, and answering either way without
/// asking would either lose an acknowledged item or answer `503` for a stored one.
///
/// PostgreSQL keeps every recent transaction's fate: `txid_status` answers `committed`,
/// `aborted` or `in progress` for the id `txid_current()` gave inside it. While it is in
/// progress (the backend has not yet noticed that its client is gone), the backend is ended
/// with `pg_terminate_backend` once it has had its moment, which settles it either way.
///
/// It asks on a connection of its own, opened for each question, never through the pool:
/// after connections were lost, the pool may wait seconds before it makes new ones, and a
/// write that has sent its `COMMIT` must not wait on that without bound.
struct UncertainCommit: Sendable, Equatable {
    /// `txid_current()` inside the transaction: its id with the epoch, never reused.
    let transaction: Int64
    /// `pg_backend_pid()` of the connection that ran it.
    let backend: Int32

    enum Outcome: Equatable, Sendable {
        case committed
        case rolledBack
    }

    /// How long a transaction may stay in progress before its backend is ended: one that
    /// got its `COMMIT` finishes in milliseconds, one whose client vanished without a word
    /// might otherwise wait for TCP to notice.
    static let graceBeforeEnding: Duration = .seconds(1)

    /// Asks PostgreSQL until it knows the outcome, trying again while it cannot be reached;
    /// throws ``FeedStoreUnavailable`` when it still does not know after `limit`.
    func outcome(
        connect: @escaping @Sendable () async throws -> PostgresConnection, logger: Logger, within limit: Duration
    ) async throws -> Outcome {
        let started = ContinuousClock.now
        let deadline = started + limit
        var endAsked = false
        var pause: Duration = .milliseconds(20)
        while true {
            do {
                let status = try await Self.asking(connect, until: deadline) { connection in
                    try await self.status(on: connection, logger: logger)
                }
                switch status {
                case "committed": return .committed
                case "aborted": return .rolledBack
                case nil:
                    throw FeedStoreUnavailable(
                        "PostgreSQL no longer knows whether a write whose COMMIT was sent committed; retrying with the same ids stores each item once"
                    )
                default:
                    if !endAsked, ContinuousClock.now - started >= Self.graceBeforeEnding {
                        try await Self.asking(connect, until: deadline) { connection in try await self.end(on: connection, logger: logger) }
                        endAsked = true
                    }
                }
            } catch let error as FeedStoreUnavailable {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.debug("Could not ask PostgreSQL about a commit yet", metadata: ["error": "\(String(reflecting: error))"])
            }
            guard ContinuousClock.now < deadline else {
                throw FeedStoreUnavailable(
                    "PostgreSQL did not say within \(limit.secondsText) whether a write whose COMMIT was sent committed; retrying with the same ids stores each item once"
                )
            }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(500))
        }
    }

    /// Runs `question` on a fresh connection and closes it; one still busy at `deadline` is
    /// closed under the question, which then fails.
    private static func asking<T: Sendable>(
        _ connect: @Sendable () async throws -> PostgresConnection, until deadline: ContinuousClock.Instant,
        _ question: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await connect()
        let closer = Task {
            try await Task.sleep(until: deadline)
            try? await connection.close()
        }
        defer { closer.cancel() }
        do {
            let answer = try await question(connection)
            try? await connection.close()
            return answer
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// `committed`, `aborted`, `in progress`, or `nil` for a transaction too old to know.
    private func status(on connection: PostgresConnection, logger: Logger) async throws -> String? {
        let rows = try await connection.query("SELECT txid_status(\(transaction))", logger: logger)
        for try await status in rows.decode(String?.self) { return status }
        return nil
    }

    /// Ends the backend if it still runs this transaction (a pid alone could have been reused).
    private func end(on connection: PostgresConnection, logger: Logger) async throws {
        let xid = String(transaction & 0xFFFF_FFFF)
        logger.notice("Ending the PostgreSQL backend of a transaction whose COMMIT's answer was lost", metadata: ["pid": "\(backend)"])
        try await connection.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = \(backend) AND backend_xid::text = \(xid)", logger: logger)
    }
}
