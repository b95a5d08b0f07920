import NIOCore
import RefreshEngine
import RefreshFeed
import Synchronization

/// One list on one page: its gesture engine, its event log and the actions it runs.
///
/// Everything mutable sits in one `Mutex`, held only for in-memory work (never across I/O
/// or an `await`), so a sample goes route → engine → event log on the connection's event
/// loop, and the streams are woken on theirs, with no task or actor in between.
public final class Session: Sendable, NewsListener {
    public let id: String
    public let config: RefreshConfig
    /// The address that created it, whose per-client limit it counts against.
    let client: String
    /// Whose it is: `nil` when it was created without a token.
    let owner: SessionOwner?
    private let services: Services
    private let state: Mutex<State>
    /// The positions the page shows (`0...0` while none), kept beside the state on every
    /// change of it: the fan-out of a change reads them without the lock, and a change
    /// elsewhere does not wake the session.
    private let shownLow = Atomic<FeedPosition>(0)
    private let shownHigh = Atomic<FeedPosition>(0)

    /// What a session works with, each given by its store when it is made (those of its feed
    /// shared with the feed's other sessions): none is reached through another.
    struct Services: Sendable {
        /// The feed the session reads, for its whole life.
        let name: FeedName
        /// Runs the session's refreshes and load-mores, reporting back through a closure.
        let actions: ActionRunner
        /// The feed's head, for `news` and live prepends; told which streams open and close.
        let news: FeedNews
        /// Where live mode reads the items the page does not show yet.
        let feed: any FeedSource
        /// Items per live read.
        let pageSize: Int
        let metrics: ServerMetrics
    }

    /// Live mode bringing new items in without a refresh.
    private enum LiveFetch: Sendable {
        case idle
        case running(Task<Void, Never>)
        /// The last fetch could not bring the items in (too many, or the store failed):
        /// the page is told by `news` until the head moves past this position.
        case gaveUp(at: FeedPosition)
    }

    private struct State: Sendable {
        var engine: RefreshEngine
        var log: EventLog
        var window = PageWindow()
        var tasks: [ActionID: Task<Void, Never>] = [:]
        /// Highest progress fraction sent for the running action: fractions never go back.
        var progressFloor: (ActionID, Double)?
        var bucket: TokenBucket
        var lastActive: ContinuousClock.Instant
        var ended = false
        /// The head the last `news` event told of: the same head is not told twice.
        var announced: FeedPosition = 0
        /// The count the last `news` event said: a removal among those items corrects it.
        var announcedCount: FeedPosition = 0
        var live = LiveFetch.idle
        /// A read of the store for the changes the window's version is behind the feed's
        /// change log by: while it runs, the log's moves wait for it.
        var readingChanges: Task<Void, Never>?
        /// The versions the page shows its window as, by the event that brought each: a page
        /// that comes back past the replay buffer is told what changed since its own.
        var pageVersions = PageVersions()
        /// When the samples request behind the `state` event just appended arrived: its
        /// wake-up carries it to the stream that writes it, where the latency is measured.
        var sampleArrival: ContinuousClock.Instant?
    }

    init(
        id: String, config: RefreshConfig, client: String, owner: SessionOwner? = nil, services: Services, limits: ServerConfiguration,
        now: ContinuousClock.Instant
    ) {
        self.id = id
        self.config = config
        self.client = client
        self.owner = owner
        self.services = services
        self.state = Mutex(
            State(
                engine: RefreshEngine(config: config),
                log: EventLog(capacity: limits.replayBufferLength, maxBytes: limits.replayBufferBytes),
                bucket: TokenBucket(rate: limits.maxSamplesPerSecond, now: now),
                lastActive: now))
    }

    /// The feed the session reads.
    var feed: FeedName { services.name }

    // MARK: - Inputs from the API

    /// Applies samples in `seq` order and answers with the resulting state as JSON: the
    /// bytes of the `state` event it caused, not a second encoding. A batch over the rate
    /// changes nothing; the samples' values were validated where they were decoded.
    func applySamples(_ samples: [ValidSample], now: ContinuousClock.Instant) throws(APIError) -> ByteBuffer {
        try mutate { (state) throws(APIError) -> ByteBuffer in
            state.lastActive = now
            if let retryAfter = state.bucket.take(samples.count, now: now) {
                throw APIError(
                    .rateLimited, "More than \(Int(state.bucket.rate)) samples per second for this session.",
                    retryAfter: retryAfter)
            }
            let ignoredBefore = state.engine.ignoredSamples
            let effects = state.engine.samplesReceived(samples)
            let ignored = state.engine.ignoredSamples - ignoredBefore
            services.metrics.samplesTaken(applied: samples.count - ignored, ignored: ignored)
            perform(effects, &state)
            if effects.state != nil { state.sampleArrival = now }
            // A live page that comes to rest at the top takes what it was told of meanwhile.
            if config.news == .live, let shown = state.window.shown, case let head = services.news.position, head > shown,
                head > state.announced || state.engine.restsAtTop
            {
                catchUpOnNews(&state)
            }
            return state.log.latestState?.data ?? EventData.state(state.engine.gestureState)
        }
    }

    func requestRefresh(now: ContinuousClock.Instant) -> ActionID {
        mutate { state in
            state.lastActive = now
            switch state.engine.refreshRequested() {
            case .started(let job, let effects):
                perform(effects, &state)
                return job.id
            case .joined(let job), .refused(let job):
                return job.id
            }
        }
    }

    func requestLoadMore(now: ContinuousClock.Instant) throws(APIError) -> ActionID {
        try mutate { (state) throws(APIError) -> ActionID in
            state.lastActive = now
            switch state.engine.loadMoreRequested() {
            case .started(let job, let effects):
                perform(effects, &state)
                return job.id
            case .joined(let job):
                return job.id
            case .refused(let running):
                throw APIError(.refreshRunning, "A refresh (\(running.id)) is running; it resets paging, load more after it.")
            }
        }
    }

    /// Cancels the refresh in flight; answers its id, or `nil` when none was running.
    func cancelRefresh(now: ContinuousClock.Instant) -> ActionID? {
        mutate { state in
            state.lastActive = now
            let effects = state.engine.cancelRequested(.refresh)
            perform(effects, &state)
            catchUpOnNews(&state)
            return effects.cancel?.id
        }
    }

    var gestureState: GestureState { state.withLock { $0.engine.gestureState } }

    var ignoredSamples: Int { state.withLock { $0.engine.ignoredSamples } }

    var openStreams: Int { state.withLock { $0.log.openStreams } }

    // MARK: - Reports from running actions

    /// Publishes progress of `job` if it is still the running action, never going backwards.
    func progress(_ job: Job, fraction: Double, stage: String, message: String) {
        mutate { state in
            guard state.engine.runningJob == job else { return }
            let floor = state.progressFloor.flatMap { $0.0 == job.id ? $0.1 : nil } ?? 0
            let fraction = min(1, max(floor, fraction))
            state.progressFloor = (job.id, fraction)
            state.log.append(.progress, EventData.progress(action: job.id, kind: job.kind, fraction: fraction, stage: stage, message: message))
        }
    }

    /// Ends `job`: its items, its `done`, the state after it. Ignored when the job was
    /// already cancelled or superseded: its late results must not reach the page.
    func finish(_ job: Job, _ result: ActionEnd) {
        mutate { state in
            state.tasks.removeValue(forKey: job.id)
            guard state.engine.runningJob == job else { return }
            let effects: Effects
            switch result {
            case .completed(let result):
                if result.replacesList {
                    state.window = PageWindow()
                    let reset = state.log.append(.reset, EventData.reset(reason: "More new items than a refresh sends: the list starts over."))
                    state.pageVersions.windowMoved(at: reset.id)
                    services.metrics.resetSent(.listReplaced)
                }
                // The rows the page shows first take what changed in them, then the new ones come.
                if let changes = result.changes { deliver(changes, &state) }
                let shown = state.window.shown
                let before = state.window
                let added = state.window.include(result.items, op: result.op, head: result.head, version: result.version)
                // What was told may now be shown: a later head is told afresh.
                if state.window.shown != shown { state.announced = 0 }
                let hasMore = result.hasMore ?? state.engine.hasMore
                // The list is as of the older of its parts' versions until the changes after it come.
                let shownAs = Self.shownAs(before: before.version, read: result.version)
                let items = state.log.append(
                    .items,
                    EventData.items(
                        action: job.id, op: result.op.rawValue, items: result.items, hasMore: hasMore,
                        head: result.head.flatMap { _ in state.window.shown }, version: shownAs))
                if !result.items.isEmpty || result.replacesList {
                    state.pageVersions.windowMoved(at: items.id, version: shownAs)
                } else if let shownAs {
                    // No row came: the list did not move, and is as of this version from here.
                    state.pageVersions.changed(at: items.id, version: shownAs)
                }
                catchUpOnChanges(&state, segments: Self.segments(before: before, added: added, read: result.version))
                state.log.append(.done, EventData.done(action: job.id, kind: job.kind, outcome: .completed, added: result.items.count, error: nil))
                effects = state.engine.actionFinished(job.id, outcome: .completed, hasMore: result.hasMore)
            case .failed(let message):
                state.log.append(.done, EventData.done(action: job.id, kind: job.kind, outcome: .failed, added: 0, error: message))
                effects = state.engine.actionFinished(job.id, outcome: .failed)
            case .cancelled:
                state.log.append(.done, EventData.done(action: job.id, kind: job.kind, outcome: .cancelled, added: 0, error: nil))
                effects = state.engine.actionFinished(job.id, outcome: .cancelled)
            }
            perform(effects, &state)
            // News that came during the action, beyond what it brought.
            catchUpOnNews(&state)
        }
    }

    // MARK: - News

    /// A feed that had no session here knows no head yet: reads it, so that a page resumed on
    /// it is told at once what it missed, not at the next publish or poll.
    func readHeadIfUnknown() async {
        if services.news.head == nil { await services.news.catchUp() }
    }

    /// The page already shows items, from a session it had elsewhere (its instance went away,
    /// or forgot it): this session takes them as shown and tells what the feed gained since,
    /// as `news`, or as items for a live page at rest.
    func resume(showing window: PageWindow) {
        mutate { state in
            state.window = window
            state.pageVersions = PageVersions(version: window.version)
            catchUpOnNews(&state)
            catchUpOnChanges(&state)
        }
    }

    /// The page was given the feed's first page with its session, not by a load-more: what
    /// the feed gains after it is news, paging goes on below it, and infinite scroll only
    /// while older items remain.
    func show(firstPage page: FeedPage) {
        mutate { state in
            state.window.include(page.items, op: .append, head: page.head, version: page.version)
            state.pageVersions = PageVersions(version: state.window.version)
            state.engine.firstPageShown(hasMore: page.hasMore)
            catchUpOnNews(&state)
            catchUpOnChanges(&state)
        }
    }

    /// The feed's head moved: the page is told, or, live and at rest at the top, given the
    /// new items. Called on an event loop the session has streams on, whose streams then
    /// write at once; a session with nothing to tell wakes none.
    func headAdvanced(_ payloads: NewsPayloads) {
        mutate { state in announce(payloads.head, count: payloads.count(shown:), payload: payloads.data(shown:), &state) }
    }

    /// A window that moves meanwhile catches up on what it missed of the log by itself (the
    /// part it gained is read as it is, the rest is as of its version).
    func mayBeChanged(by payloads: ChangePayloads) -> Bool {
        let low = shownLow.load(ordering: .relaxed)
        let high = shownHigh.load(ordering: .relaxed)
        return payloads.mayConcern(low > 0 ? low...high : nil)
    }

    /// Items of the window were edited or removed, or the news the page was told counts an
    /// item that is gone: the page is told, on an event loop the session has streams on.
    func feedChanged(_ payloads: ChangePayloads) {
        mutate { state in
            catchUpOnChanges(&state, payloads: payloads)
            // A removal among the items the page was told of corrects their count.
            if let news = payloads.news, state.announced > 0, let shown = state.window.shown, news.count(shown: shown) != state.announcedCount {
                state.announced = 0
                announce(news.head, count: news.count(shown:), payload: news.data(shown:), &state)
            }
        }
    }

    /// Tells the page of the newest head if it shows less.
    private func catchUpOnNews(_ state: inout State) {
        guard config.news != .off, let shown = state.window.shown, services.news.position > shown,
            let head = services.news.head
        else { return }
        let news = services.news
        announce(
            head, count: { news.count(after: $0, through: head.position) },
            payload: { EventData.news(count: news.count(after: $0, through: head.position), head: head) }, &state)
    }

    private func announce(
        _ head: FeedHead, count: (FeedPosition) -> FeedPosition, payload: (FeedPosition) -> ByteBuffer, _ state: inout State
    ) {
        guard config.news != .off, !state.ended, let shown = state.window.shown, head.position > shown else { return }
        // The refresh running brings these items itself, and catches up on the rest when it ends.
        guard state.engine.runningJob?.kind != .refresh else { return }
        if config.news == .live, state.engine.restsAtTop {
            switch state.live {
            case .running: return
            case .gaveUp(let position) where head.position <= position: break
            case .idle, .gaveUp: return bringIn(after: shown, &state)
            }
        }
        guard head.position > state.announced else { return }
        state.announced = head.position
        state.announcedCount = count(shown)
        state.log.append(.news, payload(shown))
    }

    // MARK: - Changes

    /// The version a list is as of once items read at `read` joined it: the older of the two.
    private static func shownAs(before: FeedVersion?, read: FeedVersion?) -> FeedVersion? {
        guard let before else { return read }
        guard let read else { return before }
        return min(before, read)
    }

    /// The parts of a window and the versions each is shown as, after items read at `read`
    /// joined a window shown as `before.version`: the new part as of the read, the rest as
    /// of the window's version (or the read's, when that is newer).
    private static func segments(
        before: PageWindow, added: ClosedRange<FeedPosition>?, read: FeedVersion?
    )
        -> [(ClosedRange<FeedPosition>, FeedVersion)]
    {
        var segments: [(ClosedRange<FeedPosition>, FeedVersion)] = []
        if let old = before.positions, let version = before.version { segments.append((old, max(version, read ?? 0))) }
        if let added, let read { segments.append((added, read)) }
        return segments
    }

    /// Changes the store read for the window (a refresh's): those after the version the
    /// window shows go to the page as one `changes` event.
    private func deliver(_ read: FeedChanges, _ state: inout State) {
        guard let since = state.window.version, let positions = state.window.positions else { return }
        let changes = read.changes.filter { $0.version > since && positions.contains($0.position) }
        state.window.version = max(since, read.version)
        guard !changes.isEmpty else { return }
        appendChanges(changes.map(ChangeLog.encode), version: state.window.version ?? read.version, &state)
    }

    /// Tells the page what changed in its window since the version it shows it as (each of
    /// `segments` since its own), from the feed's change log when it reaches back that far,
    /// else from one read of the store; then the window is shown as the log's version.
    private func catchUpOnChanges(
        _ state: inout State, payloads: ChangePayloads? = nil, segments given: [(ClosedRange<FeedPosition>, FeedVersion)]? = nil
    ) {
        guard state.readingChanges == nil, !state.ended else { return }
        let segments = given ?? state.window.positions.flatMap { range in state.window.version.map { [(range, $0)] } } ?? []
        guard let log = payloads?.log ?? services.news.changeLog else {
            // The feed's version is not known yet: what the window shows stands as it is.
            return
        }
        var entries: [ChangeLog.Entry] = []
        var behind: [(ClosedRange<FeedPosition>, FeedVersion)] = []
        for (range, since) in segments where since < log.version {
            if let found = log.changes(after: since, within: range) { entries += found } else { behind.append((range, since)) }
        }
        guard behind.isEmpty else { return readChanges(behind, &state) }
        if state.window.positions != nil { state.window.version = max(state.window.version ?? 0, log.version) }
        guard !entries.isEmpty else { return }
        entries.sort { $0.change.version < $1.change.version }
        let data = payloads?.data(entries) ?? EventData.changes(version: log.version, entries.map(\.json))
        let event = state.log.append(.changes, data)
        state.pageVersions.changed(at: event.id, version: log.version)
        services.metrics.changesSent(entries.count)
    }

    private func appendChanges(_ changes: [ByteBuffer], version: FeedVersion, _ state: inout State) {
        let event = state.log.append(.changes, EventData.changes(version: version, changes))
        state.pageVersions.changed(at: event.id, version: version)
        services.metrics.changesSent(changes.count)
    }

    /// The window's version is behind the change log: reads what changed in each segment
    /// since its version, then tells the page and catches up on the log from there. A window
    /// whose changes cannot be told any more (their tombstones forgotten) starts over.
    private func readChanges(_ segments: [(ClosedRange<FeedPosition>, FeedVersion)], _ state: inout State) {
        let window = state.window
        state.readingChanges = Task { [services] in
            var reads: [FeedChanges?] = []
            for (range, since) in segments { reads.append(await services.news.changes(since: since, within: range)) }
            self.readChanges(reads, for: segments, window: window)
        }
    }

    private func readChanges(
        _ reads: [FeedChanges?], for segments: [(ClosedRange<FeedPosition>, FeedVersion)], window: PageWindow
    ) {
        mutate { state in
            state.readingChanges = nil
            guard !state.ended else { return }
            // The window moved meanwhile (a refresh, a reset): it catches up from where it is.
            guard state.window == window else { return catchUpOnChanges(&state) }
            guard reads.allSatisfy({ $0 != nil }) else {
                state.window = PageWindow()
                let reset = state.log.append(.reset, EventData.reset(reason: "What changed in the list can no longer be told: reload it."))
                state.pageVersions.windowMoved(at: reset.id)
                services.metrics.resetSent(.gap)
                return
            }
            var changes: [FeedChange] = []
            var version = FeedVersion.max
            for (read, (range, since)) in zip(reads.compactMap { $0 }, segments) {
                changes += read.changes.filter { $0.version > since && range.contains($0.position) }
                version = min(version, read.version)
            }
            state.window.version = version
            if !changes.isEmpty {
                appendChanges(changes.sorted { $0.version < $1.version }.map(ChangeLog.encode), version: version, &state)
            }
            catchUpOnChanges(&state)
        }
    }

    /// Live mode: reads what the feed gained after `shown` and prepends it, unless the page
    /// moved on meanwhile (a gesture, an action, a refresh that brought the items itself).
    private func bringIn(after shown: FeedPosition, _ state: inout State) {
        state.live = .running(
            Task { [services] in
                let read = await services.news.added(after: shown, limit: services.pageSize)
                self.broughtIn(read, after: shown)
            })
    }

    private func broughtIn(_ read: LiveRead?, after shown: FeedPosition) {
        mutate { state in
            guard !state.ended else { return }
            state.live = .idle
            guard state.window.shown == shown, state.engine.restsAtTop else { return catchUpOnNews(&state) }
            guard let read, !read.page.hasMore else {
                state.live = .gaveUp(at: services.news.position)
                return catchUpOnNews(&state)
            }
            let before = state.window
            let added = state.window.include(read.page.items, op: .prepend, head: read.page.head, version: read.page.version)
            state.announced = 0
            if !read.page.items.isEmpty {
                let event = state.log.append(.items, read.data(hasMore: state.engine.hasMore))
                state.pageVersions.windowMoved(at: event.id, version: Self.shownAs(before: before.version, read: read.page.version))
            }
            catchUpOnChanges(&state, segments: Self.segments(before: before, added: added, read: read.page.version))
            catchUpOnNews(&state)
        }
    }

    // MARK: - Streams

    /// Opens a stream. With `lastEventID`, the first events are the replay of what it missed
    /// (a `reset` and a fresh state if they are gone); without, a state snapshot. `nil` when
    /// the session has ended.
    func subscribe(
        _ listener: any EventListener, lastEventID: UInt64?, now: ContinuousClock.Instant
    ) -> (initial: [ServerEvent], cursor: UInt64)? {
        mutate { state in
            guard !state.ended else { return nil }
            state.lastActive = now
            if let group = state.log.addListener(listener) { services.news.streamsOpened(group, of: self) }
            // News and changes that came while no stream was open.
            catchUpOnNews(&state)
            catchUpOnChanges(&state)
            let delivery = catchUp(after: lastEventID, &state)
            if lastEventID != nil {
                services.metrics.replayed(hit: !delivery.gap)
                if delivery.coalesced > 0 { services.metrics.eventsCoalesced(delivery.coalesced) }
            }
            return (delivery.events, delivery.cursor)
        }
    }

    /// The events after `cursor` for an open stream, or a reset and snapshot past a gap.
    func events(after cursor: UInt64) -> (events: [ServerEvent], cursor: UInt64) {
        guard let delivery = delivery(after: cursor) else { return ([], cursor) }
        return (delivery.events, delivery.cursor)
    }

    /// The events after `cursor` for a stream that fell behind what its wake-ups brought,
    /// with what the metrics count; `nil` when the log has nothing after `known` (what the
    /// caller already looked up for this cursor).
    func delivery(after cursor: UInt64, unlessThrough known: UInt64? = nil) -> Delivery? {
        mutate { state in
            if let known, state.log.lastID <= known { return nil }
            return catchUp(after: cursor, &state)
        }
    }

    /// The metrics of the server the session lives in.
    var metrics: ServerMetrics { services.metrics }

    /// The id of the newest event.
    var lastEventID: UInt64 { state.withLock { $0.log.lastID } }

    func unsubscribe(_ listener: any EventListener, now: ContinuousClock.Instant) {
        mutate { state in
            if let group = state.log.removeListener(listener) { services.news.streamsClosed(group) }
            state.lastActive = now
        }
    }

    /// Wakes idle streams so they send a keepalive comment.
    func tick() {
        state.withLock { $0.log.tick() }?.fire()
    }

    private func catchUp(after cursor: UInt64?, _ state: inout State) -> Delivery {
        let lastID = state.log.lastID
        guard let cursor else {
            let gesture = EventData.state(state.engine.gestureState)
            // News the page has not acted on yet goes with the snapshot, ids in order: when it
            // is the newest event, the snapshot stands just before it.
            if let news = state.log.latestNews, state.announced > state.window.shown ?? .max {
                let snapshot = ServerEvent(id: news.id == lastID ? lastID - 1 : lastID, kind: .state, data: gesture)
                return Delivery(events: news.id == lastID ? [snapshot, news] : [news, snapshot], cursor: lastID)
            }
            return Delivery(events: [ServerEvent(id: lastID, kind: .state, data: gesture)], cursor: lastID)
        }
        switch state.log.events(after: cursor) {
        case .events(let events):
            let next = events.last?.id ?? cursor
            // Ids are dense: every id after the cursor that is not sent was superseded.
            return Delivery(events: events, cursor: next, coalesced: Int(next - cursor) - events.count)
        case .gap:
            let snapshot = ServerEvent(id: lastID, kind: .state, data: EventData.state(state.engine.gestureState))
            // Past the buffer, a page whose list the missed events did not change is told
            // what changed in it since the version it last showed, from the change log.
            if cursor <= lastID, let shownAs = state.pageVersions.version(at: cursor), let positions = state.window.positions,
                let log = services.news.changeLog, let entries = log.changes(after: shownAs, within: positions)
            {
                services.metrics.resumedByVersion()
                let version = max(log.version, state.window.version ?? 0)
                state.window.version = version
                let changes = ServerEvent(id: lastID, kind: .changes, data: EventData.changes(version: version, entries.map(\.json)))
                if !entries.isEmpty { services.metrics.changesSent(entries.count) }
                state.pageVersions = PageVersions(version: version, at: lastID)
                return Delivery(events: [changes, snapshot], cursor: lastID, gap: true)
            }
            // The page cannot know what it missed: it clears its list and refills it.
            state.window = PageWindow()
            state.pageVersions = PageVersions()
            services.metrics.resetSent(.gap)
            let reset = ServerEvent(id: lastID, kind: .reset, data: EventData.reset(reason: "Events were missed: reload the list."))
            return Delivery(events: [reset, snapshot], cursor: lastID, gap: true)
        }
    }

    // MARK: - Lifetime

    /// Whether the session has been unused, with no stream open, since `deadline`.
    func isIdle(since deadline: ContinuousClock.Instant) -> Bool {
        state.withLock { $0.log.openStreams == 0 && $0.lastActive < deadline }
    }

    /// Stops its actions and closes its streams.
    func end() {
        state.withLock { state in
            state.ended = true
            for task in state.tasks.values { task.cancel() }
            state.tasks.removeAll()
            if case .running(let task) = state.live { task.cancel() }
            state.live = .idle
            state.readingChanges?.cancel()
            state.readingChanges = nil
            let wakeup = state.log.closeAll()
            for group in wakeup?.groups ?? [] { services.news.streamsClosed(group) }
            return wakeup
        }?.fire()
    }

    // MARK: - Effects

    /// Every change goes through here: the streams are woken once, after the change and
    /// outside the lock, for all the events it appended.
    private func mutate<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        var wakeup: Wakeup?
        defer { wakeup?.fire() }
        return try state.withLock { (state) throws(Failure) -> Result in
            defer {
                wakeup = state.log.takeAnnouncement(sampleArrival: state.sampleArrival)
                state.sampleArrival = nil
                let shown = state.window.positions ?? 0...0
                shownLow.store(shown.lowerBound, ordering: .relaxed)
                shownHigh.store(shown.upperBound, ordering: .relaxed)
            }
            return try body(&state)
        }
    }

    private func perform(_ effects: Effects, _ state: inout State) {
        if let cancelled = effects.cancel {
            state.tasks.removeValue(forKey: cancelled.id)?.cancel()
            state.log.append(.done, EventData.done(action: cancelled.id, kind: cancelled.kind, outcome: .cancelled, added: 0, error: nil))
        }
        if let job = effects.start {
            let window = state.window
            state.tasks[job.id] = Task { [actions = services.actions] in
                await actions.run(job, window: window) { report in
                    switch report {
                    case .progress(let fraction, let stage, let message): self.progress(job, fraction: fraction, stage: stage, message: message)
                    case .finished(let end): self.finish(job, end)
                    }
                }
            }
        }
        if let gesture = effects.state {
            state.log.append(.state, EventData.state(gesture))
        }
    }
}
