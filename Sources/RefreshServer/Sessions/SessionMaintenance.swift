import RefreshFeed
import ServiceLifecycle

/// Background upkeep of the sessions: keepalive comments on idle streams, the end of
/// sessions nobody uses any more, and a look at the head of every feed with sessions, in case an item came by a
/// path that did not say so (another process writing to the store). One loop for all
/// sessions, instead of a timer per stream.
struct SessionMaintenance: Service {
    let sessions: SessionStore
    let feeds: FeedRegistry
    let keepaliveInterval: Duration

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: keepaliveInterval)
                    sessions.tick()
                    sessions.expireIdle()
                    await feeds.catchUpAll()
                }
            }
        } catch is CancellationError {
            return
        }
    }
}
