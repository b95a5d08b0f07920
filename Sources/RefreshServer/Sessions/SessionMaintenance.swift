import RefreshFeed
import ServiceLifecycle

/// Background upkeep of the sessions: keepalive comments on idle streams and the end of
/// sessions nobody uses any more, one loop for all sessions instead of a timer per stream;
/// and, beside it, a look at the head of every feed with sessions, in case an item came by a
/// path that did not say so (another process writing to the store).
///
/// The two loops are apart so that a store that stalls (each read may take its deadline)
/// never holds up a keepalive: a proxy in front closes a stream that stays silent too long.
/// With PostgreSQL the listener polls the heads itself, in one query: `catchUpInterval` is
/// then `nil`.
struct SessionMaintenance: Service {
    let sessions: SessionStore
    let feeds: FeedRegistry
    let keepaliveInterval: Duration
    let catchUpInterval: Duration?
    /// How long removals' tombstones are kept (`--change-retention`); they are forgotten a
    /// tenth of it (at most an hour) after that.
    var changeRetention: Duration = .seconds(7 * 24 * 3600)

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingDiscardingTaskGroup { group in
                    group.addTask {
                        while true {
                            try await Task.sleep(for: keepaliveInterval)
                            sessions.tick()
                            sessions.expireIdle()
                        }
                    }
                    group.addTask {
                        let every = min(changeRetention / 10, .seconds(3600))
                        while true {
                            try await Task.sleep(for: every)
                            let before = Timestamp.now().milliseconds - Int64(changeRetention.components.seconds * 1000)
                            _ = try? await feeds.main.forgetRemovals(before: Timestamp(milliseconds: before))
                        }
                    }
                    if let catchUpInterval {
                        group.addTask {
                            while true {
                                try await Task.sleep(for: catchUpInterval)
                                await feeds.catchUpAll()
                            }
                        }
                    }
                }
            }
        } catch is CancellationError {
            return
        }
    }
}
