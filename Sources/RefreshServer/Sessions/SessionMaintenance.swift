import ServiceLifecycle

/// Background upkeep of the sessions: keepalive comments on idle streams, and the end of
/// sessions nobody uses any more. One loop for all sessions, instead of a timer per stream.
struct SessionMaintenance: Service {
    let sessions: SessionStore
    let keepaliveInterval: Duration

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: keepaliveInterval)
                    sessions.tick()
                    sessions.expireIdle()
                }
            }
        } catch is CancellationError {
            return
        }
    }
}
