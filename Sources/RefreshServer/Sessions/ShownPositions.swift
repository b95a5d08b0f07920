import RefreshFeed
import Synchronization

/// The positions a session's page shows (`0...0` while none), kept on every step of the
/// session: the fan-out of a change reads them without the session's lock, so a change
/// elsewhere in the feed wakes no session. A window that moves meanwhile catches up on what
/// it missed of the log by itself.
struct ShownPositions: ~Copyable, Sendable {
    private let low = Atomic<FeedPosition>(0)
    private let high = Atomic<FeedPosition>(0)

    func store(_ positions: ClosedRange<FeedPosition>?) {
        let shown = positions ?? 0...0
        low.store(shown.lowerBound, ordering: .relaxed)
        high.store(shown.upperBound, ordering: .relaxed)
    }

    /// Whether a change may concern the positions shown.
    func mayBeChanged(by payloads: ChangePayloads) -> Bool {
        let low = low.load(ordering: .relaxed)
        return payloads.mayConcern(low > 0 ? low...high.load(ordering: .relaxed) : nil)
    }
}
