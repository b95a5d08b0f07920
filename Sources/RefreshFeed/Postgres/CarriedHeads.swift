import Synchronization

/// The heads notices carried, per feed, on their way to the subscriber. A notice that carries
/// its head needs no read, but telling a feed's sessions takes a while on a crowded instance:
/// handed over one notice at a time, a feed published to faster than its fan-out would fall
/// behind for ever, and every other feed's news would wait behind it. So each feed has at most
/// one hand-over running, and the notices that come meanwhile keep only the newest head: a
/// burst costs two fan-outs whatever its size, as when each notice meant a read of the head.
final class CarriedHeads: Sendable {
    /// The newest head of each feed with a hand-over running.
    private let newest = Mutex<[FeedName: FeedHead]>([:])

    /// Keeps `head` as `feed`'s newest; `true` when no hand-over runs for `feed`, and the
    /// caller must start one.
    func offer(_ head: FeedHead, in feed: FeedName) -> Bool {
        newest.withLock { newest in
            guard let kept = newest[feed] else {
                newest[feed] = head
                return true
            }
            if head.position > kept.position { newest[feed] = head }
            return false
        }
    }

    /// The head to hand over after `delivered` (`nil` before the first); `nil` once the
    /// newest is handed over, which ends the hand-over.
    func next(in feed: FeedName, after delivered: FeedPosition?) -> FeedHead? {
        newest.withLock { newest in
            guard let kept = newest[feed] else { return nil }
            if let delivered, kept.position <= delivered {
                newest[feed] = nil
                return nil
            }
            return kept
        }
    }
}
