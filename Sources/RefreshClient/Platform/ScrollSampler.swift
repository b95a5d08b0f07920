import RefreshEngine

/// Turns what a scroll view reports, one change at a time, into the samples a
/// ``RemoteSession`` takes: the phase from whether a finger is on the list, the offset with
/// the inset above the content taken out.
///
/// UIKit and SwiftUI report a finger that lifts only as a change of state (`isDragging`
/// turning false, the scroll phase leaving `interacting`), never as an offset of its own; the
/// engine needs that moment as a sample with the `release` phase, because a release past the
/// threshold is what starts a refresh in the `release` trigger mode. This keeps the one bit
/// of memory that finds it, so that both platforms' code stays a few lines of forwarding.
///
/// Both heights go with every sample, as the page sends them: a newer position replaces a
/// queued one in the session's queue, so a height carried by one sample alone could be
/// replaced before it leaves.
public struct ScrollSampler: Sendable, Equatable {
    /// The distance from the scroll view's top to its content's top at rest (UIKit's
    /// `adjustedContentInset.top`, SwiftUI's `contentInsets.top`): the offset the engine reads
    /// is `0` at rest whatever the navigation bar's height.
    public var topInset: Double
    private var dragging = false
    private var previous: Sample?

    public init(topInset: Double = 0) {
        self.topInset = topInset
    }

    /// The sample to post for the scroll view's geometry now, or `nil` when nothing changed
    /// since the previous one (a layout pass reports the same offset again). The first report
    /// without a finger after reports with one is the release.
    public mutating func scrolled(offset: Double, contentHeight: Double, viewportHeight: Double, isDragging: Bool) -> Sample? {
        let phase: Sample.Phase = isDragging ? .drag : dragging ? .release : .scroll
        dragging = isDragging
        return emit(Sample(seq: 0, y: offset + topInset, phase: phase, contentHeight: contentHeight, viewportHeight: viewportHeight))
    }

    /// The release, when the platform says the finger lifts before the offset changes again
    /// (UIKit's `scrollViewWillEndDragging`); `nil` when no finger was on the list, or its
    /// release was already sampled.
    public mutating func released(offset: Double, contentHeight: Double, viewportHeight: Double) -> Sample? {
        guard dragging else { return nil }
        return scrolled(offset: offset, contentHeight: contentHeight, viewportHeight: viewportHeight, isDragging: false)
    }

    private mutating func emit(_ sample: Sample) -> Sample? {
        // A release is never skipped: it is what the engine waits for, even at the same offset.
        if sample.phase != .release, let previous, previous.y == sample.y, previous.phase == sample.phase,
            previous.contentHeight == sample.contentHeight, previous.viewportHeight == sample.viewportHeight
        {
            return nil
        }
        previous = sample
        return sample
    }
}

/// Posts a scroll view's samples to a session in the order they were taken. A task per
/// sample would not keep that order (tasks start in no promised order), and the queue numbers
/// samples as they arrive: a drag arriving after its release would move the list back.
final class SampleFeed: Sendable {
    private let continuation: AsyncStream<Sample>.Continuation

    init(session: RemoteSession) {
        let (samples, continuation) = AsyncStream.makeStream(of: Sample.self)
        self.continuation = continuation
        Task {
            for await sample in samples { _ = await session.post(sample) }
        }
    }

    func post(_ sample: Sample?) {
        if let sample { continuation.yield(sample) }
    }

    deinit {
        continuation.finish()
    }
}
