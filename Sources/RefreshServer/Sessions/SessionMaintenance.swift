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
