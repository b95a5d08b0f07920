import Synchronization

/// What notices said changed in each feed, on their way to the subscriber in commit order. A
/// feed has at most one hand-over running; the notices that come meanwhile queue behind it,
/// so the subscriber hears them in the order they committed, and a long queue (a subscriber
/// slower than the commits) is folded into one "read what changed" that reaches its newest.
final class CarriedChanges: Sendable {
    /// One notice's news: the versions it spans and the changes it carried.
    struct Notice: Equatable, Sendable {
        var from: FeedVersion?
        var version: FeedVersion
        var changes: [FeedChange]?
    }

    /// The notices of each feed with a hand-over running, oldest first.
    private let queued = Mutex<[FeedName: [Notice]]>([:])

    /// The most notices a feed keeps waiting before they are folded into one read.
    static let longestQueue = 64

    /// Queues `notice`; `true` when no hand-over runs for `feed`, and the caller must start one.
    func offer(_ notice: Notice, in feed: FeedName) -> Bool {
        queued.withLock { queued in
            guard var waiting = queued[feed] else {
                queued[feed] = []
                queued[feed]?.append(notice)
                return true
            }
            if waiting.count >= Self.longestQueue {
                waiting = [Notice(from: nil, version: max(notice.version, waiting.last?.version ?? 0), changes: nil)]
            } else {
                waiting.append(notice)
            }
            queued[feed] = waiting
            return false
        }
    }

    /// The next notice to hand over; `nil` once none waits, which ends the hand-over.
    func next(in feed: FeedName) -> Notice? {
        queued.withLock { queued in
            guard var waiting = queued[feed], !waiting.isEmpty else {
                queued[feed] = nil
                return nil
            }
            let notice = waiting.removeFirst()
            queued[feed] = waiting
            return notice
        }
    }
}
