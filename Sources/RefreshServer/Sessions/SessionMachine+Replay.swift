import NIOCore
import RefreshEngine
import RefreshFeed

/// What a stream is sent after its cursor: the log's events, or, past the replay buffer,
/// what changed since the version the page shows, or a reset.
extension SessionMachine {
    mutating func replay(after cursor: UInt64?) -> Delivery {
        let lastID = log.lastID
        guard let cursor else { return snapshot() }
        switch log.events(after: cursor) {
        case .events(let events):
            let next = events.last?.id ?? cursor
            // Ids are dense: every id after the cursor that is not sent was superseded.
            return Delivery(events: events, cursor: next, coalesced: Int(next - cursor) - events.count)
        case .gap:
            let snapshot = ServerEvent(id: lastID, kind: .state, data: EventData.state(engine.gestureState))
            // Past the buffer, a page whose list the missed events did not change is told
            // what changed in it since the version it last showed, from the change log.
            if cursor <= lastID, let shownAs = pageVersions.version(at: cursor), let positions = window.positions,
                let log = news.changeLog, let entries = log.changes(after: shownAs, within: positions)
            {
                counts.resumedByVersion += 1
                let version = max(log.version, window.version ?? 0)
                window.version = version
                let changes = ServerEvent(id: lastID, kind: .changes, data: EventData.changes(version: version, entries.map(\.json)))
                counts.changesSent += Int32(clamping: entries.count)
                pageVersions = PageVersions(version: version, at: lastID)
                return Delivery(events: [changes, snapshot], cursor: lastID, gap: true)
            }
            // The page cannot know what it missed: it clears its list and refills it.
            window = PageWindow()
            pageVersions = PageVersions()
            counts.resets.append(.gap)
            let reset = ServerEvent(id: lastID, kind: .reset, data: EventData.reset(reason: "Events were missed: reload the list."))
            return Delivery(events: [reset, snapshot], cursor: lastID, gap: true)
        }
    }

    /// A new stream's first events: the state, with the news the page has not acted on yet,
    /// ids in order (when the news is the newest event, the snapshot stands just before it).
    private func snapshot() -> Delivery {
        let lastID = log.lastID
        let gesture = EventData.state(engine.gestureState)
        if let news = log.latestNews, announced > window.shown ?? .max {
            let snapshot = ServerEvent(id: news.id == lastID ? lastID - 1 : lastID, kind: .state, data: gesture)
            return Delivery(events: news.id == lastID ? [snapshot, news] : [news, snapshot], cursor: lastID)
        }
        return Delivery(events: [ServerEvent(id: lastID, kind: .state, data: gesture)], cursor: lastID)
    }
}
