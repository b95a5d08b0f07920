import RefreshEngine

/// Follows one session's pulls and says what each came to when it ends. A value the
/// session's machine holds beside its engine: it measures each sample's pull as the engine
/// does (the rest position, the edges' reach, the threshold in force for the viewport the
/// sample reports), and takes the job the engine started from a request's samples for the
/// pull that started it, so a sample costs a few comparisons and no allocation, and nothing
/// is kept once a pull is told.
///
/// A pull is measured sample by sample, not from the state after a request: one request can
/// hold a release and the rest after it (the page sends them together), a pull that armed and
/// came back, or the end of one pull and the start of the next, and each pull is told as it
/// went.
struct PullTracker: Sendable, Equatable {
    /// A trigger this soon after the one before of the same kind (page milliseconds) is
    /// counted `retriggered`.
    static let retriggerWindow = 10_000.0

    private struct Pull: Sendable, Equatable {
        var edge: Edge
        var start: Double
        var farthest: Double
        var armed = false
        var trigger: ActionKind?
        var retriggered = false
    }

    private enum State: Sendable, Equatable {
        case resting
        case pulling(Pull)
    }

    private let topThreshold: RefreshConfig.Threshold?
    private let bottomThreshold: RefreshConfig.Threshold?
    private let firstSampleIsRest: Bool
    private var state = State.resting
    /// What the samples said last (each is sent when it changes).
    private var rest: Double?
    private var contentHeight: Double?
    private var viewportHeight: Double?
    private var input: Sample.Input?
    /// When the last refresh and the last load-more a pull started began, on the page's clock.
    private var lastRefresh: Double?
    private var lastLoadMore: Double?
    /// The newest sample followed: one sent again (a retry whose first answer was lost) is
    /// ignored by the engine, and by the tracker alike.
    private var lastSeq: Int?

    init(config: RefreshConfig) {
        topThreshold = config.top.enabled ? config.top.threshold : nil
        bottomThreshold = config.bottom.enabled ? config.bottom.threshold : nil
        firstSampleIsRest = config.baseline == .firstSample
    }

    /// The samples of one request were applied, and the engine started `started` from them
    /// (if it did). Answers the pulls that ended with them, in order.
    mutating func samplesApplied(_ samples: [ValidSample], started: Job?) -> [PullRecord] {
        var ended: [(pull: Pull, release: Double?, at: Double)] = []
        var last = 0.0
        for valid in samples {
            // The sample itself, not its fields through the key paths of `ValidSample`'s
            // dynamic members: those cost more than the engine's whole decision.
            let sample = valid.sample
            if let lastSeq, sample.seq <= lastSeq { continue }
            lastSeq = sample.seq
            if let input = sample.input { self.input = input }
            if let height = sample.viewportHeight { viewportHeight = height }
            if let height = sample.contentHeight { contentHeight = height }
            last = sample.t
            let (top, bottom) = distances(sample.y)
            switch state {
            case .resting:
                // Momentum that overshoots an edge is no pull.
                guard sample.phase != .scroll, top > 0 || bottom > 0 else { continue }
                let edge: Edge = top > 0 ? .top : .bottom
                var pull = Pull(edge: edge, start: sample.t, farthest: max(top, bottom))
                pull.armed = pull.farthest >= threshold(edge)
                state = .pulling(pull)
            case .pulling(var pull):
                let distance = pull.edge == .top ? top : bottom
                pull.farthest = max(pull.farthest, distance)
                // Past the threshold is armed (in cross mode, the crossing).
                if distance >= threshold(pull.edge) { pull.armed = true }
                if sample.phase == .release || distance == 0 {
                    ended.append((pull, sample.phase == .release ? distance : nil, sample.t))
                    state = .resting
                } else {
                    state = .pulling(pull)
                }
            }
        }
        if let started, started.origin == .pull { startedByPull(started.kind, &ended, at: last) }
        return ended.map { ended in record(ended.pull, release: ended.release, at: ended.at) }
    }

    /// The session ended (the page left, it expired) with a pull under way: it is told as a
    /// pull that was never released.
    mutating func sessionEnded() -> PullRecord? {
        guard case .pulling(let pull) = state else { return nil }
        state = .resting
        return record(pull, release: nil, at: pull.start)
    }

    /// The job a request's samples started is the last armed pull's of its edge among them:
    /// the one that fired it (a release past the threshold, a crossing), however many pulls
    /// ended before it in the same request.
    private mutating func startedByPull(_ kind: ActionKind, _ ended: inout [(pull: Pull, release: Double?, at: Double)], at time: Double) {
        let edge: Edge = kind == .refresh ? .top : .bottom
        func fired(_ pull: inout Pull) {
            pull.armed = true
            pull.trigger = kind
            let previous = kind == .refresh ? lastRefresh : lastLoadMore
            // Only forward on the page's clock: one that went back (a reload, a sender without
            // `t`) says nothing of how soon the second came.
            if let previous, time >= previous, time - previous < Self.retriggerWindow { pull.retriggered = true }
            if kind == .refresh { lastRefresh = time } else { lastLoadMore = time }
        }
        if case .pulling(var pull) = state, pull.edge == edge, pull.armed {
            fired(&pull)
            state = .pulling(pull)
        } else if let index = ended.lastIndex(where: { $0.pull.edge == edge && $0.pull.armed }) {
            fired(&ended[index].pull)
        } else if case .pulling(var pull) = state, pull.edge == edge {
            fired(&pull)
            state = .pulling(pull)
        } else if let index = ended.lastIndex(where: { $0.pull.edge == edge }) {
            fired(&ended[index].pull)
        }
    }

    private func record(_ pull: Pull, release: Double?, at time: Double) -> PullRecord {
        PullRecord(
            input: input, band: ViewportBand(viewportHeight: viewportHeight), armed: pull.armed, trigger: pull.trigger,
            retriggered: pull.retriggered, farthest: pull.farthest, releaseDistance: release,
            duration: release == nil ? nil : max(0, time - pull.start))
    }

    /// The edge's threshold in force for the viewport the samples last reported.
    private func threshold(_ edge: Edge) -> Double {
        let threshold = edge == .top ? topThreshold : bottomThreshold
        return threshold?.points(viewportHeight: viewportHeight) ?? .infinity
    }

    /// How far the offset `y` is pulled past each enabled edge, as the engine measures it.
    private mutating func distances(_ y: Double) -> (top: Double, bottom: Double) {
        let rest = self.rest ?? (firstSampleIsRest ? y : 0)
        self.rest = rest
        let offset = y - rest
        let top = topThreshold != nil ? max(0, -offset) : 0
        var bottom = 0.0
        if bottomThreshold != nil, let contentHeight, let viewportHeight, contentHeight > viewportHeight {
            bottom = max(0, offset - (contentHeight - viewportHeight))
        }
        return (top, bottom)
    }
}
