import NIOCore
import RefreshEngine
import RefreshFeed
import Synchronization

/// One list on one page: its ``SessionMachine`` (the gesture engine, the event log, the
/// window the page shows), and the work the machine decides, performed.
///
/// The machine sits in one `Mutex`, held only while it decides (never across I/O, an
/// `await` or the start of a task), so a sample goes route → engine → event log on the
/// connection's event loop, and the streams are woken on theirs, with no task or actor in
/// between. Tasks, the hub's list of streams and the metrics are reached after the lock is
/// let go.
public final class Session: Sendable, NewsListener {
    public let id: String
    public let config: RefreshConfig
    /// The address that created it, whose per-client limit it counts against.
    let client: String
    /// Whose it is: `nil` when it was created without a token.
    let owner: SessionOwner?
    private let services: Services
    /// Where its pulls are counted, once each ends.
    private let pulls: PullInsights.Recorder?
    private let state: Mutex<State>
    /// The positions the page shows, for the fan-out of a change to read without the lock.
    private let shown = ShownPositions()

    /// The machine and the work it decided that is not yet done. One caller at a time
    /// performs that work (`performing`), in the order decided, outside the lock: a task is
    /// started before another step can stop it, a stream group opened before it is closed.
    private struct State: Sendable {
        var machine: SessionMachine
        var performing = false
        /// Made when the session first needs them: most sessions never start a task.
        var tasks: SessionTasks?
    }

    private var tasks: SessionTasks { state.withLock { $0.tasks.made(SessionTasks.init) } }

    init(
        id: String, config: RefreshConfig, client: String, owner: SessionOwner? = nil, services: Services, limits: SessionSettings,
        pulls: PullInsights.Recorder? = nil, now: ContinuousClock.Instant
    ) {
        self.id = id
        self.pulls = pulls
        self.config = config
        self.client = client
        self.owner = owner
        self.services = services
        self.state = Mutex(
            State(
                machine: SessionMachine(
                    config: config, news: services.news,
                    log: EventLog(capacity: limits.replayBufferLength, maxBytes: limits.replayBufferBytes),
                    bucket: TokenBucket(rate: limits.maxSamplesPerSecond, now: now), now: now)))
    }

    /// The feed the session reads.
    var feed: FeedName { services.name }

    // MARK: - Inputs

    /// Applies samples (validated where they were decoded) and answers the bytes of the
    /// `state` event they caused, not a second encoding.
    func applySamples(_ samples: [ValidSample], now: ContinuousClock.Instant) throws(APIError) -> ByteBuffer {
        try step { (machine) throws(APIError) in try machine.samples(samples, now: now) }
    }

    func requestRefresh(now: ContinuousClock.Instant) -> ActionID {
        step { $0.refreshRequested(now: now) }
    }

    func requestLoadMore(now: ContinuousClock.Instant) throws(APIError) -> ActionID {
        try step { (machine) throws(APIError) in try machine.loadMoreRequested(now: now) }
    }

    /// Cancels the refresh in flight; answers its id, or `nil` when none was running.
    func cancelRefresh(now: ContinuousClock.Instant) -> ActionID? {
        step { $0.cancelRequested(now: now) }
    }

    /// Progress of `job`, if it still runs.
    func progress(_ job: Job, fraction: Double, stage: String, message: String) {
        step { $0.progress(job, fraction: fraction, stage: stage, message: message) }
    }

    /// `job` ended: its items and `done` reach the page, unless it was cancelled or superseded.
    func finish(_ job: Job, _ end: ActionEnd) {
        step { $0.finished(job, end) }
    }

    var gestureState: GestureState { state.withLock { $0.machine.engine.gestureState } }
    var ignoredSamples: Int { state.withLock { $0.machine.engine.ignoredSamples } }
    var openStreams: Int { state.withLock { $0.machine.log.openStreams } }

    /// A feed that had no session here knows no head yet: reads it, so that a page resumed on
    /// it is told at once what it missed, not at the next publish or poll.
    func readHeadIfUnknown() async {
        if services.news.head == nil { await services.news.catchUp() }
    }

    /// The page already shows items, from a session it had elsewhere (its instance went away,
    /// or forgot it): this session takes them as shown.
    func resume(showing window: PageWindow) {
        step { $0.resumed(showing: window) }
    }

    /// The page was given the feed's first page with its session, not by a load-more.
    func show(firstPage page: FeedPage) {
        step { $0.firstPageShown(page) }
    }

    /// The feed's head moved. Called on an event loop the session has streams on, whose
    /// streams then write at once; a session with nothing to tell wakes none.
    func headAdvanced(_ payloads: NewsPayloads) {
        step { $0.headAdvanced(payloads) }
    }

    /// Whether a change may concern the window, read without the lock.
    func mayBeChanged(by payloads: ChangePayloads) -> Bool {
        shown.mayBeChanged(by: payloads)
    }

    /// Items of the window were edited or removed, or the news the page was told counts an
    /// item that is gone: the page is told, on an event loop the session has streams on.
    func feedChanged(_ payloads: ChangePayloads) {
        step { $0.feedChanged(payloads) }
    }

    // MARK: - Streams

    /// Opens a stream. With `lastEventID`, the first events are the replay of what it missed
    /// (a `reset` and a fresh state if they are gone); without, a state snapshot. `nil` when
    /// the session has ended.
    func subscribe(
        _ listener: any EventListener, lastEventID: UInt64?, now: ContinuousClock.Instant
    ) -> (initial: [ServerEvent], cursor: UInt64)? {
        step { $0.streamOpened(listener, lastEventID: lastEventID, now: now) }
    }

    /// The events after `cursor` for a stream that fell behind what its wake-ups brought,
    /// with what the metrics count; `nil` when the log has nothing after `known` (what the
    /// caller already looked up for this cursor).
    func delivery(after cursor: UInt64, unlessThrough known: UInt64? = nil) -> Delivery? {
        step { $0.delivery(after: cursor, unlessThrough: known) }
    }

    /// The metrics of the server the session lives in.
    var metrics: ServerMetrics { services.metrics }

    func unsubscribe(_ listener: any EventListener, now: ContinuousClock.Instant) {
        step { $0.streamClosed(listener, now: now) }
    }

    /// Wakes idle streams so they send a keepalive comment.
    func tick() {
        state.withLock { $0.machine.log.tick() }?.fire()
    }

    // MARK: - Lifetime

    /// Whether the session has been unused, with no stream open, since `deadline`.
    func isIdle(since deadline: ContinuousClock.Instant) -> Bool {
        state.withLock { $0.machine.isIdle(since: deadline) }
    }

    /// Stops its actions and closes its streams. Its tasks stop before this returns, even
    /// when another caller is performing the work the end decided.
    func end() {
        step { $0.end() }?.fire()
        tasks.close()
    }

    // MARK: - Performing

    /// Every input goes through here: the machine decides under the lock; then, outside it,
    /// the streams are woken once for all the events the step appended, the metrics count,
    /// and the work decided is done.
    private func step<Result, Failure: Error>(_ body: (inout SessionMachine) throws(Failure) -> Result) throws(Failure) -> Result {
        var wakeup: Wakeup?
        var counts = SessionMachine.Counts()
        var work: [SessionMachine.Action] = []
        defer {
            // Counted before the streams are woken: whoever sees an event sees it counted.
            if counts != SessionMachine.Counts() { services.metrics.count(counts) }
            for pull in counts.pulls { pulls?.record(pull) }
            wakeup?.fire()
            if !work.isEmpty { perform(work) }
        }
        return try state.withLock { (state) throws(Failure) -> Result in
            defer {
                wakeup = state.machine.log.takeAnnouncement(sampleArrival: state.machine.sampleArrival)
                state.machine.sampleArrival = nil
                swap(&counts, &state.machine.counts)
                if !state.performing, !state.machine.actions.isEmpty {
                    state.performing = true
                    work = state.machine.takeActions()
                }
                shown.store(state.machine.window.positions)
            }
            return try body(&state.machine)
        }
    }

    /// Does the work decided, then whatever was decided meanwhile, until none is left.
    private func perform(_ first: [SessionMachine.Action]) {
        var work = first
        while !work.isEmpty {
            for action in work { perform(action) }
            work = state.withLock { state in
                let next = state.machine.takeActions()
                if next.isEmpty { state.performing = false }
                return next
            }
        }
    }

    private func perform(_ action: SessionMachine.Action) {
        switch action {
        case .start(let job, let window):
            tasks.start(.action(job.id)) { [self] in
                await services.actions.run(job, window: window) { report in
                    switch report {
                    case .progress(let fraction, let stage, let message): self.progress(job, fraction: fraction, stage: stage, message: message)
                    case .finished(let end): self.finish(job, end)
                    }
                }
            }
        case .cancel(let id):
            tasks.cancel(.action(id))
        case .readChanges(let segments, let window):
            tasks.start(.changes) { [self] in
                var reads: [FeedChanges?] = []
                for segment in segments { reads.append(await services.news.changes(since: segment.since, within: segment.positions)) }
                step { $0.changesRead(reads, for: segments, window: window) }
            }
        case .bringIn(let shown):
            tasks.start(.live) { [self] in
                let read = await services.news.added(after: shown, limit: services.pageSize)
                step { $0.broughtIn(read, after: shown) }
            }
        case .streamsOpened(let group):
            services.news.streamsOpened(group, of: self)
            // What the head did before the hub knew this session is caught up on, on the
            // streams' loop once the stream that opened them has its cursor.
            group.loop.execute { self.step { $0.catchUp() } }
        case .streamsClosed(let group):
            services.news.streamsClosed(group)
        case .stopAll:
            tasks.close()
        }
    }
}
