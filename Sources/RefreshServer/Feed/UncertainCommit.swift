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
    func outcome(client: PostgresClient, logger: Logger, within limit: Duration) async throws -> Outcome {
        let started = ContinuousClock.now
        var endAsked = false
        var pause: Duration = .milliseconds(20)
        while true {
            do {
                switch try await status(client, logger) {
                case "committed": return .committed
                case "aborted": return .rolledBack
                case nil:
                    throw FeedStoreUnavailable(
                        "PostgreSQL no longer knows whether a write whose COMMIT was sent committed; retrying with the same ids stores each item once"
                    )
                default:
                    if !endAsked, ContinuousClock.now - started >= Self.graceBeforeEnding {
                        try await end(client, logger)
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
            guard ContinuousClock.now - started < limit else {
                throw FeedStoreUnavailable(
                    "PostgreSQL did not say within \(ActionRunner.describe(limit)) whether a write whose COMMIT was sent committed; retrying with the same ids stores each item once"
                )
            }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(500))
        }
    }

    /// `committed`, `aborted`, `in progress`, or `nil` for a transaction too old to know.
    private func status(_ client: PostgresClient, _ logger: Logger) async throws -> String? {
        let rows = try await client.query("SELECT txid_status(\(transaction))", logger: logger)
        for try await status in rows.decode(String?.self) { return status }
        return nil
    }

    /// Ends the backend if it still runs this transaction (a pid alone could have been reused).
    private func end(_ client: PostgresClient, _ logger: Logger) async throws {
        let xid = String(transaction & 0xFFFF_FFFF)
        logger.notice("Ending the PostgreSQL backend of a transaction whose COMMIT's answer was lost", metadata: ["pid": "\(backend)"])
        try await client.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = \(backend) AND backend_xid::text = \(xid)", logger: logger)
    }
}
