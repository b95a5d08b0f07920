import RefreshEngine
import RefreshFeed

/// What the actions report of their work, to whoever counts it: how each ended, and the
/// feed's own reports (a shared update, an upstream's fetch).
protocol ActionObserver: FeedObserver {
    func actionFinished(_ kind: ActionKind, _ outcome: ActionOutcome)
}

/// How an action ended, as the engine says it.
typealias ActionOutcome = Outcome

/// What a finished refresh or load-more sends to its page.
struct ActionResult: Sendable {
    typealias Op = ItemsOperation

    var op: Op
    var items: [FeedItem]
    /// Whether older items remain, when the action learned it.
    var hasMore: Bool?
    /// The page's list cannot be continued (too many new items): it starts over.
    var replacesList = false
    /// The feed's head when the items were read, when they bring the page up to date.
    var head: FeedPosition?
    /// The feed's version the items were read at.
    var version: FeedVersion?
    /// What changed in the window the page showed, since the version it showed it as (a
    /// refresh brings them with the new items).
    var changes: FeedChanges?
}

/// How an action ends.
enum ActionEnd: Sendable {
    case completed(ActionResult)
    case failed(String)
    case cancelled
}

/// What a running action tells whoever started it: its progress, then its end, once.
enum ActionReport: Sendable {
    case progress(fraction: Double, stage: String, message: String)
    case finished(ActionEnd)
}

/// Runs the refreshes and load-mores the sessions of one feed start, against that feed. It knows nothing of
/// sessions: it reads the feed for the window it is given and reports through a closure.
struct ActionRunner: Sendable {
    typealias Report = @Sendable (ActionReport) -> Void

    let feed: any FeedSource
    let news: FeedNews
    let sharedUpdate: SharedUpdate
    let pageSize: Int
    let timeout: Duration
    let minimumDuration: Duration
    /// Told how each action ended, and of the feed's own work (the metrics observe them).
    let observer: any ActionObserver

    /// What the actions are given of the server's configuration.
    struct Settings: Sendable {
        /// Items a refresh or a load-more brings at most.
        var pageSize: Int
        /// An action running longer is stopped and fails.
        var timeout: Duration
        /// A refresh holds its indicator at least this long.
        var minimumDuration: Duration
    }

    init(feed: any FeedSource, news: FeedNews, settings: Settings, observer: any ActionObserver) {
        self.feed = feed
        self.news = news
        self.observer = observer
        self.sharedUpdate = SharedUpdate(source: feed, metrics: observer)
        self.pageSize = settings.pageSize
        self.timeout = settings.timeout
        self.minimumDuration = settings.minimumDuration
    }

    private struct TimedOut: Error {}

    func run(_ job: Job, window: PageWindow, report: @escaping Report) async {
        let started = ContinuousClock.now
        let result: ActionEnd
        do {
            let outcome = try await withThrowingTaskGroup(of: ActionResult?.self) { group in
                group.addTask {
                    switch job.kind {
                    case .refresh: try await refresh(window: window, report: report, holdUntil: started + minimumDuration)
                    case .loadMore: try await loadMore(window: window, report: report)
                    }
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let result = first else { throw TimedOut() }
                return result
            }
            result = .completed(outcome)
        } catch is CancellationError {
            result = .cancelled
        } catch is TimedOut {
            result = .failed("The \(job.kind == .refresh ? "refresh" : "load") took longer than \(timeout.secondsText) and was stopped.")
        } catch {
            result = .failed(Self.describe(error))
        }
        let finished: ActionEnd = Task.isCancelled ? .cancelled : result
        let outcome: Outcome =
            switch finished {
            case .completed: .completed
            case .failed: .failed
            case .cancelled: .cancelled
            }
        // Counted before the page hears of it: whoever sees `done` sees it counted.
        observer.actionFinished(job.kind, outcome)
        report(.finished(finished))
    }

    /// `holdUntil`: the spinner stays at least until then, so a fast refresh reads as an
    /// answer rather than a flicker; the last progress step waits for it with the items.
    private func refresh(window: PageWindow, report: @escaping Report, holdUntil: ContinuousClock.Instant) async throws -> ActionResult {
        report(.progress(fraction: 0, stage: "starting", message: "Checking for new items…"))
        let update: FeedUpdate
        do {
            update = try await sharedUpdate.run { progress in
                report(.progress(fraction: 0.05 + 0.85 * progress.fraction, stage: progress.stage, message: progress.message))
            }
        } catch {
            // An update that failed half-way may still have stored items.
            await news.catchUp()
            throw error
        }
        // Every open page hears of what the update stored, not only this one.
        await news.catchUp()
        try Task.checkCancellation()
        report(.progress(fraction: 0.95, stage: "collecting", message: "Collecting new items…"))
        var result: ActionResult
        if let shown = window.shown {
            let page = try await feed.added(after: shown, limit: pageSize)
            // What changed in the rows the page shows: a refresh that brought nothing new but
            // left a row stale would not be up to date.
            var changes: FeedChanges?
            var known = true
            if let positions = window.positions, let version = window.version {
                changes = try await feed.changes(since: version, within: positions, limit: Self.longestChanges)
                known = changes != nil
            }
            if page.hasMore || !known {
                let latest = try await feed.older(than: nil, limit: pageSize)
                result = ActionResult(
                    op: .prepend, items: latest.items, hasMore: latest.hasMore, replacesList: true, head: latest.head, version: latest.version)
            } else {
                result = ActionResult(op: .prepend, items: page.items, hasMore: nil, head: page.head, version: page.version, changes: changes)
            }
        } else {
            let page = try await feed.older(than: nil, limit: pageSize)
            result = ActionResult(op: .prepend, items: page.items, hasMore: page.hasMore, head: page.head, version: page.version)
        }
        try Task.checkCancellation()
        let message =
            result.replacesList
            ? "Showing the latest items"
            : Self.summary(added: result.items.count, changed: result.changes?.changes.count ?? 0, update: update)
        try await Task.sleep(until: holdUntil, clock: ContinuousClock())
        report(.progress(fraction: 1, stage: "done", message: message))
        return result
    }

    /// The most changes a refresh brings to the rows a page shows; past them, it starts the
    /// list over, which costs the page less than applying them one by one.
    static let longestChanges = 200

    /// What a refresh says it brought: "Already up to date" only when nothing is new and no
    /// row the page shows changed.
    static func summary(added: Int, changed: Int, update: FeedUpdate) -> String {
        let new = added == 1 ? "1 new item" : "\(added) new items"
        let edited = changed == 1 ? "1 item changed" : "\(changed) items changed"
        switch (added, changed) {
        case (0, 0): return update.added == 0 ? "Already up to date" : update.message
        case (_, 0): return new
        case (0, _): return edited
        default: return "\(new), \(edited)"
        }
    }

    private func loadMore(window: PageWindow, report: @escaping Report) async throws -> ActionResult {
        report(.progress(fraction: 0, stage: "loading", message: "Loading older items…"))
        let page = try await feed.older(than: window.oldest, limit: pageSize)
        try Task.checkCancellation()
        report(.progress(fraction: 1, stage: "done", message: page.items.isEmpty ? "No more items" : "\(page.items.count) older items"))
        // The first page a page shows is the newest: from here on, what the feed gains is news.
        return ActionResult(
            op: .append, items: page.items, hasMore: page.hasMore, head: window.shown == nil ? page.head : nil, version: page.version)
    }

    /// A sentence for people; feeds throw errors whose description is one.
    static func describe(_ error: any Error) -> String {
        String(describing: error)
    }
}
