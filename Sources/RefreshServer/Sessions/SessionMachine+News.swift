import NIOCore
import RefreshEngine
import RefreshFeed

/// What the feed gained (news, live prepends) and what changed in the rows the page shows.
extension SessionMachine {
    // MARK: - News

    /// The feed's head moved: the page is told, or, live and at rest at the top, given the
    /// new items.
    mutating func headAdvanced(_ payloads: NewsPayloads) {
        announce(payloads.head, count: payloads.count(shown:), payload: payloads.data(shown:))
    }

    /// Items of the window were edited or removed, or the news the page was told counts an
    /// item that is gone.
    mutating func feedChanged(_ payloads: ChangePayloads) {
        catchUpOnChanges(payloads: payloads)
        // A removal among the items the page was told of corrects their count.
        if let news = payloads.news, announced > 0, let shown = window.shown, news.count(shown: shown) != announcedCount {
            announced = 0
            announce(news.head, count: news.count(shown:), payload: news.data(shown:))
        }
    }

    /// Tells the page of the newest head if it shows less.
    mutating func catchUpOnNews() {
        guard newsMode != .off, let shown = window.shown, news.position > shown, let head = news.head else { return }
        let news = news
        announce(
            head, count: { news.count(after: $0, through: head.position) },
            payload: { EventData.news(count: news.count(after: $0, through: head.position), head: head) })
    }

    private mutating func announce(_ head: FeedHead, count: (FeedPosition) -> FeedPosition, payload: (FeedPosition) -> ByteBuffer) {
        guard newsMode != .off, !ended, let shown = window.shown, head.position > shown else { return }
        // The refresh running brings these items itself, and catches up on the rest when it ends.
        guard engine.runningJob?.kind != .refresh else { return }
        if newsMode == .live, engine.restsAtTop {
            switch live {
            case .running: return
            case .gaveUp(let position) where head.position <= position: break
            case .idle, .gaveUp:
                live = .running
                return decide(.bringIn(after: shown))
            }
        }
        guard head.position > announced else { return }
        announced = head.position
        announcedCount = count(shown)
        log.append(.news, payload(shown))
    }

    /// Live mode: the read of what the feed gained after `shown` came back. It is prepended
    /// unless the page moved on meanwhile (a gesture, an action, a refresh that brought the
    /// items itself); too many, or none read, and the page is told by `news` instead.
    mutating func broughtIn(_ read: LiveRead?, after shown: FeedPosition) {
        guard !ended else { return }
        live = .idle
        guard window.shown == shown, engine.restsAtTop else { return catchUpOnNews() }
        guard let read, !read.page.hasMore else {
            live = .gaveUp(at: news.position)
            return catchUpOnNews()
        }
        let before = window
        let added = window.include(read.page.items, op: .prepend, head: read.page.head, version: read.page.version)
        announced = 0
        if !read.page.items.isEmpty {
            let event = log.append(.items, read.data(hasMore: engine.hasMore))
            pageVersions.windowMoved(at: event.id, version: Self.shownAs(before: before.version, read: read.page.version))
        }
        catchUpOnChanges(segments: Self.segments(before: before, added: added, read: read.page.version))
        catchUpOnNews()
    }

    // MARK: - Changes

    /// The version a list is as of once items read at `read` joined it: the older of the two.
    static func shownAs(before: FeedVersion?, read: FeedVersion?) -> FeedVersion? {
        guard let before else { return read }
        guard let read else { return before }
        return min(before, read)
    }

    /// The parts of a window and the versions each is shown as, after items read at `read`
    /// joined a window shown as `before.version`: the new part as of the read, the rest as
    /// of the window's version (or the read's, when that is newer).
    static func segments(before: PageWindow, added: ClosedRange<FeedPosition>?, read: FeedVersion?) -> [Segment] {
        var segments: [Segment] = []
        if let old = before.positions, let version = before.version { segments.append(Segment(positions: old, since: max(version, read ?? 0))) }
        if let added, let read { segments.append(Segment(positions: added, since: read)) }
        return segments
    }

    /// Changes the store read for the window (a refresh's): those after the version the
    /// window shows go to the page as one `changes` event.
    mutating func deliver(_ read: FeedChanges) {
        guard let since = window.version, let positions = window.positions else { return }
        let changes = read.changes.filter { $0.version > since && positions.contains($0.position) }
        window.version = max(since, read.version)
        guard !changes.isEmpty else { return }
        appendChanges(changes.map(ChangeLog.encode), version: window.version ?? read.version)
    }

    /// Tells the page what changed in its window since the version it shows it as (each of
    /// `segments` since its own), from the feed's change log when it reaches back that far,
    /// else from one read of the store; then the window is shown as the log's version.
    mutating func catchUpOnChanges(payloads: ChangePayloads? = nil, segments given: [Segment]? = nil) {
        guard !readingChanges, !ended else { return }
        let segments = given ?? window.positions.flatMap { range in window.version.map { [Segment(positions: range, since: $0)] } } ?? []
        // The feed's version is not known yet: what the window shows stands as it is.
        guard let log = payloads?.log ?? news.changeLog else { return }
        var entries: [ChangeLog.Entry] = []
        var behind: [Segment] = []
        for segment in segments where segment.since < log.version {
            if let found = log.changes(after: segment.since, within: segment.positions) { entries += found } else { behind.append(segment) }
        }
        guard behind.isEmpty else {
            readingChanges = true
            return decide(.readChanges(behind, window: window))
        }
        if window.positions != nil { window.version = max(window.version ?? 0, log.version) }
        guard !entries.isEmpty else { return }
        entries.sort { $0.change.version < $1.change.version }
        let data = payloads?.data(entries) ?? EventData.changes(version: log.version, entries.map(\.json))
        let event = self.log.append(.changes, data)
        pageVersions.changed(at: event.id, version: log.version)
        counts.changesSent += Int32(clamping: entries.count)
    }

    private mutating func appendChanges(_ changes: [ByteBuffer], version: FeedVersion) {
        let event = log.append(.changes, EventData.changes(version: version, changes))
        pageVersions.changed(at: event.id, version: version)
        counts.changesSent += Int32(clamping: changes.count)
    }

    /// The reads of what changed in each segment came back (`nil`: one could not tell, its
    /// tombstones forgotten): the page is told, and catches up on the log from there; a
    /// window whose changes cannot be told any more starts over.
    mutating func changesRead(_ reads: [FeedChanges?], for segments: [Segment], window read: PageWindow) {
        readingChanges = false
        guard !ended else { return }
        // The window moved meanwhile (a refresh, a reset): it catches up from where it is.
        guard window == read else { return catchUpOnChanges() }
        guard reads.allSatisfy({ $0 != nil }) else {
            window = PageWindow()
            let reset = log.append(.reset, EventData.reset(reason: "What changed in the list can no longer be told: reload it."))
            pageVersions.windowMoved(at: reset.id)
            counts.resets.append(.gap)
            return
        }
        var changes: [FeedChange] = []
        var version = FeedVersion.max
        for (read, segment) in zip(reads.compactMap { $0 }, segments) {
            changes += read.changes.filter { $0.version > segment.since && segment.positions.contains($0.position) }
            version = min(version, read.version)
        }
        window.version = version
        if !changes.isEmpty {
            appendChanges(changes.sorted { $0.version < $1.version }.map(ChangeLog.encode), version: version)
        }
        catchUpOnChanges()
    }
}
