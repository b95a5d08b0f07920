import NIOCore
import RefreshEngine
import RefreshFeed

/// The feed as a session reads it when it decides: its head, its count of new items and its
/// change log, each known in memory (``FeedNews`` holds them; a table test gives its own).
/// An object: every session holds one, as a reference rather than an existential's buffer.
protocol FeedHeadReading: AnyObject, Sendable {
    /// The newest position known, read without a lock.
    var position: FeedPosition { get }
    var head: FeedHead? { get }
    var changeLog: ChangeLog? { get }
    /// Items after `shown` up to `head`, less those removed.
    func count(after shown: FeedPosition, through head: FeedPosition) -> FeedPosition
}

extension FeedNews: FeedHeadReading {}

/// One session's decisions, as a value: it takes the session's inputs (samples, requests,
/// an action's progress and end, news and changes of its feed, the store's answers to its
/// reads, streams opening and closing, the end) and appends events to its log and the work
/// to do to ``actions``, as the engine answers effects and the connection actions.
/// ``Session`` holds it under a lock and performs the actions after letting the lock go;
/// the machine itself starts nothing and waits on nothing.
struct SessionMachine: Sendable {
    /// What the session does after a step, in the order decided: the work of other parts
    /// (tasks, the hub's list of streams), never done under the session's lock.
    enum Action: Sendable, Equatable {
        /// Run `job` against the list the page shows.
        case start(Job, window: PageWindow)
        /// Stop the task running the action (the engine has already forgotten it).
        case cancel(ActionID)
        /// Read what changed in each segment since its version; ``changesRead(_:for:window:)`` takes the answers.
        case readChanges([Segment], window: PageWindow)
        /// Live mode: read what the feed gained after a position; ``broughtIn(_:after:)`` takes it.
        case bringIn(after: FeedPosition)
        /// The first stream on an event loop opened: the hub tells the session there, and it catches up.
        case streamsOpened(LoopListeners)
        /// The last stream on an event loop closed.
        case streamsClosed(LoopListeners)
        /// The session ended: every task it started stops.
        case stopAll

        static func == (lhs: Action, rhs: Action) -> Bool {
            switch (lhs, rhs) {
            case (.start(let a, let x), .start(let b, let y)): a == b && x == y
            case (.cancel(let a), .cancel(let b)): a == b
            case (.readChanges(let a, let x), .readChanges(let b, let y)): a == b && x == y
            case (.bringIn(let a), .bringIn(let b)): a == b
            case (.streamsOpened(let a), .streamsOpened(let b)), (.streamsClosed(let a), .streamsClosed(let b)): a === b
            case (.stopAll, .stopAll): true
            default: false
            }
        }
    }

    /// A part of the window and the version the page shows it as.
    struct Segment: Sendable, Equatable {
        var positions: ClosedRange<FeedPosition>
        var since: FeedVersion
    }

    /// What the metrics count of a step, reported by the session outside its lock. Every
    /// session keeps one between steps, so its counts are 32 bits: one step counts far less.
    struct Counts: Sendable, Equatable {
        var samplesApplied: Int32 = 0
        var samplesIgnored: Int32 = 0
        var resets: [ServerMetrics.ResetCause] = []
        var changesSent: Int32 = 0
        var replayHits: Int32 = 0
        var replayMisses: Int32 = 0
        var coalesced: Int32 = 0
        var resumedByVersion: Int32 = 0
        /// The pulls that ended in this step, for the metrics and the insights.
        var pulls: [PullRecord] = []
    }

    /// Live mode bringing new items in without a refresh.
    enum LiveFetch: Sendable, Equatable {
        case idle
        case running
        /// The last fetch could not bring the items in (too many, or the store failed):
        /// the page is told by `news` until the head moves past this position.
        case gaveUp(at: FeedPosition)
    }

    /// How the page takes what the feed gains (the session's `config.news`).
    let newsMode: RefreshConfig.NewsMode
    let news: any FeedHeadReading
    var engine: RefreshEngine
    /// Follows the pulls the engine decides on, for the insights.
    var pulls: PullTracker
    var log: EventLog
    var window = PageWindow()
    /// Highest progress fraction sent for the running action: fractions never go back.
    var progressFloor: (ActionID, Double)?
    var bucket: TokenBucket
    var lastActive: ContinuousClock.Instant
    private(set) var ended = false
    /// The head the last `news` event told of: the same head is not told twice.
    var announced: FeedPosition = 0
    /// The count the last `news` event said: a removal among those items corrects it.
    var announcedCount: FeedPosition = 0
    var live = LiveFetch.idle
    /// A read of the store for what changed in the window is under way: while it runs, the
    /// log's moves wait for it.
    var readingChanges = false
    /// The versions the page shows its window as, by the event that brought each: a page
    /// that comes back past the replay buffer is told what changed since its own.
    var pageVersions = PageVersions()
    /// When the samples request behind the `state` event just appended arrived: its
    /// wake-up carries it to the stream that writes it, where the latency is measured.
    var sampleArrival: ContinuousClock.Instant?
    /// The work decided and not yet taken by the session, in order.
    private(set) var actions: [Action] = []
    /// What the metrics count, since the session last took it.
    var counts = Counts()

    init(config: RefreshConfig, news: any FeedHeadReading, log: EventLog, bucket: TokenBucket, now: ContinuousClock.Instant) {
        self.newsMode = config.news
        self.news = news
        self.engine = RefreshEngine(config: config)
        self.pulls = PullTracker(config: config)
        self.log = log
        self.bucket = bucket
        self.lastActive = now
    }

    /// The actions decided since the last call, in order.
    mutating func takeActions() -> [Action] {
        guard !actions.isEmpty else { return [] }
        defer { actions.removeAll() }
        return actions
    }

    mutating func decide(_ action: Action) { actions.append(action) }

    // MARK: - Requests

    /// Applies samples in `seq` order and answers the bytes of the resulting `state` event.
    /// A batch over the rate changes nothing.
    mutating func samples(_ samples: [ValidSample], now: ContinuousClock.Instant) throws(APIError) -> ByteBuffer {
        lastActive = now
        if let retryAfter = bucket.take(samples.count, now: now) {
            throw APIError(.rateLimited, "More than \(Int(bucket.rate)) samples per second for this session.", retryAfter: retryAfter)
        }
        let ignoredBefore = engine.ignoredSamples
        let effects = engine.samplesReceived(samples)
        let ignored = engine.ignoredSamples - ignoredBefore
        counts.samplesApplied += Int32(clamping: samples.count - ignored)
        counts.samplesIgnored += Int32(clamping: ignored)
        perform(effects)
        if effects.state != nil {
            sampleArrival = now
            counts.pulls += pulls.samplesApplied(samples, started: effects.start)
        }
        // A live page that comes to rest at the top takes what it was told of meanwhile.
        if newsMode == .live, let shown = window.shown, case let head = news.position, head > shown,
            head > announced || engine.restsAtTop
        {
            catchUpOnNews()
        }
        return log.latestState?.data ?? EventData.state(engine.gestureState)
    }

    mutating func refreshRequested(now: ContinuousClock.Instant) -> ActionID {
        lastActive = now
        switch engine.refreshRequested() {
        case .started(let job, let effects):
            perform(effects)
            return job.id
        case .joined(let job), .refused(let job):
            return job.id
        }
    }

    mutating func loadMoreRequested(now: ContinuousClock.Instant) throws(APIError) -> ActionID {
        lastActive = now
        switch engine.loadMoreRequested() {
        case .started(let job, let effects):
            perform(effects)
            return job.id
        case .joined(let job):
            return job.id
        case .refused(let running):
            throw APIError(.refreshRunning, "A refresh (\(running.id)) is running; it resets paging, load more after it.")
        }
    }

    /// Cancels the refresh in flight; answers its id, or `nil` when none was running.
    mutating func cancelRequested(now: ContinuousClock.Instant) -> ActionID? {
        lastActive = now
        let effects = engine.cancelRequested(.refresh)
        perform(effects)
        catchUpOnNews()
        return effects.cancel?.id
    }

    // MARK: - Reports from running actions

    /// Progress of `job` if it is still the running action, never going backwards.
    mutating func progress(_ job: Job, fraction: Double, stage: String, message: String) {
        guard engine.runningJob == job else { return }
        let floor = progressFloor.flatMap { $0.0 == job.id ? $0.1 : nil } ?? 0
        let fraction = min(1, max(floor, fraction))
        progressFloor = (job.id, fraction)
        log.append(.progress, EventData.progress(action: job.id, kind: job.kind, fraction: fraction, stage: stage, message: message))
    }

    /// Ends `job`: its items, its `done`, the state after it. Ignored when the job was
    /// already cancelled or superseded: its late results must not reach the page.
    mutating func finished(_ job: Job, _ end: ActionEnd) {
        guard engine.runningJob == job else { return }
        let effects: Effects
        switch end {
        case .completed(let result):
            completed(job, result)
            effects = engine.actionFinished(job.id, outcome: .completed, hasMore: result.hasMore)
        case .failed(let message):
            log.append(.done, EventData.done(action: job.id, kind: job.kind, outcome: .failed, added: 0, error: message))
            effects = engine.actionFinished(job.id, outcome: .failed)
        case .cancelled:
            log.append(.done, EventData.done(action: job.id, kind: job.kind, outcome: .cancelled, added: 0, error: nil))
            effects = engine.actionFinished(job.id, outcome: .cancelled)
        }
        perform(effects)
        // News that came during the action, beyond what it brought.
        catchUpOnNews()
    }

    private mutating func completed(_ job: Job, _ result: ActionResult) {
        if result.replacesList {
            window = PageWindow()
            let reset = log.append(.reset, EventData.reset(reason: "More new items than a refresh sends: the list starts over."))
            pageVersions.windowMoved(at: reset.id)
            counts.resets.append(.listReplaced)
        }
        // The rows the page shows first take what changed in them, then the new ones come.
        if let changes = result.changes { deliver(changes) }
        let shown = window.shown
        let before = window
        let added = window.include(result.items, op: result.op, head: result.head, version: result.version)
        // What was told may now be shown: a later head is told afresh.
        if window.shown != shown { announced = 0 }
        let hasMore = result.hasMore ?? engine.hasMore
        // The list is as of the older of its parts' versions until the changes after it come.
        let shownAs = Self.shownAs(before: before.version, read: result.version)
        let items = log.append(
            .items,
            EventData.items(
                action: job.id, op: result.op.rawValue, items: result.items, hasMore: hasMore,
                head: result.head.flatMap { _ in window.shown }, version: shownAs))
        if !result.items.isEmpty || result.replacesList {
            pageVersions.windowMoved(at: items.id, version: shownAs)
        } else if let shownAs {
            // No row came: the list did not move, and is as of this version from here.
            pageVersions.changed(at: items.id, version: shownAs)
        }
        catchUpOnChanges(segments: Self.segments(before: before, added: added, read: result.version))
        log.append(.done, EventData.done(action: job.id, kind: job.kind, outcome: .completed, added: result.items.count, error: nil))
    }

    // MARK: - The page's list

    /// The page already shows items, from a session it had elsewhere: this session takes
    /// them as shown and tells what the feed gained and changed since.
    mutating func resumed(showing shown: PageWindow) {
        window = shown
        pageVersions = PageVersions(version: shown.version)
        catchUp()
    }

    /// The page was given the feed's first page with its session: what the feed gains after
    /// it is news, paging goes on below it, and infinite scroll only while older items remain.
    mutating func firstPageShown(_ page: FeedPage) {
        window.include(page.items, op: .append, head: page.head, version: page.version)
        pageVersions = PageVersions(version: window.version)
        engine.firstPageShown(hasMore: page.hasMore)
        catchUp()
    }

    /// News and changes that came while nothing could tell the page (no stream was open, or
    /// the hub did not know the session yet).
    mutating func catchUp() {
        catchUpOnNews()
        catchUpOnChanges()
    }

    // MARK: - Streams

    /// A stream opened. With `lastEventID`, its first events are the replay of what it missed
    /// (past the buffer, what changed since the version the page shows, or a reset); without,
    /// a snapshot. `nil` once the session has ended.
    mutating func streamOpened(
        _ listener: any EventListener, lastEventID: UInt64?, now: ContinuousClock.Instant
    ) -> (initial: [ServerEvent], cursor: UInt64)? {
        guard !ended else { return nil }
        lastActive = now
        if let group = log.addListener(listener) { decide(.streamsOpened(group)) }
        catchUp()
        let delivery = replay(after: lastEventID)
        if lastEventID != nil {
            if delivery.gap { counts.replayMisses += 1 } else { counts.replayHits += 1 }
            counts.coalesced += Int32(clamping: delivery.coalesced)
        }
        return (delivery.events, delivery.cursor)
    }

    mutating func streamClosed(_ listener: any EventListener, now: ContinuousClock.Instant) {
        if let group = log.removeListener(listener) { decide(.streamsClosed(group)) }
        lastActive = now
    }

    /// The events after `cursor` for an open stream (a reset and snapshot past a gap); `nil`
    /// when the log has nothing after `known`.
    mutating func delivery(after cursor: UInt64, unlessThrough known: UInt64? = nil) -> Delivery? {
        if let known, log.lastID <= known { return nil }
        return replay(after: cursor)
    }

    /// Whether the session has been unused, with no stream open, since `deadline`.
    func isIdle(since deadline: ContinuousClock.Instant) -> Bool {
        log.openStreams == 0 && lastActive < deadline
    }

    /// Stops everything: the actions' tasks, the reads, the streams (the wake-up that ends them).
    mutating func end() -> Wakeup? {
        if !ended, let pull = pulls.sessionEnded() { counts.pulls.append(pull) }
        ended = true
        live = .idle
        readingChanges = false
        let wakeup = log.closeAll()
        for group in wakeup?.groups ?? [] { decide(.streamsClosed(group)) }
        decide(.stopAll)
        return wakeup
    }

    // MARK: - Effects

    private mutating func perform(_ effects: Effects) {
        if let cancelled = effects.cancel {
            decide(.cancel(cancelled.id))
            log.append(.done, EventData.done(action: cancelled.id, kind: cancelled.kind, outcome: .cancelled, added: 0, error: nil))
        }
        if let job = effects.start { decide(.start(job, window: window)) }
        if let gesture = effects.state { log.append(.state, EventData.state(gesture)) }
    }
}
