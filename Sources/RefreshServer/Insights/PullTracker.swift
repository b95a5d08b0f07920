import RefreshEngine

/// Follows one session's pulls and says what each came to when it ends. A value the
/// session's machine holds beside its engine: it measures each sample's pull as the engine
/// does (the rest position, the edges' reach), and takes what the engine decided of a
/// request's samples (armed, the job started) for the pull they belong to, so a sample costs
/// a few comparisons and no allocation, and nothing is kept once a pull is told.
///
/// A pull is measured sample by sample, not from the state after a request: the page sends
/// a release and the rest position after it in one request, and the distance at release is
/// the release's.
struct PullTracker: Sendable, Equatable {
    /// A trigger this soon after the one before (page milliseconds) is counted `retriggered`.
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

    private let topEnabled: Bool
    private let bottomEnabled: Bool
    private let firstSampleIsRest: Bool
    private var state = State.resting
    /// What the samples said last (each is sent when it changes).
    private var rest: Double?
    private var contentHeight: Double?
    private var viewportHeight: Double?
    private var input: Sample.Input?
    /// When the last pull started an action, on the page's clock.
    private var lastTrigger: Double?
    /// The newest sample followed: one sent again (a retry whose first answer was lost) is
    /// ignored by the engine, and by the tracker alike.
    private var lastSeq: Int?

    init(config: RefreshConfig) {
        topEnabled = config.top.enabled
        bottomEnabled = config.bottom.enabled
        firstSampleIsRest = config.baseline == .firstSample
    }

    /// The samples of one request were applied: `gesture` is the state the engine answered,
    /// `started` the job they started, if any. Answers the pull that ended with them.
    mutating func samplesApplied(_ samples: [ValidSample], gesture: GestureState, started: Job?) -> PullRecord? {
        var ended: (pull: Pull, release: Double?, at: Double)?
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
                state = .pulling(Pull(edge: top > 0 ? .top : .bottom, start: sample.t, farthest: max(top, bottom)))
            case .pulling(var pull):
                let distance = pull.edge == .top ? top : bottom
                pull.farthest = max(pull.farthest, distance)
                if sample.phase == .release || distance == 0 {
                    ended = (pull, sample.phase == .release ? distance : nil, sample.t)
                    state = .resting
                } else {
                    state = .pulling(pull)
                }
            }
        }
        // What the engine decided of these samples is the pull's they belong to.
        if var pull = ended?.pull {
            decided(&pull, gesture: gesture, started: started, at: last)
            ended?.pull = pull
        } else if case .pulling(var pull) = state {
            decided(&pull, gesture: gesture, started: started, at: last)
            state = .pulling(pull)
        }
        guard let ended else { return nil }
        return PullRecord(
            input: input, band: ViewportBand(viewportHeight: viewportHeight), armed: ended.pull.armed, trigger: ended.pull.trigger,
            retriggered: ended.pull.retriggered, farthest: ended.pull.farthest, releaseDistance: ended.release,
            duration: ended.release == nil ? nil : max(0, ended.at - ended.pull.start))
    }

    private mutating func decided(_ pull: inout Pull, gesture: GestureState, started: Job?, at time: Double) {
        if gesture.phase == .armed, gesture.edge == pull.edge { pull.armed = true }
        guard let started, started.origin == .pull else { return }
        // In cross mode the crossing is the arming.
        pull.armed = true
        pull.trigger = started.kind
        if let lastTrigger, time - lastTrigger < Self.retriggerWindow { pull.retriggered = true }
        lastTrigger = time
    }

    /// How far the offset `y` is pulled past each enabled edge, as the engine measures it.
    private mutating func distances(_ y: Double) -> (top: Double, bottom: Double) {
        let rest = self.rest ?? (firstSampleIsRest ? y : 0)
        self.rest = rest
        let offset = y - rest
        let top = topEnabled ? max(0, -offset) : 0
        var bottom = 0.0
        if bottomEnabled, let contentHeight, let viewportHeight, contentHeight > viewportHeight {
            bottom = max(0, offset - (contentHeight - viewportHeight))
        }
        return (top, bottom)
    }
}
