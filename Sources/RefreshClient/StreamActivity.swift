import Synchronization

/// What one read of a session's stream has seen, shared by the task that reads it and the
/// watchdog beside it: when bytes last came (a keepalive comment counts), and how many
/// events were handed on.
final class StreamActivity: Sendable {
    private let state = Mutex((lastBytes: ContinuousClock.now, events: 0))

    func bytesArrived() {
        state.withLock { $0.lastBytes = .now }
    }

    func eventDelivered() {
        state.withLock { $0.events += 1 }
    }

    var silence: Duration { state.withLock { .now - $0.lastBytes } }

    var events: Int { state.withLock { $0.events } }
}
