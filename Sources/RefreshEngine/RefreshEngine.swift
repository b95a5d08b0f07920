/// The pull-to-refresh state machine of one list.
///
/// Feed it what happened (`sampleReceived`, `refreshRequested`, `actionFinished`, …); each
/// input returns the ``Effects`` its owner must perform. It performs no I/O, reads no clock
/// and never sleeps, so every behaviour can be tested with plain values.
///
/// Rules it keeps: at most one action at a time (a refresh supersedes a load-more; a
/// load-more waits for a refresh); an edge whose action ended while still pulled past its
/// threshold must come back under it before it triggers again; the indicator is held while
/// the action runs.
public struct RefreshEngine: Sendable {
    public let config: RefreshConfig

    /// Samples ignored because their `seq` was not newer than the last one applied.
    public private(set) var ignoredSamples = 0

    private var state: State
    private var geometry = Geometry()
    private var paging: Paging
    private var lastSeq: Int?
    private var lastActionID: UInt64 = 0

    /// Whether an edge may fire once its pull is past the threshold.
    enum Arming: Equatable, Sendable {
        /// Under the threshold, or past it only by momentum.
        case ready
        /// Past the threshold in release mode, waiting for the release.
        case armed
        /// Fired, or its action ended, while past the threshold: must come back under first.
        case spent
    }

    private enum State: Equatable, Sendable {
        /// No action runs; both edges track their pulls.
        case tracking(top: Arming, bottom: Arming)
        /// The top edge is held by its refresh; the bottom still tracks, but cannot fire.
        case refreshing(Job, bottom: Arming)
        /// The bottom edge is held by its load-more; a top pull still fires and supersedes it.
        case loadingMore(Job, top: Arming)
    }

    /// Whether the feed has older items to load, as the last action reported.
    private enum Paging: Equatable, Sendable {
        case more
        case exhausted
        /// The last load-more failed: infinite scroll pauses until a pull, a request or a refresh.
        case failed
    }

    /// The last known layout, and where the list rests.
    private struct Geometry: Equatable, Sendable {
        var y = 0.0
        var baseline: Double?
        var contentHeight: Double?
        var viewportHeight: Double?

        /// The offset from the rest position.
        var offset: Double { y - (baseline ?? 0) }

        var topDistance: Double { max(0, -offset) }

        /// `contentHeight - viewportHeight`, once both are known.
        var maxY: Double? {
            guard let contentHeight, let viewportHeight else { return nil }
            return contentHeight - viewportHeight
        }

        /// The content is taller than the viewport, so its end can be pulled past.
        var scrolls: Bool { (maxY ?? 0) > 0 }

        var bottomOverscroll: Double {
            guard let maxY, maxY > 0 else { return 0 }
            return max(0, offset - maxY)
        }
    }

    public init(config: RefreshConfig, hasMore: Bool = true) {
        self.config = config
        self.state = .tracking(top: .ready, bottom: .ready)
        self.paging = hasMore ? .more : .exhausted
    }

    /// The action running now, if any.
    public var runningJob: Job? {
        switch state {
        case .tracking: nil
        case .refreshing(let job, _), .loadingMore(let job, _): job
        }
    }

    /// No action runs, nothing is pulled and the list was last seen at its top: items put
    /// above it now appear where the reader is looking, without moving what they read.
    public var restsAtTop: Bool {
        guard case .tracking = state else { return false }
        return geometry.offset == 0
    }

    /// Whether the feed may have older items, as far as the engine knows.
    public var hasMore: Bool { paging != .exhausted }

    // MARK: - Inputs

    /// A sample arrived. Throws, changing nothing, for a value no page measures; ignores
    /// (and counts) a sample whose `seq` is not newer than the last applied.
    public mutating func sampleReceived(_ sample: Sample) throws(SampleError) -> Effects {
        apply(try ValidSample(sample))
    }

    /// Validates every sample first, then applies them in order: a batch with one bad
    /// sample changes nothing. The effects are merged; at most one job starts per batch
    /// because a started action holds its edge.
    public mutating func samplesReceived(_ samples: some Collection<Sample>) throws(SampleError) -> Effects {
        var valid: [ValidSample] = []
        valid.reserveCapacity(samples.count)
        for sample in samples { valid.append(try ValidSample(sample)) }
        return samplesReceived(valid)
    }

    /// Applies samples already validated, in order, merging their effects.
    public mutating func samplesReceived(_ samples: some Collection<ValidSample>) -> Effects {
        var merged = Effects()
        for sample in samples { merged.merge(apply(sample)) }
        return merged
    }

    private mutating func apply(_ valid: ValidSample) -> Effects {
        let sample = valid.sample
        if let lastSeq, sample.seq <= lastSeq {
            ignoredSamples += 1
            return .none
        }
        lastSeq = sample.seq
        geometry.y = sample.y
        if geometry.baseline == nil, config.baseline == .firstSample { geometry.baseline = sample.y }
        geometry.contentHeight = sample.contentHeight ?? geometry.contentHeight
        geometry.viewportHeight = sample.viewportHeight ?? geometry.viewportHeight

        var effects = Effects()
        switch state {
        case .tracking(var top, var bottom):
            let topFires = advance(&top, .top, phase: sample.phase, canFire: true)
            let bottomFires = advance(&bottom, .bottom, phase: sample.phase, canFire: !topFires)
            if topFires {
                effects.start = startRefresh(origin: .pull, bottom: bottom)
            } else if bottomFires {
                effects.start = startLoadMore(origin: .pull, top: top)
            } else if prefetchIsDue {
                effects.start = startLoadMore(origin: .prefetch, top: top)
            } else {
                state = .tracking(top: top, bottom: bottom)
            }
        case .refreshing(let job, var bottom):
            _ = advance(&bottom, .bottom, phase: sample.phase, canFire: false)
            state = .refreshing(job, bottom: bottom)
        case .loadingMore(let job, var top):
            if advance(&top, .top, phase: sample.phase, canFire: true) {
                effects.cancel = job
                effects.start = startRefresh(origin: .pull, bottom: settled(.bottom))
            } else {
                state = .loadingMore(job, top: top)
            }
        }
        effects.state = gestureState
        return effects
    }

    /// A refresh was asked for without a gesture (button, key, program). Joins the running
    /// refresh; supersedes a running load-more.
    public mutating func refreshRequested() -> RequestResult {
        switch state {
        case .refreshing(let job, _):
            return .joined(job)
        case .tracking(_, let bottom):
            let job = startRefresh(origin: .request, bottom: bottom)
            return .started(job, Effects(start: job, state: gestureState))
        case .loadingMore(let running, _):
            let job = startRefresh(origin: .request, bottom: settled(.bottom))
            return .started(job, Effects(cancel: running, start: job, state: gestureState))
        }
    }

    /// A load-more was asked for without a gesture. Joins a running load-more; refused
    /// while a refresh runs, since the refresh will reset paging anyway.
    public mutating func loadMoreRequested() -> RequestResult {
        switch state {
        case .refreshing(let job, _):
            return .refused(runningJob: job)
        case .loadingMore(let job, _):
            return .joined(job)
        case .tracking(let top, _):
            let job = startLoadMore(origin: .request, top: top)
            return .started(job, Effects(start: job, state: gestureState))
        }
    }

    /// The page shows the feed's first page, which it was given with its session rather than
    /// by a load-more: infinite scroll goes on only if the feed has older items. Nothing to
    /// draw changes, so there is no effect.
    public mutating func firstPageShown(hasMore: Bool) {
        paging = hasMore ? .more : .exhausted
    }

    /// Stop the running action of `kind`, if any. The engine forgets it at once, so a new
    /// one can start; the owner reports it `cancelled`.
    public mutating func cancelRequested(_ kind: ActionKind) -> Effects {
        switch state {
        case .refreshing(let job, let bottom) where kind == .refresh:
            state = .tracking(top: settled(.top), bottom: bottom)
            return Effects(cancel: job, state: gestureState)
        case .loadingMore(let job, let top) where kind == .loadMore:
            state = .tracking(top: top, bottom: settled(.bottom))
            return Effects(cancel: job, state: gestureState)
        default:
            return .none
        }
    }

    /// The action `id` ended. `hasMore` is the feed's word on older items, when the action
    /// learned it. A finished job the engine already forgot (cancelled, superseded) is ignored.
    ///
    /// A completed load-more does not prefetch again by itself: its items are not laid out
    /// yet, so the next sample, carrying the new heights, decides.
    public mutating func actionFinished(_ id: ActionID, outcome: Outcome, hasMore: Bool? = nil) -> Effects {
        switch state {
        case .refreshing(let job, let bottom) where job.id == id:
            state = .tracking(top: settled(.top), bottom: bottom)
            if outcome == .completed {
                // A refresh starts paging over from the newest items.
                paging = hasMore == false ? .exhausted : .more
            }
        case .loadingMore(let job, let top) where job.id == id:
            state = .tracking(top: top, bottom: settled(.bottom))
            switch outcome {
            case .completed: paging = hasMore == false ? .exhausted : .more
            case .failed: paging = .failed
            case .cancelled: break
            }
        default:
            return .none
        }
        return Effects(state: gestureState)
    }

    // MARK: - Transitions

    private mutating func nextID() -> ActionID {
        lastActionID += 1
        return ActionID(rawValue: lastActionID)
    }

    private mutating func startRefresh(origin: ActionOrigin, bottom: Arming) -> Job {
        let job = Job(id: nextID(), kind: .refresh, origin: origin)
        state = .refreshing(job, bottom: bottom)
        return job
    }

    private mutating func startLoadMore(origin: ActionOrigin, top: Arming) -> Job {
        let job = Job(id: nextID(), kind: .loadMore, origin: origin)
        state = .loadingMore(job, top: top)
        // An explicit load-more retries after a failure; the feed will say if it ended.
        if paging == .failed, origin != .prefetch { paging = .more }
        return job
    }

    /// Moves one edge's arming with its pull; returns whether the edge fires.
    private func advance(_ arming: inout Arming, _ edge: Edge, phase: Sample.Phase, canFire: Bool) -> Bool {
        let settings = settings(edge)
        let past = pullableDistance(edge) >= threshold(edge)
        switch arming {
        case .spent:
            if !past { arming = .ready }
            return false
        case .ready, .armed:
            guard past else {
                arming = .ready
                return false
            }
            // Momentum never starts an action, and leaves an armed edge armed.
            guard phase != .scroll else { return false }
            if settings.trigger == .release, phase != .release {
                arming = .armed
                return false
            }
            arming = .spent
            return canFire
        }
    }

    /// The arming an edge has once its action ends: it may not fire again while still past.
    private func settled(_ edge: Edge) -> Arming {
        pullableDistance(edge) >= threshold(edge) ? .spent : .ready
    }

    /// The edge's threshold in force: a `fit` one follows the viewport's last known height.
    public func threshold(_ edge: Edge) -> Double {
        settings(edge).threshold.points(viewportHeight: geometry.viewportHeight)
    }

    private func settings(_ edge: Edge) -> RefreshConfig.Edge {
        switch edge {
        case .top: config.top
        case .bottom: config.bottom
        }
    }

    /// The pull that counts for arming: zero for a disabled edge, and for a bottom edge
    /// whose content does not scroll.
    private func pullableDistance(_ edge: Edge) -> Double {
        guard settings(edge).enabled else { return 0 }
        return distance(edge)
    }

    private func distance(_ edge: Edge) -> Double {
        switch edge {
        case .top: geometry.topDistance
        case .bottom: geometry.bottomOverscroll
        }
    }

    /// Infinite scroll: the content's end is near the viewport's bottom (or the content
    /// does not fill the viewport) and the feed may have more. Never while pulling down.
    private var prefetchIsDue: Bool {
        guard config.prefetch, paging == .more, geometry.topDistance == 0,
            let maxY = geometry.maxY
        else { return false }
        return maxY <= 0 || maxY - geometry.offset <= config.prefetchDistance
    }

    // MARK: - Output

    /// What the page should draw now.
    public var gestureState: GestureState {
        let topPulled = config.top.enabled && geometry.topDistance > 0
        switch state {
        case .refreshing:
            return draw(.top, phase: .refreshing)
        case .loadingMore(_, let top) where topPulled:
            // A pull down during a load-more may supersede it: show that pull.
            return draw(.top, phase: phase(of: top, .top))
        case .loadingMore:
            return draw(.bottom, phase: .loading)
        case .tracking(let top, let bottom):
            if topPulled { return draw(.top, phase: phase(of: top, .top)) }
            if config.bottom.enabled, geometry.bottomOverscroll > 0 {
                return draw(.bottom, phase: phase(of: bottom, .bottom))
            }
            return .resting(seq: lastSeq)
        }
    }

    private func phase(of arming: Arming, _ edge: Edge) -> GestureState.Phase {
        switch arming {
        case .ready: distance(edge) > 0 ? .pulling : .idle
        case .armed: .armed
        case .spent: .idle
        }
    }

    private func draw(_ edge: Edge, phase: GestureState.Phase) -> GestureState {
        let settings = settings(edge)
        let distance = distance(edge)
        let threshold = threshold(edge)
        let acting = phase == .refreshing || phase == .loading
        let indicatorOffset = acting ? max(distance, settings.heldOffset) : distance
        let label =
            switch phase {
            case .idle: ""
            case .pulling: settings.labels.pull
            case .armed: settings.labels.release
            case .refreshing, .loading: settings.labels.active
            }
        return GestureState(
            edge: edge,
            phase: phase,
            pull: min(1, distance / threshold),
            distance: distance,
            rotation: config.rotation ? arrowRotation(distance: distance, threshold: threshold) : 0,
            indicatorOffset: indicatorOffset,
            reveal: min(0, indicatorOffset - settings.indicatorHeight),
            label: label,
            seq: lastSeq)
    }
}

extension Effects {
    /// Folds a later input's effects into this one's: a job cancelled later that was
    /// started earlier in the batch never needs starting, and the newest state wins.
    mutating func merge(_ later: Effects) {
        if let cancelled = later.cancel {
            if start == cancelled { start = nil } else { cancel = cancelled }
        }
        if let started = later.start { start = started }
        if let state = later.state { self.state = state }
    }
}
